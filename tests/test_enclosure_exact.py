"""The exact value behind an enclosure's text (``_enclosure_text.exact_fraction``): every
binary number, whatever the sign of its exponent, and never a ball."""

from __future__ import annotations

from fractions import Fraction

import mpmath
import pytest
from flint import arb

from deqrmt.numeric._enclosure_text import exact_fraction, interval_text, proven_text


@pytest.mark.parametrize(
    ("value", "want"),
    [
        (arb(12), Fraction(12)),  # 3·2^2: a positive exponent
        (arb(2) ** 70, Fraction(2**70)),
        (arb(-40), Fraction(-40)),
        (arb(3), Fraction(3)),
        (arb(0.375), Fraction(3, 8)),  # 3·2^−3
        (arb(-0.15625), Fraction(-5, 32)),
        (arb(0), Fraction(0)),
        (mpmath.mpf(96), Fraction(96)),
        (mpmath.mpf("0.75"), Fraction(3, 4)),
        (7, Fraction(7)),
        (Fraction(2, 3), Fraction(2, 3)),
    ],
)
def test_exact_fraction_of_binary_numbers(value, want: Fraction) -> None:
    assert exact_fraction(value) == want


def test_a_ball_is_not_a_number() -> None:
    with pytest.raises(ValueError, match="is a ball"):
        exact_fraction(arb(1, 0.5))


def test_large_integer_ends_print_as_themselves() -> None:
    # ends 3·2^10 and 3·2^11: both exact, printed to 6 digits (rounded outward)
    assert interval_text(arb(3072), arb(6144)) == "[3072.0, 6144.0]"
    assert proven_text(arb(3072), arb(3072)) == "3072.0"
    assert interval_text(arb(-6144), arb(-3072)) == "[-6144.0, -3072.0]"


def test_infinite_ends_print_as_infinity() -> None:
    assert interval_text(mpmath.ninf, arb(2)) == "[-∞, 2.0]"
    assert interval_text(arb(2), mpmath.inf) == "[2.0, ∞]"
    assert interval_text(Fraction(1, 3), mpmath.inf, 4) == "[0.3333, ∞]"
    assert interval_text(None, None) == "[-∞, ∞]"
    assert proven_text(mpmath.mpf(1), None) == "[1.0, ∞]"

"""The exact value behind an enclosure's text (``_enclosure_text.exact_fraction``): every
binary number, whatever the sign of its exponent, and never a ball."""

from __future__ import annotations

import decimal
from fractions import Fraction

import mpmath
import pytest
from flint import arb
from hypothesis import given
from hypothesis import strategies as st

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


# --- interval_text and proven_text against decimal's own directed rounding ----------------------


def _rounded(v: Fraction, n: int, rounding: str) -> Fraction:
    """v to n significant digits by the decimal module (a correctly rounded division)."""
    ctx = decimal.Context(prec=n, rounding=rounding, Emax=10**6, Emin=-(10**6))
    return Fraction(ctx.divide(decimal.Decimal(v.numerator), decimal.Decimal(v.denominator)))


def _digits(text: str) -> int:
    mantissa = text.lstrip("-").split("e")[0].replace(".", "").lstrip("0")
    return len(mantissa.rstrip("0")) if mantissa else 0


ends = st.fractions(min_value=-1000, max_value=1000, max_denominator=10**9).filter(lambda v: v != 0)


@given(ends, ends, st.integers(1, 8))
def test_interval_text_rounds_outward_or_proves_the_digits(a, b, n: int) -> None:
    lo, hi = min(a, b), max(a, b)
    text = interval_text(lo, hi, n)
    shared = _rounded(lo, n, decimal.ROUND_HALF_UP) == _rounded(hi, n, decimal.ROUND_HALF_UP)
    assert text.startswith("[") != shared  # one number exactly when both ends round to it
    if text.startswith("["):
        left, right = (Fraction(s) for s in text[1:-1].split(", "))
        assert left == _rounded(lo, n, decimal.ROUND_FLOOR)
        assert right == _rounded(hi, n, decimal.ROUND_CEILING)
        assert left <= lo and hi <= right
    else:
        value = Fraction(text)
        assert value == _rounded(lo, n, decimal.ROUND_HALF_UP)
        assert value == _rounded(hi, n, decimal.ROUND_HALF_UP)
        assert lo > 0 or hi < 0 or lo == hi
        assert _digits(text) <= n


@given(ends, st.fractions(min_value=0, max_value=Fraction(1, 10**4)), st.integers(2, 12))
def test_proven_text_is_the_most_digits_both_ends_share(mid, half, n: int) -> None:
    lo, hi = mid - half, mid + half
    text = proven_text(lo, hi, n)
    if text.startswith("["):  # not even one digit shared
        assert _rounded(lo, 1, decimal.ROUND_HALF_UP) != _rounded(hi, 1, decimal.ROUND_HALF_UP) or (
            lo <= 0 <= hi and lo != hi
        )
        return
    value = Fraction(text)
    k = next(
        k
        for k in range(n, 0, -1)
        if _rounded(lo, k, decimal.ROUND_HALF_UP) == _rounded(hi, k, decimal.ROUND_HALF_UP)
    )
    assert value == _rounded(lo, k, decimal.ROUND_HALF_UP)
    assert lo > 0 or hi < 0 or lo == hi


def test_defaults_and_exact_ends() -> None:
    # 6 digits by default for an interval, 12 for proven digits (the docstring's example)
    assert interval_text(Fraction(10998377, 10**7), Fraction(110052, 10**5)) == "[1.09983, 1.10052]"
    assert proven_text(Fraction(1, 3), Fraction(1, 3)) == "0.333333333333"
    assert interval_text(0, 0) == "0.0" and interval_text(Fraction(0), Fraction(0)) == "0.0"
    # below 1, above −1: one number when both ends share the digits
    assert interval_text(Fraction(1, 3), Fraction(1, 3) + Fraction(1, 10**9)) == "0.333333"
    assert interval_text(-Fraction(1, 3) - Fraction(1, 10**9), -Fraction(1, 3)) == "-0.333333"
    # finite mpmath ends are numbers, not infinities
    assert interval_text(mpmath.mpf(1), mpmath.mpf(2)) == "[1.0, 2.0]"
    assert interval_text(mpmath.mpf(-2), mpmath.mpf(-1)) == "[-2.0, -1.0]"

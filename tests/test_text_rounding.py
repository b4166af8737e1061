"""Decimal rounding of exact numbers (``deqrmt._text``), against the definition.

:func:`~deqrmt._text.round_decimal` / :func:`~deqrmt._text.round_ratio` return (sign, N, e)
with v ≈ sign·N·10^(e−n+1), 10^(n−1) ≤ N < 10^n, and (0, 0, 0) for zero.  The reference here
finds e by comparing |v| with powers of ten as Fractions and rounds |v|/10^(e−n+1) by the
definition of each mode (nearest with ties away from zero, floor toward −∞, ceiling toward
+∞); :func:`~deqrmt._text.format_decimal` must print the value it is given, read back
exactly, in ``mpmath.nstr``'s layout (nstr of that decimal at 20 more digits).
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deqrmt._text import decimal_value, format_decimal, round_decimal, round_ratio


def _reference(v: Fraction, n: int, mode: str) -> tuple[int, int, int]:
    if v == 0:
        return (0, 0, 0)
    sign = 1 if v > 0 else -1
    a = abs(v)
    e = 0
    while a >= Fraction(10) ** (e + 1):
        e += 1
    while a < Fraction(10) ** e:
        e -= 1
    scaled = a / Fraction(10) ** (e - n + 1)  # in [10^(n-1), 10^n)
    if mode == "nearest":
        digits = math.floor(scaled + Fraction(1, 2))
    elif (mode == "ceiling") == (sign > 0):  # away from zero
        digits = math.ceil(scaled)
    else:
        digits = math.floor(scaled)
    if digits == 10**n:
        digits, e = 10 ** (n - 1), e + 1
    return (sign, digits, e)


_VALUE = (
    st.builds(
        lambda m, e: Fraction(m) * Fraction(10) ** e,
        st.integers(-(10**40), 10**40),
        st.integers(-60, 60),
    )
    | st.builds(
        lambda m, e: Fraction(m) * Fraction(2) ** e,
        st.integers(-(2**90), 2**90),
        st.integers(-300, 200),
    )
    | st.fractions(max_denominator=10**25)
)
_MODE = st.sampled_from(["nearest", "floor", "ceiling"])


@settings(max_examples=1500, deadline=None)
@given(v=_VALUE, n=st.integers(1, 40), mode=_MODE)
def test_round_decimal_is_the_definition(v, n, mode):
    want = _reference(v, n, mode)
    assert round_decimal(v, n, mode) == want, (v, n, mode)
    # round_ratio takes the ratio unreduced (a dyadic end: den a power of two, any scale)
    k = 3
    assert round_ratio(v.numerator * k, v.denominator * k, n, mode) == want


@pytest.mark.parametrize(
    ("v", "n", "mode", "want"),
    [
        (Fraction(0), 5, "nearest", (0, 0, 0)),
        (Fraction(0), 1, "floor", (0, 0, 0)),
        (Fraction(1), 1, "nearest", (1, 1, 0)),
        (Fraction(1, 3), 3, "nearest", (1, 333, -1)),
        (Fraction(2, 3), 3, "nearest", (1, 667, -1)),
        (Fraction(-2, 3), 3, "floor", (-1, 667, -1)),
        (Fraction(-2, 3), 3, "ceiling", (-1, 666, -1)),
        (Fraction(5, 4), 2, "nearest", (1, 13, 0)),  # a tie, away from zero
        (Fraction(-5, 4), 2, "nearest", (-1, 13, 0)),
        (Fraction(999, 1000), 2, "nearest", (1, 10, 0)),  # the carry: 0.999 → 1.0
        (Fraction(-999, 1000), 2, "floor", (-1, 10, 0)),
        (Fraction(10**30 + 1), 3, "ceiling", (1, 101, 30)),
        (Fraction(1, 10**30), 2, "floor", (1, 10, -30)),
    ],
)
def test_known_roundings(v, n, mode, want):
    """Hand-checked: zero, ties, the carry past 10^n, each direction on both signs."""
    assert round_decimal(v, n, mode) == want


@settings(max_examples=800, deadline=None)
@given(v=_VALUE.filter(bool), n=st.integers(1, 40), strip=st.booleans())
def test_format_decimal_prints_the_rounded_value_as_nstr_does(v, n, strip):
    rounded = round_decimal(v, n, "nearest")
    text = format_decimal(rounded, n, strip_zeros=strip)
    shown = decimal_value(rounded, n)
    assert Fraction(Decimal(text)) == shown
    with mpmath.workdps(n + 20):  # the n-digit decimal, 20 digits from any tie of nstr's
        x = mpmath.mpf(shown.numerator) / shown.denominator
        assert text == mpmath.nstr(x, n, strip_zeros=strip), (v, n)


def test_format_decimal_of_zero():
    assert format_decimal((0, 0, 0), 5) == "0.0" == format_decimal((0, 0, 0), 5, strip_zeros=True)

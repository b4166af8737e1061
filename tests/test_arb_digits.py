"""Proven digits of an Arb ball, against exact rational references.

:func:`deqrmt.numeric._arb.round_digits` decides which digits print as proven: the n-digit
rounding (to nearest, ties away from zero) that every point of the ball shares.  The reference
here reads the ball's exact ends from its dyadic midpoint and radius as Fractions and rounds
each by the definition (the decimal d·10^k, 10^(n−1) ≤ |d| < 10^n, nearest to the end);
:func:`~deqrmt.numeric._arb.arb_to_mpf` must give the midpoint exactly, in a context that keeps
its digits through arithmetic; :func:`~deqrmt.numeric._arb.bits_for_digits` must carry the
digits asked (2^bits ≥ 10^digits, the least such).
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import pytest
from flint import arb, arf
from hypothesis import given, settings
from hypothesis import strategies as st

from deqrmt.numeric._arb import (
    arb_to_mpf,
    bits_for_digits,
    format_digits,
    round_digits,
    to_arb,
    workprec,
)


def _exact(v: arf) -> Fraction:
    man, exp = v.man_exp()
    return Fraction(int(man)) * Fraction(2) ** int(exp)


def _dyadic(v: Fraction) -> arf:
    """v exactly, its denominator a power of two."""
    shift = v.denominator.bit_length() - 1
    assert v.denominator == 1 << shift
    return arf((v.numerator, -shift))


def _ends(x: arb) -> tuple[Fraction, Fraction]:
    mid, rad = _exact(x.mid()), _exact(arb(x.rad()).mid())
    return mid - rad, mid + rad


def _nearest(v: Fraction, n: int) -> tuple[int, int]:
    """(d, k): v ≠ 0 rounded to n significant digits is d·10^k, ties away from zero."""
    a = abs(v)
    k = 0
    while a >= Fraction(10) ** (k + 1):
        k += 1
    while a < Fraction(10) ** k:
        k -= 1
    scaled = a / Fraction(10) ** (k - n + 1)  # in [10^(n-1), 10^n)
    d = math.floor(scaled)
    if scaled - d >= Fraction(1, 2):
        d += 1
    e = k - n + 1
    if d == 10**n:
        d, e = 10 ** (n - 1), e + 1
    return (d if v > 0 else -d), e


def _proven(x: arb, n: int) -> tuple[int, int] | None:
    lo, hi = _ends(x)
    if lo <= 0 <= hi:
        return None
    a, b = _nearest(lo, n), _nearest(hi, n)
    return a if a == b else None


def _as_fraction(rounded: tuple[int, int, int], n: int) -> Fraction:
    sign, digits, e = rounded
    return sign * digits * Fraction(10) ** (e - n + 1)


@settings(max_examples=600, deadline=None)
@given(
    man=st.integers(-(2**120), 2**120).filter(bool),
    exp=st.integers(-200, 120),
    rad_man=st.integers(0, 2**20),
    rad_exp=st.integers(-260, 40),
    n=st.integers(1, 30),
)
def test_round_digits_is_the_rounding_both_exact_ends_share(man, exp, rad_man, rad_exp, n):
    """Midpoints and radii of every size, including radii above and below the midpoint's
    magnitude (balls that contain 0 or straddle a rounding boundary)."""
    x = arb(arf((man, exp)), arf((rad_man, rad_exp)))  # exact: dyadic midpoint and radius
    want = _proven(x, n)
    got = round_digits(x, n)
    if want is None:
        assert got is None, (x.str(40, radius=True), n, got)
    else:
        assert got is not None, (x.str(40, radius=True), n, want)
        d, e = want
        assert _as_fraction(got, n) == d * Fraction(10) ** e, (x.str(40, radius=True), n)


@pytest.mark.parametrize(
    ("mid", "rad", "n", "text"),
    [
        # an exact ball, a tie rounded away from zero on either side
        (Fraction(5, 4), Fraction(0), 2, "1.3"),
        (Fraction(-5, 4), Fraction(0), 2, "-1.3"),
        # a ball of huge integers: every end is ≥ 2^64 (a midpoint with a positive exponent)
        (Fraction(3 * 2**70), Fraction(2**10), 5, "3.5418e+21"),
        # ends at 0.25 ± 2^-40: both round to 0.25 at 5 digits, differ at 15
        (Fraction(1, 4), Fraction(1, 2**40), 5, "0.25000"),
        (Fraction(1, 4), Fraction(1, 2**40), 15, None),
        # a negative ball near -1: the carry 0.99999… → 1.0
        (Fraction(-(2**30 - 1), 2**30), Fraction(1, 2**60), 3, "-1.00"),
    ],
)
def test_known_proven_digits(mid, rad, n, text):
    """Hand-checked roundings (ties, a carry, a midpoint beyond 2^64, a radius that decides)."""
    x = arb(_dyadic(mid), _dyadic(rad))
    lo, hi = _ends(x)  # Arb rounds a radius up (30-bit mantissa): by 2^-29 of it at most
    assert lo <= mid - rad and hi >= mid + rad and hi - lo <= 2 * rad * (1 + Fraction(1, 2**28))
    got = round_digits(x, n)
    assert (None if got is None else format_digits(got, n)) == text


def test_balls_that_touch_zero_or_are_not_finite_prove_nothing():
    assert round_digits(arb(0), 5) is None
    assert round_digits(arb(2**-30, 2**-30), 1) is None  # lower end exactly 0
    assert round_digits(arb(-(2**-30), 2**-30), 1) is None  # upper end exactly 0
    assert round_digits(arb("nan"), 5) is None
    assert round_digits(arb("inf"), 5) is None


@settings(max_examples=300, deadline=None)
@given(man=st.integers(-(2**600), 2**600), exp=st.integers(-900, 900))
def test_arb_to_mpf_is_the_exact_midpoint_and_keeps_its_digits(man, exp):
    """The value equals the midpoint exactly, and its context is more than 32 bits more precise
    than the midpoint, a multiple of 64: v + v and (v · 3) / 3 are then exact."""
    x = arb(arf((man, exp)), arf((1, -2000)))
    v = arb_to_mpf(x)
    sign, m, e, bc = v._mpf_
    assert Fraction(-int(m) if sign else int(m)) * Fraction(2) ** int(e) == Fraction(man) * (
        Fraction(2) ** exp
    )
    bits = int(x.mid().man_exp()[0]).bit_length()  # the odd mantissa Arb keeps
    prec = v.context.prec
    assert prec % 64 == 0 and bits + 32 < prec <= bits + 32 + 64, (bits, prec)
    assert (v + v) == 2 * v and (v * 3) / 3 == v
    with mpmath.workprec(prec + 64):
        exact = mpmath.mpf(man) * mpmath.mpf(2) ** exp
        assert mpmath.mpf(v) == exact


@pytest.mark.parametrize("digits", [1, 2, 3, 15, 16, 17, 30, 50, 100, 301, 1000])
def test_bits_for_digits_is_the_least_precision_carrying_the_digits(digits):
    bits = bits_for_digits(digits)
    assert 2**bits >= 10**digits > 2 ** (bits - 1)


def test_to_arb_converts_exact_numbers_exactly_and_refuses_the_rest():
    from flint import fmpq
    from sympy import Rational

    x = arb(arf((3, -5)), arf((1, -80)))
    assert to_arb(x) is x  # a ball passes through untouched
    with workprec(200):
        for value in ("0.1", "-7/3", Fraction(-7, 3), Rational(-7, 3), 12, -(2**70)):
            ball = to_arb(value)
            want = Fraction(str(value)) if not isinstance(value, Fraction) else value
            assert ball.contains(arb(fmpq(want.numerator, want.denominator)))
            lo, hi = _ends(ball)
            assert lo <= want <= hi and hi - lo <= abs(want) / 2**190
    for bad in (True, 1.5, None, "x"):
        with pytest.raises((TypeError, ValueError)):
            to_arb(bad)


@pytest.mark.parametrize("bits", [1, 30, 31, 32, 33, 63, 64, 95, 96, 97, 600])
def test_arb_to_mpf_context_is_the_least_multiple_of_64_above_bits_plus_32(bits):
    """Mantissas of every length near a multiple of 64 (random ones rarely land there): the
    context has more than 32 guard bits, and fewer than 97."""
    man = (1 << (bits - 1)) | 1 if bits > 1 else 1  # odd: Arb keeps it as is
    v = arb_to_mpf(arb(arf((man, -7)), arf((1, -900))))
    prec = v.context.prec
    assert prec % 64 == 0 and bits + 32 < prec <= bits + 32 + 64, (bits, prec)
    assert v * 4 == Fraction(man, 2**5)

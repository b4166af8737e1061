"""An enclosure printed encloses (issue 21): balls and intervals become text rounded outward.

Thousands of random balls and intervals are printed by :func:`deqrmt._text.ball_text` /
:func:`~deqrmt._text.interval_ends` and read back as exact decimals (``Fraction(Decimal(s))``):
the printed ball must contain the ball, the midpoint must be the nearest decimal, and the radius
may exceed what containment needs by no more than its own 3-digit rounding.  The same through
the engine's own path (an Arb ball → ``proven`` → ``ball_dict``, what ``--json`` prints), with
the Arb ball's exact ends.
"""

from __future__ import annotations

import json
from decimal import Decimal
from fractions import Fraction

import mpmath
import pytest
from flint import arb, fmpz
from hypothesis import given, settings
from hypothesis import strategies as st

from deqrmt._text import RADIUS_DIGITS, ball_text, interval_ends
from deqrmt.numeric._verified import proven
from deqrmt.numeric._verify import ball_dict


def _read(text: str) -> Fraction:
    return Fraction(Decimal(text))


def _ulp(printed: Fraction, digits: int) -> Fraction:
    """One unit in the last of ``digits`` significant digits of the nonzero ``printed``."""
    e = len(str(abs(printed.numerator))) - len(str(printed.denominator))
    while abs(printed) >= Fraction(10) ** (e + 1):
        e += 1
    while abs(printed) < Fraction(10) ** e:
        e -= 1
    return Fraction(10) ** (e - digits + 1)


#: exact binary numbers man·2^exp, as Arb and mpmath hold them, from tiny to huge
_BINARY = st.builds(
    lambda m, e: Fraction(m) * Fraction(2) ** e,
    st.integers(-(2**200), 2**200),
    st.integers(-700, 300),
)
_DECIMAL = st.builds(
    lambda m, e: Fraction(m) * Fraction(10) ** e,
    st.integers(-(10**60), 10**60),
    st.integers(-120, 40),
)
_NUMBER = _BINARY | _DECIMAL | st.fractions(max_denominator=10**30)
_RADIUS = st.just(Fraction(0)) | _NUMBER.map(abs)


@settings(max_examples=3000, deadline=None)
@given(mid=_NUMBER, rad=_RADIUS, digits=st.integers(1, 80))
def test_a_printed_ball_contains_the_ball(mid, rad, digits):
    m_text, r_text = ball_text(mid, rad, digits)
    m, r = _read(m_text), _read(r_text)
    assert m - r <= mid - rad and mid + rad <= m + r, (mid, rad, m_text, r_text)
    need = rad + abs(m - mid)
    if mid != 0:  # the nearest decimal of `digits` significant digits
        assert abs(m - mid) <= _ulp(m, digits) / 2, (mid, m_text)
    else:
        assert m == 0
    # rounded up to 3 digits, no more: r < need + one unit of its third digit
    assert (r == 0) == (need == 0)
    if need:
        assert r < need + _ulp(r, RADIUS_DIGITS), (need, r_text)
    assert "e" not in r_text or float(r_text) > 0


@settings(max_examples=2000, deadline=None)
@given(a=_NUMBER, b=_NUMBER, digits=st.integers(1, 80))
def test_a_printed_interval_contains_the_interval(a, b, digits):
    lo, hi = min(a, b), max(a, b)
    lo_text, hi_text = interval_ends(lo, hi, digits)
    p, q = _read(lo_text), _read(hi_text)
    assert p <= lo and hi <= q, (lo, hi, lo_text, hi_text)
    for exact, printed in ((lo, p), (hi, q)):
        if exact != 0:
            assert abs(printed - exact) < _ulp(printed, digits), (exact, printed)


def _arb_ends(x: arb) -> tuple[Fraction, Fraction]:
    def exact(v: arb) -> Fraction:
        man, exp = v.man_exp()
        return Fraction(int(man)) * Fraction(2) ** int(exp)

    mid, rad = exact(x.mid()), exact(arb(x.rad()))
    return mid - rad, mid + rad


@settings(max_examples=1000, deadline=None)
@given(
    man=st.integers(1, 2**400),
    exp=st.integers(-500, 100),
    sign=st.sampled_from([1, -1]),
    rad_bits=st.integers(20, 380),
    dps=st.integers(5, 100),
)
def test_the_engine_prints_balls_that_contain_its_balls(man, exp, sign, rad_bits, dps):
    """An Arb ball (a midpoint of up to 400 bits, a radius 2^-20 … 2^-380 relative) through
    ``proven`` and ``ball_dict``, as ``coefficients --json`` and ``sphere --json`` print it."""
    x = arb(fmpz(sign * man)) * arb(2) ** exp
    x = arb(x.mid(), abs(x.mid()) * arb(2) ** (-rad_bits))
    v = proven(x, dps)
    lo, hi = _arb_ends(x)
    ball = ball_dict(v)
    m, r = _read(ball["midpoint"]), _read(ball["radius"])
    assert m - r <= lo and hi <= m + r, (x.str(30, radius=True), ball)
    if v.digits:  # the proven digits: the rounding every point of the ball shares
        shown = _read(v.text)
        for end in (lo, hi):
            assert abs(end - shown) <= _ulp(shown, v.digits) / 2


def test_the_issue_example_is_mended():
    """issue 21: `coefficients "elu(1)" --sigma-a2 0.2 --sigma-b2 0.8 --dps 50 --json` printed
    τ* as a 60-digit midpoint 1.7e-61 off the Arb midpoint with the Arb radius 5.7e-63."""
    from deqrmt.numeric import deq_coefficients

    res = deq_coefficients("elu(1)", "0.2", "0.8", dps=50)
    assert res.certified
    doc = json.loads(res.to_json())
    for key, v in {**res.values, **res.moments}.items():
        ball = doc["balls"][key]
        m, r = _read(ball["midpoint"]), _read(ball["radius"])
        mid, rad = _mpf_fraction(v.value), _mpf_fraction(v.radius)
        assert m - r <= mid - rad and mid + rad <= m + r, (key, ball)


def _mpf_fraction(x) -> Fraction:
    sign, man, exp, _ = x._mpf_
    return (-1) ** sign * Fraction(int(man)) * Fraction(2) ** int(exp)


@pytest.mark.parametrize(
    ("mid", "rad", "digits", "expected"),
    [
        (Fraction(0), Fraction(0), 20, ("0.0", "0")),
        (Fraction(1, 4), Fraction(0), 20, ("0.25000000000000000000", "0")),
        (Fraction(1, 3), Fraction(1, 10**30), 10, ("0.3333333333", "3.34e-11")),
        (Fraction(-2, 3), Fraction(0), 3, ("-0.667", "0.000334")),
        (Fraction(10**25), Fraction(1), 30, ("10000000000000000000000000.0000", "1.0")),
        (Fraction(12345, 10**9), Fraction(1, 10**12), 5, ("1.2345e-5", "1.0e-12")),
    ],
)
def test_known_texts(mid, rad, digits, expected):
    """The text is ``mpmath.nstr``'s (fixed near unity, else an exponent; the midpoint keeps its
    zeros, the radius drops them), so the JSON reads as before."""
    assert ball_text(mid, rad, digits) == expected
    if mid:
        with mpmath.workdps(100):
            x = mpmath.mpf(mid.numerator) / mid.denominator
            assert expected[0] == mpmath.nstr(x, digits, strip_zeros=False)


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ((float("nan"), 0, 5), ValueError),
        ((1, -1, 5), ValueError),
        ((mpmath.inf, 0, 5), ValueError),
        (("0.5", 0, 5), TypeError),
    ],
)
def test_non_numbers_are_refused(args, error):
    with pytest.raises(error):
        ball_text(*args)

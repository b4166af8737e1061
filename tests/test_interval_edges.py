"""Interval arithmetic of ``numeric/_interval.py``: every result contains the exact range.

Each operation is applied to intervals and its result compared with the operation evaluated by
mpmath at 41 points of the input intervals (independent of Arb): every sampled value must lie in
the result.  Integer powers and monotone functions are also checked to be tight (their ends are
the exact values at the input's ends).
"""

from __future__ import annotations

import operator

import mpmath
import pytest
from flint import arb

from deqrmt.numeric._interval import Interval, IntervalContext, exact_power, interval

CTX = IntervalContext(80)


def _iv(lo: float, hi: float) -> Interval:
    return Interval(arb(lo).union(arb(hi)))


def _points(lo: float, hi: float) -> list[mpmath.mpf]:
    return [mpmath.mpf(lo) + (mpmath.mpf(hi) - lo) * k / 40 for k in range(41)]


def _tight(b, vals: list) -> bool:
    """The ball's ends are the sampled extremes (the exact range's ends are sample points
    here), up to Arb's 30-bit radius: 2^-29 relative to the largest magnitude."""
    lo, hi = float(min(vals)), float(max(vals))
    tol = 1e-7 * (1 + max(abs(lo), abs(hi)))
    return abs(float(b.lower().mid()) - lo) < tol and abs(float(b.upper().mid()) - hi) < tol


def _inside(result: Interval, value: mpmath.mpf) -> bool:
    b = interval(result)
    lo, hi = b.lower(), b.upper()
    slack = mpmath.mpf(10) ** -15 * (1 + abs(value))
    return mpmath.mpf(float(lo.mid())) - slack <= value <= mpmath.mpf(float(hi.mid())) + slack


INPUTS = [(-2.0, 3.0), (0.5, 2.0), (-3.0, -1.0), (0.0, 1.0), (-1.0, 0.0)]


@pytest.mark.parametrize("n", [-3, -2, 0, 1, 2, 3, 4, 7])
@pytest.mark.parametrize(("lo", "hi"), INPUTS)
def test_integer_powers_contain_and_are_tight(lo: float, hi: float, n: int) -> None:
    if n < 0 and lo <= 0 <= hi:
        # 1/0 in the range: the ball is not finite, which is the honest answer
        assert not interval(_iv(lo, hi) ** n).is_finite()
        return
    for power in (_iv(lo, hi) ** n, _iv(lo, hi) ** arb(n)):
        vals = [p**n for p in _points(lo, hi)]
        assert all(_inside(power, v) for v in vals)
        assert _tight(interval(power), vals)


def test_real_powers_and_powers_of_constants() -> None:
    x = _iv(0.5, 2.0)
    r = x ** arb(0.5)
    assert all(_inside(r, mpmath.sqrt(p)) for p in _points(0.5, 2.0))
    r2 = 2**x
    assert all(_inside(r2, mpmath.mpf(2) ** p) for p in _points(0.5, 2.0))


def test_non_finite_inputs_give_nan_not_a_wrong_interval() -> None:
    nan = Interval(arb("nan"))
    assert not interval(nan**2).is_finite()
    assert not interval(abs(nan)).is_finite()
    assert not interval(CTX.exp(nan)).is_finite()
    # an unbounded ball: a hull with an infinite end is refused as nan
    inf = Interval(arb(0, arb("inf")))
    assert not interval(inf**3).is_finite()


@pytest.mark.parametrize(("lo", "hi"), INPUTS)
def test_abs_contains_and_is_tight(lo: float, hi: float) -> None:
    r = abs(_iv(lo, hi))
    vals = [abs(p) for p in _points(lo, hi)]
    assert all(_inside(r, v) for v in vals)
    assert _tight(interval(r), vals)


@pytest.mark.parametrize(
    "op",
    [operator.add, operator.sub, operator.mul, operator.truediv],
    ids=["add", "sub", "mul", "div"],
)
def test_arithmetic_with_plain_numbers_on_either_side(op) -> None:
    x = _iv(0.5, 2.0)
    for left, right, f in (
        (x, 3, lambda p: op(p, 3)),
        (3, x, lambda p: op(3, p)),
        (x, arb(3), lambda p: op(p, 3)),
        (x, x, None),
    ):
        r = op(left, right)
        assert isinstance(r, Interval)
        if f is not None:
            assert all(_inside(r, f(p)) for p in _points(0.5, 2.0))
    assert abs(float(interval(-x).lower().mid()) + 2) < 1e-7 and interval(+x) is x.ball
    assert "Interval(" in repr(x)


MONOTONE = ["exp", "log", "sqrt", "tanh", "erf", "erfc", "atan", "asinh", "sinh"]
PLAIN = ["sin", "cos", "tan", "cosh", "asin", "acos", "acosh", "atanh", "gamma"]
DOMAINS = {"acosh": (1.5, 3.0), "asin": (-0.5, 0.5), "acos": (-0.5, 0.5), "atanh": (0.1, 0.45)}


@pytest.mark.parametrize("name", MONOTONE + PLAIN)
def test_functions_contain_the_mpmath_values(name: str) -> None:
    lo, hi = DOMAINS.get(name, (0.25, 1.25))
    r = getattr(CTX, name)(_iv(lo, hi))
    f = getattr(mpmath, name)
    vals = [f(p) for p in _points(lo, hi)]
    assert all(_inside(r, v) for v in vals), name
    if name in MONOTONE:  # evaluated at the ends: tight
        assert _tight(interval(r), vals)


def test_constants_and_conversions() -> None:
    consts = {"zero": 0, "one": 1, "pi": mpmath.pi, "e": mpmath.e, "euler": mpmath.euler}
    for name, want in consts.items():
        assert _inside(getattr(CTX, name), mpmath.mpf(want))
    v = CTX.mpf(3)
    assert isinstance(v, Interval) and CTX.mpf(v) is v
    assert CTX._n(v) == arb(3)


def test_exact_power_by_squaring() -> None:
    for base, n in ((3, 1), (3, 5), (-2, 7), (5, 12)):
        assert exact_power(arb(base), n) == arb(base**n)

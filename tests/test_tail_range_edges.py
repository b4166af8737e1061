"""The tail ranges of ``numeric/_tail_range.py`` contain the expression's values, by mpmath.

:func:`tail_range`, :func:`tail_sup` and :func:`tail_interval` claim an interval containing
e([x0, ∞)).  Each claim is checked at 60 points of [x0, x0 + 300] with e evaluated by SymPy's
``lambdify`` on mpmath (independent of Arb and of the package's printer); for the simple cases
the ends are also compared with the exact range, worked out by hand.
"""

from __future__ import annotations

import mpmath
import pytest
import sympy as sp
from flint import arb

from deqrmt.numeric._growth import NotEnclosable
from deqrmt.numeric._tail_range import tail_interval, tail_range, tail_sup
from deqrmt.symbolic import X

SLACK = mpmath.mpf(10) ** -12


def _samples(x0: int) -> list[mpmath.mpf]:
    return [mpmath.mpf(x0)] + [x0 + mpmath.mpf(300) * (k / 59) ** 2 for k in range(1, 60)]


def _mp(v: arb) -> mpmath.mpf:
    return mpmath.mpf(float(v.mid()))  # ends are exact arbs of 64 bits; 53 suffice here


def _contains(lo, hi, e: sp.Expr, x0: int) -> None:
    f = sp.lambdify(X, e, modules="mpmath")
    with mpmath.workdps(40):
        for x in _samples(x0):
            v = f(x)
            assert lo is None or v >= _mp(lo) - SLACK * (1 + abs(v)), (e, x, lo)
            assert hi is None or v <= _mp(hi) + SLACK * (1 + abs(v)), (e, x, hi)


RANGES = [
    X * sp.exp(-X),  # the rules see [x0, ∞)·[0, e^{-x0}]; the decay bound closes it
    X**sp.pi * sp.exp(-X),  # the rules fail on x^π; the growth bound of the product holds
    sp.Integer(2) ** X,
    sp.Integer(2) ** (-X),
    sp.sqrt(X),
    X ** sp.Rational(-1, 2),
    sp.sqrt(X - 1),
    -1 / X,
    1 / X**2,
    (X - 3) ** 2,
    (-X) ** 3,
    (-X) ** 2,
    sp.erfc(X),
    sp.erf(X) - sp.tanh(X),
    sp.log(X),
    sp.log(1 + 1 / X),
    sp.sin(1 / X),
    sp.cos(sp.exp(-X)),
    sp.sin(X),
    sp.cosh(1 / X),
    sp.cosh(X) * sp.exp(-2 * X),
    sp.Abs(X - 3),
    sp.Abs(sp.sin(1 / X) - 1),
    sp.atan(X) + sp.asinh(1 / X),
    sp.sinh(1 / X),
    (1 - sp.tanh(X) ** 2) * X,  # bounded only in the exponential form
]


@pytest.mark.parametrize("e", RANGES, ids=str)
@pytest.mark.parametrize("x0", [1, 2])
def test_tail_range_contains_every_sample(e: sp.Expr, x0: int) -> None:
    lo, hi = tail_range(e, arb(x0))
    _contains(lo, hi, e, x0)


@pytest.mark.parametrize(
    ("e", "lo", "hi"),
    [
        (sp.sqrt(X), 1, None),
        (X ** sp.Rational(-1, 2), 0, 1),
        (sp.sqrt(X - 1), 0, None),
        (-1 / X, -1, 0),
        (sp.erfc(X), 0, float(mpmath.erfc(1))),
        (sp.log(X), 0, None),
        (sp.Integer(2) ** X, 2, None),
        ((X - 3) ** 2, 0, None),
        ((-X) ** 3, None, -1),
        (sp.Abs(X - 3), 0, None),
        (sp.cosh(1 / X), 1, float(mpmath.cosh(1))),
    ],
    ids=lambda v: str(v),
)
def test_tail_range_ends_are_the_exact_range_where_it_is_monotone(e, lo, hi) -> None:
    """On [1, ∞) these ranges are known exactly (monotone or with a known minimum)."""
    got_lo, got_hi = tail_range(e, arb(1))
    for got, want in ((got_lo, lo), (got_hi, hi)):
        if want is None:
            assert got is None
        else:
            assert got is not None and abs(float(got.mid()) - want) < 1e-9, (e, got, want)


@pytest.mark.parametrize(
    "e",
    [
        sp.gamma(X),  # no rule at all
        X**X,
        sp.Integer(-2) ** X,
        1 / (X - 5),  # vanishes on the tail
        sp.log(X - 1),  # reaches log 0
        sp.sqrt(X - 5),  # a negative radicand
        (X - 1) ** sp.Rational(-1, 2),  # a pole at the end
        sp.besselj(0, X),  # a function of two arguments
    ],
    ids=str,
)
def test_tail_range_refuses_what_it_cannot_bound(e: sp.Expr) -> None:
    with pytest.raises(NotEnclosable):
        tail_range(e, arb(1))


def test_tail_sup_bounds_the_absolute_value() -> None:
    for e in (X * sp.exp(-X), (1 - sp.tanh(X) ** 2) * X, sp.sin(1 / X), 1 / (X + 1)):
        s = tail_sup(e, arb(1))
        assert s is not None
        _contains(-s, s, e, 1)
    assert tail_sup(sp.gamma(X), arb(1)) is None  # no interval, no exponential form
    assert tail_sup(X, arb(1)) is None  # unbounded
    assert tail_sup(sp.tanh(X) * X, arb(1)) is None  # unbounded in either form


@pytest.mark.parametrize(
    "e",
    [
        X / (X + 1),  # the rules give [0, 2]; the limit form [1/2, 3/2]
        sp.tanh(X) * X / (X + 1),
        1 + sp.exp(-X),
        (X**sp.pi + 1) / X**sp.pi,
        sp.atan(X),
    ],
    ids=str,
)
def test_tail_interval_contains_every_sample_and_is_finite(e: sp.Expr) -> None:
    out = tail_interval(e, arb(1))
    assert out is not None
    lo, hi = out
    _contains(lo, hi, e, 1)


def test_tail_interval_uses_the_limit_form_to_tighten() -> None:
    """x/(x + 1) on [1, ∞) is [1/2, 1): the limit form (1 − 1/(x + 1)) gets within 1/2 of it."""
    out = tail_interval(X / (X + 1), arb(1))
    assert out is not None
    lo, hi = out
    assert 0.49 < float(lo.mid()) <= 0.5
    assert 1 <= float(hi.mid()) <= 1.51


def test_tail_interval_declines_without_a_finite_range() -> None:
    assert tail_interval(X, arb(1)) is None
    assert tail_interval(sp.gamma(X), arb(1)) is None

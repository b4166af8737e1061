"""The tail-bound rules of ``numeric/_growth.py``, checked against mpmath at sample points.

Every bound the rules derive is a claim about e(x) for all x ≥ x0: |e(x)| ≤ c(1 + x)^p e^{ax}
(:func:`growth_bound`), |e(x)| ≥ c(1 + x)^p e^{ax} (:func:`lower_growth`), e(x) ≥ L
(:func:`lower_bound`).  Each claim is checked at 60 points from x0 to x0 + 200 with e evaluated
by SymPy's own ``lambdify`` on mpmath at 40 digits (independent of the package's printer and
of Arb), and expressions outside the rules must be refused (``NotEnclosable`` or None), never
bounded by a guess.
"""

from __future__ import annotations

import mpmath
import pytest
import sympy as sp
from flint import arb

from deqrmt.numeric._growth import (
    Growth,
    NotEnclosable,
    _lo,
    _up,
    constant_ball,
    growth_bound,
    growth_sup,
    lower_bound,
    lower_growth,
    nonnegative,
)
from deqrmt.symbolic import X

X0S = (arb(1), arb(3))


def _samples(x0: arb) -> list[mpmath.mpf]:
    start = mpmath.mpf(float(x0.mid()))
    return [start] + [start + mpmath.mpf(200) * (k / 59) ** 2 for k in range(1, 60)]


def _mp(v: arb) -> mpmath.mpf:
    return mpmath.mpf(float(v.mid()))  # exact arbs here (bounds' ends); 53 bits suffice


def _bound(g: Growth, x: mpmath.mpf) -> mpmath.mpf:
    return _mp(g.c) * (1 + x) ** _mp(g.p) * mpmath.exp(_mp(g.a) * x)


def _f(e: sp.Expr):
    return sp.lambdify(X, e, modules="mpmath")


UPPER = [
    X**2 + 3 * X + 1,
    2 * X * sp.exp(-X),
    sp.exp(-(X**2)) * X**5,
    sp.exp(X),  # decay=True: no decaying rate, linear growth
    sp.exp(sp.sin(X)),  # exponent bounded by a non-polynomial: e^c e^{cx}
    sp.Abs(X - 3) * sp.exp(-2 * X),
    sp.cosh(sp.tanh(X)),
    sp.sinh(sp.Rational(1, 2) * X),
    sp.Integer(2) ** X,
    sp.sqrt(X) * sp.exp(-X),
    X ** sp.Rational(3, 2),
    1 / (X + 1),
    X / (X**2 + 1),
    sp.log(X + 1) * sp.exp(-X),
    sp.log(X**2 + 2),
    sp.exp(-X) + sp.exp(-3 * X) * X**4,
    sp.exp(-(X**2) + X),
    sp.erfc(X) + sp.atan(X),
]


@pytest.mark.parametrize("decay", [False, True])
@pytest.mark.parametrize("e", UPPER, ids=str)
def test_growth_bound_holds_at_every_sample(e: sp.Expr, decay: bool) -> None:
    f = _f(e)
    for x0 in X0S:
        g = growth_bound(e, x0, decay=decay)
        if not decay:
            assert g.p >= 0 and g.a >= 0
        with mpmath.workdps(40):
            for x in _samples(x0):
                assert abs(f(x)) <= _bound(g, x) * (1 + mpmath.mpf(10) ** -12), (e, x0, x, g)


def test_decay_keeps_the_decay_of_x_times_exp_minus_x() -> None:
    """x·e^{−x}: the decaying bound has a < 0, so its supremum is finite (the plain one is not)."""
    x0 = arb(1)
    g = growth_bound(X * sp.exp(-X), x0, decay=True)
    assert g.a < 0
    s = growth_sup(g, x0)
    assert s is not None and s >= arb(1).exp() ** -1  # the true sup on [1, ∞) is e^{-1}
    assert growth_sup(growth_bound(X * sp.exp(-X), x0), x0) is None


REFUSED = [
    sp.gamma(X),  # no rule
    sp.exp(X**3),  # grows faster than any Gaussian decays
    sp.exp(X**2),
    sp.exp(-(X**3)),  # bounded above, but not maximised by the rules
    sp.exp(X * sp.exp(X)),  # no linear bound on the exponent
    sp.sinh(X**2),
    sp.Integer(-2) ** X,
    X**X,
    1 / (X - 5),  # the denominator vanishes at 5
    sp.log(X - 5),
    (X - 5) ** sp.Rational(1, 2),
]


@pytest.mark.parametrize("e", REFUSED, ids=str)
def test_outside_the_rules_is_refused(e: sp.Expr) -> None:
    with pytest.raises(NotEnclosable):
        growth_bound(e, arb(1))


def test_a_base_whose_sign_is_unknown_is_refused() -> None:
    c = sp.Symbol("c")
    with pytest.raises(NotEnclosable, match="not positive"):
        growth_bound(c**X, arb(1))
    with pytest.raises(NotEnclosable, match="power"):
        growth_bound(X**c, arb(1))


def test_decaying_negative_power_without_a_lower_growth_is_refused() -> None:
    """1/(x − 5)² on [1, ∞): x − 5 vanishes, so neither rule for a denominator applies."""
    with pytest.raises(NotEnclosable, match="denominator"):
        growth_bound((X - 5) ** -2, arb(1), decay=True)


def test_constants_are_balls_and_non_finite_constants_are_refused() -> None:
    b = constant_ball(sp.pi / 3)
    with mpmath.workdps(30):
        ref = mpmath.pi / 3
        assert _mp(arb(b.lower())) <= ref <= _mp(arb(b.upper())) + mpmath.mpf(2) ** -60
    with pytest.raises(NotEnclosable, match="not finite"):
        constant_ball(sp.atanh(sp.Integer(2), evaluate=False))  # Arb: nan off (−1, 1)
    with pytest.raises(NotEnclosable):
        constant_ball(sp.besselj(0, 1))  # outside Arb's functions
    for v in (arb("nan"), arb("inf")):
        with pytest.raises(NotEnclosable):
            _up(v)
        with pytest.raises(NotEnclosable):
            _lo(v)


LOWER_BOUNDS = [
    (X, lambda x0: x0),
    (3 * X, lambda x0: 3 * x0),
    (2 * X + 1, lambda x0: 2 * x0 + 1),
    (X**3, lambda x0: x0**3),
    ((X - 5) ** 2, lambda x0: 0 if x0 < 5 else (x0 - 5) ** 2),
    (1 / (X + 1), lambda x0: 0),
    (sp.sqrt(X), lambda x0: 0),
    (sp.tanh(X) + 2, lambda x0: 1),
    (sp.exp(-X), lambda x0: 0),
    (sp.cosh(X), lambda x0: 1),
    (sp.erfc(X), lambda x0: 0),
    (sp.atan(X), lambda x0: -mpmath.pi / 2),
]


@pytest.mark.parametrize(("e", "want"), LOWER_BOUNDS, ids=[str(e) for e, _ in LOWER_BOUNDS])
def test_lower_bound_is_the_expected_value_and_holds(e: sp.Expr, want) -> None:
    f = _f(e)
    for x0 in X0S:
        low = lower_bound(e, x0)
        assert low is not None
        w = mpmath.mpf(want(int(float(x0.mid()))))
        assert abs(_mp(low) - w) <= mpmath.mpf(2) ** -50 * (1 + abs(w)), (e, x0, low)
        for x in _samples(x0):
            assert f(x) >= _mp(low) - mpmath.mpf(10) ** -12


@pytest.mark.parametrize(
    "e",
    [
        X + sp.gamma(X),  # a term without a lower bound
        -X,  # a negative factor: the product rule needs factors ≥ 0
        (X - 5) ** 3,  # an odd power of a base that may be negative
        1 / (X - 5),
        sp.sqrt(X - 5),
        X**X,
        sp.gamma(X),
        sp.Abs(X),
    ],
    ids=str,
)
def test_lower_bound_declines_where_no_rule_proves_one(e: sp.Expr) -> None:
    assert lower_bound(e, arb(1)) is None


LOWER_GROWTH = [
    X,
    2 * X,
    X**2,
    (X + 1) ** -1,
    sp.sqrt(X),
    sp.exp(X),
    sp.exp(X**2 + X),
    X + 1,
    X**2 + sp.exp(X),
    sp.tanh(X) + 2,
    -X - 1,
    sp.Integer(3),
    X * sp.exp(2 * X),
]


@pytest.mark.parametrize("e", LOWER_GROWTH, ids=str)
def test_lower_growth_holds_at_every_sample(e: sp.Expr) -> None:
    f = _f(e)
    for x0 in X0S:
        g = lower_growth(e, x0)
        assert g is not None and g.c > 0, (e, x0)
        with mpmath.workdps(40):
            for x in _samples(x0):
                assert abs(f(x)) >= _bound(g, x) * (1 - mpmath.mpf(10) ** -12), (e, x0, x, g)


@pytest.mark.parametrize(
    "e",
    [
        sp.sin(X),  # vanishes on the tail
        X - 5,  # vanishes at 5
        X * sp.sin(X),
        sp.sqrt(X - 5),
        1 / sp.gamma(X),  # the rules raise inside: reported as None
        sp.exp(-(X**2)),
        sp.Integer(0),
        (X - 5) ** 2,
    ],
    ids=str,
)
def test_lower_growth_declines_where_e_may_vanish(e: sp.Expr) -> None:
    assert lower_growth(e, arb(1)) is None


def test_growth_sup_and_nonnegative() -> None:
    x0 = arb(1)
    assert growth_sup(Growth(arb("inf"), arb(0), arb(0)), x0) is None
    assert growth_sup(Growth(arb(1), arb(1), arb(0)), x0) is None  # (1 + x) is unbounded
    # (1 + x)² e^{−x} is largest at x = 1: 4/e
    s = growth_sup(Growth(arb(1), arb(2), arb(-1)), x0)
    assert s is not None
    assert abs(float(s.mid()) - 4 / float(mpmath.e)) < 1e-12
    n = nonnegative(Growth(arb(3), arb(-1), arb(2)), x0)
    assert n is not None
    assert (n.p, n.a) == (arb(0), arb(2))
    assert abs(float(n.c.mid()) - 1.5) < 1e-12  # (1 + x)^{-1} ≤ 1/2 on [1, ∞)
    assert nonnegative(Growth(arb(1), arb(1), arb(-1)), x0) is not None

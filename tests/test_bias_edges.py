"""Edges of the implicit-bias solver (``numeric/_bias.py``): budgets, NNLS, refusals.

The NNLS of the interior-point phase is checked against SciPy's ``optimize.nnls`` (an
independent Lawson–Hanson implementation); the refusals are the documented named errors.
"""

from __future__ import annotations

import math
import types

import mpmath
import numpy as np
import pytest
import sympy as sp
from scipy.optimize import nnls as scipy_nnls

from deqrmt._errors import BudgetExceeded, InvalidArgument, NoConvergence, NoReachableInterpolant
from deqrmt.numeric._bias import (
    MAX_D,
    MAX_STEP_SIZES,
    BiasLimit,
    _interior_point,
    _newton_float,
    _nnls,
    _polish,
    check_sizes,
    domain_bounds,
    minimum_norm_interpolant,
    predicted_limit,
)


def test_a_limit_needs_coordinates() -> None:
    with pytest.raises(InvalidArgument, match="non-empty"):
        BiasLimit(beta=(), multipliers=(), kkt_residual=0, dps=15, iterations=(0, 0), ctx=mpmath.mp)


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        ((True, 5), {}, InvalidArgument, "n=True"),
        ((2, 5.0), {}, InvalidArgument, "d=5.0"),
        ((5, 5), {}, InvalidArgument, "n < d"),
        ((0, 5), {}, InvalidArgument, "n < d"),
        ((1, 5), {"step_sizes": 0}, BudgetExceeded, "step sizes"),
        ((1, 5), {"step_sizes": MAX_STEP_SIZES + 1}, BudgetExceeded, "step sizes"),
        ((100, 1000), {"dps": 30}, BudgetExceeded, "products"),
    ],
)
def test_check_sizes_refuses_before_any_work(args, kwargs, error, match) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(error, match=match):
        check_sizes(*args, **kwargs)


def test_too_many_coordinates_are_refused_by_count() -> None:
    """A one-sided domain (no 2d-variable NNLS): the memory estimate is small, the count refuses."""
    one_sided = types.SimpleNamespace(
        domain=sp.Interval.open(0, sp.oo), expression="1/(1-w)", closed_form=True
    )
    with pytest.raises(BudgetExceeded, match="coordinates"):
        check_sizes(1, MAX_D + 1, derivation=one_sided)  # type: ignore[arg-type]


def test_check_sizes_accepts_a_small_check() -> None:
    check_sizes(3, 10)  # returns None: nothing to refuse


def test_check_sizes_with_a_derivation(deq) -> None:  # type: ignore[no-untyped-def]
    """β = 1/(1 − w) has the one-sided domain (0, ∞): the two-sided NNLS limit does not apply."""
    assert domain_bounds(deq) == (0.0, math.inf)
    check_sizes(2, 500, derivation=deq)


def test_two_sided_and_quadrature_derivations_have_smaller_limits() -> None:
    """Stand-ins carrying only what the budget reads: the domain and whether ψ is closed."""
    two_sided = types.SimpleNamespace(
        domain=sp.Interval.open(-1, 1), expression="tanh(w)", closed_form=True
    )
    with pytest.raises(BudgetExceeded, match="two finite ends"):
        check_sizes(2, 300, derivation=two_sided)  # type: ignore[arg-type]
    x = sp.Symbol("x", real=True)
    implicit = sp.ConditionSet(x, sp.Gt(x**3 + x, -1), sp.S.Reals)  # not an Interval
    quad = types.SimpleNamespace(domain=implicit, expression="atan(w)", closed_form=False)
    assert domain_bounds(quad) == (-math.inf, math.inf)  # type: ignore[arg-type]
    with pytest.raises(BudgetExceeded, match="no closed form"):
        check_sizes(2, 300, derivation=quad)  # type: ignore[arg-type]


def test_data_that_is_not_numbers_is_invalid() -> None:
    with pytest.raises(InvalidArgument, match="float arrays"):
        minimum_norm_interpolant([["a", "b"]], [1.0])


@pytest.mark.parametrize("shape", [(8, 6), (6, 10), (3, 5)])
@pytest.mark.parametrize("seed", range(4))
def test_nnls_agrees_with_scipy(shape: tuple[int, int], seed: int) -> None:
    """Random problems where some of the unconstrained solution is negative, so the active
    set moves (with more columns than rows a column leaves it again: the inner back-tracking
    loop runs, e.g. at shape (6, 10), seed 0).  The closest point of the cone, A t, is unique
    even where t is not, so A t and the residual are compared; t too where A has full column
    rank."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal(shape)
    b = rng.standard_normal(shape[0])
    t, r = _nnls(A, b)
    t_ref, rnorm = scipy_nnls(A, b)
    assert (t >= 0).all()
    assert np.allclose(A @ t, A @ t_ref, atol=1e-10)
    assert abs(np.linalg.norm(r) - rnorm) < 1e-10
    assert np.allclose(r, b - A @ t)
    if shape[0] >= shape[1]:
        assert np.allclose(t, t_ref, atol=1e-10)


def test_interior_point_below_a_finite_upper_end() -> None:
    """Domain (−∞, 1): a point of {Xβ = y} with every β_i < 1."""
    X = np.array([[1.0, 2.0, 0.5], [0.0, 1.0, -1.0]])
    y = np.array([0.5, -0.25])
    beta = _interior_point(X, y, -math.inf, 1.0)
    assert np.all(beta < 1.0)
    assert np.allclose(X @ beta, y, atol=1e-12)


def test_interpolating_set_touching_only_the_boundary_is_refused() -> None:
    """β ≥ 0 with β₁ + β₂ = 0: only β = 0, on the boundary of (0, ∞)."""
    X, y = np.array([[1.0, 1.0]]), np.array([0.0])
    with pytest.raises(NoReachableInterpolant, match="boundary"):
        _interior_point(X, y, 0.0, math.inf)


def test_float_newton_refuses_a_start_where_q_is_undefined() -> None:
    def fn(beta):  # type: ignore[no-untyped-def]
        nan = np.full_like(beta, np.nan)
        return nan, nan, nan

    X, y = np.array([[1.0, 1.0]]), np.array([2.0])
    with pytest.raises(NoConvergence, match="undefined"):
        _newton_float(fn, X, y, np.array([1.0, 1.0]), 0.0, math.inf, 10)


def test_float_newton_stalls_when_no_step_decreases_q() -> None:
    """A gradient that points uphill (its sign flipped) makes every trial increase Q."""

    def fn(beta):  # type: ignore[no-untyped-def]
        return beta**2, -2 * beta, np.full_like(beta, 2.0)

    X, y = np.array([[1.0, 0.0, 1.0]]), np.array([2.0])
    with pytest.raises(NoConvergence, match="stalled"):
        _newton_float(fn, X, y, np.array([1.0, 5.0, 1.0]), -math.inf, math.inf, 50)


def test_float_newton_gives_up_after_max_iter(deq) -> None:  # type: ignore[no-untyped-def]
    X, y = [[1.0, 2.0, 3.0]], [6.0]
    with pytest.raises(NoConvergence, match="1 iterations"):
        predicted_limit(deq, X, y, max_iter=1)


def test_mpmath_polish_refuses_when_newton_does_not_converge() -> None:
    """A Hessian claimed 10⁶ times too large: every Newton step is 10⁶ times too short."""

    def fn(ctx, b):  # type: ignore[no-untyped-def]
        return b * b / 2, b - 1, ctx.mpf(10) ** 6

    X, y = np.array([[1.0, 1.0]]), np.array([1.0])
    with pytest.raises(NoConvergence, match="did not reach"):
        _polish(fn, X, y, np.array([0.2, 0.8]), np.array([0.0]), 20)

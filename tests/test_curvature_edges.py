"""Arguments, refusals and exact cases of ``curvature_bound`` (``numeric/_curvature.py``).

φ = x gives (φ_c²)'' = 2 for every c, so E[(φ_c²)''(τξ)] = 2 for every τ: the supremum is 2
exactly; φ = sin gives 2e^{−2τ²} (approached as τ → 0).  Bad arguments are named errors.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import pytest

from deqrmt._errors import BudgetExceeded, InvalidArgument
from deqrmt.numeric import curvature_bound
from deqrmt.numeric._curvature import _where, _which


def test_identity_has_curvature_exactly_two() -> None:
    b = curvature_bound("x", "0.5")
    assert b.kind == "bounded" and b.finite
    assert b.lower <= 2 <= b.upper
    assert b.upper - b.lower <= mpmath.mpf("0.05")


def test_a_private_context_mpf_is_an_exact_center() -> None:
    """An mpmath number from another context is read exactly (not rounded to 53 bits)."""
    ctx = mpmath.MPContext()
    ctx.prec = 200
    c = ctx.mpf(1) / 3
    b = curvature_bound("x", c)
    assert b.lower <= 2 <= b.upper


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"center_radius": -1}, InvalidArgument, "center_radius"),
        ({"rtol": 0}, InvalidArgument, "rtol"),
        ({"rtol": 1}, InvalidArgument, "rtol"),
        ({"center": mpmath.inf}, InvalidArgument, "finite"),
        ({"center": mpmath.nan}, InvalidArgument, "finite"),
        ({"budget": 0}, InvalidArgument, "budget"),
        ({"budget": 10**9}, BudgetExceeded, "budget"),
    ],
)
def test_bad_arguments_are_named(kwargs, error, match) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(error, match=match):
        curvature_bound("tanh", **kwargs)


def test_a_tight_tolerance_with_a_small_budget_settles_for_a_looser_bound() -> None:
    """sin: sup 2 as τ → 0; a budget of a few cells cannot reach rtol 1e-12 but stays valid."""
    b = curvature_bound("sin", rtol=1e-12, budget=30)
    assert b.kind == "bounded"
    assert b.lower <= 2 <= b.upper


def test_cell_names() -> None:
    assert _which(None, -3) == "τ → 0" and _where(None, -3) == "τ → 0"
    assert _which(4, None) == "τ → ∞" and _where(4, None) == "τ → ∞"
    assert _which(Fraction(1), Fraction(2)) == "τ ∈ [2^1, 2^2]"
    assert _where(0, 2) == "τ ≈ 2.0"


def _stein(tau: mpmath.mpf) -> mpmath.mpf:
    """E[(φ²)''(τξ)] = τ^(−2) E[(ξ² − 1) φ(τξ)²] for φ = softplus, by mpmath.quad."""

    def integrand(xi):  # type: ignore[no-untyped-def]
        return (xi**2 - 1) * mpmath.log(1 + mpmath.exp(tau * xi)) ** 2 * mpmath.npdf(xi)

    return mpmath.quad(integrand, [-mpmath.inf, -4, -1, 0, 1, 4, mpmath.inf]) / tau**2


def test_softplus_supremum_at_infinity_is_bounded_and_contains_the_samples() -> None:
    """softplus² has its curvature rising towards τ → ∞: the end cell is split on the way;
    every sampled E[(φ²)''(τξ)] lies below the upper bound, and the lower bound is attained."""
    b = curvature_bound("softplus(x)", budget=60)
    assert b.kind == "bounded"
    with mpmath.workdps(20):
        samples = [_stein(mpmath.mpf(2) ** (mpmath.mpf(k) / 2)) for k in range(-6, 13, 3)]
    assert all(v <= b.upper for v in samples)
    assert b.lower <= b.upper and b.lower <= max(samples) + mpmath.mpf("0.05")

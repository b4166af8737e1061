"""Refusals and exact cases of the sphere prover's parts (``numeric/_sphere_certified.py``).

The Hermite projections b_k and the dual f(r) = Σ b_k² r^k are checked on polynomials, where
they are known by hand (φ = x²: b₀ = E[ξ²] = 1, b₂ = E[h₂(ξ)ξ²] = √2, f(1) = E[ξ⁴] = 3; φ = 1 + x:
f(r) = 1 + r), and every refusal is the named one (``NotEnclosable``, ``ContractionError``).
"""

from __future__ import annotations

import mpmath
import pytest
from flint import arb

from deqrmt._errors import ContractionError
from deqrmt.numeric._arb import arb_to_mpf, workprec
from deqrmt.numeric._growth import NotEnclosable
from deqrmt.numeric._sphere_certified import (
    Controls,
    Dual,
    Projections,
    _estimate,
    _NotReal,
    _RealRootContext,
)
from deqrmt.symbolic import get_activation


def _in(ball: arb, value: mpmath.mpf) -> bool:
    with mpmath.workdps(50):
        return abs(arb_to_mpf(ball) - value) <= arb_to_mpf(arb(ball.rad())) + mpmath.mpf(10) ** -40


def test_a_polynomial_series_ends_and_its_dual_is_exact() -> None:
    with workprec(160):
        proj = Projections(get_activation("x**2"), arb(1), 160, Controls())
        proj.extend(4, lambda k: 160)
        assert proj.finite
        dual = Dual(proj, arb(3), Controls())
        assert dual.tail(arb(1) / 2, 1) == 0  # nothing beyond the degree
        f1 = dual(arb(1), 0)
    with mpmath.workdps(50):
        assert _in(proj.b[0], mpmath.mpf(1))
        assert _in(proj.b[2], mpmath.sqrt(2))
        assert _in(f1, mpmath.mpf(3))


def test_a_series_that_does_not_end_has_no_tail_bound_at_radius_one() -> None:
    with workprec(160):
        proj = Projections(get_activation("tanh"), arb(1), 160, Controls())
        proj.extend(5, lambda k: 160)
        dual = Dual(proj, arb("0.394"), Controls())
        assert not proj.finite
        assert dual.tail(arb(1), 0) is None
        assert dual.tail(arb(1) / 2, 100) is None  # too few terms for the 100th derivative
        with pytest.raises(NotEnclosable, match="too few Mehler terms"):
            dual(arb(1), 0)


def test_the_cut_must_exceed_every_kink() -> None:
    with workprec(160), pytest.raises(ValueError, match="exceed every kink"):
        Projections(get_activation("hard_tanh"), arb(1), 160, Controls(cut=1))


def test_a_function_outside_the_holomorphic_set_is_not_enclosable() -> None:
    with workprec(160), pytest.raises(NotEnclosable, match="outside the functions"):
        Projections(get_activation("(1 + x**2)**(1/3)"), arb(1), 160, Controls())


def _linear_dual() -> Dual:
    """φ = 1 + x: b₀ = b₁ = 1, so f(r) = 1 + r and f(1) = E[(1 + ξ)²] = 2."""
    with workprec(160):
        proj = Projections(get_activation("1 + x"), arb(1), 160, Controls())
        proj.extend(2, lambda k: 160)
    return Dual(proj, arb(2), Controls())


def test_estimate_refuses_a_root_at_or_beyond_one() -> None:
    """s r = σ_a² (1 + r) has its root at σ_a²/(s − σ_a²) = 1.5 for s = 1, σ_a² = 0.6."""
    with workprec(160), pytest.raises(ContractionError, match="outside"):
        _estimate(_linear_dual(), arb(1), arb("0.6"))


def test_estimate_finds_the_root_of_the_linear_dual() -> None:
    """s = 1, σ_a² = 0.25: r₀ = 0.25/0.75 = 1/3."""
    with workprec(160):
        r = _estimate(_linear_dual(), arb(1), arb("0.25"))
    assert abs(float(r.mid()) - 1 / 3) < 1e-15


def test_real_root_context_decides_the_radicands_sign() -> None:
    ctx = _RealRootContext(64)
    with ctx.workprec():
        assert ctx.sqrt(arb(4)) == 2
        with pytest.raises(_NotReal):
            ctx.sqrt(arb(-1))
        with pytest.raises(NotEnclosable, match="undecided"):
            ctx.sqrt(arb(0, 1))


def test_an_irrational_kink_is_not_an_exact_split_point() -> None:
    act = get_activation("max(x, sqrt(2))")
    assert any(not k.is_Rational for k in act.kinks)
    with workprec(160), pytest.raises(NotEnclosable, match="irrational kink"):
        Projections(act, arb(1), 160, Controls())

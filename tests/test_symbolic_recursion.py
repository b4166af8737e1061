"""The derived coefficient formulas equal the hand derivation (issue 2's verified formulas).

Hand derivation (φ centered at τ*, m1 = E[φ'], m2 = E[φ''], s2 = E[(φ²)''], D = 1 − σ_a² m1²):
    γ*² = E[φ²];  α4 = σ_b²/(1 − σ_a² s2/2);  α1 = σ_b² m1²/D;  α2 = m2² α4²/(4D);
    α3 = m2² (σ_a² α1 + σ_b²)²/(2D);  β1 = α1/D;  β2 = α2/D;
    β3 = (α3 + σ_a² m2² β1 (σ_a² α1 + σ_b²))/D;  κ*² = γ*²/(1 − σ_a² E[φ'²]).
Explicit layer (a1 = m1², a2 = m2 at the input scale):
    τ̃² = E[σ²]; α̃1 = a1 α1; α̃2 = a1 α2 + a2² α4²/4; α̃3 = a1 α3 + a2² α1²/2; α̃4 = s2 α4/2;
    β̃1 = a1(α1 + β1); β̃2 = a1(α2 + β2) + a2² α4²/4; β̃3 = a1(α3 + β3) + a2²(α1²/2 + α1 β1);
    κ̃² = τ̃² + κ² E[σ'²].
"""

from __future__ import annotations

import pytest
import sympy as sp

from deqrmt import DerivationError
from deqrmt.symbolic import SIGMA_A2, SIGMA_B2, TAU0, derive_deq, derive_layer
from deqrmt.symbolic._recursion import EPS, SI, SJ, X_, cross_expectation, reduce_to_ansatz

A2, B2 = SIGMA_A2, SIGMA_B2


def _zero(expr) -> bool:
    return sp.simplify(sp.together(sp.expand(expr))) == 0


def _hand_deq(m, b2):
    m1, m2 = m.mu[1], m.mu[2]
    d = 1 - A2 * m1**2
    al4 = b2 / (1 - A2 * m.sq2 / 2)
    al1 = b2 * m1**2 / d
    al2 = m2**2 * al4**2 / (4 * d)
    al3 = m2**2 * (A2 * al1 + b2) ** 2 / (2 * d)
    be1 = al1 / d
    be2 = al2 / d
    be3 = (al3 + A2 * m2**2 * be1 * (A2 * al1 + b2)) / d
    return (al1, al2, al3, al4), (be1, be2, be3), m.sq / (1 - A2 * m.dsq)


def test_deq_formulas_equal_the_hand_derivation():
    f = derive_deq()
    alpha, beta, kappa_sq = _hand_deq(f.m, B2)
    for k, (got, want) in enumerate(zip(f.alpha, alpha, strict=True), start=1):
        assert _zero(got - want), f"alpha_{k}: derived {got}, hand {want}"
    for k, (got, want) in enumerate(zip(f.beta, beta, strict=True), start=1):
        assert _zero(got - want), f"beta_{k}: derived {got}, hand {want}"
    assert _zero(f.kappa_sq - kappa_sq)
    assert _zero(f.gamma_sq - f.m.sq)
    assert _zero(f.tau_sq_map - (A2 * f.m.sq + B2 * TAU0**2))


def test_as_dict_takes_square_roots_of_gamma_and_kappa():
    f = derive_deq()
    d = f.as_dict()
    assert set(d) == {
        "gamma_star", "alpha_1", "alpha_2", "alpha_3", "alpha_4", "beta_1", "beta_2", "beta_3", "kappa_star",
    }  # fmt: skip
    assert _zero(d["gamma_star"] ** 2 - f.m.sq)
    assert _zero(d["kappa_star"] ** 2 - f.m.sq / (1 - A2 * f.m.dsq))


def test_deq_formulas_depend_only_on_the_centered_moments():
    f = derive_deq()
    allowed = {A2, B2, TAU0, f.m.mu[1], f.m.mu[2], f.m.sq, f.m.sq2, f.m.dsq}
    for e in (*f.alpha, *f.beta, f.kappa_sq, f.gamma_sq, f.tau_sq_map):
        assert e.free_symbols <= allowed, e.free_symbols - allowed
        assert not e.atoms(sp.Float)
    # E[φ] never enters: the activation is centered.
    assert all(not e.has(f.m.mu[0]) for e in (*f.alpha, *f.beta, f.kappa_sq))


def test_without_input_injection_everything_but_kappa_vanishes():
    f = derive_deq(input_injection=False)
    alpha, beta, kappa_sq = _hand_deq(f.m, sp.S.Zero)
    for got, want in zip((*f.alpha, *f.beta), (*alpha, *beta), strict=True):
        assert _zero(got - want) and _zero(got)
    assert _zero(f.kappa_sq - kappa_sq)
    assert _zero(f.tau_sq_map - A2 * f.m.sq)


def test_derive_deq_is_memoised():
    assert derive_deq() is derive_deq()


def test_layer_recursion_equals_the_hand_derivation():
    f = derive_layer()
    m, p = f.m, f.prev
    a1, a2 = m.mu[1] ** 2, m.mu[2]
    al = [p["alpha_1"], p["alpha_2"], p["alpha_3"], p["alpha_4"]]
    be = [p["beta_1"], p["beta_2"], p["beta_3"]]
    want_alpha = (
        a1 * al[0],
        a1 * al[1] + a2**2 * al[3] ** 2 / 4,
        a1 * al[2] + a2**2 * al[0] ** 2 / 2,
        m.sq2 * al[3] / 2,
    )
    want_beta = (
        a1 * (al[0] + be[0]),
        a1 * (al[1] + be[1]) + a2**2 * al[3] ** 2 / 4,
        a1 * (al[2] + be[2]) + a2**2 * (al[0] ** 2 / 2 + al[0] * be[0]),
    )
    for k, (got, want) in enumerate(zip(f.alpha, want_alpha, strict=True), start=1):
        assert _zero(got - want), f"alpha_{k}: derived {got}, hand {want}"
    for k, (got, want) in enumerate(zip(f.beta, want_beta, strict=True), start=1):
        assert _zero(got - want), f"beta_{k}: derived {got}, hand {want}"
    assert _zero(f.tau_sq - m.sq)
    assert _zero(f.kappa_sq - (m.sq + p["kappa"] ** 2 * m.dsq))


def test_one_layer_alpha_2_is_half_alpha_3_symbolically():
    # From the input layer (α = (1, 0, 0, 1)): α̃2 = a2²/4 and α̃3 = a2²/2.
    f = derive_layer()
    first = {f.prev["alpha_1"]: 1, f.prev["alpha_2"]: 0, f.prev["alpha_3"]: 0, f.prev["alpha_4"]: 1}
    assert _zero(f.alpha[1].subs(first) - f.alpha[2].subs(first) / 2)
    assert _zero(f.alpha[1].subs(first) - f.m.mu[2] ** 2 / 4)


# --- the building blocks -----------------------------------------------------------------------

C, DI, DJ, B, TAU = sp.symbols("c delta_i delta_j b tau", real=True)


def test_cross_expectation_is_exact_for_a_quadratic():
    # f(x) = x + b x², (u, v) Gaussian, Var u = τ² + δi, Var v = τ² + δj, Cov = c:
    # E[f(u) f(v)] = c + b²((τ² + δi)(τ² + δj) + 2c²) exactly (Isserlis); the second-order
    # heat-equation expansion is exact for a polynomial of degree 2.
    mu = (B * TAU**2, sp.S.One, 2 * B, sp.S.Zero, sp.S.Zero, sp.S.Zero)
    got = cross_expectation(mu, mu, C, DI, DJ)
    want = C + B**2 * ((TAU**2 + DI) * (TAU**2 + DJ) + 2 * C**2)
    assert sp.expand(got - want) == 0


def test_cross_expectation_with_different_functions():
    # f(x) = x + b x², g(x) = x: E[f(u) v] = c + b E[u² v] = c.
    mu_f = (B * TAU**2, sp.S.One, 2 * B, sp.S.Zero, sp.S.Zero, sp.S.Zero)
    mu_g = (sp.S.Zero, sp.S.One, sp.S.Zero, sp.S.Zero, sp.S.Zero, sp.S.Zero)
    assert sp.expand(cross_expectation(mu_f, mu_g, C, DI, DJ) - C) == 0


def test_reduce_to_ansatz_maps_products_onto_the_basis():
    got = reduce_to_ansatz(
        EPS * 3 * X_ + EPS**2 * (X_**2 + 5 * SI * SJ) + EPS**3 * 7 + EPS * X_ * SI
    )
    assert got == {X_: 3, sp.Symbol("S"): 5, sp.Symbol("T"): 1}


@pytest.mark.parametrize("stray", [sp.S.One, EPS * SI, EPS**2 * SI**2])
def test_terms_outside_the_ansatz_raise(stray):
    # A constant (an uncentered φ), a lone s_i, or s_i² cannot be written on {X, S, T}.
    with pytest.raises(DerivationError):
        reduce_to_ansatz(EPS * X_ + stray)

"""HLD 2023's sphere setting (issue 3): derivation, 40-digit evaluation, Monte Carlo, Corollary 1.

References here are independent of deqrmt's engine: the arc-cosine kernel is typed in and
differentiated by mpmath.diff / SymPy; the paper's printed formulas are typed in (with the
sign of k'(0) that the chain rule gives, see test_paper_formulas_at_unit_variance); the
quadratic's moments are integrated by mpmath.quad.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from fractions import Fraction

import mpmath
import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from mpmath import mpf

from deqrmt import ContractionError, InvalidArgument, NoConvergence
from deqrmt.cli.sphere import configure_sphere_parser, run_sphere
from deqrmt.numeric._sphere import (
    NTK_EXTRA_KEYS,
    SPHERE_KEYS,
    dual_series,
    sphere_coefficients,
)
from deqrmt.symbolic import SIGMA_A2, SIGMA_B2, get_activation
from deqrmt.symbolic._sphere import (
    DIM,
    G0,
    RHO,
    S,
    derive_explicit_sphere,
    derive_quadratic,
    derive_sphere,
    dual_taylor_coefficient,
    e_symbol,
    f_symbol,
    g_symbol,
    h_symbol,
    implicit_derivatives,
    polynomial_dual,
)
from helpers import assert_close

RELU = "sqrt(2)*max(x, 0)"  # HLD 2023's normalized ReLU: with σ_a² + σ_b² = 1, g(1) = 1


def _acos_kernel(r):
    """HLD 2023, Lemma 1: f(ρ) = (√(1−ρ²) + (π − arccos ρ)ρ)/π, the dual of √2·max(x, 0)."""
    return (mpmath.sqrt(1 - r * r) + (mpmath.pi - mpmath.acos(r)) * r) / mpmath.pi


# ---------------------------------------------------------------------------
# Symbolic derivation
# ---------------------------------------------------------------------------


def test_paper_formulas_at_unit_variance():
    """With s = 1, σ_b² = 1 − σ_a², the derivation gives HLD 2023's g'(0), g''(0), k''(0), and
    k'(0) with the opposite sign of the printed (σ_a² f' − 1) denominator."""
    F = derive_sphere(2)
    a2 = SIGMA_A2
    f1, f2 = f_symbol(1), f_symbol(2)
    h1, h2 = h_symbol(1), h_symbol(2)
    unit = {S: 1, SIGMA_B2: 1 - a2}
    g1 = F.g_derivatives[0].xreplace(unit)
    g2 = F.g_derivatives[1].xreplace(unit)
    assert sp.simplify(g1 - (1 - a2) / (1 - a2 * f1)) == 0
    assert sp.simplify(g2 - a2 * (1 - a2) ** 2 * f2 / (1 - a2 * f1) ** 3) == 0
    # k'(0), k''(0) in the paper's form: h kept abstract, g substituted.
    chain = {g_symbol(1): g1, g_symbol(2): g2}
    k1 = F.k_chain[1].xreplace(chain)
    k2 = F.k_chain[2].xreplace(chain)
    printed_k1 = (1 - a2) * h1 / (a2 * f1 - 1)
    assert sp.simplify(k1 + printed_k1) == 0  # the printed sign is flipped
    assert sp.simplify(k1 - printed_k1) != 0
    printed_k2 = (1 - a2) ** 2 * (h2 - a2 * f1 * h2 + a2 * h1 * f2) / (1 - a2 * f1) ** 3
    assert sp.simplify(k2 - printed_k2) == 0
    # Theorems 1 and 3 as stated.
    d = DIM
    g0, gg1, gg2 = g_symbol(0), g_symbol(1), g_symbol(2)
    assert [
        sp.simplify(x - y)
        for x, y in zip(F.ck_theorem, (g0 + gg2 / (2 * d), gg1, S - g0 - gg1), strict=True)
    ] == [0, 0, 0]


def test_explicit_theorems_2_and_4_are_derived():
    """Theorems 2 and 4 of HLD 2023, derived from Σ = f_σ(XᵀX), Θ = Σ + XᵀX ⊙ f_σ'(XᵀX)."""
    ex = derive_explicit_sphere()
    e0, e1, e2 = e_symbol(0), e_symbol(1), e_symbol(2)
    esq, edsq = sp.Symbol("e_sq", positive=True), sp.Symbol("e_dsq", nonnegative=True)
    d = DIM
    paper_ck = (e0**2 + e2**2 / (2 * d), e1**2, esq - e0**2 - e1**2)
    paper_ntk = (e0**2 + 3 * e2**2 / (2 * d), 2 * e1**2, esq + edsq - e0**2 - 2 * e1**2)
    for got, want in zip((*ex.ck, *ex.ntk), (*paper_ck, *paper_ntk), strict=True):
        assert sp.simplify(got - want) == 0


def test_implicit_derivatives_of_any_order():
    """g^{(n)}(0), n ≤ 4, for a concrete dual f(r) = e^r/3 (s = 1), against mpmath.diff of the
    numerically solved g(ρ) = σ_a² f(g) + σ_b² ρ."""
    F = derive_sphere(4)
    with mpmath.workdps(40):
        a2, b2 = mpf(1) / 5, mpf(4) / 5  # inside workdps: at 53 bits 1/5 would not be 1/5

        def g(rho):
            return mpmath.findroot(lambda y: y - a2 * mpmath.exp(y) / 3 - b2 * rho, mpf("0.1"))

        g0 = g(0)
        env = {SIGMA_A2: sp.Rational(1, 5), SIGMA_B2: sp.Rational(4, 5), S: 1, G0: sp.Float(g0, 40)}
        env.update({f_symbol(j): sp.Float(mpmath.exp(g0) / 3, 40) for j in range(6)})
        for n, expr in enumerate(F.g_derivatives, start=1):
            got = mpf(str(sp.N(expr.xreplace(env), 45)))
            assert_close(got, mpmath.diff(g, 0, n), 25, what=f"g^({n})(0)")


def test_implicit_derivatives_rejects_non_implicit():
    y = sp.Function("y")(RHO)
    with pytest.raises(InvalidArgument):
        implicit_derivatives(y - RHO, y, RHO, 0)


def test_relu_taylor_coefficients_exact():
    """f^{(k)}(0) = s^k E[φ^{(k)}(√s ξ)]² equals the arc-cosine kernel's Taylor coefficient, exactly."""
    act = get_activation(RELU)
    r = sp.Symbol("r", real=True)
    closed = (sp.sqrt(1 - r**2) + (sp.pi - sp.acos(r)) * r) / sp.pi
    for k in range(7):
        want = sp.diff(closed, r, k).subs(r, 0)
        got = dual_taylor_coefficient(act, k, s=sp.S.One)
        assert got is not None
        assert sp.simplify(got - want) == 0, (k, got, want)


def test_polynomial_dual_obeys_price():
    """The quadratic's dual polynomial: f(0) = E[σ]², f'(0) = E[σ']², f''(0) = E[σ'']², f(1) = E[σ²]."""
    q = derive_quadratic()
    t = sp.Symbol("t", real=True)
    sigma = q.activation.subs(sp.Symbol("t", real=True), t)
    dual = polynomial_dual(sigma, t)
    m = q.moments
    assert sp.expand(dual.subs(RHO, 0) - m["e_0"] ** 2) == 0
    assert sp.expand(sp.diff(dual, RHO).subs(RHO, 0) - m["e_1"] ** 2) == 0
    assert sp.expand(sp.diff(dual, RHO, 2).subs(RHO, 0) - m["e_2"] ** 2) == 0
    assert sp.expand(dual.subs(RHO, 1) - m["e_sq"]) == 0
    assert sp.expand(sp.diff(dual, RHO).subs(RHO, 1) - m["e_dsq"]) == 0


# ---------------------------------------------------------------------------
# 40 digits against the arc-cosine closed form
# ---------------------------------------------------------------------------


def test_relu_dual_series_40_digits():
    """The generic-φ dual (Mehler series from quadrature) vs the closed form and mpmath.diff of it."""
    series = dual_series(RELU, 1, r_max=0.45, dps=45, max_derivative=3)
    with mpmath.workdps(70):
        for r in ("-0.45", "-0.2", "0", "0.1", "0.3", "0.45"):
            for j in range(4):
                ref = mpmath.diff(_acos_kernel, mpf(r), j)
                assert_close(series(mpf(r), j), ref, 40, scale=1, what=f"f^({j})({r})")
        # Parseval: Σ c_k → f(1) = E[φ²] = 1 (slowly for ReLU: c_k ~ k^{-5/2}).
        assert abs(mpf(series.norm) - 1) < mpf(10) ** -45
        assert 0 < 1 - mpf(sum(series.coefficients)) < mpf("1e-2")


def test_relu_sphere_coefficients_40_digits():
    """α, β, μ, α̇, β̇, μ̇ and g, k at the origin vs the closed form (s = 1), 40 digits."""
    res = sphere_coefficients(RELU, "0.2", d=1200, dps=40)
    with mpmath.workdps(70):
        a2 = mpf(1) / 5
        b2 = 1 - a2
        d = 1200

        def f1(r):
            return mpmath.diff(_acos_kernel, r, 1)

        def f2(r):
            return mpmath.diff(_acos_kernel, r, 2)

        g0 = mpmath.findroot(lambda y: y - a2 * _acos_kernel(y), mpf("0.07"))

        def h(c):  # HLD 2023, eq. (7) with Ġ = σ_a² f'(c) (s = 1)
            return c / (1 - a2 * f1(c))

        den = 1 - a2 * f1(g0)
        gp = b2 / den
        gpp = a2 * b2**2 * f2(g0) / den**3
        h1, h2 = mpmath.diff(h, g0, 1), mpmath.diff(h, g0, 2)
        kp = b2 * h1 / den  # the chain rule's sign (the paper prints −)
        kpp = b2**2 * (h2 * den + a2 * h1 * f2(g0)) / den**3
        k0, k1 = h(g0), 1 / (1 - a2)  # h(1): f'(1) = 1
        ref = {
            "g0": g0, "g_at_1": mpf(1), "g_prime_0": gp, "g_second_0": gpp,
            "alpha": g0 + gpp / (2 * d), "beta": gp, "mu": 1 - g0 - gp,
            "ntk_alpha": k0 + kpp / (2 * d), "ntk_beta": kp, "ntk_mu": k1 - k0 - kp,
            "k0": k0, "k_at_1": k1, "k_prime_0": kp, "k_second_0": kpp,
        }  # fmt: skip
        for key in (*SPHERE_KEYS, *NTK_EXTRA_KEYS):
            assert res.values[key].digits == 40
            assert_close(res.values[key].value, ref[key], 40, what=key)


# ---------------------------------------------------------------------------
# Corollary 1
# ---------------------------------------------------------------------------


def _quadratic_moments(a2, a1, a0):
    """E[σ], E[σ'], E[σ''], E[σ²], E[σ'²] for σ = a2 t² + a1 t + a0, z ~ N(0, 1).

    Expanded by hand with E[z] = E[z³] = 0, E[z²] = 1, E[z⁴] = 3 (not by deqrmt's SymPy path):
    σ² = a2² z⁴ + 2a2a1 z³ + (a1² + 2a2a0) z² + 2a1a0 z + a0², σ'² = 4a2² z² + 4a2a1 z + a1².
    """
    return (
        a2 + a0,
        a1,
        2 * a2,
        3 * a2**2 + a1**2 + 2 * a2 * a0 + a0**2,
        4 * a2**2 + a1**2,
    )


def test_quadratic_moment_table_against_quadrature():
    """The hand table above, against mpmath.quad of the definitions (one quadratic)."""
    with mpmath.workdps(30):
        a2, a1, a0 = mpf("0.3"), mpf("-1.1"), mpf("0.7")

        def e(fn):
            return mpmath.quad(lambda z: fn(z) * mpmath.npdf(z), [-mpmath.inf, 0, mpmath.inf])

        quad = (
            e(lambda z: a2 * z * z + a1 * z + a0),
            e(lambda z: 2 * a2 * z + a1),
            e(lambda z: 2 * a2),
            e(lambda z: (a2 * z * z + a1 * z + a0) ** 2),
            e(lambda z: (2 * a2 * z + a1) ** 2),
        )
        for x, y in zip(_quadratic_moments(a2, a1, a0), quad, strict=True):
            assert_close(x, y, 25)


@pytest.mark.parametrize("act", [RELU, "gelu", "erf(x) + 1/2"])
def test_corollary_quadratic_matches(act):
    """Each of the 8 quadratics of Corollary 1, with its own moments integrated independently and
    put into Theorems 2 and 4 as printed, reproduces the implicit CK (NTK) coefficients."""
    res = sphere_coefficients(act, "0.2", d=1200, dps=25)
    assert len(res.quadratic_ck) == 8 and len(res.quadratic_ntk) == 8
    assert res.quadratic_ck[0].signs == "+++"
    d = 1200
    with mpmath.workdps(40):
        for q in res.quadratic_ck:
            m0, m1, m2, msq, _ = _quadratic_moments(*(mpf(v.value) for v in (q.a2, q.a1, q.a0)))
            got = (m0**2 + m2**2 / (2 * d), m1**2, msq - m0**2 - m1**2)  # Theorem 2
            for name, x in zip(("alpha", "beta", "mu"), got, strict=True):
                assert_close(x, res.values[name].value, 22, what=f"CK {q.signs} {name}")
        for q in res.quadratic_ntk:
            m0, m1, m2, msq, mdsq = _quadratic_moments(*(mpf(v.value) for v in (q.a2, q.a1, q.a0)))
            got = (m0**2 + 3 * m2**2 / (2 * d), 2 * m1**2, msq + mdsq - m0**2 - 2 * m1**2)  # Thm 4
            for name, x in zip(("ntk_alpha", "ntk_beta", "ntk_mu"), got, strict=True):
                assert_close(x, res.values[name].value, 22, what=f"NTK {q.signs} {name}")


def test_odd_activation_has_no_real_quadratic():
    res = sphere_coefficients("tanh", "0.2", dps=15)
    assert res.values["g0"].text == "0" and res.values["alpha"].text == "0"
    assert res.quadratic_ck == () and res.quadratic_ntk == ()
    assert any("no real quadratic" in n for n in res.notes)
    assert json.loads(res.to_json())["quadratic_ck"] is None


# ---------------------------------------------------------------------------
# Hypothesis: implicit derivatives vs finite differences of a solved g
# ---------------------------------------------------------------------------

_FRACTIONS = st.fractions(min_value=Fraction(1, 2), max_value=Fraction(3, 2), max_denominator=4)


@settings(max_examples=4, deadline=None)
@given(
    base=st.sampled_from(["tanh", "erf", "sin"]),
    a=_FRACTIONS,
    b=st.fractions(min_value=Fraction(1, 2), max_value=Fraction(1), max_denominator=4),
    c=st.fractions(min_value=Fraction(-1, 2), max_value=Fraction(1, 2), max_denominator=4),
    sigma_a2=st.sampled_from(["1/10", "1/5", "3/10"]),
)
def test_implicit_derivatives_match_finite_differences(base, a, b, c, sigma_a2):
    """g'(0), g''(0) (and k'(0), k''(0)) of φ = a·base(b x) + c vs 5-point differences of g(ρ)
    solved numerically (Newton at 32 digits on the dual's series)."""
    spec = f"{a}*{base}({b}*x) + ({c})"
    res = sphere_coefficients(spec, sigma_a2, dps=25)
    s = res.values["g_at_1"].value
    r0 = float(res.values["g0"].value / s)
    series = dual_series(spec, s, r_max=min(0.95, r0 + 0.05), dps=32, max_derivative=1)
    with mpmath.workdps(32):
        a2 = mpf(Fraction(sigma_a2).numerator) / Fraction(sigma_a2).denominator
        s_mp, b2 = mpf(s), 1 - a2

        def g(rho):
            # Newton on y − σ_a² f(y/s) − σ_b² ρ = 0 with the series' own f' (a secant step
            # could leave the series' range); g(0) is an excellent start for |ρ| ≤ 2h.
            y = mpf(res.values["g0"].value)
            for _ in range(30):
                step = (y - a2 * mpf(series(y / s_mp)) - b2 * rho) / (
                    1 - a2 * mpf(series(y / s_mp, 1)) / s_mp
                )
                y -= step
                if abs(step) <= mpf(10) ** -31 * max(abs(y), 1):
                    return y
            raise AssertionError("Newton did not converge")

        h = mpf("1e-5")
        vals = [g(k * h) for k in (-2, -1, 0, 1, 2)]
        d1 = (vals[0] - 8 * vals[1] + 8 * vals[3] - vals[4]) / (12 * h)
        d2 = (-vals[0] + 16 * vals[1] - 30 * vals[2] + 16 * vals[3] - vals[4]) / (12 * h * h)
        # 5-point stencils: truncation O(h⁴) = 1e-20, rounding 1e-32/h² = 1e-22.
        assert_close(vals[2], res.values["g0"].value, 20, scale=1, what="g(0)")
        assert_close(d1, res.values["g_prime_0"].value, 15, scale=1, what="g'(0)")
        assert_close(d2, res.values["g_second_0"].value, 15, scale=1, what="g''(0)")
        # The NTK k = h∘g, h(c) = c/(1 − σ_a² f'(c/s)/s) (HLD 2023, eq. (7)), the same way.
        ks = [y / (1 - a2 * mpf(series(y / s_mp, 1)) / s_mp) for y in vals]
        k1 = (ks[0] - 8 * ks[1] + 8 * ks[3] - ks[4]) / (12 * h)
        k2 = (-ks[0] + 16 * ks[1] - 30 * ks[2] + 16 * ks[3] - ks[4]) / (12 * h * h)
        assert_close(ks[2], res.values["k0"].value, 20, scale=1, what="k(0)")
        assert_close(k1, res.values["k_prime_0"].value, 15, scale=1, what="k'(0)")
        assert_close(k2, res.values["k_second_0"].value, 15, scale=1, what="k''(0)")


# ---------------------------------------------------------------------------
# Monte Carlo (exact G*, K* on a seeded sample)
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def relu_sample():
    from deqrmt.validate._sphere_mc import implicit_sphere_kernels, sphere_sample

    coef = sphere_coefficients(RELU, "0.2", d=1200, dps=20)
    X = sphere_sample(1000, 1200, seed=0)
    return coef, X, implicit_sphere_kernels(X, RELU, coef)


def _rel(a, b, norm_a=None):
    """‖a − b‖₂/‖a‖₂ (``norm_a`` when already known)."""
    from deqrmt.validate._sphere_mc import _opnorm

    return _opnorm(a - b) / (_opnorm(a) if norm_a is None else norm_a)


def test_monte_carlo_relu_equivalents(relu_sample):
    """n = 1000 points uniform on S^{1199}, seed 0: ‖G* − Ḡ‖/‖G*‖ and ‖K* − K̄‖/‖K*‖.

    Measured 2.97e-5 (CK) and 8.95e-5 (NTK); the tolerances leave a factor ~3 for other seeds.
    """
    from deqrmt.validate._sphere_mc import _opnorm

    coef, X, ker = relu_sample
    v = coef.as_floats()
    n = X.shape[1]
    rho = X.T @ X
    np.fill_diagonal(rho, 1.0)
    ones, eye = np.ones((n, n)), np.eye(n)
    g_norm, k_norm = _opnorm(ker.G), _opnorm(ker.K)

    def g_bar(alpha, beta, mu):
        return alpha * ones + beta * rho + mu * eye

    ck = _rel(ker.G, g_bar(v["alpha"], v["beta"], v["mu"]), g_norm)
    ntk = _rel(ker.K, g_bar(v["ntk_alpha"], v["ntk_beta"], v["ntk_mu"]), k_norm)
    assert ck < 1e-4, ck
    assert ntk < 3e-4, ntk
    # Negative controls: a 1% error in α, or a 10% one in β, is rejected.
    assert _rel(ker.G, g_bar(1.01 * v["alpha"], v["beta"], v["mu"]), g_norm) > 10 * ck
    assert _rel(ker.G, g_bar(v["alpha"], 1.1 * v["beta"], v["mu"]), g_norm) > 10 * ck
    # The paper's printed sign of k'(0) (β̇ → −β̇, μ̇ = k(1) − k(0) + β̇) fails outright.
    flipped = g_bar(v["ntk_alpha"], -v["ntk_beta"], v["ntk_mu"] + 2 * v["ntk_beta"])
    assert _rel(ker.K, flipped, k_norm) > 100 * ntk  # measured 6.6e-2


def test_monte_carlo_generic_dual_equals_arc_cosine(relu_sample):
    """The exact G* from the generic (Mehler) dual equals the arc-cosine closed-form iteration."""
    coef, X, ker = relu_sample
    rho = X.T @ X
    a2, b2 = 0.2, 0.8
    r = rho.copy()
    for _ in range(200):
        rc = np.clip(r, -1, 1)
        new = a2 * (np.sqrt(1 - rc * rc) + (np.pi - np.arccos(rc)) * rc) / np.pi + b2 * rho
        np.fill_diagonal(new, 1.0)
        done = np.abs(new - r).max() <= 1e-15
        r = new
        if done:
            break
    assert np.abs(ker.G - r).max() < 1e-13
    gdot = a2 * (np.pi - np.arccos(np.clip(r, -1, 1))) / np.pi
    assert np.abs(ker.K - r / (1 - gdot)).max() < 1e-12


def test_monte_carlo_corollary_quadratic(relu_sample):
    """The exact explicit CK/NTK of Corollary 1's quadratic match G*, K* in operator norm."""
    from deqrmt.validate._sphere_mc import quadratic_sphere_kernels

    coef, X, ker = relu_sample
    q = coef.quadratic_ck[0]
    sig, _ = quadratic_sphere_kernels(X, *(float(x.value) for x in (q.a2, q.a1, q.a0)))
    q = coef.quadratic_ntk[0]
    _, theta = quadratic_sphere_kernels(X, *(float(x.value) for x in (q.a2, q.a1, q.a0)))
    assert _rel(ker.G, sig) < 1e-4  # measured 7.6e-6
    assert _rel(ker.K, theta) < 3e-4  # measured 6.7e-5


def test_validate_sphere_small():
    from deqrmt.validate._sphere_mc import validate_sphere

    v = validate_sphere("erf(x) + 1/2", n=200, d=240, seed=1, dps=15)
    assert v.ck_error < 1e-3 and v.ntk_error < 3e-3
    assert v.ck_error_quadratic is not None and v.ck_error_quadratic < 1e-3
    assert set(v.to_dict()) >= {"ck_error", "ntk_error", "seconds"}


@pytest.mark.slow
def test_monte_carlo_error_decays_with_dimension():
    """‖G* − Ḡ‖/‖G*‖ shrinks as d grows (n/d fixed): log-log slope clearly negative."""
    from deqrmt.validate._sphere_mc import validate_sphere

    ds = [300, 600, 1200]
    errs = [validate_sphere(RELU, n=5 * d // 6, d=d, seed=2, dps=15).ck_error_centered for d in ds]
    slope = np.polyfit(np.log(ds), np.log(errs), 1)[0]
    assert slope < -0.3, (errs, slope)


# ---------------------------------------------------------------------------
# Errors and the command line
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "exc"),
    [
        ({"sigma_a2": "0"}, InvalidArgument),
        ({"sigma_a2": float("nan")}, InvalidArgument),  # a float is its repr: nan is refused
        ({"sigma_a2": "1"}, InvalidArgument),  # σ_b² = 1 − σ_a² = 0
        ({"d": 0}, InvalidArgument),
        ({"dps": 3}, InvalidArgument),
        ({"sigma_a2": "1.2", "sigma_b2": "0.1"}, ContractionError),  # q = 1.2 q + 0.1 diverges
        ({"sigma_a2": "0.999"}, NoConvergence),  # g(0)/g(1) → 1: too many Mehler terms
    ],
)
def test_bad_input_is_refused(kwargs, exc):
    with pytest.raises(exc) as info:
        sphere_coefficients(RELU, **{"dps": 15, **kwargs})
    assert str(info.value)


@pytest.mark.parametrize("certify", [True, False])
def test_ntk_contraction_is_checked(certify, capsys):
    # σ_a² E[φ'(√s ξ)²] ≥ 1 for φ = 3 sin(x) at σ_a² = 1/2 (E[φ'²] = 9(1 + e^{−2s})/2 > 4.5).
    # The library names the argument; the command line translates it into its flag.
    with pytest.raises(ContractionError, match="sigma_a2=1/2") as info:
        sphere_coefficients("3*sin(x)", "0.5", dps=15, certify=certify)
    assert "--" not in str(info.value)
    from deqrmt.cli import main

    argv = ["sphere", "3*sin(x)", "--sigma-a2", "0.5", "--dps", "15"]
    assert main([*argv, *(() if certify else ("--no-certify",))]) == 2
    assert "ContractionError" in (err := capsys.readouterr().err) and "--sigma-a2 1/2" in err


def test_cli_json(capsys):
    p = argparse.ArgumentParser()
    configure_sphere_parser(p)
    assert run_sphere(p.parse_args([RELU, "--dps", "15", "--d", "1200", "--json"])) == 0
    out = json.loads(capsys.readouterr().out)
    for key in SPHERE_KEYS:
        assert isinstance(out[key], str)
    for key in ("quadratic_ck", "quadratic_ntk"):
        q = out[key]
        assert set(q) >= {"a2", "a1", "a0", "other_signs"}
        assert len(q["other_signs"]) == 7
    assert out["g_at_1"].startswith("1.0")
    assert run_sphere(p.parse_args([RELU, "--dps", "12"])) == 0
    assert "quadratic_ck" in capsys.readouterr().out


def test_cli_module_does_not_import_torch():
    code = "import sys, deqrmt.cli.sphere; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)

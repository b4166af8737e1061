"""The sphere's exact zeros (issue 20): an affine φ has μ = μ̇ = g''(0) = k''(0) = 0 exactly.

For φ(x) = a·x + b the dual is affine, f(r) = b² + a²s r, so everything has a closed form, typed
in here from the definitions (HLD 2023, eqs. (6)–(7)), not from deqrmt's derivation:

    s = (σ_a² b² + σ_b²)/(1 − σ_a² a²),   g(0) = σ_a² b²/(1 − σ_a² a²),
    g'(0) = σ_b²/(1 − σ_a² a²),   k = g/(1 − σ_a² a²)  (Ġ = σ_a² a² is constant),

α = g(0), β = g'(0), μ = g(1) − g(0) − g'(0) = 0 (and the NTK's likewise), and Corollary 1's
quadratics are a2 = 0, a1 = ±√β, a0 = ±√α.  Both paths used to fail here: the verified one
with PrecisionLoss (μ is a difference that cancels: 0 agreeing digits), the certified one by
a ball around 0 that proves no digit.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import pytest
from mpmath import mpf

from deqrmt.numeric import sphere_coefficients

AFFINE = [("x", 1, 0), ("2*x + 1", 2, 1), ("-3*x/4", Fraction(-3, 4), 0), ("x/2 - 1/3", Fraction(1, 2), Fraction(-1, 3))]  # fmt: skip
ZEROS = ("mu", "ntk_mu", "g_second_0", "k_second_0")


def _reference(a, b, sigma_a2, d):
    a, b, a2 = (mpf(Fraction(v).numerator) / Fraction(v).denominator for v in (a, b, sigma_a2))
    b2 = 1 - a2
    den = 1 - a2 * a * a
    s = (a2 * b * b + b2) / den
    g0, gp = a2 * b * b / den, b2 / den
    return {
        "g0": g0, "g_at_1": s, "g_prime_0": gp, "g_second_0": 0, "alpha": g0, "beta": gp,
        "mu": 0, "ntk_alpha": g0 / den, "ntk_beta": gp / den, "ntk_mu": 0, "k0": g0 / den,
        "k_at_1": s / den, "k_prime_0": gp / den, "k_second_0": 0,
    }  # fmt: skip


@pytest.mark.parametrize("certify", [True, False])
@pytest.mark.parametrize(("spec", "a", "b"), AFFINE)
def test_affine_activation_has_exact_zeros(spec, a, b, certify):
    res = sphere_coefficients(spec, "0.2", d=1200, dps=20, certify=certify)
    assert res.certified is certify and res.reason is None
    for key in ZEROS:
        v = res.values[key]
        assert v.text == "0" and v.value == 0, (key, v)
        assert v.radius == (0 if certify else None), key
    with mpmath.workdps(40):
        ref = _reference(a, b, "0.2", 1200)
        for key, r in ref.items():
            v = res.values[key]
            assert v.digits == 20, key
            if r == 0:
                continue
            assert mpmath.almosteq(mpf(v.text), r, rel_eps=mpf(10) ** -19), (key, v.text, r)
            if certify:
                assert v.contains(r), (key, v.text, r)
        signs = {q.signs: q for q in res.quadratic_ck}
        assert len(signs) == 8  # α ≥ μ/d = 0 and μ = 0: every sign pattern is real
        for sign, q in signs.items():
            assert q.a2.text == "0"
            a1 = (1 if sign[1] == "+" else -1) * mpmath.sqrt(ref["beta"])
            a0 = (1 if sign[2] == "+" else -1) * mpmath.sqrt(ref["alpha"])
            assert mpmath.almosteq(mpf(q.a1.text), a1, rel_eps=mpf(10) ** -19), sign
            if ref["alpha"] == 0:
                assert q.a0.text == "0", sign
            else:
                assert mpmath.almosteq(mpf(q.a0.text), a0, rel_eps=mpf(10) ** -19), sign


def test_a_polynomial_series_ends_at_its_degree():
    """x + x²/4: b_k = 0 for k > 2 exactly (Hermite orthogonality), so the certified series
    stops at its first terms instead of running until a Parseval tail is small."""
    cert = sphere_coefficients("x + 0.25*x**2", "0.5", dps=30)
    ver = sphere_coefficients("x + 0.25*x**2", "0.5", dps=30, certify=False)
    assert cert.certified and cert.series_terms <= 4
    for key, v in cert.values.items():
        assert v.contains(ver.values[key].value), key
        assert v.text == ver.values[key].text, key

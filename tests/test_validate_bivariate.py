"""Bivariate Gaussian expectations E[φ_c(u)φ_c(v)], E[φ_c'(u)φ_c'(v)] to 1e-10 (issue 4).

References:

* a float64 nested composite Gauss–Legendre rule of the conditional form
  `E[f(u) E[g(v) | u]]`, `v | u ~ N(Λu/q_u, q_v − Λ²/q_u)`, with the inner panels split at
  the kinks of each outer node (no Hermite series, no code shared with the package);
* closed forms written out here (arc-cosine);
* mpmath ``quad`` (18 digits) of the same conditional form, which anchors the float64
  reference; it costs ~30–180 s per activation, so those tests are marked slow.
"""

from __future__ import annotations

import functools
import math

import mpmath
import numpy as np
import pytest
import sympy as sp

torch = pytest.importorskip("torch")

from deqrmt.symbolic import library_activation, parse_activation  # noqa: E402
from deqrmt.validate._bivariate import Conditional, GaussHermite2D, bivariate  # noqa: E402
from deqrmt.validate._moments import diagonal_moments  # noqa: E402
from deqrmt.validate._pointwise import CenteredActivation  # noqa: E402

Q = [1.3, 0.9, 2.1]
#: (i, j, Λ_ij): correlations ρ from −0.55 to 0.8
PAIRS = [(0, 1, 0.6), (0, 2, -0.9), (1, 2, 1.1), (0, 1, 0.05)]
CENTER = 0.21


def _act(spec: str) -> CenteredActivation:
    a = parse_activation(spec) if "x" in spec else library_activation(spec)
    return CenteredActivation.from_activation(a, CENTER)


def _evaluate(ca: CenteredActivation, method: str) -> tuple[np.ndarray, np.ndarray]:
    q = torch.tensor(Q, dtype=torch.float64)
    biv = bivariate(ca, q, method=method)
    fs, ds = [], []
    for i, j, lam in PAIRS:
        f, d = biv(slice(i, i + 1), slice(j, j + 1), torch.tensor([[lam]], dtype=torch.float64))
        fs.append(float(f[0, 0]))
        ds.append(float(d[0, 0]))
    return np.array(fs), np.array(ds)


#: the pairs checked against mpmath (its nested quadrature costs ~1 s per pair and moment)
MP_PAIRS = [0, 2]


def _mp_pair(
    f: object, g: object, kinks: list, qa: mpmath.mpf, qb: mpmath.mpf, c: mpmath.mpf
) -> mpmath.mpf:
    """E[f(u) g(v)] = E[f(u) E[g(v) | u]] by nested mpmath quadrature split at the kinks."""
    L = mpmath.mpf(12)  # standard-normal tails beyond 12: e^{-72}, far below 1e-10
    s = mpmath.sqrt(qb - c * c / qa)
    sa = mpmath.sqrt(qa)

    def pts(cands: list) -> list:
        return [-L, *sorted(p for p in cands if -L < p < L), L]

    def inner(u: mpmath.mpf) -> mpmath.mpf:
        mu = c * u / qa
        return mpmath.quad(
            lambda w: g(mu + s * w) * mpmath.npdf(w), pts([(k - mu) / s for k in kinks])
        )  # type: ignore[operator]

    return mpmath.quad(
        lambda z: f(sa * z) * inner(sa * z) * mpmath.npdf(z), pts([k / sa for k in kinks])
    )  # type: ignore[operator]


@functools.cache
def _mp_reference(spec: str) -> tuple[np.ndarray, np.ndarray]:
    a = parse_activation(spec) if "x" in spec else library_activation(spec)
    x = a.x
    f = sp.lambdify(x, a.expr - sp.Rational(str(CENTER)), "mpmath")
    df = sp.lambdify(x, sp.diff(a.expr, x), "mpmath")
    kinks = [mpmath.mpf(float(k)) for k in a.kinks]
    out_f, out_d = [], []
    with mpmath.workdps(18):
        for i, j, lam in (PAIRS[k] for k in MP_PAIRS):
            qa, qb, c = mpmath.mpf(Q[i]), mpmath.mpf(Q[j]), mpmath.mpf(lam)
            out_f.append(float(_mp_pair(f, f, kinks, qa, qb, c)))
            out_d.append(float(_mp_pair(df, df, kinks, qa, qb, c)))
    return np.array(out_f), np.array(out_d)


def _gl_panels(
    lo: np.ndarray, hi: np.ndarray, order: int = 24, pieces: int = 24
) -> tuple[np.ndarray, np.ndarray]:
    """Composite Gauss–Legendre nodes/weights on [lo, hi] per row (rows may differ)."""
    x, w = np.polynomial.legendre.leggauss(order)
    edges = lo[:, None] + (hi - lo)[:, None] * np.linspace(0, 1, pieces + 1)[None, :]
    a, b = edges[:, :-1, None], edges[:, 1:, None]
    nodes = 0.5 * (a + b) + 0.5 * (b - a) * x
    weights = 0.5 * (b - a) * w
    return nodes.reshape(len(lo), -1), np.broadcast_to(weights, nodes.shape).reshape(len(lo), -1)


def _np_reference(ca: CenteredActivation) -> tuple[np.ndarray, np.ndarray]:
    L = 11.0
    pdf = lambda t: np.exp(-0.5 * t * t) / math.sqrt(2 * math.pi)  # noqa: E731

    def ev(g: object, t: np.ndarray) -> np.ndarray:
        return g(torch.from_numpy(np.ascontiguousarray(t))).numpy()  # type: ignore[operator]

    def split_rule(breaks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # breaks: (rows, B) sorted, including ±L; panels between consecutive breaks
        xs, ws = [], []
        for k in range(breaks.shape[1] - 1):
            x, w = _gl_panels(breaks[:, k], breaks[:, k + 1])
            xs.append(x)
            ws.append(w)
        return np.concatenate(xs, 1), np.concatenate(ws, 1)

    out_f, out_d = [], []
    for i, j, lam in PAIRS:
        qa, qb = Q[i], Q[j]
        s = math.sqrt(qb - lam * lam / qa)
        zb = np.array(
            [[-L, *sorted(k / math.sqrt(qa) for k in ca.kinks if abs(k / math.sqrt(qa)) < L), L]]
        )
        z, wz = split_rule(zb)
        z, wz = z[0], wz[0] * pdf(z[0])
        u = math.sqrt(qa) * z
        mu = lam * u / qa
        inner_breaks = [np.full_like(mu, -L), np.full_like(mu, L)]
        for k in ca.kinks:
            inner_breaks.append(np.clip((k - mu) / s, -L, L))
        w, ww = split_rule(np.sort(np.stack(inner_breaks, 1), axis=1))
        ww = ww * pdf(w)
        v = mu[:, None] + s * w
        res = []
        for g in (ca.phi, ca.dphi):
            inner = (ev(g, v) * ww).sum(1)
            res.append(float((ev(g, u) * inner * wz).sum()))
        out_f.append(res[0])
        out_d.append(res[1])
    return np.array(out_f), np.array(out_d)


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["relu", "hard_tanh"])
def test_against_mpmath(spec: str) -> None:
    f_ref, d_ref = _mp_reference(spec)
    for method in ("auto", "mehler", "conditional"):
        f, d = (v[MP_PAIRS] for v in _evaluate(_act(spec), method))
        np.testing.assert_allclose(f, f_ref, rtol=0, atol=1e-10)
        np.testing.assert_allclose(d, d_ref, rtol=0, atol=1e-10)
    f_np, d_np = (v[MP_PAIRS] for v in _np_reference(_act(spec)))
    np.testing.assert_allclose(f_np, f_ref, rtol=0, atol=1e-12)
    np.testing.assert_allclose(d_np, d_ref, rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    "spec",
    ["tanh", "relu", "leaky_relu", "erf", "silu", "gelu", "softplus", "elu", "sin", "quadratic",
     "hard_tanh", "min(max(x, -2), 1) + 0.5*x"],
)  # fmt: skip
@pytest.mark.parametrize("method", ["auto", "mehler", "conditional"])
def test_against_nested_gauss_legendre(spec: str, method: str) -> None:
    ca = _act(spec)
    f_ref, d_ref = _np_reference(ca)
    f, d = _evaluate(ca, method)
    np.testing.assert_allclose(f, f_ref, rtol=0, atol=1e-10)
    np.testing.assert_allclose(d, d_ref, rtol=0, atol=1e-10)


def test_reference_rule_is_itself_accurate() -> None:
    # The nested rule must resolve a closed form: arc-cosine for ReLU, Λ = 0.6, q = (1.3, 0.9).
    ca = CenteredActivation.from_activation(library_activation("relu"), 0.0)
    f_ref, d_ref = _np_reference(ca)
    rho = 0.6 / math.sqrt(1.3 * 0.9)
    want = (
        math.sqrt(1.3 * 0.9)
        / (2 * math.pi)
        * (math.sqrt(1 - rho**2) + (math.pi - math.acos(rho)) * rho)
    )
    assert f_ref[0] == pytest.approx(want, abs=1e-13)
    assert d_ref[0] == pytest.approx((math.pi - math.acos(rho)) / (2 * math.pi), abs=1e-13)


def test_diagonal_moments() -> None:
    # ReLU: E[φ_c²] = q/2 − 2c√(q/2π) + c², E[φ'²] = 1/2, g'(q) = 1/2 − c/√(2πq).
    ca = CenteredActivation.from_activation(library_activation("relu"), CENTER)
    q = torch.tensor(Q, dtype=torch.float64)
    g, dg, gd = diagonal_moments(ca, q)
    for k, qk in enumerate(Q):
        c = CENTER
        assert float(g[k]) == pytest.approx(
            qk / 2 - 2 * c * math.sqrt(qk / (2 * math.pi)) + c * c, abs=1e-14
        )
        assert float(dg[k]) == pytest.approx(0.5 - c / math.sqrt(2 * math.pi * qk), abs=1e-14)
        assert float(gd[k]) == pytest.approx(0.5, abs=1e-14)


@pytest.mark.parametrize("spec", ["tanh", "hard_tanh", "silu"])
def test_correlation_near_one_falls_back_to_nested_quadrature(spec: str) -> None:
    ca = _act(spec)
    q = torch.tensor(Q, dtype=torch.float64)
    biv = bivariate(ca, q)
    assert 0.8 < biv.rho_cap < 1.0  # type: ignore[attr-defined]
    lam = 0.999 * np.sqrt(Q[0] * Q[2])
    f, d = biv(slice(0, 1), slice(2, 3), torch.tensor([[lam]], dtype=torch.float64))
    assert biv.fallback_pairs == 1  # type: ignore[attr-defined]
    global PAIRS
    saved, PAIRS = PAIRS, [(0, 2, lam)]
    try:
        f_ref, d_ref = _np_reference(ca)
    finally:
        PAIRS = saved
    assert abs(float(f[0, 0]) - f_ref[0]) < 1e-10
    assert abs(float(d[0, 0]) - d_ref[0]) < 1e-10


def test_gauss_hermite_baseline_is_accurate_for_smooth_only() -> None:
    # 25² nodes (neural-tangents' default): ~1e-5 for tanh (poles at ±iπ/2 slow Gauss–Hermite
    # down), ~1e-3 across ReLU's kink.  Far from the 1e-10 of the evaluators above.
    for spec, tol in (("tanh", 2e-5), ("relu", 5e-3)):
        ca = _act(spec)
        q = torch.tensor(Q, dtype=torch.float64)
        exact = _evaluate(ca, "auto")[0]
        gh = GaussHermite2D(ca, q, nodes=25)
        got = np.array(
            [
                float(
                    gh(
                        slice(i, i + 1), slice(j, j + 1), torch.tensor([[lam]], dtype=torch.float64)
                    )[0][0, 0]
                )
                for i, j, lam in PAIRS
            ]
        )
        assert np.abs(got - exact).max() < tol


#: pairs near |ρ| = 1 at large and small variances: (q_i, q_j, ρ)
_NEAR_ONE = [(500.0, 450.0, 0.995), (500.0, 450.0, -0.97), (1.3, 0.9, 0.999), (2.0, 2.0, 0.9)]


@pytest.mark.parametrize(("spec", "parity"), [("erf", 1), ("abs(x)", 0), ("2*erf(x/3)", 1)])
def test_the_folded_nested_rule_matches_the_closed_forms(spec: str, parity: int) -> None:
    """The fallback's outer rule over u ≥ 0 only, doubled (φ_c odd or even), against the
    arcsine and arc-cosine closed forms (written out here) to the fallback's own accuracy, and
    against the whole rule to 1e-13 of the scale."""
    ca = CenteredActivation.from_activation(parse_activation(spec), 0.0)
    for qa, qb, rho in _NEAR_ONE:
        q = torch.tensor([qa, qb], dtype=torch.float64)
        lam = rho * math.sqrt(qa * qb)
        cond = Conditional(ca, q, parity=parity)
        lam_t = torch.tensor([lam], dtype=torch.float64)
        f, d = cond.pairs(torch.tensor([0]), torch.tensor([1]), lam_t)
        if (
            spec == "abs(x)"
        ):  # E|u||v| = (2/π)√(q_i q_j)(√(1−ρ²) + ρ asin ρ), E[sgn sgn] = (2/π) asin ρ
            f_ref = (
                2 / math.pi * math.sqrt(qa * qb) * (math.sqrt(1 - rho**2) + rho * math.asin(rho))
            )
            d_ref = 2 / math.pi * math.asin(rho)
        else:  # A·erf(s x): E = A²(2/π) asin(2s²Λ/√((1+2s²q_i)(1+2s²q_j))), and its Λ-derivative
            amp, s2 = (2.0, 1 / 9) if spec.startswith("2") else (1.0, 1.0)
            den = math.sqrt((1 + 2 * s2 * qa) * (1 + 2 * s2 * qb))
            f_ref = amp**2 * 2 / math.pi * math.asin(2 * s2 * lam / den)
            d_ref = amp**2 * 2 / math.pi * (2 * s2 / den) / math.sqrt(1 - (2 * s2 * lam / den) ** 2)
        scale = max(abs(f_ref), 1.0)
        assert abs(float(f[0]) - f_ref) <= 1e-10 * scale, (qa, qb, rho)
        # E[sgn u sgn v] at ρ = 0.999: the whole rule's own error is 2.3e-8 (a jump of φ' in
        # both variables at once), folded or not; the last check below is the folding's
        d_tol = 1e-7 if spec == "abs(x)" else 1e-10
        assert abs(float(d[0]) - d_ref) <= d_tol * max(abs(d_ref), 1.0), (qa, qb, rho)
        f0, d0 = Conditional(ca, q).pairs(torch.tensor([0]), torch.tensor([1]), lam_t)
        assert abs(float(f[0]) - float(f0[0])) <= 1e-13 * scale, (qa, qb, rho)
        assert abs(float(d[0]) - float(d0[0])) <= 1e-13 * max(abs(d_ref), 1.0), (qa, qb, rho)


def test_the_fallback_folds_only_for_an_even_or_odd_phi() -> None:
    """Mehler hands its series' parity to the nested rule: tanh (odd), x·erf(x) (even), not
    a centred tanh or GELU; the folded rule agrees with the whole one to 1e-14."""
    q = torch.tensor(Q, dtype=torch.float64)
    lam = torch.tensor([[0.999 * math.sqrt(Q[0] * Q[2])]], dtype=torch.float64)
    for spec, center, parity in (
        ("tanh", 0.0, 1), ("x*erf(x)", 0.0, 0), ("tanh", CENTER, None), ("gelu", 0.0, None),
    ):  # fmt: skip
        ca = CenteredActivation.from_activation(parse_activation(spec), center)
        biv = bivariate(ca, q)
        f, d = biv(slice(0, 1), slice(2, 3), lam)
        assert biv.fallback_pairs == 1  # type: ignore[attr-defined]
        assert biv._fallback.parity == parity  # type: ignore[attr-defined]
        whole = Conditional(ca, q)
        f0, d0 = whole.pairs(torch.tensor([0]), torch.tensor([2]), lam.reshape(1))
        assert abs(float(f[0, 0]) - float(f0[0])) <= 1e-14 * max(1.0, abs(float(f0[0])))
        assert abs(float(d[0, 0]) - float(d0[0])) <= 1e-14 * max(1.0, abs(float(d0[0])))

"""Predicted spectra of bulk + low-rank kernels (issue 22): numpy only, against closed forms and
against eigenvalues of matrices sampled from the very model the prediction describes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from deqrmt import InvalidArgument
from deqrmt.numeric import kolmogorov_distance, mixture_spectrum, sphere_spectrum
from deqrmt.numeric._resolvent import MixtureGram


def _mp(x: np.ndarray, y: float, s: float = 1.0) -> np.ndarray:
    """Marchenko–Pastur density of ratio y = n/p, variance s, written out independently."""
    a, b = s * (1 - math.sqrt(y)) ** 2, s * (1 + math.sqrt(y)) ** 2
    out = np.zeros_like(x)
    m = (x > a) & (x < b)
    out[m] = np.sqrt((b - x[m]) * (x[m] - a)) / (2 * math.pi * y * s * x[m])
    return out


def _sphere(n: int, d: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((d, n))
    return x / np.linalg.norm(x, axis=0)


@pytest.mark.parametrize(("n", "p", "s"), [(1000, 1200, 1.0), (1250, 1000, 0.7), (900, 900, 2.0)])
def test_fixed_point_reproduces_marchenko_pastur(n: int, p: int, s: float) -> None:
    # one class, Σ = s I: the resolvent's fixed point is the Marchenko–Pastur law exactly
    gram = MixtureGram.from_variances(np.array([n]), np.full((1, p), s))
    a, b = s * (1 - math.sqrt(n / p)) ** 2, s * (1 + math.sqrt(n / p)) ** 2
    x = np.linspace(max(a, 1e-3) - 0.2, b + 0.2, 801)
    np.testing.assert_allclose(gram.density(x), _mp(x, n / p, s), rtol=0, atol=1e-11)
    assert gram.atom() == pytest.approx(max(0.0, 1 - p / n), abs=1e-15)


def test_linear_case_is_marchenko_pastur_exactly() -> None:
    # φ linear on the sphere: α = μ = 0, β = 1, so the law is MP(n/d) itself, with no spike
    for n, d in ((400, 500), (500, 400)):
        law = sphere_spectrum(0.0, 1.0, 0.0, n, d)
        y = n / d
        ((a, b),) = law.support
        assert (a, b) == pytest.approx(((1 - math.sqrt(y)) ** 2, (1 + math.sqrt(y)) ** 2))
        np.testing.assert_allclose(law.density, _mp(law.x, y), rtol=0, atol=1e-12)
        assert law.spikes == ()
        assert len(law.atoms) == (d < n)
        for loc, mass in law.atoms:
            assert (loc, mass) == pytest.approx((0.0, 1 - d / n))
        assert float(law.cdf(10.0)) == pytest.approx(1.0, abs=1e-6)  # the grid integrates to 1


def test_sphere_prediction_matches_a_sampled_kernel() -> None:
    # α11ᵀ + βXᵀX + μI with X uniform on the sphere, sampled: the bulk, the spike and its
    # eigenvector's alignment with 1/√n are predicted (HLD 2023's form, any α, β, μ)
    n, d, alpha, beta, mu = 300, 360, 0.07, 0.9, 0.04
    X = _sphere(n, d, 3)
    A = alpha * np.ones((n, n)) + beta * X.T @ X + mu * np.eye(n)
    w, v = np.linalg.eigh(A)
    law = sphere_spectrum(alpha, beta, mu, n, d)
    (spike,) = law.spikes
    # The sampled spike fluctuates with 1ᵀXᵀX1/n, whose std is ≈ √(2n)/d·n/n ≈ 0.07 here:
    # β·0.07 ≈ 0.3 % of the spike; 1 % is 3.5 standard deviations.
    assert w[-1] == pytest.approx(spike, rel=1e-2)
    assert (v[:, -1].sum() ** 2 / n) == pytest.approx(law.alignments[0].classes[0], abs=5e-3)
    assert kolmogorov_distance(law, w).distance < 0.02


def _mixture_matrix(
    n: int, p: int, c: tuple[float, float, float, float], means: np.ndarray, var: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """c₁XᵀX + VCVᵀ + (d − τ0²c₁)I built directly from a sample (ICML 2024, Theorem 1's form)."""
    rng = np.random.default_rng(11)
    K = means.shape[0]
    counts = np.full(K, n // K)
    labels = np.repeat(np.arange(K), counts)
    W = rng.standard_normal((p, n)) * np.sqrt(var[labels].T)
    X = (means[labels].T + W) / math.sqrt(p)
    J = np.eye(K)[labels]
    tr = var.sum(1) / p
    tau0_2 = float(tr.mean())
    psi = (W * W).sum(0) / p - tr[labels]
    t = (tr - tau0_2) * math.sqrt(p)
    T = var @ var.T / p
    c1, c2, c3, dg = c
    V = np.hstack([J / math.sqrt(p), psi[:, None]])
    C = np.block(
        [[c2 * np.outer(t, t) + c3 * T, c2 * t[:, None]], [c2 * t[None, :], np.array([[c2]])]]
    )
    return c1 * X.T @ X + V @ C @ V.T + (dg - tau0_2 * c1) * np.eye(n), labels


def test_mixture_prediction_matches_a_sampled_equivalent() -> None:
    # Two classes with different covariances and means: bulk (KS), spikes and class alignments
    # of the sampled matrix against the deterministic equivalent.
    n, p = 600, 480
    means = np.zeros((2, p))
    means[0, 0], means[1, 1] = 5.0, 5.0
    var = np.vstack([np.ones(p), 1.6 * np.ones(p)])
    c = (0.3, 0.05, 0.08, 0.5)
    A, labels = _mixture_matrix(n, p, c, means, var)
    w, v = np.linalg.eigh(A)
    law = mixture_spectrum(*c, [n // 2, n // 2], means, var)
    ((loc, mass),) = law.atoms
    assert (loc, mass) == pytest.approx((0.5 - 1.3 * 0.3, 0.2))
    top = [s for s in law.spikes if s > law.bulk_edges[1]]
    assert len(top) == 2
    np.testing.assert_allclose(w[-2:][::-1], top, rtol=0.03)
    for k, al in enumerate(law.alignments[:2]):
        vec = v[:, -1 - k]
        got = [float(vec[labels == a].sum() ** 2 / (labels == a).sum()) for a in range(2)]
        np.testing.assert_allclose(got, al.classes, atol=0.06)
    assert kolmogorov_distance(law, w).distance < 0.03


def test_the_psi_spike() -> None:
    # Equal covariances (t = 0) and no means: the only low-rank term is α₂ψψᵀ, whose spike
    # comes from E[ψ_i²] = 2 tr C²/p² (the ψ block of H).  ‖ψ‖² fluctuates by √(2/n) ≈ 5 %
    # relative, hence the 12 % tolerance; a factor 2 in the ψ block moves the spike by ~50 %.
    n, p = 800, 640
    means = np.zeros((2, p))
    var = np.vstack([np.ones(p), np.ones(p)])
    c = (0.3, 3.0, 0.0, 0.5)
    A, labels = _mixture_matrix(n, p, c, means, var)
    w, v = np.linalg.eigh(A)
    law = mixture_spectrum(*c, [n // 2, n // 2], means, var)
    (spike,) = law.spikes
    assert spike > law.bulk_edges[1] + 1.0
    assert w[-1] == pytest.approx(spike, rel=0.12)
    # ψ carries no class information: the spike's eigenvector is not aligned with the classes
    assert max(law.alignments[0].classes) < 0.02
    assert max(float(v[labels == a, -1].sum() ** 2 / (n / 2)) for a in range(2)) < 0.05


def test_a_spike_below_the_bulk() -> None:
    # A negative low-rank part pushes an eigenvalue below the bulk (and its atom).
    n, p = 500, 600
    means = np.zeros((2, p))
    var = np.vstack([np.ones(p), 3.0 * np.ones(p)])
    c = (0.5, 0.0, -4.0, 2.0)
    A, _ = _mixture_matrix(n, p, c, means, var)
    w = np.linalg.eigvalsh(A)
    law = mixture_spectrum(*c, [n // 2, n // 2], means, var)
    below = [s for s in law.spikes if s < law.bulk_edges[0]]
    assert below, law.spikes
    assert w[0] == pytest.approx(min(below), rel=0.03)
    assert w[0] < law.bulk_edges[0] - 0.05


def test_kolmogorov_distance_of_the_laws_own_quantiles_is_tiny() -> None:
    law = sphere_spectrum(0.0, 1.0, 0.2, 300, 400)
    grid = np.linspace(law.support[0][0], law.support[0][1], 200001)
    cdf = law.cdf(grid)
    q = np.interp((np.arange(300) + 0.5) / 300, cdf, grid)  # the law's own quantiles
    assert kolmogorov_distance(law, q).distance <= 1 / 300 + 1e-4
    shifted = kolmogorov_distance(law, q * 1.1)
    assert shifted.distance > 0.03  # a 10 % stretch of the bulk is seen


def test_kolmogorov_distance_skips_spikes_and_atoms() -> None:
    law = sphere_spectrum(0.05, 1.0, 0.0, 500, 400)  # atom at 0 of mass 0.2, one spike
    grid = np.linspace(law.support[0][0], law.support[0][1], 100001)
    cont = law.cdf(grid, atoms=False)
    bulk = np.interp((np.arange(399) + 0.5) / 399, cont, grid)
    ev = np.concatenate([bulk, np.full(100, 1e-3), [law.spikes[0] * 1.01]])
    k = kolmogorov_distance(law, ev)
    assert k.bulk == 399 and k.distance < 0.01
    assert k.spikes == pytest.approx((law.spikes[0] * 1.01,))
    assert k.spike_errors[0] == pytest.approx(0.01 / 1.01)


def test_bad_input_is_refused() -> None:
    with pytest.raises(InvalidArgument, match="n must be an integer"):
        sphere_spectrum(0.1, 1.0, 0.0, 1, 10)
    with pytest.raises(InvalidArgument, match="means must have shape"):
        mixture_spectrum(0.3, 0.0, 0.0, 0.5, [10, 10], np.zeros((2, 5)), np.ones((2, 6)))
    with pytest.raises(InvalidArgument, match="c1"):
        mixture_spectrum(-0.3, 0.0, 0.0, 0.5, [10, 10], np.zeros((2, 6)), np.ones((2, 6)))

"""Kernels on the user's own data (issue 22): deqrmt.kernels, equivalent_kernels, DEQKernel."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import deqrmt  # noqa: E402
from deqrmt import ContractionError, InvalidArgument  # noqa: E402

SA2, SB2 = 0.3, 0.9


def _arccos_deq(X1: np.ndarray, X2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ReLU DEQ's G* and K* = G*/(1 − Ġ*) by the plain layer-by-layer iteration of the
    arc-cosine kernel (Cho & Saul 2009), on the stacked data; written here, independently.

    G ← E[relu(u)relu(v)] = √(Λ_ii Λ_jj)/(2π)·(sin θ + (π − θ) cos θ), Λ = σ_a² G + σ_b² XXᵀ,
    Ġ = σ_a² (π − θ)/(2π), θ = arccos(Λ_ij/√(Λ_ii Λ_jj)) (θ = 0 exactly on the diagonal).
    """
    Z = np.vstack([X1, X2])
    gram = Z @ Z.T
    G = np.zeros_like(gram)

    def angles(G: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        L = SA2 * G + SB2 * gram
        d = np.sqrt(np.diag(L))
        theta = np.arccos(np.clip(L / np.outer(d, d), -1.0, 1.0))
        np.fill_diagonal(theta, 0.0)
        return np.outer(d, d), theta

    for _ in range(1000):
        s, th = angles(G)
        new = s / (2 * math.pi) * (np.sin(th) + (math.pi - th) * np.cos(th))
        done = np.abs(new - G).max() <= 1e-16 * np.abs(new).max()
        G = new
        if done:
            break
    _, th = angles(G)
    gdot = SA2 * (math.pi - th) / (2 * math.pi)
    return G, G / (1 - gdot)


@pytest.fixture(scope="module")
def data() -> np.ndarray:
    rng = np.random.default_rng(5)
    # unequal norms: rows scaled by factors in [0.3, 2]
    return rng.standard_normal((40, 9)) * rng.uniform(0.3, 2.0, (40, 1)) / 3


def test_relu_kernels_match_the_arc_cosine_iteration(data: np.ndarray) -> None:
    G, K = _arccos_deq(data, data[:0])
    opts = {"sigma_a2": SA2, "sigma_b2": SB2}
    np.testing.assert_allclose(deqrmt.kernels("relu", data, **opts), G, rtol=0, atol=1e-10)
    np.testing.assert_allclose(
        deqrmt.kernels("relu", data, kind="ntk", **opts), K, rtol=0, atol=1e-10
    )


def test_cross_kernels_are_the_off_diagonal_block(data: np.ndarray) -> None:
    Y = np.random.default_rng(6).standard_normal((13, 9)) / 3
    G, K = _arccos_deq(data, Y)
    opts = {"sigma_a2": SA2, "sigma_b2": SB2}
    got = deqrmt.kernels("relu", data, Y, **opts)
    assert got.shape == (40, 13)
    np.testing.assert_allclose(got, G[:40, 40:], rtol=0, atol=1e-10)
    np.testing.assert_allclose(
        deqrmt.kernels("relu", data, Y, kind="ntk", **opts), K[:40, 40:], rtol=0, atol=1e-10
    )
    # any activation: the cross block of the joint kernel (Mehler series for tanh)
    joint = deqrmt.kernels("tanh", np.vstack([data, Y]), **opts)
    np.testing.assert_allclose(deqrmt.kernels("tanh", data, Y, **opts), joint[:40, 40:], atol=1e-12)


def test_torch_in_torch_out_and_the_diagonal(data: np.ndarray) -> None:
    from deqrmt.validate import kernel_diagonal

    t = torch.as_tensor(data, dtype=torch.float32)
    out = deqrmt.kernels("erf", t, kind="ntk", device="cpu")
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float64
    # the same device on both sides: bit-for-bit equality holds on one device (the default,
    # device="auto", picks a GPU where there is one, whose sums round differently)
    ref = deqrmt.kernels("erf", data.astype(np.float32), kind="ntk", device="cpu")
    np.testing.assert_allclose(out.numpy(), ref, rtol=0, atol=0)
    np.testing.assert_allclose(kernel_diagonal("erf", data, kind="ntk"), np.diag(ref), atol=1e-13)


def test_small_tiles_give_the_same_kernel(data: np.ndarray) -> None:
    # the tiles (and their in-place mirroring) do not change a single entry beyond the tolerance
    whole = deqrmt.kernels("gelu", data)
    small = deqrmt.kernels("gelu", data, tile=7)
    np.testing.assert_array_equal(small, small.T)
    # Newton stops per tile, each within tol = 1e-13 of the kernel's scale (its largest
    # diagonal entry) of the fixed point: two solves differ by at most twice that
    np.testing.assert_allclose(small, whole, rtol=0, atol=2e-13 * np.abs(np.diag(whole)).max())


def test_bad_input_is_refused(data: np.ndarray) -> None:
    with pytest.raises(InvalidArgument, match="rows are samples"):
        deqrmt.kernels("relu", data[0])
    with pytest.raises(InvalidArgument, match="same number of features"):
        deqrmt.kernels("relu", data, data[:, :3])
    bad = data.copy()
    bad[0, 0] = np.nan
    with pytest.raises(InvalidArgument, match="non-finite"):
        deqrmt.kernels("relu", bad)
    with pytest.raises(InvalidArgument, match="kind"):
        deqrmt.kernels("relu", data, kind="nngp")
    with pytest.raises(InvalidArgument, match="sigma_b2"):
        deqrmt.kernels("relu", data, sigma_a2=1.5)
    with pytest.raises(ContractionError):
        deqrmt.kernels("4*tanh", data, kind="ntk", sigma_a2=0.5, sigma_b2=0.5)


def test_kernel_ridge_with_the_deq_ntk(data: np.ndarray) -> None:
    from sklearn.kernel_ridge import KernelRidge

    y = np.sin(data.sum(1))
    kern = deqrmt.DEQKernel("relu", kind="ntk", sigma_a2=SA2, sigma_b2=SB2)
    model = KernelRidge(alpha=1e-2, kernel=kern).fit(data[:30], y[:30])
    pred = model.predict(data[30:])
    # the same fit through a precomputed Gram matrix, from the independent arc-cosine kernel
    _, K = _arccos_deq(data, data[:0])
    pre = KernelRidge(alpha=1e-2, kernel="precomputed").fit(K[:30, :30], y[:30])
    np.testing.assert_allclose(pred, pre.predict(K[30:, :30]), rtol=0, atol=1e-8)


def test_svc_and_gaussian_process_take_the_kernel(data: np.ndarray) -> None:
    from sklearn.base import clone
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import WhiteKernel
    from sklearn.svm import SVC

    y = np.sin(data.sum(1))
    labels = (y > 0).astype(int)
    svc = SVC(kernel=deqrmt.DEQKernel("tanh", kind="ck")).fit(data, labels)
    assert svc.score(data, labels) > 0.8
    gp = GaussianProcessRegressor(kernel=deqrmt.DEQKernel("relu") + WhiteKernel(1e-2)).fit(data, y)
    mean, std = gp.predict(data[:5], return_std=True)
    assert np.isfinite(mean).all() and (std > 0).all()
    k = clone(deqrmt.DEQKernel("erf", sigma_a2=0.25))
    assert k.get_params()["sigma_a2"] == 0.25 and k.hyperparameters == []
    np.testing.assert_allclose(k.diag(data), np.diag(k(data)), atol=1e-13)


def test_equivalent_kernels_from_labels_approach_the_exact_kernel() -> None:
    # ICML 2024 Theorem 1 on data the user brings, statistics estimated from the labels: Ḡ is
    # within 0.01 of Ḡ from the population statistics, and its relative operator-norm error
    # against the exact G* (same centred φ) falls with n (measured 0.37 at n = 128, 0.16 at
    # n = 512: the slides' O(n^{-1/2})).
    from deqrmt.validate import paper_mixture

    errors = []
    for n in (128, 512):
        mix = paper_mixture(round(0.8 * n))
        sample = mix.sample(n, np.random.default_rng(2))
        X = sample.X.T
        eq = deqrmt.equivalent_kernels("tanh", X, labels=np.where(sample.labels == 0, "a", "b"))
        assert eq.classes == ("a", "b") and eq.K is not None
        pop = deqrmt.equivalent_kernels("tanh", X, statistics=mix.statistics(sample))
        assert np.linalg.norm(pop.G - eq.G, 2) / np.linalg.norm(pop.G, 2) < 0.01
        G = deqrmt.kernels("tanh", X, center=eq.center)
        errors.append(np.linalg.norm(G - eq.G, 2) / np.linalg.norm(G, 2))
    assert errors[1] < 0.6 * errors[0], errors
    with pytest.raises(InvalidArgument, match="at least 2 samples"):
        deqrmt.equivalent_kernels("tanh", X, labels=[0] * (len(X) - 1) + [1])

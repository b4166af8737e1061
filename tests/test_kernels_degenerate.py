"""Kernels on degenerate data: zero rows, identical rows, data scaled by 10^±6.

Where the maths is exact the numbers are: a zero row with φ(0) = 0 gives exact zeros, identical
rows give equal entries (bit for bit); elsewhere the documented tolerance (1e-13 of the
diagonal's scale; asserted at 1e-12, the references' own rounding included) holds against the
closed-form kernels iterated layer by layer, written here independently of the engine.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

import deqrmt  # noqa: E402
from deqrmt import DataWarning  # noqa: E402
from deqrmt.validate import kernel_diagonal  # noqa: E402

SA2, SB2 = 0.3, 0.9


def _identical(Z: np.ndarray) -> np.ndarray:
    return (Z[:, None, :] == Z[None, :, :]).all(-1)


def _relu_deq(Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ReLU's G*, K* by the arc-cosine kernel iterated to its fixed point (Cho & Saul 2009).

    θ = 0 for identical rows (u = v there), where arccos of a ratio rounded to ~1 would leave
    θ ~ 1e-8 and move Ġ = σ_a²(π − θ)/(2π) by as much.
    """
    gram = Z @ Z.T
    same = _identical(Z)
    G = np.zeros_like(gram)

    def angles(G: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        L = SA2 * G + SB2 * gram
        d = np.sqrt(np.diag(L))
        s = np.outer(d, d)
        with np.errstate(invalid="ignore", divide="ignore"):
            theta = np.arccos(np.clip(np.where(s > 0, L / s, 1.0), -1.0, 1.0))
        return s, np.where(same, 0.0, theta)

    for _ in range(2000):
        s, th = angles(G)
        new = s / (2 * math.pi) * (np.sin(th) + (math.pi - th) * np.cos(th))
        done = np.abs(new - G).max() <= 1e-17 * max(np.abs(new).max(), 1e-300)
        G = new
        if done:
            break
    _, th = angles(G)
    return G, G / (1 - SA2 * (math.pi - th) / (2 * math.pi))


def _erf_deq(Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """erf's G*, K* by Williams' arcsine kernel iterated to its fixed point:
    G = (2/π) asin(2Λ_ij/√D), Ġ = σ_a²(4/π)/√(D − 4Λ_ij²), D = (1 + 2Λ_ii)(1 + 2Λ_jj).

    In the stable form asin z = atan2(2Λ_ij, √(D − 4Λ_ij²)), D − 4Λ_ij² = 1 + 2(Λ_ii + Λ_jj)
    + 4(√(Λ_ii Λ_jj) − Λ_ij)(√(Λ_ii Λ_jj) + Λ_ij): for Λ ~ 1e11 the plain asin of a ratio
    rounded near 1 is off by ~1e-11.
    """
    gram = Z @ Z.T
    G = np.zeros_like(gram)

    def parts(G: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        L = SA2 * G + SB2 * gram
        q = np.diag(L)
        s = np.sqrt(np.outer(q, q))
        rest = 1 + 2 * (q[:, None] + q[None, :]) + 4 * (s - L) * (s + L)
        return L, np.sqrt(np.maximum(rest, 0.0))

    for _ in range(2000):
        L, root = parts(G)
        new = (2 / math.pi) * np.arctan2(2 * L, root)
        done = np.abs(new - G).max() <= 1e-17 * max(np.abs(new).max(), 1e-300)
        G = new
        if done:
            break
    _, root = parts(G)
    gdot = SA2 * (4 / math.pi) / root
    return G, G / (1 - gdot)


@st.composite
def degenerate_data(draw: st.DrawFn) -> np.ndarray:
    """A few Gaussian rows (p ≥ 2: no two collinear by chance), some duplicated, some zero,
    the whole set scaled by 10⁻⁶, 1 or 10⁶."""
    n = draw(st.integers(2, 6))
    p = draw(st.integers(2, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    X = rng.standard_normal((n, p))
    copies = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3))
    for src, dst in copies:
        X[dst] = X[src]
    zeros = draw(st.lists(st.integers(0, n - 1), max_size=2))
    X[zeros] = 0.0
    return X * draw(st.sampled_from([1e-6, 1.0, 1e6]))


@pytest.mark.parametrize(("act", "reference"), [("relu", _relu_deq), ("erf", _erf_deq)])
@given(X=degenerate_data())
def test_degenerate_data_within_the_documented_tolerance(act, reference, X) -> None:
    G_ref, K_ref = reference(X)
    opts = {"sigma_a2": SA2, "sigma_b2": SB2}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)  # rows scaled by 10⁶ saturate erf
        G = deqrmt.kernels(act, X, **opts)
        K = deqrmt.kernels(act, X, kind="ntk", **opts)
    for got, ref in ((G, G_ref), (K, K_ref)):
        scale = max(np.abs(np.diag(ref)).max(), np.finfo(float).tiny)
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12 * scale)
        _assert_exact(X, got)


def _assert_exact(X: np.ndarray, K: np.ndarray) -> None:
    """Zero rows give 0 (φ(0) = 0 for every activation tested here); identical rows equal
    entries, bit for bit, the diagonal's included."""
    zero = ~X.any(axis=1)
    assert (K[zero] == 0).all() and (K[:, zero] == 0).all()
    same = _identical(X)
    for i, j in zip(*np.nonzero(same), strict=True):
        assert np.array_equal(K[i], K[j]), (i, j)
        assert K[i, j] == K[i, i]


@pytest.mark.parametrize("act", ["tanh", "gelu", "x*erf(x)"])
@given(X=degenerate_data())
def test_degenerate_data_exact_for_any_activation(act, X) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)  # rows scaled by 10⁶ saturate φ: said once
        for kind in ("ck", "ntk"):
            _assert_exact(X, deqrmt.kernels(act, X, kind=kind, sigma_a2=SA2, sigma_b2=SB2))


def test_twelve_identical_relu_rows_give_one_ntk_value() -> None:
    # the case reported: 12 copies of one row, whose NTK entries differed by 9e-10 relative
    X = np.repeat(np.random.default_rng(3).standard_normal((1, 7)) * 100, 12, axis=0)
    K = deqrmt.kernels("relu", X, kind="ntk", sigma_a2=SA2, sigma_b2=SB2)
    assert np.unique(K).size == 1
    _, K_ref = _relu_deq(X)
    np.testing.assert_allclose(K, K_ref, rtol=1e-13)


def test_zero_rows_of_relu_are_exactly_zero_in_a_cross_kernel() -> None:
    rng = np.random.default_rng(4)
    X1 = np.vstack([np.zeros((2, 3)), rng.standard_normal((3, 3))])
    X2 = np.vstack([rng.standard_normal((2, 3)), np.zeros((1, 3))])
    for kind in ("ck", "ntk"):
        K = deqrmt.kernels("relu", X1, X2, kind=kind, trainable=("a", "A", "B"))
        assert (K[:2] == 0).all() and (K[:, 2] == 0).all()
        assert (K[2:, :2] != 0).all()
    assert (kernel_diagonal("relu", X1)[:2] == 0).all()


def test_softplus_zero_rows_are_not_zero() -> None:
    # φ(0) = log 2 ≠ 0: a zero row's pre-activation still has variance σ_a² G_ii > 0
    X = np.vstack([np.zeros((1, 3)), np.random.default_rng(5).standard_normal((2, 3))])
    assert (deqrmt.kernels("softplus", X)[0] > 0.1).all()

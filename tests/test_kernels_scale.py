"""Kernels of raw, unnormalised rows (‖x‖² in the thousands): exact, and a warning.

The reference is written here, independently of the engine: the diagonal fixed point by Brent's
method on `q = σ_a² E[φ(√q ξ)²] + σ_b²‖x‖²`, and each pair's `G = E[φ(u)E[φ(v) | u]]` at
`Λ = σ_a² G + σ_b² xᵀx'` by Brent's method too, the expectations by nested composite
Gauss–Legendre quadrature (64 nodes per panel) on ±12 standard deviations, split where φ bends
(x = 0, ±1, ±4, ±16).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
special = pytest.importorskip("scipy.special")
optimize = pytest.importorskip("scipy.optimize")
datasets = pytest.importorskip("sklearn.datasets")

import deqrmt  # noqa: E402
from deqrmt import BudgetExceeded, DataWarning  # noqa: E402
from deqrmt.validate._kernels import kernels_memory  # noqa: E402

SA2, SB2 = 0.2, 0.8
_BENDS = (-16.0, -4.0, -1.0, 0.0, 1.0, 4.0, 16.0)
_PHI = {
    "tanh": np.tanh,
    "gelu": lambda x: 0.5 * x * special.erfc(-x / math.sqrt(2)),
    "x*erf(x)": lambda x: x * special.erf(x),  # even: the nested fallback's folded rule
}
_GX, _GW = np.polynomial.legendre.leggauss(64)


def _rule(mean: float, sd: float) -> tuple[np.ndarray, np.ndarray]:
    """Nodes t and weights for E[f(mean + sd·t)], t ~ N(0, 1), split where the argument
    crosses a bend of φ."""
    cuts = sorted({(b - mean) / sd for b in _BENDS if abs((b - mean) / sd) < 12} | {-12.0, 12.0})
    a, b = np.array(cuts[:-1])[:, None], np.array(cuts[1:])[:, None]
    t = (0.5 * (a + b) + 0.5 * (b - a) * _GX).ravel()
    w = (0.5 * (b - a) * _GW).ravel() * np.exp(-0.5 * t * t) / math.sqrt(2 * math.pi)
    return t, w


def _gauss(f, mean: float, sd: float) -> float:
    t, w = _rule(mean, sd)
    return float(f(mean + sd * t) @ w)


def _q(phi, sq: float) -> float:
    def r(q: float) -> float:
        return q - SA2 * _gauss(lambda x: phi(x) ** 2, 0.0, math.sqrt(q)) - SB2 * sq

    return optimize.brentq(r, SB2 * sq, 2 * SB2 * sq + 10.0, xtol=1e-13, rtol=1e-15)


def _pair(phi, qi: float, qj: float, dot: float, scale: float) -> float:
    def F(g: float) -> float:
        lam = SA2 * g + SB2 * dot
        c = lam / qi
        s = math.sqrt(max(qj - lam * c, 0.0))
        z, wz = _rule(0.0, math.sqrt(qi))
        u = math.sqrt(qi) * z
        inner = np.array([_gauss(phi, c * x, s) for x in u])
        return float((phi(u) * inner) @ wz)

    # G's bracket: |Λ| < √(q_i q_j) (a covariance), and |G| < scale
    edge = (1 - 1e-9) * math.sqrt(qi * qj)
    lo, hi = max(-scale, (-edge - SB2 * dot) / SA2), min(scale, (edge - SB2 * dot) / SA2)
    return optimize.brentq(lambda g: g - F(g), lo, hi, xtol=1e-15, rtol=1e-15)


@pytest.fixture(scope="module")
def raw() -> np.ndarray:
    X = datasets.load_digits().data
    n = np.linalg.norm(X, axis=1)
    cos = (X @ X.T) / np.outer(n, n)
    # row 0 with rows at cosines ≈ 0.5 and 0.9, and the two most alike rows (0.99): a pair in
    # each of the series' regimes (the tiles' table, the pairs' table, nested quadrature)
    np.fill_diagonal(cos, 0.0)
    i, j = np.unravel_index(int(np.argmax(cos)), cos.shape)
    picks = [0] + [int(np.argmin(np.abs(cos[0] - c))) for c in (0.5, 0.9)] + [int(i), int(j)]
    return X[picks]


@pytest.mark.parametrize("name", ["tanh", "gelu", "x*erf(x)"])
def test_raw_rows_match_nested_quadrature(raw: np.ndarray, name: str) -> None:
    phi = _PHI[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        G = deqrmt.kernels(name, raw, sigma_a2=SA2, sigma_b2=SB2)
    sq = (raw * raw).sum(1)
    scale = np.abs(np.diag(G)).max()
    q = [_q(phi, float(s)) for s in sq]
    for i, j in ((0, 1), (0, 2), (3, 4)):
        ref = _pair(phi, q[i], q[j], float(raw[i] @ raw[j]), 2 * scale)
        assert abs(G[i, j] - ref) <= 1e-12 * scale, (i, j, G[i, j], ref)


def test_saturating_rows_are_warned_about_once(raw: np.ndarray) -> None:
    with pytest.warns(DataWarning, match=r"‖x‖² up to .*tanh.*saturates.*normalise") as seen:
        deqrmt.kernels("tanh", raw, raw[:2])
    assert len(seen) == 1
    with pytest.warns(DataWarning, match=r"gelu.*slopes 0 and 1.*sigma_b2"):
        deqrmt.kernels("gelu", raw)


@pytest.mark.parametrize(("name", "scale"), [("tanh", "normalised"), ("relu", "raw")])
def test_no_warning_where_the_data_are_fine(raw: np.ndarray, name: str, scale: str) -> None:
    X = raw / np.linalg.norm(raw, axis=1, keepdims=True) if scale == "normalised" else raw
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        deqrmt.kernels(name, X)  # ReLU has no scale: raw rows are no cause for a warning


def test_the_memory_model_decides_not_a_fixed_cap() -> None:
    """n = 16384 fits the goal of ≤ 3.5 n² doubles (the output, the tables, the tiles; the data
    counted too when it is copied): no fixed count of entries refuses it any more."""
    n, p = 16384, 13107
    for copies in (False, True):
        need = kernels_memory(n, n, p, workers=16, copies_data=copies)
        assert 8 * n * n < need <= 3.5 * 8 * n * n
    assert kernels_memory(100, 50, 3) >= 8 * 100 * 50 + 64_000 * 150


def test_a_kernel_beyond_memory_is_refused_before_it_is_computed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import deqrmt._budget as budget

    monkeypatch.setattr(budget, "available_memory", lambda: 2**20)  # 1 MiB
    X = np.random.default_rng(0).standard_normal((300, 4))
    with pytest.raises(BudgetExceeded, match=r"300 × 300 kernel.*X1\[i:j\].*K\.zarr"):
        deqrmt.kernels("relu", X)

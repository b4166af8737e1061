"""Exact infinite-width kernels G*, K* = G*/(1 − Ġ*) (issue 4)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from deqrmt import ContractionError, InvalidArgument  # noqa: E402
from deqrmt.symbolic import library_activation, parse_activation  # noqa: E402
from deqrmt.validate import exact_kernels, paper_mixture  # noqa: E402
from deqrmt.validate._bivariate import bivariate  # noqa: E402
from deqrmt.validate._pointwise import CenteredActivation  # noqa: E402

SA2, SB2 = 0.2, 0.8


@pytest.fixture(scope="module")
def data() -> np.ndarray:
    return paper_mixture(60).sample(24, np.random.default_rng(7)).X


def _act(spec: str, c: float = 0.0) -> CenteredActivation:
    a = parse_activation(spec) if "x" in spec else library_activation(spec)
    return CenteredActivation.from_activation(a, c)


def test_identity_has_a_closed_form(data: np.ndarray) -> None:
    # φ(x) = x: G = σ_a² G + σ_b² XᵀX, so G* = σ_b² XᵀX/(1 − σ_a²), Ġ* = σ_a², K* = G*/(1 − σ_a²).
    gram = data.T @ data
    for method in ("auto", "mehler"):
        ex = exact_kernels(_act("x"), data, SA2, SB2, method=method)
        want = SB2 * gram / (1 - SA2)
        np.testing.assert_allclose(ex.G, want, rtol=0, atol=1e-12)
        np.testing.assert_allclose(ex.Gdot, SA2, rtol=0, atol=1e-12)
        np.testing.assert_allclose(ex.K, want / (1 - SA2), rtol=0, atol=1e-12)


@pytest.mark.parametrize(("spec", "c"), [("tanh", 0.0), ("gelu", 0.29), ("hard_tanh", 0.05)])
def test_mehler_matches_nested_quadrature(data: np.ndarray, spec: str, c: float) -> None:
    # Independent evaluator: nested 1-D Gauss–Legendre of E[φ(u) E[φ(v) | u]] for every pair.
    X = data[:, [0, 1, 2, 13, 14, 15]]  # both classes
    fast = exact_kernels(_act(spec, c), X, SA2, SB2)
    slow = exact_kernels(_act(spec, c), X, SA2, SB2, method="conditional")
    assert fast.method == "mehler" and slow.method == "conditional"
    np.testing.assert_allclose(fast.G, slow.G, rtol=0, atol=1e-11)
    np.testing.assert_allclose(fast.K, slow.K, rtol=0, atol=1e-11)


def test_newton_needs_few_evaluations_and_matches_plain_iteration(data: np.ndarray) -> None:
    # The baseline: 2-D Gauss–Hermite iterated G ← F(G).  Its quadrature converges slowly for
    # tanh (poles at ±iπ/2): ~3e-6 at 60² nodes, ~5e-8 at 100² nodes, so the tolerance is loose.
    fast = exact_kernels(_act("tanh"), data, SA2, SB2)
    slow = exact_kernels(_act("tanh"), data, SA2, SB2, method="gauss-hermite", nodes=100)
    assert slow.method == "gauss-hermite-2d"
    assert fast.evaluations <= 5 < slow.evaluations  # quadratic vs linear (rate ≈ Ġ ≈ 0.1)
    np.testing.assert_allclose(fast.G, slow.G, rtol=0, atol=1e-6)
    np.testing.assert_allclose(fast.K, slow.K, rtol=0, atol=1e-6)


@pytest.mark.parametrize(
    ("spec", "closed"), [("relu", "arc-cosine"), ("leaky_relu", "arc-cosine"), ("erf", "arcsine")]
)
def test_closed_forms_match_the_series(data: np.ndarray, spec: str, closed: str) -> None:
    a = exact_kernels(_act(spec, 0.3), data, SA2, SB2)
    b = exact_kernels(_act(spec, 0.3), data, SA2, SB2, method="mehler")
    assert a.method == closed and b.method == "mehler"
    np.testing.assert_allclose(a.G, b.G, rtol=0, atol=1e-11)
    np.testing.assert_allclose(a.K, b.K, rtol=0, atol=1e-11)


def test_fixed_point_equations_hold(data: np.ndarray) -> None:
    act = _act("hard_tanh", 0.05)  # kinks at ±1: per-sample quadrature panels
    ex = exact_kernels(act, data, SA2, SB2)
    gram = data.T @ data
    lam = SA2 * ex.G + SB2 * gram
    np.testing.assert_allclose(np.diag(lam), ex.q, rtol=1e-14)
    q = torch.as_tensor(ex.q)
    n = len(ex.q)
    f, df = bivariate(act, q)(slice(0, n), slice(0, n), torch.as_tensor(lam))
    off = ~np.eye(n, dtype=bool)
    np.testing.assert_allclose(f.numpy()[off], ex.G[off], rtol=0, atol=1e-12)
    np.testing.assert_allclose(SA2 * df.numpy()[off], ex.Gdot[off], rtol=0, atol=1e-12)
    np.testing.assert_allclose(ex.K, ex.G / (1 - ex.Gdot), rtol=1e-15)
    assert np.array_equal(ex.G, ex.G.T) and np.array_equal(ex.K, ex.K.T)
    assert (ex.Gdot < 1).all()


def test_contraction_is_checked(data: np.ndarray) -> None:
    with pytest.raises(ContractionError):
        exact_kernels(_act("relu", 0.4), data, 2.5, 0.5)


def test_bad_method(data: np.ndarray) -> None:
    with pytest.raises(InvalidArgument, match="method"):
        exact_kernels(_act("tanh"), data, SA2, SB2, method="simpson")

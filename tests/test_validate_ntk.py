"""Empirical NTK by implicit differentiation: autograd check and the m → ∞ limit (issue 4)."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from deqrmt.symbolic import library_activation  # noqa: E402
from deqrmt.validate import DeqWeights, exact_kernels, paper_mixture, solve_deq  # noqa: E402
from deqrmt.validate._compare import relative_spectral_error  # noqa: E402
from deqrmt.validate._exact import ntk_limit  # noqa: E402
from deqrmt.validate._ntk import empirical_kernels, ntk_from_solution  # noqa: E402
from deqrmt.validate._pointwise import CenteredActivation  # noqa: E402


@pytest.mark.parametrize("trainable", [("a", "A"), ("a", "A", "B"), ("A",), ("B",)])
@pytest.mark.parametrize(("name", "c"), [("tanh", 0.1), ("gelu", 0.29), ("relu", 0.4)])
def test_implicit_ntk_matches_autograd_through_an_unrolled_deq(
    name: str, c: float, trainable: tuple[str, ...]
) -> None:
    torch.manual_seed(0)
    m, p, n, depth = 7, 3, 4, 200
    act = CenteredActivation.from_activation(library_activation(name), c)
    w = DeqWeights.draw(m, p, sigma_a2=0.2, sigma_b2=0.8, seed=5)
    X = torch.randn(p, n, dtype=torch.float64, generator=torch.Generator().manual_seed(1))

    def f(a: torch.Tensor, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        z = torch.zeros(m, n, dtype=torch.float64)
        for _ in range(depth):  # the unrolled DEQ: contraction ≈ 0.6 per step here
            z = act.phi(w.sigma_a * A @ z + w.sigma_b * B @ X) / math.sqrt(m)
        return a @ z  # f(x_i) = aᵀ z_i, shape (n,)

    ja, jA, jB = torch.func.jacrev(f, argnums=(0, 1, 2))(w.a, w.A, w.B)
    parts = {"a": ja, "A": jA.reshape(n, -1), "B": jB.reshape(n, -1)}
    grads = torch.cat([parts[k] for k in trainable], dim=1)
    ntk_autograd = grads @ grads.T
    sol = solve_deq(w, act, X, tol=1e-15, max_iter=1000)
    ck, ntk, _ = ntk_from_solution(w, act, sol, tol=1e-15, max_iter=1000, trainable=trainable, X=X)
    torch.testing.assert_close(ck, ja @ ja.T, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(ntk, ntk_autograd, rtol=1e-8, atol=1e-10)


def test_monte_carlo_kernels_converge_to_the_exact_ones() -> None:
    # The error of one network is ∝ m^{-1/2} (a common-mode fluctuation of all entries
    # dominates it); averaged over 4 networks per width, m = 256 → 2048 should divide it by
    # ~√8 ≈ 2.8.  We ask for ≥ 2 for the CK and both NTKs, and a small error at m = 2048.
    n, p, draws = 48, 40, 4
    X = paper_mixture(p).sample(n, np.random.default_rng(4)).X
    act = CenteredActivation.from_activation(library_activation("tanh"), 0.1)
    ex = exact_kernels(act, X, 0.2, 0.8)
    K_aAB = ntk_limit(ex.G, ex.Gdot, X.T @ X, 0.2, 0.8, ("a", "A", "B"))
    errs = {}
    for m in (256, 2048):
        per_draw = []
        for d in range(draws):
            w = DeqWeights.draw(m, p, sigma_a2=0.2, sigma_b2=0.8, seed=100 * m + d)
            sol = solve_deq(w, act, X, tol=1e-10)
            ck, ntk, _ = ntk_from_solution(w, act, sol, tol=1e-10)
            _, ntk_b, _ = ntk_from_solution(w, act, sol, tol=1e-10, trainable=("a", "A", "B"), X=X)
            per_draw.append(
                [
                    relative_spectral_error(ex.G, ck.numpy()),
                    relative_spectral_error(ex.K, ntk.numpy()),
                    relative_spectral_error(K_aAB, ntk_b.numpy()),
                ]
            )
        errs[m] = np.mean(per_draw, axis=0)
    assert (errs[2048] < errs[256] / 2).all(), errs
    assert (errs[2048] < 0.07).all(), errs


def test_empirical_kernels_wrapper() -> None:
    X = paper_mixture(30).sample(10, np.random.default_rng(0)).X
    act = CenteredActivation.from_activation(library_activation("silu"), 0.2)
    w = DeqWeights.draw(64, 30, sigma_a2=0.2, sigma_b2=0.8, seed=0)
    e = empirical_kernels(w, act, X, trainable=("a", "A", "B"))
    sol = solve_deq(w, act, X)
    ck, ntk, _ = ntk_from_solution(w, act, sol, trainable=("a", "A", "B"), X=X)
    np.testing.assert_allclose(e.ck, ck.numpy(), rtol=1e-12)
    np.testing.assert_allclose(e.ntk, ntk.numpy(), rtol=1e-12)
    assert e.forward_residuals[-1] <= 1e-11 and e.adjoint_residuals[-1] <= 1e-11

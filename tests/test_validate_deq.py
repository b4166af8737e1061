"""Finite-width DEQ solver: Anderson and plain iteration, traces, errors (issue 4)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from deqrmt import InvalidArgument, NoConvergence  # noqa: E402
from deqrmt.symbolic import library_activation  # noqa: E402
from deqrmt.validate import DeqWeights, anderson, paper_mixture, picard, solve_deq  # noqa: E402
from deqrmt.validate._pointwise import CenteredActivation  # noqa: E402


@pytest.fixture(scope="module")
def setup() -> tuple[DeqWeights, CenteredActivation, np.ndarray]:
    X = paper_mixture(24).sample(20, np.random.default_rng(3)).X
    w = DeqWeights.draw(256, 24, sigma_a2=0.2, sigma_b2=0.8, seed=11)
    act = CenteredActivation.from_activation(library_activation("tanh"), 0.05)
    return w, act, X


def test_solution_is_a_fixed_point(setup: tuple) -> None:
    w, act, X = setup
    sol = solve_deq(w, act, X, tol=1e-13)
    Xt = torch.as_tensor(X)
    H = w.sigma_a * w.A @ sol.Z + w.sigma_b * w.B @ Xt
    torch.testing.assert_close(sol.H, H, rtol=0, atol=1e-12)
    torch.testing.assert_close(sol.Z, act.phi(H) / w.m**0.5, rtol=0, atol=1e-13)
    assert sol.Z.shape == (256, 20)
    assert sol.residuals[-1] <= 1e-13 and len(sol.residuals) == sol.iterations
    assert all(b < a for a, b in zip(sol.residuals[1:], sol.residuals[2:], strict=False))


def test_anderson_and_plain_iteration_agree(setup: tuple) -> None:
    w, act, X = setup
    a = solve_deq(w, act, X, tol=1e-13, method="anderson", memory=5)
    b = solve_deq(w, act, X, tol=1e-13, method="picard")
    torch.testing.assert_close(a.Z, b.Z, rtol=0, atol=1e-13)


def test_anderson_accelerates_a_real_spectrum() -> None:
    # Where Anderson can help (a symmetric contraction with spectrum in [0, 0.95]) it does;
    # on DEQ Jacobians (circular law) it cannot, see benchmarks/deq_solve.py.
    gen = torch.Generator().manual_seed(0)
    Q, _ = torch.linalg.qr(torch.randn(100, 100, generator=gen, dtype=torch.float64))
    M = Q @ torch.diag(torch.linspace(0, 0.95, 100, dtype=torch.float64)) @ Q.T
    b = torch.randn(4, 100, generator=gen, dtype=torch.float64)

    def f(x: torch.Tensor) -> torch.Tensor:
        return x @ M + b

    x0 = torch.zeros(4, 100, dtype=torch.float64)
    fa = anderson(f, x0, tol=1e-10, max_iter=1000, memory=5)
    fp = picard(f, x0, tol=1e-10, max_iter=1000)
    assert fa.converged and fp.converged
    assert fa.iterations * 3 < fp.iterations
    torch.testing.assert_close(fa.x, fp.x, rtol=0, atol=1e-8)


def test_no_convergence_is_reported(setup: tuple) -> None:
    w, act, X = setup
    with pytest.raises(NoConvergence, match="did not converge in 3 iterations"):
        solve_deq(w, act, X, tol=1e-13, max_iter=3)


def test_float32_and_determinism(setup: tuple) -> None:
    w, act, X = setup
    w32 = DeqWeights.draw(256, 24, sigma_a2=0.2, sigma_b2=0.8, seed=11, dtype=torch.float32)
    assert torch.equal(w32.A.double(), w.A.float().double())
    z64 = solve_deq(w, act, X).Z
    z32 = solve_deq(w32, act, X).Z
    assert z32.dtype == torch.float32
    torch.testing.assert_close(z32.double(), z64, rtol=0, atol=1e-5)


def test_bad_input(setup: tuple) -> None:
    w, act, X = setup
    with pytest.raises(InvalidArgument, match="p × n"):
        solve_deq(w, act, X[:5])
    with pytest.raises(InvalidArgument, match="method"):
        solve_deq(w, act, X, method="newton")


def test_solve_deq_mixes_as_many_iterates_as_anderson_by_default() -> None:
    """One default for Anderson's memory (issue 24: solve_deq passed 5, anderson() said 10)."""
    import inspect

    from deqrmt.validate._anderson import ANDERSON_MEMORY

    assert inspect.signature(solve_deq).parameters["memory"].default == ANDERSON_MEMORY
    assert inspect.signature(anderson).parameters["memory"].default == ANDERSON_MEMORY

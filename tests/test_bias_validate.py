"""Implicit bias checked by PyTorch gradient descent (issue 13); skipped without torch.

Small problems (N = 4, d = 12) keep this file fast; the paper-sized runs (N = 40, d = 100, the
CLI defaults) are marked slow.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import sympy as sp

torch = pytest.importorskip("torch")

from deqrmt._errors import InvalidArgument, NoReachableInterpolant  # noqa: E402
from deqrmt.numeric._bias import _nnls, predicted_limit, relative_gap  # noqa: E402
from deqrmt.symbolic._bias import BiasDerivation, derive_bias  # noqa: E402
from deqrmt.validate._bias import (  # noqa: E402
    check_bias,
    default_step_sizes,
    gradient_descent,
    make_problem,
)


@pytest.fixture(autouse=True)
def _seed_torch() -> None:
    torch.manual_seed(0)


def _slope(x: list[float], y: list[float]) -> float:
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def test_deq_gd_limit_is_the_derived_one(deq: BiasDerivation) -> None:
    """1/(1-w): GD → β̂ with gap ∝ η, below 1e-4 at a small step; ℓ2 is off by > 1e-1."""
    c = check_bias(deq, n=4, d=12, seed=0, device="cpu")
    assert c.passed, c.failures
    lrs = [r.lr for r in c.runs]
    assert 0.85 < _slope(lrs, list(c.gaps)) < 1.15  # first order in the step, as GD should be
    assert c.gd_gap < 1e-4
    assert c.extrapolated_gap < 1e-5  # the O(η) term removed: what GD tends to as η → 0
    assert c.l2_gap > 1e-1
    assert min(r.min_beta for r in c.runs) > 0  # w < 1 all along: β stays positive


def test_anchor_diagonal_network_by_gd(diagonal: BiasDerivation) -> None:
    """u**2-v**2 (Woodworth et al.): GD reaches the hyperbolic-entropy minimiser."""
    c = check_bias(diagonal, n=4, d=12, seed=1, device="cpu")
    assert c.passed, c.failures
    assert c.gd_gap < 1e-3 and c.l2_gap > 10 * c.gd_gap
    assert c.beta_hat.min() < 0 < c.beta_hat.max()  # signed, from β(0) = 0


def test_deq_with_output_weight_by_gd(deq_out: BiasDerivation) -> None:
    c = check_bias(deq_out, n=4, d=12, seed=2, device="cpu")
    assert c.passed, c.failures
    assert c.gd_gap < 1e-3


def test_negative_control_wrong_initialisation_is_rejected(deq: BiasDerivation) -> None:
    """β̂ predicted for β(0) = 2.1 while GD starts at β(0) = 2: the check must fail."""
    wrong = dataclasses.replace(deq, beta0_value=sp.Rational(21, 10))
    c = check_bias(wrong, n=4, d=12, seed=0, device="cpu")
    assert not c.passed
    assert any("not below" in f for f in c.failures)


def test_w3_negative_coordinates_in_the_interpolating_set(deq: BiasDerivation) -> None:
    """W3: β* = 2 except two coordinates at −1 interpolates; the flow keeps β > 0 and converges
    to the positive β̂, not to β*."""
    rng = np.random.default_rng(2)  # a well-conditioned instance: ~3000 GD steps
    X = rng.standard_normal((4, 12)) / 2
    beta_star = np.full(12, 2.0)
    beta_star[[3, 8]] = -1.0
    y = X @ beta_star
    beta_hat = predicted_limit(deq, X, y).as_array()
    assert beta_hat.min() > 0
    assert relative_gap(beta_star, beta_hat) > 0.3
    lrs = default_step_sizes(deq, X, beta_hat, count=2)
    runs = gradient_descent(deq, X, y, lrs, device="cpu")
    assert all(r.converged and r.min_beta > 0 for r in runs)
    assert relative_gap(runs[-1].beta, beta_hat) < 1e-3
    assert relative_gap(runs[-1].beta, beta_star) > 0.3


def test_w3_no_positive_interpolant_gd_does_not_interpolate(deq: BiasDerivation) -> None:
    """W3, infeasible case: y = X(−1) with a pointed positive cone; the flow keeps β > 0, the
    loss stays above the closed-orthant least-squares value, and some β_i head to 0."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((8, 10)) / np.sqrt(8)
    y = -X.sum(axis=1)
    with pytest.raises(NoReachableInterpolant):
        predicted_limit(deq, X, y)
    t, r = _nnls(X, y)
    floor = 0.5 * float(r @ r)
    assert floor > 1e-3
    (run,) = gradient_descent(deq, X, y, [1e-2], max_steps=20_000, tol=1e-30, device="cpu")

    def loss(b: np.ndarray) -> float:
        return 0.5 * float(np.sum((X @ b - y) ** 2))

    assert not run.converged
    assert floor <= loss(run.beta) < loss(run.path[0])  # β > 0 on the path: never below
    assert run.min_beta > 0
    zeros = t == 0  # the coordinates the closed-orthant optimum puts at 0 shrink the most
    assert run.beta[zeros].max() < run.path[0][zeros].min()


def test_input_validation(deq: BiasDerivation) -> None:
    X, y = np.eye(2, 3), np.ones(2)
    with pytest.raises(InvalidArgument):
        gradient_descent(deq, X, y, [-1.0])
    with pytest.raises(InvalidArgument):
        gradient_descent(deq, X, y, [1e-3], device="tpu")
    with pytest.raises(InvalidArgument):
        make_problem(deq, n=5, d=5)
    with pytest.raises(InvalidArgument):
        make_problem(deq, n=2, d=5, planted="banana")
    if not torch.cuda.is_available():
        with pytest.raises(InvalidArgument):
            gradient_descent(deq, X, y, [1e-3], device="cuda")


def test_problem_is_reproducible(deq: BiasDerivation) -> None:
    a = make_problem(deq, n=4, d=12, seed=5, planted="dense")
    b = make_problem(deq, n=4, d=12, seed=5, planted="dense")
    assert np.array_equal(a.X, b.X) and np.array_equal(a.y, b.y)
    s = make_problem(deq, n=8, d=12, seed=5, planted="sparse")
    assert np.count_nonzero(s.beta_star - 2) == 1  # N // 8 deviations from β(0) = 2


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_gpu_matches_cpu(deq: BiasDerivation) -> None:
    c = check_bias(deq, n=4, d=12, seed=0, device="cuda")
    assert c.passed and c.device.startswith("cuda")


@pytest.mark.slow
@pytest.mark.parametrize("expression", ["1/(1-w)", "u/(1-w)", "u**2-v**2"])
def test_paper_sized_check(expression: str) -> None:
    """The CLI default, `deqrmt bias EXPR --check --d 100 --n 40 --seed 0`."""
    c = check_bias(derive_bias(expression), n=40, d=100, seed=0, device="cpu")
    assert c.passed, c.failures
    assert c.gd_gap < 3e-4 and c.l2_gap > 5e-2

"""Issue #5: the designed ENN's kernel is much closer to the DEQ's than a naive ENN's."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from deqrmt.numeric._design import design_enn  # noqa: E402
from deqrmt.validate._certificate import certify_design, explicit_exact_kernels  # noqa: E402
from deqrmt.validate._pointwise import CenteredActivation  # noqa: E402


def test_designed_enn_beats_naive_and_improves_with_n() -> None:
    design = design_enn("tanh", "hard_tanh", dps=20, starts=2).to_dict()
    res = certify_design("tanh", design, ns=(256, 512), m=512, seed=0)
    small, big = res.runs
    # measured: designed 0.021 → 0.013, naive ≈ 0.06 flat (seed 0)
    assert big["designed_exact"] < 0.35 * big["naive_exact"]
    assert big["designed_exact"] < small["designed_exact"]
    assert res.passed


def test_explicit_exact_kernel_of_one_relu_layer_is_the_arc_cosine_kernel() -> None:
    """Independent reference: the arc-cosine formula typed here, for one centered ReLU layer."""
    from deqrmt.symbolic import get_activation

    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 30)) / np.sqrt(40)
    c = 0.3
    act = CenteredActivation.from_activation(get_activation("relu"), c)
    sigma, theta = explicit_exact_kernels([act], X, input_layer_trainable=True)
    g = X.T @ X
    d = np.sqrt(np.diag(g))
    rho = np.clip(g / np.outer(d, d), -1, 1)
    th = np.arccos(rho)
    np.fill_diagonal(th, 0.0)  # arccos(1 − ulp) ≈ 1.5e-8 would spoil the reference itself
    rr = np.outer(d, d) / (2 * np.pi) * (np.sin(th) + (np.pi - th) * rho)
    m = d / np.sqrt(2 * np.pi)
    ref = rr - c * (m[:, None] + m[None, :]) + c * c
    assert np.allclose(sigma, ref, rtol=1e-10, atol=1e-12)
    assert np.allclose(theta, ref + g * (np.pi - th) / (2 * np.pi), rtol=1e-10, atol=1e-12)

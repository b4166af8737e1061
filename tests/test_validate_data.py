"""GMM data and its statistics J, ψ, t, T, τ0 (issue 4; slides, "High-dimensional Statistics")."""

from __future__ import annotations

import math

import numpy as np
import pytest

from deqrmt import InvalidArgument
from deqrmt.validate._data import GaussianMixture, empirical_statistics, paper_mixture


def test_paper_preset_population_statistics() -> None:
    p, n = 400, 300
    gmm = paper_mixture(p)
    s = gmm.sample(n, np.random.default_rng(0))
    st = gmm.statistics(s)
    assert s.X.shape == (p, n) and list(s.counts) == [150, 150]
    assert (np.diff(s.labels) >= 0).all()  # sorted by class
    # τ0² = tr C°/p = 1 + 4/√p; t = (−4, 4); T_ab = (1 + 8(a−1)/√p)(1 + 8(b−1)/√p)
    assert st.tau0**2 == pytest.approx(1 + 4 / math.sqrt(p), rel=1e-14)
    np.testing.assert_allclose(st.t, [-4.0, 4.0], rtol=1e-12)
    d = 1 + 8 / math.sqrt(p)
    np.testing.assert_allclose(st.T, [[1, d], [d, d * d]], rtol=1e-14)
    np.testing.assert_array_equal(st.J.sum(axis=0), s.counts)
    # ψ_i = ‖x_i − μ_a/√p‖² − tr C_a/p has mean 0 and variance 2 tr(C_a²)/p² per class.
    for a in range(2):
        psi = st.psi[s.labels == a]
        assert abs(psi.mean()) < 4 * math.sqrt(2 * st.T[a, a] / p / len(psi))
    # Class means: √p x̄_a ≈ μ_a = 8 e_{8a+1}.
    xbar = s.X[:, s.labels == 1].mean(axis=1) * math.sqrt(p)
    assert xbar[8] == pytest.approx(8.0, abs=0.5)


def test_empirical_statistics_are_consistent() -> None:
    p, n = 300, 1200
    gmm = paper_mixture(p)
    s = gmm.sample(n, np.random.default_rng(1))
    pop, emp = gmm.statistics(s), empirical_statistics(s)
    assert emp.tau0 == pytest.approx(pop.tau0, rel=2e-3)
    np.testing.assert_allclose(emp.t, pop.t, atol=0.3)  # t = O(1), estimation error O(√(p/n))
    np.testing.assert_allclose(emp.T, pop.T, rtol=0.03)
    assert np.corrcoef(emp.psi, pop.psi)[0, 1] > 0.99


def test_full_covariances_and_unequal_weights() -> None:
    rng = np.random.default_rng(2)
    p = 30
    W = rng.standard_normal((p, p)) / math.sqrt(p)
    C = np.stack([np.eye(p), np.eye(p) + W @ W.T])
    gmm = GaussianMixture(np.zeros((2, p)), C, np.array([0.25, 0.75]))
    s = gmm.sample(40, rng)
    assert list(s.counts) == [10, 30]
    st = gmm.statistics(s)
    tr0 = (10 * np.trace(C[0]) + 30 * np.trace(C[1])) / 40
    assert st.tau0 == pytest.approx(math.sqrt(tr0 / p))
    assert st.T[0, 1] == pytest.approx(np.trace(C[0] @ C[1]) / p)


@pytest.mark.parametrize(
    "build",
    [
        lambda: GaussianMixture(np.zeros((2, 4)), np.ones((3, 4)), np.array([0.5, 0.5])),
        lambda: GaussianMixture(np.zeros((2, 4)), np.ones((2, 4)), np.array([0.5, 0.6])),
        lambda: paper_mixture(10),
        lambda: paper_mixture(40).sample(1, np.random.default_rng(0)),
    ],
)
def test_invalid_inputs(build: object) -> None:
    with pytest.raises(InvalidArgument):
        build()  # type: ignore[operator]

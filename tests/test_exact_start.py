"""The tiles' start for a series with even terms: the fixed point of Mehler's series cut after ρ².

For an even φ (x·erf(x): c₁ = 0) the cut after ρ¹ starts every pair at G = c₀c₀'; GELU and
SiLU have all terms.  :meth:`_MehlerTile._quadratic_start` solves `G = A + Lρ + Cρ²`,
ρ = ρ₀ + σ_a²G/√(q_i q_j), in closed form.  Checked here: the start against the same equation
solved by plain fixed-point iteration pair by pair in Python floats (a contraction: its slope is
~σ_a²·Ġ), and the whole solve: never more evaluations than from the linear start, the same
kernel to the tolerance, on normalised and on raw, saturating rows (seeded data).
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import deqrmt.validate._exact as exact  # noqa: E402
from deqrmt.symbolic import get_activation  # noqa: E402
from deqrmt.validate._bivariate import _MehlerTile  # noqa: E402
from deqrmt.validate._pointwise import CenteredActivation  # noqa: E402

SA2, SB2 = 0.2, 0.8
#: raw rows saturate φ: said by a DataWarning, which is not what is tested here
pytestmark = pytest.mark.filterwarnings("ignore::deqrmt.DataWarning")


def _act(name: str) -> CenteredActivation:
    return CenteredActivation.from_activation(get_activation(name), 0.0)


def _data(scale: float, seed: int) -> np.ndarray:
    """p × n rows of nonnegative features (as pixels): correlated rows, ‖x‖ ≈ scale."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, size=(40, 90)) ** 2
    return X / np.linalg.norm(X, axis=0) * scale * rng.uniform(0.8, 1.2, size=90)


@pytest.mark.parametrize("name", ["x*erf(x)", "gelu"])
@pytest.mark.parametrize("scale", [1.0, 50.0])
def test_the_start_solves_the_series_cut_after_rho_squared(name: str, scale: float) -> None:
    X = torch.as_tensor(_data(scale, seed=3))
    engine = exact.KernelEngine(_act(name), X, None, SA2, SB2)
    rows, cols = slice(0, 30), slice(30, 90)
    tile = engine.biv.on_tile(rows, cols, SB2 * (X[:, rows].T @ X[:, cols]), SA2)
    g0 = tile.start()
    assert g0 is not None
    a, b = tile.a.numpy(), tile.b.numpy()
    inv_s, rho0 = tile.inv_s.numpy(), tile.rho0.numpy()
    for i, j in [(0, 0), (3, 17), (29, 59), (11, 40)]:
        A, L, C = (float(a[k, i] * b[k, j]) for k in range(3))
        s, r0 = SA2 * float(inv_s[i, j]), float(rho0[i, j])
        g = 0.0
        for _ in range(200):
            r = r0 + s * g
            g = A + L * r + C * r * r
        assert abs(float(g0[i, j]) - g) <= 1e-13 * max(1.0, abs(g)), (i, j, float(g0[i, j]), g)


@pytest.mark.parametrize("name", ["x*erf(x)", "gelu"])
@pytest.mark.parametrize("scale", [1.0, 50.0])
def test_the_start_never_costs_evaluations(
    name: str, scale: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    act = _act(name)
    X = _data(scale, seed=5)
    ex = exact.exact_kernels(act, X, SA2, SB2)

    def linear(self: _MehlerTile) -> torch.Tensor:  # the cut after ρ¹, as before
        lin = torch.outer(self.a[1], self.b[1])
        num = torch.outer(self.a[0], self.b[0]) + lin * self.rho0
        return num / (1 - self.sa2 * lin * self.inv_s)

    monkeypatch.setattr(_MehlerTile, "_quadratic_start", linear)
    ref = exact.exact_kernels(act, X, SA2, SB2)
    assert ex.evaluations <= ref.evaluations
    top = np.abs(np.diag(ref.G)).max()
    np.testing.assert_allclose(ex.G, ref.G, rtol=0, atol=2e-13 * top)
    np.testing.assert_allclose(ex.K, ref.K, rtol=0, atol=4e-13 * top)

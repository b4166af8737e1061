r"""The high-dimensional equivalents Ḡ and K̄ assembled from coefficients (numpy, float64).

    Ḡ = α₁ XᵀX + V C Vᵀ + (γ*² − τ0² α₁) I,   V = [J/√p, ψ],
    C = [[α₂ t tᵀ + α₃ T, α₂ t], [α₂ tᵀ, α₂]]                      (ICML 2024, Theorem 1)

and K̄ likewise with β₁..₃ and κ*² (Theorem 2); Σ̄^{(l)} with α̃_l and τ̃_l² (Theorem 3).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from numpy.typing import NDArray

__all__ = ["equivalent_kernel", "equivalent_kernels"]

Array = NDArray[np.float64]


def equivalent_kernel(
    c1: float, c2: float, c3: float, diag: float,
    X: Array, J: Array, psi: Array, t: Array, T: Array, tau0: float,
) -> Array:  # fmt: skip
    """c₁ XᵀX + V [[c₂ttᵀ + c₃T, c₂t],[c₂tᵀ, c₂]] Vᵀ + (diag − τ0² c₁) I for data X (p × n)."""
    p, n = X.shape
    V = np.hstack([J / np.sqrt(p), psi.reshape(-1, 1)])
    t = t.reshape(-1, 1)
    C = np.block([[c2 * t @ t.T + c3 * T, c2 * t], [c2 * t.T, np.array([[c2]])]])
    return c1 * (X.T @ X) + V @ C @ V.T + (diag - tau0**2 * c1) * np.eye(n)


def equivalent_kernels(
    coeffs: Mapping[str, float], X: Array, J: Array, psi: Array, t: Array, T: Array, tau0: float
) -> tuple[Array, Array]:
    """(Ḡ, K̄) from DEQ coefficients (keys as in :meth:`DEQCoefficients.as_floats`)."""
    g = equivalent_kernel(
        coeffs["alpha_1"], coeffs["alpha_2"], coeffs["alpha_3"], coeffs["gamma_star"] ** 2,
        X, J, psi, t, T, tau0,
    )  # fmt: skip
    k = equivalent_kernel(
        coeffs["beta_1"], coeffs["beta_2"], coeffs["beta_3"], coeffs["kappa_star"] ** 2,
        X, J, psi, t, T, tau0,
    )  # fmt: skip
    return g, k

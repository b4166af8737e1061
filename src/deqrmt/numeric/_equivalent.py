r"""The high-dimensional equivalents Ḡ and K̄ assembled from coefficients (numpy, float64).

    Ḡ = α₁ XᵀX + V C Vᵀ + (γ*² − τ0² α₁) I,   V = [J/√p, ψ],
    C = [[α₂ t tᵀ + α₃ T, α₂ t], [α₂ tᵀ, α₂]]                      (ICML 2024, Theorem 1)

and K̄ likewise with β₁..₃ and κ*² (Theorem 2); Σ̄^{(l)} with α̃_l and τ̃_l² (Theorem 3).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from numpy.typing import NDArray

from .. import _arguments
from .._errors import InvalidArgument

__all__ = ["equivalent_kernel", "equivalent_kernels"]

Array = NDArray[np.float64]


def _array(value: object, name: str, ndim: int) -> Array:
    """``value`` as a finite real float64 array with ``ndim`` dimensions, or InvalidArgument."""
    try:
        a = np.asarray(value)
    except (TypeError, ValueError):  # ragged nested lists
        a = np.empty(0, dtype=object)
    if a.dtype.kind not in "fiu" or a.ndim != ndim or 0 in a.shape:
        raise InvalidArgument(
            f"{name}={_arguments.show(value)}: expected a non-empty {ndim}-D array of real "
            f"numbers, got {a.ndim}-D of dtype {a.dtype}."
        )
    a = a.astype(np.float64, copy=False)
    if not np.isfinite(a).all():
        raise InvalidArgument(f"{name}: holds NaN or ±inf; every entry must be finite.")
    return a


def _real(value: object, name: str) -> float:
    return float(_arguments.number(value, name))


def _check_shapes(X: Array, J: Array, psi: Array, t: Array, T: Array) -> None:
    n, k = X.shape[1], J.shape[1]
    if J.shape[0] != n or psi.size != n or t.size != k or T.shape != (k, k):
        raise InvalidArgument(
            f"shapes: X is {X.shape} (p × n), so J must be (n, k) = ({n}, k), psi ({n},), t (k,) "
            f"and T (k, k); got J {J.shape}, psi {psi.shape}, t {t.shape}, T {T.shape}."
        )
    # XᵀX, V C Vᵀ, the identity and their sum: four n × n float64 arrays at once
    _arguments.memory_budget(4 * 8.0 * n * n, "X", f"an array of shape {X.shape}", "the n×n kernel")


def equivalent_kernel(
    c1: float, c2: float, c3: float, diag: float,
    X: Array, J: Array, psi: Array, t: Array, T: Array, tau0: float,
) -> Array:  # fmt: skip
    """c₁ XᵀX + V [[c₂ttᵀ + c₃T, c₂t],[c₂tᵀ, c₂]] Vᵀ + (diag − τ0² c₁) I for data X (p × n)."""
    c1, c2, c3, diag, tau0 = (
        _real(v, k) for v, k in ((c1, "c1"), (c2, "c2"), (c3, "c3"), (diag, "diag"), (tau0, "tau0"))
    )
    X, J, psi = _array(X, "X", 2), _array(J, "J", 2), _array(psi, "psi", 1)
    t, T = _array(t, "t", 1), _array(T, "T", 2)
    _check_shapes(X, J, psi, t, T)
    p, n = X.shape
    V = np.hstack([J / np.sqrt(p), psi.reshape(-1, 1)])
    t = t.reshape(-1, 1)
    C = np.block([[c2 * t @ t.T + c3 * T, c2 * t], [c2 * t.T, np.array([[c2]])]])
    return c1 * (X.T @ X) + V @ C @ V.T + (diag - tau0**2 * c1) * np.eye(n)


def equivalent_kernels(
    coeffs: Mapping[str, float], X: Array, J: Array, psi: Array, t: Array, T: Array, tau0: float
) -> tuple[Array, Array]:
    """(Ḡ, K̄) from DEQ coefficients (keys as in :meth:`DEQCoefficients.as_floats`)."""
    keys = ("alpha_1", "alpha_2", "alpha_3", "gamma_star", "beta_1", "beta_2", "beta_3")
    if not isinstance(coeffs, Mapping) or any(k not in coeffs for k in (*keys, "kappa_star")):
        raise InvalidArgument(
            f"coeffs={_arguments.show(coeffs)}: expected a mapping with {', '.join(keys)}, "
            "kappa_star (DEQCoefficients.as_floats())."
        )
    g = equivalent_kernel(
        coeffs["alpha_1"], coeffs["alpha_2"], coeffs["alpha_3"], coeffs["gamma_star"] ** 2,
        X, J, psi, t, T, tau0,
    )  # fmt: skip
    k = equivalent_kernel(
        coeffs["beta_1"], coeffs["beta_2"], coeffs["beta_3"], coeffs["kappa_star"] ** 2,
        X, J, psi, t, T, tau0,
    )  # fmt: skip
    return g, k

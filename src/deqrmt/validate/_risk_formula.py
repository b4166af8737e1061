r"""The training and test MSE of ridge regression on random features: the deterministic
equivalent (Louart, Liao & Couillet 2018, Theorems 2–3; Couillet & Liao 2022, §5.1.1) and the
direct computation from sampled features.

Random features Σ = [σ₁, …, σ_m]ᵀ(x) ∈ ℝ^m of n training points X (an m × n matrix) whose rows
are i.i.d. with per-feature covariance Φ(x, x') = E[σᵢ(x) σᵢ(x')] (O(1) entries); ridge
regression β = (1/n) Σ Q y with the resolvent Q = ((1/n) ΣᵀΣ + λ I_n)⁻¹ minimises
(1/n)‖y − Σᵀβ‖² + λ‖β‖².  With

    Q̄ = ((m/n) Φ/(1 + δ) + λ I)⁻¹,   δ = (1/n) tr(Φ Q̄),   Ψ = (m/n) Φ/(1 + δ),

Q̄ is a deterministic equivalent of Q and the MSEs are, up to o(1) as n, m, p → ∞ together,

    E_train = (λ²/n) yᵀ Q̄ [ ((1/m) tr(Ψ Q̄²))/(1 − (1/m) tr(ΨQ̄ΨQ̄)) Ψ + I ] Q̄ y,
    E_test  = (1/n̂) ‖ŷ − Ψ_{X̂X} Q̄ y‖²
              + ((1/m) yᵀQ̄ΨQ̄y)/(1 − (1/m) tr(ΨQ̄ΨQ̄))
                · [ (1/n̂) tr Ψ_{X̂X̂} − (1/n̂) tr(Ψ_{X̂X} Q̄ Ψ_{XX̂}) − (λ/n̂) tr(Ψ_{X̂X} Q̄² Ψ_{XX̂}) ],

with Ψ_{AB} = (m/n) Φ(A, B)/(1 + δ).  Everything is evaluated in the eigenbasis of Φ(X, X),
diagonalised once per kernel and shared by every width and ridge.  Labels with k outputs
(n × k) give the MSE summed over the outputs.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .._errors import PrecisionLoss

__all__ = ["KernelRisk", "RiskValues", "empirical_risk", "kernel_ridge_risk"]


@dataclasses.dataclass(frozen=True)
class RiskValues:
    """One prediction: the training and test MSE, the fixed point δ and the variance terms'
    denominator 1 − (1/m) tr(ΨQ̄ΨQ̄) (small near the interpolation peak)."""

    train: float
    test: float
    delta: float
    denominator: float = 1.0


class KernelRisk:
    r"""The deterministic equivalent of ridge regression on random features whose per-feature
    covariance is the kernel Φ (module docstring), for any width m and ridge λ.

    Args:
      Phi: Φ(X, X), n × n, symmetric positive semi-definite (eigenvalues below zero by
        rounding are set to zero).
      Phi_cross: Φ(X̂, X), n̂ × n.
      Phi_test_diag: the diagonal of Φ(X̂, X̂), n̂ values (only its trace enters).
      y: training labels, n or n × k.  y_test: test labels, n̂ or n̂ × k.
    """

    def __init__(
        self,
        Phi: np.ndarray,
        Phi_cross: np.ndarray,
        Phi_test_diag: np.ndarray,
        y: np.ndarray,
        y_test: np.ndarray,
    ) -> None:
        n = Phi.shape[0]
        lam, U = np.linalg.eigh((Phi + Phi.T) / 2)
        self.n, self.n_test = n, Phi_cross.shape[0]
        self.clipped = float(max(0.0, -lam[0]))  # the most negative eigenvalue set to zero
        self.eig = np.maximum(lam, 0.0)
        Y = y.reshape(n, -1)
        self.y_test = y_test.reshape(self.n_test, -1)
        self.a = U.T @ Y  # y in Φ's eigenbasis
        self.a2 = (self.a * self.a).sum(axis=1)
        self.cross = Phi_cross @ U  # Φ(X̂, X) U
        self.cross2 = (self.cross * self.cross).sum(axis=0)  # diag(Uᵀ Φ_{XX̂} Φ_{X̂X} U)
        self.test_trace = float(np.sum(Phi_test_diag))

    def delta(self, m: int, ridge: float) -> float:
        """δ = (1/n) Σ_i ℓ_i/((m/n) ℓ_i/(1 + δ) + λ): the unique root, by bisection.

        h(δ) = δ − f(δ) is negative at 0 and positive at tr(Φ)/(nλ) (f ≤ that bound), and f is
        increasing and concave, so the root is unique; bisection to the last bit of δ.
        """
        n, ell = self.n, self.eig
        c = m / n

        def f(d: float) -> float:
            return float(np.sum(ell * (1 + d) / (c * ell + ridge * (1 + d)))) / n

        lo, hi = 0.0, float(np.sum(ell)) / (n * ridge) + 1.0
        if f(lo) == 0.0:
            return 0.0
        for _ in range(2000):
            mid = (lo + hi) / 2
            if mid in (lo, hi):
                break
            if mid - f(mid) < 0:
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2

    def risk(self, m: int, ridge: float) -> RiskValues:
        """E_train and E_test of width ``m`` and ridge ``λ`` > 0 (module docstring)."""
        n, nt = self.n, self.n_test
        d = self.delta(m, ridge)
        s = (m / n) / (1 + d)
        psi = s * self.eig  # Ψ's eigenvalues
        q = 1.0 / (psi + ridge)  # Q̄'s
        denom = 1.0 - float(np.sum(psi * psi * q * q)) / m
        if not denom > 0:
            raise PrecisionLoss(
                f"the deterministic equivalent's 1 − (1/m) tr(ΨQ̄ΨQ̄) = {denom:.3g} at m = {m}, "
                f"λ = {ridge:g}: the ridge is too small for this width at float64; raise it."
            )
        a2 = self.a2
        t1 = float(np.sum(psi * q * q)) / m
        train = ridge**2 / n * float(np.sum(a2 * q * q * (t1 / denom * psi + 1.0)))
        mean = s * (self.cross @ (q[:, None] * self.a))  # Ψ_{X̂X} Q̄ y
        bias = float(np.sum((self.y_test - mean) ** 2)) / nt
        var_scale = float(np.sum(a2 * q * q * psi)) / m / denom
        c2 = s * s * self.cross2
        inner = s * self.test_trace - float(np.sum(q * c2)) - ridge * float(np.sum(q * q * c2))
        test = bias + var_scale * inner / nt
        return RiskValues(train, test, d, denom)


def empirical_risk(
    gram: np.ndarray, cross: np.ndarray, y: np.ndarray, y_test: np.ndarray, ridge: float
) -> tuple[float, float]:
    r"""The training and test MSE of ridge regression on sampled features, from their Grams.

    ``gram`` = (1/n) ΣᵀΣ (n × n) and ``cross`` = (1/n) Σ̂ᵀΣ (n̂ × n), Σ the m × n features of
    the training points and Σ̂ those of the test points: the fitted values are
    (1/n) ΣᵀΣ Q y on the training points and (1/n) Σ̂ᵀΣ Q y on the test points,
    Q = ((1/n) ΣᵀΣ + λ I)⁻¹ (the estimator of the module docstring, solved by Cholesky).
    """
    n = gram.shape[0]
    Y = y.reshape(n, -1)
    Yt = y_test.reshape(cross.shape[0], -1)
    L = np.linalg.cholesky(gram + ridge * np.eye(n))
    w = np.linalg.solve(L.T, np.linalg.solve(L, Y))  # Q y
    train = float(np.sum((Y - gram @ w) ** 2)) / n
    test = float(np.sum((Yt - cross @ w) ** 2)) / cross.shape[0]
    return train, test


def kernel_ridge_risk(
    Phi: np.ndarray, Phi_cross: np.ndarray, y: np.ndarray, y_test: np.ndarray, ridge: float
) -> float:
    """The test MSE of kernel ridge regression with Φ: ŷ = Φ(X̂, X)(Φ(X, X) + λ I)⁻¹ y (the
    m → ∞ limit of the estimator with λ·n/m in place of λ)."""
    n = Phi.shape[0]
    w = np.linalg.solve(Phi + ridge * np.eye(n), y.reshape(n, -1))
    r = y_test.reshape(Phi_cross.shape[0], -1) - Phi_cross @ w
    out = float(np.sum(r * r)) / Phi_cross.shape[0]
    if not math.isfinite(out):
        raise PrecisionLoss(f"kernel ridge at λ = {ridge:g} is singular; raise the ridge.")
    return out

r"""The deterministic equivalent of the resolvent of a Gaussian-mixture Gram matrix.

Let Y be p × n with independent columns, y_i ~ N(0, Σ_a/p) for sample i in class a (n_a samples,
Σ_a = diag(s_a) diagonal), and Q(w) = (YᵀY − w I_n)^{-1}.  For i in class a the Schur complement
gives `Q_ii = 1/(−w + y_iᵀ(I + Y₋ᵢ(−w)^{-1}Y₋ᵢᵀ)^{-1}y_i)`, and replacing the quadratic form by
its trace and the rank-one updates by their means (Couillet & Liao, *Random Matrix Methods for
Machine Learning*, 2022, §2.2–2.3) yields

    E[Q_ii] ≈ q_a = 1/(δ_a − w),   δ_a = (1/p) tr Σ_a T̄,   T̄ = (I_p + Σ_b (n_b/p) Σ_b/(δ_b − w))^{-1},

with E[Y Q Yᵀ] ≈ I − T̄.  The Stieltjes transform of the limiting eigenvalue distribution of YᵀY is
`m(w) = Σ_a (n_a/n) q_a` and its density is `Im m(x + i0)/π` (Stieltjes inversion).  For one class
with Σ = s I this is the Marchenko–Pastur law of ratio n/p (:func:`marchenko_pastur_density`).

The diagonal entries of the Σ_a enter only through the distinct columns (s_1k, …, s_Kk), k ≤ p, so
the cost of one evaluation is O(K · #distinct · #points).  The system is solved by Newton's method
at w = x + iη with η decreasing from the spectrum's width to 10⁻¹⁴ of it (continuation from the
upper half-plane selects the Stieltjes branch; a plain fixed-point iteration contracts there too
but slows down near the real axis).
"""

from __future__ import annotations

import dataclasses

import numpy as np
from numpy.typing import NDArray

from .._errors import InvalidArgument, NoConvergence

__all__ = ["MixtureGram", "marchenko_pastur_density", "marchenko_pastur_edges"]

Complex = np.ndarray  # complex128 arrays
Real = np.ndarray  # float64 arrays

#: continuation stages: η = width · 10^{-k}, k = 0 … _STAGES − 1 (down to 10⁻¹⁴ of the width);
#: steps of 100 can land in the basin of a real (wrong) root inside the support
_STAGES = 15
_NEWTON_STEPS = 60


def marchenko_pastur_edges(ratio: float, scale: float = 1.0) -> tuple[float, float]:
    """Edges `s(1 ∓ √y)²` of the Marchenko–Pastur law of ratio y = n/p and variance ``scale``.

    Example:
      >>> marchenko_pastur_edges(0.25)
      (0.25, 2.25)
    """
    r = float(np.sqrt(ratio))
    return scale * (1 - r) ** 2, scale * (1 + r) ** 2


def marchenko_pastur_density(x: Real, ratio: float, scale: float = 1.0) -> Real:
    r"""The absolutely continuous part of the Marchenko–Pastur law of YᵀY (n × n).

    `f(x) = √((b − x)(x − a)) / (2π y s x)` on [a, b] = s[(1 − √y)², (1 + √y)²], y = n/p; for
    y > 1 the law also has an atom of mass 1 − 1/y at 0 (YᵀY has rank p < n).

    Example:
      >>> import numpy as np
      >>> x = np.linspace(0.25, 2.25, 20001)
      >>> f = marchenko_pastur_density(x, 0.25)
      >>> round(float(np.sum(f) * (x[1] - x[0])), 3)      # no atom for y ≤ 1: mass 1
      1.0
    """
    a, b = marchenko_pastur_edges(ratio, scale)
    x = np.asarray(x, dtype=float)
    inside = (x > a) & (x < b) & (x > 0)
    out = np.zeros_like(x)
    xi = x[inside]
    out[inside] = np.sqrt((b - xi) * (xi - a)) / (2 * np.pi * ratio * scale * xi)
    return out


@dataclasses.dataclass(frozen=True)
class MixtureGram:
    """The bulk YᵀY of a K-class mixture, in the grouped form the fixed point needs.

    Attributes:
      nu: n_a/p per class, shape (K,).
      frac: n_a/n per class, shape (K,).
      s: the distinct columns of the variances, shape (K, r): s[a, g] = Σ_a's entry on group g.
      weight: the share of the p coordinates in each group, shape (r,) (sums to 1).
      group: the group of every coordinate, shape (p,).
    """

    nu: Real
    frac: Real
    s: Real
    weight: Real
    group: NDArray[np.int64]

    @classmethod
    def from_variances(cls, counts: NDArray[np.int64], variances: Real) -> MixtureGram:
        """From n_a (K,) and the diagonals of Σ_a (K × p)."""
        counts = np.asarray(counts)
        variances = np.asarray(variances, dtype=float)
        if variances.ndim != 2 or counts.shape != (variances.shape[0],):
            raise InvalidArgument(
                f"variances must be K × p with K = len(counts) = {counts.shape}, got "
                f"{variances.shape}."
            )
        if (counts <= 0).any() or not np.isfinite(variances).all() or (variances < 0).any():
            raise InvalidArgument("counts must be positive and variances finite and ≥ 0.")
        p = variances.shape[1]
        cols, group, mult = np.unique(variances.T, axis=0, return_inverse=True, return_counts=True)
        return cls(
            nu=counts / p,
            frac=counts / counts.sum(),
            s=np.ascontiguousarray(cols.T),
            weight=mult / p,
            group=group.reshape(-1).astype(np.int64),
        )

    @property
    def p(self) -> int:
        return int(self.group.shape[0])

    @property
    def n(self) -> int:
        return int(round(float(self.nu.sum()) * self.p))

    def top(self) -> float:
        """An upper bound of the support: s_max (1 + √(n/p))² (monotone in the covariances)."""
        smax = float(self.s.max()) if self.s.size else 0.0
        return smax * (1 + float(np.sqrt(self.nu.sum()))) ** 2

    def atom(self) -> float:
        """Mass of the atom at 0: 1 − rank/n, rank = min(n of classes with noise, p with noise)."""
        noisy_n = float((self.nu * (self.s.max(axis=1) > 0)).sum()) * self.p
        noisy_p = float(self.weight[self.s.max(axis=0) > 0].sum()) * self.p
        return max(0.0, 1.0 - min(noisy_n, noisy_p) / (self.nu.sum() * self.p))

    # ------------------------------------------------------------------ fixed point

    def _parts(self, w: Complex, delta: Complex) -> tuple[Complex, Complex, Complex]:
        inv = 1.0 / (delta - w[:, None])  # q_a, (N, K)
        # (tiny matrix products: einsum, not BLAS, whose call overhead dominates at K, r ~ 2)
        d = 1.0 + np.einsum("nb,bg->ng", inv * self.nu, self.s)  # D_g = 1 + Σ_b ν_b s_bg q_b
        phi = np.einsum("ng,ag->na", self.weight / d, self.s)  # Φ_a = Σ_g w_g s_ag / D_g
        return inv, d, phi

    def _jacobian(self, inv: Complex, d: Complex) -> Complex:
        # ∂Φ_a/∂δ_c = Σ_g w_g s_ag s_cg ν_c q_c² / D_g²
        g = self.weight / (d * d)  # (N, r)
        jac = np.einsum("ng,ag,cg->nac", g, self.s, self.s) * (self.nu * inv * inv)[:, None, :]
        return jac

    def solve(self, z: Complex, start: Complex | None = None) -> Complex:
        """δ(w) for an array of w (Im w ≥ 0), by continuation in Im w and Newton's method."""
        z = np.asarray(z, dtype=complex)
        K = self.s.shape[0]
        width = max(self.top(), 1e-300)
        trace = np.einsum("ag,g->a", self.s, self.weight)  # (1/p) tr Σ_a
        delta = (
            np.broadcast_to(trace, (z.shape[0], K)).astype(complex)
            if start is None
            else start.copy()
        )
        if not self.s.any():
            return np.zeros((z.shape[0], K), dtype=complex)
        etas = [width * 10.0 ** (-k) for k in range(_STAGES)] if start is None else []
        for eta in [*etas, 0.0]:
            w = z.real + 1j * np.maximum(z.imag, eta)
            delta = self._newton(w, delta)
        return delta

    def _newton(self, w: Complex, delta: Complex) -> Complex:
        K = self.s.shape[0]
        eye = np.eye(K)
        inv, d, phi = self._parts(w, delta)
        res = delta - phi
        norm = np.abs(res).max(axis=1)
        scale = np.abs(delta).max(axis=1) + 1e-300
        for _ in range(_NEWTON_STEPS):
            active = norm > 1e-14 * scale
            if not active.any():
                return delta
            jac = eye - self._jacobian(inv[active], d[active])
            step = np.linalg.solve(jac, res[active][..., None])[..., 0]
            # Damped step: halve until the residual decreases (keeps the iterate on its branch).
            t = np.ones(step.shape[0])
            cur = delta[active]
            wa = w[active]
            best = norm[active]
            new = cur - step
            for _ in range(30):
                i2, d2, p2 = self._parts(wa, new)
                r2 = new - p2
                n2 = np.abs(r2).max(axis=1)
                bad = ~(n2 < best) & (n2 > 1e-14 * scale[active])
                if not bad.any():
                    break
                t[bad] *= 0.5
                new[bad] = cur[bad] - t[bad, None] * step[bad]
            delta[active] = new
            inv[active], d[active], phi[active] = i2, d2, p2
            res[active] = r2
            norm[active] = n2
        if (norm > 1e-8 * scale).any():
            raise NoConvergence(
                "the mixture resolvent's fixed point did not converge (largest residual "
                f"{float((norm / scale).max()):.2e}); the covariances may be too ill-conditioned."
            )
        return delta

    # ------------------------------------------------------------------ what is read off δ

    def stieltjes(self, w: Complex, delta: Complex) -> Complex:
        """m(w) = Σ_a (n_a/n)/(δ_a − w)."""
        return (self.frac / (delta - w[:, None])).sum(axis=1)

    def density(self, x: Real) -> Real:
        """The density of YᵀY's limiting eigenvalue law at real x ≠ 0 (atoms excluded)."""
        x = np.asarray(x, dtype=float)
        z = x + 0j
        delta = self.solve(z)
        return np.maximum(self.stieltjes(z, delta).imag / np.pi, 0.0)

    def derivative(self, w: Real, delta: Real) -> Real:
        """dδ/dw at real w outside the support (implicit differentiation of δ = Φ(δ, w))."""
        wc = np.asarray(w, dtype=float) + 0j
        inv, d, _ = self._parts(wc, delta + 0j)
        K = self.s.shape[0]
        jac = np.eye(K) - self._jacobian(inv, d)
        # ∂Φ_a/∂w = −Σ_g w_g s_ag / D_g² · Σ_b ν_b s_bg q_b²
        dd = np.einsum("nb,bg->ng", inv * inv * self.nu, self.s)
        rhs = -np.einsum("ng,ag->na", self.weight / (d * d) * dd, self.s)
        return np.linalg.solve(jac, rhs[..., None])[..., 0].real

    def tbar(self, w: Real, delta: Real, ddelta: Real) -> tuple[Real, Real]:
        """T̄_g = 1/D_g and dT̄_g/dw per coordinate group, at real w."""
        inv = 1.0 / (delta - np.asarray(w, dtype=float)[:, None])
        d = 1.0 + np.einsum("nb,bg->ng", inv * self.nu, self.s)
        dinv = -(ddelta - 1.0) * inv * inv  # dq_b/dw
        dd = np.einsum("nb,bg->ng", dinv * self.nu, self.s)
        return 1.0 / d, -dd / (d * d)

r"""Bivariate Gaussian expectations `E[φ_c(u)φ_c(v)]` and `E[φ_c'(u)φ_c'(v)]`, fast and accurate.

For a block of pairs (i, j) with (u, v) ~ N(0, [[q_i, Λ_ij], [Λ_ij, q_j]]) we return

    F_ij  = E[φ_c(u) φ_c(v)]                      (the CK map, slides "Implicit-CK")
    F'_ij = ∂F_ij/∂Λ_ij = E[φ_c'(u) φ_c'(v)]      (Price's theorem; Ġ = σ_a² F')

Three evaluators, chosen by :func:`bivariate`:

* **arc-cosine** (φ = s₊x⁺ − s₋x⁻ = αx + β|x|, α = (s₊+s₋)/2, β = (s₊−s₋)/2; Cho & Saul 2009):
  `E[|u||v|] = (2/π)√(q_i q_j)(√(1−ρ²) + ρ·asin ρ)`, `E[sign u sign v] = (2/π) asin ρ`,
  `E|u| = √(2q/π)`, ρ = Λ_ij/√(q_i q_j).
* **arcsine** (φ = A·erf(s x) + d; Williams 1997):
  `E[erf(su)erf(sv)] = (2/π) asin(2s²Λ/√((1+2s²q_i)(1+2s²q_j)))`.
* **Mehler** (any φ): with `c_k(q) = E[φ_c(√q ξ) He_k(ξ)]/√k!` (per-sample quadrature,
  :mod:`._quadrature`), Mehler's formula gives `F = Σ_k c_k(q_i) c_k(q_j) ρ^k`.  The series is
  summed by Horner's rule together with its ρ-derivative.  The truncation after K terms is
  bounded by Cauchy–Schwarz and Parseval, `|tail| ≤ max_i R_K(q_i)·|ρ|^{K+1}` with
  `R_K(q) = E[φ_c²] − Σ_{k≤K} c_k(q)²`; K is chosen per block so this is ≤ tol.  Pairs with
  |ρ| too close to 1 for K ≤ ``max_degree`` (rare for GMM data; none in the paper preset)
  fall back to a 64×64-node 2-D Gauss–Hermite rule, with a warning.

A plain 2-D Gauss–Hermite evaluator (what neural-tangents' ``ElementwiseNumerical`` does) is kept
as the benchmark baseline.
"""

from __future__ import annotations

import abc
import math
import warnings

import numpy as np
import torch

from ._pointwise import CenteredActivation, PiecewiseLinear, ScaledErf
from ._quadrature import gaussian_rule, hermite_table

__all__ = [
    "BivariateExpectation",
    "ArcCosine",
    "Arcsine",
    "Mehler",
    "GaussHermite2D",
    "bivariate",
    "diagonal_moments",
]


def diagonal_moments(
    act: CenteredActivation, q: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    r"""`g(q) = E[φ_c(√q ξ)²]`, `g'(q)` and `E[φ_c'(√q ξ)²]` per sample, by quadrature.

    `g'(q) = E[φ_c(√q ξ)²(ξ² − 1)]/(2q)` (differentiate the Gaussian density in its
    variance), so no second derivative of φ is needed, kinks included.
    """
    rule = gaussian_rule(q, act.kinks)
    sq = torch.sqrt(q)[:, None]
    f0 = act.phi(sq * rule.xi[None, :])
    fl = act.phi(sq * rule.xi_local)
    g = rule.expect(f0 * f0, fl * fl)
    h0 = (rule.xi * rule.xi - 1)[None, :]
    dg = rule.expect(f0 * f0 * h0, fl * fl * (rule.xi_local**2 - 1)) / (2 * q)
    d0 = act.dphi(sq * rule.xi[None, :])
    dl = act.dphi(sq * rule.xi_local)
    gd = rule.expect(d0 * d0, dl * dl)
    return g, dg, gd


class BivariateExpectation(abc.ABC):
    """F and ∂F/∂Λ for blocks of pairs, given the per-sample variances ``q`` (fixed)."""

    method: str

    def __init__(self, act: CenteredActivation, q: torch.Tensor) -> None:
        self.act = act
        self.q = q
        self.sq = torch.sqrt(q)

    @abc.abstractmethod
    def __call__(self, rows: slice, cols: slice, lam: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Return (F, ∂F/∂Λ) for Λ = ``lam`` (shape rows × cols).  Diagonal pairs i = j are
        not special-cased; the caller overwrites them with the univariate values."""

    def _rho(self, rows: slice, cols: slice, lam: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        s = torch.outer(self.sq[rows], self.sq[cols])
        return (lam / s).clamp_(-1.0, 1.0), s


class ArcCosine(BivariateExpectation):
    """Closed form for positively homogeneous piecewise-linear φ (ReLU, leaky ReLU, |x|)."""

    method = "arc-cosine"

    def __init__(self, act: CenteredActivation, q: torch.Tensor) -> None:
        super().__init__(act, q)
        cf = act.closed_form
        assert isinstance(cf, PiecewiseLinear)
        self.alpha = 0.5 * (cf.slope_pos + cf.slope_neg)
        self.beta = 0.5 * (cf.slope_pos - cf.slope_neg)
        self.c = act.center
        self.mean = self.beta * math.sqrt(2 / math.pi) * self.sq  # E[φ(u)] = β E|u|, uncentred

    def __call__(self, rows: slice, cols: slice, lam: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        rho, s = self._rho(rows, cols, lam)
        asin = torch.asin(rho)
        a2, b2 = self.alpha**2, self.beta**2
        # E[αu·β|v|] = 0 by symmetry, so E[φφ] = α²Λ + β²E|u||v|; then centre.
        eff = a2 * lam + (b2 * 2 / math.pi) * s * (torch.sqrt(1 - rho * rho) + rho * asin)
        m = self.mean
        f = eff - self.c * (m[rows][:, None] + m[cols][None, :]) + self.c**2
        df = a2 + (b2 * 2 / math.pi) * asin
        return f, df


class Arcsine(BivariateExpectation):
    """Closed form for φ = A·erf(s x) + d."""

    method = "arcsine"

    def __init__(self, act: CenteredActivation, q: torch.Tensor) -> None:
        super().__init__(act, q)
        cf = act.closed_form
        assert isinstance(cf, ScaledErf)
        self.amp, self.s2 = cf.amplitude, cf.scale**2
        self.e = cf.offset - act.center  # E[φ_c(u)] for every q (erf is odd)
        self.d = torch.sqrt(1 + 2 * self.s2 * q)

    def __call__(self, rows: slice, cols: slice, lam: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        den = torch.outer(self.d[rows], self.d[cols])
        z = (2 * self.s2 * lam / den).clamp_(-1.0, 1.0)
        a2 = self.amp**2
        f = (a2 * 2 / math.pi) * torch.asin(z) + self.e**2
        df = (a2 * 4 * self.s2 / math.pi) / torch.sqrt(den * den - (2 * self.s2 * lam) ** 2)
        return f, df


class GaussHermite2D(BivariateExpectation):
    """Plain tensor-product Gauss–Hermite rule with ``nodes``² points per pair.

    Error: spectral for analytic φ, only algebraic across a kink (about 1e-4 for ReLU with 25
    nodes).  This is the baseline of ``benchmarks/exact_kernel.py`` and the fallback for pairs
    with |ρ| near 1.
    """

    method = "gauss-hermite-2d"

    def __init__(self, act: CenteredActivation, q: torch.Tensor, nodes: int = 25, chunk: int = 2**21) -> None:
        super().__init__(act, q)
        x, w = np.polynomial.hermite_e.hermegauss(nodes)
        self.x = torch.as_tensor(x, dtype=q.dtype, device=q.device)
        self.w = torch.as_tensor(w / w.sum(), dtype=q.dtype, device=q.device)
        u = self.sq[:, None] * self.x[None, :]
        self.fu = act.phi(u) * self.w  # (n, Q): φ_c(√q_i ξ_a) w_a
        self.du = act.dphi(u) * self.w
        self.chunk = chunk

    def pairs(self, i: torch.Tensor, j: torch.Tensor, rho: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """F, F' for flat index vectors i, j and correlations rho."""
        nq = self.x.shape[0]
        per = max(1, self.chunk // (nq * nq))
        fs, ds = [], []
        for s in range(0, i.shape[0], per):
            ii, jj, r = i[s : s + per], j[s : s + per], rho[s : s + per, None, None]
            v = self.sq[jj][:, None, None] * (
                r * self.x[None, :, None] + torch.sqrt(1 - r * r) * self.x[None, None, :]
            )
            fv = self.act.phi(v) @ self.w  # (E, Q): inner expectation over ξ₂
            dv = self.act.dphi(v) @ self.w
            fs.append((self.fu[ii] * fv).sum(1))
            ds.append((self.du[ii] * dv).sum(1))
        return torch.cat(fs), torch.cat(ds)

    def __call__(self, rows: slice, cols: slice, lam: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        rho, _ = self._rho(rows, cols, lam)
        n = self.q.shape[0]
        ri = torch.arange(n, device=lam.device)[rows]
        ci = torch.arange(n, device=lam.device)[cols]
        i = ri[:, None].expand_as(rho).reshape(-1)
        j = ci[None, :].expand_as(rho).reshape(-1)
        f, d = self.pairs(i, j, rho.reshape(-1))
        return f.view_as(lam), d.view_as(lam)


class Mehler(BivariateExpectation):
    r"""`F = Σ_k c_k(q_i) c_k(q_j) ρ^k` (Mehler), any continuous φ; see the module docstring."""

    method = "mehler"

    def __init__(
        self, act: CenteredActivation, q: torch.Tensor, *, tol: float = 1e-14, max_degree: int = 160
    ) -> None:
        super().__init__(act, q)
        rule = gaussian_rule(q, act.kinks)
        sq = self.sq[:, None]
        f0 = act.phi(sq * rule.xi[None, :])
        fl = act.phi(sq * rule.xi_local)
        h0 = hermite_table(rule.xi, max_degree)  # (Q0, K+1)
        coef = (f0 * rule.w) @ h0
        if rule.xi_local.shape[1]:
            hl = hermite_table(rule.xi_local, max_degree)  # (n, Q1, K+1)
            coef = coef + torch.einsum("iq,iqk->ik", fl * rule.w_local, hl)
        self.coef_t = coef.T.contiguous()  # (K+1, n): rows contiguous for addr_
        g = rule.expect(f0 * f0, fl * fl)
        tails = (g[:, None] - torch.cumsum(coef * coef, dim=1)).clamp_(min=0.0)
        self.rmax = tails.max(dim=0).values.cpu().numpy()  # R_K = max_i R_K(q_i)
        scale = float(g.max())
        self.tol = tol * scale
        self.dtol = tol * scale / float(q.min())  # ∂/∂Λ carries 1/√(q_i q_j)
        self.max_degree = max_degree
        self.degree_used = 0
        self.fallback_pairs = 0
        ks = np.arange(max_degree + 1)
        lo, hi = 0.0, 1.0
        for _ in range(60):  # largest |ρ| the series handles within max_degree
            mid = 0.5 * (lo + hi)
            if self._degree(mid, ks) is None:
                hi = mid
            else:
                lo = mid
        self.rho_cap = lo
        self._fallback: GaussHermite2D | None = None

    def _degree(self, r: float, ks: np.ndarray | None = None) -> int | None:
        if r <= 0.0:
            return 0
        ks = np.arange(self.max_degree + 1) if ks is None else ks
        with np.errstate(under="ignore"):
            ok = (self.rmax * r ** (ks + 1) <= self.tol) & (
                (ks + 1) * r**ks * self.rmax <= self.dtol
            ) & (ks >= 1.0 / max(1e-300, -math.log(r)))
        idx = np.flatnonzero(ok)
        return int(idx[0]) if idx.size else None

    def __call__(self, rows: slice, cols: slice, lam: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        rho, s = self._rho(rows, cols, lam)
        n = self.q.shape[0]
        ri = torch.arange(n, device=lam.device)[rows]
        ci = torch.arange(n, device=lam.device)[cols]
        diag = ri[:, None] == ci[None, :]
        far = (rho.abs() > self.rho_cap) & ~diag
        r = rho.masked_fill(diag | far, 0.0)
        deg = self._degree(float(r.abs().max())) or 0
        self.degree_used = max(self.degree_used, deg)
        a, b = self.coef_t[:, rows], self.coef_t[:, cols]
        p = torch.outer(a[deg], b[deg])
        d = torch.zeros_like(p)
        for k in range(deg - 1, -1, -1):
            d.mul_(r).add_(p)
            p.mul_(r).addr_(a[k], b[k])
        d.div_(s)
        if bool(far.any()):
            if self._fallback is None:
                self._fallback = GaussHermite2D(self.act, self.q, nodes=64)
            idx = far.nonzero(as_tuple=True)
            self.fallback_pairs += int(idx[0].numel())
            warnings.warn(
                f"{idx[0].numel()} pairs have |ρ| > {self.rho_cap:.3f}; their Gaussian "
                "expectations use a 64×64 Gauss–Hermite rule, accurate only for smooth φ.",
                stacklevel=2,
            )
            f2, d2 = self._fallback.pairs(ri[idx[0]], ci[idx[1]], rho[idx])
            p[idx], d[idx] = f2, d2
        return p, d


def bivariate(
    act: CenteredActivation, q: torch.Tensor, *, method: str = "auto", tol: float = 1e-14, nodes: int = 25
) -> BivariateExpectation:
    """The evaluator for ``act``: closed form when there is one, else Mehler.

    Args:
      method: ``"auto"``, ``"mehler"`` (force the series) or ``"gauss-hermite"`` (baseline).
      tol: relative truncation tolerance of the Mehler series.
      nodes: nodes per dimension of the Gauss–Hermite baseline.
    """
    if method == "gauss-hermite":
        return GaussHermite2D(act, q, nodes=nodes)
    if method == "auto" and isinstance(act.closed_form, PiecewiseLinear):
        return ArcCosine(act, q)
    if method == "auto" and isinstance(act.closed_form, ScaledErf):
        return Arcsine(act, q)
    return Mehler(act, q, tol=tol)

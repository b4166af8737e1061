r"""Bivariate Gaussian expectations `E[φ_c(u)φ_c(v)]` and `E[φ_c'(u)φ_c'(v)]`, fast and accurate.

For a block of pairs (i, j) with (u, v) ~ N(0, [[q_i, Λ_ij], [Λ_ij, q_j]]) we return

    F_ij  = E[φ_c(u) φ_c(v)]                      (the CK map, slides "Implicit-CK")
    F'_ij = ∂F_ij/∂Λ_ij = E[φ_c'(u) φ_c'(v)]      (Price's theorem; Ġ = σ_a² F')

Evaluators (:func:`bivariate` picks the first that applies):

* **arc-cosine** (φ = s₊x⁺ − s₋x⁻ = αx + β|x|, α = (s₊+s₋)/2, β = (s₊−s₋)/2; Cho & Saul 2009):
  `E[|u||v|] = (2/π)√(q_i q_j)(√(1−ρ²) + ρ·asin ρ)`, `E[sign u sign v] = (2/π) asin ρ`,
  `E|u| = √(2q/π)`, ρ = Λ_ij/√(q_i q_j).
* **arcsine** (φ = A·erf(s x) + d; Williams 1997):
  `E[erf(su)erf(sv)] = (2/π) asin(2s²Λ/√((1+2s²q_i)(1+2s²q_j)))`.
* **Mehler** (any φ): with `c_k(q) = E[φ_c(√q ξ) He_k(ξ)]/√k!` (per-sample quadrature,
  :mod:`._quadrature`), Mehler's formula gives `F = Σ_k c_k(q_i) c_k(q_j) ρ^k`.  The series is
  summed by Horner's rule together with its ρ-derivative.  The truncation after K terms is
  bounded by Cauchy–Schwarz and Parseval, `|tail| ≤ max_i R_K(q_i)·|ρ|^{K+1}` with
  `R_K(q) = E[φ_c²] − Σ_{k≤K} c_k(q)²`; K is chosen per block so this is ≤ tol (the tables:
  :mod:`._series`).  Pairs with |ρ| too close to 1 for K ≤ 160 (rare for GMM data; none in
  the paper preset at n ≥ 256; many on raw rows that saturate φ) are summed pair by pair to
  degree 3000, and those beyond that too go to the conditional rule.
* **conditional** (any φ, ~10⁵ evaluations per pair): `E[φ_c(u) E[φ_c(v) | u]]` with
  `v | u ~ N(Λu/q_i, q_j − Λ²/q_i)`, nested composite Gauss–Legendre split at the kinks of
  every outer node; ~1e-13 at any |ρ| ≤ 1.  The fallback of Mehler, and an independent check.
* **2-D Gauss–Hermite** (what neural-tangents' ``ElementwiseNumerical`` does): the benchmark
  baseline; ~1e-5 for tanh and ~1e-3 for ReLU with 25² nodes.

All agree with nested mpmath quadrature to < 1e-10 (tests/test_validate_bivariate.py).
"""

from __future__ import annotations

import abc
import math
import threading

import numpy as np
import torch

from ._moments import PhiValues, phi_values, values_at
from ._pointwise import CenteredActivation, PiecewiseLinear, ScaledErf
from ._quadrature import scale_breaks
from ._series import PAIR_DEGREE, TILE_DEGREE, SeriesTable, horner_pairs, panel_for, series_table
from ._tiles import abs_max, raise_if_stopped

__all__ = [
    "BivariateExpectation",
    "ArcCosine",
    "Arcsine",
    "Mehler",
    "GaussHermite2D",
    "Conditional",
    "TileMap",
    "bivariate",
]


class BivariateExpectation(abc.ABC):
    """F and ∂F/∂Λ for blocks of pairs, given the per-sample variances ``q`` (fixed)."""

    method: str

    def __init__(self, act: CenteredActivation, q: torch.Tensor) -> None:
        self.act = act
        self.q = q
        self.sq = torch.sqrt(q)

    @abc.abstractmethod
    def __call__(
        self, rows: slice, cols: slice, lam: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Return (F, ∂F/∂Λ) for Λ = ``lam`` (shape rows × cols).  Diagonal pairs i = j are
        not special-cased; the caller overwrites them with the univariate values."""

    def on_tile(self, rows: slice, cols: slice, base: torch.Tensor, sigma_a2: float) -> TileMap:
        """The map G ↦ (F, ∂F/∂Λ) at Λ = ``base`` + σ_a² G on the pairs ``rows`` × ``cols``.

        The fixed-point solve evaluates it 2–4 times per tile, so what depends only on the
        tile is prepared once (see :class:`Mehler`); every caller that needs F or Ġ at a
        given G goes through it, so that the same G gives the same bits.
        """
        return _LamTile(self, rows, cols, base, sigma_a2)

    def _rho(
        self, rows: slice, cols: slice, lam: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        s = torch.outer(self.sq[rows], self.sq[cols])
        return (lam / s).clamp_(-1.0, 1.0), s


class TileMap(abc.ABC):
    """G ↦ (F, ∂F/∂Λ) on one tile, for Λ = base + σ_a² G (``None`` for G = 0)."""

    @abc.abstractmethod
    def __call__(self, g: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]: ...

    def start(self) -> torch.Tensor | None:
        """A cheap first guess of the fixed point G = F(base + σ_a² G), or None for G = 0."""
        return None


class _LamTile(TileMap):
    """The plain map: Λ formed, then the evaluator called on it."""

    def __init__(
        self, biv: BivariateExpectation, rows: slice, cols: slice, base: torch.Tensor, sa2: float
    ) -> None:
        self.biv, self.rows, self.cols, self.base, self.sa2 = biv, rows, cols, base, sa2

    def __call__(self, g: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        lam = self.base.clone() if g is None else torch.add(self.base, g, alpha=self.sa2)
        return self.biv(self.rows, self.cols, lam)


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

    def __call__(
        self, rows: slice, cols: slice, lam: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
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

    def __call__(
        self, rows: slice, cols: slice, lam: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        den = torch.outer(self.d[rows], self.d[cols])
        z = (2 * self.s2 * lam / den).clamp_(-1.0, 1.0)
        a2 = self.amp**2
        f = (a2 * 2 / math.pi) * torch.asin(z) + self.e**2
        df = (a2 * 4 * self.s2 / math.pi) / torch.sqrt(den * den - (2 * self.s2 * lam) ** 2)
        return f, df


class GaussHermite2D(BivariateExpectation):
    """Plain tensor-product Gauss–Hermite rule with ``nodes``² points per pair.

    Error: spectral for entire φ (1e-11 for GELU with 25 nodes), slow for tanh (poles at
    ±iπ/2: 7e-6) and only algebraic across a kink (2e-3 for ReLU); measured in
    ``benchmarks/exact_kernel.py``, whose baseline this is.
    """

    method = "gauss-hermite-2d"

    def __init__(
        self, act: CenteredActivation, q: torch.Tensor, nodes: int = 25, chunk: int = 2**21
    ) -> None:
        super().__init__(act, q)
        x, w = np.polynomial.hermite_e.hermegauss(nodes)
        self.x = torch.as_tensor(x, dtype=q.dtype, device=q.device)
        self.w = torch.as_tensor(w / w.sum(), dtype=q.dtype, device=q.device)
        u = self.sq[:, None] * self.x[None, :]
        self.fu = act.phi(u) * self.w  # (n, Q): φ_c(√q_i ξ_a) w_a
        self.du = act.dphi(u) * self.w
        self.chunk = chunk

    def pairs(
        self, i: torch.Tensor, j: torch.Tensor, rho: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
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

    def __call__(
        self, rows: slice, cols: slice, lam: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        rho, _ = self._rho(rows, cols, lam)
        n = self.q.shape[0]
        ri = torch.arange(n, device=lam.device)[rows]
        ci = torch.arange(n, device=lam.device)[cols]
        i = ri[:, None].expand_as(rho).reshape(-1)
        j = ci[None, :].expand_as(rho).reshape(-1)
        f, d = self.pairs(i, j, rho.reshape(-1))
        return f.view_as(lam), d.view_as(lam)


def _composite(
    breaks: torch.Tensor, order: int, pieces: int, panel: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Gauss–Legendre nodes/weights between consecutive ``breaks`` (shape (..., B)), each
    interval cut into at least ``pieces`` equal panels and into panels no wider than ``panel``
    (the count is the interval's widest over the leading dimensions: the same for every pair
    of a batch)."""
    x, w = np.polynomial.legendre.leggauss(order)
    gx = torch.as_tensor(x, dtype=breaks.dtype, device=breaks.device)
    gw = torch.as_tensor(w, dtype=breaks.dtype, device=breaks.device)
    widths = (breaks[..., 1:] - breaks[..., :-1]).reshape(-1, breaks.shape[-1] - 1)
    counts = torch.ceil(widths.amax(0) / panel - 1e-12).clamp_(min=pieces).to(torch.int64).tolist()
    nodes, weights = [], []
    for k, pieces in enumerate(counts):
        frac = torch.linspace(0, 1, pieces + 1, dtype=breaks.dtype, device=breaks.device)
        lo, hi = breaks[..., k, None], breaks[..., k + 1, None]
        edges = lo + (hi - lo) * frac  # (..., pieces+1)
        a, b = edges[..., :-1, None], edges[..., 1:, None]
        nodes.append((0.5 * (a + b) + 0.5 * (b - a) * gx).flatten(-2))
        weights.append((0.5 * (b - a) * gw).expand(a.shape[:-1] + (order,)).flatten(-2))
    return torch.cat(nodes, -1), torch.cat(weights, -1)


class Conditional(BivariateExpectation):
    r"""Nested 1-D quadrature of `E[φ_c(u) E[φ_c(v) | u]]`, split at the kinks; any |ρ| ≤ 1.

    Costs ~10⁵ evaluations of φ per pair: the fallback of :class:`Mehler` for the few pairs
    with |ρ| near 1, not a method for whole matrices.

    ``parity`` (0 or 1: φ_c even or odd, as :class:`Mehler`'s series found it; None: neither)
    halves the outer rule: `φ_c(u)·E[φ_c(v) | u]` is then even in u (E[φ_c(v) | −u] =
    ±E[φ_c(v) | u] with the sign of φ_c(−u) = ±φ_c(u)), and likewise with φ_c', so the outer
    integral is twice that over u ≥ 0.
    """

    method = "conditional"
    half_width = 10.0  # e^{−50}: negligible against 1e-13
    order, panel = 16, 20 / 14  # Gauss–Legendre panels ≤ 20/14 wide between breakpoints
    pieces = 14  # at least, per interval between kinks (fine panels next to each kink)

    def __init__(
        self, act: CenteredActivation, q: torch.Tensor, *, parity: int | None = None
    ) -> None:
        super().__init__(act, q)
        self.parity = parity
        # φ's kinks, and for large q the points that grade the panels towards φ's bend
        # (:func:`._quadrature.scale_breaks`: tanh(√q ξ) changes on a scale 1/√q in ξ)
        bends = set(act.kinks)
        if not isinstance(act.closed_form, PiecewiseLinear) and q.numel():
            bends |= set(scale_breaks(float(q.max()), self.panel / 2))
        self.bends = tuple(sorted(bends))
        if len(self.bends) > len(set(act.kinks)):
            self.pieces = 2  # graded intervals: each already narrow where it needs to be

    def _breaks(self, shift: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        """Sorted ξ-breakpoints [−L, (k − shift)/scale …, L], clipped to [−L, L]."""
        L = self.half_width
        cols = [torch.full_like(shift, -L), torch.full_like(shift, L)]
        for k in self.bends:
            cols.append(((k - shift) / scale).nan_to_num(posinf=L, neginf=-L).clamp(-L, L))
        return torch.sort(torch.stack(cols, dim=-1), dim=-1).values

    def _outer(self, scale: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The outer rule in z (u = √q_i z): over [−L, L], or over [0, L] with the weights
        doubled when the integrand is even (:attr:`parity` known; the bends folded onto z > 0)."""
        if self.parity is None:
            return _composite(
                self._breaks(torch.zeros_like(scale), scale), self.order, self.pieces, self.panel
            )
        L = self.half_width
        cols = [torch.zeros_like(scale), torch.full_like(scale, L)]
        for k in sorted({abs(b) for b in self.bends if b != 0}):
            cols.append((k / scale).nan_to_num(posinf=L).clamp(0.0, L))
        breaks = torch.sort(torch.stack(cols, dim=-1), dim=-1).values
        z, wz = _composite(breaks, self.order, self.pieces, self.panel)
        return z, 2.0 * wz

    def pairs(
        self, i: torch.Tensor, j: torch.Tensor, lam: torch.Tensor, chunk: int = 8
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """F, F' for flat index vectors i, j and covariances lam."""
        fs: list[torch.Tensor] = []
        ds: list[torch.Tensor] = []
        for s0 in range(0, i.shape[0], chunk):
            raise_if_stopped()  # ~0.1 s per pair: a Ctrl-C need not wait for the whole tile
            qa, qb, c = self.q[i[s0 : s0 + chunk]], self.q[j[s0 : s0 + chunk]], lam[s0 : s0 + chunk]
            c = torch.minimum(c.abs(), torch.sqrt(qa * qb)) * torch.sign(c)
            sa = torch.sqrt(qa)
            z, wz = self._outer(sa)
            wz = wz * torch.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
            u = sa[:, None] * z  # (E, Qz)
            mu = (c / qa)[:, None] * u
            s = torch.sqrt((qb - c * c / qa).clamp(min=0.0))[:, None].expand_as(mu)
            # (E, Qz, Qw)
            w, ww = _composite(self._breaks(mu, s), self.order, self.pieces, self.panel)
            ww = ww * torch.exp(-0.5 * w * w) / math.sqrt(2 * math.pi)
            v = mu[..., None] + s[..., None] * w
            for g, out in ((self.act.phi, fs), (self.act.dphi, ds)):
                inner = (g(v) * ww).sum(-1)
                out.append((g(u) * inner * wz).sum(-1))
        return torch.cat(fs), torch.cat(ds)

    def __call__(
        self, rows: slice, cols: slice, lam: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        n = self.q.shape[0]
        ri = torch.arange(n, device=lam.device)[rows]
        ci = torch.arange(n, device=lam.device)[cols]
        i = ri[:, None].expand_as(lam).reshape(-1)
        j = ci[None, :].expand_as(lam).reshape(-1)
        f, d = self.pairs(i, j, lam.reshape(-1))
        return f.view_as(lam), d.view_as(lam)


class Mehler(BivariateExpectation):
    r"""`F = Σ_k c_k(q_i) c_k(q_j) ρ^k` (Mehler), any continuous φ; see the module docstring.

    Tiles sum the series to the degree of :data:`._series.TILE_DEGREE` at most; the pairs of
    a tile beyond its reach go, gathered, to a table of degree :data:`._series.PAIR_DEGREE`
    (built on first need: rows whose scale saturates φ, or near-duplicates), and only those
    beyond that one's reach to the nested quadrature of :class:`Conditional`.
    """

    method = "mehler"

    def __init__(
        self,
        act: CenteredActivation,
        q: torch.Tensor,
        *,
        tol: float = 1e-14,
        max_degree: int = TILE_DEGREE,
        values: PhiValues | None = None,
    ) -> None:
        super().__init__(act, q)
        self.table = series_table(values_at(act, q, values), max_degree, tol)
        t = self.table
        self.coef_t, self.rmax, self.max_degree = t.coef_t, t.rmax, t.max_degree
        self.tol, self.dtol, self.rho_cap, self.parity = t.tol, t.dtol, t.rho_cap, t.parity
        self.rel_tol = tol
        self.degree_used = 0
        self.fallback_pairs = 0
        self.series_pairs = 0
        self._pairs_table: SeriesTable | None = None
        self._fallback: Conditional | None = None
        self._lock = threading.Lock()  # blocks may run on several threads (the counters)
        self._build = threading.Lock()  # the pairs' table, built once

    def _degree(self, r: float, ks: np.ndarray | None = None) -> int | None:
        return self.table.degree(r)

    def __call__(
        self, rows: slice, cols: slice, lam: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        return self.on_tile(rows, cols, lam, 0.0)(None)

    def on_tile(self, rows: slice, cols: slice, base: torch.Tensor, sigma_a2: float) -> TileMap:
        return _MehlerTile(self, rows, cols, base, sigma_a2)

    def pairs_table(self) -> SeriesTable | None:
        """The table of degree :data:`PAIR_DEGREE`, built on first call (None when it would
        reach no further than the tiles' own)."""
        with self._build:
            if self._pairs_table is None:
                degree = max(PAIR_DEGREE, self.max_degree)
                values = phi_values(self.act, self.q, panel=panel_for(degree))
                self._pairs_table = series_table(values, degree, self.rel_tol, by_rows=True)
        t = self._pairs_table
        return t if t.rho_cap > self.rho_cap else None

    def far_pairs(
        self, ri: torch.Tensor, ci: torch.Tensor, rho: torch.Tensor, lam: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(F, ∂F/∂ρ, ∂F/∂Λ known?) for pairs beyond the tiles' reach: by the pairs' table
        where it reaches, else by nested quadrature (whose ∂F/∂Λ is returned as it is)."""
        f = torch.empty_like(rho)
        d = torch.empty_like(rho)
        by_rho = torch.zeros_like(rho, dtype=torch.bool)
        table = self.pairs_table()
        if table is not None:
            by_rho = rho.abs() <= table.rho_cap
            if bool(by_rho.any()):
                f[by_rho], d[by_rho], deg = horner_pairs(table, ri[by_rho], ci[by_rho], rho[by_rho])
                with self._lock:
                    self.degree_used = max(self.degree_used, deg)
                    self.series_pairs += int(by_rho.sum())
        rest = ~by_rho
        if bool(rest.any()):
            f[rest], d[rest] = self.fallback(ri[rest], ci[rest], lam[rest])
        return f, d, by_rho

    def fallback(
        self, ri: torch.Tensor, ci: torch.Tensor, lam: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """F, F' by nested quadrature for the pairs (ri, ci) with |ρ| beyond the series' reach."""
        with self._lock:
            if self._fallback is None:
                # φ_c's parity as both tables found it (to their tolerances): half the rule
                pairs = self._pairs_table
                same = pairs is None or pairs.parity == self.parity
                self._fallback = Conditional(self.act, self.q, parity=self.parity if same else None)
            self.fallback_pairs += int(ri.numel())
        return self._fallback.pairs(ri, ci, lam)


class _MehlerTile(TileMap):
    """Mehler's series on one tile, with what depends only on the tile computed once:
    1/√(q_i q_j), ρ at G = 0 and the mask of the pairs i = j.

    ρ = (base + σ_a² G)/√(q_i q_j) = base/√(q_i q_j) + σ_a² G/√(q_i q_j) is then one fused pass
    per evaluation (Λ itself is formed only for the rare pairs of the fallback).
    """

    def __init__(self, m: Mehler, rows: slice, cols: slice, base: torch.Tensor, sa2: float) -> None:
        self.m, self.rows, self.cols, self.base, self.sa2 = m, rows, cols, base, sa2
        self.inv_s = torch.outer(m.sq[rows], m.sq[cols]).reciprocal_()
        self.rho0 = base * self.inv_s
        n = m.q.shape[0]
        self.r0, r1, _ = rows.indices(n)
        self.c0, c1, _ = cols.indices(n)
        # The pairs i = j lie in tiles whose row and column ranges overlap: a mask only there.
        self.diag: torch.Tensor | None = None
        if max(self.r0, self.c0) < min(r1, c1):
            ri = torch.arange(self.r0, r1, device=base.device)
            ci = torch.arange(self.c0, c1, device=base.device)
            self.diag = ri[:, None] == ci[None, :]
        self.a, self.b = m.coef_t[:, rows], m.coef_t[:, cols]

    def start(self) -> torch.Tensor | None:
        """The fixed point of the series cut after ρ¹: G = c₀c₀' + c₁c₁'(ρ₀ + σ_a² G/√(q_i q_j)),

        ρ₀ = base/√(q_i q_j).  Its error is the ρ² (ρ³ for an odd φ) term, ~1e-6 on the paper's
        data, from which one Newton step lands at rounding: two evaluations instead of three.
        The denominator 1 − σ_a² E[φ'(u)]E[φ'(v)] is ≥ 1 − √(Ġ_ii Ġ_jj) > 0 (Cauchy–Schwarz).
        """
        if self.a.shape[0] < 2:
            return None
        lin = torch.outer(self.a[1], self.b[1])
        num = torch.outer(self.a[0], self.b[0]).addcmul_(lin, self.rho0)
        one = torch.ones((), dtype=lin.dtype, device=lin.device)
        return num.div_(torch.addcmul(one, lin, self.inv_s, value=-self.sa2))

    def __call__(self, g: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        m = self.m
        if g is None:
            rho = self.rho0.clone()
        else:
            rho = torch.addcmul(self.rho0, g, self.inv_s, value=self.sa2)
        rho.clamp_(-1.0, 1.0)
        if self.diag is not None:
            rho.masked_fill_(self.diag, 0.0)
        far = None
        top = abs_max(rho)
        if top > m.rho_cap:  # pairs too close to |ρ| = 1 for the tile's degree
            far = rho.abs() > m.rho_cap
            far_rho = rho[far]
            rho.masked_fill_(far, 0.0)
            top = abs_max(rho)
        deg = m._degree(top) or 0
        with m._lock:
            m.degree_used = max(m.degree_used, deg)
        if m.parity is None:
            p, d = _horner(self.a, self.b, deg, rho)
        else:
            p, d = _horner_parity(self.a, self.b, deg, rho, m.parity)
        d.mul_(self.inv_s)
        if far is not None:
            idx = far.nonzero(as_tuple=True)
            lam = self.base[idx] if g is None else self.base[idx] + self.sa2 * g[idx]
            f2, d2, by_rho = m.far_pairs(idx[0] + self.r0, idx[1] + self.c0, far_rho, lam)
            d2[by_rho] *= self.inv_s[idx][by_rho]  # ∂F/∂ρ → ∂F/∂Λ, as for the tile
            p[idx], d[idx] = f2, d2
        return p, d


def _horner(
    a: torch.Tensor, b: torch.Tensor, deg: int, r: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """(p, ∂p/∂ρ) for p = Σ_{k ≤ deg} a_k(i) b_k(j) ρ^k, Horner's rule for both together:
    d ← d·ρ + p (one fused pass), then p ← p·ρ + a_k ⊗ b_k."""
    p = torch.outer(a[deg], b[deg])
    d = p.clone() if deg else torch.zeros_like(p)
    if deg:
        p.mul_(r).addr_(a[deg - 1], b[deg - 1])
    for k in range(deg - 2, -1, -1):
        torch.addcmul(p, d, r, out=d)
        p.mul_(r).addr_(a[k], b[k])
    return p, d


def _horner_parity(
    a: torch.Tensor, b: torch.Tensor, deg: int, r: torch.Tensor, parity: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """(p, ∂p/∂ρ) for a series with only degrees k ≡ ``parity`` (mod 2), k ≤ deg.

    With t = ρ² and P(t) = Σ_j a_k b_k t^j over those k (j = (k − parity)/2): p = ρ^parity P(t),
    so ∂p/∂ρ = P + 2tP' (odd) or 2ρP' (even).  P and P' by Horner's rule in t: half the
    passes of :func:`_horner`.
    """
    ks = list(range(parity, deg + 1, 2))
    if not ks:
        return torch.zeros_like(r), torch.zeros_like(r)
    t = r * r
    top = ks[-1]
    P = torch.outer(a[top], b[top])
    # The first step D ← D·t + P from D = 0 is P itself (the same bits, one pass less).
    D = P.clone() if len(ks) > 1 else torch.zeros_like(P)
    for i, k in enumerate(reversed(ks[:-1])):
        if i:
            torch.addcmul(P, D, t, out=D)  # D ← D·t + P
        P.mul_(t).addr_(a[k], b[k])
    if parity:
        torch.addcmul(P, D, t, value=2.0, out=D)  # ∂p/∂ρ = P + 2tP', one pass
        return P.mul_(r), D
    return P, D.mul_(r).mul_(2)  # ∂p/∂ρ = 2ρP'


def bivariate(
    act: CenteredActivation,
    q: torch.Tensor,
    *,
    method: str = "auto",
    tol: float = 1e-14,
    nodes: int = 25,
    values: PhiValues | None = None,
) -> BivariateExpectation:
    """The evaluator for ``act``: closed form when there is one, else Mehler.

    Args:
      method: ``"auto"``, ``"mehler"`` (force the series), ``"conditional"`` (nested
        quadrature, slow) or ``"gauss-hermite"`` (the benchmark baseline).
      tol: relative truncation tolerance of the Mehler series.
      nodes: nodes per dimension of the Gauss–Hermite baseline.
      values: φ_c already evaluated at ``q`` (:func:`phi_values`), for the Mehler coefficients.
    """
    if method == "gauss-hermite":
        return GaussHermite2D(act, q, nodes=nodes)
    if method == "conditional":
        return Conditional(act, q)
    if method == "auto" and isinstance(act.closed_form, PiecewiseLinear):
        return ArcCosine(act, q)
    if method == "auto" and isinstance(act.closed_form, ScaledErf):
        return Arcsine(act, q)
    return Mehler(act, q, tol=tol, values=values)

r"""Tables of Mehler's series `F = Σ_k c_k(q_i) c_k(q_j) ρ^k`: coefficients, tails, degrees.

`c_k(q) = E[φ_c(√q ξ) h_k(ξ)]` (h_k = He_k/√k!) per sample, from φ_c on the sample's quadrature
rule (:mod:`._moments`, :mod:`._quadrature`).  The series is truncated after K terms with the
Cauchy–Schwarz/Parseval bound `|tail| ≤ R_K ρ^{K+1}`, `R_K = max_i (E[φ_c²] − Σ_{k≤K} c_k(q_i)²)`
for F, and `(K+1) ρ^K R_K` for ∂F/∂ρ; :meth:`SeriesTable.degree` is the least K that meets both.

Two tables serve :class:`._bivariate.Mehler`: one up to degree 160 for whole tiles, and, built
on first need, one up to degree 3000 for the pairs whose |ρ| is beyond the first's reach.  Those
are many when the rows' scale saturates φ: tanh(√q ξ) for q ≫ 1 is close to sign(ξ), whose
coefficients decay only like k^{−3/4}, so that ρ = 0.95 (rows of raw pixel data) needs degree
~600 and ρ = 0.99 ~3000.  Those pairs are gathered, sorted by |ρ| and summed as flat vectors a
chunk at a time, each chunk to its own degree (:func:`horner_pairs`), so that the tiles keep
their low degree and most far pairs a moderate one.  The second table's quadrature has panels narrow enough for h_k up
to its degree (:func:`panel_for`).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import torch

from ._moments import PhiValues
from ._quadrature import PANEL, hermite_moments, hermite_table

__all__ = ["SeriesTable", "TILE_DEGREE", "PAIR_DEGREE", "horner_pairs", "panel_for", "series_table"]

#: the degree of the tiles' table (Horner's rule over whole tiles)
TILE_DEGREE = 160
#: the degree of the table for the pairs beyond the tiles' reach (summed pair by pair)
PAIR_DEGREE = 3000
#: the degree the default panels (20 Gauss–Legendre nodes per 0.5) resolve h_k to
_PANEL_DEGREE = 250


def panel_for(degree: int) -> float:
    """The panel width (in ξ) whose 20 nodes resolve h_k for k ≤ ``degree`` (h_k oscillates
    with wavelength ~2π/√k)."""
    return PANEL * min(1.0, math.sqrt(_PANEL_DEGREE / max(1, degree)))


@dataclasses.dataclass(frozen=True)
class SeriesTable:
    """Mehler coefficients up to ``max_degree`` and what choosing a truncation needs.

    Attributes:
      coef_t: (K+1, n) coefficients c_k(q_i), rows contiguous (a transposed view of the
        sample-major (n, K+1) table when built ``by_rows``).
      rmax: (K+1,) R_k = max_i of the tail after degree k.
      tol, dtol: the truncation budgets of F and of ∂F/∂ρ.
      rho_cap: the largest |ρ| the table reaches within ``max_degree``.
      parity: 1 (odd series), 0 (even) or None (see :func:`_parity`).
      by_row: the same coefficients sample by sample, (n, J+1) contiguous, of the degrees of
        the series' parity only (k = parity + 2j; every k when ``parity`` is None): what
        :func:`horner_pairs` gathers.  None unless the table was built ``by_rows``.
    """

    coef_t: torch.Tensor
    rmax: np.ndarray
    max_degree: int
    tol: float
    dtol: float
    rho_cap: float
    parity: int | None
    by_row: torch.Tensor | None = None

    def degree(self, r: float) -> int | None:
        """The least degree whose truncation at |ρ| ≤ r meets both budgets; None if none does."""
        if r <= 0.0:
            return 0
        ks = np.arange(self.max_degree + 1)
        with np.errstate(under="ignore"):
            ok = (
                (self.rmax * r ** (ks + 1) <= self.tol)
                & ((ks + 1) * r**ks * self.rmax <= self.dtol)
                & (ks >= 1.0 / max(1e-300, -math.log(r)))
            )
        idx = np.flatnonzero(ok)
        return int(idx[0]) if idx.size else None

    def degrees(self, r: np.ndarray) -> np.ndarray:
        """:meth:`degree` of every |ρ| in ``r`` at once (each ≤ :attr:`rho_cap`), by the
        largest |ρ| each degree reaches: the three conditions solved for ρ."""
        ks = np.arange(self.max_degree + 1, dtype=np.float64)
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            rm = self.rmax
            reach_f = np.where(rm > 0, (self.tol / rm) ** (1.0 / (ks + 1)), np.inf)
            reach_d = np.where(
                rm > 0, (self.dtol / ((ks + 1) * rm)) ** (1.0 / np.maximum(ks, 1)), np.inf
            )
            reach_d[0] = np.inf if rm[0] <= self.dtol else 0.0  # ρ⁰ = 1: no ρ to solve for
            reach_k = np.exp(-1.0 / np.maximum(ks, 1))
        reach_k[0] = 0.0
        reach = np.minimum(np.minimum(reach_f, reach_d), reach_k)
        out = np.searchsorted(np.maximum.accumulate(reach), r, side="left")
        return np.minimum(out, self.max_degree)

    def rows(self) -> torch.Tensor:
        """:attr:`by_row`, made now when the table was not built ``by_rows``."""
        if self.by_row is not None:
            return self.by_row
        return _by_row(self.coef_t.T, self.parity)


def series_table(
    values: PhiValues, max_degree: int, tol: float, *, by_rows: bool = False
) -> SeriesTable:
    """The table of ``values`` (φ_c on the samples' quadrature) up to ``max_degree``.

    ``tol`` is relative: F's budget is tol·max_i E[φ_c²], ∂F/∂ρ's the larger of tol·that/min q
    (the budget of the tiles' table since it was introduced) and tol·max_i Σ_k k c_k(q_i)²,
    ∂F/∂ρ's own scale (`q E[φ_c'²]`: ∂F/∂Λ = (∂F/∂ρ)/√(q_i q_j) is then within tol of the scale
    of E[φ'φ'], and Ġ = σ_a² E[φ'φ'] within tol of its own).

    ``by_rows``: keep the coefficients sample by sample too (:attr:`SeriesTable.by_row`), as
    :func:`horner_pairs` gathers them (``coef_t`` is then a transposed view of the whole).
    """
    q, rule = values.q, values.rule
    h0 = hermite_table(rule.xi, max_degree)  # (Q0, K+1)
    coef = values.shared @ (rule.w[:, None] * h0)  # the weights into the table: no n × Q0 product
    if rule.xi_local.shape[1]:
        fw = values.local * rule.w_local
        step = max(1, 2**17 // rule.xi_local.shape[1])  # (chunk, Q1) arrays of ≤ 1 MB
        for s0 in range(0, fw.shape[0], step):
            xl = rule.xi_local[s0 : s0 + step]
            coef[s0 : s0 + step] += hermite_moments(xl, fw[s0 : s0 + step], max_degree)
    coef_t = coef.T if by_rows else coef.T.contiguous()
    del coef
    g = values.g
    # R_K = max_i R_K(q_i), a few samples at a time: the n × (K+1) tails are never whole
    # (they would be the largest arrays left behind before an n × n computation).
    rmax = torch.zeros(max_degree + 1, dtype=q.dtype, device=q.device)
    slope = torch.zeros((), dtype=q.dtype, device=q.device)
    ks = torch.arange(max_degree + 1, dtype=q.dtype, device=q.device)[:, None]
    for s0 in range(0, int(q.shape[0]), 1024):
        c2 = coef_t[:, s0 : s0 + 1024].square()
        tails = (g[None, s0 : s0 + 1024] - torch.cumsum(c2, dim=0)).clamp_(min=0.0)
        rmax = torch.maximum(rmax, tails.max(dim=1).values)
        slope = torch.maximum(slope, (ks * c2).sum(0).max())
    scale = float(g.max())
    ftol = tol * scale
    dtol = max(tol * scale / float(q.min()), tol * float(slope))
    rm = rmax.cpu().numpy()
    table = SeriesTable(coef_t, rm, max_degree, ftol, dtol, 0.0, None)
    lo, hi = 0.0, 1.0
    for _ in range(60):  # largest |ρ| the series handles within max_degree
        mid = 0.5 * (lo + hi)
        if table.degree(mid) is None:
            hi = mid
        else:
            lo = mid
    parity = _parity(coef_t, ftol)
    by_row = _by_row(coef_t.T, parity) if by_rows else None
    return dataclasses.replace(table, rho_cap=lo, parity=parity, by_row=by_row)


def _by_row(coef: torch.Tensor, parity: int | None) -> torch.Tensor:
    """(n, K+1) coefficients → the contiguous (n, J+1) of the degrees of ``parity``."""
    return (coef if parity is None else coef[:, parity::2]).contiguous()


def _parity(coef_t: torch.Tensor, tol: float) -> int | None:
    """1 when the series is odd in ρ (c_k = 0 for every even k, e.g. an odd φ centred at 0),
    0 when it is even, None otherwise.

    "= 0" within the truncation budget: dropping the degrees of the other parity moves F by
    at most Σ_k max_i c_k(q_i)² and ∂F/∂ρ by Σ_k k·max_i c_k(q_i)² (|ρ| ≤ 1), each kept
    under a hundredth of the series' own tolerance.  Horner's rule then runs in ρ² over
    half the degrees.
    """
    m2 = (coef_t.abs().max(dim=1).values ** 2).cpu().numpy()
    ks = np.arange(m2.shape[0])
    budget = tol / 100
    for parity in (1, 0):
        drop = ks % 2 != parity
        if m2[drop].sum() <= budget and (ks[drop] * m2[drop]).sum() <= budget:
            return parity
    return None


#: entries of the (pairs × degrees) arrays :func:`horner_pairs` forms at a time (2^19 float64:
#: 4 MB each, three of them); a chunk holds at least :data:`_PAIR_MIN` pairs
_PAIR_BUDGET = 2**19
_PAIR_MIN = 64


def horner_pairs(
    table: SeriesTable, i: torch.Tensor, j: torch.Tensor, rho: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, int]:
    """(F, ∂F/∂ρ, degree) for the pairs (i[m], j[m]) at correlations rho[m] (flat vectors),
    every |ρ| ≤ ``table.rho_cap``: Σ_k c_k(q_i)c_k(q_j)ρ^k over the degrees of the series'
    parity, a chunk of pairs at a time, each chunk truncated at the degree its largest |ρ|
    needs.

    Vectorised over degrees as well as pairs, which is what makes raw rows (tens of thousands
    of pairs beyond the tiles' reach, at degrees in the hundreds) cheap: the pairs sorted by
    |ρ|, each chunk's coefficients gathered as rows of the sample-major table, the powers of ρ
    (ρ² for a series of one parity) by one cumulative product, the terms a_j x^(j−1) formed
    once, then summed (P = a_0 + x·Σ) and weighted by j (P', one matrix–vector product).  A chunk is as many pairs as keep its arrays within
    :data:`_PAIR_BUDGET` entries at its degree: thousands of the many moderate pairs, a few
    hundred of the most alike.  (Horner's rule over a chunk costs one torch call per degree,
    which at these sizes is the whole cost.)  The rounding error is that of the sum of the
    terms, ~k·2⁻⁵³ of each (the k-th power by k products), the same order as Horner's rule.
    """
    f = torch.empty_like(rho)
    d = torch.empty_like(rho)
    m = int(rho.shape[0])
    if not m:
        return f, d, 0
    order = torch.argsort(rho.abs())
    degs = table.degrees(rho.abs()[order].cpu().numpy())
    rows = table.rows()
    step = 1 if table.parity is None else 2
    used = 0
    s0 = 0
    while s0 < m:
        # the largest chunk from s0 whose pairs × (degree + 1) entries fit the budget (both
        # factors grow with the chunk's end, as the pairs are sorted by |ρ|)
        ends = np.arange(s0 + 1, m + 1)
        size = (ends - s0) * (degs[s0:] // step + 1)
        fit = int(np.searchsorted(size, _PAIR_BUDGET, side="right"))
        s1 = s0 + max(min(_PAIR_MIN, m - s0), fit)
        deg = int(degs[s1 - 1])
        used = max(used, deg)
        at = order[s0:s1]
        f[at], d[at] = _series_sum(rows, i[at], j[at], rho[at], deg, table.parity)
        s0 = s1
    return f, d, used


def _series_sum(
    rows: torch.Tensor,
    i: torch.Tensor,
    j: torch.Tensor,
    r: torch.Tensor,
    deg: int,
    parity: int | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(p, ∂p/∂ρ) for p = Σ_{k ≤ deg} c_k(q_i)c_k(q_j)ρ^k, pair by pair, from the sample-major
    ``rows`` (:attr:`SeriesTable.by_row`; degrees of one parity only when ``parity`` is 0 or
    1: column j is degree parity + 2j, and p = ρ^parity·P(t), P a polynomial in t = ρ²)."""
    if parity is None:
        cols = rows[:, : deg + 1]
        x = r
    else:
        cols = rows[:, : (deg - parity) // 2 + 1]  # the degrees parity, parity + 2, … ≤ deg
        x = r * r
    J = int(cols.shape[1]) - 1  # the polynomial's degree in x
    if J < 0:
        return torch.zeros_like(r), torch.zeros_like(r)
    ab = cols.index_select(0, i)
    ab.mul_(cols.index_select(0, j))  # a_j = c_k(q_i)·c_k(q_j), pairs × degrees
    if not J:
        return _by_parity(ab[:, 0].clone(), torch.zeros_like(r), r, x, parity)
    pw = torch.empty((ab.shape[0], J), dtype=ab.dtype, device=ab.device)
    pw[:, 0] = 1.0  # x^0 … x^(J−1) by one cumulative product
    if J > 1:
        torch.cumprod(x[:, None].expand(-1, J - 1), dim=1, out=pw[:, 1:])
    terms = ab[:, 1:].mul_(pw)  # a_j x^(j−1), j ≥ 1, in place
    # P = a_0 + x·Σ_j a_j x^(j−1); P' = Σ_j j·a_j x^(j−1), a matrix–vector product
    ks = torch.arange(1, J + 1, dtype=ab.dtype, device=ab.device)
    P = torch.addcmul(ab[:, 0], x, terms.sum(1))
    dP = terms @ ks
    return _by_parity(P, dP, r, x, parity)


def _by_parity(
    P: torch.Tensor, dP: torch.Tensor, r: torch.Tensor, x: torch.Tensor, parity: int | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """(p, ∂p/∂ρ) from P(x) and P'(x): x = ρ (every degree) or x = ρ² (one parity)."""
    if parity is None:
        return P, dP
    if parity:
        return P * r, P + 2 * x * dP  # p = ρP(t), ∂p/∂ρ = P + 2tP'
    return P, 2 * r * dP  # p = P(t), ∂p/∂ρ = 2ρP'

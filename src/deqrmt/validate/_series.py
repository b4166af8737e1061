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
      coef_t: (K+1, n) coefficients c_k(q_i), rows contiguous.
      rmax: (K+1,) R_k = max_i of the tail after degree k.
      tol, dtol: the truncation budgets of F and of ∂F/∂ρ.
      rho_cap: the largest |ρ| the table reaches within ``max_degree``.
      parity: 1 (odd series), 0 (even) or None (see :func:`_parity`).
    """

    coef_t: torch.Tensor
    rmax: np.ndarray
    max_degree: int
    tol: float
    dtol: float
    rho_cap: float
    parity: int | None

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


def series_table(values: PhiValues, max_degree: int, tol: float) -> SeriesTable:
    """The table of ``values`` (φ_c on the samples' quadrature) up to ``max_degree``.

    ``tol`` is relative: F's budget is tol·max_i E[φ_c²], ∂F/∂ρ's the larger of tol·that/min q
    (the budget of the tiles' table since it was introduced) and tol·max_i Σ_k k c_k(q_i)²,
    ∂F/∂ρ's own scale (`q E[φ_c'²]`: ∂F/∂Λ = (∂F/∂ρ)/√(q_i q_j) is then within tol of the scale
    of E[φ'φ'], and Ġ = σ_a² E[φ'φ'] within tol of its own).
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
    coef_t = coef.T.contiguous()
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
    return dataclasses.replace(table, rho_cap=lo, parity=_parity(coef_t, ftol))


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


#: pairs summed at a time by :func:`horner_pairs` (two (K+1) × chunk arrays: ≤ 25 MB)
_PAIR_CHUNK = 512


def horner_pairs(
    table: SeriesTable, i: torch.Tensor, j: torch.Tensor, rho: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, int]:
    """(F, ∂F/∂ρ, degree) for the pairs (i[m], j[m]) at correlations rho[m] (flat vectors),
    every |ρ| ≤ ``table.rho_cap``: Horner's rule on the products c_k(q_i)c_k(q_j), gathered
    a chunk of pairs at a time, each chunk truncated at the degree its largest |ρ| needs."""
    f = torch.empty_like(rho)
    d = torch.empty_like(rho)
    used = 0
    # by |ρ|, so that each chunk's degree is its own range's: most pairs need far less than
    # the few most alike
    order = torch.argsort(rho.abs())
    for s0 in range(0, int(rho.shape[0]), _PAIR_CHUNK):
        at = order[s0 : s0 + _PAIR_CHUNK]
        r = rho[at]
        deg = table.degree(float(r.abs().max())) or 0
        used = max(used, deg)
        ab = table.coef_t[: deg + 1, i[at]]
        ab.mul_(table.coef_t[: deg + 1, j[at]])
        f[at], d[at] = _horner_flat(ab, r, table.parity)
    return f, d, used


def _horner_flat(
    ab: torch.Tensor, r: torch.Tensor, parity: int | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """(p, ∂p/∂ρ) for p = Σ_k ab[k]·ρ^k elementwise (degrees of one parity only when
    ``parity`` is 0 or 1: Horner's rule in t = ρ², as :func:`._bivariate._horner_parity`)."""
    deg = int(ab.shape[0]) - 1
    if parity is None:
        p = ab[deg].clone()
        d = torch.zeros_like(p)
        for k in range(deg - 1, -1, -1):
            d.mul_(r).add_(p)
            p.mul_(r).add_(ab[k])
        return p, d
    ks = list(range(parity, deg + 1, 2))
    if not ks:
        return torch.zeros_like(r), torch.zeros_like(r)
    t = r * r
    P = ab[ks[-1]].clone()
    D = torch.zeros_like(P)
    for k in reversed(ks[:-1]):
        D.mul_(t).add_(P)
        P.mul_(t).add_(ab[k])
    if parity:
        return P * r, P + 2 * t * D  # p = ρP(t), ∂p/∂ρ = P + 2tP'
    return P, 2 * r * D  # p = P(t), ∂p/∂ρ = 2ρP'

r"""Per-sample Gaussian moments of φ_c: the diagonal of the exact kernels and its tables.

For each sample's variance q_i, φ_c(√q_i ξ) on its quadrature rule (:mod:`._quadrature`,
n × ~1100 nodes) gives `g(q) = E[φ_c(√q ξ)²]` (the diagonal kernel map), its slope `g'(q)`, and
the Mehler coefficients of :class:`._bivariate.Mehler`.  One pass of φ serves all three:
:func:`phi_values` keeps it (:class:`PhiValues`), so that the last pass of the diagonal Newton
solve (:func:`._diagonal._diagonal_fixed_point`) is also the tables' pass.

The passes go a few hundred samples at a time: each block of nodes (≤ 1 MB) is evaluated,
squared and summed while it is in cache, with no n × Q temporary beyond the kept values.
"""

from __future__ import annotations

import dataclasses

import torch

from ._pointwise import CenteredActivation, PiecewiseLinear
from ._quadrature import PANEL, GaussianRule, gaussian_rule

__all__ = ["PhiValues", "diagonal_moments", "phi_values", "values_at"]

#: nodes per block of samples (2^17 float64: 1 MB, in a core's L2 cache)
_BLOCK = 2**17


@dataclasses.dataclass(frozen=True)
class PhiValues:
    """φ_c(√q_i ξ) on each sample's quadrature rule (:func:`gaussian_rule`) at variances q,
    and the moments every caller needs from them.

    Attributes:
      shared, local: φ_c at the shared nodes (n, Q0) and at the per-sample nodes (n, Q1).
      g: `g(q) = E[φ_c(√q ξ)²]`.
      dg: `g'(q) = E[φ_c(√q ξ)²(ξ² − 1)]/(2q)` (differentiate the Gaussian density in its
        variance: no second derivative of φ, kinks included).
    """

    q: torch.Tensor
    rule: GaussianRule
    shared: torch.Tensor
    local: torch.Tensor
    g: torch.Tensor
    dg: torch.Tensor


def _blocks(n: int, nodes: int) -> list[slice]:
    step = max(1, _BLOCK // max(1, nodes))
    return [slice(s, min(n, s + step)) for s in range(0, n, step)]


def phi_values(act: CenteredActivation, q: torch.Tensor, *, panel: float = PANEL) -> PhiValues:
    """φ_c on the quadrature rule of the variances ``q``, and g, g' from it (one pass of φ).

    ``panel``: the rule's panel width in ξ (narrower for Mehler coefficients of high degree).
    """
    graded = not isinstance(act.closed_form, PiecewiseLinear)
    rule = gaussian_rule(q, act.kinks, graded=graded, panel=panel)
    sq = torch.sqrt(q)[:, None]
    n = int(q.shape[0])
    shared = torch.empty((n, int(rule.xi.shape[0])), dtype=q.dtype, device=q.device)
    # the factor ξ² − 1 of g' goes into the weights: both moments from one product
    weights = torch.stack([rule.w, rule.w * (rule.xi * rule.xi - 1)], dim=1)
    m = torch.empty((n, 2), dtype=q.dtype, device=q.device)
    for b in _blocks(n, shared.shape[1]):
        f = act.phi(sq[b] * rule.xi[None, :])
        shared[b] = f
        m[b] = f.square() @ weights  # φ may return its argument: no in-place square
    local = act.phi(sq * rule.xi_local)
    if rule.xi_local.shape[1]:
        l2 = local.square()
        m[:, 0] += (l2 * rule.w_local).sum(dim=1)
        m[:, 1] += (l2 * (rule.w_local * (rule.xi_local**2 - 1))).sum(dim=1)
    return PhiValues(q, rule, shared, local, m[:, 0], m[:, 1] / (2 * q))


def values_at(act: CenteredActivation, q: torch.Tensor, values: PhiValues | None) -> PhiValues:
    """``values`` if they were evaluated at this very ``q``, else a new pass (:func:`phi_values`)."""
    return values if values is not None and values.q is q else phi_values(act, q)


def diagonal_moments(
    act: CenteredActivation,
    q: torch.Tensor,
    *,
    derivative: bool = True,
    values: PhiValues | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    r"""`g(q) = E[φ_c(√q ξ)²]`, `g'(q)` and (if ``derivative``) `E[φ_c'(√q ξ)²]` per sample.

    ``values``: φ_c already evaluated at this very ``q`` (:func:`phi_values`), used instead
    of a new pass.
    """
    v = values_at(act, q, values)
    if not derivative:
        return v.g, v.dg, None
    rule = v.rule
    sq = torch.sqrt(q)[:, None]
    n = int(q.shape[0])
    d = torch.empty(n, dtype=q.dtype, device=q.device)
    for b in _blocks(n, int(rule.xi.shape[0])):
        d[b] = act.dphi(sq[b] * rule.xi[None, :]).square() @ rule.w
    if rule.xi_local.shape[1]:
        d += (act.dphi(sq * rule.xi_local).square() * rule.w_local).sum(dim=1)
    return v.g, v.dg, d

r"""Per-sample Gaussian quadrature for `E[f(√q_i ξ) w(ξ)]`, ξ ~ N(0, 1), split at φ's kinks.

Composite Gauss–Legendre on ξ ∈ [−L, L] with panels of width ≤ h.  Gauss–Hermite would be the
obvious rule, but it converges only algebraically across a kink; Gauss–Legendre panels whose
ends sit exactly on the kinks converge exponentially on every piece of a piecewise-analytic
integrand.  A kink of φ at x₀ sits at ξ = x₀/√q_i, which moves with the sample's variance q_i:

* a kink at 0, and the complement of the kink intervals, use nodes shared by all samples;
* a kink at x₀ ≠ 0 can only fall in [x₀/√q_max, x₀/√q_min]; on that (short) interval every
  sample gets its own panels, split at its own kink.

Truncation: by Cramér's inequality |He_k(ξ)|/√k! ≤ 1.09·e^{ξ²/4}, so the integrand of a
normalised Hermite coefficient is bounded by e^{−ξ²/4}; L = 14 leaves < 1e-21 for every k.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import torch

__all__ = ["GaussianRule", "gaussian_rule", "hermite_moments", "hermite_table", "scale_breaks"]

#: Half-width of the ξ-interval (see the module docstring for why 14).
HALF_WIDTH = 14.0
#: Panel width and Gauss–Legendre order: 20 nodes per 0.5 resolve He_k up to k ≈ 250.
PANEL = 0.5
ORDER = 20


@dataclasses.dataclass(frozen=True)
class GaussianRule:
    r"""`E[g(ξ)] ≈ Σ_j w_j g(ξ_j) + Σ_j w_ij g(ξ_ij)` for each sample i.

    Attributes:
      xi: shared nodes, shape (Q0,).
      w: their weights (Gauss–Legendre weight × standard normal density), shape (Q0,).
      xi_local: per-sample nodes inside kink intervals, shape (n, Q1) (Q1 may be 0).
      w_local: their weights, shape (n, Q1).
    """

    xi: torch.Tensor
    w: torch.Tensor
    xi_local: torch.Tensor
    w_local: torch.Tensor


def _gl(order: int) -> tuple[np.ndarray, np.ndarray]:
    x, w = np.polynomial.legendre.leggauss(order)
    return x, w


def _panels(lo: float, hi: float, h: float) -> np.ndarray:
    k = max(1, math.ceil((hi - lo) / h - 1e-12))
    return np.linspace(lo, hi, k + 1)


def _pdf(x: np.ndarray) -> np.ndarray:
    return np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


#: q above which φ(√q ξ) changes on a scale in ξ (~1/√q) finer than the panels resolve
GRADED_FROM = 16.0


def scale_breaks(q_max: float, panel: float = PANEL) -> tuple[float, ...]:
    """Split points in x (not ξ) that grade the panels towards x = 0 for large variances.

    An activation that is not piecewise linear changes on a scale of order 1 in x (tanh's poles
    at ±iπ/2, GELU's and SiLU's bend), that is 1/√q in ξ: for q ≫ 1 a panel of width 0.5 in ξ
    no longer resolves it (tanh at q = 3000: g(q) off by 4e-7).  Splitting at x = 0, ±½, ±1, ±2,
    ±4, … while 2^k < panel·√q_max puts the panels on [2^k, 2^{k+1}] in x, where the nearest
    singularity is at least a panel's half-width away, up to where the uniform panels take
    over (the nested quadrature of :class:`._bivariate.Conditional` splits there, pair by
    pair; :func:`gaussian_rule` grades its shared panels the same way in ξ).  Empty for
    q_max ≤ 16 (the rule is then the uniform one).
    """
    if not q_max > GRADED_FROM:
        return ()
    top = panel * math.sqrt(q_max)
    out = [0.0]
    k = -1
    while 2.0**k < top:
        out += [2.0**k, -(2.0**k)]
        k += 1
    return tuple(sorted(out))


def gaussian_rule(
    q: torch.Tensor,
    kinks: tuple[float, ...],
    *,
    graded: bool = False,
    half_width: float = HALF_WIDTH,
    panel: float = PANEL,
    order: int = ORDER,
) -> GaussianRule:
    """The rule for variances ``q`` (shape (n,), > 0) and φ's kinks (in x, not ξ).

    ``graded``: for q_max > 16, also split at ξ = 0, ±½/√q_max, ±1/√q_max, … up to ``panel``
    (φ not piecewise linear: its shape has a scale in x, which large q compresses in ξ; see
    :func:`scale_breaks`).

    Accuracy: exponential in ``order`` on each analytic piece; ~1e-15 relative for the
    activations of the library at the defaults (tested against mpmath).
    """
    dev, dt = q.device, q.dtype
    sq = torch.sqrt(q.detach().to("cpu", torch.float64)).numpy()
    lo_s, hi_s = float(sq.min()), float(sq.max())
    fixed: set[float] = set()
    if graded and scale_breaks(hi_s * hi_s, panel):
        # Shared panels graded geometrically towards ξ = 0, from ½/√q_max up to the uniform
        # panels: in x = √q_i ξ every sample then sees panels [a, 2a] (a ≤ ½ innermost), which
        # resolve φ's bend whatever its q, with no per-sample nodes (scale_breaks' reasoning).
        edge = 0.5 / hi_s
        while edge < panel:
            fixed |= {edge, -edge}
            edge *= 2.0
        fixed.add(0.0)
    intervals: list[list[float]] = []
    for k in kinks:
        if k == 0.0:
            fixed.add(0.0)
            continue
        a, b = sorted((k / hi_s, k / lo_s))
        if b < -half_width or a > half_width:
            continue
        a, b = max(a, -half_width), min(b, half_width)
        if b - a <= 1e-12 * (1 + abs(a)):
            fixed.add(a)
            continue
        intervals.append([a, b])
    intervals.sort()
    merged: list[list[float]] = []
    for a, b in intervals:
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    # Shared segments: [−L, L] minus the merged intervals, also split at fixed kinks.
    cuts = sorted({-half_width, half_width, *[f for f in fixed if abs(f) < half_width]})
    segments: list[tuple[float, float]] = []
    for a, b in zip(cuts[:-1], cuts[1:], strict=True):
        start = a
        for ia, ib in merged:
            if ib <= start or ia >= b:
                continue
            if ia > start:
                segments.append((start, ia))
            start = max(start, ib)
        if start < b:
            segments.append((start, b))
    gx, gw = _gl(order)
    xs, ws = [], []
    for a, b in segments:
        edges = _panels(a, b, panel)
        for pa, pb in zip(edges[:-1], edges[1:], strict=True):
            half = 0.5 * (pb - pa)
            xs.append(0.5 * (pa + pb) + half * gx)
            ws.append(half * gw)
    xi = np.concatenate(xs) if xs else np.zeros(0)
    w = (np.concatenate(ws) if ws else np.zeros(0)) * _pdf(xi)
    # Per-sample panels inside each kink interval, split at that sample's kinks.
    n = q.shape[0]
    loc_x: list[np.ndarray] = []
    loc_w: list[np.ndarray] = []
    for ia, ib in merged:
        inside = sorted(
            {k for k in kinks if k != 0.0 and min(k / hi_s, k / lo_s) <= ib}
            & {k for k in kinks if max(k / hi_s, k / lo_s) >= ia}
        )
        pos = np.stack(
            [np.full(n, ia)] + [np.clip(k / sq, ia, ib) for k in inside] + [np.full(n, ib)], axis=1
        )
        pos.sort(axis=1)
        for j in range(pos.shape[1] - 1):
            pa, pb = pos[:, j], pos[:, j + 1]
            count = max(1, math.ceil(float((pb - pa).max()) / panel - 1e-12))
            for c in range(count):
                a = pa + (pb - pa) * (c / count)
                b = pa + (pb - pa) * ((c + 1) / count)
                half = 0.5 * (b - a)
                loc_x.append(0.5 * (a + b)[:, None] + half[:, None] * gx[None, :])
                loc_w.append(half[:, None] * gw[None, :])
    if loc_x:
        xl = np.concatenate(loc_x, axis=1)
        wl = np.concatenate(loc_w, axis=1) * _pdf(xl)
    else:
        xl = np.zeros((n, 0))
        wl = np.zeros((n, 0))

    def t(a: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(a, dtype=dt, device=dev)

    return GaussianRule(t(xi), t(w), t(xl), t(wl))


def hermite_table(xi: torch.Tensor, degree: int) -> torch.Tensor:
    r"""Normalised probabilists' Hermite polynomials `h_k(ξ) = He_k(ξ)/√k!`, k = 0..degree.

    Returns shape ``xi.shape + (degree + 1,)`` (a view of a table stored degree first, so that
    each step of the recurrence writes contiguous memory).  Forward three-term recurrence
    `h_{k+1} = (ξ h_k − √k h_{k−1})/√(k+1)`, stable for the dominant solution.
    """
    out = torch.empty((degree + 1,) + xi.shape, dtype=xi.dtype, device=xi.device)
    out[0] = 1.0
    if degree >= 1:
        out[1] = xi
    for k in range(1, degree):
        torch.mul(xi, out[k], out=out[k + 1])
        out[k + 1].sub_(out[k - 1], alpha=math.sqrt(k)).div_(math.sqrt(k + 1))
    return out.movedim(0, -1)


def hermite_moments(xi: torch.Tensor, fw: torch.Tensor, degree: int) -> torch.Tensor:
    r"""`Σ_q fw[i, q] h_k(xi[i, q])` for k = 0..degree: shape (n, degree + 1).

    The same recurrence as :func:`hermite_table`, with each h_k summed against ``fw`` as soon
    as it is formed: two (n, Q) arrays alive instead of the (n, Q, degree + 1) table.
    """
    out = torch.empty((degree + 1, xi.shape[0]), dtype=xi.dtype, device=xi.device)
    prev = torch.ones_like(xi)
    out[0] = fw.sum(1)
    if degree >= 1:
        cur = xi.clone()
        out[1] = (fw * cur).sum(1)
        for k in range(1, degree):
            nxt = torch.mul(xi, cur).sub_(prev, alpha=math.sqrt(k)).div_(math.sqrt(k + 1))
            prev, cur = cur, nxt
            torch.sum(fw * cur, dim=1, out=out[k + 1])
    return out.T

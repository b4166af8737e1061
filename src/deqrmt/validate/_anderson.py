r"""Fixed-point iteration x = f(x) for a batch of columns: Anderson acceleration and plain.

The DEQ map acts on each sample (column of the m × n state) separately, so Anderson's
least-squares problem is solved per column (as torchdeq does per batch element): with the last
k residuals g_j = f(x_j) − x_j of a column,

    min_α ‖Σ_j α_j g_j‖²  s.t. Σ_j α_j = 1,      x⁺ = Σ_j α_j f(x_j)

(Walker & Ni 2011, type II, undamped).  The k × k Gram matrices are updated by one new row per
iteration, O(k·m·n), negligible next to the m × m × n matmul inside f.  The constrained problem
is solved through its bordered system, Tikhonov-regularised relative to its trace.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import torch

__all__ = ["FixedPoint", "anderson", "picard"]


@dataclasses.dataclass(frozen=True)
class FixedPoint:
    """Result of a fixed-point solve.

    Attributes:
      x: the last iterate f(x_k) (shape of x0).
      residuals: per iteration, max over columns of ‖f(x)−x‖/‖f(x)‖.
      iterations: number of evaluations of f.
      converged: whether the last residual is ≤ tol.
    """

    x: torch.Tensor
    residuals: tuple[float, ...]
    iterations: int
    converged: bool


def _residual(fx: torch.Tensor, x: torch.Tensor) -> float:
    num = torch.linalg.vector_norm(fx - x, dim=0)
    den = torch.linalg.vector_norm(fx, dim=0).clamp_min(torch.finfo(fx.dtype).tiny)
    return float((num / den).max())


def picard(
    f: Callable[[torch.Tensor], torch.Tensor], x0: torch.Tensor, *, tol: float, max_iter: int
) -> FixedPoint:
    """Plain iteration x ← f(x) until the column-wise relative residual is ≤ ``tol``."""
    x, res = x0, []
    for k in range(1, max_iter + 1):
        fx = f(x)
        res.append(_residual(fx, x))
        x = fx
        if res[-1] <= tol:
            return FixedPoint(x, tuple(res), k, True)
    return FixedPoint(x, tuple(res), max_iter, False)


def anderson(
    f: Callable[[torch.Tensor], torch.Tensor],
    x0: torch.Tensor,
    *,
    tol: float,
    max_iter: int,
    memory: int = 5,
    reg: float = 1e-12,
) -> FixedPoint:
    """Anderson-accelerated iteration on the columns of ``x0`` (shape (m, n)).

    Args:
      tol: stop when every column has ‖f(x)−x‖ ≤ tol·‖f(x)‖.
      memory: number of past iterates mixed (1 is plain iteration).
      reg: Tikhonov weight relative to the mean diagonal of each column's Gram matrix.
    """
    if memory <= 1:
        return picard(f, x0, tol=tol, max_iter=max_iter)
    m, n = x0.shape
    F = torch.zeros((memory, m, n), dtype=x0.dtype, device=x0.device)
    G = torch.zeros_like(F)
    H = torch.zeros((n, memory, memory), dtype=x0.dtype, device=x0.device)
    x, res = x0, []
    fx = f(x)
    for k in range(1, max_iter + 1):
        g = fx - x
        res.append(_residual(fx, x))
        if res[-1] <= tol:
            return FixedPoint(fx, tuple(res), k, True)
        slot = (k - 1) % memory
        F[slot], G[slot] = fx, g
        used = min(k, memory)
        row = torch.einsum("mn,jmn->nj", g, G[:used])
        H[:, slot, :used] = row
        H[:, :used, slot] = row
        Hk = H[:, :used, :used]
        lam = reg * torch.diagonal(Hk, dim1=1, dim2=2).mean(dim=1).clamp_min(torch.finfo(x0.dtype).tiny)
        A = torch.zeros((n, used + 1, used + 1), dtype=x0.dtype, device=x0.device)
        A[:, 0, 1:] = 1.0
        A[:, 1:, 0] = 1.0
        A[:, 1:, 1:] = Hk + lam[:, None, None] * torch.eye(used, dtype=x0.dtype, device=x0.device)
        rhs = torch.zeros((n, used + 1, 1), dtype=x0.dtype, device=x0.device)
        rhs[:, 0] = 1.0
        alpha = torch.linalg.solve(A, rhs)[:, 1:, 0]  # (n, used)
        x = torch.einsum("nj,jmn->mn", alpha, F[:used])
        fx = f(x)
    g = fx - x
    res.append(_residual(fx, x))
    return FixedPoint(fx, tuple(res), max_iter + 1, res[-1] <= tol)

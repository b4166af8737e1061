r"""Fixed-point iteration x = f(x) for a batch of rows: Anderson acceleration and plain.

The DEQ map acts on each sample separately; the state is stored as n × m (one row per sample),
so that each sample's history is contiguous and Anderson's per-sample Gram matrices and mixing
are batched matmuls (``bmm``) instead of strided reductions (3–10× faster here).  Anderson's
least-squares problem is solved per row (as torchdeq does per batch element): with the last
k residuals g_j = f(x_j) − x_j of a row,

    min_α ‖Σ_j α_j g_j‖²  s.t. Σ_j α_j = 1,      x⁺ = Σ_j α_j f(x_j)

(Walker & Ni 2011, type II, undamped).  The k × k Gram matrices are updated by one new row per
iteration, O(k·m·n), negligible next to the m × m × n matmul inside f.  The constrained problem
is solved through its bordered system, Tikhonov-regularised relative to its trace.

When it helps: Anderson is a Krylov-like method, and on a linear map its residual after k
steps is governed by the best degree-k polynomial on the Jacobian's spectrum.  The DEQ
Jacobian (σ_a/√m)·diag(φ'(h))·A has, by the circular law, a spectrum filling a disk of radius
≈ σ_a·E[φ'²]^{1/2} around 0, where z^k is already optimal: Anderson then needs as many
iterations as plain iteration (measured in ``benchmarks/deq_solve.py``), while on maps with a
real spectrum it gains several-fold.  Plain iteration is therefore the default of the sweep.
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
      residuals: per iteration, max over rows of ‖f(x)−x‖/‖f(x)‖.
      iterations: number of evaluations of f.
      converged: whether the last residual is ≤ tol.
    """

    x: torch.Tensor
    residuals: tuple[float, ...]
    iterations: int
    converged: bool


def _residual(fx: torch.Tensor, x: torch.Tensor) -> float:
    num = torch.linalg.vector_norm(fx - x, dim=1)
    den = torch.linalg.vector_norm(fx, dim=1).clamp_min(torch.finfo(fx.dtype).tiny)
    return float((num / den).max())


def picard(
    f: Callable[[torch.Tensor], torch.Tensor], x0: torch.Tensor, *, tol: float, max_iter: int
) -> FixedPoint:
    """Plain iteration x ← f(x) until the row-wise relative residual is ≤ ``tol``."""
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
    """Anderson-accelerated iteration on the rows of ``x0`` (shape (n, d)).

    Args:
      tol: stop when every row has ‖f(x)−x‖ ≤ tol·‖f(x)‖.
      memory: number of past iterates mixed (1 is plain iteration).
      reg: Tikhonov weight relative to the mean diagonal of each row's Gram matrix.
    """
    if memory <= 1:
        return picard(f, x0, tol=tol, max_iter=max_iter)
    n, d = x0.shape
    dt, dev = x0.dtype, x0.device
    F = torch.zeros((n, memory, d), dtype=dt, device=dev)
    G = torch.zeros_like(F)
    H = torch.zeros((n, memory, memory), dtype=dt, device=dev)
    eye = torch.eye(memory, dtype=dt, device=dev)
    x, res = x0, []
    fx = f(x)
    for k in range(1, max_iter + 1):
        g = fx - x
        res.append(_residual(fx, x))
        if res[-1] <= tol:
            return FixedPoint(fx, tuple(res), k, True)
        slot = (k - 1) % memory
        F[:, slot], G[:, slot] = fx, g
        used = min(k, memory)
        row = torch.bmm(G[:, :used], g.unsqueeze(2)).squeeze(2)  # (n, used)
        H[:, slot, :used] = row
        H[:, :used, slot] = row
        Hk = H[:, :used, :used]
        tiny = torch.finfo(x0.dtype).tiny
        lam = reg * torch.diagonal(Hk, dim1=1, dim2=2).mean(dim=1).clamp_min(tiny)
        A = torch.zeros((n, used + 1, used + 1), dtype=dt, device=dev)
        A[:, 0, 1:] = 1.0
        A[:, 1:, 0] = 1.0
        A[:, 1:, 1:] = Hk + lam[:, None, None] * eye[:used, :used]
        rhs = torch.zeros((n, used + 1, 1), dtype=dt, device=dev)
        rhs[:, 0] = 1.0
        alpha = torch.linalg.solve(A, rhs)[:, 1:]  # (n, used, 1)
        x = torch.bmm(alpha.transpose(1, 2), F[:, :used]).squeeze(1)
        fx = f(x)
    res.append(_residual(fx, x))
    return FixedPoint(fx, tuple(res), max_iter + 1, res[-1] <= tol)

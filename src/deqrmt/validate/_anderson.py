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
≈ σ_a·E[φ'²]^{1/2} around 0, where z^k is already optimal for a linear map: what Anderson
gains comes from the map's nonlinearity and grows as the radius nears 1.  Measured
(``benchmarks/deq_solve.py --anderson-grid``, relu centred at 0.1, n = 128, m = 512, tol
1e-10; evaluation counts, which the load does not change):

* σ_a² = 0.2 and 0.9 (radius ≈ 0.3, 0.67): plain 23 and 73 evaluations; Anderson 22 and 62–71
  for every memory 2–10 and Tikhonov weight 1e-12–1e-4 (1.03–1.18× fewer), each costing a
  (k × m × n) update on top of the matmul: no time won.
* σ_a² = 1.6 (radius ≈ 0.9, near the edge): plain 993; memory 2: 963, memory 3–5: 682–718,
  memory 10: 354–419 (2.4–2.8× fewer).  The regularisation weight moves the count by up to
  18 % with no consistent direction (memory 10: 354, 419, 366 at 1e-12, 1e-8, 1e-4; at
  σ_a² = 0.2 memory 10 with 1e-4 needs 31, worse than plain).  TorchDEQ's damped Anderson (its
  λ = 1e-4 absolute, m = 6) needs 1601 (τ = 1), 1812 (τ = 0.8), 2892 (τ = 0.5): damping only
  slows it here.
* σ_a² = 1.9: not a contraction (plain and Anderson stall at residual 0.03–0.5).

Hence the defaults: plain iteration for ``solve_deq`` and sweeps (the paper's operating points
are far inside contraction, where Anderson loses), and ``memory=10``, ``reg=1e-12``, undamped
for :func:`anderson`, the setting that wins near the edge of contraction.  Its seconds per
evaluation exceed plain iteration's at small m (the bordered solves and the k × m × n
updates), so the time gain needs m large enough for the matmul to dominate: run the benchmark
at the size you care about, on an idle machine.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import torch

#: past iterates Anderson mixes by default: what gains near the edge of contraction (above)
ANDERSON_MEMORY = 10

__all__ = ["ANDERSON_MEMORY", "FixedPoint", "anderson", "picard"]


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
    memory: int = ANDERSON_MEMORY,
    reg: float = 1e-12,
) -> FixedPoint:
    """Anderson-accelerated iteration on the rows of ``x0`` (shape (n, d)).

    Args:
      tol: stop when every row has ‖f(x)−x‖ ≤ tol·‖f(x)‖.
      memory: number of past iterates mixed (1 is plain iteration); 10 is what gains near the
        edge of contraction (module docstring).
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

r"""The finite-width DEQ z* = φ_c(σ_a A z* + σ_b B x)/√m (slides, eq. (3)), batched over samples.

All n samples are solved at once, one m × m × n matmul per iteration.  Internally the state is
n × m (a row per sample, see :mod:`._anderson`); :class:`DeqSolution` exposes Z and H as the
m × n matrices of the slides (transposed views).
The weights A (m × m), B (m × p), a (m) have i.i.d. N(0, 1) entries (slides, Assumption (1));
they are drawn on the CPU from a seeded generator and then moved, so a seed gives the same
network on every device and in float32 and float64.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import torch

from .._errors import InvalidArgument, NoConvergence
from ._anderson import ANDERSON_MEMORY, FixedPoint, anderson, picard
from ._pointwise import CenteredActivation

__all__ = ["DeqWeights", "DeqSolution", "solve_deq", "default_tol"]


def default_tol(dtype: torch.dtype) -> float:
    """Column-wise relative residual to solve to: 1e-11 in float64, 1e-5 in float32."""
    return 1e-11 if dtype == torch.float64 else 1e-5


@dataclasses.dataclass(frozen=True)
class DeqWeights:
    """A, B, a and the scales σ_a, σ_b of one random DEQ."""

    A: torch.Tensor
    B: torch.Tensor
    a: torch.Tensor
    sigma_a: float
    sigma_b: float

    @property
    def m(self) -> int:
        return int(self.A.shape[0])

    @classmethod
    def draw(
        cls,
        m: int,
        p: int,
        *,
        sigma_a2: float,
        sigma_b2: float,
        seed: int,
        device: str | torch.device = "cpu",
        dtype: torch.dtype = torch.float64,
    ) -> DeqWeights:
        """i.i.d. N(0, 1) weights from ``torch.Generator().manual_seed(seed)``."""
        if m < 1 or p < 1:
            raise InvalidArgument(f"need m ≥ 1 and p ≥ 1, got m={m}, p={p}.")
        gen = torch.Generator().manual_seed(int(seed))
        A = torch.randn((m, m), generator=gen, dtype=torch.float64)
        B = torch.randn((m, p), generator=gen, dtype=torch.float64)
        a = torch.randn((m,), generator=gen, dtype=torch.float64)
        return cls(
            A.to(device, dtype),
            B.to(device, dtype),
            a.to(device, dtype),
            math.sqrt(sigma_a2),
            math.sqrt(sigma_b2),
        )


@dataclasses.dataclass(frozen=True)
class DeqSolution:
    """The equilibrium Z* (m × n), its pre-activations H* = σ_a A Z* + σ_b B X, and the trace.

    ``residuals[k]`` is the largest relative residual ‖f(z) − z‖/‖f(z)‖ over samples after
    evaluation k + 1 of the map.
    """

    Z: torch.Tensor
    H: torch.Tensor
    residuals: tuple[float, ...]
    iterations: int


def solve_deq(
    weights: DeqWeights,
    act: CenteredActivation,
    X: np.ndarray | torch.Tensor,
    *,
    tol: float | None = None,
    max_iter: int = 300,
    memory: int = ANDERSON_MEMORY,
    method: str = "picard",
) -> DeqSolution:
    """Solve z_i = φ_c(σ_a A z_i + σ_b B x_i)/√m for all columns x_i of ``X`` (p × n).

    Starts from z⁰ = 0 (so the iteration reaches the attracting fixed point that the
    coefficients describe) and stops when every sample's relative residual is ≤ ``tol``.
    ``method`` is "picard" (plain iteration, the default: as fast as Anderson here, see
    :mod:`._anderson`) or "anderson" (with ``memory`` past iterates).

    Raises:
      NoConvergence: after ``max_iter`` evaluations, with the residual trace's tail.
    """
    A, B = weights.A, weights.B
    Xt = torch.as_tensor(X, dtype=A.dtype, device=A.device)
    if Xt.ndim != 2 or Xt.shape[0] != B.shape[1]:
        raise InvalidArgument(
            f"X must be p × n with p = {B.shape[1]}, got shape {tuple(Xt.shape)}."
        )
    tol = default_tol(A.dtype) if tol is None else tol
    inject = weights.sigma_b * (Xt.T @ B.T)  # n × m
    scale = 1.0 / math.sqrt(weights.m)

    def f(z: torch.Tensor) -> torch.Tensor:  # z: n × m, row i = z_iᵀ
        return act.phi(torch.addmm(inject, z, A.T, alpha=weights.sigma_a)).mul_(scale)

    z0 = torch.zeros((Xt.shape[1], weights.m), dtype=A.dtype, device=A.device)
    if method == "anderson":
        fp: FixedPoint = anderson(f, z0, tol=tol, max_iter=max_iter, memory=memory)
    elif method == "picard":
        fp = picard(f, z0, tol=tol, max_iter=max_iter)
    else:
        raise InvalidArgument(f"method must be 'anderson' or 'picard', got {method!r}.")
    if not fp.converged:
        tail = ", ".join(f"{r:.2e}" for r in fp.residuals[-5:])
        raise NoConvergence(
            f"the DEQ fixed point did not converge in {max_iter} iterations (last residuals "
            f"{tail}; tol {tol:g}). Lower sigma_a2 or raise max_iter."
        )
    H = torch.addmm(inject, fp.x, A.T, alpha=weights.sigma_a)
    return DeqSolution(fp.x.T, H.T, fp.residuals, fp.iterations)

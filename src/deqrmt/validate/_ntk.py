r"""Empirical CK and NTK of a finite-width DEQ, the NTK by implicit differentiation.

f(x) = aᵀz*(x) (slides, eq. (1)).  The NTK is the gradient inner product over the parameter
set θ = (a, A), with B fixed: this is the set whose infinite-width limit is the slides'
`K* = G*/(1 − Ġ*)` (training B as well would add σ_b² XᵀX ∘ E[φ'φ']/(1 − Ġ*)).

* ∂f/∂a = z*, so the a-part of the Gram matrix is the CK `ZᵀZ`.
* For A: z* = F(z*, A) with `J_i = ∂F/∂z = (σ_a/√m) diag(φ_c'(h_i)) A`.  By the implicit
  function theorem `∂f(x_i)/∂A = (σ_a/√m) (φ_c'(h_i) ∘ w_i) z_iᵀ` with the adjoint
  `w_i = (I − J_iᵀ)^{-1} a`, i.e. the fixed point `W = a 1ᵀ + (σ_a/√m) Aᵀ(φ_c'(H) ∘ W)`,
  solved for all samples at once (one m × m × n matmul per iteration, no per-sample Jacobian).
  The Gram matrix of these rank-one gradients is `(σ_a²/m)(u_iᵀu_j)(z_iᵀz_j)`, u_i = φ_c'(h_i)∘w_i.

So `NTK = ZᵀZ + (σ_a²/m)(UᵀU) ∘ (ZᵀZ)`.  In the limit `(1/m)w_iᵀw_j → 1/(1 − Ġ_ij)` and
`(σ_a²/m)u_iᵀu_j → Ġ_ij/(1 − Ġ_ij)`, which gives `G(1 + Ġ/(1 − Ġ)) = G/(1 − Ġ) = K*`.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import torch

from .._errors import NoConvergence
from ._anderson import anderson
from ._deq import DeqSolution, DeqWeights, default_tol, solve_deq
from ._pointwise import CenteredActivation

__all__ = ["EmpiricalKernels", "empirical_kernels", "ntk_from_solution"]


@dataclasses.dataclass(frozen=True)
class EmpiricalKernels:
    """CK = ZᵀZ and NTK (float64 numpy, n × n) of one network, with the solvers' traces."""

    ck: np.ndarray
    ntk: np.ndarray
    forward_residuals: tuple[float, ...]
    adjoint_residuals: tuple[float, ...]


def ntk_from_solution(
    weights: DeqWeights,
    act: CenteredActivation,
    sol: DeqSolution,
    *,
    tol: float | None = None,
    max_iter: int = 300,
    memory: int = 5,
) -> tuple[torch.Tensor, torch.Tensor, tuple[float, ...]]:
    """(CK, NTK, adjoint residual trace) as tensors on the weights' device and dtype."""
    A, a = weights.A, weights.a
    tol = default_tol(A.dtype) if tol is None else tol
    d = act.dphi(sol.H)
    c = weights.sigma_a / math.sqrt(weights.m)
    base = a[:, None].expand_as(sol.Z)

    def adjoint(w: torch.Tensor) -> torch.Tensor:
        return torch.addmm(base, A.T, d * w, alpha=c)

    fp = anderson(adjoint, base.clone(), tol=tol, max_iter=max_iter, memory=memory)
    if not fp.converged:
        raise NoConvergence(
            f"the adjoint fixed point W = a1ᵀ + Jᵀ W did not converge in {max_iter} iterations "
            f"(last residual {fp.residuals[-1]:.2e}); lower sigma_a2."
        )
    U = d * fp.x
    ck = sol.Z.T @ sol.Z
    ntk = ck + (c * c) * (U.T @ U) * ck
    return ck, ntk, fp.residuals


def empirical_kernels(
    weights: DeqWeights,
    act: CenteredActivation,
    X: np.ndarray | torch.Tensor,
    *,
    tol: float | None = None,
    max_iter: int = 300,
    memory: int = 5,
) -> EmpiricalKernels:
    """Solve the DEQ and its adjoint; return the CK and the (a, A)-NTK in float64 numpy."""
    sol = solve_deq(weights, act, X, tol=tol, max_iter=max_iter, memory=memory)
    ck, ntk, adj = ntk_from_solution(weights, act, sol, tol=tol, max_iter=max_iter, memory=memory)
    return EmpiricalKernels(
        ck=ck.to("cpu", torch.float64).numpy(),
        ntk=ntk.to("cpu", torch.float64).numpy(),
        forward_residuals=sol.residuals,
        adjoint_residuals=adj,
    )

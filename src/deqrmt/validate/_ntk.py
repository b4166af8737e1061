r"""Empirical CK and NTK of a finite-width DEQ, the NTK by implicit differentiation.

f(x) = aᵀz*(x) (slides, eq. (1)).  The NTK is the gradient inner product over a parameter
set θ ⊆ {a, A, B}; the default θ = (a, A), with B fixed, is the set whose infinite-width limit
is the slides' `K* = G*/(1 − Ġ*)`.

* ∂f/∂a = z*, so the a-part of the Gram matrix is the CK `ZᵀZ`.
* For A: z* = F(z*, A) with `J_i = ∂F/∂z = (σ_a/√m) diag(φ_c'(h_i)) A`.  By the implicit
  function theorem `∂f(x_i)/∂A = (σ_a/√m) (φ_c'(h_i) ∘ w_i) z_iᵀ` with the adjoint
  `w_i = (I − J_iᵀ)^{-1} a`, i.e. the fixed point `W = a 1ᵀ + (σ_a/√m) Aᵀ(φ_c'(H) ∘ W)`,
  solved for all samples at once (one m × m × n matmul per iteration, no per-sample Jacobian).
  The Gram matrix of these rank-one gradients is `(σ_a²/m)(u_iᵀu_j)(z_iᵀz_j)`, u_i = φ_c'(h_i)∘w_i.

* For B likewise `∂f(x_i)/∂B = (σ_b/√m) u_i x_iᵀ`, with Gram `(σ_b²/m)(u_iᵀu_j)(x_iᵀx_j)`.

So `NTK = [a] ZᵀZ + [A] (σ_a²/m)(UᵀU) ∘ (ZᵀZ) + [B] (σ_b²/m)(UᵀU) ∘ (XᵀX)`.  In the limit
`(1/m)w_iᵀw_j → 1/(1 − Ġ_ij)` and `(σ_a²/m)u_iᵀu_j → Ġ_ij/(1 − Ġ_ij)`, which for (a, A)
gives `G(1 + Ġ/(1 − Ġ)) = G/(1 − Ġ) = K*` (see :func:`._exact.ntk_limit` for any set).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import torch

from .._errors import InvalidArgument, NoConvergence
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
    memory: int = 1,
    trainable: tuple[str, ...] = ("a", "A"),
    X: np.ndarray | torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, tuple[float, ...]]:
    """(CK, NTK, adjoint residual trace) as tensors on the weights' device and dtype.

    ``trainable`` ⊆ {a, A, B} is the NTK's parameter set (B needs the data ``X``).  ``memory``
    > 1 solves the adjoint with Anderson acceleration (no faster here; see :mod:`._anderson`).
    """
    _check_trainable(trainable)
    A, a = weights.A, weights.a
    tol = default_tol(A.dtype) if tol is None else tol
    zt = sol.Z.T  # n × m, rows are samples (the solver's layout)
    d = act.dphi(sol.H.T)
    c = weights.sigma_a / math.sqrt(weights.m)
    base = a[None, :].expand_as(zt)

    def adjoint(w: torch.Tensor) -> torch.Tensor:  # row i: w_iᵀ = aᵀ + c (φ'(h_i)∘w_i)ᵀ A
        return torch.addmm(base, d * w, A, alpha=c)

    fp = anderson(adjoint, base.clone(), tol=tol, max_iter=max_iter, memory=memory)
    if not fp.converged:
        raise NoConvergence(
            f"the adjoint fixed point W = a1ᵀ + Jᵀ W did not converge in {max_iter} iterations "
            f"(last residual {fp.residuals[-1]:.2e}); lower sigma_a2."
        )
    U = d * fp.x  # n × m
    ck = zt @ zt.T
    uu = (U @ U.T) / weights.m
    ntk = ck.clone() if "a" in trainable else torch.zeros_like(ck)
    if "A" in trainable:
        ntk += weights.sigma_a**2 * uu * ck
    if "B" in trainable:
        if X is None:
            raise InvalidArgument("trainable B needs the data X.")
        Xt = torch.as_tensor(X, dtype=A.dtype, device=A.device)
        ntk += weights.sigma_b**2 * uu * (Xt.T @ Xt)
    return ck, ntk, fp.residuals


def _check_trainable(trainable: tuple[str, ...]) -> None:
    if not trainable or not set(trainable) <= {"a", "A", "B"}:
        raise InvalidArgument(
            f"trainable must be a non-empty subset of a, A, B; got {trainable!r}."
        )


def empirical_kernels(
    weights: DeqWeights,
    act: CenteredActivation,
    X: np.ndarray | torch.Tensor,
    *,
    tol: float | None = None,
    max_iter: int = 300,
    memory: int = 1,
    trainable: tuple[str, ...] = ("a", "A"),
) -> EmpiricalKernels:
    """Solve the DEQ and its adjoint; return the CK and the NTK over ``trainable`` (float64 numpy)."""
    sol = solve_deq(
        weights, act, X, tol=tol, max_iter=max_iter, memory=memory,
        method="anderson" if memory > 1 else "picard",
    )  # fmt: skip
    ck, ntk, adj = ntk_from_solution(
        weights, act, sol, tol=tol, max_iter=max_iter, memory=memory, trainable=trainable, X=X
    )
    return EmpiricalKernels(
        ck=ck.to("cpu", torch.float64).numpy(),
        ntk=ntk.to("cpu", torch.float64).numpy(),
        forward_residuals=sol.residuals,
        adjoint_residuals=adj,
    )

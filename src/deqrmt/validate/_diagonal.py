r"""The diagonal of the exact kernels: the univariate fixed point q_i = σ_a² g(q_i) + σ_b²‖x_i‖².

Slides, "Implicit CK and NTK": `G*_ii` depends only on `Λ_ii = σ_a² G_ii + σ_b²‖x_i‖²`, so the
diagonal is n scalar equations `q = σ_a² g(q) + σ_b²‖x_i‖²` with `g(q) = E[φ_c(√q ξ)²]`, solved
together by Newton (step 1 of :mod:`._exact`).  Its last pass of φ over the samples' quadrature
nodes is also the per-sample tables' pass (:mod:`._moments`).
"""

from __future__ import annotations

import numpy as np
import torch

from .._errors import ContractionError, NoConvergence
from ._degenerate import degenerate_samples, q_floor
from ._moments import PhiValues, diagonal_moments, phi_values
from ._pointwise import CenteredActivation

__all__ = ["diagonal_kernel"]

#: samples from which the diagonal solve first interpolates its starting point (see below):
#: 17 put the start within the tolerance on the paper's data (tanh, gelu), so that the check
#: is the only pass; 9 left one Newton step for tanh
_DIAGONAL_NODES = 17


def _solve_diagonal(
    act: CenteredActivation, sq_norms: torch.Tensor, sigma_a2: float, sigma_b2: float, tol: float
) -> torch.Tensor:
    """q_i = σ_a² g(q_i) + σ_b² ‖x_i‖² for every sample, by Newton's method (vectorised)."""
    return _diagonal_fixed_point(act, sq_norms, sigma_a2, sigma_b2, tol)[0]


def _diagonal_fixed_point(
    act: CenteredActivation, sq_norms: torch.Tensor, sigma_a2: float, sigma_b2: float, tol: float
) -> tuple[torch.Tensor, PhiValues]:
    """(q, φ_c on q's quadrature rule): the fixed point and the last pass of φ, at q itself.

    The starting point: for many samples, the solution at a few Chebyshev points of the
    range of ‖x‖² interpolated (q is a smooth function of ‖x‖²), so that the check alone, or
    one Newton step and the check, follow (each a pass of φ over n × ~1100 nodes) instead of
    three and the check;
    for few samples, G_ii ≈ c² (= φ_c(0)² when φ(0) = 0).  Either way the same stopping test
    decides, so the start changes only the work.  The iterate returned is the one the test
    was evaluated at (its error is about the step, ≤ ``tol``·max q), so that the per-sample
    tables reuse that pass of φ instead of making another.
    """
    floor = q_floor(sq_norms, sigma_b2)
    q = torch.maximum(_diagonal_start(act, sq_norms, sigma_a2, sigma_b2, tol), floor)
    for _ in range(100):
        values = phi_values(act, q)
        g, dg, _ = diagonal_moments(act, q, derivative=False, values=values)
        r = q - sigma_a2 * g - sigma_b2 * sq_norms
        slope = 1 - sigma_a2 * dg
        if bool((slope <= 0).any()):
            raise ContractionError(
                f"the diagonal kernel map is not a contraction (σ_a²·g'(q) ≥ 1 at "
                f"q = {float(q[slope <= 0][0]):.4g}); lower sigma_a2."
            )
        new = torch.maximum(q - r / slope, floor)
        # The step taken, not the one proposed: a sample of norm 0 (q* = 0 for φ_c(0) = 0)
        # sits on the floor, where the proposed step never shrinks below the floor itself.
        step = new - q
        if float(step.abs().max()) <= tol * float(q.max()):
            return q, values
        q = new
    raise NoConvergence("the diagonal fixed point q = σ_a² g(q) + σ_b²‖x‖² did not converge.")


def _diagonal_start(
    act: CenteredActivation, sq_norms: torch.Tensor, sigma_a2: float, sigma_b2: float, tol: float
) -> torch.Tensor:
    n = int(sq_norms.shape[0])
    if n > 4 * _DIAGONAL_NODES:
        lo, hi = float(sq_norms.min()), float(sq_norms.max())
        if hi - lo <= 1e-12 * hi:
            # one norm (data on a sphere): solve it once
            one = _solve_diagonal(act, sq_norms[:1], sigma_a2, sigma_b2, tol)
            return one.expand(n).clone()
        k = np.arange(_DIAGONAL_NODES)
        nodes = lo + (hi - lo) * 0.5 * (1 - np.cos(np.pi * k / (_DIAGONAL_NODES - 1)))
        at = torch.as_tensor(nodes, dtype=sq_norms.dtype, device=sq_norms.device)
        try:
            qs = _solve_diagonal(act, at, sigma_a2, sigma_b2, tol).cpu().numpy()
        except (ContractionError, NoConvergence):  # between samples: let the samples decide
            return _plain_start(act, sq_norms, sigma_a2, sigma_b2)
        fit = np.polynomial.chebyshev.Chebyshev.fit(nodes, qs, _DIAGONAL_NODES - 1, domain=[lo, hi])
        start = torch.as_tensor(fit(sq_norms.cpu().numpy()), device=sq_norms.device)
        return start.to(sq_norms.dtype)
    return _plain_start(act, sq_norms, sigma_a2, sigma_b2)


def _plain_start(
    act: CenteredActivation, sq_norms: torch.Tensor, sigma_a2: float, sigma_b2: float
) -> torch.Tensor:
    return sigma_b2 * sq_norms + sigma_a2 * act.center**2


def _checked_diagonal(
    g: torch.Tensor, d: torch.Tensor, sigma_a2: float
) -> tuple[np.ndarray, np.ndarray]:
    gd = sigma_a2 * d.cpu().numpy()
    if (gd >= 1).any():
        raise ContractionError(
            "Ġ* ≥ 1 on the diagonal: K* = G*/(1 − Ġ*) is undefined; lower sigma_a2."
        )
    return g.cpu().numpy(), gd


def diagonal_kernel(
    act: CenteredActivation, sq_norms: torch.Tensor, sigma_a2: float, sigma_b2: float
) -> tuple[np.ndarray, np.ndarray]:
    """(G*_ii, Ġ*_ii) for samples of squared norms ``sq_norms``: the univariate fixed point only."""
    sq_norms = sq_norms.to(torch.float64)
    q, values = _diagonal_fixed_point(act, sq_norms, sigma_a2, sigma_b2, 1e-14)
    g, _, d = diagonal_moments(act, q, values=values)
    assert d is not None
    zero = degenerate_samples(act, None, sq_norms).zero
    return _checked_diagonal(g if zero is None else g.masked_fill(zero, 0.0), d, sigma_a2)

r"""A warning when the rows' scale, not φ, decides the kernel: φ deep in its saturated limit.

φ's shape has a scale in x (tanh, GELU, SiLU, softplus bend within |x| ≲ 1–4).  A pre-activation
u = √q ξ with q = Λ_ii ≫ 1 (raw pixel rows: ‖x‖² ~ 3000) sees only φ's limits far from 0: tanh
acts as sign, GELU and softplus as ReLU, x·erf(x) as |x|, so the kernel is close to that limit's
(the arcsine kernel of sign, the arc-cosine kernel of ReLU) whatever φ's shape near 0.  This is
the data's doing and rarely what the user meant (the theory's rows have ‖x‖ ~ 1), so it is said
once per call, with the fact and the fix; the kernel is computed all the same, to the same
accuracy.  Piecewise-linear φ (ReLU, leaky ReLU) have no scale and are never warned about.
"""

from __future__ import annotations

import warnings

import torch

from .._errors import DataWarning
from ._pointwise import CenteredActivation, PiecewiseLinear

__all__ = ["SATURATED_FROM", "warn_if_saturated"]

#: the median pre-activation variance q (σ_b²‖x‖² + σ_a²G) from which φ counts as saturated:
#: the pre-activation's standard deviation is then 10× the scale of φ's bend
SATURATED_FROM = 100.0
#: where φ's limits are read off (x = ±10⁸)
_FAR = 1e8


def warn_if_saturated(
    act: CenteredActivation, q: torch.Tensor, sq_norms: torch.Tensor, sigma_b2: float
) -> bool:
    """Warn (:class:`DataWarning`) when most q_i are ≥ :data:`SATURATED_FROM`; True if it did."""
    if isinstance(act.closed_form, PiecewiseLinear) or q.numel() == 0:
        return False
    median = float(q.median())
    if not median >= SATURATED_FROM:
        return False
    far = act.phi(torch.tensor([-_FAR, _FAR], dtype=torch.float64)).tolist()
    bounded = max(abs(far[0]), abs(far[1])) < 1e-3 * _FAR
    if bounded:
        limit = (
            f"it saturates (φ(−∞), φ(+∞) = {far[0] + 0.0:.3g}, {far[1] + 0.0:.3g}) and the kernel "
            "is close to that of the step between them"
        )
    else:
        lo, hi = far[0] / -_FAR + 0.0, far[1] / _FAR + 0.0
        limit = (
            f"it acts as its piecewise-linear limit (slopes {lo:.3g} and {hi:.3g}) and the kernel "
            "is close to that limit's (ReLU-like, arc-cosine) kernel"
        )
    top = float(sq_norms.max())
    warnings.warn(
        f"rows have ‖x‖² up to {top:.4g} (median pre-activation variance {median:.4g}, "
        f"≫ 1 where {act.name} bends): {limit}; normalise the rows (e.g. X / ‖x‖, or "
        f"standardise the features and divide by √p) or pass a smaller sigma_b2 "
        f"(now {sigma_b2:g}) if that is not what you meant.",
        DataWarning,
        stacklevel=4,
    )
    return True

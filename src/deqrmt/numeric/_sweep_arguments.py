"""The arguments of a float sweep (``deq_coefficients_sweep``): σ_a² and σ_b² as floats."""

from __future__ import annotations

from numpy.typing import ArrayLike

from .. import _arguments
from .._errors import InvalidArgument

__all__ = ["MAX_SWEEP", "sweep_arguments"]


#: σ_a² values of one float sweep (``deq_coefficients_sweep``: ~1 ms each on one core)
MAX_SWEEP = 10_000


def sweep_arguments(
    sigma_a2: ArrayLike, sigma_b2: ArrayLike | None
) -> tuple[list[float], list[float] | None]:
    """A float sweep's σ_a² (one number or a non-empty 1-D sequence of finite reals, at most
    :data:`MAX_SWEEP`) and σ_b² (None, one number, or one per σ_a²) as floats, or a named
    :class:`~deqrmt.InvalidArgument`; each value is read exactly first (0.2 is 1/5)."""
    sa2 = [float(v) for v in _arguments.real_sequence(sigma_a2, "sigma_a2", hi=MAX_SWEEP)]
    if sigma_b2 is None:
        return sa2, None
    sb2 = [float(v) for v in _arguments.real_sequence(sigma_b2, "sigma_b2", hi=MAX_SWEEP)]
    if len(sb2) == 1:
        sb2 *= len(sa2)
    if len(sb2) != len(sa2):
        raise InvalidArgument(
            f"sigma_b2: {len(sb2)} values for {len(sa2)} values of sigma_a2; give one sigma_b2 "
            "for all or one per sigma_a2."
        )
    return sa2, sb2

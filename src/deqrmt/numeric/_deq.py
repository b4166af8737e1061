r"""``deq_coefficients``: the DEQ's coefficients, proven (Arb) or verified (two evaluations).

The one entry point for ICML 2024's Theorems 1–2.  It builds the problem record
(:class:`~deqrmt.numeric.DEQProblem`, validated once) and chooses the path:

* certified (:mod:`._deq_certified`, the default): every digit proven by ball arithmetic;
  an activation outside the enclosure rules falls back to the verified path, with the reason;
* verified (:mod:`._deq_verified`): the digits two evaluations agree on.

Both return a :class:`~deqrmt.numeric.DEQCoefficients` (:mod:`._deq_records`).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import Any

from .. import _arguments
from ..symbolic import Activation
from ._deq_records import DEQCoefficients
from ._deq_verified import verified
from ._problem import DEQProblem

__all__ = ["certified", "deq_coefficients"]


def deq_coefficients(
    activation: str | Activation | DEQProblem,
    sigma_a2: Any = "0.2",
    sigma_b2: Any = None,
    tau0: Any = 1,
    dps: int = 30,
    *,
    center: bool = True,
    trainable: str | Sequence[str] = ("a", "A"),
    certify: bool = True,
) -> DEQCoefficients:
    r"""Coefficients of the DEQ z = φ(σ_a A z + σ_b B x)/√m, every printed digit proven.

    Args:
      activation: library name, ``name(params)``, an expression in ``x``, or a ready
        :class:`DEQProblem` (then the other arguments are ignored).
      sigma_a2, sigma_b2, tau0: numbers — int, float (read as its shortest repr: 0.2 is 1/5),
        decimal or fraction strings, Fraction, Decimal, numpy scalars; σ_b² defaults to 1 − σ_a².
      dps: significant digits wanted.
      center: center φ at its own fixed point (default); False checks E[φ(τ*ξ)] = 0 instead.
      trainable: the parameters of f(x) = aᵀz* the NTK (β*, κ*) is taken over; the default
        (a, A) is the paper's K* = G*/(1 − Ġ*).  Any non-empty subset of (a, A, B).
      certify: prove every digit by Arb ball arithmetic (default: it is also faster); an
        activation outside the enclosure rules falls back to digits verified by two
        evaluations (``certified=False`` with the ``reason``).  False: the two evaluations only.

    Raises:
      ContractionError: σ_a² outside the region of a unique attracting fixed point.
      CenteringError: ``center=False`` and E[φ(τ*ξ)] ≠ 0.
      PrecisionLoss: fewer than 10 digits agree between the two evaluations.

    Example:
      >>> deq_coefficients("relu", dps=12)["alpha_1"]   # doctest: +SKIP
    """
    certify = _arguments.boolean(certify, "certify")
    problem = (
        activation
        if isinstance(activation, DEQProblem)
        else DEQProblem.make(
            activation, sigma_a2, sigma_b2, tau0, dps, center=center, trainable=trainable
        )
    )
    return certified(problem) if certify else verified(problem)


@functools.lru_cache(maxsize=32)
def certified(problem: DEQProblem) -> DEQCoefficients:
    """The certified path, or the verified path with the reason when a moment or a decision
    is outside what ball arithmetic proves here."""
    from ._deq_certified import certify  # Arb is loaded only when a proof is asked for
    from ._enclose import NotEnclosable

    try:
        return certify(problem)
    except NotEnclosable as e:
        return dataclasses.replace(verified(problem), reason=str(e))

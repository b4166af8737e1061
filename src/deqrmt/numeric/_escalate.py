"""Precision escalation: run a ball proof until it shows the digits asked for.

Both certified pipelines (:mod:`._deq_certified`, :mod:`._sphere_certified`) prove from the
float root of τ*² (:func:`._variance_proof.star_float`) at the bits the request needs plus a
margin; when the balls come out too wide for ``dps`` digits, the proof runs again at the
missing digits' bits and a margin more, from the midpoint of the ball it proved.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TypeVar

from flint import arb

from ._arb import bits_for_digits, workprec
from ._enclose import NotEnclosable
from ._verified import MIN_DIGITS

__all__ = ["FLOAT_BITS", "GUARD_DIGITS", "MAX_ATTEMPTS", "escalating"]

#: decimal digits carried beyond the request (cancellation in the formulas, rounding margin)
GUARD_DIGITS = 8
#: precision raises (×) before giving up on the requested digits
MAX_ATTEMPTS = 3
#: bits a float64 root from the engine's solver is trusted to (it polishes to ~1e-13)
FLOAT_BITS = 40

T = TypeVar("T")


def escalating(
    q_float: float, dps: int, attempt: Callable[[arb, int, int], tuple[T, arb, int]]
) -> tuple[T, int]:
    """Run a proof until it shows ``dps`` digits, raising the precision: (its result, bits).

    ``attempt(q, known, prec)`` proves from the root q of τ*² (trusted to ``known`` bits) at
    ``prec`` bits and returns (its result, the proved ball of τ*², the fewest digits its balls
    prove).  The first attempt starts from ``q_float``; too few digits: it runs again at the
    missing digits' bits and a margin more, from the midpoint of that ball, at most
    :data:`MAX_ATTEMPTS` times.

    Raises:
      NotEnclosable: fewer than ``min(dps, MIN_DIGITS)`` digits proven at the last attempt.
    """
    prec = bits_for_digits(dps + GUARD_DIGITS) + 16
    with workprec(prec):
        q, known = arb(q_float), FLOAT_BITS
    for n in range(MAX_ATTEMPTS):
        result, root, short = attempt(q, known, prec)
        if short >= dps or n == MAX_ATTEMPTS - 1:
            break
        # too wide: redo the proof at more bits (the missing digits and a margin)
        with workprec(prec):
            q = arb(root.mid())
            known = max(FLOAT_BITS, int(-math.log2(float((root.rad() / abs(root.mid())).upper()))))
        prec += bits_for_digits(dps - short + GUARD_DIGITS)
    if short < min(dps, MIN_DIGITS):
        raise NotEnclosable(f"only {short} digits proven at {prec} bits")
    return result, prec

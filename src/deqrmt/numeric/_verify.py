"""Verified digits: a value is printed only to the digits on which two evaluations agree.

The working evaluation runs at the requested precision plus a few guard digits with one
quadrature rule; the check runs with 15 more digits and a finer rule.  Truncation errors,
quadrature errors and cancellation all show up as disagreement.  Also the one fallback of every
engine, :func:`proven_or_agreed` (proven by Arb, else two evaluations agree, with the reason),
and the JSON fields that say how a result's digits were obtained.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

import mpmath

from .._errors import PrecisionLoss
from .._text import ball_text
from ._context import Num
from ._verified import MIN_DIGITS, Verified

__all__ = ["verify", "proven_or_agreed", "ball_dict", "certification_fields"]

#: a result record with a ``reason`` field (DEQCoefficients, SphereCoefficients, …)
R = TypeVar("R")


def _agreed(a: Num, b: Num, dps: int) -> int:
    if a == b:
        return dps
    for n in range(dps, 0, -1):
        if mpmath.nstr(a, n, strip_zeros=False) == mpmath.nstr(b, n, strip_zeros=False):
            return n
    return 0


def verify(name: str, working: Num, check: Num, dps: int, *, exact_zero: bool = False) -> Verified:
    """Compare two evaluations of ``name`` and keep the digits they share (at most ``dps``)."""
    if exact_zero or (working == 0 and check == 0):
        return Verified(mpmath.mpf(0), dps, "0")
    n = _agreed(working, check, dps)
    if n < min(dps, MIN_DIGITS):
        raise PrecisionLoss(
            f"{name}: evaluations at two precisions agree on only {n} digits "
            f"({mpmath.nstr(working, 20)} vs {mpmath.nstr(check, 20)}); increase dps, or the "
            "activation may be singular or too steep near the real axis for quadrature."
        )
    return Verified(check, n, mpmath.nstr(check, n, strip_zeros=False))


def proven_or_agreed(prove: Callable[[], R], agree: Callable[[], R]) -> R:
    """``prove()``, the result with every digit proven by Arb; where a moment or a decision lies
    outside what ball arithmetic proves here (the enclosure rules raise ``NotEnclosable``),
    ``agree()``, the digits two evaluations agree on, with the ``reason`` set to why."""
    from ._growth import NotEnclosable  # Arb is loaded only when a proof is asked for

    try:
        return prove()
    except NotEnclosable as e:
        result: Num = agree()
        return dataclasses.replace(result, reason=str(e))  # type: ignore[no-any-return]


def ball_dict(v: Verified) -> dict[str, str]:
    """A proven value's ball for JSON: midpoint (10 digits beyond the proven ones) and radius,
    rounded outward (:func:`deqrmt._text.ball_text`): the printed ball contains the proven one."""
    mid, rad = ball_text(v.value, v.radius or 0, max(v.digits + 10, 20))
    return {"midpoint": mid, "radius": rad}


def certification_fields(
    certified: bool,
    balls: Mapping[str, Verified],
    prec_bits: int | None,
    reason: str | None,
    notes: Iterable[str],
) -> dict[str, Num]:
    """The JSON fields that say how a result's digits were obtained (docs/json.md):
    ``certified``, then the ``balls`` and ``prec_bits`` of a proof, or the ``reason`` there
    is none, then the ``notes``."""
    out: dict[str, Num] = {"certified": certified}
    if certified:
        out["balls"] = {k: ball_dict(v) for k, v in balls.items()}
        out["prec_bits"] = prec_bits
    elif reason:
        out["reason"] = reason
    out["notes"] = list(notes)
    return out

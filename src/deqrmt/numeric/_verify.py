"""Verified digits: a value is printed only to the digits on which two evaluations agree.

The working evaluation runs at the requested precision plus a few guard digits with one
quadrature rule; the check runs with 15 more digits and a finer rule.  Truncation errors,
quadrature errors and cancellation all show up as disagreement.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

import mpmath

from .._arguments import show
from .._errors import InvalidArgument, PrecisionLoss
from .._text import ball_text, escape_controls

__all__ = ["Verified", "verify", "MIN_DIGITS", "ball_dict", "certification_fields"]

#: Fewer agreeing digits than this (or than the request, if smaller) is an error, not a result.
MIN_DIGITS = 10


@dataclasses.dataclass(frozen=True, repr=False)
class Verified:
    """A number and the significant digits of it that two evaluations agree on.

    ``text`` holds exactly the verified digits (trailing zeros kept: 30 digits asked, 30 shown);
    ``value`` is the more precise evaluation, for further arithmetic (``float(v)`` works too).
    ``radius`` is None when the digits are verified by two evaluations, and a number when they
    are *proven*: the true value lies within ``radius`` of ``value`` (Arb ball arithmetic).

    Example:
      >>> from deqrmt import deq_coefficients
      >>> v = deq_coefficients("relu", dps=12).alpha_1      # α*₁ = σ_b² μ₁²/(1 − σ_a² μ₁²) = 4/19
      >>> v.text, v.digits, float(v) == 4 / 19
      ('0.210526315789', 12, True)
      >>> v.radius < 1e-20                                   # proven: a ball around ``value``
      True
    """

    value: Any  # mpf from the more precise evaluation (a ball's midpoint when certified)
    digits: int
    text: str
    radius: Any = None

    @property
    def certified(self) -> bool:
        """True when the digits are proven by a ball, not only agreed on by two evaluations."""
        return self.radius is not None

    def contains(self, x: Any) -> bool:
        """Whether ``x`` lies in the proven ball (certified values only)."""
        if self.radius is None:
            raise InvalidArgument(
                "contains: a value verified by two evaluations has no ball; only a certified "
                "Verified (radius is not None) can enclose"
            )
        if isinstance(x, bool) or hasattr(x, "_mpc_") or isinstance(x, complex):
            raise InvalidArgument(f"x={show(x)}: expected a real number.")
        with mpmath.workprec(max(mpmath.mp.prec, 4 * self.digits + 64)):
            try:
                v = mpmath.mpf(x)
            except (TypeError, ValueError):
                raise InvalidArgument(f"x={show(x)}: expected a real number.") from None
            return bool(abs(v - self.value) <= self.radius)

    def __repr__(self) -> str:
        return f"Verified({self.text!r}, digits={self.digits})"

    def __str__(self) -> str:
        return escape_controls(self.text, keep="")  # our digits; a hand-built one is escaped

    def __float__(self) -> float:
        return float(self.value)

    @property
    def _mpf_(self) -> Any:
        # mpmath reads this: a Verified takes part in mpmath arithmetic as its value
        return mpmath.mpf(self.value)._mpf_


def _agreed(a: Any, b: Any, dps: int) -> int:
    if a == b:
        return dps
    for n in range(dps, 0, -1):
        if mpmath.nstr(a, n, strip_zeros=False) == mpmath.nstr(b, n, strip_zeros=False):
            return n
    return 0


def verify(name: str, working: Any, check: Any, dps: int, *, exact_zero: bool = False) -> Verified:
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
) -> dict[str, Any]:
    """The JSON fields that say how a result's digits were obtained (docs/json.md):
    ``certified``, then the ``balls`` and ``prec_bits`` of a proof, or the ``reason`` there
    is none, then the ``notes``."""
    out: dict[str, Any] = {"certified": certified}
    if certified:
        out["balls"] = {k: ball_dict(v) for k, v in balls.items()}
        out["prec_bits"] = prec_bits
    elif reason:
        out["reason"] = reason
    out["notes"] = list(notes)
    return out

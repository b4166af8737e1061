"""Verified digits: a value is printed only to the digits on which two evaluations agree.

The working evaluation runs at the requested precision plus a few guard digits with one
quadrature rule; the check runs with 15 more digits and a finer rule.  Truncation errors,
quadrature errors and cancellation all show up as disagreement.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Any

import mpmath
import sympy as sp

from .._errors import InvalidArgument, PrecisionLoss

__all__ = ["Verified", "verify", "to_rational", "MIN_DIGITS"]

#: Fewer agreeing digits than this (or than the request, if smaller) is an error, not a result.
MIN_DIGITS = 10


@dataclasses.dataclass(frozen=True)
class Verified:
    """A number and the significant digits of it that two evaluations agree on."""

    value: Any  # mpf from the more precise evaluation
    digits: int
    text: str

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
            f"({mpmath.nstr(working, 20)} vs {mpmath.nstr(check, 20)}); increase --dps, or the "
            "activation may be singular or too steep near the real axis for quadrature."
        )
    return Verified(check, n, mpmath.nstr(check, n))


def to_rational(value: Any, name: str) -> sp.Rational:
    """An exact Rational from a decimal string, int, Fraction or Rational ("0.2" → 1/5).

    Python floats are refused: their binary value is rarely what was meant.
    """
    if isinstance(value, bool):
        raise InvalidArgument(f"{name} must be a number, got {value!r}.")
    if isinstance(value, (sp.Rational, int, Fraction)):
        return sp.Rational(value)
    if isinstance(value, float):
        raise InvalidArgument(
            f"{name}={value!r} is a Python float; pass a decimal string (e.g. '0.2') or a "
            "Fraction so that the value is exact."
        )
    if isinstance(value, str):
        text = value.strip()
        try:
            if "/" in text:
                num, den = text.split("/")
                return sp.Rational(Fraction(int(num), int(den)))
            return sp.Rational(Fraction(text))
        except (ValueError, ZeroDivisionError):
            pass
    raise InvalidArgument(
        f"{name} must be a decimal number like 0.2 or a fraction like 1/5, got {value!r}."
    )

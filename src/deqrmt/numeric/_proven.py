"""Proven digits: what an Arb ball shows as a :class:`~deqrmt.numeric._verify.Verified`.

A value is printed to n digits when both ends of its ball round (exactly, ties away from 0) to
the same n-digit decimal (:func:`._arb.round_digits`); rounding is monotone, so the true value
rounds to it too.  The ball itself stays in the result (``value`` its midpoint, ``radius``).
"""

from __future__ import annotations

import math

import mpmath
from flint import arb

from ._arb import arb_to_mpf, format_digits, round_digits
from ._verify import Verified

__all__ = ["proven", "midpoint_text"]


def proven(x: arb, dps: int) -> Verified:
    """The digits the ball ``x`` proves, at most ``dps`` (0 digits: it contains 0 or straddles)."""
    if x.is_exact():
        mid = arb_to_mpf(x)
        if x == 0:
            return Verified(mid, dps, "0", mpmath.mpf(0))
        r = round_digits(x, dps)
        assert r is not None  # an exact nonzero number rounds to itself
        return Verified(mid, dps, format_digits(r, dps), mpmath.mpf(0))
    mid, rad = arb_to_mpf(x), arb_to_mpf(arb(x.rad()))
    if x.contains(0) or not x.is_finite():
        return Verified(mid, 0, "", rad)
    # the digits the radius allows, then down until both ends round alike
    rel = float(abs(arb(x.rad()) / abs(x.mid())).upper()) if x.mid() != 0 else math.inf
    n = dps if rel == 0 else min(dps, max(1, int(-math.log10(rel)) + 1))
    for k in range(n, 0, -1):
        r = round_digits(x, k)
        if r is not None:
            return Verified(mid, k, format_digits(r, k), rad)
    return Verified(mid, 0, "", rad)


def midpoint_text(x: arb, digits: int) -> str:
    """A ball's midpoint for a message (the ball itself is in the result, not the text)."""
    return mpmath.nstr(arb_to_mpf(x), digits)

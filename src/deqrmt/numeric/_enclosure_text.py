"""An enclosure as text that still encloses: the digits it proves, or its ends rounded outward.

An interval [lo, hi] proved to contain a number prints as one decimal when both ends round to
the same n-digit decimal (rounding is monotone, so every point inside rounds to it: those
digits are proven), and otherwise as ``[lo↓, hi↑]``, the lower end rounded down and the upper
end rounded up to n significant digits, so that the printed interval contains the proved one
(a lower bound 1.0998377 is printed 1.09983, never 1.09984).  Numbers are mpmath's ``nstr``
style (:func:`._arb.format_digits`), so a proven value reads like a verified one.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TypeAlias

import mpmath
from flint import arb

from .._text import exact_value, format_decimal, round_decimal
from ._context import Mpf

__all__ = ["exact_fraction", "interval_text", "proven_text", "round_directed"]

#: An exact binary number: an exact ``arb`` (radius 0), an mpmath ``mpf``, a float, an int or a
#: Fraction of a power of two.
ExactBinary: TypeAlias = "arb | Mpf | float | int | Fraction"
#: An end of an enclosure: an exact binary number, ±∞ (as a float or an mpf), or None for ∞.
Bound: TypeAlias = "ExactBinary | None"


def exact_fraction(v: ExactBinary) -> Fraction:
    """An exact binary number (mpmath mpf, exact arb, int, Fraction) as a Fraction."""
    if isinstance(v, arb):
        if v.rad() != 0:
            raise ValueError(f"exact_fraction: {v} is a ball, not a number")
        m_arb, e_arb = v.mid().man_exp()
        man, exp = int(m_arb), int(e_arb)
        return Fraction(man * 2**exp) if exp >= 0 else Fraction(man, 2**-exp)
    return exact_value(v if isinstance(v, (int, Fraction)) else mpmath.mpf(v), "v")


def round_directed(v: Fraction, n: int, *, up: bool) -> tuple[int, int, int]:
    """(sign, N, e): v rounded up (``up``) or down to n significant digits
    (:func:`deqrmt._text.round_decimal`): the rounded number is sign·N·10^(e−n+1)."""
    return round_decimal(v, n, "ceiling" if up else "floor")


def _nearest(v: Fraction, n: int) -> tuple[int, int, int]:
    return round_decimal(v, n, "nearest")


def _text(r: tuple[int, int, int], n: int) -> str:
    return format_decimal(r, n, strip_zeros=True)


def interval_text(lo: Bound, hi: Bound, digits: int = 6) -> str:
    """[lo, hi] as text that encloses it (see the module docstring); ∞ for an infinite end.

    Example:
      >>> interval_text(Fraction(10998377, 10**7), Fraction(110052, 10**5))
      '[1.09983, 1.10052]'
      >>> interval_text(Fraction(1), Fraction(1000001, 10**6))
      '1.0'
    """
    lo_inf = lo is None or (not isinstance(lo, (arb, Fraction, int)) and mpmath.isinf(lo))
    hi_inf = hi is None or (not isinstance(hi, (arb, Fraction, int)) and mpmath.isinf(hi))
    a = None if lo_inf else exact_fraction(lo)
    b = None if hi_inf else exact_fraction(hi)
    if a is not None and b is not None:
        near = _nearest(a, digits)
        if near == _nearest(b, digits) and (a > 0 or b < 0 or a == b):
            return _text(near, digits)
    left = "-∞" if a is None else _text(round_directed(a, digits, up=False), digits)
    right = "∞" if b is None else _text(round_directed(b, digits, up=True), digits)
    return f"[{left}, {right}]"


def proven_text(lo: Bound, hi: Bound, digits: int = 12) -> str:
    """The most digits (up to ``digits``) that every point of [lo, hi] rounds to, or, when not
    even one is shared, :func:`interval_text` of the ends (6 digits)."""
    if lo is None or hi is None:
        return interval_text(lo, hi)
    a, b = exact_fraction(lo), exact_fraction(hi)
    for n in range(digits, 0, -1):
        near = _nearest(a, n)
        if near == _nearest(b, n) and (a > 0 or b < 0 or a == b):
            return _text(near, n)
    return interval_text(lo, hi)

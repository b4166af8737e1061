"""Exact numbers from user input: one reader for every setting (σ², τ0, grids, ranges).

A float means the decimal its shortest ``repr`` shows (``0.2`` is 1/5, not the binary double
0.2000000000000000111…), which is what a notebook user typed or read; sizes are checked on the
text before any big integer is built (:mod:`deqrmt._arguments` has the rules).
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from typing import TypeAlias

import sympy as sp

from .. import _arguments

__all__ = ["MAX_GRID", "ExactInput", "exact_number", "exact_text", "number_grid"]

#: What a caller may pass for one exact number (σ_a², σ_b², τ0): text (``"0.2"``, ``"1/5"``), an
#: int, a float (read as its shortest repr), a Fraction, a Decimal or a SymPy rational.  numpy
#: and mpmath reals are read too (:func:`exact_number` checks every value at run time).
ExactInput: TypeAlias = str | int | float | Fraction | Decimal | sp.Rational


def exact_number(value: object, name: str) -> sp.Rational:
    """An exact Rational from int, float, str, Fraction, Decimal, numpy, mpmath or SymPy reals.

    Strings are decimals (``"0.2"``, ``"1e-3"``) or fractions (``"1/5"``) in ASCII digits; a
    float is read as its shortest repr.  Sizes are checked on the text or the bit length
    before any big integer is built, so ``"1e999999999"`` and ``10**5000`` are refused at once
    (:func:`deqrmt._arguments.number` has the rules).
    """
    if isinstance(value, sp.Rational):  # the common internal case: already exact
        _arguments.number(value, name)  # the same size budget
        return value
    f = _arguments.number(value, name)
    return sp.Rational(f.numerator, f.denominator)


#: points a command-line range or list may have (each is one full computation)
MAX_GRID = 200


def number_grid(value: object, name: str) -> list[sp.Rational]:
    """Exact numbers from ``"start:stop:count"`` (count points, both ends included), a comma
    list ``"0.1,0.2"``, a Python list, or one number; each read by :func:`exact_number`.

    The count is ASCII digits from 1 to :data:`MAX_GRID`; a list has 1 to MAX_GRID values.
    """

    # each item is named as the whole argument (``sigma_a2='abc'``): the command line turns
    # that into its flag, a sweep spec into its key
    def item(v: object, _: str) -> Fraction:
        return _arguments.number(v, name)

    if isinstance(value, str) and ":" in value:
        points = _arguments.number_range(value, name, MAX_GRID)
    elif isinstance(value, str) and "," in value:
        items = [t for t in value.split(",") if t.strip()]
        points = _arguments.sequence(items, name, "numbers", hi=MAX_GRID, item=item)
    elif isinstance(value, list | tuple):
        points = _arguments.sequence(value, name, "numbers", hi=MAX_GRID, item=item)
    else:
        points = _arguments.real_sequence(value, name, hi=MAX_GRID)
    return [sp.Rational(f.numerator, f.denominator) for f in points]


def exact_text(x: Fraction | sp.Rational) -> str:
    """Canonical exact text: a finite decimal when there is one ("0.05"), else "p/q"."""
    x = Fraction(int(x.p), int(x.q)) if isinstance(x, sp.Rational) else x
    if x.denominator == 1:
        return str(x.numerator)
    d, twos, fives = x.denominator, 0, 0
    while d % 2 == 0:
        d, twos = d // 2, twos + 1
    while d % 5 == 0:
        d, fives = d // 5, fives + 1
    if d != 1:
        return f"{x.numerator}/{x.denominator}"
    digits = max(twos, fives)
    scaled = x * 10**digits
    assert scaled.denominator == 1
    sign = "-" if scaled < 0 else ""
    s = str(abs(scaled.numerator)).rjust(digits + 1, "0")
    return f"{sign}{s[:-digits]}.{s[-digits:]}".rstrip("0").rstrip(".")

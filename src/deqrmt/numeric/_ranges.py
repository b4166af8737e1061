"""The accepted ranges of a setting (σ_a², σ_b², τ0, layers) and the check against them.

Outside them the Gaussian moments are taken at scales where quadrature cannot promise digits
within the time budget (docs/limits.md).
"""

from __future__ import annotations

from fractions import Fraction

import sympy as sp

from .._errors import InvalidArgument

__all__ = ["MAX_LAYERS", "RANGES", "in_range"]

#: Accepted ranges (inclusive) of the setting.
RANGES: dict[str, tuple[Fraction, Fraction]] = {
    "sigma_a2": (Fraction(1, 10**6), Fraction(100)),
    "sigma_b2": (Fraction(1, 10**6), Fraction(10**4)),
    "tau0": (Fraction(1, 10**3), Fraction(100)),
}
#: layers of an explicit network or of a designed ENN (each layer adds a moment evaluation
#: and, in a design, parameters to the multi-start solve)
MAX_LAYERS = 8


def _range_text(name: str) -> str:
    lo, hi = RANGES.get(name, (None, None))
    return f"[{_fmt(lo)}, {_fmt(hi)}]" if lo is not None else "finite numbers"


def _fmt(v: Fraction | None) -> str:
    if v is None:
        return "?"
    return str(v) if v.denominator == 1 else f"{float(v):g}"


def in_range(name: str, value: sp.Rational) -> sp.Rational:
    lo, hi = RANGES[name]
    if not lo <= Fraction(int(value.p), int(value.q)) <= hi:
        raise InvalidArgument(
            f"{name}={value} is outside the accepted range {_range_text(name)} (docs/limits.md)."
        )
    return value

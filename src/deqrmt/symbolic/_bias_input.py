"""The implicit-bias derivation's input: the parametrization `β = g(θ)` parsed by the safe
parser, and θ(0) read as exact rationals within stated bounds.
"""

from __future__ import annotations

import fractions
import numbers
from collections.abc import Sequence
from typing import Any

import sympy as sp

from .._errors import BudgetExceeded, InvalidArgument
from .._untrusted import exact_fraction, shown
from ._parser import parse_expression_with_parameters

__all__ = ["MAX_INIT", "MAX_INIT_DIGITS", "parse_init", "parse_parametrization"]


def parse_parametrization(
    text: str, parameters: Sequence[str] | None = None
) -> tuple[sp.Expr, tuple[sp.Symbol, ...]]:
    """Parse `g(θ)` with the safe parser; `parameters` fixes the names and their order.

    Example:
      >>> parse_parametrization("u/(1-w)")
      (u/(1 - w), (u, w))
    """
    expr, found = parse_expression_with_parameters(text)
    # `x` is the parser's activation variable; here it may serve as a parameter name too.
    symbols = {s.name: s for s in expr.free_symbols if isinstance(s, sp.Symbol)}
    symbols.update({s.name: s for s in found})
    if parameters is None:
        names = sorted(symbols)
    else:
        names = [p.strip() for p in parameters]
        if any(not n for n in names) or len(set(names)) != len(names):
            raise InvalidArgument(f"parameters={list(parameters)!r}: names must be distinct.")
        missing = sorted(set(symbols) - set(names))
        if missing:
            raise InvalidArgument(
                f"{text!r} depends on {', '.join(missing)}, which is not in "
                f"parameters={names!r}; list every trainable name, or write constants as numbers."
            )
        unused = [n for n in names if n not in symbols]
        if unused:
            raise InvalidArgument(f"parameters={names!r}: {text!r} does not depend on {unused}.")
    if len(names) not in (1, 2):
        raise InvalidArgument(
            f"{text!r} has {len(names)} parameters ({', '.join(names) or 'none'}); "
            "one (`1/(1-w)`) or two (`u/(1-w)`, `u**2-v**2`) are supported."
        )
    # The parser makes every parameter real; keep exactly those symbols.
    theta = tuple(symbols[n] if n in symbols else sp.Symbol(n, real=True) for n in names)
    return expr, theta


#: |θ(0)| accepted: the derivation is exact at any size, but --check runs float64 gradient
#: descent from θ(0), and a parametrization's scale is O(1) in every use of interest
MAX_INIT = 10**6
#: digits of one value of θ(0) (exact rationals; SymPy's work grows with their size)
MAX_INIT_DIGITS = 60


def _number(value: Any, what: str) -> sp.Rational:
    if isinstance(value, sp.Rational):
        value = fractions.Fraction(int(value.p), int(value.q))
    if isinstance(value, fractions.Fraction):
        f = value
        if max(abs(f.numerator), f.denominator).bit_length() > 200:
            raise BudgetExceeded(f"{what}={shown(value)} has too many digits.")
    else:
        if isinstance(value, numbers.Integral) and not isinstance(value, bool):
            value = int(value)
        f = exact_fraction(
            value,
            what,
            max_digits=MAX_INIT_DIGITS,
            fix="write a decimal like 0.5 or a fraction like 1/2 (one per parameter: 1,0.25)",
        )
    if abs(f) > MAX_INIT:
        raise InvalidArgument(
            f"{what}={shown(value)}: |θ(0)| must be at most {MAX_INIT} (an initialisation of a "
            "parametrization is a number of order one)."
        )
    return sp.Rational(f.numerator, f.denominator)


def parse_init(value: Any, n_parameters: int) -> tuple[sp.Rational, ...]:
    """θ(0) as exact rationals: one number for every parameter, or one per parameter.

    Example:
      >>> parse_init("0.5", 2)
      (1/2, 1/2)
      >>> parse_init("1,0.25", 2)
      (1, 1/4)
    """
    if isinstance(value, str):
        parts: list[Any] = [p for p in value.split(",")]
    elif isinstance(value, Sequence):
        parts = list(value)
    else:
        parts = [value]
    if len(parts) == 1:
        parts = parts * n_parameters
    if len(parts) != n_parameters:
        raise InvalidArgument(
            f"init={value!r} has {len(parts)} values for {n_parameters} parameters; give one "
            "value for all or one per parameter."
        )
    return tuple(_number(p, "init") for p in parts)

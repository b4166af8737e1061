"""The activation grammar: the functions, names and operators an activation may use, and the
characters its text may contain.

:mod:`._parser` builds SymPy from these tables only; :mod:`._parse_limits` prices the same names
before anything is built.  The character check runs first, on the raw text: what it accepts is
plain ASCII with nothing hidden in it.
"""

from __future__ import annotations

import ast
import difflib
import re
import unicodedata
from collections.abc import Callable, Iterable

import sympy as sp

from .._errors import ParseError
from ._activation import X

__all__ = ["FUNCTIONS"]


def _nary(f: Callable[..., sp.Expr], name: str) -> Callable[..., sp.Expr]:
    def g(*args: sp.Expr) -> sp.Expr:
        if len(args) < 2:
            raise ParseError(f"{name}() needs at least two arguments.")
        return f(*args)

    return g


def _unary(f: Callable[[sp.Expr], sp.Expr], name: str) -> Callable[..., sp.Expr]:
    def g(*args: sp.Expr) -> sp.Expr:
        if len(args) != 1:
            raise ParseError(f"{name}() takes exactly one argument, got {len(args)}.")
        return f(args[0])

    return g


FUNCTIONS: dict[str, Callable[..., sp.Expr]] = {
    "exp": _unary(sp.exp, "exp"),
    "log": _unary(sp.log, "log"),
    "sqrt": _unary(sp.sqrt, "sqrt"),
    "abs": _unary(sp.Abs, "abs"),
    "max": _nary(sp.Max, "max"),
    "min": _nary(sp.Min, "min"),
    "tanh": _unary(sp.tanh, "tanh"),
    "sin": _unary(sp.sin, "sin"),
    "cos": _unary(sp.cos, "cos"),
    "sinh": _unary(sp.sinh, "sinh"),
    "cosh": _unary(sp.cosh, "cosh"),
    "atan": _unary(sp.atan, "atan"),
    "erf": _unary(sp.erf, "erf"),
    "erfc": _unary(sp.erfc, "erfc"),
    "sigmoid": _unary(lambda u: 1 / (1 + sp.exp(-u)), "sigmoid"),
    "softplus": _unary(lambda u: sp.log(1 + sp.exp(u)), "softplus"),
    "relu": _unary(lambda u: sp.Max(u, 0), "relu"),
    "heaviside": _unary(lambda u: sp.Heaviside(u, sp.S.Half), "heaviside"),
    "sign": _unary(sp.sign, "sign"),
}
_NAMES: dict[str, sp.Expr] = {"x": X, "pi": sp.pi}
_BINOPS: dict[type, Callable[[sp.Expr, sp.Expr], sp.Expr]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
}
_NUMBER = re.compile(r"^(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")

# Characters that are easy to paste from a paper, and what to type instead.
_REPLACEMENTS = {
    "−": "-", "–": "-", "—": "-", "×": "*", "·": "*", "⋅": "*", "÷": "/", "²": "**2",
    "³": "**3", "π": "pi", "√": "sqrt", "φ": "x", "σ": "x", "ξ": "x", "’": "", "‘": "", "“": "",
    "”": "", "\u00a0": " ",
}  # fmt: skip
_WHITESPACE = " \t\n\r\f"


def _check_characters(text: str) -> None:
    """Refuse comments, control characters and non-ASCII characters, naming the first one."""
    if "#" in text:
        raise ParseError(
            "comments ('#') are not allowed in an activation; remove everything from '#' on."
        )
    if "\\" in text:
        raise ParseError("backslashes are not allowed in an activation; write it on one line.")
    for i, ch in enumerate(text):
        if ch in _WHITESPACE or " " <= ch <= "~":
            continue
        where = f"at position {i}"
        if ch in _REPLACEMENTS:
            fix = _REPLACEMENTS[ch]
            hint = f"write {fix!r} instead" if fix else "remove it"
            raise ParseError(f"character {ascii(ch)} {where} is not allowed; {hint}.")
        if 0xDC80 <= ord(ch) <= 0xDCFF:  # surrogateescape: a byte the locale cannot decode
            name = (
                f"undecodable byte {ord(ch) - 0xDC00:#04x}; is the text in this locale's encoding?"
            )
        else:
            try:
                name = unicodedata.name(ch)
            except ValueError:
                name = "a control or unassigned character"
        raise ParseError(
            f"character {ascii(ch)} ({name}) {where} is not allowed: an activation is plain "
            "ASCII, e.g. 'max(x, 0.1*x)'."
        )


def _suggest(name: str, candidates: Iterable[str]) -> str:
    """``"; did you mean 'tanh'?"`` for a near miss, else ``""``."""
    pool = sorted(set(candidates))
    lowered = {c.lower(): c for c in pool}
    if name.lower() in lowered and lowered[name.lower()] != name:
        return f"; did you mean {lowered[name.lower()]!r}?"
    close = difflib.get_close_matches(name, pool, n=1, cutoff=0.75)
    return f"; did you mean {close[0]!r}?" if close else ""

"""SymPy expressions and sets as people write them on one line, for the command line's text.

SymPy is imported inside the functions: a command that prints no formula never loads it.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["math_text", "set_text"]

_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def math_text(expr: Any) -> str:
    """A SymPy expression as people write it on one line: ``a·max(-c, min(c, x))``,
    ``c1·x + c2·x²``, ``|x|``, ``x if x > 0, exp(x) - 1 otherwise`` (not ``Max``/``Piecewise``).

    Example:
      >>> import sympy as sp
      >>> x = sp.Symbol("x")
      >>> math_text(sp.Max(2 * x, x / 10) + x**2)
      'x² + max(x/10, 2·x)'
    """
    import sympy as sp
    from sympy.printing.str import StrPrinter

    class _Printer(StrPrinter):
        def _print_Max(self, e: Any) -> str:
            return f"max({', '.join(self._print(a) for a in e.args)})"

        def _print_Min(self, e: Any) -> str:
            return f"min({', '.join(self._print(a) for a in e.args)})"

        def _print_Abs(self, e: Any) -> str:
            return f"|{self._print(e.args[0])}|"

        def _print_Piecewise(self, e: Any) -> str:
            parts = [
                f"{self._print(v)} otherwise"
                if c is sp.true
                else f"{self._print(v)} if {self._print(c)}"
                for v, c in e.args
            ]
            return ", ".join(parts)

    text = _Printer().doprint(expr)
    text = re.sub(r"\*\*(-?[0-9]+)\b(?!/)", lambda m: m.group(1).translate(_SUPERSCRIPT), text)
    return text.replace("**", "^").replace("*", "·")


def set_text(domain: Any) -> str:
    """A SymPy set in math notation: ``(0, ∞)``, ``ℝ``, ``[-1, 1)``, ``(-∞, 0) ∪ (0, ∞)``.

    Example:
      >>> import sympy as sp
      >>> set_text(sp.Interval.open(0, sp.oo)), set_text(sp.S.Reals)
      ('(0, ∞)', 'ℝ')
    """
    import sympy as sp

    def end(v: Any) -> str:
        if v is sp.oo:
            return "∞"
        if v is sp.S.NegativeInfinity:
            return "-∞"
        return math_text(v)

    if domain == sp.S.Reals:
        return "ℝ"
    if isinstance(domain, sp.Interval):
        lo = "(" if domain.left_open or domain.left is sp.S.NegativeInfinity else "["
        hi = ")" if domain.right_open or domain.right is sp.oo else "]"
        return f"{lo}{end(domain.left)}, {end(domain.right)}{hi}"
    if isinstance(domain, sp.Union):
        return " ∪ ".join(set_text(a) for a in domain.args)
    if isinstance(domain, sp.FiniteSet):
        return "{" + ", ".join(end(a) for a in domain.args) + "}"
    if domain == sp.S.EmptySet:
        return "∅"
    return math_text(domain)

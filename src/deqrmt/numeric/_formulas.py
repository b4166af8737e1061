"""Derived formulas compiled once and called with named arguments.

The one helper every pipeline (DEQ, explicit network, sphere; verified and certified) uses to
turn what :mod:`deqrmt.symbolic` derives into numbers: a list of SymPy expressions becomes a
context-generic function (:func:`._printer.compile_function`: it runs on an mpmath context at
any precision, on ``mpmath.fp`` and on Arb balls alike) whose arguments are the expressions'
free symbols, each known by a name (``"sigma_a2"``, ``"d1"``, ``"f_2"`` …).  Callers pass an
environment mapping names to values, never a positional list whose order must be remembered.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from .._errors import DerivationError
from ._context import EngineContext, Num

if TYPE_CHECKING:
    import sympy as sp

__all__ = ["Formulas", "compile_formulas"]


@dataclasses.dataclass(frozen=True)
class Formulas:
    """A compiled function of derived formulas and the names of its arguments, in order.

    ``formulas(ctx, env)`` evaluates every formula in the context ``ctx`` with each argument
    taken from ``env`` by name; the values come back in the order the formulas were given.
    """

    fn: Callable[..., tuple[Num, ...]]
    args: tuple[str, ...]

    def __call__(self, ctx: EngineContext, env: Mapping[str, Num]) -> tuple[Num, ...]:
        return tuple(self.fn(ctx, *(env[a] for a in self.args)))


def compile_formulas(
    name: str,
    exprs: Sequence[sp.Expr],
    names: Mapping[sp.Symbol, str] | None = None,
    *,
    args: Sequence[sp.Symbol] | None = None,
    doc: str = "",
) -> Formulas:
    """Compile ``exprs`` into one function named ``name``.

    Args:
      exprs: the formulas.
      names: each argument symbol's name in the environment; a symbol not in it is known by
        its SymPy name (the package's own symbols: ``sigma_a2``, ``tau_0``, ``s``, ``d`` …).
      args: the argument symbols in order; default: the formulas' free symbols sorted by name.
      doc: the compiled function's docstring.
    """
    exprs = list(exprs)
    free = set().union(*(e.free_symbols for e in exprs)) if exprs else set()
    order = list(args) if args is not None else sorted(free, key=str)
    missing = free - set(order)
    if missing:
        raise DerivationError(
            f"{name}: the formulas use {sorted(map(str, missing))}, which are not arguments"
        )
    from ._printer import compile_function  # SymPy: only when something is compiled

    names = names or {}
    fn = compile_function(name, order, exprs, doc=doc)
    return Formulas(fn, tuple(names.get(a, str(a)) for a in order))

"""Code generation: SymPy expressions → Python source that runs on an mpmath context.

Generated functions take the context as their first argument (``ctx``), so the same body runs
with a private ``mpmath.MPContext`` at any precision or with ``mpmath.fp`` for speed, and the
global ``mp.dps`` is never touched.  Rationals print as ``ctx.mpf(p)/ctx.mpf(q)``: exact at
the context's precision.  A Float in an expression is a bug upstream and is refused.
"""

from __future__ import annotations

import functools
import hashlib
import linecache
from collections.abc import Callable, Sequence
from typing import Any

import sympy as sp
from sympy.printing.pycode import MpmathPrinter

from .._errors import DerivationError

__all__ = ["ContextPrinter", "compile_function", "function_source"]


class ContextPrinter(MpmathPrinter):
    """MpmathPrinter that prints ``ctx.<name>`` instead of ``mpmath.<name>``."""

    def __init__(self) -> None:
        super().__init__({"fully_qualified_modules": True, "inline": True})

    def _module_format(self, fqn: str, register: bool = True) -> str:
        if fqn.startswith("mpmath."):
            return "ctx." + fqn[len("mpmath.") :]
        return super()._module_format(fqn, register)

    def _print_Float(self, e: sp.Float) -> str:
        raise DerivationError(f"Float {e} reached code generation; constants must be exact.")

    def _print_Integer(self, e: sp.Integer) -> str:
        # Python ints are exact; mixed with mpf they promote at the context's precision.
        return str(e.p)


def function_source(
    name: str, args: Sequence[sp.Symbol], exprs: Sequence[sp.Expr], doc: str = ""
) -> str:
    """Source of ``def name(ctx, *args): return (expr0, expr1, ...)`` with common subexpressions."""
    printer = ContextPrinter()
    arg_names = ", ".join(["ctx", *(printer.doprint(a) for a in args)])
    lines = [f"def {name}({arg_names}):"]
    if doc:
        # repr, never an f-string docstring: ``doc`` may quote user text (an activation name),
        # and a literal made by repr cannot close itself early.
        lines.append(f"    {doc!r}")
    key = tuple(exprs)
    try:
        hash(key)
    except TypeError:  # a mutable argument (a Matrix): not memoised
        assignments, body = _body.__wrapped__(key)
    else:
        assignments, body = _body(key)
    lines += assignments
    lines.append(f"    return ({body},)")
    return "\n".join(lines) + "\n"


# Memoised on the expressions alone (the CSE and its printing are most of the cost, and pure):
# the Arb encloser, ``deqrmt codegen`` and the derived formulas ask for the same lists again
# for every activation and setting.
@functools.lru_cache(maxsize=256)
def _body(exprs: tuple[sp.Expr, ...]) -> tuple[tuple[str, ...], str]:
    """The CSE assignments (printed, indented) and the returned tuple's items, printed."""
    printer = ContextPrinter()
    replacements, reduced = sp.cse(
        list(exprs), symbols=sp.numbered_symbols("_t"), optimizations=None
    )
    assignments = tuple(
        f"    {printer.doprint(sym)} = {printer.doprint(sub)}" for sym, sub in replacements
    )
    return assignments, ", ".join(printer.doprint(e) for e in reduced)


def compile_function(
    name: str, args: Sequence[sp.Symbol], exprs: Sequence[sp.Expr], doc: str = ""
) -> Callable[..., tuple[Any, ...]]:
    """Compile :func:`function_source`; the source is kept in ``linecache`` and ``__doc__``."""
    src = function_source(name, args, exprs, doc)
    filename = f"<deqrmt-generated-{name}-{hashlib.sha1(src.encode()).hexdigest()[:10]}>"
    namespace: dict[str, Any] = {}
    exec(compile(src, filename, "exec"), namespace)  # our own printed SymPy, never user text
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    fn: Callable[..., tuple[Any, ...]] = namespace[name]
    fn.__doc__ = (doc + "\n\n" if doc else "") + src
    return fn

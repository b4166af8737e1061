"""What to type instead: the hints the parser adds to a refusal.

Implicit products (``1.702x`` → ``1.702*x``, ``(x+1)(x-1)``, ``x(1+x)``, ``2 x``), decimal
commas, ``=`` in an activation, and keyword arguments (``leaky_relu(slope=0.1)`` →
``leaky_relu(0.1)``).  Each suggestion is offered only if it parses.
"""

from __future__ import annotations

import ast
import inspect
import re

from ._activation import LIBRARY

__all__ = ["implicit_product", "keywords_hint", "syntax_hint"]

#: a number or name followed by an operand without an operator: ``1.702x``, ``2 x``, ``)(``
_IMPLICIT = re.compile(
    r"(?<![\w.])(\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)(?=\s*[A-Za-z_(])"
    r"|(\))(?=\s*[\w(])"
    r"|(?<![\w.])(x|pi)(?=\s*[\w(])"
)


def implicit_product(text: str) -> str | None:
    """``text`` with ``*`` written where a product was implied (``1.702x`` → ``1.702*x``,
    ``(x+1)(x-1)`` → ``(x+1)*(x-1)``, ``x(1+x)`` → ``x*(1+x)``), if that parses; else None."""
    out, pos = [], 0
    for m in _IMPLICIT.finditer(text):
        end = m.end()
        rest = text[end:].lstrip()
        if m.group(1) and rest[:1] in ("e", "E") and re.match(r"[eE][+-]?\d", rest):
            continue  # 1e-3 is a number
        out.append(text[pos:end])
        out.append("*")
        pos = end + (len(text[end:]) - len(rest))  # drop the spaces of `2 x`
    if not out:
        return None
    fixed = "".join(out) + text[pos:]
    try:
        ast.parse(fixed.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return fixed.strip()


def syntax_hint(text: str, msg: str) -> str:
    """What to type instead, for the syntax errors people make when they write maths."""
    fix = implicit_product(text)
    if fix is not None:
        return f"; write products with '*': {fix!r}"
    if re.search(r"\d,\d", text) and "(" not in text:
        return "; a decimal comma? write a decimal point: " + repr(
            re.sub(r"(\d),(\d)", r"\1.\2", text)
        )
    if "=" in text:
        return "; an activation is an expression in x, without '=' (give the right-hand side)"
    return ""


def keywords_hint(text: str, node: ast.Call) -> str:
    """The message for ``leaky_relu(slope=0.1)``: parameters are positional, with the call to
    write instead when the names are the library entry's parameters."""
    name = node.func.id  # type: ignore[attr-defined]
    head = f"keyword arguments are not allowed in {name}(…)"
    params = (
        list(inspect.signature(LIBRARY[name].builder).parameters.values())
        if name in LIBRARY
        else []
    )
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return f"{head}: its parameters are positional, {name}(c0, c1, …)"
    names = [p.name for p in params if p.kind is p.POSITIONAL_OR_KEYWORD]
    if not names:
        return f"{head}: its argument is positional, {name}(x)"
    segment = lambda n: ast.get_source_segment(text, n) or "?"  # noqa: E731
    given = {k.arg: segment(k.value) for k in node.keywords if k.arg is not None}
    unknown = [k for k in given if k not in names]
    if unknown or any(k.arg is None for k in node.keywords):
        return f"{head}: its parameters are {', '.join(names)}, in that order"
    values = [segment(a) for a in node.args]
    if len(values) > len(names) or any(k in names[: len(values)] for k in given):
        return f"{head}: its parameters are {', '.join(names)}, in that order"
    last = max(names.index(k) for k in given)
    for p in params[len(values) : last + 1]:
        values.append(given.get(p.name, str(p.default)))
    return f"{head}; parameters are positional: write {name}({', '.join(values)})"

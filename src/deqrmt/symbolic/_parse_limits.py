"""The parser's work limits: an activation's syntax tree priced before any SymPy object exists.

Each limit is a module constant (``MAX_KINKS``) that the environment variable of its name raises
(``DEQRMT_MAX_KINKS``, :func:`limit`).  The tree's size and nesting are counted, its kinks,
transcendental calls and powers of x estimated as upper bounds (:class:`_Cost`), and the
frequency of sin/cos bounded on |x| ≤ 10; the first limit exceeded raises
:class:`~deqrmt.BudgetExceeded`, which names the limit, the value and what to do.  The limits
and the measurements behind them: docs/limits.md.
"""

from __future__ import annotations

import ast
import math
import os
import re
from collections.abc import Iterable

from .._errors import BudgetExceeded, InvalidArgument
from ._activation import LIBRARY, Price
from ._parse_grammar import FUNCTIONS

__all__ = [
    "MAX_LENGTH",
    "MAX_NODES",
    "MAX_DEPTH",
    "MAX_KINKS",
    "MAX_POWER",
    "MAX_TRANSCENDENTAL",
    "MAX_TRANSCENDENTAL_DEPTH",
    "MAX_WORK",
    "MAX_FREQUENCY",
    "limit",
]

#: Characters in the activation text.
MAX_LENGTH = 400
#: Nodes of the syntax tree (names, numbers, operators, calls).
MAX_NODES = 200
#: Nesting depth of the syntax tree; a chain of + and − (or of * and /) is one level.
MAX_DEPTH = 24
#: Kinks (points where abs/max/min/relu/heaviside/sign/a piecewise library activation switch
#: branch), counted as an upper bound: abs(abs(x) - 1) counts 3.  The closed-form engine splits
#: φ at every kink; its cost grows much faster than the number of kinks.
MAX_KINKS = 8
#: Largest |p| and q of a constant exponent p/q, and largest power of x (x**64).
MAX_POWER = 64
#: Calls of exp, log, sqrt, tanh, sin, cos, sinh, cosh, atan, erf, erfc, sigmoid, softplus, the
#: smooth library activations (gelu, silu, elu, …) and non-integer powers, each weighted by its
#: nesting level (tanh(x) + tanh(tanh(x)) is 1 + (1 + 2) = 4), plus one for erf, erfc and gelu.
MAX_TRANSCENDENTAL = 10
#: Nesting of those calls: tanh(tanh(x)) is 2.
MAX_TRANSCENDENTAL_DEPTH = 3
#: Frequency of sin and cos: the slope of their argument on |x| ≤ 10 (sin(1000*x) is 1000).
#: The quadrature resolves every oscillation: sin(100000*x) ran for minutes.
MAX_FREQUENCY = 1000
#: (kinks + 1) · (weighted transcendental calls + 1): every piece between kinks carries every
#: call, and its moments are computed piece by piece, so kinks and calls multiply.
MAX_WORK = 30

# --- what each name costs, for the limits ------------------------------------------------------

#: What the grammar's own functions cost (kinks, nested transcendental calls, heavy).  A
#: library activation declares its price in its LIBRARY entry (``Price``), read at each call:
#: a new library entry is priced by the one line that adds it, and no table here can miss it.
#: (max/min add one kink per extra argument, counted in ``_cost``.)
_FUNCTION_PRICES: dict[str, Price] = {
    "abs": Price(kinks=1), "heaviside": Price(kinks=1), "sign": Price(kinks=1),
    "exp": Price(calls=1), "log": Price(calls=1), "sqrt": Price(calls=1), "tanh": Price(calls=1),
    "sin": Price(calls=1), "cos": Price(calls=1), "sinh": Price(calls=1), "cosh": Price(calls=1),
    "atan": Price(calls=1), "erf": Price(calls=1, heavy=True), "erfc": Price(calls=1, heavy=True),
}  # fmt: skip
_FREE = Price()


def _degree(name: str, default: int) -> int:
    """The degree in x of a polynomial library activation (identity 1), else ``default``."""
    entry = LIBRARY.get(name)
    return default if entry is None or entry.price.degree is None else entry.price.degree


def _price(name: str) -> Price:
    """A function's price, else the library entry's (a name that is both costs the same)."""
    if name in _FUNCTION_PRICES:
        return _FUNCTION_PRICES[name]
    entry = LIBRARY.get(name)
    return entry.price if entry is not None else _FREE


_LIMITS = (
    "MAX_LENGTH", "MAX_NODES", "MAX_DEPTH", "MAX_KINKS", "MAX_POWER", "MAX_TRANSCENDENTAL",
    "MAX_TRANSCENDENTAL_DEPTH", "MAX_FREQUENCY", "MAX_WORK",
)  # fmt: skip
_LIMIT_TEXT = re.compile(r"[0-9]{1,9}", re.ASCII)


def limit(constant: str) -> int:
    """The limit ``constant`` (``"MAX_KINKS"``): the environment variable ``DEQRMT_MAX_KINKS``
    when it is set (a whole number from 1 to 10⁹), else the module constant.

    Raising a limit is the user's choice of a longer run (docs/limits.md); the command line and
    Python read the same variable.
    """
    if constant not in _LIMITS:
        raise InvalidArgument(f"unknown parser limit {constant!r}; one of {', '.join(_LIMITS)}.")
    default: int = globals()[constant]
    raw = os.environ.get(f"DEQRMT_{constant}")
    if raw is None or not raw.strip():
        return default
    text = raw.strip()
    if not _LIMIT_TEXT.fullmatch(text) or int(text) < 1:
        from .._arguments import show

        raise InvalidArgument(
            f"the environment variable DEQRMT_{constant}={show(raw)}: give a whole number "
            f"from 1 to 999999999 (the default is {default}), or unset it."
        )
    return int(text)


def _budget(what: str, value: object, limit: int, constant: str, remedy: str) -> BudgetExceeded:
    try:
        need = math.ceil(float(str(value)))
    except ValueError:
        need = limit + 1
    return BudgetExceeded(
        f"{what} is {value}; the limit is {limit}, so that every accepted activation is answered "
        f"within the stated time budget (docs/limits.md). {remedy} To accept a longer run, set "
        f"the environment variable DEQRMT_{constant}={max(need, limit + 1)}."
    )


def _within(constant: str, value: float, what: str, remedy: str, shown: object = None) -> None:
    """Refuse ``value`` above the limit ``constant`` (shown as ``shown`` when given)."""
    if value > limit(constant):
        raise _budget(what, value if shown is None else shown, limit(constant), constant, remedy)


def _literal(node: ast.AST) -> float | None:
    """The value of a number literal, ``-literal`` or ``literal/literal``; None otherwise."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        if isinstance(node.value, bool):
            return None
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _literal(node.operand)
        return None if v is None else (-v if isinstance(node.op, ast.USub) else v)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        a, b = _literal(node.left), _literal(node.right)
        return None if a is None or b is None or b == 0 else a / b
    return None


_SAME_LEVEL = ((ast.Add, ast.Sub), (ast.Mult, ast.Div))


def _flat(parent: ast.AST, child: ast.AST) -> bool:
    """A child continuing its parent's chain of + and − (or * and /) is not a new level."""
    if not (isinstance(parent, ast.BinOp) and isinstance(child, ast.BinOp)):
        return False
    return any(isinstance(parent.op, ops) and isinstance(child.op, ops) for ops in _SAME_LEVEL)


class _Cost:
    """Kinks, transcendental calls and their nesting, and the degree in x of a subtree."""

    __slots__ = ("kinks", "calls", "depth", "degree")

    def __init__(self, kinks: int = 0, calls: int = 0, depth: int = 0, degree: float = 0) -> None:
        self.kinks, self.calls, self.depth, self.degree = kinks, calls, depth, degree


def _cost(node: ast.AST) -> _Cost:
    if isinstance(node, ast.Expression):
        return _cost(node.body)
    if isinstance(node, ast.Name):
        if node.id == "x":
            return _Cost(degree=1)
        return _library_cost(node.id, (), None)
    if isinstance(node, ast.UnaryOp):
        return _cost(node.operand)
    if isinstance(node, ast.BinOp):
        a, b = _cost(node.left), _cost(node.right)
        out = _Cost(a.kinks + b.kinks, a.calls + b.calls, max(a.depth, b.depth))
        if isinstance(node.op, (ast.Add, ast.Sub)):
            out.degree = max(a.degree, b.degree)
        elif isinstance(node.op, (ast.Mult, ast.Div)):
            out.degree = a.degree + b.degree
        elif isinstance(node.op, ast.Pow):
            e = _literal(node.right)
            out.degree = a.degree * abs(e) if e is not None else a.degree
            if b.degree or e is None or e != int(e):  # 2**x, x**0.5: exp/log in disguise
                out.depth = max(a.depth, b.depth) + 1
                out.calls += out.depth
        return out
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return _library_cost(node.func.id, node.args, node)
    # Anything else (attributes, subscripts, …) is refused by the builder; measure its parts.
    parts = [_cost(c) for c in ast.iter_child_nodes(node)]
    return _Cost(
        sum(p.kinks for p in parts),
        sum(p.calls for p in parts),
        max((p.depth for p in parts), default=0),
        max((p.degree for p in parts), default=0),
    )


def _library_cost(name: str, args: Iterable[ast.AST], call: ast.Call | None) -> _Cost:
    args = list(args)
    parts = [_cost(a) for a in args]
    inner_kinks = sum(p.kinks for p in parts)
    inner_calls = sum(p.calls for p in parts)
    inner_depth = max((p.depth for p in parts), default=0)
    inner_degree = max((p.degree for p in parts), default=0)
    # Numeric arguments of a library activation are its parameters; it is then applied to x.
    if name in LIBRARY and name not in FUNCTIONS and all(p.degree == 0 for p in parts):
        inner_degree = 1
        if name == "polynomial":
            inner_degree = max(len(args) - 1, 0)
        inner_degree = _degree(name, inner_degree)
    if call is None and name in LIBRARY:
        inner_degree = _degree(name, 1)
    price = _price(name)
    if name in ("max", "min"):
        extra = max(len(args) - 1, 0)
        kinks = inner_kinks + extra * (inner_kinks + 1)
    else:
        kinks = inner_kinks + price.kinks * (inner_kinks + 1)
    if price.calls:  # a call weighs its nesting level: tanh(tanh(x)) is 1 + 2, mish 2 levels
        levels = range(inner_depth + 1, inner_depth + 1 + price.calls)
        weight = sum(levels) + price.heavy
        return _Cost(kinks, inner_calls + weight, levels[-1], inner_degree)
    return _Cost(kinks, inner_calls, inner_depth, inner_degree)


_RANGE = 10.0  # |x| ≤ 10: where the Gaussian weight of the quadrature lives, in units of τ
#: Bound on |f'| of functions of bounded slope (abs, max, … are 1 almost everywhere).
_SLOPE = {
    "sin": 1.0, "cos": 1.0, "tanh": 1.0, "atan": 1.0, "erf": 1.2, "erfc": 1.2, "sigmoid": 0.25,
    "softplus": 1.0, "relu": 1.0, "abs": 1.0, "max": 1.0, "min": 1.0, "heaviside": 0.0,
    "sign": 0.0,
}  # fmt: skip
_GROWING = frozenset({"exp", "sinh", "cosh"})
_BOUNDED = {"sin": 1.0, "cos": 1.0, "tanh": 1.0, "atan": 1.6, "erf": 1.0, "erfc": 2.0,
            "sigmoid": 1.0, "heaviside": 1.0, "sign": 1.0}  # fmt: skip


def _bounds(node: ast.AST) -> tuple[float, float] | None:
    """Upper bounds on |f| and |f'| over |x| ≤ 10 for a subtree, or None when unknown."""
    try:
        return _bounds_or_none(node)
    except (OverflowError, ZeroDivisionError, ValueError):
        return (math.inf, math.inf)


def _bounds_or_none(node: ast.AST) -> tuple[float, float] | None:
    v = _literal(node)
    if v is not None:
        return (abs(v), 0.0)
    if isinstance(node, ast.Name):
        return {"x": (_RANGE, 1.0), "pi": (math.pi, 0.0)}.get(node.id)
    if isinstance(node, ast.UnaryOp):
        return _bounds(node.operand)
    if isinstance(node, ast.BinOp):
        a, b = _bounds(node.left), _bounds(node.right)
        if a is None or b is None:
            return None
        (va, da), (vb, db) = a, b
        if isinstance(node.op, (ast.Add, ast.Sub)):
            return (va + vb, da + db)
        if isinstance(node.op, ast.Mult):
            return (va * vb, da * vb + va * db)
        if isinstance(node.op, ast.Div):
            c = _literal(node.right)
            return (va / abs(c), da / abs(c)) if c else None
        if isinstance(node.op, ast.Pow):
            e = _literal(node.right)
            if e is None or e != int(e) or e < 1:
                return None
            return (va**e, e * va ** (e - 1) * da)
        return None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        name = node.func.id
        if name not in _SLOPE and name not in _GROWING:
            return None
        parts = [_bounds(a) for a in node.args]
        if not parts or any(p is None for p in parts):
            return None
        known = [p for p in parts if p is not None]
        vu, du = max(p[0] for p in known), max(p[1] for p in known)
        if name in _GROWING:  # exp, sinh, cosh: |f| and |f'| are at most e^|u|
            g = math.exp(vu)
            return (g, g * du)
        value = _BOUNDED.get(name, vu + (1.0 if name == "softplus" else 0.0))
        return (value, _SLOPE[name] * du)
    return None


def _max_frequency(tree: ast.AST) -> float:
    """The largest slope of a sin/cos argument on |x| ≤ 10 (0 when none can be bounded)."""
    worst = 0.0
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("sin", "cos")
            and len(node.args) == 1
        ):
            b = _bounds(node.args[0])
            if b is not None:
                worst = max(worst, b[1])
    return worst


def _check_budget(tree: ast.Expression) -> None:
    """Measure the tree against the limits; raise :class:`BudgetExceeded` on the first one over."""
    nodes, depth = 0, 0
    stack: list[tuple[ast.AST, int]] = [(tree.body, 1)]
    while stack:
        node, d = stack.pop()
        nodes += 1  # at most a few hundred: the length is checked first
        depth = max(depth, d)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.operator, ast.unaryop, ast.expr_context)):
                continue
            stack.append((child, d if _flat(node, child) else d + 1))
    _within(
        "MAX_NODES",
        nodes,
        "the activation's size (syntax-tree nodes)",
        "Shorten it: use a library activation (gelu, silu, …) or fewer terms.",
    )
    _within(
        "MAX_DEPTH",
        depth,
        "the activation's nesting depth",
        "Flatten the expression (fewer nested calls and parentheses).",
    )
    c = _cost(tree)
    _within(
        "MAX_KINKS",
        c.kinks,
        "the number of kinks (abs/max/min/relu/heaviside/sign/piecewise switches, counted "
        "as an upper bound)",
        "Use fewer kinked terms.",
    )
    _within(
        "MAX_POWER",
        c.degree,
        "the power of x (exponents of x multiply: (x**8)**9 is x**72)",
        f"Use exponents of x up to x**{limit('MAX_POWER')}.",
        shown=math.ceil(c.degree),
    )
    _within(
        "MAX_TRANSCENDENTAL",
        c.calls,
        "the number of transcendental calls (exp, log, sqrt, tanh, erf, gelu, …, and "
        "non-integer powers; a call nested k deep counts k, erf/erfc/gelu one more)",
        "Use fewer such calls.",
    )
    freq = _max_frequency(tree)
    _within(
        "MAX_FREQUENCY",
        freq,
        "the frequency of sin/cos (the slope of its argument on |x| <= 10)",
        f"Use sin(c*x) with |c| <= {limit('MAX_FREQUENCY')}.",
        shown=f"{freq:.4g}",
    )
    _within(
        "MAX_WORK",
        (c.kinks + 1) * (c.calls + 1),
        f"the work estimate (kinks + 1)·(transcendental calls + 1) = ({c.kinks} + 1)·"
        f"({c.calls} + 1)",
        "Use fewer kinks or fewer transcendental calls.",
    )
    _within(
        "MAX_TRANSCENDENTAL_DEPTH",
        c.depth,
        "the nesting of transcendental calls (tanh(tanh(x)) is 2)",
        "Nest fewer such calls.",
    )

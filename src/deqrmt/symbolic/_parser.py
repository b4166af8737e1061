"""Safe parsing of user activations given as text.

The text is untrusted (copied from papers, chats, other people's scripts).  In order:

1. characters: ``#`` comments, backslashes, control characters and non-ASCII characters are
   refused, so the accepted text is plain ASCII with nothing hidden in it;
2. :func:`ast.parse` builds a tree (it executes nothing);
3. the tree is measured against the work limits below (size, nesting, kinks, powers of x,
   transcendental calls) before any SymPy object exists; an input beyond a limit raises
   :class:`~deqrmt.BudgetExceeded`, which names the limit, the value and what to do;
4. the tree is walked against a whitelist and SymPy objects are built node by node.

Raw text never reaches ``eval`` or ``sympify``, and an activation's name is the accepted text
with its whitespace collapsed.  Decimal literals are read from their source digits, so "0.1"
is exactly 1/10.  Library activations can be used inside expressions: ``0.5*gelu(x)``,
``elu(2*x)``, ``2*leaky_relu(0.2)`` (numeric arguments are the parameters, applied to x).

The limits keep every accepted activation within the 30 s budget of ``deqrmt coefficients`` on
two cores (measured: docs/limits.md).  A user who accepts a longer run raises one with the
environment variable of its name, for the command line and Python alike:
``DEQRMT_MAX_KINKS=12 deqrmt coefficients …`` (:func:`limit`; the ``BudgetExceeded`` message
names the variable).
"""

from __future__ import annotations

import ast
import difflib
import math
import os
import re
import unicodedata
from collections.abc import Callable, Iterable

import sympy as sp

from .._errors import BudgetExceeded, InvalidArgument, ParseError, UnknownActivation
from ._activation import LIBRARY, Activation, X, library_activation
from ._hints import implicit_product, keywords_hint, syntax_hint

__all__ = [
    "parse_activation",
    "parse_expression",
    "FUNCTIONS",
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

_MAX_BITS = 1000  # ~300 decimal digits
_MAX_MAGNITUDE = sp.Float("1e300")
_MAX_LITERAL_DIGITS = 60


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

# --- what each name costs, for the limits ------------------------------------------------------

#: Kinks a function or library activation adds per application (max/min: one per extra argument).
_KINKS = {
    "abs": 1, "relu": 1, "heaviside": 1, "sign": 1,
    "leaky_relu": 1, "hard_tanh": 2, "elu": 1,
}  # fmt: skip
#: Functions and library activations that count as transcendental calls.
_TRANSCENDENTAL = frozenset(
    {
        "exp", "log", "sqrt", "tanh", "sin", "cos", "sinh", "cosh", "atan", "erf", "erfc",
        "sigmoid", "softplus", "gelu", "silu", "swish", "elu",
    }
)  # fmt: skip
#: Calls that cost one more: erf-type functions, slow to evaluate at many digits, and the only
#: integrands the engine tries to close with SymPy.
_HEAVY = frozenset({"erf", "erfc", "gelu"})
#: Degree in x of the library activations that are polynomials (polynomial(...): its length).
_LIBRARY_DEGREE = {"identity": 1, "quadratic": 2}

# Characters that are easy to paste from a paper, and what to type instead.
_REPLACEMENTS = {
    "−": "-", "–": "-", "—": "-", "×": "*", "·": "*", "⋅": "*", "÷": "/", "²": "**2",
    "³": "**3", "π": "pi", "√": "sqrt", "φ": "x", "σ": "x", "ξ": "x", "’": "", "‘": "", "“": "",
    "”": "", "\u00a0": " ",
}  # fmt: skip
_WHITESPACE = " \t\n\r\f"


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
        inner_degree = _LIBRARY_DEGREE.get(name, inner_degree)
    if call is None and name in LIBRARY:
        inner_degree = _LIBRARY_DEGREE.get(name, 1)
    if name in ("max", "min"):
        extra = max(len(args) - 1, 0)
        kinks = inner_kinks + extra * (inner_kinks + 1)
    else:
        w = _KINKS.get(name, 0)
        kinks = inner_kinks + w * (inner_kinks + 1)
    if name in _TRANSCENDENTAL:  # a call weighs its nesting level: tanh(tanh(x)) is 1 + 2
        weight = inner_depth + 1 + (name in _HEAVY)
        return _Cost(kinks, inner_calls + weight, inner_depth + 1, inner_degree)
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
    if nodes > limit("MAX_NODES"):
        raise _budget(
            "the activation's size (syntax-tree nodes)",
            nodes,
            limit("MAX_NODES"),
            "MAX_NODES",
            "Shorten it: use a library activation (gelu, silu, …) or fewer terms.",
        )
    if depth > limit("MAX_DEPTH"):
        raise _budget(
            "the activation's nesting depth",
            depth,
            limit("MAX_DEPTH"),
            "MAX_DEPTH",
            "Flatten the expression (fewer nested calls and parentheses).",
        )
    c = _cost(tree)
    if c.kinks > limit("MAX_KINKS"):
        raise _budget(
            "the number of kinks (abs/max/min/relu/heaviside/sign/piecewise switches, counted "
            "as an upper bound)",
            c.kinks,
            limit("MAX_KINKS"),
            "MAX_KINKS",
            "Use fewer kinked terms.",
        )
    if c.degree > limit("MAX_POWER"):
        raise _budget(
            "the power of x (exponents of x multiply: (x**8)**9 is x**72)",
            math.ceil(c.degree),
            limit("MAX_POWER"),
            "MAX_POWER",
            f"Use exponents of x up to x**{limit('MAX_POWER')}.",
        )
    if c.calls > limit("MAX_TRANSCENDENTAL"):
        raise _budget(
            "the number of transcendental calls (exp, log, sqrt, tanh, erf, gelu, …, and "
            "non-integer powers; a call nested k deep counts k, erf/erfc/gelu one more)",
            c.calls,
            limit("MAX_TRANSCENDENTAL"),
            "MAX_TRANSCENDENTAL",
            "Use fewer such calls.",
        )
    freq = _max_frequency(tree)
    if freq > limit("MAX_FREQUENCY"):
        raise _budget(
            "the frequency of sin/cos (the slope of its argument on |x| <= 10)",
            f"{freq:.4g}",
            limit("MAX_FREQUENCY"),
            "MAX_FREQUENCY",
            f"Use sin(c*x) with |c| <= {limit('MAX_FREQUENCY')}.",
        )
    work = (c.kinks + 1) * (c.calls + 1)
    if work > limit("MAX_WORK"):
        raise _budget(
            f"the work estimate (kinks + 1)·(transcendental calls + 1) = ({c.kinks} + 1)·"
            f"({c.calls} + 1)",
            work,
            limit("MAX_WORK"),
            "MAX_WORK",
            "Use fewer kinks or fewer transcendental calls.",
        )
    if c.depth > limit("MAX_TRANSCENDENTAL_DEPTH"):
        raise _budget(
            "the nesting of transcendental calls (tanh(tanh(x)) is 2)",
            c.depth,
            limit("MAX_TRANSCENDENTAL_DEPTH"),
            "MAX_TRANSCENDENTAL_DEPTH",
            "Nest fewer such calls.",
        )


# --- building SymPy from the checked tree ------------------------------------------------------


class _Builder:
    def __init__(self, text: str, allow_parameters: bool = False) -> None:
        self.text = text
        self.allow_parameters = allow_parameters
        self.parameters: dict[str, sp.Symbol] = {}

    def build(self, node: ast.AST) -> sp.Expr:
        method = getattr(self, "_" + type(node).__name__, None)
        if method is None:
            raise ParseError(self._where(node, f"{type(node).__name__} is not allowed"))
        result: sp.Expr = method(node)
        return self._checked(node, result)

    def _checked(self, node: ast.AST, e: sp.Expr) -> sp.Expr:
        """Every intermediate result stays a finite, real, moderate number or a tame function.

        Bounds are checked as the tree is built, so a nested power never gets computed.
        """
        if e.has(sp.zoo, sp.oo, -sp.oo, sp.nan):
            raise ParseError(self._where(node, "not finite (log(0), 0**-1, division by zero?)"))
        for r in e.atoms(sp.Rational):
            if r.p.bit_length() > _MAX_BITS or r.q.bit_length() > _MAX_BITS:
                raise ParseError(self._where(node, "a constant in it is too large"))
        if _x_degree(e) > limit("MAX_POWER"):
            raise ParseError(
                self._where(node, f"powers of x beyond x**{limit('MAX_POWER')} are not supported")
            )
        if not e.free_symbols:
            v = e.evalf(15)
            if not v.is_real or v.has(sp.I):
                raise ParseError(self._where(node, f"the constant {e} is not real"))
            if not v.is_finite or abs(v) > _MAX_MAGNITUDE:
                raise ParseError(
                    self._where(node, f"the constant {e} is out of range (|c| > 1e300)")
                )
        return e

    def _within(self, node: ast.AST) -> str:
        """`` in 'x*tahn(x)'`` when the node is part of the text, else nothing."""
        seg = ast.get_source_segment(self.text, node) if hasattr(node, "lineno") else None
        return "" if seg == self.text else f" in {self.text!r}"

    def _where(self, node: ast.AST, what: str, *, whole: bool = True) -> str:
        """``what``, then where: the culprit and the text (only the text when they are the
        same; nothing when ``whole`` is False and the culprit is all of the text)."""
        seg = ast.get_source_segment(self.text, node) if hasattr(node, "lineno") else None
        if seg == self.text:
            return f"{what} in {self.text!r}" if whole else what
        return f"{what}: {seg!r} in {self.text!r}" if seg else f"{what} in {self.text!r}"

    def _Expression(self, node: ast.Expression) -> sp.Expr:
        return self.build(node.body)

    def _Constant(self, node: ast.Constant) -> sp.Expr:
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise ParseError(self._where(node, "only numbers are allowed as constants"))
        digits = ast.get_source_segment(self.text, node) or ""
        m = _NUMBER.match(digits.strip())
        if not m:
            raise ParseError(self._where(node, "unsupported number format"))
        mantissa, exponent = m.group(1), m.group(2)
        if len(mantissa) > _MAX_LITERAL_DIGITS or (exponent and abs(int(exponent[1:])) > 100):
            raise ParseError(self._where(node, "number too long or exponent too large"))
        return sp.Rational(digits.strip())

    def _Name(self, node: ast.Name) -> sp.Expr:
        if node.id in _NAMES:
            return _NAMES[node.id]
        if node.id.startswith("_"):
            raise ParseError(self._where(node, "names starting with '_' are not allowed"))
        if node.id in LIBRARY:
            return self._library(node, node.id, [])  # `0.5*gelu`: gelu applied to x
        if self.allow_parameters and node.id not in FUNCTIONS and node.id.isidentifier():
            if len(self.parameters) >= 8 and node.id not in self.parameters:
                raise ParseError(self._where(node, "at most 8 parameters"))
            return self.parameters.setdefault(node.id, sp.Symbol(node.id, real=True))
        hint = _suggest(node.id, [*_NAMES, *FUNCTIONS, *LIBRARY])
        if node.id in FUNCTIONS:
            hint = f"; {node.id} is a function: write {node.id}(x)"
        if not hint:
            hint = "; the variable is x and the one constant pi (functions: deqrmt activations)"
        raise UnknownActivation(f"unknown name {node.id!r}{self._within(node)}{hint}")

    def _Tuple(self, node: ast.Tuple) -> sp.Expr:
        if re.search(r"\d,\d", self.text):
            fixed = re.sub(r"(\d),(\d)", r"\1.\2", self.text)
            raise ParseError(
                f"a comma in {self.text!r}: decimals take a point, not a comma: {fixed!r}."
            )
        raise ParseError(
            self._where(
                node,
                "a comma outside a function call: an activation is one expression; for the "
                "layers of a network give several (deqrmt explicit relu tanh; in Python a list "
                "['relu', 'tanh'])",
            )
        )

    def _UnaryOp(self, node: ast.UnaryOp) -> sp.Expr:
        operand = self.build(node.operand)
        if isinstance(node.op, ast.USub):
            return -operand
        if isinstance(node.op, ast.UAdd):
            return operand
        raise ParseError(self._where(node, "only unary + and - are allowed"))

    def _BinOp(self, node: ast.BinOp) -> sp.Expr:
        left, right = self.build(node.left), self.build(node.right)
        if isinstance(node.op, ast.Pow):
            if not left.free_symbols and not right.free_symbols and left != 0:
                # estimate |left|**right before SymPy computes it exactly
                size = float(sp.log(abs(left.evalf(15)), 10)) * float(right.evalf(15))
                if size > 300:
                    raise ParseError(
                        self._where(node, "constant exponent too large: the value exceeds 1e300")
                    )
            if not right.has(X):
                r = sp.nsimplify(right)
                cap = limit("MAX_POWER")
                if not (r.is_Rational and abs(r.p) <= cap and r.q <= cap):
                    raise ParseError(
                        self._where(
                            node,
                            f"constant exponents must be rationals p/q with |p|, q <= {cap}",
                        )
                    )
            return sp.Pow(left, right)
        op = _BINOPS.get(type(node.op))
        if op is None:
            hint = " (write powers as x**2)" if isinstance(node.op, ast.BitXor) else ""
            raise ParseError(self._where(node, f"only + - * / ** are allowed{hint}"))
        if isinstance(node.op, ast.Div) and right == 0:
            raise ParseError(self._where(node, "division by zero"))
        return op(left, right)

    def _Call(self, node: ast.Call) -> sp.Expr:
        if not isinstance(node.func, ast.Name):
            fix = implicit_product(self.text) if not isinstance(node.func, ast.Attribute) else None
            what = "only plain function calls like tanh(x) are allowed"
            if fix:
                what += f"; for a product write '*': {fix!r}"
            elif isinstance(node.func, ast.Attribute):
                what += f" (write {node.func.attr}(…), without a module name)"
            raise ParseError(self._where(node, what))
        name = node.func.id
        if node.keywords:
            raise ParseError(self._where(node, keywords_hint(self.text, node), whole=False))
        f = FUNCTIONS.get(name)
        if f is None and name not in LIBRARY:
            if name.startswith("_"):
                raise ParseError(self._where(node, "names starting with '_' are not allowed"))
            if name in _NAMES:  # x(1 + x), pi(x): a product written without `*`
                fix = implicit_product(self.text)
                raise ParseError(
                    self._where(
                        node,
                        f"{name}(…) is not a function; write products with '*'"
                        + (f": {fix!r}" if fix else f" ({name}*(…))"),
                    )
                )
            hint = _suggest(name, [*FUNCTIONS, *LIBRARY])
            if not hint:
                hint = (
                    f"; allowed: {', '.join(sorted(FUNCTIONS))} and the library activations "
                    "(deqrmt activations)"
                )
            raise UnknownActivation(f"unknown function {name!r}{self._within(node)}{hint}")
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                raise ParseError(self._where(node, "*args are not allowed"))
            args.append(self.build(a))
        if f is None:
            return self._library(node, name, args)
        try:
            return f(*args)
        except (ValueError, TypeError) as e:  # e.g. Max of a complex constant
            raise ParseError(self._where(node, f"invalid arguments ({e})")) from None

    def _library(self, node: ast.AST, name: str, args: list[sp.Expr]) -> sp.Expr:
        """A library activation inside an expression.

        ``gelu`` and ``leaky_relu(0.2)`` (numeric arguments: the parameters) are applied to x;
        ``elu(2*x)`` and ``leaky_relu(2*x, 0.2)`` apply it to their first argument.
        """
        if args and args[0].free_symbols:
            inner, params = args[0], args[1:]
        else:
            inner, params = X, args
        if any(p.free_symbols for p in params):
            raise ParseError(
                self._where(
                    node,
                    f"{name}'s parameters must be numbers: {name}(2*x) applies it to 2*x, "
                    f"{name}(0.2) sets its parameters and applies it to x",
                )
            )
        expr = library_activation(name, params).expr
        return expr if inner is X else expr.xreplace({X: inner})


def _x_degree(e: sp.Expr) -> int:
    """An upper bound on the power of x in ``e`` (what the closed-form engine must expand)."""
    if not e.has(X):
        return 0
    if e == X:
        return 1
    if isinstance(e, sp.Pow):
        base, ex = e.as_base_exp()
        if base.has(X) and ex.is_Number:
            return math.ceil(_x_degree(base) * abs(float(ex)))
        return _x_degree(base)
    if isinstance(e, sp.Mul):
        return sum(_x_degree(a) for a in e.args)
    return max(_x_degree(a) for a in e.args)


def _tree(text: str) -> ast.Expression:
    """The checked syntax tree of ``text``: characters, then syntax, then the limits."""
    if not isinstance(text, str):
        raise ParseError(f"activation must be a string, got {type(text).__name__}.")
    _check_characters(text)
    if len(text) > limit("MAX_LENGTH"):
        raise _budget(
            "the activation's length in characters",
            len(text),
            limit("MAX_LENGTH"),
            "MAX_LENGTH",
            "Shorten it: use a library activation (gelu, silu, …) or fewer terms.",
        )
    if not text.strip():
        raise ParseError("activation string is empty; try 'tanh' or 'max(x, 0.1*x)'.")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        raise ParseError(f"cannot parse {text!r}: {e.msg}{syntax_hint(text, e.msg)}.") from None
    except (ValueError, RecursionError, MemoryError):
        raise ParseError(f"cannot parse {text!r}: too deeply nested.") from None
    _check_budget(tree)
    return tree


def _label(text: str) -> str:
    """The activation's name: the accepted text with its whitespace collapsed."""
    return " ".join(text.split())


def parse_expression(text: str) -> sp.Expr:
    """Parse an expression in `x` from the whitelisted grammar into an exact SymPy expression.

    Raises:
      ParseError: outside the grammar (the message names the culprit).
      UnknownActivation: an unknown name or function (with a did-you-mean suggestion).
      BudgetExceeded: beyond one of the limits (``MAX_*``), checked before any SymPy work.

    Example:
      >>> parse_expression("max(x, 0.1*x)")
      Max(x/10, x)
    """
    tree = _tree(text)
    try:
        return _Builder(text.strip()).build(tree)
    except RecursionError:
        raise ParseError(f"expression {text!r} is nested too deeply.") from None


def parse_expression_with_parameters(text: str) -> tuple[sp.Expr, tuple[sp.Symbol, ...]]:
    """Like :func:`parse_expression`, but other names are parameters: ``"a*tanh(b*x)"``."""
    tree = _tree(text)
    builder = _Builder(text.strip(), allow_parameters=True)
    try:
        expr = builder.build(tree)
    except RecursionError:
        raise ParseError(f"expression {text!r} is nested too deeply.") from None
    return expr, tuple(builder.parameters[k] for k in sorted(builder.parameters))


def parse_activation(text: str) -> Activation:
    """A library activation (``tanh``, ``leaky_relu(0.1)``) or an expression in ``x``.

    Library parameters are numbers: ``hard_tanh(1.2, 0.8)``, ``polynomial(0, 1, 0.25)``;
    library activations also work inside expressions: ``0.5*gelu(x) + 0.5*tanh(x)``.  The
    text is parsed by deqrmt's own grammar (no ``eval``), within the budgets of docs/limits.md.

    Args:
      text: the activation, as typed.

    Returns:
      An ``Activation`` (``name``, ``expr``: a SymPy expression in ``x``, and its smooth pieces
      between kinks).

    Raises:
      ParseError: the text is not in the grammar.
      UnknownActivation: a name that is neither a library activation nor an allowed function.
      BudgetExceeded: the text is too long, too deep, or has too many kinks or powers.

    Example:
      >>> parse_activation("2*leaky_relu(0.2)").expr
      2*Max(x/5, x)
      >>> parse_activation("tanh")
      Activation(name='tanh', expr=tanh(x))
    """
    tree = _tree(text)
    body = tree.body
    builder = _Builder(text.strip())
    if isinstance(body, ast.Name) and body.id in LIBRARY:
        return library_activation(body.id)
    if (
        isinstance(body, ast.Call)
        and isinstance(body.func, ast.Name)
        and body.func.id in LIBRARY
        and not body.keywords
    ):
        args = [builder.build(a) for a in body.args]
        # `leaky_relu(0.1)` is a parametrised library entry; `relu(2*x)` is an expression.
        if args and all(not a.has(X) for a in args):
            return library_activation(body.func.id, args)
    expr = parse_expression(text)
    if not expr.has(X):
        raise ParseError(f"activation {text!r} does not depend on x.")
    return Activation(_label(text), expr)

"""Safe parsing of user activations given as text.

The text is parsed by :func:`ast.parse` (which builds a tree and executes nothing) and the
tree is walked against a whitelist; SymPy objects are built node by node.  Raw text never
reaches ``eval`` or ``sympify``.  Decimal literals are read from their source digits, so
"0.1" is exactly 1/10.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable

import sympy as sp

from .._errors import ParseError, UnknownActivation
from ._activation import LIBRARY, Activation, X, library_activation

__all__ = ["parse_activation", "parse_expression", "MAX_LENGTH", "FUNCTIONS"]

MAX_LENGTH = 400
_MAX_BITS = 1000  # ~300 decimal digits
_MAX_MAGNITUDE = sp.Float("1e300")
_MAX_POWER = 64  # |p|, |q| of a constant exponent: x**1000 would only make SymPy crawl
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
        if _x_degree(e) > _MAX_POWER:
            raise ParseError(
                self._where(node, f"powers of x beyond x**{_MAX_POWER} are not supported")
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

    def _where(self, node: ast.AST, what: str) -> str:
        seg = ast.get_source_segment(self.text, node) if hasattr(node, "lineno") else None
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
        if self.allow_parameters and node.id not in FUNCTIONS and node.id.isidentifier():
            if len(self.parameters) >= 8 and node.id not in self.parameters:
                raise ParseError(self._where(node, "at most 8 parameters"))
            return self.parameters.setdefault(node.id, sp.Symbol(node.id, real=True))
        raise UnknownActivation(
            self._where(node, f"unknown name {node.id!r}; the variable is x, constants: pi")
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
                if not (r.is_Rational and abs(r.p) <= _MAX_POWER and r.q <= _MAX_POWER):
                    raise ParseError(
                        self._where(
                            node,
                            f"constant exponents must be rationals p/q with |p|, q <= {_MAX_POWER}",
                        )
                    )
            return sp.Pow(left, right)
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise ParseError(self._where(node, "only + - * / ** are allowed"))
        if isinstance(node.op, ast.Div) and right == 0:
            raise ParseError(self._where(node, "division by zero"))
        return op(left, right)

    def _Call(self, node: ast.Call) -> sp.Expr:
        if not isinstance(node.func, ast.Name):
            raise ParseError(
                self._where(node, "only plain function calls like tanh(x) are allowed")
            )
        if node.keywords:
            raise ParseError(self._where(node, "keyword arguments are not allowed"))
        name = node.func.id
        f = FUNCTIONS.get(name)
        if f is None:
            if name.startswith("_"):
                raise ParseError(self._where(node, "names starting with '_' are not allowed"))
            raise UnknownActivation(
                self._where(
                    node, f"unknown function {name!r}; allowed: {', '.join(sorted(FUNCTIONS))}"
                )
            )
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                raise ParseError(self._where(node, "*args are not allowed"))
            args.append(self.build(a))
        try:
            return f(*args)
        except (ValueError, TypeError) as e:  # e.g. Max of a complex constant
            raise ParseError(self._where(node, f"invalid arguments ({e})")) from None


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
    if not isinstance(text, str):
        raise ParseError(f"activation must be a string, got {type(text).__name__}.")
    if len(text) > MAX_LENGTH:
        raise ParseError(f"activation string is {len(text)} characters; the limit is {MAX_LENGTH}.")
    if not text.strip():
        raise ParseError("activation string is empty; try 'tanh' or 'max(x, 0.1*x)'.")
    try:
        return ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        raise ParseError(f"cannot parse {text!r}: {e.msg}.") from None


def parse_expression(text: str) -> sp.Expr:
    """Parse an expression in `x` from the whitelisted grammar into an exact SymPy expression.

    Example:
      >>> parse_expression("max(x, 0.1*x)")
      Max(x, x/10)
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

    Library parameters are numbers: ``hard_tanh(1.2, 0.8)``, ``polynomial(0, 1, 0.25)``.
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
    return Activation(text.strip(), expr)

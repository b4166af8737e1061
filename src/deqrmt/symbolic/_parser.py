"""Safe parsing of user activations given as text.

The text is untrusted (copied from papers, chats, other people's scripts).  In order:

1. characters: ``#`` comments, backslashes, control characters and non-ASCII characters are
   refused, so the accepted text is plain ASCII with nothing hidden in it;
2. :func:`ast.parse` builds a tree (it executes nothing);
3. the tree is measured against the work limits below (size, nesting, kinks, powers of x,
   transcendental calls) before any SymPy object exists; an input beyond a limit raises
   :class:`~deqrmt.BudgetExceeded`, which names the limit, the value and what to do;
4. the tree is walked against a whitelist and SymPy objects are built node by node.

Steps 1 and 4 read the grammar's tables (:mod:`._parse_grammar`); step 3 is
:mod:`._parse_limits`; this module builds the SymPy objects and holds the entry points.

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
import math
import re

import sympy as sp

from .. import _arguments
from .._errors import ParseError, UnknownActivation
from ._activation import LIBRARY, TORCH_NAMES, Activation, X, library_activation
from ._hints import implicit_product, keywords_hint, syntax_hint
from ._parse_grammar import _BINOPS, _NAMES, _NUMBER, FUNCTIONS, _check_characters, _suggest
from ._parse_limits import (
    MAX_DEPTH,
    MAX_FREQUENCY,
    MAX_KINKS,
    MAX_LENGTH,
    MAX_NODES,
    MAX_POWER,
    MAX_TRANSCENDENTAL,
    MAX_TRANSCENDENTAL_DEPTH,
    MAX_WORK,
    _budget,
    _check_budget,
    limit,
)

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

_MAX_BITS = 1000  # ~300 decimal digits
_MAX_MAGNITUDE = sp.Float("1e300")
_MAX_LITERAL_DIGITS = 60


# --- building SymPy from the checked tree ------------------------------------------------------


def _torch_hint(name: str) -> str:
    """``"; did you mean 'leaky_relu'? (torch.nn.LeakyReLU)"`` for a torch.nn class name."""
    lib = TORCH_NAMES.get(name)
    return f"; did you mean {lib!r}? (torch.nn.{name})" if lib is not None else ""


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
        hint = _torch_hint(node.id) or _suggest(node.id, [*_NAMES, *FUNCTIONS, *LIBRARY])
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
            hint = _torch_hint(name) or _suggest(name, [*FUNCTIONS, *LIBRARY])
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
    if not isinstance(text, str):
        raise ParseError(
            f"text={_arguments.show(text)}: an activation to parse is a string, got "
            f"{type(text).__name__}; deqrmt.symbolic.get_activation also takes Activation and "
            "SymPy objects."
        )
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

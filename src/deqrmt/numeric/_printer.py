"""Code generation: SymPy expressions → Python source that runs on a context, one per backend.

The one door from SymPy into executed code.  Generated functions take the context as their
first argument (``ctx``), so the same body runs with a private ``mpmath.MPContext`` at any
precision, with ``mpmath.fp`` for speed, with the Arb contexts (:mod:`._arb`), on float64 numpy
arrays (:data:`deqrmt.numeric._contexts.NUMPY`) or on torch tensors
(:class:`deqrmt.validate._torch_context.TorchContext`); the global ``mp.dps`` is never touched.
Rationals print as ``ctx.mpf(p)/ctx.mpf(q)``: exact at the context's precision (the float
contexts' ``mpf`` is ``float``: the quotient is then p/q correctly rounded).

Two dialects of one printer.  Scalar contexts (mpmath, Arb) get Python control flow: a
Piecewise prints as a conditional expression, so only the selected branch is evaluated, and
``max``/``min``/``and`` are Python's.  Array contexts (``arrays=True``) cannot branch on a
condition that holds in some lanes only, so there every construct that branches is a call the
context implements elementwise: ``ctx.piecewise((cond, value), …)`` (every branch evaluated, the
first true condition selected lane by lane), ``ctx.heaviside``, ``ctx.maximum``,
``ctx.minimum``, ``ctx.logical_and``/``logical_or``/``logical_not``, ``ctx.logistic`` and
``ctx.softplus``.  Everything else prints the same in both; :data:`ARRAY_NAMES` lists every
name an array context must provide.  (Common subexpressions are computed before the return
expression: a sub-expression that several branches share is evaluated whichever is selected.)

What may be printed is decided here, not by the caller: an expression's free symbols
must be among the declared arguments, and every symbol prints as an identifier of ours
(``_a0``, ``_a1``, … for the arguments, ``_t0``, ``_t1``, … for common subexpressions), never by
its SymPy name, which may be any text (a user's parameter name, or a name read from a cache
file).  Every node must be of a whitelisted SymPy class; anything else (another Symbol, a
Dummy or Wild that is not an argument, an undefined or foreign Function, ``Str``, ``Integral``,
a Float) raises :class:`DerivationError` before any source exists.  ``function_source`` names
the arguments of a ``def`` only with such identifiers, or with fixed labels of the caller's that
pass :func:`_check_label` (``deqrmt codegen``'s ``x`` and ``tau``).

Stable forms: :data:`STABLE_FORMS` is a tuple of rewrite rules (logistic and softplus of an
exponential, log-sum-exp, ``expm1``), applied on request before printing, so that code run in
floats never takes ``exp`` of a large argument where the value is finite: ``deqrmt codegen``'s
modules (``mpmath.fp`` over the whole real line), the float sweep's pieces and the Monte Carlo's
φ use them.  The engine's own functions do not: its quadrature stays on finite panels at the
working precision, and the Arb context has no ``max``/``abs`` branches.
"""

from __future__ import annotations

import functools
import hashlib
import keyword
import linecache
import re
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import sympy as sp
from sympy.core.function import AppliedUndef
from sympy.functions.elementary.piecewise import ExprCondPair
from sympy.printing.pycode import MpmathPrinter

from .._errors import DerivationError

__all__ = [
    "ARRAY_NAMES",
    "ContextPrinter",
    "Rewrite",
    "STABLE_FORMS",
    "compile_function",
    "function_source",
    "stable_forms",
]


# --- stable forms ------------------------------------------------------------------------------


class Logistic(sp.Function):  # type: ignore[misc] # SymPy ships no types
    """σ(u) = 1/(1 + e^(−u)), printed as a branch that never exponentiates a positive argument."""

    nargs = 1


class Softplus(sp.Function):  # type: ignore[misc]
    """log(1 + e^u), printed as ``max(u, 0) + log1p(e^(−|u|))`` (a branch on the sign of u)."""

    nargs = 1


class Rewrite(NamedTuple):
    """One rewrite rule, applied bottom-up with ``expr.replace(query, value)``."""

    name: str
    query: Callable[[sp.Basic], bool]
    value: Callable[[sp.Basic], sp.Basic]


def _exp_plus_constant(e: sp.Basic) -> tuple[sp.Expr, sp.Expr] | None:
    """(c, u) when ``e`` is ``c + exp(u)`` with a positive rational c, else None."""
    if not isinstance(e, sp.Add) or len(e.args) != 2:
        return None
    c, t = sorted(e.args, key=lambda a: isinstance(a, sp.exp))
    if isinstance(t, sp.exp) and isinstance(c, sp.Rational) and c > 0:
        return c, t.args[0]
    return None


def _shift(u: sp.Expr, c: sp.Expr) -> sp.Expr:
    """u − log c (c a positive rational): c + e^u = c·(1 + e^(u − log c))."""
    return u if c == 1 else u - sp.log(c)


def _is_logistic_product(e: sp.Basic) -> bool:
    return isinstance(e, sp.Mul) and _logistic_product(e) is not None


def _multiple(w: sp.Expr, u: sp.Expr) -> int | None:
    """k when w = k·u for an integer k ≥ 1, else None."""
    k = w / u
    if not k.is_Integer:
        k = sp.cancel(k)
    return int(k) if k.is_Integer and k >= 1 else None


def _logistic_product(e: sp.Mul) -> sp.Expr | None:
    """e^(ku)·(c + e^u)^(−n), 1 ≤ k ≤ n → c^(k−n)·σ(v)^k·σ(−v)^(n−k) with v = u − log c."""
    factors = list(e.args)
    for i, f in enumerate(factors):
        if not (isinstance(f, sp.Pow) and f.exp.is_Integer and f.exp < 0):
            continue
        cu = _exp_plus_constant(f.base)
        if cu is None:
            continue
        c, u = cu
        n = -int(f.exp)
        for j, g in enumerate(factors):
            if j == i or not isinstance(g, sp.exp):
                continue
            k = _multiple(g.args[0], u)
            if k is not None and k <= n:
                v = _shift(u, c)
                rest = [h for m, h in enumerate(factors) if m not in (i, j)]
                return sp.Mul(*rest, c ** (k - n) * Logistic(v) ** k * Logistic(-v) ** (n - k))
    return None


def _is_logistic_power(e: sp.Basic) -> bool:
    return (
        isinstance(e, sp.Pow)
        and e.exp.is_Integer
        and e.exp < 0
        and _exp_plus_constant(e.base) is not None
    )


def _logistic_power(e: sp.Pow) -> sp.Expr:
    """(c + e^u)^(−n) → c^(−n)·σ(−u')^n."""
    c, u = _exp_plus_constant(e.base)  # type: ignore[misc]
    n = -int(e.exp)
    return c ** (-n) * Logistic(-_shift(u, c)) ** n


def _is_log_sum_exp(e: sp.Basic) -> bool:
    if not isinstance(e, sp.log) or not isinstance(e.args[0], sp.Add):
        return False
    arg = e.args[0]
    two_exps = len(arg.args) == 2 and all(isinstance(a, sp.exp) for a in arg.args)
    return two_exps or _exp_plus_constant(arg) is not None


def _log_sum_exp(e: sp.log) -> sp.Expr:
    """log(c + e^u) → log c + softplus(u'); log(e^a + e^b) → a + softplus(b − a)."""
    arg = e.args[0]
    cu = _exp_plus_constant(arg)
    if cu is not None:
        c, u = cu
        return sp.log(c) + Softplus(_shift(u, c))
    a, b = (t.args[0] for t in arg.args)
    return a + Softplus(b - a)


def _is_exp_minus_one(e: sp.Basic) -> bool:
    return (
        isinstance(e, sp.Add)
        and len(e.args) == 2
        and sp.S.NegativeOne in e.args
        and any(isinstance(a, sp.exp) for a in e.args)
    )


def _exp_minus_one(e: sp.Add) -> sp.Expr:
    from sympy.codegen.cfunctions import expm1  # (sympy.codegen costs 30 ms to import)

    (t,) = (a for a in e.args if isinstance(a, sp.exp))
    return expm1(t.args[0])


#: The rewrite rules for code that must evaluate in floats (``mpmath.fp``) wherever its value
#: is finite, in the order they are applied: a product e^u/(1 + e^u)^n first (else its
#: denominator is rewritten alone and e^u overflows), then the remaining denominators, then
#: logarithms of sums of exponentials, then e^u − 1 (accuracy near 0, not range).
STABLE_FORMS: tuple[Rewrite, ...] = (
    Rewrite("logistic product", _is_logistic_product, _logistic_product),
    Rewrite("logistic", _is_logistic_power, _logistic_power),
    Rewrite("log-sum-exp", _is_log_sum_exp, _log_sum_exp),
    Rewrite("expm1", _is_exp_minus_one, _exp_minus_one),
)


def stable_forms(expr: sp.Expr, rules: Sequence[Rewrite] = STABLE_FORMS) -> sp.Expr:
    """``expr`` with ``rules`` applied in order (the same value, other operations)."""
    for rule in rules:
        expr = expr.replace(rule.query, rule.value)
    return expr


# --- the whitelist -----------------------------------------------------------------------------

#: Function classes the printer prints (each as a fixed ``ctx.<name>`` call or a builtin).
_FUNCTIONS: frozenset[type] = frozenset({
    sp.exp, sp.log, sp.erf, sp.erfc, sp.Abs, sp.sign, sp.Heaviside, sp.Max, sp.Min,
    sp.sin, sp.cos, sp.tan, sp.sinh, sp.cosh, sp.tanh,
    sp.asin, sp.acos, sp.atan, sp.atan2, sp.asinh, sp.acosh, sp.atanh,
    sp.gamma, sp.lowergamma, sp.uppergamma, sp.besseli, sp.besselj, sp.besselk,
    Logistic, Softplus,
})  # fmt: skip
#: Other node classes (exact classes; numbers by isinstance below).
_NODES: frozenset[type] = frozenset({
    sp.Add, sp.Mul, sp.Pow, sp.Piecewise, ExprCondPair,
    sp.StrictLessThan, sp.LessThan, sp.StrictGreaterThan, sp.GreaterThan,
    sp.Equality, sp.Unequality, sp.And, sp.Or, sp.Not,
    type(sp.true), type(sp.false), type(sp.pi), type(sp.E), type(sp.EulerGamma),
    type(sp.oo), type(sp.S.NegativeInfinity),
})  # fmt: skip

#: Names the generated code itself uses: a caller's label may be none of them.
_RESERVED = frozenset({"ctx", "abs", "max", "min", "mpmath", "math", "Fraction"}) | frozenset(
    keyword.kwlist
)
#: Every ``ctx.<name>`` that code printed with ``arrays=True`` may call (the printer's whole
#: whitelist): an array context implements all of them.  ``lowergamma``/``uppergamma`` print as
#: ``gammainc``; ``Heaviside`` as ``heaviside``; ``Max``/``Min`` as ``maximum``/``minimum``.
ARRAY_NAMES: frozenset[str] = frozenset({
    "mpf", "pi", "e", "euler", "inf",
    "exp", "log", "sqrt", "erf", "erfc", "sign", "sin", "cos", "tan", "sinh", "cosh", "tanh",
    "asin", "acos", "atan", "atan2", "asinh", "acosh", "atanh", "gamma", "gammainc",
    "besseli", "besselj", "besselk", "expm1", "log1p",
    "piecewise", "heaviside", "maximum", "minimum", "logical_and", "logical_or", "logical_not",
    "logistic", "softplus",
})  # fmt: skip
_LABEL = re.compile(r"[a-z][a-z0-9_]{0,30}")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,60}")


def _check_label(label: str) -> str:
    """A fixed, readable argument name of the caller's: lowercase ASCII, not reserved."""
    if not isinstance(label, str) or not _LABEL.fullmatch(label) or label in _RESERVED:
        raise DerivationError(f"argument label {label!r} is not a plain lowercase identifier.")
    return label


def _cfunction(cls: type) -> bool:
    """sympy.codegen's expm1 or log1p (built by a rewrite; imported only then: 30 ms)."""
    if cls.__name__ not in ("expm1", "log1p"):
        return False
    from sympy.codegen import cfunctions

    return cls is cfunctions.expm1 or cls is cfunctions.log1p


def _check_nodes(expr: sp.Basic, allowed: frozenset[sp.Basic]) -> None:
    """Raise DerivationError unless every node of ``expr`` is printable and every symbol allowed."""
    for node in sp.preorder_traversal(expr):
        cls = type(node)
        if isinstance(node, sp.Symbol):
            if node not in allowed:
                raise DerivationError(
                    f"a {cls.__name__} that is not a declared argument reached code "
                    f"generation ({node.name!r}); generated code names only its arguments."
                )
        elif isinstance(node, sp.Float):
            raise DerivationError(f"Float {node} reached code generation; constants must be exact.")
        elif isinstance(node, sp.Rational) or cls in _FUNCTIONS or cls in _NODES or _cfunction(cls):
            continue
        else:
            what = "undefined function" if isinstance(node, AppliedUndef) else "class"
            raise DerivationError(
                f"{what} {cls.__name__!r} cannot be printed as code (not in the printer's "
                "whitelist)."
            )


class ContextPrinter(MpmathPrinter):  # type: ignore[misc]
    """MpmathPrinter that prints ``ctx.<name>`` for ``mpmath.<name>`` and symbols by a table.

    ``names`` maps each symbol that may appear to its identifier; any other symbol raises.
    ``arrays`` selects the array dialect (see the module docstring): every branch becomes a
    ``ctx`` call that an array context evaluates elementwise.
    """

    def __init__(self, names: dict[sp.Symbol, str] | None = None, *, arrays: bool = False) -> None:
        super().__init__({"fully_qualified_modules": True, "inline": True, "strict": True})
        self._names: dict[sp.Symbol, str] = dict(names or {})
        self._arrays = bool(arrays)

    def doprint(self, expr: Any, assign_to: Any = None) -> str:
        _check_nodes(sp.sympify(expr), frozenset(self._names))
        return self._checked(expr, assign_to)

    def _checked(self, expr: Any, assign_to: Any = None) -> str:
        """``doprint`` of an expression :func:`_check_nodes` already passed (the printing
        methods still refuse any symbol outside the table)."""
        return str(super().doprint(expr, assign_to))

    def _module_format(self, fqn: str, register: bool = True) -> str:
        if fqn.startswith("mpmath."):
            return "ctx." + fqn[len("mpmath.") :]
        return str(super()._module_format(fqn, register))

    def _print_Symbol(self, e: sp.Symbol) -> str:
        try:
            return self._names[e]
        except KeyError:
            raise DerivationError(
                f"symbol {e.name!r} is not a declared argument of the generated code."
            ) from None

    _print_Dummy = _print_Symbol
    _print_Wild = _print_Symbol

    def _print_not_supported(self, expr: Any) -> str:
        raise DerivationError(f"{type(expr).__name__} cannot be printed as code.")

    def emptyPrinter(self, expr: Any) -> str:  # noqa: N802 (SymPy's name)
        raise DerivationError(f"{type(expr).__name__} cannot be printed as code.")

    def _print_Float(self, e: sp.Float) -> str:
        raise DerivationError(f"Float {e} reached code generation; constants must be exact.")

    def _print_Integer(self, e: sp.Integer) -> str:
        # Python ints are exact; mixed with mpf they promote at the context's precision.
        return str(e.p)

    # --- what branches: Python control flow for scalars, a ctx call for arrays ---------------

    def _call(self, name: str, args: Sequence[Any]) -> str:
        return f"ctx.{name}({', '.join(self._print(a) for a in args)})"

    def _print_Piecewise(self, e: sp.Piecewise) -> str:
        if not self._arrays:
            return str(super()._print_Piecewise(e))
        pairs = ", ".join(f"({self._print(c)}, {self._print(v)})" for v, c in e.args)
        return f"ctx.piecewise({pairs})"

    def _print_Heaviside(self, e: sp.Heaviside) -> str:
        if not self._arrays:  # SymPy's own: rewritten as a Piecewise conditional
            return str(self._print_Function(e))
        return self._call("heaviside", (e.args[0], e.args[1] if len(e.args) > 1 else sp.S.Half))

    def _print_Max(self, e: sp.Max) -> str:
        return self._call("maximum", e.args) if self._arrays else str(super()._print_Max(e))

    def _print_Min(self, e: sp.Min) -> str:
        return self._call("minimum", e.args) if self._arrays else str(super()._print_Min(e))

    def _print_And(self, e: sp.And) -> str:
        return self._call("logical_and", e.args) if self._arrays else str(super()._print_And(e))

    def _print_Or(self, e: sp.Or) -> str:
        return self._call("logical_or", e.args) if self._arrays else str(super()._print_Or(e))

    def _print_Not(self, e: sp.Not) -> str:
        return self._call("logical_not", e.args) if self._arrays else str(super()._print_Not(e))

    def _branch_argument(self, e: sp.Basic) -> str:
        """The argument of a stable form, parenthesised (printed three times: keep it small)."""
        u = self._print(e.args[0])
        return u if e.args[0].is_Atom else f"({u})"

    def _print_Logistic(self, e: Logistic) -> str:
        if self._arrays:
            return self._call("logistic", e.args)
        u = self._branch_argument(e)
        exp = self._module_format("mpmath.exp")
        return f"(1/(1 + {exp}(-{u})) if {u} >= 0 else {exp}({u})/(1 + {exp}({u})))"

    def _print_Softplus(self, e: Softplus) -> str:
        if self._arrays:
            return self._call("softplus", e.args)
        u = self._branch_argument(e)
        exp, log1p_ = self._module_format("mpmath.exp"), self._module_format("mpmath.log1p")
        return f"({u} + {log1p_}({exp}(-{u})) if {u} >= 0 else {log1p_}({exp}({u})))"


# --- functions ---------------------------------------------------------------------------------


def function_source(
    name: str,
    args: Sequence[sp.Symbol],
    exprs: Sequence[sp.Expr],
    doc: str = "",
    *,
    labels: Sequence[str] | None = None,
    rewrite: Sequence[Rewrite] = (),
    arrays: bool = False,
) -> str:
    """Source of ``def name(ctx, _a0, _a1, …): return (expr0, expr1, ...)`` with common
    subexpressions.

    Args:
      name: the function's name (an identifier of ours, e.g. ``"phi_piece"``).
      args: the symbols the expressions may contain; the i-th prints as ``_a{i}``.
      exprs: the returned expressions; a free symbol outside ``args``, or a node outside the
        printer's whitelist, raises :class:`DerivationError`.
      doc: a docstring, emitted as a ``repr`` literal (it may quote user text).
      labels: readable names for the arguments instead of ``_a{i}``, fixed text of the
        caller's (lowercase ASCII identifiers, not ``ctx`` or a keyword). Keyword-only.
      rewrite: rules applied to every expression first (:data:`STABLE_FORMS`). Keyword-only.
      arrays: print the array dialect (for :data:`ARRAY_NAMES` contexts). Keyword-only.
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name) or keyword.iskeyword(name):
        raise DerivationError(f"function name {name!r} is not an identifier.")
    args = tuple(args)
    if labels is None:
        arg_ids = tuple(f"_a{i}" for i in range(len(args)))
    else:
        arg_ids = tuple(_check_label(label) for label in labels)
        if len(arg_ids) != len(args) or len(set(arg_ids)) != len(arg_ids):
            raise DerivationError(f"labels {list(arg_ids)} do not name the {len(args)} arguments.")
    lines = [f"def {name}({', '.join(['ctx', *arg_ids])}):"]
    if doc:
        # repr, never an f-string docstring: ``doc`` may quote user text (an activation name),
        # and a literal made by repr cannot close itself early.
        lines.append(f"    {doc!r}")
    assignments, body = _body(tuple(exprs), args, arg_ids, tuple(rewrite), bool(arrays))
    lines += assignments
    lines.append(f"    return ({body},)")
    return "\n".join(lines) + "\n"


def _body(
    exprs: tuple[sp.Expr, ...],
    args: tuple[sp.Symbol, ...],
    arg_ids: tuple[str, ...],
    rewrite: tuple[Rewrite, ...],
    arrays: bool,
) -> tuple[tuple[str, ...], str]:
    for a in args:
        if not isinstance(a, sp.Symbol) or isinstance(a, sp.Wild):
            raise DerivationError(f"argument {a!r} is not a Symbol.")
    if len(set(args)) != len(args):
        raise DerivationError("the arguments of a generated function must be distinct symbols.")
    exprs = tuple(sp.sympify(e) for e in exprs)
    try:
        hash(exprs)
    except TypeError:  # a mutable argument (a Matrix): not memoised
        return _cse_and_print.__wrapped__(exprs, args, arg_ids, rewrite, arrays)
    return _cse_and_print(exprs, args, arg_ids, rewrite, arrays)


# Memoised on the expressions and arguments (the CSE and its printing are most of the cost, and
# pure): the Arb encloser, ``deqrmt codegen`` and the derived formulas ask for the same lists
# again for every activation and setting.
@functools.lru_cache(maxsize=256)
def _cse_and_print(
    exprs: tuple[sp.Expr, ...],
    args: tuple[sp.Symbol, ...],
    arg_ids: tuple[str, ...],
    rewrite: tuple[Rewrite, ...],
    arrays: bool,
) -> tuple[tuple[str, ...], str]:
    """The CSE assignments (printed, indented) and the returned tuple's items, printed."""
    declared = frozenset(args)
    for e in exprs:
        # Symbols are told apart by name and assumptions, never printed by name: x and a
        # Symbol('x') without assumptions are two symbols, and only a declared one prints.
        # Bound symbols (inside an Integral, a Lambda) are refused by the whitelist.
        _check_nodes(e, declared)
    work = [stable_forms(e, rewrite) for e in exprs]
    # Our own temporaries: Dummies cannot collide with any symbol of the input.
    temps = sp.numbered_symbols("t", cls=sp.Dummy)
    replacements, reduced = sp.cse(work, symbols=temps, optimizations=None)
    if rewrite and not arrays:  # (an array context's logistic/softplus reads its argument once)
        replacements, reduced = _hoist_branch_arguments(replacements, reduced, temps)
    names: dict[sp.Symbol, str] = dict(zip(args, arg_ids, strict=True))
    for i, (sym, _) in enumerate(replacements):
        names[sym] = f"_t{i}"
    printer = ContextPrinter(names, arrays=arrays)
    # checked above; CSE and the rewrites build only whitelisted nodes, and the printer's own
    # methods still refuse any symbol outside ``names``
    assignments = tuple(f"    {names[sym]} = {printer._checked(sub)}" for sym, sub in replacements)
    return assignments, ", ".join(printer._checked(e) for e in reduced)


def _hoist_branch_arguments(
    replacements: list[tuple[sp.Symbol, sp.Expr]],
    reduced: list[sp.Expr],
    temps: Any,
) -> tuple[list[tuple[sp.Symbol, sp.Expr]], list[sp.Expr]]:
    """Give every compound argument of a stable form its own temporary: the branch prints its
    argument three times, which is neither readable nor free."""
    out: list[tuple[sp.Symbol, sp.Expr]] = []
    seen: dict[sp.Expr, sp.Symbol] = {}

    def simple(u: sp.Expr) -> bool:
        return u.is_Atom or (
            u.is_Mul and len(u.args) == 2 and u.args[0] == -1 and u.args[1].is_Atom
        )

    def hoist(node: sp.Basic) -> sp.Basic:
        u = node.args[0]
        if u not in seen:
            seen[u] = next(temps)
            out.append((seen[u], u))
        return node.func(seen[u])

    def pull(e: sp.Expr) -> sp.Expr:
        return e.replace(
            lambda n: isinstance(n, (Logistic, Softplus)) and not simple(n.args[0]), hoist
        )

    for sym, sub in replacements:
        sub = pull(sub)
        out.append((sym, sub))
    return out, [pull(e) for e in reduced]


def print_constant(expr: sp.Expr) -> str:
    """One expression without symbols, printed for a context ``ctx`` (e.g. a kink)."""
    return ContextPrinter().doprint(sp.sympify(expr))


def compile_function(
    name: str,
    args: Sequence[sp.Symbol],
    exprs: Sequence[sp.Expr],
    doc: str = "",
    *,
    rewrite: Sequence[Rewrite] = (),
    arrays: bool = False,
) -> Callable[..., tuple[Any, ...]]:
    """Compile :func:`function_source` (same arguments); the source is kept in ``linecache`` and
    ``__doc__``.  The result is ``f(ctx, *args) -> tuple``: with ``arrays`` it takes an array
    context (:data:`deqrmt.numeric._contexts.NUMPY`, the torch context), else an mpmath or Arb
    context.

    The only ``exec`` in the package: what it runs is printed by :class:`ContextPrinter` from
    whitelisted nodes and declared arguments, so no SymPy name (user or cache text) reaches it.
    """
    src = function_source(name, args, exprs, doc, rewrite=rewrite, arrays=arrays)
    filename = f"<deqrmt-generated-{name}-{hashlib.sha1(src.encode()).hexdigest()[:10]}>"
    namespace: dict[str, Any] = {}
    exec(compile(src, filename, "exec"), namespace)  # printed from whitelisted nodes only
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    fn: Callable[..., tuple[Any, ...]] = namespace[name]
    fn.__doc__ = (doc + "\n\n" if doc else "") + src
    return fn

"""Activations given as objects: SymPy expressions, ``sympy.Lambda`` and well-known callables.

Each object is turned into the text of the corresponding string activation, which
:func:`~deqrmt.symbolic.parse_activation` then reads, so every whitelist and budget of the
parser applies and ``np.tanh``, ``torch.tanh``, ``nn.Tanh()`` and ``"tanh"`` are one and the
same :class:`~deqrmt.symbolic.Activation` (same name, same expression, same cache entries, same
output bytes).  The accepted objects:

* a SymPy expression in one symbol, of any name (``sympy.tanh(y)``, ``Max(t, t/10)``), built
  from the parser's functions (exp, log, sqrt, abs, Max, Min, tanh, sin, cos, sinh, cosh, atan,
  erf, erfc, Heaviside, sign), numbers, pi, E and ``Piecewise`` with conditions linear in the
  symbol; its text is SymPy's with the symbol written ``x`` (``tanh(x)``);
* a ``sympy.Lambda`` of one variable, and the SymPy function classes ``sympy.tanh``, … ;
* a known function: numpy (``np.tanh``, ``np.sin``, …), math (``math.tanh``, …), builtin
  ``abs``, scipy.special (``erf``, ``erfc``, ``expit``), torch (``torch.tanh``, ``torch.relu``,
  ``torch.sigmoid``, …), ``torch.special`` and ``torch.nn.functional`` (``relu``, ``gelu``,
  ``silu``, ``softplus``, ``elu``, ``leaky_relu``, ``hardtanh``, ``mish``, …), also as a
  ``functools.partial`` with keyword parameters (``partial(F.leaky_relu, negative_slope=0.2)``);
* a ``torch.nn`` activation module (:data:`MODULES`): ``nn.SiLU()``, ``nn.GELU()`` (the exact
  erf form; ``approximate='tanh'`` is the tanh form), ``nn.Softplus(beta)``,
  ``nn.LeakyReLU(slope)``, ``nn.ELU(alpha)``, ``nn.Hardtanh(min_val, max_val)``, … .
  ``nn.Softplus``'s ``threshold`` is a numerical detail of torch (above it torch returns x, to
  avoid overflowing e^{βx}; the difference is below float32 resolution at the default 20): the
  activation is the exact log(1 + e^{βx})/β.

Nothing of the user's is ever called: functions are recognised by identity (``fn is np.tanh``)
and modules by exact type (``type(m) is nn.SiLU``), never by their repr; a module's parameters
are read from its ``__dict__`` and must be plain numbers.  numpy, scipy and torch are looked up
in ``sys.modules`` only: a string activation imports none of them.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterable
from fractions import Fraction
from typing import Any

import sympy as sp
from sympy.functions.elementary.piecewise import ExprCondPair
from sympy.printing.str import StrPrinter

from .. import _arguments
from .._errors import BudgetExceeded, InvalidArgument
from ._activation import Activation
from ._parser import parse_activation

__all__ = ["ACCEPTED", "MODULES", "activation_text", "get_activation", "get_activations"]

#: What an activation may be, for messages.
ACCEPTED = (
    "a library name or an expression in x as a string ('tanh', 'leaky_relu(0.1)', "
    "'max(x, 0.1*x)'), an Activation, a SymPy expression in one symbol or a sympy.Lambda, a "
    "numpy/math/scipy.special/torch function (np.tanh, torch.relu, "
    "torch.nn.functional.gelu, …) or a torch.nn activation module (nn.SiLU(), "
    "nn.Softplus(beta), nn.LeakyReLU(0.1), …)"
)

#: Nodes of a SymPy expression read before it is printed (the parser then applies its limits).
MAX_SYMPY_NODES = 1000
_MAX_BITS = 1000

# --- numbers as parser text --------------------------------------------------------------------


def _num(f: Fraction) -> str:
    """An exact number as the parser reads it: ``3``, ``-1/10``."""
    return str(f.numerator) if f.denominator == 1 else f"{f.numerator}/{f.denominator}"


def _times(c: Fraction, text: str) -> str:
    """``c·text``: ``text``, ``-text``, ``2*text``, ``text/2``, ``3*text/2``."""
    if c == 1:
        return text
    if c == -1:
        return f"-{text}"
    head = "" if abs(c.numerator) == 1 else f"{abs(c.numerator)}*"
    tail = "" if c.denominator == 1 else f"/{c.denominator}"
    return f"{'-' if c < 0 else ''}{head}{text}{tail}"


def _param(value: Any, what: str) -> Fraction:
    """A module's or partial's parameter: a plain int or float (never user code)."""
    if type(value) not in (int, float):
        raise InvalidArgument(
            f"{what}={_arguments.show(value)}: expected a number (int or float), got "
            f"{type(value).__name__}."
        )
    return _arguments.number(value, what)


# --- the parametrised torch activations ---------------------------------------------------------


def _leaky_relu(p: dict[str, Any], what: str) -> str:
    s = _param(p.get("negative_slope", 0.01), f"{what}.negative_slope")
    if s == Fraction(1, 100):
        return "leaky_relu"
    if 0 <= s < 1:
        return f"leaky_relu({_num(s)})"
    return f"max(x, 0) + {_times(s, 'min(x, 0)')}"


def _elu(p: dict[str, Any], what: str) -> str:
    a = _param(p.get("alpha", 1.0), f"{what}.alpha")
    return "elu" if a == 1 else f"elu({_num(a)})"


def _celu(p: dict[str, Any], what: str) -> str:
    a = _param(p.get("alpha", 1.0), f"{what}.alpha")
    if a == 0:
        raise InvalidArgument(f"{what}.alpha=0: CELU needs alpha ≠ 0.")
    if a > 0:
        return "celu" if a == 1 else f"celu({_num(a)})"
    # α < 0: max(0, x) + min(0, α(e^{x/α} − 1)) is x for x > 0 and α(e^{x/α} − 1) for x < 0,
    # which grows like e^{|x/α|} (the library's celu refuses α < 0; α·elu(x/α) swaps branches)
    growth = _times(1 / a, "min(x, 0)")
    return f"max(x, 0) + {_times(a, f'(exp({growth}) - 1)')}"


def _softplus(p: dict[str, Any], what: str) -> str:
    b = _param(p.get("beta", 1.0), f"{what}.beta")
    _param(p.get("threshold", 20.0), f"{what}.threshold")  # numerical detail (module doc)
    if b <= 0:
        raise InvalidArgument(f"{what}.beta={_num(b)}: softplus needs beta > 0.")
    return "softplus" if b == 1 else _times(1 / b, f"softplus({_times(b, 'x')})")


def _hardtanh(p: dict[str, Any], what: str) -> str:
    lo = _param(p.get("min_val", -1.0), f"{what}.min_val")
    hi = _param(p.get("max_val", 1.0), f"{what}.max_val")
    if not lo < hi:
        raise InvalidArgument(f"{what}: hardtanh needs min_val < max_val, got {lo} and {hi}.")
    if lo == -1 and hi == 1:
        return "hard_tanh"
    if lo == -hi:
        return f"hard_tanh(1, {_num(hi)})"
    return f"min(max(x, {_num(lo)}), {_num(hi)})"


def _gelu(p: dict[str, Any], what: str) -> str:
    approximate = p.get("approximate", "none")
    if approximate == "none":
        return "gelu"
    if approximate == "tanh":
        return "gelu_tanh"
    raise InvalidArgument(
        f"{what}.approximate={_arguments.show(approximate)}: choose 'none' or 'tanh'."
    )


def _softshrink(p: dict[str, Any], what: str) -> str:
    lam = _param(p.get("lambd", 0.5), f"{what}.lambd")
    if lam < 0:
        raise InvalidArgument(f"{what}.lambd={_num(lam)}: softshrink needs lambd ≥ 0.")
    return "softshrink" if lam == Fraction(1, 2) else f"softshrink({_num(lam)})"


def _hardshrink(p: dict[str, Any], what: str) -> str:
    lam = _param(p.get("lambd", 0.5), f"{what}.lambd")
    if lam <= 0:
        raise InvalidArgument(f"{what}.lambd={_num(lam)}: hardshrink needs lambd > 0.")
    return "hardshrink" if lam == Fraction(1, 2) else f"hardshrink({_num(lam)})"


def _fixed(text: str) -> Callable[[dict[str, Any], str], str]:
    def f(p: dict[str, Any], what: str) -> str:
        return text

    return f


#: torch activation → (text builder from its parameters, parameter names)
_TORCH: dict[str, tuple[Callable[[dict[str, Any], str], str], tuple[str, ...]]] = {
    "relu": (_fixed("relu"), ()),
    "tanh": (_fixed("tanh"), ()),
    "sigmoid": (_fixed("sigmoid"), ()),
    "silu": (_fixed("silu"), ()),
    "identity": (_fixed("identity"), ()),
    **{
        name: (_fixed(name), ())
        for name in (
            "mish",
            "softsign",
            "relu6",
            "hardsigmoid",
            "hardswish",
            "selu",
            "tanhshrink",
            "logsigmoid",
        )
    },  # fmt: skip
    "gelu": (_gelu, ("approximate",)),
    "softplus": (_softplus, ("beta", "threshold")),
    "leaky_relu": (_leaky_relu, ("negative_slope",)),
    "elu": (_elu, ("alpha",)),
    "celu": (_celu, ("alpha",)),
    "hardtanh": (_hardtanh, ("min_val", "max_val")),
    "softshrink": (_softshrink, ("lambd",)),
    "hardshrink": (_hardshrink, ("lambd",)),
}

#: ``torch.nn`` module class name → the activation in :data:`_TORCH`
MODULES: dict[str, str] = {
    "ReLU": "relu", "Tanh": "tanh", "Sigmoid": "sigmoid", "SiLU": "silu",
    "Identity": "identity", "Mish": "mish", "Softsign": "softsign", "ReLU6": "relu6",
    "Hardsigmoid": "hardsigmoid", "Hardswish": "hardswish", "SELU": "selu",
    "Tanhshrink": "tanhshrink", "LogSigmoid": "logsigmoid", "GELU": "gelu",
    "Softplus": "softplus", "LeakyReLU": "leaky_relu", "ELU": "elu", "CELU": "celu",
    "Hardtanh": "hardtanh", "Softshrink": "softshrink", "Hardshrink": "hardshrink",
}  # fmt: skip

# --- plain functions, by module: attribute name → text -----------------------------------------

_ELEMENTARY = {
    "tanh": "tanh", "sin": "sin", "cos": "cos", "sinh": "sinh(x)", "cosh": "cosh(x)",
    "exp": "exp(x)", "log": "log(x)", "sqrt": "sqrt(x)", "expm1": "exp(x) - 1",
    "log1p": "log(1 + x)",
}  # fmt: skip
_FUNCTIONS: dict[str, dict[str, str]] = {
    "builtins": {"abs": "abs(x)"},
    "math": {**_ELEMENTARY, "atan": "atan(x)", "fabs": "abs(x)", "erf": "erf", "erfc": "erfc(x)"},
    "numpy": {
        **_ELEMENTARY, "arctan": "atan(x)", "absolute": "abs(x)", "fabs": "abs(x)",
        "sign": "sign", "square": "x**2",
    },
    "scipy.special": {"erf": "erf", "erfc": "erfc(x)", "expit": "sigmoid"},
    "torch": {
        **_ELEMENTARY, "atan": "atan(x)", "arctan": "atan(x)", "abs": "abs(x)",
        "absolute": "abs(x)", "sign": "sign", "square": "x**2", "erf": "erf", "erfc": "erfc(x)",
        "sigmoid": "sigmoid", "relu": "relu",
    },
    "torch.special": {
        "erf": "erf", "erfc": "erfc(x)", "expit": "sigmoid", "expm1": "exp(x) - 1",
        "log1p": "log(1 + x)",
    },
}  # fmt: skip
_FUNCTIONAL = "torch.nn.functional"


def _loaded(module: str, attr: str) -> Any:
    """``module.attr`` if the module is already imported (never imports it), else None."""
    mod = sys.modules.get(module)
    if mod is None:
        return None
    try:
        return mod.__dict__.get(attr)
    except AttributeError:  # pragma: no cover - a module always has a __dict__
        return None


def _function_text(spec: Any) -> str | None:
    """The text of a known plain function, by identity; None if it is none of them."""
    if spec is None:  # what _loaded gives for an absent module or name
        return None
    for module, table in _FUNCTIONS.items():
        for attr, text in table.items():
            if spec is _loaded(module, attr):
                return text
    for attr, (build, _) in _TORCH.items():
        if spec is _loaded(_FUNCTIONAL, attr):
            return build({}, f"torch.nn.functional.{attr}")
    return None


def _partial_text(spec: functools.partial[Any], name: str) -> str | None:
    """``functools.partial(F.leaky_relu, negative_slope=0.2)``: keyword parameters only."""
    for attr, (build, params) in _TORCH.items():
        if spec.func is not None and spec.func is _loaded(_FUNCTIONAL, attr):
            what = f"{name}(torch.nn.functional.{attr})"
            if spec.args:
                raise InvalidArgument(
                    f"{what}: give its parameters as keywords, e.g. "
                    f"partial(F.{attr}, {params[0] if params else 'inplace'}=…)."
                )
            keywords = {k: v for k, v in spec.keywords.items() if k != "inplace"}
            bad = sorted(k for k in keywords if k not in params)
            if bad:
                raise InvalidArgument(
                    f"{what}: unknown parameter(s) {', '.join(map(_arguments.show, bad))}; "
                    f"it takes {', '.join(params) or 'none'}."
                )
            return build(keywords, what)
    return None


def _module_text(spec: Any, name: str) -> str | None:
    """A ``torch.nn`` activation module, by exact type; its parameters from ``__dict__``."""
    nn = sys.modules.get("torch.nn")
    if nn is None:
        return None
    for cls_name, attr in MODULES.items():
        cls = nn.__dict__.get(cls_name)
        if cls is not None and type(spec) is cls:
            build, params = _TORCH[attr]
            state = vars(spec)
            return build({p: state[p] for p in params if p in state}, f"{name}(nn.{cls_name})")
    return None


# --- SymPy -------------------------------------------------------------------------------------

#: SymPy function classes the parser knows, by the name it spells them
_SYMPY_FUNCTIONS: dict[type, str] = {
    sp.exp: "exp", sp.log: "log", sp.Abs: "abs", sp.Max: "max", sp.Min: "min",
    sp.tanh: "tanh", sp.sin: "sin", sp.cos: "cos", sp.sinh: "sinh", sp.cosh: "cosh",
    sp.atan: "atan", sp.erf: "erf", sp.erfc: "erfc", sp.Heaviside: "heaviside", sp.sign: "sign",
}  # fmt: skip
_SYMPY_ATOMS = (sp.Symbol, sp.Rational, sp.Float)
_SYMPY_CONSTANTS = (sp.core.numbers.Pi, sp.core.numbers.Exp1)
_RELATIONS = (sp.StrictGreaterThan, sp.GreaterThan, sp.StrictLessThan, sp.LessThan)
_SYMPY_HELP = (
    "a SymPy activation uses + - * / **, numbers, pi, E, exp, log, sqrt, Abs, Max, Min, tanh, "
    "sin, cos, sinh, cosh, atan, erf, erfc, Heaviside, sign and Piecewise with conditions such "
    "as x > 0"
)


def _check_sympy(expr: sp.Basic, name: str) -> None:
    """Walk ``expr`` (at most :data:`MAX_SYMPY_NODES` nodes) against the whitelist."""
    count = 0
    for node in sp.preorder_traversal(expr):
        count += 1
        if count > MAX_SYMPY_NODES:
            raise BudgetExceeded(
                f"{name}: a SymPy expression of more than {MAX_SYMPY_NODES} nodes; the parser's "
                "limits (docs/limits.md) allow far fewer: simplify it or use a library activation."
            )
        if isinstance(node, sp.Rational):
            if node.p.bit_length() > _MAX_BITS or node.q.bit_length() > _MAX_BITS:
                raise InvalidArgument(f"{name}: a constant in it is too large (> 1e300).")
            continue
        if isinstance(node, _SYMPY_ATOMS + _SYMPY_CONSTANTS) or node is sp.true:
            continue
        if isinstance(node, (sp.Add, sp.Mul, sp.Pow, sp.Piecewise, ExprCondPair)):
            continue
        if isinstance(node, _RELATIONS):
            continue
        if type(node) in _SYMPY_FUNCTIONS:
            continue
        if isinstance(node, sp.And | sp.Or | sp.Not | sp.Xor):
            raise InvalidArgument(
                f"{name}: a Piecewise condition with {type(node).__name__}; use one comparison "
                "per branch, such as x > 0 (nest the Piecewise, or use max/min)."
            )
        what = type(node).__name__
        if isinstance(node, sp.Function):
            what = f"the function {_arguments.show(str(node.func))}"
        raise InvalidArgument(f"{name}: {what} is not supported; {_SYMPY_HELP}.")


class _Text(StrPrinter):
    """SymPy → the parser's spelling, with the one symbol written ``x``."""

    def __init__(self, symbol: sp.Symbol) -> None:
        super().__init__({"full_prec": "auto"})
        self.symbol = symbol

    def _print_Symbol(self, expr: sp.Symbol) -> str:
        return "x"

    def _print_Exp1(self, expr: Any) -> str:
        return "exp(1)"

    def _print_Pi(self, expr: Any) -> str:
        return "pi"

    def _print_Function(self, expr: Any) -> str:  # the known functions (checked before)
        args = ", ".join(self._print(a) for a in expr.args)
        return f"{_SYMPY_FUNCTIONS[type(expr)]}({args})"

    _print_Max = _print_Min = _print_Abs = _print_Function

    def _print_Heaviside(self, expr: Any) -> str:  # H(0) does not matter: one point
        return f"heaviside({self._print(expr.args[0])})"

    def _print_Piecewise(self, expr: sp.Piecewise) -> str:
        """Σ_i e_i · H_i · Π_{j<i} (1 − H_j), with H_i the Heaviside step of condition i."""
        terms, before = [], ""
        for value, cond in expr.args:
            if cond is sp.true:
                terms.append(f"({self._print(value)}){before}")
                return " + ".join(terms)
            if not isinstance(cond, _RELATIONS):
                raise InvalidArgument(
                    f"Piecewise condition {_arguments.show(str(cond))}: use one comparison "
                    "per branch, such as x > 0 (And/Or: nest the Piecewise or use max/min)."
                )
            d = cond.lhs - cond.rhs
            step = f"heaviside({self._print(d if isinstance(cond, _RELATIONS[:2]) else -d)})"
            terms.append(f"({self._print(value)})*{step}{before}")
            before += f"*(1 - {step})"
        raise InvalidArgument(
            "a Piecewise activation needs a last branch (expr, True): it must be defined "
            "for every x."
        )


def _sympy_text(expr: sp.Basic, symbol: sp.Symbol | None, name: str) -> str:
    if not isinstance(expr, sp.Expr):
        raise InvalidArgument(
            f"{name}={_arguments.show(expr)}: a SymPy {type(expr).__name__}, not an expression; "
            "give an expression in one symbol, e.g. sympy.tanh(x)."
        )
    _check_sympy(expr, name)
    free = expr.free_symbols
    if symbol is None:
        if len(free) != 1:
            names = ", ".join(sorted(_arguments.show(str(s)) for s in free))
            raise InvalidArgument(
                f"{name}={_arguments.show(expr)}: "
                + (
                    f"a SymPy activation has one symbol, this one has {len(free)} ({names}); "
                    "give the parameters values first (expr.subs(a, 0.1))."
                    if free
                    else "a constant; an activation depends on its one symbol."
                )
            )
        (symbol,) = free
    elif free - {symbol}:
        names = ", ".join(sorted(_arguments.show(str(s)) for s in free - {symbol}))
        raise InvalidArgument(
            f"{name}: the Lambda's body has other symbols ({names}); give them values first."
        )
    from ._activation import X

    # the parser's own x (real), so that SymPy orders and simplifies as for the typed text
    return _Text(X).doprint(expr.xreplace({symbol: X}))


def _lambda_text(spec: sp.Lambda, name: str) -> str:
    variables = spec.variables
    if len(variables) != 1 or not isinstance(variables[0], sp.Symbol):
        raise InvalidArgument(
            f"{name}={_arguments.show(spec)}: a Lambda activation takes one variable, "
            f"this one takes {len(variables)}."
        )
    return _sympy_text(spec.expr, variables[0], name)


# --- the entry ---------------------------------------------------------------------------------


def activation_text(spec: Any, name: str = "activation") -> str:
    """The parser text of an activation given as an object (see the module docstring).

    Raises:
      InvalidArgument: anything else, with what is accepted (a Python function is never
        called: it is code).

    Example:
      >>> import sympy
      >>> activation_text(sympy.tanh(sympy.Symbol("t")))
      'tanh(x)'
    """
    if isinstance(spec, sp.Lambda):
        return _lambda_text(spec, name)
    if isinstance(spec, sp.Basic):
        return _sympy_text(spec, None, name)
    if isinstance(spec, type) and spec in _SYMPY_FUNCTIONS and spec not in (sp.Max, sp.Min):
        return f"{_SYMPY_FUNCTIONS[spec]}(x)"
    text = _function_text(spec)
    if text is None and type(spec) is functools.partial:
        text = _partial_text(spec, name)
    if text is None:
        text = _module_text(spec, name)
    if text is not None:
        return text
    hint = ""
    nn = sys.modules.get("torch.nn")
    module = getattr(nn, "Module", None) if nn is not None else None
    if isinstance(module, type) and isinstance(spec, module):
        hint = (
            " Of torch.nn, the activation modules are read (not their subclasses): "
            f"{', '.join(sorted(MODULES))}."
        )
    elif isinstance(spec, list | tuple):
        hint = " Several activations are the layers of an explicit network: explicit_coefficients."
    elif callable(spec):
        hint = (
            " A Python function is code and is never called: write it as a string in x "
            "(e.g. 'x*tanh(x)') or as a SymPy expression."
        )
    raise InvalidArgument(
        f"{name}={_arguments.show(spec)} ({type(spec).__name__}) is not an activation deqrmt "
        f"can read; accepted: {ACCEPTED}.{hint}"
    )


def get_activation(spec: Any, name: str = "activation") -> Activation:
    """An :class:`Activation` from a library name, ``name(params)`` or an expression in x, or
    from an object: a SymPy expression in one symbol or a ``sympy.Lambda``, a known numpy,
    math, scipy.special or torch function (``np.tanh``, ``torch.relu``,
    ``torch.nn.functional.gelu``) or a ``torch.nn`` activation module (``nn.SiLU()``,
    ``nn.Softplus(beta=2)``), see :mod:`deqrmt.symbolic._objects`.

    An object becomes the text of the corresponding string, which the parser reads: so
    ``np.tanh``, ``nn.Tanh()`` and ``"tanh"`` give the same Activation (same cache entries,
    same output bytes), and every parser limit applies.  Anything else (a number, a list, a
    Python function, which is never called) is an :class:`~deqrmt.InvalidArgument` naming
    ``name`` and what is accepted.

    Example:
      >>> import sympy
      >>> get_activation(sympy.Max(sympy.Symbol("t"), 0)) == get_activation("max(0, x)")
      True
    """
    if isinstance(spec, Activation):
        return spec
    if isinstance(spec, str):
        return parse_activation(spec)
    return parse_activation(activation_text(spec, name))


def get_activations(spec: Any, name: str = "activations", *, hi: int) -> tuple[Activation, ...]:
    """The layers of a network: a list or tuple of activations (each as :func:`get_activation`
    takes it), or one activation given alone (a string, an Activation, an object): one layer.

    Example:
      >>> [a.name for a in get_activations("relu", hi=8)]
      ['relu']
    """
    several = isinstance(spec, Iterable) and not isinstance(spec, str | bytes | sp.Basic)
    if several and not callable(spec) or getattr(spec, "ndim", None) is not None:
        return tuple(
            _arguments.sequence(
                spec, name, "layers (an activation each)", hi=hi, item=get_activation
            )
        )
    return (get_activation(spec, name),)

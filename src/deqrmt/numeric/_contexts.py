"""The float64 numpy context, and φ with φ′ as one generated function of any context.

Code printed with ``arrays=True`` (:func:`deqrmt.numeric._printer.compile_function`) calls
``ctx.<name>`` for every name in :data:`~deqrmt.numeric._printer.ARRAY_NAMES`; :data:`NUMPY`
implements them on float64 arrays (and on Python or numpy scalars).  Its elementary functions
are numpy's ufuncs; the special functions numpy lacks (``erf``, ``gamma``, ``gammainc``, the
Bessel functions) are applied element by element, with :mod:`math` where it has them (correctly
rounded or nearly so) and mpmath at 20 digits otherwise.  The torch context
(:mod:`deqrmt.validate._torch_context`) has the same interface.  The scalar float context, for
code printed in the scalar dialect, is :data:`deqrmt.numeric._float_context.FLOAT` (``mpmath.fp``
with its inaccurate functions replaced).

Arrays evaluate every branch of a ``piecewise``, so the stable forms are written so that no
branch overflows: ``logistic(u)`` from e^(−|u|) and ``softplus(u) = max(u, 0) + log1p(e^(−|u|))``.
A branch that is not selected may still overflow or be undefined in a lane (``log`` of a
negative number); ``piecewise`` selects lane by lane, so its value never reaches the result,
though numpy may warn: evaluate under ``numpy.errstate`` where that is expected.

:func:`activation_functions` joins an activation's pieces into one printed Piecewise for φ and
one for φ′ (the left piece at a kink), in the stable forms, for the array contexts: the torch
Monte Carlo evaluates φ through it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, SupportsComplex, SupportsFloat, TypeAlias

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._context import ArrayContext

if TYPE_CHECKING:  # SymPy and the printer only where φ is printed: NUMPY alone needs neither
    import sympy as sp

    from ..symbolic import Activation

__all__ = [
    "NUMPY", "NumpyContext", "activation_expressions", "activation_functions",
    "activation_sources",
]  # fmt: skip

#: What the numpy context returns: float64 arrays (0-d for scalars), or booleans for conditions.
FloatArray: TypeAlias = NDArray[np.float64]
BoolArray: TypeAlias = NDArray[np.bool_]


def _elementwise(f: Callable[..., float], nin: int = 1) -> Callable[..., FloatArray]:
    """A float function applied to every element (broadcast), as a float64 array."""
    uf = np.frompyfunc(f, nin, 1)

    def g(*args: ArrayLike) -> FloatArray:
        return np.asarray(uf(*args), dtype=np.float64)

    return g


def _real(f: Callable[..., SupportsComplex | SupportsFloat]) -> Callable[..., float]:
    """``f``'s value as a float; nan where it is complex or undefined, ±inf where it overflows."""

    def g(*args: float) -> float:
        try:
            v = complex(f(*args))
        except OverflowError:
            return math.inf
        except (ValueError, ZeroDivisionError):
            return math.nan
        return v.real if v.imag == 0 else math.nan

    return g


@functools.cache
def _mp20() -> Any:
    """20 digits for the special functions math lacks: ``mpmath.fp``'s are not all float-accurate
    (its besselk(1, 0.5) is off by 3e-5 relative).  A private context: ``mp.dps`` is not
    touched.  Made on first use: the numpy context alone does not import mpmath."""
    import mpmath

    ctx = mpmath.MPContext()
    ctx.dps = 20
    return ctx


def _mp(name: str) -> Callable[..., Any]:
    """The 20-digit context's function ``name``, looked up when first called."""

    def f(*args: Any) -> Any:
        return getattr(_mp20(), name)(*args)

    f.__name__ = name
    return f


class NumpyContext:
    """The context interface on float64 numpy arrays: ``f(NUMPY, x)`` for printed ``f``."""

    # numbers: mpf(p)/mpf(q) is p/q correctly rounded
    mpf = staticmethod(float)
    pi = math.pi
    e = math.e
    #: Euler's γ correctly rounded (``float(mpmath.euler)``, tests/test_context.py checks it)
    euler: float = 0.5772156649015329
    inf = math.inf
    zero = 0.0
    one = 1.0
    #: float64's machine epsilon (2⁻⁵²): a test's tolerance is stated in it
    eps: float = float(np.finfo(np.float64).eps)

    # elementary functions: numpy's ufuncs
    exp = staticmethod(np.exp)
    log = staticmethod(np.log)
    sqrt = staticmethod(np.sqrt)
    sign = staticmethod(np.sign)
    sin = staticmethod(np.sin)
    cos = staticmethod(np.cos)
    tan = staticmethod(np.tan)
    sinh = staticmethod(np.sinh)
    cosh = staticmethod(np.cosh)
    tanh = staticmethod(np.tanh)
    asin = staticmethod(np.arcsin)
    acos = staticmethod(np.arccos)
    atan = staticmethod(np.arctan)
    asinh = staticmethod(np.arcsinh)
    acosh = staticmethod(np.arccosh)
    atanh = staticmethod(np.arctanh)
    expm1 = staticmethod(np.expm1)
    log1p = staticmethod(np.log1p)

    # special functions numpy lacks, element by element
    erf = staticmethod(_elementwise(math.erf))
    erfc = staticmethod(_elementwise(math.erfc))
    gamma = staticmethod(_elementwise(_real(math.gamma)))
    gammainc = staticmethod(_elementwise(_real(_mp("gammainc")), 3))
    besseli = staticmethod(_elementwise(_real(_mp("besseli")), 2))
    besselj = staticmethod(_elementwise(_real(_mp("besselj")), 2))
    besselk = staticmethod(_elementwise(_real(_mp("besselk")), 2))

    # what branches, elementwise
    @staticmethod
    def piecewise(*pairs: tuple[ArrayLike, ArrayLike]) -> FloatArray | np.float64:
        """The value of the first pair whose condition holds, lane by lane (nan if none)."""
        out: FloatArray | np.float64 = np.float64(math.nan)
        for cond, value in reversed(pairs):
            out = np.where(cond, value, out)
        return out

    @staticmethod
    def heaviside(x: ArrayLike, h0: ArrayLike) -> FloatArray:
        return np.heaviside(x, h0)

    @staticmethod
    def atan2(y: ArrayLike, x: ArrayLike) -> FloatArray:
        return np.arctan2(y, x)

    @staticmethod
    def maximum(*args: FloatArray) -> FloatArray:
        return functools.reduce(np.maximum, args)

    @staticmethod
    def minimum(*args: FloatArray) -> FloatArray:
        return functools.reduce(np.minimum, args)

    @staticmethod
    def logical_and(*args: BoolArray) -> BoolArray:
        return functools.reduce(np.logical_and, args)

    @staticmethod
    def logical_or(*args: BoolArray) -> BoolArray:
        return functools.reduce(np.logical_or, args)

    logical_not = staticmethod(np.logical_not)

    # stable forms: no branch overflows
    @staticmethod
    def logistic(u: ArrayLike) -> FloatArray:
        """σ(u) = 1/(1 + e^(−u)), from e^(−|u|) ≤ 1."""
        t = np.exp(-np.abs(u))
        return np.where(np.asarray(u) >= 0, 1 / (1 + t), t / (1 + t))

    @staticmethod
    def softplus(u: ArrayLike) -> FloatArray:
        """log(1 + e^u) = max(u, 0) + log1p(e^(−|u|))."""
        return np.maximum(u, 0) + np.log1p(np.exp(-np.abs(u)))


#: The numpy context (stateless: one instance serves every caller).
NUMPY: NumpyContext = NumpyContext()

if TYPE_CHECKING:  # mypy checks the class against the interface the printer's code calls
    _IS_AN_ARRAY_CONTEXT: ArrayContext = NUMPY


def activation_expressions(act: Activation) -> tuple[sp.Expr, sp.Expr]:
    """φ and φ′ as Piecewise expressions of the activation's pieces, the left piece at a kink
    (φ′ there is a convention: kinks have Gaussian measure zero)."""
    import sympy as sp

    x = act.x
    out = []
    for pieces in (act.pieces, act.derivative_pieces):
        if len(pieces) == 1:
            out.append(pieces[0].expr)
            continue
        pairs = [(p.expr, sp.Le(x, k)) for p, k in zip(pieces[:-1], act.kinks, strict=True)]
        out.append(sp.Piecewise(*pairs, (pieces[-1].expr, sp.true), evaluate=False))
    return out[0], out[1]


@functools.lru_cache(maxsize=64)
def activation_functions(
    act: Activation,
) -> tuple[Callable[..., tuple[Any]], Callable[..., tuple[Any]]]:
    """``(phi, dphi)`` for an array context, each ``f(ctx, x) -> (value,)``, printed once in the
    stable forms (no exponential of a large argument where the value is finite).

    Array contexts only: in the scalar dialect CSE may hoist a sub-expression that two branches
    share out of the conditional, where ``mpmath.fp`` would evaluate it for every x (and
    overflow); scalar code evaluates one piece at a time, as the engine and ``deqrmt codegen`` do.
    """
    from ._printer import STABLE_FORMS, compile_function

    phi, dphi = activation_expressions(act)
    return (
        compile_function("phi", [act.x], [phi], rewrite=STABLE_FORMS, arrays=True),
        compile_function("dphi", [act.x], [dphi], rewrite=STABLE_FORMS, arrays=True),
    )


def activation_sources(act: Activation, names: tuple[str, str]) -> tuple[str, str]:
    """The source of :func:`activation_functions`' two functions, printed the same way, named
    ``names``: what :mod:`deqrmt.validate._generated_activations` holds for the library."""
    from ._printer import STABLE_FORMS, function_source

    phi, dphi = activation_expressions(act)
    return (
        function_source(names[0], [act.x], [phi], rewrite=STABLE_FORMS, arrays=True),
        function_source(names[1], [act.x], [dphi], rewrite=STABLE_FORMS, arrays=True),
    )

"""The context interface: the names code printed by :mod:`._printer` calls, as Protocols.

Generated functions are ``f(ctx, *args)`` and call ``ctx.<name>`` (:mod:`._printer`).  Every
context provides those names, and nothing else ties them together: a private
``mpmath.MPContext`` and the float context :data:`._float_context.FLOAT` (the engine's scalar
contexts), :class:`._arb.ArbContext` / :class:`._arb.AcbContext` (Arb balls),
:class:`._interval.IntervalContext` (range bounds), :data:`._contexts.NUMPY` (float64 arrays)
and :data:`deqrmt.validate._torch_context.TORCH` (tensors).  Three Protocols, each one a
superset of the one before:

- :class:`Context`: numbers, constants, precision and the functions Arb evaluates (the
  expressions :data:`._arb.ARB_FUNCTIONS` admits print only these); every context has them;
- :class:`ScalarContext`: every name the scalar dialect prints (mpmath's contexts);
- :class:`ArrayContext`: every name the array dialect prints (:data:`._printer.ARRAY_NAMES`),
  where each branch is a call evaluated lane by lane.

``eps`` is the context's machine epsilon (the spacing of its numbers at 1, as ``mpmath``'s
``ctx.eps``): a test of a context
states its tolerance in it (``tests/test_backends.py``), so a float32 context is held to
float32's precision and float64 to float64's, without naming either.

mypy checks each context class against its Protocol (a ``TYPE_CHECKING`` assignment beside the
class); ``tests/test_context.py`` checks every context at run time against the names the printer
emits for each whitelisted node.  Values of a context (an ``mpf``, an ``arb``, a float, an
array, a tensor) share no static type: mpmath and python-flint ship none, so :data:`Num` names
them for the reader and is ``Any`` to mypy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, runtime_checkable

if TYPE_CHECKING:
    import mpmath

__all__ = [
    "ARRAY_CONTEXT_NAMES",
    "ArrayContext",
    "CONTEXT_NAMES",
    "Context",
    "EngineContext",
    "Mpc",
    "Mpf",
    "Num",
    "SCALAR_CONTEXT_NAMES",
    "ScalarContext",
]

#: A value of some context: an mpmath ``mpf``, an ``arb``/``acb`` ball, an ``Interval``, a float,
#: a numpy array or a torch tensor.  No common static type exists (mpmath and python-flint are
#: untyped): this alias says what a value is for the reader; to mypy it is ``Any``.
Num: TypeAlias = Any

#: The engine's contexts: a private ``mpmath.MPContext`` at the working precision, or the float
#: context ``FLOAT``.  Besides the printer's names (:class:`ScalarContext`) the engine calls
#: mpmath's own namespace on them (``quad``, ``findroot``, ``matrix``, ``workdps``, …), which
#: mypy cannot check: mpmath ships no types, so this alias, too, is ``Any`` to mypy.
EngineContext: TypeAlias = Any

#: mpmath's real and complex numbers, named where a function takes or returns exactly them (an
#: ``mpf`` of any context, as ``mpmath.mpf(x)`` makes); mpmath is untyped, so mypy sees its class.
Mpf: TypeAlias = "mpmath.mpf"
Mpc: TypeAlias = "mpmath.mpc"


@runtime_checkable
class Context(Protocol):
    """Numbers, constants, precision and the functions every context evaluates."""

    @property
    def eps(self) -> Num:
        """The machine epsilon: the spacing of the context's numbers at 1 (mpmath's ``eps``)."""

    def mpf(self, v: Any, /) -> Num:
        """``v`` (an int, a float, a value of the context) as a value of the context."""

    @property
    def zero(self) -> Num: ...
    @property
    def one(self) -> Num: ...
    @property
    def pi(self) -> Num: ...
    @property
    def e(self) -> Num: ...
    @property
    def euler(self) -> Num: ...

    def sqrt(self, x: Num, /) -> Num: ...
    def exp(self, x: Num, /) -> Num: ...
    def log(self, x: Num, /) -> Num: ...
    def sin(self, x: Num, /) -> Num: ...
    def cos(self, x: Num, /) -> Num: ...
    def tan(self, x: Num, /) -> Num: ...
    def sinh(self, x: Num, /) -> Num: ...
    def cosh(self, x: Num, /) -> Num: ...
    def tanh(self, x: Num, /) -> Num: ...
    def asin(self, x: Num, /) -> Num: ...
    def acos(self, x: Num, /) -> Num: ...
    def atan(self, x: Num, /) -> Num: ...
    def asinh(self, x: Num, /) -> Num: ...
    def acosh(self, x: Num, /) -> Num: ...
    def atanh(self, x: Num, /) -> Num: ...
    def erf(self, x: Num, /) -> Num: ...
    def erfc(self, x: Num, /) -> Num: ...
    def gamma(self, x: Num, /) -> Num: ...


@runtime_checkable
class ScalarContext(Context, Protocol):
    """Every name the scalar dialect prints (``max``, ``min``, ``abs`` and branches are
    Python's there)."""

    @property
    def inf(self) -> Num: ...

    def sign(self, x: Num, /) -> Num: ...
    def atan2(self, y: Num, x: Num, /) -> Num: ...
    def expm1(self, x: Num, /) -> Num: ...
    def log1p(self, x: Num, /) -> Num: ...
    def gammainc(self, s: Num, a: Num, b: Num, /) -> Num: ...
    def besseli(self, n: Num, x: Num, /) -> Num: ...
    def besselj(self, n: Num, x: Num, /) -> Num: ...
    def besselk(self, n: Num, x: Num, /) -> Num: ...


@runtime_checkable
class ArrayContext(ScalarContext, Protocol):
    """Every name the array dialect prints: each construct that branches is a call evaluated
    lane by lane (:data:`._printer.ARRAY_NAMES`)."""

    def piecewise(self, *pairs: tuple[Num, Num]) -> Num: ...
    def heaviside(self, x: Num, h0: Num, /) -> Num: ...
    def maximum(self, *args: Num) -> Num: ...
    def minimum(self, *args: Num) -> Num: ...
    def logical_and(self, *args: Num) -> Num: ...
    def logical_or(self, *args: Num) -> Num: ...
    def logical_not(self, x: Num, /) -> Num: ...
    def logistic(self, u: Num, /) -> Num: ...
    def softplus(self, u: Num, /) -> Num: ...


def _members(cls: type) -> frozenset[str]:
    return frozenset(
        name
        for klass in cls.__mro__
        if klass not in (object, Protocol) and Protocol in klass.__bases__
        for name in vars(klass)
        if not name.startswith("_")
    )


#: The names of each Protocol (what a run-time check walks).
CONTEXT_NAMES: frozenset[str] = _members(Context)
SCALAR_CONTEXT_NAMES: frozenset[str] = _members(ScalarContext)
ARRAY_CONTEXT_NAMES: frozenset[str] = _members(ArrayContext)

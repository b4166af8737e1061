"""Interval arithmetic on Arb for the one printer: the context of rigorous range bounds.

Code from :func:`deqrmt.numeric.compile_function` runs on any context.  :class:`ArbContext`
evaluates it on Arb balls, which is right for narrow balls; a range bound (the Lipschitz
constant, the curvature bound of ``deqrmt check``) needs wide intervals too, where ball
functions lose everything: Arb encloses tanh on [−16, 16] by nan, and python-flint's
``ball ** 2`` is nan for a ball containing 0 (it goes through exp(2 log x)).  Here every value
is an :class:`Interval` holding an Arb ball, and

* integer powers and monotone functions (exp, log, sqrt, tanh, erf, erfc, atan, asinh, sinh)
  are evaluated at the exact end points, which is tight however wide the interval;
* sums, products and quotients are Arb's (rigorous: outward rounding);
* other functions (sin, cos, cosh, …) are Arb's ball functions.

Every result contains the exact range of the expression over its arguments' intervals.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from flint import arb

from ._arb import ArbContext, to_arb
from ._context import Context, Num

__all__ = ["Interval", "IntervalContext", "interval", "exact_power"]


def _ball(v: Num) -> arb:
    if isinstance(v, Interval):
        return v.ball
    if isinstance(v, arb):
        return v
    return to_arb(v)


def _ends(b: arb) -> tuple[arb, arb]:
    return arb(b.lower()), arb(b.upper())


def exact_power(v: arb, n: int) -> arb:
    """v**n for an exact v and n ≥ 1, by squaring (python-flint's ``**`` is exp(n log v))."""
    out, base = arb(1), v
    while n:
        if n & 1:
            out = out * base
        n >>= 1
        if n:
            base = base * base
    return out


def _int_power(b: arb, n: int) -> arb:
    if n == 0:
        return arb(1)
    if n < 0:
        return 1 / _int_power(b, -n)
    if not b.is_finite():
        return arb("nan")
    lo, hi = _ends(b)
    p_lo, p_hi = exact_power(lo, n), exact_power(hi, n)
    if n % 2 == 1 or lo >= 0:  # increasing on the interval
        return _hull(p_lo, p_hi)
    if hi <= 0:  # decreasing
        return _hull(p_hi, p_lo)
    top = p_lo if p_lo.upper() >= p_hi.upper() else p_hi
    return _hull(arb(0), top)


def _hull(lo: arb, hi: arb) -> arb:
    """The ball from the lower end of ``lo`` to the upper end of ``hi``."""
    if not (lo.is_finite() and hi.is_finite()):
        return arb("nan")
    return arb(lo.lower()).union(arb(hi.upper()))


class Interval:
    """An interval as an Arb ball, with arithmetic whose results contain the exact range."""

    __slots__ = ("ball",)

    def __init__(self, ball: arb) -> None:
        self.ball = ball

    def __repr__(self) -> str:
        return f"Interval({self.ball})"

    def __add__(self, o: Num) -> Interval:
        return Interval(self.ball + _ball(o))

    def __radd__(self, o: Num) -> Interval:
        return Interval(_ball(o) + self.ball)

    def __sub__(self, o: Num) -> Interval:
        return Interval(self.ball - _ball(o))

    def __rsub__(self, o: Num) -> Interval:
        return Interval(_ball(o) - self.ball)

    def __mul__(self, o: Num) -> Interval:
        return Interval(self.ball * _ball(o))

    def __rmul__(self, o: Num) -> Interval:
        return Interval(_ball(o) * self.ball)

    def __truediv__(self, o: Num) -> Interval:
        return Interval(self.ball / _ball(o))

    def __rtruediv__(self, o: Num) -> Interval:
        return Interval(_ball(o) / self.ball)

    def __neg__(self) -> Interval:
        return Interval(-self.ball)

    def __pos__(self) -> Interval:
        return self

    def __abs__(self) -> Interval:
        b = self.ball
        if not b.is_finite():
            return Interval(arb("nan"))
        lo, hi = _ends(b)
        if lo >= 0:
            return self
        if hi <= 0:
            return Interval(-b)
        return Interval(_hull(arb(0), arb(b.abs_upper())))

    def __pow__(self, n: Num) -> Interval:
        if isinstance(n, int) and not isinstance(n, bool):
            return Interval(_int_power(self.ball, n))
        e = _ball(n)
        k = e.unique_fmpz() if e.is_exact() else None
        if k is not None:
            return Interval(_int_power(self.ball, int(k)))
        return Interval((e * self.ball.log()).exp())  # a real power of a positive base

    def __rpow__(self, base: Num) -> Interval:
        return Interval((self.ball * _ball(base).log()).exp())


def _monotone(f: Callable[[arb], arb], increasing: bool) -> Callable[..., Num]:
    def fn(ctx: IntervalContext, x: Num) -> Interval:
        b = _ball(x)
        if not b.is_finite():
            return Interval(arb("nan"))
        lo, hi = _ends(b)
        a, c = f(lo), f(hi)
        return Interval(_hull(a, c) if increasing else _hull(c, a))

    return fn


def _plain(f: Callable[[arb], arb]) -> Callable[..., Num]:
    def fn(ctx: IntervalContext, x: Num) -> Interval:
        return Interval(f(_ball(x)))

    return fn


class IntervalContext(ArbContext):
    """The context interface of generated code on :class:`Interval` values (see the module)."""

    def mpf(self, v: Num) -> Num:
        return v if isinstance(v, Interval) else Interval(_ball(v))

    def _n(self, v: Num) -> Num:
        return _ball(v)

    @property
    def zero(self) -> Interval:  # type: ignore[override]
        return Interval(arb(0))

    @property
    def one(self) -> Interval:  # type: ignore[override]
        return Interval(arb(1))

    @property
    def pi(self) -> Interval:  # type: ignore[override]
        return Interval(arb.pi())

    @property
    def e(self) -> Interval:  # type: ignore[override]
        return Interval(arb.const_e())

    @property
    def euler(self) -> Interval:  # type: ignore[override]
        return Interval(arb.const_euler())

    exp = _monotone(arb.exp, True)
    log = _monotone(arb.log, True)
    sqrt = _monotone(arb.sqrt, True)
    tanh = _monotone(arb.tanh, True)
    erf = _monotone(arb.erf, True)
    erfc = _monotone(arb.erfc, False)
    atan = _monotone(arb.atan, True)
    asinh = _monotone(arb.asinh, True)
    sinh = _monotone(arb.sinh, True)
    sin = _plain(arb.sin)
    cos = _plain(arb.cos)
    tan = _plain(arb.tan)
    cosh = _plain(arb.cosh)
    asin = _plain(arb.asin)
    acos = _plain(arb.acos)
    acosh = _plain(arb.acosh)
    atanh = _plain(arb.atanh)
    gamma = _plain(arb.gamma)


def interval(x: Num) -> arb:
    """The ball inside a value of generated code run on :class:`IntervalContext`."""
    return _ball(x)


if TYPE_CHECKING:  # mypy checks the class against the interface the printer's code calls
    _IS_A_CONTEXT: Context = IntervalContext(53)

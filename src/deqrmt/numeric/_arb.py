r"""Arb ball arithmetic (python-flint) behind the context interface that generated code calls.

Code built by :func:`deqrmt.numeric.compile_function` is ``f(ctx, *args)`` and calls
``ctx.sqrt``, ``ctx.exp``, ``ctx.erf``, ``ctx.mpf(p)/ctx.mpf(q)``, ``ctx.pi``, …  The same source
runs on ``flint.arb`` balls with :class:`ArbContext` and on ``flint.acb`` balls (an integrand of
``acb.integral``) with :class:`AcbContext`: every operation then returns a ball that contains
the exact result for every point of its inputs (Johansson, "Arb: efficient arbitrary-precision
midpoint-radius interval arithmetic", IEEE Trans. Comput. 66 (2017), doi:10.1109/TC.2017.2690633).

Precision: Arb reads the global ``flint.ctx.prec`` at every operation.  Work happens inside
``with ctx.workprec():``, which sets it and restores the caller's value in ``finally``; nothing
here leaves the global changed.

Only the functions listed in :data:`ARB_FUNCTIONS` (real balls) and :data:`ACB_FUNCTIONS`
(holomorphic integrands) exist on the contexts; :func:`unsupported` names what an expression
uses beyond them, so a caller can decline before compiling.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Iterator
from fractions import Fraction
from typing import TYPE_CHECKING

import flint
import mpmath
import sympy as sp
from flint import acb, arb, fmpq

from .._text import format_decimal, round_ratio
from ._context import Context, Num

__all__ = [
    "ArbContext",
    "AcbContext",
    "ARB_FUNCTIONS",
    "ACB_FUNCTIONS",
    "unsupported",
    "to_arb",
    "arb_to_mpf",
    "midpoint_text",
    "bits_for_digits",
    "workprec",
    "round_digits",
    "format_digits",
]

#: SymPy functions a real-ball context evaluates (closed forms, coefficient formulas).
ARB_FUNCTIONS: frozenset[type] = frozenset(
    {
        sp.exp, sp.log, sp.sin, sp.cos, sp.tan, sp.sinh, sp.cosh, sp.tanh, sp.asin, sp.acos,
        sp.atan, sp.asinh, sp.acosh, sp.atanh, sp.erf, sp.erfc, sp.gamma, sp.Abs,
    }
)  # fmt: skip
#: SymPy functions an integrand may use: holomorphic (or meromorphic) near the real axis, or
#: with a branch cut that the ``analytic`` flag of ``acb.integral`` guards (log, sqrt, atan).
ACB_FUNCTIONS: frozenset[type] = frozenset(
    {sp.exp, sp.log, sp.sin, sp.cos, sp.tan, sp.sinh, sp.cosh, sp.tanh, sp.atan, sp.erf, sp.erfc}
)


def unsupported(expr: sp.Expr, functions: frozenset[type], *, holomorphic: bool) -> list[str]:
    """What in ``expr`` the context with ``functions`` cannot evaluate (empty: all of it).

    With ``holomorphic`` (an integrand for ``acb.integral``), powers must be integer or ±1/2
    (printed as ``ctx.sqrt``, which checks its branch cut) and ``Abs`` is refused: Arb would
    enclose them on a complex ball, but not as holomorphic functions, and the integration
    error bound needs holomorphy.
    """
    bad: list[str] = []
    for node in sp.preorder_traversal(expr):
        if isinstance(node, sp.Number):
            if not node.is_finite:
                bad.append(f"number {node}")
        elif isinstance(node, (sp.Symbol, sp.Add, sp.Mul)) or node in (sp.pi, sp.E, sp.EulerGamma):
            continue
        elif isinstance(node, sp.Pow):
            base, e = node.base, node.exp
            if e.is_Integer or e in (sp.S.Half, -sp.S.Half):
                continue  # meromorphic, or ctx.sqrt (which checks its cut)
            if not base.free_symbols and base.is_positive:
                continue  # c**u = exp(u log c), entire
            if not holomorphic and e.is_number:
                continue  # a real power: Arb returns nan for a negative base
            bad.append(f"power {node}")
        elif isinstance(node, sp.Function):
            if type(node) not in functions:
                bad.append(f"function {type(node).__name__}")
        else:
            bad.append(type(node).__name__)
    return sorted(set(bad))


def bits_for_digits(digits: float) -> int:
    """Binary precision carrying ``digits`` significant decimal digits."""
    return int(math.ceil(digits * math.log2(10)))


@contextlib.contextmanager
def workprec(prec: int) -> Iterator[None]:
    """Set ``flint.ctx.prec`` for the block and restore the caller's value afterwards."""
    old = flint.ctx.prec
    flint.ctx.prec = prec
    try:
        yield
    finally:
        flint.ctx.prec = old


def to_arb(value: int | Fraction | sp.Rational | str | arb) -> arb:
    """An exact number (int, Fraction, SymPy Rational) as an arb ball (exact when dyadic)."""
    if isinstance(value, arb):
        return value
    if isinstance(value, bool):
        raise TypeError(f"to_arb: expected a number, got {value!r}")
    if isinstance(value, int):
        return arb(value)
    if isinstance(value, sp.Rational):
        return arb(fmpq(int(value.p), int(value.q)))
    if isinstance(value, Fraction):
        return arb(fmpq(value.numerator, value.denominator))
    if isinstance(value, str):
        fr = Fraction(value)
        return arb(fmpq(fr.numerator, fr.denominator))
    raise TypeError(f"to_arb: cannot convert {value!r} exactly")


class ArbContext:
    """The mpmath-context subset that generated code calls, on real ``arb`` balls.

    ``prec`` is the working precision in bits; use ``with ctx.workprec():`` around calls.
    """

    def __init__(self, prec: int) -> None:
        self.prec = int(prec)

    def workprec(self) -> contextlib.AbstractContextManager[None]:
        return workprec(self.prec)

    @property
    def eps(self) -> arb:
        """2^(1 − prec): the spacing of the balls' midpoints at 1 (mpmath's ``eps``)."""
        return arb(fmpq(1, 2 ** (self.prec - 1)))

    # numbers -------------------------------------------------------------------------------
    def mpf(self, v: Num) -> Num:
        if isinstance(v, (arb, acb)):
            return v
        return to_arb(v)

    def _n(self, v: Num) -> Num:
        return v if isinstance(v, (arb, acb)) else to_arb(v)

    @property
    def zero(self) -> arb:
        return arb(0)

    @property
    def one(self) -> arb:
        return arb(1)

    @property
    def pi(self) -> arb:
        return arb.pi()

    @property
    def e(self) -> arb:
        return arb.const_e()

    @property
    def euler(self) -> arb:
        return arb.const_euler()

    # elementary and special functions -----------------------------------------------------------
    def sqrt(self, x: Num) -> Num:
        return self._n(x).sqrt()

    def exp(self, x: Num) -> Num:
        return self._n(x).exp()

    def log(self, x: Num) -> Num:
        return self._n(x).log()

    def sin(self, x: Num) -> Num:
        return self._n(x).sin()

    def cos(self, x: Num) -> Num:
        return self._n(x).cos()

    def tan(self, x: Num) -> Num:
        return self._n(x).tan()

    def sinh(self, x: Num) -> Num:
        return self._n(x).sinh()

    def cosh(self, x: Num) -> Num:
        return self._n(x).cosh()

    def tanh(self, x: Num) -> Num:
        return self._n(x).tanh()

    def asin(self, x: Num) -> Num:
        return self._n(x).asin()

    def acos(self, x: Num) -> Num:
        return self._n(x).acos()

    def atan(self, x: Num) -> Num:
        return self._n(x).atan()

    def asinh(self, x: Num) -> Num:
        return self._n(x).asinh()

    def acosh(self, x: Num) -> Num:
        return self._n(x).acosh()

    def atanh(self, x: Num) -> Num:
        return self._n(x).atanh()

    def erf(self, x: Num) -> Num:
        return self._n(x).erf()

    def erfc(self, x: Num) -> Num:
        return self._n(x).erfc()

    def gamma(self, x: Num) -> Num:
        return self._n(x).gamma()


class AcbContext(ArbContext):
    """The same interface on complex ``acb`` balls, for integrands of ``acb.integral``.

    ``analytic`` is the flag ``acb.integral`` passes with each evaluation: when it is set, a
    function with a branch cut must return a non-finite ball if its argument touches the cut
    (Arb's contract for integrands), which ``sqrt`` and ``log`` do by forwarding it, and
    ``atan`` through ``log``.
    """

    def __init__(self, prec: int) -> None:
        super().__init__(prec)
        self.analytic = False

    def _n(self, v: Num) -> Num:
        if isinstance(v, acb):
            return v
        return acb(v if isinstance(v, arb) else to_arb(v))

    def mpf(self, v: Num) -> Num:
        return self._n(v)

    def sqrt(self, x: Num) -> Num:
        return self._n(x).sqrt(analytic=self.analytic)

    def log(self, x: Num) -> Num:
        return self._n(x).log(analytic=self.analytic)

    def atan(self, x: Num) -> Num:
        # atan z = (log(1 + iz) − log(1 − iz)) / (2i): the logs' cuts are atan's cuts.
        z = self._n(x)
        iz = acb(0, 1) * z
        return (self.log(1 + iz) - self.log(1 - iz)) / acb(0, 2)


if TYPE_CHECKING:  # mypy checks the classes against the interface the printer's code calls
    _ARB_IS_A_CONTEXT: Context = ArbContext(53)
    _ACB_IS_A_CONTEXT: Context = AcbContext(53)


def arb_to_mpf(x: arb) -> mpmath.mpf:
    """The exact midpoint of ``x`` as an mpmath number (no rounding)."""
    man, exp = x.mid().man_exp()
    # make_mpf wraps the raw value as is (mpf(raw) would round it to mp.prec), in a private
    # context as precise as the value: arithmetic on it then keeps its digits, as it does on
    # the verified path's values (the global mp.prec is usually 53 bits)
    # rounded up to a multiple of 64 bits, so that a few contexts serve every value
    ctx = _private_context(64 * ((int(man).bit_length() + 32) // 64 + 1))
    return ctx.make_mpf(mpmath.libmp.from_man_exp(int(man), int(exp)))


def midpoint_text(x: arb, digits: int) -> str:
    """A ball's midpoint for a message (the ball itself is in the result, not the text)."""
    return str(mpmath.nstr(arb_to_mpf(x), digits))


@functools.lru_cache(maxsize=64)
def _private_context(prec: int) -> mpmath.ctx_mp.MPContext:
    """One private mpmath context per precision: building one costs ~1.5 ms, and results
    are shared read-only (nothing here sets a context's precision after creating it)."""
    ctx = mpmath.MPContext()
    ctx.prec = prec
    return ctx


def _dyadic(x: arb) -> tuple[int, int]:
    """(m, e) with x = m·2^e exactly, for an arf (a midpoint or a radius)."""
    man, exp = x.man_exp()
    return int(man), int(exp)


def _ends(x: arb) -> tuple[tuple[int, int], tuple[int, int]]:
    """The exact ends mid ∓ rad as ratios (num, den), den a power of two (``arb.lower`` and
    ``upper`` would round at the global precision; Fractions would take huge gcds)."""
    (m1, e1), (m2, e2) = _dyadic(x.mid()), _dyadic(arb(x.rad()).mid())
    e = min(e1, e2)
    mid, rad = m1 << (e1 - e), m2 << (e2 - e)
    den = 1 << -e if e < 0 else 1
    scale = 1 << e if e > 0 else 1
    return (scale * (mid - rad), den), (scale * (mid + rad), den)


def round_digits(x: arb, n: int) -> tuple[int, int, int] | None:
    """The n-digit rounding every point of the ball ``x`` shares, or None if they differ.

    Exact rounding (ties away from zero) is monotone, so when both ends of the ball round to
    the same n-digit decimal, every number inside does: that decimal is proven.
    """
    if not x.is_finite():
        return None
    (lo, den), (hi, _) = _ends(x)
    r_lo = round_ratio(lo, den, n, "nearest")
    if r_lo[0] == 0 or (lo < 0 < hi):
        return None
    return r_lo if round_ratio(hi, den, n, "nearest") == r_lo else None


def format_digits(rounded: tuple[int, int, int], n: int, *, strip_zeros: bool = False) -> str:
    """A rounded decimal as text in mpmath's ``nstr`` style (fixed near unity), so certified
    and verified output read the same; trailing zeros are kept (n digits asked, n shown)."""
    return format_decimal(rounded, n, strip_zeros=strip_zeros)

r"""The range of an expression on a tail [x0, ∞): interval rules with infinite ends (Arb).

:func:`tail_range` returns an interval containing e([x0, ∞)): the rules of interval arithmetic
on the expression tree (sums and products of intervals whose ends may be ±∞, monotone
functions at the ends and their limits, sin and cos by Arb or by ±1), and at any node whose
interval is unbounded the decaying growth bound ±sup c(1 + x)^p e^{ax} of :mod:`._growth`
(x·e^{−x} is [x0, ∞)·[0, e^{−x0}] for the rules, but decays).  Ends are exact arbs rounded
outward at :data:`._growth.BOUND_PREC` bits; None stands for −∞ (low end) or +∞ (high end).
Finite intervals are not evaluated here but by Arb through the one printer.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import sympy as sp
from flint import arb

from ..symbolic import X, bounded
from ._arb import workprec
from ._context import Num
from ._growth import (
    BOUND_PREC,
    NotEnclosable,
    _constant,
    _growth,
    _lo,
    _max,
    _up,
    growth_sup,
)
from ._interval import exact_power

__all__ = ["tail_range", "tail_sup", "tail_interval"]

#: Python calls one SymPy rewrite may make before the rule declines (counted, not timed)
_SYMPY_CALLS = 400_000

_Range = tuple[Num, Num]  # (lo, hi): exact arbs, None for −∞ / +∞


def tail_range(e: sp.Expr, x0: arb) -> tuple[arb | None, arb | None]:
    """An interval [lo, hi] containing e(x) for every x ≥ x0 ≥ 1 (exact arbs; None is ∓∞).

    Raises:
      NotEnclosable: a node outside the rules (no interval at all).
    """
    with workprec(BOUND_PREC):
        try:
            return _range(e, x0)
        except (ValueError, ZeroDivisionError) as err:
            raise NotEnclosable(f"{e}: {err}") from None


def _range(e: sp.Expr, x0: arb) -> _Range:
    """The interval of e on [x0, ∞): the rules, and where they leave it unbounded the decaying
    growth bound (x·e^{−x}: the rules see [x0, ∞)·[0, e^{−x0}])."""
    try:
        lo, hi = _range_rule(e, x0)
    except NotEnclosable:
        lo, hi = None, None
        failed = True
    else:
        failed = False
    if lo is not None and hi is not None:
        return lo, hi
    s = _decay_sup(e, x0)
    if s is None and isinstance(e, sp.Mul) and e.has(sp.tanh, sp.sinh, sp.cosh):
        # 1 − tanh² decays only in exponentials: (2 − 2tanh(x)²)·x is bounded, but not by rules
        # that see 2 − 2tanh² ≤ 4; the node over one denominator shows it
        form = _rewritten(e)
        s = None if form is None else _decay_sup(form, x0)
    if s is None:
        if failed:
            raise NotEnclosable(f"no interval rule or growth bound for {e} on the tail")
        return lo, hi
    lo = -s if lo is None or lo < -s else lo
    hi = s if hi is None or hi > s else hi
    return lo, hi


def _decay_sup(e: sp.Expr, x0: arb) -> arb | None:
    try:
        return growth_sup(_growth(e, x0, True), x0)
    except (NotEnclosable, ValueError, ZeroDivisionError):
        return None


def _point(v: arb) -> tuple[arb, arb]:
    if not v.is_finite():
        raise NotEnclosable(f"a range end evaluated to {v}")
    return arb(v.lower()), arb(v.upper())


def _add(r: _Range, s: _Range) -> _Range:
    lo = None if r[0] is None or s[0] is None else arb((r[0] + s[0]).lower())
    hi = None if r[1] is None or s[1] is None else arb((r[1] + s[1]).upper())
    return lo, hi


_POS, _NEG = math.inf, -math.inf


def _ext(r: _Range) -> tuple[Num, Num]:
    return (_NEG if r[0] is None else r[0]), (_POS if r[1] is None else r[1])


def _mul_ends(a: Num, b: Num) -> tuple[Num, Num]:
    """(lower, upper) of the product of two ends (exact arbs or ±inf; 0·∞ = 0 for closed sets)."""
    if isinstance(a, float) or isinstance(b, float):
        fa = a if isinstance(a, float) else (0.0 if a == 0 else (1.0 if a > 0 else -1.0))
        fb = b if isinstance(b, float) else (0.0 if b == 0 else (1.0 if b > 0 else -1.0))
        if fa == 0 or fb == 0:
            return arb(0), arb(0)
        v = _POS if (fa > 0) == (fb > 0) else _NEG
        return v, v
    p = a * b
    return arb(p.lower()), arb(p.upper())


def _less(a: Num, b: Num) -> bool:
    """a < b for exact arbs and ±inf (floats)."""
    if isinstance(a, float) and isinstance(b, float):
        return a < b
    if isinstance(a, float):
        return a < 0
    if isinstance(b, float):
        return b > 0
    return bool(a < b)


def _mul(r: _Range, s: _Range) -> _Range:
    (a0, a1), (b0, b1) = _ext(r), _ext(s)
    cands = [_mul_ends(x, y) for x in (a0, a1) for y in (b0, b1)]
    lo = cands[0][0]
    hi = cands[0][1]
    for c_lo, c_hi in cands[1:]:
        if _less(c_lo, lo):
            lo = c_lo
        if _less(hi, c_hi):
            hi = c_hi
    return (None if isinstance(lo, float) else lo), (None if isinstance(hi, float) else hi)


def _recip(r: _Range, what: sp.Expr) -> _Range:
    lo, hi = r
    if lo is not None and lo > 0:
        return _point(1 / hi)[0] if hi is not None else arb(0), _point(1 / lo)[1]
    if hi is not None and hi < 0:
        return _point(1 / hi)[0], (_point(1 / lo)[1] if lo is not None else arb(0))
    raise NotEnclosable(f"the denominator {what} may vanish on the tail")


def _power(r: _Range, k: int) -> _Range:
    lo, hi = r
    if k % 2 == 1:
        return (None if lo is None else _point(exact_power(lo, k))[0]), (
            None if hi is None else _point(exact_power(hi, k))[1]
        )
    if lo is not None and lo >= 0:
        return _point(exact_power(lo, k))[0], (
            None if hi is None else _point(exact_power(hi, k))[1]
        )
    if hi is not None and hi <= 0:
        return _point(exact_power(hi, k))[0], (
            None if lo is None else _point(exact_power(lo, k))[1]
        )
    top = None if lo is None or hi is None else _point(exact_power(_max(abs(lo), abs(hi)), k))[1]
    return arb(0), top


#: increasing functions: (f at a finite end, its limit at −∞, its limit at +∞; None = ∓∞)
_INCREASING: dict[type, tuple[Callable[[arb], arb], Callable[[], Num], Callable[[], Num]]] = {
    sp.exp: (lambda v: v.exp(), lambda: arb(0), lambda: None),
    sp.tanh: (lambda v: v.tanh(), lambda: arb(-1), lambda: arb(1)),
    sp.erf: (lambda v: v.erf(), lambda: arb(-1), lambda: arb(1)),
    sp.atan: (lambda v: v.atan(), lambda: _lo(-arb.pi() / 2), lambda: _up(arb.pi() / 2)),
    sp.asinh: (lambda v: v.asinh(), lambda: None, lambda: None),
    sp.sinh: (lambda v: v.sinh(), lambda: None, lambda: None),
}


def _monotone(f: type, r: _Range) -> _Range:
    fn, at_minus, at_plus = _INCREASING[f]
    lo = at_minus() if r[0] is None else _point(fn(r[0]))[0]
    hi = at_plus() if r[1] is None else _point(fn(r[1]))[1]
    return lo, hi


def _range_rule(e: sp.Expr, x0: arb) -> _Range:
    if not e.has(X):
        return _point(_constant(e))
    if e == X:
        return x0, None
    if isinstance(e, sp.Add):
        out = _range(e.args[0], x0)
        for t in e.args[1:]:
            out = _add(out, _range(t, x0))
        return out
    if isinstance(e, sp.Mul):
        out = _range(e.args[0], x0)
        for t in e.args[1:]:
            out = _mul(out, _range(t, x0))
        return out
    if isinstance(e, sp.Pow):
        base, n = e.base, e.exp
        if not base.has(X) and n.has(X):
            if not base.is_positive:
                raise NotEnclosable(f"power {e} with a base that is not positive")
            return _range(sp.exp(n * sp.log(base)), x0)
        if not n.is_Rational:
            raise NotEnclosable(f"power {e}")
        r = _range(base, x0)
        if n.is_Integer:
            k = int(n)
            return _power(r, k) if k > 0 else _power(_recip(r, base), -k)
        if r[0] is None or r[0] < 0:
            raise NotEnclosable(f"{e} on a base that may be negative")
        q = _constant(n)
        if n > 0:  # increasing; 0**q = 0
            lo = arb(0) if r[0] == 0 else _point(r[0] ** q)[0]
            return lo, (None if r[1] is None else _point(r[1] ** q)[1])
        if not r[0] > 0:
            raise NotEnclosable(f"{e} at 0")
        return (arb(0) if r[1] is None else _point(r[1] ** q)[0]), _point(r[0] ** q)[1]
    if isinstance(e, sp.Function) and len(e.args) == 1:
        return _function_range(e, _range(e.args[0], x0))
    raise NotEnclosable(f"no interval rule for {type(e).__name__} in {e}")


def _function_range(e: sp.Function, r: _Range) -> _Range:
    f = type(e)
    if f in _INCREASING:
        return _monotone(f, r)
    if f is sp.erfc:
        lo = arb(0) if r[1] is None else _point(r[1].erfc())[0]
        hi = arb(2) if r[0] is None else _point(r[0].erfc())[1]
        return lo, hi
    if f is sp.log:
        if r[0] is None or not r[0] > 0:
            raise NotEnclosable(f"log of a range that may reach 0 in {e}")
        return _point(r[0].log())[0], (None if r[1] is None else _point(r[1].log())[1])
    if f in (sp.sin, sp.cos):
        if r[0] is not None and r[1] is not None and (r[1] - r[0]) < 6:
            ball = arb(r[0]).union(arb(r[1]))
            return _point(ball.sin() if f is sp.sin else ball.cos())
        return arb(-1), arb(1)
    if f is sp.cosh:
        a = _power(r, 2)  # cosh is even and increasing in x²
        lo = _point(a[0].sqrt().cosh())[0]
        return lo, (None if a[1] is None else _point(a[1].sqrt().cosh())[1])
    if f is sp.Abs:
        a = _power(r, 2)
        return _point(a[0].sqrt())[0], (None if a[1] is None else _point(a[1].sqrt())[1])
    raise NotEnclosable(f"no interval rule for {f.__name__} in {e}")


@functools.lru_cache(maxsize=512)
def _rewritten(g: sp.Expr) -> sp.Expr | None:
    """g with tanh/sinh/cosh in exponentials, over one denominator (1 − tanh² → 4/(e^x + e^−x)²)."""
    if not g.has(sp.tanh, sp.sinh, sp.cosh):
        return None
    return bounded(lambda: sp.cancel(g.rewrite(sp.exp)), _SYMPY_CALLS)


def tail_sup(e: sp.Expr, x0: arb) -> arb | None:
    """An upper bound of |e| on [x0, ∞) (x0 ≥ 1), or None where none is proved.

    The interval of :func:`tail_range`; where it is unbounded, also the form with tanh, sinh
    and cosh in exponentials over one denominator (the decay of 1 − tanh² shows only there).
    """
    best = None
    for form in (lambda: e, lambda: _rewritten(e)):
        h = form()
        if h is None:
            continue
        try:
            lo, hi = tail_range(h, x0)
        except NotEnclosable:
            continue
        if lo is None or hi is None:
            continue
        with workprec(BOUND_PREC):
            top = _max(abs(lo), abs(hi))
        best = top if best is None or top < best else best
        if best is not None:
            break
    return best


@functools.lru_cache(maxsize=256)
def _limit_form(e: sp.Expr) -> tuple[sp.Expr, sp.Expr] | None:
    """(L, e − L over one denominator) for L = lim e at +∞ finite, else None (bounded effort)."""
    lim = bounded(lambda: sp.limit(e, X, sp.oo), _SYMPY_CALLS)
    if lim is None or not lim.is_real or not lim.is_finite or lim.has(X):
        return None
    diff = e - lim
    if diff.has(sp.tanh, sp.sinh, sp.cosh):
        diff = diff.rewrite(sp.exp)
    rest = bounded(lambda: sp.cancel(sp.together(diff)), _SYMPY_CALLS)
    return None if rest is None else (lim, rest)


def tail_interval(e: sp.Expr, x0: arb) -> tuple[arb, arb] | None:
    """A finite interval containing e([x0, ∞)), or None: :func:`tail_range`, or where that is
    unbounded, L ± sup|e − L| for L = lim e (SymPy's limit is only a guess: the bound of
    e − L over one denominator is what is proved, by :func:`tail_sup`)."""
    try:
        lo, hi = tail_range(e, x0)
    except NotEnclosable:
        lo, hi = None, None
    if lo is not None and hi is not None and hi - lo <= _TIGHT * (1 + abs(lo) + abs(hi)):
        return lo, hi
    near = _near_limit(e, x0)
    if near is None:
        return (lo, hi) if lo is not None and hi is not None else None
    if lo is None or hi is None:
        return near
    return (lo if lo > near[0] else near[0]), (hi if hi < near[1] else near[1])


#: a direct range this tight (relative) is not improved on by the limit form
_TIGHT = 2.0**-40


def _near_limit(e: sp.Expr, x0: arb) -> tuple[arb, arb] | None:
    form = _limit_form(e)
    if form is None:
        return None
    lim, rest = form
    try:
        centre = _constant(lim)
    except NotEnclosable:
        return None
    s = tail_sup(rest, x0)
    if s is None:
        return None
    with workprec(BOUND_PREC):
        return _lo(centre - s), _up(centre + s)

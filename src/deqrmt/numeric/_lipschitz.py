r"""L₁ = sup |φ'| enclosed rigorously, on the one bounds engine (Arb).

Assumption 1 of Ling, Liao, Qiu (ICML 2024) asks for an L₁-Lipschitz φ.  L₁ is enclosed piece
by piece between the kinks (a jump is found exactly by SymPy: then no L₁ exists):

* on [−R, R] (R = 16, widened to contain every kink) by branch and bound over dyadic
  sub-intervals, each enclosed by interval arithmetic on Arb through the one printer
  (:func:`deqrmt.numeric.compile_function` on :class:`._interval.IntervalContext`), met with the mean value
  form φ'(m) + φ''(I)(I − m), which is tight where φ' is flat (a plateau would otherwise need ever
  finer pieces);
* on |x| ≥ R by the tail rules of :mod:`._tail_range`: interval rules with infinite ends, or a
  growth envelope c(1 + x)^p e^{ax} from the expression tree where those lose the decay;
* L₁ = ∞ is proved when φ'' has one sign on a tail (its tail range) and SymPy's limit of φ'
  there is infinite.  Anything else is "undecided", never a bound.
"""

from __future__ import annotations

import dataclasses
import functools
import heapq
import itertools
import math
from fractions import Fraction

import mpmath
import sympy as sp
from flint import arb
from mpmath.libmp import from_man_exp

from .. import _arguments
from .._errors import InvalidArgument
from ..symbolic import Activation, X, bounded, get_activation
from ._arb import ARB_FUNCTIONS, unsupported, workprec
from ._context import Num
from ._enclosure_text import exact_fraction, interval_text
from ._growth import NotEnclosable, constant_ball, point_ball
from ._interval import Interval, IntervalContext, interval
from ._printer import compile_function
from ._tail_range import tail_range, tail_sup

__all__ = ["LipschitzBound", "lipschitz_bound", "MAX_LIPSCHITZ_RADIUS", "MAX_LIPSCHITZ_BUDGET"]

#: working precision (bits) of the enclosures: L₁ is printed to 6 digits
PREC = 64
#: Python calls one SymPy limit may make before the unboundedness rule declines
_SYMPY_CALLS = 400_000
_INF = mpmath.inf


@dataclasses.dataclass(frozen=True)
class LipschitzBound:
    """L₁ = sup |φ'| enclosed: ``lower ≤ L₁ ≤ upper`` (exact binary numbers, mpmath mpf).

    Attributes:
      kind: ``"bounded"``, ``"unbounded"`` (proved: φ' is monotone on a tail with an infinite
        limit), ``"discontinuous"`` (φ jumps: no Lipschitz constant) or ``"undecided"``.
      lower, upper: the enclosure (``upper`` is +∞ unless bounded; ``lower`` is a value
        |φ'(x)| attained, so a proved lower bound).
      method: how it was bounded, for the report.
      reason: for the three other kinds, why.
    """

    kind: str
    lower: Num
    upper: Num
    method: str
    reason: str = ""

    @property
    def finite(self) -> bool:
        return self.kind == "bounded"

    def text(self) -> str:
        """L₁ as text that encloses it: its proven digits, or the interval rounded outward."""
        if self.kind == "bounded":
            return interval_text(self.lower, self.upper, 6)
        return {"unbounded": "∞", "discontinuous": "none (φ jumps)"}.get(self.kind, "?")


def _mpf(v: arb) -> Num:
    """An exact arb as an mpmath number (no rounding)."""
    m, e = v.mid().man_exp()
    return mpmath.mp.make_mpf(from_man_exp(int(m), int(e)))


def _hull(lo: arb, hi: arb) -> arb:
    """The ball [lo, hi] for exact ends (its radius is rounded up: it contains them)."""
    return arb(lo).union(arb(hi))


class _Derivative:
    """φ' on one piece, compiled with φ'' for the Arb context: enclosures on intervals."""

    def __init__(self, g: sp.Expr) -> None:
        self.g = g
        self._fn = compile_function("lipschitz_piece", [X], [g, sp.diff(g, X)])
        self._ctx = IntervalContext(PREC)

    def _eval(self, x: arb) -> tuple[arb, arb]:
        with self._ctx.workprec():
            g, dg = self._fn(self._ctx, Interval(x))
        return interval(g), interval(dg)

    def at(self, x: arb) -> arb:
        return self._eval(x)[0]

    def enclose(self, lo: arb, hi: arb) -> arb:
        """φ'([lo, hi]) ∩ (φ'(m) + φ''([lo, hi])·([lo, hi] − m)), m the midpoint."""
        naive, slope = self._eval(_hull(lo, hi))
        if lo == hi:
            return naive
        with workprec(PREC):
            m = (lo + hi) / 2
            mvf = self.at(m) + slope * (_hull(lo, hi) - m)
        if not mvf.is_finite():
            return naive
        if not naive.is_finite():
            return mvf
        top = min(naive.upper(), mvf.upper(), key=_key)
        bottom = max(naive.lower(), mvf.lower(), key=_key)
        return _hull(arb(bottom), arb(top)) if bottom <= top else mvf


def _key(v: arb) -> Fraction:
    return exact_fraction(arb(v))


def _abs_upper(v: arb) -> arb | None:
    return arb(v.abs_upper()) if v.is_finite() else None


def _abs_lower(v: arb) -> arb:
    return arb(v.abs_lower()) if v.is_finite() else arb(0)


def _sup_abs(
    f: _Derivative, a: arb, b: arb, rtol: float, budget: int
) -> tuple[arb, arb | None, int]:
    """Branch and bound for sup |φ'| on [a, b]: (proved lower, proved upper or None, evaluations)."""
    tol, floor = arb(repr(rtol)), arb("1e-15")

    def upper(lo: arb, hi: arb) -> Fraction | float:
        top = _abs_upper(f.enclose(lo, hi))
        return math.inf if top is None else exact_fraction(top)

    def at(lo: arb, hi: arb) -> arb:
        with workprec(PREC):
            m = (lo + hi) / 2
        return _abs_lower(f.at(m))

    best = at(a, b)
    counter = itertools.count()
    heap: list[tuple[Num, int, arb, arb]] = [(-upper(a, b), next(counter), a, b)]
    evals = 2
    while evals < budget:
        neg_u, _, lo, hi = heap[0]
        with workprec(PREC):
            target = exact_fraction(arb((best * (1 + tol) + floor).upper()))
        if -neg_u <= target:
            break
        heapq.heappop(heap)
        with workprec(PREC):
            mid = (lo + hi) / 2
        for x0, x1 in ((lo, mid), (mid, hi)):
            heapq.heappush(heap, (-upper(x0, x1), next(counter), x0, x1))
            cand = at(x0, x1)
            best = cand if cand > best else best
            evals += 2
    top = -heap[0][0]
    return best, (None if top == math.inf else arb(top.numerator) / top.denominator), evals


#: largest ``radius`` and ``budget`` :func:`lipschitz_bound` accepts (work grows with both)
MAX_LIPSCHITZ_RADIUS, MAX_LIPSCHITZ_BUDGET = 10**4, 10**6


def lipschitz_bound(
    activation: str | Activation, *, radius: int = 16, rtol: float = 1e-7, budget: int = 4000
) -> LipschitzBound:
    """L₁ = sup |φ'| enclosed rigorously by Arb interval arithmetic (see the module docstring).

    Args:
      activation: library name, expression in x or :class:`Activation`.
      radius: R; [−R, R] (widened to contain every kink) is bisected, |x| ≥ R are tails.
      rtol: stop refining when the enclosure is this tight (relative).
      budget: interval evaluations per piece before settling for a looser bound.

    Example:
      >>> lipschitz_bound("tanh").text()
      '1.0'
      >>> lipschitz_bound("x**2/4 + x").kind
      'unbounded'
    """
    act = get_activation(activation)
    radius = _arguments.integer(radius, "radius", 1, MAX_LIPSCHITZ_RADIUS)
    tol = _arguments.number(rtol, "rtol")
    if not 0 < tol < 1:
        raise InvalidArgument(f"rtol={_arguments.show(rtol)}: choose a tolerance in (0, 1).")
    budget = _arguments.integer(budget, "budget", 1, MAX_LIPSCHITZ_BUDGET)
    return _lipschitz_bound(act, radius, float(tol), budget)


def _discontinuous(act: Activation) -> LipschitzBound:
    jumps = []
    for left, right in zip(act.pieces[:-1], act.pieces[1:], strict=True):
        jump = sp.simplify(right.expr.subs(X, left.hi) - left.expr.subs(X, left.hi))
        if jump != 0:
            jumps.append(f"by {jump} at x = {left.hi}")
    return LipschitzBound(
        "discontinuous", mpmath.mpf(0), _INF, "exact (SymPy, at the kinks)",
        f"φ jumps {', '.join(jumps)}: not continuous, so no Lipschitz constant exists",
    )  # fmt: skip


@functools.lru_cache(maxsize=256)
def _lipschitz_bound(act: Activation, radius: int, rtol: float, budget: int) -> LipschitzBound:
    if not act.is_continuous:
        return _discontinuous(act)
    kinks = [abs(float(k)) for k in act.kinks]
    r = Fraction(max([radius, *(math.ceil(2 * k + 1) for k in kinks)]))
    lower, upper = arb(0), arb(0)
    n_evals = 0
    constant_pieces = 0
    for piece in act.derivative_pieces:
        g = piece.expr
        if not g.has(X):
            try:
                value = constant_ball(g)
            except NotEnclosable as e:
                return LipschitzBound("undecided", _mpf(lower), _INF, "interval arithmetic", str(e))
            lower, upper = _larger(lower, _abs_lower(value)), _larger(upper, arb(value.abs_upper()))
            constant_pieces += 1
            continue
        bad = unsupported(g, ARB_FUNCTIONS, holomorphic=False) + unsupported(
            sp.diff(g, X), ARB_FUNCTIONS, holomorphic=False
        )
        if bad:
            return LipschitzBound(
                "undecided", _mpf(lower), _INF, "interval arithmetic",
                f"φ'(x) = {g} uses {', '.join(sorted(set(bad)))}, outside what Arb evaluates here",
            )  # fmt: skip
        f = _Derivative(g)
        rv = arb(r.numerator) / r.denominator
        lo = (
            -rv
            if piece.lo is sp.S.NegativeInfinity
            else _larger(-rv, arb(point_ball(piece.lo).lower()))
        )
        hi = rv if piece.hi is sp.S.Infinity else -_larger(-rv, -arb(point_ball(piece.hi).upper()))
        if lo < hi:
            best, top, evals = _sup_abs(f, lo, hi, rtol, budget)
            n_evals += evals
            if top is None:
                return LipschitzBound(
                    "undecided", _mpf(_larger(lower, best)), _INF, "interval arithmetic",
                    f"φ'(x) = {g} is not finite in ball arithmetic on [{float(lo):g}, {float(hi):g}]",
                )  # fmt: skip
            lower, upper = _larger(lower, best), _larger(upper, top)
        for side in (1, -1):
            out = _tail(piece, f, side, r)
            if out is None:
                continue
            if isinstance(out, LipschitzBound):
                return dataclasses.replace(out, lower=_mpf(lower))
            low, top = out
            lower, upper = _larger(lower, low), _larger(upper, top)
    if n_evals == 0:
        method = f"exact: φ' is constant on each of the {constant_pieces} pieces"
    else:
        method = (
            f"interval arithmetic (Arb balls): φ' on dyadic pieces of [−{r}, {r}] ({n_evals} "
            "evaluations, branch and bound, mean value form), and on |x| ≥ "
            f"{r} by interval rules with infinite ends or a growth envelope c(1+|x|)^p e^(a|x|) "
            "from the expression tree"
        )
    return LipschitzBound("bounded", _mpf(lower), _mpf(upper), method)


def _larger(a: arb, b: arb) -> arb:
    return a if a >= b else b


def _tail(
    piece: Num, f: _Derivative, side: int, r: Fraction
) -> tuple[arb, arb] | LipschitzBound | None:
    """(lower, upper) of |φ'| on the tail beyond ``side``·R of an outer piece; None for an
    inner piece; a LipschitzBound when L₁ is proved infinite or the tail is undecided."""
    if (piece.hi if side == 1 else piece.lo) is not (sp.oo if side == 1 else -sp.oo):
        return None
    g = piece.expr
    near = piece.lo if side == 1 else -piece.hi
    start = r if near.is_infinite else max(r, exact_fraction(arb(point_ball(near).upper())))
    h = g if side == 1 else g.subs(X, -X)
    where = "x → +∞" if side == 1 else "x → −∞"
    x0 = arb(start.numerator) / start.denominator
    top = tail_sup(h, x0)
    if top is None:
        lim = _tends_to_infinity(h, start)
        if lim is not None:
            return LipschitzBound(
                "unbounded", 0, _INF,
                "interval arithmetic: φ'' has one sign on the tail, limit by SymPy",
                f"φ'(x) = {g} is monotone for |x| ≥ {float(start):g} and tends "
                f"to {'+' if lim is sp.oo else '−'}∞ as {where}: no Lipschitz constant",
            )  # fmt: skip
        return LipschitzBound(
            "undecided", 0, _INF, "interval arithmetic",
            f"could not bound φ'(x) = {g} for |x| ≥ {float(start):g} ({where})",
        )  # fmt: skip
    return _abs_lower(f.at(side * x0)), top


@functools.lru_cache(maxsize=512)
def _tends_to_infinity(g: sp.Expr, t: Fraction) -> sp.Expr | None:
    """±oo when g is proved monotone on [t, ∞) (one sign of g' by the tail rules) with an
    infinite limit."""
    d = sp.factor_terms(sp.diff(g, X))
    try:
        lo, hi = tail_range(d, arb(t.numerator) / t.denominator)
    except NotEnclosable:
        return None
    if not ((lo is not None and lo >= 0) or (hi is not None and hi <= 0)):
        return None
    lim = bounded(lambda: sp.limit(g, X, sp.oo), _SYMPY_CALLS)
    return lim if lim in (sp.oo, -sp.oo) else None

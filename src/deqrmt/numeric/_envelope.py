r"""A linear envelope |φ(x)| ≤ A + B_±|x| of an activation, proved (Arb).

It tells the fixed-point scan where F(q) < q must hold (:mod:`._fixed_point`): beyond the cut
x0 = max(1, |outermost kink|) each outer piece is bounded by affine rules (:func:`_affine`),
or else by its growth bound (:func:`._growth.growth_bound`); on [−x0, x0] each piece's |φ| is
bounded by Arb interval evaluation through the one printer.
"""

from __future__ import annotations

import functools

import sympy as sp
from flint import arb

from ..symbolic import Activation, X
from ._arb import ARB_FUNCTIONS, ArbContext, to_arb, unsupported, workprec
from ._growth import (
    BOUND_PREC,
    NotEnclosable,
    _constant,
    _growth,
    _lo,
    _log_argument,
    _max,
    _up,
    growth_bound,
    point_ball,
)
from ._printer import compile_function

__all__ = ["linear_envelope"]

#: sub-intervals per piece for the interval sup of |φ| between the outer cuts
_ENVELOPE_CELLS = 64


def _affine(e: sp.Expr, x0: arb) -> tuple[arb, arb]:
    """(A, B) with |e(x)| ≤ A + B x for every x ≥ x0 ≥ 1, proved.

    :func:`growth_bound`'s c(1 + x) has slope c, which for log(1 + e^x) is 1 + log 2, not 1:
    an envelope slope B ≥ 1/σ_a could prove no end for the scan at all.  These rules keep the
    slope exact where the tree allows (sums, constant factors, logs, absolute values) and fall
    back to the growth bound only for parts that stay bounded.

    Raises:
      NotEnclosable: a part grows and has no rule here (the caller uses the growth bound).
    """
    zero = arb(0)
    if not e.has(X):
        return _up(abs(_constant(e))), zero
    if e == X:
        return zero, arb(1)
    if isinstance(e, sp.Add):
        a, b = zero, zero
        for t in e.args:
            ta, tb = _affine(t, x0)
            a, b = _up(a + ta), _up(b + tb)
        return a, b
    if isinstance(e, sp.Mul):
        a, b = arb(1), zero
        for t in e.args:
            ta, tb = _affine(t, x0)
            if b != 0 and tb != 0:
                raise NotEnclosable(f"{e}: a product of two growing factors")
            # (a + b x)(ta + tb x) with b·tb = 0
            a, b = _up(a * ta), _up(a * tb + b * ta)
        return a, b
    if isinstance(e, sp.Abs):
        return _affine(e.args[0], x0)
    if isinstance(e, sp.log):
        low, g = _log_argument(e.args[0], x0)
        if not g.c > 0:
            raise NotEnclosable(f"log({e.args[0]}): no positive growth constant")
        # log u ≤ log c + p log(1 + x) + a x, and log(1 + x) ≤ log(1 + x0) + x/(1 + x0) (it is
        # concave); log u ≥ log(low): |log u| ≤ max(|log low|, |log c| + p log(1 + x0)) + B x
        top = _up(abs(g.c.log()) + g.p * (1 + x0).log())
        return _max(abs(low.log()), top), _up(g.p / (1 + x0) + g.a)
    g = _growth(e, x0, False)
    if g.p == 0 and g.a == 0:
        return g.c, zero
    raise NotEnclosable(f"no affine rule for {type(e).__name__} in {e}")


def _piece_sup(e: sp.Expr, lo: arb, hi: arb) -> arb | None:
    """A proved upper bound of |e(x)| over [lo, hi] (Arb interval evaluation on cells)."""
    if unsupported(e, ARB_FUNCTIONS, holomorphic=False):
        return None
    fn = compile_function("envelope_piece", [X], [e])
    ctx = ArbContext(BOUND_PREC)
    top = arb(0)
    with ctx.workprec():
        width = (hi - lo) / _ENVELOPE_CELLS
        for i in range(_ENVELOPE_CELLS):
            a, b = lo + width * i, lo + width * (i + 1)
            (v,) = fn(ctx, arb((a + b) / 2, _up(abs(b - a) / 2)))
            v = v if isinstance(v, arb) else to_arb(v)
            if not v.is_finite():
                return None
            top = _max(top, abs(v))
    return top


@functools.lru_cache(maxsize=256)
def linear_envelope(act: Activation) -> tuple[arb, arb, arb] | None:
    """(A, B₊, B₋) with |φ(x)| ≤ A + B₊x for x ≥ 0 and |φ(x)| ≤ A + B₋|x| for x ≤ 0, proved;
    None where none is derived.  (One slope per side: ReLU-like φ are flat on one.)

    Beyond the cut x0 = max(1, |outermost kink|) each outer piece is bounded by :func:`_affine`'s
    rules, or else by its growth bound (:func:`growth_bound`, which must come out as
    c(1 + |x|)^p with p ≤ 1 and no exponential) as c + c|x|; on [−x0, x0] each piece's |φ| is bounded by Arb interval evaluation.  It
    tells the fixed-point scan where F(q) < q must hold (see ``_fixed_point``).
    """
    with workprec(BOUND_PREC):
        cut = max(
            [arb(1), *(abs(point_ball(k)) for k in act.kinks)], key=lambda v: float(v.upper())
        )
        x0 = _up(cut)
        a_coef, slopes = arb(0), []
        ends = act.pieces[-1].expr, act.pieces[0].expr.subs(X, -X)  # x → +∞, then x → −∞
        for e in ends:
            try:
                ea, eb = _affine(e, x0)
            except NotEnclosable:
                try:
                    g = growth_bound(e, x0)
                except NotEnclosable:
                    return None
                if not (g.a == 0 and g.p <= 1):
                    return None
                ea, eb = g.c, (g.c if g.p > 0 else arb(0))  # c(1 + x)^p ≤ c + c x
            a_coef = _max(a_coef, ea)
            slopes.append(_up(eb))
        for piece in act.pieces:
            # the piece's part of [−x0, x0], widened outward to cover inexact kinks
            lo = -x0 if piece.lo == sp.S.NegativeInfinity else _lo(point_ball(piece.lo))
            hi = x0 if piece.hi == sp.S.Infinity else _up(point_ball(piece.hi))
            lo, hi = _max(lo, -x0), -_max(-hi, -x0)
            if not lo < hi:
                continue
            try:
                top = _piece_sup(piece.expr, lo, hi)
            except (NotEnclosable, ValueError, ZeroDivisionError):
                return None
            if top is None:
                return None
            a_coef = _max(a_coef, top)
        return a_coef, slopes[0], slopes[1]

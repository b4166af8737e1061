r"""The pieces of h = (φ_c²)'' for :mod:`._curvature`: compiled for interval evaluation, the
kinks with the jumps of (φ_c²)' and φ_c², a table of h's ranges, and the ξ-cells.

h = 2(φ'² + φ_cφ'') on each piece between the kinks, with h' = 2(3φ'φ'' + φ_cφ^(3)) for the
mean value form; every evaluation is interval arithmetic on Arb through the one printer
(:class:`._interval.IntervalContext`), so every range contains h's exact range.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from fractions import Fraction

import sympy as sp
from flint import arb

from ..symbolic import Activation, X
from ._arb import ARB_FUNCTIONS, unsupported, workprec
from ._context import Num
from ._growth import BOUND_PREC, NotEnclosable, point_ball
from ._interval import Interval, IntervalContext, interval
from ._printer import compile_function

__all__ = [
    "Pieces",
    "RangeTable",
    "hull",
    "xi_cells",
    "xi_level",
    "tail_probability",
    "tail_probability_slope",
    "XI_MAX",
    "PREC",
]

PREC = BOUND_PREC
#: |ξ| beyond this is bounded by the Gaussian-tail lemma with h's growth bound
XI_MAX = 8


def hull(lo: arb, hi: arb) -> arb:
    return arb(lo).union(arb(hi))


def _dyadic(v: float) -> arb:
    """v rounded to a multiple of 2^-16: exact cell ends (the grid only needs to cover)."""
    return arb(round(v * 2**16)) / 2**16


@functools.lru_cache(maxsize=16)
def xi_cells(level: int) -> tuple[tuple[arb, arb, arb, arb, arb, arb], ...]:
    """ξ-cells of [0, 8] with width 2^-level·e^{ξ²/6} (error ∝ width³·pdf: equal shares), each
    (g₀, g₁, ξ_m, P(C), E[ξ 1_C], E[(ξ − ξ_m) 1_C]) as Arb balls."""
    w0 = 2.0**-level
    out = []
    with workprec(PREC):
        inv_sqrt_2pi = 1 / (2 * arb.pi()).sqrt()
        sqrt2 = arb(2).sqrt()
        g0 = arb(0)
        while g0 < XI_MAX:
            step = min(1.0, w0 * math.exp(float(g0) ** 2 / 6))
            g1 = _dyadic(float(g0) + step)
            if g1 > XI_MAX:
                g1 = arb(XI_MAX)
            mid = (g0 + g1) / 2
            p = ((g1 / sqrt2).erf() - (g0 / sqrt2).erf()) / 2
            m1 = ((-g0 * g0 / 2).exp() - (-g1 * g1 / 2).exp()) * inv_sqrt_2pi
            out.append((g0, g1, mid, p, m1, m1 - mid * p))
            g0 = g1
    return tuple(out)


def xi_level(width: float) -> int:
    """ξ-grid level for a τ-cell of relative width ``width``: the mean value form's two errors,
    O(width) and O(ξ-width²), balanced."""
    return max(3, min(6, math.ceil(-math.log2(max(width, 1e-12)) / 2)))


class Pieces:
    """h = 2(φ'² + φ_c φ'') and h' on each piece, compiled for Arb; kinks with their jumps."""

    def __init__(self, act: Activation, c: arb) -> None:
        self.c = c
        self.act = act
        self.bounds: list[tuple[arb | None, arb | None]] = []
        self.fns: list[Callable[..., tuple[Num, ...]]] = []
        self.exprs: list[tuple[sp.Expr, sp.Expr, sp.Expr]] = []
        for piece, dpiece in zip(act.pieces, act.derivative_pieces, strict=True):
            d2 = sp.diff(dpiece.expr, X)
            exprs = (piece.expr, dpiece.expr, d2)
            bad = sorted({b for e in (*exprs, sp.diff(d2, X))
                          for b in unsupported(e, ARB_FUNCTIONS, holomorphic=False)})  # fmt: skip
            if bad:
                raise NotEnclosable(f"φ uses {', '.join(bad)}, outside what Arb evaluates here")
            self.exprs.append(exprs)
            self.fns.append(compile_function("curvature_piece", [X], [*exprs, sp.diff(d2, X)]))
            lo = None if piece.lo is sp.S.NegativeInfinity else point_ball(piece.lo)
            hi = None if piece.hi is sp.S.Infinity else point_ball(piece.hi)
            self.bounds.append((lo, hi))
        self.ctx = IntervalContext(PREC)
        self.kinks: list[tuple[arb, arb, arb]] = []
        for j, k in enumerate(act.kinks):
            kb = point_ball(k)
            (fl, dl, *_), (fr, dr, *_) = self._raw(j, kb), self._raw(j + 1, kb)
            with workprec(PREC):
                if act.is_continuous:  # one value at the kink: no dependency on c's radius
                    jump_d, jump_0 = 2 * (fl.union(fr) - c) * (dr - dl), arb(0)
                else:
                    jump_d = 2 * ((fr - c) * dr - (fl - c) * dl)  # jump of (φ_c²)' = 2φ_cφ'
                    jump_0 = (fr - c) * (fr - c) - (fl - c) * (fl - c)  # jump of φ_c²
            self.kinks.append((kb, jump_d, jump_0))

    def _raw(self, i: int, x: arb) -> tuple[arb, ...]:
        with self.ctx.workprec():
            vals = self.fns[i](self.ctx, Interval(x))
        return tuple(interval(v) for v in vals)

    def h(self, i: int, x: arb) -> tuple[arb, arb]:
        """(h(x), h'(x)) on piece i for the ball x."""
        f, d1, d2, d3 = self._raw(i, x)
        with workprec(PREC):
            fc = f - self.c
            return 2 * (d1 * d1 + fc * d2), 2 * (3 * d1 * d2 + fc * d3)

    def overlapping(self, lo: arb, hi: arb) -> list[tuple[int, arb, arb]]:
        """Pieces meeting the open interval (lo, hi), each with its part of [lo, hi]."""
        out = []
        for i, (a, b) in enumerate(self.bounds):
            if (a is not None and not a.lower() < hi) or (b is not None and not b.upper() > lo):
                continue
            part_lo = lo if a is None or a.upper() <= lo else arb(a.lower())
            part_hi = hi if b is None or b.lower() >= hi else arb(b.upper())
            out.append((i, part_lo, part_hi))
        return out

    def h_range(self, lo: arb, hi: arb) -> arb:
        """A ball containing h on [lo, hi] (the hull over the pieces it meets)."""
        out = None
        for i, a, b in self.overlapping(lo, hi):
            v = self.h(i, hull(a, b))[0]
            out = v if out is None else out.union(v)
        return out if out is not None else arb(0)


class RangeTable:
    """Ranges of h on 2^12 cells of [−X, X], as floats rounded outward, with a sparse table for
    the hull of any run of cells: a wide x-range costs two lookups, not a wide Arb ball (Arb
    encloses tanh on [0, 128] by ±1)."""

    def __init__(self, pieces: Pieces, x_max: arb, n: int = 2**10) -> None:
        self.x_max = float(x_max.mid())
        self.width = 2 * self.x_max / n
        lows, highs = [], []
        with workprec(PREC):
            step = 2 * x_max / n
            for i in range(n):
                v = pieces.h_range(-x_max + step * i, -x_max + step * (i + 1))
                lo, hi = _floats(v)
                lows.append(lo)
                highs.append(hi)
        self.levels = [(lows, highs)]
        size = 1
        while 2 * size <= n:
            lo_prev, hi_prev = self.levels[-1]
            count = n - 2 * size + 1
            self.levels.append(
                (
                    [min(lo_prev[i], lo_prev[i + size]) for i in range(count)],
                    [max(hi_prev[i], hi_prev[i + size]) for i in range(count)],
                )
            )
            size *= 2
        self.n = n

    def hull(self, a: Fraction, b: Fraction) -> tuple[float, float]:
        """(lower, upper) of h on [a, b] ∩ [−X, X] (a ≤ b; exact ends, exact cell indices)."""
        scale = Fraction(self.n) / (2 * Fraction(self.x_max))
        i0 = max(0, math.floor((a + Fraction(self.x_max)) * scale))
        i1 = min(self.n - 1, math.ceil((b + Fraction(self.x_max)) * scale) - 1)
        i1 = max(i0, i1)
        k = (i1 - i0 + 1).bit_length() - 1
        lows, highs = self.levels[k]
        j = i1 - (1 << k) + 1
        return min(lows[i0], lows[j]), max(highs[i0], highs[j])


def _floats(v: arb) -> tuple[float, float]:
    """The ends of a ball as floats rounded outward (±inf when it is not finite)."""
    if not v.is_finite():
        return -math.inf, math.inf
    return (
        math.nextafter(float(arb(v.lower())), -math.inf),
        math.nextafter(float(arb(v.upper())), math.inf),
    )


def tail_probability(x: arb, t: arb, k: arb) -> arb:
    """P(ξ > x/τ) at τ = t."""
    return (1 - (x / t / arb(2).sqrt()).erf()) / 2


def tail_probability_slope(x: arb, t: arb, k: arb) -> arb:
    """∂/∂τ P(ξ > x/τ) = (x/τ²) pdf(x/τ) on the ball t."""
    return x / (t * t) * (-(x * x) / (2 * t * t)).exp() * k

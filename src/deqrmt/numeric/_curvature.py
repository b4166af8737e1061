r"""sup over τ > 0 of E[(φ_c²)''(τξ)], enclosed rigorously on the one bounds engine (Arb).

Assumption 1 of Ling, Liao, Qiu (ICML 2024) asks σ_a² < 2/E[(φ²)''(τξ)] for every τ > 0, with
φ_c = φ − c centred.  For a piecewise smooth φ (pieces between the kinks k_j), the weak second
derivative is

    (φ_c²)'' = h + Σ_j ( J_j δ(x − k_j) + D_j δ'(x − k_j) ),    h = 2(φ'² + φ_c φ'') piecewise,

J_j the jump of (φ_c²)' = 2φ_cφ' at k_j and D_j the jump of φ_c² (0 for a continuous φ), so

    f(τ) = E[h(τξ)] + Σ_j ( J_j pdf(k_j/τ)/τ + D_j k_j pdf(k_j/τ)/τ³ ).

This is Stein's E[He₂(ξ) φ_c²(τξ)]/τ² written without the 1/τ² (which loses everything as
τ → 0).  f is bounded on cells [τa, τb] of log₂ τ by branch and bound: on each cell, over ξ-cells
C = [g₀, g₁] (finer where the density is large) and both signs of ξ,

    E[h(τξ) 1_C] ∈ h(x_m) P(C) + h'(τC) E[(τξ − x_m) 1_C],       x_m = τ_m ξ_m,

(the mean value form; P(C), E[ξ 1_C] are Arb balls, h and h' are interval evaluations of the
compiled pieces on τC = [τa g₀, τb g₁] (:class:`._interval.IntervalContext`), met with the
range of h on τC from a table of 2^12 cells of [−X, X]; a C whose τC meets a kink takes the
hull of the pieces' ranges), plus the Gaussian tail |ξ| > 8 by the growth bound of h
(:func:`._enclose.gaussian_tail`).  The first cell is (0, τ₀] (the same formula with τa = 0); the
last is [T, ∞), bounded by the range of h on the half-lines (ξ near 0) and on |x| ≥ X (the tail
rules of :mod:`._tail_range`): its limit as τ → ∞ is the mean of h's limits at ±∞.  A Dirac mass
of positive weight at x = 0 makes f(τ) → +∞ as τ → 0: the supremum is then proved infinite.
"""

from __future__ import annotations

import dataclasses
import functools
import heapq
import itertools
import math
from fractions import Fraction
from typing import Any

import mpmath
from flint import arb
from mpmath.libmp import from_man_exp

from .. import _arguments
from .._errors import InvalidArgument
from ..symbolic import Activation, X, get_activation
from ._arb import workprec
from ._curvature_pieces import (
    PREC,
    XI_MAX,
    Pieces,
    RangeTable,
    hull,
    tail_probability,
    tail_probability_slope,
    xi_cells,
    xi_level,
)
from ._enclose import gaussian_tail
from ._enclosure_text import exact_fraction
from ._growth import (
    Growth,
    NotEnclosable,
    _sum,
    growth_bound,
    nonnegative,
)
from ._tail_range import tail_interval, tail_sup

__all__ = ["CurvatureBound", "curvature_bound"]

#: first and last cells in log₂ τ: (0, 2^-_LOG_LO] and [T, ∞), T = 2^_LOG_T·X
_LOG_LO, _LOG_T = -24, 16
#: x beyond which h is bounded by the tail rules (at least this, and beyond every kink)
_X_TAIL = 64
_DEFAULT_BUDGET = 200
#: cells of [−X, X] of the x-form
_X_CELLS = 1024
#: the x-form (cells in x) from this τ on, the ξ-form (cells in ξ) up to _XI_FORM_TO
_X_FORM_FROM, _XI_FORM_TO = arb(1), arb(4)
#: widest x-range on which the mean value form is tried (beyond, Arb's h' is no use)
_MVF_WIDTH = 4
MAX_CURVATURE_BUDGET = 20_000


@dataclasses.dataclass(frozen=True)
class CurvatureBound:
    """sup_{τ>0} E[(φ_c²)''(τξ)] enclosed: ``lower ≤ sup ≤ upper`` (mpmath numbers, exact).

    Attributes:
      kind: ``"bounded"`` (``upper`` finite), ``"infinite"`` (proved: a Dirac mass of positive
        weight at x = 0), or ``"undecided"`` (no finite upper bound derived; ``lower`` is still
        proved).
      lower: a value f(τ) is proved to exceed (so a lower bound of the supremum).
      upper: an upper bound of f on every τ > 0 (+∞ unless bounded).
      where: the τ-cell of ``lower``, as text (``"τ → 0"`` and ``"τ → ∞"`` for the end cells).
      cells: τ-cells evaluated.
      reason: for the two other kinds, why.
    """

    kind: str
    lower: Any
    upper: Any
    where: str
    cells: int
    reason: str = ""

    @property
    def finite(self) -> bool:
        return self.kind == "bounded"


def _mpf(v: arb) -> Any:
    m, e = arb(v).mid().man_exp()
    return mpmath.mp.make_mpf(from_man_exp(int(m), int(e)))


class _Curvature:
    """f(τ) enclosed on cells of τ for one φ and centring c."""

    def __init__(self, act: Activation, c: arb) -> None:
        self.p = Pieces(act, c)
        kink_max = max((abs(float(k)) for k in act.kinks), default=0.0)
        self.x_tail = arb(max(_X_TAIL, 2 ** math.ceil(math.log2(2 * kink_max + 1))))
        self.t_last = self.x_tail * 2**_LOG_T
        self.x0 = arb(max(16, math.ceil(kink_max) + 1))
        self.growth = {s: self._growth(s) for s in (1, -1)}
        self.tails = {s: self._tail(s) for s in (1, -1)}
        self.by_parts = {s: self._by_parts(s) for s in (1, -1)}
        self.table = RangeTable(self.p, self.x_tail)

    # -- bounds that do not depend on τ ----------------------------------------------------
    def _growth(self, side: int) -> Growth | None:
        """|h(x)| ≤ C (1 + |x|)^p e^{a|x|} for every x on this side of 0 (p, a ≥ 0)."""
        phi, d1, d2 = (
            e if side > 0 else e.subs(X, -X) for e in self.p.exprs[-1 if side > 0 else 0]
        )
        with workprec(PREC):
            cg = Growth(arb(abs(self.p.c).upper()), arb(0), arb(0))
            two = Growth(arb(2), arb(0), arb(0))
            try:
                g = [growth_bound(e, self.x0, decay=True) for e in (phi, d1, d2)]
                inner = _sum([g[1] * g[1], (g[0] + cg) * g[2]], self.x0)  # keeps the decay
                outer = nonnegative(two * inner, self.x0)
            except NotEnclosable:
                return None
            if outer is None:
                return None
            # on [0, x0]: the largest |h| there, added to the constant (the bound is ≥ 1 there)
            near = arb(0)
            for i in range(64):
                a, b = self.x0 * i / 64, self.x0 * (i + 1) / 64
                v = self.p.h_range(a, b) if side > 0 else self.p.h_range(-b, -a)
                if not v.is_finite():
                    return None
                near = near if near >= v.abs_upper() else arb(v.abs_upper())
            return Growth(arb((outer.c + near).upper()), outer.p, outer.a)

    def _tail(self, side: int) -> arb | None:
        """The range of h on |x| ≥ X on this side (None: no bound)."""
        phi, d1, d2 = (
            e if side > 0 else e.subs(X, -X) for e in self.p.exprs[-1 if side > 0 else 0]
        )
        r1 = tail_interval(2 * (d1**2 + phi * d2), self.x_tail)  # (φ²)''
        r2 = tail_interval(d2, self.x_tail)  # φ''
        if r1 is None or r2 is None:
            return None
        with workprec(PREC):
            return hull(*r1) - 2 * self.p.c * hull(*r2)

    def _by_parts(self, side: int) -> tuple[arb, arb] | None:
        """(G(±X), sup |G| on |x| ≥ X) for G = (φ_c²)' = 2φ_cφ' on this side, when G is bounded
        there: then ∫_X^∞ h ρ = −G(X)ρ(X) − ∫ G ρ' ∈ −G(X)ρ(X) ± sup|G| ρ(X) (ρ decreasing),
        which decays like 1/τ even where h does not settle (sin, cos)."""
        phi, d1, _ = (e if side > 0 else e.subs(X, -X) for e in self.p.exprs[-1 if side > 0 else 0])
        # φ(−x) has derivative −φ'(−x): on the left, G(−x) = −2φ_c(−x) d/dx[φ(−x)]
        s1 = tail_sup(2 * phi * d1, self.x_tail)
        s2 = tail_sup(2 * d1, self.x_tail)
        if s1 is None or s2 is None:
            return None
        f, d, *_ = self.p._raw(-1 if side > 0 else 0, side * self.x_tail)
        with workprec(PREC):
            g_end = 2 * (f - self.p.c) * d
            return g_end, arb((s1 + abs(self.p.c) * s2).upper())

    def _tail_by_parts(self, side: int, rho_x: arb) -> arb:
        """∫ over |x| ≥ X on this side of h ρ, given ρ(X) (a ball over the τ-cell)."""
        g_end, sup_g = self.by_parts[side]  # type: ignore[misc]
        with workprec(PREC):
            return -side * g_end * rho_x + arb(0, 1) * sup_g * rho_x

    def range_of(self, lo: arb, hi: arb) -> arb | None:
        """A ball containing h on [lo, hi] (the table inside [−X, X], the tail ranges beyond)."""
        x = self.x_tail
        parts = []
        if hi > -x and lo < x:
            a, b = self.table.hull(exact_fraction(arb(lo.lower())), exact_fraction(arb(hi.upper())))
            if not (math.isfinite(a) and math.isfinite(b)):
                return None
            parts.append(hull(arb(a), arb(b)))
        for side, beyond in ((1, not hi <= x), (-1, not lo >= -x)):
            if beyond:
                t = self.tails[side]
                if t is None:  # |h(x)| ≤ C (1 + |x|)^p e^{a|x|}, largest at the far end
                    g = self.growth[side]
                    far = hi if side > 0 else -lo
                    if g is None or not far.is_finite():
                        return None
                    with workprec(PREC):
                        v = g.c * ((1 + far).log() * g.p + g.a * far).exp()
                    t = arb(0, arb(v.upper()))
                parts.append(t)
        out = parts[0]
        for v in parts[1:]:
            out = out.union(v)
        return out

    # -- cells -----------------------------------------------------------------------------
    def kink_terms(self, ta: arb | None, tb: arb | None) -> tuple[arb, bool] | None:
        """Σ_j J_j pdf(k/τ)/τ + D_j k pdf(k/τ)/τ³ over τ ∈ [ta, tb] (ta None: (0, tb]; tb None:
        [ta, ∞)), as (a ball, whether its lower end holds); None when no upper bound holds."""
        total = arb(0)
        lower_holds = True
        with workprec(PREC):
            inv_sqrt_2pi = 1 / (2 * arb.pi()).sqrt()
            for k, jump_d, jump_0 in self.p.kinks:
                if ta is not None and tb is not None:
                    t = hull(ta, tb)
                    q0 = (-(k * k) / (2 * t * t)).exp() * inv_sqrt_2pi / t
                    q1 = q0 * k / (t * t)
                elif tb is None and ta is not None:  # τ ≥ ta: pdf(k/τ)/τ ≤ pdf(0)/ta, …
                    q0 = hull(arb(0), inv_sqrt_2pi / ta)
                    q1 = arb(0, (abs(k) * inv_sqrt_2pi / (ta * ta * ta)).abs_upper())
                elif tb is None:
                    return None
                elif k == 0:  # τ ≤ tb: pdf(0)/τ ≥ pdf(0)/tb, unbounded; D k … = 0
                    if jump_d == 0:
                        continue
                    if not jump_d < 0:
                        return None  # (J > 0 is proved infinite before; J's sign undecided)
                    total += arb((jump_d * inv_sqrt_2pi / tb).upper())
                    lower_holds = False
                    continue
                else:  # τ ≤ tb ≤ |k|/4: pdf(k/τ)/τ and |k| pdf(k/τ)/τ³ increase with τ
                    q0 = hull(arb(0), (-(k * k) / (2 * tb * tb)).exp() * inv_sqrt_2pi / tb)
                    q1 = arb(0, (q0.abs_upper() * abs(k) / tb**2).abs_upper())
                total += jump_d * q0 + jump_0 * q1
        return total, lower_holds

    def cell(self, ta: arb | None, tb: arb | None) -> tuple[Fraction | None, Fraction | None]:
        """(lower, upper) of f(τ) over τ ∈ [ta, tb] (ta None: (0, tb]; tb None: [ta, ∞));
        None for an end that is not bounded."""
        kinks = self.kink_terms(ta, tb)
        if kinks is None:
            return None, None
        total, lower_holds = kinks
        ball = self._last(ta, total) if tb is None else self._interior(ta, tb, total)  # type: ignore[arg-type]
        if ball is None or not ball.is_finite():
            return None, None
        low = exact_fraction(arb(ball.lower())) if lower_holds else None
        return low, exact_fraction(arb(ball.upper()))

    @functools.cached_property
    def _x_cells(self) -> list[tuple[arb, arb, arb, arb]] | None:
        """(m, ∫h, ∫h·(x − m), s·sup|h|) on _X_CELLS cells of [−X, X] (m the midpoint, s the
        width), the integrals exact: on each piece's part of a cell, h = G' with G = (φ_c²)' =
        2φ_cφ', so ∫h = [G] and ∫h·(x − m) = [(x − m)G − φ_c²]."""
        x, n = self.x_tail, _X_CELLS
        out = []
        c = self.p.c
        with workprec(PREC):
            step = 2 * x / n
            for i in range(n):
                lo, hi = -x + step * i, -x + step * (i + 1)
                m = (lo + hi) / 2
                first, second = arb(0), arb(0)
                for j, a, b in self.p.overlapping(lo, hi):
                    (fa, da, *_), (fb, db, *_) = self.p._raw(j, a), self.p._raw(j, b)
                    ga, gb = 2 * (fa - c) * da, 2 * (fb - c) * db
                    first += gb - ga
                    second += ((b - m) * gb - (fb - c) * (fb - c)) - (
                        (a - m) * ga - (fa - c) * (fa - c)
                    )
                h_lo, h_hi = self.table.hull(exact_fraction(lo), exact_fraction(hi))
                size = arb(max(abs(h_lo), abs(h_hi))) * step
                if not (first.is_finite() and second.is_finite() and size.is_finite()):
                    return None
                out.append((m, first, second, arb(size.upper())))
        return out

    @functools.cached_property
    def _x_levels(self) -> list[tuple[arb, list[tuple[arb, arb, arb, arb]]]] | None:
        """The cells of :attr:`_x_cells` merged pairwise, level by level: (half-width, cells).
        A wide τ needs only wide cells (the error is third order in the width over τ)."""
        cells = self._x_cells
        if cells is None:
            return None
        half = self.x_tail / _X_CELLS
        levels = [(half, cells)]
        with workprec(PREC):
            while len(cells) > 2:
                merged = []
                for (m1, h1, k1, a1), (m2, h2, k2, a2) in zip(cells[::2], cells[1::2], strict=True):
                    m = (m1 + m2) / 2
                    merged.append((m, h1 + h2, k1 + (m1 - m) * h1 + k2 + (m2 - m) * h2, a1 + a2))
                cells, half = merged, half * 2
                levels.append((half, cells))
        return levels

    def _x_form(self, ta: arb, tb: arb, total: arb) -> arb | None:
        """f on [ta, tb] in x = τξ (module docstring): with ρ(x) = pdf(x/τ)/τ,

            ∫_cell h ρ = ρ(m) ∫h + ρ'(m) ∫h·(x − m) ± ½ sup|ρ''| (s/2)² ∫|h|,

        summed over the cells, plus h's tail ranges times P(|ξ| > X/τ); the τ-dependence by the
        mean value form in τ (its derivative summed as one ball: the terms cancel coherently)."""
        levels = self._x_levels
        if levels is None:
            return None
        # the widest cells with half-width ≤ τa/64 (the finest there is, below that)
        half, cells = levels[0]
        for h, c in levels:
            if h <= ta / 64:
                half, cells = h, c
        with workprec(PREC):
            t = hull(ta, tb)
            tm = (ta + tb) / 2
            k = 1 / (2 * arb.pi()).sqrt()
            x = self.x_tail
            value = self._x_sum(cells, tm, derivative=False)
            slope = self._x_sum(cells, t, derivative=True)
            rho_x = (-(x * x) / (2 * t * t)).exp() * k / t
            for side in (1, -1):
                if self.by_parts[side] is not None:
                    total += self._tail_by_parts(side, rho_x)
                elif self.tails[side] is not None:
                    value += self.tails[side] * tail_probability(x, tm, k)  # type: ignore[operator]
                    slope += self.tails[side] * tail_probability_slope(x, t, k)  # type: ignore[operator]
                else:
                    return None
            total += value + slope * hull(ta - tm, tb - tm) + self._x_error(cells, half, ta, tb)
        return total

    @staticmethod
    def _x_sum(cells: list[tuple[arb, arb, arb, arb]], t: arb, derivative: bool) -> arb:
        """Σ ρ(m)∫h + ρ'(m)∫h(x − m) at τ = t, or its τ-derivative (``derivative``)."""
        k = 1 / (2 * arb.pi()).sqrt()
        inv_t, inv_t2 = 1 / t, 1 / (t * t)
        out = arb(0)
        for m, first, second, _ in cells:
            u2 = m * m * inv_t2
            rho = (-u2 / 2).exp() * k * inv_t  # ρ(m)
            if not derivative:
                out += rho * (first - m * inv_t2 * second)  # ρ'(m) = −m ρ(m)/τ²
                continue
            rho_t = rho * (u2 - 1) * inv_t  # ∂ρ(m)/∂τ
            out += rho_t * first - m * (rho_t * inv_t2 - 2 * rho * inv_t2 * inv_t) * second
        return out

    @staticmethod
    def _x_error(cells: list[tuple[arb, arb, arb, arb]], half: arb, ta: arb, tb: arb) -> arb:
        """± ½ sup|ρ''| (s/2)² ∫|h| summed; ρ'' = (x²/τ⁴ − 1/τ²)ρ on the cell."""
        k = 1 / (2 * arb.pi()).sqrt()
        err = arb(0)
        for m, _, _, size in cells:
            near = abs(m) - half
            d = near if near > 0 else arb(0)
            far = abs(m) + half
            bound = (far * far / ta**4 + 1 / ta**2) * (-(d * d) / (2 * tb * tb)).exp() * k / ta
            err += bound * size
        return arb(0, arb((err * half * half / 2).upper()))

    def _interior(self, ta: arb | None, tb: arb, total: arb) -> arb | None:
        x_form = ta is not None and ta >= _X_FORM_FROM
        other = self._x_form(ta, tb, total) if x_form else None  # type: ignore[arg-type]
        only_x = other is not None and other.is_finite() and ta >= _XI_FORM_TO  # type: ignore[operator]
        ball = None if only_x else self._xi_form(ta, tb, total)
        if not x_form:
            return ball
        if other is None or not other.is_finite():
            return ball
        if ball is None or not ball.is_finite():
            return other
        top = arb(ball.upper()) if ball.upper() < other.upper() else arb(other.upper())
        bottom = arb(ball.lower()) if ball.lower() > other.lower() else arb(other.lower())
        return hull(bottom, top) if bottom <= top else other

    def _xi_form(self, ta: arb | None, tb: arb, total: arb) -> arb | None:
        lo = arb(0) if ta is None else ta
        with workprec(PREC):
            tm = (lo + tb) / 2
            dt = hull(lo - tm, tb - tm)
            width = float(((tb - lo) / tb).upper())
            for side in (1, -1):
                g = self.growth[side]
                if g is None:
                    return None
                tail = gaussian_tail((1,), g, tb, arb(XI_MAX))
                if tail is None:
                    return None
                total += arb(0, tail)
                for g0, g1, mid, p, m1, e1 in xi_cells(xi_level(width)):
                    term = self._xi_cell(side, lo, tb, tm, dt, g0, g1, mid, p, m1, e1)
                    if term is None:
                        return None
                    total += term
        return total

    def _xi_cell(
        self, side: int, ta: arb, tb: arb, tm: arb, dt: arb,
        g0: arb, g1: arb, mid: arb, p: arb, m1: arb, e1: arb,
    ) -> arb | None:  # fmt: skip
        """E[h(τξ) 1_C] over the τ-cell, C = side·[g0, g1]: the range of h on τC times P(C),
        met with the mean value form where τC is narrow and inside one piece."""
        with workprec(PREC):
            a, b = arb((ta * g0).lower()), arb((tb * g1).upper())
            lo, hi = (a, b) if side > 0 else (-b, -a)
            r = self.range_of(lo, hi)
            if r is None:
                return None
            out = r * p
            parts = self.p.overlapping(lo, hi)
            if len(parts) != 1 or not (b - a) <= _MVF_WIDTH:
                return out
            i = parts[0][0]
            hm = self.p.h(i, side * tm * mid)[0]
            slope = self.p.h(i, hull(lo, hi))[1]
            if not slope.is_finite():
                return out
            # h(τξ) = h(x_m) + h'(θ)(τξ − x_m), θ in τC: the slope's midpoint times the signed
            # mean E[(τξ − x_m) 1_C], and its radius times E[|τξ − x_m| 1_C] ≤ |τC|·P(C)
            # (τξ − x_m changes sign on C: a ball product would use the signed mean only)
            signed = side * (dt * m1 + tm * e1)
            xm = tm * mid
            reach = (b - xm).union(xm - a)  # |τξ − x_m| ≤ max(b − x_m, x_m − a) on C
            spread = arb(0, arb((slope.rad() * arb(reach.upper()) * p).upper()))
            mvf = hm * p + arb(slope.mid()) * signed + spread
            if not mvf.is_finite():
                return out
            top = arb(out.upper()) if out.upper() < mvf.upper() else arb(mvf.upper())
            bottom = arb(out.lower()) if out.lower() > mvf.lower() else arb(mvf.lower())
            return hull(bottom, top) if bottom <= top else mvf

    def _last(self, ta: arb, total: arb) -> arb | None:
        """[ta, ∞): h on [−X, X] for |ξ| < X/ta; beyond, h's tail range, or by parts."""
        with workprec(PREC):
            k = 1 / (2 * arb.pi()).sqrt()
            cut = (self.x_tail / ta / arb(2).sqrt()).erf() / 2  # P(0 < ξ < X/ta)
            p_near, p_far = hull(arb(0), arb(cut.upper())), hull(0.5 - cut, arb(0.5))
            rho_x = hull(arb(0), k / ta)  # ρ(X) = pdf(X/τ)/τ ≤ pdf(0)/ta for τ ≥ ta
            for side in (1, -1):
                near = (
                    self.range_of(arb(0), self.x_tail)
                    if side > 0
                    else self.range_of(-self.x_tail, arb(0))
                )
                if near is None:
                    return None
                total += near * p_near
                if self.by_parts[side] is not None:
                    total += self._tail_by_parts(side, rho_x)
                elif self.tails[side] is not None:
                    total += self.tails[side] * p_far  # type: ignore[operator]
                else:
                    return None
        return total


def curvature_bound(
    activation: str | Activation,
    center: Any = 0,
    center_radius: Any = 0,
    *,
    rtol: float = 1e-3,
    budget: int = _DEFAULT_BUDGET,
) -> CurvatureBound:
    """sup_{τ>0} E[(φ_c²)''(τξ)], φ_c = φ − c, enclosed rigorously (see the module docstring).

    Args:
      activation: library name, expression in x or :class:`Activation`.
      center: the centring c (exact: an int, Fraction, decimal string or mpmath number).
      center_radius: c is known to within this (≥ 0): every c' in the ball is covered.
      rtol: stop when the enclosure of the supremum is this tight (relative).
      budget: τ-cells evaluated before settling for a looser bound.

    Example:
      >>> b = curvature_bound("tanh")
      >>> b.kind, float(b.lower) <= 2 <= float(b.upper)    # (tanh²)''(0) = 2, as τ → 0
      ('bounded', True)
    """
    act = get_activation(activation)
    c = _exact(center, "center")
    r = _exact(center_radius, "center_radius")
    if r < 0:
        raise InvalidArgument(f"center_radius={_arguments.show(center_radius)}: expected ≥ 0.")
    tol = _arguments.number(rtol, "rtol")
    if not 0 < tol < 1:
        raise InvalidArgument(f"rtol={_arguments.show(rtol)}: choose a tolerance in (0, 1).")
    budget = _arguments.integer(budget, "budget", 1, MAX_CURVATURE_BUDGET)
    return _curvature_bound(act, c, r, float(tol), budget)


def _exact(v: Any, name: str) -> Fraction:
    if isinstance(v, mpmath.mpf) or (hasattr(v, "_mpf_") and not isinstance(v, (int, str))):
        if not mpmath.isfinite(v):
            raise InvalidArgument(f"{name}={_arguments.show(v)}: expected a finite number.")
        return exact_fraction(mpmath.mpf(v))
    return _arguments.number(v, name)


@functools.lru_cache(maxsize=128)
def _curvature_bound(
    act: Activation, c: Fraction, r: Fraction, rtol: float, budget: int
) -> CurvatureBound:
    with workprec(PREC):
        ball = arb(c.numerator) / c.denominator + arb(0, arb(r.numerator) / r.denominator)
    try:
        engine = _Curvature(act, ball)
    except NotEnclosable as e:
        return CurvatureBound("undecided", mpmath.ninf, mpmath.inf, "", 0, str(e))
    for k, jump_d, _ in engine.p.kinks:
        if k == 0 and jump_d > 0:
            return CurvatureBound(
                "infinite", mpmath.inf, mpmath.inf, "τ → 0", 0,
                f"(φ_c²)'' has a Dirac mass of weight {jump_d.str(5, radius=False)} > 0 at x = 0: "
                "E[(φ_c²)''(τξ)] ≥ that · pdf(0)/τ − C → +∞ as τ → 0",
            )  # fmt: skip
    return _branch_and_bound(engine, act, rtol, budget)


def _cells(engine: _Curvature) -> list[tuple[int | None, int | None]]:
    """The initial cells, in log₂ τ: (−∞, lo], unit cells, [log₂ T, ∞)."""
    top = int(math.log2(float(engine.t_last.mid())))
    lo = _LOG_LO
    # every kink must lie beyond the first cell's τ₀·√3 for its monotone kink bound
    kink_min = min((abs(float(k)) for k in engine.p.act.kinks if k != 0), default=1.0)
    lo = min(lo, math.floor(math.log2(kink_min / 4)))
    return [(None, lo), *((u, u + 1) for u in range(lo, top)), (top, None)]


def _tau(u: Fraction | int | None) -> arb | None:
    if u is None:
        return None
    u = Fraction(u)
    with workprec(PREC):
        if u.denominator == 1:
            return arb(2) ** int(u)
        return arb(2) ** (arb(u.numerator) / u.denominator)


def _branch_and_bound(
    engine: _Curvature, act: Activation, rtol: float, budget: int
) -> CurvatureBound:
    _RTOL = Fraction(rtol).limit_denominator(10**12)  # noqa: N806 (a constant of the loop)
    counter = itertools.count()
    heap: list[tuple[Any, int, Any, Any]] = []
    best_lo: Fraction | None = None
    where = ""
    evaluated = 0
    unbounded_reason = ""

    def push(u0: Fraction | int | None, u1: Fraction | int | None) -> None:
        nonlocal best_lo, where, evaluated, unbounded_reason
        evaluated += 1
        low, high = engine.cell(_tau(u0), _tau(u1))
        if high is None:
            unbounded_reason = unbounded_reason or _which(u0, u1)
        if low is not None and (best_lo is None or low > best_lo):
            best_lo, where = low, _where(u0, u1)
        heapq.heappush(heap, (-(math.inf if high is None else high), next(counter), u0, u1))

    for u0, u1 in _cells(engine):
        push(u0, u1)
    while evaluated < budget:
        neg_top, _, u0, u1 = heap[0]
        top = -neg_top
        slack = _RTOL * abs(best_lo or Fraction(0)) + Fraction(1, 10**12)
        if best_lo is not None and top != math.inf and top <= best_lo + slack:
            break
        if u0 is None or u1 is None:
            if top == math.inf:
                break  # an end cell with no finite bound: refining it cannot help
            # split the end cell: (−∞, lo] → (−∞, lo − 1], [lo − 1, lo]; likewise at ∞
            heapq.heappop(heap)
            if u0 is None:
                push(None, u1 - 1)  # type: ignore[operator]
                push(u1 - 1, u1)  # type: ignore[operator]
            else:
                push(u0, u0 + 1)
                push(u0 + 1, None)
            continue
        heapq.heappop(heap)
        mid = (Fraction(u0) + Fraction(u1)) / 2
        push(u0, mid)
        push(mid, u1)
    top = -heap[0][0]
    lower = mpmath.ninf if best_lo is None else _mpf(arb(best_lo.numerator) / best_lo.denominator)
    if top == math.inf:
        return CurvatureBound(
            "undecided", lower, mpmath.inf, where, evaluated,
            f"no finite bound of E[(φ_c²)''(τξ)] for {unbounded_reason}: the rules bound neither "
            "h = 2(φ'² + φ_cφ'') there nor its growth",
        )  # fmt: skip
    upper = _mpf(arb(top.numerator) / top.denominator)
    return CurvatureBound("bounded", lower, upper, where, evaluated)


def _which(u0: Any, u1: Any) -> str:
    if u1 is None:
        return "τ → ∞"
    if u0 is None:
        return "τ → 0"
    return f"τ ∈ [2^{float(u0):g}, 2^{float(u1):g}]"


def _where(u0: Any, u1: Any) -> str:
    if u1 is None:
        return "τ → ∞"
    if u0 is None:
        return "τ → 0"
    mid = (Fraction(u0) + Fraction(u1)) / 2
    return "τ ≈ " + mpmath.nstr(mpmath.mpf(2) ** (mpmath.mpf(mid.numerator) / mid.denominator), 3)

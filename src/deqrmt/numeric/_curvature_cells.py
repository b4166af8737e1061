r"""f(τ) = E[(φ_c²)''(τξ)] enclosed on one cell of τ, in Arb, for :mod:`._curvature`'s search.

With h = 2(φ'² + φ_cφ'') piecewise and J_j, D_j the jumps of (φ_c²)' and φ_c² at the kinks k_j,

    f(τ) = E[h(τξ)] + Σ_j ( J_j pdf(k_j/τ)/τ + D_j k_j pdf(k_j/τ)/τ³ ).

On a cell [τa, τb], over ξ-cells C = [g₀, g₁] (finer where the density is large) and both signs
of ξ (the ξ-form),

    E[h(τξ) 1_C] ∈ h(x_m) P(C) + h'(τC) E[(τξ − x_m) 1_C],       x_m = τ_m ξ_m,

(the mean value form; P(C), E[ξ 1_C] are Arb balls, h and h' are interval evaluations of the
compiled pieces on τC = [τa g₀, τb g₁] (:class:`._interval.IntervalContext`), met with the
range of h on τC from a table of 2^12 cells of [−X, X]; a C whose τC meets a kink takes the
hull of the pieces' ranges), plus the Gaussian tail |ξ| > 8 by the growth bound of h
(:func:`._enclose.gaussian_tail`).  For τ ≥ 1 the x-form sums exact integrals of h over cells
of x = τξ against the density's Taylor expansion, and the two forms are met.  The first cell is
(0, τ₀] (the same formula with τa = 0); the last is [T, ∞), bounded by the range of h on the
half-lines (ξ near 0) and on |x| ≥ X (the tail rules of :mod:`._tail_range`): its limit as
τ → ∞ is the mean of h's limits at ±∞.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

from flint import arb

from ..symbolic import Activation, X
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

__all__ = ["LOG_T", "CurvatureCells"]

#: the last cell in log₂ τ is [T, ∞), T = 2^LOG_T·X
LOG_T = 16
#: x beyond which h is bounded by the tail rules (at least this, and beyond every kink)
_X_TAIL = 64
#: cells of [−X, X] of the x-form
_X_CELLS = 1024
#: the x-form (cells in x) from this τ on, the ξ-form (cells in ξ) up to _XI_FORM_TO
_X_FORM_FROM, _XI_FORM_TO = arb(1), arb(4)
#: widest x-range on which the mean value form is tried (beyond, Arb's h' is no use)
_MVF_WIDTH = 4


class CurvatureCells:
    """f(τ) enclosed on cells of τ for one φ and centring c (``NotEnclosable`` when the
    growth rules do not apply to φ)."""

    def __init__(self, act: Activation, c: arb) -> None:
        self.p = Pieces(act, c)
        kink_max = max((abs(float(k)) for k in act.kinks), default=0.0)
        self.x_tail = arb(max(_X_TAIL, 2 ** math.ceil(math.log2(2 * kink_max + 1))))
        self.t_last = self.x_tail * 2**LOG_T
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

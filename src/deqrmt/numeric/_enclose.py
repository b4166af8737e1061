r"""Rigorous enclosures of an activation's Gaussian moments at a scale τ given as a ball.

Each moment is ``scale · E[w(ξ) g(τξ)]`` (:class:`deqrmt.symbolic.Expectation`: w a Hermite
polynomial, g one of φ, φ², φ'² given piece by piece between the kinks).  Three cases:

* zero by symmetry (decided exactly by SymPy): the exact ball 0;
* a closed form in τ: evaluated in Arb ball arithmetic with τ a ball (:mod:`._arb`);
* otherwise, in the variable x = τξ (so the kinks are exact end points),

      E[w(ξ) g(τξ)] = (τ√(2π))⁻¹ ∫_{−X}^{X} w(x/τ) g(x) e^{−x²/(2τ²)} dx  +  T₋ + T₊,

  the integral enclosed by ``acb.integral`` (Gauss–Legendre with error bounds from the
  integrand's size on complex ellipses, Petras' algorithm as implemented in Arb:
  F. Johansson, "Numerical integration in arbitrary-precision ball arithmetic", ICMS 2018,
  doi:10.1007/978-3-319-96418-8_30), piece by piece, and each tail T± bounded rigorously:

  1. A growth bound |g(x)| ≤ C (1 + x)^p e^{a x} on [X, ∞) is *derived from the expression
     tree* of the outermost piece (:func:`growth_bound`): sums and products combine bounds,
     tanh/erf/sin/cos are bounded by 1, exp(u) by the supremum of u (a polynomial of degree
     ≤ 2 is maximised exactly), log(u) and 1/u use a proved positive lower bound of u
     (:func:`lower_bound`), and every constant is an Arb ball.  Anything else declines.
  2. With |He_k(ξ)| ≤ S ξ^k (S the sum of |coefficients|), ξ ≥ R = X/τ_max ≥ 1 and
     b = a τ_max, the integrand is at most S C (1 + τ_max)^p ξ^m e^{bξ − ξ²/2}/√(2π),
     m = k + p.  If R/2 ≥ b + m/R, then (log of it)' = m/ξ + b − ξ ≤ −ξ/2 on [R, ∞), so it
     decays at least like e^{−R(ξ−R)/2} and

         ∫_R^∞ ξ^m e^{bξ − ξ²/2} dξ ≤ 2 R^{m−1} e^{bR − R²/2}.                     (tail)

  X grows until both tails are below 2^{−prec}; their sum is added to the ball's radius.

Anything outside these rules raises :class:`NotEnclosable`, the signal on which the caller
falls back to the verified (uncertified) path.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Iterable
from typing import Any

import flint
import sympy as sp
from flint import acb, arb

from ..symbolic import TAU, XI, Activation, X, moment_set
from ..symbolic._expectation import MOMENTS
from ._arb import (
    ACB_FUNCTIONS,
    ARB_FUNCTIONS,
    AcbContext,
    ArbContext,
    to_arb,
    unsupported,
    workprec,
)
from ._printer import compile_function

__all__ = [
    "NotEnclosable",
    "Growth",
    "growth_bound",
    "linear_envelope",
    "lower_bound",
    "gaussian_tail",
    "MomentEncloser",
    "encloser_for",
]

#: the moments the coefficient formulas use (names of deqrmt.symbolic._expectation.MOMENTS)
ENCLOSED_MOMENTS = ("phi", "d1", "d2", "sq", "sq2", "dsq")
#: precision (bits) of the tail bounds: they are upper bounds, not the values themselves
_BOUND_PREC = 64
_MAX_CUT_STEPS = 40


class NotEnclosable(Exception):
    """Internal signal: a moment of this activation is outside what the enclosure rules cover
    (an unsupported function, no provable growth bound, a non-finite ball).  The caller falls
    back to the verified path and reports ``certified: false`` with this message."""


# ---------------------------------------------------------------------------
# Growth bounds on [x0, ∞), derived from the expression tree.
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Growth:
    """|g(x)| ≤ c (1 + x)^p e^{a x} for every x ≥ x0 (c, p, a ≥ 0, upper bounds as exact arbs)."""

    c: arb
    p: arb
    a: arb

    def __add__(self, other: Growth) -> Growth:
        # (1 + x)^p and e^{ax} are ≥ 1, so each bound is below the one with the larger p, a
        return Growth(self.c + other.c, _max(self.p, other.p), _max(self.a, other.a))

    def __mul__(self, other: Growth) -> Growth:
        return Growth(self.c * other.c, self.p + other.p, self.a + other.a)


def _up(v: arb) -> arb:
    if not v.is_finite():
        raise NotEnclosable(f"a bound evaluated to {v}")
    return arb(v.upper())


def _lo(v: arb) -> arb:
    if not v.is_finite():
        raise NotEnclosable(f"a bound evaluated to {v}")
    return arb(v.lower())


def _max(a: arb, b: arb) -> arb:
    return _up(a) if _up(a) >= _up(b) else _up(b)


_BOUNDED: dict[type, Callable[[], arb]] = {
    sp.tanh: lambda: arb(1),
    sp.erf: lambda: arb(1),
    sp.sin: lambda: arb(1),
    sp.cos: lambda: arb(1),
    sp.erfc: lambda: arb(2),
    sp.atan: lambda: _up(arb.pi() / 2),
}
#: lower bounds of bounded functions (of a real argument)
_BOUNDED_BELOW: dict[type, Callable[[], arb]] = {
    sp.tanh: lambda: arb(-1),
    sp.erf: lambda: arb(-1),
    sp.sin: lambda: arb(-1),
    sp.cos: lambda: arb(-1),
    sp.erfc: lambda: arb(0),
    sp.atan: lambda: _lo(-arb.pi() / 2),
    sp.exp: lambda: arb(0),
    sp.cosh: lambda: arb(1),
}


@functools.lru_cache(maxsize=512)
def _constant(e: sp.Expr) -> arb:
    """A constant expression as a ball at the bound precision (rigorous, not a float)."""
    if e.is_Rational:
        return to_arb(e)
    bad = unsupported(e, ARB_FUNCTIONS, holomorphic=False)
    if bad:
        raise NotEnclosable(f"constant {e}: {', '.join(bad)}")
    ctx = ArbContext(_BOUND_PREC)
    fn = compile_function("constant", [], [e])
    with ctx.workprec():
        (v,) = fn(ctx)
    if not isinstance(v, arb):
        v = to_arb(v)
    if not v.is_finite():
        raise NotEnclosable(f"constant {e} is not finite")
    return v


def lower_bound(e: sp.Expr, x0: arb) -> arb | None:
    """A proved lower bound of ``e(x)`` over x ≥ x0 (x0 > 0), or None if none is derived."""
    if not e.has(X):
        return _lo(_constant(e))
    if e == X:
        return x0
    if isinstance(e, sp.Add):
        total = arb(0)
        for t in e.args:
            part = lower_bound(t, x0)
            if part is None:
                return None
            total += part
        return _lo(total)
    if isinstance(e, sp.Mul):
        parts = [lower_bound(t, x0) for t in e.args]
        if any(p is None or not p >= 0 for p in parts):
            return None
        prod = arb(1)
        for p in parts:
            prod *= p  # type: ignore[operator]
        return _lo(prod)
    if isinstance(e, sp.Pow):
        n = e.exp
        if n.is_Integer and n > 0:
            base = lower_bound(e.base, x0)
            if base is not None and base >= 0:
                return _lo(base ** int(n))
            return arb(0) if int(n) % 2 == 0 else None
        if n.is_number and n.is_negative:
            base = lower_bound(e.base, x0)
            return arb(0) if base is not None and base > 0 else None
        if n.is_number and n.is_positive:  # a real root of something ≥ 0
            base = lower_bound(e.base, x0)
            return arb(0) if base is not None and base >= 0 else None
        return None
    if isinstance(e, sp.Function) and type(e) in _BOUNDED_BELOW:
        return _BOUNDED_BELOW[type(e)]()
    return None


def _poly_sup(u: sp.Expr, x0: arb) -> arb | Growth | None:
    """sup of a polynomial u of degree ≤ 2 over [x0, ∞): a ball (bounded) or linear growth."""
    if not u.is_polynomial(X):
        return None
    poly = sp.Poly(u, X)
    if poly.degree() > 2:
        lead = poly.LC()
        if lead.is_negative:
            return None  # bounded above, but not maximised here; the caller declines
        raise NotEnclosable(f"exp({u}) grows faster than the Gaussian decays")
    cs = [sp.S.Zero] * (3 - len(poly.all_coeffs())) + list(poly.all_coeffs())
    c2, c1, c0 = cs
    if c2 != 0:
        if not c2.is_negative:
            raise NotEnclosable(f"exp({u}) grows like a Gaussian: moments need bounds on τ")
        a2, a1, a0 = _constant(c2), _constant(c1), _constant(c0)
        vertex = -a1 / (2 * a2)
        if vertex.upper() <= x0.lower():
            return _up(a2 * x0 * x0 + a1 * x0 + a0)  # decreasing on [x0, ∞)
        return _up(a0 - a1 * a1 / (4 * a2))
    if c1 != 0:
        if c1.is_negative:
            return _up(_constant(c1) * x0 + _constant(c0))
        return Growth(_up(_constant(c0).exp()), arb(0), _up(_constant(c1)))
    return _up(_constant(c0))


def growth_bound(e: sp.Expr, x0: arb) -> Growth:
    """|e(x)| ≤ c (1 + x)^p e^{ax} for x ≥ x0 ≥ 1, from the expression tree (see module doc).

    Raises:
      NotEnclosable: a node without a rule (the tail cannot be bounded this way).
    """
    with workprec(_BOUND_PREC):
        return _growth(e, x0)


def _log_argument(u: sp.Expr, x0: arb) -> tuple[arb, Growth]:
    """(a positive lower bound, the growth bound) of the argument u of log u on [x0, ∞)."""
    low = lower_bound(u, x0)
    if low is None or not low > 0:
        raise NotEnclosable(f"log({u}): argument not proved positive on [{x0}, ∞)")
    return low, _growth(u, x0)


def _growth(e: sp.Expr, x0: arb) -> Growth:
    zero = arb(0)
    if not e.has(X):
        return Growth(_up(abs(_constant(e))), zero, zero)
    if e == X:
        return Growth(arb(1), arb(1), zero)
    if isinstance(e, sp.Add):
        out = _growth(e.args[0], x0)
        for t in e.args[1:]:
            out = out + _growth(t, x0)
        return out
    if isinstance(e, sp.Mul):
        out = _growth(e.args[0], x0)
        for t in e.args[1:]:
            out = out * _growth(t, x0)
        return out
    if isinstance(e, sp.Pow):
        base, n = e.base, e.exp
        if not base.has(X) and n.has(X):  # c**u = exp(u log c), c > 0
            if not base.is_positive:
                raise NotEnclosable(f"power {e} with a base that is not positive")
            return _growth(sp.exp(n * sp.log(base)), x0)
        if not n.is_number:
            raise NotEnclosable(f"power {e}")
        if n.is_negative:
            low = lower_bound(base, x0)
            if low is None or not low > 0:
                raise NotEnclosable(
                    f"no positive lower bound for the denominator {base} on [{x0}, ∞)"
                )
            return Growth(_up(low ** _constant(n)), zero, zero)
        g = _growth(base, x0)
        if n.is_Integer:
            k = int(n)
            return Growth(_up(g.c**k), g.p * k, g.a * k)
        low = lower_bound(base, x0)
        if low is None or low < 0:
            raise NotEnclosable(f"real power {e} of a base not proved ≥ 0")
        r = _constant(n)
        return Growth(_up(g.c**r), _up(g.p * r), _up(g.a * r))
    if isinstance(e, sp.exp):
        u = e.args[0]
        sup = _poly_sup(u, x0)
        if isinstance(sup, Growth):
            return sup
        if sup is not None:
            return Growth(_up(sup.exp()), zero, zero)
        g = _growth(u, x0)
        if g.a == 0 and g.p <= 1:  # |u| ≤ c(1 + x) ⇒ e^u ≤ e^c e^{cx}
            return Growth(_up(g.c.exp()), zero, g.c)
        raise NotEnclosable(f"exp({u}): no linear bound on the exponent")
    if isinstance(e, sp.log):
        low, g = _log_argument(e.args[0], x0)
        # log u ≤ log c + p log(1 + x) + a x ≤ |log c| + (p + a)(1 + x);  log u ≥ log(low)
        level = _max(abs(low.log()), abs(g.c.log())) if g.c > 0 else abs(low.log())
        return Growth(_up(level + g.p + g.a), arb(1), zero)
    if isinstance(e, sp.Abs):
        return _growth(e.args[0], x0)
    if isinstance(e, (sp.sinh, sp.cosh)):
        g = _growth(e.args[0], x0)
        if g.a == 0 and g.p <= 1:
            return Growth(_up(g.c.exp()), zero, g.c)
        raise NotEnclosable(f"{e}: no linear bound on the argument")
    if isinstance(e, sp.Function) and type(e) in _BOUNDED:
        return Growth(_BOUNDED[type(e)](), zero, zero)
    raise NotEnclosable(f"no growth rule for {type(e).__name__} in {e}")


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
    g = _growth(e, x0)
    if g.p == 0 and g.a == 0:
        return g.c, zero
    raise NotEnclosable(f"no affine rule for {type(e).__name__} in {e}")


def _piece_sup(e: sp.Expr, lo: arb, hi: arb) -> arb | None:
    """A proved upper bound of |e(x)| over [lo, hi] (Arb interval evaluation on cells)."""
    if unsupported(e, ARB_FUNCTIONS, holomorphic=False):
        return None
    fn = compile_function("envelope_piece", [X], [e])
    ctx = ArbContext(_BOUND_PREC)
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
    with workprec(_BOUND_PREC):
        cut = max([arb(1), *(abs(_point(k)) for k in act.kinks)], key=lambda v: float(v.upper()))
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
            lo = -x0 if piece.lo == sp.S.NegativeInfinity else _lo(_point(piece.lo))
            hi = x0 if piece.hi == sp.S.Infinity else _up(_point(piece.hi))
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


def gaussian_tail(weight: Iterable[int], g: Growth, tau_hi: arb, r: arb) -> arb | None:
    """Upper bound of ∫_R^∞ |w(ξ)| |g(τξ)| pdf(ξ) dξ for every τ ≤ τ_hi (see (tail) above).

    ``weight`` are the polynomial's coefficients (lowest first); ``r`` ≥ 1.  None when the
    lemma's condition R/2 ≥ b + m/R fails (take a larger R).
    """
    with workprec(_BOUND_PREC):
        w = list(weight)
        s = arb(sum(abs(int(c)) for c in w))
        k = len(w) - 1
        m = g.p + k
        b = g.a * tau_hi
        if not (r >= 1 and (r / 2 - b - m / r) >= 0):
            return None
        bound = (
            s
            * g.c
            * (1 + tau_hi) ** g.p
            * 2
            * r ** (m - 1)
            * (b * r - r * r / 2).exp()
            / (2 * arb.pi()).sqrt()
        )
        return _up(bound)


# ---------------------------------------------------------------------------
# The encloser.
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Open:
    """One moment by quadrature: ``τ^{-order} E[w(ξ) g(τξ)]`` with g = φ, φ² or φ'²."""

    weight: tuple[int, ...]  # Hermite coefficients, lowest first
    order: int
    kind: str  # "phi" (g = φ), "sq" (φ²) or "dsq" (φ'²)
    fold: bool  # the integrand is even: integrate [0, X] and double


def _key(x: acb) -> tuple[Any, ...]:
    """A hashable identity of a ball (exact midpoint and radius)."""
    r, i = x.real, x.imag
    return (r.mid().man_exp(), r.rad().man_exp(), i.mid().man_exp(), i.rad().man_exp())


#: entries kept per precision in the φ/φ' value cache before it is cleared
_CACHE_LIMIT = 200_000


class MomentEncloser:
    """Ball enclosures of the moments :data:`ENCLOSED_MOMENTS` of one activation.

    Build it with :func:`encloser_for` (cached).  ``__init__`` checks everything that does not
    depend on τ (supported functions, closed forms) and raises :class:`NotEnclosable` early.

    Quadrature works in x = τξ, so φ(x) and φ'(x) do not depend on τ: their values at the
    balls ``acb.integral`` asks for are cached per precision and shared by every moment and
    every τ (the adaptive subdivisions largely coincide); the Gaussian factor is shared by the
    moments taken at one τ.  φ² and φ'² are squares of those values.
    """

    def __init__(self, act: Activation, names: tuple[str, ...] = ENCLOSED_MOMENTS) -> None:
        self.activation = act
        mset = moment_set(act)
        self.kinks = act.kinks
        self.zero = {n for n in names if mset[n].zero}
        closed: dict[str, sp.Expr] = {}
        self.open: dict[str, _Open] = {}
        parity = act.parity
        for n in names:
            m = mset[n]
            if m.zero:
                continue
            if m.closed_form is not None and m.closed_form.has(sp.oo, sp.zoo, sp.nan):
                raise NotEnclosable(
                    f"{m.label} of {act.name} is infinite (φ is discontinuous): nothing to enclose"
                )
            if m.closed_form is not None and not unsupported(
                m.closed_form, ARB_FUNCTIONS, holomorphic=False
            ):
                closed[n] = m.closed_form
                continue
            kind, order = MOMENTS[n][1], MOMENTS[n][2]
            g_parity = parity if kind == "phi" else (1 if parity else 0)
            weight = tuple(int(c) for c in sp.Poly(m.weight, XI).all_coeffs()[::-1])
            self.open[n] = _Open(weight, order, kind, g_parity * (-1) ** order == 1)
        self.closed_names = tuple(closed)
        self._closed_fn = (
            compile_function(
                "closed_moments_arb",
                [TAU],
                list(closed.values()),
                doc=f"Closed-form Gaussian moments of {act.name}: {', '.join(closed)}",
            )
            if closed
            else None
        )
        kinds = {o.kind for o in self.open.values()}
        self._pieces: dict[str, tuple[sp.Expr, ...]] = {}
        if kinds & {"phi", "sq"}:
            self._pieces["phi"] = tuple(p.expr for p in act.pieces)
        if "dsq" in kinds:
            self._pieces["dphi"] = tuple(p.expr for p in act.derivative_pieces)
        self._fns: dict[str, tuple[Callable[..., tuple[Any, ...]], ...]] = {}
        self._expensive: dict[str, tuple[bool, ...]] = {}
        for which, exprs in self._pieces.items():
            for e in exprs:
                bad = unsupported(e, ACB_FUNCTIONS, holomorphic=True)
                if bad:
                    raise NotEnclosable(
                        f"{act.name}: {e} uses {', '.join(bad)}, outside the functions enclosed "
                        "as holomorphic integrands"
                    )
            self._fns[which] = tuple(
                compile_function(f"{which}_piece_acb", [X], [e]) for e in exprs
            )
            # erf on a complex ball costs ~50x an exp: worth a cache lookup (~10 µs) per call
            self._expensive[which] = tuple(e.has(sp.erf, sp.erfc) for e in exprs)
        self._growth: dict[tuple[str, int, int], Growth] = {}
        self._cache: dict[tuple[int, str, int], dict[tuple[Any, ...], acb]] = {}

    @property
    def caches(self) -> bool:
        """True when integrand values are cached per precision (then keep one precision)."""
        return any(any(flags) for flags in self._expensive.values())

    # -- tails ----------------------------------------------------------------------------
    def _growth_at(self, kind: str, side: int, cut: int) -> Growth:
        """Growth bound of g (φ, φ² or φ'²) on the tail beyond ``side``·``cut``."""
        key = (kind, side, cut)
        if key not in self._growth:
            which = "dphi" if kind == "dsq" else "phi"
            expr = self._pieces[which][-1 if side > 0 else 0]
            base = growth_bound(expr if side > 0 else expr.subs(X, -X), arb(cut))
            with workprec(_BOUND_PREC):
                self._growth[key] = base if kind == "phi" else base * base
        return self._growth[key]

    def tail(self, name: str, tau: arb, cut: int) -> arb | None:
        """Bound on both tails |x| > cut of E[w(ξ) g(τξ)] (None: cut too small for the lemma)."""
        o = self.open[name]
        tau_hi = _up(tau)
        with workprec(_BOUND_PREC):
            r = _lo(arb(cut) / tau_hi)
            total = arb(0)
            for side in (1,) if o.fold else (1, -1):
                t = gaussian_tail(o.weight, self._growth_at(o.kind, side, cut), tau_hi, r)
                if t is None:
                    return None
                total += t
            return _up(total * 2) if o.fold else _up(total)

    def choose_cut(self, names: Iterable[str], tau: arb, prec: int) -> int:
        """The smallest integer cut (in x = τξ) whose tails are all below 2^{−prec}."""
        tau_hi = float(_up(tau))
        kink_max = max((abs(float(k)) for k in self.kinks), default=0.0)
        cut = max(
            math.ceil(tau_hi * (math.sqrt(2 * math.log(2) * prec) + 1)), math.ceil(kink_max) + 1
        )
        target = arb(2) ** (-prec)
        todo = [n for n in names if n in self.open]
        for _ in range(_MAX_CUT_STEPS):
            tails = [self.tail(n, tau, cut) for n in todo]
            if all(t is not None and t <= target for t in tails):
                return cut
            cut += max(1, cut // 8)
        raise NotEnclosable(
            f"no cut below {cut} makes the Gaussian tails of {self.activation.name} smaller than "
            f"2^-{prec} (the growth bound is too weak)"
        )

    # -- evaluation ------------------------------------------------------------------------
    def __call__(
        self,
        tau: arb,
        names: Iterable[str],
        prec: int,
        *,
        cut: int | None = None,
        tail: bool = True,
    ) -> dict[str, arb]:
        """Balls of the moments ``names`` at every τ in the ball ``tau``, at ``prec`` bits.

        ``cut`` fixes the truncation |x| ≤ cut instead of choosing it; ``tail=False`` drops the
        tail bound (only for the negative control that shows it matters).
        """
        names = list(dict.fromkeys(names))
        out: dict[str, arb] = {}
        with workprec(prec):
            for n in names:
                if n in self.zero:
                    out[n] = arb(0)
            if self._closed_fn is not None and any(n in self.closed_names for n in names):
                vals = self._closed_fn(ArbContext(prec), tau)
                for n, v in zip(self.closed_names, vals, strict=True):
                    if n in names:
                        out[n] = v if isinstance(v, arb) else to_arb(v)
            want = [n for n in names if n in self.open]
            if want:
                if cut is not None and any(abs(k) >= cut for k in self.kinks):
                    raise ValueError(f"cut={cut} must exceed every kink: the tails are one piece")
                c = cut if cut is not None else self.choose_cut(want, tau, prec)
                # Two real integrals per complex one: ∫(f₁ + i f₂) has real part ∫f₁ and
                # imaginary part ∫f₂ when f₁, f₂ are real on the axis, and f₁ + i f₂ is as
                # holomorphic as they are.  φ is evaluated once for both.
                groups: dict[bool, list[str]] = {}
                for n in want:
                    groups.setdefault(self.open[n].fold, []).append(n)
                for fold, members in groups.items():
                    for i in range(0, len(members), 2):
                        pair = members[i : i + 2]
                        out.update(self._quadrature(pair, fold, tau, prec, c, tail))
        for n, v in out.items():
            if not v.is_finite():
                raise NotEnclosable(
                    f"{MOMENTS[n][0]} of {self.activation.name} at τ = {tau.str(10)} is not finite "
                    f"in ball arithmetic ({v.str(5)})"
                )
        return out

    def _values(self, which: str, piece: int, prec: int) -> Callable[[acb, bool], acb]:
        """x ↦ φ(x) (or φ'(x)) on one piece, memoised per precision when it is expensive."""
        fn = self._fns[which][piece]
        actx = AcbContext(prec)
        if not self._expensive[which][piece]:

            def direct(x: acb, analytic: bool) -> acb:
                actx.analytic = analytic
                return fn(actx, x)[0]  # type: ignore[no-any-return]

            return direct
        cache = self._cache.setdefault((prec, which, piece), {})
        if len(cache) > _CACHE_LIMIT:
            cache.clear()

        def cached(x: acb, analytic: bool) -> acb:
            k = (_key(x), analytic)
            v = cache.get(k)
            if v is None:
                actx.analytic = analytic
                v = cache[k] = fn(actx, x)[0]
            return v

        return cached

    def _integrand(
        self, names: list[str], piece: int, tau: arb, prec: int
    ) -> Callable[[acb, bool], acb]:
        """x ↦ (Σ_j i^j w_j(x/τ) g_j(x)) e^{−x²/(2τ²)} for the (one or two) moments ``names``."""
        ops = [self.open[n] for n in names]
        need = {"dphi" if o.kind == "dsq" else "phi" for o in ops}
        get = {w: self._values(w, piece, prec) for w in need}
        inv_tau = acb(1 / tau)
        half_inv_tau2 = acb(1 / (2 * tau * tau))
        specs = [
            (
                tuple(acb(c) for c in o.weight),
                "dphi" if o.kind == "dsq" else "phi",
                o.kind != "phi",
            )
            for o in ops
        ]
        unit = acb(0, 1)

        def integrand(x: acb, analytic: bool) -> acb:
            vals = {w: f(x, analytic) for w, f in get.items()}
            xi = x * inv_tau
            total = acb(0)
            for j, (weight, which, square) in enumerate(specs):
                w = weight[-1]
                for c in weight[-2::-1]:
                    w = w * xi + c
                v = vals[which]
                term = w * (v * v if square else v)
                total = term if j == 0 else total + unit * term
            return total * (-(x * x) * half_inv_tau2).exp()

        return integrand

    def _quadrature(
        self, names: list[str], fold: bool, tau: arb, prec: int, cut: int, tail: bool
    ) -> dict[str, arb]:
        kinks = list(self.kinks)
        lo_end = sp.S.Zero if fold else sp.Integer(-cut)
        points = [lo_end, *(k for k in kinks if lo_end < k < cut), sp.Integer(cut)]
        total = acb(0)
        err = arb(0)
        for a, b in zip(points[:-1], points[1:], strict=True):
            f = self._integrand(names, sum(1 for k in kinks if k <= a), tau, prec)
            a_ball, b_ball = _point(a), _point(b)
            total += acb.integral(f, acb(a_ball.mid()), acb(b_ball.mid()))
            err += _endpoint_error(f, a_ball) + _endpoint_error(f, b_ball)
        norm = (2 if fold else 1) / (tau * (2 * arb.pi()).sqrt())
        out = {}
        for n, part in zip(names, (total.real, total.imag), strict=False):
            value = (part + arb(0, err.upper()) if err > 0 else part) * norm
            if tail:
                t = self.tail(n, tau, cut)
                if t is None:
                    raise NotEnclosable(f"cut {cut} is too small for the tail lemma of {n}")
                value += arb(0, t)
            out[n] = value / tau ** self.open[n].order
        return out


def _point(p: sp.Expr) -> arb:
    """A kink or cut as a ball at the working precision (exact when dyadic)."""
    if p.is_Rational:
        return to_arb(p)
    (v,) = compile_function("kink", [], [p])(ArbContext(flint.ctx.prec))
    return v if isinstance(v, arb) else to_arb(v)


def _endpoint_error(f: Callable[[acb, bool], acb], p: arb) -> arb:
    """|∫ between p's midpoint and any point of p| ≤ rad(p) · sup |f| on p (0 when exact).

    Integrating each piece up to the *midpoint* of an inexact kink misplaces the split by at
    most rad(p): on that sliver both pieces' integrands are bounded on the ball p.
    """
    if p.rad() == 0:
        return arb(0)
    return arb(p.rad()) * arb(f(acb(p), False).abs_upper())


@functools.lru_cache(maxsize=64)
def encloser_for(act: Activation) -> MomentEncloser:
    """The (cached) :class:`MomentEncloser` of ``act``."""
    return MomentEncloser(act)

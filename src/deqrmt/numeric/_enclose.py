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

import sympy as sp
from flint import acb, arb

from .. import _arguments
from .._errors import InvalidArgument
from ..symbolic import MOMENTS, TAU, XI, Activation, X, get_activation, moment_set
from ._arb import (
    ACB_FUNCTIONS,
    ARB_FUNCTIONS,
    AcbContext,
    ArbContext,
    bits_for_digits,
    to_arb,
    unsupported,
    workprec,
)
from ._context import Num
from ._envelope import linear_envelope
from ._growth import (
    BOUND_PREC,
    Growth,
    NotEnclosable,
    _lo,
    _up,
    growth_bound,
    lower_bound,
    point_ball,
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
    "enclose_moments",
]

#: the moments the coefficient formulas use (names of deqrmt.symbolic._expectation.MOMENTS)
ENCLOSED_MOMENTS = ("phi", "d1", "d2", "sq", "sq2", "dsq")
_MAX_CUT_STEPS = 40
# NotEnclosable, Growth, growth_bound, lower_bound (from ._growth) and linear_envelope (from
# ._envelope) are re-exported: the certified paths import them from here.


def gaussian_tail(weight: Iterable[int], g: Growth, tau_hi: arb, r: arb) -> arb | None:
    """Upper bound of ∫_R^∞ |w(ξ)| |g(τξ)| pdf(ξ) dξ for every τ ≤ τ_hi (the (tail) lemma of the
    module docstring); ``weight`` are the polynomial's coefficients (lowest first), r ≥ 1.

    With |He_k(ξ)| ≤ S ξ^k (S the sum of |coefficients|), ξ ≥ R ≥ 1 and b = a τ_hi, the
    integrand is at most S C (1 + τ_hi)^p ξ^m e^{bξ − ξ²/2}/√(2π), m = k + p; if
    R/2 ≥ b + m/R, ∫_R^∞ ξ^m e^{bξ − ξ²/2} dξ ≤ 2 R^{m−1} e^{bR − R²/2}.  None when that
    condition fails (take a larger R).  g must have p, a ≥ 0 (the default of
    :func:`growth_bound`).
    """
    with workprec(BOUND_PREC):
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


def _key(x: acb) -> tuple[Num, ...]:
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
        self._fns: dict[str, tuple[Callable[..., tuple[Num, ...]], ...]] = {}
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
        self._cache: dict[tuple[int, str, int], dict[tuple[Num, ...], acb]] = {}

    def integrals(self) -> int:
        """``acb.integral`` calls one evaluation of every open moment makes, weighted by the
        panels they need: the cost model's unit (:func:`._precision_cost.precision_cost`).

        Two moments share one complex integral, one per smooth piece; a φ steeper than tanh
        (poles nearer the axis by a factor s, :func:`._quadrature.steepness`) counts s: Arb
        bisects until each panel's ellipse avoids them.
        """
        from ._quadrature import steepness

        groups: dict[bool, int] = {}
        for o in self.open.values():
            groups[o.fold] = groups.get(o.fold, 0) + 1
        pairs = sum((k + 1) // 2 for k in groups.values())
        steep = steepness([p.expr for p in self.activation.pieces], X)
        return pairs * len(self.activation.pieces) * max(1, math.ceil(steep - 1e-9))

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
            with workprec(BOUND_PREC):
                self._growth[key] = base if kind == "phi" else base * base
        return self._growth[key]

    def tail(self, name: str, tau: arb, cut: int) -> arb | None:
        """Bound on both tails |x| > cut of E[w(ξ) g(τξ)] (None: cut too small for the lemma)."""
        o = self.open[name]
        tau_hi = _up(tau)
        with workprec(BOUND_PREC):
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
            a_ball, b_ball = point_ball(a), point_ball(b)
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


@functools.lru_cache(maxsize=64)
def _encloser_of(act: Activation, names: tuple[str, ...]) -> MomentEncloser:
    return MomentEncloser(act, names)


def enclose_moments(
    activation: str | Activation, tau: Num, names: Iterable[str], dps: int = 30
) -> dict[str, arb]:
    """Arb balls of Gaussian moments of φ at the exact scale ``tau`` (proven to ~``dps`` digits).

    Args:
      activation: library name, expression in x or :class:`Activation`.
      tau: the scale τ > 0, exact (int, Fraction, decimal string, mpmath number).
      names: keys of :data:`deqrmt.symbolic._expectation.MOMENTS` (``"phi"``, ``"d1"`` … ``"d4"``
        for E[φ^(k)(τξ)] by Stein's identity, ``"sq"``, ``"sq2"``, ``"dsq"``).
      dps: digits of the working precision.

    Raises:
      NotEnclosable: a moment outside the enclosure rules (the caller says so).
    """
    act = get_activation(activation)
    t = _arguments.number(tau, "tau")  # exact (a Fraction), within the size budget
    if not t > 0:
        raise InvalidArgument(f"tau={_arguments.show(tau)}: expected a scale τ > 0.")
    keys = tuple(
        dict.fromkeys(
            _arguments.sequence(
                names,
                "names",
                "moment names",
                hi=len(MOMENTS),
                item=lambda v, where: _arguments.choice(v, where, tuple(MOMENTS)),
            )  # fmt: skip
        )
    )
    dps = _arguments.integer(dps, "dps", 5, 10_000)
    prec = bits_for_digits(dps) + 32
    with workprec(prec):
        ball = to_arb(t)
    return _encloser_of(act, keys)(ball, keys, prec)

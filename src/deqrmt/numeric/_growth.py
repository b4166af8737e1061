r"""Rigorous bounds of an expression in x on a tail [x0, ∞), from its expression tree (Arb).

The one rule table behind every tail bound of the package: the Gaussian tails of the moment
encloser (:mod:`._enclose`), the linear envelope of the fixed-point scan (:mod:`._envelope`),
the Lipschitz bound (:mod:`._lipschitz`) and the curvature bound of ``deqrmt check``
(:mod:`._curvature`).  Finite intervals are evaluated elsewhere, by Arb through the one printer
(:func:`deqrmt.numeric.compile_function` with :class:`._arb.ArbContext`); an infinite interval
cannot be a ball, so the tail has these rules instead:

* :func:`growth_bound`: |e(x)| ≤ c (1 + x)^p e^{a x} for every x ≥ x0 ≥ 1.  Sums and products
  combine bounds, tanh/erf/sin/cos are bounded by 1, exp(u) by the supremum of u (a polynomial
  of degree ≤ 2 is maximised exactly), log(u) and 1/u use a proved positive lower bound of u
  (:func:`lower_bound`), and every constant is an Arb ball.  With ``decay=True`` a and p may be
  negative: exp(−x), e^{−x²}, and 1/u for a u that grows (:func:`lower_growth`) keep their
  decay, which is what beats x·e^{−x} (0·∞ for intervals).
* :func:`tail_range`: an interval containing e([x0, ∞)), ends possibly infinite: interval
  rules on the tree (monotone functions at the ends, sin and cos by Arb or by ±1), and at any
  node whose interval is unbounded, the decaying growth bound ±sup c(1 + x)^p e^{ax}.
* :func:`gaussian_tail`: ∫_R^∞ |w(ξ)| |g(τξ)| pdf(ξ) dξ for a growth bound g.

Anything outside the rules raises :class:`NotEnclosable` (or returns None where documented):
the caller then declines, never guesses.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable

import flint
import sympy as sp
from flint import arb

from ..symbolic import X
from ._arb import ARB_FUNCTIONS, ArbContext, to_arb, unsupported, workprec
from ._printer import compile_function

__all__ = [
    "NotEnclosable",
    "Growth",
    "growth_bound",
    "growth_sup",
    "lower_bound",
    "lower_growth",
    "nonnegative",
    "constant_ball",
    "point_ball",
]

#: precision (bits) of the bounds: they are upper bounds, not the values themselves
BOUND_PREC = 64


class NotEnclosable(Exception):
    """Internal signal: an expression is outside what the enclosure rules cover (an unsupported
    function, no provable growth bound, a non-finite ball).  The caller falls back (the verified
    path, an "undecided" verdict) and reports this message."""


# ---------------------------------------------------------------------------
# Growth bounds on [x0, ∞)
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Growth:
    """|g(x)| ≤ c (1 + x)^p e^{a x} for every x ≥ x0 (c ≥ 0 an upper bound, p and a exact arbs).

    p and a are ≥ 0 unless the bound was derived with ``decay=True``; the sum and product
    rules hold for any signs, as (1 + x)^{p'} e^{a'x} ≤ (1 + x)^p e^{ax} when p' ≤ p, a' ≤ a
    and x ≥ 0.
    """

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
    ctx = ArbContext(BOUND_PREC)
    fn = compile_function("constant", [], [e])
    with ctx.workprec():
        (v,) = fn(ctx)
    if not isinstance(v, arb):
        v = to_arb(v)
    if not v.is_finite():
        raise NotEnclosable(f"constant {e} is not finite")
    return v


def constant_ball(e: sp.Expr) -> arb:
    """A constant SymPy expression as an Arb ball at :data:`BOUND_PREC` bits.

    Raises:
      NotEnclosable: a function outside :data:`._arb.ARB_FUNCTIONS`, or not finite.
    """
    with workprec(BOUND_PREC):
        return _constant(e)


def point_ball(p: sp.Expr) -> arb:
    """A kink or cut as a ball at the working precision (exact when dyadic)."""
    if p.is_Rational:
        return to_arb(p)
    (v,) = compile_function("kink", [], [p])(ArbContext(flint.ctx.prec))
    return v if isinstance(v, arb) else to_arb(v)


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


def _poly_coeffs(u: sp.Expr) -> tuple[sp.Expr, sp.Expr, sp.Expr] | None:
    """(c2, c1, c0) of a polynomial of degree ≤ 2 in x, else None."""
    if not u.is_polynomial(X):
        return None
    poly = sp.Poly(u, X)
    if poly.degree() > 2:
        return None
    cs = [sp.S.Zero] * (3 - len(poly.all_coeffs())) + list(poly.all_coeffs())
    return cs[0], cs[1], cs[2]


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


def growth_bound(e: sp.Expr, x0: arb, *, decay: bool = False) -> Growth:
    """|e(x)| ≤ c (1 + x)^p e^{ax} for x ≥ x0 ≥ 1, from the expression tree (see module doc).

    ``decay=True`` keeps decaying factors (p, a < 0 allowed); the default gives p, a ≥ 0, the
    form the Gaussian-tail lemma (:func:`gaussian_tail`) takes.

    Raises:
      NotEnclosable: a node without a rule (the tail cannot be bounded this way).
    """
    with workprec(BOUND_PREC):
        return _growth(e, x0, decay)


def _log_argument(u: sp.Expr, x0: arb) -> tuple[arb, Growth]:
    """(a positive lower bound, the growth bound) of the argument u of log u on [x0, ∞)."""
    low = lower_bound(u, x0)
    if low is None or not low > 0:
        raise NotEnclosable(f"log({u}): argument not proved positive on [{x0}, ∞)")
    return low, _growth(u, x0, False)


def _upper_exponents(g: Growth) -> Growth:
    """The same bound with p and a replaced by their upper ends (exact: decisions are exact)."""
    return Growth(g.c, _up(g.p), _up(g.a))


def _sum(parts: list[Growth], x0: arb) -> Growth:
    """Σ parts, each scaled down to the largest (a, p): a term that decays faster costs only its
    supremum relative to the others on [x0, ∞), not its constant.  Rates within 2^-30 of the
    largest count as equal (a larger rate only loosens a bound; computed rates carry rounding)."""
    parts = [_upper_exponents(g) for g in parts]
    a = max((g.a for g in parts), key=_key)
    near = a - arb(2) ** -30
    same = [g for g in parts if g.a >= near]
    p = max((g.p for g in same), key=_key)
    c = arb(0)
    for g in parts:
        if g.a >= near and g.p <= p:
            c += g.c  # (1 + x)^{p'−p} e^{(a'−a)x} ≤ 1
        else:
            k = growth_sup(Growth(arb(1), _up(g.p - p), _up(g.a - a)), x0)
            if k is None:
                raise NotEnclosable("a term of a sum outgrows the sum's bound")
            c += g.c * k
    return Growth(_up(c), p, a)


def _key(v: arb) -> float:
    """A sort key of an exact arb (ties broken arbitrarily: the caller compares exactly)."""
    return float(v.mid())


def _exp_decay(u: sp.Expr, x0: arb) -> Growth | None:
    """e^u ≤ e^{c0} e^{(c1 + c2 x0) x} on [x0, ∞) for u = c2 x² + c1 x + c0, c2 ≤ 0, when the
    rate is negative (c2 x² ≤ c2 x0 x there); None otherwise."""
    cs = _poly_coeffs(u)
    if cs is None or cs[0].is_nonpositive is not True:
        return None
    c2, c1, c0 = (_constant(c) for c in cs)
    rate = _up(c2 * x0 + c1)
    if not rate < 0:
        return None
    return Growth(_up(c0.exp()), arb(0), rate)


def _growth(e: sp.Expr, x0: arb, decay: bool) -> Growth:
    zero = arb(0)
    if not e.has(X):
        return Growth(_up(abs(_constant(e))), zero, zero)
    if e == X:
        return Growth(arb(1), arb(1), zero)
    if isinstance(e, sp.Add):
        if decay:
            return _sum([_growth(t, x0, decay) for t in e.args], x0)
        out = _growth(e.args[0], x0, decay)
        for t in e.args[1:]:
            out = out + _growth(t, x0, decay)
        return out
    if isinstance(e, sp.Mul):
        out = _growth(e.args[0], x0, decay)
        for t in e.args[1:]:
            out = out * _growth(t, x0, decay)
        return out
    if isinstance(e, sp.Pow):
        return _growth_power(e, x0, decay)
    if isinstance(e, sp.exp):
        u = e.args[0]
        if decay:
            fast = _exp_decay(u, x0)
            if fast is not None:
                return fast
        sup = _poly_sup(u, x0)
        if isinstance(sup, Growth):
            return sup
        if sup is not None:
            return Growth(_up(sup.exp()), zero, zero)
        g = _growth(u, x0, False)
        if g.a == 0 and g.p <= 1:  # |u| ≤ c(1 + x) ⇒ e^u ≤ e^c e^{cx}
            return Growth(_up(g.c.exp()), zero, g.c)
        raise NotEnclosable(f"exp({u}): no linear bound on the exponent")
    if isinstance(e, sp.log):
        low, g = _log_argument(e.args[0], x0)
        # log u ≤ log c + p log(1 + x) + a x ≤ |log c| + (p + a)(1 + x);  log u ≥ log(low)
        level = _max(abs(low.log()), abs(g.c.log())) if g.c > 0 else abs(low.log())
        return Growth(_up(level + g.p + g.a), arb(1), zero)
    if isinstance(e, sp.Abs):
        return _growth(e.args[0], x0, decay)
    if isinstance(e, (sp.sinh, sp.cosh)):
        g = _growth(e.args[0], x0, False)
        if g.a == 0 and g.p <= 1:
            return Growth(_up(g.c.exp()), zero, g.c)
        raise NotEnclosable(f"{e}: no linear bound on the argument")
    if isinstance(e, sp.Function) and type(e) in _BOUNDED:
        return Growth(_BOUNDED[type(e)](), zero, zero)
    raise NotEnclosable(f"no growth rule for {type(e).__name__} in {e}")


def _growth_power(e: sp.Pow, x0: arb, decay: bool) -> Growth:
    zero = arb(0)
    base, n = e.base, e.exp
    if not base.has(X) and n.has(X):  # c**u = exp(u log c), c > 0
        if not base.is_positive:
            raise NotEnclosable(f"power {e} with a base that is not positive")
        return _growth(sp.exp(n * sp.log(base)), x0, decay)
    if not n.is_number:
        raise NotEnclosable(f"power {e}")
    if n.is_negative:
        if decay:
            low_g = lower_growth(base, x0)
            if low_g is not None:
                r = _constant(n)
                return Growth(_up(low_g.c**r), low_g.p * r, low_g.a * r)
        low = lower_bound(base, x0)
        if low is None or not low > 0:
            raise NotEnclosable(f"no positive lower bound for the denominator {base} on [{x0}, ∞)")
        return Growth(_up(low ** _constant(n)), zero, zero)
    g = _growth(base, x0, decay)
    if n.is_Integer:
        k = int(n)
        return Growth(_up(g.c**k), g.p * k, g.a * k)
    low = lower_bound(base, x0)
    if low is None or low < 0:
        raise NotEnclosable(f"real power {e} of a base not proved ≥ 0")
    r = _constant(n)
    if decay:
        return Growth(_up(g.c**r), g.p * r, g.a * r)
    return Growth(_up(g.c**r), _up(g.p * r), _up(g.a * r))


def growth_sup(g: Growth, x0: arb) -> arb | None:
    """sup over x ≥ x0 ≥ 0 of c (1 + x)^p e^{ax} (an upper bound); None when it is infinite."""
    with workprec(BOUND_PREC):
        if not (g.c.is_finite() and g.p.is_finite() and g.a.is_finite()):
            return None
        p, a = _up(g.p), _up(g.a)  # larger exponents bound the same function from above
        if a > 0 or (a == 0 and p > 0):
            return None
        x = x0
        if a < 0 and p > 0:
            x = _max(x0, -p / a - 1)  # where (1 + x)^p e^{ax} is largest
        return _up(g.c * ((1 + x).log() * p + a * x).exp())


def nonnegative(g: Growth, x0: arb) -> Growth | None:
    """The same bound with p, a ≥ 0 (the form :func:`._enclose.gaussian_tail` takes): a decaying
    factor is replaced by its supremum on [x0, ∞).  None if the bound is infinite there."""
    with workprec(BOUND_PREC):
        p = _up(g.p) if _up(g.p) > 0 else arb(0)
        a = _up(g.a) if _up(g.a) > 0 else arb(0)
        k = growth_sup(Growth(arb(1), g.p - p, g.a - a), x0)
        return None if k is None else Growth(_up(g.c * k), p, a)


def lower_growth(e: sp.Expr, x0: arb) -> Growth | None:
    """|e(x)| ≥ c (1 + x)^p e^{ax} > 0 on [x0, ∞) (c a lower bound), or None if none is derived.

    It proves e has no zero on the tail, and keeps the growth that makes 1/e decay.
    """
    try:
        with workprec(BOUND_PREC):
            g = _lower_growth(e, x0)
            # smaller exponents bound the same function from below; exact ends decide exactly
            return None if g is None else Growth(g.c, _lo(g.p), _lo(g.a))
    except (NotEnclosable, ValueError, ZeroDivisionError):
        return None


def _lower_growth(e: sp.Expr, x0: arb) -> Growth | None:
    zero = arb(0)
    if not e.has(X):
        v = _constant(e).abs_lower()
        return Growth(arb(v), zero, zero) if v > 0 else None
    if e == X:
        return Growth(_lo(x0 / (1 + x0)), arb(1), zero)  # x/(1 + x) increases
    if isinstance(e, sp.Mul):
        out = Growth(arb(1), zero, zero)
        for t in e.args:
            part = _lower_growth(t, x0)
            if part is None:
                return None
            out = Growth(_lo(out.c * part.c), out.p + part.p, out.a + part.a)
        return out
    if isinstance(e, sp.Pow) and e.exp.is_number and e.base.has(X):
        n = e.exp
        if n.is_Integer and n > 0:
            low = _lower_growth(e.base, x0)
            k = int(n)
            return None if low is None else Growth(_lo(low.c**k), low.p * k, low.a * k)
        if n.is_negative:
            up = _growth(e.base, x0, True)
            if not up.c > 0:
                return None
            r = _constant(n)
            return Growth(_lo(up.c**r), up.p * r, up.a * r)
        if n.is_positive:
            low = _lower_growth(e.base, x0)
            base_low = lower_bound(e.base, x0)
            if low is None or base_low is None or base_low < 0:
                return None
            r = _constant(n)
            return Growth(_lo(low.c**r), low.p * r, low.a * r)
    if isinstance(e, sp.exp):
        cs = _poly_coeffs(e.args[0])
        if cs is not None and cs[0].is_nonnegative is True:
            c2, c1, c0 = (_constant(c) for c in cs)
            return Growth(_lo(c0.exp()), arb(0), _lo(c2 * x0 + c1))  # c2 x² ≥ c2 x0 x
    if isinstance(e, sp.Add) and (_signed(e.args, x0, 1) or _signed(e.args, x0, -1)):
        # no cancellation: |Σ| ≥ each |term|; keep the fastest-growing one
        lows = [g for g in (_lower_growth(t, x0) for t in e.args) if g is not None]
        if lows:
            return max(lows, key=lambda g: (_key(g.a), _key(g.p), _key(g.c)))
    for sign in (1, -1):
        bound = lower_bound(sign * e, x0)
        if bound is not None and bound > 0:
            return Growth(bound, zero, zero)
    return None


def _signed(terms: Iterable[sp.Expr], x0: arb, sign: int) -> bool:
    """Every term has the sign ``sign`` (or is 0) on [x0, ∞), by :func:`lower_bound`."""
    for t in terms:
        low = lower_bound(sign * t, x0)
        if low is None or not low >= 0:
            return False
    return True

r"""Gaussian-weight quadrature E[w(ξ) g(τξ)] by composite Gauss–Legendre, split at kinks.

Panels never straddle a kink (at k/τ in ξ), so each panel integrates an analytic function
and converges geometrically.  The panel half-width is d/π in x = τξ, d the distance of φ's
nearest complex singularity from the real axis (:func:`pole_distance`: π/2 for tanh, π/(2s) for
tanh(s·x)), so the Bernstein ellipse through it has the same ρ for every activation; the number
of nodes on a panel follows the digits it must deliver: far in the tails the Gaussian weight
e^{-ξ²/2} has already paid for most of them.  The domain is cut at |ξ| = L with e^{-L²/2} well below 10^{-digits}.
``refine=1`` halves the panels and adds nodes: the independent rule used for the guard run.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import sympy as sp

from ._context import EngineContext, Num

__all__ = ["gauss_legendre", "panels", "Panel", "pole_distance", "steepness"]

#: tanh's nearest poles (±iπ/2): the singularity distance of a function of unit steepness
_POLE_DISTANCE = math.pi / 2
#: the steepest φ panels shrink for (bounded work: panels grow with the steepness); steeper
#: ones (tanh(1000x)) are refused by the two evaluations' disagreement (PrecisionLoss) and are
#: for the certified path (docs/limits.md)
MAX_STEEPNESS = 32.0


def _scale(e: sp.Expr, x: sp.Symbol) -> float:
    """The steepness s of ``e`` in ``x``: e behaves like g(s·x) with g of unit steepness.

    A polynomial Σ c_k x^k has max |c_k|^{1/k}; a constant factor multiplies (tanh(30·u) is
    30 times as steep as u); sums, products and function arguments take the largest.
    """
    if not e.has(x):
        return 0.0
    if e.is_polynomial(x):
        coeffs = sp.Poly(e, x).all_coeffs()[::-1]
        return max(
            (abs(float(c)) ** (1 / k) for k, c in enumerate(coeffs) if k and c.is_number and c),
            default=1.0,
        )
    if isinstance(e, sp.Mul):
        const, rest = e.as_independent(x, as_Add=False)
        factor = abs(float(const)) if const.is_number else 1.0
        return factor * max(_scale(a, x) for a in sp.Mul.make_args(rest))
    return max(_scale(a, x) for a in e.args)


def _polynomial_poles(e: sp.Expr, x: sp.Symbol) -> float:
    """The smallest |Im| of a non-real zero of a polynomial that ``e`` divides by, takes a
    fractional power or the logarithm of (1/(1 + x²): 1); inf when there is none."""
    out = math.inf
    for node in sp.preorder_traversal(e):
        if isinstance(node, sp.Pow) and not (node.exp.is_Integer and node.exp >= 0):
            base = node.base
        elif isinstance(node, sp.log):
            base = node.args[0]
        else:
            continue
        if not base.has(x) or not base.is_polynomial(x) or sp.degree(base, x) < 2:
            continue
        coeffs = sp.Poly(base, x).all_coeffs()
        if not all(c.is_number for c in coeffs):
            continue
        import numpy as np  # here only: a cold `deqrmt coefficients` does not import numpy

        for r in np.roots([complex(c) for c in coeffs]):
            if abs(r.imag) > 1e-12 * max(1.0, abs(r)):
                out = min(out, abs(float(r.imag)))
    return out


def pole_distance(exprs: Sequence[sp.Expr], x: sp.Symbol) -> float:
    """The distance from the real axis (in ``x``) that panels plan for, for the pieces
    ``exprs`` of an activation (and of its derivative).

    π/(2s) for the steepness s of :func:`_scale` (tanh(s·x) has poles at ±iπ/(2s); the
    library's other functions are no steeper: sigmoid's and softplus' nearest singularities are
    at ±iπ), s at most :data:`MAX_STEEPNESS`, and no further than the non-real zeros of a
    polynomial the pieces divide by (at least π/(2·MAX_STEEPNESS) too).  A
    guess the rule gets wrong costs digits, never wrong ones: the verified path keeps only the
    digits two evaluations with different rules agree on.
    """
    s = max((_scale(e, x) for e in exprs), default=1.0)
    d = _POLE_DISTANCE / min(max(1.0, s), MAX_STEEPNESS)
    return max(min([d, *(_polynomial_poles(e, x) for e in exprs)]), _POLE_DISTANCE / MAX_STEEPNESS)


def steepness(exprs: Sequence[sp.Expr], x: sp.Symbol) -> float:
    """How much nearer the real axis than tanh's (±iπ/2) the pieces ``exprs``' nearest complex
    singularity is, at least 1: :func:`pole_distance` without its :data:`MAX_STEEPNESS` clamp
    (the certified path's cost model counts the panels ``acb.integral`` will bisect into)."""
    s = max((_scale(e, x) for e in exprs), default=1.0)
    poles = min((_polynomial_poles(e, x) for e in exprs), default=math.inf)
    return max(1.0, s, _POLE_DISTANCE / poles if poles > 0 else math.inf)


@functools.lru_cache(maxsize=256)
def _gl_mp(n: int, prec: int) -> tuple[tuple[Num, ...], tuple[Num, ...]]:
    """Legendre roots by Newton from the float64 roots: digits double per step, ~3 steps."""
    import mpmath

    ctx = mpmath.MPContext()
    ctx.prec = prec + 20
    guess, _ = _gl_float_cached(n)
    xs, ws = [], []
    for g in guess[: (n + 1) // 2]:
        x = ctx.mpf(g)
        for _ in range(60):
            p0, p1 = ctx.one, x
            for k in range(2, n + 1):
                p0, p1 = p1, ((2 * k - 1) * x * p1 - (k - 1) * p0) / k
            dp = n * (x * p1 - p0) / (x * x - 1)
            dx = p1 / dp
            x -= dx
            if abs(dx) < ctx.ldexp(1, -prec - 12):
                break
        p0, p1 = ctx.one, x
        for k in range(2, n + 1):
            p0, p1 = p1, ((2 * k - 1) * x * p1 - (k - 1) * p0) / k
        dp = n * (x * p1 - p0) / (x * x - 1)
        w = 2 / ((1 - x * x) * dp * dp)
        if x == 0:
            xs.append(x)
            ws.append(w)
        else:
            xs += [x, -x]
            ws += [w, w]
    return tuple(xs), tuple(ws)


@functools.lru_cache(maxsize=64)
def _gl_float_cached(n: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    import numpy as np  # here only: a cold `deqrmt coefficients` does not import numpy

    x, w = np.polynomial.legendre.leggauss(n)
    return tuple(float(v) for v in x), tuple(float(v) for v in w)


def _gl_float(n: int) -> tuple[list[float], list[float]]:
    x, w = _gl_float_cached(n)
    return list(x), list(w)


def gauss_legendre(ctx: EngineContext, n: int) -> tuple[list[Num], list[Num]]:
    """n-point Gauss–Legendre nodes and weights on [-1, 1] in ``ctx``'s number type."""
    if ctx.prec <= 53:
        return _gl_float(n)
    xs, ws = _gl_mp(n, ctx.prec)
    return [ctx.mpf(v) for v in xs], [ctx.mpf(v) for v in ws]


_LADDER = (8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)


def _ladder(n: int) -> int:
    """Round up to a few node counts, so that few node sets are ever computed per precision."""
    for m in _LADDER:
        if m >= n:
            return m
    return _LADDER[-1]


class Panel:
    """Nodes ξ_k and weights w_k·pdf(ξ_k) on one panel inside one smooth piece."""

    __slots__ = ("piece", "nodes", "weights", "digits")

    def __init__(
        self, piece: int, nodes: list[Num], weights: list[Num], digits: float = 0.0
    ) -> None:
        self.piece = piece
        self.nodes = nodes
        self.weights = weights
        #: digits φ must be evaluated to on this panel (the Gaussian tail pays for the rest)
        self.digits = digits


def panels(
    ctx: EngineContext,
    tau: Num,
    kinks: Sequence[Num],
    digits: float,
    refine: int = 0,
    entire: bool = False,
    pole: float = _POLE_DISTANCE,
) -> list[Panel]:
    """Cached when φ has no kinks: the layout then depends on τ only through a power of two."""
    if kinks:
        return _panels(ctx, tau, kinks, digits, refine, entire, pole)
    tau_q = 2.0 ** math.ceil(math.log2(max(float(tau), 2.0**-20)))
    key = (ctx.prec, _is_float(ctx), tau_q, round(digits), refine, entire, pole)
    hit = _CACHE.get(key)
    if hit is None:
        hit = _panels(ctx, tau_q, (), digits, refine, entire, pole)
        if len(_CACHE) > 64:
            _CACHE.clear()
        _CACHE[key] = hit
    return hit


_CACHE: dict[tuple[Num, ...], list[Panel]] = {}


def _is_float(ctx: EngineContext) -> bool:
    """Whether ``ctx`` evaluates in Python floats (the engine's ``FLOAT``, or ``mpmath.fp``):
    their panels are floats, an MPContext's at 53 bits are mpf."""
    import mpmath

    return isinstance(ctx, mpmath.ctx_fp.FPContext)


def _panels(
    ctx: EngineContext,
    tau: Num,
    kinks: Sequence[Num],
    digits: float,
    refine: int = 0,
    entire: bool = False,
    pole: float = _POLE_DISTANCE,
) -> list[Panel]:
    """Composite Gauss–Legendre panels with the standard normal density folded into weights.

    Args:
      ctx: mpmath context (the float context ``FLOAT`` for float64).
      tau: the scale τ > 0.
      kinks: kinks of g in x (sorted); they sit at kink/τ in ξ.
      digits: decimal digits the sum must be good to, relative to its size.
      refine: 0 for the working rule, 1 for the finer guard rule.
      entire: g has no complex singularities (exp, erf, sin, polynomials): wider panels pay
        for the function's growth off the real axis with a fixed margin of digits instead.
      pole: the distance (in x) of g's nearest complex singularity from the real axis
        (:func:`pole_distance`); panels shrink with it, so the nodes per panel stay the same.
    """
    tau_f = float(tau)
    big_l = math.sqrt(2 * math.log(10) * (digits + 2)) + 3
    # The guard rule (refine=1) keeps the panels and takes ~1.5x the nodes: a different rule
    # whose agreement with the working one certifies the digits, at modest cost.
    if entire:
        # Bernstein ellipse ρ = 8 on a panel of half-width 1.5 reaches |Im| ≈ 5.9; erf-type
        # growth e^{y²} there (and the Gaussian's e^{y²/2}) costs < 25 digits, added to `need`.
        half_x, rho, margin = 1.5, 8.0, 25.0
    else:
        # half-width d/π: the ellipse through the pole has ρ = π + √(π² + 1) ≈ 6.4 for any d
        half_x, margin = 0.5 * min(1.0, pole / _POLE_DISTANCE), 0.0
        rho = pole / half_x + math.sqrt((pole / half_x) ** 2 + 1)
    half = min(half_x / tau_f, half_x)
    bounds = (
        [-big_l] + [float(k) / tau_f for k in kinks if -big_l < float(k) / tau_f < big_l] + [big_l]
    )
    # exact kink positions (in ctx) matter at high precision
    exact = (
        [-ctx.mpf(big_l)]
        + [ctx.mpf(k) / tau for k in kinks if -big_l < float(k) / tau_f < big_l]
        + [ctx.mpf(big_l)]
    )
    # index of the smooth piece each segment belongs to
    first_piece = sum(1 for k in kinks if float(k) / tau_f <= -big_l)
    inv_sqrt_2pi = 1 / ctx.sqrt(2 * ctx.pi)
    out: list[Panel] = []
    for seg, (a_f, b_f) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
        a, b = exact[seg], exact[seg + 1]
        count = max(1, math.ceil((b_f - a_f) / (2 * half)))
        for j in range(count):
            lo = a + (b - a) * j / count
            hi = a + (b - a) * (j + 1) / count
            near = min(abs(float(lo)), abs(float(hi))) if float(lo) * float(hi) > 0 else 0.0
            need = digits + 2 - near * near / (2 * math.log(10))
            if need <= 0:
                continue
            eval_digits = need + 3
            need += margin
            n = _ladder(math.ceil((1 + refine / 2) * need * math.log(10) / (2 * math.log(rho))) + 3)
            gx, gw = gauss_legendre(ctx, n)
            mid, rad = (lo + hi) / 2, (hi - lo) / 2
            nodes = [mid + rad * g for g in gx]
            weights = [
                rad * w * ctx.exp(-x * x / 2) * inv_sqrt_2pi for x, w in zip(nodes, gw, strict=True)
            ]
            out.append(Panel(first_piece + seg, nodes, weights, eval_digits))
    return out

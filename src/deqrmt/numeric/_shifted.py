r"""E[φ(τξ + h)] and E[φ(τξ + h)²] as Arb balls: the smoothed activation, without Stein.

``deqrmt check`` compares the engine's weak derivatives E[φ^{(k)}(τξ)] = τ^{−k} E[He_k(ξ) φ(τξ)]
with finite differences in h of E[φ(τξ + h)] (Stein's identity is exactly the statement that
those derivatives of the smoothed φ are the Hermite moments).  This is the independent side:

    E[g(τξ + h)] = (τ√(2π))⁻¹ ∫ g(x) e^{−(x−h)²/(2τ²)} dx,        g = φ or φ²,

the integral by ``acb.integral`` on [−X, X] split at the kinks (the integrand values of φ are
the moment encloser's, :mod:`._enclose`), the tails |x| > X by the growth bound of φ:
|g(τξ + h)| ≤ c(1 + |h|)^p e^{a|h|} (1 + τξ)^p e^{aτξ} and the Gaussian-tail lemma at
R = (X − |h|)/τ.  ``eval_limit`` bounds the work: a φ that oscillates faster than that resolves
(sin(1000x)) comes back as :class:`NotEnclosable`, never as a wrong ball.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any

import sympy as sp
from flint import acb, arb

from .. import _arguments
from .._errors import InvalidArgument
from ..symbolic import Activation, X, get_activation
from ._arb import ACB_FUNCTIONS, AcbContext, bits_for_digits, to_arb, unsupported, workprec
from ._context import Num
from ._enclose import _endpoint_error, enclose_moments, gaussian_tail
from ._growth import BOUND_PREC, Growth, NotEnclosable, growth_bound, point_ball
from ._numbers import ExactInput, exact_number
from ._printer import compile_function

__all__ = ["SteinComparison", "stein_comparison", "shifted_expectations", "SHIFT_EVAL_LIMIT"]

#: integrand evaluations one ``acb.integral`` may make (then the φ is declared unresolved)
SHIFT_EVAL_LIMIT = 40_000


@functools.lru_cache(maxsize=32)
def _pieces(act: Activation) -> tuple[Callable[..., tuple[Num, ...]], ...]:
    for p in act.pieces:
        bad = unsupported(p.expr, ACB_FUNCTIONS, holomorphic=True)
        if bad:
            raise NotEnclosable(f"{act.name}: {p.expr} uses {', '.join(bad)}")
    return tuple(compile_function("phi_piece_acb", [X], [p.expr]) for p in act.pieces)


def shifted_expectations(
    act: Activation, tau: arb, shifts: Sequence[arb], prec: int
) -> list[tuple[arb, arb]]:
    """[(E[φ(τξ + h)], E[φ(τξ + h)²]) for h in ``shifts``] as balls at ``prec`` bits.

    Raises:
      NotEnclosable: no growth bound for the tails, or a quadrature that does not converge
        within :data:`SHIFT_EVAL_LIMIT` evaluations (the ball would say nothing).
    """
    h_max = max((abs(float(h.mid())) for h in shifts), default=0.0)
    kink_max = max((abs(float(k)) for k in act.kinks), default=0.0)
    tau_hi = float(tau.upper())
    cut = math.ceil(max(kink_max + 1, h_max + tau_hi * (math.sqrt(2 * math.log(2) * prec) + 2)))
    tails = _tail_growths(act, cut)
    out = []
    with workprec(prec):
        for h in shifts:
            one, two = _integrals(act, tau, h, prec, cut)
            t1, t2 = (_tail(g, tau, h, cut) for g in tails)
            out.append((one + arb(0, t1), two + arb(0, t2)))
    for a, b in out:
        if not (a.is_finite() and b.is_finite()):
            raise NotEnclosable(f"E[φ(τξ + h)] of {act.name} is not finite in ball arithmetic")
    return out


def _tail_growths(act: Activation, cut: int) -> tuple[tuple[Growth, Growth], tuple[Growth, Growth]]:
    """Growth bounds beyond ±cut of φ and of φ² (per side: +, −)."""
    right, left = act.pieces[-1].expr, act.pieces[0].expr.subs(X, -X)
    g_r, g_l = growth_bound(right, arb(cut)), growth_bound(left, arb(cut))
    with workprec(BOUND_PREC):
        return (g_r, g_l), (g_r * g_r, g_l * g_l)


def _tail(g: tuple[Growth, Growth], tau: arb, h: arb, cut: int) -> arb:
    """Both tails |x| > cut of ∫ |g(x)| e^{−(x−h)²/(2τ²)} dx/(τ√(2π))."""
    total = arb(0)
    with workprec(BOUND_PREC):
        shift = arb(abs(h).upper())
        r = arb(((cut - shift) / tau).lower())
        for growth in g:
            scale = (1 + shift) ** growth.p * (growth.a * shift).exp()
            bound = gaussian_tail((1,), Growth(growth.c * scale, growth.p, growth.a), tau, r)
            if bound is None:
                raise NotEnclosable(f"cut {cut} is too small for the tail lemma at shift {h}")
            total += bound
    return arb(total.upper())


def _integrals(act: Activation, tau: arb, h: arb, prec: int, cut: int) -> tuple[arb, arb]:
    """∫_{−cut}^{cut} (φ, φ²)(x) e^{−(x−h)²/(2τ²)} dx/(τ√(2π)), one complex integral."""
    kinks = list(act.kinks)
    fns = _pieces(act)
    ctx = AcbContext(prec)
    points = [sp.Integer(-cut), *(k for k in kinks if -cut < k < cut), sp.Integer(cut)]
    total, err = acb(0), arb(0)
    inv = acb(1 / (2 * tau * tau))
    hc = acb(h)
    for a, b in zip(points[:-1], points[1:], strict=True):
        fn = fns[sum(1 for k in kinks if k <= a)]

        def f(x: acb, analytic: bool, fn: Any = fn) -> acb:
            ctx.analytic = analytic
            v = fn(ctx, x)[0]
            d = x - hc
            return (v + acb(0, 1) * v * v) * (-(d * d) * inv).exp()

        a_ball, b_ball = point_ball(a), point_ball(b)
        part = acb.integral(f, acb(a_ball.mid()), acb(b_ball.mid()), eval_limit=SHIFT_EVAL_LIMIT)
        if not part.is_finite():
            raise NotEnclosable("the quadrature of the shifted φ did not converge")
        total += part
        err += _endpoint_error(f, a_ball) + _endpoint_error(f, b_ball)
    norm = 1 / (tau * (2 * arb.pi()).sqrt())
    spread = arb(0, err.upper()) if err > 0 else arb(0)
    return (total.real + spread) * norm, (total.imag + spread) * norm


#: the moments compared: E[φ^(k)(τξ)], k = 1..4, and E[(φ²)''(τξ)]
STEIN_NAMES = ("d1", "d2", "d3", "d4", "sq2")
#: the step is τ·2^-STEP_BITS: the smoothed φ varies on the scale τ (Gaussian smoothing), so the
#: central differences' truncation error is O((h/τ)²) = O(2^-28), whatever φ's own scale
STEP_BITS = 14


@dataclasses.dataclass(frozen=True)
class SteinComparison:
    """Stein's weak derivatives and central differences of the smoothed φ, as Arb balls.

    Attributes:
      tau, h: the scale and the step (exact).
      stein: E[φ^(k)(τξ)] (``"d1"`` … ``"d4"``) and E[(φ²)''(τξ)] (``"sq2"``), the engine's
        Hermite moments (:func:`enclose_moments`).
      finite: the same by central differences in h of E[φ(τξ + h)] and E[φ(τξ + h)²].
      scale: the natural size of each, τ^(−k)·E[φ(τξ)²]^(1/2) (τ^(−2)·E[φ²] for (φ²)''), against
        which a difference is measured (an oscillating φ has E[φ'] ≈ 0 but not a small φ).
      prec: the working precision (bits).
    """

    tau: Fraction
    h: Fraction
    stein: Mapping[str, arb]
    finite: Mapping[str, arb]
    scale: Mapping[str, arb]
    prec: int


def stein_comparison(
    activation: str | Activation, tau: ExactInput, dps: int = 30
) -> SteinComparison:
    """Compare Stein's identity with finite differences of E[φ(τξ + h)] (see the module).

    Raises:
      NotEnclosable: a moment outside the enclosure rules, or a smoothed φ the independent
        quadrature does not resolve within its budget (the caller reports N/A, with this).
    """
    act = get_activation(activation)
    t = Fraction(exact_number(tau, "tau"))
    if not t > 0:
        raise InvalidArgument(f"tau={_arguments.show(tau)}: expected a scale τ > 0.")
    dps = _arguments.integer(dps, "dps", 5, 10_000)
    prec = bits_for_digits(dps) + 4 * STEP_BITS + 32  # h⁴ costs 4·STEP_BITS bits
    stein = enclose_moments(act, t, STEIN_NAMES, dps + (4 * STEP_BITS + 32) // 3)
    h = t / 2**STEP_BITS
    with workprec(prec):
        tau_b, h_b = to_arb(t), to_arb(h)
        vals = shifted_expectations(act, tau_b, [h_b * j for j in (-2, -1, 0, 1, 2)], prec)
        f = {j: v[0] for j, v in zip((-2, -1, 0, 1, 2), vals, strict=True)}
        g = {j: v[1] for j, v in zip((-2, -1, 0, 1, 2), vals, strict=True)}
        finite = {
            "d1": (f[1] - f[-1]) / (2 * h_b),
            "d2": (f[1] - 2 * f[0] + f[-1]) / (h_b * h_b),
            "d3": (f[2] - 2 * f[1] + 2 * f[-1] - f[-2]) / (2 * h_b**3),
            "d4": (f[2] - 4 * f[1] + 6 * f[0] - 4 * f[-1] + f[-2]) / h_b**4,
            "sq2": (g[1] - 2 * g[0] + g[-1]) / (h_b * h_b),
        }
        size = arb(g[0].abs_upper()).sqrt()
        scale = {f"d{k}": size / tau_b**k for k in range(1, 5)}
        scale["sq2"] = arb(g[0].abs_upper()) / (tau_b * tau_b)
    return SteinComparison(t, h, stein, finite, scale, prec)

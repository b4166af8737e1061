"""The largest σ_a² at which the DEQ's fixed point exists and attracts, for a ContractionError.

F(q) = σ_a² V(q) + σ_b² τ0², with V(q) = E[φ_c²(√q ξ)], is linear in σ_a²: q is a fixed point
exactly when σ_a² = S(q) = (q − σ_b²τ0²)/V(q).  The iteration from z = 0 climbs from
q0 = σ_b²τ0² to the first q where S(q) = σ_a², so it has an (attracting) fixed point exactly for
σ_a² below sup S: one maximisation in q, no root finding in σ_a² (for ReLU, centered, the sup
is the limit 2π/(π − 1) as q → ∞).  Along the same branch the NTK needs σ_a² E[φ'(τ*ξ)²] < 1,
the first q where S(q)·E[φ'(√q ξ)²] reaches 1 gives its threshold (2 for ReLU).

Computed in float64 (the engine's scan arithmetic), not proven: messages say "about" and print
4 significant digits.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import sympy as sp

from .._errors import ActivationError
from ._context import Num
from ._float_context import FLOAT
from ._map_formulas import map_from_moments
from ._moments import evaluator_for
from ._problem import DEQProblem

__all__ = ["Thresholds", "contraction_thresholds", "ntk_threshold_text", "threshold_text"]

#: grid q0·2^(k/2), k = 1 … 80: up to 10¹² q0, where the scan for fixed points also stops
_GRID = 80
#: golden-section / bisection steps refining a grid bracket (relative width ~1e-8)
_STEPS = 40


@dataclasses.dataclass(frozen=True)
class Thresholds:
    """``ck``: sup σ_a² with an attracting τ* (None: every σ_a² has one); ``ntk``: the σ_a²
    above which σ_a² E[φ'(τ*ξ)²] ≥ 1 (None: not below ``ck``); ``at_infinity``: the sup is
    the limit q → ∞ (linear growth), not a fold at a finite τ; ``at_least``: ``ck`` is only a
    lower bound (S still rose where the float64 evaluation overflowed)."""

    ck: float | None
    ntk: float | None
    at_infinity: bool
    at_least: bool = False


def _point(problem: DEQProblem, q: float) -> tuple[float, float]:
    """S(q) and E[φ'(√q ξ)²], in float64 (memoised per setting, whatever σ_a²: the points of
    a range of refused σ_a² are computed once)."""
    return _point_at(_setting(problem), q)


def _setting(problem: DEQProblem) -> DEQProblem:
    # S does not depend on σ_a² (nor F on dps or the trainable set): one key per setting
    return problem.replace(sigma_a2=sp.Integer(1), dps=15, trainable=("a", "A"))


@functools.lru_cache(maxsize=4096)
def _point_at(problem: DEQProblem, q: float) -> tuple[float, float]:
    ev = evaluator_for(problem.activation)
    raw = ev(FLOAT, math.sqrt(q), ("phi", "d1", "d2", "sq", "sq2", "dsq"), 0, 12)
    values = {k: v.value for k, v in raw.items()}
    f, _, _ = map_from_moments(problem, FLOAT, values)  # σ_a² = 1: F(q) − q0 = V(q)
    q0 = float(problem.q0)
    v = float(f) - q0
    return (q - q0) / v if v > 0 else math.inf, float(values["dsq"])


def contraction_thresholds(problem: DEQProblem, upto: float) -> Thresholds | None:
    """The thresholds below ``upto`` of ``problem``'s φ, σ_b², τ0 and centering (its σ_a² is
    not used); None when they cannot be located (an evaluation fails).

    The grid is walked only while S(q) ≤ ``upto``: past it σ_a² = ``upto`` has its fixed point,
    and bounded φ (S grows like q) stop within a few steps.
    """
    q0 = float(problem.q0)
    qs: list[float] = []
    pts: list[tuple[float, float]] = []
    stopped = False  # the float64 evaluation overflowed (e^x in selu, mish at τ ≈ 150)
    for k in range(1, _GRID + 1):
        q = q0 * 2 ** (k / 2)
        try:
            pts.append(_point(problem, q))
        except (OverflowError, ZeroDivisionError, ValueError, ArithmeticError, ActivationError):
            stopped = True
            break
        qs.append(q)
        if pts[-1][0] > upto:
            break
    if len(pts) < 3:
        return None
    s = [p[0] for p in pts]
    if not all(math.isfinite(x) for x in s):
        return None
    top = max(range(len(s)), key=s.__getitem__)
    ck: float | None = None
    at_inf = at_least = False
    if s[-1] > upto:
        pass  # S reaches upto: a fixed point exists there, no threshold below it
    elif stopped and top >= len(s) - 2:
        ck, at_least = s[top], True  # still rising where float64 ends: sup S ≥ this
    elif top >= len(s) - 2:
        # S still rising at 10¹² q0: linear growth makes S settle to its limit (error
        # ~ q0/q); a bounded V/q would have made S pass upto
        if s[-1] <= 1.5 * s[-3]:
            ck, at_inf = s[-1], True
    else:
        ck = _golden(lambda q: _point(problem, q)[0], qs[top - 1], qs[top + 1])
    ntk = None
    for k in range(top + 1):
        if s[k] * pts[k][1] >= 1:
            lo, hi = (q0 if k == 0 else qs[k - 1]), qs[k]
            for _ in range(_STEPS):
                mid = (lo + hi) / 2
                sm, dm = _point(problem, mid)
                lo, hi = (lo, mid) if sm * dm >= 1 else (mid, hi)
            ntk = _point(problem, hi)[0]
            break
    return Thresholds(ck, ntk, at_inf, at_least)


def _golden(f: Num, a: float, b: float) -> float:
    """max f on [a, b] (f unimodal there), by golden-section search."""
    g = (math.sqrt(5) - 1) / 2
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(_STEPS):
        if fc >= fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = f(d)
    return max(fc, fd)


def _num(x: float) -> str:
    return f"{x:.4g}"


def threshold_text(problem: DEQProblem) -> str:
    """`` It has one, attracting, only for σ_a² below about 2.934 at sigma_b2=1, tau0=1 …``: the
    sentence a ContractionError ends with (empty when nothing can be said below σ_a²)."""
    t = contraction_thresholds(problem, float(problem.sigma_a2))
    if t is None or t.ck is None or not t.ck < float(problem.sigma_a2):
        return ""
    if t.at_least:
        where = (
            f"at least up to about {_num(t.ck)} (where float64 overflows, the sup of "
            "(τ² − σ_b²τ0²)/E[φ_c²(τξ)] was still rising)"
        )
    else:
        how = "its limit as τ → ∞" if t.at_infinity else "where F' reaches 1"
        where = (
            f"only below about {_num(t.ck)} (the sup over τ of (τ² − σ_b²τ0²)/E[φ_c²(τξ)], {how})"
        )
    out = (
        f" At sigma_b2={problem.sigma_b2}, tau0={problem.tau0} the fixed point exists and "
        f"attracts for σ_a² {where}; float64, not proven"
    )
    if t.ntk is not None and t.ntk < t.ck:
        out += (
            f". The NTK also needs σ_a² E[φ'(τ*ξ)²] < 1: σ_a² below about {_num(t.ntk)} "
            "(above it only the CK exists)"
        )
    return out + "."


def ntk_threshold_text(problem: DEQProblem) -> str:
    """`` (the NTK exists for σ_a² below about 2 at sigma_b2=1, tau0=1; float64, not proven)``:
    what a note on a diverging NTK ends with (empty when it cannot be located)."""
    t = contraction_thresholds(problem, float(problem.sigma_a2))
    if t is None or t.ntk is None or not t.ntk < float(problem.sigma_a2):
        return ""
    return (
        f" (the NTK exists for σ_a² below about {_num(t.ntk)} at sigma_b2={problem.sigma_b2}, "
        f"tau0={problem.tau0}: where σ_a² E[φ'(τ*ξ)²] reaches 1 as τ* moves with σ_a²; float64, "
        "not proven)"
    )

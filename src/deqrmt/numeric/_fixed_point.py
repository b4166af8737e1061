r"""τ*: the only fixed-point solver, on the derived map F (ICML 2024, Theorem 1's τ*).

F(q), F'(q) and the centering constant c = E[φ(√q ξ)] come from
:func:`deqrmt.symbolic.derive_fixed_point`, compiled once; the moments come from the
activation's evaluator.  :func:`scan_fixed_points` finds every fixed point in range in float64
(:func:`deqrmt.numeric._roots.scan`); :func:`solve_tau` polishes the one the DEQ's iteration
reaches from z = 0 at any precision (:func:`deqrmt.numeric._roots.polish`).  Coefficients,
design, sweeps, experiments and generated code all go through here.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

from flint import arb

from .._errors import ActivationError, ContractionError, NoConvergence
from ._arb import to_arb, workprec
from ._context import EngineContext, Num
from ._enclose import linear_envelope
from ._float_context import FLOAT
from ._formula_table import ENGINE_MOMENTS
from ._map_formulas import center_moments, compiled_maps, map_from_moments, moments_at, raw_values
from ._moments import evaluator_for
from ._problem import DEQProblem, check_problem
from ._roots import SCAN_DECADES, scan
from ._roots import refine as _refine

__all__ = [
    "FixedPoint",
    "FixedPointScan",
    "VarianceMap",
    "variance_map",
    "moments_at",
    "map_from_moments",
    "center_moments",
    "scan_fixed_points",
    "root_free_above",
    "solve_tau",
]


@dataclasses.dataclass(frozen=True)
class FixedPoint:
    """One fixed point q = τ² of F, in the number type of the context it was solved in.

    ``slope`` is F'(q): the fixed point attracts the DEQ's iteration when |F'(q)| < 1.
    """

    q: Num
    tau: Num
    center: Num
    slope: Num

    @property
    def attracting(self) -> bool:
        return bool(abs(self.slope) < 1)


@dataclasses.dataclass(frozen=True)
class FixedPointScan:
    """Every fixed point of F in [σ_b²τ0², 10⁴·q*] as float brackets (see ``_roots.scan``).

    ``whole`` is True when the scan reached :func:`root_free_above`: then these are the fixed
    points on the whole half-line q ≥ σ_b²τ0² (to the scan's float resolution).
    """

    roots: tuple[tuple[float, float, int], ...]
    complete: bool
    whole: bool = False

    @property
    def star(self) -> tuple[float, float, int]:
        """The bracket of τ*², the root the iteration from z = 0 reaches (the lowest)."""
        return self.roots[0]

    @property
    def others(self) -> tuple[tuple[float, float, int], ...]:
        return self.roots[1:]


class VarianceMap:
    """F(q) − q, F'(q) − 1, c(q) and the centered moments for one problem, in any context."""

    def __init__(self, problem: DEQProblem) -> None:
        self.problem = problem
        self.ev = evaluator_for(problem.activation)
        self.needs = tuple(a for a in compiled_maps(problem.center).map_args if a in ENGINE_MOMENTS)

    def at(
        self, ctx: EngineContext, q: Num, refine: int = 0, digits: float | None = None
    ) -> tuple[Num, Num, Num]:
        """F(q), F'(q) and c(q) at scale τ = √q."""
        raw = self.ev(ctx, ctx.sqrt(q), self.needs, refine, digits)
        return map_from_moments(self.problem, ctx, raw_values(raw))

    def h(
        self, ctx: EngineContext, refine: int = 0, digits: float | None = None
    ) -> Callable[[Num], tuple[Num, Num]]:
        """q ↦ (F(q) − q, F'(q) − 1) in ``ctx``, the function the root finders take."""

        def h(q: Num) -> tuple[Num, Num]:
            f, df, _ = self.at(ctx, q, refine, digits)
            return f - q, df - 1

        return h

    def moments(
        self, ctx: EngineContext, tau: Num, refine: int = 0
    ) -> tuple[dict[str, Num], set[str], Num]:
        """See :func:`moments_at` (this problem's activation and centering)."""
        return moments_at(self.problem.activation, self.problem.center, ctx, tau, refine)


@functools.lru_cache(maxsize=64)
def variance_map(problem: DEQProblem) -> VarianceMap:
    """The (memoised) :class:`VarianceMap` of ``problem``."""
    return VarianceMap(problem)


def _setting_key(problem: DEQProblem) -> DEQProblem:
    # dps and the trainable set do not change F: one scan serves them all
    return problem.replace(dps=30, trainable=("a", "A"))


def root_free_above(problem: DEQProblem) -> float | None:
    r"""A q above which F(q) < q, proved; None when φ has no linear envelope that gives one.

    With |φ(x)| ≤ A + B_±|x| on each side (:func:`deqrmt.numeric._enclose.linear_envelope`),
    E[ξ 1{ξ>0}] = 1/√(2π) and E[ξ² 1{ξ>0}] = 1/2,
    F(q) ≤ σ_a² E[φ(√q ξ)²] + σ_b²τ0² ≤ σ_a²(A² + 2A(B₊ + B₋)√q/√(2π) + (B₊² + B₋²)q/2)
    + σ_b²τ0² (centering only lowers E[φ²]), which is below q once √q exceeds the positive
    root of (1 − σ_a²(B₊² + B₋²)/2)s² − 2σ_a²A(B₊ + B₋)s/√(2π) − (σ_a²A² + σ_b²τ0²) — when
    σ_a²(B₊² + B₋²)/2 < 1 (for √2·ReLU: σ_a² < 1, exactly where the map contracts).
    Evaluated in Arb and rounded up: no fixed point lies above the returned q.
    """
    envelope = linear_envelope(problem.activation)
    if envelope is None:
        return None
    big_a, b_plus, b_minus = envelope
    with workprec(64):
        a2, b2, t0 = (to_arb(v) for v in (problem.sigma_a2, problem.sigma_b2, problem.tau0))
        a = 1 - a2 * (b_plus * b_plus + b_minus * b_minus) / 2
        if not a > 0:
            return None
        b = 2 * a2 * big_a * (b_plus + b_minus) / (2 * arb.pi()).sqrt()
        c = a2 * big_a * big_a + b2 * t0 * t0
        s = (b + (b * b + 4 * a * c).sqrt()) / (2 * a)
        q = (s * s).upper()
    # float() rounds to nearest: step one part in 10^12 up so the float stays above the bound
    return float(q) * (1 + 1e-12)


@functools.lru_cache(maxsize=64)
def _scan(problem: DEQProblem) -> FixedPointScan:
    vm = variance_map(problem)
    # float64 with the quadrature at 12 digits: enough to place every sign change
    h = vm.h(FLOAT, 0, 12)
    limit, q0 = root_free_above(problem), float(problem.q0)
    try:
        roots, complete = scan(h, q0, limit=limit)
    except (OverflowError, ZeroDivisionError, ActivationError) as e:
        raise ContractionError(
            f"F(τ²) = σ_a² E[φ_c²(τξ)] + σ_b² τ0² overflows at the DEQ's first iterate "
            f"(sigma_a2={problem.sigma_a2}, sigma_b2={problem.sigma_b2}, tau0={problem.tau0}): {e}"
        ) from None
    if not roots:
        from ._threshold import threshold_text

        raise ContractionError(
            "the DEQ's variance iteration τ² ← σ_a² E[φ_c²(τξ)] + σ_b² τ0², started from z = 0, "
            f"has no fixed point (it diverges) for sigma_a2={problem.sigma_a2}: reduce sigma_a2 "
            f"(the map must contract: σ_a² E[(φ²)'']/2 < 1).{threshold_text(problem)}"
        )
    # the scan ends at the proved limit unless 10^SCAN_DECADES·q* comes first
    whole = limit is not None and complete and limit <= max(roots[0][1], q0) * 10**SCAN_DECADES
    return FixedPointScan(tuple(roots), complete, whole)


def scan_fixed_points(problem: DEQProblem) -> FixedPointScan:
    """Every fixed point of the variance map F(q) = σ_a² E[φ_c²(√q ξ)] + σ_b² τ0².

    The roots of F(q) = q in [σ_b²τ0², 10⁴·q*], or on the whole half-line where
    :func:`root_free_above` bounds the search (float brackets; memoised per setting).  τ*² is
    the lowest root, the one the DEQ's iteration from z = 0 reaches.

    Args:
      problem: the :class:`DEQProblem`.

    Returns:
      A ``FixedPointScan``: ``roots``, float brackets ``(lo, hi, sign)`` of q = τ² in increasing
      order; ``star``, the bracket of τ*²; ``others``; ``complete`` and ``whole`` (True when
      the fixed points on the whole half-line q ≥ σ_b²τ0² are listed).

    Example:
      >>> scan = scan_fixed_points(DEQProblem.make("tanh", sigma_a2="0.2"))
      >>> len(scan.roots), scan.whole
      (1, True)
      >>> lo, hi, _ = scan.star
      >>> lo <= 0.934871610924773**2 <= hi                 # τ*² of deq_coefficients("tanh")
      True
    """
    return _scan(_setting_key(check_problem(problem)))


def solve_tau(
    problem: DEQProblem,
    ctx: EngineContext,
    refine: int = 0,
    root: tuple[float, float, int] | None = None,
) -> FixedPoint:
    """τ*² (or another root of ``scan_fixed_points``) to ctx's precision, with c and F'.

    The float bracket from the scan is polished in float64 first, then re-bracketed and
    polished in ``ctx``: a handful of high-precision evaluations.
    """
    vm = variance_map(check_problem(problem))
    a, b, kind = root = scan_fixed_points(problem).star if root is None else root
    if a == b and kind == 0:
        # h touches 0 without crossing: F' = 1, a neutral point the iteration creeps to
        from ._threshold import threshold_text

        raise ContractionError(
            f"the fixed point τ ≈ {a**0.5:.10g} is a double root of F(τ²) = τ² (F' = 1): not "
            f"attracting at sigma_a2={problem.sigma_a2}; reduce sigma_a2.{threshold_text(problem)}"
        )
    tol = ctx.mpf(10) ** (-(ctx.dps - 2))
    try:
        q = _refine(
            vm.h(FLOAT, 0, 15), vm.h(ctx, refine), root, ctx.mpf, tol, floor=float(problem.q0)
        )
    except ArithmeticError:
        raise NoConvergence(
            f"τ*² did not converge at {ctx.dps} digits; ask for fewer digits (dps)."
        ) from None
    _, df, c = vm.at(ctx, q, refine)
    return FixedPoint(q, ctx.sqrt(q), c, df)

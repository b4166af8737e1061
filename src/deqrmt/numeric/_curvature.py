r"""sup over τ > 0 of E[(φ_c²)''(τξ)], enclosed rigorously on the one bounds engine (Arb).

Assumption 1 of Ling, Liao, Qiu (ICML 2024) asks σ_a² < 2/E[(φ²)''(τξ)] for every τ > 0, with
φ_c = φ − c centred.  For a piecewise smooth φ (pieces between the kinks k_j), the weak second
derivative is

    (φ_c²)'' = h + Σ_j ( J_j δ(x − k_j) + D_j δ'(x − k_j) ),    h = 2(φ'² + φ_c φ'') piecewise,

J_j the jump of (φ_c²)' = 2φ_cφ' at k_j and D_j the jump of φ_c² (0 for a continuous φ), so

    f(τ) = E[h(τξ)] + Σ_j ( J_j pdf(k_j/τ)/τ + D_j k_j pdf(k_j/τ)/τ³ ).

This is Stein's E[He₂(ξ) φ_c²(τξ)]/τ² written without the 1/τ² (which loses everything as
τ → 0).  f is bounded on cells of log₂ τ (:mod:`._curvature_cells`: the mean value form on
ξ-cells, exact integrals on x-cells, the tail rules on the end cells) by branch and bound: the
cell with the largest upper bound is halved until the supremum is enclosed to ``rtol`` or the
budget of cells is spent.  A Dirac mass of positive weight at x = 0 makes f(τ) → +∞ as τ → 0:
the supremum is then proved infinite.
"""

from __future__ import annotations

import dataclasses
import functools
import heapq
import itertools
import math
from fractions import Fraction

import mpmath
from flint import arb
from mpmath.libmp import from_man_exp

from .. import _arguments
from .._errors import InvalidArgument
from ..symbolic import Activation, get_activation
from ._arb import workprec
from ._context import Num
from ._curvature_cells import CurvatureCells
from ._curvature_pieces import PREC
from ._enclosure_text import exact_fraction
from ._growth import NotEnclosable

__all__ = ["CurvatureBound", "curvature_bound"]

#: the first cell in log₂ τ: (0, 2^_LOG_LO] (the last is [T, ∞), :data:`._curvature_cells.LOG_T`)
_LOG_LO = -24
_DEFAULT_BUDGET = 200
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
    lower: Num
    upper: Num
    where: str
    cells: int
    reason: str = ""

    @property
    def finite(self) -> bool:
        return self.kind == "bounded"


def _mpf(v: arb) -> Num:
    m, e = arb(v).mid().man_exp()
    return mpmath.mp.make_mpf(from_man_exp(int(m), int(e)))


def curvature_bound(
    activation: str | Activation,
    center: Num = 0,
    center_radius: Num = 0,
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


def _exact(v: object, name: str) -> Fraction:
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
        engine = CurvatureCells(act, ball)
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


def _cells(engine: CurvatureCells) -> list[tuple[int | None, int | None]]:
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
    engine: CurvatureCells, act: Activation, rtol: float, budget: int
) -> CurvatureBound:
    _RTOL = Fraction(rtol).limit_denominator(10**12)  # noqa: N806 (a constant of the loop)
    counter = itertools.count()
    heap: list[tuple[Num, int, Num, Num]] = []
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


def _which(u0: Num, u1: Num) -> str:
    if u1 is None:
        return "τ → ∞"
    if u0 is None:
        return "τ → 0"
    return f"τ ∈ [2^{float(u0):g}, 2^{float(u1):g}]"


def _where(u0: Num, u1: Num) -> str:
    if u1 is None:
        return "τ → ∞"
    if u0 is None:
        return "τ → 0"
    mid = (Fraction(u0) + Fraction(u1)) / 2
    return "τ ≈ " + mpmath.nstr(mpmath.mpf(2) ** (mpmath.mpf(mid.numerator) / mid.denominator), 3)

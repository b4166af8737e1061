"""The root search of ``deqrmt design``: multi-start Levenberg–Marquardt under a stated budget.

Each start runs twice as cheaply as a high-precision solve from scratch: Levenberg–Marquardt in
float64 (the engine's float context ``FLOAT``) from the start point, then, when that reaches a solution to ~1e-8, a few
Gauss–Newton-like steps at the working precision from there (quadratic convergence: 1e-8 →
1e-16 → 1e-32 …).  A start that float64 cannot bring near a solution is solved at the working
precision from the start point, as a direct solve would (so no solution is lost to float64's
range or rounding), unless float64 LM stopped at a local minimum of the residual far from zero
(which the precise solve reaches too).  The float phase follows the same path as the precise solve would until
the residual is ~1e-12, so the same starts find the same solutions; the reported digits are
unchanged (they are those that agree with a polish at still higher precision).

Budget: every evaluation of the family's moments is counted in *work units* (one unit per
quadrature node at the working precision, :data:`FLOAT_UNIT` per node in float64, and a
closed-form evaluation as :data:`CLOSED_UNITS` nodes).  The search refuses before any work
when its estimate exceeds :data:`MAX_WORK`, and stops with :class:`BudgetExceeded` if it
reaches :data:`MAX_WORK` anyway: it answers within the stated budget or says so
(docs/limits.md).  Units, not seconds, so the answer is the same on every machine.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

import mpmath

from .._errors import BudgetExceeded
from ._context import EngineContext, Num
from ._float_context import FLOAT

__all__ = [
    "CLOSED_UNITS",
    "FLOAT_UNIT",
    "MAX_WORK",
    "OutOfBudget",
    "SearchBudget",
    "MultiStart",
    "expand",
    "jacobian",
    "multistart",
    "nullity",
    "precision_factor",
    "refine",
    "solve_lm",
]

#: work units a design may spend: one unit is one evaluation of the family (φ and φ') at one
#: quadrature node at 40 digits, ~30 µs on one core of this machine (a float64 node costs
#: FLOAT_UNIT of it), so the budget is ~40 s of search; the NTK design `design --deq tanh
#: --family 'a*tanh(b*x)' --kernel ntk` spends 0.15 million of it
MAX_WORK = 1_200_000
#: a float64 node costs about 1/40 of a 40-digit one (measured: 0.8 µs against 30 µs)
FLOAT_UNIT = 0.025
#: a closed-form evaluation of all six moments, in nodes (measured: ~20 node evaluations)
CLOSED_UNITS = 20
#: the float64 phase hands a start to the precise phase when its residual is below this
_HANDOVER = 1e-8
#: and gives it up when LM stopped with a residual above this (a local minimum, not a root);
#: in between (float64 too coarse for an ill-conditioned root) the start is solved precisely
_STUCK = 1e-4


def precision_factor(ctx: EngineContext) -> float:
    """Cost of one node at ``ctx``'s precision relative to 40 digits: 1 up to 40 digits (where
    Python's overhead dominates), then ``1 + ((dps − 40)/120)^1.3`` (measured for a*tanh(b*x):
    1.3 at 100 digits, 3.1 at 300, 16 at 1000)."""
    if isinstance(ctx, mpmath.ctx_fp.FPContext):  # FLOAT, or mpmath.fp
        return 1.0
    return 1.0 + (max(0, ctx.dps - 40) / 120) ** 1.3


class OutOfBudget(Exception):
    """Raised inside the search when the budget is spent; not a ValueError, so the solver's
    handlers for failed trial points cannot swallow it.  :func:`design_enn` turns it into
    :class:`BudgetExceeded`."""


@dataclasses.dataclass
class SearchBudget:
    """Work units spent by the search, against ``limit``."""

    limit: float = MAX_WORK
    used: float = 0.0

    def spend(self, units: float) -> None:
        self.used += units
        if self.used > self.limit:
            raise OutOfBudget(self.used)

    def refuse(self, what: str, estimate: float) -> None:
        """:class:`BudgetExceeded` before any work when ``estimate`` exceeds the limit."""
        if estimate > self.limit:
            raise BudgetExceeded(
                f"{what} needs about {_units(estimate)} work units, over the design budget of "
                f"{_units(self.limit)} (one unit: the family at one quadrature node; "
                "docs/limits.md); use fewer `starts` or `layers`, a lower `dps`, or a family "
                "with closed-form moments (hard_tanh, leaky_relu, polynomialD)."
            )

    def exceeded(self, what: str) -> BudgetExceeded:
        return BudgetExceeded(
            f"{what} spent its budget of {_units(self.limit)} work units (one unit: the family "
            "at one quadrature node; docs/limits.md) without finishing; use fewer `starts` or "
            "`layers`, a lower `dps`, or a family with closed-form moments (hard_tanh, "
            "leaky_relu, polynomialD)."
        )


def _units(x: float) -> str:
    return f"{x:.2g}" if x < 1e3 else f"{x / 1e6:.3g} million" if x >= 1e6 else f"{x:,.0f}"


def solve_lm(
    ctx: EngineContext,
    residual: Callable[[list[Num]], list[Num]],
    x0: list[Num],
    tol: Num,
    max_iter: int = 200,
    lam0: Num = None,
) -> tuple[list[Num], Num]:
    """Levenberg–Marquardt with a central-difference Jacobian (square or overdetermined).

    ``lam0`` is the first damping (default 1e-3); a start already near a solution takes a
    small one, so the first steps are Gauss–Newton's and converge quadratically.
    """
    x = list(x0)
    r = residual(x)
    norm = ctx.norm(r)
    lam = ctx.mpf("1e-3") if lam0 is None else ctx.mpf(lam0)
    for _ in range(max_iter):
        if norm < tol:
            return x, norm
        jac = ctx.matrix(jacobian(ctx, residual, x, len(r)))
        jt = jac.T
        jtj = jt * jac
        g = jt * ctx.matrix(r)
        improved = False
        for _ in range(30):
            a = jtj + lam * ctx.diag([max(jtj[i, i], ctx.mpf("1e-30")) for i in range(len(x))])
            try:
                delta = ctx.lu_solve(a, -g)
            except ZeroDivisionError:
                lam *= 10
                continue
            xn = [xi + delta[i] for i, xi in enumerate(x)]
            try:
                rn = residual(xn)
            except (ValueError, ZeroDivisionError, OverflowError):
                lam *= 10
                continue
            nn = ctx.norm(rn)
            if nn < norm:
                x, r, norm = xn, rn, nn
                lam = max(lam / 10, ctx.mpf(10) ** (-ctx.dps))
                improved = True
                break
            lam *= 10
        if not improved:
            break
    return x, norm


def jacobian(
    ctx: EngineContext, residual: Callable[[list[Num]], list[Num]], x: list[Num], rows: int
) -> list[list[Num]]:
    """Central differences, step 10^-(dps/3) relative: ``rows`` × ``len(x)``."""
    h = ctx.mpf(10) ** (-(ctx.dps // 3))
    jac = [[ctx.zero] * len(x) for _ in range(rows)]
    for j in range(len(x)):
        xp, xm = list(x), list(x)
        step = h * max(1, abs(x[j]))
        xp[j] += step
        xm[j] -= step
        for i, (a, b) in enumerate(zip(residual(xp), residual(xm), strict=True)):
            jac[i][j] = (a - b) / (2 * step)
    return jac


def refine(
    ctx: EngineContext,
    residual: Callable[[list[Num]], list[Num]],
    x0: list[Num],
    tol: Num,
    jac: Sequence[Sequence[Num]],
    max_iter: int = 12,
) -> tuple[list[Num], Num]:
    """Newton's chord method from a point near a root, with a Jacobian computed elsewhere (in
    float64): ``x ← x − (JᵀJ)⁻¹Jᵀr(x)``, one evaluation a step, each gaining the Jacobian's
    ~10 correct digits.  Hands over to :func:`solve_lm` (small damping) if a step gains less
    than one digit."""
    x = list(x0)
    r = residual(x)
    norm = ctx.norm(r)
    J = ctx.matrix([[ctx.mpf(v) for v in row] for row in jac])
    jt = J.T
    try:
        normal = jt * J
        for _ in range(max_iter):
            if norm < tol:
                return x, norm
            delta = ctx.lu_solve(normal, -(jt * ctx.matrix(r)))
            xn = [xi + delta[i] for i, xi in enumerate(x)]
            rn = residual(xn)
            nn = ctx.norm(rn)
            if not nn < norm / 10:
                break
            x, r, norm = xn, rn, nn
    except (ValueError, ZeroDivisionError, OverflowError):
        pass
    return solve_lm(ctx, residual, x, tol, lam0="1e-12")


def expand(flat_free: Sequence[Num], fixed: dict[int, Num], n: int) -> list[Num]:
    """The full parameter vector: ``fixed`` entries by index, the free ones in order."""
    it = iter(flat_free)
    return [fixed[j] if j in fixed else next(it) for j in range(n)]


def _solve_start(
    ctx: EngineContext,
    residual: Callable[[Num], Callable[[list[Num]], list[Num]]],
    x0: list[float],
    fixed: dict[int, Num],
    n: int,
    tol: Num,
) -> tuple[list[Num], Num]:
    """One start: float64 LM, then the working precision from where it ended (or from x0)."""
    fp = FLOAT
    fixed_fp = {j: float(v) for j, v in fixed.items()}
    r_fp = residual(fp)
    r_mp = residual(ctx)

    def r_free_fp(free: list[Num]) -> list[Num]:
        return r_fp(expand(free, fixed_fp, n))

    def r_free(free: list[Num]) -> list[Num]:
        return r_mp(expand(free, fixed, n))

    free0 = [t for j, t in enumerate(x0) if j not in fixed]
    try:
        near, norm = solve_lm(fp, r_free_fp, [float(t) for t in free0], 1e-12)
    except (ZeroDivisionError, OverflowError, TypeError):
        near, norm = [], math.nan  # float64's range or a complex value: decide in precision
    # a ValueError (a constraint or a complex moment met on the path) propagates: the precise
    # solve follows the same path and meets it too
    if all(math.isfinite(t) for t in near) and norm < _HANDOVER:
        try:
            jac = jacobian(fp, r_free_fp, near, len(r_free_fp(near)))
            return refine(ctx, r_free, [ctx.mpf(t) for t in near], tol, jac)
        except (ValueError, ZeroDivisionError, OverflowError, TypeError):
            pass
    elif norm >= _STUCK:
        # LM stopped at a local minimum of the residual that is not a root: at the working
        # precision it would stop there too
        raise ValueError(f"no root from this start (residual {norm:.3g})")
    return solve_lm(ctx, r_free, [ctx.mpf(t) for t in free0], tol)


def _free(
    full: Callable[[list[Num]], list[Num]], fixed: dict[int, Num], n: int
) -> Callable[[list[Num]], list[Num]]:
    """The residual as a function of the free parameters only."""
    return lambda free: full(expand(free, fixed, n))


class MultiStart(str):
    """The line ``progress`` gets before each multi-start (``"probe: multi-start 2/4 (1
    solution(s) so far)"``), with its parts as attributes for a bar: ``label`` (the phase),
    ``start`` (1-based), ``starts`` (of the phase) and ``found`` (solutions so far)."""

    label: str
    start: int
    starts: int
    found: int

    def __new__(cls, label: str, start: int, starts: int, found: int) -> MultiStart:
        line = super().__new__(
            cls, f"{label}: multi-start {start}/{starts} ({found} solution(s) so far)"
        )
        line.label, line.start, line.starts, line.found = label, start, starts, found
        return line


def multistart(
    ctx: EngineContext,
    residual: Callable[[Num], Callable[[list[Num]], list[Num]]],
    n: int,
    fixed: dict[int, Num],
    sample: Callable[[], list[float]],
    layers: int,
    starts: int,
    tol: Num,
    dps: int,
    progress: Callable[[str], None] | None = None,
    label: str = "search",
    precise_first: bool = False,
) -> list[tuple[list[Num], Num]]:
    """Every distinct solution (full parameter vector, residual norm) from ``starts`` starts.

    ``residual(c)`` is the residual function in the context ``c`` (``FLOAT`` or ``ctx``).
    ``precise_first``: solve the first start that finds a solution again at the working
    precision from its start point (when the solutions form a continuum, the point the solver
    lands on depends on its path, and the design fixes parameters from that first point).
    """
    found: list[tuple[list[Num], Num]] = []
    for i in range(starts):
        if progress is not None:
            progress(MultiStart(label, i + 1, starts, len(found)))
        x0 = [t for l in range(layers) for t in sample()]
        try:
            free, norm = _solve_start(ctx, residual, x0, fixed, n, tol)
            if precise_first and not found and norm < ctx.mpf(10) ** (-(dps - 5)):
                # the first solution again, on the path a precise solve from x0 takes
                free0 = [ctx.mpf(t) for j, t in enumerate(x0) if j not in fixed]
                free, norm = solve_lm(ctx, _free(residual(ctx), fixed, n), free0, tol)
        except (ValueError, ZeroDivisionError, OverflowError):
            continue
        if norm >= ctx.mpf(10) ** (-(dps - 5)):
            continue
        x = expand(free, fixed, n)
        if any(
            ctx.norm([a - b for a, b in zip(x, y, strict=True)]) <= ctx.mpf("1e-8") * ctx.norm(x)
            for y, _ in found
        ):
            continue
        found.append((x, norm))
    return found


def nullity(
    ctx: EngineContext, residual: Callable[[list[Num]], list[Num]], x: list[Num]
) -> tuple[int, list[int]]:
    """Dimension k of the solution set through x, and k coordinates transversal to it to fix."""
    h = ctx.mpf(10) ** (-(ctx.dps // 3))
    jac = ctx.matrix(len(residual(x)), len(x))
    for j in range(len(x)):
        xp, xm = list(x), list(x)
        xp[j] += h
        xm[j] -= h
        for i, (a, b) in enumerate(zip(residual(xp), residual(xm), strict=True)):
            jac[i, j] = (a - b) / (2 * h)
    _, sv, vt = ctx.svd_r(jac, full_matrices=True)
    top = max(abs(s) for s in sv)
    rank = sum(1 for s in sv if abs(s) > top * ctx.mpf(10) ** (-(ctx.dps // 4)))
    k = len(x) - rank
    # null-space basis: the last k rows of Vᵀ; fix the coordinates it moves most (greedily)
    null = [[vt[r, j] for j in range(len(x))] for r in range(len(x) - k, len(x))]
    chosen: list[int] = []
    for vec in null:
        j = max((i for i in range(len(x)) if i not in chosen), key=lambda i: abs(vec[i]))
        chosen.append(j)
    return k, sorted(chosen)

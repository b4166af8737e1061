r"""The predicted implicit-bias limit `β̂ = argmin Σ_i q(β_i)` subject to `Xβ = y`, to high precision.

`q` comes from :func:`deqrmt.symbolic._bias.derive_bias` (with β(0) and the conserved value of
the initialisation substituted); the minimisation runs over the domain the gradient flow cannot
leave (β > 0 for the diagonal DEQ `1/(1-w)` from `w(0) < 1`).  q is strictly convex there, so β̂
is the unique KKT point `∇Q(β̂) = Xᵀλ`, `Xβ̂ = y`.

Three phases:

1. A strictly interior interpolating point, or a certificate that none exists.  For a domain
   with finite ends the problem `Xβ = y, β ∈ (a, b)^d` is a linear feasibility problem; it is
   solved by non-negative least squares (Lawson–Hanson) after the shift `β = a + t` (or
   `b - t`); an NNLS residual `r ≠ 0` is a Farkas certificate (`Xᵀr ≤ 0 < yᵀr` in the shifted
   variables), raised as :class:`NoReachableInterpolant`.
2. Feasible Newton with backtracking on Q in float64 (numpy), keeping every iterate inside the
   domain: globally convergent for a strictly convex Q.
3. Newton on the KKT system in (β, λ) with mpmath at the requested precision, through the Schur
   complement `X H Xᵀ` (`H = diag h(β)`, the inverse Hessian of Q): quadratic convergence from
   float64 accuracy.

Reference: Boyd & Vandenberghe, *Convex Optimization* (2004), §10.2–10.3 (equality-constrained
Newton, feasible and infeasible start).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

import mpmath
import numpy as np
import sympy as sp
from sympy.printing.codeprinter import PrintMethodNotImplementedError

from .._budget import check_memory
from .._errors import (
    BudgetExceeded,
    DerivationError,
    InvalidArgument,
    NoConvergence,
    NoReachableInterpolant,
)
from ..symbolic import BETA0, BiasDerivation
from ._context import EngineContext, Num
from ._contexts import NUMPY
from ._printer import compile_function

__all__ = [
    "MAX_D",
    "MAX_STEP_SIZES",
    "BiasLimit",
    "bias_functions",
    "check_sizes",
    "check_memory_estimate",
    "domain_bounds",
    "float_functions",
    "minimum_norm_interpolant",
    "predicted_limit",
    "relative_gap",
]


@dataclasses.dataclass(frozen=True)
class BiasLimit:
    """β̂ and its multipliers, from :func:`predicted_limit`.

    Attributes:
      beta: β̂ as mpmath numbers of `ctx` (d values).
      multipliers: λ with `∇Q(β̂) = Xᵀλ` (N values).
      kkt_residual: max of `‖∇Q - Xᵀλ‖∞ / max(1, ‖∇Q‖∞)` and `‖Xβ̂ - y‖∞ / max(1, ‖y‖∞)`.
      dps: decimal digits the values were computed at.
      iterations: Newton iterations (float phase, mpmath phase).
      ctx: the mpmath context that owns the numbers.
    """

    beta: tuple[Num, ...]
    multipliers: tuple[Num, ...]
    kkt_residual: Num
    dps: int
    iterations: tuple[int, int]
    ctx: EngineContext = dataclasses.field(repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.beta:
            raise InvalidArgument("beta must be non-empty.")

    def as_array(self) -> np.ndarray:
        """β̂ rounded to float64."""
        return np.array([float(b) for b in self.beta])


# ---------------------------------------------------------------------------------------------
# budgets (docs/limits.md): sizes are checked before any work
# ---------------------------------------------------------------------------------------------

#: coordinates d of a check: the Gram matrix is d × d and the interior point of a two-sided
#: domain is a non-negative least-squares problem in 2d variables
MAX_D = 10_000
#: step sizes of a check (one gradient-descent run each)
MAX_STEP_SIZES = 8
#: d of a two-sided domain (tanh(w): β ∈ (-1, 1)): the interior point's Lawson–Hanson NNLS
#: takes ~d iterations of a least-squares solve in up to d columns, O(d⁴) (measured: d = 200
#: about a minute on one core)
MAX_D_TWO_SIDED = 200
#: d when ψ has no closed form: every Newton iteration of the precise phase integrates at
#: every coordinate (tanh-sinh at dps + 10 digits)
MAX_D_QUADRATURE = 200
#: products in one Newton iteration of the precise phase (the N × N Schur complement takes
#: N²·d/2 of them), at 30 digits; more digits cost proportionally more (~5 µs a product:
#: ~20 s an iteration at the limit, a few iterations)
MAX_POLISH_PRODUCTS = 4 * 10**6


def check_sizes(
    n: int,
    d: int,
    *,
    step_sizes: int = 4,
    dps: int = 30,
    derivation: BiasDerivation | None = None,
) -> None:
    """Refuse a check whose sizes exceed the time or memory budget, before any work.

    ``derivation`` (when known) refines the limits: a two-sided domain (NNLS interior point)
    and a ψ without closed form (quadrature at every coordinate) cost more per coordinate.
    """
    for name, value in (("n", n), ("d", d)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidArgument(f"{name}={value!r} must be an int.")
    if not 1 <= n < d:
        raise InvalidArgument(f"need 1 ≤ n < d (over-parameterised), got n={n}, d={d}.")
    if not 1 <= step_sizes <= MAX_STEP_SIZES:
        raise BudgetExceeded(
            f"{step_sizes} step sizes: give 1 to {MAX_STEP_SIZES} (one gradient-descent run each)."
        )
    two_sided = True
    if derivation is not None:
        lo, hi = domain_bounds(derivation)
        two_sided = math.isfinite(lo) and math.isfinite(hi)
    check_memory_estimate(n, d, step_sizes, dps, two_sided)
    if d > MAX_D:
        raise BudgetExceeded(
            f"d={d}: at most {MAX_D} coordinates (the d × d Gram matrix and the GD runs); "
            "lower d (docs/limits.md)."
        )
    if derivation is not None and two_sided and d > MAX_D_TWO_SIDED:
        raise BudgetExceeded(
            f"d={d}: the domain of β = {derivation.expression} has two finite ends, and its "
            f"interior point (NNLS in 2d variables) is budgeted to d ≤ {MAX_D_TWO_SIDED}; lower d."
        )
    if derivation is not None and not derivation.closed_form and d > MAX_D_QUADRATURE:
        raise BudgetExceeded(
            f"d={d}: ψ for β = {derivation.expression} has no closed form, so every Newton step "
            f"integrates at every coordinate; budgeted to d ≤ {MAX_D_QUADRATURE}; lower d."
        )
    products = n * n * d / 2 * max(1.0, (dps + 10) / 40)
    if products > MAX_POLISH_PRODUCTS:
        raise BudgetExceeded(
            f"n={n}, d={d} at dps={dps}: one Newton step of the precise phase takes ~"
            f"{products:.2g} high-precision products, over the budget of {MAX_POLISH_PRODUCTS:.2g} "
            "(n²·d/2); lower n, d or dps (docs/limits.md)."
        )


def check_memory_estimate(n: int, d: int, step_sizes: int, dps: int, two_sided: bool) -> None:
    """:class:`BudgetExceeded` when a check's arrays would not fit in this machine's memory.

    The estimate: X and its copies (numpy, torch, the minimum-norm and Newton steps), the d × d
    Gram matrix, the GD states and recorded paths (~250 points of K × d), the NNLS system of a
    two-sided domain ((n + d) × 2d, with lstsq copies) and the mpmath copies of X (~(300 +
    dps) bytes a number).
    """
    estimate = (
        8 * (8 * n * d + min(d, 4096) ** 2 + step_sizes * d * (16 + 250))
        + (48 * d * (n + d) if two_sided else 0)
        + 2 * n * d * (300 + dps)
        + 400 * 2**20
    )
    check_memory(estimate, f"a check with n={n}, d={d}", "lower d or n")


def _substitutions(d: BiasDerivation) -> dict[sp.Symbol, sp.Expr]:
    subs: dict[sp.Symbol, sp.Expr] = {BETA0: d.beta0_value}
    if d.conserved_symbol is not None and d.conserved_value is not None:
        subs[d.conserved_symbol] = d.conserved_value
    return subs


def _compile(name: str, args: list[sp.Symbol], exprs: list[sp.Expr], doc: str) -> Any:
    try:
        return compile_function(name, args, exprs, doc=doc)
    except PrintMethodNotImplementedError as e:
        raise DerivationError(
            f"{doc} uses a function with no mpmath code printer ({e}); the predicted limit "
            "cannot be evaluated."
        ) from None


def bias_functions(d: BiasDerivation) -> Callable[..., tuple[Num, Num, Num]]:
    """`f(ctx, β) -> (q(β), q'(β), 1/h(β))` at the initialisation of `d`, compiled once.

    `q' = ψ'(β) - ψ'(β(0))` and `q'' = 1/h`.  A quadrature representation
    `Integral(f(s), (s, a, b))` becomes `ctx.quad` of the compiled integrand, at the context's
    precision (tanh-sinh: the integrands are smooth on the domain).
    """
    subs = _substitutions(d)
    exprs = [
        d.q.subs(subs),
        (d.dpsi - d.dpsi.subs(d.beta, BETA0)).subs(subs),
        (1 / d.h).subs(subs),
    ]
    what = f"q, q', q'' for β = {d.expression}"
    integrals = sorted({i for e in exprs for i in e.atoms(sp.Integral)}, key=sp.default_sort_key)
    if not integrals:
        fn: Callable[..., tuple[Any, Any, Any]] = _compile("bias_q", [d.beta], exprs, what)
        return fn
    slots = [sp.Symbol(f"integral_{k}", real=True) for k in range(len(integrals))]
    outer = _compile(
        "bias_q",
        [d.beta, *slots],
        [e.xreplace(dict(zip(integrals, slots, strict=True))) for e in exprs],
        what,
    )
    parts = []
    for k, integral in enumerate(integrals):
        (var, a, b), integrand = integral.limits[0], integral.function
        parts.append(
            (
                _compile(f"bias_integrand_{k}", [var], [integrand], what),
                _compile(f"bias_limits_{k}", [d.beta], [a, b], what),
            )
        )

    def with_quadrature(ctx: EngineContext, beta: Num) -> tuple[Num, Num, Num]:
        values = []
        for integrand_fn, limits_fn in parts:
            a, b = limits_fn(ctx, beta)
            values.append(ctx.quad(lambda t, f=integrand_fn: f(ctx, t)[0], [a, b]))
        result: tuple[Num, Num, Num] = outer(ctx, beta, *values)
        return result

    return with_quadrature


def domain_bounds(d: BiasDerivation) -> tuple[float, float]:
    """The domain as float ends `(lo, hi)`; ±inf where open-ended or implicit."""
    dom = d.domain
    if isinstance(dom, sp.Interval):
        return float(dom.start), float(dom.end)
    return -math.inf, math.inf  # Reals, or a ConditionSet: every evaluation is guarded instead


def _as_data(X: Num, y: Num) -> tuple[np.ndarray, np.ndarray]:
    try:
        Xa = np.array(X, dtype=float)
        ya = np.array(y, dtype=float)
    except (TypeError, ValueError) as e:
        raise InvalidArgument(f"X and y must be float arrays: {e}") from None
    if Xa.ndim != 2 or ya.ndim != 1 or Xa.shape[0] != ya.shape[0] or Xa.shape[0] == 0:
        raise InvalidArgument(
            f"expected X of shape (N, d) and y of shape (N,), got X{Xa.shape} and y{ya.shape}."
        )
    if not (np.isfinite(Xa).all() and np.isfinite(ya).all()):
        raise InvalidArgument("X and y must be finite.")
    n, dim = Xa.shape
    if np.linalg.matrix_rank(Xa) < n:
        raise InvalidArgument(
            f"X ({n}×{dim}) must have full row rank N={n} (N ≤ d, independent rows) so that "
            "the interpolating set {Xβ = y} is non-empty for every y."
        )
    return Xa, ya


# ---------------------------------------------------------------------------------------------
# phase 1: an interior interpolating point
# ---------------------------------------------------------------------------------------------


def _nnls(A: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lawson–Hanson: `argmin ‖At - b‖` over `t ≥ 0`; returns (t, residual b - At)."""
    m, n = A.shape
    t = np.zeros(n)
    passive = np.zeros(n, dtype=bool)
    tol = 10 * np.finfo(float).eps * np.linalg.norm(A, 1) * max(m, n)
    for _ in range(3 * n):
        w = A.T @ (b - A @ t)
        candidates = np.where(~passive, w, -np.inf)
        j = int(np.argmax(candidates))
        if passive.all() or candidates[j] <= tol:
            break
        passive[j] = True
        for _ in range(3 * n):
            z = np.zeros(n)
            z[passive] = np.linalg.lstsq(A[:, passive], b, rcond=None)[0]
            if (z[passive] > 0).all():
                t = z
                break
            bad = passive & (z <= 0)
            alpha = np.min(t[bad] / (t[bad] - z[bad]))
            t = t + alpha * (z - t)
            passive &= t > tol
            t[~passive] = 0.0
    return t, b - A @ t


def minimum_norm_interpolant(X: Num, y: Num) -> np.ndarray:
    """The ℓ2 minimum-norm interpolant `Xᵀ(XXᵀ)⁻¹y` (the negative control), float64."""
    Xa, ya = _as_data(X, y)
    return np.asarray(Xa.T @ np.linalg.solve(Xa @ Xa.T, ya))


def _interior_point(X: np.ndarray, y: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """A point of `{Xβ = y}` strictly inside `(lo, hi)^d`, or NoReachableInterpolant."""
    n, dim = X.shape
    if lo == -math.inf and hi == math.inf:
        return np.asarray(X.T @ np.linalg.solve(X @ X.T, y))
    ones = np.ones(dim)
    if hi == math.inf:  # β = lo + t
        A, b, base, sign = X, y - lo * (X @ ones), lo, 1.0
    elif lo == -math.inf:  # β = hi - t
        A, b, base, sign = -X, y - hi * (X @ ones), hi, -1.0
    else:  # β = lo + t, t + s = hi - lo
        A = np.block([[X, np.zeros((n, dim))], [np.eye(dim), np.eye(dim)]])
        b = np.concatenate([y - lo * (X @ ones), (hi - lo) * ones])
        base, sign = lo, 1.0
    scale = max(1.0, float(np.linalg.norm(b)))
    t, r = _nnls(A, b)
    if np.linalg.norm(r) > 1e-9 * scale:
        cert = float(r @ b) / scale**2
        raise NoReachableInterpolant(
            f"no interpolating point lies in the domain {(lo, hi)} that the flow cannot leave: "
            f"the closest point of the closed domain misses y by ‖Xβ - y‖ = "
            f"{np.linalg.norm(r):.3g} (Farkas certificate yᵀr/‖y‖² = {cert:.3g} > 0 with "
            "Xᵀr ≤ 0 in the shifted variables). Gradient flow cannot interpolate; use fewer "
            "samples (N < d/2 makes this unlikely for Gaussian X) or another parametrization."
        )
    width = (hi - lo) if math.isfinite(hi - lo) else 1.0
    for margin in (0.25, 1e-2, 1e-4, 1e-6, 1e-9):
        eps = margin * width
        shifted = b - eps * (A @ np.ones(A.shape[1]))
        t, r = _nnls(A, shifted)
        if np.linalg.norm(r) <= 1e-9 * scale:
            beta = base + sign * (eps + t[:dim])
            # One projection back onto {Xβ = y} (NNLS solves to ~1e-12 relative).
            beta = beta - X.T @ np.linalg.solve(X @ X.T, X @ beta - y)
            if np.all(beta > lo) and np.all(beta < hi):
                return beta
    raise NoReachableInterpolant(
        f"the interpolating set touches the domain {(lo, hi)} only on its boundary (no point "
        "with a margin of 1e-9): gradient flow cannot interpolate from inside."
    )


# ---------------------------------------------------------------------------------------------
# phase 2: float64 Newton on Q
# ---------------------------------------------------------------------------------------------


def float_functions(d: BiasDerivation) -> Callable[[np.ndarray], tuple[np.ndarray, ...]]:
    """Vectorised float64 `(q, q', 1/h)`: numpy code, or mpmath at 15 digits for quadratures."""
    subs = _substitutions(d)
    exprs = [
        d.q.subs(subs),
        (d.dpsi - d.dpsi.subs(d.beta, BETA0)).subs(subs),
        (1 / d.h).subs(subs),
    ]
    if not any(e.has(sp.Integral, sp.LambertW) for e in exprs):
        fn = compile_function("bias_q_float", [d.beta], exprs, arrays=True)

        def vectorised(beta: np.ndarray) -> tuple[np.ndarray, ...]:
            with np.errstate(all="ignore"):  # outside the domain: nan, rejected by the caller
                out = fn(NUMPY, beta)
            return tuple(np.broadcast_to(np.asarray(v, dtype=float), beta.shape) for v in out)

        return vectorised
    slow = bias_functions(d)
    ctx = mpmath.MPContext()
    ctx.dps = 15

    def pointwise(beta: np.ndarray) -> tuple[np.ndarray, ...]:
        vals = np.full((3, beta.size), np.nan)
        for i, b in enumerate(beta):
            try:
                out = [complex(v) for v in slow(ctx, ctx.mpf(float(b)))]
            except (ValueError, TypeError, ZeroDivisionError, OverflowError):  # pole, complex
                continue
            if all(abs(v.imag) <= 1e-12 * (1 + abs(v.real)) for v in out):
                vals[:, i] = [v.real for v in out]
        return vals[0], vals[1], vals[2]

    return pointwise


def _newton_float(
    fn: Callable[[np.ndarray], tuple[np.ndarray, ...]],
    X: np.ndarray,
    y: np.ndarray,
    beta: np.ndarray,
    lo: float,
    hi: float,
    max_iter: int,
) -> tuple[np.ndarray, np.ndarray, int]:
    lam = np.zeros(X.shape[0])
    q, g, hess = fn(beta)
    if not (np.isfinite(q).all() and np.isfinite(g).all() and np.all(hess > 0)):
        raise NoConvergence(
            "q is undefined or not convex at the starting interpolant; the domain of the "
            "derivation is implicit (a ConditionSet) and no interior start was found."
        )
    for k in range(1, max_iter + 1):
        H = 1.0 / hess
        M = (X * H) @ X.T
        lam = np.linalg.solve(M, X @ (H * g) - (X @ beta - y))
        step = H * (X.T @ lam - g)
        # The Newton decrement ≈ 2(Q - Q*); float64 resolves Q to ~1e-16 relative, and the
        # mpmath phase only needs ~1e-8 in β (quadratic convergence does the rest).
        decrement = float(step @ (hess * step))
        scale = max(1.0, float(np.abs(q).sum()))
        if decrement < 1e-16 * scale:
            return beta, lam, k
        slope = float(g @ step)
        t, Q0 = 1.0, float(q.sum())
        while t > 1e-6:
            trial = beta + t * step
            if np.all(trial > lo) and np.all(trial < hi):
                tq, tg, th = fn(trial)
                if np.isfinite(tq).all() and np.all(th > 0) and tq.sum() <= Q0 + 0.25 * t * slope:
                    break
            t *= 0.5
        else:
            # An ill-conditioned X H Xᵀ limits float64 Newton directions to ~cond·eps; from
            # here the mpmath phase (full steps, quadratic convergence) takes over.
            if decrement < 1e-6 * scale:
                return beta, lam, k
            raise NoConvergence("the float Newton line search stalled; the KKT point is not found.")
        beta, q, g, hess = trial, tq, tg, th
    raise NoConvergence(f"Newton on Q did not converge in {max_iter} iterations.")


# ---------------------------------------------------------------------------------------------
# phase 3: mpmath polish
# ---------------------------------------------------------------------------------------------


def _polish(
    fn: Callable[..., tuple[Num, Num, Num]],
    X: np.ndarray,
    y: np.ndarray,
    beta: np.ndarray,
    lam: np.ndarray,
    dps: int,
) -> tuple[tuple[Num, ...], tuple[Num, ...], Num, int, Num]:
    ctx = mpmath.MPContext()
    ctx.dps = dps + 10  # guard digits for the N×N solve
    n, dim = X.shape
    Xm = [[ctx.mpf(float(v)) for v in row] for row in X]  # floats are exact binary numbers
    ym = [ctx.mpf(float(v)) for v in y]
    b = [ctx.mpf(float(v)) for v in beta]
    lm = [ctx.mpf(float(v)) for v in lam]
    tol = ctx.mpf(10) ** (-dps - 2)
    residual = ctx.inf
    for k in range(1, 13):
        vals = [fn(ctx, bi) for bi in b]
        g = [v[1] for v in vals]
        H = [1 / v[2] for v in vals]
        xtl = [ctx.fdot((Xm[i][j], lm[i]) for i in range(n)) for j in range(dim)]
        rd = [g[j] - xtl[j] for j in range(dim)]
        rp = [ctx.fdot(zip(Xm[i], b, strict=True)) - ym[i] for i in range(n)]
        gscale = max(1, max(abs(v) for v in g))
        yscale = max(1, max(abs(v) for v in ym))
        residual = max(max(abs(v) for v in rd) / gscale, max(abs(v) for v in rp) / yscale)
        if residual < tol:
            return tuple(+v for v in b), tuple(+v for v in lm), residual, k - 1, ctx
        XH = [[Xm[i][j] * H[j] for j in range(dim)] for i in range(n)]
        M = ctx.matrix(n, n)
        for i in range(n):
            for m in range(i, n):
                M[i, m] = M[m, i] = ctx.fdot(zip(XH[i], Xm[m], strict=True))
        rhs = ctx.matrix([ctx.fdot(zip(XH[i], g, strict=True)) - rp[i] for i in range(n)])
        lm = list(ctx.lu_solve(M, rhs))
        xtl = [ctx.fdot((Xm[i][j], lm[i]) for i in range(n)) for j in range(dim)]
        b = [b[j] + H[j] * (xtl[j] - g[j]) for j in range(dim)]
    raise NoConvergence(
        f"the mpmath KKT Newton did not reach 1e-{dps} (residual {ctx.nstr(residual, 3)}); "
        "try a lower dps or check that h is smooth near β̂."
    )


def predicted_limit(
    derivation: BiasDerivation,
    X: Num,
    y: Num,
    *,
    dps: int = 30,
    max_iter: int = 200,
) -> BiasLimit:
    r"""`β̂ = argmin Σ q(β_i)` subject to `Xβ = y`, β in the derivation's domain.

    Args:
      derivation: from `derive_bias`; its initialisation fixes β(0) and the conserved value.
      X: the (N, d) design, float64, full row rank.
      y: the (N,) targets, float64.
      dps: decimal digits of the result. Keyword-only.
      max_iter: iteration cap of the float Newton phase. Keyword-only.

    Returns:
      A `BiasLimit` whose KKT residual is below `10^-dps`.

    Raises:
      NoReachableInterpolant: no interpolating point lies strictly inside the domain.
      NoConvergence: Newton failed (h singular or non-smooth near β̂).

    Example:
      >>> from deqrmt.symbolic._bias import derive_bias
      >>> d = derive_bias("1/(1-w)")
      >>> lim = predicted_limit(d, [[1.0, 1.0]], [2.0])   # symmetric: β̂ = (1, 1)
      >>> [mpmath.nstr(b, 10) for b in lim.beta]
      ['1.0', '1.0']
    """
    if not isinstance(derivation, BiasDerivation):
        raise InvalidArgument(
            f"derivation must be a BiasDerivation, got {type(derivation).__name__}."
        )
    if not isinstance(dps, int) or isinstance(dps, bool) or not 15 <= dps <= 1000:
        raise InvalidArgument(f"dps={dps!r} must be an int in [15, 1000].")
    Xa, ya = _as_data(X, y)
    lo, hi = domain_bounds(derivation)
    fn = bias_functions(derivation)
    start = _interior_point(Xa, ya, lo, hi)
    beta, lam, k_float = _newton_float(float_functions(derivation), Xa, ya, start, lo, hi, max_iter)
    b, lm, residual, k_mp, ctx = _polish(fn, Xa, ya, beta, lam, dps)
    return BiasLimit(
        beta=b,
        multipliers=lm,
        kkt_residual=residual,
        dps=dps,
        iterations=(k_float, k_mp),
        ctx=ctx,
    )


def relative_gap(beta: Sequence[float] | np.ndarray, reference: BiasLimit | np.ndarray) -> float:
    """`‖β - β̂‖ / ‖β̂‖` in float64."""
    ref = reference.as_array() if isinstance(reference, BiasLimit) else np.asarray(reference, float)
    return float(np.linalg.norm(np.asarray(beta, float) - ref) / np.linalg.norm(ref))

"""The explicit network's side of a design: a family's Gaussian moments and the layer recursion.

:class:`FamilyEvaluator` gives the moments of one layer's activation φ(x; θ) at a scale τ, from
the family's closed forms (compiled by the one printer) or by panel quadrature split at the
kinks; :func:`enn_values` runs the derived layer recursion (ICML 2024, Theorem 3;
:func:`deqrmt.symbolic.derive_layer`) through L layers; :func:`estimate_work` says what a design
typically spends, in the work units of :mod:`._design_search`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import mpmath
import sympy as sp

from ..symbolic import FAMILY_MOMENTS, TAU, Family, X
from ._context import EngineContext, Num
from ._deq_formulas import layer_formulas
from ._design_search import CLOSED_UNITS, FLOAT_UNIT, SearchBudget, precision_factor
from ._explicit import LAYER_KEYS
from ._fixed_point import center_moments
from ._float_context import FLOAT
from ._printer import compile_function
from ._quadrature import panels

__all__ = ["MAX_QUADRATURE_TAU", "FamilyEvaluator", "enn_values", "estimate_work"]


#: largest layer scale τ at which a family's moments are taken by quadrature (the accepted τ0
#: goes to 100; a matched layer has τ of order one)
MAX_QUADRATURE_TAU = 150


class FamilyEvaluator:
    """Moments of the family at (τ, θ): compiled closed forms, or panel quadrature.

    Every evaluation is charged to ``budget`` (work units, :mod:`._design_search`); the last
    few are remembered, so a Jacobian column that moves only a later layer's parameters does
    not recompute the earlier layers (the same numbers, computed once).
    """

    def __init__(self, fam: Family, budget: SearchBudget | None = None) -> None:
        self.fam = fam
        self.budget = budget if budget is not None else SearchBudget(math.inf)
        closed = fam.closed_moments
        args = [TAU, *fam.params]
        self.closed = (
            compile_function("family_moments", args, [closed[n] for n in FAMILY_MOMENTS])
            if closed is not None
            else None
        )
        self.pieces = [
            compile_function("fam_piece", [X, *fam.params], [p.expr, sp.diff(p.expr, X)])
            for p in fam.pieces
        ]
        self.kinks = [compile_function("fam_kink", list(fam.params), [k]) for k in fam.kinks]
        self._memo: dict[tuple[Any, ...], dict[str, Any]] = {}

    def nodes(self, ctx: EngineContext, tau: Num, theta: Sequence[Num]) -> int:
        """Quadrature nodes of one evaluation (0 for closed forms)."""
        if self.closed is not None:
            return 0
        kinks = [k(ctx, *theta)[0] for k in self.kinks]
        return sum(len(p.nodes) for p in panels(ctx, tau, kinks, ctx.dps))

    def __call__(self, ctx: EngineContext, tau: Num, theta: Sequence[Num]) -> dict[str, Num]:
        key = (id(ctx), ctx.prec, tau, *theta)
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        out = self._evaluate(ctx, tau, theta)
        if len(self._memo) >= 64:
            self._memo.clear()
        self._memo[key] = out
        return out

    def _evaluate(self, ctx: EngineContext, tau: Num, theta: Sequence[Num]) -> dict[str, Num]:
        unit = FLOAT_UNIT if isinstance(ctx, mpmath.ctx_fp.FPContext) else precision_factor(ctx)
        if self.closed is not None:
            self.budget.spend(unit * CLOSED_UNITS)
            return dict(
                zip(
                    FAMILY_MOMENTS, (ctx.mpf(v) for v in self.closed(ctx, tau, *theta)), strict=True
                )
            )
        if not abs(tau) <= MAX_QUADRATURE_TAU:  # NaN too
            # the panels narrow as 1/τ: a layer scale this far from the O(1) of a solution
            # would cost ~35·τ panels; the trial point is rejected, like a singular one
            raise ValueError(f"layer scale τ = {float(tau):.3g} beyond {MAX_QUADRATURE_TAU}")
        kinks = [k(ctx, *theta)[0] for k in self.kinks]
        a = [ctx.zero] * 3
        b = [ctx.zero] * 3
        c = ctx.zero
        for panel in panels(ctx, tau, kinks, ctx.dps):
            self.budget.spend(unit * len(panel.nodes))
            f = self.pieces[panel.piece]
            for xi, w in zip(panel.nodes, panel.weights, strict=True):
                phi, d = f(ctx, tau * xi, *theta)
                wp = w * phi
                a[0] += wp
                a[1] += wp * xi
                a[2] += wp * xi * xi
                wq = wp * phi
                b[0] += wq
                b[2] += wq * xi * xi
                c += w * d * d
        return {
            "phi": a[0], "d1": a[1] / tau, "d2": (a[2] - a[0]) / tau**2,
            "sq": b[0], "sq2": (b[2] - b[0]) / tau**2, "dsq": c,
        }  # fmt: skip


def enn_values(
    ctx: EngineContext,
    ev: FamilyEvaluator,
    thetas: Sequence[Sequence[Num]],
    tau0: Num,
    input_trainable: bool,
) -> dict[str, Num]:
    formulas = layer_formulas()
    fn, arg_names = formulas.fn, formulas.args
    prev = {
        "tau_prev": tau0, "alpha_1_prev": ctx.one, "alpha_2_prev": ctx.zero, "alpha_3_prev": ctx.zero,
        "alpha_4_prev": ctx.one,
        "beta_1_prev": ctx.one if input_trainable else ctx.zero, "beta_2_prev": ctx.zero,
        "beta_3_prev": ctx.zero, "kappa_prev": tau0 if input_trainable else ctx.zero,
    }  # fmt: skip
    out: dict[str, Num] = {}
    for theta in thetas:
        cm, _ = center_moments(ctx, ev(ctx, prev["tau_prev"], theta))
        vals = fn(ctx, *(dict(cm, **prev)[n] for n in arg_names))
        keys = LAYER_KEYS[:-1]
        out = dict(zip(keys, vals, strict=True))
        prev = {k + "_prev": v for k, v in out.items()}
    return out


def estimate_work(
    ev: FamilyEvaluator,
    ctx: EngineContext,
    dps: int,
    tau0: sp.Rational,
    layers: int,
    npar: int,
    starts: int,
) -> float:
    """Work units a design typically spends (:mod:`._design_search`), from the node counts of
    one evaluation in float64, at the working precision and at the polish's: ~25 float64 LM
    iterations and a few precise steps per start, 12 probes, a polish of ~4 solutions."""
    hi = mpmath.MPContext()
    hi.dps = dps + 25
    theta = [1] * npar

    def per_eval(c: Num, unit: float) -> float:
        tau = c.mpf(tau0.p) / tau0.q
        nodes = ev.nodes(c, tau, [c.mpf(t) for t in theta]) if ev.closed is None else CLOSED_UNITS
        return layers * unit * nodes * precision_factor(c)

    e_fp, e_mp, e_hi = per_eval(FLOAT, FLOAT_UNIT), per_eval(ctx, 1.0), per_eval(hi, 1.0)
    free = layers * npar
    runs = min(starts, 4) + (starts if starts > 4 else 0)
    per_start = 25 * (2 * free + 1) * e_fp + (2 * free + 5) * e_mp
    return runs * per_start + 12 * e_mp + 4 * (2 * free + 4) * e_hi

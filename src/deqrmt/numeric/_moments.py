"""Evaluate an activation's Gaussian moments at a scale τ, in any mpmath context.

Closed forms are compiled once to context-generic code.  The rest share one quadrature pass:
φ (and φ' when needed) is evaluated once per node, and every weighted moment is accumulated
from those values.  Cancellation is measured (Σ|w f| beside Σ w f), so a moment that is zero
to working precision comes back as an exact zero instead of as noise.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable

import sympy as sp

from .._arguments import show
from .._errors import ActivationError, BudgetExceeded, InvalidArgument, PrecisionLoss
from ..symbolic import MOMENTS, TAU, XI, Activation, MomentSet, X, moment_set
from ._context import EngineContext, Num
from ._printer import compile_function
from ._quadrature import panels, pole_distance

__all__ = ["MomentEvaluator", "evaluator_for", "MAX_DPS_QUADRATURE", "MAX_DIGITS_VERIFIED"]

#: The most digits of the *verified* quadrature (two mpmath evaluations: ``certify=False``, or
#: an activation outside the Arb enclosure rules); the certified path goes further, as far as
#: :func:`._precision_cost.precision_cost` admits.
MAX_DPS_QUADRATURE = 150
#: The most digits the mpmath quadrature is run to: the verified path's cap
#: (:data:`MAX_DPS_QUADRATURE`) and its check run's 20 guard digits, and a margin.
#: Beyond it Gauss–Legendre panels outgrow their node ladder and the time budget (tanh at 500
#: digits: ~4 min for 423 digits); the certified path (``acb.integral``) goes further.
MAX_DIGITS_VERIFIED = MAX_DPS_QUADRATURE + 30


@dataclasses.dataclass(frozen=True)
class MomentValue:
    value: Num
    exact_zero: bool = False


class MomentEvaluator:
    """Callable ``(ctx, tau, names, refine) -> {name: MomentValue}`` for one activation."""

    def __init__(self, mset: MomentSet) -> None:
        self.mset = mset
        act = mset.activation
        self.kinks = act.kinks
        closed = [n for n, m in mset.moments.items() if m.is_closed and not m.zero]
        self.zero = {n for n, m in mset.moments.items() if m.zero}
        self.closed_names = closed
        self._closed_fn = (
            compile_function(
                "closed_moments",
                [TAU],
                [mset.moments[n].closed_form for n in closed],
                doc=f"Closed-form Gaussian moments of {act.name}: {', '.join(closed)}",
            )
            if closed
            else None
        )
        self.open_names = [n for n, m in mset.moments.items() if not m.is_closed]
        # Hermite weights have integer coefficients; keep them as Python ints (exact).
        self._weights = {
            n: tuple(int(c) for c in sp.Poly(mset.moments[n].weight, XI).all_coeffs()[::-1])
            for n in self.open_names
        }
        self._stein = {n: MOMENTS[n][2] for n in self.open_names}
        self._kind = {n: _kind_of(n) for n in self.open_names}
        self._phi = [compile_function("phi_piece", [X], [p.expr]) for p in act.pieces]
        # φ and φ' together: common subexpressions (tanh(x) in tanh') are computed once.
        self._both = [
            compile_function("phi_dphi_piece", [X], [p.expr, d.expr])
            for p, d in zip(act.pieces, act.derivative_pieces, strict=True)
        ]
        self._continuous: bool | None = None
        self.entire = _is_entire(act)
        # steep φ (tanh(30x): poles at ±iπ/60) needs narrower panels than tanh
        self.pole = pole_distance([*(p.expr for p in act.pieces)], X)

    def _check_dsq(self) -> None:
        if self._continuous is None:
            self._continuous = self.mset.activation.is_continuous
        if not self._continuous:
            raise ActivationError(
                f"{self.mset.activation.name} is discontinuous, so E[φ'(τξ)²] diverges (φ' has a "
                "Dirac mass) and the NTK is undefined; the theorems need a Lipschitz φ."
            )

    def __call__(
        self,
        ctx: EngineContext,
        tau: Num,
        names: Iterable[str],
        refine: int = 0,
        digits: float | None = None,
    ) -> dict[str, MomentValue]:
        """Moments ``names`` at scale ``tau``; ``digits`` overrides the context's for quadrature."""
        names = list(names)
        out: dict[str, MomentValue] = {}
        if "dsq" in names:
            self._check_dsq()
        for n in names:
            if n in self.zero:
                out[n] = MomentValue(ctx.zero, True)
        want_closed = [n for n in names if n in self.closed_names]
        if want_closed and self._closed_fn is not None:
            vals = self._closed_fn(ctx, tau)
            for n, v in zip(self.closed_names, vals, strict=True):
                if n in want_closed:
                    out[n] = MomentValue(ctx.mpf(v))
        want_open = [n for n in names if n in self.open_names]
        if want_open:
            try:
                out.update(self._quadrature(ctx, tau, want_open, refine, digits))
            except (OverflowError, ZeroDivisionError) as e:
                raise ActivationError(
                    f"{self.mset.activation.name} overflows at scale τ = {float(tau):.4g} ({e}); its "
                    "Gaussian moments do not exist or are out of range: the theorems need a "
                    "Lipschitz φ."
                ) from None
        return out

    def _quadrature(
        self, ctx: EngineContext, tau: Num, names: list[str], refine: int, digits: float | None
    ) -> dict[str, MomentValue]:
        """One pass over the nodes: power sums Σ w ξ^k φ, Σ w ξ^k φ², Σ w φ'², then Hermite."""
        if digits is None:
            digits = ctx.dps
        if digits > MAX_DIGITS_VERIFIED:
            raise BudgetExceeded(
                f"the verified quadrature (certify=False, or an activation outside the Arb "
                f"enclosure rules) of {self.mset.activation.name} is budgeted to "
                f"dps={MAX_DPS_QUADRATURE} (it was asked for {int(digits)} digits, guard digits "
                f"included; docs/limits.md); ask for dps={MAX_DPS_QUADRATURE} or fewer, or drop "
                "certify=False where the activation allows a proof."
            )
        phi_pow = max(
            (len(self._weights[n]) - 1 for n in names if self._kind[n] == "phi"), default=-1
        )
        sq_pow = max(
            (len(self._weights[n]) - 1 for n in names if self._kind[n] == "sq"), default=-1
        )
        # E[φ'²] and, for the sensitivities, E[(φ'²)''] (a Hermite weight on φ'²)
        d_pow = max(
            (len(self._weights[n]) - 1 for n in names if self._kind[n] == "dsq"), default=-1
        )
        need_d = d_pow >= 0
        a = [ctx.zero] * (phi_pow + 1)
        b = [ctx.zero] * (sq_pow + 1)
        c = [ctx.zero] * (d_pow + 1)
        mag_c = ctx.zero
        mag_a = ctx.zero
        mag_b = ctx.zero
        fns = self._both if need_d else self._phi
        mp_ctx = hasattr(ctx, "workdps")
        for panel in panels(ctx, tau, self.kinks, digits, refine, self.entire, self.pole):
            f = fns[panel.piece]
            if mp_ctx and panel.digits < digits:
                # Far in the tails e^{-ξ²/2} absorbs most digits: evaluate φ there at the
                # precision the panel needs (special functions cost grows with precision).
                with ctx.workdps(max(int(panel.digits), 10)):
                    values = [f(ctx, tau * xi) for xi in panel.nodes]
            else:
                values = [f(ctx, tau * xi) for xi in panel.nodes]
            for xi, w, vals in zip(panel.nodes, panel.weights, values, strict=True):
                phi = vals[0]
                wp = w * phi
                if phi_pow >= 0:
                    t = wp
                    a[0] += t
                    for k in range(1, phi_pow + 1):
                        t *= xi
                        a[k] += t
                    u = 1 + xi * xi
                    mag_a += abs(wp) * u * u
                if sq_pow >= 0:
                    t = wp * phi
                    b[0] += t
                    mag_b += t
                    for k in range(1, sq_pow + 1):
                        t *= xi
                        b[k] += t
                if need_d:
                    d = vals[1]
                    t = w * d * d
                    c[0] += t
                    if d_pow:
                        mag_c += t * (1 + xi * xi) ** d_pow
                    for k in range(1, d_pow + 1):
                        t *= xi
                        c[k] += t
        out = {}
        for n in names:
            kind = self._kind[n]
            coeffs = self._weights[n]
            if kind == "dsq" and len(coeffs) == 1:
                s, mag = c[0], abs(c[0])
            elif kind == "dsq":
                s = sum((cf * c[k] for k, cf in enumerate(coeffs) if cf), ctx.zero)
                mag = mag_c * (1 + 6 * len(coeffs))
            else:
                sums = a if kind == "phi" else b
                s = sum((cf * sums[k] for k, cf in enumerate(coeffs) if cf), ctx.zero)
                mag = mag_a * 3 if kind == "phi" else mag_b * (1 + 6 * len(coeffs))
            if isinstance(s, complex) or (hasattr(ctx, "mpc") and isinstance(s, ctx.mpc)):
                raise ActivationError(
                    f"{self.mset.activation.name} is not real-valued on the whole real line "
                    "(e.g. log or sqrt of a negative number); give an activation defined for all x."
                )
            if ctx.isinf(s) or ctx.isnan(s):
                raise PrecisionLoss(
                    f"{self.mset.moments[n].label} is not finite at τ = {ctx.nstr(tau, 8)}; "
                    "the activation overflows or is singular on the real line."
                )
            if mag == 0 or abs(s) <= mag * ctx.mpf(10) ** (-(digits - 3)):
                out[n] = MomentValue(ctx.zero, True)
            else:
                out[n] = MomentValue(s / tau ** self._stein[n])
        return out


_ENTIRE_FUNCTIONS = (sp.exp, sp.erf, sp.erfc, sp.sin, sp.cos, sp.sinh, sp.cosh)


def _is_entire(act: Activation) -> bool:
    """Every piece is built from polynomials, exp, erf, sin, cos: no complex singularity."""
    for p in act.pieces:
        e = p.expr
        for f in e.atoms(sp.Function):
            if not isinstance(f, _ENTIRE_FUNCTIONS):
                return False
        for pw in e.atoms(sp.Pow):
            base, ex = pw.as_base_exp()
            if base.has(X) and not (ex.is_Integer and ex >= 0):
                return False
    return True


def _kind_of(name: str) -> str:
    """What moment ``name`` integrates: ``phi``, ``sq`` (φ²) or ``dsq`` (φ'²)."""
    return MOMENTS[name][1]


def evaluator_for(act: Activation) -> MomentEvaluator:
    """The (cached) evaluator of every moment of ``act`` (an :class:`Activation`)."""
    if not isinstance(act, Activation):
        raise InvalidArgument(
            f"act={show(act)}: expected an Activation (deqrmt.symbolic.get_activation('tanh')), "
            f"got {type(act).__name__}."
        )
    return _evaluator_for(act)


@functools.lru_cache(maxsize=64)
def _evaluator_for(act: Activation) -> MomentEvaluator:
    return MomentEvaluator(moment_set(act))

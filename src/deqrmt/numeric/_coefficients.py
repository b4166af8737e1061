r"""The DEQ and explicit-network coefficients, evaluated to verified digits.

DEQ (ICML 2024, Theorems 1–2).  With q = τ², the centered fixed-point map is

    F(q) = σ_a² Var[φ(√q ξ)] + σ_b² τ0²,   F'(q) = (σ_a²/2) E[(φ_c²)''(√q ξ)],

with φ_c = φ − E[φ(τ*ξ)] (the constant and τ* are solved together).  The DEQ's own iteration,
started from z = 0 (q₀ = σ_b² τ0²), is a Picard iteration of F; it is run in float64 with a
safeguarded Newton step, so it lands on the *attracting* root, and then polished by Newton at
the working precision.  The coefficient formulas are the ones :func:`deqrmt.symbolic.derive_deq`
derives, compiled to context-generic code.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import mpmath
import sympy as sp

from .._errors import CenteringError, ContractionError, InvalidArgument, NoConvergence
from ..symbolic import (
    SIGMA_A2,
    SIGMA_B2,
    TAU0,
    Activation,
    derive_deq,
    derive_layer,
    get_activation,
)
from ._moments import MomentValue, evaluator_for
from ._printer import compile_function
from ._verify import Verified, to_rational, verify

__all__ = [
    "DEQCoefficients",
    "ExplicitCoefficients",
    "deq_coefficients",
    "explicit_coefficients",
    "DEQ_KEYS",
    "LAYER_KEYS",
    "MOMENT_KEYS",
]

DEQ_KEYS = (
    "tau_star", "gamma_star", "alpha_1", "alpha_2", "alpha_3", "alpha_4",
    "beta_1", "beta_2", "beta_3", "kappa_star", "center",
)  # fmt: skip
LAYER_KEYS = (
    "tau", "alpha_1", "alpha_2", "alpha_3", "alpha_4", "beta_1", "beta_2", "beta_3", "kappa", "center",
)  # fmt: skip
#: what the compiled DEQ formulas return, in order (τ* comes from the solve, c from centering)
_FORMULA_KEYS = DEQ_KEYS[1:-1]
#: JSON name → internal moment of the centered φ at τ*.
MOMENT_KEYS = {
    "E_phi_prime": "d1",
    "E_phi_second": "d2",
    "E_phi_prime_sq": "dsq",
    "E_phi_sq_second": "sq2",
}
_GUARD_WORK, _GUARD_CHECK = 5, 20


# ---------------------------------------------------------------------------
# Compiled formulas
# ---------------------------------------------------------------------------


@functools.lru_cache(maxsize=8)
def _deq_function(
    trainable: tuple[str, ...] = ("a", "A"),
) -> tuple[Callable[..., tuple[Any, ...]], list[str]]:
    f = derive_deq(trainable=trainable)
    exprs = f.as_dict()
    names = f.m.names()
    args = sorted(set().union(*(e.free_symbols for e in exprs.values())), key=str)
    arg_names = [names.get(a, str(a)) for a in args]
    fn = compile_function(
        "deq_coefficients", args, list(exprs.values()), doc="Derived DEQ CK/NTK coefficients."
    )
    return fn, arg_names


@functools.lru_cache(maxsize=2)
def _layer_function() -> tuple[Callable[..., tuple[Any, ...]], list[str]]:
    f = derive_layer()
    exprs = [sp.sqrt(f.tau_sq), *f.alpha, *f.beta, sp.sqrt(f.kappa_sq)]
    names = f.m.names()
    inverse_prev = {v: k + "_prev" for k, v in f.prev.items()}
    args = sorted(set().union(*(e.free_symbols for e in exprs)), key=str)
    arg_names = [names.get(a, inverse_prev.get(a, str(a))) for a in args]
    fn = compile_function(
        "layer_coefficients", args, exprs, doc="Derived explicit-layer recursion."
    )
    return fn, arg_names


def _centered_moments(raw: Mapping[str, MomentValue], ctx: Any) -> dict[str, Any]:
    """Moments of φ_c = φ − c with c = E[φ]: only the ones with φ² change."""
    c = raw["phi"].value
    out = {k: v.value for k, v in raw.items()}
    out["phi"] = ctx.zero
    if "sq" in raw:
        out["sq"] = raw["sq"].value - c * c
    if "sq2" in raw:
        out["sq2"] = raw["sq2"].value - 2 * c * raw["d2"].value
    return out


# ---------------------------------------------------------------------------
# DEQ
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class DEQCoefficients:
    """τ*, γ*, α*₁..₄, β*₁..₃, κ* and the centering constant, each with its verified digits.

    ``values``/``moments`` map the JSON names to :class:`Verified` numbers.  ``notes`` carries
    caveats that are not errors (e.g. a second, repelling fixed point).
    """

    activation: Activation
    sigma_a2: sp.Rational
    sigma_b2: sp.Rational
    tau0: sp.Rational
    dps: int
    centered: bool
    values: Mapping[str, Verified]
    moments: Mapping[str, Verified]
    other_fixed_points: tuple[float, ...] = ()
    notes: tuple[str, ...] = ()
    trainable: tuple[str, ...] = ("a", "A")

    def __getattr__(self, name: str) -> Any:
        values = object.__getattribute__(self, "values")
        if name in values:
            return values[name].value
        raise AttributeError(name)

    @property
    def center(self) -> Any:
        return self.values["center"].value

    def as_floats(self) -> dict[str, float]:
        return {k: float(v.value) for k, v in self.values.items()}

    def moments_as_floats(self) -> dict[str, float]:
        return {k: float(v.value) for k, v in self.moments.items()}

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "activation": self.activation.name,
            "expression": str(self.activation.expr),
            "sigma_a2": str(self.sigma_a2),
            "sigma_b2": str(self.sigma_b2),
            "tau0": str(self.tau0),
            "dps": self.dps,
            "centered": self.centered,
            "trainable": list(self.trainable),
        }
        out.update({k: self.values[k].text for k in DEQ_KEYS})
        out["moments"] = {k: v.text for k, v in self.moments.items()}
        out["digits"] = {k: v.digits for k, v in self.values.items()}
        out["other_fixed_points"] = [repr(q) for q in self.other_fixed_points]
        out["notes"] = list(self.notes)
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)


def _fp_fixed_point(ev: Any, sa2: float, sb2t0: float, center: bool) -> tuple[float, float]:
    """Float64 Picard iteration (the DEQ's own) with a safeguarded Newton step: (q*, F'(q*))."""
    fp = mpmath.fp
    q = sb2t0
    q_cap = 1e10 * max(1.0, sb2t0)
    reason = "did not settle in 2000 iterations (it oscillates or creeps)"
    for _ in range(2000):
        m = ev(fp, math.sqrt(q), ("phi", "sq", "sq2", "d2"))
        c = float(m["phi"].value) if center else 0.0
        var = float(m["sq"].value) - c * c
        f = sa2 * var + sb2t0
        fprime = sa2 / 2 * (float(m["sq2"].value) - 2 * c * float(m["d2"].value))
        h = f - q
        if not math.isfinite(f):
            reason = f"overflowed at τ² ≈ {q:.3g}"
            break
        if abs(h) <= 1e-14 * q:
            return q, fprime
        step = h  # Picard
        if fprime < 1:
            newton = h / (1 - fprime)
            if abs(newton) <= 8 * abs(h) + 1e-300:
                step = newton
        q_new = q + step
        if q_new <= 0:
            q_new = q / 2
        if q_new > q_cap or not math.isfinite(q_new):
            reason = f"diverges (τ² passed {q_cap:.3g})"
            break
        q = q_new
    raise ContractionError(
        "the DEQ's fixed-point iteration τ² ← σ_a² E[φ²(τξ)] + σ_b² τ0², started from z = 0, "
        f"{reason}: no attracting fixed point for σ_a² = {sa2:g}; reduce --sigma-a2 "
        "(the map must contract: σ_a² E[(φ²)'']/2 < 1)."
    )


def _scan_other_roots(
    ev: Any, sa2: float, sb2t0: float, center: bool, q_star: float
) -> list[float]:
    """Sign changes of F(q) − q on a log grid away from q* (float64, coarse): other fixed points."""
    fp = mpmath.fp
    roots = []
    # Coarse on purpose (float64, a 10^(1/6) grid over five decades): this only looks for the
    # existence of another root, which the note reports; the reported τ* never comes from here.
    grid = [q_star * 10 ** (k / 6) for k in range(-12, 19) if k != 0]

    def h_of(q: float, digits: int) -> float:
        m = ev(fp, math.sqrt(q), ("phi", "sq"), digits=digits)
        c = float(m["phi"].value) if center else 0.0
        return sa2 * (float(m["sq"].value) - c * c) + sb2t0 - q

    prev = None
    for q in grid:
        try:
            h = h_of(q, 6)
        except (OverflowError, ValueError, ZeroDivisionError, ArithmeticError):
            break  # overflow far out: stop scanning, nothing to report there
        if not math.isfinite(h):
            break
        if prev is not None and (prev[1] > 0) != (h > 0) and not (prev[0] < q_star < q):
            lo, hi, h_lo = prev[0], q, prev[1]
            for _ in range(40):  # bisection: the note's digits must be right too
                mid = math.sqrt(lo * hi)
                h_mid = h_of(mid, 12)
                if (h_mid > 0) == (h_lo > 0):
                    lo, h_lo = mid, h_mid
                else:
                    hi = mid
            roots.append(math.sqrt(lo * hi))
        prev = (q, h)
    return roots


def _deq_run(
    act: Activation,
    sa2: sp.Rational,
    sb2: sp.Rational,
    tau0: sp.Rational,
    dps: int,
    refine: int,
    q_start: Any,
    center: bool,
    trainable: tuple[str, ...] = ("a", "A"),
) -> tuple[dict[str, Any], dict[str, Any], set[str]]:
    ctx = mpmath.MPContext()
    ctx.dps = dps
    ev = evaluator_for(act)
    a2, b2, t0 = (ctx.mpf(int(v.p)) / int(v.q) for v in (sa2, sb2, tau0))
    q = ctx.mpf(q_start)
    tol = ctx.mpf(10) ** (-(dps - 2))
    # Newton squares the error: once a step is below √tol, the iterate after it is converged.
    small = ctx.sqrt(tol) / 100
    for _ in range(30):
        m = ev(ctx, ctx.sqrt(q), ("phi", "sq", "sq2", "d2"), refine)
        c = m["phi"].value if center else ctx.zero
        f = a2 * (m["sq"].value - c * c) + b2 * t0 * t0
        fprime = a2 / 2 * (m["sq2"].value - 2 * c * m["d2"].value)
        dq = (f - q) / (1 - fprime)
        q += dq
        if abs(dq) <= small * q:
            break
    else:
        raise NoConvergence(f"Newton on τ*² did not converge at {dps} digits; try a smaller --dps.")
    tau = ctx.sqrt(q)
    raw = ev(ctx, tau, ("phi", "d1", "d2", "sq", "sq2", "dsq"), refine)
    if not center and not raw["phi"].exact_zero:
        raise CenteringError(
            f"--no-center: E[φ(τ*ξ)] = {ctx.nstr(raw['phi'].value, 12)} ≠ 0 at τ* = "
            f"{ctx.nstr(tau, 12)}, but Theorems 1–2 assume a centered activation; drop "
            "--no-center to center φ at its own fixed point."
        )
    cm = _centered_moments(raw, ctx) if center else {k: v.value for k, v in raw.items()}
    fprime = a2 / 2 * cm["sq2"]
    if fprime >= 1:
        raise ContractionError(
            f"σ_a² E[(φ²)''(τ*ξ)]/2 = {ctx.nstr(fprime, 8)} ≥ 1: the fixed point is not attracting; "
            "reduce --sigma-a2."
        )
    if a2 * cm["dsq"] >= 1:
        raise ContractionError(
            f"σ_a² E[φ'(τ*ξ)²] = {ctx.nstr(a2 * cm['dsq'], 8)} ≥ 1: the NTK fixed point "
            f"K* = G*/(1 − Ġ*) diverges; choose --sigma-a2 < {ctx.nstr(1 / cm['dsq'], 8)}."
        )
    fn, arg_names = _deq_function(trainable)
    env = dict(cm, sigma_a2=a2, sigma_b2=b2, tau_0=t0)
    vals = fn(ctx, *(env[n] for n in arg_names))
    keys = _FORMULA_KEYS
    out = {"tau_star": tau, **dict(zip(keys, vals, strict=True))}
    out["center"] = raw["phi"].value if center else ctx.zero
    zeros = {k for k, v in raw.items() if v.exact_zero}
    moments = {j: cm[i] for j, i in MOMENT_KEYS.items()}
    return out, moments, zeros


def deq_coefficients(
    activation: str | Activation,
    sigma_a2: Any = "0.2",
    sigma_b2: Any = None,
    tau0: Any = 1,
    dps: int = 30,
    *,
    center: bool = True,
    trainable: Sequence[str] = ("a", "A"),
) -> DEQCoefficients:
    r"""Coefficients of the DEQ z = φ(σ_a A z + σ_b B x)/√m, to ``dps`` verified digits.

    Args:
      activation: library name, ``name(params)`` or an expression in ``x``.
      sigma_a2, sigma_b2, tau0: exact numbers (decimal strings, ints, Fractions); σ_b² defaults
        to 1 − σ_a².
      dps: significant digits wanted.
      center: center φ at its own fixed point (default); False checks E[φ(τ*ξ)] = 0 instead.
      trainable: the parameters of f(x) = aᵀz* the NTK (β*, κ*) is taken over; the default
        (a, A) is the paper's K* = G*/(1 − Ġ*).  Any non-empty subset of (a, A, B).

    Raises:
      ContractionError: σ_a² outside the region of a unique attracting fixed point.
      CenteringError: ``center=False`` and E[φ(τ*ξ)] ≠ 0.
      PrecisionLoss: fewer than 10 digits agree between the two evaluations.

    Example:
      >>> deq_coefficients("relu", dps=12).values["alpha_1"].text   # doctest: +SKIP
    """
    act = get_activation(activation)
    sa2 = to_rational(sigma_a2, "sigma_a2")
    sb2 = 1 - sa2 if sigma_b2 is None else to_rational(sigma_b2, "sigma_b2")
    t0 = to_rational(tau0, "tau0")
    if not isinstance(dps, int) or not 5 <= dps <= 1000:
        raise InvalidArgument(f"dps must be an integer in [5, 1000], got {dps!r}.")
    if sa2 <= 0:
        raise InvalidArgument(f"sigma_a2 must be > 0, got {sa2}.")
    if sb2 <= 0:
        raise InvalidArgument(
            f"sigma_b2 must be > 0 (got {sb2}); with the default σ_b² = 1 − σ_a² this needs σ_a² < 1."
        )
    if t0 <= 0:
        raise InvalidArgument(f"tau0 must be > 0, got {t0}.")
    if not trainable or not set(trainable) <= {"a", "A", "B"}:
        raise InvalidArgument(
            f"trainable must be a non-empty subset of a, A, B; got {trainable!r}."
        )
    train = tuple(sorted(set(trainable), key="aAB".index))
    ev = evaluator_for(act)
    sb2t0 = float(sb2 * t0**2)
    q_fp, _ = _fp_fixed_point(ev, float(sa2), sb2t0, center)
    work, mom_w, zeros = _deq_run(act, sa2, sb2, t0, dps + _GUARD_WORK, 0, q_fp, center, train)
    # The check starts from the working τ*²: it saves Newton steps, and the check's own
    # fixed point is still found by its own (finer) rule.
    check, mom_c, _ = _deq_run(
        act, sa2, sb2, t0, dps + _GUARD_CHECK, 1, work["tau_star"] ** 2, center, train
    )
    values = {k: verify(k, work[k], check[k], dps) for k in DEQ_KEYS}
    moments = {k: verify(k, mom_w[k], mom_c[k], dps) for k in MOMENT_KEYS}
    others = tuple(_scan_other_roots(ev, float(sa2), sb2t0, center, q_fp))
    notes = tuple(
        f"another fixed point τ ≈ {math.sqrt(q):.6g} exists (repelling or not reached from z = 0); "
        f"reported: the attracting τ* ≈ {math.sqrt(q_fp):.6g} that the DEQ's iteration reaches."
        for q in others
    )
    del zeros
    return DEQCoefficients(
        act,
        sa2,
        sb2,
        t0,
        dps,
        center,
        values,
        moments,
        tuple(math.sqrt(q) for q in others),
        notes,
        train,
    )


# ---------------------------------------------------------------------------
# Explicit network
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ExplicitCoefficients:
    """Per-layer τ̃_l, α̃_{l,1..4}, β̃_{l,1..3}, κ̃_l and centering constants (Theorem 3)."""

    activations: tuple[Activation, ...]
    tau0: sp.Rational
    dps: int
    centered: bool
    layers: tuple[Mapping[str, Verified], ...]

    def as_floats(self) -> list[dict[str, float]]:
        return [{k: float(v.value) for k, v in layer.items()} for layer in self.layers]

    def to_dict(self) -> dict[str, Any]:
        return {
            "activations": [a.name for a in self.activations],
            "tau0": str(self.tau0),
            "dps": self.dps,
            "centered": self.centered,
            "layers": [{k: layer[k].text for k in LAYER_KEYS} for layer in self.layers],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)


def _explicit_run(
    acts: Sequence[Activation],
    tau0: sp.Rational,
    dps: int,
    refine: int,
    center: bool,
    input_trainable: bool = True,
) -> list[dict[str, Any]]:
    ctx = mpmath.MPContext()
    ctx.dps = dps
    fn, arg_names = _layer_function()
    t0 = ctx.mpf(int(tau0.p)) / int(tau0.q)
    prev = {
        "tau_prev": t0, "alpha_1_prev": ctx.one, "alpha_2_prev": ctx.zero, "alpha_3_prev": ctx.zero,
        "alpha_4_prev": ctx.one, "beta_1_prev": ctx.one if input_trainable else ctx.zero,
        "beta_2_prev": ctx.zero, "beta_3_prev": ctx.zero,
        "kappa_prev": t0 if input_trainable else ctx.zero,
    }  # fmt: skip
    layers = []
    for l, act in enumerate(acts, start=1):
        raw = evaluator_for(act)(
            ctx, prev["tau_prev"], ("phi", "d1", "d2", "sq", "sq2", "dsq"), refine
        )
        if not center and not raw["phi"].exact_zero:
            raise CenteringError(
                f"--no-center: layer {l} ({act.name}) has E[σ(τ̃ξ)] = {ctx.nstr(raw['phi'].value, 12)} "
                "≠ 0 at its input scale; Theorem 3 assumes centered activations. Drop --no-center."
            )
        cm = _centered_moments(raw, ctx) if center else {k: v.value for k, v in raw.items()}
        vals = fn(ctx, *(dict(cm, **prev)[n] for n in arg_names))
        layer = dict(zip(LAYER_KEYS[:-1], vals, strict=True))
        layer["center"] = raw["phi"].value if center else ctx.zero
        layers.append(layer)
        prev = {k + "_prev": v for k, v in layer.items() if k != "center"}
    return layers


def explicit_coefficients(
    activations: Sequence[str | Activation],
    tau0: Any = 1,
    dps: int = 30,
    *,
    center: bool = True,
    input_layer_trainable: bool = True,
) -> ExplicitCoefficients:
    """Coefficients of x^{(l)} = σ_l(W_l x^{(l−1)})/√m, l = 1..L, to ``dps`` verified digits.

    Each σ_l is centered at its own input scale τ̃_{l−1} unless ``center=False``.  The NTK
    (β̃, κ̃) is over every layer's weights, or over all but W_1 with
    ``input_layer_trainable=False`` (Θ^{(0)} = 0 instead of XᵀX).
    """
    if not activations:
        raise InvalidArgument("explicit network needs at least one activation.")
    acts = tuple(get_activation(a) for a in activations)
    t0 = to_rational(tau0, "tau0")
    if t0 <= 0:
        raise InvalidArgument(f"tau0 must be > 0, got {t0}.")
    if not isinstance(dps, int) or not 5 <= dps <= 1000:
        raise InvalidArgument(f"dps must be an integer in [5, 1000], got {dps!r}.")
    work = _explicit_run(acts, t0, dps + _GUARD_WORK, 0, center, input_layer_trainable)
    check = _explicit_run(acts, t0, dps + _GUARD_CHECK, 1, center, input_layer_trainable)
    layers = tuple(
        {k: verify(f"layer {l + 1} {k}", w[k], c[k], dps) for k in LAYER_KEYS}
        for l, (w, c) in enumerate(zip(work, check, strict=True))
    )
    return ExplicitCoefficients(acts, t0, dps, center, layers)


# The symbols the compiled functions are built from, for introspection and tests.
FORMULA_SYMBOLS = (SIGMA_A2, SIGMA_B2, TAU0)

"""The matching system of a design: the DEQ's targets, the ENN's matched values, and residuals.

CK matching sets (τ̃_L², α̃_{L,1..3}) = (γ*², α*₁..₃), NTK matching (κ̃_L², β̃_{L,1..3}) =
(κ*², β*₁..₃) (ICML 2024, "key idea"); the ENN's values come from :mod:`._design_family`.
An equation that holds identically (e.g. α̃₂ = α̃₃ = 0 for an odd family against an odd φ) is
dropped; each residual is scaled by its target.  :class:`DesignSetting` carries what every step
of :func:`._design.design_enn` reads.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Sequence

from .._errors import InvalidArgument, NoConvergence
from ..symbolic import Family
from ._context import EngineContext, Num
from ._deq_records import DEQCoefficients
from ._design_family import FamilyEvaluator, enn_values
from ._design_search import SearchBudget
from ._printer import compile_function

__all__ = [
    "DesignSetting",
    "Residuals",
    "Values",
    "active_equations",
    "matched_values",
    "residuals",
    "sampler",
    "deq_targets",
]

#: a flat parameter vector → the matched values (τ̃², α̃₁, α̃₂, α̃₃ or κ̃², β̃₁, β̃₂, β̃₃)
Values = Callable[[Num, Sequence[Num]], list[Num]]
#: a context → the scaled residuals of the active equations at a flat parameter vector
Residuals = Callable[[Num], Callable[[list[Num]], list[Num]]]


@dataclasses.dataclass(frozen=True)
class DesignSetting:
    """What every step of one design reads: the DEQ matched, the family, depth and kernel."""

    deq: DEQCoefficients
    fam: Family
    layers: int
    kernel: str
    input_trainable: bool
    budget: SearchBudget
    progress: Callable[[str], None] | None

    @property
    def npar(self) -> int:
        return len(self.fam.params)

    @property
    def dps(self) -> int:
        return self.deq.dps

    def say(self, line: str) -> None:
        if self.progress is not None:
            self.progress(line)


def deq_targets(deq: DEQCoefficients, kernel: str) -> tuple[tuple[str, ...], list[Num]]:
    """The matched quantities' names and the DEQ's values of them: (γ*², α*₁, α*₂, α*₃) for
    CK matching, (κ*², β*₁, β*₂, β*₃) for NTK matching."""
    v = deq.values
    if kernel == "ck":
        names = ("tau_sq", "alpha_1", "alpha_2", "alpha_3")
        targets = [
            v["gamma_star"].value ** 2,
            v["alpha_1"].value,
            v["alpha_2"].value,
            v["alpha_3"].value,
        ]
    else:
        names = ("kappa_sq", "beta_1", "beta_2", "beta_3")
        targets = [  # deq[...] raises a named error when the DEQ's NTK diverges
            deq["kappa_star"].value ** 2,
            deq["beta_1"].value,
            deq["beta_2"].value,
            deq["beta_3"].value,
        ]
    return names, targets


def matched_values(s: DesignSetting, ev: FamilyEvaluator) -> Values:
    """The ENN's matched values at a flat parameter vector (layer after layer, npar each)."""
    npar, layers, deq = s.npar, s.layers, s.deq

    def values(ctx: EngineContext, flat: Sequence[Num]) -> list[Num]:
        thetas = [flat[l * npar : (l + 1) * npar] for l in range(layers)]
        out = enn_values(ctx, ev, thetas, ctx.mpf(deq.tau0.p) / deq.tau0.q, s.input_trainable)
        if s.kernel == "ck":
            return [out["tau"] ** 2, out["alpha_1"], out["alpha_2"], out["alpha_3"]]
        return [out["kappa"] ** 2, out["beta_1"], out["beta_2"], out["beta_3"]]

    return values


def sampler(fam: Family, seed: int) -> Callable[[], list[float]]:
    """Random parameters of one layer, well inside the family's constraints (seeded)."""
    rng = random.Random(seed)
    npar = len(fam.params)

    def sample() -> list[float]:
        for _ in range(1000):
            theta = [rng.uniform(-2.5, 2.5) for _ in range(npar)]
            sub = dict(zip(fam.params, theta, strict=True))
            if all(float(cn.subs(sub)) > 0.05 for cn in fam.constraints) and all(
                abs(t) > 0.05 for t in theta
            ):
                return theta
        raise NoConvergence("could not sample parameters satisfying the family's constraints.")

    return sample


def active_equations(
    s: DesignSetting,
    ctx: EngineContext,
    values: Values,
    sample: Callable[[], list[float]],
    targets: list[Num],
) -> list[int]:
    """The equations not identically satisfied (e.g. α̃₂ = α̃₃ = 0 for an odd family vs an odd
    φ): those whose target is nonzero or whose value is nonzero at some random point."""
    dps, layers, npar = s.dps, s.layers, s.npar
    probe_vals = []
    for _ in range(12):
        try:
            vals = values(ctx, [ctx.mpf(t) for l in range(layers) for t in sample()])
        except (TypeError, ValueError, ZeroDivisionError, OverflowError):
            continue  # a complex or singular point of the family: probe elsewhere
        if not any(isinstance(v, ctx.mpc) for v in vals):
            probe_vals.append(vals)
        if len(probe_vals) == 3:
            break
    if not probe_vals:
        raise InvalidArgument(
            f"the family {s.fam.name} gives complex or singular moments at every probed parameter; "
            "check its domain (e.g. sqrt or log of a parameter that can be negative)."
        )
    active = [
        i for i in range(4)
        if not (targets[i] == 0 and all(abs(pv[i]) < ctx.mpf(10) ** (-(dps + 5)) for pv in probe_vals))
    ]  # fmt: skip
    if len(active) > npar * layers:
        raise InvalidArgument(
            f"{len(active)} matching equations but only {npar * layers} parameters "
            f"({s.fam.name} × {layers} layers); use more layers or a richer family."
        )
    return active


def residuals(
    s: DesignSetting, ctx: EngineContext, values: Values, targets: list[Num], active: list[int]
) -> Residuals:
    """The residuals of the active equations, each scaled by its target (1 where that is 0);
    a point outside the constraints or with a complex moment raises ``ValueError``."""
    fam, layers, npar = s.fam, s.layers, s.npar
    scale = [abs(t) if t != 0 else ctx.one for t in targets]
    # the constraints (c > 0, a − b > 0), compiled: SymPy's subs per residual cost more than
    # the closed-form moments themselves; the sign of a difference is exact in any precision
    constraints = (
        compile_function("fam_constraints", list(fam.params), list(fam.constraints))
        if fam.constraints
        else None
    )

    def residual_in(c: Num) -> Callable[[list[Num]], list[Num]]:
        tgt = [c.mpf(t) for t in targets]
        sc = [c.mpf(s) for s in scale]

        def r(flat: list[Num]) -> list[Num]:
            if constraints is not None:
                for l in range(layers):
                    if any(v <= 0 for v in constraints(c, *flat[l * npar : (l + 1) * npar])):
                        raise ValueError("constraint")
            try:
                vals = values(c, flat)
            except TypeError as e:  # a complex moment (sqrt/log of a negative): not a solution
                raise ValueError(f"complex: {e}") from None
            if any(isinstance(v, c.mpc) for v in vals):
                raise ValueError("complex")
            return [(vals[i] - tgt[i]) / sc[i] for i in active]

        return r

    return residual_in

"""The derived variance map and centering identities, compiled once: F(q), F'(q), c(q) and the
moments of φ_c from the raw moments of φ (:func:`derive_fixed_point`, printed into
:mod:`._formula_table`).  Below the fixed-point solver and the contraction thresholds, which
both evaluate F."""

from __future__ import annotations

import functools
from typing import Any

from ._formula_table import ENGINE_MOMENTS, formula_set, map_key
from ._moments import MomentValue, evaluator_for
from ._problem import DEQProblem

__all__ = ["center_moments", "compiled_maps", "map_from_moments", "moments_at", "raw_values"]


@functools.lru_cache(maxsize=4)
def compiled_maps(center: bool) -> tuple[Any, list[str], Any, list[str], list[str]]:
    """F, F', c (one function) and the centered moments (another), derived by
    :func:`derive_fixed_point` and printed once into the generated module (:mod:`._formula_table`)."""
    vmap = formula_set(map_key("variance_map", center))
    cen = formula_set(map_key("centered_moments", center))
    return vmap.function, list(vmap.args), cen.function, list(cen.args), list(cen.outputs[1:])


def map_from_moments(problem: DEQProblem, ctx: Any, raw: dict[str, Any]) -> tuple[Any, Any, Any]:
    """F(q), F'(q), c(q) from the raw moments of φ at τ = √q (any context, numpy included)."""
    map_fn, map_args, _, _, _ = compiled_maps(problem.center)
    env = {
        **raw,
        "sigma_a2": ctx.mpf(int(problem.sigma_a2.p)) / int(problem.sigma_a2.q),
        "sigma_b2": ctx.mpf(int(problem.sigma_b2.p)) / int(problem.sigma_b2.q),
        "tau_0": ctx.mpf(int(problem.tau0.p)) / int(problem.tau0.q),
    }
    f, df, c = map_fn(ctx, *(env[a] for a in map_args))
    return f, df, c


def moments_at(
    activation: Any, center: bool, ctx: Any, tau: Any, refine: int = 0
) -> tuple[dict[str, Any], set[str], Any]:
    """Moments of φ_c at ``tau`` by name (from the derived centering identities), the names of
    the raw moments that vanish by symmetry, and c (E[φ(τξ)], or 0 when ``center`` is False)."""
    raw = evaluator_for(activation)(ctx, tau, ENGINE_MOMENTS, refine)
    cm, c = center_moments(ctx, raw_values(raw), center)
    return cm, {k for k, v in raw.items() if v.exact_zero}, c


def center_moments(
    ctx: Any, raw: dict[str, Any], center: bool = True
) -> tuple[dict[str, Any], Any]:
    """Raw moments by name → (moments of φ_c by name, c), by the derived centering identities."""
    _, _, cen_fn, cen_args, targets = compiled_maps(center)
    c, *cen = cen_fn(ctx, *(raw[a] for a in cen_args))
    return {**raw, **dict(zip(targets, cen, strict=True))}, c


def raw_values(raw: dict[str, MomentValue]) -> dict[str, Any]:
    return {k: v.value for k, v in raw.items()}

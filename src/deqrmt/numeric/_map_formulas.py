"""The derived variance map and centering identities, compiled once: F(q), F'(q), c(q) and the
moments of φ_c from the raw moments of φ (:func:`derive_fixed_point`, printed into
:mod:`._formula_table`).  Below the fixed-point solver and the contraction thresholds, which
both evaluate F."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

from ..symbolic import Activation
from ._context import Context, EngineContext, Num
from ._formula_table import ENGINE_MOMENTS, formula_set, map_key
from ._moments import MomentValue, evaluator_for
from ._problem import DEQProblem

__all__ = [
    "CompiledMaps",
    "center_moments",
    "compiled_maps",
    "map_from_moments",
    "moments_at",
    "raw_values",
]


class CompiledMaps(NamedTuple):
    """The variance map and the centering identities of one setting of ``center``, compiled."""

    #: ``f(ctx, *map_args) -> (F, F', c)``
    map_function: Callable[..., tuple[Num, ...]]
    map_args: tuple[str, ...]
    #: ``f(ctx, *centered_args) -> (c, *centered moments named by targets)``
    centered_function: Callable[..., tuple[Num, ...]]
    centered_args: tuple[str, ...]
    targets: tuple[str, ...]


@functools.lru_cache(maxsize=4)
def compiled_maps(center: bool) -> CompiledMaps:
    """F, F', c (one function) and the centered moments (another), derived by
    :func:`derive_fixed_point` and printed once into the generated module (:mod:`._formula_table`)."""
    vmap = formula_set(map_key("variance_map", center))
    cen = formula_set(map_key("centered_moments", center))
    return CompiledMaps(
        vmap.function, tuple(vmap.args), cen.function, tuple(cen.args), tuple(cen.outputs[1:])
    )


def map_from_moments(
    problem: DEQProblem, ctx: Context, raw: dict[str, Num]
) -> tuple[Num, Num, Num]:
    """F(q), F'(q), c(q) from the raw moments of φ at τ = √q (any context, numpy included)."""
    maps = compiled_maps(problem.center)
    env = {
        **raw,
        "sigma_a2": ctx.mpf(int(problem.sigma_a2.p)) / int(problem.sigma_a2.q),
        "sigma_b2": ctx.mpf(int(problem.sigma_b2.p)) / int(problem.sigma_b2.q),
        "tau_0": ctx.mpf(int(problem.tau0.p)) / int(problem.tau0.q),
    }
    f, df, c = maps.map_function(ctx, *(env[a] for a in maps.map_args))
    return f, df, c


def moments_at(
    activation: Activation, center: bool, ctx: EngineContext, tau: Num, refine: int = 0
) -> tuple[dict[str, Num], set[str], Num]:
    """Moments of φ_c at ``tau`` by name (from the derived centering identities), the names of
    the raw moments that vanish by symmetry, and c (E[φ(τξ)], or 0 when ``center`` is False)."""
    raw = evaluator_for(activation)(ctx, tau, ENGINE_MOMENTS, refine)
    cm, c = center_moments(ctx, raw_values(raw), center)
    return cm, {k for k, v in raw.items() if v.exact_zero}, c


def center_moments(
    ctx: Context, raw: dict[str, Num], center: bool = True
) -> tuple[dict[str, Num], Num]:
    """Raw moments by name → (moments of φ_c by name, c), by the derived centering identities."""
    maps = compiled_maps(center)
    c, *cen = maps.centered_function(ctx, *(raw[a] for a in maps.centered_args))
    return {**raw, **dict(zip(maps.targets, cen, strict=True))}, c


def raw_values(raw: dict[str, MomentValue]) -> dict[str, Num]:
    return {k: v.value for k, v in raw.items()}

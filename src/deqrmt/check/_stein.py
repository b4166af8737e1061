"""Stein's weak derivatives E[φ^(k)(τξ)] = τ^(−k) E[He_k(ξ) φ(τξ)] against finite differences
in h of E[φ(τξ + h)], an independent path (no Hermite weights, no Stein identity)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import sympy as sp

from ..numeric import compile_function, evaluator_for
from ..numeric._quadrature import panels
from ..symbolic import Activation, X
from ._engine import context, exact_mpf
from ._report import NA, CheckItem, number_text

__all__ = ["stein_item"]


#: finite-difference step in the shift h of E[φ(τξ + h)] and the accepted error
_FD_STEP = sp.Rational(1, 10**3)
_FD_TOL = 1e-5
_FD_DPS = 20
_STEIN = ("d1", "d2", "d3", "d4", "sq2")


_H = sp.Symbol("h", real=True)


@functools.lru_cache(maxsize=64)
def _shifted(act: Activation) -> Callable[..., tuple[Any, ...]]:
    """φ(x + h), compiled once for every shift (φ smooth: one piece)."""
    (piece,) = act.pieces
    return compile_function("phi_shifted", [X, _H], [piece.expr.subs(X, X + _H)])


def _shifted_expectations(act: Activation, ctx: Any, tau: Any, shift: Any) -> tuple[Any, Any]:
    """E[φ(τξ + h)] and E[φ(τξ + h)²] on the engine's quadrature panels (no Stein identity)."""
    f = _shifted(act)
    s1 = s2 = ctx.zero
    for panel in panels(ctx, tau, (), ctx.dps, 0, evaluator_for(act).entire):
        for xi, w in zip(panel.nodes, panel.weights, strict=True):
            v = f(ctx, tau * xi, shift)[0]
            s1 += w * v
            s2 += w * v * v
    return s1, s2


def stein_item(
    act: Activation, tau: Any, *, dps: int = _FD_DPS, stein: Mapping[str, Any] | None = None
) -> CheckItem:
    """E[φ^(k)(τξ)] by Stein (the engine's weak derivatives) vs finite differences in h of
    E[φ(τξ + h)] (and of E[φ²(τξ + h)] for (φ²)''), each a plain quadrature of the shifted φ
    on the engine's Gauss–Legendre panels.

    ``stein`` replaces the engine's Stein values (for negative controls).
    """
    title = "Stein weak derivatives vs finite differences"
    if act.kinks:
        where = ", ".join(str(k) for k in act.kinks)
        return CheckItem(
            "stein", title, NA, {},
            f"φ is not smooth (kinks at x = {where}): classical φ'' … φ'''' do not exist, only "
            "their weak (Stein) forms, which the other items use",
        )  # fmt: skip
    ctx = context(dps)
    t = ctx.mpf(tau)
    h = _FD_STEP
    hv = exact_mpf(ctx, h)
    base = evaluator_for(act)(ctx, t, _STEIN)
    engine = {k: base[k].value for k in _STEIN} if stein is None else dict(stein)
    f, g = {}, {}
    for j in (-2, -1, 0, 1, 2):
        f[j], g[j] = _shifted_expectations(act, ctx, t, j * hv)
    fd = {
        "d1": (f[1] - f[-1]) / (2 * hv),
        "d2": (f[1] - 2 * f[0] + f[-1]) / hv**2,
        "d3": (f[2] - 2 * f[1] + 2 * f[-1] - f[-2]) / (2 * hv**3),
        "d4": (f[2] - 4 * f[1] + 6 * f[0] - 4 * f[-1] + f[-2]) / hv**4,
        "sq2": (g[1] - 2 * g[0] + g[-1]) / hv**2,
    }
    errs = {k: abs(fd[k] - engine[k]) / (1 + abs(engine[k])) for k in _STEIN}
    worst = max(errs, key=lambda k: errs[k])
    label = {"d1": "φ'", "d2": "φ''", "d3": "φ'''", "d4": "φ''''", "sq2": "(φ²)''"}
    nums = {
        "max error": f"{number_text(errs[worst], 2)} ({label[worst]})",
        "h": str(h),
        "τ": number_text(t, 8),
    }
    bad = [k for k in _STEIN if errs[k] > _FD_TOL]
    return CheckItem.verdict(
        "stein", title, nums,
        "; ".join(f"E[{label[k]}]: Stein {number_text(engine[k], 10)} vs FD {number_text(fd[k], 10)}" for k in bad),
        f"E[φ^(k)], k = 1..4, and E[(φ²)''] at τ agree with central differences (O(h²), "
        f"tolerance {_FD_TOL:g})",
    )  # fmt: skip

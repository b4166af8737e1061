"""Stein's weak derivatives E[φ^(k)(τξ)] = τ^(−k) E[He_k(ξ) φ(τξ)] against finite differences
in h of E[φ(τξ + h)], an independent path (no Hermite weights, no Stein identity).

Both sides are Arb balls at the engine's precision (:func:`deqrmt.numeric.stein_comparison`):
the engine's Hermite moments, and central differences of the smoothed φ with the step
h = τ·2^-14 (the Gaussian smooths φ on the scale τ, so the truncation error is O((h/τ)²)
whatever φ's own scale: tanh(30x) and sin(1000x) need no smaller step).  A φ whose smoothed
value the independent quadrature cannot resolve within its budget is N/A, with the reason,
never a FAIL of a right engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mpmath
from flint import arb

from ..numeric import NotEnclosable, proven_text, stein_comparison
from ..symbolic import Activation
from ._report import FAIL, NA, PASS, CheckItem

__all__ = ["stein_item", "STEIN_DPS", "STEIN_TOL"]

#: the engine's precision (the lower of the digit pair)
STEIN_DPS = 30
#: accepted |difference| relative to |Stein| + the natural size τ^(−k)·E[φ²]^(1/2): the
#: differences' truncation error is about (h/τ)² = 2^-28
STEIN_TOL = 1e-6
_STEIN = ("d1", "d2", "d3", "d4", "sq2")
_LABEL = {"d1": "φ'", "d2": "φ''", "d3": "φ'''", "d4": "φ''''", "sq2": "(φ²)''"}
_TITLE = "Stein weak derivatives vs finite differences"


def _ball(v: Any) -> arb:
    if isinstance(v, arb):
        return v
    m, e = mpmath.mpf(v).man_exp
    return arb(int(m)) * arb(2) ** int(e)


def stein_item(
    act: Activation, tau: Any, *, dps: int = STEIN_DPS, stein: Mapping[str, Any] | None = None
) -> CheckItem:
    """E[φ^(k)(τξ)], k = 1..4, and E[(φ²)''(τξ)]: Stein (the engine) vs central differences.

    ``tau`` is taken exactly (an mpmath number is its binary value); ``stein`` replaces the
    engine's values (for negative controls).
    """
    if act.kinks:
        where = ", ".join(str(k) for k in act.kinks)
        return CheckItem(
            "stein", _TITLE, NA, {},
            f"φ is not smooth (kinks at x = {where}): classical φ'' … φ'''' do not exist, only "
            "their weak (Stein) forms, which the other items use",
        )  # fmt: skip
    try:
        cmp = stein_comparison(act, tau, dps)
    except NotEnclosable as e:
        return CheckItem(
            "stein", _TITLE, NA, {"τ": mpmath.nstr(mpmath.mpf(tau), 8)},
            f"the independent quadrature of E[φ(τξ + h)] cannot resolve φ at this scale ({e}); "
            "the engine's values are not compared",
        )  # fmt: skip
    engine = dict(cmp.stein) if stein is None else {k: _ball(v) for k, v in stein.items()}
    errs: dict[str, arb] = {}
    for k in _STEIN:
        errs[k] = abs(cmp.finite[k] - engine[k]) / (abs(engine[k]) + cmp.scale[k])
    worst = max(_STEIN, key=lambda k: float(errs[k].mid()))
    nums = {
        "E[φ'(τξ)]": proven_text(arb(engine["d1"].lower()), arb(engine["d1"].upper()), 12),
        "max relative difference": f"{mpmath.nstr(mpmath.mpf(float(errs[worst].mid())), 2)} "
        f"({_LABEL[worst]})",
        "h": "τ/2^14",
        "τ": mpmath.nstr(mpmath.mpf(cmp.tau.numerator) / cmp.tau.denominator, 10),
        "dps": str(dps),
    }
    # a difference is a FAIL when proved (its ball lies above the tolerance), a PASS when proved
    # below it; a ball straddling it means the quadrature did not resolve φ: N/A, not FAIL
    bad = [k for k in _STEIN if errs[k].lower() > STEIN_TOL]
    unresolved = [k for k in _STEIN if not errs[k].upper() <= STEIN_TOL and k not in bad]
    if bad:
        failure = "; ".join(
            f"E[{_LABEL[k]}]: Stein {engine[k].str(10, radius=False)} vs differences "
            f"{cmp.finite[k].str(10, radius=False)}"
            for k in bad
        )
        return CheckItem("stein", _TITLE, FAIL, nums, failure)
    if unresolved:
        return CheckItem(
            "stein", _TITLE, NA, nums,
            "the independent quadrature of E[φ(τξ + h)] did not resolve φ at this scale within "
            f"its budget (the differences of E[{_LABEL[unresolved[0]]}] are known only to "
            f"±{cmp.finite[unresolved[0]].rad().str(2, radius=False)}): not compared",
        )  # fmt: skip
    passed = (
        f"E[φ^(k)], k = 1..4, and E[(φ²)''] at τ (Arb balls at dps {dps}) agree with central "
        f"differences of E[φ(τξ + h)] (O((h/τ)²), tolerance {STEIN_TOL:g} of |E| + "
        "τ^(−k)·E[φ²]^(1/2))"
    )
    return CheckItem("stein", _TITLE, PASS, nums, passed)

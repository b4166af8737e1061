r"""Assumption 1 of Ling, Liao, Qiu (ICML 2024) for one φ and setting, and the contraction used.

Assumption 1: φ centred and L₁-Lipschitz, max_{k ≤ 4} |E[φ^{(k)}(ξ)]| < ∞, σ_a² < 1/(4L₁²) and
σ_a² < 2/E[(φ²)''(τξ)] for τ > 0.  What the proofs use is weaker: the variance map
F(q) = σ_a² Var[φ(√q ξ)] + σ_b² τ0² contracts at τ*² (F'(τ*²) = σ_a² E[(φ_c²)''(τ*ξ)]/2 < 1) and
the NTK series converges (σ_a² E[φ'(τ*ξ)²] < 1).  The report says which of the two holds, so a
φ outside the assumption (x + x²/4, the reviews' "tiny variances" complaint) is not silently
refused.  L₁ is enclosed by :func:`deqrmt.numeric.lipschitz_bound` (Arb).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import mpmath
import sympy as sp

from .._errors import ActivationError, DeqrmtError
from ..numeric import DEQProblem, LipschitzBound, evaluator_for, lipschitz_bound
from ..symbolic import Activation
from ._engine import Solved, context, solve
from ._report import ASSUMPTION_KEYS, FAIL, NA, PASS, CheckItem, number_text

__all__ = [
    "assumption_items",
    "lipschitz_item",
    "variance_lipschitz_item",
    "curvature_sup",
]


def _fraction(v: Any) -> Fraction:
    """An exact binary mpmath number as a Fraction."""
    sign, man, exp, _ = mpmath.mpf(v)._mpf_
    return (-1 if sign else 1) * Fraction(int(man)) * Fraction(2) ** int(exp)


def lipschitz_item(bound: LipschitzBound) -> CheckItem:
    """Assumption 1: φ is L₁-Lipschitz."""
    title = "L₁ (φ Lipschitz)"
    if bound.finite:
        return CheckItem("lipschitz", title, PASS, {"L₁": bound.text()}, bound.method, "assumption")
    nums = {"L₁": bound.text()}
    if bound.kind == "undecided":
        nums["L₁ ≥"] = number_text(bound.lower)
    return CheckItem(
        "lipschitz", title, FAIL, nums, f"{bound.reason} ({bound.method})", "assumption"
    )


def _moments_item(act: Activation, solved: Solved, bound: LipschitzBound) -> CheckItem:
    title = "E[φ^(k)(τξ)] finite, k ≤ 4"
    ctx = context(20)
    taus = [("1", ctx.one)]
    if solved.tau is not None:
        taus.append(("τ*", ctx.mpf(solved.tau)))
    nums: dict[str, str] = {}
    try:
        for label, tau in taus:
            m = evaluator_for(act)(ctx, tau, ("phi", "d1", "d2", "d3", "d4", "sq"))
            big = max(abs(v.value) for k, v in m.items() if k != "sq")
            if not ctx.isfinite(big) or not ctx.isfinite(m["sq"].value):
                raise ActivationError(f"a moment at τ = {number_text(tau)} is not finite")
            nums[f"max_k |E[φ^(k)]| at τ = {label}"] = number_text(big)
    except (DeqrmtError, OverflowError, ZeroDivisionError) as e:
        return CheckItem("moments", title, FAIL, nums, str(e), "assumption")
    why = "weak derivatives by Stein's identity E[φ^(k)(τξ)] = τ^(−k) E[He_k(ξ) φ(τξ)]"
    if bound.finite:
        why += "; finite for every τ since |φ(x)| ≤ |φ(0)| + L₁|x|"
    return CheckItem("moments", title, PASS, nums, why, "assumption")


def _centred_item(solved: Solved) -> CheckItem:
    title = "φ centred at τ*"
    if solved.center is None:
        return CheckItem(
            "centred", title, NA, {}, f"no fixed point τ*: {solved.error}", "assumption"
        )
    nums = {"τ*": number_text(solved.tau, 10), "c = E[φ(τ*ξ)]": number_text(solved.center, 10)}
    if solved.center == 0:
        why = "E[φ(τ*ξ)] = 0 already (exactly, by symmetry or by value)"
    else:
        why = (
            "the theorems use φ_c = φ − c, centred at its own fixed point (solved jointly with τ*)"
        )
    return CheckItem("centred", title, PASS, nums, why, "assumption")


def variance_lipschitz_item(sa2: sp.Rational, bound: LipschitzBound) -> CheckItem:
    """Assumption 1: σ_a² < 1/(4L₁²), decided exactly from the enclosure of L₁."""
    title = "σ_a² < 1/(4L₁²)"
    s = Fraction(int(sa2.p), int(sa2.q))
    if not bound.finite:
        return CheckItem(
            "variance_lipschitz", title, FAIL, {"σ_a²": str(sa2), "1/(4L₁²)": "0"},
            {"unbounded": "L₁ = ∞", "discontinuous": "φ is discontinuous (no L₁)"}.get(
                bound.kind, "L₁ could not be bounded"
            ) + ", so no σ_a² > 0 satisfies it", "assumption",
        )  # fmt: skip
    hi, lo = _fraction(bound.upper), _fraction(bound.lower)
    nums = {"σ_a²": str(sa2), "1/(4L₁²)": number_text(1 / (4 * bound.upper**2))}
    if 4 * s * hi * hi < 1:
        return CheckItem(
            "variance_lipschitz",
            title,
            PASS,
            nums,
            "proved with the upper bound of L₁",
            "assumption",
        )
    if 4 * s * lo * lo >= 1:
        return CheckItem(
            "variance_lipschitz", title, FAIL, nums, "fails already for the lower bound of L₁",
            "assumption",
        )  # fmt: skip
    return CheckItem(
        "variance_lipschitz", title, FAIL, nums,
        "undecided: σ_a² lies inside the enclosure of 1/(4L₁²)", "assumption",
    )  # fmt: skip


def curvature_sup(
    act: Activation, center: Any, taus: Sequence[Any], dps: int = 15
) -> tuple[Any, Any]:
    """max over ``taus`` of E[(φ_c²)''(τξ)] = E[(φ²)''] − 2c E[φ''] (Stein), and its argmax.

    A sampled supremum (not a proof): the assumption asks for it at every τ > 0.
    """
    ctx = context(dps)
    ev = evaluator_for(act)
    c = ctx.mpf(center)
    best, where = -ctx.inf, None
    for tau in taus:
        m = ev(ctx, ctx.mpf(tau), ("sq2", "d2"))
        v = m["sq2"].value - 2 * c * m["d2"].value
        if not ctx.isfinite(v):
            return ctx.inf, tau
        if v > best:
            best, where = v, tau
    return best, where


def _variance_curvature_item(act: Activation, sa2: sp.Rational, solved: Solved) -> CheckItem:
    title = "σ_a² < 2/E[(φ²)''(τξ)] for τ > 0"
    ref = mpmath.mpf(solved.tau) if solved.tau is not None else mpmath.mpf(1)
    c = solved.center if solved.center is not None else 0
    taus = [ref * mpmath.mpf(2) ** (mpmath.mpf(k) / 2) for k in range(-8, 9)]
    try:
        top, where = curvature_sup(act, c, taus)
    except (DeqrmtError, OverflowError, ZeroDivisionError) as e:
        return CheckItem(
            "variance_curvature", title, FAIL, {"σ_a²": str(sa2)},
            f"E[(φ²)''(τξ)] is not finite on τ ∈ [τ*/16, 16τ*]: {e}", "assumption",
        )  # fmt: skip
    s = mpmath.mpf(int(sa2.p)) / int(sa2.q)
    bound = 2 / top if top > 0 else mpmath.inf
    nums = {
        "σ_a²": str(sa2),
        "max E[(φ_c²)'']": number_text(top),
        "at τ": number_text(where, 4),
        "2/max": number_text(bound) if mpmath.isfinite(bound) else "∞",
    }
    how = (
        f"sampled on 17 scales τ ∈ [τ*/16, 16τ*] (τ* = {number_text(ref, 6)}), φ_c = φ − c; weak (φ²)'' "
        "by Stein"
    )
    return CheckItem(
        "variance_curvature", title, PASS if s < bound else FAIL, nums, how, "assumption"
    )


def _contraction_items(problem: DEQProblem, solved: Solved) -> list[CheckItem]:
    sa2 = problem.sigma_a2
    title_ck = "contraction used: σ_a² E[(φ_c²)''(τ*ξ)]/2 < 1"
    title_ntk = "NTK: σ_a² E[φ'(τ*ξ)²] < 1"
    items = []
    if solved.slope is None:
        items.append(CheckItem("contraction_ck", title_ck, FAIL, {}, solved.error, "assumption"))
    else:
        ok = abs(solved.slope) < 1
        items.append(
            CheckItem(
                "contraction_ck",
                title_ck,
                PASS if ok else FAIL,
                {"F'(τ*²)": number_text(solved.slope, 8), "τ*": number_text(solved.tau, 10)},
                "the DEQ's variance iteration from z = 0 converges to τ* and τ* attracts"
                if ok
                else "τ* does not attract the DEQ's iteration",
                "assumption",
            )  # fmt: skip
        )
    c = solved.coefficients
    if c is None:
        why = solved.error or "no fixed point"
        items.append(CheckItem("contraction_ntk", title_ntk, FAIL, {}, why, "assumption"))
    else:
        dsq = c.moments["E_phi_prime_sq"].value
        v = mpmath.mpf(int(sa2.p)) / int(sa2.q) * dsq
        ok = v < 1
        items.append(
            CheckItem(
                "contraction_ntk",
                title_ntk,
                PASS if ok else FAIL,
                {"σ_a² E[φ'²]": number_text(v, 8)},
                "K* = G*/(1 − Ġ*) converges"
                if ok
                else "the NTK series diverges: K* does not exist (the CK stands)",
                "assumption",
            )  # fmt: skip
        )
    return items


def _beyond_item(items: Sequence[CheckItem]) -> CheckItem:
    title = "beyond Assumption 1"
    by_key = {i.key: i for i in items}
    failed = [by_key[k].title for k in ASSUMPTION_KEYS if by_key[k].status == FAIL]
    ck, ntk = by_key["contraction_ck"].status, by_key["contraction_ntk"].status
    if not failed:
        return CheckItem(
            "beyond", title, NA, {}, "Assumption 1 holds: nothing beyond it is used", "assumption"
        )
    if ck == PASS:
        what = "the CK and NTK" if ntk == PASS else "the CK (not the NTK)"
        return CheckItem(
            "beyond", title, PASS, {"fails": "; ".join(failed)},
            f"Assumption 1 fails, but the contraction the proofs use holds at τ*: {what} "
            "fixed point exists and attracts, so the engine's numbers are well defined here; "
            "the theorems' O(n^−1/2) guarantee is not proved for this φ (check it with --mc)",
            "assumption",
        )  # fmt: skip
    return CheckItem(
        "beyond", title, NA, {"fails": "; ".join(failed)},
        "Assumption 1 fails and so does the contraction: nothing holds beyond it", "assumption",
    )  # fmt: skip


def _assumption_items(problem: DEQProblem, solved: Solved) -> list[CheckItem]:
    act = problem.activation
    bound = lipschitz_bound(act)
    items = [
        lipschitz_item(bound),
        _moments_item(act, solved, bound),
        _centred_item(solved),
        variance_lipschitz_item(problem.sigma_a2, bound),
        _variance_curvature_item(act, problem.sigma_a2, solved),
        *_contraction_items(problem, solved),
    ]
    items.append(_beyond_item(items))
    return items


def assumption_items(problem: DEQProblem, solved: Solved | None = None) -> list[CheckItem]:
    """The Assumption 1 items (and the contraction used, and the note beyond it) for one
    problem: the first part of :func:`deqrmt.check.check_activation`'s report.  ``solved`` is
    the engine's result for ``problem`` if already computed."""
    return _assumption_items(problem, solved if solved is not None else solve(problem))

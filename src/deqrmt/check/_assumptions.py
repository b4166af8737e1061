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
from flint import arb

from .._errors import ActivationError, DeqrmtError
from ..numeric import (
    DEQProblem,
    LipschitzBound,
    NotEnclosable,
    curvature_bound,
    enclose_moments,
    evaluator_for,
    interval_text,
    lipschitz_bound,
    proven_text,
)
from ..symbolic import Activation
from ._engine import Solved, context, solve
from ._report import ASSUMPTION_KEYS, FAIL, NA, PASS, CheckItem, number_text

__all__ = [
    "assumption_items",
    "lipschitz_item",
    "variance_lipschitz_item",
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
    """E[φ^(k)(τξ)], k ≤ 4, at τ = 1 and τ*: Arb balls at the engine's precision (the digits
    shown are proven), or the engine's evaluator where φ is outside the enclosure rules."""
    title = "E[φ^(k)(τξ)] finite, k ≤ 4"
    taus = [("1", Fraction(1))]
    if solved.tau is not None:
        taus.append(("τ*", _fraction(solved.tau)))
    nums: dict[str, str] = {}
    how = "Arb balls"
    try:
        for label, tau in taus:
            try:
                balls = enclose_moments(act, tau, _MOMENT_NAMES, solved.problem.dps)
                lo = max((arb(v.abs_lower()) for v in balls.values()), key=_fraction_of_arb)
                hi = max((arb(v.abs_upper()) for v in balls.values()), key=_fraction_of_arb)
                text = proven_text(lo, hi, 6)
            except NotEnclosable:
                how = "the engine's quadrature (not a proof)"
                ctx = context(solved.problem.dps)
                t = ctx.mpf(tau.numerator) / tau.denominator
                m = evaluator_for(act)(ctx, t, (*_MOMENT_NAMES, "sq"))
                big = max(abs(v.value) for k, v in m.items() if k != "sq")
                if not ctx.isfinite(big) or not ctx.isfinite(m["sq"].value):
                    raise ActivationError(f"a moment at τ = {label} is not finite") from None
                text = number_text(big)
            nums[f"max_k |E[φ^(k)]| at τ = {label}"] = text
    except (DeqrmtError, OverflowError, ZeroDivisionError) as e:
        return CheckItem("moments", title, FAIL, nums, str(e), "assumption")
    why = (
        "weak derivatives by Stein's identity E[φ^(k)(τξ)] = τ^(−k) E[He_k(ξ) φ(τξ)], "
        f"{how} at dps {solved.problem.dps}"
    )
    if bound.finite:
        why += "; finite for every τ since |φ(x)| ≤ |φ(0)| + L₁|x|"
    return CheckItem("moments", title, PASS, nums, why, "assumption")


#: k = 0..4: E[φ], E[φ'], …, E[φ^(4)]
_MOMENT_NAMES = ("phi", "d1", "d2", "d3", "d4")


def _fraction_of_arb(v: arb) -> Fraction:
    man, exp = v.mid().man_exp()
    return Fraction(int(man)) * Fraction(2) ** int(exp)


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
    # 1/(4L₁²) ∈ [1/(4 hi²), 1/(4 lo²)], printed so that it encloses
    top = None if lo == 0 else 1 / (4 * lo * lo)
    nums = {"σ_a²": str(sa2), "1/(4L₁²)": interval_text(1 / (4 * hi * hi), top, 6)}
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


def _center_ball(solved: Solved) -> tuple[Any, Any]:
    """(c, radius): the engine's centring and how well it is known (its ball when proven, one
    unit in its last verified digit otherwise; the solver's value at dps + 5 without one)."""
    c = solved.center
    if c is None:
        return 0, 0
    coeffs = solved.coefficients
    v = coeffs.values["center"] if coeffs is not None else None
    if v is not None and v.radius is not None:
        return v.value, v.radius
    digits = v.digits if v is not None else solved.problem.dps
    with mpmath.workprec(256):
        return c, abs(mpmath.mpf(c)) * mpmath.mpf(10) ** (1 - digits) + mpmath.mpf(10) ** -digits


def _variance_curvature_item(act: Activation, sa2: sp.Rational, solved: Solved) -> CheckItem:
    """Assumption 1: σ_a² < 2/E[(φ_c²)''(τξ)] for every τ > 0, the supremum over τ > 0
    enclosed rigorously (:func:`deqrmt.numeric.curvature_bound`)."""
    title = "σ_a² < 2/E[(φ²)''(τξ)] for τ > 0"
    c, radius = _center_ball(solved)
    b = curvature_bound(act, c, radius)
    s = Fraction(int(sa2.p), int(sa2.q))
    lo = _fraction(b.lower) if mpmath.isfinite(b.lower) else None
    hi = _fraction(b.upper) if mpmath.isfinite(b.upper) else None
    if b.kind == "infinite":
        nums = {"σ_a²": str(sa2), "sup E[(φ_c²)'']": "∞", "2/sup": "0"}
        return CheckItem("variance_curvature", title, FAIL, nums, b.reason, "assumption")
    # 2/sup ∈ [2/hi, 2/lo]: 0 when sup is not bounded above, ∞ when sup may be ≤ 0
    two_over_lo = Fraction(0) if hi is None else (2 / hi if hi > 0 else None)
    two_over_hi = 2 / lo if lo is not None and lo > 0 else None
    two_over = "∞" if two_over_lo is None else interval_text(two_over_lo, two_over_hi, 6)
    nums = {
        "σ_a²": str(sa2),
        "sup E[(φ_c²)'']": interval_text(lo, hi, 6),
        "largest found": b.where or "?",
        "2/sup": two_over,
    }
    how = (
        f"the supremum over τ > 0 proved by interval arithmetic (Arb) on {b.cells} cells of "
        "log₂ τ, the first (0, τ₀] and the last [T, ∞) from h at x → 0 and |x| → ∞; "
        "φ_c = φ − c (c = E[φ(τ*ξ)]), weak (φ_c²)'' = 2(φ'² + φ_cφ'') between the kinks plus "
        "their Dirac masses"
    )
    if hi is not None and (hi <= 0 or s * hi < 2):
        verdict, why = PASS, f"proved with the upper bound of the supremum: {how}"
    elif lo is not None and lo > 0 and s * lo >= 2:
        verdict, why = FAIL, f"fails already for a value attained: {how}"
    elif hi is None:
        verdict, why = FAIL, f"undecided: {b.reason} ({how})"
    else:
        verdict, why = FAIL, f"undecided: σ_a² lies inside the enclosure of 2/sup ({how})"
    return CheckItem("variance_curvature", title, verdict, nums, why, "assumption")


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

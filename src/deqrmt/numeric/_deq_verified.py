r"""The DEQ's verified path: digits on which two evaluations agree (ICML 2024, Theorems 1–2).

τ* comes from the one solver (:func:`~deqrmt.numeric._fixed_point.solve_tau`, on the derived
map F) and the moments of the centered φ_c from the derived centering identities; the
coefficients are the derived formulas of :mod:`._deq_formulas`.  Everything is evaluated twice
(dps+5, and dps+20 with a finer quadrature rule) and only the digits both agree on are kept
(:func:`~deqrmt.numeric._verify.verify`).
"""

from __future__ import annotations

import functools
from typing import Any

import mpmath

from .._errors import CenteringError, ContractionError, PrecisionLoss
from ._context import Num
from ._deq_formulas import deq_formulas, formula_keys
from ._deq_records import DEQ_KEYS, MOMENT_KEYS, DEQCoefficients
from ._fixed_point import moments_at, scan_fixed_points, solve_tau
from ._float_context import FLOAT
from ._problem import DEQProblem
from ._verified import Verified
from ._verify import verify

__all__ = [
    "GUARD_CHECK",
    "GUARD_WORK",
    "OTHER_ROOT_DIGITS",
    "mp_context",
    "other_fixed_points",
    "verified",
]

#: guard digits of the working and of the check evaluation
GUARD_WORK, GUARD_CHECK = 5, 20
#: digits the other fixed points are reported to (they are context, not results)
OTHER_ROOT_DIGITS = 15


def mp_context(dps: int) -> Any:
    """A private mpmath context at ``dps`` digits (the global ``mp`` is never touched)."""
    ctx = mpmath.MPContext()
    ctx.dps = dps
    return ctx


def _run(problem: DEQProblem, dps: int, refine: int) -> tuple[dict[str, Num], dict[str, Num]]:
    """τ*, the coefficients and the moments of φ_c at τ*, at ``dps`` digits."""
    ctx = mp_context(dps)
    fp = solve_tau(problem, ctx, refine)
    env, zeros, _ = moments_at(problem.activation, problem.center, ctx, fp.tau, refine)
    if not problem.center and "phi" not in zeros:
        raise CenteringError(
            f"center=False: E[φ(τ*ξ)] = {ctx.nstr(env['phi'], 12)} ≠ 0 at τ* = "
            f"{ctx.nstr(fp.tau, 12)}, but Theorems 1–2 assume a centered activation; use "
            "center=True to center φ at its own fixed point."
        )
    if not fp.attracting:
        from ._threshold import threshold_text

        raise ContractionError(
            f"F'(τ*²) = σ_a² E[(φ_c²)''(τ*ξ)]/2 = {ctx.nstr(fp.slope, 8)}: |F'| ≥ 1, the fixed "
            f"point is not attracting at sigma_a2={problem.sigma_a2}; reduce sigma_a2."
            + threshold_text(problem)
        )
    a2, b2, t0 = (
        ctx.mpf(int(v.p)) / int(v.q) for v in (problem.sigma_a2, problem.sigma_b2, problem.tau0)
    )
    # σ_a² E[φ'²] ≥ 1: the CK exists, the NTK K* = G*/(1 − Ġ*) does not; keep the CK only.
    ntk = a2 * env["dsq"] < 1
    env.update(sigma_a2=a2, sigma_b2=b2, tau_0=t0)
    vals = deq_formulas(problem.trainable, ntk)(ctx, env)
    out = {
        "tau_star": fp.tau,
        **dict(zip(formula_keys(ntk), vals, strict=True)),
        "center": fp.center,
    }
    # τ*² = σ_a² γ*² + σ_b² τ0² (Theorem 1): the solver's F and the derived γ* must agree.
    gap = fp.q - (a2 * out["gamma_star"] ** 2 + b2 * t0**2)
    if abs(gap) > fp.q * ctx.mpf(10) ** (-(dps - 4)):
        raise PrecisionLoss(
            f"τ*² − (σ_a² γ*² + σ_b² τ0²) = {ctx.nstr(gap, 5)} at {dps} digits: the fixed point "
            "did not settle; ask for fewer digits (dps)."
        )
    return out, {j: env[i] for j, i in MOMENT_KEYS.items()}


def other_fixed_points(problem: DEQProblem) -> tuple[tuple[Verified, ...], tuple[str, ...]]:
    """The other roots of τ² = F(τ²) in range (verified to :data:`OTHER_ROOT_DIGITS` digits)
    and a note for each, saying its kind and which root is reported."""
    scan = scan_fixed_points(problem)
    star = solve_tau(problem, FLOAT).tau
    roots, notes = [], []
    kinds = {-1: "attracting, but not reached from z = 0", 1: "repelling", 0: "neutral (F' = 1)"}
    for a, b, kind in scan.others:
        if a == b:  # a touching root: only the scan's resolution is known
            v = Verified(mpmath.sqrt(a), 8, mpmath.nstr(mpmath.sqrt(a), 8))
        else:
            digits = min(problem.dps, OTHER_ROOT_DIGITS)
            work = solve_tau(problem, mp_context(digits + GUARD_WORK), 0, (a, b, kind)).tau
            check = solve_tau(problem, mp_context(digits + GUARD_CHECK), 1, (a, b, kind)).tau
            v = verify("other fixed point", work, check, digits)
        roots.append(v)
        notes.append(
            f"another fixed point τ = {v.text} exists ({kinds[kind]}); reported: the attracting "
            f"τ* ≈ {star:.6g} that the DEQ's iteration reaches from z = 0."
        )
    if not scan.complete:
        notes.append(
            "the search for other fixed points stopped early (overflow or its evaluation budget); "
            "roots far above τ* may be missing."
        )
    return tuple(roots), tuple(notes)


@functools.lru_cache(maxsize=32)
def verified(problem: DEQProblem) -> DEQCoefficients:
    """The verified path: two evaluations (dps+5, dps+20 with a finer rule), agreeing digits."""
    dps = problem.dps
    work, mom_w = _run(problem, dps + GUARD_WORK, 0)
    check, mom_c = _run(problem, dps + GUARD_CHECK, 1)
    values = {k: verify(k, work[k], check[k], dps) for k in DEQ_KEYS if k in work}
    moments = {k: verify(k, mom_w[k], mom_c[k], dps) for k in MOMENT_KEYS}
    others, notes = other_fixed_points(problem)
    if "beta_1" not in values:
        ntk = moments["E_phi_prime_sq"].value * problem.sigma_a2.p / problem.sigma_a2.q
        from ._threshold import ntk_threshold_text

        notes = (
            f"the NTK diverges: σ_a² E[φ'(τ*ξ)²] = {mpmath.nstr(ntk, 6)} ≥ 1, so "
            "K* = G*/(1 − Ġ*) does not exist and β*, κ* are undefined; the CK values stand"
            f"{ntk_threshold_text(problem)}.",
            *notes,
        )
    return DEQCoefficients(problem, values, moments, others, notes)

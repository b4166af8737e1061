r"""The sphere's verified path: digits on which two evaluations agree (HLD 2023).

What :func:`deqrmt.symbolic.derive_sphere` derives needs numbers for: the diagonal variance
s = g(1) (the DEQ's variance map with τ0 = 1 and no centering, by the one τ* solver), the
off-diagonal fixed point g(0) = s·r₀, and the dual activation's derivatives f^{(j)}(r₀) from its
Mehler series (:mod:`._mehler`).  Everything runs twice (dps + 5 with the working rule,
dps + 20 with a finer one) and only the digits both agree on are reported
(:func:`deqrmt.numeric._verify.verify`).
"""

from __future__ import annotations

import mpmath

from .._errors import ContractionError, NoConvergence
from ._context import EngineContext, Num
from ._fixed_point import solve_tau
from ._mehler import MAX_TERMS, HermiteProjection, series_derivative, terms_needed, too_close
from ._moments import evaluator_for
from ._problem import DEQProblem
from ._sphere_formulas import (
    ORDER,
    exact_zeros,
    quadratic_formulas,
    quadratic_signs,
    sphere_formulas,
)
from ._sphere_records import (
    NTK_EXTRA_KEYS,
    SPHERE_KEYS,
    QuadraticActivation,
    SphereCoefficients,
    no_quadratic_note,
)
from ._verify import verify

__all__ = ["verified_sphere"]

_GUARD_WORK, _GUARD_CHECK = 5, 20

_Solutions = list[tuple[Num, ...] | None]


def _origin(
    proj: HermiteProjection, s: Num, tau: Num, a2: Num, digits: int
) -> tuple[Num, HermiteProjection]:
    """r₀ = g(0)/s: the root of s r = σ_a² f(r) in [0, 1), with enough Mehler terms for it.

    f is increasing and convex on [0, 1) (c_k ≥ 0), so Newton from r = 0 climbs monotonically
    to the root; the series is extended until its Parseval tail bound at r₀ is below
    10^{−digits}.  Returns r₀ and the projection (rebuilt with more nodes when the terms needed
    outgrow the ones its panels were sized for).
    """
    ctx = proj.ctx
    tol = ctx.mpf(10) ** (-digits)
    while True:
        coeffs = proj.coefficients
        r = ctx.zero
        for _ in range(200):
            f0 = series_derivative(ctx, coeffs, r, 0)
            f1 = series_derivative(ctx, coeffs, r, 1)
            step = (s * r - a2 * f0) / (s - a2 * f1)
            r -= step
            if abs(step) <= tol * max(abs(r), tol):
                break
        else:
            raise NoConvergence("Newton on g(0) = σ_a² f(g(0)/s) did not converge.")
        r_f = float(r)
        if not 0 <= r_f < 1:
            raise ContractionError(
                f"g(0)/g(1) = {r_f:.6g} is outside [0, 1): no admissible fixed point at ρ = 0; "
                "reduce sigma_a2."
            )
        # A hair above r₀ so that the bound also covers the iterate after the extension.
        need = terms_needed(min(r_f * (1 + 1e-6) + 1e-12, 1.0), digits + 2, ORDER + 1)
        if need > MAX_TERMS:
            raise too_close(r_f)
        if need < proj.terms:
            return r, proj
        if need > proj.k_layout:
            proj = HermiteProjection(proj.act, tau, ctx, proj.digits, proj.refine, 2 * need)
        proj.extend(need)


def _quadratics(ctx: EngineContext, values: dict[str, Num], prefix: str, d: int) -> _Solutions:
    """Corollary 1's (a2, a1, a0) per sign pattern; None where one of them is not real."""
    env = {
        "alpha": values[f"{prefix}alpha"],
        "beta": values[f"{prefix}beta"],
        "mu": values[f"{prefix}mu"],
        "d": ctx.mpf(d),
    }
    out: _Solutions = []
    for formulas in quadratic_formulas("ntk" if prefix else "ck"):
        triple = tuple(ctx.convert(v) for v in formulas(ctx, env))
        real = all(ctx.im(v) == 0 for v in triple)
        out.append(tuple(ctx.re(v) for v in triple) if real else None)
    return out


def _run(
    problem: DEQProblem, d: int, digits: int, refine: int
) -> tuple[dict[str, Num], _Solutions, _Solutions, int]:
    """The constants, Corollary 1's solutions and the series length, at ``digits`` digits."""
    ctx = mpmath.MPContext()
    ctx.dps = digits
    a2, b2 = (ctx.mpf(int(v.p)) / int(v.q) for v in (problem.sigma_a2, problem.sigma_b2))
    fp = solve_tau(problem, ctx, refine)  # s = g(1) = τ*² of the problem
    s, fprime = fp.q, fp.slope
    m_dsq = evaluator_for(problem.activation)(ctx, fp.tau, ("dsq",), refine)["dsq"].value
    if fprime >= 1:
        raise ContractionError(
            f"σ_a² E[(φ²)''(√s ξ)]/2 = {ctx.nstr(fprime, 8)} ≥ 1 at s = g(1) = {ctx.nstr(s, 8)}: "
            f"the diagonal fixed point is not attracting at sigma_a2={problem.sigma_a2}; "
            "reduce sigma_a2."
        )
    if a2 * m_dsq >= 1:
        raise ContractionError(
            f"σ_a² E[φ'(√s ξ)²] = {ctx.nstr(a2 * m_dsq, 8)} ≥ 1: the kernel map is not a "
            f"contraction off the diagonal and K* = G*/(1 − Ġ*) diverges at "
            f"sigma_a2={problem.sigma_a2}; choose sigma_a2 < {ctx.nstr(1 / m_dsq, 8)} (with σ_b² "
            "fixed)."
        )
    tau = ctx.sqrt(s)
    proj = HermiteProjection(problem.activation, tau, ctx, digits, refine, k_layout=128)
    proj.extend(ORDER + 1)
    r0, proj = _origin(proj, s, tau, a2, digits)
    coeffs = proj.coefficients
    env = {"sigma_a2": a2, "sigma_b2": b2, "s": s, "d": ctx.mpf(d), "g_0": s * r0, "m_dsq": m_dsq}
    env.update({f"f_{j}": series_derivative(ctx, coeffs, r0, j) for j in range(ORDER + 2)})
    values = dict(zip((*SPHERE_KEYS, *NTK_EXTRA_KEYS), sphere_formulas()(ctx, env), strict=True))
    values.update({k: ctx.zero for k in exact_zeros(problem.activation)})
    return values, _quadratics(ctx, values, "", d), _quadratics(ctx, values, "ntk_", d), proj.terms


def verified_sphere(problem: DEQProblem, d: int) -> SphereCoefficients:
    """The verified path: two evaluations (dps+5, dps+20 with a finer rule), agreeing digits."""
    dps = problem.dps
    work, wck, wntk, terms = _run(problem, d, dps + _GUARD_WORK, 0)
    check, cck, cntk, terms_c = _run(problem, d, dps + _GUARD_CHECK, 1)
    values = {k: verify(k, work[k], check[k], dps) for k in (*SPHERE_KEYS, *NTK_EXTRA_KEYS)}
    notes: list[str] = []

    def quadratics(w: _Solutions, c: _Solutions, which: str) -> tuple[QuadraticActivation, ...]:
        out = []
        for sign, ws, cs in zip(quadratic_signs(), w, c, strict=True):
            if ws is None or cs is None:
                continue
            a2v, a1v, a0v = (
                verify(f"{which} a{i} ({sign})", x, y, dps)
                for i, x, y in zip((2, 1, 0), ws, cs, strict=True)
            )
            out.append(QuadraticActivation(sign, a2v, a1v, a0v))
        if not out:
            notes.append(no_quadratic_note(values, which, d))
        return tuple(out)

    qck = quadratics(wck, cck, "CK")
    qntk = quadratics(wntk, cntk, "NTK")
    return SphereCoefficients(problem, d, values, qck, qntk, max(terms, terms_c), tuple(notes))

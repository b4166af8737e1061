r"""The DEQ's certified path: every printed digit proven by ball arithmetic (Arb).

1. **Moments as balls.**  :mod:`._enclose` encloses E[He_k(ξ) φ(τξ)], E[He_k(ξ) φ²(τξ)] and
   E[φ'(τξ)²] for every τ in a ball: closed forms in Arb, ``acb.integral`` otherwise, with a
   rigorous Gaussian-tail bound.
2. **τ\*² proved** by Krawczyk's test on h(q) = F(q) − q, with |F'| < 1 on the ball
   (:mod:`._variance_proof`, :mod:`._krawczyk`).
3. **Coefficients as balls.**  The moments at τ = √K (the centering constant c = E[φ(τ*ξ)]
   among them), centered by the derived identities and put through the derived formulas of
   :mod:`._deq_formulas` in ball arithmetic.
4. **Proven digits** (:func:`._verified.proven`).  Too few digits: the work is redone at a higher
   precision (:func:`._escalate.escalating`).

Anything outside the enclosure rules raises :class:`~._enclose.NotEnclosable`; the dispatcher
(:func:`~deqrmt.numeric.deq_coefficients`) then falls back to the verified path and says so
(``certified: false``).
"""

from __future__ import annotations

from flint import arb

from .._errors import CenteringError
from ._arb import ArbContext, midpoint_text, to_arb, workprec
from ._deq_formulas import deq_formulas, formula_keys
from ._deq_records import MOMENT_KEYS, DEQCoefficients
from ._deq_verified import other_fixed_points
from ._enclose import ENCLOSED_MOMENTS, NotEnclosable
from ._escalate import escalating
from ._fixed_point import center_moments
from ._problem import DEQProblem
from ._variance_proof import VarianceBalls, prove_fixed_point, star_float
from ._verified import Verified, proven

__all__ = ["certify"]


def _evaluate(
    problem: DEQProblem, vmap: VarianceBalls, k: arb, prec: int
) -> tuple[dict[str, arb], dict[str, arb], list[str]]:
    """Coefficients and moments (balls) at τ = √K, and notes."""
    with workprec(prec):
        tau = k.sqrt()
    raw = vmap.enc(tau, ENCLOSED_MOMENTS, prec)
    ctx = ArbContext(prec)
    notes: list[str] = []
    with workprec(prec):
        env, c = center_moments(ctx, dict(raw), problem.center)
        if not problem.center and not (raw["phi"].is_exact() and raw["phi"] == 0):
            if raw["phi"].contains(0):
                raise NotEnclosable("E[φ(τ*ξ)] = 0 cannot be proved in ball arithmetic")
            raise CenteringError(
                f"center=False: E[φ(τ*ξ)] = {midpoint_text(raw['phi'], 12)} ≠ 0 at τ* = "
                f"{midpoint_text(tau, 12)}, but Theorems 1–2 assume a centered activation; use "
                "center=True to center φ at its own fixed point."
            )
        params = vmap.params()
        g_dot = params["sigma_a2"] * env["dsq"]
        if g_dot < 1:
            ntk = True
        elif g_dot >= 1:
            ntk = False
            from ._threshold import ntk_threshold_text

            notes.append(
                f"the NTK diverges: σ_a² E[φ'(τ*ξ)²] = {midpoint_text(g_dot, 6)} ≥ 1, so "
                "K* = G*/(1 − Ġ*) does not exist and β*, κ* are undefined; the CK values stand"
                f"{ntk_threshold_text(problem)}."
            )
        else:
            raise NotEnclosable(f"σ_a² E[φ'(τ*ξ)²] = {g_dot.str(8)} is not separated from 1")
        vals = deq_formulas(problem.trainable, ntk)(ctx, {**env, **params})
        out = {"tau_star": tau, **dict(zip(formula_keys(ntk), vals, strict=True)), "center": c}
        out = {k_: (v if isinstance(v, arb) else to_arb(v)) for k_, v in out.items()}
        moments = {j: env[i] for j, i in MOMENT_KEYS.items()}
    return out, moments, notes


def certify(problem: DEQProblem, *, others: bool = True) -> DEQCoefficients:
    """Certify ``problem``'s coefficients (see the module docstring); no fallback.

    ``others=False`` skips the float search for other fixed points (the notes).

    Raises:
      NotEnclosable: a moment or a decision is outside what ball arithmetic proves here.
      ContractionError, CenteringError: as :func:`~deqrmt.numeric.deq_coefficients`.
    """
    vmap = VarianceBalls(problem)
    dps = problem.dps

    def attempt(
        q: arb, known: int, prec: int
    ) -> tuple[tuple[dict[str, Verified], dict[str, Verified], tuple[str, ...]], arb, int]:
        k, _ = prove_fixed_point(vmap, q, known, prec)
        values, moments, notes = _evaluate(problem, vmap, k, prec)
        balls = {key: proven(v, dps) for key, v in values.items()}
        mballs = {key: proven(v, dps) for key, v in moments.items()}
        short = min(b.digits for b in (*balls.values(), *mballs.values()))
        return (balls, mballs, tuple(notes)), k, short

    (balls, mballs, notes), prec = escalating(star_float(problem), dps, attempt)
    roots, root_notes = other_fixed_points(problem) if others else ((), ())
    return DEQCoefficients(
        problem, balls, mballs, roots, (*notes, *root_notes), certified=True, prec_bits=prec
    )

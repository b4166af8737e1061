"""What ``deqrmt check`` asks of the engine, in one place: a change of the engine's records
touches only this module.

Every number the report checks comes from the engine: the problem record, the one τ* solver,
the coefficients (proven by Arb where the activation allows, else verified by two evaluations)
and the moment evaluator.  The items only compare them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import mpmath
import sympy as sp

from .._errors import (
    ActivationError,
    CenteringError,
    ContractionError,
    NoConvergence,
    PrecisionLoss,
)
from ..numeric import DEQCoefficients, DEQProblem, deq_coefficients, solve_tau

__all__ = ["FINDINGS", "Solved", "solve", "context", "exact_mpf"]

#: the engine's refusals that are findings about φ or the setting (reported as FAIL), as
#: opposed to malformed input (raised: exit status 2)
FINDINGS = (ActivationError, ContractionError, CenteringError, PrecisionLoss, NoConvergence)


def context(dps: int) -> Any:
    """A private mpmath context at ``dps`` digits (the global one is never touched)."""
    ctx = mpmath.MPContext()
    ctx.dps = dps
    return ctx


def exact_mpf(ctx: Any, r: sp.Rational) -> Any:
    """An exact rational as a number of ``ctx`` (rounded once, at its precision)."""
    return ctx.mpf(int(r.p)) / int(r.q)


@dataclasses.dataclass(frozen=True)
class Solved:
    """What the engine gave for one problem: coefficients, or at least τ* (CK only), or why not."""

    problem: DEQProblem
    coefficients: DEQCoefficients | None
    tau: Any  # mpf or None
    center: Any  # mpf or None
    slope: Any  # F'(τ*²) or None
    error: str = ""


def solve(problem: DEQProblem) -> Solved:
    """The engine's coefficients for ``problem``; for a φ whose φ' has a Dirac mass (a jump), the
    CK's fixed point alone; a finding as the ``error`` text."""
    try:
        c = deq_coefficients(problem)
    except FINDINGS as e:
        if not isinstance(e, ActivationError):
            return Solved(problem, None, None, None, None, str(e))
        # φ' has a Dirac mass (a jump): no NTK, but the CK's fixed point still exists
        try:
            fp = solve_tau(problem, context(problem.dps + 5))
        except FINDINGS as e2:
            return Solved(problem, None, None, None, None, f"{e}; {e2}")
        return Solved(problem, None, fp.tau, fp.center, fp.slope, str(e))
    sa2 = exact_mpf(mpmath.mp, problem.sigma_a2)
    slope = sa2 / 2 * c.moments["E_phi_sq_second"].value
    return Solved(problem, c, c.values["tau_star"].value, c.values["center"].value, slope)

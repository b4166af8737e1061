"""What digits cost: the precision cost model of the moment engines, and the dps check.

The model prices the engines beside it: closed forms (:mod:`._moments`), moments certified by
``acb.integral`` (:mod:`._enclose`, whose ``integrals()`` is the model's unit) and the verified
quadrature (:data:`._moments.MAX_DPS_QUADRATURE`); docs/limits.md has the measurements.  The
engines are imported inside the functions: building a :class:`~._problem.DEQProblem` at a
modest dps imports none of them.
"""

from __future__ import annotations

import dataclasses
import math

from .. import _arguments
from .._errors import BudgetExceeded
from ..symbolic import Activation

__all__ = [
    "BUDGET_SECONDS",
    "MAX_DPS_CLOSED",
    "MIN_DPS",
    "PrecisionCost",
    "check_dps",
    "dps_limit",
    "precision_cost",
]

MIN_DPS = 5
#: The most digits any activation is computed to (relu at dps 1000: ~1 s cold on one core).
MAX_DPS_CLOSED = 1000
#: Seconds (one idle core, cold cache) a certified call may be estimated to take.
BUDGET_SECONDS = 60.0
#: The certified path's cost model: ``COST_FIXED_S + COST_PER_INTEGRAL_S · n · (dps /
#: COST_REF_DPS) ** COST_EXPONENT`` seconds, n the ``acb.integral`` calls one moment evaluation
#: makes (:func:`precision_cost`).  Fitted on the library activations, cold, one core, and
#: rounded up (docs/limits.md has the measurements).
COST_FIXED_S = 3.0
COST_PER_INTEGRAL_S = 3.0
COST_REF_DPS = 500
COST_EXPONENT = 3.0


@dataclasses.dataclass(frozen=True)
class PrecisionCost:
    """What ``dps`` digits of ``activation`` cost, by the model of docs/limits.md.

    Attributes:
      seconds: the estimate (one idle core, cold cache).
      limit: the largest dps admitted for this activation.
      how: ``"closed"`` (every moment in closed form), ``"certified"`` (``acb.integral``)
        or ``"verified"`` (mpmath quadrature only: outside the enclosure rules, ``reason``).
      integrals: ``acb.integral`` calls per moment evaluation (``"certified"``; else 0).
    """

    seconds: float
    limit: int
    how: str
    integrals: int = 0
    reason: str = ""


def _certified_seconds(integrals: float, dps: int) -> float:
    return COST_FIXED_S + COST_PER_INTEGRAL_S * integrals * (dps / COST_REF_DPS) ** COST_EXPONENT


def precision_cost(activation: Activation, dps: int) -> PrecisionCost:
    """The cost model behind :func:`check_dps` (constants :data:`COST_FIXED_S` …).

    Closed forms cost little per digit (up to :data:`MAX_DPS_CLOSED`).  Moments by quadrature
    are certified by ``acb.integral`` (:mod:`._enclose`): the estimate grows with the integrals
    one moment evaluation makes (two moments share one complex integral; the steeper φ, the
    more panels: tanh(3x) counts 3) and with the cube of the digits (Gauss–Legendre nodes
    grow like the digits, an evaluation at p bits costs ~p^1.6, and the Gaussian's cut like
    √p; measured 2.2 from 300 to 500 digits, 3.0 from 500 to 700).  An activation outside the
    enclosure rules is computed by the verified quadrature, to
    :data:`._moments.MAX_DPS_QUADRATURE`.
    """
    from ._moments import MAX_DPS_QUADRATURE, evaluator_for

    if not evaluator_for(activation).open_names:
        return PrecisionCost(COST_FIXED_S * (dps / MAX_DPS_CLOSED) ** 2, MAX_DPS_CLOSED, "closed")
    from ._enclose import NotEnclosable, encloser_for

    try:
        n = encloser_for(activation).integrals()
    except NotEnclosable as e:
        return PrecisionCost(math.inf, MAX_DPS_QUADRATURE, "verified", reason=str(e))
    room = (BUDGET_SECONDS - COST_FIXED_S) / (COST_PER_INTEGRAL_S * n)
    limit = min(
        MAX_DPS_CLOSED, max(MAX_DPS_QUADRATURE, int(COST_REF_DPS * room ** (1 / COST_EXPONENT)))
    )
    return PrecisionCost(_certified_seconds(n, dps), limit, "certified", n)


def dps_limit(activation: Activation) -> int:
    """The largest dps the cost model admits for ``activation`` (:func:`precision_cost`)."""
    return precision_cost(activation, MAX_DPS_CLOSED).limit


def check_dps(dps: object, activation: Activation | None = None) -> int:
    """``dps`` as an int within [MIN_DPS, the activation's limit]; named errors otherwise.

    Raises:
      BudgetExceeded: beyond :data:`MAX_DPS_CLOSED`, or beyond what the cost model admits for
        ``activation`` (the message gives the estimate and the largest dps admitted).
    """
    dps = _arguments.integer(dps, "dps", MIN_DPS)
    if dps > MAX_DPS_CLOSED:
        raise BudgetExceeded(
            f"dps={_arguments.show(dps)} exceeds {MAX_DPS_CLOSED}, the most digits the time "
            "budget allows for any activation (docs/limits.md); ask for fewer digits."
        )
    if activation is None:
        return dps
    from ._moments import MAX_DPS_QUADRATURE, evaluator_for  # the engine the cap belongs to

    if dps <= MAX_DPS_QUADRATURE:
        evaluator_for(activation)  # the moment set is checked here at every dps
        return dps
    cost = precision_cost(activation, dps)
    if dps <= cost.limit:
        return dps
    if cost.how == "verified":
        raise BudgetExceeded(
            f"dps={_arguments.show(dps)} exceeds {cost.limit}: the moments of "
            f"{activation.name} need quadrature outside the Arb enclosure rules, so they are "
            f"verified by mpmath quadrature, which is budgeted to {cost.limit} digits "
            f"(docs/limits.md); ask for dps={cost.limit} or fewer."
        )
    raise BudgetExceeded(
        f"dps={_arguments.show(dps)}: certifying {activation.name} by {cost.integrals} Arb "
        f"integrals per moment evaluation is estimated at {cost.seconds:.0f} s, over the "
        f"{BUDGET_SECONDS:.0f} s budget (cost model in docs/limits.md); ask for "
        f"dps={cost.limit} or fewer."
    )

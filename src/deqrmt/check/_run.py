"""``deqrmt check``: does φ satisfy the paper's assumptions, and are deqrmt's numbers for it
consistent?  One :class:`~deqrmt.check.CheckReport` of assumption items (:mod:`._assumptions`)
and consistency items (:mod:`._consistency`)."""

from __future__ import annotations

from typing import Any

from .. import _arguments
from ..numeric import DEQProblem
from ..symbolic import Activation
from ._assumptions import assumption_items
from ._consistency import CONSISTENCY_CHECKS, DPS_PAIR, TITLES, consistency_items, guard
from ._engine import solve
from ._monte_carlo import monte_carlo_item
from ._report import NA, CheckItem, CheckReport

__all__ = ["check_activation"]


def check_activation(
    activation: str | Activation,
    sigma_a2: Any = "0.2",
    sigma_b2: Any = None,
    tau0: Any = 1,
    *,
    mc: bool = False,
    device: str = "auto",
) -> CheckReport:
    """Check Assumption 1 (ICML 2024) for φ and the engine's self-consistency for one setting.

    Args:
      activation: library name, ``name(params)``, an expression in x, or an Activation.
      sigma_a2, sigma_b2, tau0: the setting, exact (σ_b² defaults to 1 − σ_a²).
      mc: also compare exact kernels with the equivalents at n = 256, 512 (needs torch).
      device: where the ``mc`` kernels run (``auto``, ``cpu``, ``cuda``).

    Returns:
      A :class:`CheckReport`; ``report.passed`` is True when every applicable item passes.

    Raises:
      InvalidArgument: malformed input (unknown activation, σ out of range, …).  Findings
        about φ (discontinuous, no contraction, …) are FAIL items, not exceptions.

    Example:
      >>> report = check_activation("relu")
      >>> report.passed, report["stein"].status          # Stein vs finite differences: φ not smooth
      (True, 'N/A')
      >>> report["lipschitz"].numbers
      {'L₁': '1.0'}
    """
    mc = _arguments.boolean(mc, "mc")
    _arguments.choice(device, "device", ("auto", "cpu", "cuda"))
    problem = DEQProblem.make(activation, sigma_a2, sigma_b2, tau0, DPS_PAIR[0])
    solved = solve(problem)
    items = assumption_items(problem, solved)
    c = solved.coefficients
    if c is None:
        why = f"no coefficients to check: {solved.error}"
        items += [CheckItem(k, TITLES[k], NA, {}, why) for k in CONSISTENCY_CHECKS]
    else:
        items += consistency_items(problem, coefficients=c)
    if not mc:
        items.append(
            CheckItem("monte_carlo", TITLES["monte_carlo"], NA, {}, "not requested (--mc)")
        )
    elif c is None:
        items.append(
            CheckItem(
                "monte_carlo", TITLES["monte_carlo"], NA, {}, f"no coefficients: {solved.error}"
            )
        )
    else:
        items.append(guard("monte_carlo", lambda: monte_carlo_item(problem, device=device)))
    return CheckReport(problem, tuple(items))

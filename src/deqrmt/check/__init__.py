"""A user's activation checked: the paper's Assumption 1 and the engine's consistency.

Above :mod:`deqrmt.numeric` and :mod:`deqrmt.validate` (layers: symbolic → numeric → validate →
{check, sweep} → cli).  :func:`check_activation` runs every item into a :class:`CheckReport`;
the items are public too, each taking what it compares, so a test can feed one a wrong value.
:mod:`deqrmt.testing` builds its property checks on them.
"""

from ._assumptions import assumption_items as assumption_items
from ._assumptions import lipschitz_item as lipschitz_item
from ._assumptions import variance_lipschitz_item as variance_lipschitz_item
from ._consistency import CODEGEN_DPS as CODEGEN_DPS
from ._consistency import CONSISTENCY_CHECKS as CONSISTENCY_CHECKS
from ._consistency import DPS_PAIR as DPS_PAIR
from ._consistency import codegen_item as codegen_item
from ._consistency import consistency_items as consistency_items
from ._consistency import digits_item as digits_item
from ._consistency import explicit_limit_item as explicit_limit_item
from ._consistency import fixed_point_item as fixed_point_item
from ._monte_carlo import monte_carlo_item as monte_carlo_item
from ._report import FAIL as FAIL
from ._report import NA as NA
from ._report import PASS as PASS
from ._report import CheckItem as CheckItem
from ._report import CheckReport as CheckReport
from ._run import check_activation as check_activation
from ._stein import stein_item as stein_item

__all__ = [
    "PASS",
    "FAIL",
    "NA",
    "CheckItem",
    "CheckReport",
    "check_activation",
    "assumption_items",
    "consistency_items",
    "CONSISTENCY_CHECKS",
    "DPS_PAIR",
    "CODEGEN_DPS",
    "lipschitz_item",
    "variance_lipschitz_item",
    "digits_item",
    "fixed_point_item",
    "stein_item",
    "codegen_item",
    "explicit_limit_item",
    "monte_carlo_item",
]

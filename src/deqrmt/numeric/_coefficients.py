"""Compatibility names for modules not yet moved to the split DEQ pipeline (issue 20).

The DEQ lives in :mod:`._deq` (dispatcher), :mod:`._deq_records`, :mod:`._deq_formulas`,
:mod:`._deq_verified` and :mod:`._deq_certified`; the explicit network in :mod:`._explicit`.
Remove this module once ``_check``, ``_design`` and ``_sweep`` import those homes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._deq import deq_coefficients
from ._deq_formulas import FORMULA_KEYS as _FORMULA_KEYS
from ._deq_formulas import deq_formulas, layer_formulas
from ._deq_records import DEQ_KEYS, MOMENT_KEYS, NTK_KEYS, DEQCoefficients
from ._deq_verified import verified as _deq_coefficients
from ._explicit import LAYER_KEYS, ExplicitCoefficients, explicit_coefficients

__all__ = [
    "DEQ_KEYS",
    "LAYER_KEYS",
    "MOMENT_KEYS",
    "NTK_KEYS",
    "DEQCoefficients",
    "ExplicitCoefficients",
    "deq_coefficients",
    "explicit_coefficients",
    "_FORMULA_KEYS",
    "_deq_coefficients",
    "_deq_function",
    "_layer_function",
]


def _deq_function(
    trainable: tuple[str, ...] = ("a", "A"), ntk: bool = True
) -> tuple[Callable[..., tuple[Any, ...]], list[str]]:
    """The compiled DEQ formulas and their argument names (use :func:`deq_formulas`)."""
    f = deq_formulas(trainable, ntk)
    return f.fn, list(f.args)


def _layer_function() -> tuple[Callable[..., tuple[Any, ...]], list[str]]:
    """The compiled layer recursion and its argument names (use :func:`layer_formulas`)."""
    f = layer_formulas()
    return f.fn, list(f.args)

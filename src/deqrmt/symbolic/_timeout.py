"""Deprecated: use :mod:`deqrmt.symbolic._effort` (call budgets, no clock).

Kept only while ``numeric/_check.py`` moves to ``_effort.bounded(fn, calls)``.  The old
"seconds" argument is turned into a fixed number of Python calls, not timed: no clock decides
an output.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from ._effort import bounded as _bounded

__all__ = ["bounded"]

T = TypeVar("T")

#: calls per former "second" (about what SymPy makes in one second, traced, on a 2024 laptop core)
CALLS_PER_SECOND = 500_000


def bounded(fn: Callable[[], T], seconds: float) -> T | None:
    """``_effort.bounded(fn, round(seconds · CALLS_PER_SECOND))``."""
    return _bounded(fn, round(seconds * CALLS_PER_SECOND))

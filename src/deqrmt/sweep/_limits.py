"""The budgets of a sweep's untrusted inputs: the spec's size, the tasks' memory, message text.

A SPEC.toml, a results store and a scheduler address come from outside the package (a shared
directory, a colleague, a script).  Each is checked against the limits below *before any work*,
and refused with a one-line :class:`deqrmt.BudgetExceeded` (or :class:`deqrmt.SpecError`,
:class:`deqrmt.StoreError`) that names the field and the fix.  The limits are module constants
(docs/limits.md, "Sweeps"); a Python user who accepts a bigger sweep may raise them.
"""

from __future__ import annotations

import reprlib
from typing import Any

__all__ = [
    "MAX_DEPTH",
    "MAX_DRAWS",
    "MAX_LIST",
    "MAX_RATIO",
    "MAX_SEED",
    "MAX_SEEDS",
    "MAX_SPEC_BYTES",
    "MAX_TASKS",
    "machine_memory",
    "show",
    "size_text",
    "task_bytes",
]

#: Bytes of a SPEC.toml (a real one is a few hundred; a list of 10⁴ seeds is ~60 KB).
MAX_SPEC_BYTES = 256 * 1024
#: Nesting of the TOML text: brackets ``[ {`` inside each other, and the parts of one dotted key
#: (``a.b.c`` is 3).  A spec needs 2; tomllib recurses on brackets and is quadratic in a
#: dotted key's parts (10⁵ parts took > 100 GB).
MAX_DEPTH = 8
#: Values of one list or ``start:stop:count`` range (activations, σ², τ0, n, m, families):
#: the engine's own ``MAX_GRID``.
MAX_LIST = 200
#: Seeds of a data kind (``seeds = 3`` or a list).
MAX_SEEDS = 10_000
#: Largest seed (numpy and torch take 64-bit seeds).
MAX_SEED = 2**63 - 1
#: Monte Carlo networks per validate task (each one is a full DEQ solve).
MAX_DRAWS = 1000
#: p/n of the data kinds (the slides use 0.8, the authors' code 1.25).
MAX_RATIO = 1000
#: Tasks of one spec: expanding 10⁵ tasks takes ~3 s and ~100 MB on the driver, which also
#: keeps one row per task in its summary.
MAX_TASKS = 100_000

_SHOW = reprlib.Repr()
_SHOW.maxlevel = 3
_SHOW.maxlist = 6
_SHOW.maxdict = 6
_SHOW.maxstring = 60
_SHOW.maxother = 60
_SHOW.maxlong = 40


def show(value: Any) -> str:
    """``repr(value)`` cut to a readable size: a list of 10⁶ items or a 10⁴-digit integer in an
    error message must not become megabytes of one line (control characters stay escaped)."""
    return _SHOW.repr(value)


def task_bytes(n: int, p: int, m: int = 0, draws: int = 1) -> int:
    """Peak memory estimate (bytes) of one ``exact`` (m = 0) or ``validate`` task's process:
    :func:`deqrmt._budget.run_bytes` (8·(12n² + 4np + 2m² + 4m(n + p)), measured) plus 256 MiB
    for a fresh interpreter with numpy and torch.  At the sizes that matter for the budget it
    over-counts slightly (n = 2048: 742 MiB estimated, 705 MiB measured).
    """
    from .._budget import run_bytes

    del draws  # sequential: the peak is one network's
    return run_bytes(n, p, m) + 256 * 2**20


def machine_memory() -> int | None:
    """Bytes a task may use on this machine (None where the OS does not say): the one memory
    model, :func:`deqrmt._budget.available_memory` (free memory, the address-space and cgroup
    limits)."""
    from .._budget import available_memory

    return available_memory()


def size_text(nbytes: int) -> str:
    """``1.5 GiB``, ``96 TiB``: a byte count for a message (astronomical ones included)."""
    units = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
    if nbytes >= 1024 ** len(units):
        return f"more than 1024 {units[-1]}"
    k = 0
    while k + 1 < len(units) and nbytes >= 1024 ** (k + 1):
        k += 1
    return f"{nbytes} B" if k == 0 else f"{nbytes / 1024**k:.3g} {units[k]}"

"""Memory budgets: an estimate of what a run will hold, refused above what the machine has.

A size from the command line or a file (n, d, m) decides how large the arrays of a run are;
a run that cannot fit must be refused before it starts, with the estimate and the fix in the
message, not found out by the kernel's OOM killer (or a 291 TiB ``MemoryError``).  The memory
available is the least of the physical memory, the cgroup limit (a container's) and the
address-space limit (``ulimit -v``, ``resource.setrlimit``).
"""

from __future__ import annotations

import contextlib
import os

from ._errors import BudgetExceeded

__all__ = ["available_memory", "check_memory", "format_bytes"]

#: what is left for the run's own arrays: the rest is the interpreter, libraries, the OS
_USABLE = 0.8


def available_memory() -> int | None:
    """Bytes this process may use: min(physical, cgroup memory.max, RLIMIT_AS); None if unknown."""
    limits: list[int] = []
    with contextlib.suppress(ValueError, OSError, AttributeError):
        limits.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        with contextlib.suppress(OSError, ValueError), open(path, encoding="ascii") as fh:
            text = fh.read(64).strip()
            if text.isdigit() and int(text) < 1 << 60:
                limits.append(int(text))
    with contextlib.suppress(ImportError, ValueError, OSError):
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY and soft > 0:
            limits.append(soft)
    return min(limits) if limits else None


def format_bytes(n: float) -> str:
    """``1536`` → ``'1.5 KiB'``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.3g} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def check_memory(estimate: int, what: str, fix: str) -> None:
    """Raise :class:`BudgetExceeded` when ``estimate`` bytes exceed what this machine offers."""
    available = available_memory()
    if available is not None and estimate > _USABLE * available:
        raise BudgetExceeded(
            f"{what} needs about {format_bytes(estimate)} of memory, more than this machine "
            f"offers ({format_bytes(available)}, of which {_USABLE:.0%} for the run); {fix}."
        )

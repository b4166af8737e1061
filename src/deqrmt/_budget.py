"""Memory budgets: an estimate of what a run will hold, refused above what this process may use.

A size from the command line, a file or an argument (n, d, m, a data matrix's rows) decides how
large the arrays of a run are; a run that cannot fit must be refused before it starts, with the
estimate and the fix in the message, not found out by the kernel's OOM killer, a 291 TiB
``MemoryError`` or torch's allocator.  The memory available (:func:`available_memory`) is the
least of what the process may still take from each limit it lives under:

* the memory free on the machine: ``MemAvailable`` of ``/proc/meminfo`` (the physical memory
  where the platform has no ``/proc``);
* the address-space and data-segment limits (``ulimit -v``, ``resource.setrlimit``): the soft
  limit of ``RLIMIT_AS`` less the process's current ``VmSize``, of ``RLIMIT_DATA`` less its
  ``VmData`` (``/proc/self/status``) — an interpreter that imported torch already holds a few
  hundred MB of address space, so the limit alone overstates what is left;
* the cgroup's (a container's, a systemd slice's) ``memory.max`` less ``memory.current``, at
  the process's own cgroup and every ancestor (cgroup v2, found through ``/proc/self/cgroup``),
  or ``memory.limit_in_bytes`` less ``memory.usage_in_bytes`` (v1).

Every file is read with a bounded read (a few kB), opened without blocking; an unreadable or
malformed one is skipped, never an error.
"""

from __future__ import annotations

import contextlib
import os
import stat

from ._errors import BudgetExceeded

__all__ = [
    "available_memory",
    "check_gpu_memory",
    "check_memory",
    "format_bytes",
    "memory_limits",
    "run_bytes",
]

#: what is left for the run's own arrays: the rest is the interpreter, libraries, the OS
_USABLE = 0.8
#: the files read (module attributes, so that a test can point them at a fake tree)
MEMINFO = "/proc/meminfo"
SELF_STATUS = "/proc/self/status"
SELF_CGROUP = "/proc/self/cgroup"
CGROUP_ROOT = "/sys/fs/cgroup"
#: no limit: cgroup files say "max" (v2) or a page-rounded 2^63 (v1)
_UNLIMITED = 1 << 60
#: bytes read from any one file: /proc/self/status is ~1.5 kB, a cgroup file a line
_READ = 16 * 1024


def _read(path: str) -> str | None:
    """The start of a small text file (None when it cannot be read, or is not a regular file:
    a FIFO planted in a fake tree must not hang the budget)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, _READ).decode("ascii", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def _kib_field(text: str | None, field: str) -> int | None:
    """``field:   1234 kB`` of /proc/meminfo or /proc/self/status, in bytes."""
    for line in (text or "").splitlines():
        key, _, rest = line.partition(":")
        if key == field:
            parts = rest.split()
            if parts and parts[0].isdigit() and len(parts[0]) < 19:
                return int(parts[0]) * 1024
    return None


def _number(text: str | None) -> int | None:
    """A cgroup file's one number (None for ``max``, a blank or malformed file, or no limit)."""
    t = (text or "").strip()
    if not (t.isascii() and t.isdigit()) or len(t) > 20:
        return None
    n = int(t)
    return n if n < _UNLIMITED else None


def _physical() -> int | None:
    with contextlib.suppress(ValueError, OSError, AttributeError):
        pages, page = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        if pages > 0 and page > 0:
            return int(pages) * int(page)
    return None


def _rlimit_headroom() -> dict[str, int]:
    """What ``RLIMIT_AS`` and ``RLIMIT_DATA`` leave (the soft limit less the current size)."""
    out: dict[str, int] = {}
    try:
        import resource
    except ImportError:  # not on POSIX
        return out
    status = None
    for limit, field in (("RLIMIT_AS", "VmSize"), ("RLIMIT_DATA", "VmData")):
        with contextlib.suppress(ValueError, OSError, AttributeError):
            soft, _ = resource.getrlimit(getattr(resource, limit))
            if soft == resource.RLIM_INFINITY or soft <= 0:
                continue
            if status is None:
                status = _read(SELF_STATUS) or ""
            used = _kib_field(status, field) or 0
            out[limit] = max(0, soft - used)
    return out


def _cgroup_dirs() -> list[tuple[str, str, str]]:
    """(directory, limit file, usage file) of every memory cgroup this process is under,
    innermost first."""
    text = _read(SELF_CGROUP)
    found: list[tuple[str, str, str]] = []
    for line in (text or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "":  # v2: "0::/user.slice/…"
            base, files = CGROUP_ROOT, ("memory.max", "memory.current")
        elif "memory" in controllers.split(","):  # v1: "4:memory:/docker/…"
            base, files = (
                os.path.join(CGROUP_ROOT, "memory"),
                (
                    "memory.limit_in_bytes",
                    "memory.usage_in_bytes",
                ),
            )
        else:
            continue
        rel = [p for p in path.strip().split("/") if p and p not in (".", "..")]
        # the process's directory and each ancestor up to the root; in a container the
        # namespace's root is the mount's root, where "/" points
        for k in range(len(rel), -1, -1):
            found.append((os.path.join(base, *rel[:k]), *files))
    if not found:  # no /proc/self/cgroup: the mount's root, as a container sees it
        found = [
            (CGROUP_ROOT, "memory.max", "memory.current"),
            (os.path.join(CGROUP_ROOT, "memory"), "memory.limit_in_bytes", "memory.usage_in_bytes"),
        ]
    return found


def _cgroup_headroom() -> int | None:
    """The least ``limit − usage`` over the memory cgroups this process is under."""
    best: int | None = None
    seen: set[str] = set()
    for directory, limit_file, usage_file in _cgroup_dirs():
        if directory in seen:
            continue
        seen.add(directory)
        limit = _number(_read(os.path.join(directory, limit_file)))
        if limit is None:
            continue
        usage = _number(_read(os.path.join(directory, usage_file))) or 0
        room = max(0, limit - usage)
        best = room if best is None else min(best, room)
    return best


def memory_limits() -> dict[str, int]:
    """Each figure :func:`available_memory` takes the least of, in bytes, by name
    (``MemAvailable``, ``physical``, ``RLIMIT_AS``, ``RLIMIT_DATA``, ``cgroup``); a limit
    that does not apply or cannot be read is absent."""
    out: dict[str, int] = {}
    free = _kib_field(_read(MEMINFO), "MemAvailable")
    if free is not None:
        out["MemAvailable"] = free
    else:
        physical = _physical()
        if physical is not None:
            out["physical"] = physical
    out.update(_rlimit_headroom())
    cgroup = _cgroup_headroom()
    if cgroup is not None:
        out["cgroup"] = cgroup
    return out


def available_memory() -> int | None:
    """Bytes this process may still allocate: the least of :func:`memory_limits` (None when
    none is known)."""
    limits = memory_limits()
    return min(limits.values()) if limits else None


def run_bytes(n: int, p: int, m: int = 0) -> int:
    """Peak bytes of one Monte Carlo check on n samples of dimension p with a width-m DEQ
    (m = 0: the exact kernels alone), beyond the interpreter.

    Measured (``python benchmarks/sweep.py --memory``, relu, float64): the exact kernels hold
    about 12 n × n matrices (the equivalents Ḡ, K̄, the exact G*, K*, their differences and
    spectra) on top of the p × n data; a network ~2 m × m and ~4 m × (n + p) (weights, the
    fixed point, the adjoint solve); networks drawn one after another.
    """
    return 8 * (12 * n * n + 4 * n * p + 2 * m * m + 4 * m * (n + p))


def format_bytes(n: float) -> str:
    """``1536`` → ``'1.5 KiB'``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.3g} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def _bound_by(available: int) -> str:
    """Which limit ``available`` is (a phrase for the message; empty when none matches)."""
    names = [k for k, v in memory_limits().items() if v == available]
    if not names:
        return ""
    return (
        ": "
        + {
            "MemAvailable": "free memory",
            "physical": "physical memory",
            "RLIMIT_AS": "the address-space limit (ulimit -v) less what the process holds",
            "RLIMIT_DATA": "the data-segment limit (ulimit -d) less what the process holds",
            "cgroup": "the cgroup's memory.max less its current use",
        }[names[0]]
    )


def check_gpu_memory(estimate: float, free: float, what: str, fix: str) -> None:
    """Raise :class:`BudgetExceeded` when ``estimate`` bytes exceed the ``free`` bytes of a GPU
    (``torch.cuda.mem_get_info``: the caller asks torch, so this module never imports it).
    ``what`` names the work with its verb (``"a 10 × 10 kernel needs"``)."""
    if estimate > free:
        raise BudgetExceeded(
            f"{what} about {estimate / 2**30:.3g} GiB of GPU memory, more than is free "
            f"({free / 2**30:.3g} GiB); {fix}, or use device='cpu'."
        )


def check_memory(estimate: float, what: str, fix: str) -> None:
    """Raise :class:`BudgetExceeded` when ``estimate`` bytes exceed what this process may use
    (:data:`_USABLE` of :func:`available_memory`)."""
    available = available_memory()
    if available is not None and estimate > _USABLE * available:
        raise BudgetExceeded(
            f"{what} needs about {format_bytes(estimate)} of memory, more than this process "
            f"may use ({format_bytes(available)}{_bound_by(available)}; {_USABLE:.0%} of it for the "
            f"run); {fix}."
        )

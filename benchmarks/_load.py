"""The machine's load around a timed comparison, and the rule that withholds a ratio (issue 24).

Every benchmark prints ``os.getloadavg()`` and the core count before and after its timed
comparisons.  A ratio of two times is only worth printing when both were measured on a machine
that was not oversubscribed: when the 1-minute load exceeds ``cores − 0.5`` at the start or at
the end of a comparison, the times are still printed but the ratio is replaced by
``ratio withheld: machine busy (load X on N cores)``, unless the user asks for it anyway
(``--force-ratio``; the printed ratio is then marked "forced").

The load at the end of a long comparison counts the benchmark's own work too (a 2-minute run on
every core leaves a 1-minute load near the core count on an idle machine).  So when the end's
load is high after at least :data:`OWN_WINDOW` seconds, the rule asks the CPU clock instead:
the machine's busy CPU time (``/proc/stat``) minus this process's and its children's
(``getrusage``) over the comparison's wall time is what *other* processes used; at most 0.5
of a core and the ratio is printed, with a note that says so.

Use from a benchmark script::

    from _load import Load, add_force_flag, ratio_text
    before = Load.now()
    ...  # the timed comparison
    print(ratio_text(t_base / t_fast, before, Load.now(), force=args.force_ratio))

The scripts are run as ``python benchmarks/x.py`` (their folder is on ``sys.path``) or by
``runpy.run_path`` in the tests (each script puts its own folder on ``sys.path`` first).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import resource
import threading
import time
from collections.abc import Iterator

__all__ = [
    "Load",
    "add_force_flag",
    "busy",
    "judged_busy",
    "load_line",
    "others_cores",
    "ratio_cell",
    "ratio_text",
    "track_descendants",
    "withheld",
]

OWN_WINDOW = 20.0  # seconds: below it the end's 1-minute load is not this run's own doing


class _Descendants:
    """The CPU seconds of every process descended from this one, sampled every half second by a
    daemon thread (:func:`track_descendants`): worker processes that a pool or cluster starts and
    kills are not reaped into ``RUSAGE_CHILDREN`` of ours, so without it their work would count
    as other processes' load."""

    def __init__(self) -> None:
        self.seen: dict[tuple[int, int], float] = {}  # (pid, start time) → utime + stime, s
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="load-descendants", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.wait(0.5):
            self.sample()

    def sample(self) -> float:
        hz = os.sysconf("SC_CLK_TCK")
        parent: dict[int, int] = {}
        cpu: dict[int, tuple[int, float]] = {}
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat", encoding="ascii", errors="replace") as f:
                    rest = f.read().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue  # gone meanwhile
            pid = int(name)
            parent[pid] = int(rest[1])
            cpu[pid] = (int(rest[19]), (int(rest[11]) + int(rest[12])) / hz)
        mine, frontier = set(), [os.getpid()]
        children: dict[int, list[int]] = {}
        for pid, ppid in parent.items():
            children.setdefault(ppid, []).append(pid)
        while frontier:
            for child in children.get(frontier.pop(), ()):
                if child not in mine:
                    mine.add(child)
                    frontier.append(child)
        with self.lock:
            for pid in mine:
                start, seconds = cpu[pid]
                self.seen[(pid, start)] = max(seconds, self.seen.get((pid, start), 0.0))
            return sum(self.seen.values())


_TREE: list[_Descendants] = []


@contextlib.contextmanager
def track_descendants() -> Iterator[None]:
    """Within the block, count the CPU of this process's descendants (sampled) as this run's own:
    for benchmarks that start worker processes (Dask clusters, pools).  Linux only; else the
    block runs without it.  The sampling thread stops at the block's end."""
    if _TREE or not os.path.isdir("/proc/self"):
        yield
        return
    _TREE.append(_Descendants())
    try:
        yield
    finally:
        tree = _TREE.pop()
        tree.stop.set()
        tree.thread.join()


def _cpu_stamp() -> tuple[float, float, float] | None:
    """(monotonic wall s, the machine's busy CPU s, this run's CPU s: this process's and its
    reaped children's, or its sampled descendants' where :func:`track_descendants` is on and
    they are more), or None where /proc/stat is not there."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
        hz = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    machine = (sum(fields[:8]) - idle) / hz  # user … steal; guest is inside user already
    me = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    children = reaped.ru_utime + reaped.ru_stime
    if _TREE:
        # the larger of two undercounts: the sampled tree misses the last half second of a
        # process, the reaped count misses what was never reaped by us
        children = max(children, _TREE[0].sample())
    return time.monotonic(), machine, me.ru_utime + me.ru_stime + children


@dataclasses.dataclass(frozen=True)
class Load:
    """The load averages (1, 5, 15 minutes) and the number of cores, read at one moment."""

    one: float
    five: float
    fifteen: float
    cores: int
    stamp: tuple[float, float, float] | None = None  # see _cpu_stamp

    @classmethod
    def now(cls) -> Load:
        one, five, fifteen = os.getloadavg()
        return cls(one, five, fifteen, os.cpu_count() or 1, _cpu_stamp())

    @property
    def busy(self) -> bool:
        """Whether the 1-minute load exceeds cores − 0.5 (another process wants a core)."""
        return self.one > self.cores - 0.5

    def text(self) -> str:
        return f"load {self.one:.2f} {self.five:.2f} {self.fifteen:.2f} on {self.cores} cores"


def busy(*loads: Load) -> Load | None:
    """The first of ``loads`` (start, end of a comparison) under which the machine was busy."""
    return next((ld for ld in loads if ld.busy), None)


def others_cores(before: Load, after: Load) -> float | None:
    """Cores other processes used on average between ``before`` and ``after`` (the machine's busy
    CPU time less this process's and its children's), or None when not measured or the window is
    shorter than :data:`OWN_WINDOW`."""
    if before.stamp is None or after.stamp is None:
        return None
    wall = after.stamp[0] - before.stamp[0]
    if wall < OWN_WINDOW:
        return None
    others = (after.stamp[1] - before.stamp[1]) - (after.stamp[2] - before.stamp[2])
    return max(0.0, others / wall)


def judged_busy(before: Load, after: Load) -> Load | None:
    """:func:`busy` of a comparison, except that a high load at the end of a long one is not
    held against it when other processes used at most half a core meanwhile (it was this run's)."""
    hot = busy(before, after)
    if hot is after and not before.busy:
        others = others_cores(before, after)
        if others is not None and others <= 0.5:
            return None
    return hot


def _own_note(before: Load, after: Load) -> str:
    """Why a ratio is printed under a high end load, or ''."""
    if busy(before, after) is None or judged_busy(before, after) is not None:
        return ""
    others = others_cores(before, after) or 0.0
    return (
        f" (load {after.one:.2f} at the end was this run's own; other processes used "
        f"{others:.2f} cores)"
    )


def load_line(when: str, load: Load | None = None) -> str:
    """``"load before: load 0.52 0.61 0.70 on 2 cores"``, for the start and end of a run."""
    return f"load {when}: {(load or Load.now()).text()}"


def ratio_text(
    ratio: float, before: Load, after: Load, *, force: bool = False, fmt: str = "{:.2f}x"
) -> str:
    """The ratio as text, or the withholding notice when the machine was busy at either end.

    The notice names the larger of the two 1-minute loads (the one that decided).
    """
    hot = judged_busy(before, after)
    if hot is None:
        return fmt.format(ratio) + _own_note(before, after)
    if force:
        return (
            fmt.format(ratio) + f" (forced; machine busy: load {hot.one:.2f} on {hot.cores} cores)"
        )
    worst = max(before.one, after.one)
    return f"ratio withheld: machine busy (load {worst:.2f} on {hot.cores} cores)"


def withheld(before: Load, after: Load, *, force: bool = False) -> bool:
    """Whether :func:`ratio_text` withholds a ratio measured between ``before`` and ``after``
    (the machine busy at either end, and no ``--force-ratio``): what depends on the ratio (a
    target met or missed) is then not judged either."""
    return not force and judged_busy(before, after) is not None


def ratio_cell(
    ratio: float,
    before: Load,
    after: Load,
    *,
    force: bool = False,
    fmt: str = "{:.2f}x",
    width: int = 0,
) -> tuple[str, str]:
    """A ratio for a table's column, and the note for the end of its row (or a line of its own).

    The cell is ``fmt.format(ratio)``, or ``-`` when the ratio is withheld, right-aligned to
    ``width``; the note is empty on an idle machine, else :func:`ratio_text`'s notice (withheld)
    or its "forced" mark.
    """
    hold = withheld(before, after, force=force)
    cell = "-" if hold else fmt.format(ratio)
    if judged_busy(before, after) is None:
        return cell.rjust(width), _own_note(before, after).strip()
    # with fmt "" ratio_text gives only what follows the number: the notice, or " (forced; …)"
    return cell.rjust(width), ratio_text(ratio, before, after, force=force, fmt="").strip()


def add_force_flag(parser: argparse.ArgumentParser) -> None:
    """The ``--force-ratio`` flag every benchmark takes."""
    parser.add_argument(
        "--force-ratio",
        action="store_true",
        help="print ratios even when the load exceeds cores − 0.5 (they are marked 'forced')",
    )

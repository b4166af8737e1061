"""What a sweep reports: its progress while it runs, and the state of the spec's tasks after.

:class:`SweepProgress` goes to the ``progress`` callable after each stored result;
:class:`SweepResult` (with one :class:`GroupSummary` per kind and activation, read back from
the store by :func:`summarise`) is what :func:`deqrmt.sweep.run_sweep` returns: a table for
people, a dict for ``--json``.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ._spec import SweepSpec, Task
from ._store import ResultStore

__all__ = ["GroupSummary", "SweepProgress", "SweepResult", "summarise"]


@dataclasses.dataclass(frozen=True)
class SweepProgress:
    """The state of a running sweep, passed to the ``progress`` callable after each result."""

    total: int  # tasks of the spec
    already_stored: int  # found in the store at the start (not run)
    submitted: int  # sent to the cluster by this run
    done: int  # results stored by this run (successes and failures)
    failed: int  # of ``done``, the failures
    elapsed: float  # seconds since the first submission
    last: str = ""  # label of the last task stored

    @property
    def remaining(self) -> int:
        return self.submitted - self.done

    @property
    def rate(self) -> float:
        """Tasks per second in this run."""
        return self.done / self.elapsed if self.elapsed > 0 else 0.0


@dataclasses.dataclass(frozen=True)
class GroupSummary:
    """The spec's tasks of one (kind, activation), as the store holds them after the run."""

    kind: str
    activation: str
    tasks: int
    ok: int
    failed: int
    missing: int
    median_seconds: float | None
    total_seconds: float


@dataclasses.dataclass(frozen=True)
class SweepResult:
    """What a :func:`run_sweep` call did, and the state of the spec's tasks in the store.

    ``ok`` is True when every task of the spec is stored without an error.
    """

    store: Path
    scheduler: str
    total: int
    already_stored: int
    submitted: int
    completed: int
    failed_this_run: int
    interrupted: bool
    seconds: float
    groups: tuple[GroupSummary, ...]
    errors: tuple[tuple[str, str], ...]  # (task label, error) of every stored failure
    run_id: int

    @property
    def failed(self) -> int:
        return sum(g.failed for g in self.groups)

    @property
    def missing(self) -> int:
        return sum(g.missing for g in self.groups)

    @property
    def ok(self) -> bool:
        return not self.interrupted and self.failed == 0 and self.missing == 0

    @property
    def rate(self) -> float:
        return self.completed / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["store"] = str(self.store)
        d["failed"], d["missing"], d["ok"] = self.failed, self.missing, self.ok
        d["rate"] = self.rate
        d["groups"] = [dataclasses.asdict(g) for g in self.groups]
        d["errors"] = [{"task": t, "error": e} for t, e in self.errors]
        return d

    def table(self, max_errors: int = 5) -> str:
        """The end-of-sweep summary: one row per (kind, activation), then this run's numbers."""
        head = ("kind", "activation", "tasks", "ok", "failed", "missing", "median s", "total s")
        rows: list[tuple[str, ...]] = [
            (
                g.kind,
                g.activation,
                str(g.tasks),
                str(g.ok),
                str(g.failed),
                str(g.missing),
                "-" if g.median_seconds is None else f"{g.median_seconds:.3g}",
                f"{g.total_seconds:.1f}",
            )
            for g in self.groups
        ]
        tot = [sum(int(r[i]) for r in rows) for i in (2, 3, 4, 5)]
        rows.append(
            (
                "total",
                "",
                *(str(v) for v in tot),
                "",
                f"{sum(g.total_seconds for g in self.groups):.1f}",
            )
        )
        widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
        left = {0, 1}

        def fmt(r: Sequence[str]) -> str:
            return "  ".join(
                c.ljust(w) if i in left else c.rjust(w)
                for i, (c, w) in enumerate(zip(r, widths, strict=True))
            ).rstrip()

        lines = [fmt(head), "-" * len(fmt(head)), *(fmt(r) for r in rows[:-1])]
        lines += ["-" * len(fmt(head)), fmt(rows[-1]), ""]
        state = " (interrupted)" if self.interrupted else ""
        lines.append(
            f"this run{state}: {self.submitted} submitted, {self.completed} stored "
            f"({self.failed_this_run} failed) in {self.seconds:.1f} s ({self.rate:.2f} tasks/s) "
            f"on {self.scheduler}; {self.already_stored} already stored; store {self.store}"
        )
        for label, err in self.errors[:max_errors]:
            first = err.splitlines()[0] if err else ""
            lines.append(f"failed: {label}: {first}")
        if len(self.errors) > max_errors:
            lines.append(f"… and {len(self.errors) - max_errors} more failures (see the store).")
        if self.missing:
            lines.append(f"{self.missing} tasks are missing: run the same command again to resume.")
        return "\n".join(lines)


def summarise(
    spec: SweepSpec, st: ResultStore
) -> tuple[tuple[GroupSummary, ...], tuple[tuple[str, str], ...]]:
    stored = {r.key: r for r in st.records(spec.keys)}
    groups: dict[tuple[str, str], list[Task]] = {}
    for t in spec.tasks:
        groups.setdefault((t.kind, str(t.inputs["activation"])), []).append(t)
    out = []
    errors = []
    for (kind, act), tasks in groups.items():
        recs = [stored[t.key] for t in tasks if t.key in stored]
        ok = [r for r in recs if r.ok]
        secs = [r.seconds for r in ok if r.seconds is not None]
        out.append(
            GroupSummary(
                kind=kind,
                activation=act,
                tasks=len(tasks),
                ok=len(ok),
                failed=len(recs) - len(ok),
                missing=len(tasks) - len(recs),
                median_seconds=statistics.median(secs) if secs else None,
                total_seconds=float(sum(r.seconds or 0.0 for r in recs)),
            )
        )
        errors += [
            (t.label, stored[t.key].error or "")
            for t in tasks
            if t.key in stored and not stored[t.key].ok
        ]
    return tuple(out), tuple(errors)

r"""Run a sweep on Dask's distributed scheduler: submit what is missing, store what comes back.

* **Cluster.**  Default: an embedded ``LocalCluster`` on 127.0.0.1 with one single-threaded
  worker process per core (the coefficient engine is pure Python/mpmath, so processes, not
  threads, are what run in parallel).  ``scheduler="tcp://HOST:PORT"`` uses an existing cluster
  (``dask scheduler`` + ``dask worker``), on one machine or many.
* **GPUs** through Dask worker resources: with ``device="cuda"`` the torch tasks (``exact``,
  ``validate``) are submitted with ``resources={"GPU": 1}``, so they run only on workers started
  with ``--resources GPU=1``, one at a time per GPU; the CPU tasks run everywhere.  The embedded
  cluster gives its first k workers one GPU each (``CUDA_VISIBLE_DEVICES``).
* **Resume.**  Only the tasks whose key is not in the store are submitted, longest first
  (:func:`largest_first`: by n, kind, digits and the seconds the store has seen per activation).
* **Faults.**  A task lost with its worker is rescheduled by the Dask scheduler on another
  worker (up to ``distributed.scheduler.allowed-failures`` worker deaths, then ``KilledWorker``
  is recorded); a task that raised a non-deqrmt exception is retried ``retries`` times
  (Dask's ``retries=``); a deqrmt error is recorded at once.  Either way the sweep goes on.
* **Writes** happen only here, in the driver, one transaction per result, as results arrive
  (``as_completed``): Ctrl-C (SIGINT) stops the sweep cleanly and every stored result stays.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import os
import shutil
import signal
import statistics
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import CancelledError
from pathlib import Path
from typing import Any

from .._errors import InvalidArgument, MissingExtra
from ._spec import TORCH_KINDS, SweepSpec, Task, load_spec
from ._store import Record, ResultStore
from ._tasks import execute

__all__ = [
    "QUIET_DASK",
    "GroupSummary",
    "SweepProgress",
    "SweepResult",
    "embedded_cluster",
    "largest_first",
    "require_distributed",
    "run_sweep",
]

INSTALL_HINT = "pip install 'deqrmt[sweep]'"
#: Seconds to wait for an external scheduler to answer, and for its first workers to connect.
CONNECT_TIMEOUT = 30
WORKER_WAIT = 120
#: Seconds allowed to close the client and the embedded cluster.
CLOSE_TIMEOUT = 30
DEVICES = ("auto", "cpu", "cuda")


def require_distributed() -> Any:
    """``import distributed``, or a one-line :class:`MissingExtra` naming the extra."""
    try:
        import distributed
    except ImportError as e:
        raise MissingExtra(
            f"deqrmt sweep runs on Dask's distributed scheduler, which is not installed ({e}); "
            f"{INSTALL_HINT}."
        ) from None
    return distributed


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


# ---------------------------------------------------------------------------
# Cluster
# ---------------------------------------------------------------------------


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """Ignore SIGINT while the embedded workers are spawned, so that they inherit SIG_IGN.

    A Ctrl-C on the terminal goes to the whole process group: the driver must see it (and stop
    cleanly), the embedded workers must not (each would die mid-task with a traceback).  An
    ignored signal stays ignored across ``exec``, and Python then installs no KeyboardInterrupt
    handler.  (Blocking the signal instead does not work: distributed spawns the processes
    from threads that do not inherit the main thread's mask.)  A Ctrl-C during these seconds
    of start-up is dropped; the next one stops the sweep.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def _local_gpus() -> int:
    """CUDA devices torch sees on this machine (0 without an NVIDIA driver, cheaply)."""
    if not os.path.exists("/proc/driver/nvidia") and shutil.which("nvidia-smi") is None:
        return 0
    try:
        import torch
    except ImportError:
        return 0
    return int(torch.cuda.device_count()) if torch.cuda.is_available() else 0


#: Dask settings of the embedded cluster (and of every client this module opens).  It has no
#: dashboard, so nobody reads the workers' statistical profiles or the system monitor's series;
#: at their defaults (a stack sample every 10 ms, a tick every 20 ms and a memory poll every
#: 100 ms in every server) they cost an idle 2-worker cluster ~20% of a core, taken from the
#: tasks on a 2-core machine.  Slower ticks and polls only make warnings and the nanny's
#: memory limit react within a second instead of 100 ms.
QUIET_DASK = {
    "distributed.worker.profile.enabled": False,
    "distributed.worker.profile.interval": "1s",
    "distributed.worker.profile.cycle": "10s",
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "5s",
    "distributed.worker.memory.monitor-interval": "1s",
}


def embedded_cluster(workers: int | None = None, gpus: int = 0) -> Any:
    """The cluster :func:`run_sweep` starts when given no scheduler: a ``LocalCluster`` on
    127.0.0.1 with ``workers`` (default: one per core) single-threaded worker processes, no
    dashboard, :data:`QUIET_DASK` settings; the first ``gpus`` workers get a GPU each.

    Start one yourself to run several sweeps on the same warm workers:
    ``with embedded_cluster() as c: run_sweep(spec, scheduler=c.scheduler_address)``.
    """
    import dask

    distributed = require_distributed()
    n_workers = workers or os.cpu_count() or 1
    with dask.config.set(QUIET_DASK):
        if gpus == 0:
            return distributed.LocalCluster(
                n_workers=n_workers,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address=None,
                silence_logs=logging.ERROR,
            )
        # Workers differ (resources, CUDA_VISIBLE_DEVICES), which LocalCluster cannot express;
        # its base class SpecCluster takes one spec per worker.
        base = {
            "host": "127.0.0.1", "nthreads": 1, "dashboard": False, "silence_logs": logging.ERROR
        }  # fmt: skip
        specs = {}
        for i in range(n_workers):
            options = dict(base)
            if i < gpus:
                options.update(resources={"GPU": 1}, env={"CUDA_VISIBLE_DEVICES": str(i)})
            specs[f"gpu-{i}" if i < gpus else f"cpu-{i}"] = {
                "cls": distributed.Nanny,
                "options": options,
            }
        scheduler = {
            "cls": distributed.Scheduler,
            "options": {
                "host": "127.0.0.1", "port": 0, "dashboard": False, "dashboard_address": None
            },
        }  # fmt: skip
        return distributed.SpecCluster(
            workers=specs, scheduler=scheduler, silence_logs=logging.ERROR
        )


@contextlib.contextmanager
def _connect(scheduler: str | None, workers: int | None, gpus: int) -> Iterator[tuple[Any, str]]:
    """A client (and the embedded cluster it drives), both closed on the way out."""
    import dask

    distributed = require_distributed()
    cluster = client = None
    try:
        if scheduler is None:
            n = workers or os.cpu_count() or 1
            try:
                with _sigint_ignored():
                    cluster = embedded_cluster(n, gpus)
            except RuntimeError as e:  # "Nanny failed to start": the workers could not spawn
                raise InvalidArgument(
                    f"the embedded Dask cluster did not start ({e}). From a script, call "
                    "run_sweep under `if __name__ == '__main__':` (worker processes re-import "
                    "the main module), or pass scheduler='tcp://HOST:PORT'."
                ) from None
            with dask.config.set(QUIET_DASK):
                client = distributed.Client(cluster, set_as_default=False)
            gpu_note = f", {gpus} with a GPU" if gpus else ""
            where = f"embedded LocalCluster ({n} workers{gpu_note})"
        else:
            try:
                with dask.config.set(QUIET_DASK):
                    client = distributed.Client(
                        scheduler, timeout=CONNECT_TIMEOUT, set_as_default=False
                    )
            except (OSError, TimeoutError, ValueError) as e:
                raise InvalidArgument(
                    f"cannot reach the Dask scheduler {scheduler!r} ({e}); start one with "
                    "`dask scheduler`, or leave out --scheduler to use an embedded cluster."
                ) from None
            try:
                client.wait_for_workers(workers or 1, timeout=WORKER_WAIT)
            except TimeoutError:
                raise InvalidArgument(
                    f"fewer than {workers or 1} workers joined {scheduler} within {WORKER_WAIT} s; "
                    f"start them with `dask worker {scheduler}`."
                ) from None
            where = scheduler
        yield client, where
    finally:
        if client is not None:
            with contextlib.suppress(Exception):
                client.close(timeout=CLOSE_TIMEOUT)
        if cluster is not None:
            with contextlib.suppress(Exception):
                cluster.close(timeout=CLOSE_TIMEOUT)


def _gpu_workers(client: Any) -> int:
    info = client.scheduler_info()
    workers = info.get("workers", {}).values()
    return sum(1 for w in workers if (w.get("resources") or {}).get("GPU", 0) >= 1)


def _task_device(client: Any, where: str, device: str, gpus: int, scheduler: str | None) -> str:
    """``cuda`` or ``cpu`` for the torch tasks, from ``device`` and the cluster's GPU workers."""
    n_gpu = gpus if scheduler is None else _gpu_workers(client)
    if device == "cuda" and n_gpu == 0:
        raise InvalidArgument(
            f"device='cuda' but no worker of {where} has the resource GPU; start GPU workers "
            "with `dask worker ADDRESS --resources GPU=1`."
        )
    return "cuda" if n_gpu else "cpu"


#: kinds by expected cost at the same n, cheapest first (Monte Carlo > exact kernels; a design
#: solves for parameters on top of the coefficients; a certificate proves them)
_KIND_WEIGHT = {"coefficients": 0, "certify": 1, "design": 2, "exact": 3, "validate": 4}


def largest_first(
    tasks: Sequence[Task], seconds: Mapping[tuple[str, str], float] | None = None
) -> list[Task]:
    """``tasks`` by decreasing expected cost, ties in spec order: the order to submit them in.

    Dask starts a batch's tasks in the order given.  Longest first keeps the makespan within
    4/3 of the optimum (Graham 1969); the spec's order may leave the grid's biggest task for
    last, to run on one worker while the others idle.  The expected cost is, in turn: the
    sample size n (a validation's kernels cost ~n²p), the kind, the Monte Carlo draws, the
    digits, then ``seconds[(kind, activation)]``, the cost this store has seen for that
    activation (``ResultStore.task_seconds``; unseen ones first, as the likeliest surprise).
    Only the order depends on it: every task's result is the same.
    """
    seen = seconds or {}

    def cost(task: Task) -> tuple[int, int, int, int, float]:
        i = task.inputs
        return (
            int(i.get("n") or 0),
            _KIND_WEIGHT.get(task.kind, 0),
            int(i.get("m") or 1) * int(i.get("draws") or 1),
            int(i.get("dps") or 0),
            seen.get((task.kind, str(i["activation"])), math.inf),
        )

    return sorted(tasks, key=cost, reverse=True)


def _submit(
    client: Any,
    pending: Sequence[Task],
    task_device: str,
    retries: int,
    suffix: str = "",
    seconds: Mapping[tuple[str, str], float] | None = None,
) -> dict[Any, Task]:
    """One Dask future per task, keyed ``deqrmt-<kind>-<task key><suffix>`` (a resubmission
    gets a fresh suffix: the scheduler may still hold the cancelled key), largest first
    (:func:`largest_first`); torch tasks on cuda ask for the resource ``GPU``."""
    # One client.map per resource class, not one submit per task: a batch is one graph, whose
    # tasks the scheduler queues and hands to whichever worker frees first; tasks submitted one
    # by one are each placed at once, round-robin, and a slower worker keeps its share.
    groups: dict[bool, list[Task]] = {}
    for t in largest_first(pending, seconds):
        groups.setdefault(t.kind in TORCH_KINDS and task_device == "cuda", []).append(t)
    futures: dict[Any, Task] = {}
    for gpu, tasks in groups.items():
        futs = client.map(
            execute,
            [t.kind for t in tasks],
            [dict(t.inputs) for t in tasks],
            [task_device if t.kind in TORCH_KINDS else "cpu" for t in tasks],
            key=[f"deqrmt-{t.kind}-{t.key}{suffix}" for t in tasks],
            retries=retries,
            resources={"GPU": 1} if gpu else None,
        )
        futures.update(zip(futs, tasks, strict=True))
    return futures


#: extra rounds for tasks whose futures came back cancelled (lost with a killed worker)
LOST_ROUNDS = 2


def _rounds(
    distributed: Any,
    client: Any,
    futures: dict[Any, Task],
    lost: list[Task],
    task_device: str,
    retries: int,
) -> Any:
    """Futures as they complete; tasks the caller puts in ``lost`` are submitted again, at most
    :data:`LOST_ROUNDS` more times (a future cancelled with its worker is not retried by Dask)."""
    for round_ in range(LOST_ROUNDS + 1):
        yield from distributed.as_completed(list(futures), loop=client.loop)
        if not lost or round_ == LOST_ROUNDS:
            return
        futures.update(_submit(client, list(lost), task_device, retries, f"-r{round_ + 1}"))
        lost.clear()


def _record(fut: Any, task: Task, run_id: int) -> Record | None:
    """The store record of a finished future; None when it was cancelled (the task stays missing)."""
    if fut.status == "finished":
        try:
            r = fut.result()
        except CancelledError:  # released meanwhile (another client, a scheduler restart)
            return None
        return Record(
            key=task.key,
            kind=task.kind,
            inputs=task.inputs,
            outputs=r["outputs"],
            error=r["error"],
            seconds=r["seconds"],
            finished=time.time(),
            stages=r["stages"],
            started=r["started"],
            host=r["host"],
            pid=r["pid"],
            worker=r.get("worker"),
            version=r["version"],
            run_id=run_id,
        )
    if fut.status == "error":
        exc = fut.exception()
        return Record(
            key=task.key,
            kind=task.kind,
            inputs=task.inputs,
            outputs=None,
            error=f"{type(exc).__name__}: {exc}",
            seconds=None,
            finished=time.time(),
            run_id=run_id,
        )
    return None


def _summarise(
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


# ---------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------


def run_sweep(
    spec: SweepSpec | str | os.PathLike[str],
    *,
    store: str | os.PathLike[str] | None = None,
    scheduler: str | None = None,
    workers: int | None = None,
    device: str = "auto",
    retry_failed: bool = False,
    retries: int = 1,
    progress: Callable[[SweepProgress], None] | None = None,
) -> SweepResult:
    """Compute every task of ``spec`` that ``store`` does not hold yet, on a Dask cluster.

    Args:
      spec: a :class:`SweepSpec` or the path of a SPEC.toml.
      store: the SQLite results file; default ``<spec>.sqlite`` next to the spec.
      scheduler: ``tcp://HOST:PORT`` of a running Dask scheduler; None starts an embedded
        ``LocalCluster`` with ``workers`` single-threaded worker processes.
      workers: embedded cluster: worker processes (default ``os.cpu_count()``); external
        scheduler: wait for this many workers to connect (default 1).
      device: ``auto``, ``cpu`` or ``cuda`` for the torch kinds.  ``cuda`` sends them only to
        workers with the resource ``GPU`` (``dask worker --resources GPU=1``); ``auto`` does so
        when the cluster has such workers (the embedded one: when torch sees a CUDA device).
      retry_failed: delete the spec's stored failures first, so that they run again.
      retries: extra attempts for a task that raised an unexpected exception (Dask ``retries=``).
      progress: called after each stored result with a :class:`SweepProgress`.

    Returns:
      A :class:`SweepResult`; ``interrupted`` is True after Ctrl-C (SIGINT), which stops the
      sweep cleanly: every stored result stays stored, and the same call resumes.

    The embedded cluster's workers are spawned processes, which re-import a script's main
    module: from a script, call this under ``if __name__ == "__main__":``.

    Raises:
      SpecError: the spec is malformed.
      InvalidArgument: bad ``device``/``workers``, the store is unusable, the scheduler cannot
        be reached, or ``cuda`` without a GPU worker.
      MissingExtra: Dask is not installed (``pip install 'deqrmt[sweep]'``).
    """
    if not isinstance(spec, SweepSpec):
        spec = load_spec(spec)
    if device not in DEVICES:
        raise InvalidArgument(f"device must be one of {', '.join(DEVICES)}, got {device!r}.")
    if workers is not None and (
        isinstance(workers, bool) or not isinstance(workers, int) or workers < 1
    ):
        raise InvalidArgument(f"workers must be a positive integer, got {workers!r}.")
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise InvalidArgument(f"retries must be an integer ≥ 0, got {retries!r}.")
    path = Path(store) if store is not None else spec.default_store()
    tick = progress or (lambda _p: None)
    with ResultStore(path) as st:
        if retry_failed:
            st.delete_failed(spec.keys)
        have = st.keys()
        pending = [t for t in spec.tasks if t.key not in have]
        torch_pending = any(t.kind in TORCH_KINDS for t in pending)
        if pending:
            require_distributed()  # before any side effect: a missing extra is a clean error
        gpus = 0
        if pending and scheduler is None and torch_pending and device != "cpu":
            gpus = _local_gpus()
            if device == "cuda" and gpus == 0:
                raise InvalidArgument(
                    "device='cuda' but torch sees no CUDA device here; use device 'cpu', or a "
                    "scheduler whose workers have --resources GPU=1."
                )
        where = "nothing to run" if not pending else (scheduler or "embedded LocalCluster")
        run_id = st.begin_run(
            spec=None if spec.source is None else str(spec.source),
            spec_sha256=spec.text_sha256,
            scheduler=where,
            tasks=len(spec.tasks),
            submitted=len(pending),
        )
        done = failed = 0
        interrupted = False
        t_start = time.perf_counter()
        try:
            if pending:
                with _connect(scheduler, workers, gpus) as (client, where):
                    task_device = "cpu"
                    if torch_pending and device != "cpu":
                        task_device = _task_device(client, where, device, gpus, scheduler)
                    t_start = time.perf_counter()
                    futures = _submit(
                        client, pending, task_device, retries, seconds=st.task_seconds()
                    )
                    distributed = require_distributed()
                    try:
                        lost: list[Task] = []
                        for fut in _rounds(distributed, client, futures, lost, task_device, retries):
                            task = futures.pop(fut)
                            rec = _record(fut, task, run_id)
                            fut.release()
                            if rec is None:
                                lost.append(task)  # cancelled with its worker: submitted again
                                continue
                            st.add(rec)
                            done += 1
                            failed += not rec.ok
                            tick(
                                SweepProgress(
                                    total=len(spec.tasks),
                                    already_stored=len(spec.tasks) - len(pending),
                                    submitted=len(pending),
                                    done=done,
                                    failed=failed,
                                    elapsed=time.perf_counter() - t_start,
                                    last=task.label,
                                )
                            )
                    except KeyboardInterrupt:
                        interrupted = True
                        with contextlib.suppress(Exception):
                            client.cancel(list(futures))
        except KeyboardInterrupt:  # while the cluster started or closed
            interrupted = True
        finally:
            seconds = time.perf_counter() - t_start
            # The store is the truth: a Ctrl-C between a commit and the counters above must
            # not make the summary disagree with what was stored.
            done, failed = st.run_counts(run_id)
            with contextlib.suppress(Exception):
                st.end_run(
                    run_id, scheduler=where, completed=done, failed=failed, interrupted=interrupted
                )
        groups, errors = _summarise(spec, st)
    return SweepResult(
        store=path,
        scheduler=where,
        total=len(spec.tasks),
        already_stored=len(spec.tasks) - len(pending),
        submitted=len(pending),
        completed=done,
        failed_this_run=failed,
        interrupted=interrupted,
        seconds=seconds,
        groups=groups,
        errors=errors,
        run_id=run_id,
    )

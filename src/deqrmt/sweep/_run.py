r"""Run a sweep on Dask's distributed scheduler: submit what is missing, store what comes back.

* **Cluster.**  Default: an embedded cluster on 127.0.0.1 with one single-threaded worker
  process per core (the coefficient engine is pure Python/mpmath, so processes, not threads,
  are what run in parallel), started in a process group of its own and with no HTTP server
  (:mod:`._cluster`).  ``scheduler="tcp://HOST:PORT"`` uses an existing cluster (``dask
  scheduler`` + ``dask worker``), on one machine or many.
* **GPUs** through Dask worker resources: with ``device="cuda"`` the torch tasks (``exact``,
  ``validate``) are submitted with ``resources={"GPU": 1}``, so they run only on workers started
  with ``--resources GPU=1``, one at a time per GPU; the CPU tasks run everywhere.  The embedded
  cluster gives its first k workers one GPU each (``CUDA_VISIBLE_DEVICES``).
* **Resume.**  Only the tasks whose key is not in the store are submitted, longest first
  (:func:`largest_first`: by n, kind, digits and the seconds the store has seen per activation).
  The stored rows of the spec's tasks are read and validated first: a row whose inputs are not
  its task's is a :class:`deqrmt.StoreError`, before any work.
* **Faults.**  A task lost with its worker is rescheduled by the Dask scheduler on another
  worker (up to ``distributed.scheduler.allowed-failures`` worker deaths, then ``KilledWorker``
  is recorded); a task that raised a non-deqrmt exception is retried ``retries`` times
  (Dask's ``retries=``); a deqrmt error is recorded at once.  Either way the sweep goes on.
* **Writes** happen only here, in the driver, one transaction per result, as results arrive
  (``as_completed``).
* **Ctrl-C** (SIGINT) at any moment, the cluster's start and close included, stops the sweep:
  the steps that must not be cut (a store transaction, the client's connect and close, the
  cluster's spawn and close) finish first (:mod:`._signals`), every stored result stays, and
  the result says ``interrupted``; the same call resumes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import CancelledError
from pathlib import Path
from typing import Any

from .._errors import InvalidArgument, MissingExtra, StoreError
from ._cluster import (
    INSTALL_HINT,
    check_scheduler,
    require_distributed,
)
from ._connect import connect, local_gpus, torch_device
from ._limits import show
from ._result import SweepProgress, SweepResult, summarise
from ._signals import deferred_interrupts, phase
from ._spec import TORCH_KINDS, SweepSpec, Task, load_spec
from ._store import Record, ResultStore
from ._store_rows import ANOTHER_STORE
from ._tasks import execute

__all__ = ["largest_first", "run_sweep"]

DEVICES = ("auto", "cpu", "cuda")


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
      store: the SQLite results file; default ``<spec>.sqlite`` next to the spec.  Never
        opened through a symbolic link; a foreign or tampered file is refused.
      scheduler: ``tcp://HOST:PORT`` of a running Dask scheduler; None starts an embedded
        cluster with ``workers`` single-threaded worker processes.
      workers: embedded cluster: worker processes (default ``os.cpu_count()``); external
        scheduler: wait for this many workers to connect (default 1).
      device: ``auto``, ``cpu`` or ``cuda`` for the torch kinds.  ``cuda`` sends them only to
        workers with the resource ``GPU`` (``dask worker --resources GPU=1``); ``auto`` does so
        when the cluster has such workers (the embedded one: when torch sees a CUDA device).
      retry_failed: delete the spec's stored failures first, so that they run again.
      retries: extra attempts for a task that raised an unexpected exception (Dask ``retries=``).
      progress: called after each stored result with a :class:`SweepProgress`.

    Returns:
      A :class:`SweepResult`; ``interrupted`` is True after Ctrl-C (SIGINT) at any moment of
      the run, which stops the sweep cleanly: every stored result stays stored, no row is half
      written, and the same call resumes.

    Raises:
      SpecError, BudgetExceeded: the spec is malformed or beyond a budget.
      StoreError: the store is a link, a FIFO, a device, a foreign or tampered database, or
        holds a row of this spec whose inputs are not its task's.
      SchedulerError: an unsupported or malformed scheduler address, an unreachable
        scheduler, or an embedded cluster that did not start.
      InvalidArgument: bad ``device``/``workers``/``retries``, or ``cuda`` without a GPU worker.
      MissingExtra: Dask is not installed (``pip install 'deqrmt[sweep]'``).
      KeyboardInterrupt: only after the run is recorded, while the summary is read.
    """
    if not isinstance(spec, SweepSpec):
        spec = load_spec(spec)
    scheduler = _checked_arguments(device, workers, retries, scheduler)
    path = Path(store) if store is not None else spec.default_store()
    tick = progress or (lambda _p: None)
    phase("store-opening")
    with ResultStore(path) as st:
        phase("store-open")
        pending = _pending(spec, st, retry_failed)
        gpus = _embedded_gpus(pending, scheduler, device)
        where = "nothing to run" if not pending else (scheduler or "embedded cluster")
        run_id = st.begin_run(
            spec=None if spec.source is None else str(spec.source),
            spec_sha256=spec.text_sha256,
            scheduler=where,
            tasks=len(spec.tasks),
            submitted=len(pending),
        )
        phase("run-begun")
        run = _Run(spec, st, pending, run_id, device, gpus, scheduler, where, retries, tick)
        run.execute(workers)
        groups, errors = summarise(spec, st)
    phase("summary")
    return SweepResult(
        store=path,
        scheduler=run.where,
        total=len(spec.tasks),
        already_stored=len(spec.tasks) - len(pending),
        submitted=len(pending),
        completed=run.done,
        failed_this_run=run.failed,
        interrupted=run.interrupted,
        seconds=run.seconds,
        groups=groups,
        errors=errors,
        run_id=run_id,
    )


def _checked_arguments(
    device: str, workers: int | None, retries: int, scheduler: str | None
) -> str | None:
    """Refuse a bad ``device``, ``workers`` or ``retries``; the checked scheduler address."""
    if device not in DEVICES:
        raise InvalidArgument(f"device must be one of {', '.join(DEVICES)}, got {show(device)}.")
    if workers is not None and (
        isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= 1024
    ):
        raise InvalidArgument(f"workers must be an integer from 1 to 1024, got {show(workers)}.")
    if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= 100:
        raise InvalidArgument(f"retries must be an integer from 0 to 100, got {show(retries)}.")
    return None if scheduler is None else check_scheduler(scheduler)


def _pending(spec: SweepSpec, st: ResultStore, retry_failed: bool) -> list[Task]:
    """The spec's tasks the store does not hold (its failures too, with ``retry_failed``:
    their rows are deleted first); Dask's extra is checked when there is work."""
    stored = _stored(spec, st)
    if retry_failed:
        st.delete_failed(k for k, ok in stored.items() if not ok)
        stored = {k: ok for k, ok in stored.items() if ok}
    pending = [t for t in spec.tasks if t.key not in stored]
    if pending:
        _check_distributed()  # before any side effect: a missing extra is a clean error
    return pending


def _embedded_gpus(pending: Sequence[Task], scheduler: str | None, device: str) -> int:
    """The GPUs an embedded cluster gives its torch tasks (0 with a scheduler, for ``cpu`` or
    without torch tasks); ``device='cuda'`` without one is refused."""
    if not pending or scheduler is not None or device == "cpu":
        return 0
    if not any(t.kind in TORCH_KINDS for t in pending):
        return 0
    gpus = local_gpus()
    if device == "cuda" and gpus == 0:
        raise InvalidArgument(
            "device='cuda' but torch sees no CUDA device here; use device='cpu', or a "
            "scheduler whose workers have --resources GPU=1."
        )
    return gpus


@dataclasses.dataclass
class _Run:
    """One run of a sweep's pending tasks, and what it did: ``done`` results stored, of which
    ``failed`` are errors, in ``seconds``; ``where`` it ran; whether Ctrl-C ``interrupted`` it."""

    spec: SweepSpec
    st: ResultStore
    pending: Sequence[Task]
    run_id: int
    device: str
    gpus: int
    scheduler: str | None
    where: str
    retries: int
    tick: Callable[[SweepProgress], None]
    done: int = 0
    failed: int = 0
    interrupted: bool = False
    seconds: float = 0.0

    def execute(self, workers: int | None) -> None:
        """Run the pending tasks, then record the run's end; Ctrl-C at any moment (the
        cluster's start, the run, its close) ends it cleanly with ``interrupted`` set."""
        clock = [time.perf_counter()]  # reset at the first submission
        try:
            if self.pending:
                with connect(self.scheduler, workers, self.gpus) as (client, self.where):
                    # Ctrl-C here ends the loop; closing the client releases its futures, so
                    # the scheduler drops what is still queued or running.
                    _run_pending(
                        client, self.spec, self.st, self.pending, self.run_id, self.device,
                        self.gpus, self.scheduler, self.where, self.retries, self.tick, clock,
                    )  # fmt: skip
        except KeyboardInterrupt:
            self.interrupted = True
            phase("interrupted")
        finally:
            with deferred_interrupts():
                self.seconds = time.perf_counter() - clock[0]
                # The store is the truth: a Ctrl-C between a commit and a counter must not make
                # the summary disagree with what was stored.
                self.done, self.failed = self.st.run_counts(self.run_id)
                with contextlib.suppress(StoreError):
                    self.st.end_run(
                        self.run_id, scheduler=self.where, completed=self.done,
                        failed=self.failed, interrupted=self.interrupted,
                    )  # fmt: skip
                phase("run-ended")


def _check_distributed() -> None:
    """:class:`MissingExtra` now if Dask's distributed is not installed (without importing it:
    the import, a second or two, overlaps the cluster's start)."""
    import importlib.util

    try:
        found = importlib.util.find_spec("distributed") is not None
    except (ImportError, ValueError):  # sys.modules["distributed"] = None, a broken install
        found = False
    if not found:
        require_distributed()  # raises MissingExtra with the install line
        raise MissingExtra(f"deqrmt sweep needs Dask's distributed; {INSTALL_HINT}.")


def _stored(spec: SweepSpec, st: ResultStore) -> dict[str, bool]:
    """key → ok of the spec's tasks the store holds, each row validated against its task: a
    row whose kind or inputs are not its key's task is a tampered store, refused before any
    work (its result would be reported, and plotted, as the task's)."""
    by_key = {t.key: t for t in spec.tasks}
    out = {}
    for rec in st.records(by_key):
        task = by_key[rec.key]
        if rec.kind != task.kind or dict(rec.inputs) != dict(task.inputs):
            raise StoreError(
                f"store {show(str(st.path))}: the row {rec.key[:16]}… holds other inputs than "
                f"its task ({task.label}); the store was changed outside deqrmt — delete that "
                f"row, or {ANOTHER_STORE}."
            )
        out[rec.key] = rec.ok
    return out


def _run_pending(
    client: Any,
    spec: SweepSpec,
    st: ResultStore,
    pending: Sequence[Task],
    run_id: int,
    device: str,
    gpus: int,
    scheduler: str | None,
    where: str,
    retries: int,
    tick: Callable[[SweepProgress], None],
    clock: list[float],
) -> None:
    """Submit ``pending`` and store each result as it arrives; ``clock[0]`` is set to the time
    of the first submission."""
    distributed = require_distributed()
    task_device = "cpu"
    if any(t.kind in TORCH_KINDS for t in pending) and device != "cpu":
        task_device = torch_device(client, where, device, gpus, scheduler)
    t_start = clock[0] = time.perf_counter()
    futures = _submit(client, pending, task_device, retries, seconds=st.task_seconds())
    phase("submitted")
    done = failed = 0
    lost: list[Task] = []
    for fut in _rounds(distributed, client, futures, lost, task_device, retries):
        task = futures.pop(fut)
        rec = _record(fut, task, run_id)
        fut.release()
        if rec is None:
            lost.append(task)  # cancelled with its worker: submitted again
            continue
        phase("storing")
        st.add(rec)
        done += 1
        failed += not rec.ok
        phase(f"stored-{done}")
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
    phase("all-stored")

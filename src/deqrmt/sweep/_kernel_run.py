r"""Exact kernels beyond one machine's memory: tile by tile on Dask workers, into a Zarr store.

:func:`write_kernels` cuts the n1 × n2 kernel of :func:`deqrmt.kernels` into ``tile`` × ``tile``
tiles (k(X, X): those on and above the diagonal), and submits one Dask task per tile that the
store does not mark done.  A task (:func:`compute_tile`, on a worker) reads its rows of the data
itself (a ``.npy`` file memory-mapped, or a Zarr array: **the workers must see the same file
system as the driver**, as on one machine or a cluster's shared disk), computes the tile with
:func:`deqrmt.kernels` on those rows, writes it (and its transpose) as whole chunks, then sets
its ``done`` mark; it returns a few numbers, never the tile, so the driver holds no tile at
all.  A stored tile is ``deqrmt.kernels`` of its rows, bit for bit; against the whole kernel
computed in memory it agrees to the engine's tolerance (the diagonal fixed points are solved
per tile, the Mehler degree chosen per inner tile; measured 1.6e-13 relative at n = 300).

* **Faults.**  A tile lost with its worker is run again by the scheduler (Dask's
  ``allowed-failures``), or resubmitted when its future came back cancelled; rewriting a tile
  writes the same chunks again, each replaced atomically, and the mark comes last.
* **Resume.**  The same call again finds the marks and computes only the missing tiles; a
  store made for other data or settings is refused (:mod:`._kernel_store`).
* **Budgets, before any work** (each a one-line :class:`deqrmt.BudgetExceeded` with the fix):
  the kernel's entries against :data:`MAX_ENTRIES` and its tiles against :data:`MAX_TILES`; the
  store's size against the free space of its disk; a tile's memory (:func:`tile_bytes`) against
  each worker's memory limit per thread.
"""

from __future__ import annotations

import dataclasses
import math
import os
import shutil
import socket
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import CancelledError
from typing import Any

import numpy as np

from .._errors import (
    BudgetExceeded,
    DeqrmtError,
    FileError,
    InvalidArgument,
    SchedulerError,
    StoreError,
)
from ._cluster import check_scheduler, require_distributed
from ._connect import connect
from ._kernel_store import (
    DataRef,
    KernelSpec,
    create_store,
    data_ref,
    done_marks,
    open_store,
    path_of,
    read_rows,
    require_zarr,
    store_id,
    stored_bytes,
    tile_grid,
)
from ._limits import show
from ._run import _check_distributed

__all__ = [
    "MAX_ENTRIES",
    "MAX_TILES",
    "STORE_TILE",
    "KernelStoreRun",
    "compute_tile",
    "tile_bytes",
    "write_kernels",
]

#: The most entries of one stored kernel: 4·10¹⁰ (n = 200 000 for k(X, X); 320 GB per kind).
MAX_ENTRIES = 40_000_000_000
#: The most tiles of one store (Dask tasks of one run): raise ``tile`` for more entries.
MAX_TILES = 200_000
#: The default tile side of a store (8 MiB per chunk; ~0.3 GB of a worker's memory per task).
STORE_TILE = 1024
#: What a worker holds besides a task's arrays: the interpreter, torch, deqrmt (measured:
#: ~0.45 GB RSS after a first tile), with room.
WORKER_BASE = 600 * 1024**2
#: float64 arrays of tile × tile that one task holds at its peak (the engine's ~24, the
#: result, its transpose and the write buffers)
TILE_ARRAYS = 32
#: Extra attempts of a tile whose task raised something unexpected (an I/O error).
RETRIES = 2
#: Extra rounds for tiles whose futures came back cancelled (lost with a killed worker).
LOST_ROUNDS = 3
#: Free space the store must leave on its disk, beyond its own size.
DISK_MARGIN = 64 * 1024**2

KINDS = ("ck", "ntk", "both")


def tile_bytes(tile: int, p: int) -> int:
    """A worker's memory for one task of tile side ``tile`` on p features (an upper bound)."""
    return WORKER_BASE + TILE_ARRAYS * 8 * tile * tile + 2 * 8 * tile * p


@dataclasses.dataclass(frozen=True)
class KernelStoreRun:
    """What :func:`write_kernels` did.

    Attributes:
      store: the store's path.  shape: (n1, n2).  kinds: ``("ck",)``, ``("ntk",)`` or both.
      tile: the tile side.  tiles: tiles of the kernel (for k(X, X): on and above the
      diagonal).  already_done: tiles marked done before this run.  computed: tiles this run
      computed.  bytes: the store's kernel bytes (8 per entry and kind).  seconds: wall time
      of the run.  scheduler: where it ran.  interrupted: Ctrl-C stopped it (the same call
      resumes).
    """

    store: str
    shape: tuple[int, int]
    kinds: tuple[str, ...]
    tile: int
    tiles: int
    already_done: int
    computed: int
    bytes: int
    seconds: float
    scheduler: str
    interrupted: bool = False

    @property
    def complete(self) -> bool:
        return self.already_done + self.computed == self.tiles

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["shape"], d["kinds"] = list(self.shape), list(self.kinds)
        d["complete"] = self.complete
        return d


# ---------------------------------------------------------------------------------- one task


def compute_tile(
    path: str, sid: str, spec: KernelSpec, i: int, j: int, device: str
) -> dict[str, Any]:
    """Tile (i, j) of ``spec`` into the store at ``path``, on a worker: its rows read here, the
    kernel(s) computed by :func:`deqrmt.kernels`, the chunks written, then the mark.

    Only into the store whose id is ``sid``: a task left running by an interrupted run must
    not write into a store that ``force`` has since replaced (it returns ``skipped``)."""
    from ..validate import core_share, kernels

    t0 = time.perf_counter()
    zarr = require_zarr()
    r0, r1, c0, c1 = spec.bounds(i, j)
    A = read_rows(spec.x1, r0, r1)
    on_diagonal = spec.symmetric and i == j
    B = None if on_diagonal else read_rows(spec.x2 or spec.x1, c0, c1)
    values = []
    # one core per task: the worker runs one task per thread slot, the other slots and workers
    # hold the other cores (see validate.core_share)
    for kind in spec.kinds:
        # the engine's own inner tiles (not the store's): a stored tile is deqrmt.kernels of
        # its rows, bit for bit, whatever the store's tile side
        with core_share(1):
            k = kernels(
                spec.activation, A, B, sigma_a2=spec.sigma_a2, sigma_b2=spec.sigma_b2,
                kind=kind, center=spec.center, trainable=spec.trainable, device=device,
                method=spec.method, tol=spec.tol,
            )  # fmt: skip
        values.append((kind, k))
    group = zarr.open_group(path, mode="r+")  # now: the store as it is at the end of the work
    if store_id(group) != sid:
        return {"tile": (i, j), "skipped": True}
    for kind, k in values:
        group[kind][r0:r1, c0:c1] = k
        if spec.symmetric and not on_diagonal:
            group[kind][c0:c1, r0:r1] = np.ascontiguousarray(k.T)
    group["done"][i, j] = True  # last: a tile is done only once every chunk of it is written
    return {
        "tile": (i, j),
        "seconds": time.perf_counter() - t0,
        "host": socket.gethostname(),
        "pid": os.getpid(),
    }


# ---------------------------------------------------------------------------------- the driver


def _checked(
    act: Any, kind: str, tile: int | None, workers: int | None, scheduler: str | None
) -> tuple[str, tuple[str, ...], int, str | None]:
    from .._arguments import integer

    if not isinstance(act, str):
        raise InvalidArgument(
            f"with out=…, act must be an activation name or expression (a string, which every "
            f"worker parses), got {show(act)}."
        )
    if kind not in KINDS:
        raise InvalidArgument(f"kind must be 'ck', 'ntk' or 'both', got kind={kind!r}.")
    kinds = ("ck", "ntk") if kind == "both" else (kind,)
    side = STORE_TILE if tile is None else integer(tile, "tile", lo=1, hi=2048)
    if workers is not None:
        integer(workers, "workers", lo=1, hi=1024)
    return act, kinds, side, None if scheduler is None else check_scheduler(scheduler)


def _settings(
    act: str,
    A: np.ndarray,
    B: np.ndarray | None,
    kinds: Sequence[str],
    options: dict[str, Any],
) -> tuple[float, float]:
    """Every setting checked by the engine itself on two rows (a bad σ, trainable set,
    method, centre or activation is refused here, before any store exists); (σ_a², σ_b²)."""
    from ..numeric import exact_number
    from ..validate import kernels

    for kind in kinds:
        kernels(act, A, B, kind=kind, device="cpu", **options)
    a2 = float(exact_number(options["sigma_a2"], "sigma_a2"))
    sb = options["sigma_b2"]
    b2 = 1 - a2 if sb is None else float(exact_number(sb, "sigma_b2"))
    return a2, b2


def _head(ref: DataRef, arr: np.ndarray | None, rows: int) -> np.ndarray:
    return np.asarray(arr[:rows]) if arr is not None else read_rows(ref, 0, rows)


def _check_budgets(spec: KernelSpec, missing: int, path: str, extra: int = 0) -> None:
    n1, n2 = spec.shape
    if n1 * n2 > MAX_ENTRIES:
        raise BudgetExceeded(
            f"the kernel would have {n1 * n2:.3g} entries, more than MAX_ENTRIES = "
            f"{MAX_ENTRIES:.3g} (n = 200 000 for k(X, X)); store it in pieces (rows of X1 "
            "at a time, as X1 and X2)."
        )
    tiles = len(tile_grid(spec))
    if tiles > MAX_TILES:
        need = math.ceil(spec.tile * math.sqrt(tiles / MAX_TILES))
        raise BudgetExceeded(
            f"{tiles} tiles of {spec.tile} × {spec.tile} are more than MAX_TILES = {MAX_TILES} "
            f"Dask tasks; use a tile of {need} or more (tile=…)."
        )
    need_bytes = stored_bytes(spec) * missing // max(1, tiles) + extra
    directory = os.path.dirname(os.path.abspath(path))
    try:
        free = shutil.disk_usage(directory).free
    except OSError as e:
        raise FileError(f"cannot read the free space of {show(directory)}: {e.strerror}.") from None
    if need_bytes + DISK_MARGIN > free:
        from .._budget import format_bytes

        raise BudgetExceeded(
            f"the kernel store needs {format_bytes(need_bytes)} on disk, but {show(directory)} "
            f"has {format_bytes(free)} free; give out=… a path on a larger disk, or "
            "compute fewer rows."
        )


def _check_worker_memory(client: Any, spec: KernelSpec, where: str) -> None:
    """Refuse a tile that would not fit in some worker's memory limit per thread."""
    from .._budget import format_bytes

    need = tile_bytes(spec.tile, spec.x1.shape[1])
    info = client.scheduler_info().get("workers", {})
    for address, w in info.items():
        limit = int(w.get("memory_limit") or 0)
        threads = max(1, int(w.get("nthreads") or 1))
        if limit and need > limit // threads:
            side = spec.tile
            while side > 64 and tile_bytes(side, spec.x1.shape[1]) > limit // threads:
                side //= 2
            raise BudgetExceeded(
                f"a tile of {spec.tile} × {spec.tile} needs about {format_bytes(need)} of a "
                f"worker's memory, but the worker {address} of {where} has "
                f"{format_bytes(limit // threads)} per thread (--memory-limit / --nthreads); "
                f"use a tile of {side} (tile=…), or workers with more memory."
            )


def write_kernels(
    act: Any,
    X1: Any,
    X2: Any = None,
    *,
    out: Any,
    sigma_a2: Any = 0.2,
    sigma_b2: Any = None,
    kind: str = "ck",
    center: float | None = None,
    trainable: Sequence[str] = ("a", "A"),
    device: str = "auto",
    method: str = "auto",
    tol: float = 1e-13,
    tile: int | None = None,
    scheduler: str | None = None,
    workers: int | None = None,
    force: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> KernelStoreRun:
    """The exact kernel(s) of :func:`deqrmt.kernels`, computed on Dask into the Zarr store
    ``out``; the tiles it already marks done are kept (see the module docstring).

    ``X1``, ``X2``: a ``.npy`` path, a Zarr array (or its path), or an in-memory array (copied
    into the store).  ``progress(done, total)`` is called after each tile of this run.
    Ctrl-C stops the run cleanly (``interrupted``); the same call resumes.
    """
    act, kinds, side, scheduler = _checked(act, kind, tile, workers, scheduler)
    require_zarr()
    _check_distributed()  # both before any work: a missing extra is a clean error
    given = path_of(out)
    path = os.path.abspath(given)  # the workers' working directory is not ours
    ref1, arr1 = data_ref(X1, "X1", path)
    ref2, arr2 = (None, None) if X2 is None else data_ref(X2, "X2", path)
    if ref2 is not None and ref2.shape[1] != ref1.shape[1]:
        raise InvalidArgument(
            "X1 and X2 must have the same number of features, got "
            f"{ref1.shape[1]} and {ref2.shape[1]}."
        )
    options = {
        "sigma_a2": sigma_a2, "sigma_b2": sigma_b2, "center": center,
        "trainable": tuple(trainable), "method": method, "tol": tol,
    }  # fmt: skip
    head2 = None if ref2 is None else _head(ref2, arr2, 2)
    a2, b2 = _settings(act, _head(ref1, arr1, 2), head2, kinds, options)
    spec = KernelSpec(
        activation=act, sigma_a2=a2, sigma_b2=b2, center=None if center is None else float(center),
        kinds=kinds, trainable=tuple(trainable), tol=float(tol), method=str(method), tile=side,
        x1=ref1, x2=ref2,
    )  # fmt: skip
    group, stale = open_store(path, spec, force)
    todo = tile_grid(spec)
    if group is not None:
        marks = done_marks(group, spec)
        todo = [(i, j) for i, j in todo if not marks[i, j]]
    total = len(tile_grid(spec))
    inputs = [(n, a) for n, a in (("X1", arr1), ("X2", arr2)) if a is not None]
    extra = 0 if group is not None else sum(a.nbytes for _, a in inputs)
    _check_budgets(spec, len(todo) if group is not None else total, path, extra)
    t0 = time.perf_counter()
    computed, interrupted, where = 0, False, "nothing to compute"
    if todo:
        if scheduler is not None:
            require_distributed()  # imported before the client's configuration is set
        try:
            with connect(scheduler, workers, 0) as (client, where):
                _check_worker_memory(client, spec, where)
                if group is None:
                    group, sid = create_store(path, spec, inputs, replace=stale)
                else:
                    sid = store_id(group)
                t0 = time.perf_counter()
                computed = _run_tiles(client, path, sid, spec, todo, device, progress)
        except KeyboardInterrupt:
            interrupted = True
    seconds = time.perf_counter() - t0
    if group is not None:
        # the store is the truth: after Ctrl-C, tiles finished since the last one seen count
        marks = done_marks(group, spec)
        left = [t for t in tile_grid(spec) if not marks[t]]
        computed = max(computed, len(todo) - len(left))
        if left and not interrupted:
            raise SchedulerError(
                f"{len(left)} tiles of {show(path)} are still missing after the run (their "
                "workers died repeatedly); run the same command again to compute them."
            )
    return KernelStoreRun(
        store=given, shape=spec.shape, kinds=kinds, tile=side, tiles=total,
        already_done=total - len(todo), computed=computed, bytes=stored_bytes(spec),
        seconds=seconds, scheduler=where, interrupted=interrupted,
    )  # fmt: skip


def _submit(
    client: Any,
    path: str,
    sid: str,
    spec: KernelSpec,
    tiles: Sequence[tuple[int, int]],
    device: str,
) -> dict[Any, tuple[int, int]]:
    token = uuid.uuid4().hex[:10]
    futures = client.map(
        compute_tile,
        [path] * len(tiles),
        [sid] * len(tiles),
        [spec] * len(tiles),
        [i for i, _ in tiles],
        [j for _, j in tiles],
        [device] * len(tiles),
        key=[f"deqrmt-kernel-{i}-{j}-{token}" for i, j in tiles],
        retries=RETRIES,
        pure=False,
    )
    return dict(zip(futures, tiles, strict=True))


def _run_tiles(
    client: Any,
    path: str,
    sid: str,
    spec: KernelSpec,
    todo: Sequence[tuple[int, int]],
    device: str,
    progress: Callable[[int, int], None] | None,
) -> int:
    """Submit ``todo``, wait for every tile; resubmit tiles lost with a worker.  The count done."""
    distributed = require_distributed()
    done = 0
    pending = list(todo)
    for _ in range(LOST_ROUNDS + 1):
        futures = _submit(client, path, sid, spec, pending, device)
        lost: list[tuple[int, int]] = []
        try:
            for fut in distributed.as_completed(list(futures), loop=client.loop):
                tile = futures[fut]
                if fut.status == "finished":
                    try:
                        status = fut.result()
                    except CancelledError:
                        lost.append(tile)
                        continue
                    if status.get("skipped"):
                        raise StoreError(
                            f"the kernel store {show(path)} was replaced while this run wrote "
                            "it (another run with force=True?); run the command again."
                        )
                    done += 1
                    if progress is not None:
                        progress(done, len(todo))
                elif fut.status == "error":
                    _raise_task_error(fut.exception(), tile, path)
                else:  # cancelled with its worker: submitted again
                    lost.append(tile)
                fut.release()
        finally:
            for fut in futures:
                if fut.status == "pending":
                    fut.cancel()
        if not lost:
            return done
        pending = lost
    return done


def _raise_task_error(exc: BaseException, tile: tuple[int, int], path: str) -> None:
    """A failed tile as the one-line error it is (a deqrmt error is the user's input)."""
    if isinstance(exc, DeqrmtError):
        raise exc
    if isinstance(exc, OSError):
        raise FileError(
            f"cannot write tile {tile} of {show(path)}: {exc.strerror or exc}; check that every "
            "worker sees the store's file system, and its free space."
        ) from None
    if type(exc).__name__ == "KilledWorker":
        raise SchedulerError(
            f"tile {tile} of {show(path)} killed its workers repeatedly (memory? use a "
            "smaller tile=…); the tiles done are kept: run the same command again."
        ) from None
    raise exc

"""Square tiles of the upper triangle of a symmetric n × n kernel, and the Gram matrix under it.

The exact kernels (:func:`._exact.exact_kernels`) hold only their outputs as n × n arrays: the
Gram matrix XᵀX is written into the output's buffer by a symmetric rank-k update
(:func:`gram_upper`, every core), then independent tiles of the upper triangle
(:func:`upper_tiles`) each read their part of it (:func:`tile_gram`) and overwrite it, on
:func:`run_tiles`' worker threads.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable

import torch

__all__ = [
    "GRAM_BLOCK",
    "STOP_WAIT",
    "Tile",
    "TilesStopped",
    "abs_max",
    "gram_upper",
    "mirror",
    "mirror_lower",
    "raise_if_stopped",
    "run_tiles",
    "tile_gram",
    "upper_tiles",
]

#: (r0, r1, c0, c1): rows r0:r1 and columns c0:c1, with c0 ≥ r0
Tile = tuple[int, int, int, int]

#: rows of X at a time in the Gram matrix (one matrix product per block of rows, each with the
#: columns from its first row on: a symmetric rank-k update's flops times 1 + GRAM_BLOCK/n)
GRAM_BLOCK = 256


def gram_upper(X: torch.Tensor, out: torch.Tensor, block: int = GRAM_BLOCK) -> None:
    """``out[i, j] = x_iᵀx_j`` for j ≥ i (X is p × n), in place: a symmetric rank-k update.

    One matrix product per block of rows against the columns from its first row on, written
    straight into ``out``: n²p + n·block·p multiply-adds (a full XᵀX is 2n²p), on as many
    threads as torch has.  Entries below the diagonal inside the diagonal blocks are written
    too; the rest of the lower triangle is left as it was.
    """
    n = int(X.shape[1])
    for r0 in range(0, n, block):
        r1 = min(n, r0 + block)
        torch.mm(X[:, r0:r1].T, X[:, r0:], out=out[r0:r1, r0:])


def upper_tiles(n: int, tile: int) -> list[Tile]:
    """(r0, r1, c0, c1) of the square tiles on and above the diagonal, row by row."""
    edges = [(a, min(n, a + tile)) for a in range(0, n, tile)]
    return [(r0, r1, c0, c1) for i, (r0, r1) in enumerate(edges) for (c0, c1) in edges[i:]]


#: seconds the calling thread waits, after a Ctrl-C or an error, for the workers to finish the
#: tile (or the chunk of a long tile, see :func:`raise_if_stopped`) each is on: a tile of the
#: default size takes well under a second, so the wait normally ends long before this bound
STOP_WAIT = 10.0


class TilesStopped(Exception):
    """Raised inside a worker by :func:`raise_if_stopped` once its run is told to stop."""


_worker = threading.local()  # .stop: the stop event of the run this worker thread belongs to
_runs: set[threading.Event] = set()  # the stop events of the runs in progress
_runs_lock = threading.Lock()
_atexit_registered = False


def raise_if_stopped() -> None:
    """Raise :class:`TilesStopped` if called on a tile worker whose run is stopping.

    Long stretches of work inside one tile (the nested quadrature of the rare pairs near
    |ρ| = 1, ~0.1 s per pair) call it between chunks, so a Ctrl-C does not wait for the whole
    tile; elsewhere (the calling thread, a sequential run) it does nothing.
    """
    stop = getattr(_worker, "stop", None)
    if stop is not None and stop.is_set():
        raise TilesStopped


def _stop_all_runs() -> None:
    """At interpreter shutdown (before non-daemon threads are joined): stop every run."""
    with _runs_lock:
        for stop in _runs:
            stop.set()


def _register_atexit() -> None:
    # threading's own exit hook (as concurrent.futures uses) runs before the interpreter joins
    # the non-daemon threads; atexit would run only after that join.
    global _atexit_registered
    with _runs_lock:
        if _atexit_registered:
            return
        _atexit_registered = True
    register = getattr(threading, "_register_atexit", None)
    if register is not None:
        with contextlib.suppress(RuntimeError):  # shutdown has begun: nothing left to stop
            register(_stop_all_runs)


def run_tiles(one: Callable[[Tile], None], tiles: list[Tile], workers: int) -> None:
    """``one(tile)`` for every tile, on ``workers`` threads taking the next tile in turn.

    Tiles must be independent: they run in any order, at once.  The first error in a worker, or
    a ``KeyboardInterrupt`` (any exception) in the calling thread, stops the workers: none takes
    another tile, and one inside a long tile stops at its next :func:`raise_if_stopped`.  The
    calling thread waits for them to leave (at most :data:`STOP_WAIT` seconds), then raises the
    error.  Why wait: a worker still inside torch when the interpreter finalises aborts the
    process (SIGABRT) instead of the ordinary Ctrl-C exit.  The workers are not daemon threads,
    so the interpreter also joins any still running past the bound before it finalises, and
    its exit hook stops every run first (a call made on another thread then raises
    ``RuntimeError``).
    """
    if workers <= 1 or len(tiles) <= 1:
        for t in tiles:
            one(t)
        return
    _register_atexit()
    todo = iter(tiles)
    lock = threading.Condition()
    errors: list[BaseException] = []
    stop = threading.Event()
    count = {"done": 0, "live": 0}  # tiles finished; workers started and not yet left

    def work() -> None:
        _worker.stop = stop
        try:
            while not stop.is_set():
                with lock:
                    t = next(todo, None)
                if t is None:
                    return
                try:
                    one(t)
                except TilesStopped:
                    return
                except BaseException as e:  # noqa: BLE001 - handed to the calling thread
                    with lock:
                        errors.append(e)
                    stop.set()
                    return
                with lock:
                    count["done"] += 1
        finally:
            with lock:
                count["live"] -= 1
                lock.notify_all()

    launched: list[threading.Thread] = []
    with _runs_lock:
        _runs.add(stop)
    try:
        for i in range(workers):
            th = threading.Thread(target=work, name=f"deqrmt-tiles-{i}")
            with lock:
                count["live"] += 1
            launched.append(th)
            try:
                th.start()
            except Exception:  # no thread was made (a KeyboardInterrupt comes after it was)
                launched.pop()
                with lock:
                    count["live"] -= 1
                raise
        with lock:
            lock.wait_for(lambda: count["live"] == 0)
    except BaseException:  # Ctrl-C while waiting: stop the workers, let them leave torch
        stop.set()
        _wait_out(lock, count, time.monotonic() + STOP_WAIT)
        raise
    finally:
        with _runs_lock:
            _runs.discard(stop)
        for th in launched:  # each has left `work` (or the bound passed): a short join
            if th.is_alive() and count["live"] == 0:
                th.join()
    if errors:
        raise errors[0]
    if count["done"] < len(tiles):
        raise RuntimeError("the interpreter is shutting down: the tiles were stopped.")


def _wait_out(lock: threading.Condition, count: dict[str, int], deadline: float) -> None:
    """Wait until no worker is left in its tile, or ``deadline``; a second Ctrl-C meanwhile
    does not cut the wait short (the workers finish their tile within a fraction of it)."""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        try:
            with lock:
                if lock.wait_for(lambda: count["live"] == 0, left):
                    return
        except KeyboardInterrupt:
            continue


def tile_gram(buf: torch.Tensor, r0: int, r1: int, c0: int, c1: int) -> torch.Tensor:
    """XᵀX on the tile, from the upper triangle :func:`gram_upper` wrote into ``buf``."""
    gram = buf[r0:r1, c0:c1].clone()
    if r0 == c0:  # a diagonal tile: only its upper triangle is the Gram matrix
        gram = gram.triu() + gram.triu(1).T
    return gram


def abs_max(t: torch.Tensor) -> float:
    """max |t| (0 for an empty tensor, nan if t has one): one pass, no temporary.

    ``torch.linalg.vector_norm(t, inf)`` gives the same number ten times slower on a CPU tile
    (176 µs against 16 µs for 256 × 256 float64, one thread).
    """
    if not t.numel():
        return 0.0
    lo, hi = torch.aminmax(t)
    return max(-float(lo), float(hi))


def mirror(out: torch.Tensor, block: torch.Tensor, t: Tile) -> None:
    """Write a tile's values and their mirror image below the diagonal.

    A diagonal tile is mirrored from its upper triangle: its two halves were computed apart and
    may differ in the last bit (vectorised and scalar loops round differently), the result
    must not.  The transposed copy is made contiguous first: copying a transposed view
    straight into rows n apart costs twice as much.
    """
    r0, r1, c0, c1 = t
    if r0 == c0:
        block = block.triu() + block.triu(1).T
    out[r0:r1, c0:c1] = block
    if r0 != c0:
        out[c0:c1, r0:r1] = block.T.contiguous()


def mirror_lower(out: torch.Tensor, t: Tile) -> None:
    """Copy an off-diagonal tile already written in ``out`` to its mirror image below the
    diagonal (the transposed copy made contiguous first, as in :func:`mirror`)."""
    r0, r1, c0, c1 = t
    if r0 == c0:
        raise ValueError("mirror_lower is for tiles off the diagonal; use mirror.")
    out[c0:c1, r0:r1] = out[r0:r1, c0:c1].T.contiguous()

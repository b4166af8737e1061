"""The thread count of each stage: torch's intra-op pool for BLAS-3, Python workers for tiles.

Why: on a small, shared CPU (2 cores here), torch's OpenMP pool makes *elementwise* ops on
10⁴–10⁶-element tensors slower than one thread (measured 0.2 ns vs up to 50 ns per element-op
when another process holds a core: the pool's threads wait on each other), and LAPACK's
``syevd`` likewise (eigvalsh of 1024 × 1024: 0.13 s on one thread, 0.7–1.8 s on two).  So:

* BLAS-3 stages (the Gram matrix XᵀX of the exact kernels, the Monte Carlo solves) run on
  every core the process may use (:func:`blas_threads`): one large matrix product splits
  into independent panels, and MKL's threads do not wait on each other per element;
* elementwise stages run torch on one intra-op thread (:func:`torch_threads` ``(1)``) and
  get their parallelism from independent tiles handed to :func:`tile_workers` Python threads
  (torch releases the GIL inside each op, so the tiles run side by side).
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterator

import torch

__all__ = ["blas_threads", "cpu_cores", "core_share", "tile_workers", "torch_threads"]

# The cores a block may use when the process shares the machine by design (a Dask worker's
# task holds one of its worker's thread slots; other workers' tasks run on the other cores).
_SHARE: contextvars.ContextVar[int | None] = contextvars.ContextVar("deqrmt_cores", default=None)


@contextlib.contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Run the block with ``torch.set_num_threads(n)``, restoring the old value afterwards."""
    old = torch.get_num_threads()
    if n == old:
        yield
        return
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


@contextlib.contextmanager
def core_share(n: int) -> Iterator[None]:
    """Let the block (this thread) use at most ``n`` cores: what one task of a Dask worker may
    take, since the scheduler runs one task per thread slot and other tasks on the other cores.
    Without it each task's tiles and torch pool used every core, and two workers on two cores
    ran 4+ busy threads: the stored kernel took 5–7× the in-memory time per pair."""
    token = _SHARE.set(max(1, int(n)))
    try:
        yield
    finally:
        _SHARE.reset(token)


def cpu_cores() -> int:
    """The cores this process may run on (its affinity mask, which a container or taskset sets),
    at most the :func:`core_share` of the block that asks."""
    try:
        cores = max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        cores = max(1, os.cpu_count() or 1)
    share = _SHARE.get()
    return cores if share is None else min(cores, share)


def blas_threads(device: torch.device) -> int:
    """torch's intra-op threads for a BLAS-3 stage on ``device``: every core on the CPU."""
    return cpu_cores() if device.type == "cpu" else torch.get_num_threads()


def tile_workers(device: torch.device) -> int:
    """Python threads for an elementwise stage cut into independent tiles: one per core on
    the CPU (each on one intra-op thread); one on a GPU, which is parallel within each tile."""
    return cpu_cores() if device.type == "cpu" else 1

"""The driver's side of a sweep's cluster: a Dask client of the embedded cluster or of a
scheduler, connected and closed with Ctrl-C deferred, and the GPUs its torch tasks may use."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from typing import Any

from .._errors import InvalidArgument, SchedulerError
from .._text import one_line
from ._cluster import (
    CLOSE_TIMEOUT,
    launched_cluster,
    quiet_dask,
    require_distributed,
    wait_reachable,
)
from ._signals import deferred_interrupts, phase

__all__ = ["CONNECT_TIMEOUT", "WORKER_WAIT", "connect", "local_gpus", "torch_device"]

#: Seconds to wait for an external scheduler to answer, and for its first workers to connect.
CONNECT_TIMEOUT = 30
WORKER_WAIT = 120


def local_gpus() -> int:
    """CUDA devices torch sees on this machine (0 without an NVIDIA driver, cheaply)."""
    if not os.path.exists("/proc/driver/nvidia") and shutil.which("nvidia-smi") is None:
        return 0
    try:
        import torch
    except ImportError:
        return 0
    return int(torch.cuda.device_count()) if torch.cuda.is_available() else 0


@contextlib.contextmanager
def _client(address: str, what: str) -> Iterator[Any]:
    """A Dask client of ``address``, connected and closed with Ctrl-C deferred (a client cut in
    half keeps its event loop thread alive past the end of the process).

    No Dask settings are changed around it: the quiet settings concern the servers (the
    embedded cluster's, set where they are made), and a ``dask.config.set`` context entered
    before ``import distributed`` would delete, on its way out, the defaults that import added.
    """
    client = None
    try:
        with deferred_interrupts():
            phase("client-connecting")
            from ._quiet import SweepClient

            try:
                client = SweepClient(address, timeout=CONNECT_TIMEOUT, set_as_default=False)
            except (OSError, TimeoutError) as e:
                raise SchedulerError(
                    f"cannot reach the Dask scheduler of {what} ({one_line(str(e))[:200]}); "
                    "check the address, start one with `dask scheduler`, or leave out "
                    "scheduler=… to use an embedded cluster."
                ) from None
            except Exception as e:  # the port answered, but not as Dask does (MemoryError too)
                raise SchedulerError(
                    f"{what} did not answer as a Dask scheduler ({type(e).__name__}: "
                    f"{one_line(str(e))[:200]}); give the address `dask scheduler` prints."
                ) from None
            phase("client-connected")
        yield client
    finally:
        if client is not None:
            with deferred_interrupts():
                phase("client-closing")
                with contextlib.suppress(Exception):
                    client.close(timeout=CLOSE_TIMEOUT)
                phase("client-closed")


@contextlib.contextmanager
def connect(scheduler: str | None, workers: int | None, gpus: int) -> Iterator[tuple[Any, str]]:
    """A client (and the embedded cluster it drives), both closed on the way out."""
    with quiet_dask():
        if scheduler is None:
            n = workers or os.cpu_count() or 1
            gpu_note = f", {gpus} with a GPU" if gpus else ""
            where = f"embedded cluster ({n} workers{gpu_note})"
            with (
                launched_cluster(n, gpus, meanwhile=require_distributed) as address,
                _client(address, where) as c,
            ):
                yield c, where
            return
        wait_reachable(scheduler, CONNECT_TIMEOUT)  # interruptible, unlike Dask's connect
        with _client(scheduler, scheduler) as client:
            try:
                client.wait_for_workers(workers or 1, timeout=WORKER_WAIT)
            except TimeoutError:
                raise SchedulerError(
                    f"fewer than {workers or 1} workers joined {scheduler} within {WORKER_WAIT} s; "
                    f"start them with `dask worker {scheduler}`."
                ) from None
            yield client, scheduler


def gpu_workers(client: Any) -> int:
    info = client.scheduler_info()
    workers = info.get("workers", {}).values()
    return sum(1 for w in workers if (w.get("resources") or {}).get("GPU", 0) >= 1)


def torch_device(client: Any, where: str, device: str, gpus: int, scheduler: str | None) -> str:
    """``cuda`` or ``cpu`` for the torch tasks, from ``device`` and the cluster's GPU workers."""
    n_gpu = gpus if scheduler is None else gpu_workers(client)
    if device == "cuda" and n_gpu == 0:
        raise InvalidArgument(
            f"device='cuda' but no worker of {where} has the resource GPU; start GPU workers "
            "with `dask worker ADDRESS --resources GPU=1`."
        )
    return "cuda" if n_gpu else "cpu"

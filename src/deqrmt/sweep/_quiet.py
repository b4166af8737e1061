"""A Dask scheduler and worker that start no HTTP server, and a client that cleans up after a
failed connect (this module imports distributed).

Dask's scheduler always starts an HTTP server (``/health``, Prometheus metrics, the dashboard
when bokeh is installed), on port 8787 unless told otherwise; when another cluster (a
researcher's Jupyter one) holds 8787 it warns "Port 8787 is already in use" and takes another
port.  A sweep's embedded cluster serves nobody over HTTP, so it starts none: no port of any
kind beyond the scheduler's and workers' own (chosen by the OS), nothing to warn about.

:class:`SweepClient` is a :class:`distributed.Client` that, when its connect fails (a port
that answers but is no Dask scheduler: garbage frame lengths became a 3 EiB allocation), closes
what it had started before the error goes on; a plain Client is left half made, and its
``__del__`` later waited 60 s on the dead connection and printed a traceback.
"""

from __future__ import annotations

import contextlib
from typing import Any

import distributed
from distributed.http.routing import RoutingApplication

__all__ = ["QuietScheduler", "QuietWorker", "SweepClient"]


class _NoHTTP:
    """``ServerNode.start_http_server`` replaced by an empty application and no server: what
    the node's shutdown looks for (``http_application``) exists; ``services`` stays empty."""

    def start_http_server(self, *args: Any, **kwargs: Any) -> None:
        self.http_application = RoutingApplication([])


class QuietScheduler(_NoHTTP, distributed.Scheduler):  # type: ignore[misc]
    """A :class:`distributed.Scheduler` without an HTTP server (no dashboard, no metrics)."""


class QuietWorker(_NoHTTP, distributed.Worker):  # type: ignore[misc]
    """A :class:`distributed.Worker` without an HTTP server (no dashboard, no metrics)."""


class SweepClient(distributed.Client):  # type: ignore[misc]
    """A :class:`distributed.Client` that, if its constructor fails, stops its own event loop
    before the error propagates (nothing is left for ``__del__`` to wait on)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        try:
            super().__init__(*args, **kwargs)
        except BaseException:
            self._abandon()
            raise

    def _abandon(self) -> None:
        with contextlib.suppress(Exception):
            self.close(timeout=2)
        self.status = "closed"  # what close() and __del__ test
        with contextlib.suppress(Exception):
            self._loop_runner.stop()

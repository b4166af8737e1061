"""A Dask scheduler and worker that start no HTTP server (this module imports distributed).

Dask's scheduler always starts an HTTP server (``/health``, Prometheus metrics, the dashboard
when bokeh is installed), on port 8787 unless told otherwise; when another cluster (a
researcher's Jupyter one) holds 8787 it warns "Port 8787 is already in use" and takes another
port.  A sweep's embedded cluster serves nobody over HTTP, so it starts none: no port of any
kind beyond the scheduler's and workers' own (chosen by the OS), nothing to warn about.
"""

from __future__ import annotations

from typing import Any

import distributed
from distributed.http.routing import RoutingApplication

__all__ = ["QuietScheduler", "QuietWorker"]


class _NoHTTP:
    """``ServerNode.start_http_server`` replaced by an empty application and no server: what
    the node's shutdown looks for (``http_application``) exists; ``services`` stays empty."""

    def start_http_server(self, *args: Any, **kwargs: Any) -> None:
        self.http_application = RoutingApplication([])


class QuietScheduler(_NoHTTP, distributed.Scheduler):  # type: ignore[misc]
    """A :class:`distributed.Scheduler` without an HTTP server (no dashboard, no metrics)."""


class QuietWorker(_NoHTTP, distributed.Worker):  # type: ignore[misc]
    """A :class:`distributed.Worker` without an HTTP server (no dashboard, no metrics)."""

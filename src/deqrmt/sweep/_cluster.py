"""Where a sweep runs: the embedded Dask cluster, in a process group of its own, or a scheduler.

* :func:`embedded_cluster` builds the cluster: a scheduler on 127.0.0.1 and one single-threaded
  worker process per core, none of them with an HTTP server (:mod:`._quiet`: no dashboard, no
  metrics, no port 8787 or any other fixed port, so no "port in use" warning when a Jupyter
  cluster runs next to it), with the :data:`QUIET_DASK` settings (:func:`quiet_servers`).
* :func:`launched_cluster` is how :func:`deqrmt.sweep.run_sweep` starts it: in a separate
  process (``python -m deqrmt.sweep._launch``) in **a process group of its own**.  A Ctrl-C on
  the terminal goes to the foreground process group, so it reaches the driver alone, at any
  moment, start-up included; the driver then stops the cluster itself.  (Before, the workers
  were the driver's children and had to be spawned with SIGINT ignored, which dropped a Ctrl-C
  that came during the start.)  The worker processes no longer re-import the caller's
  ``__main__``, and Dask's warnings and logs go to a private log, read only to explain a
  failed start.  At the end the driver terminates the launcher's process group.
* :func:`check_scheduler` validates ``--scheduler``: ``tcp://HOST:PORT``; TLS, UCX and the other
  Dask transports need settings that a sweep cannot pass and are refused with a named error.
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from .._errors import MissingExtra, SchedulerError
from ._limits import show
from ._signals import deferred_interrupts, phase

__all__ = [
    "INSTALL_HINT",
    "QUIET_DASK",
    "check_scheduler",
    "embedded_cluster",
    "launched_cluster",
    "quiet_dask",
    "quiet_servers",
    "require_distributed",
    "wait_reachable",
]

INSTALL_HINT = "pip install 'deqrmt[sweep]'"
#: Seconds the embedded cluster may take to start (its scheduler and every worker), and to end
#: after SIGTERM before its process group is killed.
START_TIMEOUT = 300
CLOSE_TIMEOUT = 30
#: The first line the launcher prints starts with this (the rest is JSON).
READY = "deqrmt-cluster "
#: The module the launcher process runs (``python -P -m LAUNCHER``).
LAUNCHER = "deqrmt.sweep._launch"

#: Dask settings of the embedded cluster's scheduler and workers (:func:`quiet_servers`).  It has
#: no dashboard, so nobody reads the workers' statistical profiles or the system monitor's series;
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


@contextlib.contextmanager
def quiet_dask() -> Iterator[None]:
    """Dask's warnings ignored and its loggers held at CRITICAL for the duration: a sweep
    reports what went wrong itself, in one line (a lost worker is a recorded task failure)."""
    loggers = [logging.getLogger(name) for name in ("distributed", "tornado", "asyncio")]
    levels = [lg.level for lg in loggers]
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", module=r"(distributed|dask|tornado)(\.|$)")
        for lg in loggers:
            lg.setLevel(logging.CRITICAL)
        try:
            yield
        finally:
            for lg, level in zip(loggers, levels, strict=True):
                lg.setLevel(level)


@contextlib.contextmanager
def quiet_servers() -> Iterator[dict[str, Any]]:
    """:data:`QUIET_DASK` in force while a cluster's servers are made (Dask's servers read these
    settings when constructed); yields the whole configuration so, for the nannies to hand on to
    their worker processes.  The caller's settings are restored afterwards.

    ``distributed`` is imported first: on its way out ``dask.config.set`` deletes every key that
    was absent on its way in, so, entered before the import that adds the ``distributed``
    section, it would take that whole section away (a client then fails with
    ``KeyError: 'distributed'``).  With the section present it only restores old values.
    """
    import dask

    require_distributed()
    with dask.config.set(QUIET_DASK):
        yield copy.deepcopy(dask.config.config)


# ---------------------------------------------------------------------------
# Scheduler addresses
# ---------------------------------------------------------------------------

_ADDRESS = re.compile(
    r"(?:(?P<scheme>[A-Za-z][A-Za-z0-9+.-]{0,15})://)?"
    r"(?P<host>\[[0-9A-Fa-f:.]{2,45}\]|[A-Za-z0-9._-]{1,253})"
    r"(?::(?P<port>[0-9]{1,5}))?/?"
)
_OTHER_SCHEMES = {
    "tls": "TLS needs certificates (a dask Security object) that scheduler=… cannot pass; reach "
    "the scheduler over an SSH tunnel (ssh -L 8786:localhost:8786 HOST) and use "
    "tcp://localhost:8786",
    "ucx": "UCX needs the ucx-py transport and GPU networking that deqrmt does not set up; "
    "start the scheduler with --protocol tcp",
    "inproc": "inproc:// reaches a scheduler in this very process only; leave out scheduler=… "
    "for an embedded cluster",
    "ws": "websocket transports are not supported; start the scheduler with --protocol tcp",
    "wss": "websocket transports are not supported; start the scheduler with --protocol tcp",
}


def check_scheduler(address: Any) -> str:
    """``address`` as ``tcp://HOST:PORT``, or a :class:`SchedulerError` naming what is wrong.

    ``HOST:PORT`` without a scheme means tcp.  Checked before any work, without Dask.

    Example:
      >>> check_scheduler("127.0.0.1:8786")
      'tcp://127.0.0.1:8786'
    """
    if not isinstance(address, str):
        raise SchedulerError(f"scheduler must be a string tcp://HOST:PORT, got {show(address)}.")
    text = address.strip()
    m = _ADDRESS.fullmatch(text) if text.isascii() else None
    if m is None:
        raise SchedulerError(
            f"scheduler {show(address)} is not an address; give tcp://HOST:PORT, e.g. "
            "tcp://127.0.0.1:8786 (what `dask scheduler` prints)."
        )
    scheme = (m.group("scheme") or "tcp").lower()
    if scheme != "tcp":
        why = _OTHER_SCHEMES.get(scheme, f"Dask has no transport {scheme!r}")
        raise SchedulerError(
            f"scheduler {show(address)}: the scheme {scheme}:// is not supported ({why})."
        )
    port = m.group("port")
    if port is None:
        raise SchedulerError(
            f"scheduler {show(address)} has no port; give tcp://HOST:PORT (the port "
            "`dask scheduler` prints, 8786 by default)."
        )
    if not 1 <= int(port) <= 65535:
        raise SchedulerError(f"scheduler {show(address)}: port {port} is not in 1–65535.")
    return f"tcp://{m.group('host')}:{int(port)}"


def wait_reachable(address: str, timeout: float) -> None:
    """Wait until ``tcp://HOST:PORT`` accepts a TCP connection (a scheduler still starting
    refuses for a while), or raise :class:`SchedulerError`: a host that does not resolve at once,
    a port still refusing after ``timeout`` s.

    Plain sockets, so Ctrl-C interrupts it at once; Dask's own connect, which follows, then
    only has to make the handshake with a scheduler that answers.
    """
    m = _ADDRESS.fullmatch(address.removeprefix("tcp://"))
    assert m is not None and m.group("port") is not None, address
    host, port = m.group("host").strip("[]"), int(m.group("port"))
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(
                (host, port), timeout=max(0.1, deadline - time.monotonic())
            ):
                return
        except socket.gaierror as e:
            raise SchedulerError(
                f"scheduler {show(address)}: the host does not resolve ({e.strerror}); check "
                "the address (what `dask scheduler` prints)."
            ) from None
        except OSError as e:
            if time.monotonic() >= deadline:
                raise SchedulerError(
                    f"cannot reach the Dask scheduler {show(address)} within {timeout:g} s "
                    f"({e.strerror or type(e).__name__}); start one with `dask scheduler`, or "
                    "leave out scheduler=… to use an embedded cluster."
                ) from None
            time.sleep(0.2)


# ---------------------------------------------------------------------------
# The embedded cluster
# ---------------------------------------------------------------------------


def embedded_cluster(workers: int | None = None, gpus: int = 0) -> Any:
    """The cluster :func:`run_sweep` starts when given no scheduler: a scheduler on 127.0.0.1
    and ``workers`` (default: one per core) single-threaded worker processes, each with an
    equal share of the memory; no HTTP server anywhere (:mod:`._quiet`), :data:`QUIET_DASK`
    settings; the first ``gpus`` workers get a GPU each (``CUDA_VISIBLE_DEVICES``, the worker
    resource ``GPU``).  A ``distributed.SpecCluster``; close it (or use ``with``).

    Start one yourself to run several sweeps on the same warm workers:
    ``with embedded_cluster() as c: run_sweep(spec, scheduler=c.scheduler_address)``.
    """
    distributed = require_distributed()
    from distributed.system import MEMORY_LIMIT

    from ._quiet import QuietScheduler, QuietWorker

    n_workers = workers or os.cpu_count() or 1
    base = {
        "host": "127.0.0.1",
        "nthreads": 1,
        "dashboard": False,
        "dashboard_address": None,
        "silence_logs": logging.ERROR,
        "worker_class": QuietWorker,
        "memory_limit": max(1, MEMORY_LIMIT // n_workers),
    }
    scheduler = {
        "cls": QuietScheduler,
        "options": {"host": "127.0.0.1", "port": 0, "dashboard": False, "dashboard_address": None},
    }
    with quiet_servers() as config, quiet_dask():
        specs = {}
        for i in range(n_workers):
            # the nanny passes ``config`` to its worker process (also to one it restarts)
            options: dict[str, Any] = dict(base, config=config)
            if i < gpus:
                options.update(resources={"GPU": 1}, env={"CUDA_VISIBLE_DEVICES": str(i)})
            specs[f"gpu-{i}" if i < gpus else f"cpu-{i}"] = {
                "cls": distributed.Nanny,
                "options": options,
            }
        return distributed.SpecCluster(
            workers=specs, scheduler=scheduler, silence_logs=logging.ERROR
        )


def _package_root() -> str:
    """The directory that holds the imported ``deqrmt`` package (for the launcher's path)."""
    return str(Path(__file__).resolve().parents[2])


def _last_line(log: Path) -> str:
    with contextlib.suppress(OSError):
        with open(log, "rb") as fh:
            fh.seek(max(0, os.fstat(fh.fileno()).st_size - 4096))
            lines = [ln for ln in fh.read().decode("utf-8", "replace").splitlines() if ln.strip()]
        if lines:
            return lines[-1].strip()[:300]
    return "no output"


def _await_address(proc: subprocess.Popen[bytes], log: Path, timeout: float) -> str:
    """The scheduler address the launcher prints once its cluster is up."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    buffer = b""
    deadline = time.monotonic() + timeout
    while True:
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            text = line.decode("utf-8", "replace")
            if text.startswith(READY):
                try:
                    msg = json.loads(text[len(READY) :])
                except ValueError:
                    msg = {"error": text}
                if "address" in msg:
                    return str(msg["address"])
                raise SchedulerError(
                    f"the embedded Dask cluster did not start ({msg.get('error')}); run with "
                    "fewer workers=…, or pass scheduler='tcp://HOST:PORT'."
                )
        left = deadline - time.monotonic()
        if left <= 0:
            raise SchedulerError(
                f"the embedded Dask cluster did not start within {timeout:g} s (its last "
                f"words: {_last_line(log)}); run with fewer workers=…, or start a cluster "
                "yourself and pass scheduler='tcp://HOST:PORT'."
            )
        ready, _, _ = select.select([fd], [], [], min(left, 0.5))
        if ready:
            chunk = os.read(fd, 65536)
            if not chunk:
                proc.wait()
                raise SchedulerError(
                    f"the embedded Dask cluster exited while starting (code {proc.returncode}; "
                    f"its last words: {_last_line(log)}); pass scheduler='tcp://HOST:PORT' to "
                    "use a cluster started yourself."
                )
            buffer += chunk


def _stop(proc: subprocess.Popen[bytes], interrupts: Any) -> None:
    """End the launcher's process group: SIGTERM, then SIGKILL after :data:`CLOSE_TIMEOUT` s
    (or at a second Ctrl-C).

    Not Dask's graceful close: by now every result is stored or abandoned, the workers hold
    nothing anyone needs, their scratch space is the private directory removed next, and the
    graceful close (retiring each worker through the scheduler, then the launcher's own exit)
    took 2 s of a 10 s sweep on 2 busy cores.  The leader is reaped last, so its process-group
    id cannot be reused while the group is signalled.
    """
    with contextlib.suppress(OSError):
        if proc.stdin is not None:
            proc.stdin.close()  # a launcher that has not read its stdin yet sees EOF too
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + CLOSE_TIMEOUT
    while proc.poll() is None and time.monotonic() < deadline and interrupts.count < 2:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=0.05)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # stragglers (a worker past its SIGTERM)
    proc.wait()
    with contextlib.suppress(OSError):
        if proc.stdout is not None:
            proc.stdout.close()


@contextlib.contextmanager
def launched_cluster(
    workers: int, gpus: int = 0, meanwhile: Callable[[], object] | None = None
) -> Iterator[str]:
    """Start :func:`embedded_cluster` in a launcher process with a process group of its own;
    yield its scheduler address; terminate the process group on the way out.
    ``meanwhile()`` runs while the cluster starts (the driver's own ``import distributed``,
    a second or two that then overlaps the launcher's).

    The launcher's scratch space (Dask's ``temporary-directory``) and log live in a private
    temporary directory, removed afterwards.  If this process dies, the launcher reads EOF on
    its stdin and closes the cluster; its workers exit with it.

    Raises:
      SchedulerError: the cluster did not start (with the last line of its log).
    """
    tmp = Path(tempfile.mkdtemp(prefix="deqrmt-sweep-"))
    log_path = tmp / "cluster.log"
    # -P: not the working directory's own deqrmt (a checkout) but the package running here
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (_package_root(), env.get("PYTHONPATH", "")) if p
    )
    argv = [
        sys.executable, "-P", "-m", LAUNCHER,
        "--workers", str(int(workers)), "--gpus", str(int(gpus)), "--scratch", str(tmp),
    ]  # fmt: skip
    proc: subprocess.Popen[bytes] | None = None
    try:
        with deferred_interrupts(), open(log_path, "wb") as log:
            phase("cluster-spawn")
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                env=env,
                close_fds=True,
                process_group=0,  # a Ctrl-C on the terminal reaches the driver alone
            )
        phase("cluster-starting")
        if meanwhile is not None:
            meanwhile()
        address = _await_address(proc, log_path, START_TIMEOUT)
        phase("cluster-ready")
        yield address
    finally:
        with deferred_interrupts() as interrupts:
            phase("cluster-closing")
            if proc is not None:
                _stop(proc, interrupts)
            shutil.rmtree(tmp, ignore_errors=True)
            phase("cluster-closed")

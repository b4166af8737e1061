"""``python -m deqrmt.sweep._launch``: the process that holds a sweep's embedded cluster.

Started by :func:`deqrmt.sweep._cluster.launched_cluster` in a process group of its own, with
SIGINT ignored (its worker processes inherit that: a Ctrl-C is the driver's to handle).  It
starts :func:`~deqrmt.sweep._cluster.embedded_cluster`, prints one line
``deqrmt-cluster {"address": …}`` (or ``{"error": …}``) and serves until the driver
terminates its process group.  If the driver dies instead, the launcher reads EOF on its stdin
and closes the cluster itself (at once if it was still starting); the workers follow (Dask's
worker processes exit when their nanny's process does).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import warnings


def _watch_stdin(stop: threading.Event, state: dict[str, bool], lock: threading.Lock) -> None:
    try:
        while sys.stdin.buffer.read(65536):
            pass
    except (OSError, ValueError):
        pass
    with lock:
        stop.set()
        if not state["started"]:
            os._exit(0)  # the driver gave up during the start: nothing to close gracefully


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    warnings.simplefilter("ignore")
    parser = argparse.ArgumentParser(prog="deqrmt.sweep._launch")
    parser.add_argument("--workers", type=int, required=True)
    parser.add_argument("--gpus", type=int, default=0)
    parser.add_argument("--scratch", required=True)
    args = parser.parse_args(argv)

    stop = threading.Event()
    lock = threading.Lock()
    state = {"started": False}
    threading.Thread(target=_watch_stdin, args=(stop, state, lock), daemon=True).start()

    import dask

    from ._cluster import CLOSE_TIMEOUT, QUIET_DASK, READY, embedded_cluster, require_distributed

    try:
        # This process holds the cluster and nothing else: its settings are set for good (the
        # scheduler here reads some of them after it is made, not only while it is made).
        require_distributed()
        dask.config.set({"temporary-directory": args.scratch, **QUIET_DASK})
        cluster = embedded_cluster(args.workers, args.gpus)
    except Exception as e:  # reported to the driver, which names it in a SchedulerError
        print(READY + json.dumps({"error": f"{type(e).__name__}: {e}"[:500]}), flush=True)
        return 1
    with lock:
        state["started"] = True
    try:
        print(READY + json.dumps({"address": cluster.scheduler_address}), flush=True)
    except OSError:  # the driver is gone
        stop.set()
    stop.wait()
    try:
        cluster.close(timeout=CLOSE_TIMEOUT)
    except Exception:  # the driver kills the process group if this does not end
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

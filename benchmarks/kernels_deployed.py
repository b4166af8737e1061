"""``deqrmt kernels --scheduler`` on a cluster deployed as users deploy one, a worker killed.

The run: X of 20000 × 64 (``--n``, ``--p``) saved as ``.npy``; a ``dask scheduler`` and two
``dask worker --nworkers 1 --nthreads 1 --memory-limit 2GB`` processes on 127.0.0.1 (each in a
session of its own, the port chosen by the OS); the command ``deqrmt kernels tanh --data X.npy
--out K.zarr --scheduler …`` as a process.  Once ``--kill-after`` tiles are marked done, one
worker (its nanny and its worker process) is SIGKILLed; the other finishes.  Then:

* the command's exit code, the tiles it computed, and five random tiles compared with
  ``deqrmt.kernels`` on the same rows (the largest relative difference; 1e-12 is the bar);
* the driver's peak RSS (``wait4``'s ``ru_maxrss`` of the command's process; the bar 1.5 GB), and
  the surviving worker's peak RSS (its processes polled every 0.2 s) against its 2 GB limit;
* the same command again (every tile stored: nothing to compute), its time against the first
  run's (the bar: under a quarter).

The load is printed before and after; the time ratio is withheld on a busy machine unless
``--force-ratio`` (``_load.py``).  Every process is killed and waited for at the end.

    python benchmarks/kernels_deployed.py                 # 20000 × 64: minutes on 2 cores
    python benchmarks/kernels_deployed.py --n 4000 --tile 512
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _load import Load, add_force_flag, load_line, ratio_text, track_descendants  # noqa: E402

SRC = str(Path(__file__).resolve().parents[1] / "src")
sys.path.insert(0, SRC)  # the checkout, as its subprocesses use it


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (SRC, env.get("PYTHONPATH", "")) if p)
    env["DEQRMT_NO_PROGRESS"] = "1"
    return env


def _start(argv: list[str], **kw: object) -> subprocess.Popen[bytes]:
    return subprocess.Popen(argv, env=_env(), start_new_session=True, **kw)  # type: ignore[call-overload]


def _kill(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _address(proc: subprocess.Popen[bytes]) -> str:
    assert proc.stderr is not None
    seen, deadline = b"", time.monotonic() + 120
    while time.monotonic() < deadline:
        if select.select([proc.stderr], [], [], 0.5)[0]:
            chunk = os.read(proc.stderr.fileno(), 65536)
            if not chunk:
                break
            seen += chunk
            m = re.search(rb"Scheduler at:\s+(tcp://[0-9.]+:[0-9]+)", seen)
            if m:
                return m.group(1).decode()
    raise SystemExit(f"dask scheduler did not start: {seen.decode(errors='replace')[-400:]}")


def _gib(nbytes: float) -> str:
    gib = nbytes / 2**30
    return f"{gib:.3f} GiB"


def _marks(store: str) -> int:
    root = os.path.join(store, "done", "c")
    if not os.path.isdir(root):
        return 0
    # not a killed writer's temporary file (Zarr writes ``KEY.<uuid>.partial``, then renames)
    return sum(f.isdigit() for _, _, files in os.walk(root) for f in files)


class _PeakRSS:
    """The peak RSS of a process tree (a worker's nanny and its worker), polled."""

    def __init__(self, pid: int) -> None:
        import psutil

        self.root, self.peak, self.stop = psutil.Process(pid), 0, threading.Event()
        self.thread = threading.Thread(target=self._poll, daemon=True)
        self.thread.start()

    def _poll(self) -> None:
        import psutil

        while not self.stop.wait(0.2):
            try:
                procs = [self.root, *self.root.children(recursive=True)]
                self.peak = max(self.peak, *(p.memory_info().rss for p in procs))
            except psutil.Error:
                return


def _command(argv: list[str]) -> tuple[int, str, str, float, int]:
    """(exit code, stdout, stderr, seconds, peak RSS in bytes) of a command run to its end."""
    t = time.perf_counter()
    proc = _start(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.stdout.read(), proc.stderr.read()  # type: ignore[union-attr]
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    proc.stdout.close()  # type: ignore[union-attr]
    proc.stderr.close()  # type: ignore[union-attr]
    return (
        proc.returncode,
        out.decode(),
        err.decode(),
        time.perf_counter() - t,
        usage.ru_maxrss * 1024,
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--p", type=int, default=64)
    ap.add_argument("--tile", type=int, default=1024)
    ap.add_argument("--kill-after", type=int, default=10, help="tiles done before the kill")
    ap.add_argument("--memory-limit", default="2GB")
    add_force_flag(ap)
    args = ap.parse_args(argv)
    with track_descendants():  # the dask processes started here are this run's own load
        _run(args)


def _run(args: argparse.Namespace) -> None:
    work = tempfile.mkdtemp(prefix="deqrmt-deployed-")
    procs: list[subprocess.Popen[bytes]] = []
    try:
        X = np.random.default_rng(0).standard_normal((args.n, args.p)) / np.sqrt(args.p)
        np.save(os.path.join(work, "X.npy"), X)
        dask = [sys.executable, "-m", "dask"]
        scheduler = _start(
            [*dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        procs.append(scheduler)
        address = _address(scheduler)
        logs = [open(os.path.join(work, f"worker{i}.log"), "wb") for i in range(2)]  # noqa: SIM115
        workers = [
            _start(
                [
                    *dask,
                    "worker",
                    address,
                    "--nworkers",
                    "1",
                    "--nthreads",
                    "1",
                    "--memory-limit",
                    args.memory_limit,
                    "--no-dashboard",
                ],
                stdout=subprocess.DEVNULL,
                stderr=log,
            )  # fmt: skip
            for log in logs
        ]
        procs += workers
        store = os.path.join(work, "K.zarr")
        command = [
            sys.executable, "-m", "deqrmt", "kernels", "tanh", "--data",
            os.path.join(work, "X.npy"), "--out", store, "--tile", str(args.tile),
            "--scheduler", address, "--workers", "2", "--json",
        ]  # fmt: skip
        print(f"X {args.n} × {args.p}, tiles of {args.tile}; scheduler {address}")
        before = Load.now()
        print(load_line("before", before))
        result: dict[str, object] = {}

        def first() -> None:
            result["run"] = _command(command)

        runner = threading.Thread(target=first)
        runner.start()
        watch = _PeakRSS(workers[1].pid)
        while _marks(store) < args.kill_after and runner.is_alive():
            time.sleep(0.1)
        done_at_kill = _marks(store)
        os.killpg(workers[0].pid, signal.SIGKILL)
        print(f"SIGKILLed worker 0 (nanny and worker) with {done_at_kill} tiles marked done")
        runner.join()
        watch.stop.set()
        code, out, err, t_first, rss = result["run"]  # type: ignore[misc]
        print(f"first run: exit {code} in {t_first:.1f} s; driver peak RSS {_gib(rss)}")
        if code != 0:
            raise SystemExit(err[-2000:])
        doc = json.loads(out)
        print(f"  tiles {doc['tiles']}, computed {doc['computed']}, complete {doc['complete']}")
        print(f"  surviving worker's peak RSS {_gib(watch.peak)} (limit {args.memory_limit})")
        for i, log in enumerate(logs):
            log.close()
            text = Path(log.name).read_text(errors="replace")
            events = len(re.findall(r"exceeded|Restarting|Worker process .* was killed", text))
            print(f"  worker {i} log: {events} memory events")
        after_first = Load.now()
        code2, out2, _, t_second, _ = _command(command)
        after = Load.now()
        print(f"rerun: exit {code2} in {t_second:.1f} s, computed {json.loads(out2)['computed']}")
        print("rerun / first run: " + ratio_text(
            t_second / t_first, before, after, force=args.force_ratio, fmt="{:.3f}"
        ))  # fmt: skip
        import zarr

        from deqrmt.validate import kernels

        K = zarr.open_group(store, mode="r")["ck"]
        grid = -(-args.n // args.tile)
        rng = np.random.default_rng(1)
        worst = 0.0
        for i, j in rng.integers(0, grid, size=(5, 2)):
            rows = slice(i * args.tile, (i + 1) * args.tile)
            cols = slice(j * args.tile, (j + 1) * args.tile)
            ref = kernels("tanh", X[rows]) if i == j else kernels("tanh", X[rows], X[cols])
            diff = float(np.max(np.abs(K[rows, cols] - ref) / np.abs(ref)))
            worst = max(worst, diff)
            print(f"  tile ({i}, {j}): largest relative difference {diff:.2e}")
        print(f"five random tiles: {worst:.2e} (bar 1e-12: {'ok' if worst < 1e-12 else 'FAIL'})")
        print(load_line("after", after_first))
    finally:
        for proc in reversed(procs):
            _kill(proc)
            if proc.stderr is not None:
                proc.stderr.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

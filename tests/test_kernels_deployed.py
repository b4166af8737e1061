"""``deqrmt kernels --scheduler`` against a cluster started as users start one: a ``dask
scheduler`` process and two ``dask worker`` processes on 127.0.0.1 (the port chosen by the OS,
read from the scheduler's "Scheduler at:" line), one worker SIGKILLed mid-run.  The command
(a process too) must complete, with every tile equal to ``deqrmt.kernels`` of its rows (bit for
bit: a task computes its tile with that very call).
Every process is killed and waited for in ``finally``.  In the slow suite (``-m slow``).
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("distributed")
pytest.importorskip("zarr")

SRC = str(Path(__file__).resolve().parents[1] / "src")
START = 120  # seconds for the scheduler to print its address (a busy 2-core machine)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (SRC, env.get("PYTHONPATH", "")) if p)
    env["DEQRMT_NO_PROGRESS"] = "1"
    return env


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=60)
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


def _address(proc: subprocess.Popen[bytes]) -> str:
    """The ``tcp://…`` of a starting ``dask scheduler``, from its stderr."""
    assert proc.stderr is not None
    deadline = time.monotonic() + START
    seen = b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stderr], [], [], 0.5)
        if ready:
            chunk = os.read(proc.stderr.fileno(), 65536)
            if not chunk:
                break
            seen += chunk
            m = re.search(rb"Scheduler at:\s+(tcp://[0-9.]+:[0-9]+)", seen)
            if m:
                return m.group(1).decode()
    raise AssertionError(f"dask scheduler did not start: {seen.decode(errors='replace')[-500:]}")


@pytest.fixture
def cluster() -> Iterator[tuple[str, list[subprocess.Popen[bytes]]]]:
    procs: list[subprocess.Popen[bytes]] = []
    try:
        scheduler = subprocess.Popen(
            [sys.executable, "-m", "dask", "scheduler", "--host", "127.0.0.1", "--port", "0",
             "--no-dashboard"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_env(),
        )  # fmt: skip
        procs.append(scheduler)
        address = _address(scheduler)
        workers = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "dask",
                    "worker",
                    address,
                    "--nthreads",
                    "1",
                    "--no-nanny",
                    "--no-dashboard",
                    "--memory-limit",
                    "2GB",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=_env(),
            )  # fmt: skip
            for _ in range(2)
        ]
        procs += workers
        yield address, workers
    finally:
        for proc in reversed(procs):
            _stop(proc)


def _marks(store: Path) -> int:
    """Tiles marked done: the chunk files of the ``done`` array (Zarr v3 keys done/c/i/j)."""
    root = store / "done" / "c"
    if not root.is_dir():
        return 0
    # not a killed writer's temporary file (Zarr writes ``KEY.<uuid>.partial``, then renames)
    return sum(f.isdigit() for _, _, files in os.walk(root) for f in files)


@pytest.mark.slow  # ~2 min on a busy 2-core machine: four processes and the reference tiles
def test_a_worker_killed_mid_run_on_a_deployed_cluster(
    tmp_path: Path, cluster: tuple[str, list[subprocess.Popen[bytes]]]
) -> None:
    from deqrmt.validate import kernels

    address, workers = cluster
    n, tile = 1536, 128
    grid = n // tile
    total = grid * (grid + 1) // 2
    X = np.random.default_rng(7).standard_normal((n, 12)) / np.sqrt(12)
    np.save(tmp_path / "X.npy", X)
    store = tmp_path / "K.zarr"
    argv = [
        sys.executable, "-m", "deqrmt", "kernels", "tanh", "--data", str(tmp_path / "X.npy"),
        "--out", str(store), "--tile", str(tile), "--scheduler", address, "--workers", "2",
        "--json",
    ]  # fmt: skip
    run = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    try:
        deadline = time.monotonic() + 600
        while _marks(store) < 2 and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        killed_at = _marks(store)
        assert run.poll() is None and killed_at < total, "the run ended before the kill"
        os.kill(workers[0].pid, signal.SIGKILL)
        out, err = run.communicate(timeout=600)
    finally:
        _stop(run)
    assert run.returncode == 0, err.decode()
    result = json.loads(out)
    assert result["complete"] and result["tiles"] == total
    assert result["computed"] == total and _marks(store) == total
    assert workers[0].wait(timeout=60) == -signal.SIGKILL and workers[1].poll() is None

    import zarr

    K = zarr.open_group(store, mode="r")["ck"]
    rng = np.random.default_rng(0)
    for i, j in [(0, 0), (grid - 1, grid - 1), *rng.integers(0, grid, size=(3, 2))]:
        rows, cols = slice(i * tile, (i + 1) * tile), slice(j * tile, (j + 1) * tile)
        ref = kernels("tanh", X[rows]) if i == j else kernels("tanh", X[rows], X[cols])
        # a tile is kernels of its rows (a lower tile is the transpose of the upper one the
        # store computed: k(B, A)ᵀ agrees with k(A, B) to the engine's tolerance, not bit for bit)
        scale = float(np.abs(ref).max())
        np.testing.assert_allclose(
            K[rows, cols], ref, rtol=0, atol=1e-12 * scale, err_msg=f"{(i, j)}"
        )

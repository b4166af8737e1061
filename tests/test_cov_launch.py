"""The sweep's cluster launcher (``python -m deqrmt.sweep._launch``) on its own, as a process:
a driver that goes away during the start or after it (EOF on the launcher's stdin) leaves
nothing running, and a cluster that cannot start is reported in one line to the driver.

Processes are always killed and waited for in ``finally``; the only waits are for the
launcher's own answers (bounded by the timeouts given).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("distributed")

from deqrmt import SchedulerError  # noqa: E402
from deqrmt.sweep import _cluster  # noqa: E402


def _env(*front: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [*front, _cluster._package_root(), env.get("PYTHONPATH", "")]
    )
    return env


def _launcher(tmp_path: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-P",
            "-m",
            _cluster.LAUNCHER,
            "--workers",
            "1",
            "--scratch",
            str(tmp_path),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        process_group=0,
    )


def _end(proc: subprocess.Popen[bytes]) -> None:
    """Kill whatever is left of the launcher's process group (a group that still has members
    keeps its id, so this cannot reach another process), then reap the launcher."""
    import contextlib
    import signal

    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            stream.close()


def test_a_driver_gone_during_the_start_ends_the_launcher_at_once(tmp_path: Path) -> None:
    proc = _launcher(tmp_path, _env())
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.close()  # the driver is gone before the cluster answered
        assert proc.wait(timeout=120) == 0
        assert _cluster.READY.encode() not in proc.stdout.read()  # it never said it started
    finally:
        _end(proc)


def test_a_driver_gone_after_the_start_closes_the_cluster(tmp_path: Path) -> None:
    proc = _launcher(tmp_path, _env())
    try:
        assert proc.stdin is not None and proc.stdout is not None
        line = proc.stdout.readline().decode()
        assert line.startswith(_cluster.READY), line
        address = json.loads(line[len(_cluster.READY) :])["address"]
        host, port = address.removeprefix("tcp://").rsplit(":", 1)
        socket.create_connection((host, int(port)), timeout=10).close()  # the scheduler answers
        proc.stdin.close()  # EOF: the driver is gone
        assert proc.wait(timeout=120) == 0  # closed gracefully, not killed
        with pytest.raises(OSError):  # nobody listens there any more
            socket.create_connection((host, int(port)), timeout=10).close()
    finally:
        _end(proc)


def test_a_cluster_that_cannot_start_is_one_line_to_the_driver(tmp_path: Path, monkeypatch) -> None:
    # A broken Dask install in the launcher's process (its import fails): the launcher prints
    # the error as its first line and exits 1; the driver raises SchedulerError naming it.
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "distributed.py").write_text("raise ImportError('a broken install')\n")
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join([str(broken), os.environ.get("PYTHONPATH", "")])
    )
    with (
        pytest.raises(SchedulerError, match=r"did not start \(MissingExtra: .*a broken install"),
        _cluster.launched_cluster(1),
    ):
        pass

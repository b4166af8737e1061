"""Long commands show a progress bar at a real terminal, and only there.

Each command runs as a user runs it (``python -m deqrmt``, a subprocess) with stderr on the slave
side of a pseudo-terminal (``os.openpty``): the bar (tqdm's ``done/total`` and rate) must be on
it.  The same command with stderr to a file prints no bar, and ``--quiet`` at a terminal prints
none either; ``--json`` on stdout is the same bytes either way (the bar goes to stderr only).
Inputs are small (a few seconds a run).
"""

from __future__ import annotations

import json
import os
import re
import select
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

fcntl = pytest.importorskip("fcntl")  # POSIX: a pseudo-terminal
termios = pytest.importorskip("termios")

SRC = str(Path(__file__).resolve().parents[1] / "src")
TIMEOUT = 240.0  # seconds: a bound on a hung run, never a timing assertion


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "DEQRMT_NO_PROGRESS"}
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    env["TERM"] = "xterm"
    env.pop("COLUMNS", None)
    return env


def _run(
    argv: list[str], tmp: Path, *, tty: bool, cwd: Path | None = None
) -> tuple[int, bytes, str]:
    """(exit code, stdout bytes, stderr text) of ``deqrmt ARGV``; stderr a pty when ``tty``."""
    out_path = tmp / f"stdout-{time.monotonic_ns()}"
    err_path = tmp / f"stderr-{time.monotonic_ns()}"
    master = slave = -1
    proc = None
    chunks: list[bytes] = []
    try:
        with open(out_path, "wb") as out, open(err_path, "wb") as err_file:
            if tty:
                master, slave = os.openpty()
                # a terminal 120 columns wide (a fresh pty reports 0 × 0)
                fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
            proc = subprocess.Popen(
                [sys.executable, "-m", "deqrmt", *argv],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=slave if tty else err_file,
                env=_env(),
                cwd=cwd or tmp,
            )
            if tty:
                os.close(slave)
                slave = -1
                deadline = time.monotonic() + TIMEOUT
                while time.monotonic() < deadline:
                    ready, _, _ = select.select([master], [], [], 1.0)
                    if not ready:
                        if proc.poll() is not None:
                            break
                        continue
                    try:
                        data = os.read(master, 65536)
                    except OSError:  # EIO: every slave end is closed
                        break
                    if not data:
                        break
                    chunks.append(data)
            code = proc.wait(timeout=TIMEOUT)
        stderr = b"".join(chunks) if tty else err_path.read_bytes()
        return code, out_path.read_bytes(), stderr.decode("utf-8", "replace")
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        for fd in (master, slave):
            if fd >= 0:
                os.close(fd)


def _bar(stderr: str, desc: str, total: int | None = None) -> bool:
    """A tqdm bar for ``desc``: its name, a done/total count and a rate (``it/s`` or ``s/it``)."""
    count = rf"\d+/{total}" if total is not None else r"\d+/\d+"
    return bool(
        re.search(rf"{re.escape(desc)}.*{count}", stderr)
        and re.search(r"\d(\.\d+)?(\w+/s|s/\w+)", stderr)
    )


def _no_bar(stderr: str) -> bool:
    return "\r" not in stderr and not re.search(r"\d+/\d+ \[", stderr) and "%|" not in stderr


def _without(doc: Any, keys: set[str]) -> Any:
    """``doc`` less the timing keys (wall seconds differ from run to run)."""
    if isinstance(doc, dict):
        return {k: _without(v, keys) for k, v in doc.items() if k not in keys}
    if isinstance(doc, list):
        return [_without(v, keys) for v in doc]
    return doc


def _check(
    argv: list[str],
    tmp: Path,
    desc: str,
    total: int | None,
    timing: set[str],
    *,
    cwd: tuple[Path, Path] | None = None,
) -> bytes:
    """At a tty: a bar, and ``--json`` output as without one; stderr to a file: no bar.
    ``cwd``: the two runs' working directories (for a command that stores what it ran)."""
    code_t, out_t, err_t = _run([*argv, "--json"], tmp, tty=True, cwd=cwd and cwd[0])
    assert code_t in (0, 1), err_t
    assert _bar(err_t, desc, total), err_t
    if total is not None:  # the bar ends full: the steps counted are the steps taken
        assert f"{total}/{total} [" in err_t, err_t
    code_f, out_f, err_f = _run([*argv, "--json"], tmp, tty=False, cwd=cwd and cwd[1])
    assert code_f == code_t, err_f
    assert _no_bar(err_f), err_f
    assert b"\r" not in out_t and b"%|" not in out_t  # never a bar on stdout
    if timing:
        # the timings are measured, so they differ; everything else is the same
        assert _without(json.loads(out_t), timing) == _without(json.loads(out_f), timing)
    else:
        assert out_t == out_f
    return out_f


pytest.importorskip("tqdm")  # the [validate] and [sweep] extras draw the bars with it


def test_experiment_bar_at_a_terminal_none_in_a_file(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from deqrmt.cli.experiment import settings_text

    argv = ["experiment", "--dataset", "gmm", "--m", "64", "--seeds", "2", "--n-train", "100",
            "--n-test", "50", "--device", "cpu"]  # fmt: skip
    # 7 steps: the design, then 3 models for each of the 2 seeds
    out = _check(argv, tmp_path, "experiment", 7, {"seconds", "seconds_mean", "enn_over_deq_time"})
    # what ran is printed with the result: the width, the seeds, the device, the data's sizes
    settings = json.loads(out)["settings"]
    assert (settings["m"], settings["seeds"], settings["device"]) == (64, 2, "cpu")
    assert settings["data_seeds"] == [0, 1] and settings["deq_weight_seeds"] == [1000, 1001]
    gmm = settings["datasets"]["gmm"]
    assert (gmm["n_train"], gmm["n_test"], gmm["p"], gmm["classes"]) == (100, 50, 256, 2)
    text = settings_text(settings)
    assert "width m = 64" in text and "n_train = 100, n_test = 50, p = 256" in text
    assert "seeds: 2 (data 0–1, DEQ weights 1000–1001, ENN weights 2000–2001)" in text
    assert "device cpu" in text


def test_quiet_means_no_bar_at_a_terminal(tmp_path: Path) -> None:
    argv = ["design", "--deq", "tanh", "--family", "hard_tanh", "--dps", "12", "--starts", "2"]
    code, out, err = _run([*argv, "--quiet"], tmp_path, tty=True)
    assert code == 0, err
    assert _no_bar(err) and "budget" not in err, err
    assert "solution 1" in out.decode()


def test_validate(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    argv = ["validate", "tanh", "--n", "64,128", "--draws", "2", "--m", "128", "--device", "cpu"]
    # 10 steps: per n the exact kernels, the coefficients, 2 networks and the comparison
    _check(argv, tmp_path, "validate tanh", 10, {"seconds", "timings"})


@pytest.mark.slow
def test_spectrum_mc(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    argv = ["spectrum", "tanh", "--data", "gmm", "--n", "64", "--mc", "--seed", "3",
            "--device", "cpu"]  # fmt: skip
    # the predicted laws, the exact kernels, the CK's and the NTK's eigenvalues; the JSON
    # (seeded, no timings) is the same bytes with and without the bar
    _check(argv, tmp_path, "spectrum tanh", 4, set())


def test_design_then_enn_check(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    argv = ["design", "--deq", "tanh", "--family", "hard_tanh", "--dps", "12", "--starts", "6"]
    # the multi-starts: a probe of 4, then the search's 6; the JSON has no timings
    design = _check(argv, tmp_path, "design", 10, set())
    path = tmp_path / "design.json"
    path.write_bytes(design)
    argv = ["enn-check", "--enn", str(path), "--n", "64,96", "--m", "64"]
    _check(argv, tmp_path, "certificate", 2, set())


@pytest.mark.slow
def test_sweep(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    spec = (
        'kind = "coefficients"\nactivations = ["relu", "abs(x)"]\nsigma_a2 = [0.2, 0.3]\ndps = 12\n'
    )
    dirs = (tmp_path / "tty", tmp_path / "file")
    for d in dirs:  # one store each: the second run must run the tasks again, not read them
        d.mkdir()
        (d / "spec.toml").write_text(spec)
    argv = ["sweep", "spec.toml", "--workers", "1"]
    _check(
        argv,
        tmp_path,
        "sweep",
        4,
        {"seconds", "run_id", "rate", "median_seconds", "total_seconds"},
        cwd=dirs,
    )

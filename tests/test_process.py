"""Faults in the `deqrmt` process, through the console script (issue 19).

* Ctrl-C at any moment is exactly one line ``deqrmt: interrupted`` and exit 130.  The moment
  is not guessed from CPU time: the test-only readiness hook (``DEQRMT_TEST_HOLD`` with
  ``DEQRMT_TEST_READY_FILE``, :mod:`deqrmt.cli._process`) makes the process stop at a named
  point, write its name to a file and wait there; the signal is sent once the file exists.
  The earliest moment, right after the spawn, is made exact by spawning the child with SIGINT
  blocked: the kernel holds the signal until deqrmt has its handler (a signal in the
  interpreter's own start-up, before any deqrmt code runs, is out of any program's reach).
* Closed and full standard streams: one line (silence for a closed pipe) and exit 2.
* A missing optional extra: ``MissingExtra`` with the install command, before any work.
  An absent module is simulated by a ``sitecustomize`` that blocks its import in the child.

Every child is closed on every path (``with Popen``, kill in ``finally``).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path

import pytest

import deqrmt
import deqrmt._errors as deqrmt_errors

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and descriptors")

INTERRUPTED = b"deqrmt: interrupted\n"
#: a hang guard for a child, not a claim about speed
PATIENCE = 600.0


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ, DEQRMT_CACHE_DIR=str(tmp_path / "cache"), **extra)
    env.pop("DEQRMT_NO_CACHE", None)
    env.pop("DEQRMT_DEBUG", None)
    return env


@contextmanager
def _spawn(
    argv: list[str], env: dict[str, str], cwd: Path, parent: AbstractContextManager | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """A child with its pipes, killed and reaped however the test ends; ``parent`` is the
    state of this process while it spawns (signal mask, disposition: the child inherits it)."""
    with parent or nullcontext():
        proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd
        )
    with proc:
        try:
            yield proc
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.communicate()


@contextmanager
def _sigint_blocked() -> Iterator[None]:
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


@contextmanager
def _sigint_ignored() -> Iterator[None]:
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def _wait_for(ready: Path, proc: subprocess.Popen[bytes], hold: str) -> None:
    deadline = time.monotonic() + PATIENCE
    while not ready.exists():
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"exited ({proc.returncode}) without reaching {hold!r}: {err[-800:]!r}")
        if time.monotonic() > deadline:
            pytest.fail(f"did not reach {hold!r} within {PATIENCE:.0f} s")
        time.sleep(0.01)
    assert ready.read_text(encoding="utf-8").strip() == hold


def _interrupt_at(
    cli_prefix: list[str], tmp_path: Path, hold: str, argv: list[str], *, signals: int = 1
) -> tuple[int, bytes, bytes]:
    """Run ``deqrmt ARGV``, stop it at ``hold``, send SIGINT ``signals`` times; rc, out, err."""
    ready = tmp_path / "ready"
    env = _env(tmp_path, DEQRMT_TEST_HOLD=hold, DEQRMT_TEST_READY_FILE=str(ready))
    with _spawn([*cli_prefix, *argv], env, tmp_path) as proc:
        _wait_for(ready, proc, hold)
        for _ in range(signals):
            proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=PATIENCE)
    return proc.returncode, out, err


#: The named moments: the work about to start; SymPy half imported; inside an integrand that
#: flint's acb.integral calls back (a KeyboardInterrupt there comes back as a SystemError);
#: interpreter shutdown, after the output was written and flushed.
HOLDS = {
    "main": ["coefficients", "tanh", "--dps", "15"],
    "import:sympy.core.numbers": ["coefficients", "tanh", "--dps", "15"],
    "call:MomentEncloser._integrand.<locals>.integrand": ["coefficients", "tanh", "--dps", "15"],
    "exit": ["coefficients", "tanh", "--dps", "15"],
}


@pytest.mark.parametrize("hold", list(HOLDS))
def test_sigint_at_each_moment_is_one_line_and_exit_130(
    cli_prefix: list[str], tmp_path: Path, hold: str
) -> None:
    rc, out, err = _interrupt_at(cli_prefix, tmp_path, hold, HOLDS[hold])
    assert (rc, err) == (130, INTERRUPTED), (rc, err[-2000:])
    if hold == "exit":  # the work was done and its output complete before the interrupt
        assert out.startswith(b"DEQ tanh") and b"kappa_star" in out
    else:
        assert out == b""


def test_two_quick_sigints_are_still_one_line(cli_prefix: list[str], tmp_path: Path) -> None:
    # The second lands while the first unwinds (or after it was reported): no second line,
    # no traceback from inside an except or finally block.
    rc, out, err = _interrupt_at(cli_prefix, tmp_path, "main", HOLDS["main"], signals=2)
    assert (rc, out, err) == (130, b"", INTERRUPTED), err[-2000:]


def test_sigint_inside_the_computation_leaves_no_file(
    cli_prefix: list[str], tmp_path: Path
) -> None:
    # The LaTeX document is written only at the end, atomically: nothing may be left behind.
    target = tmp_path / "derivation.tex"
    hold = "call:MomentEncloser._integrand.<locals>.integrand"
    rc, out, err = _interrupt_at(cli_prefix, tmp_path, hold, ["latex", "tanh", "-o", str(target)])
    assert (rc, out, err) == (130, b"", INTERRUPTED), err[-2000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "ready"]


def test_sigint_right_after_the_spawn(cli_prefix: list[str], tmp_path: Path) -> None:
    # The child starts with SIGINT blocked, so the signal sent the moment it exists is held by
    # the kernel (not lost, not delivered to the interpreter's start-up) until deqrmt has
    # installed its handler and unblocks it: the earliest moment deqrmt can answer for.
    with _spawn([*cli_prefix, *HOLDS["main"]], _env(tmp_path), tmp_path, _sigint_blocked()) as proc:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=PATIENCE)
    assert (proc.returncode, out, err) == (130, b"", INTERRUPTED), err[-2000:]


def test_an_ignored_sigint_stays_ignored(cli_prefix: list[str], tmp_path: Path) -> None:
    # A background job (`deqrmt … &` in a script) inherits "ignore SIGINT": deqrmt keeps it.
    ready = tmp_path / "ready"
    env = _env(tmp_path, DEQRMT_TEST_HOLD="main", DEQRMT_TEST_READY_FILE=str(ready))
    with _spawn([*cli_prefix, *HOLDS["main"]], env, tmp_path, _sigint_ignored()) as proc:
        _wait_for(ready, proc, "main")
        proc.send_signal(signal.SIGINT)
        ready.unlink()  # the hold ends: the command goes on
        out, err = proc.communicate(timeout=PATIENCE)
    assert (proc.returncode, err) == (0, b""), err[-2000:]
    assert out.startswith(b"DEQ tanh")


# --- standard streams closed, full or gone --------------------------------------------------------


def _shell(cli_prefix: list[str], redirections: str, *argv: str) -> subprocess.CompletedProcess:
    """``deqrmt ARGV REDIRECTIONS`` run by bash (which can close a descriptor: ``>&-``)."""
    script = f'exec "$@" {redirections}'
    return subprocess.run(
        ["bash", "-c", script, "bash", *cli_prefix, *argv],
        capture_output=True,
        timeout=PATIENCE,
    )


def _file_error_line(err: bytes) -> str:
    text = err.decode("utf-8", "backslashreplace")
    assert "Traceback" not in text and "internal error" not in text, text
    lines = text.splitlines()
    assert len(lines) == 1, text
    m = re.match(r"deqrmt: error: ([A-Za-z]+): ", lines[0])
    assert m and issubclass(getattr(deqrmt_errors, m.group(1)), deqrmt.FileError), lines[0]
    return lines[0]


def test_closed_stdout_is_one_line_and_exit_2(cli_prefix: list[str]) -> None:
    # `deqrmt coefficients tanh --json >&-` printed a traceback (issue 19).  bash's `2>&1 >&-`
    # sends stderr to the captured pipe and then closes stdout.
    proc = _shell(cli_prefix, "2>&1 >&-", "coefficients", "tanh", "--dps", "12", "--json")
    assert proc.returncode == 2, proc.stdout
    assert "standard output" in _file_error_line(proc.stdout) and "closed" in proc.stdout.decode()


def test_closed_stdout_is_reported_by_every_kind_of_output(cli_prefix: list[str]) -> None:
    # `explicit … --json 2>&1 >&-` said "internal error"; argparse's --help swallowed the error.
    for argv in (
        ["explicit", "tanh", "relu", "--json"],
        ["--help"],
        ["codegen", "relu", "-o", "-"],
    ):
        proc = _shell(cli_prefix, "2>&1 >&-", *argv)
        assert proc.returncode == 2, (argv, proc.stdout)
        assert "it is closed" in _file_error_line(proc.stdout), argv


def test_a_closed_stdout_is_no_concern_of_a_command_writing_a_file(
    cli_prefix: list[str], tmp_path: Path
) -> None:
    # The descriptor is kept occupied (/dev/null), so the output file cannot become fd 1.
    target = tmp_path / "gen.py"
    proc = _shell(cli_prefix, "2>&1 >&-", "codegen", "relu", "-o", str(target))
    assert proc.returncode == 0, proc.stdout
    assert "do not edit" in target.read_text()


def test_closed_stderr_keeps_the_exit_code(cli_prefix: list[str]) -> None:
    proc = _shell(cli_prefix, "2>&-", "coefficients", "x**")
    assert (proc.returncode, proc.stdout, proc.stderr) == (2, b"", b"")
    proc = _shell(cli_prefix, "2>&-", "coefficients", "relu", "--dps", "12", "--json")
    assert proc.returncode == 0 and proc.stdout.startswith(b"{")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_full_disk_on_stdout_or_stderr(cli_prefix: list[str]) -> None:
    for argv in (["coefficients", "relu", "--dps", "12", "--json"], ["--help"], ["--version"]):
        proc = _shell(cli_prefix, "2>&1 >/dev/full", *argv)
        assert proc.returncode == 2, (argv, proc.stdout)
        assert "No space left" in _file_error_line(proc.stdout), argv
    # An error that cannot be said (stderr full) keeps its code: no "Exception ignored", no 120.
    proc = _shell(cli_prefix, "2>/dev/full", "coefficients", "x**")
    assert (proc.returncode, proc.stdout) == (2, b"")


def test_a_closed_pipe_is_silent(cli_prefix: list[str]) -> None:
    for argv in (["activations"], ["--help"], ["coefficients", "relu", "--dps", "12"]):
        proc = subprocess.run(
            ["bash", "-c", 'set -o pipefail; "$@" | head -c 1', "bash", *cli_prefix, *argv],
            capture_output=True,
            timeout=PATIENCE,
        )
        assert proc.stderr == b"" and len(proc.stdout) == 1, (argv, proc.stderr)
        assert proc.returncode in (0, 2), argv  # 0 if everything fitted in the pipe


# --- optional extras: refused before any work -----------------------------------------------------

_BLOCKER = textwrap.dedent(
    """
    # Test-only: the modules named in DEQRMT_TEST_ABSENT cannot be imported, as if not installed.
    import os, sys

    _ABSENT = set(filter(None, os.environ.get("DEQRMT_TEST_ABSENT", "").split(",")))

    class _Absent:
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in _ABSENT:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, _Absent())
    """
)


def _without(tmp_path: Path, modules: str) -> dict[str, str]:
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(_BLOCKER, encoding="utf-8")
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH", "")]))
    return _env(tmp_path, PYTHONPATH=path, DEQRMT_TEST_ABSENT=modules)


@pytest.mark.parametrize(
    ("absent", "argv"),
    [
        # issue 19: printed the table, then "internal error: ModuleNotFoundError" (exit 70)
        ("matplotlib", ["coefficients", "tanh", "--sigma-a2", "0.1:0.3:3", "--plot", "plots"]),
        ("matplotlib", ["bias", "1/(1-w)", "--plot", "plots"]),
        ("torch", ["bias", "1/(1-w)", "--check"]),
        ("torch", ["check", "tanh", "--mc"]),
        ("tqdm", ["validate", "tanh", "--n", "64"]),
        ("sklearn", ["experiment", "--dataset", "digits"]),
        ("tqdm", ["enn-check", "--enn", "design.json"]),
    ],
)
def test_a_missing_extra_is_refused_before_any_work(
    cli_prefix: list[str], tmp_path: Path, absent: str, argv: list[str]
) -> None:
    env = _without(tmp_path, absent)
    probe = subprocess.run(
        [sys.executable, "-c", f"import {absent}"], env=env, capture_output=True, timeout=PATIENCE
    )
    assert probe.returncode != 0, "the blocker did not block"
    before = sorted(p.name for p in tmp_path.iterdir())
    proc = subprocess.run(
        [*cli_prefix, *argv], env=env, cwd=tmp_path, capture_output=True, timeout=PATIENCE
    )
    err = proc.stderr.decode("utf-8", "backslashreplace")
    assert (proc.returncode, proc.stdout) == (2, b""), err  # nothing printed: no work done
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("deqrmt: error: MissingExtra: "), err
    assert "pip install 'deqrmt[validate]'" in lines[0] and f"missing: {absent}" in lines[0]
    after = sorted(p.name for p in tmp_path.iterdir() if p.name != "cache")
    assert after == [n for n in before if n != "cache"], "a file or directory was created"

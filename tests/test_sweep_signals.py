"""Ctrl-C at every moment of a sweep (issues 19 and 27): one line, exit 130, the store intact.

A short sweep (9 cheap coefficient tasks, one worker) runs through the console script with the
test-only hook ``DEQRMT_TEST_PHASES`` (:mod:`deqrmt.sweep._signals`): the driver names each
step in a file as it reaches it, and the test sends SIGINT when the chosen step appears, to the
driver alone or to its whole process group (what a terminal's Ctrl-C does).  With
``DEQRMT_TEST_HOLD`` the driver lingers 0.5 s in that step, so the signal lands inside it (the
store's commit, the cluster's spawn and close, the client's connect) however loaded the machine
is; without, it lands shortly after.  No assertion depends on timing.

After each interruption: exit 130; stderr is one printable line starting
``deqrmt: interrupted``, without a traceback; the store (if the run got as far as creating it)
opens and every row validates, no transaction was left half-done (no journal), no process of
the cluster is left; and the same command then stores exactly the missing tasks.

The default suite interrupts two moments (the cluster's start; a commit, then resumes);
``-m slow`` all 20, each followed by the resume.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("distributed")

SPEC = """
kind = "coefficients"
activations = ["relu", "abs(x)", "leaky_relu(0.1)"]
sigma_a2 = "0.1:0.5:3"
dps = 12
"""
TASKS = 9

#: (step, hold, to the whole process group): 20 moments over the whole run, in order.
MOMENTS = [
    ("store-opening", True, True),  # before the store exists
    ("store-open", False, False),
    ("run-begun", True, True),  # the run is recorded, the cluster not yet spawned
    ("cluster-spawn", True, False),  # the launcher process being spawned (deferred)
    ("cluster-starting", False, True),
    ("cluster-starting", True, True),  # the scheduler and the worker starting
    ("cluster-ready", False, False),
    ("client-connecting", True, True),  # the client's connect (deferred)
    ("client-connected", True, False),
    ("submitted", False, True),
    ("store-commit", True, True),  # inside the first result's transaction (deferred)
    ("stored-1", False, False),
    ("stored-4", True, True),
    ("store-commit", False, False),
    ("all-stored", False, True),
    ("client-closing", True, True),  # the client's close (deferred)
    ("cluster-closing", True, False),  # the cluster's close (deferred)
    ("cluster-closing", False, True),
    ("run-ended", True, True),  # the run's end being recorded (deferred)
    ("summary", True, False),  # the summary read back from the store
]
#: The default suite's moments (index into MOMENTS → also resume?): the cluster's start, and a
#: commit then the resume (each sweep starts a cluster: ~15 s on 2 busy cores).
DEFAULT = {5: False, 10: True}


def _script() -> list[str]:
    script = Path(sys.executable).parent / "deqrmt"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from deqrmt.cli import main; sys.exit(main())"]


def _reached(phases: Path, step: str) -> bool:
    try:
        text = phases.read_text()
    except OSError:
        return False
    return any(line.split()[:1] == [step] for line in text.splitlines())


def _interrupt(tmp: Path, step: str, hold: bool, group: bool) -> tuple[int, str, str, bool]:
    """Run the sweep, send SIGINT when ``step`` is reached; (rc, stdout, stderr, sent)."""
    phases = tmp / "phases.txt"
    env = dict(os.environ, DEQRMT_TEST_PHASES=str(phases), DEQRMT_TEST_HOLD=step if hold else "")
    argv = [*_script(), "sweep", str(tmp / "spec.toml"), "--workers", "1", "--json"]
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True
    )
    sent = False
    try:
        deadline = time.monotonic() + 240
        while proc.poll() is None and not _reached(phases, step):
            assert time.monotonic() < deadline, f"step {step} not reached in 240 s"
            time.sleep(0.01)
        if proc.poll() is None:
            (os.killpg if group else os.kill)(proc.pid, signal.SIGINT)
            sent = True
        out, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    return proc.returncode, out.decode(), err.decode("utf-8", "backslashreplace"), sent


def _cluster_processes(tmp: Path) -> list[str]:
    """Live processes started for this test's sweep, other than this one: the launcher and its
    worker processes inherit the environment, which names ``tmp`` (DEQRMT_TEST_PHASES)."""
    out = []
    mark = f"DEQRMT_TEST_PHASES={tmp / 'phases.txt'}".encode()
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if mark in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
                    out.append(f"{pid}: {cmd.decode(errors='replace')[:120]}")
    return out


def _check_store(store: Path) -> int:
    """The store opens, every row validates, no transaction is half done; its row count."""
    from deqrmt.sweep import ResultStore

    assert not Path(f"{store}-journal").exists(), "a transaction was left half done"
    with ResultStore(store) as st:
        recs = st.records()
        st.runs()
    assert len({r.key for r in recs}) == len(recs)
    assert all(r.ok for r in recs), [r.error for r in recs if not r.ok]
    return len(recs)


def _one_moment(tmp: Path, step: str, hold: bool, group: bool, resume: bool) -> None:
    (tmp / "spec.toml").write_text(SPEC)
    store = tmp / "spec.sqlite"
    rc, out, err, sent = _interrupt(tmp, step, hold, group)
    assert sent, f"the sweep ended before step {step}"
    lines = err.splitlines()
    assert rc == 130, (rc, err)
    assert "Traceback" not in err, err
    assert len(lines) == 1 and lines[0].startswith("deqrmt: interrupted"), err
    assert lines[0].isprintable(), repr(lines[0])
    if out.strip():  # interrupted inside run_sweep: the summary says so
        summary = json.loads(out)
        assert summary["interrupted"] is True
    deadline = time.monotonic() + 60  # the launcher exits with (or right after) the driver
    while _cluster_processes(tmp) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _cluster_processes(tmp), _cluster_processes(tmp)
    stored = _check_store(store) if store.exists() else 0
    if out.strip():
        assert json.loads(out)["completed"] == stored
    if not resume:
        return
    again = subprocess.run(
        [*_script(), "sweep", str(tmp / "spec.toml"), "--workers", "1", "--json"],
        capture_output=True, timeout=600,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr.decode()
    summary = json.loads(again.stdout)
    assert (summary["already_stored"], summary["submitted"]) == (stored, TASKS - stored)
    assert summary["completed"] == TASKS - stored and summary["ok"] is True
    assert _check_store(store) == TASKS


@pytest.mark.parametrize(
    ("step", "hold", "group", "resume"),
    [(*MOMENTS[i], resume) for i, resume in DEFAULT.items()],
    ids=[f"{MOMENTS[i][0]}{'-hold' if MOMENTS[i][1] else ''}" for i in DEFAULT],
)
def test_ctrl_c_at_a_moment_of_the_sweep(
    tmp_path: Path, step: str, hold: bool, group: bool, resume: bool
) -> None:
    _one_moment(tmp_path, step, hold, group, resume=resume)


@pytest.mark.slow  # 20 short sweeps and their resumes: ~5 minutes on 2 busy cores
@pytest.mark.parametrize(
    ("step", "hold", "group"),
    MOMENTS,
    ids=[f"{i:02d}-{s}{'-hold' if h else ''}" for i, (s, h, _) in enumerate(MOMENTS)],
)
def test_ctrl_c_at_twenty_moments(tmp_path: Path, step: str, hold: bool, group: bool) -> None:
    _one_moment(tmp_path, step, hold, group, resume=True)


def test_the_twenty_moments_cover_the_whole_run() -> None:
    steps = [s for s, _, _ in MOMENTS]
    assert len(MOMENTS) == 20
    for step in ("cluster-spawn", "cluster-starting", "store-commit", "cluster-closing"):
        assert step in steps
    assert steps[0] == "store-opening" and steps[-1] == "summary"


# --- the pieces, in-process ---------------------------------------------------------------------


def test_deferred_interrupts_delay_ctrl_c_to_the_end_of_the_step() -> None:
    from deqrmt.sweep._signals import deferred_interrupts

    done = []
    with pytest.raises(KeyboardInterrupt), deferred_interrupts() as seen:
        signal.raise_signal(signal.SIGINT)  # delivered now: recorded, not raised
        done.append("the step finished")
        assert seen.count == 1
    assert done == ["the step finished"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored
    # Nested: the inner step passes the signal to the outer one, which raises at its end.
    with pytest.raises(KeyboardInterrupt), deferred_interrupts() as outer:
        with deferred_interrupts():
            signal.raise_signal(signal.SIGINT)
        assert outer.count == 1
        done.append("the outer step finished")
    assert done[-1] == "the outer step finished"
    with deferred_interrupts() as quiet:  # no signal: nothing raised
        pass
    assert quiet.count == 0


def test_a_cluster_that_does_not_start_is_a_scheduler_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The launcher's failure reaches the user as one SchedulerError quoting its last words,
    and nothing is left behind (its private directory is removed)."""
    import tempfile

    from deqrmt._errors import SchedulerError
    from deqrmt.sweep import _cluster

    monkeypatch.setattr(_cluster, "LAUNCHER", "deqrmt.sweep._no_such_module")
    before = set(os.listdir(tempfile.gettempdir()))
    expected = pytest.raises(SchedulerError, match="did not start|exited while starting")
    with expected as info, _cluster.launched_cluster(1):
        pass
    assert "No module named" in str(info.value)
    after = {p for p in os.listdir(tempfile.gettempdir()) if p.startswith("deqrmt-sweep-")}
    assert after <= before


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("tcp://127.0.0.1:8786", "tcp://127.0.0.1:8786"),
        ("127.0.0.1:8786", "tcp://127.0.0.1:8786"),
        ("TCP://node-7.cluster.local:9000/", "tcp://node-7.cluster.local:9000"),
        ("tcp://[::1]:8786", "tcp://[::1]:8786"),
        (" tcp://host:1 ", "tcp://host:1"),
    ],
)
def test_scheduler_addresses_accepted(address: str, expected: str) -> None:
    from deqrmt.sweep import check_scheduler

    assert check_scheduler(address) == expected

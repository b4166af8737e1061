"""Ctrl-C in a user's script while deqrmt's tile workers run: a KeyboardInterrupt, never an abort.

The exact kernels run their tiles on worker threads (:func:`deqrmt.validate._tiles.run_tiles`).
A worker still inside torch when the interpreter finalises aborts the process (SIGABRT,
"terminate called without an active exception"); so a Ctrl-C in the calling thread stops the
workers (no new tile; a long tile at its next :func:`raise_if_stopped`), waits for them to leave,
and only then raises.

The in-process tests drive :func:`run_tiles` with tiles that sleep or spin, and a real SIGINT
delivered to the main thread (``signal.pthread_kill``) while it waits for the workers.  The slow
tests run a plain script in a subprocess — ``deqrmt.kernels`` on 9000 × 20, and
``deqrmt.spectrum(..., mc=True)`` — and send SIGINT at 1 s and at seeded random moments, most
of them after the first tile has started; each must end with the script's own
``KeyboardInterrupt`` traceback and the ordinary Ctrl-C exit status (killed by SIGINT, which a
shell reports as 130, or 1), never −6.  The console command ``deqrmt spectrum --mc`` likewise
ends with its one line ``deqrmt: interrupted`` and exit 130.  No assertion depends on machine
speed: the signal is timed from markers the script prints, and the work is repeated so that
the signal always lands inside it.  The slow tests take 3–5 min on 2 busy cores; the default
suite keeps one subprocess, a script whose tiles run torch directly (a few seconds).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from deqrmt.validate import _tiles  # noqa: E402
from deqrmt.validate._tiles import raise_if_stopped, run_tiles  # noqa: E402

#: how long any test waits for something that should take a fraction of a second (a guard
#: against a hang, never an assertion on speed)
PATIENCE = 120.0


def _tile_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("deqrmt-tiles-")]


def _interrupt_main_when(event: threading.Event) -> threading.Thread:
    """A helper thread that sends SIGINT to the main thread once ``event`` is set."""
    main = threading.main_thread().ident
    assert main is not None

    def send() -> None:
        if event.wait(PATIENCE):
            signal.pthread_kill(main, signal.SIGINT)

    th = threading.Thread(target=send, daemon=True)
    th.start()
    return th


@pytest.fixture(autouse=True)
def _default_sigint():
    """Python's own SIGINT handler (raise KeyboardInterrupt) in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("needs the main thread to receive SIGINT")
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def test_ctrl_c_joins_the_workers_before_it_is_raised():
    """SIGINT while the calling thread waits: KeyboardInterrupt, raised only once every worker
    has left its tile, and no tile started after it."""
    started = threading.Event()
    events: list[str] = []
    lock = threading.Lock()

    def one(t):
        with lock:
            events.append(f"start {t[0]}")
        started.set()
        time.sleep(0.2)
        with lock:
            events.append(f"end {t[0]}")

    tiles = [(i, i + 1, i, i + 1) for i in range(400)]  # 400 × 0.2 s on 2 workers: 40 s
    helper = _interrupt_main_when(started)
    with pytest.raises(KeyboardInterrupt):
        run_tiles(one, tiles, 2)
    alive = _tile_threads()
    helper.join(PATIENCE)
    assert not alive, "workers still running when KeyboardInterrupt reached the caller"
    starts = [e for e in events if e.startswith("start")]
    ends = [e for e in events if e.startswith("end")]
    assert len(starts) == len(ends), events  # every tile begun was finished, none cut off
    assert len(starts) < len(tiles)  # the run stopped early


def test_a_long_tile_stops_at_its_next_check():
    """A tile that would spin for two minutes leaves at its next raise_if_stopped."""
    started = threading.Event()
    how: list[str] = []

    def one(t):
        started.set()
        end = time.monotonic() + PATIENCE
        try:
            while time.monotonic() < end:
                raise_if_stopped()
                time.sleep(0.01)
        except _tiles.TilesStopped:
            how.append("stopped")
            raise
        how.append("ran out")

    helper = _interrupt_main_when(started)
    with pytest.raises(KeyboardInterrupt):
        run_tiles(one, [(0, 1, 0, 1), (1, 2, 1, 2)], 2)
    helper.join(PATIENCE)
    assert not _tile_threads()
    assert how and set(how) == {"stopped"}, how


def test_a_second_ctrl_c_does_not_cut_the_wait_short():
    """A second SIGINT while the workers finish their tiles: still joined before the raise."""
    started = threading.Event()
    ended: list[int] = []
    main = threading.main_thread().ident
    assert main is not None

    def one(t):
        started.set()
        time.sleep(0.5)
        ended.append(t[0])

    def send() -> None:
        if started.wait(PATIENCE):
            signal.pthread_kill(main, signal.SIGINT)
            time.sleep(0.1)
            signal.pthread_kill(main, signal.SIGINT)

    helper = threading.Thread(target=send, daemon=True)
    helper.start()
    with pytest.raises(KeyboardInterrupt):
        run_tiles(one, [(i, i + 1, i, i + 1) for i in range(100)], 2)
    assert not _tile_threads()
    helper.join(PATIENCE)
    assert ended  # the tiles in flight were finished, not abandoned


def test_an_error_in_a_worker_stops_the_others_and_is_raised():
    seen: list[int] = []

    def one(t):
        if t[0] == 3:
            raise ValueError("tile 3")
        time.sleep(0.05)
        seen.append(t[0])

    with pytest.raises(ValueError, match="tile 3"):
        run_tiles(one, [(i, i + 1, i, i + 1) for i in range(200)], 2)
    assert not _tile_threads()
    assert len(seen) < 199


def test_interpreter_shutdown_stops_a_run_on_another_thread():
    """The exit hook (run before the interpreter joins non-daemon threads) stops every run:
    a call on another thread then raises RuntimeError instead of returning part of a result."""
    started = threading.Event()
    result: list[BaseException | None] = []

    def one(t):
        started.set()
        end = time.monotonic() + PATIENCE
        while time.monotonic() < end:
            raise_if_stopped()
            time.sleep(0.01)

    def caller() -> None:
        try:
            run_tiles(one, [(i, i + 1, i, i + 1) for i in range(4)], 2)
            result.append(None)
        except BaseException as e:  # noqa: BLE001 - recorded for the assertion
            result.append(e)

    th = threading.Thread(target=caller)
    th.start()
    try:
        assert started.wait(PATIENCE)
        _tiles._stop_all_runs()
    finally:
        th.join(PATIENCE)
    assert not th.is_alive()
    assert len(result) == 1 and isinstance(result[0], RuntimeError), result


def test_the_quadrature_fallback_stops_between_chunks(monkeypatch):
    """The nested quadrature of the pairs near |ρ| = 1 (~0.1 s a pair) checks the stop flag
    between chunks: a tile of 4000 such pairs (minutes) leaves at its next chunk."""
    from deqrmt.symbolic import get_activation
    from deqrmt.validate import _bivariate
    from deqrmt.validate._pointwise import CenteredActivation

    act = CenteredActivation.from_activation(get_activation("tanh"), 0.0)
    q = torch.ones(2, dtype=torch.float64)
    fallback = _bivariate.Conditional(act, q)
    pairs = 4000
    i, j = torch.zeros(pairs, dtype=torch.long), torch.ones(pairs, dtype=torch.long)
    lam = torch.full((pairs,), 0.99, dtype=torch.float64)
    started = threading.Event()
    stopped: list[str] = []
    real = _bivariate.raise_if_stopped

    def watched() -> None:
        try:
            real()
        except _tiles.TilesStopped:
            stopped.append(threading.current_thread().name)
            raise

    def one(t):
        started.set()
        fallback.pairs(i, j, lam)

    monkeypatch.setattr(_bivariate, "raise_if_stopped", watched)
    helper = _interrupt_main_when(started)
    with pytest.raises(KeyboardInterrupt):
        run_tiles(one, [(0, 1, 0, 1), (1, 2, 1, 2)], 2)
    helper.join(PATIENCE)
    assert not _tile_threads()
    assert stopped, "no worker stopped at a chunk boundary"


def test_a_completed_run_returns_every_tile():
    seen: list[int] = []
    lock = threading.Lock()

    def one(t):
        with lock:
            seen.append(t[0])

    run_tiles(one, [(i, i + 1, i, i + 1) for i in range(50)], 3)
    assert sorted(seen) == list(range(50))
    assert not _tile_threads()


# ---------------------------------------------------------------------------------------------
# A user's script, interrupted

KERNELS_SCRIPT = """\
import sys
import numpy as np
import deqrmt

X = np.random.default_rng(0).standard_normal((9000, 20)) / 20**0.5
first = [True]


def progress(done, total):
    if first[0]:
        first[0] = False
        print("tiles", flush=True)


print("calling", flush=True)
for _ in range(50):  # the work outlasts any delay the test draws
    deqrmt.kernels("tanh", X, kind="ntk", progress=progress)
print("done", flush=True)
"""

SPECTRUM_SCRIPT = """\
import sys
import deqrmt
from deqrmt.validate import _exact

real_run_tiles = _exact.run_tiles


def marked(*args, **kwargs):  # a marker for the test: the tiles begin
    print("tiles", flush=True)
    return real_run_tiles(*args, **kwargs)


def tick(label):
    if label == "predicted laws":
        print("laws", flush=True)


_exact.run_tiles = marked
data = sys.argv[1]
print("calling", flush=True)
for _ in range(50):
    deqrmt.spectrum("tanh", data=data, n=4096, mc=True, device="cpu", progress=tick)
print("done", flush=True)
"""

#: the exit statuses of a script ended by an uncaught KeyboardInterrupt: killed by SIGINT
#: (CPython re-raises the signal; a shell reports 130), 130, or 1
CTRL_C_EXITS = (-signal.SIGINT, 130, 1)


def _run_and_interrupt(
    tmp_path: Path, script: str, args: list[str], marker: str, delay: float
) -> tuple[int, bytes, str]:
    """Run ``script``, wait for the line ``marker``, sleep ``delay`` s, send SIGINT; return the
    exit status, stdout and stderr (the child killed and reaped however this ends)."""
    path = tmp_path / "user_script.py"
    path.write_text(script)
    src = str(Path(_tiles.__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen(
        [sys.executable, str(path), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
    )
    try:
        assert proc.stdout is not None
        lines = []
        while True:  # each line comes within seconds; EOF ends the loop if the child dies
            line = proc.stdout.readline().decode().strip()
            lines.append(line)
            if line == marker or not line:
                break
        assert lines[-1] == marker, (lines, proc.poll())
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=PATIENCE)
    finally:
        proc.kill()
        proc.wait()
    stderr = err.decode(errors="replace")
    assert "terminate called" not in stderr, stderr[-2000:]
    return proc.returncode, out, stderr


def _interrupt(tmp_path: Path, script: str, args: list[str], marker: str, delay: float) -> None:
    """The way out of an interrupted user script: its own KeyboardInterrupt traceback and a
    Ctrl-C exit status, never an abort."""
    code, out, stderr = _run_and_interrupt(tmp_path, script, args, marker, delay)
    assert code in CTRL_C_EXITS, (code, delay, stderr[-2000:])
    assert b"done" not in out
    assert stderr.rstrip().endswith("KeyboardInterrupt"), stderr[-2000:]
    assert 'user_script.py", line' in stderr, stderr[-2000:]  # the user's own frame


TORCH_TILES_SCRIPT = """\
import torch
from deqrmt.validate._tiles import run_tiles

torch.set_num_threads(1)
a = torch.randn(256, 256, dtype=torch.float64)
first = [True]


def one(t):  # each tile stays inside torch (matrix products, tanh) most of its time
    if first[0]:
        first[0] = False
        print("tiles", flush=True)
    x = a
    for _ in range(5):
        x = torch.tanh(x @ a) * 0.1


print("calling", flush=True)
run_tiles(one, [(i, i + 1, i, i + 1) for i in range(10**6)], 2)
print("done", flush=True)
"""


def test_ctrl_c_in_a_script_whose_tiles_run_torch(tmp_path):
    """The default suite's guard (a few seconds): SIGINT while two workers are inside torch.
    Before the workers were joined, this script aborted (−6) every time."""
    _interrupt(tmp_path, TORCH_TILES_SCRIPT, [], "tiles", 0.2)


#: SIGINT 1 s after the call, then at seeded random moments after the first tile began
_RNG = random.Random(40)
KERNEL_MOMENTS = [("calling", 1.0)] + [("tiles", round(_RNG.uniform(0, 2), 2)) for _ in range(3)]
SPECTRUM_MOMENTS = [
    ("gmm", "tiles", round(_RNG.uniform(0, 2), 2)),
    ("gmm", "tiles", round(_RNG.uniform(0, 2), 2)),
    ("sphere", "laws", round(_RNG.uniform(0, 4), 2)),
]


@pytest.mark.slow
@pytest.mark.parametrize(("marker", "delay"), KERNEL_MOMENTS)
def test_ctrl_c_in_a_script_calling_kernels(tmp_path, marker, delay):
    _interrupt(tmp_path, KERNELS_SCRIPT, [], marker, delay)


@pytest.mark.slow
@pytest.mark.parametrize(("data", "marker", "delay"), SPECTRUM_MOMENTS)
def test_ctrl_c_in_a_script_calling_spectrum_mc(tmp_path, data, marker, delay):
    _interrupt(tmp_path, SPECTRUM_SCRIPT, [data], marker, delay)


CLI_SCRIPT = """\
import sys
from deqrmt.validate import _exact
from deqrmt.cli import main

real_run_tiles = _exact.run_tiles


def marked(*args, **kwargs):  # a marker for the test: the tiles begin
    print("tiles", flush=True)
    return real_run_tiles(*args, **kwargs)


_exact.run_tiles = marked
sys.argv = ["deqrmt", "spectrum", "tanh", "--data", "gmm", "--n", "4096", "--mc", "--device", "cpu"]
print("calling", flush=True)
sys.exit(main())
"""


CLI_DELAY = round(_RNG.uniform(0, 2), 2)


@pytest.mark.slow
def test_ctrl_c_in_the_console_command_during_the_tiles(tmp_path):
    """`deqrmt spectrum --mc` as the console script runs it: exit 130, one line."""
    code, _out, stderr = _run_and_interrupt(tmp_path, CLI_SCRIPT, [], "tiles", CLI_DELAY)
    assert code == 130, (code, CLI_DELAY, stderr[-2000:])
    assert stderr.strip().splitlines() == ["deqrmt: interrupted"], stderr[-2000:]

"""The benchmarks' load rule: a ratio is withheld when the machine is busy (issue 24).

The load average and core count are monkeypatched: nothing here depends on the real load.
"""

from __future__ import annotations

import os
import runpy
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture
def load_mod() -> dict[str, Any]:
    return runpy.run_path(str(BENCH / "_load.py"), run_name="bench_load")


def _machine(monkeypatch: pytest.MonkeyPatch, one: float, cores: int) -> None:
    monkeypatch.setattr(os, "getloadavg", lambda: (one, 0.5, 0.25))
    monkeypatch.setattr(os, "cpu_count", lambda: cores)


def test_idle_machine_prints_the_ratio(
    load_mod: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    _machine(monkeypatch, 1.4, 2)  # 1.4 ≤ 2 − 0.5
    Load = load_mod["Load"]
    before, after = Load.now(), Load.now()
    assert (before.cores, before.one) == (2, 1.4)
    assert load_mod["ratio_text"](2.345, before, after) == "2.35x"


@pytest.mark.parametrize("busy_at", ["start", "end"])
def test_busy_at_either_end_withholds(
    load_mod: dict[str, Any], monkeypatch: pytest.MonkeyPatch, busy_at: str
) -> None:
    Load = load_mod["Load"]
    _machine(monkeypatch, 10.5 if busy_at == "start" else 0.2, 2)
    before = Load.now()
    _machine(monkeypatch, 0.2 if busy_at == "start" else 10.5, 2)
    after = Load.now()
    text = load_mod["ratio_text"](2.345, before, after)
    assert text == "ratio withheld: machine busy (load 10.50 on 2 cores)"
    assert "2.35" not in text


def test_threshold_is_cores_minus_half(
    load_mod: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    Load = load_mod["Load"]
    _machine(monkeypatch, 15.5, 16)  # exactly cores − 0.5: not busy
    assert not Load.now().busy
    _machine(monkeypatch, 15.51, 16)
    assert Load.now().busy


def test_force_prints_the_ratio_marked(
    load_mod: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    Load = load_mod["Load"]
    _machine(monkeypatch, 9.0, 2)
    ld = Load.now()
    text = load_mod["ratio_text"](3.0, ld, ld, force=True)
    assert text.startswith("3.00x") and "forced" in text and "9.00" in text


def test_load_line_names_load_and_cores(
    load_mod: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    _machine(monkeypatch, 3.25, 2)
    assert load_mod["load_line"]("before") == "load before: load 3.25 0.50 0.25 on 2 cores"


def test_a_benchmark_withholds_its_ratio_when_busy(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """End to end: deq_solve.py at a tiny size on a 'busy' machine prints times, no ratio."""
    pytest.importorskip("torch")
    _machine(monkeypatch, 50.0, 2)
    main = runpy.run_path(str(BENCH / "deq_solve.py"), run_name="bench")["main"]
    main(["--n", "24", "--m", "32", "--act", "relu", "--sigma-a2", "0.2", "--no-torchdeq"])
    out = capsys.readouterr().out
    assert "ratio withheld: machine busy (load 50.00 on 2 cores)" in out
    assert "load before: load 50.00" in out and "load after: load 50.00" in out


def test_nt_kernels_without_neural_tangents_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "neural_tangents", None)  # import raises ImportError
    main = runpy.run_path(str(BENCH / "nt_kernels.py"), run_name="bench")["main"]
    assert main(["--n", "32"]) == 0
    out = capsys.readouterr().out
    assert "neural-tangents not installed: pip install -e .[bench]" in out
    assert "load before:" in out and "load after:" in out


def test_deq_solve_without_torchdeq_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import sys

    pytest.importorskip("torch")
    monkeypatch.setitem(sys.modules, "torchdeq", None)
    main = runpy.run_path(str(BENCH / "deq_solve.py"), run_name="bench")["main"]
    main(["--n", "24", "--m", "32", "--act", "relu", "--sigma-a2", "0.2"])
    out = capsys.readouterr().out
    assert "TorchDEQ not installed: pip install -e .[bench]" in out
    assert not any("tdeq" in line for line in out.splitlines())


def _stamped(load_mod: dict[str, Any], one: float, wall: float, machine: float, own: float) -> Any:
    return load_mod["Load"](one, 0.5, 0.25, 2, (wall, machine, own))


def test_a_long_runs_own_load_does_not_withhold(load_mod: dict[str, Any]) -> None:
    """A 60 s comparison that kept both cores busy itself (120 CPU s of its own, 121 of the
    machine's) ends at load 1.9 on 2 cores: the others used 1/60 of a core, the ratio stands."""
    before = _stamped(load_mod, 0.3, 1000.0, 5000.0, 10.0)
    after = _stamped(load_mod, 1.9, 1060.0, 5121.0, 130.0)
    assert load_mod["others_cores"](before, after) == pytest.approx(1 / 60)
    text = load_mod["ratio_text"](0.7, before, after, fmt="{:.2f}")
    assert text.startswith("0.70 (load 1.90 at the end was this run's own")
    assert "0.02 cores" in text
    cell, note = load_mod["ratio_cell"](0.7, before, after, fmt="{:.2f}", width=6)
    assert cell == "  0.70" and note.startswith("(load 1.90")


def test_others_at_the_end_still_withhold(load_mod: dict[str, Any]) -> None:
    """The same end load, but other processes used 1.5 cores over the 60 s: withheld."""
    before = _stamped(load_mod, 0.3, 1000.0, 5000.0, 10.0)
    after = _stamped(load_mod, 1.9, 1060.0, 5210.0, 130.0)
    assert load_mod["others_cores"](before, after) == pytest.approx(1.5)
    assert load_mod["ratio_text"](0.7, before, after).startswith("ratio withheld")
    assert load_mod["withheld"](before, after)


def test_a_short_run_or_a_busy_start_keeps_the_load_rule(load_mod: dict[str, Any]) -> None:
    """Under OWN_WINDOW seconds the end's load decides; a busy start always withholds."""
    short_before = _stamped(load_mod, 0.3, 1000.0, 5000.0, 10.0)
    short_after = _stamped(load_mod, 1.9, 1005.0, 5010.0, 20.0)
    assert load_mod["others_cores"](short_before, short_after) is None
    assert load_mod["ratio_text"](0.7, short_before, short_after).startswith("ratio withheld")
    hot_before = _stamped(load_mod, 1.8, 1000.0, 5000.0, 10.0)
    after = _stamped(load_mod, 1.9, 1060.0, 5121.0, 130.0)
    assert load_mod["ratio_text"](0.7, hot_before, after).startswith("ratio withheld")


def test_the_cpu_stamp_reads_this_machine(load_mod: dict[str, Any]) -> None:
    """On Linux the stamp is (wall, machine CPU s, own CPU s), each non-decreasing."""
    a = load_mod["_cpu_stamp"]()
    if a is None:
        pytest.skip("no /proc/stat")
    sum(i * i for i in range(200_000))  # some CPU of our own
    b = load_mod["_cpu_stamp"]()
    assert all(y >= x for x, y in zip(a, b, strict=True)) and b[2] > a[2]


def test_descendants_cpu_counts_as_this_runs_own(load_mod: dict[str, Any]) -> None:
    """A child process that burns CPU and is never reaped into RUSAGE_CHILDREN before the stamp
    (it is still running) counts as this run's own while tracking is on."""
    import subprocess
    import sys
    import time

    if load_mod["_cpu_stamp"]() is None:
        pytest.skip("no /proc/stat")
    with load_mod["track_descendants"]():
        a = load_mod["_cpu_stamp"]()
        child = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import time\nt=time.process_time()\nwhile time.process_time()-t < 1.5: pass\ntime.sleep(60)",
            ]
        )
        try:
            deadline = time.monotonic() + 60
            b = load_mod["_cpu_stamp"]()
            while b[2] - a[2] < 1.0 and time.monotonic() < deadline:
                time.sleep(0.2)
                b = load_mod["_cpu_stamp"]()
        finally:
            child.kill()
            child.wait()
    assert b[2] - a[2] >= 1.0  # the child's burnt second(s), sampled while it lives
    assert not load_mod["_TREE"]  # the sampling thread stopped with the block

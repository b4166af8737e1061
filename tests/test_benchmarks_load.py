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

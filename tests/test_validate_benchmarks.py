"""The benchmark scripts run and print their ratios (tiny sizes; issue 4)."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

pytest.importorskip("torch")

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


def _main(name: str):  # type: ignore[no-untyped-def]
    return runpy.run_path(str(BENCH / name), run_name="bench")["main"]


def test_exact_kernel_benchmark(capsys: pytest.CaptureFixture[str]) -> None:
    _main("exact_kernel.py")(
        ["--act", "relu,tanh", "--n", "96", "--baseline-n", "48", "--check", "4"]
    )
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.strip().startswith(("relu", "tanh"))]
    assert len(rows) == 2
    for row in rows:
        err_fast = float(row.split()[-2])
        assert err_fast < 1e-10, row


def test_deq_solve_benchmark(capsys: pytest.CaptureFixture[str]) -> None:
    _main("deq_solve.py")(["--n", "32", "--m", "64", "--act", "relu", "--sigma-a2", "0.2"])
    out = capsys.readouterr().out
    assert "matmul" in out and "it ratio" in out
    assert "load before:" in out and "load after:" in out
    assert sum(line.split()[:3] == ["relu", "0.20", "picard"] for line in out.splitlines()) == 1

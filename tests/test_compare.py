"""``deqrmt compare ACT1 ACT2 …`` (issue 23): coefficients side by side, in-process.

Reference values are closed forms: ReLU at σ_a² = 1/5, σ_b² = 4/5 has E[φ'] = 1/2, so
α*₁ = σ_b² μ₁²/(1 − σ_a² μ₁²) = 4/19; SiLU has E[φ'(τξ)] = 1/2 at every τ too (φ'(x) + φ'(−x) =
1), so its α*₁ is also 4/19; an odd φ (tanh) has α*₂ = α*₃ = 0.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from deqrmt.cli import main

HAS_MPL = importlib.util.find_spec("matplotlib") is not None


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_table_has_one_column_per_activation(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "relu", "tanh", "silu", "--dps", "15"]) == 0
    out = capsys.readouterr().out.splitlines()
    header = next(line for line in out if line.split() == ["relu", "tanh", "silu"])
    rows = {line.split()[0]: line.split()[1:] for line in out[out.index(header) + 1 :] if line}
    assert rows["α*₁"][0] == rows["α*₁"][2] == "0.210526315789"  # 4/19 to 12 digits
    assert rows["α*₂"][1] == rows["α*₃"][1] == "0"  # tanh is odd
    assert "σ_a² = 1/5" in out[0] and "all proven" in out[0]


def test_json_schema(capsys: pytest.CaptureFixture[str]) -> None:
    d = _json(capsys, ["compare", "relu", "tanh", "--sigma-a2", "0.2", "--dps", "20"])
    assert d["schema"] == "deqrmt/1" and d["command"] == "compare"
    assert d["activations"] == ["relu", "tanh"] and d["refused"] == []
    relu, tanh = d["results"]
    assert relu["activation"] == "relu" and tanh["activation"] == "tanh"
    a1 = Fraction(relu["alpha_1"])
    assert abs(a1 - Fraction(4, 19)) <= Fraction(1, 2 * 10**20)  # 20 digits of 4/19
    assert relu["certified"] is True and "alpha_1" in relu["balls"]


def test_a_refused_activation_is_a_note_not_the_end(capsys: pytest.CaptureFixture[str]) -> None:
    """φ = 3x at σ_a² = 1/5: τ² = (9/5)τ² + 4/5 has no root: ContractionError for that column."""
    assert main(["compare", "relu", "3*x", "--dps", "12"]) == 0
    out = capsys.readouterr().out
    assert "refused" in out and "note: 3*x refused: ContractionError" in out
    d = _json(capsys, ["compare", "relu", "3*x", "--dps", "12"])
    assert [r["activation"] for r in d["results"]] == ["relu"]
    assert d["refused"][0]["activation"] == "3*x" and d["refused"][0]["error"] == "ContractionError"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["compare", *[f"leaky_relu(0.{i})" for i in range(1, 10)]], "at most 8"),
        (["compare", "tanh", "tanh"], "given twice"),
        (["compare", "tanh", "relu", "--sigma-a2", "0.1:0.3:3"], "--plot-range"),
        (["compare", "tahn", "relu"], "UnknownActivation"),
        (["compare", "3*x"], "ContractionError"),  # every activation refused: its error
        (["compare", "relu", "--plot", "p", "--plot-range", "0.1:0.5:41"], "at most 40"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    argv: list[str],
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)  # a relative --plot DIR would land here; none may be made
    assert main(argv) == 2
    assert list(tmp_path.iterdir()) == []
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("deqrmt: error: ") and message in captured.err


def test_missing_matplotlib_is_refused_before_any_work(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
    assert main(["compare", "relu", "tanh", "--plot", str(tmp_path / "p")]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "MissingExtra" in captured.err and "pip install" in captured.err
    assert not (tmp_path / "p").exists()


@pytest.mark.skipif(not HAS_MPL, reason="needs matplotlib (the validate extra)")
def test_plot_is_written_and_not_clobbered(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = tmp_path / "plots"
    argv = ["compare", "relu", "tanh", "--dps", "12", "--plot", str(target)]
    assert main([*argv, "--plot-range", "0.1,0.3"]) == 0
    png = target / "compare.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    capsys.readouterr()
    before = png.read_bytes()
    assert main([*argv, "--plot-range", "0.1,0.4"]) == 2  # exists: refused before any work
    captured = capsys.readouterr()
    assert captured.out == "" and "FileError" in captured.err and "--force" in captured.err
    assert png.read_bytes() == before
    assert main([*argv, "--plot-range", "0.1,0.4", "--force"]) == 0

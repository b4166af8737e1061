"""`deqrmt bias` (issue 13) through a small argparse harness around the command module.

The harness builds a parser, adds the subcommand with ``register`` and calls ``run``, as
``deqrmt.cli`` does; once the command is registered there, the last test also runs it through
``deqrmt.cli.main``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
from pathlib import Path

import pytest
import sympy as sp

from deqrmt._errors import DeqrmtError, FileError, InvalidArgument, ParseError
from deqrmt.cli import bias

HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_MPL = importlib.util.find_spec("matplotlib") is not None


def _run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="deqrmt")
    sub = parser.add_subparsers(dest="command", required=True)
    bias.register(sub)
    args = parser.parse_args(argv)
    return bias.run(args)


#: the envelope every `deqrmt … --json` shares (docs/json.md); the rest is the issue's keys
ENVELOPE = {"schema", "command", "version", "inputs", "floats"}


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict[str, object]:
    assert _run([*argv, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["command"] == "bias"
    return {k: v for k, v in doc.items() if k not in ENVELOPE}


def test_json_keys_and_sympifiable_values(capsys: pytest.CaptureFixture[str]) -> None:
    out = _json(capsys, ["bias", "1/(1-w)", "--params", "w", "--init", "0.5"])
    assert set(out) == {"beta", "h", "conserved", "q", "convex_domain"}
    b = sp.Symbol(str(out["beta"]))
    assert out["conserved"] is None
    assert sp.simplify(sp.sympify(out["h"]) - b**4) == 0
    assert sp.simplify(sp.sympify(out["q"]) - (1 / (6 * b**2) + b / 24)) == 0
    assert sp.sympify(out["convex_domain"]) == sp.Interval.open(0, sp.oo)


def test_json_two_parameters_has_the_conserved_symbol(capsys: pytest.CaptureFixture[str]) -> None:
    out = _json(capsys, ["bias", "u/(1-w)", "--params", "u,w"])
    u, w, c = sp.symbols("u w c")
    b = sp.Symbol(str(out["beta"]))
    assert sp.simplify(sp.sympify(out["conserved"]) - (u**2 + (w - 1) ** 2)) == 0
    assert sp.simplify(sp.sympify(out["h"]) - (1 + b**2) ** 2 / c) == 0
    assert c in sp.sympify(out["q"]).free_symbols
    assert sp.sympify(out["convex_domain"]) == sp.S.Reals


def test_text_and_latex(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(["bias", "u**2-v**2"]) == 0
    text = capsys.readouterr().out
    assert "h(β)" in text and "u*v" in text and "asinh" in text
    assert _run(["bias", "u**2-v**2", "--latex"]) == 0
    tex = capsys.readouterr().out
    assert tex.startswith("\\begin{align*}") and "\\operatorname{asinh}" in tex


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["bias", "u**2-v**2", "--params", "u"], InvalidArgument),
        (["bias", "1/(1-w)", "--init", "abc"], InvalidArgument),
        (["bias", "1/(1-w)", "--params", ","], InvalidArgument),
        (["bias", "__import__('os').system('true')"], ParseError),
        (["bias", "1/(1-w)", "--check", "--steps", "-1"], InvalidArgument),
        (["bias", "1/(1-w)", "--check", "--n", "50", "--d", "40"], InvalidArgument),
    ],
)
def test_bad_input_raises_the_named_error(argv: list[str], error: type[DeqrmtError]) -> None:
    with pytest.raises(error):
        _run(argv)


@pytest.mark.skipif(not (HAS_TORCH and HAS_MPL), reason="needs the validate extra")
def test_plot_is_written_and_not_clobbered(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "plots"
    assert _run(["bias", "1/(1-w)", "--plot", str(target)]) == 0
    png = target / "q.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(FileError):
        _run(["bias", "1/(1-w)", "--plot", str(target)])
    assert _run(["bias", "1/(1-w)", "--plot", str(target), "--force"]) == 0


@pytest.mark.skipif(not (HAS_TORCH and HAS_MPL), reason="needs the validate extra")
def test_check_json_and_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    small = ["--check", "--d", "12", "--n", "4", "--seed", "0", "--device", "cpu"]
    out = _json(capsys, ["bias", "1/(1-w)", *small])
    assert set(out) == {"beta", "h", "conserved", "q", "convex_domain", "gd_gap", "l2_gap"}
    assert float(out["gd_gap"]) < 1e-4 < 1e-1 < float(out["l2_gap"])  # type: ignore[arg-type]
    # a check that cannot pass exits 1 (and says why)
    code = _run(["bias", "1/(1-w)", *small, "--steps", "0.006", "--tolerance", "1e-9"])
    assert code == 1
    assert "FAIL" in capsys.readouterr().out
    plot = ["--steps", "0.006", "--tolerance", "0.01", "--plot", str(tmp_path)]
    assert _run(["bias", "1/(1-w)", *small, *plot]) == 0
    assert (tmp_path / "path.png").exists() and (tmp_path / "q.png").exists()


def test_registered_in_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    import deqrmt.cli as cli

    if "bias" not in getattr(cli, "COMMANDS", ()):
        pytest.skip("`bias` is not registered in deqrmt.cli.COMMANDS yet")
    assert cli.main(["bias", "1/(1-w)", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["h"] == "β**4" and doc["inputs"]["expression"] == "1/(1-w)"
    assert cli.main(["bias", "u**2-v**2", "--params", "u"]) == 2

"""``deqrmt validate``: options, JSON shape, plots, exit codes, import hygiene (issue 4)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

pytest.importorskip("torch")

from deqrmt.cli import validate as _cli  # noqa: E402

SMALL = ["relu", "--n", "64,128", "--m", "128", "--draws", "2", "--device", "cpu"]


def _parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    _cli.configure_parser(p)
    return p.parse_args(argv)


def test_defaults_follow_the_slides() -> None:
    a = _parse(["tanh"])
    assert a.ns == (256, 512, 1024) and a.m == 2048 and a.draws == 4
    assert a.sigma_a2 == "0.2" and a.sigma_b2 is None and a.ratio == 0.8
    assert a.device == "auto" and a.dtype == "float64" and a.seed == 0 and a.preset == "paper"
    assert not a.json and a.plot is None and not a.no_mc


def test_json_output_and_plots(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    rc = _cli.run(_parse([*SMALL, "--json", "--plot", str(tmp_path)]))
    out = json.loads(capsys.readouterr().out)
    assert set(out) >= {"inputs", "device", "runs", "slope"}
    assert out["device"] == "cpu" and out["inputs"]["activation"] == "relu"
    assert [r["n"] for r in out["runs"]] == [64, 128] and [r["p"] for r in out["runs"]] == [51, 102]
    for r in out["runs"]:
        assert r["m"] == 128 and r["seconds"] > 0
        for k in ("ck", "ntk"):
            assert set(r[k]) == {"exact_vs_equiv", "mc_vs_exact", "mc_vs_equiv"}
            assert all(0 < v < 1 for v in r[k].values())
    assert set(out["slope"]) == {"ck", "ntk"} and out["slope"]["ck"] < 0
    assert rc == (0 if out["passed"] else 1)
    pngs = sorted(p.name for p in tmp_path.iterdir())
    assert pngs == ["errors.png", "spectrum_n128.png"]
    for name in pngs:
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_text_output_without_monte_carlo(capsys: pytest.CaptureFixture[str]) -> None:
    rc = _cli.run(_parse([*SMALL, "--no-mc"]))
    text = capsys.readouterr().out
    assert "log–log slope" in text and ("PASSED" in text or "REJECTED" in text)
    assert rc in (0, 1)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["relu", "--n", "4"], "--n"),
        (["relu", "--sigma-a2", "x"], "--sigma-a2"),
        (["relu", "--m", "0"], "--m"),
        (["relu", "--device", "cuda"], "cuda"),
        (["not_an_activation(", "--no-mc", "--n", "64"], ""),
    ],
)
def test_bad_input_is_one_line_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import torch

    from deqrmt.cli import main

    if "cuda" in argv and torch.cuda.is_available():
        pytest.skip("a GPU is present")
    assert main(["validate", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "error:" in err[0] and message in err[0], err
    assert "internal error" not in err[0]


def test_cli_modules_do_not_import_torch() -> None:
    code = (
        "import sys, deqrmt.cli.validate, deqrmt.symbolic, deqrmt.numeric, deqrmt.cli; "
        "deqrmt.cli.build_parser(); "
        "sys.exit(1 if 'torch' in sys.modules else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


@pytest.mark.parametrize("missing", ["torch", "tqdm", "matplotlib"])
@pytest.mark.parametrize(
    "argv",
    [
        ["validate", "tanh", "--n", "64"],
        ["experiment", "--dataset", "gmm"],
        ["enn-check", "--enn", "DESIGN"],
    ],
)
def test_missing_extra_is_one_line_exit_2(missing: str, argv: list[str], tmp_path) -> None:  # type: ignore[no-untyped-def]
    # issue 10, point 1: `deqrmt validate tanh` on the base install died with an unexpected
    # ModuleNotFoundError for tqdm.  sys.modules[name] = None makes the import fail as if absent.
    design = tmp_path / "design.json"
    inputs = {"deq": "tanh", "kernel": "ck", "sigma_a2": "1/5", "sigma_b2": "4/5"}
    design.write_text(json.dumps({"setting": inputs, "solutions": [{"params": [{}]}]}))
    argv = [str(design) if a == "DESIGN" else a for a in argv]
    code = (
        f"import sys; sys.modules[{missing!r}] = None; from deqrmt.cli import main; "
        "sys.exit(main(sys.argv[1:]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    assert lines[0].startswith("deqrmt: error: MissingExtra: ")
    assert "needs the validate extra: pip install 'deqrmt[validate]'" in lines[0]
    assert f"missing: {missing}" in lines[0]


def test_preset_names_match() -> None:
    from deqrmt.validate._sweep import PRESETS

    assert set(_cli.PRESET_NAMES) == set(PRESETS)


def test_public_names_resolve() -> None:
    import deqrmt.validate as v

    for name in v.__all__:
        assert getattr(v, name) is not None, name
    assert set(v.__all__) <= set(dir(v))
    with pytest.raises(AttributeError):
        v.no_such_name  # noqa: B018

"""``deqrmt spectrum`` (issue 22): JSON schema, exit codes, --plot, mixture files as untrusted input."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from deqrmt._json import SCHEMA, float_copy
from deqrmt.cli import main

LAW_KEYS = {"density", "support", "atoms", "spikes", "alignments", "equivalent"}


def _run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_prediction_json_follows_the_convention(capsys) -> None:
    code, out, _ = _run(["spectrum", "tanh", "--data", "gmm", "--n", "200", "--json"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert doc["schema"] == SCHEMA and doc["command"] == "spectrum"
    assert doc["inputs"]["n"] == 200 and doc["inputs"]["sigma_a2"] == "0.2"
    result = {
        k: v
        for k, v in doc.items()
        if k not in ("schema", "command", "version", "inputs", "floats")
    }
    assert doc["floats"] == float_copy(result)
    assert doc["data"] == {
        "kind": "gmm", "preset": "paper", "n": 200, "p": 160, "counts": [100, 100],
        "tau0": doc["data"]["tau0"],
    }  # fmt: skip
    for kind in ("ck", "ntk"):
        law = doc[kind]
        assert set(law) == LAW_KEYS
        x, y = np.array(law["density"]["x"]), np.array(law["density"]["y"])
        assert x.shape == y.shape and (y >= 0).all() and np.all(np.diff(x) >= 0)
        ((a, b),) = law["support"]
        assert a == pytest.approx(x.min()) and b == pytest.approx(x.max())
        assert law["atoms"][0]["mass"] == pytest.approx(0.2)  # p = 0.8 n
        assert len(law["spikes"]) == 2 and all(s > b for s in law["spikes"])
        for al in law["alignments"]:
            assert al["multiplicity"] == 1 and len(al["classes"]) == 2
            assert 0.9 < max(al["classes"]) <= 1  # each mean spike sees its own class
    assert doc["passed"] is None and "mc" not in doc["ck"]


def test_mc_json_and_exit_codes(capsys) -> None:
    pytest.importorskip("torch")
    argv = ["spectrum", "sqrt(2)*relu", "--n", "200", "--d", "240", "--mc", "--json"]
    code, out, _ = _run(argv, capsys)
    assert code == 0
    doc = json.loads(out)
    for kind in ("ck", "ntk"):
        mc = doc[kind]["mc"]
        assert mc["label"] == "exact" and len(mc["eigenvalues"]) == 200
        assert mc["kolmogorov"] < 0.05 and mc["spike_errors"][0] < 0.05
        assert mc["bulk_count"] == 199
        assert mc["explicit"]["kolmogorov"] < 0.05  # Corollary 1's quadratic network
    assert doc["passed"] is True
    # the same run with an impossible tolerance is a failed check: exit 1, reasons given
    code, out, _ = _run([*argv, "--max-ks", "0.0001"], capsys)
    assert code == 1
    assert json.loads(out)["passed"] is False
    assert "Kolmogorov" in json.loads(out)["reasons"][0]


def test_table_output(capsys) -> None:
    code, out, _ = _run(["spectrum", "sqrt(2)*relu", "--n", "300", "--d", "360"], capsys)
    assert code == 0
    assert "CK" in out and "NTK" in out and "support" in out and "spike" in out


def test_width_needs_mc(capsys) -> None:
    code, _, err = _run(["spectrum", "tanh", "--width", "64"], capsys)
    assert code == 2 and "InvalidArgument" in err and "--mc" in err


def test_plot_is_written_atomically_and_never_clobbers(tmp_path: Path, capsys) -> None:
    pytest.importorskip("matplotlib")
    argv = ["spectrum", "sqrt(2)*relu", "--n", "200", "--d", "240", "--plot", str(tmp_path)]
    code, _, err = _run(argv, capsys)
    png = tmp_path / "spectrum.png"
    assert code == 0 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "wrote" in err
    before = png.stat().st_mtime_ns
    code, out, err = _run(argv, capsys)
    assert code == 2 and "FileError" in err and "--force" in err and out == ""
    assert png.stat().st_mtime_ns == before
    code, _, _ = _run([*argv, "--force"], capsys)
    assert code == 0
    assert sorted(os.listdir(tmp_path)) == ["spectrum.png"]  # no temporary left behind


def test_missing_matplotlib_is_refused_before_any_work(monkeypatch, tmp_path, capsys) -> None:
    import importlib.util

    import deqrmt.cli.spectrum as cmd
    import deqrmt.validate._spectrum as sp

    real = importlib.util.find_spec
    monkeypatch.setattr(
        cmd.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "matplotlib" else real(name, *a),
    )

    def no_work(*_a, **_k):
        raise AssertionError("the spectrum was computed before the extra was checked")

    monkeypatch.setattr(sp, "spectrum", no_work)
    code, _, err = _run(["spectrum", "tanh", "--plot", str(tmp_path / "p")], capsys)
    assert code == 2 and "MissingExtra" in err and "deqrmt[validate]" in err


PRESET_TOML = """
p = 160
[[class]]
weight = 0.5
mean = [8.0]
variance = 1.0
[[class]]
weight = 0.5
mean = [8.0]
mean_offset = 8
variance = {v2}
"""


def test_mixture_file_reproduces_the_preset(tmp_path: Path, capsys) -> None:
    # The paper's preset at p = 160 (C_2 = (1 + 8/√p) I) written as a file: the same law.
    f = tmp_path / "mix.toml"
    f.write_text(PRESET_TOML.format(v2=repr(1 + 8 / float(np.sqrt(160)))))
    code, out, _ = _run(["spectrum", "tanh", "--mixture", str(f), "--n", "200", "--json"], capsys)
    assert code == 0
    mine = json.loads(out)
    code, out, _ = _run(["spectrum", "tanh", "--data", "gmm", "--n", "200", "--json"], capsys)
    preset = json.loads(out)
    assert mine["data"]["preset"] == "file" and mine["data"]["p"] == 160
    for kind in ("ck", "ntk"):
        np.testing.assert_allclose(mine[kind]["spikes"], preset[kind]["spikes"], rtol=1e-12)
        np.testing.assert_allclose(mine[kind]["support"], preset[kind]["support"], rtol=1e-12)


@pytest.mark.parametrize(
    ("text", "error", "fragment"),
    [
        ("p = 10\n[[class]]\nweight = 1.0\nvariance = 1.0\ncolour = 3\n", "SpecError", "`colour`"),
        ("p = 10\n[[class]]\nweight = 0.4\nvariance = 1.0\n", "SpecError", "sum to"),
        ("p = 10\n[[class]]\nweight = 1.0\nvariance = [1.0, 2.0]\n", "SpecError", "p = 10"),
        ("p = 10\n[[class]]\nweight = 1.0\nvariance = nan\n", "SpecError", "finite"),
        ("p = 10\n[[class]]\nweight = 1.0\nvariance = 0.0\n", "SpecError", "no noise"),
        ("p = 10\n[[class]]\nweight = 1.0\nvariance = 1.0\nmean = 'x'\n", "SpecError", "list"),
        (
            "p = 10\n[[class]]\nweight = 1.0\nvariance = 1.0\nmean_offset = 10\n",
            "SpecError",
            "mean_offset",
        ),
        ("p = 100000000\n[[class]]\nweight = 1.0\nvariance = 1.0\n", "SpecError", "20000"),
        ("p = 10\n", "SpecError", "[[class]]"),
        (
            'p = 10\n[[class]]\nweight = 1.0\nvariance = 1.0\n"bad\\u001b[2J" = 1\n',
            "SpecError",
            "\\x1b",
        ),
        ("p = [\n", "SpecError", "not valid TOML"),
    ],
)
def test_bad_mixture_files_are_refused(tmp_path: Path, capsys, text, error, fragment) -> None:
    f = tmp_path / "m.toml"
    f.write_text(text)
    code, out, err = _run(["spectrum", "tanh", "--mixture", str(f)], capsys)
    assert code == 2 and out == ""
    assert f"deqrmt: error: {error}:" in err and fragment in err
    assert "\x1b" not in err


def test_mixture_file_that_is_not_a_file(tmp_path: Path, capsys) -> None:
    code, _, err = _run(["spectrum", "tanh", "--mixture", str(tmp_path)], capsys)
    assert code == 2 and "FileError" in err and "regular file" in err
    big = tmp_path / "big.toml"
    with open(big, "wb") as fh:
        fh.write(b"#" * (5 << 20))
    code, _, err = _run(["spectrum", "tanh", "--mixture", str(big)], capsys)
    assert code == 2 and "SpecError" in err and "larger than" in err


def test_enn_design_file(tmp_path: Path, capsys) -> None:
    # (the designed ENN's sampled spectrum is checked in test_spectrum_mc.py)
    pytest.importorskip("torch")
    from test_spectrum_mc import DESIGN

    f = tmp_path / "d.json"
    f.write_text(json.dumps(DESIGN))
    argv = ["spectrum", "tanh", "--data", "gmm", "--n", "128", "--enn", str(f), "--json"]
    code, out, _ = _run(argv, capsys)
    doc = json.loads(out)
    assert code == 0 and set(doc["ck"]["enn"]) == LAW_KEYS and "enn" not in doc["ntk"]
    np.testing.assert_allclose(doc["ck"]["enn"]["spikes"], doc["ck"]["spikes"], rtol=0.02)
    code, _, err = _run(["spectrum", "relu", "--data", "gmm", "--enn", str(f)], capsys)
    assert code == 2 and "not the DEQ the design" in err
    code, _, err = _run(["spectrum", "tanh", "--enn", str(f)], capsys)
    assert code == 2 and "InvalidArgument" in err and "data='gmm'" in err

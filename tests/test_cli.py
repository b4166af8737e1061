"""The `deqrmt` command line: the stable JSON contract and one-line errors with exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys
from decimal import Decimal

import mpmath
import pytest

from deqrmt.cli import main
from deqrmt.numeric import DEQ_KEYS, LAYER_KEYS, MOMENT_KEYS
from helpers import CATALOGUE, assert_close, deq_reference

CONTRACT_KEYS = [
    "tau_star", "gamma_star", "alpha_1", "alpha_2", "alpha_3", "alpha_4",
    "beta_1", "beta_2", "beta_3", "kappa_star", "center",
]  # fmt: skip


def _run(prefix, *args):
    return subprocess.run([*prefix, *args], capture_output=True, text=True, timeout=120)


def _one_line_error(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert lines[0].startswith("deqrmt: error: "), lines[0]
    return lines[0]


# --- the installed console script ---------------------------------------------------------------


def test_console_script_json(cli_prefix):
    out = _run(
        cli_prefix,
        "coefficients",
        "relu",
        "--sigma-a2",
        "0.25",
        "--tau0",
        "1.5",
        "--dps",
        "25",
        "--json",
    )
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    d = json.loads(out.stdout)
    assert list(CONTRACT_KEYS) == list(DEQ_KEYS)
    for key in CONTRACT_KEYS:
        assert isinstance(d[key], str)
        Decimal(d[key])
    assert set(d["moments"]) == {"E_phi_prime", "E_phi_second", "E_phi_prime_sq", "E_phi_sq_second"}
    assert (d["sigma_a2"], d["sigma_b2"], d["tau0"], d["dps"]) == ("1/4", "3/4", "3/2", 25)
    ref = deq_reference(CATALOGUE["relu"], "0.25", None, "1.5", dps=35)
    with mpmath.workdps(40):
        for key in CONTRACT_KEYS:
            assert_close(mpmath.mpf(d[key]), ref[key], 24, what=key)
        for key in MOMENT_KEYS:
            assert_close(mpmath.mpf(d["moments"][key]), ref[key], 24, what=key)


def test_console_script_error_is_one_line(cli_prefix):
    out = _run(cli_prefix, "coefficients", "x.__class__")
    assert out.returncode == 2
    assert out.stdout == ""
    _one_line_error(out.stderr)


def test_console_script_never_shows_a_traceback(cli_prefix):
    # log(x) is complex for x < 0: the user must get a one-line error, not a TypeError.
    out = _run(cli_prefix, "coefficients", "log(x)", "--dps", "15")
    assert "Traceback" not in out.stderr, out.stderr[-400:]
    assert out.returncode == 2


def test_coefficients_does_not_import_torch():
    code = (
        "import sys; from deqrmt.cli import main; rc = main(['coefficients', 'tanh', '--dps', '15']); "
        "assert 'torch' not in sys.modules, 'torch imported'; sys.exit(rc)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr


# --- in-process ----------------------------------------------------------------------------------


def test_table_output(capsys):
    assert main(["coefficients", "tanh", "--dps", "15"]) == 0
    out = capsys.readouterr().out
    for key in CONTRACT_KEYS + list(MOMENT_KEYS):
        assert key in out
    assert "σ_a² = 1/5" in out


def test_table_prints_the_multiple_root_note(capsys):
    assert main(["coefficients", "x + 0.25*x**2", "--dps", "15"]) == 0
    out = capsys.readouterr().out
    assert "note: another fixed point" in out


def test_json_digits_follow_dps(capsys):
    assert main(["coefficients", "sin", "--dps", "12", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    for key in CONTRACT_KEYS:
        digits = d[key].lstrip("-").replace(".", "").lstrip("0")
        assert len(digits) <= 12, (key, d[key])
    assert d["center"] == "0"


def test_no_center_flag(capsys):
    assert main(["coefficients", "tanh", "--no-center", "--dps", "15", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["centered"] is False and d["center"] == "0"
    assert main(["coefficients", "relu", "--no-center"]) == 2
    assert "--no-center" in _one_line_error(capsys.readouterr().err)


def test_explicit_json(capsys):
    assert main(["explicit", "relu", "tanh", "--tau0", "0.5", "--dps", "20", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert len(d["layers"]) == 2
    for layer in d["layers"]:
        assert list(layer) == list(LAYER_KEYS)
    assert d["tau0"] == "1/2"


def test_explicit_table(capsys):
    assert main(["explicit", "relu", "relu", "--dps", "15"]) == 0
    out = capsys.readouterr().out
    assert "layer 1" in out and "layer 2" in out and "kappa" in out


def test_activations_listing(capsys):
    assert main(["activations", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert {"relu", "tanh", "gelu", "leaky_relu", "polynomial"} <= set(d)
    assert main(["activations"]) == 0
    assert "relu" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [
        ["coefficients", "x.__class__"],
        ["coefficients", "nope"],
        ["coefficients", "__import__('os').system('x')"],
        ["coefficients", "9**9**9"],
        ["coefficients", "x" * 401],
        ["coefficients", "relu", "--sigma-a2", "abc"],
        ["coefficients", "relu", "--sigma-a2", "1"],
        ["coefficients", "relu", "--sigma-a2", "2.5", "--sigma-b2", "0.5"],
        ["coefficients", "x + x**2", "--sigma-a2", "0.5", "--sigma-b2", "0.5"],
        ["coefficients", "relu", "--tau0", "-1"],
        ["coefficients", "relu", "--dps", "3"],
        ["coefficients", "sign"],
        ["coefficients", "tanh(1000*x)", "--dps", "15"],
        ["explicit", "relu", "nope"],
        ["explicit", "relu", "--no-center"],
        ["explicit", "relu", "--tau0", "0"],
    ],
)
def test_bad_input_gives_one_line_and_exit_2(argv, capsys):
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    _one_line_error(captured.err)


@pytest.mark.parametrize(
    "act",
    ["log(x)", "sqrt(x)", "x**(2/3)", "log(0)*x", "exp(exp(x))", "(1e100)**64*x", "max(x, log(0))"],
)
def test_hostile_activations_give_one_line_and_exit_2(act, capsys):
    # Each of these escaped as a non-deqrmt exception (TypeError, KeyError, OverflowError,
    # ValueError), i.e. a traceback from the console script.
    assert main(["coefficients", act, "--dps", "15"]) == 2
    _one_line_error(capsys.readouterr().err)


@pytest.mark.parametrize(
    "argv",
    [
        ["coefficients"],
        ["coefficients", "relu", "--dps", "abc"],
        ["coefficients", "relu", "--bogus"],
        ["explicit"],
        [],
    ],
)
def test_usage_errors_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "error:" in err

"""The `deqrmt` command line: the JSON contract, one-line errors, exit codes, the package layout.

Hostile input (injection strings, control bytes, files, signals, locales) is in test_hostile.py.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from decimal import Decimal

import mpmath
import pytest

import deqrmt
import deqrmt._errors as deqrmt_errors
from deqrmt.cli import COMMANDS, DEPRECATED, build_parser, main
from deqrmt.numeric import DEQ_KEYS, LAYER_KEYS, MOMENT_KEYS
from helpers import CATALOGUE, assert_close, deq_reference

CONTRACT_KEYS = [
    "tau_star", "gamma_star", "alpha_1", "alpha_2", "alpha_3", "alpha_4",
    "beta_1", "beta_2", "beta_3", "kappa_star", "center",
]  # fmt: skip


def _run(prefix, *args):
    return subprocess.run([*prefix, *args], capture_output=True, text=True, timeout=120)


def _one_line_error(err: str, error: str | None = None) -> str:
    """The one stderr line of a refused input; it names a deqrmt error class (``error``: which).

    A catch-all that printed any exception in one line would not pass: the class must be one
    of deqrmt's own, so a bug (TypeError, OverflowError, …) fails the test.
    """
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    m = re.match(r"deqrmt: error: ([A-Za-z]+): ", lines[0])
    assert m, lines[0]
    cls = getattr(deqrmt_errors, m.group(1), None)
    assert isinstance(cls, type) and issubclass(cls, deqrmt.DeqrmtError), lines[0]
    if error is not None:
        assert issubclass(cls, getattr(deqrmt_errors, error)), (error, lines[0])
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
    _one_line_error(out.stderr, "ParseError")


def test_console_script_never_shows_a_traceback(cli_prefix):
    # log(x) is complex for x < 0: the user must get a one-line error, not a TypeError.
    out = _run(cli_prefix, "coefficients", "log(x)", "--dps", "15")
    assert "Traceback" not in out.stderr, out.stderr[-400:]
    assert out.returncode == 2
    _one_line_error(out.stderr)


def test_python_dash_m_and_version():
    out = subprocess.run(
        [sys.executable, "-m", "deqrmt", "--version"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"deqrmt {deqrmt.__version__}"


@pytest.mark.parametrize("argv", [["--help"], ["coefficients", "--help"], ["validate", "--help"]])
def test_help_imports_no_torch_sympy_or_mpmath(argv):
    code = (
        "import sys; from deqrmt.cli import main; rc = main(sys.argv[1:]); "
        "heavy = sorted({'torch', 'sympy', 'mpmath'} & set(sys.modules)); "
        "assert not heavy, heavy; sys.exit(rc)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert "usage: deqrmt" in out.stdout


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
    assert "--no-center" in _one_line_error(capsys.readouterr().err, "CenteringError")


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
    assert {"relu", "tanh", "gelu", "leaky_relu", "polynomial"} <= set(d["activations"])
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
        ["coefficients", "x + x**2", "--sigma-a2", "0.5", "--sigma-b2", "0.5"],
        ["coefficients", "relu", "--tau0", "-1"],
        ["coefficients", "relu", "--dps", "3"],
        ["coefficients", "sign"],
        ["coefficients", "tanh(1000*x)", "--dps", "15", "--no-certify"],
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
    ("argv", "says"),
    [
        (["coefficients"], "the following arguments are required: ACT"),
        (["coefficients", "relu", "--dps", "abc"], "argument --dps: invalid integer value"),
        (["coefficients", "relu", "--bogus"], "unrecognized arguments: --bogus"),
        (["explicit"], "the following arguments are required: ACT"),
        (["coefficient", "relu"], "did you mean 'coefficients'?"),
        (["frobnicate"], "unknown command 'frobnicate'"),
        (["enn-check"], "--enn"),
    ],
)
def test_usage_errors_exit_2(argv, says, capsys):
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
    assert lines[0].startswith("deqrmt") and "error:" in lines[0] and says in lines[0], lines[0]


def test_help_and_version_exit_0(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"deqrmt {deqrmt.__version__}"
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in COMMANDS:
        assert name in out, name
    assert "exit codes" in out and "70" in out and "130" in out


# --- the package: one module per command, every option explained (issue 10, points 5, 7) -------


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def test_every_command_module_is_registered_and_visible():
    import importlib

    parser = build_parser()
    subs = _subparsers(parser)
    assert [name for name in subs if name not in DEPRECATED] == list(COMMANDS)
    help_text = parser.format_help()
    for name in COMMANDS:
        module = importlib.import_module(f"deqrmt.cli.{name.replace('-', '_')}")
        assert name == module.NAME and callable(module.register) and callable(module.run)
        assert f"    {name}" in help_text, name  # listed, with its one-line help


def test_every_command_has_a_description_and_every_option_help():
    for name, sub in _subparsers(build_parser()).items():
        assert sub.description and len(sub.description) > 30, name
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
                continue
            assert action.help and len(action.help) > 8, (name, action.dest)
            shown = sub._get_formatter()._format_action(action).lower()
            # the default is shown, by the formatter or in the help text itself
            if action.option_strings and not action.required:
                assert "default" in shown, (name, action.dest, shown)


def test_validate_enn_is_the_certify_command(tmp_path, capsys):
    # `deqrmt validate --deq ACT --enn FILE`, the older spelling, runs `enn-check`.
    missing = str(tmp_path / "design.json")
    for argv in (["validate", "--deq", "relu", "--enn", missing], ["enn-check", "--enn", missing]):
        assert main(argv) == 2
        line = _one_line_error(capsys.readouterr().err, "FileError")
        assert "cannot read the design" in line


def test_certify_is_the_deprecated_name_of_enn_check(tmp_path, capsys):
    """`deqrmt certify` (the name until 0.1) runs `enn-check` after one note on stderr."""
    missing = str(tmp_path / "design.json")
    assert main(["certify", "--enn", missing]) == 2
    old = capsys.readouterr()
    assert main(["enn-check", "--enn", missing]) == 2
    new = capsys.readouterr()
    note, *rest = old.err.splitlines()
    assert note == (
        "deqrmt: note: `deqrmt certify` is deprecated and will be removed in 0.2; "
        "use `deqrmt enn-check`"
    )
    assert rest == new.err.splitlines() and old.out == new.out == ""
    assert "note:" not in new.err
    _one_line_error(new.err, "FileError")
    # the old name is left out of --help (it has no docs page), with the same options as the
    # new one, which is listed
    help_lines = build_parser().format_help().splitlines()
    assert not any("certify" in line.split()[:1] for line in help_lines)
    assert any(line.split()[:1] == ["enn-check"] for line in help_lines)
    assert main(["certify", "--help"]) == 0
    out, err = capsys.readouterr()
    assert main(["enn-check", "--help"]) == 0
    new_help = capsys.readouterr().out
    # the same options and text below the usage lines (whose indent follows the name's length)
    assert out.partition("\n\n")[2] == new_help.partition("\n\n")[2] != ""
    assert out.startswith("usage: deqrmt certify") and "deprecated" in err
    assert DEPRECATED == {"certify": "enn-check"}


def test_validate_help_mentions_enn_check(capsys):
    assert main(["validate", "--help"]) == 0
    out = capsys.readouterr().out
    assert "deqrmt enn-check --enn" in out and "--deq ACT --enn" in out


# --- exit codes: a bug is 70 and names itself; a refused input is 2 and names its class ---------


def test_internal_error_is_exit_70_and_logged(monkeypatch, tmp_path, capsys):
    import deqrmt.numeric as numeric

    def broken(*args, **kwargs):
        raise TypeError("cannot create mpf from mpc")

    log = tmp_path / "bugs.txt"
    monkeypatch.setenv("DEQRMT_BUG_LOG", str(log))
    monkeypatch.setattr(numeric, "deq_coefficients", broken)
    assert main(["coefficients", "relu"]) == 70
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("deqrmt: internal error: TypeError: cannot create mpf from mpc")
    assert "this is a bug" in err[0] and "DEQRMT_DEBUG=1" in err[0]
    assert "TypeError" in log.read_text()


@pytest.mark.parametrize(
    "exc", [OverflowError("x"), ArithmeticError("x"), RecursionError("x"), MemoryError()]
)
def test_arithmetic_errors_are_bugs_not_bad_input(exc, monkeypatch, tmp_path, capsys):
    # The old CLI turned these into exit 2 ("out of the supported range"), hiding bugs.
    import deqrmt.numeric as numeric

    def broken(*args, **kwargs):
        raise exc

    monkeypatch.setenv("DEQRMT_BUG_LOG", str(tmp_path / "bugs.txt"))
    monkeypatch.setattr(numeric, "deq_coefficients", broken)
    assert main(["coefficients", "relu"]) == 70
    assert f"internal error: {type(exc).__name__}" in capsys.readouterr().err


def test_debug_shows_the_traceback(monkeypatch, tmp_path):
    import deqrmt.numeric as numeric

    def broken(*args, **kwargs):
        raise TypeError("boom")

    monkeypatch.setenv("DEQRMT_BUG_LOG", str(tmp_path / "bugs.txt"))
    monkeypatch.setenv("DEQRMT_DEBUG", "1")
    monkeypatch.setattr(numeric, "deq_coefficients", broken)
    with pytest.raises(TypeError, match="boom"):
        main(["coefficients", "relu"])


def test_interrupt_is_exit_130(monkeypatch, capsys):
    import deqrmt.numeric as numeric

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(numeric, "deq_coefficients", interrupted)
    assert main(["coefficients", "relu"]) == 130
    assert capsys.readouterr().err == "deqrmt: interrupted\n"


def test_interrupt_inside_a_c_extension_is_exit_130(monkeypatch, capsys):
    # python-flint's acb.integral turns a KeyboardInterrupt raised in its Python callback into
    # "SystemError: ... returned a result with an exception set", chained to the interrupt.
    import deqrmt.numeric as numeric

    def interrupted(*args, **kwargs):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as e:
            raise SystemError(
                "<cyfunction acb.integral> returned a result with an exception set"
            ) from e

    monkeypatch.setattr(numeric, "deq_coefficients", interrupted)
    assert main(["coefficients", "relu"]) == 130
    assert capsys.readouterr().err == "deqrmt: interrupted\n"


def test_library_argument_names_become_flags():
    from deqrmt.cli._common import flag_names

    assert flag_names("sigma_a2=2 is out of range [0, 1]") == "--sigma-a2 2 is out of range [0, 1]"
    assert flag_names("got layers=1000; starts=9") == "got --layers 1000; --starts 9"
    assert flag_names("center=False: E[φ] ≠ 0") == "--no-center: E[φ] ≠ 0"
    assert flag_names("use `tau0` > 0") == "use `--tau0` > 0"
    assert flag_names("my_sigma_a2=1 and xdps=3") == "my_sigma_a2=1 and xdps=3"  # words only


def test_error_line_names_flags_not_arguments(capsys):
    from deqrmt import InvalidArgument
    from deqrmt.cli import _error_line

    line = _error_line(InvalidArgument("sigma_b2=-1: expected sigma_b2 > 0"))
    assert line == "deqrmt: error: InvalidArgument: --sigma-b2 -1: expected sigma_b2 > 0"

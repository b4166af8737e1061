"""Every message helps (issue 23, item 5): the right form of a mistyped flag, family, function,
product, decimal, range, list or keyword argument, and budgets that name the public way to
raise them.  CLI behaviour goes through the installed console script."""

from __future__ import annotations

import re
import subprocess
from typing import Any

import pytest

import deqrmt
import deqrmt._errors as deqrmt_errors
from deqrmt import BudgetExceeded, InvalidArgument, ParseError, UnknownActivation
from deqrmt.symbolic import parse_activation
from deqrmt.symbolic._family import get_family


def _run(prefix: list[str], *args: str, env: dict[str, str] | None = None) -> Any:
    return subprocess.run([*prefix, *args], capture_output=True, text=True, timeout=300, env=env)


def _error(out: Any, cls: str | None = None) -> str:
    """The one stderr line of a refusal (exit 2); with ``cls``, it names that deqrmt error."""
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert out.stdout == ""
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    if cls is not None:
        m = re.match(r"deqrmt: error: ([A-Za-z]+): ", lines[0])
        assert m, lines[0]
        assert issubclass(getattr(deqrmt_errors, m.group(1)), getattr(deqrmt_errors, cls))
    return lines[0]


# --- the command line ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["coefficients", "tanh", "--sigma_a2", "0.2"], "did you mean --sigma-a2?"),
        (["coefficients", "tanh", "--sigmaa2", "0.2"], "did you mean --sigma-a2?"),
        (["explicit", "relu", "--tau_0", "1"], "did you mean --tau0?"),
        (["validate", "tanh", "--n", "256", "512"], "join them with commas: --n 256,512"),
        (["coefficients", "max(x,", "0)"], "quote it, 'max(x, 0)'"),
    ],
)
def test_usage_errors_say_the_right_form(cli_prefix: list[str], argv: list[str], says: str) -> None:
    out = _run(cli_prefix, *argv)
    line = _error(out)
    assert says in line and f"(see deqrmt {argv[0]} --help)" in line, line


@pytest.mark.parametrize(
    ("argv", "cls", "says"),
    [
        (["coefficients", "tanh", "--sigma-a2", "0,2"], "InvalidArgument", "write --sigma-a2 0.2"),
        (["coefficients", "tanh", "--sigma-a2=0,2"], "InvalidArgument", "write --sigma-a2 0.2"),
        (["coefficients", "tanh", "--tau0", "0,5"], "InvalidArgument", "'0.5'"),
        (["coefficients", "tanh", "--sigma-a2", "0.1:0.3"], "InvalidArgument", "'0.1:0.3:5'"),
        (["coefficients", "x*sigmoid(1.702x)"], "ParseError", "'x*sigmoid(1.702*x)'"),
        (["coefficients", "leaky_relu(slope=0.1)"], "ParseError", "write leaky_relu(0.1)"),
    ],
)
def test_value_errors_say_the_right_form(
    cli_prefix: list[str], argv: list[str], cls: str, says: str
) -> None:
    line = _error(_run(cli_prefix, *argv), cls)
    assert says in line, line


def test_a_misspelt_activation_has_no_noisy_tail(cli_prefix: list[str]) -> None:
    line = _error(_run(cli_prefix, "coefficients", "tahn"), "UnknownActivation")
    assert line == "deqrmt: error: UnknownActivation: unknown name 'tahn'; did you mean 'tanh'?"


def test_design_names_the_family_the_user_gave(cli_prefix: list[str]) -> None:
    """`--family hardtanh` said "activation 'probe' is the constant 1/3"."""
    line = _error(
        _run(cli_prefix, "design", "--deq", "relu", "--family", "hardtanh", "--dps", "15"),
        "UnknownActivation",
    )
    assert "unknown family 'hardtanh'; did you mean 'hard_tanh'?" in line and "probe" not in line


def test_budget_names_the_environment_variable_that_raises_it(
    cli_prefix: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    line = _error(_run(cli_prefix, "coefficients", "tanh(tanh(tanh(tanh(x))))"), "BudgetExceeded")
    assert "set the environment variable DEQRMT_MAX_TRANSCENDENTAL_DEPTH=4" in line, line
    assert "._" not in line  # no private module in a message
    monkeypatch.setenv("DEQRMT_MAX_TRANSCENDENTAL_DEPTH", "4")
    act = parse_activation("tanh(tanh(tanh(tanh(x))))")  # raised: accepted (Python reads it too)
    assert act.expr.has(deqrmt.symbolic.X)


def test_a_bad_limit_variable_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEQRMT_MAX_KINKS", "lots")
    with pytest.raises(InvalidArgument, match="DEQRMT_MAX_KINKS='lots': give a whole number"):
        parse_activation("relu")


def test_no_arguments_prints_the_help_and_exits_0(cli_prefix: list[str]) -> None:
    out = _run(cli_prefix)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert out.stdout.startswith("usage: deqrmt")
    for command in ("coefficients", "explicit", "experiment", "sweep", "families"):
        assert command in out.stdout


# --- the parser ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "error", "message"),
    [
        ("tahn", UnknownActivation, "unknown name 'tahn'; did you mean 'tanh'?"),
        ("tahn(x)", UnknownActivation, "unknown function 'tahn'; did you mean 'tanh'?"),
        (
            "x*tahn(x)",
            UnknownActivation,
            "unknown function 'tahn' in 'x*tahn(x)'; did you mean 'tanh'?",
        ),
        (
            "2x",
            ParseError,
            "cannot parse '2x': invalid decimal literal; write products with '*': '2*x'.",
        ),
    ],
)
def test_parser_messages_whole(text: str, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as info:
        parse_activation(text)
    assert str(info.value).strip("'\"") == message


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("x*sigmoid(1.702x)", "'x*sigmoid(1.702*x)'"),
        ("2 x", "'2*x'"),
        ("(x+1)(x-1)", "'(x+1)*(x-1)'"),
        ("x(1+x)", "'x*(1+x)'"),
        ("2.5e3x", "'2.5e3*x'"),
        ("leaky_relu(slope=0.1)", "write leaky_relu(0.1)"),
        ("hard_tanh(c=0.8)", "write hard_tanh(1, 0.8)"),
        ("leaky_relu(alpha=0.1)", "its parameters are slope"),
        ("tanh(x=1)", "its argument is positional, tanh(x)"),
        ("polynomial(c=1)", "polynomial(c0, c1, …)"),
        ("0,5*x", "decimals take a point, not a comma: '0.5*x'"),
        ("relu, tanh", "for the layers of a network give several"),
        ("np.tanh(x)", "without a module name"),
        ("y = tanh(x)", "without '='"),
    ],
)
def test_parser_hints(text: str, says: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        parse_activation(text)
    assert says in str(info.value), str(info.value)


def test_a_number_is_not_taken_for_an_implicit_product() -> None:
    assert parse_activation("1e-3*x").expr == deqrmt.symbolic.X / 1000


# --- numbers and families from Python -------------------------------------------------------------


def test_decimal_comma_and_range_without_count_from_python() -> None:
    with pytest.raises(InvalidArgument, match="a decimal comma"):
        deqrmt.deq_coefficients("tanh", "0,2")
    from deqrmt._arguments import number_range

    with pytest.raises(InvalidArgument, match=r"start:stop:COUNT, e\.g\. '0\.1:0\.3:5'"):
        number_range("0.1:0.3", "sigma_a2", 10)


@pytest.mark.parametrize(
    ("family", "says"),
    [
        ("hardtanh", "did you mean 'hard_tanh'?"),
        ("leakyrelu", "did you mean 'leaky_relu'?"),
        ("a*b", "families: hard_tanh, leaky_relu"),
    ],
)
def test_unknown_families(family: str, says: str) -> None:
    with pytest.raises(UnknownActivation) as info:
        get_family(family)
    assert says in str(info.value) and "probe" not in str(info.value)


def test_budget_exceeded_is_the_error_class() -> None:
    with pytest.raises(BudgetExceeded):
        parse_activation("tanh(tanh(tanh(tanh(x))))")

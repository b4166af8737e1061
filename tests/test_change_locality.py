"""A new activation is one LIBRARY entry; a new command is one module plus its registration.

Each test makes the one change in-process (monkeypatched, undone after the test) and checks
that the rest of the package follows: the parser prices and builds the activation, the command
line parses, runs and lists the command, and the CLI reference (generated from the parser, the
page the README points to) has its page with the example its module declares.  The references are independent of the code under
test: the activation's values against SymPy's own tanh, its parse price against the limit it
must exceed when written out, the command's output against the text the test's module prints.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import types
from pathlib import Path
from typing import Any

import pytest
import sympy as sp

import deqrmt.cli as cli
from deqrmt import BudgetExceeded
from deqrmt.symbolic import X, parse_activation
from deqrmt.symbolic._activation import LIBRARY, Entry, Price
from deqrmt.symbolic._parse_limits import MAX_TRANSCENDENTAL


def test_a_new_activation_is_one_library_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    entry = Entry(lambda: sp.tanh(X) / 2, "tanh(x)/2 (a throwaway)", Price(calls=1))
    monkeypatch.setitem(LIBRARY, "half_tanh", entry)
    act = parse_activation("half_tanh(2*x)")
    assert sp.simplify(act.expr - sp.tanh(2 * X) / 2) == 0
    # its declared price counts: each call is one transcendental call, as tanh is, so one more
    # than MAX_TRANSCENDENTAL calls is refused, and MAX_TRANSCENDENTAL is not
    ok = "+".join(f"half_tanh(x/{k})" for k in range(1, MAX_TRANSCENDENTAL + 1))
    parse_activation(ok)
    too_many = ok + f"+half_tanh(x/{MAX_TRANSCENDENTAL + 1})"
    with pytest.raises(BudgetExceeded, match="MAX_TRANSCENDENTAL"):
        parse_activation(too_many)


def _throwaway_command() -> types.ModuleType:
    module = types.ModuleType("deqrmt.cli.throwaway_echo")
    module.NAME = "throwaway-echo"  # type: ignore[attr-defined]
    module.EXAMPLES = ("throwaway-echo hello",)  # type: ignore[attr-defined]

    def register(subparsers: Any) -> argparse.ArgumentParser:
        from deqrmt.cli._common import add_command

        p = add_command(
            subparsers,
            "throwaway-echo",
            help="print its argument back (a test's throwaway command)",
            description="Prints its one argument back: a command a test registers in-process.",
        )
        p.add_argument("word", help="the word to print back")
        return p

    def run(args: argparse.Namespace) -> int:
        print(f"echo: {args.word}")
        return 0

    module.register = register  # type: ignore[attr-defined]
    module.run = run  # type: ignore[attr-defined]
    return module


def test_a_new_command_is_one_module_and_its_registration(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "deqrmt.cli.throwaway_echo", _throwaway_command())
    monkeypatch.setattr(cli, "COMMANDS", (*cli.COMMANDS, "throwaway-echo"))
    assert cli.main(["throwaway-echo", "hello"]) == 0
    assert capsys.readouterr().out == "echo: hello\n"
    assert "throwaway-echo" in cli.build_parser().format_help()
    assert cli.main(["throwaway-echo"]) == 2  # a missing argument is bad input, as anywhere


def test_a_new_command_gets_its_page_in_the_cli_reference(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The generated CLI reference (docs/_ext/deqrmt_docs.py) lists the registered command and
    gives it a page with its options, its ``--help`` and the example its module declares: no
    docs file, README line or module-map line to add."""
    for name in ("sphinx", "myst_parser"):
        pytest.importorskip(name)
    ext_path = Path(__file__).resolve().parents[1] / "docs" / "_ext" / "deqrmt_docs.py"
    spec = importlib.util.spec_from_file_location("deqrmt_docs_locality", ext_path)
    assert spec is not None and spec.loader is not None
    ext = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ext)
    monkeypatch.setitem(sys.modules, "deqrmt.cli.throwaway_echo", _throwaway_command())
    monkeypatch.setattr(cli, "COMMANDS", (*cli.COMMANDS, "throwaway-echo"))
    ext.generate_cli(tmp_path)
    index = (tmp_path / "cli" / "index.md").read_text(encoding="utf-8")
    assert "| [`throwaway-echo`](throwaway-echo.md) | print its argument back" in index
    page = (tmp_path / "cli" / "throwaway-echo.md").read_text(encoding="utf-8")
    assert "usage: deqrmt throwaway-echo [-h] word" in page
    assert "```{deqrmt-run}\nthrowaway-echo hello\n```" in page

"""Every benchmark follows the one load rule of ``benchmarks/_load.py`` (issue 24).

A source scan: every script prints the load before and after through ``_load``, and a script
that prints a ratio of times prints it through ``ratio_text`` or ``ratio_cell`` (withheld on a
busy machine unless ``--force-ratio``), never as a bare division in an f-string.  Then each
script's ``--help`` runs, and the table helpers behave, with a monkeypatched load average:
nothing here depends on the real load or times anything.
"""

from __future__ import annotations

import ast
import os
import re
import runpy
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"
SCRIPTS = sorted(p.name for p in BENCH.glob("*.py") if p.name != "_load.py")
RULE = frozenset({"ratio_text", "ratio_cell"})

#: divisions printed directly that are not ratios of times, so the load does not withhold them
NOT_TIME_RATIOS = {
    ("deq_solve.py", "ip / it"),  # evaluations of f: a count
    ("deq_solve.py", "ip / ia"),  # evaluations of f: a count
    ("deq_solve.py", "2 * m * m * n / t_mm / 1000000000.0"),  # GFLOP/s: a rate, not a ratio
    ("exact_kernel.py", "peak / (8 * n * n)"),  # peak memory in n² doubles
    ("kernels_data.py", "t / (n * (n + 1) / 2)"),  # seconds per pair: a rate, not a ratio
    ("kernels_data.py", "cpu / t"),  # CPU/wall: the cores the process got, not a speed-up
    ("sweep.py", "est / used"),  # memory: the budget's estimate / the measured peak
}


def _tree(name: str) -> ast.Module:
    return ast.parse((BENCH / name).read_text(encoding="utf-8"), filename=name)


def _called(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call):
        f = node.func
        return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
    return None


def _rule_calls(tree: ast.Module) -> set[str]:
    """The rule's functions and the script's own wrappers around them (sweep.py's ``ratio``)."""
    wrappers = {
        fn.name
        for fn in ast.walk(tree)
        if isinstance(fn, ast.FunctionDef) and any(_called(n) in RULE for n in ast.walk(fn))
    }
    return set(RULE) | wrappers


def _divisions(node: ast.AST, rule: set[str]) -> list[ast.BinOp]:
    """Divisions in ``node``, not looking inside a call to the rule (a ratio it may withhold)."""
    if _called(node) in rule:
        return []
    here = [node] if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) else []
    return here + [d for child in ast.iter_child_nodes(node) for d in _divisions(child, rule)]


def bare_ratios(name: str) -> list[str]:
    """Divisions formatted straight into text, outside the rule and outside NOT_TIME_RATIOS."""
    tree = _tree(name)
    rule = _rule_calls(tree)
    found = [
        ast.unparse(d)
        for fv in ast.walk(tree)
        if isinstance(fv, ast.FormattedValue)
        for d in _divisions(fv.value, rule)
    ]
    # a division inside a division (a / b / c) is reported once, as the outer one
    outer = [e for e in found if not any(e != o and e in o for o in found)]
    return [e for e in outer if (name, e) not in NOT_TIME_RATIOS]


def prints_ratio(name: str) -> bool:
    """Whether the script prints a ratio: through the rule, as a bare division, or in words."""
    tree = _tree(name)
    if bare_ratios(name) or any(_called(n) in RULE for n in ast.walk(tree)):
        return True
    words = re.compile(r"\bratio\b|faster|speed-?up", re.IGNORECASE)
    return any(
        isinstance(c, ast.Constant) and isinstance(c.value, str) and words.search(c.value)
        for call in ast.walk(tree)
        if _called(call) == "print"
        for c in ast.walk(call)
    )


def _imports_from_load(name: str) -> set[str]:
    return {
        alias.name
        for node in ast.walk(_tree(name))
        if isinstance(node, ast.ImportFrom) and node.module == "_load"
        for alias in node.names
    }


def test_the_scan_sees_the_scripts() -> None:
    assert {"coefficients.py", "design.py", "hostile_commands.py", "limits.py"} <= set(SCRIPTS)
    # the scan recognises a bare ratio and the rule's own calls: a negative control
    assert prints_ratio("deq_solve.py") and not prints_ratio("hostile_commands.py")


@pytest.mark.parametrize("name", SCRIPTS)
def test_every_benchmark_prints_the_load_through_the_rule(name: str) -> None:
    """Before and after, also in a script that prints no ratio (issue 24)."""
    used = _imports_from_load(name)
    assert used & {"load_line", "Load"}, f"{name} does not print the load through _load.py"
    calls = {_called(n) for n in ast.walk(_tree(name))}
    assert calls & {"load_line", "now", "text"}, f"{name} imports _load but prints no load"


@pytest.mark.parametrize("name", SCRIPTS)
def test_a_ratio_is_printed_only_through_the_rule(name: str) -> None:
    assert bare_ratios(name) == [], f"{name} prints a ratio that the load cannot withhold"
    if prints_ratio(name):
        assert _imports_from_load(name) & RULE, f"{name} prints a ratio without _load's rule"
        assert "add_force_flag" in _imports_from_load(name), f"{name} has no --force-ratio"


@pytest.mark.parametrize("name", SCRIPTS)
def test_help_runs(
    name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))  # the script puts benchmarks/ first
    try:
        main = runpy.run_path(str(BENCH / name), run_name="bench")["main"]
    except ModuleNotFoundError as e:  # torch, dask: extras the script needs at import
        if e.name in {"torch", "dask", "distributed"}:
            pytest.skip(f"{name} needs {e.name}")
        raise
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage:")
    assert ("--force-ratio" in out) == prints_ratio(name)


# -- the table helpers and the scripts' use of them, under a monkeypatched load --


def _machine(monkeypatch: pytest.MonkeyPatch, one: float, cores: int = 2) -> None:
    monkeypatch.setattr(os, "getloadavg", lambda: (one, 0.5, 0.25))
    monkeypatch.setattr(os, "cpu_count", lambda: cores)


@pytest.fixture
def load_mod() -> dict[str, Any]:
    return runpy.run_path(str(BENCH / "_load.py"), run_name="bench_load")


def test_ratio_cell_idle_busy_forced(
    load_mod: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    cell, Load = load_mod["ratio_cell"], load_mod["Load"]
    _machine(monkeypatch, 0.3)
    idle = Load.now()
    assert cell(12.345, idle, idle, fmt="{:.1f}", width=7) == ("   12.3", "")
    _machine(monkeypatch, 7.5)
    hot = Load.now()
    assert cell(12.345, idle, hot, fmt="{:.1f}", width=7) == (
        "      -",
        "ratio withheld: machine busy (load 7.50 on 2 cores)",
    )
    assert cell(12.345, hot, idle, force=True, width=7) == (
        " 12.35x",
        "(forced; machine busy: load 7.50 on 2 cores)",
    )
    assert load_mod["withheld"](idle, hot) and not load_mod["withheld"](idle, hot, force=True)
    assert not load_mod["withheld"](idle, idle)


def test_limits_rows_withhold_the_ratio_but_print_the_time(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    mod = runpy.run_path(str(BENCH / "limits.py"), run_name="bench")
    _machine(monkeypatch, 9.0)
    rows = mod["_Rows"](0.25, mod["Load"].now(), False)
    rows.row("refusal", 0.5, 1.0)
    _machine(monkeypatch, 0.1)
    idle = mod["_Rows"](0.25, mod["Load"].now(), False)
    idle.row("refusal", 0.5, None)
    busy_line, idle_line = capsys.readouterr().out.splitlines()
    assert "500.000 ms" in busy_line and "2.00x" not in busy_line
    assert busy_line.endswith("ratio withheld: machine busy (load 9.00 on 2 cores)")
    assert "500.000 ms      2.00x  (was -)" in idle_line and "withheld" not in idle_line


def test_hostile_commands_prints_the_load_and_runs_the_first_cases(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No deqrmt process: ``run_one`` is replaced by a record of what it was asked."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    main = runpy.run_path(str(BENCH / "hostile_commands.py"), run_name="bench")["main"]
    asked: list[list[str]] = []

    def fake(argv: list[str]) -> dict[str, object]:
        asked.append(argv)
        return {"argv": argv, "rc": 2, "cpu_s": 0.1, "wall_s": 0.1, "rss_mib": 1,
                "hung": False, "traceback": False, "bug": False, "last": "refused"}  # fmt: skip

    monkeypatch.setitem(main.__globals__, "run_one", fake)
    _machine(monkeypatch, 4.0)
    assert main(["--only", "bias", "--first", "2"]) == 0
    out = capsys.readouterr().out
    assert [a[0] for a in asked] == ["bias", "bias"] and len(asked) == 2
    assert out.startswith("load before: load 4.00 0.50 0.25 on 2 cores\n")
    assert out.rstrip().endswith("load after: load 4.00 0.50 0.25 on 2 cores")

"""tools/mutation.py on a throwaway project: a mutant the test kills, an equivalent survivor
(explained, then not), a line no test runs, and the working tree left as it was."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]

TOY = """\
def magnitude(x):
    if x >= 0:
        return x
    return -x


def unused(x):
    return x + 1
"""
TEST = """\
from toy import magnitude


def test_magnitude():
    assert magnitude(-2) == 2
    assert magnitude(3) == 3
    assert magnitude(0.5) == 0.5
"""


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "deqrmt_mutation_tool", ROOT / "tools" / "mutation.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def tool() -> ModuleType:
    return _tool()


def _project(root: Path) -> None:
    (root / "src").mkdir()
    (root / "tests").mkdir()
    (root / "src" / "toy.py").write_text(TOY, encoding="utf-8")
    (root / "tests" / "test_toy.py").write_text(TEST, encoding="utf-8")


def test_the_mutants_of_a_module(tool: ModuleType) -> None:
    keys = [m.key for m in tool.Mutator("src/toy.py", TOY).mutants]
    assert keys == [
        "src/toy.py:2:8: >= -> >",
        "src/toy.py:2:13: 0 -> 1",
        "src/toy.py:3:9: return value -> None",
        "src/toy.py:4:5: return value -> None",
        "src/toy.py:4:12: unary - removed",
        "src/toy.py:8:5: return value -> None",
        "src/toy.py:8:12: + -> -",
        "src/toy.py:8:16: 1 -> 0",
    ]
    mutator = tool.Mutator("src/toy.py", TOY)
    flipped = mutator.mutated(mutator.mutants[0])
    assert "if x > 0:" in flipped and "x >= 0" not in flipped


def test_docstrings_messages_annotations_and_all_are_left_alone(tool: ModuleType) -> None:
    source = (
        '"""Doc 1 < 2."""\n__all__ = ["f"]\n\n\ndef f(x: int = 1) -> int:\n'
        '    """floor"""\n    raise ValueError(f"{x + 1} < 2")\n'
    )
    keys = [m.key for m in tool.Mutator("m.py", source).mutants]
    assert keys == ["m.py:5:16: 1 -> 0"]  # the default value only


def test_a_run_kills_reports_and_explains(tool: ModuleType, tmp_path: Path, capsys) -> None:
    _project(tmp_path)
    targets = (tool.Target("src/toy.py", ("tests/test_toy.py",)),)
    argv = ["--jobs", "2", "--timeout", "300", "--workdir", str(tmp_path / "work")]
    equivalent = "src/toy.py:2:8: >= -> >"
    rc = tool.main(argv, root=tmp_path, targets=targets, explained={})
    out = capsys.readouterr().out
    assert rc == 1, out  # 4 of 8 killed: below the 90 % goal
    assert "src/toy.py: 4/8 killed (0 by timeout), 0 equivalent" in out
    assert f"  {equivalent}  [1 tests pass]" in out
    assert out.split("survivors:")[1].count("src/toy.py:8:") == 3  # `unused`, never run
    assert "[no test runs the line]" in out
    assert "mutation score 50.0 %" in out
    # the same run with the survivor explained: out of the score, listed with its reason
    rc = tool.main(argv, root=tmp_path, targets=targets, explained={equivalent: "x = 0: -0 == 0"})
    out = capsys.readouterr().out
    assert "src/toy.py: 4/7 killed (0 by timeout), 1 equivalent" in out
    assert f"{equivalent}  [survived]  x = 0: -0 == 0" in out
    # the working tree is never edited
    assert (tmp_path / "src" / "toy.py").read_text(encoding="utf-8") == TOY


def test_a_hang_counts_as_killed_by_timeout(tool: ModuleType, tmp_path: Path, capsys) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "src" / "loop.py").write_text(
        "def countdown(n):\n    while n > 0:\n        n -= 1\n    return n\n", encoding="utf-8"
    )
    (tmp_path / "tests" / "test_loop.py").write_text(
        "from loop import countdown\n\n\ndef test_countdown():\n    assert countdown(3) == 0\n",
        encoding="utf-8",
    )
    targets = (tool.Target("src/loop.py", ("tests/test_loop.py",)),)
    argv = ["--timeout", "10", "--workdir", str(tmp_path / "work")]
    rc = tool.main(argv, root=tmp_path, targets=targets, explained={})
    out = capsys.readouterr().out
    # n -= 1 → n += 1 never ends: killed by the timeout, and said so
    hang = [line for line in out.splitlines() if line.endswith("src/loop.py:3:9: -= -> +=")]
    assert hang and hang[0].startswith("timeout"), out
    assert "src/loop.py: 5/5 killed" in out and rc == 0, out


def test_every_explained_survivor_is_a_mutant_of_the_current_source(tool: ModuleType) -> None:
    """An explanation outlives its line when the module changes: then it names no mutant, and
    this test says which (re-run the tool on that module and explain the survivors again)."""
    keys = set()
    for target in tool.TARGETS:
        source = (ROOT / target.path).read_text(encoding="utf-8")
        keys.update(m.key for m in tool.Mutator(target.path, source, target.functions).mutants)
    stale = sorted(set(tool.SURVIVORS_EXPLAINED) - keys)
    assert not stale, f"SURVIVORS_EXPLAINED names mutants that no longer exist: {stale}"
    assert all(reason.strip() for reason in tool.SURVIVORS_EXPLAINED.values())

"""Every ``>>>`` example runs: the docstrings of the package and the documentation's pages.

The docstrings are the API reference (docs/api, generated from them), so an example there is a
promise to a reader; this runs each module's examples as doctests (one test per module that has
any, found by reading the source, so collection imports nothing heavy).  A module that needs an
optional extra which is not installed (torch, dask, Hypothesis) is skipped, not failed.  The
Markdown pages under docs/ (theory, notes) are run the same way, block by block.
"""

from __future__ import annotations

import doctest
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "deqrmt"
DOCS = ROOT / "docs"
#: the optional extras' top-level modules: a module importing one of them is skipped without it
OPTIONAL = {"torch", "dask", "distributed", "hypothesis", "matplotlib", "sklearn", "tqdm"}
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = sorted(
    _module_name(path)
    for path in PACKAGE.rglob("*.py")
    if path.name != "__main__.py" and ">>>" in path.read_text(encoding="utf-8")
)

_GENERATED = ("_build", "api", "cli", "auto_gallery", "auto_tutorials")
PAGES = sorted(
    path.relative_to(DOCS).as_posix()
    for path in DOCS.rglob("*.md")
    if path.relative_to(DOCS).parts[0] not in _GENERATED
    and ">>>" in path.read_text(encoding="utf-8")
)


def _import(name: str):  # noqa: ANN202 - a module
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] in OPTIONAL:
            pytest.skip(f"{name} needs {e.name}, an optional extra that is not installed")
        raise


def _run(tests: list[doctest.DocTest]) -> None:
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    report: list[str] = []
    for test in tests:
        runner.run(test, out=report.append)
    failed, attempted = runner.summarize(verbose=False)
    assert failed == 0, "".join(report)
    assert attempted > 0, "no example ran (all skipped?)"


def test_modules_with_examples_are_found() -> None:
    """The collection above is not empty: the scan itself works."""
    assert "deqrmt.numeric._deq" in MODULES
    assert len(MODULES) >= 15


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = _import(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    # only the examples written in this module (not those of names it imports)
    tests = [t for t in finder.find(module, name) if t.examples]
    _run(tests)


_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)


@pytest.mark.parametrize("page", PAGES)
def test_markdown_examples(page: str) -> None:
    text = (DOCS / page).read_text(encoding="utf-8")
    parser = doctest.DocTestParser()
    globs: dict[str, object] = {}  # one namespace per page: blocks build on each other
    tests = []
    for i, match in enumerate(_FENCE.finditer(text)):
        block = match.group(1)
        if ">>>" not in block:
            continue
        line = text.count("\n", 0, match.start(1))
        tests.append(parser.get_doctest(block, globs, f"{page}[{i}]", str(DOCS / page), line))
    _run(tests)

"""The import layers of ``src/deqrmt`` (issue 20; the picture is in docs/architecture.md).

Every ``import`` statement of every module is parsed (``ast``; imports inside functions too) and
checked against one rule::

    shared root modules → symbolic → numeric → validate → {check, sweep} → public face → cli

- **No back-arrow**: a module imports only its own layer or lower ones; ``check`` and ``sweep``
  share a layer and do not import each other.  Every import counts, also one inside a function
  or under ``if TYPE_CHECKING:``: an upward import put inside a function to dodge a cycle is
  still an upward dependency, so it is reported, not excused.
- **No cycle**, at package level and at file level, counting every import: module level, inside
  a function and under ``TYPE_CHECKING``.  A function-level import inside one layer is the way
  to defer a heavy import, never a way to close a cycle: two modules that need each other share
  a piece that belongs in the lower one (or in a small module of its own).
- **No private import across packages outside cli/**: ``deqrmt.numeric._moments`` may be imported
  by ``deqrmt.numeric.*`` and by ``deqrmt.cli.*``; any other package goes through the package's
  export table (its ``__init__``'s ``__all__``).

Each test collects every violation and names them all in its failure message.
"""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import deqrmt
from deqrmt.cli import COMMANDS

SRC = Path(deqrmt.__file__).resolve().parent
ROOT = SRC.parents[1]

#: Small shared modules at the package root: the bottom layer, importable from everywhere.
SHARED = frozenset(
    {
        "deqrmt._arguments",  # argument parsing helpers (exact numbers, ranges, lists)
        "deqrmt._budget",  # the work budgets (environment overrides)
        "deqrmt._errors",  # the exception hierarchy
        "deqrmt._io",  # atomic file writing
        "deqrmt._json",  # the one JSON convention
        "deqrmt._lazy",  # names a package loads on first use (PEP 562)
        "deqrmt._progress",  # progress bars (tqdm, lazily)
        "deqrmt._text",  # decimal rounding, escaping, terminal text
        "deqrmt._untrusted",  # bounded reading of untrusted text
        "deqrmt._version",  # __version__ from the distribution's metadata
    }
)
#: The public face: may import every layer except cli.
PUBLIC = frozenset({"deqrmt", "deqrmt.testing"})
PACKAGES = ("symbolic", "numeric", "validate", "check", "sweep", "cli")
RANK = {
    "shared": 0,
    "symbolic": 1,
    "numeric": 2,
    "validate": 3,
    "check": 4,
    "sweep": 4,
    "public": 5,
    "cli": 6,
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES: dict[str, Path] = {_module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def component(module: str) -> str:
    """The layer a module belongs to: shared, public, or its package's name."""
    if module in SHARED:
        return "shared"
    if module in PUBLIC:
        return "public"
    if module == "deqrmt.__main__":
        return "cli"  # ``python -m deqrmt`` is the CLI
    parts = module.split(".")
    if len(parts) >= 2 and parts[1] in PACKAGES:
        return parts[1]
    raise AssertionError(
        f"{module} is in no layer: list it in SHARED or PUBLIC (tests/test_architecture.py) "
        "and in docs/architecture.md"
    )


@dataclass(frozen=True)
class Edge:
    """One imported name: ``source`` (line ``line``) imports ``target``."""

    source: str
    target: str
    line: int
    in_function: bool
    type_only: bool

    def __str__(self) -> str:
        where = " (in a function)" if self.in_function else ""
        where += " (TYPE_CHECKING)" if self.type_only else ""
        return f"{self.source}:{self.line} imports {self.target}{where}"


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    """The modules an import statement loads, one per imported name."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    if node.level:
        package = module.split(".")
        if MODULES[module].name != "__init__.py":
            package = package[:-1]
        package = package[: len(package) - node.level + 1]
        base = ".".join(package + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    for alias in node.names:
        submodule = f"{base}.{alias.name}"
        yield submodule if submodule in MODULES else base


def _edges(module: str) -> Iterator[Edge]:
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))

    def walk(node: ast.AST, in_function: bool, type_only: bool) -> Iterator[Edge]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                yield from walk(child, True, type_only)
            elif isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for stmt in child.body:
                    yield from walk(ast.Module(body=[stmt], type_ignores=[]), in_function, True)
                for stmt in child.orelse:
                    yield from walk(ast.Module(body=[stmt], type_ignores=[]), in_function, False)
            elif isinstance(child, ast.Import | ast.ImportFrom):
                for target in _targets(module, child):
                    if target == "deqrmt" or target.startswith("deqrmt."):
                        yield Edge(module, target, child.lineno, in_function, type_only)
            else:
                yield from walk(child, in_function, type_only)

    yield from walk(tree, False, False)


#: Every import, once per (module, line, imported module).
EDGES: tuple[Edge, ...] = tuple(
    dict.fromkeys(edge for module in MODULES for edge in _edges(module))
)


def _report(title: str, problems: list[str]) -> str:
    return f"{len(problems)} {title} (docs/architecture.md, 'The import rule'):\n  " + "\n  ".join(
        problems
    )


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph.get(node, ())):
            if succ not in index:
                connect(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component_nodes = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component_nodes.append(top)
                if top == node:
                    break
            if len(component_nodes) > 1 or node in graph.get(node, ()):
                found.append(sorted(component_nodes))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return found


def test_every_module_is_in_a_layer() -> None:
    unplaced = []
    for module in MODULES:
        try:
            component(module)
        except AssertionError as exc:
            unplaced.append(str(exc))
    assert not unplaced, _report("modules in no layer", unplaced)


def test_imports_run_one_way() -> None:
    """No back-arrow: a module imports its own layer or lower ones (function-level too)."""
    back = []
    for edge in EDGES:
        if edge.target not in MODULES:
            continue  # an optional name guarded by try/except: not a deqrmt module
        source, target = component(edge.source), component(edge.target)
        if source == target:
            continue
        if RANK[target] >= RANK[source]:  # upward, or sideways between check and sweep
            back.append(f"{edge}: {source} may not import {target}")
    assert not back, _report("back-arrows", back)


def test_no_cycle_between_packages() -> None:
    graph: dict[str, set[str]] = {}
    for edge in EDGES:
        source, target = component(edge.source), component(edge.target)
        if source != target:
            graph.setdefault(source, set()).add(target)
    cycles = _cycles(graph)
    assert not cycles, _report("package-level cycles", [" ↔ ".join(c) for c in cycles])


def test_no_cycle_between_files() -> None:
    """Every import (module level, inside a function, under ``TYPE_CHECKING``) forms no cycle
    between files.  Only the statements written are edges: importing ``deqrmt.numeric._moments``
    runs ``deqrmt/numeric/__init__.py`` first, but that implicit step is not an edge, so a
    package's export table importing its own modules is no cycle, while a module importing its
    own package's ``__init__`` (``from . import x``, ``from ..numeric import x`` inside numeric)
    is one."""
    graph: dict[str, set[str]] = {}
    for edge in EDGES:
        if edge.target == edge.source or edge.target not in MODULES:
            continue
        graph.setdefault(edge.source, set()).add(edge.target)
    cycles = _cycles(graph)
    assert not cycles, _report("file-level cycles (every import)", [" ↔ ".join(c) for c in cycles])


def _is_private(module: str) -> bool:
    return any(part.startswith("_") and part != "__main__" for part in module.split(".")[1:])


def _package_of(module: str) -> str:
    parts = module.split(".")
    if module in MODULES and MODULES[module].name == "__init__.py":
        return module
    return ".".join(parts[:-1])


def test_no_private_import_across_packages() -> None:
    """``deqrmt.X._m`` is imported only inside X (and by cli/); others use X's export table."""
    private = []
    for edge in EDGES:
        if component(edge.source) == "cli" or edge.target in SHARED or not _is_private(edge.target):
            continue
        if _package_of(edge.target) != _package_of(edge.source):
            private.append(str(edge))
    assert not private, _report("private imports across packages", private)


def test_lambdify_at_most_in_one_backend_module() -> None:
    users = sorted(
        module for module, path in MODULES.items() if "lambdify" in path.read_text(encoding="utf-8")
    )
    assert len(users) <= 1, f"SymPy's lambdify appears in {users}: use numeric/_printer.py"


#: argparse outside cli/, each with why: not a user's command line.
ARGPARSE_ELSEWHERE = {
    # the embedded Dask cluster's child process: its argv is written by sweep/_cluster.py
    "deqrmt.sweep._launch",
}


def test_no_argparse_outside_cli() -> None:
    users = sorted(
        module
        for module, path in MODULES.items()
        if component(module) != "cli"
        and module not in ARGPARSE_ELSEWHERE
        and re.search(r"^\s*(import argparse|from argparse import)", path.read_text("utf-8"), re.M)
    )
    assert not users, f"argparse outside cli/ (CLI code belongs in cli/): {users}"


# -- the checker itself can fail --------------------------------------------------------------


def test_the_checkers_find_what_they_look_for() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
    assert component("deqrmt.numeric._moments") == "numeric"
    assert component("deqrmt._errors") == "shared"
    assert component("deqrmt") == "public"
    assert _is_private("deqrmt.numeric._moments") and not _is_private("deqrmt.cli.sphere")
    assert _package_of("deqrmt.numeric._moments") == "deqrmt.numeric"
    assert _package_of("deqrmt.numeric") == "deqrmt.numeric"
    # the edge parser sees function-level and relative imports
    assert any(e.source == "deqrmt._json" and e.target == "deqrmt._version" for e in EDGES)
    # … and a function-level import is an edge of the cycle graph like any other
    assert any(
        e.in_function
        and (e.source, e.target) == ("deqrmt.numeric._precision_cost", "deqrmt.numeric._moments")
        for e in EDGES
    )
    with pytest.raises(AssertionError, match="in no layer"):
        component("deqrmt.newpackage")


# -- export tables ----------------------------------------------------------------------------


@pytest.mark.parametrize("package", PACKAGES)
def test_export_table_resolves(package: str) -> None:
    """Each package ``__init__`` has ``__all__``, without duplicates, and every name resolves."""
    module = importlib.import_module(f"deqrmt.{package}")
    table = getattr(module, "__all__", None)
    assert table is not None, f"deqrmt.{package} has no __all__ (its export table)"
    assert len(table) == len(set(table)), f"deqrmt.{package}.__all__ has duplicates"
    unresolved = [name for name in table if not hasattr(module, name)]
    assert not unresolved, f"deqrmt.{package}.__all__ names that do not resolve: {unresolved}"


def _imported_names() -> Iterator[tuple[str, str, str, int]]:
    """(importer, package, name, line) for every ``from deqrmt.<package> import name``."""
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            for target, alias in zip(_targets(module, node), node.names, strict=True):
                parts = target.split(".")
                if len(parts) == 2 and parts[1] in PACKAGES and alias.name != "*":
                    yield module, target, alias.name, node.lineno


def test_names_used_across_packages_are_exported() -> None:
    """A name another package imports from ``deqrmt.<package>`` is in that package's ``__all__``
    (a name re-exported by the ``__init__`` but left out of the table is a hidden API).  Names
    imported from a package's private modules are the private-import test's business (allowed
    for cli/ only)."""
    missing = []
    for importer, package, name, line in _imported_names():
        if _package_of(importer) == package or f"{package}.{name}" in MODULES:
            continue
        if name not in importlib.import_module(package).__all__:
            missing.append(f"{importer}:{line} imports {name} from {package}, not in its __all__")
    assert not missing, _report("names used across packages but not exported", missing)


def test_package_reexports_are_in_the_export_table() -> None:
    """Every ``from ._m import X as X`` in a package ``__init__`` is listed in its ``__all__``."""
    missing = []
    for package in PACKAGES:
        module = f"deqrmt.{package}"
        table = set(importlib.import_module(module).__all__)
        for node in ast.parse(MODULES[module].read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ImportFrom):
                missing += [
                    f"{module}: {alias.name}"
                    for alias in node.names
                    if alias.asname == alias.name and alias.name not in table
                ]
    assert not missing, _report("re-exports missing from __all__", missing)


# -- the version ------------------------------------------------------------------------------


def test_version_has_one_home(monkeypatch: pytest.MonkeyPatch) -> None:
    """``deqrmt.__version__`` is ``_version.__version__``: the installed metadata, else the
    source tree's pyproject.toml; no module imports the package root for it."""
    from deqrmt import _version

    assert deqrmt.__version__ == _version.__version__
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    declared = re.search(r'^version\s*=\s*"([^"]+)"', pyproject, re.MULTILINE)
    assert declared is not None
    assert _version._from_source_tree() == declared.group(1)

    def not_installed(name: str) -> str:
        raise _version.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(_version.metadata, "version", not_installed)
    assert _version._version() == declared.group(1)
    root_users = [str(e) for e in EDGES if e.target == "deqrmt" and e.source != "deqrmt"]
    assert not root_users, _report("imports of the package root from inside it", root_users)


# -- docs/architecture.md ---------------------------------------------------------------------


def test_the_module_map_names_every_module_once() -> None:
    """docs/architecture.md has one line per module of src/deqrmt, and no line for a module
    that does not exist (so the map cannot go stale)."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    _, _, module_map = text.partition("## Module map")
    assert module_map, "docs/architecture.md has no '## Module map' section"
    listed = re.findall(r"^- `(deqrmt/[\w/]+\.py)`", module_map, re.MULTILINE)
    tree = {p.relative_to(SRC.parent).as_posix() for p in MODULES.values()}
    # a command's module is registered in COMMANDS, which the map names in one line for all
    # of them: a new command needs no line here (a line of its own is welcome)
    assert "- `deqrmt/cli/<command>.py`" in module_map, "the map's line for the command modules"
    tree -= {f"deqrmt/cli/{c.replace('-', '_')}.py" for c in COMMANDS}
    problems = [f"{m}: not in the map" for m in sorted(tree - set(listed))]
    on_disk = {p.relative_to(SRC.parent).as_posix() for p in MODULES.values()}
    problems += [f"{m}: in the map, not in src/" for m in sorted(set(listed) - on_disk)]
    problems += [f"{m}: listed twice" for m in sorted({m for m in listed if listed.count(m) > 1})]
    assert not problems, _report("module-map mismatches in docs/architecture.md", problems)


def test_the_layer_table_matches_the_shared_modules() -> None:
    """The shared root modules the test knows are the ones the architecture page draws."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    drawn = next(line for line in text.splitlines() if "shared root modules" in line)
    assert sorted(drawn.split()[: len(SHARED)]) == sorted(m.split(".")[1] for m in SHARED)


# -- CITATION.cff and CONTRIBUTING.md ---------------------------------------------------------


def test_citation_names_this_version_and_the_papers() -> None:
    cff = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    declared = re.search(r'^version\s*=\s*"([^"]+)"', pyproject, re.MULTILINE)
    assert declared is not None
    assert re.search(r"^cff-version: 1\.2\.0$", cff, re.MULTILINE)
    assert re.search(r"^type: software$", cff, re.MULTILINE)
    version = re.search(r"^version: (\S+)$", cff, re.MULTILINE)
    assert version is not None and version.group(1) == declared.group(1), (
        "CITATION.cff's version differs from pyproject.toml's: update CITATION.cff"
    )
    assert cff.count("- type: conference-paper") == 3  # ICML 2024, HLD 2023, NeurIPS 2024


def test_contributing_shows_the_commands_ci_runs() -> None:
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    for command in ("pip install -e", "python -m pytest", "ruff check", "mypy", "sphinx"):
        assert command in text, f"CONTRIBUTING.md does not show {command!r}"
    assert "docs/architecture.md" in text and "tests/test_architecture.py" in text

"""The documentation site builds with ``-W`` and covers the code it documents.

* Quick checks (no build): every public function and class has a docstring (the API reference
  is generated from them), every ``--flag`` that a hand-written page or the README shows for a
  ``deqrmt`` command exists in that command's parser, and every gallery script compiles.
* The site (default suite): ``python -m sphinx -W --keep-going -b html -D plot_gallery=0`` on a
  copy of docs/ in a temporary directory (the build generates pages and must not write into the
  checkout); then an API page with an entry for every public name, a page with a real
  invocation for every command ``deqrmt --help`` lists, the theory pages with their generated
  LaTeX, and no page that loads anything from the network.  The CLI examples run during this
  build, so an example whose flag was renamed fails it.
* The gallery (``slow``: run once by .ci/run): the full build, every example executed; at least
  6 examples, each with an embedded PNG, and the tutorials downloadable as notebooks.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
#: what a build generates inside the source directory (never copied from the checkout)
GENERATED = ("_build", "api", "cli", "auto_gallery", "auto_tutorials", "sg_execution_times.rst")
BUILD_TIMEOUT = 1500  # seconds: a guard against a hung build, not a measure of speed


def _extension() -> ModuleType:
    """docs/_ext/deqrmt_docs.py: the one list of public modules and CLI examples."""
    spec = importlib.util.spec_from_file_location("deqrmt_docs", DOCS / "_ext" / "deqrmt_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sphinx_missing() -> str | None:
    for name in ("sphinx", "furo", "myst_parser", "sphinx_gallery"):
        if importlib.util.find_spec(name) is None:
            return f"{name} is not installed (pip install -e '.[docs]')"
    return None


needs_sphinx = pytest.mark.skipif(_sphinx_missing() is not None, reason=str(_sphinx_missing()))


# --------------------------------------------------------------------------- quick checks


@needs_sphinx
def test_every_public_function_and_class_has_a_docstring() -> None:
    ext = _extension()
    missing = []
    for modname, names in ext.public_api().items():
        module = importlib.import_module(modname)
        for name in names:
            obj = getattr(module, name)
            if (inspect.isfunction(obj) or inspect.isclass(obj) or callable(obj)) and not (
                inspect.getdoc(obj) or ""
            ).strip():
                missing.append(f"{modname}.{name}")
    assert not missing, f"public names without a docstring: {missing}"


def test_top_level_functions_document_returns_and_an_example() -> None:
    """The main API (``deqrmt.__all__``): Returns and a runnable Example in every function."""
    import deqrmt

    incomplete = []
    for name in deqrmt.__all__:
        obj = getattr(deqrmt, name)
        if not inspect.isfunction(getattr(obj, "__wrapped__", obj)):
            continue
        doc = inspect.getdoc(obj) or ""
        lacks = [s for s in ("Returns:", "Example", ">>>") if s not in doc]
        if inspect.signature(obj).parameters and "Args:" not in doc:
            lacks.append("Args:")
        if lacks:
            incomplete.append(f"{name} lacks {lacks}")
    assert not incomplete, incomplete


_COMMAND = re.compile(r"deqrmt ([a-z][a-z-]*)((?: [^\n`|#]*)?)")


def _shown_commands() -> list[tuple[str, str, str]]:
    """``(file, command, flag)`` for every ``deqrmt CMD … --flag`` a hand-written page shows."""
    pages = [ROOT / "README.md"] + [
        p for p in DOCS.rglob("*.md") if p.relative_to(DOCS).parts[0] not in GENERATED
    ]
    pages += list((DOCS / "gallery").glob("*.py")) + list((DOCS / "tutorials").glob("*.py"))
    shown = []
    for page in pages:
        for match in _COMMAND.finditer(page.read_text(encoding="utf-8")):
            for flag in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", match.group(2)):
                shown.append((page.relative_to(ROOT).as_posix(), match.group(1), flag))
    ext = _extension()
    for examples in ext.CLI_EXAMPLES.values():
        for example in examples:  # each step names its own command (`design … > d.json`)
            for match in _COMMAND.finditer(f"deqrmt {example}"):
                for flag in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", match.group(2)):
                    shown.append(("docs/_ext/deqrmt_docs.py", match.group(1), flag))
    return shown


@needs_sphinx
def test_every_flag_the_docs_show_exists() -> None:
    """Renaming a CLI flag without updating a page (or the README) that shows it fails here."""
    commands = _extension().cli_commands()
    shown = _shown_commands()
    assert len(shown) > 20, "the scan found almost no commands: is the pattern broken?"
    unknown = []
    for where, command, flag in shown:
        parser = commands.get(command)
        if parser is None:
            unknown.append(f"{where}: deqrmt {command} (no such command)")
            continue
        known = {s for action in parser._actions for s in action.option_strings}
        if flag not in known:
            unknown.append(f"{where}: deqrmt {command} {flag}")
    assert not unknown, f"pages show options the parser does not have: {sorted(set(unknown))}"


@needs_sphinx
def test_every_cli_example_is_for_a_command() -> None:
    """An example kept for a command that was renamed or removed is stale: it fails here."""
    commands = _extension().cli_commands()
    stale = sorted(set(_extension().CLI_EXAMPLES) - set(commands))
    assert not stale, f"CLI_EXAMPLES for commands `deqrmt --help` does not list: {stale}"


def test_gallery_scripts_compile_and_state_a_budget() -> None:
    scripts = sorted((DOCS / "gallery").glob("plot_*.py"))
    assert len(scripts) >= 6
    for script in [*scripts, *sorted((DOCS / "tutorials").glob("tutorial_*.py"))]:
        text = script.read_text(encoding="utf-8")
        compile(text, str(script), "exec")
        assert text.lstrip().startswith('"""'), f"{script.name}: no title docstring"
    for script in scripts:
        text = script.read_text(encoding="utf-8")
        assert "**Budget:**" in text, f"{script.name}: state its CPU budget"
        assert "machine()" in text, f"{script.name}: print the machine it ran on"


# --------------------------------------------------------------------------- building


def _copy_sources(dest: Path) -> Path:
    """docs/ without anything a build generates: the build writes only under ``dest``."""
    src = dest / "docs"
    shutil.copytree(DOCS, src, ignore=shutil.ignore_patterns(*GENERATED, "__pycache__"))
    return src


def _build(tmp: Path, *extra: str) -> tuple[Path, subprocess.CompletedProcess[str]]:
    src = _copy_sources(tmp)
    out = tmp / "html"
    paths = [str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}
    env.pop("DEQRMT_GALLERY_SIZE", None)  # the default (small) sizes
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", *extra,
         "-d", str(tmp / "doctrees"), str(src), str(out)],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT,
        env=env,
        cwd=tmp,
        check=False,
    )  # fmt: skip
    return out, proc


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """The site, built once for this module without running the gallery."""
    reason = _sphinx_missing()
    if reason:
        pytest.skip(reason)
    return _build(tmp_path_factory.mktemp("site"), "-D", "plot_gallery=0")


def _failure(proc: subprocess.CompletedProcess[str]) -> str:
    return f"sphinx exited {proc.returncode}:\n{proc.stderr[-6000:]}"


def test_site_builds_without_warnings(site: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    out, proc = site
    assert proc.returncode == 0, _failure(proc)
    assert "WARNING" not in proc.stderr and "ERROR" not in proc.stderr, proc.stderr[-6000:]
    assert (out / "index.html").is_file()


def test_every_public_name_has_an_api_entry(
    site: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    out, proc = site
    assert proc.returncode == 0, _failure(proc)
    ext = _extension()
    missing = []
    for modname, names in ext.public_api().items():
        if not (out / "api" / f"{modname}.html").is_file():
            missing.append(modname)
        for name in names:
            page = out / "api" / f"{modname}.{name}.html"
            if not page.is_file():
                missing.append(f"{modname}.{name}")
                continue
            html = page.read_text(encoding="utf-8")
            if f'id="{modname}.{name}"' not in html and "The same object as" not in html:
                missing.append(f"{modname}.{name} (page without its entry)")
    assert not missing, f"public names without an API entry: {missing}"
    import deqrmt

    for name in deqrmt.__all__:  # the top-level entries show a signature and their sections
        html = (out / "api" / f"deqrmt.{name}.html").read_text(encoding="utf-8")
        obj = getattr(deqrmt, name)
        if inspect.isfunction(getattr(obj, "__wrapped__", obj)):
            assert 'class="sig-paren"' in html, name
            assert "Returns" in html and "Example" in html, name


def test_every_command_has_a_page_with_a_real_invocation(
    site: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    out, proc = site
    assert proc.returncode == 0, _failure(proc)
    commands = _extension().cli_commands()
    assert len(commands) >= 15
    for name in commands:
        page = out / "cli" / f"{name}.html"
        assert page.is_file(), f"no page for `deqrmt {name}`"
        html = page.read_text(encoding="utf-8")
        assert f"usage: deqrmt {name}" in html, name  # the parser's own --help text
        assert f"$ deqrmt {name}" in html, name  # a real invocation, with its output
    index = (out / "cli" / "index.html").read_text(encoding="utf-8")
    assert all(f'href="{name}.html"' in index for name in commands)


def test_theory_pages_show_generated_latex(
    site: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    out, proc = site
    assert proc.returncode == 0, _failure(proc)
    for page in ("deq", "ntk", "explicit", "sphere", "implicit_bias"):
        html = (out / "theory" / f"{page}.html").read_text(encoding="utf-8")
        assert "LaTeX printed by" in html, page
        assert 'class="math' in html, page
    deq = (out / "theory" / "deq.html").read_text(encoding="utf-8")
    assert r"\alpha_{*,4}^{2}" in deq  # α*₄ squared in α*₂: from the engine, not the slides
    spectra = (out / "theory" / "spectra.html").read_text(encoding="utf-8")
    assert 'class="math' in spectra and "Marchenko" in spectra
    assert "$ deqrmt spectrum" in spectra and "spike" in spectra  # its real output, at build
    for page in ("formulas", "json", "limits", "implicit_bias"):
        assert (out / f"{page}.html").is_file(), page


def test_no_page_loads_from_the_network(
    site: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    out, proc = site
    assert proc.returncode == 0, _failure(proc)
    remote = re.compile(r"<(?:script|link)[^>]+(?:src|href)=\"(?:https?:)?//", re.I)
    offenders = [
        p.relative_to(out).as_posix()
        for p in out.rglob("*.html")
        if remote.search(p.read_text(encoding="utf-8"))
    ]
    assert not offenders, offenders
    assert (out / "_static" / "mathjax" / "tex-chtml.js").is_file()


@pytest.mark.slow
def test_gallery_runs_and_embeds_its_figures(tmp_path: Path) -> None:
    """The full build (the README's command): every example and tutorial executed."""
    reason = _sphinx_missing()
    if reason:
        pytest.skip(reason)
    out, proc = _build(tmp_path)
    assert proc.returncode == 0, _failure(proc)
    examples = sorted((out / "auto_gallery").glob("plot_*.html"))
    assert len(examples) >= 6, [p.name for p in examples]
    for page in examples:
        html = page.read_text(encoding="utf-8")
        images = re.findall(r'src="(\.\./_images/sphx_glr_plot_[^"]+\.png)"', html)
        assert images, f"{page.name}: no embedded PNG"
        assert all((page.parent / img).is_file() for img in images), page.name
        assert "Total running time of the script" in html, page.name
        assert "machine:" in html, page.name
    tutorials = sorted((out / "auto_tutorials").glob("tutorial_*.html"))
    assert tutorials
    notebooks = list((out / "_downloads").rglob("tutorial_*.ipynb"))
    assert len(notebooks) >= len(tutorials)

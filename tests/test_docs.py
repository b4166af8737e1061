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
* The site in a real browser (``slow``): the full build served on 127.0.0.1 (a port the OS
  chooses), driven through Debian's ``chromium`` and ``chromium-driver`` with selenium: the home
  page shows the install line, the example and a figure that loaded; the search finds
  ``kernels``; the theory pages' math is rendered by MathJax (no raw ``$`` or ``\\(`` left); the
  ``spectrum`` CLI page shows ``--sigma-a2`` and ``0.1*x`` literally; every gallery image loaded.
  Screenshots of those pages are written next to the build (``screenshots/``, its path printed;
  ``DEQRMT_SITE_SCREENSHOTS=DIR`` writes them to DIR instead).  Outside CI a machine without
  chromium skips it with the reason; under ``CI=true`` it must run (.ci/run installs chromium).
"""

from __future__ import annotations

import functools
import http.server
import importlib.util
import inspect
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

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
    for command, examples in ext.cli_examples().items():
        module = f"src/deqrmt/cli/{command.replace('-', '_')}.py"
        for example in examples:  # each step names its own command (`design … > d.json`)
            for match in _COMMAND.finditer(f"deqrmt {example}"):
                for flag in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", match.group(2)):
                    shown.append((module, match.group(1), flag))
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
def test_the_cli_reference_lists_every_command(tmp_path: Path) -> None:
    """The CLI reference is generated from the parser: its index links a page for every command
    registered in ``COMMANDS`` (and no other), each with the examples its module declares.
    The README links to it and shows a hand-picked few (``tests/test_advertised.py``)."""
    from deqrmt.cli import COMMANDS

    ext = _extension()
    ext.generate_cli(tmp_path)  # the pages only: the examples run in the site build below
    index = (tmp_path / "cli" / "index.md").read_text(encoding="utf-8")
    linked = re.findall(r"^\| \[`([a-z-]+)`\]\(([a-z-]+)\.md\)", index, re.MULTILINE)
    assert [name for name, _ in linked] == list(COMMANDS)
    examples = ext.cli_examples()
    missing = [c for c in COMMANDS if not examples[c]]
    assert not missing, f"commands without EXAMPLES in their module: {missing}"
    for name, page in linked:
        text = (tmp_path / "cli" / f"{page}.md").read_text(encoding="utf-8")
        assert text.startswith(f"# deqrmt {name}\n") and f"usage: deqrmt {name}" in text
        assert "```{deqrmt-run}\n" + "\n".join(examples[name]) + "\n```" in text, name


def test_gallery_scripts_compile_and_state_a_budget() -> None:
    scripts = sorted((DOCS / "gallery").glob("plot_*.py"))
    assert len(scripts) >= 6
    for script in [*scripts, *sorted((DOCS / "tutorials").glob("tutorial_*.py"))]:
        text = script.read_text(encoding="utf-8")
        compile(text, str(script), "exec")
        # a raw docstring where the prose has :math:`…` roles
        assert text.lstrip().startswith(('"""', 'r"""')), f"{script.name}: no title docstring"
    for script in scripts:
        text = script.read_text(encoding="utf-8")
        assert "**Budget:**" in text, f"{script.name}: state its CPU budget"
        assert "machine()" in text, f"{script.name}: print the machine it ran on"


def _hand_written() -> list[Path]:
    """The files of docs/ a person writes (pages, gallery, tutorials, the extension, conf.py)."""
    return sorted(
        p
        for p in DOCS.rglob("*")
        if p.is_file()
        and p.suffix in (".md", ".rst", ".py")
        and p.relative_to(DOCS).parts[0] not in GENERATED
        and "__pycache__" not in p.parts
    )


def test_docs_name_no_issue_numbers_and_no_paths_outside_the_repository() -> None:
    """Users read these pages: they say what and why, not a tracker's number, and they point
    only to what a clone has (the papers by their links on the references page)."""
    offenders = []
    # the package's docstrings and comments too: the API reference and help() show them
    sources = sorted((ROOT / "src" / "deqrmt").rglob("*.py"))
    for path in [*_hand_written(), *sources]:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"\bissues? \d|shared/papers|\.\./shared/", line, re.IGNORECASE):
                offenders.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def _citation() -> dict[str, Any]:
    yaml = pytest.importorskip("yaml")
    data = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def test_the_references_page_and_citation_cff_agree() -> None:
    """One list of the papers: every title, author, year and link of CITATION.cff is on the
    references page (and in its BibTeX), and every "X et al., VENUE YEAR" that the docs, the
    README or the package's docstring write names that paper's first author."""
    cff = _citation()
    page = (DOCS / "references.md").read_text(encoding="utf-8")
    flat = " ".join(page.replace("*", "").split())
    bibtex = page.partition("```bibtex")[2]
    papers = cff["references"]
    assert len(papers) == 3
    first_author: dict[str, str] = {}
    for paper in papers:
        title = " ".join(paper["title"].split())
        assert title in flat, f"the references page lacks the title {title!r}"
        year = str(paper["year"])
        for author in paper["authors"]:
            name = f"{author['given-names']} {author['family-names']}"
            assert name in flat, f"{title[:40]}…: the references page lacks {name}"
            assert f"{author['family-names']}, {author['given-names']}" in bibtex, name
        assert paper["url"] in page, paper["url"]
        venue = re.search(r"\((ICML|HLD|NeurIPS) (\d{4})\)", paper["conference"]["name"])
        assert venue is not None and venue.group(2) == year, paper["conference"]["name"]
        first_author[f"{venue.group(1)} {year}"] = paper["authors"][0]["family-names"]
        assert f"({venue.group(1).lower()}{year})=" in page  # the anchor the pages link to
    assert f"version = {{{cff['version']}}}" in bibtex
    sources = [ROOT / "README.md", ROOT / "src" / "deqrmt" / "__init__.py", *_hand_written()]
    wrong = []
    for path in sources:
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r"(\w+) et al\.?,?\s+\(?((?:ICML|HLD|NeurIPS)\s+\d{4})", text):
            if first_author.get(" ".join(match.group(2).split())) != match.group(1):
                wrong.append(f"{path.relative_to(ROOT)}: {match.group(0)!r}")
    assert not wrong, f"citations naming the wrong first author: {wrong}"


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
        # the options table prints the help literally: no emphasis made from a `*`, no option
        # turned into an en dash, every option and quoted expression a code literal
        table = html[html.index("<table") : html.index("</table>")]
        assert "<em>" not in table, f"{name}: emphasis in the options table"
        assert not re.search(r"\u2013[a-z]", table), f"{name}: an option as an en dash"
        bare = re.findall(r'(?<!<span class="pre">)(?<![\w-])--[a-z][a-z0-9-]*', table)
        assert not bare, f"{name}: options outside code literals: {bare}"
    spectrum = (out / "cli" / "spectrum.html").read_text(encoding="utf-8")
    # 'max(x, 0.1*x)' as typed, in one code literal
    assert """<span class="pre">'max(x,</span> <span class="pre">0.1*x)'</span>""" in spectrum
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


@pytest.fixture(scope="module")
def full_site(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """The full build (the README's command), every example and tutorial executed: built once
    for the slow tests of this module that use it."""
    reason = _sphinx_missing()
    if reason:
        pytest.skip(reason)
    return _build(tmp_path_factory.mktemp("full-site"))


@pytest.mark.slow
def test_gallery_runs_and_embeds_its_figures(
    full_site: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    """The full build (the README's command): every example and tutorial executed."""
    out, proc = full_site
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


# --------------------------------------------------------------------------- a real browser


def _browser_missing() -> str | None:
    """Why the browser test cannot run here, or None."""
    if importlib.util.find_spec("selenium") is None:
        return "selenium is not installed (pip install -e '.[docs]')"
    for exe, package in (("chromium", "chromium"), ("chromedriver", "chromium-driver")):
        if shutil.which(exe) is None:
            return f"{exe} is not on PATH (apt-get install {package})"
    return None


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        pass


@pytest.fixture
def served(request: pytest.FixtureRequest) -> Iterator[tuple[Path, str]]:
    """The full build served over HTTP on 127.0.0.1, on a port the OS chooses; the server is
    shut down and its thread joined on every way out.  Without a browser to drive it, skipped
    (outside CI) or failed (under CI) before the build."""
    missing = _browser_missing()
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"CI runs the browser test (.ci/run installs chromium): {missing}")
        pytest.skip(missing)
    out, proc = request.getfixturevalue("full_site")
    assert proc.returncode == 0, _failure(proc)
    handler = functools.partial(_QuietHandler, directory=str(out))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="site-server", daemon=True)
    thread.start()
    try:
        yield out, f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=30)


def _chromium(profile: Path) -> Any:
    """Headless Debian chromium through its own chromium-driver (nothing is downloaded)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(shutil.which("chromium"))
    for arg in (
        "--headless=new",
        "--no-sandbox",  # CI runs as root, where chromium's sandbox refuses to start
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1280,1000",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(arg)
    service = Service(executable_path=str(shutil.which("chromedriver")))
    driver = webdriver.Chrome(service=service, options=options)
    driver.set_page_load_timeout(120)
    return driver


def _open(driver: Any, url: str) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(url)
    WebDriverWait(driver, 60).until(
        lambda d: d.execute_script("return document.readyState") == "complete"
    )


def _screenshot(driver: Any, shots: Path, name: str) -> None:
    """The whole page (the window stretched to the page's height), as a PNG."""
    driver.execute_script("window.scrollTo(0, 0);")
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1280, max(600, min(int(height), 12000)))
    driver.save_screenshot(str(shots / f"{name}.png"))
    driver.set_window_size(1280, 1000)


def _images_loaded(driver: Any) -> list[str]:
    """The page's images that did not load (each scrolled into view first: some are lazy)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    broken = []
    for img in driver.find_elements(By.CSS_SELECTOR, "article img"):
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", img)
        WebDriverWait(driver, 60).until(
            lambda d, i=img: d.execute_script("return arguments[0].complete", i)
        )
        if not driver.execute_script("return arguments[0].naturalWidth", img):
            broken.append(str(img.get_attribute("src")))
    return broken


def _text_outside_code(driver: Any) -> str:
    """The main article's text without code blocks, inline code and rendered math."""
    return str(
        driver.execute_script(
            """
            const article = document.querySelector('article').cloneNode(true);
            article.querySelectorAll('pre, code, script, style, mjx-container, .highlight')
                .forEach(e => e.remove());
            return article.textContent;
            """
        )
    )


def _math_rendered(driver: Any) -> int:
    """Wait for MathJax to finish typesetting; the number of rendered formulas."""
    driver.set_script_timeout(120)
    driver.execute_async_script(
        """
        const done = arguments[arguments.length - 1];
        const wait = () => (window.MathJax && MathJax.startup && MathJax.startup.promise)
            ? MathJax.startup.promise.then(() => done(true)) : setTimeout(wait, 100);
        wait();
        """
    )
    return int(driver.execute_script("return document.querySelectorAll('mjx-container').length"))


@pytest.mark.slow
def test_the_site_in_a_real_browser(served: tuple[Path, str], tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    out, base = served
    shots = Path(os.environ.get("DEQRMT_SITE_SCREENSHOTS") or out.parent / "screenshots")
    shots.mkdir(parents=True, exist_ok=True)
    print(f"screenshots of the site: {shots}")
    driver = _chromium(tmp_path / "chromium-profile")
    try:
        # the home page: the install line, the example with its output, a figure that loaded
        _open(driver, base + "index.html")
        home = driver.find_element(By.TAG_NAME, "article").text
        assert 'pip install -e ".[validate]"' in home
        assert "deqrmt.deq_coefficients(" in home and "tau_star =" in home  # code and output
        figures = driver.find_elements(By.CSS_SELECTOR, "article figure img")
        assert figures, "the home page shows no figure"
        assert not _images_loaded(driver), "the home page's figure did not load"
        assert "arxiv.org/abs/2402.02697" in driver.page_source
        _screenshot(driver, shots, "home")

        # the search page finds `kernels`
        _open(driver, base + "search.html?q=kernels")
        WebDriverWait(driver, 90).until(
            lambda d: d.find_elements(By.CSS_SELECTOR, "#search-results ul.search li")
        )
        hits = driver.find_elements(By.CSS_SELECTOR, "#search-results ul.search li")
        assert len(hits) >= 3, [h.text for h in hits]
        _screenshot(driver, shots, "search-kernels")

        # the theory pages (and the other pages with math): their math rendered, no raw TeX
        # delimiters left in the prose
        pages = [f"theory/{p.name}" for p in sorted((out / "theory").glob("*.html"))]
        for page in [*pages, "index.html", "references.html", "formulas.html"]:
            _open(driver, base + page)
            assert _math_rendered(driver) > 0, f"{page}: no rendered math"
            text = _text_outside_code(driver)
            for raw in ("$", "\\(", "\\[", "^{", "_{"):  # TeX, or notation meant as TeX
                assert raw not in text, f"{page}: raw {raw!r} in the text"
            if page == "theory/deq.html":
                _screenshot(driver, shots, "theory-deq")

        # the CLI reference prints the help literally: options and expressions as typed
        _open(driver, base + "cli/spectrum.html")
        table = driver.find_element(By.CSS_SELECTOR, "article table").text
        assert "--sigma-a2" in table and "0.1*x" in table and "'max(x, 0.1*x)'" in table
        assert not re.search(r"\u2013[a-z]", table), "an option rendered with an en dash"
        assert not driver.find_elements(By.CSS_SELECTOR, "article table em")
        _screenshot(driver, shots, "cli-spectrum")
        _open(driver, base + "cli/index.html")
        assert not re.search(r"\u2013[a-z]", _text_outside_code(driver))

        # every gallery image loaded
        pages = ["auto_gallery/index.html"] + [
            f"auto_gallery/{p.name}" for p in sorted((out / "auto_gallery").glob("plot_*.html"))
        ]
        for page in pages:
            _open(driver, base + page)
            assert driver.find_elements(By.CSS_SELECTOR, "article img"), f"{page}: no image"
            broken = _images_loaded(driver)
            assert not broken, f"{page}: images that did not load: {broken}"
            _screenshot(driver, shots, page.replace("/", "-").removesuffix(".html"))
    finally:
        driver.quit()

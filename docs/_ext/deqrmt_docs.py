"""Sphinx extension: the parts of the site that are generated from the code at build time.

* **API reference** — one page per public module (:data:`PUBLIC_MODULES`) and one per public name
  (the module's ``__all__``), each an ``autodoc`` entry, so the reference is the docstrings.  A
  public function or class without a docstring is a build warning (an error under ``-W``).
* **CLI reference** — one page per command that ``deqrmt --help`` lists, generated from
  ``deqrmt.cli.build_parser()``: the options table and the exact ``--help`` text, and the real
  invocations its module declares (``EXAMPLES``, :func:`cli_examples`) run in-process through
  ``deqrmt.cli.main`` at build time.  A command without an example is a build warning.
* ``deqrmt-run`` — a directive that runs ``deqrmt`` commands and shows their real output (and
  fails the build when the exit code is not the expected one).
* ``deqrmt-python`` — a directive that runs a Python snippet and shows it with its real output
  (the home page's example).
* ``deqrmt-math`` — a directive that runs a command printing LaTeX (``deqrmt derive … --latex``,
  ``deqrmt bias … --latex``) and renders its equations, optionally selected by label.

Every command runs with a temporary deqrmt cache (``DEQRMT_CACHE_DIR``, set for the whole build
by ``conf.py``) and in a temporary working directory per page, so a build never reads or writes
the user's cache or the source tree.  Nothing here is hand-maintained per public name or per
option: moving a module or adding an option needs no edit of the docs.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import io
import os
import re
import shlex
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

LOG = logging.getLogger(__name__)

#: The public modules whose ``__all__`` the API reference documents, in reading order.  The
#: top-level ``deqrmt`` is the main API; ``deqrmt.numeric`` and ``deqrmt.symbolic`` are layers
#: (see docs/architecture), not documented here.
PUBLIC_MODULES: tuple[str, ...] = (
    "deqrmt",
    "deqrmt.testing",
    "deqrmt.validate",
    "deqrmt.sweep",
    "deqrmt.cli",
)


#: Width of the generated ``--help`` text (argparse reads $COLUMNS).
HELP_COLUMNS = 88


# --------------------------------------------------------------------------- public names


def public_names(modname: str) -> list[str]:
    """The public names of a module: its ``__all__``, else the functions and classes it defines
    whose names do not start with an underscore."""
    module = importlib.import_module(modname)
    names = getattr(module, "__all__", None)
    if names is None:
        names = [
            name
            for name, obj in vars(module).items()
            if not name.startswith("_")
            and (inspect.isfunction(obj) or inspect.isclass(obj))
            and getattr(obj, "__module__", None) == modname
        ]
    return list(names)


def public_api() -> dict[str, list[str]]:
    """Module → its public names, for every module in :data:`PUBLIC_MODULES`."""
    return {mod: public_names(mod) for mod in PUBLIC_MODULES}


def _kind(obj: Any) -> str:
    if inspect.isclass(obj):
        return "exception" if issubclass(obj, BaseException) else "class"
    if callable(obj):
        return "function"
    return "data"


def _underline(title: str, char: str = "=") -> str:
    return f"{title}\n{char * max(len(title), 3)}\n"


def _write_if_changed(path: Path, text: str) -> None:
    """Write only when the text changed, so that Sphinx re-reads only what really changed."""
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _clean_stale(directory: Path, keep: Iterable[Path]) -> None:
    keep = {p.resolve() for p in keep}
    for path in directory.glob("*"):
        if path.is_file() and path.resolve() not in keep:
            path.unlink()


def generate_api(srcdir: Path) -> None:
    """``api/index.md``, one page per public module, one page per public name."""
    outdir = srcdir / "api"
    written: list[Path] = []
    api = public_api()
    index = [
        "# API reference\n",
        "Generated from the docstrings at build time: every name in a module's `__all__` has an",
        "entry (signature with types, what it returns, what it raises, an example that the test",
        "suite runs as a doctest).  `import deqrmt` is cheap: the functions load on first use.\n",
        "```{toctree}",
        ":maxdepth: 1\n",
        *PUBLIC_MODULES,
        "```\n",
    ]
    written.append(outdir / "index.md")
    _write_if_changed(outdir / "index.md", "\n".join(index))
    first_home: dict[int, str] = {}  # id(object) → the full name it is documented under
    for modname, names in api.items():
        module = importlib.import_module(modname)
        objects = {name: getattr(module, name) for name in names}
        entries = [n for n in names if _kind(objects[n]) != "data"]
        constants = [n for n in names if _kind(objects[n]) == "data"]
        lines = [
            _underline(modname),
            f".. automodule:: {modname}",
            "   :no-members:\n",
            f".. currentmodule:: {modname}\n",
        ]
        if entries:
            lines += [".. autosummary::", "   :nosignatures:\n", *(f"   {n}" for n in entries), ""]
        if constants:
            lines += [
                ".. rubric:: Constants\n",
                *(f"* :py:data:`{modname}.{n}`" for n in constants),
                "",
            ]
        lines += [".. toctree::", "   :hidden:\n", *(f"   {modname}.{n}" for n in names), ""]
        page = outdir / f"{modname}.rst"
        written.append(page)
        _write_if_changed(page, "\n".join(lines))
        for name in names:
            obj = objects[name]
            kind = _kind(obj)
            full = f"{modname}.{name}"
            if kind in ("function", "class", "exception") and not inspect.getdoc(obj):
                LOG.warning(
                    "deqrmt docs: public %s %s has no docstring (the API reference is the "
                    "docstrings: write one with Args/Returns/Raises/Example)",
                    kind,
                    full,
                )
            body = [_underline(full), f".. currentmodule:: {modname}\n"]
            home = first_home.get(id(obj)) if kind != "data" else None
            if home is not None:  # the same object, re-exported: document it once
                role = "exc" if kind == "exception" else "class" if kind == "class" else "func"
                body += [
                    f".. py:{'exception' if kind == 'exception' else kind}:: {name}",
                    "   :no-index:\n",
                    f"   The same object as :py:{role}:`{home}`, re-exported here.",
                ]
            elif kind == "class":
                body += [f".. autoclass:: {name}", "   :members:", "   :show-inheritance:"]
            elif kind == "exception":
                body += [f".. autoexception:: {name}", "   :show-inheritance:"]
            elif kind == "function":
                body += [f".. autofunction:: {name}"]
            else:
                body += [
                    f".. py:data:: {name}",
                    f"   :value: {_data_repr(obj)}",
                    "",
                    f"   A constant of :py:mod:`{modname}` ({type(obj).__name__}).",
                ]
            if kind != "data":
                first_home.setdefault(id(obj), full)
            page = outdir / f"{full}.rst"
            written.append(page)
            _write_if_changed(page, "\n".join(body) + "\n")
    _clean_stale(outdir, written)


def _data_repr(obj: Any) -> str:
    text = repr(obj)
    text = " ".join(text.split())
    return text if len(text) <= 200 else text[:197] + "..."


# --------------------------------------------------------------------------- the CLI


def cli_commands() -> dict[str, Any]:
    """Command name → its subparser, in ``deqrmt --help`` order (from the parser itself); a
    deprecated old name (``certify`` for ``enn-check``, ``deqrmt.cli.DEPRECATED``) has no page."""
    import argparse

    from deqrmt.cli import DEPRECATED, build_parser

    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return {k: v for k, v in action.choices.items() if k not in DEPRECATED}
    raise RuntimeError("deqrmt's parser has no subcommands")


def cli_examples() -> dict[str, tuple[str, ...]]:
    """Command name → its real invocations, as its module declares them (``EXAMPLES`` beside
    ``NAME``): ``CMD > FILE`` writes the standard output to FILE in the page's working directory
    (for a later step); ``cat > FILE <<EOF`` … ``EOF`` creates FILE first (shown on the page).
    Sizes are small: the whole CLI reference builds in about a minute on 2 cores."""
    out = {}
    for name in cli_commands():
        module = importlib.import_module(f"deqrmt.cli.{name.replace('-', '_')}")
        out[name] = tuple(getattr(module, "EXAMPLES", ()))
    return out


def _command_summaries() -> dict[str, str]:
    import argparse

    from deqrmt.cli import build_parser

    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            return {a.dest: a.help or "" for a in action._choices_actions}
    return {}


def _help_text(parser: Any) -> str:
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(HELP_COLUMNS)
    try:
        return parser.format_help()
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old


#: What the help text shows literally, as a code span: an existing `code span`, a quoted
#: expression or string ('max(x, 0.1*x)', "sensitivities"), an option (--sigma-a2, -o).  An
#: apostrophe inside a word (the DEQ's) is not a quote.
_LITERAL = re.compile(
    r"`[^`]+`"
    r"|(?<![\w'])'[^'\n]+'(?![\w'])"
    r'|(?<![\w"])"[^"\n]+"(?![\w"])'
    r"|(?<![\w-])--?[A-Za-z][\w-]*"
)
#: Markdown's punctuation that would otherwise become emphasis (*, _), a link ([ ]), HTML (< >),
#: math ($, with MyST's dollarmath), an entity (&) or an escape (\).
_MD_SPECIAL = re.compile(r"([\\*_\[\]<>$&`~#!])")


def _md_text(text: str) -> str:
    """Help text as Markdown that renders literally: options and expressions in code spans
    (no emphasis from ``*``, no dash or quote ligatures), every other Markdown character
    escaped, whitespace collapsed, ``|`` escaped for a table cell."""
    text = " ".join(text.split())
    out: list[str] = []
    pos = 0
    for match in _LITERAL.finditer(text):
        out.append(_MD_SPECIAL.sub(r"\\\1", text[pos : match.start()]))
        token = match.group(0)
        out.append(token if token.startswith("`") else _code_span(token))
        pos = match.end()
    out.append(_MD_SPECIAL.sub(r"\\\1", text[pos:]))
    return "".join(out).replace("|", "\\|")


def _code_span(text: str) -> str:
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _md_cell(text: str) -> str:
    return _md_text(text)


def _options_table(parser: Any) -> list[str]:
    import argparse

    rows = ["| argument | meaning | default |", "|---|---|---|"]
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        if action.option_strings:
            name = ", ".join(action.option_strings)
            if action.nargs != 0:
                name += f" {action.metavar or action.dest.upper()}"
        else:
            name = action.metavar or action.dest
        default = action.default
        shown = "" if default in (None, False, argparse.SUPPRESS) else _code_span(str(default))
        if action.required:
            shown = "required"
        help_text = _md_cell((action.help or "").replace("%(default)s", str(default)))
        if action.choices:
            listed = ", ".join(_code_span(str(c)) for c in action.choices)
            help_text += f" (one of {listed})"
        cell = " ".join(name.split()).replace("|", "\\|")
        rows.append(f"| {_code_span(cell)} | {help_text} | {shown} |")
    return rows


def generate_cli(srcdir: Path) -> None:
    """``cli/index.md`` and one page per command: options, ``--help``, a real invocation."""
    outdir = srcdir / "cli"
    written: list[Path] = []
    commands = cli_commands()
    summaries = _command_summaries()
    examples_of = cli_examples()
    from deqrmt.cli import EXIT_CODES, build_parser

    index = [
        "# Command-line reference\n",
        "Generated from `deqrmt.cli.build_parser()` at build time, so this reference and",
        "`deqrmt COMMAND --help` cannot disagree; every page runs a real invocation.\n",
        "| command | what it does |",
        "|---|---|",
        *(f"| [`{name}`]({name}.md) | {_md_cell(summaries.get(name, ''))} |" for name in commands),
        "",
        "## Exit codes\n",
        "| code | meaning |",
        "|---|---|",
        *(f"| {code} | {_md_cell(text)} |" for code, text in EXIT_CODES.items()),
        "",
        "## `deqrmt --help`\n",
        "```text",
        _help_text(build_parser()).rstrip(),
        "```\n",
        "```{toctree}",
        ":hidden:\n",
        *commands,
        "```\n",
    ]
    written.append(outdir / "index.md")
    _write_if_changed(outdir / "index.md", "\n".join(index))
    for name, sub in commands.items():
        examples = examples_of[name]
        if not examples:
            LOG.warning(
                "deqrmt docs: command %r has no example: add EXAMPLES to its module, beside NAME",
                name,
            )
        page = [
            f"# deqrmt {name}\n",
            f"{_md_cell(summaries.get(name, ''))}\n",
            "## Options\n",
            *_options_table(sub),
            "",
            "## Example\n",
        ]
        if examples:
            page += ["```{deqrmt-run}", *examples, "```", ""]
        page += [
            f"## `deqrmt {name} --help`\n",
            "```text",
            _help_text(sub).rstrip(),
            "```\n",
        ]
        path = outdir / f"{name}.md"
        written.append(path)
        _write_if_changed(path, "\n".join(page))
    _clean_stale(outdir, written)


# --------------------------------------------------------------------------- running commands


class CommandResult:
    def __init__(self, argv: list[str], code: int, stdout: str, stderr: str) -> None:
        self.argv, self.code, self.stdout, self.stderr = argv, code, stdout, stderr


def run_deqrmt(argv: Sequence[str], cwd: Path) -> CommandResult:
    """Run ``deqrmt ARGV`` in-process (``deqrmt.cli.main``) in ``cwd``; capture its streams."""
    from deqrmt.cli import main

    out, err = io.StringIO(), io.StringIO()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(argv))
    finally:
        os.chdir(old)
    return CommandResult(list(argv), code, out.getvalue(), err.getvalue())


def _page_dir(env: Any) -> Path:
    """One temporary working directory per page (files written by one step feed the next)."""
    dirs = env.app.__dict__.setdefault("_deqrmt_dirs", {})
    if env.docname not in dirs:
        dirs[env.docname] = Path(tempfile.mkdtemp(prefix="deqrmt-docs-page-"))
    return dirs[env.docname]


def _console(text: str, language: str) -> nodes.literal_block:
    block = nodes.literal_block(text, text)
    block["language"] = language
    return block


def _truncate(text: str, lines: int | None) -> str:
    if not lines:
        return text
    rows = text.splitlines()
    if len(rows) <= lines:
        return text
    return "\n".join(rows[:lines]) + f"\n… ({len(rows) - lines} more lines)\n"


class RunDirective(SphinxDirective):
    """Run ``deqrmt`` commands (one per content line) and show each with its real output.

    Options: ``:expect:`` the exit code of the last step (default 0; the others must exit 0),
    ``:lines:`` show at most this many lines of each output.
    """

    has_content = True
    option_spec = {"expect": int, "lines": directives.positive_int}

    def run(self) -> list[nodes.Node]:
        cwd = _page_dir(self.env)
        shown: list[str] = []
        lines = [line for line in self.content if line.strip()]
        steps: list[str | tuple[str, list[str]]] = []
        while lines:
            line = lines.pop(0)
            heredoc = _HEREDOC.fullmatch(line.strip())
            if heredoc is None:
                steps.append(line)
                continue
            body: list[str] = []
            while lines and lines[0].strip() != heredoc.group(2):
                body.append(lines.pop(0))
            lines = lines[1:]
            steps.append((heredoc.group(1), body))
        for i, step in enumerate(steps):
            last = i == len(steps) - 1
            if isinstance(step, tuple):
                fname, body = step
                text = "\n".join(body) + "\n"
                (cwd / fname).write_text(text, encoding="utf-8")
                shown.append(f"$ cat {fname}\n{text.rstrip()}")
                continue
            target = None
            if ">" in shlex.split(step):
                argv = shlex.split(step)
                k = argv.index(">")
                argv, target = argv[:k], argv[k + 1]
            else:
                argv = shlex.split(step)
            result = run_deqrmt(argv, cwd)
            expected = self.options.get("expect", 0) if last else 0
            if result.code != expected:
                LOG.warning(
                    "deqrmt docs: `deqrmt %s` exited %d (expected %d): %s",
                    step,
                    result.code,
                    expected,
                    (result.stderr or result.stdout).strip()[-500:],
                    location=self.get_location(),
                )
            if target is not None:
                (cwd / target).write_text(result.stdout, encoding="utf-8")
                shown.append(f"$ deqrmt {step}")
            else:
                text = _truncate(result.stdout + result.stderr, self.options.get("lines"))
                status = f"\n[exit {result.code}]" if result.code else ""
                shown.append(f"$ deqrmt {step}\n{text.rstrip()}{status}")
        return [_console("\n\n".join(shown) + "\n", "text")]


_HEREDOC = re.compile(r"cat > (\S+) <<(\w+)")


class PythonDirective(SphinxDirective):
    """Run a Python snippet (the directive's content) at build time and show it with what it
    printed, so an example's output on the page is the real one.  An exception is a build
    warning (an error under ``-W``) and its traceback is not shown as output."""

    has_content = True

    def run(self) -> list[nodes.Node]:
        code = "\n".join(self.content)
        out = io.StringIO()
        old = os.getcwd()
        os.chdir(_page_dir(self.env))
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(code, self.get_location(), "exec"), {"__name__": "__main__"})
        except Exception as exc:  # noqa: BLE001 - any failure of the example fails the build
            LOG.warning(
                "deqrmt docs: the example raised %s: %s",
                type(exc).__name__,
                exc,
                location=self.get_location(),
            )
            return []
        finally:
            os.chdir(old)
        return [_console(code + "\n", "python"), _console(out.getvalue(), "text")]


_LABEL = re.compile(r"\\label\{([^}]*)\}")


def latex_equations(text: str) -> list[tuple[str, str]]:
    """``(label, line)`` for each equation line of the align blocks in ``text``."""
    out: list[tuple[str, str]] = []
    inside = False
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith(r"\begin{align"):
            inside = True
            continue
        if line.startswith(r"\end{align"):
            inside = False
            continue
        if not inside or not line:
            continue
        match = _LABEL.search(line)
        label = match.group(1) if match else ""
        line = _LABEL.sub("", line).rstrip()
        if line.endswith(r"\\"):
            line = line[:-2].rstrip()
        out.append((label, line))
    return out


class MathDirective(SphinxDirective):
    """Render the LaTeX that a ``deqrmt`` command prints (``derive … --latex``, ``bias …
    --latex``), generated at build time: the equations as math, then their LaTeX source.

    Options: ``:labels:`` comma-separated equation labels to keep (default: all);
    ``:no-source:`` do not show the LaTeX source.
    """

    required_arguments = 1
    final_argument_whitespace = True
    option_spec = {"labels": directives.unchanged, "no-source": directives.flag}

    def run(self) -> list[nodes.Node]:
        argv = shlex.split(self.arguments[0])
        result = run_deqrmt(argv, _page_dir(self.env))
        if result.code != 0:
            LOG.warning(
                "deqrmt docs: `deqrmt %s` exited %d: %s",
                self.arguments[0],
                result.code,
                result.stderr.strip()[-500:],
                location=self.get_location(),
            )
            return []
        equations = latex_equations(result.stdout)
        wanted = [w.strip() for w in self.options.get("labels", "").split(",") if w.strip()]
        if wanted:
            known = {label for label, _ in equations}
            for w in wanted:
                if w not in known:
                    LOG.warning(
                        "deqrmt docs: `deqrmt %s` prints no equation labelled %r (it has: %s)",
                        self.arguments[0],
                        w,
                        ", ".join(sorted(known)),
                        location=self.get_location(),
                    )
            equations = [e for e in equations if e[0] in wanted]
        if not equations:
            LOG.warning(
                "deqrmt docs: `deqrmt %s` printed no equation",
                self.arguments[0],
                location=self.get_location(),
            )
            return []
        latex = " \\\\\n".join(line for _, line in equations)
        math = nodes.math_block(latex, latex, nowrap=False, number=None, docname=self.env.docname)
        math["label"] = None
        out: list[nodes.Node] = [math]
        if "no-source" not in self.options:
            source = "\n".join(line for _, line in equations)
            caption = nodes.paragraph()
            caption += nodes.Text("LaTeX printed by ")
            caption += nodes.literal(text=f"deqrmt {self.arguments[0]}")
            caption += nodes.Text(" at build time:")
            out += [caption, _console(source, "latex")]
        return out


# --------------------------------------------------------------------------- wiring


def _generate(app: Sphinx) -> None:
    srcdir = Path(app.srcdir)
    generate_api(srcdir)
    generate_cli(srcdir)


def _cleanup(app: Sphinx, exc: BaseException | None) -> None:
    for path in app.__dict__.get("_deqrmt_dirs", {}).values():
        shutil.rmtree(path, ignore_errors=True)


def setup(app: Sphinx) -> dict[str, Any]:
    # before autosummary and sphinx-gallery read anything (their handlers have priority 500)
    app.connect("builder-inited", _generate, priority=100)
    app.connect("build-finished", _cleanup)
    app.add_directive("deqrmt-run", RunDirective)
    app.add_directive("deqrmt-math", MathDirective)
    app.add_directive("deqrmt-python", PythonDirective)
    return {"version": "1", "parallel_read_safe": False, "parallel_write_safe": True}

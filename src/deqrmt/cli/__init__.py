"""The ``deqrmt`` command line: one module per command, registered in :data:`COMMANDS`.

A command module defines ``NAME``, ``EXAMPLES`` (real invocations, run for its page of the
CLI reference), ``register(subparsers)`` (adds its parser, with a description and help for
every option) and ``run(args) -> int``; it imports SymPy, mpmath or torch only inside ``run``,
so ``deqrmt --help`` and ``deqrmt coefficients`` never import torch.

``deqrmt`` with no arguments prints the help (the commands, the exit codes) on standard output
and exits 0, as pip, cargo and docker do: it is a request for help, not a mistake.

Exit codes (:data:`EXIT_CODES`):

====  ========================================================================================
0     success
1     a check ran and failed (``validate`` rejected the equivalents, ``enn-check`` failed)
2     bad input: any :class:`deqrmt.DeqrmtError` (one line ``deqrmt: error: Class: message``),
      a usage error, a refused or unwritable output file, a full disk on stdout, a missing
      ``[validate]`` extra; a closed pipe (``deqrmt … | head``) exits 2 silently
70    an internal error, i.e. a bug: one line, the traceback with ``DEQRMT_DEBUG=1``
130   interrupted (Ctrl-C): one line ``deqrmt: interrupted``
====  ========================================================================================

``DEQRMT_BUG_LOG=FILE`` appends a line to FILE on every exit 70 (the test suite fails on it).

Standard streams: a closed pipe (``| head``) exits 2 silently; a full disk (``>/dev/full``) or a
closed standard output (``>&-``) is the one line ``deqrmt: error: FileError: cannot write to
standard output: …`` and exit 2; with standard error closed (``2>&-``) the exit code is the
only report.  Ctrl-C at any moment after the interpreter has started ``main``: see
:mod:`deqrmt.cli._process`.

This module imports nothing heavy at the top: the console script enters :func:`main`, whose
first statement installs the SIGINT handler; argparse, the command modules and the engine are
imported after it.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from . import _process

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
    from types import ModuleType

    from .._errors import DeqrmtError

__all__ = ["COMMANDS", "EXIT_CODES", "build_parser", "main"]

#: The commands, in ``deqrmt --help`` order; adding one is one line.  Each is the module of this
#: package of the same name, with ``_`` for ``-`` (``enn-check`` → :mod:`.enn_check`).
COMMANDS: tuple[str, ...] = (
    "coefficients",
    "compare",
    "explicit",
    "sphere",
    "derive",
    "latex",
    "codegen",
    "design",
    "enn-check",
    "experiment",
    "validate",
    "spectrum",
    "predict",
    "risk",
    "check",
    "sweep",
    "kernels",
    "bias",
    "activations",
    "families",
)

#: Old command names kept for one release: old name → new name.  The old name still runs the
#: command (its own parser, listed in ``--help`` as deprecated), after a one-line note on stderr.
DEPRECATED: dict[str, str] = {"certify": "enn-check"}

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_BUG = 70
EXIT_INTERRUPTED = 130
EXIT_CODES = {
    EXIT_OK: "success",
    EXIT_CHECK_FAILED: "a check ran and failed (validate, enn-check)",
    EXIT_BAD_INPUT: "bad input, a refused or unwritable file, a missing extra, a closed pipe",
    EXIT_BUG: "internal error (a bug; DEQRMT_DEBUG=1 shows the traceback)",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C)",
}

_EPILOG = "exit codes: " + "; ".join(f"{k} {v}" for k, v in EXIT_CODES.items()) + "."


def _modules(only: str | None = None) -> dict[str, ModuleType]:
    import importlib

    names = COMMANDS if only is None else (only,)
    return {name: importlib.import_module(_module_name(name)) for name in names}


def _module_name(command: str) -> str:
    """The module of a command: ``enn-check`` → ``deqrmt.cli.enn_check``."""
    return f"{__name__}.{command.replace('-', '_')}"


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The ``deqrmt`` argument parser (imports no SymPy, mpmath or torch).

    ``only``: register that command alone (a run of one known command imports no other
    command's module; its parser, help and errors are the same as in the full parser's).
    """
    from .._version import __version__
    from ._common import HelpFormatter, Parser

    parser = Parser(
        prog="deqrmt",
        description="Derived high-dimensional equivalents of DEQ conjugate and neural tangent "
        "kernels (Ling et al., ICML 2024) and of explicit networks, to verified digits.",
        epilog=_EPILOG,
        formatter_class=HelpFormatter,
    )
    parser.add_argument(
        "--version", action="version", version=f"deqrmt {__version__}", help="print the version"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in _modules(only).values():
        module.register(sub)
    return parser


def _suggest_command(argv: list[str]) -> str | None:
    """The one-line error for an unknown command, with a suggestion; None if argv[0] is known."""
    if not argv or argv[0].startswith("-") or argv[0] in COMMANDS or argv[0] in DEPRECATED:
        return None
    import difflib

    close = difflib.get_close_matches(argv[0], COMMANDS, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else f"; commands: {', '.join(COMMANDS)}"
    return f"deqrmt: error: unknown command {argv[0]!r}{hint} (see deqrmt --help)"


def _dispatch(argv: list[str]) -> int:
    import importlib

    from .._text import print_stderr

    if argv[:1] == ["validate"] and any(a == "--enn" or a.startswith("--enn=") for a in argv):
        argv = ["enn-check", *argv[1:]]  # the older spelling `deqrmt validate --deq … --enn …`
    if not argv:  # `deqrmt` alone asks what it can do: the help, like pip, cargo, docker
        sys.stdout.write(build_parser().format_help())
        return EXIT_OK
    unknown = _suggest_command(argv)
    if unknown is not None:
        print_stderr(unknown)
        return EXIT_BAD_INPUT
    if argv[0] in DEPRECATED:
        print_stderr(
            f"deqrmt: note: `deqrmt {argv[0]}` is deprecated and will be removed in 0.2; "
            f"use `deqrmt {DEPRECATED[argv[0]]}`"
        )
    try:
        only = argv[0] if argv[0] in COMMANDS else None  # else: --help, --version, an alias
        args = build_parser(only).parse_args(argv)
    except SystemExit as e:  # --help, --version, or a usage error already printed
        return e.code if isinstance(e.code, int) else EXIT_BAD_INPUT
    module = importlib.import_module(_module_name(DEPRECATED.get(args.command, args.command)))
    _process.test_hold("main")
    return int(module.run(args))


def _error_line(e: DeqrmtError, argv: list[str] | None = None) -> str:
    from .._errors import ParseError, UnknownActivation
    from ._common import argv_hint, flag_names

    message = str(e)
    if not isinstance(e, (ParseError, UnknownActivation)):  # those quote the user's text
        message = flag_names(message)
        message += argv_hint(message, argv or [])
    return f"deqrmt: error: {type(e).__name__}: {message}"


def _log_bug(argv: Sequence[str], e: BaseException) -> None:
    import contextlib
    import os

    path = os.environ.get("DEQRMT_BUG_LOG")
    if not path:
        return
    with contextlib.suppress(OSError), open(path, "a", encoding="utf-8") as fh:
        fh.write(f"{type(e).__name__}: {e!s:.500} | argv={list(argv)!r:.500}\n")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``deqrmt`` console script; returns the exit code (see module doc).

    Without ``argv`` (the console script, ``python -m deqrmt``) the process is deqrmt's: the
    SIGINT handler is installed before anything else is imported (:mod:`._process`).  With
    ``argv`` (a library call, the tests) no signal handler is touched.
    """
    if argv is None:
        _process.take_over()
        _process.test_hold("setup")
    args = list(sys.argv[1:] if argv is None else argv)
    from .._text import SafeStream

    raw_stdout = sys.stdout
    sys.stdout = SafeStream(raw_stdout)
    try:
        _process.working()
        code = _dispatch(args)
        sys.stdout.flush()  # a full disk must be reported here, not at interpreter exit
    except BaseException as e:
        _process.finished()  # first: an interrupt from here on exits at once
        code = _outcome(e, args)
    finally:
        _process.finished()
        sys.stdout = raw_stdout
        _settle_stdout(raw_stdout)
    if code == EXIT_INTERRUPTED:
        _process.mark_announced()  # the command said so itself (`sweep`)
    elif _process.interrupt_raised():  # a library swallowed the KeyboardInterrupt and went on
        _process.announce_interrupt(_print_stderr)
        code = EXIT_INTERRUPTED
    return code


def _print_stderr(line: str) -> None:
    from .._text import print_stderr

    print_stderr(line)


def _outcome(e: BaseException, args: list[str]) -> int:
    """The exit code for an exception that ended the command (and its one line on stderr)."""
    import os

    from .._errors import DeqrmtError
    from .._text import print_stderr

    if isinstance(e, KeyboardInterrupt) or _interrupted(e) or _process.interrupt_raised():
        # A KeyboardInterrupt, also one that a C extension's callback (flint) wrapped in a
        # SystemError, or that a library turned into another exception.
        _process.announce_interrupt(print_stderr)
        return EXIT_INTERRUPTED
    if isinstance(e, BrokenPipeError):  # `deqrmt … | head`: the reader left; nothing to say
        return EXIT_BAD_INPUT
    if not isinstance(e, Exception):
        raise e  # SystemExit and the like: not ours to translate
    if isinstance(e, DeqrmtError):
        if os.environ.get("DEQRMT_DEBUG"):
            raise e
        print_stderr(_error_line(e, args))
        return EXIT_BAD_INPUT
    _log_bug(args, e)
    if os.environ.get("DEQRMT_DEBUG"):
        raise e
    print_stderr(
        f"deqrmt: internal error: {type(e).__name__}: {e} — this is a bug; rerun with "
        "DEQRMT_DEBUG=1 for the traceback"
    )
    return EXIT_BUG


def _interrupted(e: BaseException) -> bool:
    """Whether ``e`` wraps a KeyboardInterrupt: a C extension whose Python callback was
    interrupted raises ``SystemError(... returned a result with an exception set)`` from it."""
    seen: set[int] = set()
    cur: BaseException | None = e
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, KeyboardInterrupt):
            return True
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return False


def _settle_stdout(raw: Any) -> None:
    """Flush stdout and stderr; one that cannot be written any more (closed pipe, full disk)
    gets its file descriptor pointed at /dev/null, so that the interpreter's own flush at exit
    cannot fail too (which would print "Exception ignored" and exit 120)."""
    import contextlib
    import os

    for stream in (raw, sys.stderr):
        if stream is None:
            continue  # closed when the process started: nothing buffered
        try:
            stream.flush()
        except (OSError, ValueError):
            with contextlib.suppress(OSError, ValueError, AttributeError):
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, stream.fileno())
                os.close(devnull)

"""What the command modules share: the parser class, option helpers, error text, the extra.

Nothing here imports SymPy, mpmath or torch.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import re
from collections.abc import Iterator
from typing import Any, NoReturn

from .._errors import InvalidArgument, MissingExtra
from .._text import print_stderr
from .._untrusted import integer

__all__ = [
    "positive_int",
    "ARGUMENT_FLAGS",
    "HelpFormatter",
    "Parser",
    "add_command",
    "add_activation",
    "add_device",
    "add_dps",
    "add_force",
    "add_json",
    "add_mc",
    "add_workers",
    "how_proven",
    "add_plot",
    "add_quiet",
    "add_seed",
    "add_output",
    "add_problem",
    "add_trainable",
    "flag_for",
    "flag_names",
    "names",
    "print_stderr",
    "bar_enabled",
    "extra_imports",
    "require_extra",
    "require_validate_extra",
    "validate_extra",
]

#: A parser or an argument group of one (argparse's common base of both).
Options = argparse._ActionsContainer

#: Python argument name (as library messages write it, ``sigma_a2=…``) → command-line flag.
ARGUMENT_FLAGS: dict[str, str] = {
    "sigma_a2": "--sigma-a2",
    "sigma_b2": "--sigma-b2",
    "tau0": "--tau0",
    "dps": "--dps",
    "layers": "--layers",
    "starts": "--starts",
    "trainable": "--trainable",
    "kernel": "--kernel",
    "family": "--family",
    "seed": "--seed",
    "seeds": "--seeds",
    "ns": "--n",
    "draws": "--draws",
    "ratio": "--ratio",
    "n_train": "--n-train",
    "n_test": "--n-test",
    "export": "--export",
}
#: Switches a library message sets to True (``force=True``): the flag alone on the command line.
SWITCH_FLAGS: dict[str, str] = {"force": "--force", "mc": "--mc"}
#: Arguments whose value is one word, quoted in Python (``device='cuda'``), bare after the flag
#: (``--device cuda``, ``--scheduler tcp://HOST:PORT``).
WORD_FLAGS: dict[str, str] = {"device": "--device", "dtype": "--dtype", "scheduler": "--scheduler"}
_NAME = "|".join(sorted(map(re.escape, ARGUMENT_FLAGS), key=len, reverse=True))
_ASSIGNED = re.compile(rf"(?<![\w-])({_NAME})=")
_QUOTED = re.compile(rf"`({_NAME})`")
_NO_CENTER = re.compile(r"(?<![\w-])center=False\b")
_NO_CERTIFY = re.compile(r"(?<![\w-])certify=False\b")
#: ``store=…``: the argument itself, whatever its value (the flag alone: ``--store``)
_ANY_VALUE = re.compile(r"(?<![\w-])([A-Za-z_][A-Za-z0-9_]*)=…")
_SWITCH = re.compile(rf"(?<![\w-])({'|'.join(SWITCH_FLAGS)})=True\b")
_WORD = re.compile(rf"(?<![\w-])({'|'.join(WORD_FLAGS)})='([A-Za-z0-9_.:/-]+)'")


def flag_for(name: str) -> str:
    """The command-line flag of the library argument ``name``: ``ns`` → ``--n``,
    ``max_error`` → ``--max-error``."""
    return ARGUMENT_FLAGS.get(name) or "--" + name.replace("_", "-")


def flag_names(message: str) -> str:
    """``message`` with library argument names turned into flags: ``sigma_a2=2`` → ``--sigma-a2 2``.

    The forms a library message uses: ``name=VALUE`` (an argument in :data:`ARGUMENT_FLAGS`
    and its value), ```name``` (that argument named), ``name=…`` (any argument, whatever its
    value: ``store=…`` → ``--store``), ``force=True`` (a switch: ``--force``),
    ``device='cuda'`` (one word: ``--device cuda``) and ``center=False`` (``--no-center``).

    Example:
      >>> flag_names("expected 0 < sigma_a2 < 1, got sigma_a2=2; see `tau0`")
      'expected 0 < sigma_a2 < 1, got --sigma-a2 2; see `--tau0`'
      >>> flag_names("it exists; pass force=True, or give another store=…; use device='cpu'")
      'it exists; pass --force, or give another --store; use --device cpu'
    """
    message = _NO_CENTER.sub("--no-center", message)
    message = _NO_CERTIFY.sub("--no-certify", message)
    message = _ANY_VALUE.sub(lambda m: flag_for(m.group(1)), message)
    message = _SWITCH.sub(lambda m: SWITCH_FLAGS[m.group(1)], message)
    message = _WORD.sub(lambda m: f"{WORD_FLAGS[m.group(1)]} {m.group(2)}", message)
    message = _ASSIGNED.sub(lambda m: ARGUMENT_FLAGS[m.group(1)] + " ", message)
    return _QUOTED.sub(lambda m: f"`{ARGUMENT_FLAGS[m.group(1)]}`", message)


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows ``(default: …)`` unless the help already states the default or there is none."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (
            "default" in text.lower()
            or default is None
            or default is False
            or default == argparse.SUPPRESS
        ):
            return text
        return super()._get_help_string(action)


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``deqrmt …: error: …`` on stderr, exit code 2, and a
    hint where the mistake is a common one (:func:`usage_hint`)."""

    _argv: list[str] | None = None

    def parse_known_args(  # type: ignore[override]
        self, args: Any = None, namespace: Any = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self._argv = [str(a) for a in args] if args is not None else None
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        parser: argparse.ArgumentParser = self
        if message.startswith("unrecognized arguments") and self._argv:
            parser = self._command_parser(self._argv) or self
        hint = usage_hint(message, self._argv or [], parser, self)
        print_stderr(f"{self.prog}: error: {message}{hint} (see {parser.prog} --help)")
        raise SystemExit(2)

    def _command_parser(self, argv: list[str]) -> argparse.ArgumentParser | None:
        """The sub-command parser that ``argv`` names (its first known command)."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                for token in argv:
                    if token in action.choices:
                        return action.choices[token]  # type: ignore[no-any-return]
        return None


#: a decimal written with a comma, ``0,2``
_DECIMAL_COMMA = re.compile(r"[+-]?[0-9]+,[0-9]+")


def _options(*parsers: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    out: dict[str, argparse.Action] = {}
    for p in parsers:
        out.update({k: v for k, v in p._option_string_actions.items() if k.startswith("--")})
    return out


def usage_hint(
    message: str, argv: list[str], parser: argparse.ArgumentParser, root: argparse.ArgumentParser
) -> str:
    """A hint for a usage error: the flag meant (``--sigma_a2`` → ``--sigma-a2``), a list
    given with spaces (``--n 256 512`` → ``--n 256,512``), an expression the shell split
    (``max(x, 0)`` unquoted), a decimal comma (``0,2``)."""
    import difflib

    hints: list[str] = []
    if message.startswith("unrecognized arguments"):
        options = _options(parser, root)
        for token in message.split(":", 1)[1].split():
            if token.startswith("--"):
                flag = token.split("=", 1)[0]
                norm = flag.replace("_", "-").lower()
                match = norm if norm in options else None
                if match is None:
                    close = difflib.get_close_matches(norm, list(options), n=1, cutoff=0.7)
                    match = close[0] if close else None
                if match is not None:
                    hints.append(f"did you mean {match}?")
                continue
            if token not in argv:
                continue
            i = argv.index(token)
            before = argv[i - 2] if i >= 2 else ""
            action = options.get(before.split("=", 1)[0]) if before.startswith("--") else None
            if action is not None and action.nargs is None and not argv[i - 1].startswith("-"):
                values = [argv[i - 1]]
                for t in argv[i:]:
                    if t.startswith("-"):
                        break
                    values.append(t)
                hints.append(
                    f"{before} takes one value; for several, join them with commas: "
                    f"{before} {','.join(values)}"
                )
            elif argv[i - 1].count("(") > argv[i - 1].count(")"):
                hints.append(
                    "the shell split an expression at its spaces: quote it, "
                    f"'{argv[i - 1]} {token}'"
                )
    integral = "invalid int value" in message or "invalid integer value" in message
    for value in re.findall(r"'([^']*)'", message):
        if not integral and _DECIMAL_COMMA.fullmatch(value.strip()):
            hints.append(f"a decimal comma? write {value.strip().replace(',', '.')}")
    return "".join(f"; {h}" for h in dict.fromkeys(hints))


def argv_hint(message: str, argv: list[str]) -> str:
    """A hint for an error about a flag's value: a decimal comma, ``--sigma-a2 0,2``, which is
    read as the list 0, 2 where lists are allowed (the message names the flag)."""
    for i, token in enumerate(argv):
        flag, eq, inline = token.partition("=")
        value = inline if eq else (argv[i + 1] if i + 1 < len(argv) else "")
        if (
            flag.startswith("--")
            and flag in message
            and "decimal comma" not in message
            and _DECIMAL_COMMA.fullmatch(value.strip())
        ):
            fixed = value.strip().replace(",", ".")
            return f" (a decimal comma? write {flag} {fixed}; a comma separates a list)"
    return ""


def add_command(
    subparsers: Any, name: str, *, help: str | None, description: str, epilog: str | None = None
) -> argparse.ArgumentParser:
    """A sub-command parser with the shared formatter; its ``command`` default is ``name``.

    ``help=None`` leaves the command out of ``deqrmt --help``'s list (a deprecated name)."""
    listed = {} if help is None else {"help": help}
    p: argparse.ArgumentParser = subparsers.add_parser(
        name, description=description, epilog=epilog, formatter_class=HelpFormatter, **listed
    )
    p.set_defaults(command=name)
    return p


def add_activation(p: argparse.ArgumentParser, what: str = "the activation φ") -> None:
    p.add_argument(
        "activation",
        metavar="ACT",
        help=f"{what}: a library name (tanh, relu, leaky_relu(0.1), …; see `deqrmt activations`) "
        "or an expression in x such as 'max(x, 0.1*x)' or '0.5*gelu(x) + tanh(x)'",
    )


def add_problem(p: argparse.ArgumentParser, *, tau0: bool = True) -> None:
    """--sigma-a2, --sigma-b2 (and --tau0): exact numbers, given as decimals or fractions."""
    p.add_argument(
        "--sigma-a2",
        default="0.2",
        metavar="S",
        help="σ_a², the variance scale of the DEQ's weight A (exact: 0.2 means 1/5)",
    )
    p.add_argument(
        "--sigma-b2",
        default=None,
        metavar="S",
        help="σ_b², the variance scale of the input injection B (default: 1 − σ_a²)",
    )
    if tau0:
        p.add_argument(
            "--tau0",
            default="1",
            metavar="T",
            help="τ0 = √(tr C°/p), the data's normalised trace",
        )


def add_dps(p: Options, default: int = 30, *, help: str | None = None) -> None:
    """--dps N: significant digits (an ASCII integer; the library checks its range)."""
    p.add_argument(
        "--dps",
        type=integer,
        default=default,
        metavar="N",
        help=help or "significant digits to compute and report (only verified digits are shown)",
    )


#: The torch devices of ``--device``.
DEVICES = ("auto", "cpu", "cuda")


def add_device(p: Options, help: str) -> None:
    """--device auto|cpu|cuda (default auto); ``help`` says what runs there."""
    p.add_argument("--device", default="auto", choices=DEVICES, help=help)


def add_seed(p: Options, help: str, *, metavar: str | None = None) -> None:
    """--seed S (default 0), an ASCII integer; ``help`` says what it seeds."""
    p.add_argument("--seed", type=integer, default=0, metavar=metavar, help=help)


def add_plot(p: Options, help: str) -> None:
    """--plot DIR (default: no plot); ``help`` names the figures.  With :func:`add_force`:
    the PNGs are written like every output (atomically, never over a file without --force)."""
    p.add_argument("--plot", default=None, metavar="DIR", help=help)


def add_mc(p: Options, help: str) -> None:
    """--mc (default: off): the command's Monte Carlo check; ``help`` says what it samples."""
    p.add_argument("--mc", action="store_true", help=help)


def add_quiet(p: Options) -> None:
    """--quiet: no progress bar.  Without it the bar is drawn on stderr when stderr is a
    terminal (never in a pipe, a file or ``--json``'s standard output)."""
    p.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress bar (default: a bar on stderr when it is a terminal)",
    )


def add_workers(p: Options) -> None:
    """--workers N: the Dask commands' worker count (an embedded cluster's processes, or how
    many workers of a running scheduler to wait for)."""
    p.add_argument(
        "--workers",
        type=positive_int,
        default=None,
        metavar="N",
        help="embedded cluster: worker processes (default: one per core); with --scheduler: "
        "wait for N workers to join (default 1)",
    )


def how_proven(certified: bool) -> str:
    """How a table's digits hold, for its title: Arb balls, or two evaluations that agree."""
    return "proven (Arb balls)" if certified else "verified (two evaluations agree)"


def bar_enabled(args: argparse.Namespace) -> bool | None:
    """``enabled`` for :func:`deqrmt._progress.progress_bar`: False with ``--quiet``, else None
    (drawn when stderr is a terminal or a notebook)."""
    return False if getattr(args, "quiet", False) else None


#: argparse bookkeeping, not an input (``quiet`` changes what stderr shows, never the result)
_NOT_INPUTS = {"command", "json", "func", "handler", "quiet"}


def print_json(args: argparse.Namespace, result: Any) -> None:
    """Print ``result`` (a mapping) in the one JSON convention (docs/json.md), with the
    command's arguments as given echoed under ``inputs``."""
    from .._json import dumps

    inputs = {k: v for k, v in vars(args).items() if k not in _NOT_INPUTS}
    print(dumps(getattr(args, "command", ""), inputs, result))


def add_json(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object instead of a table (default: off)",
    )


def add_trainable(p: argparse.ArgumentParser, help: str | None = None) -> None:
    p.add_argument(
        "--trainable",
        default="a,A",
        metavar="SET",
        help=help
        or "the DEQ parameters the NTK is taken over: a,A (the paper's K* = G*/(1 − Ġ*)), a,A,B "
        "or A,B",
    )


def add_output(p: argparse.ArgumentParser, what: str) -> None:
    """-o/--output (required; ``-`` is stdout) and --force."""
    p.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="PATH",
        help=f"the {what} to write (required; '-' writes to standard output)",
    )
    add_force(p)


def add_force(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--force",
        action="store_true",
        help="replace an existing output file (default: refuse); links, directories and "
        "devices are never replaced",
    )


def names(text: str) -> tuple[str, ...]:
    """A comma-separated list: ``"a, A"`` → ``("a", "A")``."""
    return tuple(v.strip() for v in text.split(",") if v.strip())


def number_list(text: str, flag: str, example: str) -> list[str]:
    """A comma-separated list of numbers as text (the library parses and checks each); an
    empty item (``"1,,2"``, ``""``) is refused with the flag's name and ``example``."""
    items = [v.strip() for v in text.split(",")]
    if not all(items):
        raise InvalidArgument(
            f"{flag} {text!r}: expected numbers separated by commas, e.g. {example}."
        )
    return items


def print_notes(
    short: list[str], reason: str | None, notes: tuple[str, ...], *, gap: bool = False
) -> None:
    """The notes under a table of proven/verified numbers: keys short of the digits asked
    for (after a blank line when ``gap``), why they are not certified, the result's notes."""
    if short:
        lead = "\n" if gap else ""
        print(f"{lead}note: fewer digits than requested are proven/verified for {', '.join(short)}")
    if reason:
        print(f"note: not certified ({reason}); the digits shown agree between two evaluations")
    for note in notes:
        print(f"note: {note}")


def sample_sizes(text: str) -> tuple[int, ...]:
    """argparse type of ``--n``: comma-separated integers, at least one (``"256,512"``)."""
    try:
        out = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}"
        ) from None
    if not out:
        raise argparse.ArgumentTypeError("expected at least one sample size")
    return out


#: What ``pip install 'deqrmt[validate]'`` provides, by import name.
VALIDATE_EXTRA = ("torch", "tqdm", "matplotlib")


def _missing_message(command: str, missing: str) -> str:
    return (
        f"`deqrmt {command}` needs the validate extra: pip install 'deqrmt[validate]' "
        f"(missing: {missing})."
    )


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent that fails to import; sys.modules[m] = None
        return False


def require_extra(command: str, modules: tuple[str, ...]) -> None:
    """Raise :class:`MissingExtra` (with the ``pip install`` line) now, before any work, if one
    of ``modules`` (from the [validate] extra: matplotlib for ``--plot``, …) is absent."""
    for mod in modules:
        if not _importable(mod):
            raise MissingExtra(_missing_message(command, mod))


def require_validate_extra(command: str, extra_modules: tuple[str, ...] = ()) -> None:
    """Raise :class:`MissingExtra` before any work if a [validate] dependency is absent."""
    require_extra(command, (*VALIDATE_EXTRA, *extra_modules))


@contextlib.contextmanager
def extra_imports(
    command: str, modules: tuple[str, ...], also: tuple[str, ...] = ()
) -> Iterator[None]:
    """Checks ``modules`` up front (:func:`require_extra`), and turns a failing import of one
    of them (or of ``also``) inside the block into :class:`MissingExtra` (a broken install
    found only on import)."""
    require_extra(command, modules)
    roots = {m.split(".")[0] for m in (*modules, *also)}
    try:
        yield
    except ImportError as e:
        if isinstance(e, MissingExtra) or (e.name or "").split(".")[0] not in roots:
            raise
        raise MissingExtra(_missing_message(command, e.name or "?")) from None


@contextlib.contextmanager
def validate_extra(command: str, extra_modules: tuple[str, ...] = ()) -> Iterator[None]:
    """:func:`extra_imports` for the whole [validate] extra (and scikit-learn's digits)."""
    with extra_imports(command, (*VALIDATE_EXTRA, *extra_modules), also=("sklearn",)):
        yield


def check_plot_target(directory: str, names: tuple[str, ...], *, force: bool) -> None:
    """Refuse now, before any work, a ``--plot DIR`` that the plots could not be written to:
    not a directory, or one of ``names`` there exists (without ``--force``), is a link, …"""
    import os

    from .._io import check_directory, check_output

    check_directory(directory)
    if os.path.isdir(directory):
        for name in names:
            check_output(os.path.join(directory, name), force=force)


def positive_int(text: str) -> int:
    """argparse type: an integer ≥ 1 (``--workers``, ``--tile``)."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return v

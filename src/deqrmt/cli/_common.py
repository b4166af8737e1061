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

from .._errors import MissingExtra
from .._text import print_stderr

__all__ = [
    "ARGUMENT_FLAGS",
    "HelpFormatter",
    "Parser",
    "add_command",
    "add_activation",
    "add_dps",
    "add_json",
    "add_output",
    "add_problem",
    "add_trainable",
    "flag_names",
    "names",
    "print_stderr",
    "extra_imports",
    "require_extra",
    "require_validate_extra",
    "validate_extra",
]

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
}
_NAME = "|".join(sorted(map(re.escape, ARGUMENT_FLAGS), key=len, reverse=True))
_ASSIGNED = re.compile(rf"(?<![\w-])({_NAME})=")
_QUOTED = re.compile(rf"`({_NAME})`")
_NO_CENTER = re.compile(r"(?<![\w-])center=False\b")


def flag_names(message: str) -> str:
    """``message`` with library argument names turned into flags: ``sigma_a2=2`` → ``--sigma-a2 2``.

    Example:
      >>> flag_names("expected 0 < sigma_a2 < 1, got sigma_a2=2; see `tau0`")
      'expected 0 < sigma_a2 < 1, got --sigma-a2 2; see `--tau0`'
    """
    message = _NO_CENTER.sub("--no-center", message)
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
    """argparse with one-line errors: ``deqrmt …: error: …`` on stderr, exit code 2."""

    def error(self, message: str) -> NoReturn:
        print_stderr(f"{self.prog}: error: {message} (see {self.prog} --help)")
        raise SystemExit(2)


def add_command(
    subparsers: Any, name: str, *, help: str, description: str, epilog: str | None = None
) -> argparse.ArgumentParser:
    """A sub-command parser with the shared formatter; its ``command`` default is ``name``."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        name, help=help, description=description, epilog=epilog, formatter_class=HelpFormatter
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


def add_dps(p: argparse.ArgumentParser, default: int = 30) -> None:
    p.add_argument(
        "--dps",
        type=int,
        default=default,
        metavar="N",
        help="significant digits to compute and report (only verified digits are shown)",
    )


#: argparse bookkeeping, not an input
_NOT_INPUTS = {"command", "json", "func", "handler"}


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

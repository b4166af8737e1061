"""A sweep spec's text: read from a regular file and parsed as TOML, both within budget.

:func:`read_spec` opens the file non-blocking and checks it with ``fstat`` before reading, so
a FIFO (which blocks until a writer comes), a device (``/dev/zero`` never ends) or a directory
is refused at once, and reads at most :data:`~deqrmt.sweep._limits.MAX_SPEC_BYTES`.
:func:`parse_toml` bounds the nesting on the text before ``tomllib`` sees it.
"""

from __future__ import annotations

import re
import tomllib
from typing import Any

from .._errors import BudgetExceeded, SpecError
from . import _limits
from ._limits import show

__all__ = ["parse_toml", "read_spec"]

#: What the nesting scan must see past: strings (their brackets and dots are text) and comments.
_TOKENS = re.compile(
    r'"""(?:[^\\]|\\.)*?"""'  # multi-line basic string
    r"|'''.*?'''"  # multi-line literal string
    r'|"(?:[^"\\\n]|\\.)*"'  # basic string
    r"|'[^'\n]*'"  # literal string
    r"|#[^\n]*"  # comment
    r"|[\[\]{}.\n]",
    re.S,
)


def _check_nesting(text: str, name: str) -> None:
    """Refuse a TOML text nested deeper than :data:`MAX_DEPTH`, before parsing it.

    tomllib recurses on brackets (``[[[…]]]`` is a RecursionError) and is quadratic in the parts
    of a dotted key (``a.a.a…`` with 10⁵ parts exhausted the machine's memory).  A dot counts
    as a key separator unless it sits between two digits (``0.25``, ``12:00:00.5``).
    """
    depth = deepest = dots = most = 0
    for m in _TOKENS.finditer(text):
        tok = m.group()
        if tok in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif tok in "]}":
            depth = max(depth - 1, 0)
        elif tok == ".":
            i = m.start()
            numeric = 0 < i < len(text) - 1 and text[i - 1].isdigit() and text[i + 1].isdigit()
            if not numeric:
                dots += 1
                most = max(most, dots)
        elif tok == "\n":
            dots = 0
        if deepest > _limits.MAX_DEPTH or most + 1 > _limits.MAX_DEPTH:
            what = "brackets [ { nest" if deepest > _limits.MAX_DEPTH else "a dotted key has"
            raise BudgetExceeded(
                f"{name}: {what} more than {_limits.MAX_DEPTH} levels (line "
                f"{text.count(chr(10), 0, m.start()) + 1}); a sweep spec needs 2 — write flat "
                "keys and one [kind] table per kind."
            )


def parse_toml(text: str, name: str) -> dict[str, Any]:
    """The parsed TOML of a spec text within the size and nesting budgets."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > _limits.MAX_SPEC_BYTES:
        raise BudgetExceeded(
            f"{name} is {size} bytes; the limit is {_limits.MAX_SPEC_BYTES} (docs/limits.md): "
            'a spec lists axes, not tasks — use ranges ("start:stop:count") and counts '
            "(seeds = 10)."
        )
    _check_nesting(text, name)
    try:
        return tomllib.loads(text)
    except RecursionError:  # the scan above should have refused it first
        raise BudgetExceeded(
            f"{name} nests too deep to parse; a sweep spec needs 2 levels."
        ) from None
    except ValueError as e:  # TOMLDecodeError, or an integer literal of > 4300 digits
        raise SpecError(f"{name} is not valid TOML: {str(e)[:200]}.") from None


def _read_bytes(path: str) -> bytes:
    """The bytes of the spec file at ``path``: a regular file of at most MAX_SPEC_BYTES.

    Opened by :func:`deqrmt._io.open_regular` (non-blocking, checked with ``fstat`` before any
    read), so a FIFO (which would block until a writer comes), a device (``/dev/zero`` never
    ends) or a directory is refused at once, and a file that grows while read is cut at the
    budget.
    """
    from .._io import open_regular

    limit = _limits.MAX_SPEC_BYTES
    name = f"the sweep spec {show(path)}"
    with open_regular(path, name, limit, error=SpecError) as fh:
        try:
            blob = fh.read(limit + 1)
        except OSError as e:
            raise SpecError(f"cannot read {name}: {e.strerror}.") from None
    if len(blob) > limit:
        raise BudgetExceeded(f"{name} grew past {limit} bytes while being read.")
    return blob


def read_spec(path: str) -> str:
    """The text of the spec file at ``path`` (a regular file, UTF-8, within the budget)."""
    try:
        return _read_bytes(path).decode("utf-8")
    except UnicodeDecodeError:
        raise SpecError(f"the sweep spec {show(path)} is not UTF-8 text.") from None

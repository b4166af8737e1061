"""The trainable set of a DEQ's NTK: which of a (readout), A (recurrent), B (input) are trained.

Its own small module, free of SymPy, so that the exact kernels on data (``deqrmt.kernels``)
check ``trainable`` without importing what :mod:`._problem` needs.
"""

from __future__ import annotations

from collections.abc import Iterable

from .. import _arguments
from .._errors import UnknownTrainable

__all__ = ["TRAINABLE_NAMES", "parse_trainable"]

TRAINABLE_NAMES = ("a", "A", "B")


def parse_trainable(trainable: str | Iterable[str]) -> tuple[str, ...]:
    """A trainable set as a tuple in the order (a, A, B): from ``("a", "A")`` or ``"a,A"``.

    Raises:
      UnknownTrainable: an empty set or a name outside (a, A, B) — ``"aA"`` is not ``a,A``.
    """
    return _arguments.name_set(
        trainable,
        "trainable",
        TRAINABLE_NAMES,
        error=UnknownTrainable,
        hint="choose a non-empty subset of a (readout), A (recurrent weights), B (input "
        "weights), e.g. ('a', 'A') or 'a,A,B'.",
    )

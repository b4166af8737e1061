"""A spec's values read and checked: exact numbers and ranges, integers, choices, names.

Each reader takes the value as TOML gave it and ``where`` (``[validate].n``), and refuses
anything else with a :class:`~deqrmt.SpecError` (or :class:`~deqrmt.BudgetExceeded` for a list
beyond :data:`deqrmt.sweep._limits.MAX_LIST`) that names the key and the value.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from .._errors import BudgetExceeded, InvalidArgument, SpecError
from . import _limits
from ._limits import show

__all__ = [
    "choice",
    "exact_int",
    "ints",
    "numbers",
    "in_range",
    "plain",
    "strings",
    "text",
    "unique",
    "where",
]


def where(table: str, key: str) -> str:
    return f"{key}" if table == "" else f"[{table}].{key}"


def plain(text: str) -> str:
    """``text`` as it is when it is a short printable key or path, else its bounded repr."""
    return text if len(text) <= 200 and text.isprintable() else show(text)


def text(x: Fraction) -> str:
    from ..numeric import exact_text

    return exact_text(x)


def numbers(value: Any, where: str) -> list[Fraction]:
    """A list, one number, or ``"start:stop:count"`` (count points, both ends included), each
    within :data:`MAX_LIST` values and written with ASCII digits only (``²`` or ``٣`` are
    digits to Python's ``int``, not to a spec)."""
    from ..numeric import number_grid

    items = value if isinstance(value, list) else [value]
    if len(items) > _limits.MAX_LIST:
        raise BudgetExceeded(
            f"{where} has {len(items)} values; the limit is {_limits.MAX_LIST} per list "
            "(docs/limits.md); split the sweep into several specs."
        )
    for v in items:
        if isinstance(v, str) and not v.isascii():
            raise SpecError(
                f"{where} = {show(value)}: a number is written with ASCII digits, '.', 'e', "
                "'/', '+', '-' and ':' only (e.g. \"0.1:0.5:5\", \"1/5\")."
            )
    try:
        return [Fraction(int(r.p), int(r.q)) for r in number_grid(value, where)]
    except InvalidArgument as e:
        raise SpecError(str(e)) from None
    except ValueError:  # what the engine's reader did not foresee is still the spec's fault
        raise SpecError(
            f'{where} = {show(value)}: expected a number, a list of numbers, or "start:stop:count".'
        ) from None


def in_range(values: list[Fraction], name: str, where: str, what: str) -> None:
    """The engine's accepted range of ``name`` (the CLI's rule), checked before any work."""
    from ..numeric import RANGES

    lo, hi = RANGES[name]
    for x in values:
        if x <= 0:
            raise SpecError(f"{where} = {text(x)}: every {what} must be > 0.")
        if not lo <= x <= hi:
            raise SpecError(
                f"{where} = {text(x)} is outside the accepted range [{float(lo):g}, "
                f"{float(hi):g}] of {what} (docs/limits.md)."
            )


def ints(value: Any, where: str, minimum: int, maximum: int | None = None) -> list[int]:
    items = value if isinstance(value, list) else [value]
    if not items:
        raise SpecError(f"{where} = []: give at least one value.")
    if len(items) > _limits.MAX_LIST:
        raise BudgetExceeded(
            f"{where} has {len(items)} values; the limit is {_limits.MAX_LIST} per list "
            "(docs/limits.md); split the sweep into several specs."
        )
    for v in items:
        if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
            raise SpecError(f"{where} = {show(value)}: expected integers ≥ {minimum}.")
        if maximum is not None and v > maximum:
            raise SpecError(f"{where} = {show(value)}: expected integers ≤ {maximum}.")
    return list(items)


def exact_int(value: Any, where: str, minimum: int, maximum: int | None = None) -> int:
    bad = isinstance(value, bool) or not isinstance(value, int) or value < minimum
    if bad or (maximum is not None and value > maximum):
        bound = f"in [{minimum}, {maximum}]" if maximum is not None else f"≥ {minimum}"
        raise SpecError(f"{where} = {show(value)}: expected an integer {bound}.")
    return int(value)


def choice(value: Any, where: str, choices: Sequence[str]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise SpecError(f"{where} = {show(value)}: choose one of {', '.join(choices)}.")
    return str(value)


def strings(value: Any, where: str) -> list[str]:
    items = value if isinstance(value, list) else [value]
    if not items or any(not isinstance(v, str) or not v.strip() for v in items):
        raise SpecError(f"{where} = {show(value)}: expected a non-empty string or list of strings.")
    if len(items) > _limits.MAX_LIST:
        raise BudgetExceeded(
            f"{where} has {len(items)} values; the limit is {_limits.MAX_LIST} per list "
            "(docs/limits.md); split the sweep into several specs."
        )
    return [v.strip() for v in items]


def unique(items: list[Any]) -> list[Any]:
    return list(dict.fromkeys(items))

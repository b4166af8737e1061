"""The one JSON convention of every ``deqrmt … --json`` output (docs/json.md).

Every document is an object with ``schema``, ``command``, ``version``, ``inputs`` (the
arguments exactly as given on the command line) and the command's result, in which exact
numbers are decimal strings (verified digits, or exact fractions such as ``"1/5"``);
``floats`` mirrors the result with each such string as a float, for plotting and numpy.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any, TypeAlias

__all__ = [
    "SCHEMA", "JSONObject", "JSONValue", "document", "dumps", "float_copy", "is_exact_number",
]  # fmt: skip

#: A JSON value as a record's ``to_dict()`` builds it: text (exact numbers as decimal strings),
#: a number, a boolean, None, a list or an object of JSON values.  Read-only containers
#: (``Sequence``, ``Mapping``) so that a ``list[str]`` or a ``dict[str, float]`` is one.
JSONValue: TypeAlias = (
    "str | int | float | bool | None | Sequence[JSONValue] | Mapping[str, JSONValue]"
)
#: A JSON object under construction: the result of every record's ``to_dict()``.
JSONObject: TypeAlias = "dict[str, JSONValue]"

SCHEMA = "deqrmt/1"
_EXACT = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$|^[+-]?\d+/\d+$")


def is_exact_number(value: Any) -> bool:
    """A decimal (``"0.3449…"``, ``"1e-5"``) or fraction (``"1/5"``) string."""
    return isinstance(value, str) and bool(_EXACT.match(value))


def float_copy(value: Any) -> Any:
    """``value`` with every exact-number string as a float; other leaves dropped (None)."""
    if is_exact_number(value):
        return float(Fraction(value)) if "/" in value else float(value)
    if isinstance(value, Mapping):
        out = {k: float_copy(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v is not None and v != {} and v != []} or None
    if isinstance(value, list | tuple):
        items = [float_copy(v) for v in value]
        return items if any(v is not None for v in items) else None
    return None


def document(command: str, inputs: Mapping[str, Any], result: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON object printed by ``deqrmt COMMAND --json``."""
    from ._version import __version__

    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "command": command,
        "version": __version__,
        "inputs": {k: v for k, v in inputs.items() if v is not None},
    }
    doc.update(result)
    doc["floats"] = float_copy(dict(result)) or {}
    return doc


def dumps(command: str, inputs: Mapping[str, Any], result: Mapping[str, Any]) -> str:
    """:func:`document` as indented JSON text (UTF-8, keys in the result's order)."""
    return json.dumps(document(command, inputs, result), indent=2, ensure_ascii=False)

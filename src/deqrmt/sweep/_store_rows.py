"""Rows read from a sweep's store, validated before anything uses them.

A store is untrusted input (it may come from a shared disk or a colleague): every value read
is checked for its type, numbers for being finite, JSON for parsing into an object within
:data:`~deqrmt.sweep._store_schema.MAX_JSON_DEPTH` levels; anything else is a
:class:`~deqrmt.StoreError` that names the store, the row and the column.
"""

from __future__ import annotations

import json
import math
from typing import Any

from .._errors import StoreError
from ._limits import show
from ._store_schema import COLUMNS, KINDS, MAX_JSON_DEPTH, Record

__all__ = ["ANOTHER_STORE", "RowReader", "depth"]

#: The fix every refusal of a store ends with: the argument (the CLI writes ``--store``).
ANOTHER_STORE = "give another store=…"


class RowReader:
    """Checks the values of the store named ``name`` (its shown path) as they are read."""

    def __init__(self, name: str) -> None:
        self.name = name

    def bad(self, key: Any, column: str, why: str) -> StoreError:
        """The error for a row ``key`` whose ``column`` is ``why``."""
        return StoreError(
            f"store {self.name}: the row {show(key)} has {column} {why}, which deqrmt never "
            f"writes (a store changed outside deqrmt); delete that row, or {ANOTHER_STORE}."
        )

    def check(self, value: Any, types: Any, column: str, key: Any, *, null: bool = False) -> Any:
        """``value`` if it is of ``types`` (None too with ``null``); a bool never is."""
        if value is None and null:
            return None
        if not isinstance(value, types) or isinstance(value, bool):
            raise self.bad(key, column, f"of type {type(value).__name__}")
        return value

    def number(self, value: Any, column: str, key: Any) -> float:
        """``value`` as a finite float."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.bad(key, column, f"of type {type(value).__name__}, not a number")
        if not math.isfinite(value):
            raise self.bad(key, column, "not finite")
        return float(value)

    def optional_number(self, value: Any, column: str, key: Any) -> float | None:
        return None if value is None else self.number(value, column, key)

    def kind(self, value: Any, key: Any) -> str:
        """``value`` if it is a task kind."""
        if value not in KINDS:
            raise self.bad(key, "kind", f"= {show(value)}, not a task kind")
        return str(value)

    def json(self, text: Any, column: str, key: Any) -> dict[str, Any]:
        """``text`` parsed as a JSON object of at most ``MAX_JSON_DEPTH`` levels."""
        if not isinstance(text, str):
            raise self.bad(key, column, f"of type {type(text).__name__}, not JSON text")
        try:
            value = json.loads(text)
        except RecursionError:
            raise self.bad(key, column, f"nested beyond {MAX_JSON_DEPTH} levels") from None
        except ValueError:
            raise self.bad(key, column, "that is not JSON") from None
        if not isinstance(value, dict):
            raise self.bad(key, column, f"that is JSON {type(value).__name__}, not an object")
        if depth(value) > MAX_JSON_DEPTH:
            raise self.bad(key, column, f"nested beyond {MAX_JSON_DEPTH} levels")
        return value

    def record(self, row: tuple[Any, ...]) -> Record:
        """One ``results`` row (its :data:`COLUMNS`, in order) as a checked :class:`Record`."""
        d = dict(zip(COLUMNS, row, strict=True))
        key = self.check(d["key"], str, "key", d["key"])
        stages = {} if d["stages"] in (None, "") else self.json(d["stages"], "stages", key)
        for name, v in stages.items():
            self.number(v, f"stages[{show(name)}]", key)
        outputs = None if d["outputs"] is None else self.json(d["outputs"], "outputs", key)
        error = self.check(d["error"], str, "error", key, null=True)
        if (outputs is None) == (error is None):
            raise self.bad(key, "outputs and error", "both set or both empty")
        pid = self.check(d["pid"], int, "pid", key, null=True)
        run_id = self.check(d["run_id"], int, "run_id", key, null=True)
        finished = self.number(d["finished"], "finished", key)
        return Record(
            key=key,
            kind=self.kind(d["kind"], key),
            inputs=self.json(d["inputs"], "inputs", key),
            outputs=outputs,
            error=error,
            seconds=self.optional_number(d["seconds"], "seconds", key),
            finished=finished,
            stages=stages,
            started=self.optional_number(d["started"], "started", key),
            host=self.check(d["host"], str, "host", key, null=True),
            pid=pid,
            worker=self.check(d["worker"], str, "worker", key, null=True),
            version=self.check(d["version"], str, "version", key),
            run_id=run_id,
        )


def depth(value: Any) -> int:
    """Nesting depth of a parsed JSON value, without recursion."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            deepest = max(deepest, d)
            stack.extend((x, d + 1) for x in v.values())
        elif isinstance(v, list):
            deepest = max(deepest, d)
            stack.extend((x, d + 1) for x in v)
    return deepest

"""A sweep's results as a table: rows for pandas, CSV and Parquet files.

One row per stored task, one column per input and per output, the same for every reader
(:meth:`ResultStore.to_rows`, :meth:`ResultStore.to_pandas`, ``deqrmt sweep SPEC --export
FILE``):

* ``key``, ``kind``;
* the task's inputs by name (``activation``, ``sigma_a2``, ``sigma_b2``, ``tau0``, ``n``, ``m``,
  ``seed``, …): a column of exact numbers (the spec's ``"0.1"``, ``"1/3"``) holds their
  floats, for plotting (:meth:`ResultStore.records` keeps the exact text); a list is
  comma-joined (``trainable`` ``"a,A"``); None is empty;
* ``error`` (``"Type: message"`` for a failed task, else empty) and ``seconds`` (the task's wall
  time: the one column that depends on the machine);
* the float of every output by its name (``tau_star``, ``alpha_1``, …, ``ck_error``,
  ``ntk_error``, …), for plotting;
* every other output, flattened with dots: ``outputs.values.alpha_1`` (the verified digits as
  text), ``outputs.certified``, ``outputs.moments.E_phi_prime``, …; lists are JSON text.

Rows are sorted by kind, then by the inputs (numbers by value), so the same store gives the
same bytes whatever order the tasks finished in.  A CSV cell of text that a spreadsheet would
run as a formula (starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return, and not a
number) is written with a leading ``'`` (the OWASP rule): a store is untrusted input.

Files are written by :func:`deqrmt._io.write_output`: atomically, never over an existing file
without ``force``, never onto a link or a device.  Parquet needs pyarrow, pandas needs pandas:
neither is a dependency, each is a :class:`~deqrmt.MissingExtra` naming what to install.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

from .._errors import InvalidArgument, MissingExtra
from .._io import check_output, write_output
from ._store_schema import Record

__all__ = ["FORMATS", "check_export", "export_table", "pandas_frame", "table_rows"]

#: file suffix → format
FORMATS = {".csv": "csv", ".parquet": "parquet"}
_FIRST_INPUTS = ("activation", "sigma_a2", "sigma_b2", "tau0", "n", "p", "m", "seed")
_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[+-]?[0-9]+/[0-9]+")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: Any) -> Any:
    """An input's value as one cell: scalars as they are, lists comma-joined (JSON if nested)."""
    if isinstance(value, list | tuple):
        if all(isinstance(v, str | int | float) and not isinstance(v, bool) for v in value):
            return ",".join(str(v) for v in value)
        return json.dumps(value, sort_keys=True)
    if isinstance(value, Mapping):
        return json.dumps(value, sort_keys=True)
    return value


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, Mapping):
        for k in sorted(value, key=str):
            _flatten(f"{prefix}.{k}", value[k], out)
    elif isinstance(value, list | tuple):
        out[prefix] = json.dumps(value, sort_keys=True)
    else:
        out[prefix] = value


def _row(rec: Record) -> tuple[dict[str, Any], list[str], list[str]]:
    """The row of one record, with the names of its input and float columns."""
    row: dict[str, Any] = {"key": rec.key, "kind": rec.kind}
    inputs = [str(k) for k in rec.inputs if k != "kind"]
    for k, v in rec.inputs.items():
        if k != "kind":
            row[str(k)] = _cell(v)
    row["error"] = rec.error
    row["seconds"] = rec.seconds
    outputs = rec.outputs or {}
    floats: list[str] = []
    values = outputs.get("floats")
    if isinstance(values, Mapping):
        for k, v in values.items():
            name = str(k) if str(k) not in row else f"floats.{k}"
            row[name] = v
            floats.append(name)
    for k in sorted(outputs, key=str):
        if k != "floats":
            _flatten(f"outputs.{k}", outputs[k], row)
    return row, inputs, floats


def _order(value: Any) -> tuple[int, Any]:
    """Numbers (and exact-number strings) by value, before text; None last."""
    if value is None:
        return (2, "")
    if isinstance(value, bool):
        return (1, str(value))
    try:
        if isinstance(value, int | float):
            return (0, Fraction(value))
        if isinstance(value, str) and _NUMBER.fullmatch(value.strip()):
            return (0, Fraction(value.strip()))
    except (ValueError, OverflowError, ZeroDivisionError):  # nan, inf, 1/0
        pass
    return (1, str(value))


def table_rows(records: Iterable[Record]) -> list[dict[str, Any]]:
    """One dict per record, every dict with every column, in the order the module doc gives."""
    rows = []
    inputs: set[str] = set()
    floats: set[str] = set()
    outs: set[str] = set()
    for rec in records:
        row, ins, fls = _row(rec)
        rows.append(row)
        inputs.update(ins)
        floats.update(fls)
        outs.update(k for k in row if k.startswith("outputs."))
    first = [k for k in _FIRST_INPUTS if k in inputs]
    input_columns = [*first, *sorted(inputs - set(first))]
    columns = ["key", "kind", *input_columns, "error", "seconds", *sorted(floats), *sorted(outs)]
    table = [{c: row.get(c) for c in columns} for row in rows]
    table.sort(key=lambda r: (r["kind"], *(_order(r[c]) for c in input_columns), r["key"]))
    for c in input_columns:  # "0.1", "1/3": floats, for plotting (records() keep the text)
        values = [r[c] for r in table if r[c] is not None]
        if values and all(isinstance(v, str) and _NUMBER.fullmatch(v.strip()) for v in values):
            for r in table:
                v = r[c]
                if isinstance(v, str):
                    r[c] = float(Fraction(v.strip()))
    return table


def pandas_frame(rows: list[dict[str, Any]]) -> Any:
    """``rows`` as a :class:`pandas.DataFrame` (pandas is optional: MissingExtra)."""
    try:
        import pandas as pd
    except ImportError:
        raise MissingExtra(
            "to_pandas needs pandas: pip install pandas (or read the rows with to_rows(), "
            "or write a CSV with export('results.csv'))."
        ) from None
    columns = list(rows[0]) if rows else ["key", "kind", "error", "seconds"]
    return pd.DataFrame(rows, columns=columns)


def _safe_text(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(_FORMULA_START) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


def _csv_bytes(rows: list[dict[str, Any]]) -> bytes:
    buffer = io.StringIO(newline="")
    columns = list(rows[0]) if rows else ["key", "kind", "error", "seconds"]
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow(["" if row[c] is None else _safe_text(row[c]) for c in columns])
    return buffer.getvalue().encode("utf-8")


def _arrow_type(values: list[Any]) -> str:
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        return "bool"
    if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return "int64"
    if present and all(isinstance(v, int | float) and not isinstance(v, bool) for v in present):
        return "float64"
    return "string"


def _parquet_bytes(rows: list[dict[str, Any]]) -> bytes:
    pa, pq = _pyarrow()
    columns = list(rows[0]) if rows else ["key", "kind", "error", "seconds"]
    arrays = {}
    for c in columns:
        values = [r[c] for r in rows]
        kind = _arrow_type(values)
        if kind == "string":
            values = [None if v is None else str(v) for v in values]
        elif kind == "float64":
            values = [None if v is None else float(v) for v in values]
        types = {"bool": pa.bool_(), "int64": pa.int64(), "float64": pa.float64()}
        arrays[c] = pa.array(values, type=types.get(kind, pa.string()))
    sink = io.BytesIO()
    pq.write_table(pa.table(arrays), sink)
    return sink.getvalue()


def _pyarrow() -> tuple[Any, Any]:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise MissingExtra(
            "a .parquet export needs pyarrow: pip install pyarrow (or export a .csv)."
        ) from None
    return pa, pq


def _format(path: str | os.PathLike[str]) -> str:
    name = os.fspath(path)
    suffix = os.path.splitext(name)[1].lower()
    if suffix not in FORMATS:
        raise InvalidArgument(
            f"export={name!r}: the file's suffix says the format: .csv or .parquet "
            "(e.g. results.csv)."
        )
    return FORMATS[suffix]


def check_export(path: str | os.PathLike[str], *, force: bool = False) -> str:
    """Refuse now, before any work, an export that could not be written: an unknown suffix,
    a .parquet without pyarrow, an existing file without ``force``; return the format."""
    fmt = _format(path)
    if fmt == "parquet":
        _pyarrow()
    check_output(path, force=force)
    return fmt


def export_table(
    records: Iterable[Record], path: str | os.PathLike[str], *, force: bool = False
) -> str:
    """Write ``records`` as a table to ``path`` (.csv or .parquet, by its suffix); return the
    path written (``-`` writes a CSV to standard output)."""
    name = os.fspath(path)
    fmt = "csv" if name == "-" else check_export(name, force=force)
    rows = table_rows(list(records))
    data = _csv_bytes(rows) if fmt == "csv" else _parquet_bytes(rows)
    return write_output(name, data, force=force)

r"""What a sweep's store holds: its SQL schema, the limits of a stored value, one row's record.

Tables:

``results``: one row per finished task: ``key`` (the task key, primary key), ``kind``,
``inputs`` (canonical JSON), ``outputs`` (JSON with exact decimal strings and floats, NULL on
error), ``error`` (``"Type: message"``, NULL on success), ``seconds`` (task wall time),
``stages`` (JSON: per-stage seconds), ``started``/``finished`` (Unix times), ``host``, ``pid``,
``worker`` (the Dask worker address), ``version`` (deqrmt), ``run_id`` (which run wrote it).

``runs``: one row per invocation: ``run_id``, ``started``, ``finished``, ``spec`` (path),
``spec_sha256``, ``scheduler``, ``tasks``, ``submitted``, ``completed``, ``failed``,
``interrupted``, ``version``.

A store holding any other object, or these tables with another schema, is refused
(:mod:`deqrmt.sweep._store`); every row read is checked by :mod:`deqrmt.sweep._store_rows`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from .._errors import InvalidArgument
from .._version import __version__
from ._limits import show

__all__ = [
    "APPLICATION_ID",
    "COLUMNS",
    "KINDS",
    "MAX_CELL",
    "MAX_JSON_DEPTH",
    "OBJECTS",
    "RUN_COLUMNS",
    "SCHEMA",
    "SIDE_FILES",
    "TABLES",
    "Record",
    "normal_sql",
]

#: The two tables, as ``sqlite_master`` holds their SQL.
TABLES = (
    """CREATE TABLE runs (
    run_id INTEGER PRIMARY KEY AUTOINCREMENT,
    started REAL NOT NULL,
    finished REAL,
    spec TEXT,
    spec_sha256 TEXT,
    scheduler TEXT,
    tasks INTEGER,
    submitted INTEGER,
    completed INTEGER,
    failed INTEGER,
    interrupted INTEGER,
    version TEXT NOT NULL
)""",
    """CREATE TABLE results (
    key TEXT PRIMARY KEY NOT NULL,
    kind TEXT NOT NULL,
    inputs TEXT NOT NULL,
    outputs TEXT,
    error TEXT,
    seconds REAL,
    stages TEXT,
    started REAL,
    finished REAL NOT NULL,
    host TEXT,
    pid INTEGER,
    worker TEXT,
    version TEXT NOT NULL,
    run_id INTEGER REFERENCES runs(run_id),
    CHECK ((outputs IS NULL) <> (error IS NULL))
)""",
)
#: The objects of a store, as ``sqlite_master`` lists them (``sqlite_sequence`` comes with
#: AUTOINCREMENT, the index with the primary key); a store holding anything else is refused.
OBJECTS = {
    ("table", "runs"),
    ("table", "results"),
    ("table", "sqlite_sequence"),
    ("index", "sqlite_autoindex_results_1"),
}
#: ``PRAGMA application_id`` of a store this version created ("dqrm"); 0 for older ones.
APPLICATION_ID = 0x6471726D
#: The columns of ``results``, in table order (a :class:`Record`'s fields).
COLUMNS = (
    "key", "kind", "inputs", "outputs", "error", "seconds", "stages", "started", "finished",
    "host", "pid", "worker", "version", "run_id",
)  # fmt: skip
#: The columns of ``runs``, in table order.
RUN_COLUMNS = (
    "run_id", "started", "finished", "spec", "spec_sha256", "scheduler", "tasks", "submitted",
    "completed", "failed", "interrupted", "version",
)  # fmt: skip
#: Characters of one stored text (a result's JSON is a few KB; a design's some 10 KB).
MAX_CELL = 4 * 2**20
#: Nesting of a stored JSON value (the deepest one deqrmt writes has 4 levels).
MAX_JSON_DEPTH = 32
#: The task kinds a row may have.
KINDS = ("coefficients", "exact", "validate", "design", "certify")  # = _spec.KINDS
#: SQLite's companion files of a store (``PATH-journal``, …).
SIDE_FILES = ("-journal", "-wal", "-shm")


def normal_sql(sql: str | None) -> str:
    """``sql`` with its whitespace normalised, as a schema is compared."""
    return " ".join((sql or "").split())


SCHEMA = {normal_sql(sql) for sql in TABLES}


@dataclasses.dataclass(frozen=True)
class Record:
    """One row of ``results``: a finished task, successful (``outputs``) or not (``error``)."""

    key: str
    kind: str
    inputs: Mapping[str, Any]
    outputs: Mapping[str, Any] | None
    error: str | None
    seconds: float | None
    finished: float
    stages: Mapping[str, float] = dataclasses.field(default_factory=dict)
    started: float | None = None
    host: str | None = None
    pid: int | None = None
    worker: str | None = None
    version: str = __version__
    run_id: int | None = None

    def __post_init__(self) -> None:
        if (self.outputs is None) == (self.error is None):
            raise InvalidArgument(
                f"a record has outputs or an error, not both or neither (key={show(self.key)})."
            )

    @property
    def ok(self) -> bool:
        return self.error is None

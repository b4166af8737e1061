r"""The results store of a sweep: one SQLite file.

Why SQLite rather than a Parquet dataset:

* **One file** per sweep, which is what a user copies, attaches or deletes.  A Parquet dataset
  is a directory of part files, one more per append, that later needs compacting.
* **Transactional appends from the driver.**  Each result is one ``INSERT`` in its own
  transaction: a crash, a lost worker or Ctrl-C between two results leaves every committed row
  intact and no half-written row.  ``PRIMARY KEY (key)`` makes a duplicate impossible rather
  than merely unlikely, and the resume query (which keys exist?) is an index lookup.
* **Readable without extra dependencies**: ``sqlite3`` is in the standard library and on every
  machine, so ``sqlite3 sweep.sqlite "SELECT json_extract(outputs, '$.floats.alpha_1') FROM
  results"`` works where pyarrow is not installed.  Row counts here are thousands, not
  billions, so a columnar format buys nothing.

The rollback journal (not WAL) is used so that the store stays a single file between runs.

Tables:

``results``: one row per finished task: ``key`` (the task key, primary key), ``kind``,
``inputs`` (canonical JSON), ``outputs`` (JSON with exact decimal strings and floats, NULL on
error), ``error`` (``"Type: message"``, NULL on success), ``seconds`` (task wall time),
``stages`` (JSON: per-stage seconds), ``started``/``finished`` (Unix times), ``host``, ``pid``,
``worker`` (the Dask worker address), ``version`` (deqrmt), ``run_id`` (which run wrote it).

``runs``: one row per invocation: ``run_id``, ``started``, ``finished``, ``spec`` (path),
``spec_sha256``, ``scheduler``, ``tasks``, ``submitted``, ``completed``, ``failed``,
``interrupted``, ``version``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sqlite3
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from .. import __version__
from .._errors import InvalidArgument

__all__ = ["Record", "ResultStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
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
);
CREATE TABLE IF NOT EXISTS results (
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
);
"""
_COLUMNS = (
    "key", "kind", "inputs", "outputs", "error", "seconds", "stages", "started", "finished",
    "host", "pid", "worker", "version", "run_id",
)  # fmt: skip


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
                f"a record has outputs or an error, not both or neither (key={self.key!r})."
            )

    @property
    def ok(self) -> bool:
        return self.error is None


class ResultStore:
    """A sweep's SQLite file, opened for appending from the driver (one process, one thread).

    Use as a context manager; every :meth:`add` commits on its own.

    Example:
      >>> import tempfile, os
      >>> with ResultStore(os.path.join(tempfile.mkdtemp(), "s.sqlite")) as st:
      ...     st.add(Record("k1", "coefficients", {"a": 1}, {"x": "0.5"}, None, 0.1, 0.0))
      ...     st.add(Record("k1", "coefficients", {"a": 1}, {"x": "0.5"}, None, 0.1, 0.0))
      ...     len(st)
      True
      False
      1
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # isolation_level=None: we open each transaction ourselves (BEGIN IMMEDIATE).
            self._db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=DELETE")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as e:
            raise InvalidArgument(
                f"store={str(self.path)!r} is not a usable sweep store ({e}); give another --store."
            ) from None
        except OSError as e:
            raise InvalidArgument(
                f"cannot create the store {str(self.path)!r}: {e.strerror}."
            ) from None

    # -- context manager ---------------------------------------------------------------------

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._db.close()

    # -- writing -----------------------------------------------------------------------------

    def add(self, record: Record) -> bool:
        """Insert ``record`` in its own transaction; False (nothing written) if its key exists."""
        row = (
            record.key,
            record.kind,
            _dumps(record.inputs),
            None if record.outputs is None else _dumps(record.outputs),
            record.error,
            record.seconds,
            _dumps(record.stages),
            record.started,
            record.finished,
            record.host,
            record.pid,
            record.worker,
            record.version,
            record.run_id,
        )
        with self._transaction():
            cur = self._db.execute(
                f"INSERT INTO results ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))}) "
                "ON CONFLICT(key) DO NOTHING",
                row,
            )
            return cur.rowcount == 1

    def delete_failed(self, keys: Iterable[str]) -> int:
        """Remove the error rows among ``keys`` (so that they run again); return how many."""
        ks = list(keys)
        n = 0
        with self._transaction():
            for i in range(0, len(ks), 500):
                chunk = ks[i : i + 500]
                cur = self._db.execute(
                    f"DELETE FROM results WHERE error IS NOT NULL AND key IN ({','.join('?' * len(chunk))})",
                    chunk,
                )
                n += cur.rowcount
        return n

    def begin_run(
        self, *, spec: str | None, spec_sha256: str, scheduler: str, tasks: int, submitted: int
    ) -> int:
        """Record the start of a run; return its ``run_id``."""
        with self._transaction():
            cur = self._db.execute(
                "INSERT INTO runs (started, spec, spec_sha256, scheduler, tasks, submitted, version) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (time.time(), spec, spec_sha256, scheduler, tasks, submitted, __version__),
            )
            assert cur.lastrowid is not None
            return int(cur.lastrowid)

    def end_run(
        self, run_id: int, *, scheduler: str, completed: int, failed: int, interrupted: bool
    ) -> None:
        """Record the end of run ``run_id``: where it ran and what it stored."""
        with self._transaction():
            self._db.execute(
                "UPDATE runs SET finished = ?, scheduler = ?, completed = ?, failed = ?, "
                "interrupted = ? WHERE run_id = ?",
                (time.time(), scheduler, completed, failed, int(interrupted), run_id),
            )

    # -- reading -----------------------------------------------------------------------------

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM results").fetchone()[0])

    def keys(self) -> set[str]:
        """Keys of every stored task (successful or failed)."""
        return {r[0] for r in self._db.execute("SELECT key FROM results")}

    def records(self, keys: Iterable[str] | None = None) -> list[Record]:
        """Stored records (all, or those among ``keys``), in the order they were written."""
        rows = self._db.execute(f"SELECT {', '.join(_COLUMNS)} FROM results ORDER BY rowid")
        wanted = None if keys is None else set(keys)
        return [_record(r) for r in rows if wanted is None or r[0] in wanted]

    def task_seconds(self) -> dict[tuple[str, str], float]:
        """(kind, activation) → the shortest stored successful run's seconds: what a task of
        that activation costs once warm (the first one on a worker also pays its set-up)."""
        out: dict[tuple[str, str], float] = {}
        rows = self._db.execute(
            "SELECT kind, inputs, seconds FROM results WHERE error IS NULL AND seconds IS NOT NULL"
        )
        for kind, inputs, secs in rows:
            key = (str(kind), str(json.loads(inputs).get("activation")))
            out[key] = min(out.get(key, math.inf), float(secs))
        return out

    def run_counts(self, run_id: int) -> tuple[int, int]:
        """(results, of which failures) that run ``run_id`` stored."""
        n, bad = self._db.execute(
            "SELECT COUNT(*), COUNT(error) FROM results WHERE run_id = ?", (run_id,)
        ).fetchone()
        return int(n), int(bad)

    def runs(self) -> list[dict[str, Any]]:
        """The ``runs`` table, oldest first."""
        cur = self._db.execute("SELECT * FROM runs ORDER BY run_id")
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r, strict=True)) for r in cur]

    # -- helpers -----------------------------------------------------------------------------

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db)


class _Transaction:
    """``BEGIN IMMEDIATE`` … ``COMMIT``, or ``ROLLBACK`` on any exception (Ctrl-C included)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._db.execute("COMMIT" if et is None else "ROLLBACK")


def _dumps(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, allow_nan=True)


def _record(row: tuple[Any, ...]) -> Record:
    d = dict(zip(_COLUMNS, row, strict=True))
    return Record(
        key=d["key"],
        kind=d["kind"],
        inputs=json.loads(d["inputs"]),
        outputs=None if d["outputs"] is None else json.loads(d["outputs"]),
        error=d["error"],
        seconds=d["seconds"],
        finished=d["finished"],
        stages=json.loads(d["stages"]) if d["stages"] else {},
        started=d["started"],
        host=d["host"],
        pid=d["pid"],
        worker=d["worker"],
        version=d["version"],
        run_id=d["run_id"],
    )

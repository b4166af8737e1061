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

The tables and the record of one row: :mod:`deqrmt.sweep._store_schema`.

**A store is untrusted input** (it may come from a shared disk or a colleague).  It is opened
only if it is a regular file (never through a symbolic link, which would write to the link's
target; never a FIFO or a device) and if its schema is exactly the one above (no other table,
view, trigger or index; :mod:`deqrmt.sweep._store_file`); every row read is validated (types,
JSON that parses within :data:`MAX_JSON_DEPTH` levels, sizes within :data:`MAX_CELL`;
:mod:`deqrmt.sweep._store_rows`) before anything uses it.  Anything else is a
:class:`deqrmt.StoreError` naming the store and the fix.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Any, NoReturn

from .._errors import StoreError
from .._version import __version__
from . import _store_file
from ._limits import show
from ._signals import deferred_interrupts, phase
from ._store_rows import ANOTHER_STORE, RowReader
from ._store_schema import (
    APPLICATION_ID,
    COLUMNS,
    MAX_CELL,
    MAX_JSON_DEPTH,
    OBJECTS,
    RUN_COLUMNS,
    SCHEMA,
    TABLES,
    Record,
    normal_sql,
)

__all__ = ["MAX_CELL", "MAX_JSON_DEPTH", "Record", "ResultStore"]


class ResultStore:
    """A sweep's SQLite file, opened for appending from the driver (one process, one thread).

    Use as a context manager; every :meth:`add` commits on its own.  To read a sweep back:
    :meth:`records` (the stored rows), :meth:`to_rows` (one flat dict per task: a table),
    :meth:`to_pandas` (that table as a DataFrame; needs pandas), :meth:`export` (a .csv or
    .parquet file); ``create=False`` refuses a path that holds no store instead of creating
    an empty one.

      >>> with ResultStore("examples/sweep.sqlite", create=False) as st:  # doctest: +SKIP
      ...     df = st.to_pandas()
      ...     df[df.kind == "coefficients"].plot(x="sigma_a2", y="alpha_1")

    Raises:
      StoreError: the path is a link, a FIFO, a device or a directory; the file is not a
        deqrmt store (another database, another schema, a view or a trigger); a row read does
        not validate; the store is locked or cannot be created.

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

    def __init__(self, path: str | os.PathLike[str], *, create: bool = True) -> None:
        try:
            self.path = Path(path)
        except TypeError:
            raise StoreError(f"a store is a file path, got {type(path).__name__}.") from None
        self._name = show(str(self.path))
        self._rows = RowReader(self._name)
        self._db: sqlite3.Connection | None = None
        created = False
        with deferred_interrupts():
            ident = _store_file.existing(self.path, self._name)
            if ident is None and not create:
                self._refuse(
                    "does not exist", "give the path of a sweep's store (SPEC.sqlite by default)"
                )
            if ident is None:
                ident = _store_file.create(self.path, self._name)
                created = True
            try:
                self._connect(ident, created)
            except BaseException:
                self.close()
                if created:  # leave nothing behind that the user did not have
                    with contextlib.suppress(OSError):
                        if os.lstat(self.path).st_size == 0:
                            os.unlink(self.path)
                raise

    # -- opening -----------------------------------------------------------------------------

    def _refuse(self, why: str, fix: str = f"{ANOTHER_STORE}, or move this file away") -> NoReturn:
        _store_file.refuse(self._name, why, fix)

    def _connect(self, ident: tuple[int, int], created: bool) -> None:
        _store_file.check_companions(self.path, self._name)
        try:
            # isolation_level=None: we open each transaction ourselves (BEGIN IMMEDIATE).
            self._db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            self._db.execute("PRAGMA trusted_schema=OFF")
            objects = self._db.execute(
                "SELECT type, name, tbl_name, sql FROM sqlite_master"
            ).fetchall()
            if not objects:
                self._db.execute("PRAGMA journal_mode=DELETE")
                with self._transaction():
                    for sql in TABLES:
                        self._db.execute(sql)
                    self._db.execute(f"PRAGMA application_id={APPLICATION_ID}")
            else:
                self._check_schema(objects)
                self._db.execute("PRAGMA journal_mode=DELETE")
            self._db.execute("PRAGMA synchronous=FULL")
            self._check_sizes()
        except sqlite3.OperationalError as e:
            if "locked" in str(e):
                self._refuse("is locked by another process", f"wait for it, or {ANOTHER_STORE}")
            self._refuse(f"cannot be used ({e})")
        except sqlite3.DatabaseError as e:
            self._refuse(f"is not a usable sweep store ({e})")
        _store_file.check_unchanged(self.path, self._name, ident)
        del created

    def _check_schema(self, objects: list[tuple[Any, ...]]) -> None:
        app = self._db_value("PRAGMA application_id")
        if app not in (0, APPLICATION_ID):
            self._refuse(f"is another application's SQLite database (application_id {app})")
        names = set()
        for kind, name, _table, sql in objects:
            names.add((kind, name))
            if (kind, name) not in OBJECTS:
                self._refuse(
                    f"holds the {show(kind)} {show(name)}, which a deqrmt store never has "
                    "(a tampered or foreign database)"
                )
            if kind == "table" and name in ("runs", "results") and normal_sql(sql) not in SCHEMA:
                self._refuse(f"has a table {name} with another schema than deqrmt's")
        if not {("table", "runs"), ("table", "results")} <= names:
            self._refuse("is another SQLite database (no deqrmt tables runs and results)")

    def _check_sizes(self) -> None:
        """No stored text is bigger than :data:`MAX_CELL` (checked once, by SQLite, without
        reading the values into this process)."""
        cols = ("key", "kind", "inputs", "outputs", "error", "stages", "host", "worker", "version")
        cond = " OR ".join(f"length({c}) > {MAX_CELL}" for c in cols)
        row = self._db_execute(f"SELECT rowid FROM results WHERE {cond} LIMIT 1").fetchone()
        if row is not None:
            self._refuse(
                f"has a row (rowid {row[0]}) with a value of more than {MAX_CELL} characters, "
                "which deqrmt never writes (a tampered store)"
            )

    # -- context manager ---------------------------------------------------------------------

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        if self._db is not None:
            with deferred_interrupts():
                self._db.close()
                self._db = None

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
        with deferred_interrupts(), self._transaction():
            phase("store-commit")
            cur = self._db_execute(
                f"INSERT INTO results ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))}) "
                "ON CONFLICT(key) DO NOTHING",
                row,
            )
            return cur.rowcount == 1

    def delete_failed(self, keys: Iterable[str]) -> int:
        """Remove the error rows among ``keys`` (so that they run again); return how many."""
        ks = list(keys)
        n = 0
        with deferred_interrupts(), self._transaction():
            for i in range(0, len(ks), 500):
                chunk = ks[i : i + 500]
                cur = self._db_execute(
                    f"DELETE FROM results WHERE error IS NOT NULL AND key IN ({','.join('?' * len(chunk))})",
                    chunk,
                )
                n += cur.rowcount
        return n

    def begin_run(
        self, *, spec: str | None, spec_sha256: str, scheduler: str, tasks: int, submitted: int
    ) -> int:
        """Record the start of a run; return its ``run_id``."""
        with deferred_interrupts(), self._transaction():
            cur = self._db_execute(
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
        with deferred_interrupts(), self._transaction():
            self._db_execute(
                "UPDATE runs SET finished = ?, scheduler = ?, completed = ?, failed = ?, "
                "interrupted = ? WHERE run_id = ?",
                (time.time(), scheduler, completed, failed, int(interrupted), run_id),
            )

    # -- reading (every row validated) -------------------------------------------------------

    def __len__(self) -> int:
        return int(self._db_value("SELECT COUNT(*) FROM results"))

    def keys(self) -> set[str]:
        """Keys of every stored task (successful or failed)."""
        out = set()
        for (key,) in self._db_execute("SELECT key FROM results"):
            out.add(self._rows.check(key, str, "key", "?"))
        return out

    def records(self, keys: Iterable[str] | None = None) -> list[Record]:
        """Stored records (all, or those among ``keys``), in the order they were written."""
        rows = self._db_execute(f"SELECT {', '.join(COLUMNS)} FROM results ORDER BY rowid")
        wanted = None if keys is None else set(keys)
        return [self._rows.record(r) for r in rows if wanted is None or r[0] in wanted]

    def to_rows(self, keys: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """The stored tasks (all, or those among ``keys``) as a table: one dict per task,
        each with every column (key, kind, the inputs, error, seconds, the output floats by
        name, then ``outputs.…``), sorted by kind and inputs (:mod:`deqrmt.sweep._export`)."""
        from ._export import table_rows

        return table_rows(self.records(keys))

    def to_pandas(self, keys: Iterable[str] | None = None) -> Any:
        """:meth:`to_rows` as a :class:`pandas.DataFrame` (pandas is optional: without it, a
        :class:`~deqrmt.MissingExtra` that says what to install)."""
        from ._export import pandas_frame

        return pandas_frame(self.to_rows(keys))

    def export(
        self,
        path: str | os.PathLike[str],
        keys: Iterable[str] | None = None,
        *,
        force: bool = False,
    ) -> str:
        """Write :meth:`to_rows` to ``path``: ``.csv``, or ``.parquet`` (needs pyarrow);
        atomically, never over an existing file without ``force``.  Returns the path."""
        from ._export import export_table

        return export_table(self.records(keys), path, force=force)

    def task_seconds(self) -> dict[tuple[str, str], float]:
        """(kind, activation) → the shortest stored successful run's seconds: what a task of
        that activation costs once warm (the first one on a worker also pays its set-up)."""
        out: dict[tuple[str, str], float] = {}
        rows = self._db_execute(
            "SELECT key, kind, inputs, seconds FROM results "
            "WHERE error IS NULL AND seconds IS NOT NULL"
        )
        for key, kind, inputs, secs in rows:
            kind = self._rows.kind(kind, key)
            act = self._rows.json(inputs, "inputs", key).get("activation")
            secs = self._rows.number(secs, "seconds", key)
            k = (kind, str(act))
            out[k] = min(out.get(k, math.inf), secs)
        return out

    def run_counts(self, run_id: int) -> tuple[int, int]:
        """(results, of which failures) that run ``run_id`` stored."""
        n, bad = self._db_execute(
            "SELECT COUNT(*), COUNT(error) FROM results WHERE run_id = ?", (run_id,)
        ).fetchone()
        return int(n), int(bad)

    def runs(self) -> list[dict[str, Any]]:
        """The ``runs`` table, oldest first."""
        cur = self._db_execute(f"SELECT {', '.join(RUN_COLUMNS)} FROM runs ORDER BY run_id")
        out = []
        for r in cur:
            for name, v in zip(RUN_COLUMNS, r, strict=True):
                if not (v is None or isinstance(v, int | float | str)):
                    self._refuse(f"has a run {show(r[0])} whose {name} is {type(v).__name__}")
            out.append(dict(zip(RUN_COLUMNS, r, strict=True)))
        return out

    # -- helpers -----------------------------------------------------------------------------

    def _db_execute(self, sql: str, params: Iterable[Any] = ()) -> sqlite3.Cursor:
        if self._db is None:
            raise StoreError(f"store {self._name} is closed.")
        try:
            return self._db.execute(sql, tuple(params))
        except sqlite3.OperationalError as e:
            raise _operational_error(self._name, e, "used") from None
        except sqlite3.DatabaseError as e:
            raise StoreError(f"store {self._name} is not a usable sweep store ({e}).") from None

    def _db_value(self, sql: str) -> Any:
        row = self._db_execute(sql).fetchone()
        return None if row is None else row[0]

    def _transaction(self) -> _Transaction:
        if self._db is None:
            raise StoreError(f"store {self._name} is closed.")
        return _Transaction(self._db, self._name)


def _operational_error(name: str, e: sqlite3.OperationalError, verb: str) -> StoreError:
    """The one-line error for SQLite's OperationalError: another process holds the lock, or
    the store cannot be ``verb`` (used, written) at all."""
    if "locked" in str(e):
        return StoreError(
            f"store {name} is locked by another process; wait for it, or {ANOTHER_STORE}."
        )
    return StoreError(f"store {name} cannot be {verb} ({e}).")


class _Transaction:
    """``BEGIN IMMEDIATE`` … ``COMMIT``, or ``ROLLBACK`` on any exception (Ctrl-C included)."""

    def __init__(self, db: sqlite3.Connection, name: str) -> None:
        self._db = db
        self._name = name

    def __enter__(self) -> None:
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as e:
            raise _operational_error(self._name, e, "written") from None

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        if et is None:
            try:
                self._db.execute("COMMIT")
                return
            except sqlite3.DatabaseError as e:
                self._db.execute("ROLLBACK")
                raise StoreError(f"store {self._name} cannot be written ({e}).") from None
        self._db.execute("ROLLBACK")
        if isinstance(ev, sqlite3.DatabaseError):
            raise StoreError(f"store {self._name} cannot be written ({ev}).") from None


def _dumps(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, allow_nan=True)

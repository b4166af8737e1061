"""Edges of the sweep's result store and its table export: refused paths, foreign databases,
a store used after close, failed transactions, and the cells of a table (lists, mappings,
numbers that do not order, the Parquet column types).

Every expected value is written out by hand (the SQL of a foreign database, the cells a
reader sees); nothing is produced by the code under test.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from deqrmt import InvalidArgument, MissingExtra, StoreError
from deqrmt.sweep import _export
from deqrmt.sweep._store import ResultStore
from deqrmt.sweep._store_schema import TABLES, Record


def _record(key: str, inputs: dict[str, Any], **outputs: Any) -> Record:
    return Record(
        key, "coefficients", inputs, {"floats": outputs} if outputs else {}, None, 0.1, 0.0
    )


# -- opening -----------------------------------------------------------------------------------


def test_a_store_path_of_the_wrong_type_is_refused_by_name() -> None:
    with pytest.raises(StoreError, match=r"a store is a file path, got int\."):
        ResultStore(123)  # type: ignore[arg-type]


def test_a_store_that_cannot_be_made_leaves_no_empty_file_behind(tmp_path: Path) -> None:
    # A planted link at the journal's path: SQLite would write through it, so the new store is
    # refused, and the empty file created a moment before is removed (the user had nothing).
    path = tmp_path / "s.sqlite"
    os.symlink(tmp_path / "elsewhere", f"{path}-journal")
    with pytest.raises(StoreError, match="companion .*symbolic link"):
        ResultStore(path)
    assert not path.exists()
    assert not (tmp_path / "elsewhere").exists()


def test_a_sqlite_database_without_the_results_table_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "half.sqlite"
    db = sqlite3.connect(path)
    db.execute(TABLES[0])  # `runs` alone
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="another SQLite database .*no deqrmt tables"):
        ResultStore(path)
    assert path.stat().st_size > 0  # the user's file is left as it was


def test_a_run_with_a_blob_cell_is_refused_when_read(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with ResultStore(path) as st:
        st.begin_run(spec="s.toml", spec_sha256="0" * 64, scheduler="x", tasks=1, submitted=1)
    db = sqlite3.connect(path)
    db.execute("UPDATE runs SET scheduler = X'00ff'")
    db.commit()
    db.close()
    with ResultStore(path) as st, pytest.raises(StoreError, match="whose scheduler is bytes"):
        st.runs()


def test_a_closed_store_says_so(tmp_path: Path) -> None:
    st = ResultStore(tmp_path / "s.sqlite")
    st.close()
    st.close()  # a second close is a no-op
    with pytest.raises(StoreError, match=r"is closed\."):
        st.keys()
    with pytest.raises(StoreError, match=r"is closed\."):
        st.add(_record("k", {"a": 1}, x=1.0))


def test_a_table_dropped_by_another_process_is_a_one_line_error(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with ResultStore(path) as st:
        other = sqlite3.connect(path)
        other.execute("DROP TABLE results")
        other.commit()
        other.close()
        with pytest.raises(StoreError, match=r"cannot be used \(no such table: results\)"):
            st.keys()
        with pytest.raises(StoreError, match=r"cannot be used \(no such table: results\)"):
            st.add(_record("k", {"a": 1}, x=1.0))


def test_a_failed_transaction_is_rolled_back(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with ResultStore(path) as st:
        assert st.add(_record("kept", {"a": 1}, x=1.0))
        # A database error inside a transaction: rolled back, reported as a StoreError.
        with pytest.raises(StoreError, match=r"cannot be written \(disk I/O"), st._transaction():
            st._db_execute("DELETE FROM results")
            raise sqlite3.DatabaseError("disk I/O error")
        # Any other exception: rolled back and passed on as it is.
        with pytest.raises(KeyError), st._transaction():
            st._db_execute("DELETE FROM results")
            raise KeyError("x")
        assert st.keys() == {"kept"}


# -- the table -------------------------------------------------------------------------------


def test_list_and_mapping_inputs_become_json_cells() -> None:
    rows = _export.table_rows(
        [
            _record("k1", {"a": [[1, 2], [3]], "b": {"y": 2, "x": 1}, "c": ["u", 1]}, x=1.0),
        ]
    )
    (row,) = rows
    assert row["a"] == "[[1, 2], [3]]"  # nested: JSON
    assert row["b"] == '{"x": 1, "y": 2}'  # a mapping: JSON with sorted keys
    assert row["c"] == "u,1"  # flat: comma-joined


def test_rows_order_numbers_then_booleans_and_text_then_none() -> None:
    # The column holds numbers, a bool, text that is not a number (nan, "1/0") and None: the
    # numbers sort by value first, then the rest as text, None last.
    values = [True, 2, "nan", 0.5, None, "1/0", "abc"]
    recs = [_record(f"k{i}", {"v": v}, x=1.0) for i, v in enumerate(values)]
    got = [r["v"] for r in _export.table_rows(recs)]
    assert got == [0.5, 2, "1/0", True, "abc", "nan", None]


def test_to_pandas_without_pandas_names_the_extra(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)
    with (
        ResultStore(tmp_path / "s.sqlite") as st,
        pytest.raises(MissingExtra, match="pip install pandas"),
    ):
        st.to_pandas()


def test_an_unknown_export_suffix_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument, match=r"\.csv or \.parquet"):
        _export.check_export(tmp_path / "t.xlsx")


def test_parquet_without_pyarrow_names_the_extra(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(MissingExtra, match="pip install pyarrow"):
        _export.check_export(tmp_path / "t.parquet")


@pytest.mark.parametrize(
    ("values", "kind"),
    [
        ([True, None, False], "bool"),
        ([1, None, 3], "int64"),
        ([1, 2.5, None], "float64"),
        ([1, True], "string"),  # a bool among ints is not an int column
        ([None, None], "string"),
        (["a", 1.5], "string"),
    ],
)
def test_parquet_column_types(values: list[Any], kind: str) -> None:
    assert _export._arrow_type(values) == kind


def _fake_pyarrow(monkeypatch) -> dict[str, Any]:
    """A stand-in for pyarrow that records the arrays it is given and writes them as JSON (the
    test checks the columns and their types, not pyarrow's encoding)."""
    seen: dict[str, Any] = {}
    pa = types.ModuleType("pyarrow")
    pa.bool_ = lambda: "bool"  # type: ignore[attr-defined]
    pa.int64 = lambda: "int64"  # type: ignore[attr-defined]
    pa.float64 = lambda: "float64"  # type: ignore[attr-defined]
    pa.string = lambda: "string"  # type: ignore[attr-defined]
    pa.array = lambda values, type: (type, list(values))  # type: ignore[attr-defined]  # noqa: A002
    pa.table = lambda arrays: dict(arrays)  # type: ignore[attr-defined]
    pq = types.ModuleType("pyarrow.parquet")

    def write_table(table: dict[str, Any], sink: Any) -> None:
        seen.update(table)
        sink.write(json.dumps(table).encode())

    pq.write_table = write_table  # type: ignore[attr-defined]
    pa.parquet = pq  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pyarrow", pa)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", pq)
    return seen


def test_parquet_export_types_each_column(tmp_path: Path, monkeypatch) -> None:
    seen = _fake_pyarrow(monkeypatch)
    recs = [
        _record("k1", {"activation": "tanh", "n": 4, "trainable": ["a", "A"]}, tau_star=1),
        _record("k2", {"activation": "relu", "n": 8, "trainable": ["a"]}, tau_star=0.25),
    ]
    out = tmp_path / "t.parquet"
    assert _export.export_table(recs, out) == str(out)
    assert seen["key"] == ("string", ["k2", "k1"])  # relu before tanh
    assert seen["n"] == ("int64", [8, 4])
    assert seen["tau_star"] == ("float64", [0.25, 1.0])  # an int among floats becomes a float
    assert seen["trainable"] == ("string", ["a", "a,A"])
    assert seen["error"] == ("string", [None, None])
    assert json.loads(out.read_bytes())["n"] == ["int64", [8, 4]]


def test_parquet_export_of_no_rows_has_the_fixed_columns(tmp_path: Path, monkeypatch) -> None:
    seen = _fake_pyarrow(monkeypatch)
    _export.export_table([], tmp_path / "t.parquet")
    assert sorted(seen) == ["error", "key", "kind", "seconds"]


# -- plots of a store changed outside deqrmt -----------------------------------------------------


_GOOD = {"activation": "tanh", "sigma_a2": "0.2", "n": 64}


@pytest.mark.parametrize(
    ("kind", "inputs", "floats", "why"),
    [
        ("coefficients", {**_GOOD, "activation": 3}, {"tau_star": 1.0}, "no activation"),
        ("coefficients", {**_GOOD, "sigma_a2": "0"}, {"tau_star": 1.0}, "sigma_a2 = '0'"),
        ("coefficients", {**_GOOD, "sigma_a2": 0.2}, {"tau_star": 1.0}, "sigma_a2 = 0.2"),
        ("exact", {**_GOOD, "n": True}, {"ck_error": 0.1}, "n = True"),
        ("exact", {**_GOOD, "n": 0}, {"ck_error": 0.1}, "n = 0"),
        ("coefficients", _GOOD, {"tau_star": "1.0"}, "outputs.floats that are not numbers"),
        ("coefficients", _GOOD, {"tau_star": True}, "outputs.floats that are not numbers"),
    ],
)
def test_a_row_no_sweep_writes_is_refused_before_plotting(
    kind: str, inputs: dict[str, Any], floats: dict[str, Any], why: str, tmp_path: Path
) -> None:
    pytest.importorskip("matplotlib")
    from deqrmt.sweep import write_plots

    rec = Record("k", kind, inputs, {"floats": floats}, None, 0.1, 0.0)
    with ResultStore(tmp_path / "s.sqlite") as st:
        st.add(rec)
        with pytest.raises(
            StoreError, match=f"the stored task 'k' has {why}, which a sweep never writes"
        ):
            write_plots(st, tmp_path / "plots")  # an open store
    assert not (tmp_path / "plots").exists() or not any((tmp_path / "plots").iterdir())


def test_failed_rows_are_not_checked_or_drawn(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from deqrmt.sweep import write_plots

    bad = Record("k", "coefficients", {"activation": 3}, None, "InvalidArgument: x", 0.1, 0.0)
    assert write_plots([bad], tmp_path / "plots") == []


def test_a_store_path_that_changes_while_being_opened_is_refused(tmp_path: Path) -> None:
    from deqrmt.sweep import _store_file

    path = tmp_path / "s.sqlite"
    with pytest.raises(StoreError, match="changed while being opened; try again"):
        _store_file.check_unchanged(path, "'s.sqlite'", (0, 0))  # gone
    path.write_bytes(b"")
    st = path.stat()
    _store_file.check_unchanged(path, "'s.sqlite'", (st.st_dev, st.st_ino))  # the same file
    with pytest.raises(StoreError, match="changed while being opened"):
        _store_file.check_unchanged(path, "'s.sqlite'", (st.st_dev, st.st_ino + 1))


def test_a_dangling_link_where_the_store_is_created_is_refused(tmp_path: Path) -> None:
    from deqrmt.sweep import _store_file

    path = tmp_path / "s.sqlite"
    os.symlink(tmp_path / "target", path)  # dangling: exists() is False, O_EXCL fails
    with pytest.raises(StoreError, match="is a symbolic link"):
        _store_file.create(path, "'s.sqlite'")
    assert not (tmp_path / "target").exists()


@pytest.mark.parametrize(
    ("sql", "why"),
    [
        ("UPDATE results SET seconds = 9e999", "seconds not finite"),
        ("UPDATE results SET host = X'05'", "host of type bytes"),  # TEXT keeps a blob
        (
            "UPDATE results SET inputs = '" + '{"a": ' * 40 + "1" + "}" * 40 + "'",
            r"inputs nested beyond \d+ levels",
        ),
    ],
)
def test_a_row_changed_outside_deqrmt_is_refused_when_read(
    sql: str, why: str, tmp_path: Path
) -> None:
    path = tmp_path / "s.sqlite"
    with ResultStore(path) as st:
        st.add(_record("k", {"a": 1}, x=1.0))
    db = sqlite3.connect(path)
    db.execute(sql)
    db.commit()
    db.close()
    with (
        ResultStore(path) as st,
        pytest.raises(StoreError, match=f"the row 'k' has {why}, which deqrmt never writes"),
    ):
        st.records()


# -- the summary ---------------------------------------------------------------------------------


def test_the_summary_counts_failures_beyond_the_shown_ones_and_missing_tasks() -> None:
    from deqrmt.sweep import GroupSummary, SweepProgress, SweepResult

    groups = (GroupSummary("coefficients", "tanh", 10, 2, 7, 1, 0.5, 4.0),)
    errors = tuple((f"task {i}", f"InvalidArgument: bad {i}\nmore") for i in range(7))
    r = SweepResult(
        Path("s.sqlite"), "embedded cluster", 10, 0, 10, 9, 7, True, 3.0, groups, errors, 1
    )
    text = r.table(max_errors=5)
    assert (
        "this run (interrupted): 10 submitted, 9 stored (7 failed) in 3.0 s (3.00 tasks/s)" in text
    )
    assert [ln for ln in text.splitlines() if ln.startswith("failed: ")] == [
        f"failed: task {i}: InvalidArgument: bad {i}" for i in range(5)
    ]
    assert "… and 2 more failures (see the store)." in text
    assert "1 tasks are missing: run the same command again to resume." in text
    assert not r.ok and (r.failed, r.missing) == (7, 1)
    assert SweepProgress(4, 0, 4, 2, 0, 0.5).rate == 4.0
    assert SweepProgress(4, 0, 4, 0, 0, 0.0).rate == 0.0


def test_error_plots_of_four_activations_with_gaps(tmp_path: Path) -> None:
    # 4 activations on a 3-wide grid (two panels left empty); σ_a² = 0.2 lacks n = 128 and has
    # no NTK error (a gap in its heat-map row, no dashed line); no coefficient task: no
    # coefficients.png
    pytest.importorskip("matplotlib")
    from deqrmt.sweep import write_plots

    recs = []
    for act in ("tanh", "relu", "gelu", "erf"):
        for sa2, ns in (("0.1", (64, 128)), ("0.2", (64,))):
            for n in ns:
                floats = {"ck_exact_vs_equiv": 0.1 * (64 / n) ** 0.5}
                if sa2 == "0.1":
                    floats["ntk_exact_vs_equiv"] = 0.2 * (64 / n) ** 0.5
                inputs = {"activation": act, "sigma_a2": sa2, "n": n, "seed": 0}
                recs.append(
                    Record(f"{act}{sa2}{n}", "exact", inputs, {"floats": floats}, None, 0.1, 0.0)
                )
    written = write_plots(recs, tmp_path / "plots")
    assert sorted(p.name for p in written) == ["error_heatmap.png", "error_vs_n.png"]
    for p in written:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_store_corrupted_while_open_is_a_one_line_error(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with ResultStore(path) as st:
        for i in range(50):
            st.add(_record(f"k{i}", {"a": i}, x=1.0))
    with ResultStore(path) as st:
        size = path.stat().st_size
        with open(path, "r+b") as fh:  # another program overwrites the pages after the first two
            fh.seek(2 * 4096)
            fh.write(b"\xa5" * (size - 2 * 4096))
            fh.seek(24)  # SQLite's file change counter: the open connection drops its cache
            fh.write((12345).to_bytes(4, "big"))
        with pytest.raises(StoreError, match=r"is not a usable sweep store \(database disk image"):
            st.records()


def test_store_file_edges(tmp_path: Path, monkeypatch) -> None:
    import stat

    from deqrmt.sweep import _store_file

    assert _store_file.file_kind(0) == "not a regular file"  # a mode of no kind at all
    assert _store_file.file_kind(stat.S_IFSOCK) == "a socket"
    # an empty regular companion file is no danger: the store opens beside it
    path = tmp_path / "s.sqlite"
    Path(f"{path}-wal").write_bytes(b"")
    with ResultStore(path) as st:
        assert len(st) == 0
    # another process created, then removed, the file between the check and the create
    other = tmp_path / "t.sqlite"

    def racing_open(*args: Any, **kwargs: Any) -> int:
        raise FileExistsError(17, "File exists")

    monkeypatch.setattr(_store_file.os, "open", racing_open)
    with pytest.raises(StoreError, match="changed while being opened; try again"):
        _store_file.create(other, "'t.sqlite'")

"""Reading a sweep back (issue 23, item 7): ``ResultStore.to_rows``/``to_pandas``/``export`` and
``deqrmt sweep SPEC --export FILE`` (.csv, .parquet with pyarrow), written atomically, never over
a file without --force."""

from __future__ import annotations

import csv
import io
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from deqrmt._errors import FileError, InvalidArgument, MissingExtra, StoreError
from deqrmt.sweep import Record, ResultStore, execute, parse_spec
from deqrmt.sweep._export import table_rows


def _records() -> list[Record]:
    """Hand-made records: two kinds, exact-number inputs, a failure, hostile text."""
    recs = []
    for act in ("tanh", "relu"):
        for s in ("0.3", "1/10", "0.2"):
            inputs = {"kind": "coefficients", "activation": act, "sigma_a2": s, "sigma_b2": None,
                      "trainable": ["a", "A"]}  # fmt: skip
            outputs = {
                "floats": {"tau_star": 0.9, "alpha_1": 0.3},
                "values": {"tau_star": "0.900", "alpha_1": "0.300"},
                "certified": True,
                "notes": ["one", "two"],
            }
            recs.append(Record(f"c-{act}-{s}", "coefficients", inputs, outputs, None, 0.5, 0.0))
    bad = {"kind": "exact", "activation": '=HYPERLINK("http://x")', "sigma_a2": "0.2", "n": 64}
    recs.append(Record("e-bad", "exact", bad, None, "NoConvergence: -1 iterations", 0.1, 0.0))
    ok = {"kind": "exact", "activation": "-x", "sigma_a2": "0.2", "n": 128}
    recs.append(Record("e-ok", "exact", ok, {"floats": {"ck_error": -0.5}}, None, 2.0, 0.0))
    return recs


def _store(path: Path, records: list[Record]) -> Path:
    with ResultStore(path) as st:
        for r in records:
            st.add(r)
    return path


def test_rows_are_a_table_sorted_by_kind_and_inputs(tmp_path: Path) -> None:
    with ResultStore(_store(tmp_path / "s.sqlite", _records()), create=False) as st:
        rows = st.to_rows()
    columns = list(rows[0])
    assert all(list(r) == columns for r in rows)  # every row has every column, in one order
    assert columns[:7] == ["key", "kind", "activation", "sigma_a2", "sigma_b2", "n", "trainable"]
    assert columns[7:9] == ["error", "seconds"]
    assert {"alpha_1", "tau_star", "ck_error", "outputs.values.alpha_1"} <= set(columns)
    assert "outputs.floats.alpha_1" not in columns  # the floats are by name
    coeffs = [r for r in rows if r["kind"] == "coefficients"]
    # activation, then σ_a² by value (1/10 < 0.2 < 0.3; as text "1/10" sorts last)
    assert [(r["activation"], r["sigma_a2"]) for r in coeffs] == [
        ("relu", 0.1), ("relu", 0.2), ("relu", 0.3), ("tanh", 0.1), ("tanh", 0.2), ("tanh", 0.3),
    ]  # fmt: skip
    assert coeffs[0]["trainable"] == "a,A" and coeffs[0]["sigma_b2"] is None
    assert coeffs[0]["outputs.notes"] == '["one", "two"]'
    assert coeffs[0]["outputs.values.alpha_1"] == "0.300" and coeffs[0]["alpha_1"] == 0.3
    bad = next(r for r in rows if r["key"] == "e-bad")
    assert bad["error"] == "NoConvergence: -1 iterations" and bad["ck_error"] is None


def test_the_same_store_gives_the_same_bytes_whatever_the_order(tmp_path: Path) -> None:
    recs = _records()
    shuffled = recs[:]
    random.Random(7).shuffle(shuffled)
    a = _store(tmp_path / "a.sqlite", recs)
    b = _store(tmp_path / "b.sqlite", shuffled)
    with ResultStore(a, create=False) as st:
        st.export(tmp_path / "a.csv")
    with ResultStore(b, create=False) as st:
        st.export(tmp_path / "b.csv")
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()


def test_csv_cells_never_run_as_spreadsheet_formulas(tmp_path: Path) -> None:
    with ResultStore(_store(tmp_path / "s.sqlite", _records()), create=False) as st:
        st.export(tmp_path / "r.csv")
    rows = list(csv.DictReader(io.StringIO((tmp_path / "r.csv").read_text(encoding="utf-8"))))
    by_key = {r["key"]: r for r in rows}
    assert by_key["e-bad"]["activation"] == '\'=HYPERLINK("http://x")'
    assert by_key["e-ok"]["activation"] == "'-x"  # text: prefixed
    assert by_key["e-ok"]["ck_error"] == "-0.5"  # a number: as it is
    assert by_key["e-bad"]["ck_error"] == ""  # None: empty


def test_export_never_clobbers_and_checks_its_format(tmp_path: Path) -> None:
    store = _store(tmp_path / "s.sqlite", _records())
    target = tmp_path / "r.csv"
    target.write_text("mine")
    with ResultStore(store, create=False) as st:
        with pytest.raises(FileError, match="pass force=True"):
            st.export(target)
        assert target.read_text() == "mine"
        st.export(target, force=True)
        assert target.read_text().startswith("key,kind,")
        with pytest.raises(InvalidArgument, match=r"\.csv or \.parquet"):
            st.export(tmp_path / "r.xlsx")
        (tmp_path / "link.csv").symlink_to(tmp_path / "elsewhere.csv")
        with pytest.raises(FileError, match="symbolic link"):
            st.export(tmp_path / "link.csv", force=True)
    assert not (tmp_path / "elsewhere.csv").exists()


def test_missing_pandas_and_pyarrow_are_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _store(tmp_path / "s.sqlite", _records())
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas → ImportError
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with ResultStore(store, create=False) as st:
        with pytest.raises(MissingExtra, match="pip install pandas"):
            st.to_pandas()
        with pytest.raises(MissingExtra, match="pip install pyarrow"):
            st.export(tmp_path / "r.parquet")
    assert not (tmp_path / "r.parquet").exists()


def test_to_pandas_and_parquet_when_installed(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    with ResultStore(_store(tmp_path / "s.sqlite", _records()), create=False) as st:
        df = st.to_pandas()
        assert list(df.columns) == list(st.to_rows()[0])
        assert df[df.kind == "coefficients"].sigma_a2.tolist() == [0.1, 0.2, 0.3] * 2
        pytest.importorskip("pyarrow")
        st.export(tmp_path / "r.parquet")
    back = pd.read_parquet(tmp_path / "r.parquet")
    assert back.shape == df.shape and back.alpha_1.dropna().tolist() == [0.3] * 6


def test_reading_a_missing_store_creates_nothing(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="does not exist"):
        ResultStore(tmp_path / "typo.sqlite", create=False)
    assert not (tmp_path / "typo.sqlite").exists()


def test_rows_of_no_records() -> None:
    assert table_rows([]) == []


# --- the command line ----------------------------------------------------------------------------


def _spec(tmp_path: Path) -> Path:
    """A spec whose two tasks are already stored: the command only reads the store."""
    text = 'kind = "coefficients"\nactivations = ["relu"]\nsigma_a2 = [0.2, 0.3]\ndps = 12\n'
    path = tmp_path / "spec.toml"
    path.write_text(text)
    spec = parse_spec(text)
    with ResultStore(tmp_path / "spec.sqlite") as st:
        for t in spec.tasks:
            r = execute(t.kind, t.inputs)
            st.add(Record(t.key, t.kind, t.inputs, r["outputs"], r["error"], r["seconds"], 0.0))
    return path


def test_cli_export_csv(cli_prefix: list[str], tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    spec = _spec(tmp_path)
    out_path = tmp_path / "results.csv"

    def run(*extra: str) -> Any:
        return subprocess.run(
            [*cli_prefix, "sweep", str(spec), "--export", str(out_path), *extra],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip

    first = run()
    assert first.returncode == 0, first.stderr
    assert f"wrote {out_path}" in first.stderr
    rows = list(csv.DictReader(io.StringIO(out_path.read_text(encoding="utf-8"))))
    assert [(r["activation"], r["sigma_a2"]) for r in rows] == [("relu", "0.2"), ("relu", "0.3")]
    assert float(rows[0]["alpha_1"]) > 0 and rows[0]["outputs.certified"] == "True"
    again = run()
    assert again.returncode == 2 and "FileError" in again.stderr and "--force" in again.stderr
    assert run("--force").returncode == 0
    bad = subprocess.run(
        [*cli_prefix, "sweep", str(spec), "--export", str(tmp_path / "r.xlsx")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert bad.returncode == 2 and "--export" in bad.stderr and ".csv or .parquet" in bad.stderr

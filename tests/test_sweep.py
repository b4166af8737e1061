"""deqrmt sweep (issue 12): spec, store, tasks, plots, the CLI command, and the Dask runs.

The two "Done when" runs use real processes on 127.0.0.1 only: a ``dask scheduler`` and two
``dask worker`` processes (one is SIGKILLed mid-sweep), and a ``deqrmt sweep`` driver that gets
SIGINT mid-sweep and is then run again.  Every process a test starts is killed in ``finally``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from deqrmt._errors import FileError, InvalidArgument, MissingExtra
from deqrmt.cli import sweep as sweep_cli
from deqrmt.sweep import (
    Record,
    ResultStore,
    SpecError,
    StoreError,
    SweepProgress,
    execute,
    largest_first,
    load_spec,
    parse_spec,
    run_sweep,
    write_plots,
)
from deqrmt.sweep._spec import task_key

pytest.importorskip("distributed")  # the [sweep] extra

REPO = Path(__file__).resolve().parents[1]

#: Cheap coefficient tasks (closed forms: ~20 ms each once warm), then slower ones (tanh:
#: quadrature, ~0.5–3 s each), so that a sweep is still running when a test interrupts it.
FAST = ["relu", "leaky_relu(0.1)", "abs(x)", "sin"]
SPEC_24 = textwrap.dedent(
    """
    kind = "coefficients"
    activations = ["relu", "leaky_relu(0.1)", "abs(x)", "sin", "tanh"]
    sigma_a2 = "0.1:0.6:5"
    dps = 12
    """
)  # 25 tasks


def _harness(argv: list[str]) -> int:
    """The tiny argparse harness: the command's own ``register`` and ``run``."""
    parser = argparse.ArgumentParser(prog="deqrmt")
    sweep_cli.register(parser.add_subparsers(dest="command"))
    return int(sweep_cli.run(parser.parse_args(argv)))


def _spec_file(tmp_path: Path, text: str, name: str = "spec.toml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _rows(store: Path) -> list[tuple[Any, ...]]:
    db = sqlite3.connect(store, timeout=30)
    try:
        return db.execute("SELECT key, run_id, finished, error, worker FROM results").fetchall()
    finally:
        db.close()


# ---------------------------------------------------------------------------
# Spec
# ---------------------------------------------------------------------------


def test_range_is_exact_and_task_list_deterministic() -> None:
    text = 'kind = "coefficients"\nactivations = ["tanh", "relu"]\nsigma_a2 = "0.05:0.45:9"\n'
    spec = parse_spec(text)
    assert [t.inputs["sigma_a2"] for t in spec.tasks[:9]] == [
        "0.05", "0.1", "0.15", "0.2", "0.25", "0.3", "0.35", "0.4", "0.45",
    ]  # fmt: skip
    assert [t.inputs["activation"] for t in spec.tasks] == ["tanh"] * 9 + ["relu"] * 9
    assert [t.key for t in parse_spec(text).tasks] == [t.key for t in spec.tasks]
    assert len(spec.keys) == 18 and all(len(k) == 64 for k in spec.keys)
    t = spec.tasks[0]
    assert t.inputs == {
        "kind": "coefficients", "activation": "tanh", "sigma_a2": "0.05", "sigma_b2": None,
        "tau0": "1", "dps": 30, "trainable": ["a", "A"],
    }  # fmt: skip


def test_keys_are_canonical_and_versioned() -> None:
    a = parse_spec('kind = "coefficients"\nactivations = "tanh"\nsigma_a2 = ["0.10", 0.1, "1/10"]')
    assert len(a.tasks) == 1  # three spellings of one number: one task
    b = parse_spec('kind = "coefficients"\nactivations = "tanh"\nsigma_a2 = 0.1\ntau0 = "1.0"')
    assert a.tasks[0].key == b.tasks[0].key
    inputs = dict(a.tasks[0].inputs)
    assert task_key(inputs) == a.tasks[0].key
    assert task_key(inputs, version="999.0") != a.tasks[0].key
    assert task_key({**inputs, "dps": 31}) != a.tasks[0].key


def test_kind_tables_override_and_axes_per_kind() -> None:
    spec = parse_spec(
        textwrap.dedent(
            """
            kind = ["coefficients", "validate", "exact"]
            activations = ["tanh", "relu"]
            sigma_a2 = "0.1:0.5:5"
            sigma_b2 = ["0.5"]
            n = [32, 64]
            seeds = 2
            [validate]
            sigma_a2 = ["0.2"]
            m = [64, 128]
            draws = 2
            """
        )
    )
    by_kind: dict[str, list[Any]] = {}
    for t in spec.tasks:
        by_kind.setdefault(t.kind, []).append(t.inputs)
    assert len(by_kind["coefficients"]) == 2 * 5
    assert len(by_kind["validate"]) == 2 * 1 * 2 * 2 * 2  # act × σ_a² × n × m × seeds
    assert len(by_kind["exact"]) == 2 * 5 * 2 * 2
    v = by_kind["validate"][0]
    assert (v["m"], v["draws"], v["dtype"], v["dps"], v["sigma_b2"]) == (
        64,
        2,
        "float64",
        20,
        "0.5",
    )
    assert "tau0" not in v and "n" not in by_kind["coefficients"][0]
    assert "m" not in by_kind["exact"][0]
    assert {i["seed"] for i in by_kind["exact"]} == {0, 1}


BAD_SPECS = [
    ("kind = [", "not valid TOML"),
    ('activations = ["tanh"]\nsigma_a2 = 0.2', "the key kind is missing"),
    ('kind = "fit"\nactivations = ["tanh"]\nsigma_a2 = 0.2', "kind = 'fit'"),
    ('kind = "coefficients"\nactivations = ["tanh"]\nsigma_a2 = 0.2\nsigmaa2 = 1', "unknown key 'sigmaa2'"),
    ('kind = "coefficients"\nactivations = ["tanh"]\nsigma_a2 = 0.2\nn = [64]', "the key n applies to exact, validate"),
    ('kind = "coefficients"\nactivations = ["tanh"]\nsigma_a2 = "0.5:0.1:3"', "start < stop"),
    ('kind = "coefficients"\nactivations = ["tanh"]\nsigma_a2 = "0.1:0.5:x"', "count in start:stop:count"),
    ('kind = "coefficients"\nactivations = ["tanh"]\nsigma_a2 = ["-0.1"]', "every σ_a² must be > 0"),
    ('kind = "coefficients"\nactivations = ["tanh"]\nsigma_a2 = [1.5]', "give sigma_b2"),
    ('kind = "coefficients"\nactivations = ["tanh"]\nsigma_a2 = ["abc"]', "sigma_a2='abc'"),
    ('kind = "coefficients"\nactivations = ["tanh("]\nsigma_a2 = 0.2', "is not an activation"),
    ('kind = "coefficients"\nactivations = []\nsigma_a2 = 0.2', "activations = []"),
    ('kind = "coefficients"\nactivations = ["tanh"]', "sigma_a2 is missing"),
    ('kind = "coefficients"\nactivations = ["tanh"]\nsigma_a2 = 0.2\ndps = 2', "dps = 2"),
    ('kind = "coefficients"\nactivations = ["tanh"]\nsigma_a2 = 0.2\ntrainable = ["W"]', "trainable"),
    ('kind = "exact"\nactivations = ["tanh"]\nsigma_a2 = 0.2', "n is missing"),
    ('kind = "exact"\nactivations = ["tanh"]\nsigma_a2 = 0.2\nn = [16]', "p = round(ratio·n) = 13 < 16"),
    ('kind = "exact"\nactivations = ["tanh"]\nsigma_a2 = "0:1:4"\nsigma_b2 = 1\nn = [64]', "every σ_a² must be > 0"),
    ('kind = "exact"\nactivations = ["tanh"]\nsigma_a2 = "1/3"\nn = [64]', "no finite decimal form"),
    ('kind = "validate"\nactivations = ["tanh"]\nsigma_a2 = 0.2\nn = [64]\npreset = "x"', "preset = 'x'"),
    ('kind = "coefficients"\nactivations = ["tanh"]\nsigma_a2 = 0.2\n[validate]\nn = [64]', "table [validate] given"),
    ('kind = "validate"\nactivations = ["tanh"]\nsigma_a2 = 0.2\n[validate]\nfamily = "x"', "[validate].family is not"),
    ('kind = "design"\nactivations = ["tanh"]\nsigma_a2 = 0.2', "family is missing"),
    ('kind = "design"\nactivations = ["tanh"]\nsigma_a2 = 0.2\nfamily = "nope"', "family: 'nope'"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "fragment"), BAD_SPECS, ids=[f for _, f in BAD_SPECS])
def test_bad_specs_raise_spec_error_naming_the_key(text: str, fragment: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_spec(text)
    assert isinstance(info.value, InvalidArgument)  # exit 2 in the CLI, ValueError in Python
    assert fragment in str(info.value)


def test_load_spec_unreadable(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="cannot read the sweep spec"):
        load_spec(tmp_path / "missing.toml")
    spec = load_spec(_spec_file(tmp_path, 'kind="coefficients"\nactivations="relu"\nsigma_a2=0.2'))
    assert spec.default_store() == tmp_path / "spec.sqlite"


def test_import_pulls_neither_torch_nor_dask() -> None:
    code = (
        "import sys, deqrmt.sweep; "
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'dask', 'distributed', 'matplotlib')); "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


# ---------------------------------------------------------------------------
# Store
# ---------------------------------------------------------------------------


def _record(key: str, error: str | None = None, run_id: int | None = None) -> Record:
    outputs = None if error else {"values": {"x": "0.1"}, "floats": {"x": 0.1}}
    return Record(key, "coefficients", {"k": key}, outputs, error, 0.5, time.time(), run_id=run_id)


def test_store_appends_once_per_key(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with ResultStore(path) as st:
        assert st.add(_record("a"))
        assert not st.add(_record("a"))  # a second result for a key is dropped, not duplicated
        assert st.add(_record("b", error="ContractionError: no"))
        assert len(st) == 2 and st.keys() == {"a", "b"}
    with ResultStore(path) as st:  # reopened: what was committed is there
        recs = st.records()
        assert [r.key for r in recs] == ["a", "b"]
        assert recs[0].outputs == {"values": {"x": "0.1"}, "floats": {"x": 0.1}}
        assert recs[1].error == "ContractionError: no" and not recs[1].ok
        assert st.delete_failed(["a", "b"]) == 1 and st.keys() == {"a"}
    db = sqlite3.connect(path)
    try:
        with pytest.raises(sqlite3.IntegrityError):  # the constraint, not only our check
            db.execute(
                "INSERT INTO results (key, kind, inputs, outputs, finished, version) "
                "VALUES ('a', 'coefficients', '{}', '{}', 0, 'x')"
            )
    finally:
        db.close()
    assert [p.name for p in tmp_path.iterdir()] == ["s.sqlite"]  # one file


def test_task_seconds_are_the_fastest_successful_run_per_activation(tmp_path: Path) -> None:
    def rec(key: str, act: str, secs: float, error: str | None = None) -> Record:
        outputs = None if error else {"values": {}}
        inputs = {"activation": act, "sigma_a2": key}
        return Record(key, "coefficients", inputs, outputs, error, secs, 0.0)

    with ResultStore(tmp_path / "s.sqlite") as st:
        assert st.task_seconds() == {}
        for r in (
            rec("1", "tanh", 2.5),  # the first on a worker: set-up included
            rec("2", "tanh", 0.5),
            rec("3", "tanh", 0.1, error="ContractionError: no"),  # failed fast: no estimate
            rec("4", "silu", 1.5),
        ):
            st.add(r)
        assert st.task_seconds() == {("coefficients", "tanh"): 0.5, ("coefficients", "silu"): 1.5}


def test_largest_first_orders_by_size_kind_then_seen_cost() -> None:
    spec = parse_spec(
        'kind = ["coefficients", "exact", "validate"]\nactivations = ["relu", "tanh", "erf"]\n'
        "sigma_a2 = [0.1, 0.2]\ndps = 12\n[exact]\nn = [32, 64]\n[validate]\nn = [32]\n"
    )
    order = largest_first(spec.tasks)
    assert sorted(t.key for t in order) == sorted(t.key for t in spec.tasks)  # a permutation
    sizes = [(t.inputs.get("n") or 0, t.kind) for t in order]
    # n = 64 first, then at n = 32 the Monte Carlo before the exact kernels, coefficients last
    assert sizes == sorted(
        sizes, key=lambda s: (s[0], ["coefficients", "exact", "validate"].index(s[1])), reverse=True
    )
    coef = [t for t in order if t.kind == "coefficients"]
    # nothing seen: the spec's order (a stable sort)
    assert coef == [t for t in spec.tasks if t.kind == "coefficients"]
    seen = {("coefficients", "relu"): 0.01, ("coefficients", "erf"): 2.0}
    coef = [t for t in largest_first(spec.tasks, seen) if t.kind == "coefficients"]
    # tanh unseen (a possible surprise) first, then erf (2 s), then relu (10 ms)
    assert [t.inputs["activation"] for t in coef] == ["tanh"] * 2 + ["erf"] * 2 + ["relu"] * 2
    assert [t.inputs["sigma_a2"] for t in coef] == ["0.1", "0.2"] * 3


@pytest.fixture
def port_8787_taken() -> Iterator[None]:
    """127.0.0.1:8787 (Dask's dashboard port) held, as a Jupyter Dask cluster would hold it.

    Taken here if it is free, else someone already holds it: either way it is taken while the
    test runs, so the test does not depend on which ports are free.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        with contextlib.suppress(OSError):  # already taken: just as good
            sock.bind(("127.0.0.1", 8787))
            sock.listen(1)
        yield
    finally:
        sock.close()


@pytest.mark.usefixtures("port_8787_taken")
def test_embedded_cluster_is_quiet() -> None:
    """No dashboard reads them: the workers neither profile nor poll at the 10–100 ms defaults;
    and nobody serves HTTP (no dashboard, no metrics), so a taken port 8787 changes nothing:
    no "port in use" warning (an error under this suite's filterwarnings), no other port."""
    import dask
    import distributed

    from deqrmt.sweep import QUIET_DASK, embedded_cluster

    with (
        embedded_cluster(1) as cluster,
        distributed.Client(cluster, set_as_default=False) as client,
    ):
        for key, value in QUIET_DASK.items():
            assert list(client.run(dask.config.get, key).values()) == [value], key
        info = client.scheduler_info()
        assert info["services"] == {}  # the scheduler: no HTTP server
        assert [w["services"] for w in info["workers"].values()] == [{}]  # nor the worker
        assert cluster.dashboard_link == ""


def test_record_needs_outputs_xor_error() -> None:
    with pytest.raises(InvalidArgument):
        Record("k", "coefficients", {}, None, None, 0.1, 0.0)
    with pytest.raises(InvalidArgument):
        Record("k", "coefficients", {}, {"x": 1}, "E: e", 0.1, 0.0)


def test_store_rejects_a_non_sqlite_file(tmp_path: Path) -> None:
    bad = tmp_path / "notes.sqlite"
    bad.write_text("not a database " * 100)
    with pytest.raises(StoreError, match="not a usable sweep store"):
        ResultStore(bad).keys()
    assert bad.read_text() == "not a database " * 100  # refused, not changed


# ---------------------------------------------------------------------------
# Tasks
# ---------------------------------------------------------------------------


def test_execute_coefficients_and_recorded_errors() -> None:
    spec = parse_spec(
        'kind = ["coefficients"]\nactivations = ["relu"]\nsigma_a2 = ["0.2", "3"]\n'
        'sigma_b2 = ["1"]\ndps = 15'
    )
    ok, bad = (execute(t.kind, t.inputs) for t in spec.tasks)
    assert ok["error"] is None
    out = ok["outputs"]
    assert out["values"]["alpha_1"].startswith("0.26315789473684")  # 5/19 (ReLU, σ_a² = 0.2)
    assert out["floats"]["alpha_1"] == float(out["values"]["alpha_1"])
    assert {"tau_star", "kappa_star", "beta_3", "center"} <= set(out["values"])
    assert ok["version"] and ok["pid"] == os.getpid() and ok["seconds"] >= 0
    # σ_a² = 3: no fixed point.  A deqrmt error is the task's recorded result, not a raise.
    assert bad["outputs"] is None and bad["error"].startswith("ContractionError: ")


def test_execute_certify_records_the_certificate() -> None:
    spec = parse_spec('kind = "certify"\nactivations = "relu"\nsigma_a2 = 0.2\ndps = 15')
    r = execute("certify", spec.tasks[0].inputs)
    assert r["error"] is None
    cert = r["outputs"]["certificate"]
    assert cert["certified"] is True and set(cert["balls"]) >= {"tau_star", "alpha_1"}
    assert r["outputs"]["values"]["alpha_1"] == cert["alpha_1"]


def test_execute_exact_kernel_task() -> None:
    pytest.importorskip("torch")
    spec = parse_spec('kind = "exact"\nactivations = "relu"\nsigma_a2 = 0.2\nn = [32]\ndps = 15')
    r = execute("exact", spec.tasks[0].inputs, "cpu")
    assert r["error"] is None, r["error"]
    f = r["outputs"]["floats"]
    assert set(f) == {"ck_exact_vs_equiv", "ntk_exact_vs_equiv"}
    assert 0 < f["ck_exact_vs_equiv"] < 1
    assert r["outputs"]["p"] == round(0.8 * 32) and "exact" in r["stages"]


# ---------------------------------------------------------------------------
# Plots
# ---------------------------------------------------------------------------


def _synthetic_records() -> list[Record]:
    recs = []
    for act in ("tanh", "relu"):
        for i, s in enumerate(("0.1", "0.2", "0.3")):
            floats = {"tau_star": 1 + i / 10, "alpha_1": 0.2 + i / 10, "kappa_star": 0.5}
            inputs = {"kind": "coefficients", "activation": act, "sigma_a2": s, "sigma_b2": None}
            recs.append(
                Record(f"c{act}{s}", "coefficients", inputs, {"floats": floats}, None, 1, 0)
            )
            for n in (64, 128, 256):
                for seed in (0, 1):
                    e = 0.3 * (n / 64) ** -0.5 * (1 + i / 5)
                    inputs = {
                        "kind": "exact",
                        "activation": act,
                        "sigma_a2": s,
                        "n": n,
                        "seed": seed,
                    }
                    out = {"floats": {"ck_exact_vs_equiv": e, "ntk_exact_vs_equiv": 1.1 * e}}
                    recs.append(Record(f"e{act}{s}{n}{seed}", "exact", inputs, out, None, 1, 0))
    recs.append(Record("bad", "exact", {"activation": "tanh"}, None, "NoConvergence: x", 1, 0))
    return recs


def test_plots_write_three_pngs(tmp_path: Path) -> None:
    paths = write_plots(_synthetic_records(), tmp_path / "plots")
    assert [p.name for p in paths] == ["coefficients.png", "error_vs_n.png", "error_heatmap.png"]
    for p in paths:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 10_000
    assert sorted(q.name for q in (tmp_path / "plots").iterdir()) == sorted(p.name for p in paths)
    assert write_plots([], tmp_path / "none") == []  # no data, no figure


def test_plots_never_clobber_links_or_existing_files(tmp_path: Path) -> None:
    """Plots are written like every other output: an existing PNG needs force, a link or a FIFO
    is never replaced (nor written through), and nothing is written before all are checked."""
    out = tmp_path / "plots"
    out.mkdir()
    (out / "error_vs_n.png").write_bytes(b"mine")
    with pytest.raises(FileError, match="pass force=True"):
        write_plots(_synthetic_records(), out)
    assert sorted(p.name for p in out.iterdir()) == ["error_vs_n.png"]  # nothing written
    assert (out / "error_vs_n.png").read_bytes() == b"mine"
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's file")
    (out / "coefficients.png").symlink_to(victim)
    os.mkfifo(out / "error_heatmap.png")
    for name in ("coefficients.png", "error_heatmap.png"):
        with pytest.raises(FileError, match="symbolic link|FIFO"):
            write_plots(_synthetic_records(), out, force=True)
        (out / name).unlink()
    assert victim.read_text() == "the user's file"
    paths = write_plots(_synthetic_records(), out, force=True)
    assert len(paths) == 3 and (out / "error_vs_n.png").read_bytes()[:4] == b"\x89PNG"
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in paths)  # no temp


# ---------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------


def test_missing_dask_is_one_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)
    spec = parse_spec('kind = "coefficients"\nactivations = "relu"\nsigma_a2 = 0.2')
    with pytest.raises(MissingExtra, match=r"pip install 'deqrmt\[sweep\]'"):
        run_sweep(spec, store=tmp_path / "s.sqlite")


def test_bad_arguments(tmp_path: Path) -> None:
    spec = parse_spec('kind = "coefficients"\nactivations = "relu"\nsigma_a2 = 0.2')
    with pytest.raises(InvalidArgument, match="device"):
        run_sweep(spec, store=tmp_path / "s.sqlite", device="tpu")
    with pytest.raises(InvalidArgument, match="workers"):
        run_sweep(spec, store=tmp_path / "s.sqlite", workers=0)
    with pytest.raises(SpecError, match="pass store=PATH"):
        run_sweep(spec)


def test_complete_store_runs_nothing(tmp_path: Path) -> None:
    """Resume: tasks already in the store are not submitted (no cluster is even started)."""
    spec = parse_spec(
        f'kind = "coefficients"\nactivations = {FAST!r}\nsigma_a2 = [0.2, 0.3]\ndps = 12'.replace(
            "'", '"'
        )
    )
    store = tmp_path / "s.sqlite"
    with ResultStore(store) as st:
        for t in spec.tasks:
            r = execute(t.kind, t.inputs)
            st.add(Record(t.key, t.kind, t.inputs, r["outputs"], r["error"], r["seconds"], 0.0))
    result = run_sweep(spec, store=store, scheduler="tcp://127.0.0.1:9")  # never contacted
    assert (result.submitted, result.already_stored, result.ok) == (0, 8, True)
    assert result.scheduler == "nothing to run"


@pytest.mark.usefixtures("port_8787_taken")
def test_embedded_cluster_resume_failures_and_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """CLI harness on the embedded cluster (with port 8787 taken, as by a Jupyter cluster): a
    failing task, a summary, plots, then a resume."""
    spec_path = _spec_file(
        tmp_path,
        'kind = "coefficients"\nactivations = ["relu", "abs(x)"]\nsigma_a2 = [0.2, 0.3, 3]\n'
        "sigma_b2 = 1\ndps = 12\n",
    )
    rc = _harness(
        ["sweep", str(spec_path), "--workers", "2", "--json", "--plot", str(tmp_path / "p")]
    )
    out = json.loads(capsys.readouterr().out)
    assert rc == 1  # σ_a² = 3 has no fixed point: recorded, the sweep went on
    assert (out["total"], out["submitted"], out["completed"], out["failed"]) == (6, 6, 6, 2)
    assert {e["error"].split(":")[0] for e in out["errors"]} == {"ContractionError"}
    assert out["plots"] == [str(tmp_path / "p" / "coefficients.png")]
    store = tmp_path / "spec.sqlite"  # default: next to the spec
    assert len(_rows(store)) == 6
    # The same command again: nothing missing, nothing submitted, failures still reported.
    assert _harness(["sweep", str(spec_path), "--json"]) == 1
    again = json.loads(capsys.readouterr().out)
    assert (again["submitted"], again["already_stored"], again["failed"]) == (0, 6, 2)
    # The text summary (--retry-failed is exercised on the external cluster below).
    assert _harness(["sweep", str(spec_path)]) == 1
    text = capsys.readouterr().out
    assert "this run: 0 submitted" in text and "failed: coefficients relu σ_a²=3" in text
    assert text.splitlines()[2].split()[:6] == ["coefficients", "relu", "3", "2", "1", "0"]
    assert len(_rows(store)) == 6


def test_cli_help_and_bad_spec(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="deqrmt")
    sweep_cli.register(parser.add_subparsers(dest="command"))
    with pytest.raises(SystemExit):
        parser.parse_args(["sweep", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    for opt in ("--store PATH", "--scheduler", "--workers", "--device", "--plot DIR", "--force",
                "--json"):  # fmt: skip
        assert opt in help_text
    assert "default" in help_text and "auto" in help_text
    bad = _spec_file(tmp_path, 'kind = "coefficients"\nactivations = ["relu"]\nsigma_a2 = "x"')
    with pytest.raises(SpecError):
        _harness(["sweep", str(bad)])


@pytest.mark.slow  # a cluster start and a torch import on a worker: ~20–40 s
def test_gpu_tasks_go_only_to_gpu_workers(tmp_path: Path) -> None:
    """The embedded cluster's GPU layout and the resource routing, checked on a CPU machine.

    Two workers, the first declared to hold a GPU: a coefficient task may run anywhere, an
    ``exact`` task with device="cuda" only on the GPU worker (where, with no CUDA device,
    torch refuses it, and that refusal is the recorded error).
    """
    import dask
    import distributed

    from deqrmt.sweep import embedded_cluster

    spec = parse_spec(
        'kind = ["exact", "coefficients"]\nactivations = "relu"\nsigma_a2 = 0.2\ndps = 12\n'
        "[exact]\nn = [32]\nseeds = 3"
    )
    cluster = embedded_cluster(2, gpus=1)
    try:
        with distributed.Client(cluster, set_as_default=False) as client:
            info = client.scheduler_info()["workers"]
            gpu = [a for a, w in info.items() if w.get("resources", {}).get("GPU") == 1]
            assert len(info) == 2 and len(gpu) == 1
            # the workers run with the quiet settings (no profiler sampling every 10 ms)
            profiled = client.run(dask.config.get, "distributed.worker.profile.enabled")
            assert list(profiled.values()) == [False, False]
            result = run_sweep(
                spec, store=tmp_path / "g.sqlite", scheduler=cluster.scheduler_address,
                workers=2, device="cuda",
            )  # fmt: skip
    finally:
        cluster.close()
    with ResultStore(tmp_path / "g.sqlite") as st:
        recs = st.records()
    exact = [r for r in recs if r.kind == "exact"]
    assert len(exact) == 3 and {r.worker for r in exact} == set(gpu)
    if not result.ok:  # a CPU-only torch: the task reached the GPU worker and torch said no
        assert all("CUDA" in (r.error or "") for r in exact)
    assert [r.ok for r in recs if r.kind == "coefficients"] == [True]


# ---------------------------------------------------------------------------
# Done when: a real external cluster with a worker killed mid-sweep
# ---------------------------------------------------------------------------


@contextlib.contextmanager
def _processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []
    try:
        yield procs
    finally:
        for p in procs:
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
        for p in procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=30)


def _wait_for(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


# 13–15 s at load average 5, 35–45 s at 10: in the default run, as the main check
def test_external_cluster_survives_a_killed_worker(tmp_path: Path) -> None:
    from distributed import Client

    spec = parse_spec(SPEC_24)
    assert len(spec.tasks) >= 24
    sched_file = tmp_path / "scheduler.json"
    with (tmp_path / "dask.log").open("wb") as log, _processes() as procs:
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                 "--port", "0", "--no-dashboard", "--scheduler-file", str(sched_file)],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )
        )  # fmt: skip
        _wait_for(lambda: sched_file.exists() and sched_file.stat().st_size > 0, 60, "scheduler")
        address = json.loads(sched_file.read_text())["address"]
        assert address.startswith("tcp://127.0.0.1:")
        for name in ("w0", "w1"):
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "distributed.cli.dask_worker", address, "--host",
                     "127.0.0.1", "--nthreads", "1", "--no-nanny", "--no-dashboard", "--name", name],
                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                )
            )  # fmt: skip
        victim = procs[2]
        with Client(address, timeout=60, set_as_default=False) as observer:
            observer.wait_for_workers(2, timeout=120)
            addr = {w["name"]: a for a, w in observer.scheduler_info()["workers"].items()}
            killed: dict[str, Any] = {}

            def progress(p: SweepProgress) -> None:
                # Kill w1 while it holds tasks and the sweep is not over.
                if killed or p.done < 3:
                    return
                held = observer.processing(workers=[addr["w1"]]).get(addr["w1"], [])
                if held and p.remaining > 2:
                    victim.kill()
                    victim.wait(timeout=30)  # dead before the driver fetches another result
                    killed.update(done=p.done, held=list(held), at=time.time())

            store = tmp_path / "ext.sqlite"
            result = run_sweep(spec, store=store, scheduler=address, workers=2, progress=progress)
            assert killed, "the worker was never killed mid-sweep"
            assert victim.wait(timeout=30) != 0
            # cuda without any GPU worker: refused before anything runs
            gpu_spec = parse_spec('kind="exact"\nactivations="relu"\nsigma_a2=0.2\nn=[32]')
            with pytest.raises(InvalidArgument, match="resource GPU"):
                run_sweep(gpu_spec, store=tmp_path / "gpu.sqlite", scheduler=address, device="cuda")
            # --retry-failed: a stored failure runs again, and only it.
            first_key = spec.tasks[0].key
            db = sqlite3.connect(store)
            with db:
                db.execute(
                    "UPDATE results SET outputs = NULL, error = 'Injected: x' WHERE key = ?",
                    (first_key,),
                )
            db.close()
            assert result.ok, result.table()  # before the retry: what failed in the killed run
            retry = run_sweep(spec, store=store, scheduler=address, retry_failed=True)
            assert (retry.submitted, retry.completed, retry.ok) == (1, 1, True)
    assert result.ok, result.table()
    assert (result.submitted, result.completed, result.failed_this_run) == (
        len(spec.tasks),
    ) * 2 + (0,)
    rows = _rows(store)
    keys = [r[0] for r in rows]
    assert len(keys) == len(set(keys)) == len(spec.tasks)  # nothing lost, nothing duplicated
    assert set(keys) == spec.keys
    # Tasks w1 held when it died were re-run elsewhere (or had just finished): all stored once.
    held_keys = {k.removeprefix("deqrmt-coefficients-") for k in killed["held"]}
    assert held_keys <= set(keys)
    after = [r for r in rows if r[2] > killed["at"]]
    assert after and all(r[4] == addr["w0"] for r in after)
    # The results equal a serial run's.
    with ResultStore(store) as st:
        stored = {r.key: r.outputs for r in st.records()}
    for t in spec.tasks:
        serial = execute(t.kind, t.inputs)
        assert serial["error"] is None
        assert json.loads(json.dumps(serial["outputs"])) == stored[t.key], t.label


# ---------------------------------------------------------------------------
# Done when: SIGINT to the driver mid-sweep, then the same command again
# ---------------------------------------------------------------------------

DRIVER = """
import argparse, sys
from deqrmt.cli import sweep
parser = argparse.ArgumentParser(prog="deqrmt")
sweep.register(parser.add_subparsers(dest="command"))
sys.exit(sweep.run(parser.parse_args(sys.argv[1:])))
"""


@pytest.mark.slow  # 25 s at load average 5, 70 s at 10 (two embedded clusters, one SIGINT)
def test_sigint_then_rerun_runs_only_the_missing_tasks(tmp_path: Path) -> None:
    spec_path = _spec_file(tmp_path, SPEC_24)
    n_tasks = len(load_spec(spec_path).tasks)
    store = tmp_path / "spec.sqlite"
    driver = [sys.executable, "-c", DRIVER, "sweep", str(spec_path), "--workers", "2", "--json"]

    def stored() -> int:
        if not store.exists():
            return 0
        try:
            return len(_rows(store))
        except sqlite3.OperationalError:  # created but the schema not yet committed
            return 0

    with _processes() as procs:
        # A session of its own: SIGINT goes to the whole group, as a terminal's Ctrl-C does.
        first = subprocess.Popen(
            driver, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
        )
        procs.append(first)
        _wait_for(lambda: stored() >= 3 or first.poll() is not None, 240, "3 stored results")
        os.killpg(first.pid, signal.SIGINT)
        out, err = first.communicate(timeout=120)
    assert first.returncode == 130, err.decode()
    summary = json.loads(out)
    assert summary["interrupted"] is True
    k = stored()
    assert 3 <= k < n_tasks, (k, n_tasks)
    assert summary["completed"] == k and summary["missing"] == n_tasks - k
    assert b"KeyboardInterrupt" not in err  # workers did not die with a traceback each
    before = {r[0]: r[1:] for r in _rows(store)}

    second = subprocess.run(driver, capture_output=True, timeout=600)
    assert second.returncode == 0, second.stderr.decode()
    again = json.loads(second.stdout)
    assert (again["already_stored"], again["submitted"]) == (k, n_tasks - k)
    assert again["completed"] == n_tasks - k and again["ok"] is True
    rows = _rows(store)
    assert len(rows) == len({r[0] for r in rows}) == n_tasks
    new = [r for r in rows if r[1] == again["run_id"]]
    assert len(new) == n_tasks - k  # only the missing tasks ran
    assert {r[0]: r[1:] for r in rows if r[0] in before} == before  # the first run's rows intact


# ---------------------------------------------------------------------------
# The example
# ---------------------------------------------------------------------------


@pytest.mark.slow
def test_example_spec_writes_three_plots(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    example = REPO / "examples" / "sweep.toml"
    result = run_sweep(load_spec(example), store=tmp_path / "example.sqlite")
    assert result.ok, result.table()
    paths = write_plots(tmp_path / "example.sqlite", tmp_path / "plots")
    assert [p.name for p in paths] == ["coefficients.png", "error_vs_n.png", "error_heatmap.png"]
    # written like every other output: a second time needs force, and then replaces them
    with pytest.raises(FileError, match="pass force=True"):
        write_plots(tmp_path / "example.sqlite", tmp_path / "plots")
    again = write_plots(tmp_path / "example.sqlite", tmp_path / "plots", force=True)
    assert again == paths

"""Sweeps on a Dask cluster deployed as users deploy one: ``dask scheduler`` and ``dask worker``
processes (with their nannies) on 127.0.0.1 at ports the OS chose, and the driver as a fresh
process (``deqrmt sweep`` or a script calling :func:`deqrmt.sweep.run_sweep`) that has not
imported ``distributed`` when it connects.

Every process a test starts runs in a session of its own and is SIGKILLed (its whole process
group: nanny and worker process alike) and reaped in the ``procs`` fixture's ``finally``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("distributed")  # the [sweep] extra

from deqrmt.sweep import ResultStore, load_spec  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
#: What `dask scheduler` prints (on stderr) once it listens.
SCHEDULER_AT = re.compile(rb"Scheduler at:\s+(tcp://127\.0\.0\.1:[0-9]+)")

#: 24 coefficient tasks (SiLU-like activations, quadrature at 30 digits): a window of many tasks in which to kill a worker mid-run, also on an idle
#: machine where 12 tasks of dps 25 could end between two looks of the observer
SPEC_24 = textwrap.dedent(
    """
    kind = "coefficients"
    activations = ["x*sigmoid(4*x)", "x*sigmoid(8*x)"]
    sigma_a2 = "0.1:0.9:12"
    dps = 30
    """
)
#: Three cheap tasks: enough to see a cluster answer.
SPEC_3 = 'kind = "coefficients"\nactivations = ["relu"]\nsigma_a2 = "0.1:0.3:3"\ndps = 15\n'


def _env() -> dict[str, str]:
    """This checkout's deqrmt for every process (workers unpickle its task functions)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO / "src"), env.get("PYTHONPATH", "")) if p
    )
    return env


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    try:
        yield started
    finally:
        for p in started:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(p.pid, signal.SIGKILL)  # the session: a nanny and its worker process
        for p in started:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=30)


def _spawn(
    procs: list[subprocess.Popen[bytes]], argv: list[str], log: Path, **kw: Any
) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        p = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, env=_env(), start_new_session=True, **kw
        )
    procs.append(p)
    return p


def _wait_for(predicate: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)
    return value


def _dask_scheduler(procs: list[subprocess.Popen[bytes]], log: Path) -> str:
    """``dask scheduler`` on 127.0.0.1, a port the OS chose; the address it prints."""
    p = _spawn(
        procs,
        [sys.executable, "-m", "dask", "scheduler", "--host", "127.0.0.1", "--port", "0",
         "--no-dashboard"],
        log,
    )  # fmt: skip

    def address() -> str | None:
        assert p.poll() is None, f"dask scheduler exited: {log.read_text()[-2000:]}"
        m = SCHEDULER_AT.search(log.read_bytes())
        return m.group(1).decode() if m else None

    return str(_wait_for(address, 120, "dask scheduler to print its address"))


def _dask_worker(
    procs: list[subprocess.Popen[bytes]], address: str, name: str, log: Path
) -> subprocess.Popen[bytes]:
    """``dask worker`` (a nanny and its worker process), one thread, as the docs advise."""
    return _spawn(
        procs,
        [sys.executable, "-m", "dask", "worker", address, "--host", "127.0.0.1", "--nthreads",
         "1", "--no-dashboard", "--name", name],
        log,
    )  # fmt: skip


def _rows(store: Path) -> list[tuple[Any, ...]]:
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=30)
    try:
        return db.execute("SELECT key, error, finished, worker FROM results").fetchall()
    finally:
        db.close()


def _stored(store: Path) -> list[tuple[Any, ...]]:
    if not store.exists():
        return []
    try:
        return _rows(store)
    except sqlite3.OperationalError:  # created, the schema not yet committed
        return []


# 15 s on 2 idle cores (two workers with nannies, 24 tasks, one SIGKILL)
def test_deqrmt_sweep_on_dask_scheduler_survives_a_killed_worker(
    tmp_path: Path, procs: list[subprocess.Popen[bytes]]
) -> None:
    from distributed import Client

    spec_path = tmp_path / "spec.toml"
    spec_path.write_text(SPEC_24)
    spec = load_spec(spec_path)
    assert len(spec.tasks) == 24
    store = tmp_path / "spec.sqlite"
    log = tmp_path / "dask.log"
    address = _dask_scheduler(procs, log)
    workers = {name: _dask_worker(procs, address, name, log) for name in ("w0", "w1")}
    with Client(address, timeout=60, set_as_default=False) as observer:
        observer.wait_for_workers(2, timeout=120)
        addr = {w["name"]: a for a, w in observer.scheduler_info()["workers"].items()}
        assert set(addr) == {"w0", "w1"}
        out, err = tmp_path / "driver.out", tmp_path / "driver.err"
        with out.open("wb") as stdout, err.open("wb") as stderr:
            driver = subprocess.Popen(
                [sys.executable, "-m", "deqrmt", "sweep", str(spec_path), "--scheduler", address,
                 "--store", str(store), "--workers", "2", "--json"],
                stdout=stdout, stderr=stderr, env=_env(), start_new_session=True,
            )  # fmt: skip
        procs.append(driver)

        def w1_busy_mid_run() -> dict[str, Any] | None:
            if driver.poll() is not None:
                raise AssertionError(
                    f"the sweep ended (code {driver.returncode}) before a worker was killed: "
                    + err.read_text(errors="replace")[-3000:]
                )
            rows = _stored(store)
            # w1 has delivered a result, holds another, and half of the sweep is to come
            if not any(r[3] == addr["w1"] for r in rows) or len(rows) > len(spec.tasks) - 6:
                return None
            held = observer.processing(workers=[addr["w1"]]).get(addr["w1"], [])
            return {"stored": len(rows), "held": list(held)} if held else None

        killed = _wait_for(w1_busy_mid_run, 300, "w1 to deliver a result and hold another")
        os.killpg(workers["w1"].pid, signal.SIGKILL)  # the nanny and its worker process
        assert workers["w1"].wait(timeout=30) == -signal.SIGKILL
        killed_at = time.time()
        driver.wait(timeout=600)
    assert driver.returncode == 0, err.read_text(errors="replace")[-3000:]
    report = json.loads(out.read_text())
    assert (report["submitted"], report["completed"], report["failed_this_run"]) == (24, 24, 0)
    # Killed mid-run: results were still to come, and all of them came from the survivor.
    assert 1 <= killed["stored"] <= len(spec.tasks) - 6
    rows = _rows(store)
    after = [r for r in rows if r[2] > killed_at]
    assert after and {r[3] for r in after} == {addr["w0"]}
    assert all(r[2] < killed_at for r in rows if r[3] == addr["w1"])
    # Every task stored exactly once, none failed, none missing, no stranger.
    keys = [r[0] for r in rows]
    assert len(keys) == len(set(keys)) == len(spec.tasks)
    assert set(keys) == spec.keys
    assert [r for r in rows if r[1] is not None] == []
    # The store is whole: SQLite's own check, and it opens and reads as a sweep store.
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert db.execute("SELECT completed, failed FROM runs").fetchall() == [(24, 0)]
    finally:
        db.close()
    with ResultStore(store, create=False) as st:
        records = st.records()
    assert sorted(r.key for r in records) == sorted(spec.keys)
    assert all(r.ok for r in records)


QUIET_SERVERS = """
import sys
import dask
from deqrmt.sweep._cluster import QUIET_DASK, quiet_servers
dask.config.set({"distributed.admin.tick.interval": "7ms"})  # the user's own setting
assert "distributed" not in sys.modules
with quiet_servers() as config:
    for key, value in QUIET_DASK.items():
        assert dask.config.get(key) == value, key
        assert dask.config.get(key, config=config) == value, key
# distributed's section, which the import inside added, is still there; the user's setting back
assert dask.config.get("distributed.admin.large-graph-warning-threshold")
assert dask.config.get("distributed.worker.profile.enabled") is True
assert dask.config.get("distributed.admin.tick.interval") == "7ms"
print("ok")
"""


def test_quiet_servers_keeps_the_configuration_an_import_added() -> None:
    """The quiet settings are set around the cluster's servers only, and undone without taking
    away what ``import distributed`` (inside the context) added: a fresh process."""
    done = subprocess.run(
        [sys.executable, "-c", QUIET_SERVERS], capture_output=True, env=_env(), timeout=300
    )
    assert (done.returncode, done.stdout) == (0, b"ok\n"), done.stderr.decode()[-3000:]


#: A driver that has imported deqrmt.sweep (and not distributed) before it learns the address
#: of a scheduler; it reads the address from stdin, so the test decides whether the scheduler
#: started before or after this import.
IMPORT_ORDER_DRIVER = """
import sys
from deqrmt.sweep import parse_spec, run_sweep
assert "distributed" not in sys.modules
print("imported", flush=True)
address = sys.stdin.readline().strip()
result = run_sweep(parse_spec(sys.argv[1]), store=sys.argv[2], scheduler=address)
print("result", result.submitted, result.completed, result.ok, flush=True)
"""


# ~10 s each on 2 busy cores
@pytest.mark.parametrize("scheduler_first", [True, False], ids=["scheduler-first", "deqrmt-first"])
def test_run_sweep_in_a_fresh_process_whatever_started_first(
    tmp_path: Path, procs: list[subprocess.Popen[bytes]], scheduler_first: bool
) -> None:
    log = tmp_path / "dask.log"

    def cluster() -> str:
        address = _dask_scheduler(procs, log)
        _dask_worker(procs, address, "w0", log)
        return address

    address = cluster() if scheduler_first else ""
    driver = subprocess.Popen(
        [sys.executable, "-c", IMPORT_ORDER_DRIVER, SPEC_3, str(tmp_path / "s.sqlite")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(),
        start_new_session=True,
    )  # fmt: skip
    procs.append(driver)
    assert driver.stdout is not None
    if driver.stdout.readline() != b"imported\n":
        _, err = driver.communicate(timeout=60)
        raise AssertionError(f"the driver did not import deqrmt.sweep: {err.decode()[-3000:]}")
    if not scheduler_first:
        address = cluster()
    out, err = driver.communicate((address + "\n").encode(), timeout=300)
    assert driver.returncode == 0, err.decode(errors="replace")[-3000:]
    assert out.decode().splitlines() == ["result 3 3 True"]


# ---------------------------------------------------------------------------
# docs/deploy.md's SLURM recipe (dask-jobqueue), run as written
# ---------------------------------------------------------------------------

DEPLOY = REPO / "docs" / "deploy.md"


def _recipe() -> tuple[str, str]:
    """The two Python blocks of docs/deploy.md: describe the jobs; submit them and sweep."""
    blocks = re.findall(r"```python\n(.*?)```", DEPLOY.read_text(), flags=re.S)
    assert len(blocks) == 2, blocks
    return blocks[0], blocks[1]


def _need_jobqueue() -> None:
    """Skip without dask-jobqueue; found, not imported: importing ``dask_jobqueue.runner`` sets
    a process-wide SIGINT handler (``sys.exit``) that would leak into later tests of this
    worker (the recipe itself runs in a subprocess)."""
    if importlib.util.find_spec("dask_jobqueue") is None:
        pytest.skip("dask-jobqueue is not installed (pip install 'deqrmt[cluster]')")


def _jobqueue_env() -> dict[str, str]:
    env = _env()
    # the recipe's scheduler serves its dashboard at a port the OS chooses, not 8787
    env["DASK_JOBQUEUE__SLURM__SCHEDULER_OPTIONS"] = '{"dashboard_address": ":0"}'
    return env


def test_slurm_recipe_writes_the_job_script_it_promises(tmp_path: Path) -> None:
    """The first block, as written, with no SLURM here: a SLURMCluster and its job script, whose
    workers are single-threaded processes with 1/16 of the job's memory each."""
    _need_jobqueue()
    describe, _ = _recipe()
    done = subprocess.run(
        [sys.executable, "-c", describe + "\ncluster.close()\n"],
        capture_output=True, env=_jobqueue_env(), cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    script = done.stdout.decode()
    for line in ("#SBATCH -p normal", "#SBATCH -A myproject", "#SBATCH --cpus-per-task=16",
                 "#SBATCH -t 02:00:00"):  # fmt: skip
        assert line in script.splitlines(), (line, script)
    worker = next(ln for ln in script.splitlines() if "distributed.cli.dask_worker" in ln)
    args = worker.split()
    assert args[0] == sys.executable  # the login node's Python, as the page says
    assert args[args.index("--nthreads") + 1] == "1"
    assert args[args.index("--nworkers") + 1] == "16"
    # 64 GB / 16 workers = 4e9 bytes = 3.73 GiB each
    assert args[args.index("--memory-limit") + 1] == f"{64e9 / 16 / 2**30:.2f}GiB"


#: Stand-ins for SLURM's commands: ``sbatch SCRIPT`` runs a copy of the job script here, in a
#: session of its own, and prints what sbatch prints; ``scancel ID`` kills that session.
SBATCH = """#!/bin/bash
set -e
jobs="$(dirname "$0")/../jobs"
copy="$jobs/job-$(ls "$jobs" | wc -l).sh"
cp "$1" "$copy"
setsid bash "$copy" > "$copy.log" 2>&1 < /dev/null &
echo "$!" >> "$jobs/../job-ids"
echo "Submitted batch job $!"
"""
SCANCEL = """#!/bin/bash
kill -KILL -- "-$1" 2>/dev/null || true
"""


@pytest.mark.slow  # 15–30 s on 2 busy cores: a SLURMCluster, one job of two workers, a sweep
def test_slurm_recipe_runs_a_sweep_on_its_jobs(tmp_path: Path) -> None:
    """Both blocks as written, but for the size (one job of two workers) and with sbatch and
    scancel stand-ins that run the job script on this machine: the sweep completes on the
    jobs' workers, and closing the cluster cancels the job."""
    _need_jobqueue()
    describe, submit = _recipe()
    for old, new in (("cores=16,", "cores=2,"), ("processes=16,", "processes=2,"),
                     ('memory="64GB",', 'memory="4GB",')):  # fmt: skip
        describe = _edit(describe, old, new)
    submit = _edit(submit, "cluster.scale(jobs=4)", "cluster.scale(jobs=1)")
    submit = _edit(submit, "cluster.wait_for_workers(16)", "cluster.wait_for_workers(2, 120)")
    bin_dir, jobs = tmp_path / "bin", tmp_path / "jobs"
    bin_dir.mkdir()
    jobs.mkdir()
    for name, text in (("sbatch", SBATCH), ("scancel", SCANCEL)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    (tmp_path / "spec.toml").write_text(SPEC_3)
    env = _jobqueue_env()
    env["PATH"] = os.pathsep.join([str(bin_dir), env.get("PATH", "")])
    driver = subprocess.Popen(
        [sys.executable, "-c", describe + submit],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tmp_path,
        start_new_session=True,
    )  # fmt: skip
    ids = tmp_path / "job-ids"
    try:
        out, err = driver.communicate(timeout=600)
        assert driver.returncode == 0, err.decode()[-3000:]
        assert "#SBATCH --cpus-per-task=2" in out.decode()
        assert re.search(r"^total +3 +3 +0 +0 ", out.decode(), flags=re.M), out.decode()
        with ResultStore(tmp_path / "spec.sqlite", create=False) as st:
            records = st.records()
        assert len(records) == 3 and all(r.ok for r in records)
        # one job submitted; cancelled by cluster.close(): its workers are gone
        (job,) = [int(x) for x in ids.read_text().split()]
        _wait_for(lambda: not _alive(job), 60, "the cancelled job's processes to end")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(driver.pid, signal.SIGKILL)
        driver.wait(timeout=30)
        for job in [int(x) for x in ids.read_text().split()] if ids.exists() else []:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(job, signal.SIGKILL)
            _wait_for(lambda: not _alive(job), 60, "the job's processes to end")  # noqa: B023


def _edit(block: str, old: str, new: str) -> str:
    assert block.count(old) == 1, f"docs/deploy.md no longer has {old!r} once"
    return block.replace(old, new)


def _alive(group: int) -> bool:
    """Whether process group ``group`` (a stand-in job, not our child: it cannot be waited
    for) still has a process; one that has exited but is not reaped yet counts as gone."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == group and fields[0] != "Z":
                return True
    return False

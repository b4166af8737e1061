"""Exact kernels on Dask into a Zarr store (``deqrmt.kernels(..., out=...)``, ``deqrmt kernels``).

The reference is the in-memory :func:`deqrmt.validate.kernels` of the whole data (one engine,
one call): each stored tile is computed from its own rows only, so the two agree to the
tolerance of the diagonal fixed points (~1e-13 relative), and 1e-12 is asserted.  One embedded
cluster (2 workers) serves the module; small sizes (n ≤ 200, p = 10, tiles of 32–64).
"""

from __future__ import annotations

import io
import json
import os
import shutil
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("distributed")
zarr = pytest.importorskip("zarr")

import deqrmt  # noqa: E402
from deqrmt import BudgetExceeded, FileError, InvalidArgument, StoreError  # noqa: E402
from deqrmt.sweep import _kernel_run  # noqa: E402
from deqrmt.validate import kernels as in_memory  # noqa: E402

RTOL = 1e-12


@pytest.fixture(scope="module")
def address() -> object:
    from deqrmt.sweep._cluster import launched_cluster

    with launched_cluster(2) as addr:
        yield addr


def _data(n: int, p: int = 10, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, p)) / np.sqrt(p)


def _close(stored: np.ndarray, ref: np.ndarray) -> float:
    assert not np.isnan(stored).any(), "a tile was never written"
    return float(np.max(np.abs(stored - ref) / np.abs(ref)))


@pytest.fixture(scope="module")
def ck_store(tmp_path_factory: pytest.TempPathFactory, address: str) -> tuple[Path, np.ndarray]:
    """The tanh CK of 200 samples in tiles of 64 (4 × 4 grid, 10 upper tiles), from a .npy."""
    d = tmp_path_factory.mktemp("ck")
    X = _data(200)
    np.save(d / "X.npy", X)
    K = deqrmt.kernels("tanh", str(d / "X.npy"), out=d / "K.zarr", tile=64, scheduler=address)
    assert isinstance(K, zarr.Array) and K.shape == (200, 200) and K.chunks == (64, 64)
    return d, X


def test_ck_store_equals_the_in_memory_kernel(ck_store: tuple[Path, np.ndarray]) -> None:
    d, X = ck_store
    K = zarr.open_group(d / "K.zarr", mode="r")["ck"]
    ref = in_memory("tanh", X)
    assert _close(K[...], ref) < RTOL
    assert np.array_equal(K[...], K[...].T)  # the lower triangle is the upper one, mirrored
    meta = zarr.open_group(d / "K.zarr", mode="r").attrs["deqrmt"]
    assert meta["activation"] == "tanh" and meta["kind"] == ["ck"]
    assert meta["sigma_a2"] == 0.2 and meta["sigma_b2"] == 0.8 and meta["tile"] == 64
    assert meta["X1_sha256"] != meta.get("X2_sha256")


def test_ntk_store_of_an_in_memory_array(tmp_path: Path, address: str) -> None:
    """An in-memory X is copied into the store, where the workers read it."""
    X = _data(150, seed=1)
    K = deqrmt.kernels("relu", X, out=tmp_path / "K.zarr", kind="ntk", tile=64, scheduler=address)
    ref = in_memory("relu", X, kind="ntk")
    assert _close(K[...], ref) < RTOL
    stored_x = zarr.open_group(tmp_path / "K.zarr", mode="r")["X1"][...]
    assert np.array_equal(stored_x, X)


def test_both_kinds_of_a_cross_kernel_from_zarr_data(tmp_path: Path, address: str) -> None:
    """k(X1, X2) with X1 a Zarr array and X2 a .npy file: every rows × columns tile."""
    X1, X2 = _data(130, seed=2), _data(70, seed=3)
    zarr.create_array(tmp_path / "X1.zarr", data=X1, chunks=(50, 10))
    np.save(tmp_path / "X2.npy", X2)
    G = deqrmt.kernels(
        "tanh", str(tmp_path / "X1.zarr"), str(tmp_path / "X2.npy"), out=tmp_path / "K.zarr",
        kind="both", tile=32, sigma_a2="0.3", scheduler=address,
    )  # fmt: skip
    assert isinstance(G, zarr.Group) and sorted(G.array_keys()) == ["ck", "done", "ntk"]
    for kind in ("ck", "ntk"):
        ref = in_memory("tanh", X1, X2, kind=kind, sigma_a2="0.3")
        assert G[kind].shape == (130, 70)
        assert _close(G[kind][...], ref) < RTOL, kind


def test_resume_computes_only_the_missing_tiles(
    ck_store: tuple[Path, np.ndarray], address: str, tmp_path: Path
) -> None:
    src, X = ck_store
    # a copy: the module's store stays as built for the other tests, in any order
    d = tmp_path / "resumed"
    shutil.copytree(src, d)
    store = zarr.open_group(d / "K.zarr", mode="r+")
    lost = [(0, 1), (2, 3), (3, 3)]
    for i, j in lost:  # a worker died before the marks: chunks gone or half written
        store["done"][i, j] = False
        store["ck"][i * 64 : (i + 1) * 64, j * 64 : (j + 1) * 64] = np.nan
    store["ck"][0, 0] = 42.0  # a kept tile: a rerun must not touch it
    run = deqrmt.sweep.write_kernels(
        "tanh", d / "X.npy", out=d / "K.zarr", tile=64, scheduler=address
    )
    assert (run.tiles, run.already_done, run.computed) == (10, 7, 3)
    K = zarr.open_group(d / "K.zarr", mode="r")["ck"][...]
    assert K[0, 0] == 42.0
    K[0, 0] = in_memory("tanh", X[:1])[0, 0]
    assert _close(K, in_memory("tanh", X)) < RTOL
    # everything stored: nothing to compute, no cluster needed
    again = deqrmt.sweep.write_kernels("tanh", d / "X.npy", out=d / "K.zarr", tile=64)
    assert (again.computed, again.already_done, again.scheduler) == (0, 10, "nothing to compute")


def test_a_store_for_other_data_or_settings_is_refused(
    ck_store: tuple[Path, np.ndarray], tmp_path: Path
) -> None:
    d, X = ck_store
    out = d / "K.zarr"
    before = sorted(os.listdir(out))
    with pytest.raises(StoreError, match=r"sigma_a2: store 0\.2, now 0\.3.*force=True"):
        deqrmt.kernels("tanh", d / "X.npy", out=out, tile=64, sigma_a2="0.3")
    other = X.copy()
    other[5, 3] += 1e-9
    np.save(tmp_path / "Y.npy", other)
    with pytest.raises(StoreError, match=r"data \(SHA-256 of X\).*out=… a new path"):
        deqrmt.kernels("tanh", tmp_path / "Y.npy", out=out, tile=64)
    with pytest.raises(StoreError, match="activation: store 'tanh', now 'relu'"):
        deqrmt.kernels("relu", d / "X.npy", out=out, tile=64)
    assert sorted(os.listdir(out)) == before


def test_a_path_that_is_no_kernel_store_is_never_replaced(tmp_path: Path) -> None:
    X = _data(20)
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "keep").write_text("mine")
    for out in ("notes.txt", "dir"):
        with pytest.raises(FileError, match="not a deqrmt kernel store"):
            deqrmt.kernels("relu", X, out=tmp_path / out, force=True)
    assert (tmp_path / "notes.txt").read_text() == "mine"
    assert (tmp_path / "dir" / "keep").read_text() == "mine"
    os.symlink(tmp_path / "dir", tmp_path / "link")
    with pytest.raises(FileError, match="symbolic link"):
        deqrmt.kernels("relu", X, out=tmp_path / "link")


def test_force_replaces_a_kernel_store_for_other_settings(
    tmp_path: Path, address: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    X = _data(40, seed=4)
    deqrmt.kernels("relu", X, out=tmp_path / "K.zarr", tile=32, scheduler=address)

    class Full:
        free = 0

    with monkeypatch.context() as m:  # a refused run replaces nothing, force or not
        m.setattr(_kernel_run.shutil, "disk_usage", lambda _d: Full())
        with pytest.raises(BudgetExceeded, match="on disk"):
            deqrmt.kernels("relu", X, out=tmp_path / "K.zarr", tile=32, sigma_a2="0.4", force=True)
    kept = zarr.open_group(tmp_path / "K.zarr", mode="r")
    assert kept.attrs["deqrmt"]["sigma_a2"] == 0.2
    assert kept["done"][0, 0] and kept["done"][0, 1] and kept["done"][1, 1]
    K = deqrmt.kernels(
        "relu", X, out=tmp_path / "K.zarr", tile=32, sigma_a2="0.4", force=True, scheduler=address
    )
    assert _close(K[...], in_memory("relu", X, sigma_a2="0.4")) < RTOL
    assert zarr.open_group(tmp_path / "K.zarr", mode="r").attrs["deqrmt"]["sigma_a2"] == 0.4


def test_budgets_are_refused_before_any_work(
    tmp_path: Path, address: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    X = _data(100)
    out = tmp_path / "K.zarr"
    monkeypatch.setattr(_kernel_run, "MAX_ENTRIES", 5000)
    with pytest.raises(BudgetExceeded, match=r"more than MAX_ENTRIES .*pieces"):
        deqrmt.kernels("relu", X, out=out, tile=32)
    monkeypatch.undo()
    monkeypatch.setattr(_kernel_run, "MAX_TILES", 5)
    with pytest.raises(BudgetExceeded, match=r"10 tiles of 32 × 32 .* use a tile of 46 or more"):
        deqrmt.kernels("relu", X, out=out, tile=32)
    monkeypatch.undo()

    class Usage:
        free = 10_000

    monkeypatch.setattr(_kernel_run.shutil, "disk_usage", lambda _d: Usage())
    with pytest.raises(BudgetExceeded, match=r"needs 85.9 KiB on disk.*9.77 KiB free.*larger"):
        deqrmt.kernels("relu", X, out=out, tile=32)
    monkeypatch.undo()
    monkeypatch.setattr(_kernel_run, "WORKER_BASE", 1 << 50)  # no worker has a petabyte
    with pytest.raises(BudgetExceeded, match=r"a tile of 32 × 32 needs .* per thread.*tile=…"):
        deqrmt.kernels("relu", X, out=out, tile=32, scheduler=address)
    assert not out.exists()  # nothing was created


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    X = _data(10)
    with pytest.raises(InvalidArgument, match="scheduler needs out="):
        deqrmt.kernels("relu", X, scheduler="tcp://127.0.0.1:1")
    with pytest.raises(InvalidArgument, match="kind='both' needs out="):
        deqrmt.kernels("relu", X, kind="both")
    with pytest.raises(InvalidArgument, match="sigma_a2 must be > 0"):
        deqrmt.kernels("relu", X, out=tmp_path / "K.zarr", sigma_a2="-1")
    with pytest.raises(InvalidArgument, match="act must be an activation name"):
        deqrmt.kernels(lambda x: x, X, out=tmp_path / "K.zarr")
    bad = X.copy()
    bad[3, 3] = np.nan
    with pytest.raises(InvalidArgument, match="non-finite"):
        deqrmt.kernels("relu", bad, out=tmp_path / "K.zarr")
    with pytest.raises(InvalidArgument, match="same number of features"):
        deqrmt.kernels("relu", X, X[:, :5], out=tmp_path / "K.zarr")
    assert not (tmp_path / "K.zarr").exists()
    # in memory: the validate path, unchanged
    assert np.array_equal(deqrmt.kernels("relu", X), in_memory("relu", X))


def _cli(argv: list[str]) -> tuple[int, str, str]:
    from deqrmt.cli import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def test_cli_end_to_end_with_json(tmp_path: Path, address: str) -> None:
    X = _data(90, seed=5)
    np.savetxt(tmp_path / "X.csv", X, delimiter=",", fmt="%.17g")
    argv = [
        "kernels", "relu", "--data", str(tmp_path / "X.csv"), "--out", str(tmp_path / "K.zarr"),
        "--kind", "ntk", "--tile", "32", "--scheduler", address, "--json",
    ]  # fmt: skip
    code, out, err = _cli(argv)
    assert code == 0, err
    result = json.loads(out)
    assert result["command"] == "kernels" and result["inputs"]["kind"] == "ntk"
    assert result["tiles"] == 6 and result["computed"] == 6 and result["complete"] is True
    assert result["shape"] == [90, 90] and result["bytes"] == 90 * 90 * 8
    K = zarr.open_group(tmp_path / "K.zarr", mode="r")["ntk"][...]
    assert _close(K, in_memory("relu", X, kind="ntk")) < RTOL
    code, out, err = _cli(argv)  # again: nothing to compute
    result = json.loads(out)
    assert code == 0 and result["computed"] == 0 and result["already_done"] == 6
    code, out, err = _cli([*argv[:-3], "--sigma-a2", "0.3"])
    assert code == 2 and "StoreError" in err and "--force" in err and len(err.splitlines()) == 1


def test_progress_is_called_once_per_tile(tmp_path: Path, address: str) -> None:
    calls: list[tuple[int, int]] = []
    deqrmt.kernels(
        "relu", _data(70, seed=6), out=tmp_path / "K.zarr", tile=32, scheduler=address,
        progress=lambda done, total: calls.append((done, total)),
    )  # fmt: skip
    assert calls == [(k, 6) for k in range(1, 7)]


def test_a_task_writes_only_into_the_store_it_was_made_for(tmp_path: Path) -> None:
    """A task left running by an interrupted run must not write into a store that force=True
    replaced meanwhile: it checks the store's id before writing anything."""
    from deqrmt.sweep._kernel_run import compute_tile
    from deqrmt.sweep._kernel_store import KernelSpec, create_store, data_ref, tile_grid

    X = _data(40, seed=8)
    path = str(tmp_path / "K.zarr")
    ref, arr = data_ref(X, "X1", path)
    spec = KernelSpec("relu", 0.2, 0.8, None, ("ck",), ("a", "A"), 1e-13, "auto", 32, ref, None)
    assert tile_grid(spec) == [(0, 0), (0, 1), (1, 1)]
    group, sid = create_store(path, spec, [("X1", arr)])
    assert [p.name for p in tmp_path.iterdir()] == ["K.zarr"]  # made beside it, renamed
    assert compute_tile(path, "another-store", spec, 0, 1, "cpu")["skipped"]
    assert not group["done"][0, 1] and np.isnan(group["ck"][0:32, 32:40]).all()
    status = compute_tile(path, sid, spec, 0, 1, "cpu")
    assert "skipped" not in status and group["done"][0, 1]
    ref_tile = in_memory("relu", X[:32], X[32:])
    assert _close(group["ck"][0:32, 32:40], ref_tile) < RTOL
    assert np.array_equal(group["ck"][32:40, 0:32], group["ck"][0:32, 32:40].T)


def test_ctrl_c_exits_130_and_the_same_command_resumes(tmp_path: Path, address: str) -> None:
    import signal
    import subprocess
    import sys
    import time

    X = _data(384, seed=9)
    np.save(tmp_path / "X.npy", X)
    env = dict(os.environ, DEQRMT_NO_PROGRESS="1")
    src = str(Path(__file__).resolve().parents[1] / "src")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH", "")) if p)
    argv = [
        sys.executable, "-m", "deqrmt", "kernels", "relu", "--data", str(tmp_path / "X.npy"),
        "--out", str(tmp_path / "K.zarr"), "--tile", "32", "--scheduler", address, "--json",
    ]  # fmt: skip
    marks = tmp_path / "K.zarr" / "done" / "c"
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        deadline = time.monotonic() + 300
        while proc.poll() is None and time.monotonic() < deadline:
            if marks.is_dir() and any(marks.iterdir()):
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    assert proc.returncode == 130, err.decode()
    assert (
        "deqrmt: interrupted;" in err.decode() and "run the same command to resume" in err.decode()
    )
    partial = json.loads(out)
    assert partial["interrupted"] and 0 < partial["computed"] < 78  # 12 × 13 / 2 tiles
    done = subprocess.run(argv, capture_output=True, env=env, timeout=600, check=False)
    assert done.returncode == 0, done.stderr.decode()
    result = json.loads(done.stdout)
    assert result["already_done"] >= partial["computed"] and result["complete"]
    K = zarr.open_group(tmp_path / "K.zarr", mode="r")["ck"][...]
    assert _close(K, in_memory("relu", X)) < RTOL


def test_a_progress_bar_at_a_terminal(tmp_path: Path, address: str) -> None:
    """Through a real pty: tiles done / total, the rate; none with --quiet or in a pipe."""
    import fcntl
    import pty
    import select
    import struct
    import subprocess
    import sys
    import termios

    np.save(tmp_path / "X.npy", _data(200, seed=10))
    env = {k: v for k, v in os.environ.items() if k != "DEQRMT_NO_PROGRESS"}
    src = str(Path(__file__).resolve().parents[1] / "src")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH", "")) if p)
    argv = [
        sys.executable, "-m", "deqrmt", "kernels", "relu", "--data", str(tmp_path / "X.npy"),
        "--out", str(tmp_path / "K.zarr"), "--tile", "32", "--scheduler", address,
    ]  # fmt: skip
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # 100 columns
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    seen = b""
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 1.0)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the pty closed with the process
                    break
                if not chunk:
                    break
                seen += chunk
            elif proc.poll() is not None:
                break
        out, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        os.close(master)
    text = seen.decode("utf-8", "replace")
    assert proc.returncode == 0, text
    assert "tiles" in text and "28/28" in text and "tile/s" in text, text
    assert "28/28" not in out.decode()  # the bar is on the terminal, never in the table

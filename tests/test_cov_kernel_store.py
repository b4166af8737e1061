"""Edges of the kernel store (``kernels(..., out=…)``) that need no cluster: the data a store
reads (paths that are not arrays, arrays that are not data), its metadata checks, the budgets,
a worker too small for a tile, and how a failed tile is reported.

The expected messages and sizes are written out by hand (the tile halving below is worked out
from :func:`tile_bytes`' formula in the test, not read from the code's answer).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

zarr = pytest.importorskip("zarr")

from deqrmt import (  # noqa: E402
    BudgetExceeded,
    FileError,
    InvalidArgument,
    SchedulerError,
    StoreError,
)
from deqrmt.sweep import _kernel_run, _kernel_store  # noqa: E402
from deqrmt.sweep._kernel_store import DataRef, KernelSpec, data_ref  # noqa: E402


def _spec(n: int = 10, p: int = 3, tile: int = 4) -> KernelSpec:
    ref = DataRef("npy", "/nowhere/X.npy", "", (n, p), "0" * 64)
    return KernelSpec("tanh", 0.2, 0.8, None, ("ck",), ("a", "A"), 1e-13, "auto", tile, ref, None)


# -- the data ----------------------------------------------------------------------------------


def test_a_missing_data_file_is_a_file_error(tmp_path: Path) -> None:
    with pytest.raises(FileError, match=r"cannot read X .*No such file"):
        data_ref(str(tmp_path / "absent.npy"), "X", str(tmp_path / "K.zarr"))


def test_a_fifo_is_refused_without_being_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "X.npy"
    os.mkfifo(fifo)
    with pytest.raises(FileError, match="not a regular file"):
        data_ref(fifo, "X", str(tmp_path / "K.zarr"))


def test_a_file_that_is_not_npy_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "X.npy"
    path.write_text("1,2,3\n")
    with pytest.raises(InvalidArgument, match=r"is not a \.npy array file"):
        data_ref(path, "X", str(tmp_path / "K.zarr"))


def test_an_npz_archive_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "X.npz"
    np.savez(path, a=np.ones((2, 2)), b=np.ones((2, 2)))
    with pytest.raises(InvalidArgument, match=r"holds several arrays \(\.npz\)"):
        data_ref(path, "X", str(tmp_path / "K.zarr"))


def test_a_directory_that_is_no_zarr_array_is_refused(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    with pytest.raises(InvalidArgument, match="is a directory but not a Zarr array"):
        data_ref(tmp_path / "d", "X", str(tmp_path / "K.zarr"))


def test_an_in_memory_zarr_array_is_refused_and_one_on_disk_is_read_in_place(
    tmp_path: Path,
) -> None:
    mem = zarr.create_array(store={}, shape=(4, 2), dtype="float64")
    mem[...] = 1.0
    with pytest.raises(InvalidArgument, match="outside the file system"):
        data_ref(mem, "X", str(tmp_path / "K.zarr"))
    X = np.arange(8.0).reshape(4, 2)
    disk = zarr.create_array(store=str(tmp_path / "X.zarr"), shape=(4, 2), dtype="float64")
    disk[...] = X
    ref, copy = data_ref(disk, "X", str(tmp_path / "K.zarr"))
    assert copy is None  # the workers read it where it is
    assert (ref.kind, ref.path, ref.shape) == ("zarr", str(tmp_path / "X.zarr"), (4, 2))
    np.testing.assert_array_equal(_kernel_store.read_rows(ref, 1, 3), X[1:3])


@pytest.mark.parametrize(
    ("X", "match"),
    [
        (np.ones(4), r"non-empty 2-D array .*shape \(4,\)"),
        (np.ones((0, 3)), r"non-empty 2-D array .*shape \(0, 3\)"),
        ([[1.0, "a"]], "must be a 2-D array of numbers"),
        ([[1.0, np.nan]], r"non-finite entries"),
    ],
)
def test_in_memory_data_that_is_no_real_matrix_is_refused(
    X: object, match: str, tmp_path: Path
) -> None:
    with pytest.raises(InvalidArgument, match=match):
        data_ref(X, "X", str(tmp_path / "K.zarr"))


def test_a_npy_of_strings_is_refused_by_dtype(tmp_path: Path) -> None:
    np.save(tmp_path / "X.npy", np.array([["a", "b"]]))
    with pytest.raises(InvalidArgument, match="must hold real numbers, got dtype <U1"):
        data_ref(tmp_path / "X.npy", "X", str(tmp_path / "K.zarr"))


# -- the store -------------------------------------------------------------------------------


def test_metadata_that_is_not_ours_is_refused() -> None:
    with pytest.raises(StoreError, match="is not a deqrmt kernel store"):
        _kernel_store.check_metadata({"format": "other/1"}, {}, "K.zarr")
    with pytest.raises(StoreError, match="is not a deqrmt kernel store"):
        _kernel_store.check_metadata(None, {}, "K.zarr")


def test_a_zarr_json_that_is_not_json_is_no_kernel_store(tmp_path: Path) -> None:
    d = tmp_path / "K.zarr"
    d.mkdir()
    (d / "zarr.json").write_text("{not json")
    assert not _kernel_store._is_kernel_store(str(d))
    (d / "zarr.json").write_text(
        json.dumps({"attributes": {"deqrmt": {"format": "deqrmt-kernels/1"}}})
    )
    assert _kernel_store._is_kernel_store(str(d))


def test_a_store_in_a_missing_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FileError, match="the directory .* does not exist"):
        _kernel_store.open_store(str(tmp_path / "no" / "K.zarr"), _spec(), force=False)


def test_a_store_cannot_be_renamed_over_a_directory_that_appeared(tmp_path: Path) -> None:
    # Another run made the directory meanwhile: the rename is refused, nothing half-made stays.
    path = tmp_path / "K.zarr"
    path.mkdir()
    (path / "theirs").write_text("x")
    with pytest.raises(FileError, match="did another run create it meanwhile"):
        _kernel_store.create_store(str(path), _spec(), [])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["K.zarr"]
    assert (path / "theirs").read_text() == "x"


@pytest.mark.parametrize("out", ["", "-", "a\x00b"])
def test_an_out_that_names_no_directory_is_refused(out: str) -> None:
    with pytest.raises(InvalidArgument, match="the path of a directory to create"):
        _kernel_store.path_of(out)


# -- budgets and workers -----------------------------------------------------------------------


def test_an_unknown_kind_is_refused() -> None:
    with pytest.raises(InvalidArgument, match="kind must be 'ck', 'ntk' or 'both', got kind='k'"):
        _kernel_run._checked("tanh", "k", None, None, None)


def test_free_space_of_a_missing_directory_is_a_file_error(tmp_path: Path) -> None:
    with pytest.raises(FileError, match="cannot read the free space"):
        _kernel_run._check_budgets(_spec(), 1, str(tmp_path / "no" / "K.zarr"))


class _Client:
    def __init__(self, limit: int, nthreads: int) -> None:
        self.info = {"workers": {"tcp://w:1": {"memory_limit": limit, "nthreads": nthreads}}}

    def scheduler_info(self) -> dict[str, object]:
        return self.info


def test_a_tile_too_big_for_a_worker_names_a_tile_that_fits() -> None:
    p = 3
    base = _kernel_run.WORKER_BASE
    per = _kernel_run.TILE_ARRAYS * 8

    def need(t: int) -> int:  # the formula of tile_bytes, written out
        return base + per * t * t + 16 * t * p

    # a worker whose thread has room for a tile of 300 but not of 301: a tile of 1024 is halved
    # to 512 (too big), then 256 (fits)
    limit = need(300)
    spec = _spec(n=4096, p=p, tile=1024)
    with pytest.raises(BudgetExceeded, match=r"use a tile of 256 \(tile=…\)"):
        _kernel_run._check_worker_memory(_Client(2 * limit, 2), spec, "the cluster")
    _kernel_run._check_worker_memory(_Client(2 * limit, 2), _spec(n=4096, p=p, tile=256), "c")


def test_a_failed_tile_is_reported_as_what_it_is() -> None:
    err = InvalidArgument("bad")
    with pytest.raises(InvalidArgument, match="^bad$"):
        _kernel_run._raise_task_error(err, (0, 1), "K.zarr")
    with pytest.raises(FileError, match=r"cannot write tile \(0, 1\) of .*No space left"):
        _kernel_run._raise_task_error(OSError(28, "No space left on device"), (0, 1), "K.zarr")

    class KilledWorker(Exception):  # Dask's name for a task that killed its workers
        pass

    with pytest.raises(SchedulerError, match=r"tile \(2, 3\) .* killed its workers"):
        _kernel_run._raise_task_error(KilledWorker("x"), (2, 3), "K.zarr")
    with pytest.raises(ZeroDivisionError):  # a bug stays a bug (exit 70), not a user error
        _kernel_run._raise_task_error(ZeroDivisionError("x"), (0, 0), "K.zarr")


# -- the driver's loop over tiles, on a stand-in client ----------------------------------------------


class _TileFuture:
    def __init__(self, status: str, result: object) -> None:
        self.status, self._result = status, result
        self.released = self.cancelled = False

    def result(self) -> object:
        if isinstance(self._result, BaseException):
            raise self._result
        return self._result

    def exception(self) -> object:
        return self._result

    def release(self) -> None:
        self.released = True

    def cancel(self) -> None:
        self.cancelled = True


class _TileClient:
    """``map`` answers each tile with the next outcome its script lists (status, result)."""

    loop = None

    def __init__(self, script: dict[tuple[int, int], list[tuple[str, object]]]) -> None:
        self.script = {t: list(v) for t, v in script.items()}
        self.submitted: list[tuple[int, int]] = []

    def map(self, func, *args, **kwargs):  # type: ignore[no-untyped-def]
        tiles = list(zip(args[3], args[4], strict=True))
        self.submitted += tiles
        return [_TileFuture(*self.script[t].pop(0)) for t in tiles]


def _run_tiles(monkeypatch, script):  # type: ignore[no-untyped-def]
    import types

    fake = types.SimpleNamespace(as_completed=lambda futs, loop=None: iter(futs))
    monkeypatch.setattr(_kernel_run, "require_distributed", lambda: fake)
    client = _TileClient(script)
    seen: list[tuple[int, int]] = []
    done = _kernel_run._run_tiles(
        client, "K.zarr", "sid", _spec(), list(script), "cpu", lambda d, t: seen.append((d, t))
    )
    return done, client.submitted, seen


def test_tiles_lost_with_a_worker_are_submitted_again(monkeypatch) -> None:
    from concurrent.futures import CancelledError

    ok = ("finished", {"skipped": False})
    script = {
        (0, 0): [ok],
        (0, 1): [("cancelled", None), ok],  # lost with its worker
        (1, 1): [("finished", CancelledError()), ok],  # released meanwhile
    }
    done, submitted, seen = _run_tiles(monkeypatch, script)
    assert done == 3
    assert submitted == [(0, 0), (0, 1), (1, 1), (0, 1), (1, 1)]
    assert seen == [(1, 3), (2, 3), (3, 3)]


def test_a_tile_lost_every_round_is_left_missing(monkeypatch) -> None:
    rounds = _kernel_run.LOST_ROUNDS + 1
    done, submitted, _ = _run_tiles(monkeypatch, {(0, 0): [("cancelled", None)] * rounds})
    assert done == 0 and submitted == [(0, 0)] * rounds  # the caller reports it missing


def test_a_tile_that_failed_or_found_another_store_stops_the_run(monkeypatch) -> None:
    with pytest.raises(FileError, match=r"cannot write tile \(0, 0\) of 'K.zarr': Read-only"):
        _run_tiles(monkeypatch, {(0, 0): [("error", OSError(30, "Read-only file system"))]})
    with pytest.raises(StoreError, match="was replaced while this run wrote it"):
        _run_tiles(monkeypatch, {(0, 0): [("finished", {"skipped": True})]})

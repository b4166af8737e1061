"""Benchmark: an exact kernel on the embedded Dask cluster into a Zarr store, against memory.

What is timed, in one run:

* **store**: ``deqrmt.sweep.write_kernels("tanh", X.npy, out=K.zarr)`` at n = 32768 (``--n``),
  p = 64, tiles of 1024 (``--tile``), on the embedded cluster (one worker process per core;
  ``--workers``): from the first submission to the last tile written (``KernelStoreRun.seconds``),
  and end to end (the cluster's start and close included);
* **memory**: the in-memory ``deqrmt.kernels("tanh", X[:n/4])`` at a quarter of n (8192 by
  default, after a small warm-up call), scaled by the pairs, ×16: what the same kernel would
  cost in memory if it fitted.

The ratio store / (memory × 16) is the price of the tiles, the processes and the disk
(1 would be free; below 1 the workers' processes beat the one process's threads).  Printed with
them: the bytes written (8 per entry) and the load before and after; the ratio is withheld on a
busy machine unless ``--force-ratio`` (``_load.py``).  The store goes to a temporary directory
(``--dir``), removed afterwards; n = 32768 needs 8.6 GB of disk.

    python benchmarks/kernels_dask.py                 # n = 32768: 8.6 GB, minutes
    python benchmarks/kernels_dask.py --n 8192        # against n = 2048 in memory
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _load import Load, add_force_flag, load_line, ratio_text, track_descendants  # noqa: E402

import deqrmt  # noqa: E402
from deqrmt.sweep import write_kernels  # noqa: E402


def _directory_bytes(path: str) -> int:
    return sum(
        os.path.getsize(os.path.join(root, f)) for root, _, files in os.walk(path) for f in files
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--act", default="tanh")
    ap.add_argument("--n", type=int, default=32768, help="rows of the stored kernel")
    ap.add_argument("--p", type=int, default=64, help="features")
    ap.add_argument("--tile", type=int, default=1024, help="tile side (the store's chunks)")
    ap.add_argument("--workers", type=int, default=None, help="embedded cluster's workers")
    ap.add_argument("--dir", default=None, help="where the temporary store goes")
    add_force_flag(ap)
    args = ap.parse_args(argv)
    n, small = args.n, max(16, args.n // 4)
    print(f"deqrmt {deqrmt.__version__}, {os.cpu_count()} cores; {args.act}, p = {args.p}")
    X = np.random.default_rng(0).standard_normal((n, args.p)) / np.sqrt(args.p)
    deqrmt.kernels(args.act, X[:64], device="cpu")  # warm-up: imports, code paths
    work = tempfile.mkdtemp(prefix="deqrmt-kernels-bench-", dir=args.dir)
    # the cluster's worker processes are this run's own load, not other processes'
    with track_descendants(), _removed(work):
        np.save(os.path.join(work, "X.npy"), X)
        before = Load.now()
        print(load_line("before", before))
        t = time.perf_counter()
        deqrmt.kernels(args.act, X[:small], device="cpu")
        t_memory = time.perf_counter() - t
        scaled = t_memory * (n / small) ** 2
        print(f"memory: n = {small}: {t_memory:.2f} s; scaled by pairs to n = {n}: {scaled:.1f} s")
        t = time.perf_counter()
        run = write_kernels(
            args.act, os.path.join(work, "X.npy"), out=os.path.join(work, "K.zarr"),
            tile=args.tile, workers=args.workers, device="cpu",
        )  # fmt: skip
        t_total = time.perf_counter() - t
        after = Load.now()
        written = _directory_bytes(os.path.join(work, "K.zarr"))
        print(
            f"store:  n = {n}: {run.seconds:.1f} s computing {run.tiles} tiles of {args.tile}² "
            f"on {run.scheduler}; {t_total:.1f} s end to end"
        )
        print(f"bytes written: {written:,} (the kernel's entries: {run.bytes:,})")
        print("store / (memory scaled by pairs): " + ratio_text(
            run.seconds / scaled, before, after, force=args.force_ratio
        ))  # fmt: skip
        print(load_line("after", after))


@contextlib.contextmanager
def _removed(path: str) -> Iterator[None]:
    try:
        yield
    finally:
        shutil.rmtree(path, ignore_errors=True)


if __name__ == "__main__":
    main()

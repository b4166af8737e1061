"""Benchmark: ``deqrmt.kernels(act, X)``, the exact DEQ kernel on the user's own data (issue 24).

What is timed: one call ``kernels("tanh", X)`` (the CK G*, φ as given, σ_a² = 0.2) on the paper's
data (``paper_mixture``, p = 0.8 n: n = 4096 rows, p = 3277 by default), in float64 on the CPU,
after one small warm-up call (imports, the Mehler tables' code paths).  Printed with it, measured
in the same process just before and just after: ONE full n × n × p float64 matrix product XᵀX on
every core (the machine's own rate; the ratio kernels / matmul is withheld on a busy machine, see
``_load.py``), and the load.  ``--one-worker`` also times the same call with its tiles on one
worker thread (what ``kernels`` did before issue 24: one thread), prints the ratio, and checks
that both outputs have the same bytes.

    python benchmarks/kernels_data.py                     # n = 4096, p = 3277
    python benchmarks/kernels_data.py --n 2048,4096 --one-worker
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _load import Load, add_force_flag, load_line, ratio_text  # noqa: E402

import deqrmt  # noqa: E402
from deqrmt.validate import paper_mixture  # noqa: E402


def _matmul_seconds(X: np.ndarray) -> float:
    """Wall time of one full XᵀX (n × n × p, float64; X is n × p) on every core."""
    Xt = torch.as_tensor(X)
    old = torch.get_num_threads()
    torch.set_num_threads(os.cpu_count() or 1)
    try:
        t = time.perf_counter()
        C = Xt @ Xt.T
        dt = time.perf_counter() - t
    finally:
        torch.set_num_threads(old)
    del C
    return dt


def _kernels_seconds(act: str, X: np.ndarray) -> tuple[np.ndarray, float, float]:
    """(the kernel, wall seconds, the process's CPU seconds) of one call."""
    t, c = time.perf_counter(), time.process_time()
    out = deqrmt.kernels(act, X, sigma_a2=0.2, device="cpu")
    return out, time.perf_counter() - t, time.process_time() - c


def _one_worker(X: np.ndarray, act: str) -> tuple[np.ndarray, float, float]:
    """The same call with the tiles on one worker thread (the calling thread)."""
    import deqrmt.validate._kernels as kern

    saved: Any = kern.tile_workers
    kern.tile_workers = lambda device: 1
    try:
        return _kernels_seconds(act, X)
    finally:
        kern.tile_workers = saved


def run(act: str, n: int, one_worker: bool, force: bool) -> None:
    p = round(0.8 * n)
    X = np.ascontiguousarray(paper_mixture(p).sample(n, np.random.default_rng([0, n])).X.T)
    before = Load.now()
    mm0 = _matmul_seconds(X)
    out, t, cpu = _kernels_seconds(act, X)
    one = None
    if one_worker:
        one = _one_worker(X, act)
    mm1 = _matmul_seconds(X)
    after = Load.now()
    mm = 0.5 * (mm0 + mm1)
    print(f"kernels({act!r}, X) n={n} p={p}: {t:.2f} s ({t / (n * (n + 1) / 2) * 1e9:.0f} ns/pair)")
    # CPU/wall is the number of cores the call got: on a busy machine (or under the kernel's
    # autogroup scheduling, which shares a core among sessions, not threads) it stays near 1
    print(f"  process CPU {cpu:.2f} s (CPU/wall {cpu / t:.2f}: the cores it got)")
    print(
        f"  one full n×n×p float64 matmul on {os.cpu_count()} cores: {mm0:.2f} s before, "
        f"{mm1:.2f} s after; ratio kernels/matmul = "
        + ratio_text(t / mm, before, after, force=force, fmt="{:.1f}")
    )
    if one is not None:
        same = one[0].tobytes() == out.tobytes()
        print(
            f"  on one worker thread: {one[1]:.2f} s (CPU {one[2]:.2f} s); speed-up = "
            + ratio_text(one[1] / t, before, after, force=force)
            + f"; same bytes: {same}"
        )
    print(f"  {load_line('before', before)}; {load_line('after', after)}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--act", default="tanh")
    ap.add_argument("--n", default="4096", help="rows, comma-separated (p = 0.8 n)")
    ap.add_argument("--one-worker", action="store_true", help="also time the tiles on one thread")
    add_force_flag(ap)
    args = ap.parse_args(argv)
    ns = [int(v) for v in args.n.split(",")]
    print(f"torch {torch.__version__}, {os.cpu_count()} cores, deqrmt {deqrmt.__version__}")
    warm = np.random.default_rng(0).standard_normal((16, 8)) / np.sqrt(8)
    deqrmt.kernels(args.act, warm, sigma_a2=0.2, device="cpu")  # warm-up
    for n in ns:
        run(args.act, n, args.one_worker, args.force_ratio)


if __name__ == "__main__":
    main()

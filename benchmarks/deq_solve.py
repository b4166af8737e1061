"""Benchmark: the finite-width DEQ solve (issue 4).

In one run, for each activation and σ_a²: plain iteration vs Anderson acceleration (iterations
and seconds to a 1e-10 residual), and the seconds per iteration against one m × m × n matmul
(the floor: each iteration does exactly one).  Expectation: Anderson gains nothing at
σ_a² = 0.2 (the Jacobian's spectrum is a disk, where plain iteration is already the optimal
Krylov polynomial) and a little near the edge of contraction.

    python benchmarks/deq_solve.py                     # n = 1024, m = 2048
    python benchmarks/deq_solve.py --n 512 --m 1024 --threads 1
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from deqrmt.symbolic import library_activation
from deqrmt.validate import DeqWeights, paper_mixture, solve_deq
from deqrmt.validate._pointwise import CenteredActivation


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--m", type=int, default=2048)
    ap.add_argument("--act", default="tanh,relu")
    ap.add_argument("--sigma-a2", default="0.2,0.9")
    ap.add_argument("--tol", type=float, default=1e-10)
    ap.add_argument("--memory", type=int, default=5)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: leave as is)")
    ap.add_argument("--dtype", default="float64", choices=["float64", "float32"])
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args(argv)
    dev = args.device

    def sync() -> None:
        if torch.device(dev).type == "cuda":
            torch.cuda.synchronize()

    if args.threads:
        torch.set_num_threads(args.threads)
    dtype = getattr(torch, args.dtype)
    n, m, p = args.n, args.m, round(0.8 * args.n)
    X = paper_mixture(p).sample(n, np.random.default_rng(0)).X
    A = torch.randn(m, m, dtype=dtype, device=dev)
    Zt = torch.randn(n, m, dtype=dtype, device=dev)
    for _ in range(2):
        Zt @ A.T
    reps = []
    for _ in range(5):
        sync()
        t = time.perf_counter()
        Zt @ A.T
        sync()
        reps.append(time.perf_counter() - t)
    t_mm = float(np.median(reps))
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, {args.dtype}, {dev}; n = {n}, m = {m}, "
        f"p = {p}; one m×m×n matmul: {t_mm * 1e3:.1f} ms ({2 * m * m * n / t_mm / 1e9:.1f} GFLOP/s)"
    )
    print(
        f"{'act':>6} {'σ_a²':>5} | {'plain it':>8} {'s':>6} {'s/it÷mm':>8} | "
        f"{'AA it':>6} {'s':>6} {'s/it÷mm':>8} | {'it ratio':>8} {'time ratio':>10}"
    )
    for name in args.act.split(","):
        act = CenteredActivation.from_activation(library_activation(name), 0.1)
        for sa2 in (float(v) for v in args.sigma_a2.split(",")):
            w = DeqWeights.draw(
                m,
                p,
                sigma_a2=sa2,
                sigma_b2=1 - sa2 if sa2 < 1 else 0.5,
                seed=1,
                dtype=dtype,
                device=dev,
            )
            out = []
            for method in ("picard", "anderson"):
                t = time.perf_counter()
                sol = solve_deq(
                    w, act, X, tol=args.tol, method=method, memory=args.memory, max_iter=2000
                )
                dt = time.perf_counter() - t
                out.append((sol.iterations, dt, dt / sol.iterations / t_mm))
            (ip, tp, rp), (ia, ta, ra) = out
            print(
                f"{name:>6} {sa2:>5.2f} | {ip:>8} {tp:>6.2f} {rp:>8.2f} | {ia:>6} {ta:>6.2f} {ra:>8.2f} | "
                f"{ip / ia:>8.2f} {tp / ta:>10.2f}",
                flush=True,
            )
    print(
        "it ratio, time ratio: plain / Anderson (> 1: Anderson wins); s/it÷mm: seconds per iteration / one matmul"
    )


if __name__ == "__main__":
    main()

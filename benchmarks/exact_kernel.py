"""Benchmark: exact implicit kernels G*, K* (issue 4).

Compares, in one run and on the same data (the paper preset, p = 0.8 n):

* **fast**: the diagonal by Newton, then per-pair Newton with closed forms (arc-cosine,
  arcsine) or the Mehler series — what ``deqrmt validate`` uses;
* **baseline**: a plain 2-D Gauss–Hermite rule (``--nodes``², 25 = neural-tangents'
  ``ElementwiseNumerical`` default) inside the plain iteration G ← F(G), as layer-by-layer codes do.

The baseline is run in full at ``--baseline-n`` (default 512); at ``--n`` (default 2048) one
baseline sweep over all pairs i ≤ j is timed and multiplied by the number of sweeps the
baseline needed at ``--baseline-n`` (marked "est.": a full run would take minutes).  Accuracy: both against the nested-quadrature
evaluator on ``--check`` samples (an independent rule, ~1e-13).  The load is printed before and
after; an activation's ratios are withheld (``-``, the notice on the next line) when the machine
was busy before or after its timings (``benchmarks/_load.py``; ``--force-ratio`` prints them
anyway, marked).  The raw seconds are always printed.

    python benchmarks/exact_kernel.py                  # tanh, relu, gelu
    python benchmarks/exact_kernel.py --act silu --n 1024

``--scale N`` measures instead what issue 24 asks of one call at scale (tanh by default, the
paper mixture with p = 0.8 N): its wall time as a ratio to ONE full N × N × p float64 matrix
product XᵀX on all cores, timed in the same process just before and just after; the process's
peak RSS (data, torch and the interpreter included) in bytes and in N² doubles; and the load
(``os.getloadavg()``) before and after, since a busy machine changes every figure.  Run one N
per process (peak RSS only grows):

    /usr/bin/time -f '%e s %M KB' python benchmarks/exact_kernel.py --scale 8192

``--api`` makes that call through the public ``deqrmt.kernels(..., kind="ntk")`` (argument
checks and the memory model included), as a user runs it:

    python benchmarks/exact_kernel.py --scale 16384 --no-matmul --api
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _load import Load, add_force_flag, load_line, ratio_cell, ratio_text  # noqa: E402

import deqrmt  # noqa: E402
from deqrmt.numeric import deq_coefficients  # noqa: E402
from deqrmt.validate import exact_kernels, paper_mixture  # noqa: E402
from deqrmt.validate._bivariate import GaussHermite2D  # noqa: E402
from deqrmt.validate._diagonal import _solve_diagonal  # noqa: E402
from deqrmt.validate._pointwise import CenteredActivation  # noqa: E402
from deqrmt.validate._threads import cpu_cores, torch_threads  # noqa: E402


def _timed(fn, *args, **kw):  # type: ignore[no-untyped-def]
    t = time.perf_counter()
    out = fn(*args, **kw)
    return out, time.perf_counter() - t


def _one_sweep_seconds(act: CenteredActivation, X: np.ndarray, nodes: int, device: str) -> float:
    """Wall time of one baseline evaluation of F over all pairs i ≤ j (same blocks as the solver)."""
    Xt = torch.as_tensor(X, dtype=torch.float64, device=device)
    n = Xt.shape[1]
    gram = Xt.T @ Xt
    with torch_threads(1 if device == "cpu" else torch.get_num_threads()):
        q = _solve_diagonal(act, torch.diagonal(gram).clone(), 0.2, 0.8, 1e-15)
        t = time.perf_counter()
        biv = GaussHermite2D(act, q, nodes=nodes)
        block = max(8, 2**17 // n)
        for r0 in range(0, n, block):
            rows, cols = slice(r0, min(n, r0 + block)), slice(r0, n)
            biv(rows, cols, 0.2 * 0.3 + 0.8 * gram[rows, cols])
        return time.perf_counter() - t


def _matmul_seconds(X: np.ndarray) -> float:
    """Wall time of one full XᵀX (n × n × p, float64) on every core, its output freed after."""
    Xt = torch.as_tensor(X)
    with torch_threads(cpu_cores()):
        t = time.perf_counter()
        C = Xt.T @ Xt
        dt = time.perf_counter() - t
    del C
    return dt


def _peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def scale(
    name: str, n: int, device: str, matmul: bool = True, force_ratio: bool = False,
    api: bool = False,
) -> None:  # fmt: skip
    """One exact_kernels call at n: the ratio to a full matmul, peak RSS, load (issue 24).

    ``api``: the public ``deqrmt.kernels(..., kind="ntk")`` instead (its checks and memory
    model included; it returns K* alone), as a user calls it.
    """
    p = round(0.8 * n)
    mix = paper_mixture(p)
    X = mix.sample(n, np.random.default_rng([0, n])).X
    res = deq_coefficients(name, "0.2", None, repr(mix.tau0(n)), dps=16)
    act = CenteredActivation.from_activation(res.activation, float(res.center))
    if api:  # a user's data: rows are samples (the paper's X has them as columns)
        X = np.ascontiguousarray(X.T)
    load0 = Load.now()
    mm0 = _matmul_seconds(X.T if api else X) if matmul else float("nan")
    if api:
        call = "deqrmt.kernels(kind='ntk')"
        ex, t_ex = _timed(
            deqrmt.kernels, act, X, sigma_a2=0.2, sigma_b2=0.8, kind="ntk", device=device
        )
    else:
        call = "exact_kernels"
        ex, t_ex = _timed(exact_kernels, act, X, 0.2, 0.8, device=device)
    peak = _peak_rss_bytes()
    del ex
    mm1 = _matmul_seconds(X.T if api else X) if matmul else float("nan")
    load1 = Load.now()
    mm = 0.5 * (mm0 + mm1)
    print(f"{call} {name} n={n} p={p} device={device}: {t_ex:.2f} s")
    if matmul:
        print(
            f"  one full n×n×p float64 matmul on {cpu_cores()} cores: {mm0:.2f} s before, "
            f"{mm1:.2f} s after; ratio exact/matmul = "
            + ratio_text(t_ex / mm, load0, load1, force=force_ratio, fmt="{:.2f}")
        )
    print(f"  peak RSS {peak} bytes = {peak / (8 * n * n):.2f} n² doubles (data, torch included)")
    print(f"  load before: {load0.text()}; after: {load1.text()}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--act", default=None, help="default tanh,relu,gelu (--scale: tanh)")
    ap.add_argument("--n", type=int, default=2048)
    ap.add_argument("--baseline-n", type=int, default=512)
    ap.add_argument("--nodes", type=int, default=25)
    ap.add_argument("--check", type=int, default=8, help="samples for the accuracy check")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--scale", type=int, default=0, help="one call at this n (see above)")
    ap.add_argument(
        "--no-matmul", action="store_true", help="--scale without the matmul baseline (large n)"
    )
    ap.add_argument(
        "--api", action="store_true", help="--scale through the public deqrmt.kernels (kind='ntk')"
    )
    add_force_flag(ap)
    args = ap.parse_args(argv)
    if args.scale:
        scale(
            (args.act or "tanh").split(",")[0], args.scale, args.device, not args.no_matmul,
            args.force_ratio, args.api,
        )  # fmt: skip
        return
    args.act = args.act or "tanh,relu,gelu"
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, device {args.device}")
    print(load_line("before"))
    print(
        f"{'act':>8} {'method':>10} | {'n':>5} {'fast s':>7} {'evals':>5} | "
        f"{'nb':>4} {'fast s':>7} {'base s':>7} {'sweeps':>6} {'ratio':>6} | "
        f"{'base@n s':>9} {'ratio@n':>8} | {'err fast':>8} {'err base':>8}"
    )
    for name in args.act.split(","):
        row = []
        for n in (args.n, args.baseline_n):
            p = round(0.8 * n)
            mix = paper_mixture(p)
            s = mix.sample(n, np.random.default_rng([0, n]))
            tau0 = mix.statistics(s).tau0
            res = deq_coefficients(name, "0.2", None, repr(tau0), dps=16)
            act = CenteredActivation.from_activation(res.activation, float(res.center))
            row.append((s.X, act))
        (X, act), (Xb, actb) = row
        before = Load.now()
        fast, t_fast = _timed(exact_kernels, act, X, 0.2, 0.8, device=args.device)
        fast_b, t_fast_b = _timed(exact_kernels, actb, Xb, 0.2, 0.8, device=args.device)
        base_b, t_base_b = _timed(
            exact_kernels,
            actb,
            Xb,
            0.2,
            0.8,
            method="gauss-hermite",
            nodes=args.nodes,
            device=args.device,
        )
        t_sweep = _one_sweep_seconds(act, X, args.nodes, args.device)
        est = t_sweep * base_b.evaluations
        after = Load.now()
        force = args.force_ratio
        r_b, note = ratio_cell(
            t_base_b / t_fast_b, before, after, force=force, fmt="{:.0f}", width=6
        )
        r_n, _ = ratio_cell(est / t_fast, before, after, force=force, fmt="{:.0f}", width=8)
        # Accuracy on a subset spanning both classes, against nested quadrature.
        idx = np.r_[0 : args.check // 2, args.baseline_n - args.check // 2 : args.baseline_n]
        Xs = Xb[:, idx]
        ref = exact_kernels(actb, Xs, 0.2, 0.8, method="conditional", device=args.device)
        sub_fast = exact_kernels(actb, Xs, 0.2, 0.8, device=args.device)
        sub_base = exact_kernels(
            actb, Xs, 0.2, 0.8, method="gauss-hermite", nodes=args.nodes, device=args.device
        )
        err_fast = max(np.abs(sub_fast.G - ref.G).max(), np.abs(sub_fast.K - ref.K).max())
        err_base = max(np.abs(sub_base.G - ref.G).max(), np.abs(sub_base.K - ref.K).max())
        print(
            f"{name:>8} {fast.method:>10} | {args.n:>5} {t_fast:>7.2f} {fast.evaluations:>5} | "
            f"{args.baseline_n:>4} {t_fast_b:>7.2f} {t_base_b:>7.2f} {base_b.evaluations:>6} "
            f"{r_b} | {est:>8.0f}* {r_n} | {err_fast:>8.1e} {err_base:>8.1e}",
            flush=True,
        )
        if note:  # a line of its own: the row's columns stay as they are
            print(f"{'':>8} {note}", flush=True)
        del fast_b, base_b
    print("* est.: one baseline sweep at n, timed, × the baseline's sweep count at baseline-n")
    print("ratio = baseline seconds / fast seconds; err = max |Δ| of G*, K* vs nested quadrature")
    print(load_line("after"))


if __name__ == "__main__":
    main()

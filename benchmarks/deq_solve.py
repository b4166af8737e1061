"""Benchmark: the finite-width DEQ solve against TorchDEQ's solvers, in one run (issues 4, 24).

Every solver runs on the same map f(z) = φ_c(σ_a A z + σ_b B x)/√m (the one
:func:`deqrmt.validate.solve_deq` iterates, state n × m, a row per sample), from z⁰ = 0, to the
same stopping rule: every row's ‖f(z) − z‖/‖f(z)‖ ≤ ``--tol`` (TorchDEQ 0.1's ``stop_mode="rel"``
is that same per-row rule).  After each solve one more (untimed) evaluation gives the residual
actually reached, so that "to the same residual" is checked, not assumed.

* **deqrmt**: ``picard`` (plain iteration, the default of ``solve_deq`` and of sweeps) and
  ``anderson`` (``--memory`` past iterates);
* **baselines** (``pip install -e .[bench]``): TorchDEQ's ``fixed_point_iter``,
  ``anderson_solver`` (its defaults m = 6, λ = 1e-4, τ = 1) and ``broyden_solver``.

Each row prints evaluations of f and seconds; the ratios baseline / deqrmt picard follow, unless
the machine was busy (1-minute load > cores − 0.5 at the start or end of the row: see
``benchmarks/_load.py``; ``--force-ratio`` prints them anyway, marked).  The floor is one
m × m × n matmul per evaluation (``s/it÷mm``, a ratio too: ``-`` when withheld, also when the
machine was busy as the matmul was timed).

``--anderson-grid`` is the measurement behind Anderson's documented settings: memory
{2, 3, 5, 10} × Tikhonov weight {1e-12, 1e-8, 1e-4} with deqrmt's Anderson and damping
τ ∈ {0.5, 0.8, 1.0} with TorchDEQ's, at σ_a² up to the edge of contraction, evaluations of f
against plain iteration.  Why nothing wins there: see :mod:`deqrmt.validate._anderson`.

    python benchmarks/deq_solve.py                     # n = 1024, m = 2048
    python benchmarks/deq_solve.py --n 512 --m 1024 --threads 1
    python benchmarks/deq_solve.py --anderson-grid --n 256 --m 1024 --sigma-a2 0.2,0.9,1.6 --act relu
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Callable

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _load import Load, add_force_flag, busy, load_line, ratio_cell, ratio_text  # noqa: E402

from deqrmt.symbolic import library_activation  # noqa: E402
from deqrmt.validate import DeqWeights, anderson, paper_mixture, picard  # noqa: E402
from deqrmt.validate._pointwise import CenteredActivation  # noqa: E402

Map = Callable[[torch.Tensor], torch.Tensor]
INSTALL = "TorchDEQ not installed: pip install -e .[bench] (baselines skipped)"


def _torchdeq() -> dict[str, Callable[..., object]] | None:
    try:
        from torchdeq.solver.anderson import anderson_solver
        from torchdeq.solver.fp_iter import fixed_point_iter
    except ImportError:
        return None
    out: dict[str, Callable[..., object]] = {
        "tdeq fp_iter": fixed_point_iter, "tdeq anderson": anderson_solver,
    }  # fmt: skip
    try:
        from torchdeq.solver.broyden import broyden_solver
    except ImportError:  # pragma: no cover - present in torchdeq 0.1
        return out
    out["tdeq broyden"] = broyden_solver
    return out


def _row_residual(f: Map, z: torch.Tensor) -> float:
    fz = f(z)
    num = torch.linalg.vector_norm(fz - z, dim=1)
    return float((num / torch.linalg.vector_norm(fz, dim=1).clamp_min(1e-300)).max())


class _Counted:
    """f with a count of its evaluations (solvers count differently; this counts the same)."""

    def __init__(self, f: Map) -> None:
        self.f, self.calls = f, 0

    def __call__(self, z: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return self.f(z)


def _problem(
    name: str, sa2: float, n: int, m: int, dtype: torch.dtype, dev: str
) -> tuple[Map, torch.Tensor]:
    act = CenteredActivation.from_activation(library_activation(name), 0.1)
    p = round(0.8 * n)
    X = paper_mixture(p).sample(n, np.random.default_rng(0)).X
    w = DeqWeights.draw(
        m, p, sigma_a2=sa2, sigma_b2=1 - sa2 if sa2 < 1 else 0.5, seed=1, dtype=dtype, device=dev
    )
    Xt = torch.as_tensor(X, dtype=dtype, device=dev)
    inject = w.sigma_b * (Xt.T @ w.B.T)
    scale = 1.0 / math.sqrt(m)

    def f(z: torch.Tensor) -> torch.Tensor:
        return act.phi(torch.addmm(inject, z, w.A.T, alpha=w.sigma_a)).mul_(scale)

    return f, torch.zeros((n, m), dtype=dtype, device=dev)


def _solve(
    label: str, solver: Callable[..., object], f: Map, z0: torch.Tensor, tol: float, **kw: object
) -> tuple[int, float, float]:
    """(evaluations, seconds, residual reached) of one solve."""
    cf = _Counted(f)
    t = time.perf_counter()
    if label.startswith("tdeq"):
        z = solver(cf, z0, max_iter=kw.pop("max_iter"), tol=tol, stop_mode="rel", **kw)[0]  # type: ignore[operator,index]
    else:
        z = solver(cf, z0, tol=tol, **kw).x  # type: ignore[operator,attr-defined]
    dt = time.perf_counter() - t
    return cf.calls, dt, _row_residual(f, z)


def _matmul_seconds(n: int, m: int, dtype: torch.dtype, dev: str) -> float:
    A = torch.randn(m, m, dtype=dtype, device=dev)
    Zt = torch.randn(n, m, dtype=dtype, device=dev)
    for _ in range(2):
        Zt @ A.T
    reps = []
    for _ in range(5):
        t = time.perf_counter()
        Zt @ A.T
        if torch.device(dev).type == "cuda":
            torch.cuda.synchronize()
        reps.append(time.perf_counter() - t)
    return float(np.median(reps))


def _anderson_grid(args: argparse.Namespace, dtype: torch.dtype, tdeq: dict | None) -> None:
    print("Anderson settings: evaluations of f to the tolerance (plain iteration first)")
    print(
        f"{'act':>6} {'σ_a²':>5} {'setting':>24} | {'evals':>6} {'s':>7} {'resid':>8} | {'plain/this (time)':>20}"
    )
    for name in args.act.split(","):
        for sa2 in (float(v) for v in args.sigma_a2.split(",")):
            f, z0 = _problem(name, sa2, args.n, args.m, dtype, args.device)
            before = Load.now()
            ip, tp, rp = _solve("picard", picard, f, z0, args.tol, max_iter=4000)
            print(f"{name:>6} {sa2:>5.2f} {'picard':>24} | {ip:>6} {tp:>7.2f} {rp:>8.1e} |")
            settings: list[tuple[str, Callable[..., object], dict[str, object]]] = [
                (f"deqrmt m={mem} reg={reg:g}", anderson, {"memory": mem, "reg": reg})
                for mem in (2, 3, 5, 10) for reg in (1e-12, 1e-8, 1e-4)
            ]  # fmt: skip
            if tdeq is not None:
                settings += [
                    (f"tdeq m=6 λ=1e-4 τ={tau}", tdeq["tdeq anderson"], {"tau": tau})
                    for tau in (0.5, 0.8, 1.0)
                ]
            for label, solver, kw in settings:
                key = "tdeq" if label.startswith("tdeq") else "deqrmt"
                it, ts, rs = _solve(key, solver, f, z0, args.tol, max_iter=4000, **kw)
                ratio = ratio_text(tp / ts, before, Load.now(), force=args.force_ratio)
                print(f"{'':>6} {'':>5} {label:>24} | {it:>6} {ts:>7.2f} {rs:>8.1e} | "
                      f"{ip / it:>6.2f} evals, {ratio}", flush=True)  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--m", type=int, default=2048)
    ap.add_argument("--act", default="tanh,relu")
    ap.add_argument("--sigma-a2", default="0.2,0.9")
    ap.add_argument("--tol", type=float, default=1e-10)
    ap.add_argument("--memory", type=int, default=5)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: leave as is)")
    ap.add_argument("--dtype", default="float64", choices=["float64", "float32"])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--no-torchdeq", action="store_true", help="skip the TorchDEQ baselines")
    ap.add_argument("--anderson-grid", action="store_true", help="only: Anderson's settings")
    add_force_flag(ap)
    args = ap.parse_args(argv)
    dev = args.device
    if args.threads:
        torch.set_num_threads(args.threads)
    dtype = getattr(torch, args.dtype)
    tdeq = None if args.no_torchdeq else _torchdeq()
    print(load_line("before"))
    if tdeq is None and not args.no_torchdeq:
        print(INSTALL)
    if args.anderson_grid:
        _anderson_grid(args, dtype, tdeq)
        print(load_line("after"))
        return
    n, m = args.n, args.m
    load_mm = Load.now()
    t_mm = _matmul_seconds(n, m, dtype, dev)
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, {args.dtype}, {dev}; n = {n}, m = {m}, "
        f"p = {round(0.8 * n)}; one m×m×n matmul: {t_mm * 1e3:.1f} ms ({2 * m * m * n / t_mm / 1e9:.1f} GFLOP/s)"
    )
    solvers: list[tuple[str, Callable[..., object], dict[str, object]]] = [
        ("picard", picard, {"max_iter": 2000}),
        ("anderson", anderson, {"max_iter": 2000, "memory": args.memory}),
    ]
    solvers += [(label, s, {"max_iter": 2000}) for label, s in (tdeq or {}).items()]
    print(
        f"{'act':>6} {'σ_a²':>5} {'solver':>14} | {'evals':>6} {'s':>7} {'s/it÷mm':>8} {'resid':>8} | ratio (this s / picard s)"
    )
    for name in args.act.split(","):
        for sa2 in (float(v) for v in args.sigma_a2.split(",")):
            f, z0 = _problem(name, sa2, n, m, dtype, dev)
            before = Load.now()
            rows = [
                (label, *_solve(label, s, f, z0, args.tol, **dict(kw))) for label, s, kw in solvers
            ]
            after = Load.now()
            (_, ip, tp, _), (_, ia, ta, _) = rows[0], rows[1]
            for label, it, ts, rs in rows:
                # s/it÷mm is a ratio too, against the matmul timed at the start: withheld when
                # the machine was busy then or around this activation's solves
                per_mm, note = ratio_cell(
                    ts / it / t_mm, busy(load_mm, before) or before, after,
                    force=args.force_ratio, fmt="{:.2f}", width=8,
                )  # fmt: skip
                ratio = (
                    note
                    if label == "picard"
                    else ratio_text(ts / tp, before, after, force=args.force_ratio)
                )
                print(f"{name:>6} {sa2:>5.2f} {label:>14} | {it:>6} {ts:>7.2f} {per_mm} "
                      f"{rs:>8.1e} | {ratio}", flush=True)  # fmt: skip
            time_ratio = ratio_text(tp / ta, before, after, force=args.force_ratio)
            print(
                f"{name:>6} {sa2:>5.2f} {'plain/AA':>14} | it ratio {ip / ia:.2f}; time ratio {time_ratio}"
            )
    print(
        "it ratio, time ratio: plain / Anderson (> 1: Anderson wins); s/it÷mm: seconds per "
        "evaluation / one matmul; ratio: this solver's seconds / plain iteration's (> 1: slower)"
    )
    print(load_line("after"))


if __name__ == "__main__":
    main()

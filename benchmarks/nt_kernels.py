"""Benchmark: exact infinite-width DEQ kernels, deqrmt vs neural-tangents, same data, same run.

What is compared.  A DEQ's kernel is a fixed point; neural-tangents (NT) computes the kernel of
a finite-depth network.  The DEQ z ← φ(σ_a A z + σ_b B x) unrolled L times from z⁰ = 0, with
*untied* weights A_l, B_l at every layer, is an input-injected network that NT's ``stax`` can
build exactly (FanOut → (previous layers → Dense(W_std = σ_a)) ∥ Dense(W_std = σ_b √p) →
FanInSum → φ; NT's Dense divides by the fan-in, hence √p on the injection so that its
pre-activation kernel is σ_a² G + σ_b² XᵀX).  Its NNGP kernel after L layers is the L-th
iterate of the per-layer kernel map G ← E[φ(u)φ(v)], (u, v) ~ N(0, σ_a² G + σ_b² XᵀX), started
at G = 0: it converges to the DEQ's G* at the map's contraction rate Ġ ≤ σ_a² E[φ'²]
(≤ σ_a²/2 for relu, ≤ 4σ_a²/π for erf), so L is chosen for that bound to reach ``--tol``.
With a readout Dense(W_std = 1) and every Dense trainable, NT's NTK tends to the DEQ's NTK
over (a, A, B) (tied and untied weights have the same infinite-width limit), which deqrmt
computes with ``trainable=("a", "A", "B")``.

Both sides use closed forms (relu: arc-cosine, erf: arcsine), float64, on the paper's data
(``paper_mixture``, p = 0.8 n); the activations are uncentred (NT has no shifted relu), i.e.
``CenteredActivation`` with centre 0.  Timing: ``--rounds`` interleaved rounds, median of each,
NT warm (its first call, which compiles, is reported apart).  NT runs on its default
threads, deqrmt on the threads its exact-kernel code chooses.  Printed: both times, the
ratio NT / deqrmt (withheld when the machine is busy, see ``_load.py``), and the largest
difference of G and K between the two.

    python benchmarks/nt_kernels.py                       # relu, erf at n = 512, 1024
    python benchmarks/nt_kernels.py --n 2048 --act erf --rounds 3
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
import warnings
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _load import Load, add_force_flag, load_line, ratio_text  # noqa: E402

INSTALL = "neural-tangents not installed: pip install -e .[bench]"
# sup E[φ'(u)φ'(v)] over covariances: bounds the per-layer contraction rate Ġ / σ_a²
DERIVATIVE_BOUND = {"relu": 0.5, "erf": 4 / math.pi}


def _nt_network(name: str, depth: int, sigma_a2: float, sigma_b2: float, p: int) -> Any:
    from neural_tangents import stax

    act = {"relu": stax.Relu, "erf": stax.Erf}[name]
    inject_std = math.sqrt(sigma_b2 * p)
    net = stax.serial(stax.Dense(1, W_std=inject_std), act())  # z¹ = φ(σ_b B x): z⁰ = 0
    for _ in range(depth - 1):
        net = stax.serial(
            stax.FanOut(2),
            stax.parallel(
                stax.serial(net, stax.Dense(1, W_std=math.sqrt(sigma_a2))),
                stax.Dense(1, W_std=inject_std),
            ),
            stax.FanInSum(),
            act(),
        )
    return stax.serial(net, stax.Dense(1, W_std=1.0))  # the readout a


def depth_for(name: str, sigma_a2: float, tol: float) -> int:
    """Layers for the bound on the contraction rate to bring the error below ``tol``."""
    rate = sigma_a2 * DERIVATIVE_BOUND[name]
    if rate >= 1:
        raise ValueError(f"σ_a² = {sigma_a2} is outside the contraction bound for {name}")
    return math.ceil(math.log(tol) / math.log(rate)) + 2


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--act", default="relu,erf")
    ap.add_argument("--n", default="512,1024", help="sample counts, comma-separated")
    ap.add_argument("--sigma-a2", type=float, default=0.2)
    ap.add_argument("--tol", type=float, default=1e-13, help="NT depth: bound on the error")
    ap.add_argument("--rounds", type=int, default=3)
    add_force_flag(ap)
    args = ap.parse_args(argv)
    for name in args.act.split(","):
        if name not in DERIVATIVE_BOUND:
            ap.error(f"--act: closed forms only, one of {sorted(DERIVATIVE_BOUND)}; got {name!r}")
        if args.sigma_a2 * DERIVATIVE_BOUND[name] >= 1:
            ap.error(f"--sigma-a2 {args.sigma_a2} is outside the contraction bound for {name}")
    print(load_line("before"))
    try:
        import jax
        import neural_tangents  # noqa: F401
    except ImportError:
        print(INSTALL)
        print(load_line("after"))
        return 0
    jax.config.update("jax_enable_x64", True)
    # every FanIn branch here has its Dense; NT warns whenever it cannot verify that
    warnings.filterwarnings("ignore", message=".*FanIn.*", category=UserWarning)
    import jax.numpy as jnp

    from deqrmt.symbolic import library_activation
    from deqrmt.validate import CenteredActivation, exact_kernels, paper_mixture

    sa2, sb2 = args.sigma_a2, 1 - args.sigma_a2
    print(
        f"jax {jax.__version__} on {jax.devices()[0].platform}; σ_a² = {sa2}, σ_b² = {sb2}; "
        f"paper mixture, p = 0.8 n; {args.rounds} interleaved rounds, medians"
    )
    print(
        f"{'act':>5} {'n':>5} {'L':>3} | {'deqrmt s':>9} {'NT s':>8} {'NT 1st s':>9} | "
        f"{'max|ΔG|':>8} {'max|ΔK|':>8} | ratio NT / deqrmt"
    )
    for name in args.act.split(","):
        act = CenteredActivation.from_activation(library_activation(name), 0.0)
        depth = depth_for(name, sa2, args.tol)
        for n in (int(v) for v in args.n.split(",")):
            p = round(0.8 * n)
            X = paper_mixture(p).sample(n, np.random.default_rng([0, n])).X  # p × n
            _, _, kernel_fn = _nt_network(name, depth, sa2, sb2, p)
            kernel_fn = jax.jit(kernel_fn, static_argnames="get")
            xs = jnp.asarray(np.ascontiguousarray(X.T))
            t = time.perf_counter()
            nt = kernel_fn(xs, None, get=("nngp", "ntk"))
            nt.ntk.block_until_ready()
            t_first = time.perf_counter() - t
            before = Load.now()
            t_deq, t_nt = [], []
            for _ in range(args.rounds):
                t = time.perf_counter()
                ex = exact_kernels(act, X, sa2, sb2, trainable=("a", "A", "B"))
                t_deq.append(time.perf_counter() - t)
                t = time.perf_counter()
                nt = kernel_fn(xs, None, get=("nngp", "ntk"))
                nt.ntk.block_until_ready()
                t_nt.append(time.perf_counter() - t)
            after = Load.now()
            d_g = float(np.abs(np.asarray(nt.nngp) - ex.G).max())
            d_k = float(np.abs(np.asarray(nt.ntk) - ex.K).max())
            md, mn = statistics.median(t_deq), statistics.median(t_nt)
            ratio = ratio_text(mn / md, before, after, force=args.force_ratio)
            print(
                f"{name:>5} {n:>5} {depth:>3} | {md:>9.3f} {mn:>8.3f} {t_first:>9.2f} | "
                f"{d_g:>8.1e} {d_k:>8.1e} | {ratio}",
                flush=True,
            )
    print("ratio > 1: deqrmt faster; ΔG, ΔK: NT's L-layer kernels minus deqrmt's fixed point")
    print(load_line("after"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: ``deqrmt.kernels`` on raw rows against the same rows normalised (any row scale).

What is timed, per activation (tanh, gelu, silu, ``x*erf(x)`` by default), in one process on
scikit-learn's digits (1797 rows, 64 pixels in 0–16: ‖x‖² up to ~5900): one call
``kernels(act, X_raw)`` and one call ``kernels(act, X_raw / ‖x‖)`` (the CK G*, σ_a² = 0.2,
float64 on the CPU), and the ratio raw / normalised (the goal: ≤ 2×; withheld on a busy machine,
see ``_load.py``).  Raw rows put the pre-activations' variance q in the thousands, where tanh is
close to sign and the Mehler series of E[φ(u)φ(v)] needs degree ~1000 for the most alike rows;
the normalised rows have q ≈ 1.  Printed too: the first call in the process (60 normalised rows
of tanh, imports and tables included), and whether the raw kernel agrees with itself computed
a second way: its first 48 rows against all columns as a cross kernel kernels(act, X[:48], X)
(the rectangular path: other tiles, other tables' ranges), to the documented 1e-13 of the
diagonal's scale.  The raw kernel's accuracy against an independent reference (nested
quadrature) is a test: ``tests/test_kernels_scale.py``.

The first call in a fresh process is measured too, as a user meets it: a whole process
``import deqrmt; deqrmt.kernels("tanh", X)`` on 60 normalised rows (imports included) against a
whole process ``python -c "import torch"`` and one ``python -c "import torch, sympy"`` (what
the call imported before a library name's φ was printed once into the package; it imports no
SymPy now), interleaved, the median of ``--first-rounds`` (goal: ≤ 1.3× import torch), in wall
time and in the processes' CPU time (user + system: what a busy machine inflates least).  The
tree's bytecode is compiled first, as an installed package's is.

    python benchmarks/kernels_scale.py                        # 1797 rows, four activations
    python benchmarks/kernels_scale.py --rows 400 --act tanh  # quicker
    python benchmarks/kernels_scale.py --rows 0 --act ""      # the fresh first call only
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _load import Load, add_force_flag, load_line, ratio_text  # noqa: E402

#: the goal of a raw call against the normalised one
GOAL = 2.0
#: the goal of a fresh process's first call against a process that only imports torch
FIRST_GOAL = 1.3
SRC = Path(__file__).resolve().parents[1] / "src"

#: the first call as a user makes it, in a fresh interpreter
FIRST_CALL = """
import numpy as np
import deqrmt
X = np.random.default_rng(0).random((60, 64))
X /= np.linalg.norm(X, axis=1, keepdims=True)
deqrmt.kernels("tanh", X, sigma_a2=0.2, device="cpu")
"""


def _process(code: str) -> tuple[float, float]:
    """(wall, CPU) seconds of a whole ``python -c code`` process (this tree's ``src`` on the
    path); CPU is the child's user + system time, which a busy machine inflates far less."""
    env = dict(os.environ, PYTHONPATH=str(SRC))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=env, capture_output=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def fresh_first_call(rounds: int, force: bool) -> None:
    """Print the first call in a fresh process against ``import torch`` (and torch + sympy)."""
    cases = {
        "first kernels('tanh', 60 rows)": FIRST_CALL,
        "python -c 'import torch'": "import torch",
        "python -c 'import torch, sympy'": "import torch, sympy",
    }
    # the tree's bytecode, as an installed package has it (pip compiles it; torch's is there):
    # with PYTHONDONTWRITEBYTECODE set, each fresh process would otherwise time the compiler
    compileall.compile_dir(str(SRC), quiet=1)
    for code in cases.values():  # once, unmeasured: disks and page cache warm
        _process(code)
    before = Load.now()
    times: dict[str, list[float]] = {k: [] for k in cases}
    cpus: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(rounds):
        for name, code in cases.items():  # interleaved: load drifts hit every case
            wall, cpu = _process(code)
            times[name].append(wall)
            cpus[name].append(cpu)
    after = Load.now()
    med = {k: statistics.median(v) for k, v in times.items()}
    med_cpu = {k: statistics.median(v) for k, v in cpus.items()}
    for name, ts in times.items():
        print(
            f"  {name:<32} median {med[name]:6.2f} s   ({' '.join(f'{t:.2f}' for t in ts)}); "
            f"CPU median {med_cpu[name]:.2f} s"
        )
    first, torch_only = "first kernels('tanh', 60 rows)", "python -c 'import torch'"
    ratio = ratio_text(med[first] / med[torch_only], before, after, force=force)
    print(f"  fresh first call / import torch: {ratio} (goal ≤ {FIRST_GOAL:g}x)")
    cpu_ratio = ratio_text(med_cpu[first] / med_cpu[torch_only], before, after, force=force)
    print(f"  the same in CPU time: {cpu_ratio}")
    print(f"  {load_line('after', after)}")


def _timed(act: str, X: np.ndarray, X2: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    import deqrmt

    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", deqrmt.DataWarning)  # raw rows: said once, known here
        out = deqrmt.kernels(act, X, X2, sigma_a2=0.2, device="cpu")
    return out, time.perf_counter() - t


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--act", default="tanh,gelu,silu,x*erf(x)", help="comma-separated")
    ap.add_argument("--rows", type=int, default=1797, help="rows of digits (≤ 1797)")
    ap.add_argument(
        "--first-rounds", type=int, default=3, help="fresh processes per case (0: skip them)"
    )
    add_force_flag(ap)
    args = ap.parse_args(argv)

    print(load_line("before"))
    if args.first_rounds > 0:
        print("first call in a fresh process, imports included (whole processes):")
        fresh_first_call(args.first_rounds, args.force_ratio)
    if args.rows <= 0 or not args.act:
        print(load_line("after"))
        return
    t0 = time.perf_counter()
    from sklearn.datasets import load_digits

    X = load_digits().data[: args.rows].astype(np.float64)
    Xn = X / np.linalg.norm(X, axis=1, keepdims=True)
    _, first = _timed("tanh", Xn[:60])
    print(
        f"first call in this process, kernels('tanh', 60 normalised rows): {first:.2f} s "
        f"({time.perf_counter() - t0:.2f} s with the imports of deqrmt and scikit-learn)"
    )
    sq = (X * X).sum(1)
    print(f"digits: {X.shape[0]} rows, ‖x‖² from {sq.min():.0f} to {sq.max():.0f} (raw)")
    for act in args.act.split(","):
        before = Load.now()
        G_raw, t_raw = _timed(act, X)
        G_norm, t_norm = _timed(act, Xn)
        after = Load.now()
        ratio = ratio_text(t_raw / t_norm, before, after, force=args.force_ratio)
        print(
            f"{act:>9}: raw {t_raw:7.2f} s, normalised {t_norm:7.2f} s, raw/normalised {ratio} "
            f"(goal ≤ {GOAL:g}x)"
        )
        k = min(48, X.shape[0])
        part, _ = _timed(act, X[:k], X)
        scale = float(np.abs(np.diag(G_raw)).max())
        err = float(np.abs(part - G_raw[:k]).max()) / scale
        print(
            f"           raw rows 0–{k - 1} as a cross kernel vs the symmetric one: "
            f"max |difference| = {err:.1e} of the diagonal's scale "
            + ("(agree to 1e-13)" if err <= 1e-13 else "(DISAGREE beyond 1e-13)")
        )
        print(f"           {load_line('after', after)}")
    print(load_line("after"))


if __name__ == "__main__":
    main()

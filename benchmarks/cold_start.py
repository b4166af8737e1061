"""Cold start of ``deqrmt coefficients``: whole processes, empty cache, with the load (issue 24).

Two figures, each a median over interleaved rounds measured in the same run:

* cold ``deqrmt coefficients relu`` (30 digits, proven), a fresh empty ``DEQRMT_CACHE_DIR``
  every time (target: ≤ 0.5 s on an idle 2-core machine), and against a whole process
  ``python -c "import sympy"`` measured in the same rounds (target: ≤ 1.5×: the command should
  cost little beyond the SymPy it needs);
* cold ``deqrmt coefficients tanh --dps 15`` against the naive script of
  ``benchmarks/coefficients.py`` (one ``mpmath.quad`` per Gaussian expectation, ``findroot`` on
  τ*², the same formulas; no proof, no verification) written out as a standalone mpmath-only
  program — the ~30 lines a user would otherwise run — also as a whole process (target: the
  ratio naive/deqrmt > 1).

With ``--baseline-src DIR`` the same commands also run with ``PYTHONPATH=DIR`` (another
checkout's ``src``, e.g. before a change), interleaved, so before/after come from one run.
The machine's load (``/proc/loadavg``) is printed before and after: on a busy machine the
absolute numbers grow and only the ratios measured side by side mean something.

Usage: python benchmarks/cold_start.py [--rounds 5] [--baseline-src /path/to/old/src]
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _load import Load, add_force_flag, ratio_text  # noqa: E402

SRC = Path(__file__).resolve().parents[1] / "src"

#: the naive baseline of benchmarks/coefficients.py for tanh, as a standalone mpmath program
NAIVE = """
import mpmath
mpmath.mp.dps = 15
phi = mpmath.tanh
sa2 = mpmath.mpf(1) / 5
sb2, t0 = 1 - sa2, mpmath.mpf(1)

def expect(f, tau):  # E[f(xi, tau xi)], xi ~ N(0, 1)
    return mpmath.quad(lambda x: f(x, tau * x) * mpmath.npdf(x), [-mpmath.inf, 0, mpmath.inf])

def h(q):
    tau = mpmath.sqrt(q)
    m = expect(lambda xi, x: phi(x), tau)
    return sa2 * (expect(lambda xi, x: phi(x) ** 2, tau) - m**2) + sb2 * t0**2 - q

q = mpmath.findroot(h, sb2 * t0**2)
tau = mpmath.sqrt(q)
c = expect(lambda xi, x: phi(x), tau)
m1 = expect(lambda xi, x: xi * phi(x), tau) / tau
m2 = expect(lambda xi, x: (xi**2 - 1) * phi(x), tau) / tau**2
s0 = expect(lambda xi, x: phi(x) ** 2, tau) - c**2
s2 = expect(lambda xi, x: (xi**2 - 1) * phi(x) ** 2, tau) / tau**2 - 2 * c * m2
d2 = expect(lambda xi, x: (1 - phi(x) ** 2) ** 2, tau)
d = 1 - sa2 * m1**2
a4 = sb2 / (1 - sa2 * s2 / 2)
a1 = sb2 * m1**2 / d
for k, v in {
    "tau_star": tau, "alpha_1": a1, "alpha_2": m2**2 * a4**2 / (4 * d),
    "alpha_3": m2**2 * (sa2 * a1 + sb2) ** 2 / (2 * d), "alpha_4": a4,
    "kappa_star": mpmath.sqrt(s0 / (1 - sa2 * d2)),
}.items():
    print(k, v)
"""


def _run(argv: list[str], src: Path | None) -> float:
    """Wall time of one process, with a fresh empty cache (and ``PYTHONPATH=src``)."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, DEQRMT_CACHE_DIR=cache)
        if src is not None:
            env["PYTHONPATH"] = str(src)
        t = time.perf_counter()
        subprocess.run(argv, check=True, env=env, capture_output=True)
        return time.perf_counter() - t


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--baseline-src", type=Path, default=None)
    add_force_flag(ap)
    args = ap.parse_args(argv)
    py = sys.executable
    cases = {
        "relu (this tree)": ([py, "-m", "deqrmt", "coefficients", "relu"], SRC),
        "tanh --dps 15 (this tree)": (
            [py, "-m", "deqrmt", "coefficients", "tanh", "--dps", "15"],
            SRC,
        ),
        "naive mpmath tanh dps 15": ([py, "-c", NAIVE], None),
        "python -c 'import sympy'": ([py, "-c", "import sympy"], None),
    }
    if args.baseline_src is not None:
        base = args.baseline_src.resolve()
        cases["relu (baseline)"] = ([py, "-m", "deqrmt", "coefficients", "relu"], base)
        cases["tanh --dps 15 (baseline)"] = (
            [py, "-m", "deqrmt", "coefficients", "tanh", "--dps", "15"],
            base,
        )
    # Byte-compiled first, as an installed package is (pip writes the .pyc files): with
    # PYTHONDONTWRITEBYTECODE set, every process would otherwise compile deqrmt's sources again.
    for tree in {src for _, src in cases.values() if src is not None}:
        compileall.compile_dir(str(tree), quiet=1)
    before = Load.now()
    print(f"load before: {before.text()}")
    for argv, src in cases.values():  # once, unmeasured: disks and page cache warm
        _run(argv, src)
    times: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(args.rounds):
        for name, (argv, src) in cases.items():  # interleaved: load drifts hit every case
            times[name].append(_run(argv, src))
    after = Load.now()
    print(f"load after:  {after.text()}")
    print(f"{'cold process (empty cache)':<28}{'median s':>10}{'min s':>8}   rounds")
    med = {k: statistics.median(v) for k, v in times.items()}
    for name, ts in times.items():
        print(f"{name:<28}{med[name]:10.3f}{min(ts):8.3f}   {' '.join(f'{t:.2f}' for t in ts)}")
    relu = med["relu (this tree)"]
    print(f"cold relu median {relu:.3f} s: {'meets' if relu <= 0.5 else 'misses'} the 0.5 s target")
    text = ratio_text(relu / med["python -c 'import sympy'"], before, after, force=args.force_ratio)
    print(f"cold relu / import sympy = {text} (goal ≤ 1.5x)")
    ratio = med["naive mpmath tanh dps 15"] / med["tanh --dps 15 (this tree)"]
    verdict = f" ({'faster' if ratio > 1 else 'slower'})"
    text = ratio_text(ratio, before, after, force=args.force_ratio, fmt="{:.2f}")
    print(f"tanh --dps 15: naive/deqrmt = {text}{verdict if text[0].isdigit() else ''}")
    if args.baseline_src is not None:
        for what in ("relu", "tanh --dps 15"):
            r = med[f"{what} (baseline)"] / med[f"{what} (this tree)"]
            text = ratio_text(r, before, after, force=args.force_ratio, fmt="{:.2f}")
            print(f"{what}: baseline/this tree = {text}")


if __name__ == "__main__":
    main()

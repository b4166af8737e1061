"""Certified (Arb ball) coefficients vs today's verified path vs the naive baseline, one run.

Three ways to the DEQ coefficients at ``--dps`` digits, σ_a² = 0.2:

* certified: :func:`deqrmt.numeric.deq_coefficients` (``certify=True``, the default) — every printed digit
  proven (Krawczyk on τ*², Arb balls for every moment, a rigorous Gaussian-tail bound) —
  timed as ``others=False`` (τ* and the coefficients, like the naive baseline) and in full
  (``+scan``: also the float search for other fixed points that today's path reports);
* verified: ``deq_coefficients(..., certify=False)`` — two evaluations (dps+5, dps+20), the
  digits they agree on (the path before certification);
* naive: ``benchmarks/coefficients.py``'s ``naive`` (``mpmath.quad`` per expectation and
  ``findroot``, no verification), imported from there, not copied.

The SymPy work (moment sets, derived formulas, compiled code) is done once per activation
before timing; every timed call then starts without the per-setting numeric caches (fixed-point
scan, memoised results, cached integrand values), so each path pays for its own numbers.
The issue's targets: certified ≥ 20× faster than naive for tanh, erf, silu and gelu, and no
slower than today's path for any activation.

Usage: python benchmarks/certified.py [--dps 50] [--repeat 3]
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Callable
from pathlib import Path

import mpmath

sys.path.insert(0, str(Path(__file__).resolve().parent))

from coefficients import ACTIVATIONS as BENCHMARK_EIGHT  # noqa: E402
from coefficients import naive  # noqa: E402

from deqrmt.numeric import (
    DEQProblem,  # noqa: E402
    deq_coefficients,  # noqa: E402
)
from deqrmt.numeric._certify import certified, certify  # noqa: E402
from deqrmt.numeric._coefficients import _deq_coefficients  # noqa: E402
from deqrmt.numeric._enclose import encloser_for  # noqa: E402
from deqrmt.numeric._fixed_point import _scan  # noqa: E402
from deqrmt.symbolic import get_activation  # noqa: E402

ISSUE_NINE = ["tanh", "erf", "silu", "gelu", "relu", "leaky_relu(0.1)", "sin", "elu", "softplus"]
ACTIVATIONS = list(dict.fromkeys([*BENCHMARK_EIGHT, *ISSUE_NINE]))
TARGET_20X = ("tanh", "erf", "silu", "gelu")
SIGMA_A2 = "0.2"


def _fresh(name: str) -> None:
    """Forget every per-setting numeric result (not the SymPy derivations)."""
    _deq_coefficients.cache_clear()
    certified.cache_clear()
    _scan.cache_clear()
    # an activation outside the enclosure rules has no encloser: nothing cached to forget
    with contextlib.suppress(Exception):
        encloser_for(get_activation(name))._cache.clear()


def _best(name: str, fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        _fresh(name)
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dps", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    dps = args.dps
    print(
        f"{'activation':<16}{'certified':>10}{'+scan':>8}{'today':>8}{'naive':>8}"
        f"{'naive/cert':>11}{'today/cert+scan':>16}  cert.  digits  naive agrees"
    )
    ok = True
    for name in ACTIVATIONS:
        # warm: SymPy moment sets, derived formulas and compiled code, for both paths
        deq_coefficients(name, "0.3", dps=dps)
        deq_coefficients(name, "0.3", dps=dps, certify=False)
        problem = DEQProblem.make(name, SIGMA_A2, dps=dps)
        t_c = _best(name, lambda p=problem: certify(p, others=False), args.repeat)
        t_s = _best(name, lambda a=name: deq_coefficients(a, SIGMA_A2, dps=dps), args.repeat)
        t_d = _best(
            name, lambda a=name: deq_coefficients(a, SIGMA_A2, dps=dps, certify=False), args.repeat
        )
        t = time.perf_counter()
        theirs = naive(name, dps, SIGMA_A2)["alpha_1"]
        t_n = time.perf_counter() - t
        res = deq_coefficients(name, SIGMA_A2, dps=dps)
        ball = res.values["alpha_1"]
        with mpmath.workdps(dps + 10):
            rel = abs(ball.value - theirs) / abs(ball.value)
            agree = int(-mpmath.log10(rel)) if rel else dps
        digits = min(v.digits for v in res.values.values())
        r_n, r_d = t_n / t_c, t_d / t_s
        flag = ""
        if (name in TARGET_20X and r_n < 20) or r_d < 1:
            flag, ok = "  <- below target", False
        print(
            f"{name:<16}{t_c:10.3f}{t_s:8.3f}{t_d:8.3f}{t_n:8.3f}{r_n:11.1f}{r_d:16.1f}  "
            f"{'yes' if res.certified else 'NO':<5}{digits:>8}{agree:>8}{flag}"
        )
    print("targets met" if ok else "some targets missed (see the arrows)")


if __name__ == "__main__":
    main()

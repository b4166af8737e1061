"""deqrmt's coefficient evaluation vs a naive mpmath baseline, measured side by side.

Baseline (what a careful user would write by hand): ``mpmath.quad`` (tanh-sinh, split at the
kinks) on each Gaussian expectation, ``mpmath.findroot`` on τ*² = σ_a² Var[φ(τ*ξ)] + σ_b² τ0²,
then the same formulas.  It is given the kinks and the Stein forms for free and is run once,
at the requested precision only (no guard-digit verification), so the comparison favours it.

deqrmt: ``deq_coefficients(act, dps=50)``, which runs *two* evaluations (dps + 5 and dps + 20)
to verify every digit.  Both are timed warm (the SymPy build of the activation is cached in
process), and a cold ``deqrmt coefficients tanh`` subprocess with an empty cache is timed too.

Usage: python benchmarks/coefficients.py [--dps 50] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import mpmath
import sympy as sp

from deqrmt.numeric import deq_coefficients
from deqrmt.symbolic import X, get_activation

ACTIVATIONS = ["relu", "leaky_relu(0.1)", "tanh", "erf", "silu", "gelu", "sin", "x + 0.25*x**2"]


def naive(act_name: str, dps: int, sigma_a2: str = "0.2", tau0: str = "1") -> dict[str, mpmath.mpf]:
    """Baseline: one mpmath.quad per expectation, findroot on τ*², no verification."""
    act = get_activation(act_name)
    phi = sp.lambdify(X, act.expr, "mpmath")
    dphi = sp.lambdify(X, sp.diff(act.expr, X), "mpmath")
    kinks = [float(k) for k in act.kinks]
    with mpmath.workdps(dps):
        sa2, t0 = mpmath.mpf(sigma_a2), mpmath.mpf(tau0)
        sb2 = 1 - sa2

        def expect(f, tau):  # E[f(ξ, τξ)]
            pts = (
                [-mpmath.inf, *sorted(k / tau for k in kinks), mpmath.inf]
                if kinks
                else [-mpmath.inf, 0, mpmath.inf]
            )
            return mpmath.quad(lambda x: f(x, tau * x) * mpmath.npdf(x), pts)

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
        d2 = expect(lambda xi, x: dphi(x) ** 2, tau)
        d = 1 - sa2 * m1**2
        a4 = sb2 / (1 - sa2 * s2 / 2)
        a1 = sb2 * m1**2 / d
        return {
            "tau_star": tau,
            "alpha_1": a1,
            "alpha_2": m2**2 * a4**2 / (4 * d),
            "alpha_3": m2**2 * (sa2 * a1 + sb2) ** 2 / (2 * d),
            "kappa_star": mpmath.sqrt(s0 / (1 - sa2 * d2)),
        }


def _best(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dps", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(
        f"{'activation':<16}{'deqrmt [s]':>12}{'naive [s]':>12}{'ratio':>9}  agreement (digits, alpha_1)"
    )
    tot_d = tot_n = 0.0
    for name in ACTIVATIONS:
        deq_coefficients(name, dps=args.dps)  # warm: SymPy build and node sets cached
        t_d = _best(lambda a=name: deq_coefficients(a, dps=args.dps), args.repeat)
        t_n = _best(lambda a=name: naive(a, args.dps), 1)
        ours = deq_coefficients(name, dps=args.dps).values["alpha_1"].value
        theirs = naive(name, args.dps)["alpha_1"]
        with mpmath.workdps(args.dps + 10):
            rel = abs(ours - theirs) / abs(ours) if ours else abs(theirs)
            agree = int(-mpmath.log10(rel)) if rel else args.dps
        tot_d, tot_n = tot_d + t_d, tot_n + t_n
        print(f"{name:<16}{t_d:12.3f}{t_n:12.3f}{t_n / t_d:9.1f}  {agree}")
    print(f"{'total':<16}{tot_d:12.3f}{tot_n:12.3f}{tot_n / tot_d:9.1f}")
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, DEQRMT_CACHE_DIR=cache)
        exe = os.path.join(os.path.dirname(sys.executable), "deqrmt")
        t = time.perf_counter()
        subprocess.run([exe, "coefficients", "tanh"], check=True, env=env, capture_output=True)
        cold = time.perf_counter() - t
        t = time.perf_counter()
        subprocess.run([exe, "coefficients", "tanh"], check=True, env=env, capture_output=True)
        warm = time.perf_counter() - t
    print(f"cold `deqrmt coefficients tanh` (empty cache): {cold:.2f} s; second run: {warm:.2f} s")


if __name__ == "__main__":
    main()

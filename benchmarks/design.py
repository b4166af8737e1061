"""``deqrmt design``: the float64-first root search against a search at the working precision.

Issue 19: ``design --deq tanh --family 'a*tanh(b*x)' --kernel ntk`` took 64 s on an idle
machine.  A profile (``python -m cProfile -m deqrmt design …``) put 98 % of the time in the
family's quadrature moments at 40 digits (714 nodes, ~30 µs each), called ~3000 times by
Levenberg–Marquardt from 28 random starts.  The search now runs each start in float64
(``mpmath.fp``, ~1 µs a node) and only finishes at 40 digits (Newton's chord steps), and the
polish at 55 digits likewise; the reported designs are the same (the test
``test_design_search_gives_the_same_design_as_a_precise_search`` checks it).

Both searches are timed here in the same process, the DEQ's coefficients computed once before,
with the machine's load printed before and after: the ratio is what to read, and it is withheld
when the machine is busy (``benchmarks/_load.py``; ``--force-ratio`` prints it anyway, marked).

Usage: python benchmarks/design.py [--family 'a*tanh(b*x)'] [--kernel ntk] [--starts 24]
       [--force-ratio]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _load import Load, add_force_flag, load_line, ratio_text  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--deq", default="tanh")
    p.add_argument("--family", default="a*tanh(b*x)")
    p.add_argument("--kernel", default="ntk")
    p.add_argument("--starts", type=int, default=24)
    p.add_argument("--dps", type=int, default=30)
    add_force_flag(p)
    args = p.parse_args(argv)

    import deqrmt.numeric._design_search as search
    from deqrmt.numeric import deq_coefficients
    from deqrmt.numeric._design import design_enn

    deq = deq_coefficients(args.deq, dps=args.dps)
    kw: dict[str, Any] = {"kernel": args.kernel, "starts": args.starts, "seed": 0}

    def timed() -> tuple[float, Any]:
        t = time.process_time()
        d = design_enn(deq, args.family, **kw)
        return time.process_time() - t, d

    before = Load.now()
    fast_s, fast = timed()
    original = search._solve_start

    def precise(ctx: Any, residual: Any, x0: Any, fixed: Any, n: int, tol: Any) -> Any:
        free0 = [ctx.mpf(t) for j, t in enumerate(x0) if j not in fixed]
        return search.solve_lm(ctx, search._free(residual(ctx), fixed, n), free0, tol)

    search._solve_start = precise  # type: ignore[assignment]
    try:
        slow_s, slow = timed()
    finally:
        search._solve_start = original  # type: ignore[assignment]
    after = Load.now()
    same = [s.params for s in fast.solutions] == [s.params for s in slow.solutions]
    print(f"design --deq {args.deq} --family {args.family!r} --kernel {args.kernel}")
    print(load_line("before", before) + " (CPU seconds below)")
    ratio = ratio_text(slow_s / fast_s, before, after, force=args.force_ratio, fmt="{:.1f}x faster")
    print(f"  precise search: {slow_s:7.2f} s")
    print(f"  float64 first : {fast_s:7.2f} s   ({ratio})")
    print(f"  same solutions: {same}; {len(fast.solutions)} reported")
    print(load_line("after", after))


if __name__ == "__main__":
    main()

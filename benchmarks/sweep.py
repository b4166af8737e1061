"""``deqrmt sweep`` on the embedded cluster vs the same tasks run serially, in one run.

The grid: 16 CPU-bound coefficient tasks at 40 digits, 4 activations × 4 values of σ_a².  The
activations are the β-parametrised ones users tune (Swish-β x·σ(βx), PyTorch's
``Softplus(beta)`` log(1 + e^{βx})/β, at β = 4 and 8): their certified coefficients take
0.3–1.3 s each.  The library activations' take 20–300 ms since the certified path, too short to
measure parallelism: Dask spends ~10 ms of the driver's CPU per task (scheduler, client, the
store's commit), on the same 2 cores.

* **serial**: :func:`deqrmt.sweep.execute` on each task in this process, one after the other.
* **sweep**: :func:`deqrmt.sweep.run_sweep` on :func:`deqrmt.sweep.embedded_cluster` (the
  cluster ``run_sweep`` starts by itself), started here so that it can be warmed first; the
  time is ``SweepResult.seconds`` (first submission to last stored result, store writes
  included).  The rounds share one store, as the runs of a growing sweep do: from round 2 on,
  its timings order the submission longest first (:func:`deqrmt.sweep.largest_first`).
* **ceiling**: the same tasks on the same number of plain processes (a warm
  ``ProcessPoolExecutor``, no Dask): what the cores actually give this process tree.

Everything is *warm*: the activations are evaluated once at another σ_a² first (here, on every
Dask worker via ``Client.run``, in every pool process), so that the one-off costs (imports,
SymPy builds, compiled formulas; ~1–4 s per activation and process) stay outside the ratio; a
large sweep pays them once per worker.  ``--rounds R`` runs serial, sweep and ceiling in turn R
times, each round on fresh σ_a² values (the engine caches a finished problem, so a repeated
task would be free), and reports the median of the per-round ratios serial/sweep (both measured
under the same load) and the best time of each: on a shared machine the load moves between
measurements.  On such a machine (other sessions' processes; Linux autogroup shares the CPU per
session) the ceiling is far below the core count, and ``ceiling / sweep`` is Dask's own
overhead.  ``--cold`` adds the end-to-end numbers: a fresh serial subprocess vs ``run_sweep``
with its own embedded cluster (start-up and warm-up included).

Two more measurements, each on its own:

* ``--memory``: the peak memory (RSS) of a fresh process running one ``exact``/``validate``
  task against :func:`deqrmt.sweep._limits.task_bytes`, the estimate a spec's n and m are
  budgeted by (at large n, m it must not be below what is measured).
* ``--overhead``: a 9-task sweep of cheap coefficient tasks through the console script, three
  times, with the steps' times from the test hook ``DEQRMT_TEST_PHASES``: the embedded
  cluster's start (its launcher process, scheduler and worker) and close, against the whole.

Load: the load average and core count are printed before and after; every ratio is withheld
("ratio withheld: machine busy (load X on N cores)") when the 1-minute load exceeds cores − 0.5
at the start or end of the comparison, unless ``--force-ratio`` (``benchmarks/_load.py``).

Usage: python benchmarks/sweep.py [--dps 40] [--workers N] [--rounds 5] [--cold] [--force-ratio]
       python benchmarks/sweep.py --memory | --overhead
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _load import Load, add_force_flag, load_line, ratio_text, withheld  # noqa: E402

from deqrmt.sweep import embedded_cluster, execute, parse_spec, run_sweep  # noqa: E402

ACTIVATIONS = ["x*sigmoid(4*x)", "x*sigmoid(8*x)", "log(1+exp(4*x))/4", "log(1+exp(8*x))/8"]
SIGMA_A2 = ["0.15", "0.25", "0.35", "0.45"]
WARM_SIGMA_A2 = "0.05"


def _spec_text(dps: int, sigmas: list[str]) -> str:
    return textwrap.dedent(
        f"""
        kind = "coefficients"
        activations = {ACTIVATIONS!r}
        sigma_a2 = {sigmas!r}
        dps = {dps}
        """
    ).replace("'", '"')


def _sigmas(round_: int) -> list[str]:
    """Round r's σ_a² grid: SIGMA_A2 shifted by r/1000 (new problems, same cost)."""
    return [str(float(Fraction(s) + Fraction(round_, 1000))) for s in SIGMA_A2]


def _warm(dps: int) -> None:
    for t in parse_spec(_spec_text(dps, [WARM_SIGMA_A2])).tasks:
        execute(t.kind, t.inputs)


def _run_task(kind: str, inputs: dict[str, object]) -> None:
    assert execute(kind, inputs)["error"] is None


def _barrier_wait(barrier: object) -> None:
    barrier.wait()  # type: ignore[attr-defined]


def _load() -> str:
    return Load.now().text()


_MEMORY_PROBE = """
import json, resource, sys
from deqrmt.sweep import execute, parse_spec
kind, n, m = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
extra = f"\\nm = [{m}]" if kind == "validate" else ""
spec = parse_spec(f'kind = "{kind}"\\nactivations = "relu"\\nsigma_a2 = 0.2\\nn = [{n}]\\ndps = 15' + extra)
r = execute(kind, spec.tasks[0].inputs, "cpu")
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # the whole process's peak
print(json.dumps({"peak": peak, "error": r["error"]}))
"""


def memory() -> None:
    """Measured peak RSS of one task vs the budget's estimate (fresh process per point)."""
    from deqrmt.sweep._limits import size_text, task_bytes

    print(load_line("before"))
    print(f"{'kind':9s} {'n':>5s} {'m':>5s} {'measured':>10s} {'estimate':>10s}  estimate/measured")
    for kind, n, m in [("exact", 256, 0), ("exact", 1024, 0), ("exact", 2048, 0),
                       ("validate", 256, 1024), ("validate", 256, 4096), ("validate", 1024, 512)]:  # fmt: skip
        out = subprocess.run(
            [sys.executable, "-c", _MEMORY_PROBE, kind, str(n), str(m)],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        r = json.loads(out.stdout.strip().splitlines()[-1])
        assert r["error"] is None, r["error"]
        used = r["peak"]
        est = task_bytes(n, round(0.8 * n), m)
        print(f"{kind:9s} {n:5d} {m:5d} {size_text(used):>10s} {size_text(est):>10s}  "
              f"{est / used:.2f}")  # fmt: skip
    print(load_line("after"))


_OVERHEAD_SPEC = (
    'kind = "coefficients"\nactivations = ["relu", "abs(x)", "leaky_relu(0.1)"]\n'
    'sigma_a2 = "0.1:0.5:3"\ndps = 12\n'
)


def overhead(runs: int = 3) -> None:
    """The embedded cluster's start and close within a small sweep's wall time."""
    print(load_line("before"))
    script = Path(sys.executable).parent / "deqrmt"
    for i in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            spec = Path(tmp) / "spec.toml"
            spec.write_text(_OVERHEAD_SPEC)
            phases = Path(tmp) / "phases.txt"
            env = dict(os.environ, DEQRMT_TEST_PHASES=str(phases))
            t = time.time()
            subprocess.run([str(script), "sweep", str(spec), "--workers", "1"], env=env,
                           capture_output=True, check=True)  # fmt: skip
            wall = time.time() - t
            at = {}
            for line in phases.read_text().splitlines():
                name, stamp = line.split()
                at.setdefault(name, float(stamp))
            start = at["cluster-ready"] - at["cluster-spawn"]
            close = at["cluster-closed"] - at["cluster-closing"]
            tasks = at["all-stored"] - at["submitted"]
            print(f"run {i + 1}: wall {wall:5.2f} s; cluster start {start:4.2f} s, 9 tasks "
                  f"{tasks:4.2f} s, cluster close {close:4.2f} s, before the store opened "
                  f"{at['store-opening'] - t:4.2f} s ({_load()})", flush=True)  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--dps", type=int, default=40)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument(
        "--rounds", type=int, default=5, help="interleaved rounds (median ratio, best of each)"
    )
    ap.add_argument("--cold", action="store_true", help="also time both end to end, cold")
    ap.add_argument("--memory", action="store_true", help="only: task memory vs its estimate")
    ap.add_argument("--overhead", action="store_true", help="only: the cluster's start and close")
    add_force_flag(ap)
    args = ap.parse_args(argv)
    if args.memory:
        memory()
        return
    if args.overhead:
        overhead()
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from distributed import Client

    print(load_line("before"))
    _warm(args.dps)
    times: dict[str, list[float]] = {"serial": [], "sweep": [], "ceiling": []}
    ctx = multiprocessing.get_context("spawn")
    cluster = embedded_cluster(args.workers)
    try:
        with (
            tempfile.TemporaryDirectory() as tmp,
            Client(cluster, set_as_default=False) as client,
            ctx.Manager() as manager,
            ProcessPoolExecutor(
                args.workers, mp_context=ctx, initializer=_warm, initargs=(args.dps,)
            ) as pool,
        ):
            client.run(_warm, args.dps)
            # every pool process warm and idle before any clock starts
            barrier = manager.Barrier(args.workers)
            list(pool.map(_barrier_wait, [barrier] * args.workers))
            start = Load.now()
            for r in range(args.rounds):
                spec = parse_spec(_spec_text(args.dps, _sigmas(r)))
                assert len(spec.tasks) == 16
                tasks = [(t.kind, dict(t.inputs)) for t in spec.tasks]

                t = time.perf_counter()
                for kind, inputs in tasks:
                    _run_task(kind, inputs)
                times["serial"].append(time.perf_counter() - t)

                result = run_sweep(
                    spec,
                    store=Path(tmp) / "sweep.sqlite",
                    scheduler=cluster.scheduler_address,
                    workers=args.workers,
                )
                assert result.ok, result.table()
                times["sweep"].append(result.seconds)

                # the same tasks: new to the pool's processes (the caches are per process)
                t = time.perf_counter()
                list(pool.map(_run_task, *zip(*tasks, strict=True)))
                times["ceiling"].append(time.perf_counter() - t)
                print(
                    f"round {r + 1}: serial {times['serial'][-1]:.2f} s, sweep "
                    f"{times['sweep'][-1]:.2f} s, ceiling {times['ceiling'][-1]:.2f} s "
                    f"({_load()})",
                    flush=True,
                )
        end = Load.now()
    finally:
        cluster.close()

    def ratio(r: float, before: Load = start, after: Load = end) -> str:
        return ratio_text(r, before, after, force=args.force_ratio)

    best = {k: min(v) for k, v in times.items()}
    # paired within each round (the same load for both): the headline is their median
    paired = sorted(s / w for s, w in zip(times["serial"], times["sweep"], strict=True))
    median = statistics.median(paired)
    if withheld(start, end, force=args.force_ratio):
        print(f"ratio serial / sweep, median of rounds: {ratio(median)}")
    else:
        print(
            f"ratio serial / sweep, round by round: {', '.join(f'{r:.2f}' for r in paired)}; "
            f"median {ratio(median)}"
        )
    print(f"16 coefficient tasks at {args.dps} digits, warm, best of {args.rounds} rounds:")
    print(f"  serial (one process)              {best['serial']:8.2f} s")
    print(f"  sweep ({args.workers} Dask worker processes)  {best['sweep']:8.2f} s")
    print(f"  ceiling ({args.workers} plain processes)      {best['ceiling']:8.2f} s")
    print(f"  ratio serial / sweep              {ratio(best['serial'] / best['sweep'])}")
    print(f"  ratio serial / ceiling            {ratio(best['serial'] / best['ceiling'])}")

    if args.cold:
        spec = parse_spec(_spec_text(args.dps, SIGMA_A2))
        with tempfile.TemporaryDirectory() as tmp:
            # the cold serial run: a fresh interpreter over the same task list
            script = Path(tmp) / "serial.py"
            script.write_text(
                "from deqrmt.sweep import execute, parse_spec\n"
                f"spec = parse_spec({_spec_text(args.dps, SIGMA_A2)!r})\n"
                "for t in spec.tasks:\n    assert execute(t.kind, t.inputs)['error'] is None\n"
            )
            cold_start = Load.now()
            t = time.perf_counter()
            subprocess.run([sys.executable, str(script)], check=True)
            cold_serial = time.perf_counter() - t
            t = time.perf_counter()
            res = run_sweep(spec, store=Path(tmp) / "cold.sqlite", workers=args.workers)
            cold_sweep = time.perf_counter() - t
            assert res.ok, res.table()
        print("cold, end to end (fresh processes, cluster start-up included):")
        print(f"  serial subprocess                 {cold_serial:8.2f} s")
        print(f"  run_sweep, embedded cluster       {cold_sweep:8.2f} s")
        cold_ratio = ratio(cold_serial / cold_sweep, cold_start, Load.now())
        print(f"  ratio                             {cold_ratio}")
    print(load_line("after"))


if __name__ == "__main__":
    main()

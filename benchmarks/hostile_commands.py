"""The expensive part of issue 25's hostile corpus for ``certify``, ``design`` and ``bias``.

The cheap part (refusals before any work) is ``tests/test_hostile_commands.py``.  These cases
do real work — families and parametrizations the commands accept or refuse only after trying,
sizes at the edge of their budgets — so each runs as its own ``deqrmt`` process with a 60 s
limit of CPU time (wall time on a shared machine measures the neighbours), and the summary counts
what issue 25 forbids: exit 70, a traceback, a run past 60 s, a process larger than the
machine's memory (the largest peak RSS is printed).  Exit 0, 1 (a check that failed) and 2 (a named
refusal, one line) are all fine.  It prints no ratio; the load is printed before and after
(``benchmarks/_load.py``), since the CPU and wall times it prints depend on it.

Usage: python benchmarks/hostile_commands.py [--only design|bias|certify] [--jobs 2] [--first N]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _load import load_line  # noqa: E402

LIMIT_S = 60.0

DEQS = ["tanh", "relu", "gelu", "x*sigmoid(3*x)"]
FAMILIES = [
    "a*tanh(b*x)",
    "a*x+b*x**3",
    "a*sin(b*x)",
    "a*exp(-b*x**2)",
    "a*erf(b*x)",
    "a*x/(1+b*x**2)",
    "a*sqrt(1+b*x**2)",
    "a*log(1+exp(b*x))",
    "a*exp(b*x)",
    "exp(a*x)+b*x",
    "a*tanh(x)+b*tanh(2*x)",
    "a*x*tanh(b*x)",
    "sqrt(a)*tanh(b*x)",
    "log(a)*tanh(b*x)",
    "a*cosh(b*x)",
    "a*sigmoid(b*x)",
    "a*softplus(b*x)",
    "a*gelu(b*x)",
    "a*x+b*x**2+c*x**3+d*x**4",
    "a*tanh(b*x+c)",
]


def design_cases() -> list[list[str]]:
    out: list[list[str]] = []
    for i, fam in enumerate(FAMILIES):
        deq = DEQS[i % len(DEQS)]
        out.append(["design", "--deq", deq, "--family", fam, "--starts", "4", "--dps", "15"])
    extra = [
        ["--deq", "tanh", "--family", "a*tanh(b*x)", "--kernel", "ntk"],  # issue 19's
        ["--deq", "tanh", "--family", "a*tanh(b*x)", "--kernel", "ntk", "--trainable", "a,A,B"],
        ["--deq", "relu", "--family", "a*tanh(b*x)", "--layers", "3", "--starts", "2"],
        ["--deq", "tanh", "--family", "a*tanh(b*x)", "--dps", "150", "--starts", "2"],
        ["--deq", "relu", "--family", "a*tanh(b*x)", "--dps", "1000"],
        ["--deq", "relu", "--family", "hard_tanh", "--dps", "1000", "--starts", "2"],
        ["--deq", "tanh", "--family", "polynomial8", "--layers", "8", "--starts", "2"],
        ["--deq", "tanh", "--family", "polynomial8", "--layers", "8", "--starts", "200"],
        ["--deq", "gelu", "--family", "leaky_relu", "--layers", "8"],
        ["--deq", "silu", "--family", "a*tanh(b*x)", "--layers", "2", "--starts", "3"],
        ["--deq", "tanh", "--family", "hard_tanh", "--sigma-a2", "0.99", "--starts", "2"],
        ["--deq", "tanh", "--family", "hard_tanh", "--seed", str(2**63 - 1), "--starts", "2"],
        ["--deq", "relu", "--family", "leaky_relu", "--kernel", "ntk", "--starts", "3"],
        ["--deq", "tanh", "--family", "a*tanh(b*x)", "--tau0", "100", "--starts", "2"],
        ["--deq", "tanh", "--family", "a*tanh(b*x)", "--sigma-a2", "1e-6", "--starts", "2"],
    ]
    return out + [["design", *e] for e in extra]


PARAMETRIZATIONS = [
    "exp(exp(w))", "tanh(exp(w))", "exp(exp(w))+w", "exp(tanh(w))", "log(exp(w)+1)",
    "log(log(w))", "exp(-w**2)", "w*exp(w)", "w**3", "w**3+w", "w**2", "w**(1/3)", "sqrt(w)",
    "1/w", "1/(1-w)**2", "w/(1+abs(w))", "abs(w)", "max(w,0)", "sin(w)", "cos(w)+w", "erf(w)",
    "sigmoid(w)", "softplus(w)", "tanh(w)", "tanh(tanh(w))", "exp(w)-exp(-w)", "sinh(w)",
    "cosh(w)", "atan(w)", "w+sin(w)", "heaviside(w)", "sign(w)", "relu(w)", "exp(1/w)",
    "1/(1-w)+1/(2-w)", "(1-w)**(-3)", "u/(1-w)", "u**2-v**2", "u*v", "exp(u)*v",
    "u/(1-w)**2", "u**3-v**3", "sqrt(u)*w", "u**2+v**2", "u*exp(w)", "tanh(u)*v",
    "u/(1+w**2)", "(u-v)**2", "u+v", "x", "exp(exp(exp(w)))", "log(1+w**2)", "w**5+w**3+w",
    "1/(1+exp(-w))", "w*tanh(w)", "exp(w)*w**2",
]  # fmt: skip


def bias_cases() -> list[list[str]]:
    out = [["bias", e] for e in PARAMETRIZATIONS]
    checks = [
        ["1/(1-w)"],
        ["tanh(w)", "--d", "200", "--n", "40"],
        ["u**2-v**2", "--init", "0.1"],
        ["u/(1-w)", "--planted", "dense"],
        ["1/(1-w)", "--d", "10000", "--n", "20"],
        ["1/(1-w)", "--d", "1000", "--n", "40"],
        ["1/(1-w)", "--steps", "1e-9"],
        ["1/(1-w)", "--steps", "1e3"],
        ["1/(1-w)", "--seed", str(2**32 - 1), "--dps", "1000"],
        ["exp(w)", "--init", "-3"],
        ["w**3+w", "--d", "200", "--n", "100"],
        ["1/(1-w)", "--init", "0.999999"],
    ]
    return out + [["bias", *c[:1], "--check", "--device", "cpu", *c[1:]] for c in checks]


def certify_cases(designs: dict[str, str]) -> list[list[str]]:
    ht, ntk = designs["hard_tanh"], designs["ntk"]
    runs = [
        [ht, "--n", "16"],
        [ht, "--n", "16,32,64", "--m", "1"],
        [ht, "--n", "16", "--m", "16384"],
        [ht, "--n", "64", "--ratio", "1/256"],
        [ht, "--n", "256", "--ratio", "16"],
        [ht, "--n", "2048", "--m", "16"],
        [ht, "--n", "4096", "--m", "16"],
        [ht, "--n", "16,17,18,19,20,21,22,23"],
        [ht, "--n", "32", "--seed", str(2**63 - 1)],
        [ntk, "--n", "32,64"],
        [designs["polynomial3"], "--n", "32,64"],
        [designs["leaky_relu"], "--n", "32,64"],
        [designs["far"], "--n", "32"],
    ]
    return [["enn-check", "--enn", r[0], *r[1:]] for r in runs]


def make_designs(tmp: Path) -> dict[str, str]:
    specs = {
        "hard_tanh": ["--deq", "tanh", "--family", "hard_tanh", "--dps", "15", "--starts", "2"],
        "ntk": ["--deq", "tanh", "--family", "hard_tanh", "--kernel", "ntk", "--dps", "15"],
        "polynomial3": ["--deq", "gelu", "--family", "polynomial3", "--dps", "15", "--starts", "4"],
        "leaky_relu": ["--deq", "relu", "--family", "leaky_relu", "--dps", "15"],
    }
    out = {}
    for name, argv in specs.items():
        path = tmp / f"{name}.json"
        done = subprocess.run(
            ["deqrmt", "design", *argv, "--json"], capture_output=True, timeout=600, check=True
        )
        path.write_bytes(done.stdout)
        out[name] = str(path)
    far = json.loads((tmp / "hard_tanh.json").read_text())
    far["solutions"][0]["params"][0] = {"a": "999999", "c": "0.000001"}  # legal, extreme
    (tmp / "far.json").write_text(json.dumps(far))
    out["far"] = str(tmp / "far.json")
    return out


def _limit_cpu() -> None:  # in the child, before exec: SIGXCPU past LIMIT_S of CPU
    resource.setrlimit(resource.RLIMIT_CPU, (int(LIMIT_S), int(LIMIT_S) + 5))


def run_one(argv: list[str]) -> dict[str, object]:
    """Run ``deqrmt *argv`` under a CPU limit of LIMIT_S seconds (wall time on a shared machine
    says more about the neighbours than about the run); exit code, CPU and wall seconds, peak
    RSS, the last stderr line."""
    with tempfile.TemporaryDirectory() as tmp:
        timing = os.path.join(tmp, "time")
        start = time.monotonic()
        proc = subprocess.Popen(
            ["/usr/bin/time", "-q", "-f", "%U %S %M", "-o", timing, "deqrmt", *argv],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=os.environ,
            preexec_fn=_limit_cpu,
        )
        try:
            _, err = proc.communicate(timeout=15 * LIMIT_S)  # a safety net only
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        try:
            with open(timing, encoding="ascii") as fh:
                fields = fh.read().split()[-3:]
            user, system, rss_kib = (float(v) for v in fields)
        except (OSError, ValueError):
            user, system, rss_kib = LIMIT_S, 0.0, 0.0  # no record: count it as too long
    text = err.decode("utf-8", "backslashreplace")
    text = "\n".join(ln for ln in text.splitlines() if not ln.startswith("Command "))
    cpu = user + system
    return {
        "argv": argv,
        "rc": proc.returncode,
        "cpu_s": round(cpu, 1),
        "wall_s": round(time.monotonic() - start, 1),
        "rss_mib": round(rss_kib / 1024),
        "hung": not cpu < LIMIT_S - 1 or "CPU time limit" in text,
        "traceback": "Traceback" in text,
        "bug": proc.returncode == 70 or "internal error" in text,
        "last": (text.strip().splitlines() or [""])[-1][:200],
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--only", choices=["design", "bias", "certify"], default=None)
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--json", default=None, metavar="FILE", help="write every result here")
    p.add_argument(
        "--first", type=int, default=None, metavar="N", help="only the first N cases (a smoke run)"
    )
    args = p.parse_args(argv)
    if args.first is not None and args.first < 1:
        p.error(f"--first must be at least 1; got {args.first}")
    print(load_line("before"), flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        cases: list[list[str]] = []
        if args.only in (None, "design"):
            cases += design_cases()
        if args.only in (None, "bias"):
            cases += bias_cases()
        if args.only in (None, "certify"):
            cases += certify_cases(make_designs(Path(tmp)))
        cases = cases[: args.first]
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            results = list(pool.map(run_one, cases))
    for r in results:
        flag = "BAD " if (r["bug"] or r["traceback"] or r["hung"]) else "    "
        line = re.sub(r"\s+", " ", str(r["last"]))
        print(
            f"{flag}rc={r['rc']!s:>4} {r['cpu_s']:>6}s CPU {r['rss_mib']:>5} MiB  "
            f"{' '.join(r['argv'])[:90]}  | {line}"
        )
    counts = {
        "cases": len(results),
        "exit 0": sum(r["rc"] == 0 for r in results),
        "exit 1": sum(r["rc"] == 1 for r in results),
        "exit 2": sum(r["rc"] == 2 for r in results),
        "exit 70": sum(r["rc"] == 70 for r in results),
        "tracebacks": sum(bool(r["traceback"]) for r in results),
        "past 60 s of CPU": sum(bool(r["hung"]) for r in results),
        "largest CPU time (s)": max(float(str(r["cpu_s"])) for r in results),
        "largest peak RSS (MiB)": max(int(str(r["rss_mib"])) for r in results),
    }
    print(json.dumps(counts, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps({"counts": counts, "results": results}, indent=1))
    print(load_line("after"))
    bad = counts["exit 70"] or counts["tracebacks"] or counts["past 60 s of CPU"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

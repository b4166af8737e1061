r"""
A DEQ and its designed shallow network have the same kernel
===========================================================

ICML 2024's design principle: the explicit network's equivalent :math:`\bar\Sigma^{(L)}`
(Theorem 3) has the same form as the DEQ's :math:`\bar G` (Theorem 1), so choosing the explicit
activations such that :math:`\tilde\tau_L = \gamma_*` and :math:`\tilde\alpha_{L,i} = \alpha_{*,i}`
makes the two conjugate kernels close in spectral norm.  The
slides' examples: a **Tanh-DEQ** is matched by a *one*-hidden-layer H-Tanh network
(σ(x) = a·x on [−c, c], ±a·c outside), a **ReLU-DEQ** needs *two* hidden layers of leaky
ReLUs, because for ReLU :math:`\alpha_{*,2} \ne \alpha_{*,3}/2` while one explicit layer always
has :math:`\tilde\alpha_{1,2} = \tilde\alpha_{1,3}/2`.

:func:`deqrmt.design_enn` solves the matching equations (to 20 digits here) and
``deqrmt enn-check`` measures :math:`\|G^* - \Sigma^{(L)}\|/\|G^*\|` between the *exact* kernels on fresh
Gaussian-mixture data against n, for the designed network and for a naive one that uses the
DEQ's own activation in every layer.

**Budget:** about 40 s on 2 CPU cores at the default size (n = 128 … 512);
``DEQRMT_GALLERY_SIZE=paper`` runs n = 256 … 2048.
"""

# %%
# What ran, where
# ---------------
import contextlib
import io
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import matplotlib.pyplot as plt
import torch

import deqrmt
from deqrmt.cli import main as deqrmt_cli


def machine() -> str:
    """The CPU, its core count and the Python that ran this example."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            cpu = next(line.split(":", 1)[1].strip() for line in fh if "model name" in line)
    except (OSError, StopIteration):
        pass
    return (
        f"{cpu}, {os.cpu_count()} cores, {platform.system()}, Python "
        f"{platform.python_version()}, torch {torch.__version__}"
    )

SIZE = os.environ.get("DEQRMT_GALLERY_SIZE", "small")
NS = {"small": "128,256,512", "paper": "256,512,1024,2048"}[SIZE]
print(f"machine: {machine()}")
print(f"size: {SIZE}, n = {NS}")
start = time.perf_counter()


def deqrmt_json(*argv: str) -> dict:
    """Run a ``deqrmt`` command in this process and read its ``--json`` output."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = deqrmt_cli([*argv, "--json"])
    if code not in (0, 1):  # 1: a check ran and failed, still a result
        raise RuntimeError(f"deqrmt {' '.join(argv)} exited {code}")
    return json.loads(out.getvalue())


# %%
# The designs
# -----------
# The depth rule decides the number of layers: one layer suffices iff α*₂ = α*₃/2.
workdir = Path(tempfile.mkdtemp())
cases = {"tanh": "hard_tanh", "relu": "leaky_relu"}
designs = {}
for deq, family in cases.items():
    design = deqrmt.design_enn(deq, family, dps=20, starts=4)
    designs[deq] = design
    rule = design.depth_rule
    print(f"{deq}-DEQ → {design.layers}-layer {family} ENN "
          f"(α*₂ = {rule['alpha_2'][:10]}, α*₃/2 = {rule['alpha_3_over_2'][:10]})")
    for layer, params in enumerate(design.solutions[0].params, start=1):
        print(f"   layer {layer}: " + ", ".join(f"{k} = {v[:12]}" for k, v in params.items()))
    (workdir / f"{deq}.json").write_text(design.to_json(), encoding="utf-8")

# %%
# Exact kernels against n
# -----------------------
fig, axes = plt.subplots(1, 2, figsize=(9, 3.8), sharey=True)
for ax, (deq, family) in zip(axes, cases.items(), strict=True):
    report = deqrmt_json("enn-check", "--enn", str(workdir / f"{deq}.json"), "--n", NS,
                         "--m", "256")
    ns = [run["n"] for run in report["runs"]]
    designed = [run["designed_exact"] for run in report["runs"]]
    naive = [run["naive_exact"] for run in report["runs"]]
    print(f"{deq}: designed {[f'{e:.2e}' for e in designed]}, naive {[f'{e:.2e}' for e in naive]}"
          f", passed: {report['passed']}")
    layers = designs[deq].layers
    ax.loglog(ns, designed, "o-", label=f"designed {layers}-layer {family}")
    ax.loglog(ns, naive, "s--", label=f"naive {layers}-layer {deq}")
    ax.set_title(f"{deq}-DEQ, σ_a² = 0.2")
    ax.set_xlabel("n")
    ax.set_ylabel("‖G* − Σ⁽ᴸ⁾‖ / ‖G*‖  (exact kernels)")
    ax.yaxis.set_tick_params(labelleft=True)
    ax.legend(fontsize=8)
fig.tight_layout()

print(f"total: {time.perf_counter() - start:.1f} s")

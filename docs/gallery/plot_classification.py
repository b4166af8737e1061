"""
DEQ vs designed ENN: classification accuracy and cost
=====================================================

The slides' experiment: random-feature ridge classification with (a) the DEQ's equilibrium
features z*, (b) the features of the explicit network designed to match its kernel
(:func:`deqrmt.design_enn`) and (c) a naive explicit network with the DEQ's activation, on the
two-class Gaussian mixture and on scikit-learn's bundled handwritten digits (8×8 images, 10
classes; no download).  Same width m for all three; test accuracy (mean ± std over seeds)
and the time to compute the features.  ``deqrmt experiment --json`` does the work.

**Budget:** about 40 s on 2 CPU cores at the default size (m = 256, 2 seeds, 400 training
samples); ``DEQRMT_GALLERY_SIZE=paper`` runs the command's defaults (m = 1024, 5 seeds, 1000
training samples, a few minutes).
"""

# %%
# What ran, where
# ---------------
import contextlib
import io
import json
import os
import platform
import time

import matplotlib.pyplot as plt
import numpy as np
import torch

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
ARGS = {
    "small": ["--m", "256", "--seeds", "2", "--n-train", "400", "--n-test", "200"],
    "paper": [],
}[SIZE]
print(f"machine: {machine()}")
print(f"size: {SIZE} {' '.join(ARGS)}")
start = time.perf_counter()

# %%
# Run the experiment
# ------------------
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = deqrmt_cli(["experiment", "--deq", "tanh", "--family", "hard_tanh",
                       "--dataset", "gmm,digits", "--device", "cpu", *ARGS, "--json"])
assert code == 0, code
result = json.loads(out.getvalue())

# %%
# The table
# ---------
models = {"deq": "DEQ (tanh)", "designed_enn": "designed ENN (H-Tanh)", "naive_enn": "naive ENN (tanh)"}
print(f"{'dataset':<8} {'model':<24} {'accuracy':>16} {'features (s)':>13}")
for dataset, rows in result["datasets"].items():
    for key, label in models.items():
        r = rows[key]
        print(f"{dataset:<8} {label:<24} {r['accuracy_mean']:>9.3f} ± {r['accuracy_std']:.3f}"
              f" {r['seconds_mean']:>13.3f}")
    print(f"{'':<8} ENN time / DEQ time: {rows['enn_over_deq_time']:.3f}")

# %%
# The figure
# ----------
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.6))
datasets = list(result["datasets"])
x = np.arange(len(datasets))
for i, (key, label) in enumerate(models.items()):
    acc = [result["datasets"][d][key]["accuracy_mean"] for d in datasets]
    err = [result["datasets"][d][key]["accuracy_std"] for d in datasets]
    sec = [result["datasets"][d][key]["seconds_mean"] for d in datasets]
    ax1.bar(x + (i - 1) * 0.27, acc, 0.27, yerr=err, label=label, capsize=3)
    ax2.bar(x + (i - 1) * 0.27, sec, 0.27, label=label)
for ax in (ax1, ax2):
    ax.set_xticks(x, datasets)
    ax.set_xlabel("dataset")
ax1.set_ylim(0.5, 1.0)
ax1.set_ylabel("test accuracy")
ax2.set_ylabel("feature time (s)")
ax2.set_yscale("log")
ax1.legend(fontsize=7, loc="lower left")
fig.tight_layout()

print(f"total: {time.perf_counter() - start:.1f} s")

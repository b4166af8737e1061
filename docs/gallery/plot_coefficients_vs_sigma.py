"""
The coefficients against the weight variance, and the depth rule
================================================================

How α*₁, α*₂, α*₃ and γ*² move with the DEQ's weight scale σ_a² (σ_b² = 1 − σ_a²), for
several activations, from :func:`deqrmt.deq_coefficients_sweep` (the same derived formulas,
vectorised in float64).  The right panel is the design's depth rule: one explicit layer can
match the DEQ's CK only where α*₂ = α*₃/2 (odd activations such as tanh, where both vanish);
elsewhere the ratio 2α*₂/α*₃ ≠ 1 asks for two layers.  Spot values are re-computed with
:func:`deqrmt.deq_coefficients`, every digit proven.

**Budget:** about 10 s on 2 CPU cores (both sizes: the sweep is cheap).
"""

# %%
# What ran, where
# ---------------
import os
import platform
import time

import matplotlib.pyplot as plt
import numpy as np
import torch

import deqrmt


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

print(f"machine: {machine()}")
start = time.perf_counter()
sigma_a2 = np.linspace(0.02, 0.6, 59)
activations = ["relu", "tanh", "silu", "leaky_relu(0.1)"]

# %%
# The sweep
# ---------
sweeps = {act: deqrmt.deq_coefficients_sweep(act, sigma_a2) for act in activations}
for act in activations:
    c = deqrmt.deq_coefficients(act, sigma_a2="0.2", dps=12)
    print(f"{act:>16} at σ_a² = 0.2: α*₁ = {c.alpha_1.text}, α*₂ = {c.alpha_2.text}, "
          f"α*₃ = {c.alpha_3.text}")

# %%
# The figure
# ----------
# One notation for the coefficients in every figure and table: α*₁, α*₂, α*₃ (as in the text).
SYMBOL = {"alpha_1": "α*₁", "alpha_2": "α*₂", "alpha_3": "α*₃"}
fig, axes = plt.subplots(1, 4, figsize=(12, 3.2))
for act, c in sweeps.items():
    for ax, key in zip(axes[:3], SYMBOL, strict=True):
        ax.plot(sigma_a2, c[key], label=act)
        ax.set_title(SYMBOL[key])
        ax.set_ylabel(SYMBOL[key])
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(c["alpha_3"] > 1e-12, 2 * c["alpha_2"] / c["alpha_3"], np.nan)
    axes[3].plot(sigma_a2, ratio, label=act)
axes[3].axhline(1.0, color="k", lw=0.8, ls=":")
axes[3].set_title("2α*₂/α*₃ (1: one layer suffices)")
axes[3].set_ylabel("2α*₂/α*₃")
for ax in axes:
    ax.set_xlabel("σ_a² (σ_b² = 1 − σ_a²)")
axes[0].legend(fontsize=7)
fig.tight_layout()

print(f"total: {time.perf_counter() - start:.1f} s")

r"""
The equivalent kernel's error against n (ICML 2024, Theorem 1)
===============================================================

The slides' figure: the relative spectral-norm error ‖G* − Ḡ‖/‖G*‖ between the DEQ's exact
infinite-width conjugate kernel G* and its high-dimensional equivalent Ḡ, against the number
of samples n, for DEQs with several activations at σ_a² = 0.2 on the two-class Gaussian
mixture (:math:`p/n = 0.8`, :math:`\mu_a = 8 e_{8(a-1)+1}`, :math:`C_a = (1 + 8(a-1)/\sqrt p)\, I_p`).
Theorem 1 says the error is :math:`O(n^{-1/2})`: on a log–log plot, lines of slope −½.

As a negative control, ReLU again with α*₁ deliberately multiplied by 1.2 (the ``alpha1_x1.2``
variant of :data:`deqrmt.validate.VARIANTS`): its error stalls instead of falling.

**Budget:** about 20 s on 2 CPU cores at the default size (n = 128 … 512);
``DEQRMT_GALLERY_SIZE=paper`` runs n = 256 … 2048, the slides' range (a few minutes).
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

from deqrmt.validate import ValidationConfig, run_validation


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
NS = {"small": (128, 256, 512), "paper": (256, 512, 1024, 2048)}[SIZE]
ACTIVATIONS = ["relu", "tanh", "leaky_relu(0.1)", "silu", "gelu"]
print(f"machine: {machine()}")
print(f"size: {SIZE}, n = {NS}")
start = time.perf_counter()

# %%
# Exact kernels against their equivalents
# ---------------------------------------
# :func:`deqrmt.validate.run_validation` draws the data at each n, computes the coefficients
# at the actual p (every digit verified), builds Ḡ, iterates the kernel map to G* (float64,
# to 1e-13) and measures the relative spectral-norm error; ``monte_carlo=False`` leaves out
# the finite-width networks (``deqrmt validate ACT --no-mc`` on the command line).
errors: dict[str, list[float]] = {}
for act in ACTIVATIONS:
    result = run_validation(ValidationConfig(act, ns=NS, monte_carlo=False, device="cpu"))
    errors[act] = [run.ck.exact_vs_equiv for run in result.runs]
    print(f"{act:>16}: errors {np.round(errors[act], 4)}, log–log slope {result.slope_ck:+.2f}")

control = run_validation(
    ValidationConfig("relu", ns=NS, monte_carlo=False, device="cpu", variant="alpha1_x1.2")
)
errors["relu, α*₁ × 1.2 (wrong)"] = [run.ck.exact_vs_equiv for run in control.runs]
print(f"negative control: errors {np.round(errors['relu, α*₁ × 1.2 (wrong)'], 4)}")

# %%
# The figure
# ----------
fig, ax = plt.subplots(figsize=(6.4, 4.4))
for name, err in errors.items():
    wrong = "wrong" in name
    ax.loglog(NS, err, marker="o", ls="--" if wrong else "-", color="0.4" if wrong else None,
              label=name)
ref = errors["relu"][0] * (np.asarray(NS) / NS[0]) ** -0.5
ax.loglog(NS, ref, ":", color="k", label="slope −½ (theory)")
ax.set_xlabel("n (samples; p = 0.8 n)")
ax.set_ylabel("‖G* − Ḡ‖ / ‖G*‖")
ax.set_title("DEQ conjugate kernel vs its equivalent, σ_a² = 0.2")
ax.legend(fontsize=8)
fig.tight_layout()

print(f"total: {time.perf_counter() - start:.1f} s")

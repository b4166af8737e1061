r"""
Implicit and explicit kernel spectra on the sphere (HLD 2023, Figure 1)
=======================================================================

HLD 2023's setting: n points uniform on the unit sphere :math:`S^{d-1}`, a DEQ with φ(x) = √2·max(x, 0),
σ_a² = 0.2, σ_b² = 0.8, and the explicit one-hidden-layer network whose *quadratic*
activation σ(t) = a₂t² + a₁t + a₀ Corollary 1 chooses to have the same equivalent.  All four
kernels — the DEQ's CK and NTK (*implicit*) and the quadratic network's (*explicit*) — are close
in operator norm to α11ᵀ + βXᵀX + μI (Theorems 1–4), so their spectra share one predicted law:
a Marchenko–Pastur bulk of ratio n/d, scaled by β and shifted by μ, and one spike near αn from
the 11ᵀ term (:doc:`/theory/spectra`).

:func:`deqrmt.spectrum` computes that law from the proven coefficients and, with ``mc=True``,
samples the data, builds the exact implicit and explicit kernels and compares their eigenvalues
with it (the Kolmogorov distance of the bulk, the relative error of the spike).  This script
draws HLD's Figure 1 from the report: (a) implicit, (b) explicit, (c) the activations; the
predicted density over the sampled eigenvalues, and the spike (inset) predicted and sampled.
``report.figure()`` gives the same layout in a notebook, and
``deqrmt spectrum 'sqrt(2)*relu' --mc --plot DIR`` writes it from the command line.

**Conventions.**  HLD's kernel is the DEQ's pre-activation covariance at the fixed point,
Λ* = σ_a² G* + σ_b² XᵀX, and its NTK is Λ*/(1 − Ġ*), where G* and Ġ* are ICML 2024's conjugate
kernel E[φ(u)φ(v)] and Ġ = σ_a² E[φ'(u)φ'(v)].

**Budget:** about 20 s on 2 CPU cores at the default size (n = 400, d = 480);
``DEQRMT_GALLERY_SIZE=paper`` runs the paper's n = 1000, d = 1200 (under a minute).
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


SIZE = os.environ.get("DEQRMT_GALLERY_SIZE", "small")
N, D = {"small": (400, 480), "paper": (1000, 1200)}[SIZE]
PHI, SA2 = "sqrt(2)*max(x, 0)", "0.2"
print(f"machine: {machine()}")
print(f"size: {SIZE}, n = {N}, d = {D}")
start = time.perf_counter()

# %%
# The predicted laws, checked on one sample
# -----------------------------------------
# One call: the coefficients (proven by Arb), the predicted law of each kernel, the sampled
# data (seed 0), the exact implicit kernels and Corollary 1's explicit ones, their eigenvalues.
report = deqrmt.spectrum(PHI, data="sphere", n=N, d=D, sigma_a2=SA2, mc=True, seed=0, device="cpu")

for ks in report.kernels():
    c = ks.coefficients
    law = ks.law
    print(
        f"{ks.kind.upper()}: α = {c['alpha']:.6f}, β = {c['beta']:.6f}, μ = {c['mu']:.6f}; "
        f"support [{law.support[0][0]:.4f}, {law.support[0][1]:.4f}], spike {law.spikes[0]:.3f}"
    )
    for sample in ks.samples:
        check = sample.check
        print(
            f"    {sample.label:>8}: Kolmogorov distance {check.distance:.4f}, "
            f"spike {check.spikes[0]:.3f} (relative error {check.spike_errors[0]:.2%})"
        )
print("verdict:", "passed" if report.passed else f"failed: {report.reasons}")

# %%
# HLD 2023, Figure 1
# ------------------
COLUMNS = (("exact", "(a) implicit: the DEQ"), ("explicit", "(b) explicit: quadratic network"))
fig, axes = plt.subplots(2, 3, figsize=(12, 6.4))
for row, ks in enumerate(report.kernels()):
    law = ks.law
    lo, hi = law.support[0]
    pad = 0.05 * (hi - lo)
    for col, (label, title) in enumerate(COLUMNS):
        ax = axes[row, col]
        sample = ks.sample(label)
        ev = sample.eigenvalues
        bulk = ev[ev <= hi + pad]
        ax.hist(bulk, bins=40, range=(lo - pad, hi + pad), density=True, color="C0", alpha=0.5,
                label=f"sampled eigenvalues (n = {ev.size})")  # fmt: skip
        ax.plot(law.x, law.density, color="C3", lw=1.6, label="predicted density")
        ax.set_title(f"{ks.kind.upper()}, {title}: Kolmogorov {sample.check.distance:.3f}",
                     fontsize=9)  # fmt: skip
        ax.set_xlabel("eigenvalue", fontsize=8)
        ax.set_ylabel("density of eigenvalues", fontsize=8)
        ax.tick_params(labelsize=7)
        # the spike lies far to the right of the bulk (≈ αn): an inset around it
        spike, got = law.spikes[0], sample.check.spikes[0]
        inset = ax.inset_axes((0.58, 0.2, 0.38, 0.3))
        width = 0.04 * spike
        inset.axvline(spike, color="C3", lw=1.6)
        inset.plot([got], [0.5], "o", color="C0", ms=5)
        inset.set_xlim(spike - width, spike + width)
        inset.set_yticks([])
        inset.set_xlabel("eigenvalue", fontsize=6)
        inset.tick_params(labelsize=6)
        inset.set_title(f"spike: predicted {spike:.2f} (line), sampled {got:.2f} (dot)",
                        fontsize=6)  # fmt: skip
    # (c) the activations: φ and the quadratic σ with the same equivalent (Corollary 1, +++)
    ax = axes[row, 2]
    t = np.linspace(-3, 3, 121)
    ax.plot(t, np.sqrt(2) * np.maximum(t, 0), color="C0", label="φ(t) = √2·max(t, 0)")
    a2, a1, a0 = report.quadratics[ks.kind.upper()]
    ax.plot(t, a2 * t**2 + a1 * t + a0, "--", color="C1",
            label=f"σ(t) = {a2:.3f}t² + {a1:.3f}t + {a0:.3f}")  # fmt: skip
    ax.set_title(f"{ks.kind.upper()}, (c) activations", fontsize=9)
    ax.set_xlabel("t", fontsize=8)
    ax.set_ylabel("φ(t), σ(t)", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=7)
axes[0, 0].legend(fontsize=7, loc="upper right")
fig.suptitle(f"φ = √2·ReLU, σ_a² = {report.sigma_a2}, σ_b² = {report.sigma_b2}, n = {N}, d = {D}",
             fontsize=10)  # fmt: skip
fig.tight_layout()

print(f"total: {time.perf_counter() - start:.1f} s")

r"""
Let the kernels decide: derived formulas against the slide text
===============================================================

The ICML 2024 slide text was extracted from a PDF and has known errors; deqrmt never
transcribes it.  This notebook shows how a disagreement is settled: compute the exact
infinite-width kernels G*, K* on Gaussian-mixture draws and measure the relative
spectral-norm error of the equivalent built from the **derived** coefficients and from the
**slide's** version of one coefficient, as n grows.  A right formula's error falls like
:math:`n^{-1/2}`; a wrong one's stalls.  (The full study is :doc:`/formulas`.)

The slide variants are built into :data:`deqrmt.validate.VARIANTS`: ``alpha2_slide``
(α*₂ linear in α*₄ instead of quadratic), ``beta3_slide``, ``kappa_slide`` (τ* instead of γ*
in κ*).  With zero class means ("zero-means" preset) nothing hides them.

Runs in about 30 s on 2 CPU cores (n = 128 … 512); set ``DEQRMT_GALLERY_SIZE=paper`` for
n = 256 … 2048.
"""

# %%
import os

import matplotlib.pyplot as plt
import numpy as np

from deqrmt.validate import ValidationConfig, run_validation

SIZE = os.environ.get("DEQRMT_GALLERY_SIZE", "small")
NS = {"small": (128, 256, 512), "paper": (256, 512, 1024, 2048)}[SIZE]

# %%
# Derived against slide, ReLU DEQ, σ_a² = 0.2
# -------------------------------------------
runs = {}
for variant in (None, "alpha2_slide", "beta3_slide", "kappa_slide"):
    config = ValidationConfig(
        "relu", ns=NS, monte_carlo=False, device="cpu", preset="zero-means", variant=variant
    )
    result = run_validation(config)
    name = variant or "derived"
    runs[name] = result
    print(f"{name:>13}: CK {np.round([r.ck.exact_vs_equiv for r in result.runs], 4)}  "
          f"NTK {np.round([r.ntk.exact_vs_equiv for r in result.runs], 4)}  "
          f"slopes {result.slope_ck:+.2f} / {result.slope_ntk:+.2f}")

# %%
# The errors against n
# --------------------
fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), sharey=True)
for name, result in runs.items():
    axes[0].loglog(NS, [r.ck.exact_vs_equiv for r in result.runs], "o-", label=name)
    axes[1].loglog(NS, [r.ntk.exact_vs_equiv for r in result.runs], "o-", label=name)
axes[0].set_title("CK: ‖G* − Ḡ‖/‖G*‖")
axes[1].set_title("NTK: ‖K* − K̄‖/‖K*‖")
for ax in axes:
    ax.set_xlabel("n")
    ax.set_ylabel("relative error, operator norm")
    ax.yaxis.set_tick_params(labelleft=True)
axes[1].legend(fontsize=8)
fig.tight_layout()

# %%
# Reading it
# ----------
# The derived formulas' errors fall with slope ≈ −½.  The slide's α*₂ changes only the CK's
# ψψᵀ term and the NTK through β*₂ = α*₂/D; the slide's κ* moves the NTK's identity term,
# whose error does not fall at all; the slide's β*₃ changes only the NTK.  On the command
# line: ``deqrmt validate relu --preset zero-means --no-mc``.

"""
Implicit and explicit kernel spectra on the sphere (HLD 2023, Figure 1)
=======================================================================

HLD 2023's setting: data uniform on the unit sphere S^{d−1}, a DEQ with φ(x) = √2·max(x, 0),
σ_a² = 0.2, σ_b² = 0.8, and the explicit one-hidden-layer network whose *quadratic*
activation σ(t) = a₂t² + a₁t + a₀ is chosen by Corollary 1 to have the same equivalent.
All four kernels — the DEQ's CK and NTK, and the quadratic network's — have, in operator norm,
the equivalent α11ᵀ + βXᵀX + μI with the coefficients :func:`deqrmt.sphere_coefficients`
proves, so their eigenvalue histograms (the bulk; the spike ≈ αn from 11ᵀ is marked) coincide
with that of the equivalent.

.. note::

   **Placeholder for the spectrum API** (issue 22, ``deqrmt spectrum``, branch wp-spectra):
   until it lands, this script builds the exact kernels with :func:`deqrmt.validate.exact_kernels`
   and compares *eigenvalues* of the exact kernels with those of the equivalent matrix.  Once the
   spectrum API is merged, it should also draw the predicted limiting density (an affine image
   of the Marchenko–Pastur law) and the predicted spike.

**Conventions.**  HLD's kernel is the DEQ's pre-activation covariance at the fixed point,
Λ* = σ_a² G* + σ_b² XᵀX (its diagonal is s = g(1)), and its NTK is Λ*/(1 − Ġ*), where G* and Ġ*
are ICML 2024's conjugate kernel E[φ(u)φ(v)] and Ġ = σ_a² E[φ'(u)φ'(v)], which
:func:`deqrmt.validate.exact_kernels` computes for any data.

**Budget:** about 15 s on 2 CPU cores at the default size (n = 400, d = 480);
``DEQRMT_GALLERY_SIZE=paper`` runs the paper's n = 1000, d = 1200 (about a minute).
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
from deqrmt.validate import CenteredActivation, exact_kernels


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
SA2, SB2, PHI = "0.2", "0.8", "sqrt(2)*max(x, 0)"
print(f"machine: {machine()}")
print(f"size: {SIZE}, n = {N}, d = {D}")
start = time.perf_counter()

# %%
# Data, coefficients, exact kernels
# ---------------------------------
rng = np.random.default_rng(0)
X = rng.standard_normal((D, N))
X /= np.linalg.norm(X, axis=0)  # columns uniform on S^{d-1}
rho = X.T @ X

coef = deqrmt.sphere_coefficients(PHI, sigma_a2=SA2, sigma_b2=SB2, d=D, dps=15)
c = {key: float(v.value) for key, v in coef.values.items()}
print("proven coefficients:", {k: coef.values[k].text for k in ("alpha", "beta", "mu", "ntk_alpha", "ntk_beta", "ntk_mu")})

# the DEQ: ICML 2024's G*, Ġ* for these data, then HLD's CK Λ* and NTK Λ*/(1 − Ġ*)
phi = CenteredActivation.from_activation(deqrmt.parse_activation(PHI), 0.0)  # φ as is
exact = exact_kernels(phi, X, float(SA2), float(SB2))
implicit_ck = float(SA2) * exact.G + float(SB2) * rho
implicit_ntk = implicit_ck / (1 - exact.Gdot)

# the quadratic network of Corollary 1 (signs +++): for unit-variance Gaussians u, v with
# correlation ρ, E[σ(u)σ(v)] = (a₀ + a₂)² + a₁²ρ + 2a₂²ρ² (E[u²v²] = 1 + 2ρ², odd moments
# vanish), and its NTK is Σ + ρ ⊙ ∂Σ/∂ρ.
quad = coef.quadratic_ck[0]  # signs +++
a2, a1, a0 = (float(quad.a2.value), float(quad.a1.value), float(quad.a0.value))
rho1 = rho.copy()
np.fill_diagonal(rho1, 1.0)
explicit_ck = (a0 + a2) ** 2 + a1**2 * rho1 + 2 * a2**2 * rho1**2
qn = coef.quadratic_ntk[0]
b2, b1, b0 = (float(qn.a2.value), float(qn.a1.value), float(qn.a0.value))
explicit_ntk = ((b0 + b2) ** 2 + b1**2 * rho1 + 2 * b2**2 * rho1**2) + rho1 * (
    b1**2 + 4 * b2**2 * rho1
)

one = np.ones((N, N))
equivalent_ck = c["alpha"] * one + c["beta"] * rho + c["mu"] * np.eye(N)
equivalent_ntk = c["ntk_alpha"] * one + c["ntk_beta"] * rho + c["ntk_mu"] * np.eye(N)

# %%
# Operator-norm errors
# --------------------
def rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a - b, 2) / np.linalg.norm(a, 2))


for name, kernel, equiv in (
    ("DEQ CK", implicit_ck, equivalent_ck),
    ("DEQ NTK", implicit_ntk, equivalent_ntk),
    ("quadratic CK", explicit_ck, equivalent_ck),
    ("quadratic NTK", explicit_ntk, equivalent_ntk),
):
    print(f"{name:>14}: ‖K − K̄‖/‖K‖ = {rel(kernel, equiv):.2e}")

# %%
# The spectra (HLD Figure 1's layout)
# -----------------------------------
fig, axes = plt.subplots(2, 2, figsize=(9, 6), sharex="row")
panels = (
    ("CK", 0, implicit_ck, explicit_ck, equivalent_ck),
    ("NTK", 1, implicit_ntk, explicit_ntk, equivalent_ntk),
)
for kind, row, implicit, explicit, equiv in panels:
    eq = np.linalg.eigvalsh(equiv)
    for col, (label, kernel) in enumerate((("implicit (DEQ)", implicit), ("explicit (quadratic)", explicit))):
        ev = np.linalg.eigvalsh(kernel)
        ax = axes[row, col]
        bins = np.linspace(ev[:-1].min(), ev[:-1].max(), 40)
        ax.hist(ev[:-1], bins=bins, density=True, alpha=0.6, label="exact kernel")
        ax.hist(eq[:-1], bins=bins, density=True, histtype="step", lw=1.5, color="k",
                label="equivalent α11ᵀ + βXᵀX + μI")
        ax.set_title(f"{kind}, {label}: spike {ev[-1]:.1f} (equiv. {eq[-1]:.1f})", fontsize=9)
        ax.set_xlabel("eigenvalue (bulk)")
axes[0, 0].legend(fontsize=7)
fig.suptitle(f"φ = √2·ReLU, σ_a² = {SA2}, n = {N}, d = {D}", fontsize=10)
fig.tight_layout()

print(f"total: {time.perf_counter() - start:.1f} s")

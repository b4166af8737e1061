"""
Quickstart: from an activation to proven coefficients
=====================================================

A notebook (kept as a jupytext percent script; download it as ``.ipynb`` below) that starts
from "I have an activation" and ends with the numbers, the formulas and a figure.  Every cell
ran when this page was built.
"""

# %%
# The coefficients of a DEQ
# -------------------------
# For the DEQ z = φ(σ_a A z + σ_b B x)/√m on high-dimensional Gaussian-mixture data, the
# conjugate kernel G* and the neural tangent kernel K* are close in spectral norm to
#
# .. math::
#
#    \bar G = \alpha_{*,1} X^\top X + V C_* V^\top + (\gamma_*^2 - \tau_0^2\alpha_{*,1}) I_n,
#    \qquad
#    \bar K = \beta_{*,1} X^\top X + V D_* V^\top + (\kappa_*^2 - \tau_0^2\beta_{*,1}) I_n
#
# (ICML 2024, Theorems 1–2; see :doc:`/theory/deq`).  ``deq_coefficients`` gives the
# scalars, every printed digit proven by Arb ball arithmetic.
import deqrmt

c = deqrmt.deq_coefficients("tanh", sigma_a2=0.2)  # a float means its shortest repr: 1/5
c

# %%
# Each value is a ``Verified`` number: its digits, its proof radius, and a float for
# further work.  The result is a mapping.
print(c["alpha_1"], c.alpha_1.text, float(c.alpha_1), c.alpha_1.radius)
print(sorted(c.values))
print(c.certified, c.problem.sigma_b2)

# %%
# The formulas behind the numbers
# -------------------------------
# Derived by SymPy from the kernel map for *this* activation (nothing typed in): for ReLU
# every moment has a closed form, so α*₁ becomes a rational function of σ_a², σ_b².
deqrmt.coefficient_expression("relu", "alpha_1")

# %%
# For tanh the moments stay symbols (evaluated by quadrature with rigorous tail bounds).
deqrmt.coefficient_expression("tanh", "alpha_2")

# %%
# Any expression in x
# -------------------
# Expressions are parsed by deqrmt's own grammar; kinks are fine (moments are *weak*
# derivatives, by Stein's identity E[φ⁽ᵏ⁾(τξ)] = τ⁻ᵏ E[He_k(ξ) φ(τξ)]).
act = deqrmt.parse_activation("max(x, 0.1*x)")
print(act.expr, act.kinks)
deqrmt.deq_coefficients(act, sigma_a2="0.3", dps=15)

# %%
# Explicit networks and the sphere setting
# ----------------------------------------
# The same for an L-layer explicit network (Theorem 3) and for data on the sphere (HLD 2023).
e = deqrmt.explicit_coefficients(["relu", "tanh"], dps=15)
print([layer["alpha_1"].text for layer in e.layers])
s = deqrmt.sphere_coefficients("sqrt(2)*max(x, 0)", sigma_a2="0.2", dps=15)
print({k: s.values[k].text for k in ("alpha", "beta", "mu")})

# %%
# A figure: the coefficients across σ_a²
# --------------------------------------
# ``deq_coefficients_sweep`` evaluates the same formulas in float64, vectorised — for plots.
import matplotlib.pyplot as plt
import numpy as np

grid = np.linspace(0.05, 0.6, 40)
fig, ax = plt.subplots(figsize=(5.5, 3.5))
for name in ("relu", "tanh", "silu"):
    sweep = deqrmt.deq_coefficients_sweep(name, grid)
    ax.plot(grid, sweep["alpha_1"], label=f"{name}: α*₁")
    ax.plot(grid, sweep["kappa_star"] ** 2, "--", label=f"{name}: κ*²")
ax.set_xlabel("σ_a² (σ_b² = 1 − σ_a²)")
ax.set_ylabel("α*₁ (solid), κ*² (dashed)")
ax.legend(fontsize=7)
fig.tight_layout()

# %%
# Next
# ----
# * :doc:`/auto_gallery/plot_byo_activation` — check your activation against the paper's
#   assumptions and validate the equivalent with exact kernels;
# * :doc:`/cli/index` — the same from the command line (``deqrmt coefficients tanh``);
# * :doc:`/theory/index` — where each formula comes from.

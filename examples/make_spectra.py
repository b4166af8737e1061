"""Write examples/spectra.ipynb (nbformat v4, no outputs): ``python examples/make_spectra.py``.

The notebook reproduces HLD 2023's Figure 1 (spectral densities of the implicit and explicit
kernels, n = 1000, d = 1200, σ_a² = 0.2) and the CK/NTK spectrum of the ICML 2024 Gaussian mixture,
then uses the DEQ's NTK as a scikit-learn kernel.  tests/test_spectra_notebook.py executes it.
Written via a temporary file and ``os.replace`` (atomic).
"""

from __future__ import annotations

import os
import pathlib

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

PATH = pathlib.Path(__file__).with_name("spectra.ipynb")

CELLS = [
    new_markdown_cell(
        "# Spectra of a DEQ's kernels, and the kernels on your own data\n\n"
        "The high-dimensional equivalents Ḡ, K̄ of a deep equilibrium model's conjugate kernel "
        "(CK) and neural tangent kernel (NTK) are *bulk + low rank*; `deqrmt.spectrum` reads off "
        "their limiting eigenvalue density, its support, the isolated eigenvalues (spikes) and "
        "their eigenvectors' class alignments, and with `mc=True` compares them with the "
        "eigenvalues of the exact infinite-width kernels on sampled data."
    ),
    new_markdown_cell(
        "## HLD 2023, Figure 1: data on the sphere\n\n"
        "n = 1000 points uniform on the sphere of dimension d = 1200, σ_a² = 0.2, the normalized "
        "ReLU √2·max(x, 0).  The bulk is the Marchenko–Pastur law of ratio n/d, scaled by β and "
        "shifted by μ; the spike comes from α 11ᵀ.  The explicit network of Corollary 1 (a "
        "quadratic activation with the same α, β, μ) has the same spectrum."
    ),
    new_code_cell(
        "%matplotlib inline\n"
        "import numpy as np\n\n"
        "import deqrmt\n\n"
        'hld = deqrmt.spectrum("sqrt(2)*relu", data="sphere", n=1000, d=1200, sigma_a2=0.2, '
        "mc=True)\n"
        "for ks in hld.kernels():\n"
        '    exact = ks.sample("exact").check\n'
        '    print(f"{ks.kind}: support {ks.law.support}, spike {ks.law.spikes[0]:.4f} '
        '(sampled {exact.spikes[0]:.4f}), Kolmogorov distance {exact.distance:.4f}")'
    ),
    new_code_cell("hld.figure()"),
    new_markdown_cell(
        "## ICML 2024: a two-class Gaussian mixture\n\n"
        "The paper's preset (p = 0.8 n, class means 8·e₁ and 8·e₉, C₂ = (1 + 8/√p) I), tanh.  "
        "With p < n the bulk has an atom of mass 1 − p/n; the two spikes are the class means, "
        "each eigenvector aligned with its own class."
    ),
    new_code_cell(
        'gmm = deqrmt.spectrum("tanh", data="gmm", n=512, mc=True)\n'
        "for a in gmm.ck.law.alignments:\n"
        '    print(f"spike {a.eigenvalue:.4f}: class alignments {np.round(a.classes, 3)}")\n'
        "gmm.figure()"
    ),
    new_markdown_cell(
        "## The kernels on your own data\n\n"
        "`deqrmt.kernels(act, X1, X2)` is the exact infinite-width CK or NTK between the rows of "
        "X1 and X2; `deqrmt.DEQKernel` is the same as a scikit-learn kernel."
    ),
    new_code_cell(
        "from sklearn.kernel_ridge import KernelRidge\n\n"
        "rng = np.random.default_rng(0)\n"
        "X = rng.standard_normal((200, 10)) / np.sqrt(10)\n"
        "y = np.tanh(3 * X[:, 0]) + 0.1 * rng.standard_normal(200)\n"
        'model = KernelRidge(alpha=1e-2, kernel=deqrmt.DEQKernel("relu", kind="ntk"))\n'
        "model.fit(X[:150], y[:150])\n"
        'print("test R²:", round(model.score(X[150:], y[150:]), 3))'
    ),
]


def main() -> None:
    nb = new_notebook(
        cells=CELLS,
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "language_info": {"name": "python"},
        },
    )
    nbformat.validate(nb)
    tmp = PATH.with_suffix(".ipynb.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        nbformat.write(nb, fh)
    os.replace(tmp, PATH)


if __name__ == "__main__":
    main()

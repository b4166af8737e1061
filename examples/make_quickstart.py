"""Write examples/quickstart.ipynb (nbformat v4, no outputs): ``python examples/make_quickstart.py``.

The notebook is generated so that its source stays reviewable here; tests/test_notebook.py
executes it.  It is written via a temporary file and ``os.replace`` (atomic).
"""

from __future__ import annotations

import os
import pathlib

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

PATH = pathlib.Path(__file__).with_name("quickstart.ipynb")

CELLS = [
    new_markdown_cell(
        "# deqrmt quickstart\n\n"
        "High-dimensional equivalents of a deep equilibrium model (DEQ): the coefficients "
        "τ*, γ*, α*₁…₄, β*₁…₃, κ* of its conjugate kernel (CK) and neural tangent kernel "
        "(NTK), derived symbolically and evaluated to verified digits."
    ),
    new_markdown_cell(
        "## Coefficients of a tanh DEQ\n\nNumbers may be floats, ints, strings or "
        "fractions; a float means its shortest decimal repr (0.2 is 1/5)."
    ),
    new_code_cell('import deqrmt\n\nc = deqrmt.deq_coefficients("tanh", sigma_a2=0.2)\nc'),
    new_code_cell('c["alpha_1"]  # a Verified number: only verified digits are shown'),
    new_markdown_cell(
        "## The activation-specific α*₂ in three lines\n\n"
        "The general formula with the ReLU's closed-form Gaussian moments substituted:"
    ),
    new_code_cell('import deqrmt\ne = deqrmt.coefficient_expression("relu", "alpha_2")\ne'),
    new_markdown_cell(
        "## The general formulas\n\n"
        "`derive_deq()` derives the fixed-point map and the coefficients for any activation, "
        "in terms of its Gaussian moments (`mu1` = E[φ'], `sq` = E[φ²], …)."
    ),
    new_code_cell("f = deqrmt.derive_deq()\nalpha_1, alpha_2, alpha_3, alpha_4 = f.alpha\nalpha_2"),
    new_markdown_cell("## A LaTeX snippet for a paper"),
    new_code_cell(
        "import sympy\n\n"
        r'print(r"\alpha^*_2 = " + sympy.latex(e))'
    ),
    new_markdown_cell(
        "## Coefficients against σ_a²\n\n"
        "`deq_coefficients_sweep` evaluates the generated code on a grid (fast, float64)."
    ),
    new_code_cell(
        "import matplotlib.pyplot as plt\n"
        "import numpy as np\n\n"
        "s2 = np.linspace(0.05, 0.6, 12)\n"
        'sweep = deqrmt.deq_coefficients_sweep("tanh", s2)\n'
        "fig, ax = plt.subplots(figsize=(5, 3))\n"
        'for key in ("gamma_star", "alpha_1", "alpha_4", "kappa_star"):\n'
        '    ax.plot(s2, sweep[key], marker="o", label=key)\n'
        'ax.set_xlabel(r"$\\sigma_a^2$")\n'
        'ax.set_title("tanh DEQ")\n'
        "ax.legend()\n"
        "plt.show()"
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

"""The library's activations for the exact kernels: printed by SymPy once, never typed in.

``src/deqrmt/validate/_generated_activations.py`` must be exactly what the printer writes
today for every library activation (``tools/regenerate_formulas.py`` writes it); a first
``deqrmt.kernels("tanh", X)`` reads φ and φ' from there and does not import SymPy.  The
references are the SymPy path itself: ``CenteredActivation.from_activation`` of the parsed
activation, printed and compiled in the test's process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import deqrmt  # noqa: E402
from deqrmt import InvalidArgument  # noqa: E402
from deqrmt.symbolic import LIBRARY, get_activation, library_activation  # noqa: E402
from deqrmt.validate import _generated_activations  # noqa: E402
from deqrmt.validate._activation_table import render_module  # noqa: E402
from deqrmt.validate._kernel_args import as_activation  # noqa: E402
from deqrmt.validate._pointwise import CenteredActivation  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
GENERATED = ROOT / "src" / "deqrmt" / "validate" / "_generated_activations.py"
NAMES = sorted(_generated_activations.ACTIVATIONS)


def test_generated_module_is_what_sympy_prints_today() -> None:
    """Every entry printed again: the file's bytes, exactly.  Stale: run
    ``python tools/regenerate_formulas.py``."""
    assert GENERATED.read_text(encoding="utf-8") == render_module()


def test_generated_module_says_do_not_edit_and_how_to_regenerate() -> None:
    head = GENERATED.read_text(encoding="utf-8")[:800]
    assert "DO NOT EDIT" in head
    assert "tools/regenerate_formulas.py" in head


def test_an_edited_entry_is_caught() -> None:
    """Negative control: a hand edit of one printed function no longer matches SymPy."""
    text = GENERATED.read_text(encoding="utf-8")
    edited = text.replace("return (ctx.tanh(_a0),)", "return (ctx.tanh(2*_a0),)", 1)
    assert edited != text
    assert edited != render_module()


def test_the_library_is_there_except_what_needs_parameters_or_jumps() -> None:
    """The common names are kept; sign and hardshrink (discontinuous: refused with their
    message by the SymPy path) and polynomial (needs coefficients) are not."""
    assert {"tanh", "gelu", "silu", "softplus", "relu", "erf", "leaky_relu", "identity"} <= set(
        NAMES
    )
    assert set(NAMES) == set(LIBRARY) - {"sign", "hardshrink", "polynomial"}


@pytest.mark.parametrize("name", NAMES)
def test_a_library_entry_is_the_sympy_path_to_the_last_bit(name: str) -> None:
    """φ_c, φ_c', kinks, closed form and name as ``from_activation`` gives them, on points
    around every kink, in the saturated range and at ±50 (the stable forms' overflow guard)."""
    c = 0.25
    fast = CenteredActivation.from_library(name, c)
    assert fast is not None
    ref = CenteredActivation.from_activation(library_activation(name), c)
    assert (fast.name, fast.center, fast.kinks) == (ref.name, ref.center, ref.kinks)
    assert fast.closed_form == ref.closed_form
    grid = [torch.linspace(-50.0, 50.0, 2001, dtype=torch.float64)]
    for k in ref.kinks:
        grid.append(k + torch.tensor([-1e-9, 0.0, 1e-9], dtype=torch.float64))
    t = torch.cat(grid)
    assert torch.equal(fast.phi(t), ref.phi(t))
    assert torch.equal(fast.dphi(t), ref.dphi(t))
    assert fast.expr == ref.expr == get_activation(name).expr  # parsed on first access


def test_anything_else_takes_the_sympy_path() -> None:
    for text in ("x*erf(x)", "leaky_relu(0.1)", "tanh(x)", " tanh", "sign", "polynomial", "Tanh"):
        assert CenteredActivation.from_library(text, 0.0) is None
    a = as_activation("leaky_relu(0.1)", None)
    assert a.closed_form is not None and a.closed_form.slope_neg == pytest.approx(0.1, rel=0)
    with pytest.raises(InvalidArgument, match="center must be finite"):
        CenteredActivation.from_library("tanh", float("nan"))


_FIRST_CALL = """
import json, sys
import numpy as np
import deqrmt
X = np.random.default_rng(0).random((12, 8))
X /= np.linalg.norm(X, axis=1, keepdims=True)
G = deqrmt.kernels("tanh", X, sigma_a2=0.2, device="cpu")
K = deqrmt.kernels("gelu", X, sigma_a2=0.2, kind="ntk", device="cpu")
print(json.dumps({"G": G.tolist(), "K": K.tolist(), "modules": sorted(sys.modules)}))
"""


def test_a_first_kernel_of_a_library_activation_imports_no_sympy(tmp_path: Path) -> None:
    """A fresh process computes kernels of tanh and GELU without SymPy (or mpmath, SciPy, Dask,
    matplotlib), and the values are those of the SymPy path in this process, to the bit."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "DEQRMT_CACHE_DIR": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-c", _FIRST_CALL], env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    modules = set(out["modules"])
    for heavy in ("sympy", "mpmath", "scipy", "dask", "distributed", "matplotlib", "pandas"):
        assert not any(m == heavy or m.startswith(heavy + ".") for m in modules), heavy
    X = np.random.default_rng(0).random((12, 8))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    tanh = CenteredActivation.from_activation(get_activation("tanh"), 0.0)
    gelu = CenteredActivation.from_activation(get_activation("gelu"), 0.0)
    G = deqrmt.kernels(tanh, X, sigma_a2=0.2, device="cpu")
    K = deqrmt.kernels(gelu, X, sigma_a2=0.2, kind="ntk", device="cpu")
    assert np.array_equal(np.array(out["G"]), G)
    assert np.array_equal(np.array(out["K"]), K)

"""The generated general formulas (issue 24): derived by SymPy, printed once, never typed in.

``src/deqrmt/numeric/_generated_formulas.py`` must be exactly what the derivations print today
(``tools/regenerate_formulas.py`` writes it); a cold ``deqrmt coefficients`` reads its functions
instead of deriving them again.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import mpmath
import pytest

from deqrmt.numeric import _formula_table, _generated_formulas
from deqrmt.numeric._deq_formulas import deq_formulas, layer_formulas, map_formulas
from deqrmt.numeric._formula_table import KEYS, TRAINABLE_SUBSETS, formula_set, render_module
from deqrmt.numeric._problem import parse_trainable

ROOT = Path(__file__).resolve().parents[1]
GENERATED = ROOT / "src" / "deqrmt" / "numeric" / "_generated_formulas.py"


def test_generated_module_is_what_sympy_derives_today() -> None:
    """Every entry derived again (derive_deq for each trainable set, derive_fixed_point,
    derive_layer) and printed: the file's bytes, exactly.  Stale: run
    ``python tools/regenerate_formulas.py``."""
    assert GENERATED.read_text(encoding="utf-8") == render_module()


def test_generated_module_says_do_not_edit_and_how_to_regenerate() -> None:
    head = GENERATED.read_text(encoding="utf-8")[:600]
    assert "DO NOT EDIT" in head
    assert "tools/regenerate_formulas.py" in head
    assert (ROOT / "tools" / "regenerate_formulas.py").is_file()


def test_every_key_is_generated_and_nothing_else() -> None:
    assert tuple(_generated_formulas.FORMULAS) == KEYS


def test_every_trainable_set_the_engine_accepts_is_generated() -> None:
    subsets = {"a", "A", "B", "a,A", "a,B", "A,B", "a,A,B", "A,a", "B,a,A"}
    assert {parse_trainable(s) for s in subsets} == set(TRAINABLE_SUBSETS)


@pytest.mark.slow  # a fresh process derives every entry again (~15 s of SymPy)
def test_the_text_is_deterministic_across_hash_seeds(tmp_path: Path) -> None:
    """Same bytes from a fresh process with another string-hash seed and an empty cache (set
    iteration order and the disk cache cannot change the printed module)."""
    env = {
        **os.environ,
        "PYTHONHASHSEED": "12345",
        "DEQRMT_CACHE_DIR": str(tmp_path / "cache"),
        "PYTHONPATH": str(ROOT / "src"),
    }
    code = (
        "import sys; from deqrmt.numeric._formula_table import render_module; "
        "sys.stdout.buffer.write(render_module().encode())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, timeout=600, check=True
    )
    assert out.stdout.decode() == GENERATED.read_text(encoding="utf-8")


def _env(names: tuple[str, ...]) -> dict[str, mpmath.mpf]:
    """Arbitrary distinct values for every argument (a comparison point, not a DEQ)."""
    return {n: mpmath.mpf(3 + i) / (7 + 2 * i) for i, n in enumerate(names)}


@pytest.mark.parametrize("key", ["deq_a_A", "deq_a_A_B_ck", "variance_map_centered", "layer"])
def test_a_key_missing_from_the_module_is_derived_and_compiled_the_same(
    key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fallback (SymPy at run time) and the generated function agree to the last bit."""
    generated = formula_set(key)
    monkeypatch.setattr(_generated_formulas, "FORMULAS", {})
    derived = formula_set(key)
    assert derived.function is not generated.function
    assert (derived.args, derived.outputs) == (generated.args, generated.outputs)
    env = _env(generated.args)
    with mpmath.workdps(40):
        a = derived.function(mpmath.mp, *(env[n] for n in derived.args))
        b = generated.function(mpmath.mp, *(env[n] for n in generated.args))
    assert a == b


def test_the_engine_reads_the_generated_functions() -> None:
    """deq_formulas, map_formulas and layer_formulas hand out the module's own functions."""
    table = _generated_formulas.FORMULAS
    assert deq_formulas(("a", "A"), True).fn is table["deq_a_A"][0]
    assert deq_formulas(("a", "A", "B"), False).fn is table["deq_a_A_B_ck"][0]
    f, df = map_formulas(True)
    assert (f.fn, df.fn) == (
        table["variance_map_F_centered"][0],
        table["variance_map_dF_centered"][0],
    )
    assert layer_formulas().fn is table["layer"][0]


def test_an_edited_entry_is_caught() -> None:
    """Negative control: a hand edit of one printed coefficient no longer matches SymPy."""
    text = GENERATED.read_text(encoding="utf-8")
    edited = text.replace("ctx.mpf(1)/ctx.mpf(2)", "ctx.mpf(1)/ctx.mpf(3)", 1)
    assert edited != text
    assert edited != render_module()
    assert _formula_table.derived_source("deq_a") in text

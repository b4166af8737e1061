"""A cold ``deqrmt coefficients`` imports only what the command needs (issue 24).

Names, never times: a subprocess runs the command in a fresh interpreter with an empty cache and
reports ``sys.modules``; the modules of other commands (the implicit bias, check, validate,
sweep, design, the sphere setting), torch, matplotlib, Dask and SciPy must not be there, and the
general formulas must not have been derived (no derive-deq entry written to the cache).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: never imported by ``deqrmt coefficients`` (table or --json, certified or not)
FORBIDDEN = (
    "torch", "matplotlib", "dask", "distributed", "scipy", "pandas",
    "deqrmt.check", "deqrmt.validate", "deqrmt.sweep",
    "deqrmt.numeric._bias", "deqrmt.symbolic._bias", "deqrmt.numeric._design",
    "deqrmt.numeric._design_search", "deqrmt.numeric._design_proof", "deqrmt.numeric._codegen",
    "deqrmt.numeric._curvature", "deqrmt.numeric._spectrum", "deqrmt.numeric._sphere",
    "deqrmt.symbolic._sphere", "deqrmt.symbolic._family", "deqrmt.symbolic._document",
    "deqrmt.numeric._sensitivity", "deqrmt.symbolic._sensitivity",
    "deqrmt.numeric._kolmogorov", "deqrmt.numeric._explicit",
)  # fmt: skip

_PROGRAM = """
import json, sys
from deqrmt.cli import main
code = main(sys.argv[1:])
sys.stdout.flush()
print("\\nMODULES " + json.dumps(sorted(sys.modules)), file=sys.stderr)
sys.exit(code)
"""


def _cold_run(tmp_path: Path, *args: str) -> tuple[str, set[str], list[str]]:
    cache = tmp_path / "cache"
    cache.mkdir()
    env = {**os.environ, "DEQRMT_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.run(
        [sys.executable, "-c", _PROGRAM, "coefficients", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    line = proc.stderr.rsplit("MODULES ", 1)[1]
    return (
        proc.stdout,
        set(json.loads(line)),
        sorted(p.name for p in cache.rglob("*") if p.is_file()),
    )


def _loaded(modules: set[str], name: str) -> bool:
    return name in modules or any(m.startswith(name + ".") for m in modules)


@pytest.mark.parametrize(
    ("args", "also"),
    [
        # closed-form moments: no quadrature nodes, so not even numpy
        (("relu", "--dps", "12"), ("numpy",)),
        (("tanh", "--dps", "15", "--json"), ()),
    ],
    ids=["relu", "tanh-json"],
)
def test_cold_coefficients_imports_only_what_it_needs(
    tmp_path: Path, args: tuple[str, ...], also: tuple[str, ...]
) -> None:
    out, modules, cached = _cold_run(tmp_path, *args)
    assert "alpha_1" in out  # the command ran and printed its result
    loaded = [name for name in (*FORBIDDEN, *also) if _loaded(modules, name)]
    assert not loaded, f"a cold `deqrmt coefficients` imported {loaded}"
    # the general formulas come from the generated module, not from a derivation
    assert "deqrmt.numeric._generated_formulas" in modules
    assert not [name for name in cached if name.startswith(("derive-deq", "derive-layer"))], cached


def test_the_forbidden_list_names_real_modules() -> None:
    """Negative control: each deqrmt name above exists (a typo would make the test vacuous),
    and the probe sees an import when one happens."""
    import importlib.util

    missing = [
        n for n in FORBIDDEN if n.startswith("deqrmt.") and importlib.util.find_spec(n) is None
    ]
    assert not missing


def test_the_probe_sees_a_heavy_import(tmp_path: Path) -> None:
    """Negative control: ``--sensitivity`` needs the symbolic sensitivities, and the probe
    reports them (the same probe would report a regression of the default command)."""
    _, modules, _ = _cold_run(tmp_path, "relu", "--dps", "12", "--sensitivity")
    assert _loaded(modules, "deqrmt.symbolic._sensitivity")

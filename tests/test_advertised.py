"""Advertised means usable (issue 23, item 6): the library listing, the README, the tables'
headers and legends, math notation instead of SymPy's repr, and --plot refused before any work.
Through the installed console script."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from deqrmt.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[1]


def _run(prefix: list[str], *args: str, cwd: Path | None = None) -> Any:
    return subprocess.run([*prefix, *args], capture_output=True, text=True, timeout=600, cwd=cwd)


def test_sign_is_not_advertised_as_usable(cli_prefix: list[str]) -> None:
    """`sign` was listed as "CK only" while coefficients, explicit and sphere refuse it."""
    out = _run(cli_prefix, "activations")
    assert out.returncode == 0, out.stderr
    assert "CK only" not in out.stdout
    (line,) = [ln for ln in out.stdout.splitlines() if ln.startswith("sign ")]
    assert "refuse" in line and "not Lipschitz" in line and "deqrmt check sign" in line
    data = json.loads(_run(cli_prefix, "activations", "--json").stdout)
    assert "refuse" in data["activations"]["sign"]
    for command in (["coefficients", "sign"], ["explicit", "sign"]):
        refused = _run(cli_prefix, *command, "--dps", "15")
        assert refused.returncode == 2 and "ActivationError" in refused.stderr, command


def test_readme_points_to_the_cli_reference() -> None:
    """The README shows the main commands and points to the CLI reference, which is generated
    from the parser and has a page for every command in ``COMMANDS``
    (``tests/test_docs.py::test_the_cli_reference_lists_every_command``): a new command needs
    its module and its registration, no README line."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "**CLI reference** (`docs/cli/`" in readme
    assert "## Documentation" in readme and "the CLI reference generated from the parser" in readme
    main = ("coefficients", "design", "validate", "check", "sweep", "spectrum", "kernels")
    missing = [c for c in main if c not in COMMANDS or not re.search(rf"deqrmt {c}\b", readme)]
    assert not missing, missing


def test_families_print_math_not_sympy(cli_prefix: list[str]) -> None:
    out = _run(cli_prefix, "families")
    assert out.returncode == 0, out.stderr
    formulas = "\n".join(ln for ln in out.stdout.splitlines() if "φ(x) =" in ln)
    assert formulas.count("φ(x) =") == 4, out.stdout
    for raw in ("Max(", "Min(", "Piecewise(", "**", "*"):
        assert raw not in formulas, raw
    assert "hard_tanh: φ(x) = a·max(-c, min(c, x))" in out.stdout
    assert "polynomial2: φ(x) = c1·x + c2·x²" in out.stdout


def test_bias_prints_the_domain_in_math_notation(cli_prefix: list[str]) -> None:
    out = _run(cli_prefix, "bias", "1/(1-w)")
    assert out.returncode == 0, out.stderr
    (line,) = [ln for ln in out.stdout.splitlines() if ln.startswith("convex domain")]
    assert "(0, ∞)" in line and "Interval" not in line and "oo" not in line


def test_explicit_says_which_network(cli_prefix: list[str]) -> None:
    out = _run(cli_prefix, "explicit", "tanh", "elu", "--dps", "15", "--tau0", "1/2")
    assert out.returncode == 0, out.stderr
    first = out.stdout.splitlines()[0]
    assert first.startswith("explicit network x^(l) = σ_l(W_l x^(l−1))/√m, l = 1..2 (2 layers")
    assert "τ0 = 1/2" in first and "centered" in first and "15 digits" in first
    assert "layer 2: σ_2(x) = x if x > 0, exp(x) - 1 otherwise  (elu)" in out.stdout
    assert "Piecewise" not in out.stdout


def test_plot_into_a_directory_with_the_png_is_refused_before_any_work(
    cli_prefix: list[str], tmp_path: Path
) -> None:
    """`coefficients … --plot DIR` computed the whole range, printed it, then refused."""
    (tmp_path / "coefficients.png").write_bytes(b"mine")
    out = _run(
        cli_prefix, "coefficients", "tanh", "--sigma-a2", "0.1:0.3:3", "--plot", str(tmp_path)
    )
    assert out.returncode == 2 and out.stdout == "", (out.stdout, out.stderr)
    assert "FileError" in out.stderr and "--force" in out.stderr
    assert (tmp_path / "coefficients.png").read_bytes() == b"mine"


def test_validate_plot_target_is_checked_first(cli_prefix: list[str], tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("matplotlib")
    (tmp_path / "errors.png").write_bytes(b"mine")
    out = _run(cli_prefix, "validate", "tanh", "--n", "64", "--plot", str(tmp_path))
    assert out.returncode == 2 and out.stdout == "", (out.stdout, out.stderr)
    assert "FileError" in out.stderr and "errors.png" in out.stderr


@pytest.mark.slow
def test_certify_has_a_legend_and_explains_the_monte_carlo_column(
    cli_prefix: list[str], tmp_path: Path
) -> None:
    pytest.importorskip("torch")
    design = _run(
        cli_prefix, "design", "--deq", "tanh", "--family", "hard_tanh", "--dps", "15", "--json"
    )
    assert design.returncode == 0, design.stderr
    path = tmp_path / "d.json"
    path.write_text(design.stdout, encoding="utf-8")
    out = _run(cli_prefix, "enn-check", "--enn", str(path), "--n", "64,128", "--m", "128")
    assert out.returncode in (0, 1), out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("‖G* − Σ‖/‖G*‖ (relative spectral-norm error")
    for column in ("designed (exact) =", "naive (exact) =", "designed (MC) ="):
        assert column in lines[0]
    assert any(ln.startswith("note: the MC column") and "raise --m" in ln for ln in lines)

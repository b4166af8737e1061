"""Issue #3: derived formulas as LaTeX (compiled by pdflatex), standalone codegen, the cache."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import mpmath
import pytest
import sympy as sp

from deqrmt.cli import main
from deqrmt.numeric import deq_coefficients, explicit_coefficients
from deqrmt.symbolic import SIGMA_A2, SIGMA_B2, derive_deq, derive_layer
from deqrmt.symbolic._cache import cached
from deqrmt.symbolic._latex import equations, latex_block

PDFLATEX = shutil.which("pdflatex")


def _compile(tex: str, tmp_path: Path) -> None:
    if PDFLATEX is None:
        if os.environ.get("CI"):
            pytest.fail("pdflatex is missing under CI; .ci/run installs texlive-latex-base")
        pytest.skip("pdflatex not installed (CI installs texlive-latex-base)")
    (tmp_path / "doc.tex").write_text(tex, encoding="utf-8")
    proc = subprocess.run(
        [PDFLATEX, "-interaction=nonstopmode", "-halt-on-error", "doc.tex"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert (tmp_path / "doc.pdf").stat().st_size > 1000


@pytest.mark.parametrize("target", ["deq-ck", "deq-ntk", "explicit-ck", "explicit-ntk"])
def test_derive_latex_block_compiles(
    target: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["derive", target, "--latex"]) == 0
    block = capsys.readouterr().out
    assert block.startswith("\\begin{align}")
    doc = (
        "\\documentclass{article}\\usepackage{amsmath,amssymb}\\begin{document}\n"
        + block
        + "\\end{document}\n"
    )
    _compile(doc, tmp_path)


def test_latex_document_compiles(tmp_path: Path) -> None:
    out = tmp_path / "derivation.tex"
    assert main(["latex", "relu", "-o", str(out), "--dps", "15"]) == 0
    tex = out.read_text(encoding="utf-8")
    assert "\\alpha_{*,4}^{2}" in tex  # the derived α*₂ carries α*₄ squared
    _compile(tex, tmp_path)


def test_codegen_module_matches_engine_to_40_digits(tmp_path: Path) -> None:
    """The generated module (mpmath.quad where no closed form) runs in a fresh interpreter."""
    for act in ("relu", "tanh"):
        path = tmp_path / f"gen_{act}.py"
        assert main(["codegen", act, "-o", str(path)]) == 0
        src = path.read_text()
        assert "do not edit" in src and "import deqrmt" not in src and "import torch" not in src
        code = (
            f"import sys; sys.path.insert(0, {str(tmp_path)!r}); import gen_{act} as g, mpmath; "
            "r = g.coefficients('0.2', None, 1, dps=45); "
            "print('\\n'.join(k + ' ' + mpmath.nstr(v, 44) for k, v in r.items()))"
        )
        proc = subprocess.run(
            [sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=300
        )
        assert proc.returncode == 0, proc.stderr
        with mpmath.workdps(60):  # parse the printed digits at full precision
            theirs = {
                k: mpmath.mpf(v)
                for k, v in (line.split() for line in proc.stdout.strip().splitlines())
            }
        ours = deq_coefficients(act, "0.2", None, 1, dps=45)
        for key, ver in ours.values.items():
            with mpmath.workdps(60):
                err = abs(theirs[key] - ver.value)
                assert err <= mpmath.mpf(10) ** -40 * max(1, abs(ver.value)), (act, key)


def test_changed_models_need_no_new_formula() -> None:
    # A DEQ without input injection (σ_b = 0): the derivation still runs; with no data term the
    # CK has no XᵀX, ψ or T component at this order.
    f = derive_deq(input_injection=False)
    assert all(sp.simplify(a) == 0 for a in f.alpha[:3])
    # Three different activations in an explicit net: one derived layer map, applied three times.
    res = explicit_coefficients(["relu", "tanh", "silu"], tau0=1, dps=20)
    assert len(res.layers) == 3
    # the layer map's α̃₁ recursion: α̃_{l,1} = E[σ_l']² α̃_{l−1,1}, with α̃_{0,1} = 1
    lf = derive_layer()
    assert sp.simplify(lf.alpha[0] - lf.m.mu[1] ** 2 * lf.prev["alpha_1"]) == 0


def test_trainable_sets_paper_ntk_is_a_A() -> None:
    """K* = G*/(1 − Ġ*) is the (a, A) limit: β*₁ = α*₁/D and κ*² = γ*²/(1 − σ_a² E[φ'²])."""
    f = derive_deq(trainable=("a", "A"))
    m = f.m
    d = 1 - SIGMA_A2 * m.mu[1] ** 2
    assert sp.simplify(f.beta[0] - f.alpha[0] / d) == 0
    assert sp.simplify(f.kappa_sq - m.sq / (1 - SIGMA_A2 * m.dsq)) == 0
    # adding B adds σ_b² XᵀX∘E[φ'φ']/(1 − Ġ): β₁ grows by σ_b² E[φ']²/D
    g = derive_deq(trainable=("a", "A", "B"))
    sb2 = SIGMA_B2
    assert sp.simplify(g.beta[0] - f.beta[0] - sb2 * m.mu[1] ** 2 / d) == 0


def test_cache_rejects_corrupt_and_foreign_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEQRMT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("DEQRMT_NO_CACHE", raising=False)
    calls: list[int] = []

    def build() -> dict[str, int]:
        calls.append(1)
        return {"v": len(calls)}

    assert cached("t", "k", build, dict, symbols=()) == {"v": 1}
    assert cached("t", "k", build, dict, symbols=()) == {"v": 1}  # served from disk
    (entry,) = list(tmp_path.glob("t-*.json"))
    entry.write_bytes(entry.read_bytes()[:-3] + b"xyz")  # corrupt the payload
    assert cached("t", "k", build, dict, symbols=()) == {"v": 2}  # rebuilt, not trusted
    entry.write_bytes(b'{"format": "deqrmt-cache/2", "key": "foreign", "sha256": "0"}\n{}')
    assert cached("t", "k", build, dict, symbols=()) == {"v": 3}
    # an entry of the wrong type is rebuilt
    assert cached("t", "k", build, list, symbols=()) == {"v": 4}


def test_latex_equations_cover_every_coefficient() -> None:
    text = latex_block(equations("deq-ck")) + latex_block(equations("deq-ntk"))
    for k in range(1, 5):
        assert f"\\alpha_{{*,{k}}} &=" in text
    for k in range(1, 4):
        assert f"\\beta_{{*,{k}}} &=" in text
    assert "\\kappa_*^2 &=" in text


_FIVE_TARGETS = """
import sys
from deqrmt.symbolic._latex import equations
if sys.argv[1] == "warm":  # a derivation now would mean the cache was not read
    import deqrmt.symbolic._recursion as rec
    import deqrmt.symbolic._sphere as sph

    def derived_again(*args, **kwargs):
        raise SystemExit("derived again instead of reading the cache")

    rec._derive_deq = rec._derive_layer = derived_again
    sph._derive_sphere = sph._derive_quadratic = derived_again
for tgt in ("deq-ck", "deq-ntk", "explicit-ck", "explicit-ntk", "sphere"):
    print(repr(equations(tgt)))
"""


def test_all_five_targets_derive_cold_then_from_cache(tmp_path: Path) -> None:
    # How long each takes: benchmarks/limits.py (timings live in benchmarks, not in asserts).
    env = dict(os.environ, DEQRMT_CACHE_DIR=str(tmp_path))
    env.pop("DEQRMT_NO_CACHE", None)

    def run(mode: str) -> str:
        proc = subprocess.run(
            [sys.executable, "-c", _FIVE_TARGETS, mode],
            env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-2000:]
        return proc.stdout

    cold = run("cold")
    assert len(list(tmp_path.glob("derive-*.json"))) >= 2  # DEQ and layer derivations stored
    assert run("warm") == cold  # the same equations, none derived again


def test_derive_text_names_squares_and_defines_its_symbols(capsys):
    """Issue 10: text mode once printed `tau = …` for τ*² and never said what mu1 meant."""
    assert main(["derive", "deq-ck"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("tau*^2 = ") and "\ngamma*^2 = " in out
    assert "mu1 = E[phi'(tau*xi)]" in out and "sq2 = E[(phi^2)''(tau*xi)]" in out
    assert main(["derive", "deq-ntk"]) == 0
    out = capsys.readouterr().out
    assert "kappa*^2 = " in out and "/(1 - " in out  # natural-sign denominators (issue 8)

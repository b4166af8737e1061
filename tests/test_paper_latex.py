"""Issues 23 (item 4) and 21: paper-ready LaTeX, and every value says what holds for it.

* ``sympy.latex`` of anything ``coefficient_expression`` and ``derive_*`` return prints σ_a², τ*,
  E[φ'(τ*ξ)] … and compiles under pdflatex (it printed ``\\sigma_{a2}``, ``sq_{2}`` and a raw
  ``E[φ'(τ*ξ)]``), while ``str()``, generated code and the numbers stay as they were;
* the ``latex`` document has the activation's closed forms and the coefficients written out with
  them, and marks each value "proven (Arb)" or "two evaluations agree" by its own flag (it said
  "every digit shown agrees between two evaluations" for proven values);
* notebook reprs do the same, and no user text reaches LaTeX, HTML or Markdown unescaped.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import mpmath
import pytest
import sympy as sp

import deqrmt
from deqrmt.cli import main
from deqrmt.numeric import Verified, deq_coefficients
from deqrmt.numeric import _display as display
from deqrmt.symbolic import (
    SIGMA_A2,
    SIGMA_B2,
    TAU0,
    TAU_STAR,
    Activation,
    X,
    coefficient_expression,
    derive_deq,
    derive_explicit_sphere,
    derive_fixed_point,
    derive_layer,
    derive_quadratic,
    derive_sphere,
    get_activation,
)
from deqrmt.symbolic._bias import derive_bias
from deqrmt.symbolic._document import derivation_document
from deqrmt.symbolic._latex import (
    AGREED,
    MOMENT_SYMBOLS,
    PROVEN,
    SYMBOLS,
    expression_latex,
    tex_text,
)
from deqrmt.symbolic._serialize import UnsafeEntry, read_srepr
from deqrmt.symbolic._specialize import COEFFICIENT_KEYS
from deqrmt.symbolic._symbols import PaperSymbol, moment_at_tau_star, moment_latex
from helpers import CATALOGUE, deq_reference, raw_moments

PDFLATEX = shutil.which("pdflatex")
#: relu, tanh, erf, silu, a polynomial, a steep one, and two more with closed forms
ACTIVATIONS = [
    "relu",
    "tanh",
    "erf",
    "silu",
    "x + 0.25*x**2",
    "tanh(30*x)",
    "gelu",
    "leaky_relu(0.1)",
]
EVIL = "relu\x1b[2J\u202e$\\input{/etc/passwd}%&#_^~{}<script>alert(1)</script>|*`[x](y)\x07"


def _compile(tex: str, tmp_path: Path, name: str = "doc") -> str:
    """Compile ``tex`` with pdflatex (skipped where it is missing, except under CI); the log."""
    if PDFLATEX is None:
        if os.environ.get("CI"):
            pytest.fail("pdflatex is missing under CI; .ci/run installs texlive-latex-base")
        pytest.skip("pdflatex not installed (CI installs texlive-latex-base)")
    (tmp_path / f"{name}.tex").write_text(tex, encoding="utf-8")
    proc = subprocess.run(
        [PDFLATEX, "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape", f"{name}.tex"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert (tmp_path / f"{name}.pdf").stat().st_size > 1000
    return (tmp_path / f"{name}.log").read_text(encoding="utf-8", errors="replace")


def _standalone(formulas: list[str]) -> str:
    body = "\n".join(rf"\[ {f} \]" for f in formulas)
    return (
        "\\documentclass{article}\\usepackage{amsmath,amssymb}\\begin{document}\n"
        f"{body}\n\\end{{document}}\n"
    )


def _expressions(value: object) -> list[sp.Basic]:
    """Every SymPy expression or relation inside a derivation result (dataclasses, dicts …)."""
    if isinstance(value, (sp.Expr, sp.Eq)) or (isinstance(value, sp.Basic) and value.is_Relational):
        return [value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [e for f in dataclasses.fields(value) for e in _expressions(getattr(value, f.name))]
    if isinstance(value, dict):
        return [e for v in value.values() for e in _expressions(v)]
    if isinstance(value, (tuple, list)):
        return [e for v in value for e in _expressions(v)]
    return []


# --- 1. symbols that print as the paper writes them ------------------------------------------


def test_formula_symbols_print_as_the_paper_and_keep_their_names() -> None:
    assert [sp.latex(s) for s in (SIGMA_A2, SIGMA_B2, TAU0, TAU_STAR)] == [
        r"\sigma_a^2", r"\sigma_b^2", r"\tau_0", r"\tau_*",
    ]  # fmt: skip
    m = derive_deq().m
    assert sp.latex(m.mu[1]) == r"\mathbb{E}[\phi'(\tau\xi)]"
    assert sp.latex(m.sq2) == r"\mathbb{E}[(\phi^2)''(\tau\xi)]"
    # str() and the names code generation and the cache go by are unchanged
    assert [str(s) for s in (SIGMA_A2, SIGMA_B2, TAU0, m.mu[1], m.sq2)] == [
        "sigma_a2", "sigma_b2", "tau_0", "mu1", "sq2",
    ]  # fmt: skip
    assert SIGMA_A2.is_positive and m.mu[1].is_real and m.dsq.is_nonnegative
    # squares of a symbol that carries its own superscript are parenthesised, not ^2^{2}
    assert sp.latex(SIGMA_B2**2) == r"\left(\sigma_b^2\right)^{2}"
    # symbol_names still wins: the moments at τ* (the document's DEQ section)
    assert sp.latex(m.mu[1], symbol_names=moment_latex(r"\tau_*")) == (
        r"\mathbb{E}[\phi'(\tau_*\xi)]"
    )
    assert sp.latex(moment_at_tau_star("dsq")) == r"\mathbb{E}[\phi'(\tau_*\xi)^2]"
    assert str(moment_at_tau_star("dsq")) == "E[φ'(τ*ξ)²]"


def test_paper_symbols_survive_the_cache_and_unknown_ones_are_refused() -> None:
    text = sp.srepr(SIGMA_A2 * derive_deq().m.mu[1])
    assert "PaperSymbol('sigma_a2', positive=True)" in text
    back = read_srepr(text)
    assert back == SIGMA_A2 * derive_deq().m.mu[1] and sp.latex(back).startswith(r"\mathbb{E}")
    # a planted entry cannot name a PaperSymbol whose LaTeX is not the package's
    with pytest.raises(UnsafeEntry):
        read_srepr("PaperSymbol('input', real=True)")
    with pytest.raises(ValueError):
        PaperSymbol("anything_else")


def test_latex_of_every_coefficient_expression_and_derivation_compiles(tmp_path: Path) -> None:
    formulas: list[str] = []
    for act in ACTIVATIONS:
        for key in COEFFICIENT_KEYS:
            formulas.append(sp.latex(coefficient_expression(act, key)))
    derived = (
        derive_deq(), derive_deq(trainable=("a", "A", "B"), input_injection=False),
        derive_fixed_point(), derive_layer(), derive_sphere(), derive_explicit_sphere(),
        derive_quadratic(), derive_bias("1/(1-w)"),
    )  # fmt: skip
    for result in derived:
        formulas += [sp.latex(e) for e in _expressions(result)]
    joined = "\n".join(formulas)
    assert joined.isascii(), [f for f in formulas if not f.isascii()][:3]  # no raw E[φ'(τ*ξ)]
    for ugly in (r"\sigma_{a2}", r"\sigma_{b2}", "sq_{2}", r"\mu_{1}", r"\alpha_{1 prev}"):
        assert ugly not in joined, ugly
    assert r"\mathbb{E}[\phi'(\tau_*\xi)]" in joined  # tanh's E[φ'] has no closed form
    assert r"\frac{\sigma_b^2}{4 - \sigma_a^2}" in joined  # relu's α*₁
    _compile(_standalone(formulas), tmp_path)


def test_derive_text_output_is_unchanged() -> None:
    """``deqrmt derive`` text lists what every symbol means, the unknowns α*, β* included."""
    from deqrmt.symbolic._latex import equations, text_block

    out = text_block(equations("deq-ck"))
    assert out.startswith("tau*^2 = sigma_a2*sq + sigma_b2*tau_0**2\n")
    assert "alpha_4 = alpha*_4" in out and "mu1 = E[phi'(tau*xi)]" in out
    assert "sigma_a2 = sigma_a^2" in out


def test_coefficient_expressions_read_as_the_paper_writes_them() -> None:
    """κ* = √(γ*²/(1 − σ_a²E[φ'²])) stays one root (it was √E[φ²]·√(−1/(E[φ'²]σ_a² − 1))), and a
    denominator's constant is positive also when it is a multiple of π (relu's α*₄)."""
    assert str(coefficient_expression("tanh", "kappa_star")) == (
        "sqrt(E[φ(τ*ξ)²]/(-E[φ'(τ*ξ)²]*sigma_a2 + 1))"
    )
    assert str(coefficient_expression("relu", "kappa_star")) == (
        "tau_**sqrt(-1 + pi)*sqrt(1/(2 - sigma_a2))/sqrt(pi)"
    )
    assert str(coefficient_expression("relu", "alpha_4")) == (
        "2*pi*sigma_b2/(-pi*sigma_a2 + sigma_a2 + 2*pi)"
    )


@pytest.mark.parametrize("spec", ["relu", "leaky_relu(0.1)", "tanh", "erf", "x + 0.25*x**2"])
def test_coefficient_expression_agrees_with_an_independent_reference(spec: str) -> None:
    """Specialised, simplified and sign-normalised, each formula still gives the hand-coded
    reference's value (quadrature of the definitions, tests/helpers.py) to 25 digits."""
    ref = CATALOGUE[spec]
    want = deq_reference(ref, "0.2", "0.8", "1", dps=40)
    with mpmath.workdps(40):
        tau = want["tau_star"]
        raw = raw_moments(ref, tau)
        values: dict[sp.Basic, sp.Expr] = {
            SIGMA_A2: sp.Rational(1, 5), SIGMA_B2: sp.Rational(4, 5), TAU0: sp.S.One,
            TAU_STAR: sp.Float(mpmath.nstr(tau, 45), 45),
        }  # fmt: skip
        for name, v in raw.items():
            values[moment_at_tau_star(name)] = sp.Float(mpmath.nstr(v, 45), 45)
        for key in COEFFICIENT_KEYS:
            expr = coefficient_expression(spec, key)
            got = mpmath.mpf(str(expr.xreplace(values).evalf(45)))
            assert abs(got - want[key]) <= mpmath.mpf(10) ** -25 * max(1, abs(want[key])), key


# --- 2. the document ------------------------------------------------------------------------

_ROW = re.compile(r"^\$(?P<sym>.+?)\$ & \$(?P<value>[^$]*)\$ & (?P<status>[^\\]+) \\\\$", re.M)


def _statuses(tex: str) -> dict[str, str]:
    """LaTeX symbol → status of each row of the document's value tables."""
    return {m["sym"]: m["status"] for m in _ROW.finditer(tex)}


def _expected(res: deqrmt.DEQCoefficients) -> dict[str, str]:
    out = {SYMBOLS[k][1]: PROVEN if v.certified else AGREED for k, v in res.values.items()}
    out.update(
        {MOMENT_SYMBOLS[k][1]: PROVEN if v.certified else AGREED for k, v in res.moments.items()}
    )
    return out


#: a closed form each document must show (its moments in τ, or a coefficient written out)
_CLOSED = {
    "relu": [r"\mathbb E[\phi^2(\tau\xi)] &= \frac{\tau^{2}}{2}",
             r"\alpha_{*,1} &= \frac{\sigma_b^2}{4 - \sigma_a^2}",
             r"\tau_*^2 &= \frac{2 \pi \sigma_b^2 \tau_0^{2}}{\sigma_a^2 + 2 \pi - \pi \sigma_a^2}"],
    "tanh": [r"\mathbb E[\phi(\tau\xi)] &= 0",
             r"\alpha_{*,1} &= \frac{\sigma_b^2 \mathbb{E}[\phi'(\tau_*\xi)]^{2}}"
             r"{1 - \sigma_a^2 \mathbb{E}[\phi'(\tau_*\xi)]^{2}}"],
    "erf": [r"\mathbb E[\phi'(\tau\xi)] &= \frac{2}{\sqrt{\pi} \sqrt{2 \tau^{2} + 1}}",
            r"\alpha_{*,1} &= \frac{4 \sigma_b^2}{\pi - 4 \sigma_a^2 + 2 \pi \tau_*^{2}}"],
    "x + 0.25*x**2": [r"\mathbb E[\phi^2(\tau\xi)] &= ", r"\alpha_{*,1} &= "],
    "tanh(30*x)": [r"\mathbb E[\phi''(\tau\xi)] &= 0"],
    "silu": [r"No closed form was found for $\mathbb E[\phi(\tau\xi)]$"],
}  # fmt: skip


@pytest.mark.parametrize("spec", list(_CLOSED))
def test_document_has_closed_forms_and_per_value_statements(spec: str, tmp_path: Path) -> None:
    out = tmp_path / "derivation.tex"
    assert main(["latex", spec, "-o", str(out), "--dps", "15"]) == 0
    tex = out.read_text(encoding="utf-8")
    for closed in _CLOSED[spec]:
        assert closed in tex, closed
    res = deq_coefficients(spec, dps=15)  # what the command computed: proven by default
    assert _statuses(tex) == _expected(res)
    assert PROVEN in _statuses(tex).values()
    assert "every digit shown agrees between two evaluations" not in tex
    log = _compile(tex, tmp_path, "derivation")
    assert "Overfull" not in log  # the written-out coefficients fit the page


def test_document_without_a_proof_says_two_evaluations_agree(tmp_path: Path) -> None:
    out = tmp_path / "derivation.tex"
    assert main(["latex", "tanh", "-o", str(out), "--dps", "15", "--no-certify"]) == 0
    tex = out.read_text(encoding="utf-8")
    statuses = _statuses(tex)
    assert len(statuses) == 15 and set(statuses.values()) == {AGREED}
    assert PROVEN not in tex


def test_document_marks_each_value_by_its_own_flag(tmp_path: Path) -> None:
    """Not one sentence for the table: a proven and an unproven value side by side."""
    res = deq_coefficients("relu", dps=15)
    values = dict(res.values)
    values["alpha_2"] = Verified(values["alpha_2"].value, 12, values["alpha_2"].text[:14])
    tex = derivation_document(
        res.activation, values, {"sigma_a2": "1/5", "sigma_b2": "4/5", "tau0": "1", "dps": "15"},
        moments=res.moments, reason="a reason with $ and \\input{x}",
    )  # fmt: skip
    statuses = _statuses(tex)
    assert statuses[r"\alpha_{*,2}"] == AGREED and statuses[r"\alpha_{*,1}"] == PROVEN
    assert f"\\emph{{{PROVEN}}}" in tex and f"\\emph{{{AGREED}}}" in tex
    assert r"\input{x}" not in tex and r"\textbackslash{}input\{x\}" in tex
    _compile(tex, tmp_path)


# --- 3. user text never acts as LaTeX, HTML or Markdown ----------------------------------------


def _no_raw(text: str) -> None:
    for bad in ("\x1b", "\u202e", "\x07", "\\input{/etc/passwd}", "<script>"):
        assert bad not in text, (bad, text[:300])


@pytest.fixture(scope="module")
def evil_result() -> deqrmt.DEQCoefficients:
    return deq_coefficients(Activation(EVIL, sp.Max(X, 0)), dps=12)


def test_a_hostile_name_is_escaped_in_the_document(
    evil_result: deqrmt.DEQCoefficients, tmp_path: Path
) -> None:
    d = evil_result.to_dict()
    params = {k: str(d[k]) for k in ("sigma_a2", "sigma_b2", "tau0", "dps")}
    tex = derivation_document(
        evil_result.activation, evil_result.values, params, moments=evil_result.moments,
        reason=EVIL, version=EVIL,
    )  # fmt: skip
    _no_raw(tex)
    assert tex.isascii()
    _compile(tex, tmp_path)


def test_user_names_inside_an_expression_are_escaped(tmp_path: Path) -> None:
    """A hand-built activation may hold an undefined function (or symbol) of any name."""
    f = sp.Function("\\input{/etc/passwd}\x1b")
    s = sp.Symbol("$x^{\\input{y}}")
    tex = expression_latex(f(X) ** 2 + sp.Derivative(f(X), X) + s)
    _no_raw(tex)
    assert (
        r"\input{y}" not in tex
        and r"\textbackslash{}input\{/etc/passwd\}\textbackslash{}x1b" in tex
    )
    assert expression_latex(sp.erf(X) + sp.Max(X, 0)) == sp.latex(sp.erf(X) + sp.Max(X, 0))
    assert tex_text("σ_a² \x1b") == r"sigma\_a\textasciicircum{}2 \textbackslash{}x1b"
    _compile(_standalone([tex]), tmp_path)


def test_reprs_escape_user_text(evil_result: deqrmt.DEQCoefficients, tmp_path: Path) -> None:
    html, md, latex = (
        evil_result._repr_html_(),
        evil_result._repr_markdown_(),
        evil_result._repr_latex_(),
    )
    for text in (html, md, latex):
        _no_raw(text)
    assert "&lt;script&gt;" in html and "&#92;x1b" in html and "&#36;" in html
    # Markdown: raw HTML and its own specials (|, *, `, [ ]) escaped; the table keeps 5 columns
    assert "&lt;script&gt;" in md and r"\|\*\`\[x\](y)" in md
    rows = [line for line in md.splitlines() if line.startswith("| ")]
    assert all(line.count("|") - line.count(r"\|") == 6 for line in rows)
    assert r"\input" not in latex.replace(r"\textbackslash{}input", "")
    doc = latex.replace("$$", "\\[", 1).replace("$$", "\\]", 1)
    _compile(_standalone([]).replace("\\end{document}", doc + "\n\\end{document}"), tmp_path)


# --- 4. notebook reprs say what holds, per value -----------------------------------------------


def _repr_statuses(result: Any) -> list[str]:
    md = result._repr_markdown_()
    return [line.rsplit("|", 2)[1].strip() for line in md.splitlines() if line.startswith("| ")][1:]


def test_reprs_mark_each_value_by_its_own_flag() -> None:
    proven = deq_coefficients("tanh", dps=12)
    agreed = deq_coefficients("tanh", dps=12, certify=False)
    assert _repr_statuses(proven) == [PROVEN] * len(proven.values)
    assert _repr_statuses(agreed) == [AGREED] * len(agreed.values)
    values = dict(proven.values)
    values["alpha_1"] = agreed.values["alpha_1"]
    mixed = dataclasses.replace(proven, values=values)
    want = [PROVEN if v.certified else AGREED for v in values.values()]
    assert AGREED in want and PROVEN in want
    assert _repr_statuses(mixed) == want
    html, latex = mixed._repr_html_(), mixed._repr_latex_()
    assert html.count(f"<td>{PROVEN}</td>") == want.count(PROVEN)
    assert html.count(f"<td>{AGREED}</td>") == 1
    assert latex.count(rf"\text{{{PROVEN}}}") == want.count(PROVEN)
    assert r"\alpha_{*,1} &= " + agreed.values["alpha_1"].text + rf" && \text{{{AGREED}}}" in latex


def test_explicit_and_sphere_reprs() -> None:
    ex = deqrmt.explicit_coefficients(["relu", "tanh"], dps=12)
    flags = [v.certified for layer in ex.layers for v in layer.values()]
    assert _repr_statuses(ex) == [PROVEN if c else AGREED for c in flags]
    assert r"\tilde\alpha_{2,1} &= " in ex._repr_latex_() and "α̃_2,1" in ex._repr_html_()
    sph = deqrmt.sphere_coefficients("relu", dps=12)
    want = [PROVEN if v.certified else AGREED for k, v in sph.values.items()]
    assert _repr_statuses(sph) == want and sph.certified and set(want) == {PROVEN}
    assert r"\dot\alpha &= " in sph._repr_latex_()
    assert display.table(sph).rows[0].key == "g0"


def test_activation_objects_print_their_expression() -> None:
    """The document's φ(x) is SymPy's LaTeX of the parsed expression, not the name typed."""
    act = get_activation("2*leaky_relu(0.2)")
    assert expression_latex(act.expr) == sp.latex(act.expr)

r"""A complete, compilable LaTeX derivation for one activation (``deqrmt latex``).

The model, the assumptions and the derived general formulas (:mod:`._latex`); the activation's
Gaussian moments in closed form in τ (:func:`~deqrmt.symbolic.moment_set`) and the coefficients
written out with them (:func:`~deqrmt.symbolic.coefficient_expression`, τ*'s equation solved
where it is linear in τ*²); the numerical values, each marked ``proven (Arb)`` or ``two
evaluations agree`` by its own ``certified`` flag.  Only texlive-latex-base packages (amsmath,
amssymb, geometry); no user text unescaped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import sympy as sp

from ._activation import Activation, X
from ._expectation import TAU, moment_set
from ._latex import (
    AGREED,
    MOMENT_SYMBOLS,
    PROVEN,
    SYMBOLS,
    ShownValue,
    equations,
    expression_latex,
    latex_block,
    natural_sign,
    tex_number,
    tex_text,
    value_status,
)
from ._recursion import derive_fixed_point
from ._symbols import TAU_STAR

__all__ = ["derivation_document"]


# --- the activation's closed forms -----------------------------------------------------------

#: the moments the document lists, as functions of τ (φ before centering)
_MOMENT_LABELS = {
    "phi": r"\mathbb E[\phi(\tau\xi)]",
    "d1": r"\mathbb E[\phi'(\tau\xi)]",
    "d2": r"\mathbb E[\phi''(\tau\xi)]",
    "sq": r"\mathbb E[\phi^2(\tau\xi)]",
    "sq2": r"\mathbb E[(\phi^2)''(\tau\xi)]",
    "dsq": r"\mathbb E[\phi'(\tau\xi)^2]",
}
#: a specialised formula wider than this (in characters of the display, :func:`_width`) is
#: referred to its general form instead of running off the page
_MAX_WIDTH = 80
_CMD = re.compile(r"\\([A-Za-z]+|.)")


def _argument(tex: str, i: int) -> tuple[str, int]:
    """The TeX argument at ``tex[i:]`` (a braced group or one token) and the index after it."""
    while i < len(tex) and tex[i] == " ":
        i += 1
    if i >= len(tex):
        return "", i
    if tex[i] == "{":
        depth = 0
        for j in range(i, len(tex)):
            depth += {"{": 1, "}": -1}.get(tex[j], 0)
            if depth == 0:
                return tex[i + 1 : j], j + 1
        return tex[i + 1 :], len(tex)
    m = _CMD.match(tex, i)
    return (m.group(0), m.end()) if m else (tex[i], i + 1)


def _width(tex: str) -> float:
    r"""About how many characters wide SymPy's LaTeX ``tex`` is set: a ``\frac`` as wide as
    the wider of its parts, scripts smaller, ``\left(`` one character (calibrated so that 80
    fits a line of this document's display)."""
    i, total = 0, 0.0
    while i < len(tex):
        c = tex[i]
        if tex.startswith(r"\frac", i):
            a, i = _argument(tex, i + 5)
            b, i = _argument(tex, i)
            total += max(_width(a), _width(b)) + 0.5
        elif tex.startswith(r"\sqrt", i):
            a, i = _argument(tex, i + 5)
            total += _width(a) + 1
        elif c in "^_":
            a, i = _argument(tex, i + 1)
            total += 0.7 * _width(a)
        elif c == "\\":
            m = _CMD.match(tex, i)
            name, i = (m.group(1), m.end()) if m else ("", i + 1)
            if name in ("operatorname", "mathrm", "text", "mathbb"):
                a, i = _argument(tex, i)
                total += 1 if name == "mathbb" else len(a)
            elif name not in ("left", "right"):
                total += 0.3 if name in (",", ";", "!", " ") else 1
        elif c in "{} ":
            i += 1
        else:
            total += 2 if c in "+-=" else 1
            i += 1
    return total


_COEFFICIENTS = ("gamma_star", "alpha_1", "alpha_2", "alpha_3", "alpha_4",
                 "beta_1", "beta_2", "beta_3", "kappa_star")  # fmt: skip
_LABELS = {
    "gamma_star": "eq:gamma", "alpha_1": "eq:alpha1", "alpha_2": "eq:alpha2",
    "alpha_3": "eq:alpha3", "alpha_4": "eq:alpha4", "beta_1": "eq:beta1", "beta_2": "eq:beta2",
    "beta_3": "eq:beta3", "kappa_star": "eq:kappa",
}  # fmt: skip


def _moment_section(act: Activation) -> str:
    ms = moment_set(act)
    closed = [(lhs, ms[k].closed_form) for k, lhs in _MOMENT_LABELS.items()]
    shown = [(lhs, e) for lhs, e in closed if e is not None]
    missing = [lhs for lhs, e in closed if e is None]
    out = []
    if shown:
        tau = {TAU: r"\tau", X: "x"}
        out.append(
            "Gaussian moments in closed form, as functions of the scale $\\tau$ (of $\\phi$ "
            "before centering; $\\xi\\sim\\mathcal N(0,1)$):\n\\begin{align*}\n"
            + " \\\\\n".join(
                rf"  {lhs} &= {expression_latex(sp.simplify(e) if sp.count_ops(e) < 80 else e, symbol_names=tau)}"
                for lhs, e in shown
            )
            + "\n\\end{align*}\n"
        )
    if missing:
        out.append(
            "No closed form was found for $" + "$, $".join(missing) + "$; they are evaluated "
            "by quadrature.\n\n"
        )
    return "".join(out)


def _fixed_point_line(act: Activation) -> str | None:
    r"""τ*'s equation τ*² = F(τ*²) with φ's closed forms, solved where it is linear in τ*²."""
    fpm = derive_fixed_point(center=True)
    ms = moment_set(act)
    names = fpm.m.names()
    closed: dict[sp.Basic, sp.Expr] = {}
    for sym in fpm.F.free_symbols:
        if sym in names:
            form = ms[names[sym]].closed_form if names[sym] in ms.moments else None
            if form is None:
                return None
            closed[sym] = form.subs(TAU, TAU_STAR)
    rhs = sp.expand(fpm.F.xreplace(closed))
    q = sp.Dummy("q", positive=True)
    in_q = sp.expand(rhs.subs(TAU_STAR, sp.sqrt(q)))
    if in_q.is_polynomial(q) and sp.degree(in_q, q) == 1:
        slope, rest = in_q.coeff(q, 1), in_q.coeff(q, 0)
        solved = natural_sign(sp.simplify(rest / (1 - slope)))
        return r"\tau_*^2 &= " + expression_latex(solved, order="none")
    text = expression_latex(natural_sign(sp.simplify(rhs)), order="none")
    return rf"\tau_*^2 &= {text}" if _width(text) <= _MAX_WIDTH else None


def _coefficient_section(act: Activation) -> str:
    """The coefficients for this activation: the derived formulas with its closed forms at τ*
    (:func:`~deqrmt.symbolic.coefficient_expression`), simplified by SymPy."""
    from ._specialize import coefficient_expression

    lines, long = [], []
    tau_line = _fixed_point_line(act)
    if tau_line is not None:
        lines.append(tau_line)
    for key in _COEFFICIENTS:
        # order="none": 1 − σ_a²E[φ'²] as the paper writes it, not −σ_a²E[φ'²] + 1
        text = expression_latex(coefficient_expression(act, key), order="none")
        if _width(text) <= _MAX_WIDTH:
            lines.append(rf"{SYMBOLS[key][1]} &= {text}")
        else:
            long.append(key)
    out = [
        r"\section{The coefficients for this activation}" + "\n",
        "With the closed forms above at $\\tau = \\tau_*$ (and $\\phi$ centered,"
        " $\\phi_c = \\phi - \\mathbb E[\\phi(\\tau_*\\xi)]$), SymPy simplifies the derived"
        " formulas to\n",
    ]
    out.append("\\begin{align*}\n" + " \\\\\n".join(f"  {s}" for s in lines) + "\n\\end{align*}\n")
    if tau_line is None:
        out.append(
            "$\\tau_*$ is the attracting root of $\\tau_*^2 = \\sigma_a^2\\mathbb E[\\phi_c^2"
            "(\\tau_*\\xi)] + \\sigma_b^2\\tau_0^2$, found numerically.\n"
        )
    if long:
        refs = ", ".join(rf"${SYMBOLS[k][1]}$ (\eqref{{{_LABELS[k]}}})" for k in long)
        out.append(
            f"Written out, {refs} {'is' if len(long) == 1 else 'are'} too long to typeset"
            " usefully: read them as the general formulas with the moments above.\n"
        )
    out.append("Moments without a closed form stay as $\\mathbb E[\\cdots]$ at $\\tau_*$.\n\n")
    return "".join(out)


# --- the document ----------------------------------------------------------------------------

_PREAMBLE = r"""\documentclass[11pt]{article}
\usepackage[margin=2.2cm]{geometry}
\usepackage{amsmath,amssymb}
\allowdisplaybreaks
\title{High-dimensional equivalents of the DEQ kernels for $\phi(x) = %(phi)s$}
\author{generated by deqrmt %(version)s}
\date{}
\begin{document}
\maketitle
"""


def _values_table(rows: Sequence[tuple[str, ShownValue]], caption: str) -> str:
    body = "".join(
        rf"${sym}$ & ${tex_number(v.text)}$ & {tex_text(value_status(bool(v.certified)))} \\" + "\n"
        for sym, v in rows
    )
    return (
        "\\begin{center}\\begin{tabular}{lll}\n"
        f"\\multicolumn{{3}}{{l}}{{{caption}}} \\\\\n\\hline\n"
        f"{body}\\end{{tabular}}\\end{{center}}\n\n"
    )


def _values_section(
    values: Mapping[str, ShownValue],
    moments: Mapping[str, ShownValue],
    params: Mapping[str, str],
    reason: str | None,
) -> str:
    shown = [(SYMBOLS[k][1], values[k]) for k in SYMBOLS if k in values]
    shown_m = [(MOMENT_SYMBOLS[k][1], moments[k]) for k in MOMENT_SYMBOLS if k in moments]
    statuses = {bool(v.certified) for _, v in (*shown, *shown_m)}
    out = [r"\section{Numerical values}" + "\n"]
    out.append(
        rf"For $\sigma_a^2 = {tex_number(params['sigma_a2'])}$,"
        rf" $\sigma_b^2 = {tex_number(params['sigma_b2'])}$,"
        rf" $\tau_0 = {tex_number(params['tau0'])}$ ({tex_text(params['dps'])} digits requested)."
        " Beside each value is what holds for it: "
    )
    if True in statuses:
        out.append(
            f"\\emph{{{PROVEN}}}: an Arb ball, computed with rigorous error bounds, encloses the"
            " true value and proves every digit shown" + ("; " if False in statuses else ".")
        )
    if False in statuses:
        out.append(
            f"\\emph{{{AGREED}}}: the digits shown are those on which evaluations at two"
            " precisions (the second with a finer quadrature rule) agree, which is evidence,"
            " not a proof."
        )
    if reason and False in statuses:
        out.append(f" No proof: {tex_text(reason)}.")
    out.append("\n\n")
    out.append(_values_table(shown, "the coefficients"))
    if shown_m:
        out.append(_values_table(shown_m, r"the moments of $\phi_c$ at $\tau_*$"))
    return "".join(out)


def derivation_document(
    act: Activation,
    values: Mapping[str, ShownValue],
    params: Mapping[str, str],
    *,
    moments: Mapping[str, ShownValue] | None = None,
    reason: str | None = None,
    version: str = "",
) -> str:
    r"""A complete, compilable LaTeX document for one activation.

    Args:
      act: the activation (as given, before centering).
      values: keys of :data:`SYMBOLS` → the results' values (``deq_coefficients(...).values``:
        each with its ``text`` and whether it is ``certified``).
      params: ``sigma_a2``, ``sigma_b2``, ``tau0``, ``dps`` as strings.
      moments: the result's ``moments`` (keys of :data:`MOMENT_SYMBOLS`), shown likewise.
      reason: why the values are not proven, if they are not (the result's ``reason``).
      version: the package version for the byline.

    Each value is marked :data:`PROVEN` or :data:`AGREED`, by its own ``certified``.
    """
    phi = expression_latex(act.expr)
    out = [_PREAMBLE % {"phi": phi, "version": tex_text(version)}]
    out.append(r"\section{Model}" + "\n")
    out.append(
        r"A deep equilibrium model with output $f(x)=a^\top z^*$ and"
        "\n"
        r"\[ z^* = \tfrac{1}{\sqrt m}\,\phi\!\left(\sigma_a A z^* + \sigma_b B x\right), \qquad"
        r" A_{ij}, B_{ij}, a_i \ \text{i.i.d., zero mean, unit variance,} \]"
        "\n"
        r"on $K$-class Gaussian-mixture data $\sqrt p\, x_i \sim \mathcal N(\mu_a, C_a)$ with"
        r" $\tau_0^2 = \operatorname{tr} C^\circ/p$, $t_a = \operatorname{tr} C_a^\circ/\sqrt p$,"
        r" $T_{ab} = \operatorname{tr} C_a C_b / p$ and"
        r" $\psi_i = \|x_i - \mathbb E x_i\|^2 - \mathbb E\|x_i - \mathbb E x_i\|^2$."
        " The conjugate kernel $G^*$ solves $G_{ij} = \\mathbb E[\\phi(u)\\phi(v)]$,"
        r" $(u,v)\sim\mathcal N(0,\Lambda_{\{i,j\}})$, $\Lambda = \sigma_a^2 G + \sigma_b^2 X^\top X$;"
        r" the neural tangent kernel for the parameters $(a, A)$ is $K^* = G^*/(1-\dot G^*)$,"
        r" $\dot G = \sigma_a^2\mathbb E[\phi'(u)\phi'(v)]$."
        "\n\n"
    )
    out.append(r"\section{Assumptions}" + "\n")
    out.append(
        r"$\phi$ is Lipschitz with weak derivatives up to order four, and centered at its fixed point,"
        r" $\mathbb E[\phi(\tau_*\xi)] = 0$ for $\xi\sim\mathcal N(0,1)$ (deqrmt replaces $\phi$ by"
        r" $\phi - c$ with $c$ solved jointly with $\tau_*$); the fixed-point map"
        r" $\tau^2 \mapsto \sigma_a^2\mathbb E[\phi^2(\tau\xi)] + \sigma_b^2\tau_0^2$ contracts,"
        r" $\tfrac{\sigma_a^2}{2}\mathbb E[(\phi^2)''(\tau_*\xi)] < 1$, and"
        r" $\sigma_a^2\mathbb E[\phi'(\tau_*\xi)^2] < 1$. Derivatives are weak:"
        r" $\mathbb E[\phi^{(k)}(\tau\xi)] = \tau^{-k}\mathbb E[\mathrm{He}_k(\xi)\phi(\tau\xi)]$."
        "\n\n"
    )
    out.append(r"\section{Derived general formulas}" + "\n")
    out.append(
        r"Second-order expansion of $\mathbb E[\phi(u)\phi(v)]$ in the off-diagonal covariance and the"
        r" diagonal fluctuations, matched against the ansatz"
        r" $\bar G = \alpha_{*,1}X^\top X + V C_* V^\top + (\gamma_*^2 - \tau_0^2\alpha_{*,1}) I_n$,"
        r" $V = [J/\sqrt p,\ \psi]$, $C_* = \begin{bmatrix}\alpha_{*,2}tt^\top + \alpha_{*,3}T & \alpha_{*,2}t\\"
        r" \alpha_{*,2}t^\top & \alpha_{*,2}\end{bmatrix}$ (and $\bar K$ likewise with $\beta_{*,i}$,"
        r" $\kappa_*$), gives:"
        "\n"
    )
    out.append(r"\subsection{Conjugate kernel}" + "\n" + latex_block(equations("deq-ck")))
    out.append(
        r"\subsection{Neural tangent kernel, parameters $(a, A)$}"
        + "\n"
        + latex_block(equations("deq-ntk"))
    )
    out.append(
        r"\subsection{Explicit layer $x^{(l)} = \sigma_l(W_l x^{(l-1)})/\sqrt m$}"
        "\n" + latex_block(equations("explicit-ck")) + latex_block(equations("explicit-ntk"))
    )
    out.append(r"\section{The activation}" + "\n")
    out.append(rf"\[ \phi(x) = {phi}. \]" + "\n")
    out.append(_moment_section(act))
    out.append(_coefficient_section(act))
    out.append(_values_section(values, moments or {}, params, reason))
    out.append("\\end{document}\n")
    return "".join(out)

r"""LaTeX of the derived formulas in the paper's notation, and a complete derivation document.

Every equation comes from :mod:`deqrmt.symbolic._recursion` (nothing is typed in): the derived
SymPy expressions are printed with the moment symbols renamed to E[φ^{(k)}(τ_*ξ)] etc.  The
document uses only packages in texlive-latex-base (amsmath, amssymb, geometry).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence

import sympy as sp

from .._errors import InvalidArgument
from ._activation import Activation, X
from ._expectation import TAU, moment_set
from ._recursion import SIGMA_A2, SIGMA_B2, TAU0, derive_deq, derive_layer

__all__ = ["natural_sign", "Equation", "TARGETS", "equations", "latex_block", "text_block", "derivation_document"]

TARGETS = ("deq-ck", "deq-ntk", "explicit-ck", "explicit-ntk", "sphere")


@dataclasses.dataclass(frozen=True)
class Equation:
    """A named equation ``lhs = rhs``; ``label`` is a LaTeX label, ``lhs`` LaTeX."""

    label: str
    lhs: str
    rhs: sp.Expr
    names: Mapping[sp.Symbol, str]

    def latex(self) -> str:
        # order="none" keeps the natural-sign denominators as built (1 − σ_a²E[φ']², not
        # −σ_a²E[φ']² + 1); the order is SymPy's canonical one, so still the same bytes each run
        return sp.latex(natural_sign(self.rhs), symbol_names=dict(self.names), order="none")

    def text(self) -> str:
        return sp.sstr(natural_sign(self.rhs), order="none")


def natural_sign(expr: sp.Expr) -> sp.Expr:
    """Write each denominator factor c − x with its constant positive: a fixed-point solution
    x = b/(1 − a) reads as the paper writes it, not as −b/(a − 1)."""
    num, den = sp.fraction(sp.factor(expr))
    sign, factors = sp.S.One, []
    for f in sp.Mul.make_args(den):
        base, exp = f.as_base_exp()
        if isinstance(base, sp.Add) and base.as_coeff_add()[0].is_negative:
            base = sp.expand(-base)
            if exp.is_integer and exp.is_odd:
                sign = -sign
        factors.append(sp.Pow(base, exp))
    if len(factors) == 1 and factors[0] == 1:
        return sign * num
    return sp.Mul(sign * num, sp.Pow(sp.Mul(*factors), -1))


def _moment_names(at: str, fn: str = r"\phi") -> dict[str, str]:
    e = r"\mathbb{E}"
    return {
        "mu1": rf"{e}[{fn}'({at}\xi)]",
        "mu2": rf"{e}[{fn}''({at}\xi)]",
        "mu3": rf"{e}[{fn}'''({at}\xi)]",
        "sq": rf"{e}[{fn}^2({at}\xi)]",
        "sq2": rf"{e}[({fn}^2)''({at}\xi)]",
        "dsq": rf"{e}[{fn}'({at}\xi)^2]",
    }


def _deq_names() -> dict[sp.Symbol, str]:
    names: dict[sp.Symbol, str] = {
        SIGMA_A2: r"\sigma_a^2",
        SIGMA_B2: r"\sigma_b^2",
        TAU0: r"\tau_0",
    }
    f = derive_deq()
    moments = _moment_names(r"\tau_*")
    for sym in (*f.m.mu, f.m.sq, f.m.sq2, f.m.dsq):
        if sym.name in moments:
            names[sym] = moments[sym.name]
    for k in range(1, 5):
        names[sp.Symbol(f"alpha_{k}")] = rf"\alpha_{{*,{k}}}"
    for k in range(1, 4):
        names[sp.Symbol(f"beta_{k}")] = rf"\beta_{{*,{k}}}"
    return names


def _layer_names() -> dict[sp.Symbol, str]:
    f = derive_layer()
    moments = _moment_names(r"\tilde\tau_{l-1}", r"\sigma_l")
    names: dict[sp.Symbol, str] = {}
    for sym in (*f.m.mu, f.m.sq, f.m.sq2, f.m.dsq):
        if sym.name in moments:
            names[sym] = moments[sym.name]
    for key, sym in f.prev.items():
        if key.startswith(("alpha", "beta")):
            base, k = key.split("_")
            names[sym] = rf"\tilde\{base}_{{l-1,{k}}}"
        else:
            names[sym] = rf"\tilde\{key}_{{l-1}}"
    return names


def equations(
    target: str, *, trainable: Sequence[str] = ("a", "A"), input_injection: bool = True
) -> list[Equation]:
    """The derived formulas of one target (``deq-ck``, ``deq-ntk``, ``explicit-ck``, ``explicit-ntk``)."""
    if target in ("deq-ck", "deq-ntk"):
        f = derive_deq(trainable=tuple(trainable), input_injection=input_injection)
        n = _deq_names()
        s = f.structured
        if target == "deq-ck":
            return [
                Equation("eq:tau", r"\tau_*^2", f.tau_sq_map, n),
                Equation("eq:gamma", r"\gamma_*^2", f.gamma_sq, n),
                Equation("eq:alpha4", r"\alpha_{*,4}", s["alpha_4"], n),
                Equation("eq:alpha1", r"\alpha_{*,1}", s["alpha_1"], n),
                Equation("eq:alpha2", r"\alpha_{*,2}", s["alpha_2"], n),
                Equation("eq:alpha3", r"\alpha_{*,3}", s["alpha_3"], n),
            ]
        return [
            Equation("eq:beta1", r"\beta_{*,1}", s["beta_1"], n),
            Equation("eq:beta2", r"\beta_{*,2}", s["beta_2"], n),
            Equation("eq:beta3", r"\beta_{*,3}", s["beta_3"], n),
            Equation("eq:kappa", r"\kappa_*^2", s["kappa_sq"], n),
        ]
    if target in ("explicit-ck", "explicit-ntk"):
        lf = derive_layer()
        n = _layer_names()
        if target == "explicit-ck":
            return [
                Equation("eq:ltau", r"\tilde\tau_l^2", lf.tau_sq, n),
                *(
                    Equation(f"eq:lalpha{k}", rf"\tilde\alpha_{{l,{k}}}", e, n)
                    for k, e in enumerate(lf.alpha, 1)
                ),
            ]
        return [
            *(
                Equation(f"eq:lbeta{k}", rf"\tilde\beta_{{l,{k}}}", e, n)
                for k, e in enumerate(lf.beta, 1)
            ),
            Equation("eq:lkappa", r"\tilde\kappa_l^2", lf.kappa_sq, n),
        ]
    if target == "sphere":
        return _sphere_equations()
    raise InvalidArgument(f"unknown target {target!r}; choose one of {', '.join(TARGETS)}.")


def _sphere_equations() -> list[Equation]:
    """HLD 2023 (sphere data): g(ρ) by implicit differentiation, k = h∘g, Theorems 1 and 3."""
    from . import _sphere as sph

    f = sph.derive_sphere()
    names: dict[sp.Symbol, str] = {
        SIGMA_A2: r"\sigma_a^2", SIGMA_B2: r"\sigma_b^2", sph.S: "s", sph.G0: "g_0", sph.DIM: "d",
        sph.M_DSQ: r"\mathbb{E}[\phi'(\sqrt{s}\xi)^2]", sph.M_SQ: r"\mathbb{E}[\phi^2(\sqrt{s}\xi)]",
    }  # fmt: skip
    for j in range(f.order + 2):
        names[sph.f_symbol(j)] = rf"f_\phi^{{({j})}}(g_0/s)"
    eqs = [
        Equation("eq:s", "s", f.variance_equation.rhs, names),
        Equation("eq:g0", "g_0", f.origin_equation.rhs, names),
    ]
    for n, e in enumerate(f.g_derivatives, start=1):
        eqs.append(Equation(f"eq:g{n}", rf"g^{{({n})}}(0)", e, names))
    for n, e in enumerate(f.k_derivatives):
        eqs.append(Equation(f"eq:k{n}", rf"k^{{({n})}}(0)", e, names))
    for sym, e in zip(("alpha", "beta", "mu"), f.ck, strict=True):
        eqs.append(Equation(f"eq:{sym}", rf"\{sym}", e, names))
    for sym, e in zip(("alpha", "beta", "mu"), f.ntk, strict=True):
        eqs.append(Equation(f"eq:ntk{sym}", rf"\dot\{sym}", e, names))
    return eqs


def latex_block(eqs: Sequence[Equation]) -> str:
    """An ``align`` environment with one labelled line per equation (needs amsmath, amssymb)."""
    lines = [rf"  {e.lhs} &= {e.latex()} \label{{{e.label}}}" for e in eqs]
    return "\\begin{align}\n" + " \\\\\n".join(lines) + "\n\\end{align}\n"


def _plain(tex: str) -> str:
    """A LaTeX name as plain text: ``\\alpha_{*,4}`` → ``alpha*_4``, ``\\tau_*^2`` → ``tau*^2``."""
    t = tex.replace(r"\mathbb{E}", "E").replace(r"\tilde", "~").replace("\\", "")
    t = re.sub(r"_\{\*,([^}]*)\}", r"*_\1", t).replace("_*", "*")
    t = re.sub(r"\^\{?2\}?", "^2", t).replace("{", "").replace("}", "")
    return re.sub(r"~\s*(\w+)", r"\1~", t)


def text_block(eqs: Sequence[Equation]) -> str:
    """Plain text: ``lhs = rhs`` per equation (squares shown: ``tau*^2 = …``), then what each
    symbol in the right-hand sides means."""
    lines = [f"{_plain(e.lhs)} = {e.text()}" for e in eqs]
    used: dict[str, str] = {}
    for e in eqs:
        for sym in sorted(e.rhs.free_symbols, key=str):
            if sym in e.names and str(sym) != _plain(e.names[sym]):
                used.setdefault(str(sym), _plain(e.names[sym]))
    if used:
        lines.append("where " + "; ".join(f"{k} = {v}" for k, v in used.items()))
    return "\n".join(lines) + "\n"


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


_TEX_SPECIAL = {
    "\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "#": r"\#",
    "^": r"\textasciicircum{}", "_": r"\_", "~": r"\textasciitilde{}", "%": r"\%",
}  # fmt: skip
_TEX_PLAIN_NUMBER = re.compile(r"-?\d+(?:\.\d*)?(?:/\d+)?")
_TEX_SCIENTIFIC = re.compile(r"(-?\d+(?:\.\d*)?)e([+-]?\d+)")


def _tex_text(text: object) -> str:
    r"""``text`` for LaTeX text mode: specials escaped, anything but printable ASCII dropped.

    User text (a name, an echoed input) must never act as LaTeX: ``\input``, ``$``, ``%`` …
    """
    s = "".join(c for c in str(text) if " " <= c <= "~")
    return "".join(_TEX_SPECIAL.get(c, c) for c in s)


def _tex_number(text: object) -> str:
    r"""A number for math mode: ``1/5``, ``-0.25``, ``1.5e-7`` → ``1.5\times 10^{-7}``; any
    other text is set as escaped ``\text{…}``."""
    s = str(text).strip()
    if _TEX_PLAIN_NUMBER.fullmatch(s):
        return s
    m = _TEX_SCIENTIFIC.fullmatch(s)
    if m:
        return rf"{m.group(1)}\times 10^{{{int(m.group(2))}}}"
    return rf"\text{{{_tex_text(s)}}}"


def derivation_document(
    act: Activation,
    values: Mapping[str, str],
    params: Mapping[str, str],
    *,
    version: str = "",
) -> str:
    r"""A complete, compilable LaTeX document for one activation.

    Args:
      act: the activation (as given, before centering).
      values: JSON names → verified decimal strings (from ``deq_coefficients(...).to_dict()``).
      params: ``sigma_a2``, ``sigma_b2``, ``tau0``, ``dps`` as strings.
    """
    phi = sp.latex(act.expr)
    out = [_PREAMBLE % {"phi": phi, "version": _tex_text(version)}]
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
    ms = moment_set(act)
    labels = {
        "phi": r"\mathbb E[\phi(\tau\xi)]",
        "d1": r"\mathbb E[\phi'(\tau\xi)]",
        "d2": r"\mathbb E[\phi''(\tau\xi)]",
        "sq": r"\mathbb E[\phi^2(\tau\xi)]",
        "sq2": r"\mathbb E[(\phi^2)''(\tau\xi)]",
        "dsq": r"\mathbb E[\phi'(\tau\xi)^2]",
    }
    closed = [(labels[k], ms[k].closed_form) for k in labels if ms[k].closed_form is not None]
    open_ = [labels[k] for k in labels if ms[k].closed_form is None]
    if closed:
        out.append(
            "Gaussian moments in closed form (of $\\phi$ before centering):\n\\begin{align*}\n"
        )
        tau = {TAU: r"\tau", X: "x"}
        out.append(
            " \\\\\n".join(
                rf"  {lhs} &= {sp.latex(sp.simplify(e) if sp.count_ops(e) < 80 else e, symbol_names=tau)}"
                for lhs, e in closed
            )
        )
        out.append("\n\\end{align*}\n")
    if open_:
        out.append(
            "No closed form was found for $"
            + "$, $".join(open_)
            + "$; they are evaluated by quadrature.\n\n"
        )
    out.append(r"\section{Numerical values}" + "\n")
    out.append(
        rf"For $\sigma_a^2 = {_tex_number(params['sigma_a2'])}$,"
        rf" $\sigma_b^2 = {_tex_number(params['sigma_b2'])}$,"
        rf" $\tau_0 = {_tex_number(params['tau0'])}$; every digit shown agrees between two"
        rf" evaluations ({_tex_text(params['dps'])} digits requested)."
        "\n\n\\begin{center}\\begin{tabular}{ll}\n"
    )
    symbols = {
        "tau_star": r"\tau_*", "gamma_star": r"\gamma_*", "alpha_1": r"\alpha_{*,1}",
        "alpha_2": r"\alpha_{*,2}", "alpha_3": r"\alpha_{*,3}", "alpha_4": r"\alpha_{*,4}",
        "beta_1": r"\beta_{*,1}", "beta_2": r"\beta_{*,2}", "beta_3": r"\beta_{*,3}",
        "kappa_star": r"\kappa_*", "center": r"c",
    }  # fmt: skip
    for key, sym in symbols.items():
        if key in values:
            out.append(rf"${sym}$ & ${_tex_number(values[key])}$ \\" + "\n")
    out.append("\\end{tabular}\\end{center}\n\n\\end{document}\n")
    return "".join(out)

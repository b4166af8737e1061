r"""LaTeX of the derived formulas in the paper's notation; user text and numbers made safe for it.

Every equation comes from :mod:`deqrmt.symbolic._recursion` (nothing is typed in): the derived
SymPy expressions print their symbols as the paper writes them (:mod:`._symbols`), with the
moments at each formula's own scale (E[φ^{(k)}(τ_*ξ)] for the DEQ).  No user text reaches LaTeX
unescaped (:func:`tex_text`, :func:`tex_number`, :func:`expression_latex`); each value shown says
what holds for it (:func:`value_status`: ``proven (Arb)`` or ``two evaluations agree``).  The
whole derivation document for one activation is :mod:`._document`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import sympy as sp
from sympy.printing.latex import LatexPrinter

from .._errors import InvalidArgument
from .._text import escape_controls, to_ascii
from ._recursion import derive_deq, derive_layer
from ._symbols import SIGMA_A2, SIGMA_B2, TAU0, UNKNOWNS, moment_latex, paper_latex

__all__ = [
    "natural_sign", "Equation", "TARGETS", "equations", "latex_block", "text_block", "PROVEN", "AGREED", "value_status", "ShownValue", "SYMBOLS",
    "MOMENT_SYMBOLS", "tex_text", "tex_number", "expression_latex",
]  # fmt: skip

TARGETS = ("deq-ck", "deq-ntk", "explicit-ck", "explicit-ntk", "sphere")

#: what holds for a value shown: every digit proven by an Arb ball …
PROVEN = "proven (Arb)"
#: … or only the digits on which evaluations at two precisions agree
AGREED = "two evaluations agree"


def value_status(certified: bool) -> str:
    """:data:`PROVEN` or :data:`AGREED`: what holds for one value shown."""
    return PROVEN if certified else AGREED


class ShownValue(Protocol):
    """A value as results hold it (a :class:`~deqrmt.numeric.Verified`): its verified text and
    whether an Arb ball proves it."""

    @property
    def text(self) -> str: ...

    @property
    def certified(self) -> bool: ...


#: a DEQ result's keys as people (Unicode) and LaTeX write them (ICML 2024, Theorems 1–2)
SYMBOLS: dict[str, tuple[str, str]] = {
    "tau_star": ("τ*", r"\tau_*"), "gamma_star": ("γ*", r"\gamma_*"),
    "alpha_1": ("α*₁", r"\alpha_{*,1}"), "alpha_2": ("α*₂", r"\alpha_{*,2}"),
    "alpha_3": ("α*₃", r"\alpha_{*,3}"), "alpha_4": ("α*₄", r"\alpha_{*,4}"),
    "beta_1": ("β*₁", r"\beta_{*,1}"), "beta_2": ("β*₂", r"\beta_{*,2}"),
    "beta_3": ("β*₃", r"\beta_{*,3}"), "kappa_star": ("κ*", r"\kappa_*"),
    "center": ("c", "c"),
}  # fmt: skip
#: a DEQ result's moments (of the centered φ_c at τ*), keyed as in its ``moments``
MOMENT_SYMBOLS: dict[str, tuple[str, str]] = {
    "E_phi_prime": ("E[φ_c'(τ*ξ)]", r"\mathbb{E}[\phi_c'(\tau_*\xi)]"),
    "E_phi_second": ("E[φ_c''(τ*ξ)]", r"\mathbb{E}[\phi_c''(\tau_*\xi)]"),
    "E_phi_prime_sq": ("E[φ_c'(τ*ξ)²]", r"\mathbb{E}[\phi_c'(\tau_*\xi)^2]"),
    "E_phi_sq_second": ("E[(φ_c²)''(τ*ξ)]", r"\mathbb{E}[(\phi_c^2)''(\tau_*\xi)]"),
}


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
        # the constant part: a number, or one in π (relu's 2π − σ_a² − …) that has a sign
        if (
            isinstance(base, sp.Add)
            and base.free_symbols
            and base.as_independent(*base.free_symbols)[0].is_negative
        ):
            base = sp.expand(-base)
            if exp.is_integer and exp.is_odd:
                sign = -sign
        factors.append(sp.Pow(base, exp))
    if len(factors) == 1 and factors[0] == 1:
        return sign * num
    return sp.Mul(sign * num, sp.Pow(sp.Mul(*factors), -1))


def _own_names(symbols: Sequence[sp.Symbol]) -> dict[sp.Symbol, str]:
    """The paper's LaTeX of ``symbols`` (:func:`text_block` lists what each one means)."""
    return {s: tex for s in symbols if (tex := paper_latex(s.name)) is not None}


def _deq_names() -> dict[sp.Symbol, str]:
    """The DEQ's symbols, its moments at τ*."""
    return {
        **_own_names((SIGMA_A2, SIGMA_B2, TAU0, *UNKNOWNS.values())),
        **moment_latex(r"\tau_*"),
    }


def _layer_names() -> dict[sp.Symbol, str]:
    """An explicit layer's symbols: the moments of σ_l at τ̃_{l−1}, the previous layer's values."""
    prev = tuple(derive_layer().prev.values())
    return {**_own_names(prev), **moment_latex(r"\tilde\tau_{l-1}", r"\sigma_l")}


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
        **_own_names((SIGMA_A2, SIGMA_B2)), sph.S: "s", sph.G0: "g_0", sph.DIM: "d",
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


# --- user text and numbers ------------------------------------------------------------------

_TEX_SPECIAL = {
    "\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "#": r"\#",
    "^": r"\textasciicircum{}", "_": r"\_", "~": r"\textasciitilde{}", "%": r"\%",
    # not TeX specials, but a notebook may insert a LaTeX repr as HTML before typesetting it
    "<": r"\textless{}", ">": r"\textgreater{}",
}  # fmt: skip
_TEX_PLAIN_NUMBER = re.compile(r"-?\d+(?:\.\d*)?(?:/\d+)?")
_TEX_SCIENTIFIC = re.compile(r"(-?\d+(?:\.\d*)?)e([+-]?\d+)")
#: names SymPy may print as they are (anything else is set as escaped text)
_PLAIN_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


def tex_text(text: object) -> str:
    r"""``text`` for LaTeX text mode: never acts as LaTeX, whatever it holds.

    Control and bidi characters become visible escapes (``\x1b``), other non-ASCII characters
    their ASCII names (``σ`` → ``sigma``), and TeX's specials are escaped (``\input``, ``$``,
    ``%`` …).
    """
    s = to_ascii(escape_controls(str(text), keep=""))
    return "".join(_TEX_SPECIAL.get(c, c) for c in s if " " <= c <= "~")


def tex_number(text: object) -> str:
    r"""A number for math mode: ``1/5``, ``-0.25``, ``1.5e-7`` → ``1.5\times 10^{-7}``; any
    other text is set as escaped ``\text{…}``."""
    s = str(text).strip()
    if _TEX_PLAIN_NUMBER.fullmatch(s):
        return s
    m = _TEX_SCIENTIFIC.fullmatch(s)
    if m:
        return rf"{m.group(1)}\times 10^{{{int(m.group(2))}}}"
    return rf"\text{{{tex_text(s)}}}"


_tex_text, _tex_number = tex_text, tex_number  # the names earlier versions used


class _SafeLatexPrinter(LatexPrinter):
    """SymPy's LaTeX printer, except that a name that is not a plain ASCII identifier (an
    undefined function or a symbol of a hand-built expression: user text) is escaped text."""

    def _hprint_Function(self, func: str) -> str:
        if _PLAIN_NAME.fullmatch(func):
            return str(super()._hprint_Function(func))
        return rf"\text{{{tex_text(func)}}}"

    def _print_Symbol(self, expr: sp.Symbol, style: str = "plain") -> str:
        if expr in self._settings["symbol_names"] or _PLAIN_NAME.fullmatch(expr.name):
            return str(super()._print_Symbol(expr, style))
        return rf"\text{{{tex_text(expr.name)}}}"


def expression_latex(expr: sp.Basic, **settings: Any) -> str:
    """``sympy.latex(expr, **settings)`` with every name that is not a plain identifier escaped:
    safe for an expression that holds user text (a hand-built activation's function names)."""
    return str(_SafeLatexPrinter(settings).doprint(expr))

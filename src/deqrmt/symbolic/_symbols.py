r"""The symbols of the derived formulas, each printing in LaTeX as the paper writes it.

``sympy.latex(derive_deq().alpha[0])`` gives ``\sigma_a^2``, ``\mathbb{E}[\phi'(\tau\xi)]`` …,
never ``\sigma_{a2}`` or ``sq_{2}``, and compiles under pdflatex with amsmath and amssymb.  The
symbols keep their names (``sigma_a2``, ``mu1``, ``sq2`` …): ``str()``, generated code (whose
printer names every symbol itself) and the numbers are those of plain SymPy symbols.

Every symbol a derivation returns is defined here, once; :mod:`._recursion`,
:mod:`._specialize` and :mod:`._latex` import them.  The moment symbols are at a generic scale τ
(the same symbol serves the DEQ at τ*, the variance map at √q and a layer at τ̃_{l−1}); pass
``symbol_names=moment_latex(r"\tau_*")`` to ``sympy.latex`` to print them at a given scale.
"""

from __future__ import annotations

from typing import Any

import sympy as sp

__all__ = [
    "PaperSymbol",
    "paper_latex",
    "SIGMA_A2",
    "SIGMA_B2",
    "TAU0",
    "TAU_STAR",
    "MOMENT_NAMES",
    "moment_symbol",
    "moment_latex",
    "moment_at_tau_star",
    "UNKNOWNS",
    "PREVIOUS",
]

#: name → LaTeX of every :class:`PaperSymbol` (package text only: never user or cache text)
_LATEX: dict[str, str] = {}


def _register(name: str, tex: str) -> None:
    if _LATEX.setdefault(name, tex) != tex:
        raise ValueError(f"symbol {name!r} is already defined with LaTeX {_LATEX[name]!r}")


class PaperSymbol(sp.Symbol):
    r"""A SymPy ``Symbol`` whose LaTeX is the paper's (``sigma_a2`` → ``\sigma_a^2``).

    Only the names defined in this module exist (anything else is a ValueError), so the LaTeX
    is always package text, also for an expression rebuilt from the disk cache.
    ``sympy.latex(..., symbol_names={...})`` still overrides it.

    The class is named ``Symbol`` (below) on purpose: SymPy orders the arguments of ``Add`` and
    ``Mul`` by class name (``Basic.compare``), so only that name keeps every derived tree, and
    with it the text, the generated code and the order of its floating-point operations,
    exactly as with plain symbols.  ``srepr`` writes ``PaperSymbol('sigma_a2', positive=True)``.
    """

    __slots__ = ()

    def __new__(cls, name: str, **assumptions: Any) -> PaperSymbol:
        if not isinstance(name, str) or name not in _LATEX:
            raise ValueError(f"{name!r} is not a symbol defined in deqrmt.symbolic._symbols")
        return super().__new__(cls, name, **assumptions)  # type: ignore[no-any-return]

    def _latex(self, printer: Any) -> str:
        given = printer._settings.get("symbol_names") or {}
        return str(given[self]) if self in given else _LATEX[self.name]

    def _sympyrepr(self, printer: Any) -> str:
        text: str = printer._print_Symbol(self)
        return "PaperSymbol" + text[len(type(self).__name__) :]


PaperSymbol.__name__ = "Symbol"  # see the docstring: SymPy's canonical order goes by this name


def paper_latex(name: str) -> str | None:
    """The LaTeX of the :class:`PaperSymbol` called ``name`` (None: there is none)."""
    return _LATEX.get(name)


def _define(name: str, tex: str, **assumptions: Any) -> PaperSymbol:
    _register(name, tex)
    return PaperSymbol(name, **assumptions)


#: σ_a², σ_b², τ0: the DEQ's weight variances and the data's scale (ICML 2024, Theorem 1)
SIGMA_A2 = _define("sigma_a2", r"\sigma_a^2", positive=True)
SIGMA_B2 = _define("sigma_b2", r"\sigma_b^2", positive=True)
TAU0 = _define("tau_0", r"\tau_0", positive=True)
#: τ*, the DEQ's fixed point, as a symbol (its value comes from the numeric solver)
TAU_STAR = _define("tau_*", r"\tau_*", positive=True)

#: moment name (of :func:`deqrmt.symbolic.moment_set`) → (symbol name, assumptions, LaTeX with
#: ``{f}`` for φ and ``{at}`` for the scale)
MOMENT_NAMES: dict[str, tuple[str, dict[str, bool], str]] = {
    "phi": ("mu0", {"real": True}, r"\mathbb{{E}}[{f}({at}\xi)]"),
    "d1": ("mu1", {"real": True}, r"\mathbb{{E}}[{f}'({at}\xi)]"),
    "d2": ("mu2", {"real": True}, r"\mathbb{{E}}[{f}''({at}\xi)]"),
    "d3": ("mu3", {"real": True}, r"\mathbb{{E}}[{f}'''({at}\xi)]"),
    "d4": ("mu4", {"real": True}, r"\mathbb{{E}}[{f}^{{(4)}}({at}\xi)]"),
    "d5": ("mu5", {"real": True}, r"\mathbb{{E}}[{f}^{{(5)}}({at}\xi)]"),
    "sq": ("sq", {"positive": True}, r"\mathbb{{E}}[{f}^2({at}\xi)]"),
    "sq2": ("sq2", {"real": True}, r"\mathbb{{E}}[({f}^2)''({at}\xi)]"),
    "dsq": ("dsq", {"nonnegative": True}, r"\mathbb{{E}}[{f}'({at}\xi)^2]"),
}
for _name, (_sym, _, _tex) in MOMENT_NAMES.items():
    _register(_sym, _tex.format(f=r"\phi", at=r"\tau"))


def moment_symbol(name: str) -> PaperSymbol:
    """The symbol of moment ``name`` (``"d1"`` → ``mu1``, E[φ'(τξ)]) in the derived formulas."""
    sym, assumptions, _ = MOMENT_NAMES[name]
    return PaperSymbol(sym, **assumptions)


def moment_latex(at: str, fn: str = r"\phi") -> dict[sp.Symbol, str]:
    r"""``symbol_names`` for ``sympy.latex`` that print the moments at scale ``at`` (LaTeX, e.g.
    ``r"\tau_*"``) of the function ``fn`` (e.g. ``r"\sigma_l"``)."""
    return {moment_symbol(n): tex.format(f=fn, at=at) for n, (_, _, tex) in MOMENT_NAMES.items()}


#: a moment of φ at τ* that has no closed form, as :func:`coefficient_expression` leaves it:
#: named as it reads (``E[φ'(τ*ξ)]``, so ``str()`` shows it), printed as LaTeX
_AT_TAU_STAR: dict[str, tuple[str, str]] = {
    "phi": ("E[φ(τ*ξ)]", "phi"),
    "d1": ("E[φ'(τ*ξ)]", "d1"),
    "d2": ("E[φ''(τ*ξ)]", "d2"),
    "d3": ("E[φ'''(τ*ξ)]", "d3"),
    "d4": ("E[φ''''(τ*ξ)]", "d4"),
    "sq": ("E[φ(τ*ξ)²]", "sq"),
    "sq2": ("E[(φ²)''(τ*ξ)]", "sq2"),
    "dsq": ("E[φ'(τ*ξ)²]", "dsq"),
}
for _label, _key in _AT_TAU_STAR.values():
    _register(_label, MOMENT_NAMES[_key][2].format(f=r"\phi", at=r"\tau_*"))


def moment_at_tau_star(name: str) -> PaperSymbol:
    """Moment ``name`` of φ at τ* as an opaque real symbol (``E[φ'(τ*ξ)]``)."""
    return PaperSymbol(_AT_TAU_STAR[name][0], real=True)


#: the unknowns of the DEQ's fixed-point equations: α*₁..₄, β*₁..₃ (in ``structured`` formulas)
UNKNOWNS: dict[str, PaperSymbol] = {
    **{f"alpha_{k}": _define(f"alpha_{k}", rf"\alpha_{{*,{k}}}") for k in range(1, 5)},
    **{f"beta_{k}": _define(f"beta_{k}", rf"\beta_{{*,{k}}}") for k in range(1, 4)},
}

#: the implicit bias's β (any sign assumption) and its initial value β(0) (:mod:`._bias`)
_register("β", r"\beta")
_register("β0", r"\beta_0")

#: an explicit layer's inputs: the previous layer's τ̃, α̃₁..₄, β̃₁..₃, κ̃ (ICML 2024, Theorem 3)
PREVIOUS: dict[str, PaperSymbol] = {}
for _key in ("tau", *UNKNOWNS, "kappa"):
    if _key in ("tau", "kappa"):
        _tex = rf"\tilde\{_key}_{{l-1}}"
    else:
        _base, _k = _key.split("_")
        _tex = rf"\tilde\{_base}_{{l-1,{_k}}}"
    PREVIOUS[_key] = _define(f"{_key}_prev", _tex, real=True)

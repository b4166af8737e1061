"""Parametric activation families for designing equivalent explicit networks.

A family is φ(x; θ) with named exact-symbol parameters θ and a piece structure whose kinks may
depend on θ (hard tanh: ±c).  Its Gaussian moments are derived once as SymPy expressions in
(τ, θ) where the closed-form engine applies (piecewise exp-polynomials: hard tanh, leaky ReLU,
polynomials), so the matching equations can be solved at high precision without re-deriving
anything per trial point; other families fall back to quadrature per point.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Mapping, Sequence

import sympy as sp

from .._errors import BudgetExceeded, InvalidArgument, ParseError, UnknownActivation
from .._untrusted import shown
from ._activation import Activation, Piece, X, exact, library_activation
from ._expectation import MOMENTS, TAU, XI, _closed_exp_poly

__all__ = ["Family", "FamilyEntry", "get_family", "family_catalogue", "FAMILIES", "FAMILY_MOMENTS"]

#: the moments the layer recursion needs
FAMILY_MOMENTS = ("phi", "d1", "d2", "sq", "sq2", "dsq")


@dataclasses.dataclass(frozen=True)
class Family:
    """φ(x; θ) given by smooth pieces; ``constraints`` are strict inequalities on θ."""

    name: str
    params: tuple[sp.Symbol, ...]
    pieces: tuple[Piece, ...]
    constraints: tuple[sp.Expr, ...] = ()  # each must be > 0
    library: str | None = None  # library name taking the parameters in order, if any

    @property
    def formula(self) -> sp.Expr:
        """φ(x; θ) as one SymPy expression (a ``Piecewise`` when there are kinks)."""
        if len(self.pieces) == 1:
            return self.pieces[0].expr
        return sp.Piecewise(
            *[(p.expr, p.hi > X) for p in self.pieces[:-1]], (self.pieces[-1].expr, True)
        )

    @property
    def kinks(self) -> tuple[sp.Expr, ...]:
        return tuple(p.hi for p in self.pieces[:-1])

    def instantiate(self, values: Sequence[sp.Expr]) -> Activation:
        """The exact activation for exact parameter values (Rationals)."""
        vals = [exact(v) for v in values]
        if self.library is not None:
            return library_activation(self.library, vals)
        sub = dict(zip(self.params, vals, strict=True))
        expr = sp.Piecewise(
            *[(p.expr.subs(sub), p.hi.subs(sub) > X) for p in self.pieces[:-1]],
            (self.pieces[-1].expr.subs(sub), True),
        )
        if len(self.pieces) == 1:
            expr = self.pieces[0].expr.subs(sub)
        return Activation(f"{self.name}({', '.join(map(str, vals))})", expr)

    @functools.cached_property
    def closed_moments(self) -> Mapping[str, sp.Expr] | None:
        """Closed forms of the moments in (τ, θ), or None when some piece has none."""
        out = {}
        for name in FAMILY_MOMENTS:
            _, kind, k = MOMENTS[name]
            weight = sp.expand(sp.hermite_prob(k, XI)) if k else sp.S.One
            if kind == "phi":
                pieces = self.pieces
            elif kind == "sq":
                pieces = tuple(Piece(p.lo, p.hi, sp.expand(p.expr**2)) for p in self.pieces)
            else:
                pieces = tuple(
                    Piece(p.lo, p.hi, sp.expand(sp.diff(p.expr, X) ** 2)) for p in self.pieces
                )
            val = _closed_exp_poly(weight, pieces)
            if val is None:
                return None
            out[name] = val * TAU ** (-k)
        return out


def _hard_tanh() -> Family:
    a, c = sp.symbols("a c", real=True)
    pieces = (
        Piece(sp.S.NegativeInfinity, -c, -a * c),
        Piece(-c, c, a * X),
        Piece(c, sp.S.Infinity, a * c),
    )
    return Family("hard_tanh", (a, c), pieces, constraints=(c,), library="hard_tanh")


def _leaky_relu() -> Family:
    """max(a x, b x) for a ≥ b: slope a right of 0 and b left of it (centering is automatic)."""
    a, b = sp.symbols("a b", real=True)
    pieces = (
        Piece(sp.S.NegativeInfinity, sp.S.Zero, b * X),
        Piece(sp.S.Zero, sp.S.Infinity, a * X),
    )
    return Family("leaky_relu", (a, b), pieces, constraints=(a - b,))


def _polynomial(degree: int) -> Family:
    # the constant term is irrelevant (each layer is centered), so it is not a parameter
    cs = sp.symbols(f"c1:{degree + 1}", real=True)
    expr = sp.Add(*[c * X ** (k + 1) for k, c in enumerate(cs)])
    return Family(
        f"polynomial{degree}", tuple(cs), (Piece(sp.S.NegativeInfinity, sp.S.Infinity, expr),)
    )


FAMILIES = ("hard_tanh", "leaky_relu", "polynomial2", "polynomial3")


#: parameters one layer of a family may have (polynomial8 has 8); each is an unknown of the
#: design's root search in every layer, and a layer's symmetry test tries 2^k sign flips
MAX_FAMILY_PARAMETERS = 8
#: characters of a family's text (the parser's own limit on expressions is lower)
MAX_FAMILY_LENGTH = 400
MAX_POLYNOMIAL_DEGREE = 8
_POLYNOMIAL = re.compile(r"polynomial([0-9]+)")


def get_family(spec: str) -> Family:
    """A named family (``hard_tanh``, ``leaky_relu``, ``polynomialD``) or an expression in x
    whose other names are parameters, e.g. ``"a*tanh(b*x)"`` (smooth, no kinks).

    ``spec`` is untrusted text: a non-string, an over-long text, a degree written with other
    than ASCII digits (``polynomial²``), a family without ``x`` or with more than
    :data:`MAX_FAMILY_PARAMETERS` parameters is refused with a named error before any work.
    """
    if not isinstance(spec, str):
        raise InvalidArgument(
            f"family {shown(spec)} has type {type(spec).__name__}, not text; give a library family "
            f"({', '.join(FAMILIES)}) or an expression such as 'a*tanh(b*x)'."
        )
    if len(spec) > MAX_FAMILY_LENGTH:
        raise BudgetExceeded(
            f"family {shown(spec)} is {len(spec)} characters long (at most {MAX_FAMILY_LENGTH}); "
            "write a shorter expression."
        )
    spec = spec.strip()
    if spec == "hard_tanh":
        return _hard_tanh()
    if spec in ("leaky_relu", "l_relu", "lrelu"):
        return _leaky_relu()
    rest = spec[len("polynomial") :] if spec.startswith("polynomial") else ""
    if rest[:1].isnumeric():  # 'polynomial3'; '²' and '②' are numeric too, but not degrees
        degree = _POLYNOMIAL.fullmatch(spec)
        if degree is None or len(degree.group(1)) > 3:
            raise InvalidArgument(
                f"family {shown(spec)}: a polynomial family is 'polynomial' and its degree in "
                f"ASCII digits, 1 to {MAX_POLYNOMIAL_DEGREE} (e.g. polynomial3)."
            )
        if not 1 <= int(degree.group(1)) <= MAX_POLYNOMIAL_DEGREE:
            raise InvalidArgument(
                f"polynomial degree must be 1..{MAX_POLYNOMIAL_DEGREE}, got {degree.group(1)}."
            )
        return _polynomial(int(degree.group(1)))
    from ._parser import parse_expression_with_parameters

    expr, params = parse_expression_with_parameters(spec)
    if not expr.has(X):  # `hardtanh`: one name, read as a parameter; the user meant a family
        from ._parser import _suggest

        hint = _suggest(spec, [*FAMILIES, "polynomialD"]) if spec.isidentifier() else ""
        raise UnknownActivation(
            f"unknown family {spec!r}"
            + (
                hint
                or f"; families: {', '.join(FAMILIES[:2])}, polynomialD (D = 1..8; deqrmt "
                "families), or an expression in x whose other names are parameters, e.g. "
                "'a*tanh(b*x)'."
            )
        )
    if not params:
        raise ParseError(f"family {spec!r} has no parameters; name them, e.g. 'a*tanh(b*x)'.")
    if len(params) > MAX_FAMILY_PARAMETERS:
        raise BudgetExceeded(
            f"family {spec!r} has {len(params)} parameters; at most {MAX_FAMILY_PARAMETERS} per "
            "layer are searched (each is an unknown of the root search in every layer)."
        )
    probe = Activation("probe", expr.subs({p: sp.Rational(1, 3) + i for i, p in enumerate(params)}))
    if probe.kinks:
        raise InvalidArgument(
            f"family {spec!r} has kinks; only the built-in families hard_tanh and leaky_relu may have kinks."
        )
    return Family(spec, params, (Piece(sp.S.NegativeInfinity, sp.S.Infinity, expr),))


@dataclasses.dataclass(frozen=True)
class FamilyEntry:
    """One library family for ``deqrmt families``: formula, parameters and what they mean."""

    name: str
    formula: sp.Expr
    params: tuple[tuple[str, str], ...]  # (name, meaning)
    constraints: tuple[str, ...]  # each "expr > 0"
    note: str

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "formula": str(self.formula),
            "latex": sp.latex(self.formula),
            "parameters": [{"name": n, "meaning": m} for n, m in self.params],
            "constraints": list(self.constraints),
            "note": self.note,
        }


_MEANINGS: dict[str, tuple[tuple[tuple[str, str], ...], str]] = {
    "hard_tanh": (
        (("a", "slope in the linear part (any sign)"), ("c", "half-width of the linear part")),
        "a·x clipped at ±a·c; a and -a give the same kernels (φ → -φ), so a design reports a > 0.",
    ),
    "leaky_relu": (
        (("a", "slope for x > 0"), ("b", "slope for x < 0")),
        "max(a·x, b·x) for a > b; positively homogeneous, so a deeper ENN fixes each hidden "
        "layer's scale, and the mirror (a, b) → (-b, -a) gives the same kernels.",
    ),
}


def _display_hard_tanh() -> sp.Expr:
    a, c = sp.symbols("a c", real=True)
    return a * sp.Max(-c, sp.Min(c, X))


def _display_leaky_relu() -> sp.Expr:
    a, b = sp.symbols("a b", real=True)
    return sp.Max(a * X, b * X)


#: readable one-line formulas (the pieces give a Piecewise with canonicalised conditions)
_DISPLAY = {"hard_tanh": _display_hard_tanh, "leaky_relu": _display_leaky_relu}


def family_catalogue() -> tuple[FamilyEntry, ...]:
    """Each library family (:data:`FAMILIES`) with its formula, parameters and constraints.

    Any expression in ``x`` whose other names are parameters, e.g. ``"a*tanh(b*x)"``, is a
    family too (smooth, no kinks); it is not listed.

    Example:
      >>> [e.name for e in family_catalogue()]
      ['hard_tanh', 'leaky_relu', 'polynomial2', 'polynomial3']
    """
    out = []
    for name in FAMILIES:
        fam = get_family(name)
        formula = fam.formula
        if name in _MEANINGS:
            params, note = _MEANINGS[name]
            formula = _DISPLAY[name]()
        else:  # polynomialD
            params = tuple((str(p), f"coefficient of x^{k + 1}") for k, p in enumerate(fam.params))
            note = (
                "polynomial without constant term (each layer is centered, so a constant is "
                "irrelevant); any degree 1..8 is accepted as polynomialD."
            )
        assert [n for n, _ in params] == [str(p) for p in fam.params]
        constraints = tuple(f"{c} > 0" for c in fam.constraints)
        out.append(FamilyEntry(name, formula, params, constraints, note))
    return tuple(out)

r"""Gaussian expectations E[w(ξ) g(τξ)], ξ ~ N(0, 1), with weak derivatives.

Derivatives of φ are never formed across a kink.  Stein's identity (Gaussian integration by
parts, k times) gives

    E[φ^{(k)}(τξ)] = τ^{-k} E[He_k(ξ) φ(τξ)],                                        (Stein)

with He_k the probabilists' Hermite polynomial; for ReLU, φ'' = δ and the right side gives
E[φ''(τξ)] = 1/(τ√(2π)).  The same holds for (φ²)''.  Only E[φ'(τξ)²] needs φ' itself,
which is piecewise smooth for a continuous φ.

Closed forms: each smooth piece that is a sum of x^k·exp(a x² + b x) terms (polynomials,
ELU, sin/cos after rewriting in exponentials, erf', …) is integrated exactly by completing the
square and the recursion ∫ y^j φ(y) dy = −y^{j−1}φ(y) + (j−1)∫ y^{j−2} φ(y) dy.  Other pieces
get one bounded SymPy ``integrate`` attempt (erf-type integrands only) and otherwise stay an
unevaluated :class:`Expectation` that ``deqrmt.numeric`` evaluates by quadrature.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping

import sympy as sp

from ._activation import Activation, Piece, X
from ._cache import cached
from ._timeout import bounded

__all__ = ["TAU", "XI", "Expectation", "MomentSet", "moment_set", "gaussian_expectation"]

TAU = sp.Symbol("tau", positive=True)
XI = sp.Symbol("xi", real=True)
_Y = sp.Symbol("y", real=True)

#: Effort (seconds) one SymPy ``integrate`` attempt may take before we fall back to quadrature.
SYMPY_EFFORT_S = 0.4


@dataclasses.dataclass(frozen=True)
class Expectation:
    r"""``scale · E[weight(ξ) · g(τξ)]`` with ``g`` given by smooth pieces in ``x``.

    Attributes:
      label: what it is, e.g. ``E[φ''(τξ)]``.
      weight: polynomial in :data:`XI` (a Hermite polynomial for a Stein moment).
      pieces: ``g`` on the intervals between its kinks.
      scale: a factor in :data:`TAU` (``τ^{-k}`` for a Stein moment).
      closed_form: exact value as an expression in :data:`TAU`, or None (quadrature).
      zero: True when the value is exactly 0 by symmetry.
    """

    label: str
    weight: sp.Expr
    pieces: tuple[Piece, ...]
    scale: sp.Expr
    closed_form: sp.Expr | None
    zero: bool = False

    @property
    def is_closed(self) -> bool:
        return self.zero or self.closed_form is not None


# ---------------------------------------------------------------------------
# Exact integration of exp-polynomial pieces against the Gaussian density.
# ---------------------------------------------------------------------------


def _pdf(y: sp.Expr) -> sp.Expr:
    return sp.exp(-(y**2) / 2) / sp.sqrt(2 * sp.pi)


def _cdf(y: sp.Expr) -> sp.Expr:
    """Φ(y) as erfc(−y/√2)/2: accurate far in the lower tail, where 1 + erf would cancel."""
    if y is sp.S.Infinity:
        return sp.S.One
    if y is sp.S.NegativeInfinity:
        return sp.S.Zero
    return sp.erfc(-y / sp.sqrt(2)) / 2


def _mass(a: sp.Expr, b: sp.Expr) -> sp.Expr:
    """Φ(b) − Φ(a) without cancellation when one end is infinite (an upper tail is erfc)."""
    if b is sp.S.Infinity:
        return sp.S.One if a is sp.S.NegativeInfinity else sp.erfc(a / sp.sqrt(2)) / 2
    return _cdf(b) - _cdf(a)


def _tail(y: sp.Expr, j: int) -> sp.Expr:
    """y^{j} φ(y), which vanishes at ±∞."""
    if y.is_infinite:
        return sp.S.Zero
    return y**j * _pdf(y)


def _gauss_moment(j: int, a: sp.Expr, b: sp.Expr) -> sp.Expr:
    """∫_a^b y^j φ(y) dy (φ the standard normal density), exact; iterative in j."""
    m = _mass(a, b) if j % 2 == 0 else _tail(a, 0) - _tail(b, 0)
    for i in range(2 if j % 2 == 0 else 3, j + 1, 2):
        m = _tail(a, i - 1) - _tail(b, i - 1) + (i - 1) * m
    return m


def _exp_poly_terms(expr: sp.Expr) -> list[tuple[sp.Expr, int, sp.Expr, sp.Expr]] | None:
    """Write ``expr`` as Σ c·x^k·exp(a x² + b x); None if it is not of that form."""
    e = expr
    if e.has(sp.sin, sp.cos, sp.sinh, sp.cosh):
        e = e.rewrite(sp.exp)
    e = sp.expand(sp.powsimp(sp.expand(e)))
    terms = []
    for term in sp.Add.make_args(e):
        coeff, k, a, b = sp.S.One, 0, sp.S.Zero, sp.S.Zero
        for f in sp.Mul.make_args(sp.powsimp(term)):
            if not f.has(X):
                coeff *= f
            elif f == X:
                k += 1
            elif f.is_Pow and f.base == X and f.exp.is_Integer and f.exp > 0:
                k += int(f.exp)
            elif isinstance(f, sp.exp):
                arg = sp.expand(f.args[0])
                if not arg.is_polynomial(X):
                    return None
                poly = sp.Poly(arg, X)
                if poly.degree() > 2:
                    return None
                cs = poly.all_coeffs()[::-1] + [sp.S.Zero] * 3
                coeff *= sp.exp(cs[0])
                b += cs[1]
                a += cs[2]
            else:
                return None
        terms.append((coeff, k, a, b))
    return terms


def _integrate_term(
    c: sp.Expr, k: int, a: sp.Expr, b: sp.Expr, weight: sp.Poly, lo: sp.Expr, hi: sp.Expr
) -> sp.Expr | None:
    """∫_{lo}^{hi} weight(ξ)·c·(τξ)^k·exp(a τ²ξ² + b τξ) φ(ξ) dξ by completing the square."""
    if a.is_positive:  # would need 1 − 2aτ² > 0, a condition on τ; leave to quadrature
        return None
    s2 = 1 / (1 - 2 * a * TAU**2)
    s = sp.sqrt(s2)
    m = b * TAU * s2
    lo_y = lo if lo.is_infinite else (lo - m) / s
    hi_y = hi if hi.is_infinite else (hi - m) / s
    total = sp.S.Zero
    for (deg,), w in weight.terms():
        j = deg + k
        for i in range(j + 1):
            total += w * sp.binomial(j, i) * m ** (j - i) * s**i * _gauss_moment(i, lo_y, hi_y)
    return c * TAU**k * s * sp.exp(m**2 / (2 * s2)) * total


def _closed_exp_poly(weight: sp.Expr, pieces: tuple[Piece, ...]) -> sp.Expr | None:
    wpoly = sp.Poly(weight, XI)
    total = sp.S.Zero
    for p in pieces:
        terms = _exp_poly_terms(p.expr)
        if terms is None:
            return None
        lo = p.lo / TAU if not p.lo.is_infinite else p.lo
        hi = p.hi / TAU if not p.hi.is_infinite else p.hi
        for c, k, a, b in terms:
            if b.has(sp.I) and not (lo.is_infinite and hi.is_infinite):
                return None  # erf of a complex argument: correct but opaque; use quadrature
            val = _integrate_term(c, k, a, b, wpoly, lo, hi)
            if val is None:
                return None
            total += val
    if total.has(sp.I):
        total = sp.expand_complex(sp.expand(total))
        if total.has(sp.I):
            return None
    return total


def _closed_sympy(weight: sp.Expr, pieces: tuple[Piece, ...]) -> sp.Expr | None:
    """One bounded SymPy attempt, only for integrands SymPy has a chance with (erf-type)."""
    allowed = (sp.erf, sp.erfc, sp.exp)
    for p in pieces:
        funcs = {type(f) for f in p.expr.atoms(sp.Function)}
        if not funcs or not all(issubclass(f, allowed) for f in funcs):
            return None
        if not any(issubclass(f, (sp.erf, sp.erfc)) for f in funcs):
            return None  # exp-only integrands the exact engine could not do: SymPy won't either
        if any(
            b.has(X) and e.is_negative for b, e in (pw.as_base_exp() for pw in p.expr.atoms(sp.Pow))
        ):
            return None  # x in a denominator (sigmoid-like): no elementary antiderivative

    def attempt() -> sp.Expr:
        total = sp.S.Zero
        for p in pieces:
            integrand = weight * p.expr.subs(X, TAU * XI) * _pdf(XI)
            lo = p.lo / TAU if not p.lo.is_infinite else p.lo
            hi = p.hi / TAU if not p.hi.is_infinite else p.hi
            total += sp.integrate(integrand, (XI, lo, hi), risch=False)
        return total

    result = bounded(attempt, SYMPY_EFFORT_S)
    if result is None or result.has(sp.Integral) or result.has(sp.I) or not result.is_finite:
        return None
    return sp.simplify(result) if sp.count_ops(result) < 60 else result


def gaussian_expectation(
    label: str,
    weight: sp.Expr,
    pieces: tuple[Piece, ...],
    scale: sp.Expr = sp.S.One,
    *,
    zero: bool = False,
    effort: bool = True,
) -> Expectation:
    """Build ``scale·E[weight(ξ) g(τξ)]``, closed form when one is found within bounded effort."""
    if zero:
        return Expectation(label, weight, pieces, scale, sp.S.Zero, True)
    closed = _closed_exp_poly(weight, pieces)
    if closed is None and effort:
        closed = _closed_sympy(weight, pieces)
    if closed is not None:
        closed = scale * closed
    return Expectation(label, weight, pieces, scale, closed)


# ---------------------------------------------------------------------------
# The moments the theorems use.
# ---------------------------------------------------------------------------

#: name → (label, what is integrated, Stein order)
MOMENTS: dict[str, tuple[str, str, int]] = {
    "phi": ("E[φ(τξ)]", "phi", 0),
    "d1": ("E[φ'(τξ)]", "phi", 1),
    "d2": ("E[φ''(τξ)]", "phi", 2),
    "d3": ("E[φ'''(τξ)]", "phi", 3),
    "d4": ("E[φ''''(τξ)]", "phi", 4),
    "sq": ("E[φ(τξ)²]", "sq", 0),
    "sq2": ("E[(φ²)''(τξ)]", "sq", 2),
    "dsq": ("E[φ'(τξ)²]", "dsq", 0),
}


@dataclasses.dataclass(frozen=True)
class MomentSet:
    """The Gaussian moments of one activation as functions of the scale τ."""

    activation: Activation
    moments: Mapping[str, Expectation]

    def __getitem__(self, key: str) -> Expectation:
        return self.moments[key]

    @property
    def closed(self) -> bool:
        return all(m.is_closed for m in self.moments.values())


def _integrand_pieces(act: Activation, kind: str) -> tuple[Piece, ...]:
    if kind == "phi":
        return act.pieces
    if kind == "sq":
        return tuple(Piece(p.lo, p.hi, sp.expand(p.expr**2)) for p in act.pieces)
    return tuple(Piece(p.lo, p.hi, sp.expand(p.expr**2)) for p in act.derivative_pieces)


@functools.lru_cache(maxsize=64)
def moment_set(
    act: Activation, names: tuple[str, ...] = tuple(MOMENTS), effort: bool = True
) -> MomentSet:
    """All moments in ``names`` for ``act`` (cached per activation, in memory and on disk).

    Symmetry: for odd φ the even-order moments E[φ^{(2j)}] vanish; for even φ the odd ones.
    """

    def build() -> dict[str, tuple[sp.Expr | None, bool]]:
        parity = act.parity
        out: dict[str, tuple[sp.Expr | None, bool]] = {}
        for name in names:
            _, kind, k = MOMENTS[name]
            zero = kind == "phi" and ((parity == -1 and k % 2 == 0) or (parity == 1 and k % 2 == 1))
            e = gaussian_expectation(
                name,
                _weight(k),
                _integrand_pieces(act, kind),
                TAU ** (-k),
                zero=zero,
                effort=effort,
            )
            out[name] = (e.closed_form, e.zero)
        return out

    data = cached("moments", f"{sp.srepr(act.expr)}|{names}|{effort}", build, dict)
    moments = {}
    for name in names:
        label, kind, k = MOMENTS[name]
        closed, zero = data[name]
        if kind == "dsq" and not act.is_continuous:
            closed = sp.oo  # φ' has a Dirac mass: E[φ'²] diverges (the evaluator refuses it)
        moments[name] = Expectation(
            label, _weight(k), _integrand_pieces(act, kind), TAU ** (-k), closed, zero
        )
    return MomentSet(act, moments)


def _weight(k: int) -> sp.Expr:
    return sp.expand(sp.hermite_prob(k, XI)) if k else sp.S.One

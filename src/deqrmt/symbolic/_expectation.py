r"""Gaussian expectations E[w(ξ) g(τξ)], ξ ~ N(0, 1), with weak derivatives.

Derivatives of φ are never formed across a kink.  Stein's identity (Gaussian integration by
parts, k times) gives

    E[φ^{(k)}(τξ)] = τ^{-k} E[He_k(ξ) φ(τξ)],                                        (Stein)

with He_k the probabilists' Hermite polynomial; for ReLU, φ'' = δ and the right side gives
E[φ''(τξ)] = 1/(τ√(2π)).  The same holds for (φ²)''.  Only E[φ'(τξ)²] needs φ' itself,
which is piecewise smooth for a continuous φ.

Closed forms: each smooth piece that is a sum of x^k·exp(a x² + b x) terms (polynomials,
ELU, sin/cos after rewriting in exponentials, erf', …) is integrated exactly by completing the
square and the recursion ∫ y^j φ(y) dy = −y^{j−1}φ(y) + (j−1)∫ y^{j−2} φ(y) dy.  On the whole
line such a term may also carry one erf(p x + q) factor (erf, gelu, erfc): Stein's identity
moves the Hermite weight onto the erf, whose derivatives are exp-polynomials again.  Other
pieces get one SymPy ``integrate`` attempt within a fixed number of Python calls
(:data:`~deqrmt.symbolic._effort.SYMPY_INTEGRATE_CALLS`, erf-type integrands only; no clock)
and otherwise stay an unevaluated :class:`Expectation` that ``deqrmt.numeric`` evaluates by
quadrature.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from typing import NamedTuple

import sympy as sp

from .._arguments import boolean, choice, sequence, show
from .._errors import InvalidArgument
from ._activation import Activation, Piece, X
from ._cache import cached
from ._effort import SYMPY_INTEGRATE_CALLS, bounded
from ._serialize import read_srepr

__all__ = ["TAU", "XI", "Expectation", "MomentSet", "moment_set", "gaussian_expectation"]

TAU = sp.Symbol("tau", positive=True)
XI = sp.Symbol("xi", real=True)
_Y = sp.Symbol("y", real=True)


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


# Memoised (pure; SymPy expressions are immutable): the Hermite weights of all the moments
# ask for the same few (j, a, b).
@functools.lru_cache(maxsize=4096)
def _gauss_moment(j: int, a: sp.Expr, b: sp.Expr) -> sp.Expr:
    """∫_a^b y^j φ(y) dy (φ the standard normal density), exact; iterative in j."""
    m = _mass(a, b) if j % 2 == 0 else _tail(a, 0) - _tail(b, 0)
    for i in range(2 if j % 2 == 0 else 3, j + 1, 2):
        m = _tail(a, i - 1) - _tail(b, i - 1) + (i - 1) * m
    return m


class _Term(NamedTuple):
    """c·x^k·exp(a x² + b x), times erf(p x + q) when ``lin`` = (p, q)."""

    c: sp.Expr
    k: int
    a: sp.Expr
    b: sp.Expr
    lin: tuple[sp.Expr, sp.Expr] | None


# Memoised: the five φ-moments (E[φ] … E[φ⁗]) integrate the same pieces against different
# weights, and the expand/powsimp passes here cost more than the integration itself.
@functools.lru_cache(maxsize=1024)
def _exp_poly_terms(expr: sp.Expr) -> tuple[_Term, ...] | None:
    """Write ``expr`` as Σ c·x^k·exp(a x² + b x)·[erf(p x + q)]; None if it is not of that form."""
    e = expr
    if e.has(sp.sin, sp.cos, sp.sinh, sp.cosh):
        e = e.rewrite(sp.exp)
    if e.has(sp.erfc):
        e = e.replace(lambda f: isinstance(f, sp.erfc), lambda f: 1 - sp.erf(f.args[0]))
    e = sp.expand(sp.powsimp(sp.expand(e)))
    terms = []
    for term in sp.Add.make_args(e):
        coeff, k, a, b = sp.S.One, 0, sp.S.Zero, sp.S.Zero
        lin: tuple[sp.Expr, sp.Expr] | None = None
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
            elif isinstance(f, sp.erf) and lin is None:
                arg = sp.expand(f.args[0])
                if not arg.is_polynomial(X) or sp.Poly(arg, X).degree() != 1:
                    return None
                p1, q1 = sp.Poly(arg, X).all_coeffs()
                lin = (p1, q1)
            else:
                return None
        terms.append(_Term(coeff, k, a, b, lin))
    return tuple(terms)


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
    # One Add of all the terms: the same canonical sum as adding them one by one, without
    # rebuilding the partial sums (quadratic in the number of terms).
    terms = []
    for (deg,), w in weight.terms():
        j = deg + k
        for i in range(j + 1):
            terms.append(w * sp.binomial(j, i) * m ** (j - i) * s**i * _gauss_moment(i, lo_y, hi_y))
    return c * TAU**k * s * sp.exp(m**2 / (2 * s2)) * sp.Add(*terms)


def _hermite_coefficients(poly: sp.Poly) -> list[sp.Expr]:
    """c_j with poly = Σ_j c_j He_j (probabilists' Hermite, monic), top degree first peeled."""
    y = poly.gens[0]
    rest = poly
    out = [sp.S.Zero] * (poly.degree() + 1)
    while not rest.is_zero:
        j = rest.degree()
        c = rest.LC()
        out[j] = c
        rest = rest - sp.Poly(c * sp.hermite_prob(j, y), y)
    return out


def _gauss_exp_poly(poly: sp.Poly, a: sp.Expr, b: sp.Expr) -> sp.Expr:
    """∫ poly(y)·exp(a y² + b y)·φ(y) dy over ℝ (1 − 2a > 0), by completing the square."""
    y = poly.gens[0]
    s2 = 1 / (1 - 2 * a)
    s = sp.sqrt(s2)
    m = b * s2
    shifted = sp.Poly(sp.expand(poly.as_expr().subs(y, m + s * y)), y)
    total = sp.Add(*[c * sp.factorial2(i - 1) for (i,), c in shifted.terms() if i % 2 == 0])
    return s * sp.exp(m**2 / (2 * s2)) * total


def _gauss_poly_erf(poly: sp.Poly, alpha: sp.Expr, beta: sp.Expr) -> sp.Expr:
    r"""∫ poly(y)·erf(αy + β)·φ(y) dy over ℝ, exactly.

    With poly = Σ_j c_j He_j, Stein's identity E[He_j(Y) h(Y)] = E[h^{(j)}(Y)] for
    h = erf(αy + β) leaves
      j = 0: E[erf(αY + β)] = erf(β/√(1 + 2α²)), from E[Φ(aY + b)] = Φ(b/√(1 + a²))
        (Owen 1980, "A table of normal integrals", 10,010.8);
      j ≥ 1: h^{(j)}(y) = α^j (2/√π) (−1)^{j−1} H_{j−1}(αy + β) e^{−(αy + β)²}, H the
        physicists' Hermite polynomial (Rodrigues, DLMF 18.5.5 and Table 18.5.1): an
        exp-polynomial, integrated by completing the square.
    """
    y = poly.gens[0]
    total = sp.S.Zero
    for j, c in enumerate(_hermite_coefficients(poly)):
        if c == 0:
            continue
        if j == 0:
            total += c * sp.erf(beta / sp.sqrt(1 + 2 * alpha**2))
            continue
        z = alpha * y + beta
        # e^{−z²} = e^{−β²}·exp(−α² y² − 2αβ y)
        hp = sp.Poly(sp.expand(sp.hermite(j - 1, z)), y)
        inner = _gauss_exp_poly(hp, -(alpha**2), -2 * alpha * beta) * sp.exp(-(beta**2))
        total += c * alpha**j * 2 / sp.sqrt(sp.pi) * (-1) ** (j - 1) * inner
    return total


def _integrate_erf_term(term: _Term, weight: sp.Poly) -> sp.Expr | None:
    """∫_ℝ weight(ξ)·c·(τξ)^k·exp(a τ²ξ² + b τξ)·erf(p τξ + q)·φ(ξ) dξ (whole line only)."""
    if term.lin is None or term.a.is_positive:  # a > 0 would need 1 − 2aτ² > 0: leave it
        return None
    s2 = 1 / (1 - 2 * term.a * TAU**2)
    s = sp.sqrt(s2)
    m = term.b * TAU * s2
    p, q = term.lin
    # ξ = m + s·y turns exp(a τ²ξ² + b τξ)φ(ξ)dξ into s·exp(m²/2s²)·φ(y)dy.
    xi = m + s * _Y
    poly = sp.Poly(sp.expand(weight.as_expr().subs(XI, xi) * xi**term.k), _Y)
    inner = _gauss_poly_erf(poly, p * TAU * s, p * TAU * m + q)
    # power_exp=False: keep exp(u + v) whole, so the tidy step can combine exponents.
    return sp.expand(term.c * TAU**term.k * s * sp.exp(m**2 / (2 * s2)) * inner, power_exp=False)


def _tidy_erf_sum(total: sp.Expr) -> sp.Expr:
    """Collect the erf-free part over one denominator (the Stein sums are long but cancel)."""
    with_erf, rest = sp.sift(sp.Add.make_args(total), lambda t: t.has(sp.erf), binary=True)
    raw = sp.Add(*rest)
    tidy = sp.powsimp(sp.factor(sp.together(raw)), combine="exp")
    tidy = tidy.replace(
        lambda e: isinstance(e, sp.exp), lambda e: sp.exp(sp.factor(sp.together(e.args[0])))
    )
    return sp.Add(*with_erf) + (tidy if sp.count_ops(tidy) <= sp.count_ops(raw) else raw)


def _closed_exp_poly(weight: sp.Expr, pieces: tuple[Piece, ...]) -> sp.Expr | None:
    wpoly = sp.Poly(weight, XI)
    vals = []
    has_erf = False
    for p in pieces:
        terms = _exp_poly_terms(p.expr)
        if terms is None:
            return None
        whole_line = bool(p.lo.is_infinite and p.hi.is_infinite)
        lo = p.lo / TAU if not p.lo.is_infinite else p.lo
        hi = p.hi / TAU if not p.hi.is_infinite else p.hi
        for t in terms:
            if t.b.has(sp.I) and not whole_line:
                return None  # erf of a complex argument: correct but opaque; use quadrature
            if t.lin is not None:
                has_erf = True
                # On a half line E[P(Y) erf(αY + β); Y > c] needs Owen's T: not elementary.
                val = _integrate_erf_term(t, wpoly) if whole_line else None
            else:
                val = _integrate_term(t.c, t.k, t.a, t.b, wpoly, lo, hi)
            if val is None:
                return None
            vals.append(val)
    total = sp.Add(*vals)
    if total.has(sp.I):
        total = sp.expand_complex(sp.expand(total))
        if total.has(sp.I):
            return None
    return _tidy_erf_sum(total) if has_erf else total


def _fresh(expr: sp.Expr) -> sp.Expr:
    """A structurally equal copy made of new objects (no assumptions cached on them yet)."""
    return read_srepr(sp.srepr(expr, order="none"))  # type: ignore[return-value]


def _erf_degree(expr: sp.Expr) -> int:
    """The largest number of erf/erfc factors in one term of ``expr`` (expanded)."""
    worst = 0
    for term in sp.Add.make_args(sp.expand(expr)):
        n = 0
        for f in sp.Mul.make_args(term):
            base, e = f.as_base_exp()
            if isinstance(base, (sp.erf, sp.erfc)):
                n += int(e) if e.is_Integer and e > 0 else 2
        worst = max(worst, n)
    return worst


def _closed_sympy(weight: sp.Expr, pieces: tuple[Piece, ...]) -> sp.Expr | None:
    """One SymPy attempt within :data:`SYMPY_INTEGRATE_CALLS`, only for erf-type integrands.

    Products of two erfs are not attempted: SymPy 1.14 closes none of them (E[erf(τξ)²] is an
    arcsin) within 10^7 calls, and each failure would cost the whole budget.
    """
    allowed = (sp.erf, sp.erfc, sp.exp)
    any_erf = False
    for p in pieces:
        funcs = {type(f) for f in p.expr.atoms(sp.Function)}
        if not all(issubclass(f, allowed) for f in funcs):
            return None
        any_erf = any_erf or any(issubclass(f, (sp.erf, sp.erfc)) for f in funcs)
        if any(
            b.has(X) and e.is_negative for b, e in (pw.as_base_exp() for pw in p.expr.atoms(sp.Pow))
        ):
            return None  # x in a denominator (sigmoid-like): no elementary antiderivative
        if _erf_degree(p.expr) > 1 or any(
            f.args[0].has(sp.erf, sp.erfc) for f in p.expr.atoms(sp.erf, sp.erfc)
        ):
            return None
    if not any_erf:
        return None  # exp-polynomials the exact engine could not do: SymPy won't either

    # Its lines run under bounded()'s own trace hook, which suspends coverage's tracer.
    def attempt() -> sp.Expr | None:  # pragma: no cover - traced by bounded() only
        # Rebuilt from text inside the budget: SymPy caches derived assumptions on the objects
        # themselves, so integrating the activation's own (shared, long-lived) expressions
        # would make an attempt cheaper when an earlier one touched them.
        tau, xi = _fresh(TAU), _fresh(XI)
        total = sp.S.Zero
        for p in pieces:
            expr = _fresh(p.expr).xreplace({_fresh(X): tau * xi})
            integrand = _fresh(weight).xreplace({XI: xi}) * expr * _pdf(xi)
            lo = _fresh(p.lo) / tau if not p.lo.is_infinite else p.lo
            hi = _fresh(p.hi) / tau if not p.hi.is_infinite else p.hi
            total += sp.integrate(integrand, (xi, lo, hi), risch=False)
        if total.has(sp.Integral) or total.has(sp.I) or not total.is_finite:
            return None
        # Inside the budget too: simplify's work depends on its input only through the count.
        return sp.simplify(total) if sp.count_ops(total) < 60 else total

    return bounded(attempt, SYMPY_INTEGRATE_CALLS)


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
    # only the sensitivities use these (deqrmt.symbolic._sensitivity: d/dq of sq2 and dsq)
    "sq4": ("E[(φ²)''''(τξ)]", "sq", 4),
    "dsq2": ("E[(φ'²)''(τξ)]", "dsq", 2),
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


# Memoised: built for the derivation and again for every MomentSet (φ² expanded per piece).
@functools.lru_cache(maxsize=256)
def _integrand_pieces(act: Activation, kind: str) -> tuple[Piece, ...]:
    if kind == "phi":
        return act.pieces
    if kind == "sq":
        return tuple(Piece(p.lo, p.hi, sp.expand(p.expr**2)) for p in act.pieces)
    return tuple(Piece(p.lo, p.hi, sp.expand(p.expr**2)) for p in act.derivative_pieces)


def moment_set(
    act: Activation, names: tuple[str, ...] = tuple(MOMENTS), effort: bool = True
) -> MomentSet:
    """All moments in ``names`` for ``act`` (cached per activation, in memory and on disk).

    Symmetry: for odd φ the even-order moments E[φ^{(2j)}] vanish; for even φ the odd ones;
    for φ odd up to a constant (sigmoid) the even-order ones from k = 2 on
    (:attr:`Activation.derivative_parity`).
    """
    if not isinstance(act, Activation):
        raise InvalidArgument(
            f"act={show(act)}: expected an Activation (get_activation('tanh')), got "
            f"{type(act).__name__}."
        )
    names = tuple(
        sequence(
            names,
            "names",
            "moment names",
            hi=len(MOMENTS),
            item=lambda v, where: choice(v, where, tuple(MOMENTS)),
        )
    )
    return _moment_set(act, names, boolean(effort, "effort"))


@functools.lru_cache(maxsize=64)
def _moment_set(
    act: Activation, names: tuple[str, ...] = tuple(MOMENTS), effort: bool = True
) -> MomentSet:

    def build() -> dict[str, tuple[sp.Expr | None, bool]]:
        out: dict[str, tuple[sp.Expr | None, bool]] = {}
        for name in names:
            _, kind, k = MOMENTS[name]
            # E[φ] sees φ itself; E[φ^(k)], k ≥ 1, only φ up to a constant
            parity = act.parity if k == 0 else act.derivative_parity
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

    request = f"{sp.srepr(act.expr)}|{names}|{effort}"
    data = cached("moments", request, build, dict, symbols=(TAU,))
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


# the computation without the in-memory memo (through the disk cache), as before the check
moment_set.__wrapped__ = _moment_set.__wrapped__  # type: ignore[attr-defined]


def _weight(k: int) -> sp.Expr:
    return sp.expand(sp.hermite_prob(k, XI)) if k else sp.S.One

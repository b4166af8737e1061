r"""The sphere setting of HLD 2023 (Ling, Liao & Qiu), derived for an arbitrary activation.

Data x_1..x_n are uniform on the unit sphere S^{d−1}, so ρ_ij = x_iᵀx_j is O(d^{-1/2}) off the
diagonal and 1 on it.  The DEQ's conjugate kernel (HLD 2023, eq. (3)) at its fixed point is
entrywise a function of ρ, G*_ij = g(ρ_ij), because the pre-activation covariance of a pair is
[[g(1), g(ρ)], [g(ρ), g(1)]].

**Dual activation.**  With s = g(1) the common variance and r = c/s the correlation,

    f(r) = E[φ(u)φ(v)],   Var u = Var v = s,  Cov(u, v) = s r.

Price's theorem, ∂/∂Cov E[φ(u)φ(v)] = E[φ'(u)φ'(v)], gives f^{(k)}(r) = s^k E[φ^{(k)}(u)φ^{(k)}(v)]
(the dual of φ^{(k)}, weak derivatives across kinks); at r = 0, u and v are independent, so

    f^{(k)}(0) = s^k E[φ^{(k)}(√s ξ)]²,            f(1) = E[φ(√s ξ)²],   f'(1) = s E[φ'(√s ξ)²].

The Taylor series of f at 0 is therefore Mehler's: f(r) = Σ_k f^{(k)}(0) r^k / k!.

**Implicit kernel.**  g solves g = σ_a² f(g/s) + σ_b² ρ (HLD 2023, eq. (6), with f taken at the
variance s; for √2·max(x, 0) and σ_a² + σ_b² = 1, s = 1 and this is the paper's equation).  The
diagonal s = g(1) is itself a fixed point, s = σ_a² E[φ(√s ξ)²] + σ_b² (‖x‖ = 1).  Derivatives at
ρ = 0 come from implicit differentiation; the NTK is k = h∘g with h(c) = c/(1 − σ_a² f'(c/s)/s)
(HLD 2023, eq. (7): Ġ = σ_a² E[φ'(u)φ'(v)]).

**Equivalents.**  An inner-product kernel κ(ρ) on the sphere is equivalent in operator norm to
α 11ᵀ + β XᵀX + μ I with α = κ(0) + κ''(0)/(2d), β = κ'(0), μ = κ(1) − κ(0) − κ'(0) (El Karoui
2010): Taylor-expand κ to second order off the diagonal, where (x_iᵀx_j)² concentrates at
E[ρ²] = 1/d, and correct the diagonal.  Applied to κ = g, k, f_σ and f_σ + ρ f_σ' this yields
Theorems 1–4 of HLD 2023; matching the explicit to the implicit coefficients for a quadratic σ
yields its Corollary 1.  The paper's printed k'(0) has the opposite sign of what the chain rule
gives; :func:`derive_sphere` derives the correct one.

This module holds the derived records and the derivations; the symbols are
:mod:`._sphere_symbols` and the generic tools (implicit differentiation, the inner-product
equivalent, Price's rule) :mod:`._sphere_calculus`.  Every name is importable from here.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Mapping, Sequence

import sympy as sp

from .. import _arguments
from .._errors import DerivationError, InvalidArgument
from ._cache import cached
from ._recursion import SIGMA_A2, SIGMA_B2
from ._sphere_calculus import (
    _price_rule,
    dual_taylor_coefficient,
    gaussian_polynomial_expectation,
    implicit_derivatives,
    inner_product_equivalent,
    polynomial_dual,
)
from ._sphere_symbols import (
    _A0,
    _A1,
    _A2,
    _T,
    ALPHA,
    BETA,
    DIM,
    E_DSQ,
    E_SQ,
    G0,
    K_AT_1,
    M_DSQ,
    M_SQ,
    MU,
    QUADRATIC_SYMBOLS,
    RHO,
    C,
    DualDerivative,
    NTKMapDerivative,
    S,
    e_symbol,
    f_symbol,
    g_symbol,
    h_symbol,
    k_symbol,
    m_symbol,
)

__all__ = [
    "RHO",
    "DIM",
    "S",
    "G0",
    "C",
    "ALPHA",
    "BETA",
    "MU",
    "M_SQ",
    "M_DSQ",
    "E_SQ",
    "E_DSQ",
    "K_AT_1",
    "QUADRATIC_SYMBOLS",
    "DualDerivative",
    "NTKMapDerivative",
    "SphereFormulas",
    "ExplicitSphereFormulas",
    "QuadraticSolution",
    "QuadraticFormulas",
    "derive_sphere",
    "derive_explicit_sphere",
    "derive_quadratic",
    "implicit_derivatives",
    "inner_product_equivalent",
    "polynomial_dual",
    "gaussian_polynomial_expectation",
    "dual_taylor_coefficient",
    "f_symbol",
    "g_symbol",
    "h_symbol",
    "k_symbol",
    "m_symbol",
    "e_symbol",
]

# ---------------------------------------------------------------------------
# Implicit kernels (HLD 2023, Lemma 1, Theorems 1 and 3)
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class SphereFormulas:
    r"""The DEQ's sphere-setting kernels, derived (HLD 2023, §3.1, for an arbitrary φ).

    Symbols: :data:`SIGMA_A2`, :data:`SIGMA_B2`, :data:`S` = g(1), :data:`G0` = g(0),
    ``f_j`` = f^{(j)}(g_0/s) (:func:`f_symbol`), :data:`M_SQ`, :data:`M_DSQ`, :data:`DIM`.

    Attributes:
      order: highest derivative derived.
      implicit_equation: g(ρ) = σ_a² f(g(ρ)/s) + σ_b² ρ (eq. (6)).
      variance_equation: s = σ_a² E[φ(√s ξ)²] + σ_b² (the diagonal, ρ = 1).
      origin_equation: g_0 = σ_a² f(g_0/s) (ρ = 0).
      ntk_map: h(c) = c/(1 − σ_a² f'(c/s)/s) (eq. (7)).
      g_derivatives: g^{(n)}(0), n = 1..order, in f_j.
      h_derivatives: h^{(n)}(g_0), n = 0..order, in f_j.
      k_chain: k^{(n)}(0), n = 0..order, in h_j and g_j (the paper's form; Faà di Bruno).
      k_derivatives: k^{(n)}(0), n = 0..order, in f_j.
      g_at_1, k_at_1: g(1) = s and k(1) = h(s) = s/(1 − σ_a² E[φ'(√s ξ)²]).
      ck_theorem, ntk_theorem: (α, β, μ) of Theorems 1 and 3 in g_j, s (resp. k_j, k(1)).
      ck, ntk: the same, fully substituted (in f_j, g_0, s, M_DSQ).
    """

    order: int
    implicit_equation: sp.Eq
    variance_equation: sp.Eq
    origin_equation: sp.Eq
    ntk_map: sp.Expr
    g_derivatives: tuple[sp.Expr, ...]
    h_derivatives: tuple[sp.Expr, ...]
    k_chain: tuple[sp.Expr, ...]
    k_derivatives: tuple[sp.Expr, ...]
    g_at_1: sp.Expr
    k_at_1: sp.Expr
    ck_theorem: tuple[sp.Expr, sp.Expr, sp.Expr]
    ntk_theorem: tuple[sp.Expr, sp.Expr, sp.Expr]
    ck: tuple[sp.Expr, sp.Expr, sp.Expr]
    ntk: tuple[sp.Expr, sp.Expr, sp.Expr]

    def __post_init__(self) -> None:
        if len(self.g_derivatives) != self.order or len(self.k_derivatives) != self.order + 1:
            raise DerivationError("SphereFormulas: derivative tuples do not match `order`.")

    def numeric_inputs(self) -> tuple[sp.Symbol, ...]:
        """The symbols the fully substituted formulas depend on, in a fixed order."""
        fs = tuple(f_symbol(j) for j in range(self.order + 2))
        return (SIGMA_A2, SIGMA_B2, S, DIM, G0, M_DSQ, *fs)

    def as_dict(self) -> dict[str, sp.Expr]:
        """Name → fully substituted expression (names of the ``deqrmt sphere`` output)."""
        out: dict[str, sp.Expr] = {"g0": G0, "g_at_1": self.g_at_1}
        names = ["g_prime_0", "g_second_0"] + [f"g_d{n}_0" for n in range(3, self.order + 1)]
        out.update(dict(zip(names, self.g_derivatives, strict=False)))
        out.update(dict(zip(("alpha", "beta", "mu"), self.ck, strict=True)))
        out.update(dict(zip(("ntk_alpha", "ntk_beta", "ntk_mu"), self.ntk, strict=True)))
        out["k0"] = self.k_derivatives[0]
        out["k_at_1"] = self.k_at_1
        knames = ["k_prime_0", "k_second_0"] + [f"k_d{n}_0" for n in range(3, self.order + 1)]
        out.update(dict(zip(knames, self.k_derivatives[1:], strict=False)))
        return out


def _at_origin(expr: sp.Expr, g: sp.Expr, order: int) -> sp.Expr:
    """Evaluate at ρ = 0: g(0) → g_0 and f^{(j)}(g_0/s) → f_j."""
    e = expr.xreplace({g: G0}).subs(RHO, 0)
    table = {DualDerivative(j, G0 / S): f_symbol(j) for j in range(order + 3)}
    e = e.xreplace(table)
    if e.has(DualDerivative):
        raise DerivationError(f"unresolved dual-activation term in {e}.")
    return e


def _derive_sphere(order: int) -> SphereFormulas:
    g = sp.Function("g")(RHO)
    dual = DualDerivative(0, g / S)
    equation = g - SIGMA_A2 * dual - SIGMA_B2 * RHO
    g_derivs_rho = implicit_derivatives(equation, g, RHO, order)
    g_derivs = tuple(sp.factor(_at_origin(e, g, order)) for e in g_derivs_rho)

    # h(c) = c/(1 − Ġ(c)), Ġ(c) = σ_a² E[φ'(u)φ'(v)] = σ_a² f'(c/s)/s (Price).
    ntk_map = C / (1 - SIGMA_A2 * DualDerivative(1, C / S) / S)
    h_derivs = tuple(
        sp.factor(_at_origin(sp.diff(ntk_map, C, n).subs(C, G0), g, order))
        for n in range(order + 1)
    )

    # k = h∘g: differentiate the composition with h kept abstract (the paper's form) ...
    k_of_rho = NTKMapDerivative(0, g)
    g_table = {sp.Derivative(g, (RHO, m)): g_symbol(m) for m in range(1, order + 1)}
    h_table = {NTKMapDerivative(j, G0): h_symbol(j) for j in range(order + 1)}
    k_chain = tuple(
        sp.expand(sp.diff(k_of_rho, RHO, n).xreplace(g_table).xreplace({g: G0}).xreplace(h_table))
        for n in range(order + 1)
    )
    # ... then substitute h_j and g_j.
    sub = {h_symbol(j): h_derivs[j] for j in range(order + 1)}
    sub.update({g_symbol(m): g_derivs[m - 1] for m in range(1, order + 1)})
    k_derivs = tuple(sp.factor(sp.together(e.xreplace(sub))) for e in k_chain)

    g_at_1 = S
    # k(1) = h(s) with f'(1) = s E[φ'(√s ξ)²].
    k_at_1 = sp.simplify(_price_rule(ntk_map.subs(C, S), S, {}, {1: M_DSQ}))

    ck_theorem = inner_product_equivalent([g_symbol(j) for j in range(3)], S)
    ntk_theorem = inner_product_equivalent([k_symbol(j) for j in range(3)], K_AT_1)
    g_sub = {g_symbol(m): g_derivs[m - 1] for m in range(1, min(order, 2) + 1)}
    k_sub = {k_symbol(j): k_derivs[j] for j in range(min(order, 2) + 1)}
    k_sub[K_AT_1] = k_at_1  # order >= 2 here: derive_sphere validates it
    ck = tuple(sp.together(e.xreplace(g_sub)) for e in ck_theorem)
    ntk = tuple(sp.together(e.xreplace(k_sub)) for e in ntk_theorem)
    return SphereFormulas(
        order=order,
        implicit_equation=sp.Eq(g, SIGMA_A2 * dual + SIGMA_B2 * RHO),
        variance_equation=sp.Eq(S, SIGMA_A2 * M_SQ + SIGMA_B2),
        origin_equation=sp.Eq(G0, SIGMA_A2 * f_symbol(0)),
        ntk_map=ntk_map,
        g_derivatives=g_derivs,
        h_derivatives=h_derivs,
        k_chain=k_chain,
        k_derivatives=k_derivs,
        g_at_1=g_at_1,
        k_at_1=k_at_1,
        ck_theorem=ck_theorem,
        ntk_theorem=ntk_theorem,
        ck=(ck[0], ck[1], ck[2]),
        ntk=(ntk[0], ntk[1], ntk[2]),
    )


def derive_sphere(order: int = 2) -> SphereFormulas:
    """Derive the sphere-setting formulas to ``order`` (≥ 2), memoised in memory and on disk.

    Example:
      >>> derive_sphere().g_derivatives[0]
      s*sigma_b2/(-f_1*sigma_a2 + s)
    """
    return _derive_sphere_memo(_arguments.integer(order, "order", 2, 12))


@functools.lru_cache(maxsize=8)
def _derive_sphere_memo(order: int) -> SphereFormulas:
    return cached(
        "sphere",
        f"order={order}",
        lambda: _derive_sphere(order),
        SphereFormulas,
        functions=(DualDerivative, NTKMapDerivative),
        symbols=_entry_symbols(order),
        undefined=("g",),
    )


def _entry_symbols(order: int) -> frozenset[sp.Symbol]:
    """Every symbol a "sphere" or "sphere-quadratic" entry may hold (checked when read back)."""
    indexed = (f_symbol, g_symbol, h_symbol, k_symbol, m_symbol, e_symbol)
    fixed = {RHO, DIM, S, G0, C, ALPHA, BETA, MU, M_SQ, M_DSQ, E_SQ, E_DSQ, K_AT_1, SIGMA_A2}
    fixed |= {SIGMA_B2, _A2, _A1, _A0, _T}
    return frozenset({s(j) for s in indexed for j in range(order + 3)} | fixed)


# ---------------------------------------------------------------------------
# Explicit network (HLD 2023, Theorems 2 and 4) and Corollary 1
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ExplicitSphereFormulas:
    r"""(α₁, β₁, μ₁) and (α̇₁, β̇₁, μ̇₁) of Y = σ(WX)/√p on the sphere (HLD 2023, Theorems 2, 4).

    Σ_ij = f_σ(ρ_ij) with f_σ the unit-variance dual (w ~ N(0, I_d), ‖x_i‖ = 1), and
    Θ = Σ + XᵀX ⊙ E[σ'σ'] = f_σ(ρ) + ρ f_σ'(ρ) entrywise.  In :func:`e_symbol` moments and
    :data:`E_SQ`, :data:`E_DSQ`.
    """

    ck_kernel: sp.Expr
    ntk_kernel: sp.Expr
    ck: tuple[sp.Expr, sp.Expr, sp.Expr]
    ntk: tuple[sp.Expr, sp.Expr, sp.Expr]


def _explicit_coefficients(kernel: sp.Expr) -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    at0 = {j: e_symbol(j) for j in range(4)}
    at1 = {0: E_SQ, 1: E_DSQ}
    taylor = [
        _price_rule(sp.diff(kernel, RHO, j).subs(RHO, 0), sp.S.One, at0, at1) for j in range(3)
    ]
    at_one = _price_rule(kernel.subs(RHO, 1), sp.S.One, at0, at1)
    a, b, m = inner_product_equivalent(taylor, at_one)
    return sp.expand(a), sp.expand(b), sp.expand(m)


@functools.lru_cache(maxsize=1)
def derive_explicit_sphere() -> ExplicitSphereFormulas:
    """Derive Theorems 2 and 4 from the explicit kernels and Price's theorem."""
    ck_kernel = DualDerivative(0, RHO)
    ntk_kernel = DualDerivative(0, RHO) + RHO * DualDerivative(1, RHO)
    return ExplicitSphereFormulas(
        ck_kernel, ntk_kernel, _explicit_coefficients(ck_kernel), _explicit_coefficients(ntk_kernel)
    )


@dataclasses.dataclass(frozen=True)
class QuadraticSolution:
    """One real solution σ(t) = a2 t² + a1 t + a0 of Corollary 1, in :data:`ALPHA`, :data:`BETA`, :data:`MU`, :data:`DIM`.

    ``signs`` gives the signs of (a2, a1, a0 + a2), the three ± of the paper.
    """

    signs: str
    a2: sp.Expr
    a1: sp.Expr
    a0: sp.Expr

    def __post_init__(self) -> None:
        if len(self.signs) != 3 or set(self.signs) - {"+", "-"}:
            raise InvalidArgument(f"signs must be three of '+'/'-', got {self.signs!r}.")


@dataclasses.dataclass(frozen=True)
class QuadraticFormulas:
    r"""Corollary 1 of HLD 2023: a quadratic σ whose explicit CK (NTK) equivalent is (α, β, μ).

    Attributes:
      activation: a2 t² + a1 t + a0 in the symbol ``t``.
      moments: the quadratic's own e_0, e_1, e_2, e_sq, e_dsq, exact.
      ck_equations, ntk_equations: (α₁ − α, β₁ − β, μ₁ − μ) = 0 (and the NTK analogue).
      ck, ntk: the 8 solutions each, ``"+++"`` first.
    """

    activation: sp.Expr
    moments: Mapping[str, sp.Expr]
    ck_equations: tuple[sp.Expr, ...]
    ntk_equations: tuple[sp.Expr, ...]
    ck: tuple[QuadraticSolution, ...]
    ntk: tuple[QuadraticSolution, ...]

    def __post_init__(self) -> None:
        for name, sols in (("ck", self.ck), ("ntk", self.ntk)):
            if len(sols) != 8 or sols[0].signs != "+++":
                raise DerivationError(f"Corollary 1 ({name}): expected 8 solutions, '+++' first.")


def _triangular_solve(
    equations: Sequence[sp.Expr], unknowns: Sequence[sp.Symbol]
) -> list[dict[sp.Symbol, sp.Expr]]:
    """All solutions of a system in which some equation always has a single unsolved unknown."""
    solutions: list[dict[sp.Symbol, sp.Expr]] = [{}]
    remaining = list(equations)
    while remaining:
        progress = False
        for eq in list(remaining):
            left = [u for u in unknowns if eq.has(u) and u not in solutions[0]]
            if len(left) != 1:
                continue
            u = left[0]
            new = []
            for sol in solutions:
                for root in sp.solve(sp.expand(eq.xreplace(sol)), u):
                    new.append({**sol, u: sp.simplify(root)})
            solutions = new
            remaining.remove(eq)
            progress = True
        if not progress:
            raise DerivationError("Corollary 1: the matching equations are not triangular.")
    return solutions


def _label(sol: Mapping[sp.Symbol, sp.Expr]) -> str:
    # A generic point with α > μ/d: the signs of a2, a1, a0 + a2 are those of the paper's ±.
    point = {ALPHA: sp.Rational(7, 3), BETA: sp.Rational(5, 7), MU: sp.Rational(3, 2), DIM: 11}
    vals = (sol[_A2], sol[_A1], sol[_A0] + sol[_A2])
    return "".join("+" if sp.N(v.xreplace(point), 30) > 0 else "-" for v in vals)


def _solve_corollary(
    coefficients: tuple[sp.Expr, sp.Expr, sp.Expr],
) -> tuple[tuple[sp.Expr, ...], tuple[QuadraticSolution, ...]]:
    equations = tuple(
        sp.expand(c - t) for c, t in zip(coefficients, (ALPHA, BETA, MU), strict=True)
    )
    sols = _triangular_solve(equations, [_A2, _A1, _A0])
    labelled = sorted(
        (QuadraticSolution(_label(s), s[_A2], s[_A1], s[_A0]) for s in sols),
        key=lambda q: q.signs.replace("+", "0").replace("-", "1"),
    )
    if len({q.signs for q in labelled}) != len(labelled):
        raise DerivationError("Corollary 1: two solutions share a sign pattern.")
    return equations, tuple(labelled)


def _three(exprs: Iterable[sp.Expr]) -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    a, b, c = exprs
    return a, b, c


def _derive_quadratic() -> QuadraticFormulas:
    sigma = _A2 * _T**2 + _A1 * _T + _A0
    z = sp.Symbol("z", real=True)
    moments = {
        "e_0": gaussian_polynomial_expectation(sigma.subs(_T, z), [z]),
        "e_1": gaussian_polynomial_expectation(sp.diff(sigma, _T).subs(_T, z), [z]),
        "e_2": gaussian_polynomial_expectation(sp.diff(sigma, _T, 2).subs(_T, z), [z]),
        "e_sq": gaussian_polynomial_expectation((sigma**2).subs(_T, z), [z]),
        "e_dsq": gaussian_polynomial_expectation((sp.diff(sigma, _T) ** 2).subs(_T, z), [z]),
    }
    table = {e_symbol(j): moments[f"e_{j}"] for j in range(3)}
    table.update({E_SQ: moments["e_sq"], E_DSQ: moments["e_dsq"]})
    ex = derive_explicit_sphere()
    ck_eqs, ck = _solve_corollary(_three(sp.expand(c.xreplace(table)) for c in ex.ck))
    ntk_eqs, ntk = _solve_corollary(_three(sp.expand(c.xreplace(table)) for c in ex.ntk))
    return QuadraticFormulas(sigma, moments, ck_eqs, ntk_eqs, ck, ntk)


@functools.lru_cache(maxsize=1)
def derive_quadratic() -> QuadraticFormulas:
    """Derive Corollary 1 (memoised in memory and on disk).

    The quadratic's moments are computed exactly, put into the explicit Theorems 2/4, and the
    three matching equations are solved (they are triangular: μ fixes a2², β fixes a1², α then
    fixes a0 + a2).
    """
    return cached(
        "sphere-quadratic", "v1", _derive_quadratic, QuadraticFormulas, symbols=_entry_symbols(2)
    )

r"""The calculus of the sphere setting (HLD 2023): implicit differentiation, El Karoui's
inner-product equivalent, exact Gaussian moments of polynomials, the dual activation's Taylor
coefficients and Price's rule for its derivatives at 0 and 1.

Each tool is generic in the kernel it is given; :mod:`._sphere` applies them to the DEQ's
implicit kernels and to the explicit network.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import sympy as sp

from .._errors import DerivationError, InvalidArgument
from ._activation import Activation
from ._expectation import TAU, gaussian_expectation
from ._sphere_symbols import DIM, RHO, DualDerivative, S

__all__ = [
    "implicit_derivatives",
    "inner_product_equivalent",
    "polynomial_dual",
    "gaussian_polynomial_expectation",
    "dual_taylor_coefficient",
]


def implicit_derivatives(
    equation: sp.Expr, y: sp.Expr, x: sp.Symbol, order: int
) -> tuple[sp.Expr, ...]:
    """y', y'', …, y^{(order)} for y = y(x) defined by ``equation`` = 0, by implicit differentiation.

    Differentiating F(x, y(x)) = 0 n times gives an equation *linear* in y^{(n)} (coefficient
    ∂F/∂y); lower derivatives are replaced by their already solved expressions.

    Args:
      equation: expression in ``x`` and the applied function ``y`` (e.g. ``g(rho)``).
      y: the applied undefined function, ``sp.Function("g")(x)``.
      x: the independent variable.
      order: highest derivative wanted (≥ 1).

    Returns:
      The derivatives as expressions in ``x`` and ``y`` (no derivative of ``y`` left).

    Raises:
      DerivationError: if the n-th differentiated equation is not linear in y^{(n)}, or if
        ∂F/∂y vanishes identically (y is not defined implicitly).
    """
    if order < 1:
        raise InvalidArgument(f"order must be >= 1, got order={order!r}.")
    unknown = sp.Dummy("y_n")
    out: list[sp.Expr] = []
    for n in range(1, order + 1):
        e = sp.diff(equation, x, n)
        # xreplace, not subs: subs would rewrite Derivative(y, (x, 2)) as Derivative(y', x).
        table: dict[sp.Basic, sp.Basic] = {
            sp.Derivative(y, (x, m)): out[m - 1] for m in range(1, n)
        }
        table[sp.Derivative(y, (x, n))] = unknown
        e = e.xreplace(table)
        slope = sp.diff(e, unknown)
        if sp.diff(slope, unknown) != 0:
            raise DerivationError(
                f"the {n}-th derivative of {equation} = 0 is not linear in y^({n})."
            )
        if sp.simplify(slope) == 0:
            raise DerivationError(
                f"∂F/∂y vanishes for F = {equation}: y is not defined implicitly."
            )
        out.append(sp.factor(sp.together(-e.subs(unknown, 0) / slope)))
    return tuple(out)


def inner_product_equivalent(
    taylor: Sequence[sp.Expr], at_one: sp.Expr, d: sp.Expr = DIM
) -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    r"""(α, β, μ) of κ(XᵀX) ≈ α 11ᵀ + β XᵀX + μ I on the sphere (El Karoui 2010, Theorem 2.1).

    Off the diagonal κ(ρ) = κ(0) + κ'(0)ρ + κ''(0)ρ²/2 + O(d^{-3/2}); the matrix [ρ_ij²] equals
    E[ρ²]·11ᵀ = 11ᵀ/d up to a vanishing operator norm (E[(x_iᵀx_j)²] = Σ_k E[x_k²]/d = 1/d by
    symmetry); the third-order rest vanishes too.  The diagonal, κ(1), is matched by μ up to
    O(1/d) — HLD 2023 keeps μ = κ(1) − κ(0) − κ'(0) and so do we.

    Args:
      taylor: (κ(0), κ'(0), κ''(0)).
      at_one: κ(1).
      d: the dimension.
    """
    if len(taylor) < 3:
        raise InvalidArgument("inner_product_equivalent needs (κ(0), κ'(0), κ''(0)).")
    poly = sum((taylor[j] * RHO**j / sp.factorial(j) for j in range(3)), sp.S.Zero)
    p = sp.Poly(sp.expand(poly), RHO)
    second_moment = 1 / d  # E[ρ²] for independent uniform points on S^{d−1}
    alpha = p.coeff_monomial(1) + p.coeff_monomial(RHO**2) * second_moment
    beta = p.coeff_monomial(RHO)
    mu = at_one - p.coeff_monomial(1) - beta
    return alpha, beta, mu


def gaussian_polynomial_expectation(expr: sp.Expr, variables: Sequence[sp.Symbol]) -> sp.Expr:
    """E[expr] for independent standard normal ``variables``, expr polynomial in them (E z^{2m} = (2m−1)!!)."""
    poly = sp.Poly(sp.expand(expr), *variables)
    total = sp.S.Zero
    for monom, coeff in poly.terms():
        if any(k % 2 for k in monom):
            continue
        total += coeff * sp.Mul(*[sp.factorial2(k - 1) for k in monom])
    return sp.expand(total)


def polynomial_dual(expr: sp.Expr, t: sp.Symbol) -> sp.Expr:
    r"""The exact dual E[σ(u)σ(v)], (u, v) unit variance with correlation :data:`RHO`, σ polynomial in ``t``.

    Writes v = ρ z₁ + q z₂ with q = √(1 − ρ²); only even powers of z₂ (hence of q) survive the
    expectation, so the result is a polynomial in ρ.
    """
    z1, z2, q = sp.symbols("z_1 z_2 q", real=True)
    if not sp.expand(expr).is_polynomial(t):
        raise InvalidArgument(f"polynomial_dual needs a polynomial in {t}, got {expr}.")
    value = gaussian_polynomial_expectation(
        expr.subs(t, z1) * expr.subs(t, RHO * z1 + q * z2), [z1, z2]
    )
    return sp.expand(value.subs(q**2, 1 - RHO**2))


def dual_taylor_coefficient(act: Activation, k: int, s: sp.Expr = S) -> sp.Expr | None:
    r"""f^{(k)}(0) = s^k E[φ^{(k)}(√s ξ)]² exactly, or None when the moment has no closed form.

    The weak moment is Stein's s^{-k/2} E[He_k(ξ) φ(√s ξ)], integrated piece by piece.
    """
    if k < 0:
        raise InvalidArgument(f"k must be >= 0, got k={k!r}.")
    weight = sp.expand(sp.hermite_prob(k, sp.Symbol("xi", real=True))) if k else sp.S.One
    e = gaussian_expectation(f"E[φ^({k})(τξ)]", weight, act.pieces, TAU ** (-k))
    if e.closed_form is None:
        return None
    return sp.simplify(s**k * e.closed_form.subs(TAU, sp.sqrt(s)) ** 2)


def _price_rule(
    expr: sp.Expr, s: sp.Expr, at0: Mapping[int, sp.Expr], at1: Mapping[int, sp.Expr]
) -> sp.Expr:
    """Replace f^{(n)}(0) → s^n at0[n]², f(1) → at1[0], f'(1) → s·at1[1] (Price's theorem)."""

    def rule(n: sp.Expr, r: sp.Expr) -> sp.Expr:
        j = int(n)
        if r == 0:
            return s**j * at0[j] ** 2
        if r == 1 and j in at1:
            return s**j * at1[j]
        raise DerivationError(f"f^({j})({r}) is not a one-dimensional moment.")

    return expr.replace(lambda e: isinstance(e, DualDerivative), lambda e: rule(*e.args))

"""Two parameters, `β = g(u, w)`: a conserved quantity c (∇c ⊥ ∇g), h(β, c) on the level set
of the initialisation, the domain of β, and the sign relations the flow preserves.
"""

from __future__ import annotations

import sympy as sp
from sympy.calculus.util import continuous_domain

from .._errors import DerivationError
from ._bias_steps import (
    _MAX_OPS_PDE,
    _antiderivative,
    _beta_symbol,
    _close,
    _compact_h,
    _is_algebraic,
    _is_zero,
    _sign_of,
    _simplify,
)
from ._effort import SYMPY_PDSOLVE_CALLS, SYMPY_SYSTEM_CALLS, bounded
from ._symbols import PaperSymbol


def _normalise_invariant(c: sp.Expr, theta: tuple[sp.Symbol, ...]) -> sp.Expr:
    """A tidy representative of `F(c)`: constants dropped, squares completed, primitive.

    Any function of a conserved quantity is conserved; this picks `u**2 + (w - 1)**2` over
    `w - w**2/2 - u**2/2`.
    """
    c = sp.expand(c)
    c = c - c.as_independent(*theta, as_Add=True)[0]
    if not c.is_polynomial(*theta):
        return c
    poly = sp.Poly(c, *theta)
    _, prim = poly.primitive()
    if prim.LC() < 0:
        prim = -prim
    c = prim.as_expr()
    for t in theta:
        p = sp.Poly(c, t)
        if p.degree() == 2:
            a, b, rest = (p.coeff_monomial(t**k) for k in (2, 1, 0))
            if not (a.free_symbols | b.free_symbols):  # no cross terms: complete the square
                c = a * (t + b / (2 * a)) ** 2 + sp.expand(rest)
    return c - c.as_independent(*theta, as_Add=True)[0]


def _first_integral(g: sp.Expr, theta: tuple[sp.Symbol, ...]) -> sp.Expr:
    """c(u, w) with `g_u c_u + g_w c_w = 0`, by a fixed sequence of methods.

    1. The characteristic ODE `dw/du = g_w/g_u`; if it separates, `dw/du = P(u) Q(w)`, then
       `c = ∫dw/Q - ∫P du` (two antiderivatives).
    2. `sympy.pdsolve` (`1st_linear_variable_coeff`), whose answer is `F(c)`, within
       :data:`~deqrmt.symbolic._effort.SYMPY_PDSOLVE_CALLS` Python calls.
    Every candidate is checked: `∇c·∇g` must simplify to 0.
    """
    u, w = theta
    gu, gw = sp.together(sp.diff(g, u)), sp.together(sp.diff(g, w))
    # Clear denominators and common factors: the PDE is homogeneous, any common factor may go.
    common = sp.lcm(sp.denom(gu), sp.denom(gw))
    a, b = sp.cancel(gu * common), sp.cancel(gw * common)
    common_num = sp.gcd(a, b)
    if common_num != 0:
        a, b = sp.cancel(a / common_num), sp.cancel(b / common_num)
    if sp.count_ops(a) + sp.count_ops(b) > _MAX_OPS_PDE:
        raise DerivationError(f"the conservation PDE for {g} is too large to attempt.")

    def separable() -> sp.Expr | None:
        if a == 0:
            return u  # g does not depend on u: u itself is conserved
        sep = sp.separatevars(sp.cancel(b / a), [u, w], dict=True)
        if not sep:
            return None
        fu = _antiderivative(sep["coeff"] * sep[u], u)
        fw = _antiderivative(1 / sep[w], w)
        if fu is None or fw is None:
            return None
        cand = sp.logcombine(sp.expand_log(fw - fu, force=True), force=True)
        return cand.args[0] if isinstance(cand, sp.log) else cand  # c ↦ exp(c)

    def pde() -> sp.Expr | None:
        F, c = sp.Function("F"), sp.Function("c")
        rhs = sp.pdsolve(a * c(u, w).diff(u) + b * c(u, w).diff(w), c(u, w)).rhs
        if isinstance(rhs, sp.Function) and rhs.func == F and len(rhs.args) == 1:
            return rhs.args[0]
        return None

    # pdsolve falls back on dsolve's Lie-group heuristics, which can run for minutes (uw² + w):
    # it gets a deterministic call budget (over it: no candidate, the named error below)
    for method in (separable, lambda: bounded(pde, SYMPY_PDSOLVE_CALLS)):
        try:
            cand = method()
        # IndexError: pdsolve's variable-coefficient solver indexes an empty solve() result
        except (NotImplementedError, ValueError, TypeError, IndexError, sp.PolynomialError):
            continue
        if cand is None or not cand.free_symbols & {u, w}:
            continue
        cand = _normalise_invariant(_simplify(cand), theta)
        if _is_zero(sp.diff(cand, u) * sp.diff(g, u) + sp.diff(cand, w) * sp.diff(g, w)):
            return cand
    raise DerivationError(
        f"no conserved quantity found for {g}: the separable characteristic ODE and pdsolve "
        "both failed."
    )


def _sign_relation(base: sp.Expr, positive: bool) -> sp.Basic:
    """`base > 0` (or `< 0`), as `w < 1` when base is linear in one symbol."""
    rel = base > 0 if positive else base < 0
    (t,) = base.free_symbols if len(base.free_symbols) == 1 else (None,)
    if t is not None and sp.degree(base, t) == 1:
        a, b = sp.Poly(base, t).all_coeffs()
        root = -b / a
        return (t > root) if (a > 0) == positive else (t < root)
    return rel


def _two_parameters(
    g: sp.Expr, theta: tuple[sp.Symbol, ...], theta0: tuple[sp.Expr, ...], h_theta: sp.Expr
) -> tuple[sp.Symbol, sp.Expr, sp.Symbol, sp.Expr, sp.Expr, sp.Set, tuple[sp.Basic, ...]]:
    # sympy.solve on a transcendental 2×2 system can run for many minutes: algebraic only.
    if not _is_algebraic(g):
        raise DerivationError(
            f"β = {g} is not algebraic in the parameters; two-parameter parametrizations must "
            "be built from + - * / and rational powers."
        )
    xi = _first_integral(g, theta)
    if not _is_algebraic(xi):
        raise DerivationError(f"the conserved quantity c = {xi} of β = {g} is not algebraic.")
    at0 = dict(zip(theta, theta0, strict=True))
    c0 = _simplify(xi.subs(at0))
    sign = _sign_of(c0)
    # The value's sign is an assumption SymPy uses (sqrt(c**2) = c); c = 0 is substituted.
    c = sp.Symbol("c", positive=True) if sign > 0 else sp.Symbol("c", negative=True)
    if sign == 0:
        c = sp.Symbol("c", real=True)
    beta = PaperSymbol("β", real=True)
    beta0 = _simplify(g.subs(at0))
    c_value: sp.Expr = c if sign != 0 else sp.S.Zero
    try:
        # check=False: SymPy's check runs powsimp without bound (sqrt(u)*w); the branch is
        # checked numerically at the initialisation below, and ψ''·h = 1 after.  A call budget:
        # a system of high degree (u³w) runs for minutes; over it there is no branch.
        system = [beta - g, c_value - xi]
        branches = (
            bounded(
                lambda: sp.solve(system, list(theta), dict=True, check=False),
                SYMPY_SYSTEM_CALLS,
            )
            or []
        )
    except (NotImplementedError, ValueError, TypeError):
        branches = []
    h: sp.Expr | None = None
    for branch in branches:
        if len(branch) != 2:
            continue
        at = {beta: beta0, c: c0}
        try:
            ok = all(_close(branch[t].subs(at), t0) for t, t0 in at0.items())
        except (TypeError, ValueError):
            ok = False
        if ok:
            h = _compact_h(h_theta.subs(branch), g)
            break
    if h is None:
        raise DerivationError(
            f"cannot express h = {h_theta} through β = {g} and c = {xi} on the branch of the "
            f"initialisation {at0}."
        )
    try:
        domain = continuous_domain(h, beta, sp.S.Reals).intersect(
            sp.solveset(h > 0, beta, sp.S.Reals)
        )
    except (NotImplementedError, ValueError, TypeError):
        # Correct but implicit; the numerics then guard every evaluation of h instead.
        domain = sp.ConditionSet(beta, h > 0, sp.S.Reals)
    # β cannot cross a zero of h (a critical point of g on the level set is stationary for the
    # θ-flow) nor leave the branch: it stays in the piece of the domain that holds β(0).
    pieces = domain.args if isinstance(domain, sp.Union) else (domain,)
    for piece in pieces:
        if isinstance(piece, sp.Interval) and piece.contains(beta0) == sp.true:
            domain = piece
            signed = _beta_symbol(piece)
            if signed.assumptions0 != beta.assumptions0:
                h = _compact_h(h.subs(beta, signed), g)
                beta = signed
            break
    invariants: list[sp.Basic] = [sp.Eq(xi, c0)]
    # β stays finite, so no denominator factor of g changes sign.
    for base, _ in sp.factor_list(sp.denom(sp.together(g)))[1]:
        if base.free_symbols and not base.is_nonnegative:
            invariants.append(_sign_relation(base, _sign_of(base.subs(at0)) > 0))
    # c = c0 ≠ 0 for all time, so no factor of a product c vanishes.
    factors = [f for f, _ in sp.factor_list(xi)[1] if f.free_symbols]
    if sign != 0 and sp.denom(sp.together(xi)) == 1 and len(factors) > 1:
        for base in factors:
            if not base.is_nonnegative and not (-base).is_nonnegative:
                invariants.append(_sign_relation(base, _sign_of(base.subs(at0)) > 0))
    return beta, h, c, c0, xi, domain, tuple(invariants)

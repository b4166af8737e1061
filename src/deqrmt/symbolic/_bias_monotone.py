"""One parameter, `β = g(w)`: the interval of w that gradient flow cannot leave, its image,
and h(β) = g'(w(β))², by writing g' through g or by inverting g on that interval.
"""

from __future__ import annotations

import sympy as sp
from sympy.calculus.util import continuous_domain

from .._errors import DerivationError, InvalidArgument
from ._bias_steps import _beta_symbol, _close, _compact_h, _sample_points


def _monotone_interval(g: sp.Expr, w: sp.Symbol, w0: sp.Expr) -> sp.Interval:
    """The interval I ∋ w0 on which g is smooth and g' ≠ 0 (the flow never leaves it)."""
    gp = sp.diff(g, w)
    try:
        smooth = continuous_domain(g, w, sp.S.Reals).intersect(continuous_domain(gp, w, sp.S.Reals))
        critical = sp.solveset(sp.numer(sp.together(gp)), w, sp.S.Reals)
    except (NotImplementedError, ValueError, TypeError) as e:
        raise DerivationError(
            f"cannot locate the singular and critical points of {g}: {e}"
        ) from None
    if not isinstance(critical, (sp.FiniteSet, type(sp.S.EmptySet))):
        raise DerivationError(
            f"the critical points of {g} are {critical}, not a finite set; use a parametrization "
            "that is monotone between finitely many critical points."
        )
    region = smooth - critical
    pieces = region.args if isinstance(region, sp.Union) else (region,)
    for piece in pieces:
        if isinstance(piece, sp.Interval) and piece.contains(w0) == sp.true:
            return sp.Interval.open(piece.start, piece.end)
    if w0 in critical:
        raise InvalidArgument(
            f"init {w}={w0} is a critical point of {g} (g'=0): gradient flow never moves; "
            "choose another initialisation."
        )
    raise InvalidArgument(f"init {w}={w0} is not in the domain of {g} ({region}).")


def _image(g: sp.Expr, w: sp.Symbol, interval: sp.Interval) -> sp.Interval:
    """g(I) for g strictly monotone on the open interval I: limits at the ends."""
    try:
        lo = sp.limit(g, w, interval.start, "+")
        hi = sp.limit(g, w, interval.end, "-")
    except (NotImplementedError, ValueError) as e:
        raise DerivationError(
            f"cannot take the limits of {g} at the ends of {interval}: {e}"
        ) from None
    ends = (lo, hi)
    if any(e.has(sp.zoo, sp.nan, sp.AccumBounds) or not e.is_extended_real for e in ends):
        raise DerivationError(f"the range of {g} on {interval} has ends {ends}.")
    return sp.Interval.open(sp.Min(lo, hi), sp.Max(lo, hi))


def _one_parameter(
    g: sp.Expr, w: sp.Symbol, w0: sp.Expr
) -> tuple[sp.Symbol, sp.Expr, sp.Set, tuple[sp.Basic, ...]]:
    interval = _monotone_interval(g, w, w0)
    domain = _image(g, w, interval)
    beta = _beta_symbol(domain)
    beta0 = g.subs(w, w0)
    invariants = tuple(r for r in (interval.as_relational(w),) if r != sp.true)
    # First try g' as a function of g itself (tanh' = 1 - tanh², exp' = exp), also through
    # an affine outer map (g = 2 tanh(w/2 - 1) + 3): an identity on all of I, no branch needed.
    gp = sp.diff(g, w)
    T = sp.Dummy("T")
    for atom in sorted(g.atoms(sp.Function), key=sp.count_ops):
        outer = g.subs(atom, T)
        # exp(exp(w)) with atom exp(w) gives exp(T): not a polynomial in T, so no affine map
        if w in outer.free_symbols or not outer.is_polynomial(T) or sp.degree(outer, T) != 1:
            continue
        (inner_value,) = sp.solve(outer - beta, T)
        direct = gp.subs(atom, inner_value)
        if w not in direct.free_symbols:
            return beta, _compact_h(direct**2, g), domain, invariants
    try:
        # check=False: SymPy's own check simplifies each candidate without bound (minutes for
        # tanh(tanh(w))); every branch is checked numerically below instead
        branches = sp.solve(sp.Eq(beta, g), w, dict=False, check=False)
    except (NotImplementedError, ValueError, TypeError):
        branches = []
    points = _sample_points(domain, beta0)
    for branch in branches if isinstance(branches, list) else []:
        if not isinstance(branch, sp.Expr) or branch.has(sp.RootOf, sp.CRootOf):
            continue
        try:
            ok = _close(branch.subs(beta, beta0), w0) and all(
                sp.N(branch.subs(beta, p), 30).is_real
                and interval.contains(sp.N(branch.subs(beta, p), 30)) == sp.true
                and _close(g.subs(w, branch.subs(beta, p)), p)
                for p in points[1:]
            )
        except (TypeError, ValueError):
            ok = False
        if ok:
            h = _compact_h(sp.diff(g, w).subs(w, branch) ** 2, g)
            return beta, h, domain, invariants
    raise DerivationError(
        f"cannot invert β = {g} on {interval} in closed form (branches found: {branches}); "
        "the derivation needs w as a function of β."
    )

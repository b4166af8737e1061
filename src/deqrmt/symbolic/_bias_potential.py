"""The potential of the implicit bias: ψ with ψ'' = 1/h, in closed form or as a quadrature, and
the check ψ''·h = 1.
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from .._errors import DerivationError
from ._bias_records import _S, BETA0
from ._bias_steps import _antiderivative, _close, _is_zero, _sample_points, _simplify


def _real_logs(F: sp.Expr, beta: sp.Symbol, domain: sp.Set) -> sp.Expr:
    """Replace `log(a)` by `log(-a)` where a < 0 on the domain: the same antiderivative up to the
    constant iπ, but real (ratint writes `log(β - 1)` for β ∈ (-1, 1))."""
    points = [p for p in _sample_points(domain, sp.S.Zero)[1:] if p.is_real]
    if not points:
        return F
    fixes = {}
    for lg in F.atoms(sp.log):
        values = [sp.N(lg.args[0].subs(beta, p), 20) for p in points]
        if all(v.is_real and v < 0 for v in values):
            fixes[lg] = sp.log(-lg.args[0])
    return F.xreplace(fixes) if fixes else F


def _potential(h: sp.Expr, beta: sp.Symbol, domain: sp.Set) -> tuple[sp.Expr, sp.Expr, bool]:
    """(ψ', ψ, closed_form) with ψ'' = 1/h.

    ψ = β ψ' - ∫ β/h dβ (integration by parts): ∫β/h is often elementary when ∫ψ' is not
    attempted successfully (ψ' may be transcendental, 1/h algebraic).
    """
    inv = _simplify(1 / h)
    dpsi = _antiderivative(inv, beta)
    if dpsi is not None:
        dpsi = _real_logs(dpsi, beta, domain)
    closed = dpsi is not None
    if dpsi is None:
        dpsi = sp.Integral(inv.subs(beta, _S), (_S, BETA0, beta))
    moment = _antiderivative(_simplify(beta * inv), beta)
    if moment is not None:
        moment = _real_logs(moment, beta, domain)
    if moment is None:
        closed = False
        moment = sp.Integral((_S * inv.subs(beta, _S)), (_S, BETA0, beta))
    psi = beta * dpsi - moment
    if closed:
        psi = _simplify(psi)
    return dpsi, psi, closed


def _check_potential(
    h: sp.Expr,
    psi: sp.Expr,
    beta: sp.Symbol,
    domain: sp.Set,
    anchor: sp.Expr,
    extra: dict[Any, Any],
) -> None:
    """ψ''·h = 1: symbolically when SymPy can, else at sample points of the domain."""
    second = sp.diff(psi, beta, 2)
    if not second.has(sp.Integral) and _is_zero(second * h - 1):
        return
    for p in _sample_points(domain, anchor):
        at = {beta: p, BETA0: anchor, **extra}
        value = sp.N((second * h).subs(at), 30)
        if not _close(value, 1):
            raise DerivationError(f"ψ''·h = {value} ≠ 1 at β = {p}; the potential is wrong.")

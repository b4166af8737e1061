"""The bounded SymPy steps of the implicit-bias derivation.

Every step tries a fixed, short sequence of methods on an expression whose size
(``sp.count_ops``) is checked first: that, not a clock, bounds SymPy's effort.  Also the
numerical comparisons (at 30 digits) that tell a derivation's branches apart.
"""

from __future__ import annotations

import sympy as sp
from sympy.functions.elementary.hyperbolic import HyperbolicFunction
from sympy.functions.elementary.trigonometric import TrigonometricFunction
from sympy.integrals.manualintegrate import manualintegrate
from sympy.integrals.rationaltools import ratint

from .._errors import DerivationError, InvalidArgument
from ._symbols import PaperSymbol

# Size limits (sp.count_ops) beyond which a SymPy step is not attempted: this, not a clock,
# bounds the effort.  The parametrizations of interest are a handful of operations.
_MAX_OPS_G = 40
_MAX_OPS_SIMPLIFY = 150
_MAX_OPS_INTEGRAND = 80
_MAX_OPS_PDE = 60
_MAX_OPS_H = 60  # h(β) beyond this is no usable closed form (and would stall what follows)
# manualintegrate explores many rewrites: only on small algebraic integrands (one of 30
# operations, or cosh(log(…))**-4 of 8, can keep it busy for minutes).
_MAX_OPS_MANUAL = 20
_MAX_OPS_RISCH = 40


def _simplify(e: sp.Expr) -> sp.Expr:
    """`simplify` on small expressions, `cancel` on large ones: effort bounded by size."""
    if sp.count_ops(e) <= _MAX_OPS_SIMPLIFY:
        return sp.simplify(e)
    return sp.cancel(e)


def _is_zero(e: sp.Expr) -> bool:
    return _simplify(e) == 0


def _antiderivative(f: sp.Expr, x: sp.Symbol) -> sp.Expr | None:
    """An elementary antiderivative by a fixed sequence of methods, or None.

    Hermite–Rothstein–Trager for rational integrands (fast and complete), manualintegrate
    (rule-based) for small algebraic ones, the Risch algorithm (a decision procedure for
    transcendental integrands; it refuses algebraic ones) for the rest.
    """
    ops = sp.count_ops(f)
    if ops > _MAX_OPS_INTEGRAND:
        return None
    algebraic = _is_algebraic(f)
    attempts = (
        lambda: ratint(f, x) if f.is_rational_function(x) else None,
        lambda: manualintegrate(f, x) if algebraic and ops <= _MAX_OPS_MANUAL else None,
        lambda: sp.integrate(f, x, risch=True) if not algebraic and ops <= _MAX_OPS_RISCH else None,
    )
    for attempt in attempts:
        try:
            F = attempt()
        except (NotImplementedError, ValueError, TypeError, sp.PolynomialError):
            continue
        if (
            isinstance(F, sp.Expr)
            and not F.has(sp.Integral, sp.Piecewise)
            and _is_zero(sp.diff(F, x) - f)
        ):
            return F
    return None


def _sign_of(value: sp.Expr) -> int:
    v = sp.N(value, 30)
    if v.is_zero or v == 0:
        return 0
    if not v.is_real:
        raise InvalidArgument(f"the value {value} at the initialisation is not real.")
    return 1 if v > 0 else -1


def _close(a: sp.Expr, b: sp.Expr) -> bool:
    va, vb = complex(sp.N(a, 30)), complex(sp.N(b, 30))
    return abs(va - vb) <= 1e-20 * (1 + abs(vb))


def _is_algebraic(e: sp.Expr) -> bool:
    """Built from symbols and numbers by + - * / and rational powers only."""
    return (
        not e.atoms(sp.Function)
        and all(p.exp.is_Rational for p in e.atoms(sp.Pow) if p.base.free_symbols)
        and not any(p.exp.free_symbols for p in e.atoms(sp.Pow))
    )


def _beta_symbol(domain: sp.Set) -> sp.Symbol:
    if isinstance(domain, sp.Interval) and domain.start >= 0:
        return PaperSymbol("β", positive=True)
    if isinstance(domain, sp.Interval) and domain.end <= 0:
        return PaperSymbol("β", negative=True)
    return PaperSymbol("β", real=True)


def _sample_points(domain: sp.Set, anchor: sp.Expr) -> list[sp.Expr]:
    """A few exact points of an open interval, anchor first (to tell branches apart)."""
    pts = [anchor]
    if isinstance(domain, sp.Interval):
        a, b = domain.start, domain.end
        if a.is_finite and b.is_finite:
            pts += [a + (b - a) * sp.Rational(k, 7) for k in (1, 3, 6)]
        elif a.is_finite:
            pts += [a + sp.Rational(1, 3), a + 2, a + 11]
        elif b.is_finite:
            pts += [b - sp.Rational(1, 3), b - 2, b - 11]
        else:
            pts += [sp.Rational(-5, 2), sp.Rational(1, 3), sp.Rational(7, 2)]
    return pts


def _compact_h(raw: sp.Expr, g: sp.Expr) -> sp.Expr:
    """h(β) simplified, or a DerivationError if it has no compact form."""
    if sp.count_ops(raw) > 4 * _MAX_OPS_SIMPLIFY:
        raise DerivationError(f"h(β) for {g} has no compact closed form ({sp.count_ops(raw)} ops).")
    simple = _simplify(raw)
    candidates = [simple, sp.factor(simple)]
    if simple.has(HyperbolicFunction, TrigonometricFunction):
        candidates.append(_simplify(simple.rewrite(sp.exp)))  # cosh(asinh β)² → β² + 1
    h = min(candidates, key=sp.count_ops)
    if sp.count_ops(h) > _MAX_OPS_H:
        raise DerivationError(f"h(β) = {h} for {g} is too large to integrate.")
    return h

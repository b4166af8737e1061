r"""Sensitivities of the DEQ's coefficients to σ_a² and σ_b², derived by SymPy.

Every coefficient of :func:`~deqrmt.symbolic.derive_deq` (γ*, α*₁..₄, β*₁..₃, κ*) is an
expression in σ_a², σ_b², τ0 and moments of the centered φ_c = φ − c at τ*, and the centering
constant c = E[φ(τ*ξ)] and τ* itself are moments too; τ*² = q solves q = F(q) with
F(q) = σ_a² E[φ_c²(√q ξ)] + σ_b² τ0² (:func:`~deqrmt.symbolic.derive_fixed_point`).  With σ_a²
and σ_b² independent, the total derivative of a coefficient E is

    dE/dσ = ∂E/∂σ + (dE/dq) · dq/dσ,       dq/dσ = (∂F/∂σ) / (1 − F'(q))      (implicit function)

where ∂F/∂σ_a² = E[φ_c²], ∂F/∂σ_b² = τ0², and dE/dq differentiates every *raw* moment of φ at
scale √q by the heat rule d/dq E[g(√q ξ)] = E[g''(√q ξ)]/2 (weak derivatives: a kink of φ is a
Dirac mass in φ'' that Stein's identity integrates).  The centered moments are first written in
the raw ones (:func:`~deqrmt.symbolic._recursion.centered_moments`), so c's own dependence on q
is differentiated too.  The shift needs two moments the coefficients do not: E[(φ²)''''] (from
E[(φ²)'']) and E[(φ'²)''] (from E[φ'²]), named ``sq4`` and ``dsq2``; E[φ'''] and E[φ''''] come
from E[φ'] and E[φ''].
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping

import sympy as sp

from .._errors import DerivationError
from ._recursion import MomentSymbols, derive_deq, derive_fixed_point
from ._symbols import SIGMA_A2, SIGMA_B2, TAU_STAR

__all__ = ["SENSITIVITY_PARAMETERS", "DEQSensitivity", "derive_sensitivity"]

#: the parameters differentiated, by the name the results use
SENSITIVITY_PARAMETERS: dict[str, sp.Symbol] = {"sigma_a2": SIGMA_A2, "sigma_b2": SIGMA_B2}

#: the two moments only the derivatives need (names of deqrmt.symbolic._expectation.MOMENTS)
SQ4 = sp.Symbol("sq4", real=True)
DSQ2 = sp.Symbol("dsq2", real=True)


@dataclasses.dataclass(frozen=True)
class DEQSensitivity:
    r"""∂/∂σ_a² and ∂/∂σ_b² of every DEQ coefficient, as SymPy expressions.

    Attributes:
      m: the raw moment symbols of φ at τ* (``mu0`` = E[φ], ``mu1`` = E[φ'], …).
      dq: parameter name → dτ*²/dσ (the implicit derivative of the fixed point).
      derivatives: key (``tau_star``, ``gamma_star``, ``alpha_1`` …, ``center``) → parameter
        name → d(key)/dσ, in σ_a², σ_b², τ0, τ* (:data:`TAU_STAR`) and the raw moments
        (``sq4`` = E[(φ²)''''], ``dsq2`` = E[(φ'²)''] beside those of ``m``).
      trainable, center: the setting derived for.
    """

    m: MomentSymbols
    dq: Mapping[str, sp.Expr]
    derivatives: Mapping[str, Mapping[str, sp.Expr]]
    trainable: tuple[str, ...]
    center: bool

    def names(self) -> dict[sp.Symbol, str]:
        """Moment symbol → evaluator name (``mu3`` → ``d3``, ``sq4`` → ``sq4``, …)."""
        return {**self.m.names(), SQ4: "sq4", DSQ2: "dsq2", TAU_STAR: "tau_star"}


def derive_sensitivity(
    trainable: tuple[str, ...] = ("a", "A"), *, center: bool = True, drop_chain: bool = False
) -> DEQSensitivity:
    """Derive ∂/∂σ_a² and ∂/∂σ_b² of τ*, γ*, α*₁..₄, β*₁..₃, κ* and c (memoised).

    Args:
      trainable: the NTK's parameter set, as :func:`derive_deq`'s.
      center: φ centered at its own mean at τ* (the engine's default).
      drop_chain: leave out the dτ*/dσ chain term (a deliberately wrong formula for the tests'
        negative control; never what the engine evaluates).

    Returns:
      A :class:`DEQSensitivity`.

    Example:
      >>> s = derive_sensitivity()
      >>> s.dq["sigma_b2"]                  # dτ*²/dσ_b² = τ0² / (1 − F'(τ*²))
      tau_0**2/(mu0*mu2*sigma_a2 - sigma_a2*sq2/2 + 1)
    """
    return _derive(tuple(trainable), bool(center), bool(drop_chain))


@functools.lru_cache(maxsize=8)
def _derive(trainable: tuple[str, ...], center: bool, drop_chain: bool) -> DEQSensitivity:
    fpm = derive_fixed_point(center=center)
    m = fpm.m
    f = derive_deq(trainable=trainable)
    if f.m != m:
        raise DerivationError("derive_deq and derive_fixed_point use different moment symbols")
    q = sp.Symbol("q", positive=True)
    raw = (*m.mu[:5], m.sq, m.sq2, m.dsq)
    funcs = {s: sp.Function(f"{s.name}_of_q")(q) for s in raw}
    # heat rule: d/dq E[g(√q ξ)] = E[g''(√q ξ)]/2, so each raw moment moves up two orders
    shift = {m.mu[k]: m.mu[k + 2] for k in range(3)}
    shift.update({m.sq: m.sq2, m.sq2: SQ4, m.dsq: DSQ2})
    rule = {funcs[s].diff(q): shift[s] / 2 for s in shift}
    back = {v: k for k, v in funcs.items()}

    def d_dq(expr: sp.Expr) -> sp.Expr:
        d = expr.xreplace(funcs).diff(q).xreplace(rule).xreplace(back)
        if d.has(sp.Derivative):
            raise DerivationError(f"d/dq of {expr} needs a moment the heat rule cannot shift")
        return d

    # the coefficients in the raw moments (c = E[φ] inside the centered ones)
    coeffs = {k: e.xreplace(dict(fpm.centered)) for k, e in f.as_dict().items()}
    coeffs = {"tau_star": sp.sqrt(q), **coeffs, "center": fpm.center}
    dq: dict[str, sp.Expr] = {}
    out: dict[str, dict[str, sp.Expr]] = {k: {} for k in coeffs}
    for pname, sym in SENSITIVITY_PARAMETERS.items():
        # q = F(σ, q(σ)): dq/dσ = ∂F/∂σ / (1 − F'(q)), F' from the derivation of F itself
        dq[pname] = sp.diff(fpm.F, sym) / (1 - fpm.dF)
        chain = sp.S.Zero if drop_chain else dq[pname]
        for key, expr in coeffs.items():
            total = sp.diff(expr, sym) + d_dq(expr) * chain
            out[key][pname] = total.xreplace({q: TAU_STAR**2})
    return DEQSensitivity(
        m=m,
        dq=dq,
        derivatives={k: dict(v) for k, v in out.items()},
        trainable=f.trainable,
        center=center,
    )

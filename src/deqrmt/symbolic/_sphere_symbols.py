r"""The symbols of the sphere setting (HLD 2023): ρ, d, s = g(1), g(0), the targets α, β, μ,
the indexed derivatives f_j, g_j, h_j, k_j, m_j, e_j, and the dual activation f and NTK map h
as SymPy functions whose derivatives raise their order.

The derivation that uses them is :mod:`._sphere`; its module docstring gives the mathematics.
"""

from __future__ import annotations

import functools
from typing import Any

import sympy as sp
from sympy.core.function import ArgumentIndexError

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
    "f_symbol",
    "g_symbol",
    "h_symbol",
    "k_symbol",
    "m_symbol",
    "e_symbol",
]

#: ρ = x_iᵀx_j, the data inner product.
RHO = sp.Symbol("rho", real=True)
#: d, the data dimension.
DIM = sp.Symbol("d", positive=True)
#: s = g(1), the diagonal of G* (the pre-activation variance of every sample).
S = sp.Symbol("s", positive=True)
#: g(0), the off-diagonal kernel at orthogonal inputs (the paper's ∠*).
G0 = sp.Symbol("g_0", nonnegative=True)
#: the argument of the NTK map h.
C = sp.Symbol("c", real=True)
#: targets of Corollary 1: the (CK or NTK) equivalent's coefficients.
ALPHA, BETA, MU = sp.symbols("alpha beta mu", positive=True)
#: E[φ(√s ξ)²] = f(1) and E[φ'(√s ξ)²] = f'(1)/s.
M_SQ = sp.Symbol("m_sq", positive=True)
M_DSQ = sp.Symbol("m_dsq", positive=True)
#: the explicit network's moments at unit variance: E[σ(z)²], E[σ'(z)²].
E_SQ = sp.Symbol("e_sq", positive=True)
E_DSQ = sp.Symbol("e_dsq", nonnegative=True)
_A2, _A1, _A0 = sp.symbols("a_2 a_1 a_0", real=True)
_T = sp.Symbol("t", real=True)
#: the quadratic's unknowns, for callers that substitute numbers.
QUADRATIC_SYMBOLS = (_A2, _A1, _A0, _T)


@functools.cache
def f_symbol(j: int) -> sp.Symbol:
    """``f_j`` = f^{(j)}(g_0/s): the j-th derivative of the dual activation at the origin's fixed point."""
    return sp.Symbol(f"f_{j}", real=True)


@functools.cache
def g_symbol(j: int) -> sp.Symbol:
    """``g_j`` = g^{(j)}(0) (``g_0`` is :data:`G0`)."""
    return G0 if j == 0 else sp.Symbol(f"g_{j}", real=True)


@functools.cache
def h_symbol(j: int) -> sp.Symbol:
    """``h_j`` = h^{(j)}(g_0), the NTK map's derivatives at g(0)."""
    return sp.Symbol(f"h_{j}", real=True)


@functools.cache
def k_symbol(j: int) -> sp.Symbol:
    """``k_j`` = k^{(j)}(0), the NTK kernel's derivatives at ρ = 0."""
    return sp.Symbol(f"k_{j}", real=True)


@functools.cache
def m_symbol(j: int) -> sp.Symbol:
    """``m_j`` = E[φ^{(j)}(√s ξ)] (weak derivative; Stein: s^{-j/2} E[He_j(ξ) φ(√s ξ)])."""
    return sp.Symbol(f"m_{j}", real=True)


@functools.cache
def e_symbol(j: int) -> sp.Symbol:
    """``e_j`` = E[σ^{(j)}(z)], z ~ N(0, 1): the explicit activation's moments."""
    return sp.Symbol(f"e_{j}", real=True)


#: k(1) = h(s), the NTK's diagonal.
K_AT_1 = sp.Symbol("k_at_1", positive=True)


class DualDerivative(sp.Function):
    r"""``DualDerivative(n, r)`` = f^{(n)}(r), the n-th derivative of the dual activation.

    Differentiating in ``r`` raises ``n`` (so SymPy's chain rule needs no Subs objects).
    """

    nargs = 2

    def fdiff(self, argindex: int = 2) -> sp.Expr:
        if argindex != 2:
            raise ArgumentIndexError(self, argindex)
        n, r = self.args
        return DualDerivative(n + 1, r)

    def _latex(self, printer: Any) -> str:
        n, r = self.args
        mark = "" if n == 0 else (r"'" * int(n) if n <= 3 else f"^{{({n})}}")
        return f"f{mark}\\left({printer._print(r)}\\right)"


class NTKMapDerivative(sp.Function):
    r"""``NTKMapDerivative(n, c)`` = h^{(n)}(c), h(c) = c/(1 − σ_a² f'(c/s)/s) (HLD 2023, eq. (7))."""

    nargs = 2

    def fdiff(self, argindex: int = 2) -> sp.Expr:
        if argindex != 2:
            raise ArgumentIndexError(self, argindex)
        n, c = self.args
        return NTKMapDerivative(n + 1, c)

    def _latex(self, printer: Any) -> str:
        n, c = self.args
        mark = "" if n == 0 else (r"'" * int(n) if n <= 3 else f"^{{({n})}}")
        return f"h{mark}\\left({printer._print(c)}\\right)"

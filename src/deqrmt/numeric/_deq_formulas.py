"""The DEQ's and the explicit network's derived formulas, each compiled once.

* :func:`deq_formulas`: γ*, α*₁..₄, β*₁..₃, κ* of :func:`deqrmt.symbolic.derive_deq` (ICML 2024,
  Theorems 1–2) from the centered moments at τ* and the setting;
* :func:`map_formulas`: the variance map F(q) and F'(q) of
  :func:`deqrmt.symbolic.derive_fixed_point`, compiled apart (the Krawczyk step needs F at a
  point and F' on a ball, each from fewer moments than both);
* :func:`layer_formulas`: one layer of the explicit network's recursion
  (:func:`deqrmt.symbolic.derive_layer`, Theorem 3).

All are context-generic (:mod:`._formulas`): the verified path runs them on mpmath contexts,
the certified path on Arb balls, the float sweep on ``mpmath.fp``.
"""

from __future__ import annotations

import functools

import sympy as sp

from ..symbolic import SIGMA_A2, SIGMA_B2, TAU0, derive_deq, derive_fixed_point, derive_layer
from ._deq_records import DEQ_KEYS, NTK_KEYS
from ._formulas import Formulas, compile_formulas

__all__ = [
    "FORMULA_KEYS",
    "FORMULA_SYMBOLS",
    "deq_formulas",
    "formula_keys",
    "layer_formulas",
    "map_formulas",
]

#: what the compiled DEQ formulas return, in order (τ* comes from the solve, c from centering)
FORMULA_KEYS = DEQ_KEYS[1:-1]
#: the setting's symbols in the compiled functions, for introspection and tests
FORMULA_SYMBOLS = (SIGMA_A2, SIGMA_B2, TAU0)


def formula_keys(ntk: bool) -> tuple[str, ...]:
    """The keys :func:`deq_formulas` returns: all of :data:`FORMULA_KEYS`, or the CK's only."""
    return tuple(k for k in FORMULA_KEYS if ntk or k not in NTK_KEYS)


@functools.lru_cache(maxsize=8)
def deq_formulas(trainable: tuple[str, ...] = ("a", "A"), ntk: bool = True) -> Formulas:
    """The derived coefficient formulas: all of :data:`FORMULA_KEYS`, or the CK's only
    (``ntk=False``: σ_a² E[φ'²] ≥ 1, where the NTK does not exist)."""
    f = derive_deq(trainable=trainable)
    exprs = {k: e for k, e in f.as_dict().items() if ntk or k not in NTK_KEYS}
    return compile_formulas(
        "deq_coefficients",
        list(exprs.values()),
        f.m.names(),
        doc="Derived DEQ CK/NTK coefficients.",
    )


@functools.lru_cache(maxsize=4)
def map_formulas(center: bool) -> tuple[Formulas, Formulas]:
    """F(q) and F'(q) of :func:`derive_fixed_point`, compiled apart."""
    fpm = derive_fixed_point(center=center)
    names = fpm.m.names()
    return (
        compile_formulas(
            "variance_map_F", [fpm.F], names, doc="Derived variance_map_F, for certification."
        ),
        compile_formulas(
            "variance_map_dF", [fpm.dF], names, doc="Derived variance_map_dF, for certification."
        ),
    )


@functools.lru_cache(maxsize=2)
def layer_formulas() -> Formulas:
    """τ̃_l, α̃_{l,1..4}, β̃_{l,1..3}, κ̃_l from layer l − 1's values (``<key>_prev``)."""
    f = derive_layer()
    exprs = [sp.sqrt(f.tau_sq), *f.alpha, *f.beta, sp.sqrt(f.kappa_sq)]
    names = {**f.m.names(), **{v: k + "_prev" for k, v in f.prev.items()}}
    return compile_formulas(
        "layer_coefficients", exprs, names, doc="Derived explicit-layer recursion."
    )

"""The DEQ's and the explicit network's derived formulas, each compiled once.

* :func:`deq_formulas`: γ*, α*₁..₄, β*₁..₃, κ* of :func:`deqrmt.symbolic.derive_deq` (ICML 2024,
  Theorems 1–2) from the centered moments at τ* and the setting;
* :func:`map_formulas`: the variance map F(q) and F'(q) of
  :func:`deqrmt.symbolic.derive_fixed_point`, compiled apart (the Krawczyk step needs F at a
  point and F' on a ball, each from fewer moments than both);
* :func:`layer_formulas`: one layer of the explicit network's recursion
  (:func:`deqrmt.symbolic.derive_layer`, Theorem 3).

Each is printed once by SymPy into :mod:`._generated_formulas` (:mod:`._formula_table`), so a
cold process takes it from there.  All are context-generic (:mod:`._formulas`): the verified path runs them on mpmath contexts,
the certified path on Arb balls, the float sweep on ``mpmath.fp``.
"""

from __future__ import annotations

import functools

from ._deq_records import DEQ_KEYS, NTK_KEYS
from ._formula_table import deq_key, formula_set, map_key
from ._formulas import Formulas

__all__ = [
    "FORMULA_KEYS",
    "deq_formulas",
    "formula_keys",
    "layer_formulas",
    "map_formulas",
]

#: what the compiled DEQ formulas return, in order (τ* comes from the solve, c from centering)
FORMULA_KEYS = DEQ_KEYS[1:-1]


def formula_keys(ntk: bool) -> tuple[str, ...]:
    """The keys :func:`deq_formulas` returns: all of :data:`FORMULA_KEYS`, or the CK's only."""
    return tuple(k for k in FORMULA_KEYS if ntk or k not in NTK_KEYS)


def _formulas(key: str) -> Formulas:
    entry = formula_set(key)
    return Formulas(entry.function, entry.args)


@functools.lru_cache(maxsize=16)
def deq_formulas(trainable: tuple[str, ...] = ("a", "A"), ntk: bool = True) -> Formulas:
    """The derived coefficient formulas: all of :data:`FORMULA_KEYS`, or the CK's only
    (``ntk=False``: σ_a² E[φ'²] ≥ 1, where the NTK does not exist).

    From :mod:`._generated_formulas` (printed once from :func:`deqrmt.symbolic.derive_deq`), so
    a cold process neither imports SymPy for them nor derives them again."""
    return _formulas(deq_key(tuple(trainable), ntk))


@functools.lru_cache(maxsize=4)
def map_formulas(center: bool) -> tuple[Formulas, Formulas]:
    """F(q) and F'(q) of :func:`deqrmt.symbolic.derive_fixed_point`, compiled apart."""
    return (
        _formulas(map_key("variance_map_F", center)),
        _formulas(map_key("variance_map_dF", center)),
    )


@functools.lru_cache(maxsize=2)
def layer_formulas() -> Formulas:
    """τ̃_l, α̃_{l,1..4}, β̃_{l,1..3}, κ̃_l from layer l − 1's values (``<key>_prev``)."""
    return _formulas("layer")

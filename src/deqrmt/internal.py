"""The semi-public surface: names one package of deqrmt lends another, not part of the user API.

The import rule (docs/architecture.md) lets a package use another's names only through that
package's export table (its ``__init__``'s ``__all__``) or through this module.  The names here
are implementation details that more than one package needs (symbol tables, caps, helpers); they
may change between releases without notice.  Each is loaded on first use from the module that
defines it (PEP 562), so importing one name from here loads only its home, never a higher layer;
``tests/test_architecture.py`` charges every import from here to that home for the layer check.

From ``deqrmt.symbolic``:

- ``MOMENTS``: the Gaussian moments the engine evaluates, name → (label, key, order).
- ``FAMILY_MOMENTS``: the moments a parametric family's closed forms must provide.
- ``SYMBOLS``: coefficient key → (plain-text symbol, LaTeX symbol).
- ``tex_text``: text made safe for LaTeX text mode.
- ``tex_number``: a number's text for LaTeX math mode.
- ``value_status``: ``PROVEN`` or ``AGREED``, what holds for one value shown.
- ``bounded``: run a SymPy call under a budget of Python calls (None when it gives up).
- ``ALPHA``, ``BETA``, ``MU``, ``DIM``, ``RHO``: the sphere setting's symbols α, β, μ, d, ρ.
- ``QUADRATIC_SYMBOLS``: the symbols of Corollary 1's quadratic (a₂, a₁, a₀, t).
- ``polynomial_dual``: the exact dual E[σ(u)σ(v)] of a polynomial σ.

From ``deqrmt.numeric``:

- ``RANGES``: the accepted range of every problem parameter (sigma_a2, sigma_b2, tau0, …).
- ``MAX_LAYERS``: the most layers an explicit network may have.
- ``MAX_STARTS``: the most multistart points a design may ask for.
- ``number_grid``: exact numbers from ``"start:stop:count"`` or a comma list.
- ``exact_text``: canonical exact text of a rational ("0.05", else "p/q").
- ``check_sizes``: the implicit-bias problem sizes, checked.
- ``relative_gap``: ‖β − β̂‖ / ‖β̂‖ in float64.
- ``activation_functions``: φ and its derivatives compiled for one printer context.
- ``GRID_POINTS``: the points of the uniform scan that locates a spectrum's support.
- ``FLOAT``: the engine's float context (``mpmath.fp`` with float-accurate log1p, expm1, …).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .numeric._bias import check_sizes as check_sizes
    from .numeric._bias import relative_gap as relative_gap
    from .numeric._contexts import activation_functions as activation_functions
    from .numeric._design import MAX_STARTS as MAX_STARTS
    from .numeric._float_context import FLOAT as FLOAT
    from .numeric._problem import MAX_LAYERS as MAX_LAYERS
    from .numeric._problem import RANGES as RANGES
    from .numeric._problem import exact_text as exact_text
    from .numeric._problem import number_grid as number_grid
    from .numeric._spectrum import GRID_POINTS as GRID_POINTS
    from .symbolic._effort import bounded as bounded
    from .symbolic._expectation import MOMENTS as MOMENTS
    from .symbolic._family import FAMILY_MOMENTS as FAMILY_MOMENTS
    from .symbolic._latex import SYMBOLS as SYMBOLS
    from .symbolic._latex import tex_number as tex_number
    from .symbolic._latex import tex_text as tex_text
    from .symbolic._latex import value_status as value_status
    from .symbolic._sphere import ALPHA as ALPHA
    from .symbolic._sphere import BETA as BETA
    from .symbolic._sphere import DIM as DIM
    from .symbolic._sphere import MU as MU
    from .symbolic._sphere import QUADRATIC_SYMBOLS as QUADRATIC_SYMBOLS
    from .symbolic._sphere import RHO as RHO
    from .symbolic._sphere import polynomial_dual as polynomial_dual

#: name → the module that defines it (one table: the docstring lists each name, the
#: architecture test reads this table).
SOURCES: dict[str, str] = {
    **dict.fromkeys(("MOMENTS",), "deqrmt.symbolic._expectation"),
    **dict.fromkeys(("FAMILY_MOMENTS",), "deqrmt.symbolic._family"),
    **dict.fromkeys(
        ("SYMBOLS", "tex_number", "tex_text", "value_status"), "deqrmt.symbolic._latex"
    ),
    **dict.fromkeys(("bounded",), "deqrmt.symbolic._effort"),
    **dict.fromkeys(
        ("ALPHA", "BETA", "DIM", "MU", "QUADRATIC_SYMBOLS", "RHO", "polynomial_dual"),
        "deqrmt.symbolic._sphere",
    ),
    **dict.fromkeys(
        ("MAX_LAYERS", "RANGES", "exact_text", "number_grid"), "deqrmt.numeric._problem"
    ),
    **dict.fromkeys(("MAX_STARTS",), "deqrmt.numeric._design"),
    **dict.fromkeys(("check_sizes", "relative_gap"), "deqrmt.numeric._bias"),
    **dict.fromkeys(("activation_functions",), "deqrmt.numeric._contexts"),
    **dict.fromkeys(("GRID_POINTS",), "deqrmt.numeric._spectrum"),
    **dict.fromkeys(("FLOAT",), "deqrmt.numeric._float_context"),
}

__all__ = sorted(SOURCES)


def __getattr__(name: str) -> Any:
    if name in SOURCES:
        value = getattr(importlib.import_module(SOURCES[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'deqrmt.internal' has no attribute {name!r}")


def __dir__() -> list[str]:
    return list(__all__)

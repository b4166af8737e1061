"""The general derived formulas (those that do not depend on φ), generated once by SymPy.

What a cold ``deqrmt coefficients`` used to derive in every new process — the DEQ's CK/NTK
formulas (:func:`deqrmt.symbolic.derive_deq`, ICML 2024, Theorems 1–2) for every trainable set,
the variance map F, F' and the centering identities (:func:`deqrmt.symbolic.derive_fixed_point`)
and one explicit layer (:func:`deqrmt.symbolic.derive_layer`, Theorem 3) — is printed by the one
printer (:func:`._printer.function_source`) into :mod:`._generated_formulas`, a do-not-edit
module written by ``tools/regenerate_formulas.py``.  At run time :func:`formula_set` takes the
function from there (no SymPy import, no derivation); a key that is not there is derived and
compiled as before.  ``tests/test_generated_formulas.py`` derives every entry again with SymPy
and compares the module's text byte for byte, so the numbers stay derived, never typed in.

Each entry is a :class:`FormulaSet`: the function ``f(ctx, *args)``, its arguments' names in
the environment (``"sigma_a2"``, ``"d1"``, ``"sq"`` …) and its outputs' names.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import sympy as sp

__all__ = [
    "CENTER_KEYS",
    "ENGINE_MOMENTS",
    "FormulaSet",
    "KEYS",
    "TRAINABLE_SUBSETS",
    "deq_key",
    "derived_source",
    "formula_set",
    "map_key",
    "render_module",
]

#: every non-empty subset of (a, A, B), in that order (``parse_trainable``'s canonical form)
TRAINABLE_SUBSETS: tuple[tuple[str, ...], ...] = (
    ("a",), ("A",), ("B",), ("a", "A"), ("a", "B"), ("A", "B"), ("a", "A", "B"),
)  # fmt: skip
#: the variance map's two forms: φ centered at its own mean (the default) or as given
CENTER_KEYS = {True: "centered", False: "raw"}

#: the moments the engine evaluates (deqrmt.symbolic._expectation.MOMENTS), by symbol name
ENGINE_MOMENTS = ("phi", "d1", "d2", "sq", "sq2", "dsq")

#: the outputs that exist only with an NTK (σ_a² E[φ'²] < 1)
_NTK_OUTPUTS = ("beta_1", "beta_2", "beta_3", "kappa_star")


def deq_key(trainable: tuple[str, ...], ntk: bool) -> str:
    """``deq_a_A`` (CK and NTK) or ``deq_a_A_ck`` (the CK only: σ_a² E[φ'²] ≥ 1)."""
    return "deq_" + "_".join(trainable) + ("" if ntk else "_ck")


def map_key(part: str, center: bool) -> str:
    """``variance_map_F_centered``, ``centered_moments_raw`` …: the fixed point's functions."""
    return f"{part}_{CENTER_KEYS[center]}"


#: every generated entry, in the module's order
KEYS: tuple[str, ...] = (
    *(deq_key(t, ntk) for t in TRAINABLE_SUBSETS for ntk in (True, False)),
    *(
        map_key(part, center)
        for center in (True, False)
        for part in ("variance_map_F", "variance_map_dF", "variance_map", "centered_moments")
    ),
    "layer",
)


@dataclasses.dataclass(frozen=True)
class FormulaSet:
    """One compiled function of derived formulas: ``function(ctx, *args) -> tuple`` whose
    arguments are named ``args`` in the environment and whose values are named ``outputs``."""

    key: str
    function: Callable[..., tuple[Any, ...]]
    args: tuple[str, ...]
    outputs: tuple[str, ...]


def formula_set(key: str) -> FormulaSet:
    """The entry ``key``: from the generated module, or derived and compiled when absent."""
    from . import _generated_formulas

    entry: tuple[Any, ...] | None = _generated_formulas.FORMULAS.get(key)
    if entry is not None:
        fn, args, outputs = entry
        return FormulaSet(key, fn, args, outputs)
    return _compiled(key)


# --- the derivations (SymPy; the regeneration script, the test and a missing key) -------------


@dataclasses.dataclass(frozen=True)
class _Derived:
    """What the printer needs for one entry: argument symbols, expressions, names, doc."""

    args: tuple[sp.Symbol, ...]
    exprs: tuple[sp.Expr, ...]
    names: tuple[str, ...]
    outputs: tuple[str, ...]
    doc: str


def _sorted_args(exprs: list[sp.Expr]) -> tuple[sp.Symbol, ...]:
    free: set[sp.Symbol] = set().union(*(e.free_symbols for e in exprs))
    return tuple(sorted(free, key=str))


def _entry(
    exprs: list[sp.Expr], names: dict[sp.Symbol, str], outputs: tuple[str, ...], doc: str
) -> _Derived:
    args = _sorted_args(exprs)
    return _Derived(args, tuple(exprs), tuple(names.get(a, str(a)) for a in args), outputs, doc)


def _derive(key: str) -> _Derived:
    """Derive entry ``key`` with SymPy (the formulas before printing)."""
    from ..symbolic import SIGMA_A2, SIGMA_B2, TAU0, derive_deq, derive_fixed_point, derive_layer

    if key.startswith("deq_"):
        ntk = not key.endswith("_ck")
        trainable = tuple(key.removeprefix("deq_").removesuffix("_ck").split("_"))
        f = derive_deq(trainable=trainable)
        exprs = {k: e for k, e in f.as_dict().items() if ntk or k not in _NTK_OUTPUTS}
        outputs = tuple(exprs)
        what = "CK and NTK" if ntk else "CK only (no NTK)"
        return _entry(
            list(exprs.values()),
            f.m.names(),
            outputs,
            f"Derived DEQ coefficients, {what}, trainable {', '.join(trainable)} (derive_deq).",
        )
    if key == "layer":
        import sympy as sp

        lf = derive_layer()
        exprs_l = [sp.sqrt(lf.tau_sq), *lf.alpha, *lf.beta, sp.sqrt(lf.kappa_sq)]
        names = {**lf.m.names(), **{v: k + "_prev" for k, v in lf.prev.items()}}
        outputs = (
            "tau", "alpha_1", "alpha_2", "alpha_3", "alpha_4",
            "beta_1", "beta_2", "beta_3", "kappa",
        )  # fmt: skip
        return _entry(exprs_l, names, outputs, "Derived explicit-layer recursion (derive_layer).")
    part, _, form = key.rpartition("_")
    center = {v: k for k, v in CENTER_KEYS.items()}[form]
    fpm = derive_fixed_point(center=center)
    names = {**fpm.m.names(), SIGMA_A2: "sigma_a2", SIGMA_B2: "sigma_b2", TAU0: "tau_0"}
    doc = f"Derived by derive_fixed_point(center={center}): {part}."
    if part == "variance_map_F":
        return _entry([fpm.F], names, ("F",), doc)
    if part == "variance_map_dF":
        return _entry([fpm.dF], names, ("dF",), doc)
    if part == "variance_map":
        return _entry([fpm.F, fpm.dF, fpm.center], names, ("F", "dF", "center"), doc)
    if part == "centered_moments":
        targets = [s for s in fpm.centered if names[s] in ENGINE_MOMENTS]
        exprs_c = [fpm.center, *(fpm.centered[t] for t in targets)]
        return _entry(exprs_c, names, ("center", *(names[t] for t in targets)), doc)
    raise KeyError(key)


def _function_name(key: str) -> str:
    return f"f_{key}"


def derived_source(key: str) -> str:
    """The source of entry ``key``'s function, printed from a fresh SymPy derivation."""
    from ._printer import function_source

    d = _derive(key)
    return function_source(_function_name(key), d.args, d.exprs, d.doc)


def _compiled(key: str) -> FormulaSet:
    from ._printer import compile_function

    d = _derive(key)
    fn = compile_function(_function_name(key), d.args, d.exprs, d.doc)
    return FormulaSet(key, fn, d.names, d.outputs)


_HEADER = '''\
"""The general derived formulas, printed by SymPy's derivation (do not edit).

GENERATED by tools/regenerate_formulas.py from deqrmt.symbolic (derive_deq,
derive_fixed_point, derive_layer) through deqrmt.numeric._printer; DO NOT EDIT.  Regenerate with
``python tools/regenerate_formulas.py`` after a change to a derivation or to the printer;
tests/test_generated_formulas.py derives every entry again and fails when this file is stale.
Read at run time by deqrmt.numeric._formula_table.formula_set.
"""

# ruff: noqa
# mypy: ignore-errors
'''


def render_module() -> str:
    """The text of :mod:`._generated_formulas`: every entry of :data:`KEYS`, deterministic."""
    from ._printer import function_source

    parts = [_HEADER]
    table = []
    for key in KEYS:
        d = _derive(key)
        parts.append("\n" + function_source(_function_name(key), d.args, d.exprs, d.doc))
        table.append(f"    {key!r}: ({_function_name(key)}, {d.names!r}, {d.outputs!r}),")
    parts.append("\n#: key → (function, argument names, output names)\nFORMULAS = {\n")
    parts.append("\n".join(table) + "\n}\n")
    return "".join(parts)

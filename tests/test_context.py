"""Every context provides the names the printer emits: the Protocols of ``numeric._context``.

The reference is the printer itself, walked node class by node class over its whitelist: each
class (and each constant) is printed in both dialects and the ``ctx.<name>`` attributes of the
source are collected from its syntax tree.  Those names must be members of the Protocol for the
dialect, and every context must have every member (by ``hasattr``, independently of the
Protocol machinery, and by ``isinstance`` on the runtime-checkable Protocol).
"""

from __future__ import annotations

import ast
from typing import Any

import mpmath
import pytest
import sympy as sp
from sympy.codegen import cfunctions

from deqrmt.numeric._arb import ARB_FUNCTIONS, AcbContext, ArbContext
from deqrmt.numeric._context import (
    ARRAY_CONTEXT_NAMES,
    CONTEXT_NAMES,
    SCALAR_CONTEXT_NAMES,
    ArrayContext,
    Context,
    ScalarContext,
)
from deqrmt.numeric._contexts import NUMPY
from deqrmt.numeric._float_context import FLOAT
from deqrmt.numeric._interval import IntervalContext
from deqrmt.numeric._printer import _FUNCTIONS, _NODES, ARRAY_NAMES, function_source

try:
    from deqrmt.validate._torch_context import TORCH, TorchContext
except ImportError:  # torch is in [validate]
    TORCH = TorchContext = None  # type: ignore[assignment,misc]

X = sp.Symbol("x", real=True)
#: names a context has that no printed code calls (precision, and the engine's 0 and 1)
NOT_PRINTED = {"eps", "zero", "one"}


def _arity(cls: type) -> int:
    nargs = getattr(cls, "nargs", None)
    if isinstance(nargs, sp.FiniteSet):
        return int(min(nargs))
    return 2  # variadic (Max, Min)


def _node(cls: type) -> sp.Expr:
    """One expression whose top node is ``cls`` (arguments distinct, so nothing simplifies)."""
    args = [X + k for k in range(_arity(cls))]
    return cls(*args, evaluate=False)


def _emitted(expr: sp.Expr, *, arrays: bool) -> set[str]:
    src = function_source("f", [X], [expr], arrays=arrays)
    return {
        n.attr
        for n in ast.walk(ast.parse(src))
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "ctx"
    }


def _whitelist() -> list[sp.Expr]:
    """A node of every printable function class, every constant, a rational, the branches."""
    constants = [t() for t in _NODES if issubclass(t, sp.core.numbers.NumberSymbol)]
    constants += [sp.oo, sp.S.NegativeInfinity, sp.Rational(1, 3) * X]
    branches = [
        sp.Piecewise((X, sp.And(X > 0, X < 2)), (-X, sp.Or(X < -3, sp.Eq(X, -1))), (1, True)),
        sp.Piecewise((X, sp.Not(sp.And(X > 0, X < 1), evaluate=False))),
        sp.Max(X, 1, X**2),
        sp.Min(X, -1),
    ]
    # what a rewrite or a power builds: sqrt, and sympy.codegen's expm1 and log1p
    built = [sp.sqrt(X), cfunctions.expm1(X), cfunctions.log1p(X)]
    return [_node(c) for c in _FUNCTIONS] + [c * X for c in constants] + branches + built


WHITELIST = _whitelist()


def test_the_walk_covers_every_function_class() -> None:
    seen = {type(n) for e in WHITELIST for n in sp.preorder_traversal(e)}
    assert {c.__name__ for c in _FUNCTIONS - seen} == set()


def test_the_protocols_name_what_each_dialect_prints() -> None:
    scalar = set().union(*(_emitted(e, arrays=False) for e in WHITELIST))
    array = set().union(*(_emitted(e, arrays=True) for e in WHITELIST))
    assert scalar <= SCALAR_CONTEXT_NAMES, scalar - SCALAR_CONTEXT_NAMES
    assert array == ARRAY_NAMES  # the printer's own list is exactly what it prints
    assert ARRAY_CONTEXT_NAMES - NOT_PRINTED == ARRAY_NAMES
    # what Arb evaluates prints only the base Protocol's names
    arb_nodes = [e for e in WHITELIST if type(e) in ARB_FUNCTIONS]
    assert len(arb_nodes) == len(ARB_FUNCTIONS)
    arb = set().union(*(_emitted(e, arrays=False) for e in arb_nodes))
    assert arb <= CONTEXT_NAMES, arb - CONTEXT_NAMES
    assert CONTEXT_NAMES < SCALAR_CONTEXT_NAMES < ARRAY_CONTEXT_NAMES


def _mp() -> Any:
    ctx = mpmath.MPContext()
    ctx.dps = 30
    return ctx


_CONTEXTS: list[tuple[str, Any, type, frozenset[str]]] = [
    ("mpmath", _mp(), ScalarContext, SCALAR_CONTEXT_NAMES),
    ("FLOAT", FLOAT, ScalarContext, SCALAR_CONTEXT_NAMES),
    ("Arb", ArbContext(64), Context, CONTEXT_NAMES),
    ("Acb", AcbContext(64), Context, CONTEXT_NAMES),
    ("Interval", IntervalContext(64), Context, CONTEXT_NAMES),
    ("NUMPY", NUMPY, ArrayContext, ARRAY_CONTEXT_NAMES),
] + ([("TORCH", TORCH, ArrayContext, ARRAY_CONTEXT_NAMES)] if TORCH is not None else [])


@pytest.mark.parametrize(("ctx", "protocol", "names"), [c[1:] for c in _CONTEXTS],
                         ids=[c[0] for c in _CONTEXTS])  # fmt: skip
def test_every_context_has_every_name_of_its_protocol(ctx: Any, protocol: type, names: Any) -> None:
    assert sorted(n for n in names if not hasattr(ctx, n)) == []
    assert isinstance(ctx, protocol)


def test_the_protocol_check_can_fail() -> None:
    """``mpmath.fp`` lacks asinh, acosh and atanh (why the engine has ``FLOAT``): it is no
    scalar context, by the Protocol and by the names."""
    assert not isinstance(mpmath.fp, ScalarContext)
    assert sorted(n for n in SCALAR_CONTEXT_NAMES if not hasattr(mpmath.fp, n)) == [
        "acosh", "asinh", "atanh"
    ]  # fmt: skip


@pytest.mark.parametrize("ctx", [c[1] for c in _CONTEXTS], ids=[c[0] for c in _CONTEXTS])
def test_every_context_declares_its_precision(ctx: Any) -> None:
    """eps is the spacing of the context's numbers at 1: 1 + eps differs from 1, 1 + eps/4
    does not (round to nearest), each computed in the context."""
    eps = ctx.eps
    one = ctx.mpf(1)
    if isinstance(ctx, (ArbContext,)):  # a ball: its midpoint at the context's precision
        assert float(eps) == 2.0 ** (1 - ctx.prec)
        return
    if TorchContext is not None and isinstance(ctx, TorchContext):
        import torch

        t = torch.tensor(1.0, dtype=ctx.dtype)
        assert bool(t + eps != t) and bool(t + eps / 4 == t)
        return
    assert one + eps != one
    assert one + eps / 4 == one


def test_the_float_constants_are_the_correctly_rounded_ones() -> None:
    """The numpy context's γ is a literal (so that it imports no mpmath): γ rounded to float64
    by mpmath at 50 digits, and π, e by math."""
    with mpmath.workdps(50):
        assert NUMPY.euler == float(mpmath.euler)
        assert (NUMPY.pi, NUMPY.e) == (float(mpmath.pi), float(mpmath.e))

"""Refusals of the one printer (``numeric/_printer.py``): what cannot become code is a named
:class:`DerivationError`, never silently printed (an undeclared symbol, a float constant, a node
with no printer, labels that do not match the arguments)."""

from __future__ import annotations

import mpmath
import pytest
import sympy as sp

from deqrmt._errors import DerivationError
from deqrmt.numeric._printer import ContextPrinter, compile_function, function_source
from deqrmt.symbolic import X

Y = sp.Symbol("y")


def test_a_declared_symbol_prints_by_its_name_and_an_undeclared_one_is_refused() -> None:
    printer = ContextPrinter({X: "xx"})
    assert printer.doprint(X + 1) == "xx + 1"
    with pytest.raises(DerivationError, match="not a declared argument"):
        printer._print_Symbol(Y)
    with pytest.raises(DerivationError):
        printer.doprint(X + Y)


def test_a_float_constant_never_reaches_code() -> None:
    with pytest.raises(DerivationError, match="constants must be exact"):
        ContextPrinter({X: "x"})._print(sp.Float("1.5"))
    with pytest.raises(DerivationError):
        compile_function("f", [X], [X + sp.Float("0.1")])


def test_objects_without_a_printer_are_refused() -> None:
    printer = ContextPrinter({X: "x"})
    with pytest.raises(DerivationError, match="cannot be printed"):
        printer._print(object())
    with pytest.raises(DerivationError, match="cannot be printed"):
        printer._print_not_supported(sp.Eq(X, 1))


def test_labels_must_name_every_argument_once() -> None:
    with pytest.raises(DerivationError, match="do not name"):
        function_source("f", [X], [X], labels=["a", "b"])
    with pytest.raises(DerivationError, match="do not name"):
        function_source("f", [X, Y], [X + Y], labels=["a", "a"])
    src = function_source("f", [X, Y], [X * Y], labels=["a", "b"])
    assert src.startswith("def f(ctx, a, b):")


def test_an_unhashable_matrix_is_refused_by_name() -> None:
    """A mutable Matrix cannot key the memo; printed without it, it is still refused as a
    node outside the whitelist (not a raw TypeError from hashing)."""
    with pytest.raises(DerivationError):
        compile_function("g", [X], [sp.Matrix([[X + 1]])])
    fn = compile_function("f", [X], [X + 1])
    with mpmath.workdps(20):
        assert fn(mpmath.mp, mpmath.mpf(2)) == (3,)

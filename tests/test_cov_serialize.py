"""The cache's JSON reader refuses everything it does not write (edges of ``_serialize``).

Each refused text is written out by hand here: a name outside the whitelist, a call of a
call that is not ``Function``, keywords where none belong, malformed numbers, JSON shapes the
writer never emits.  Every refusal is an :class:`UnsafeEntry` (a ValueError), never a crash.
"""

from __future__ import annotations

import dataclasses
import math

import pytest
import sympy as sp

from deqrmt.symbolic._serialize import (
    UnsafeEntry,
    dumps,
    loads,
    read_srepr,
    registry_for,
)


@dataclasses.dataclass(frozen=True)
class _Point:
    x: int
    label: str


@dataclasses.dataclass(frozen=True)
class _Opaque:
    # An annotation that cannot be evaluated (no such name): it names no registrable type.
    hidden: NoSuchType  # type: ignore[name-defined]  # noqa: F821


_PLAIN = registry_for(_Point)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("os", "name 'os' is not allowed"),
        ("-Symbol('x')", "unary minus outside a number"),
        ("Symbol('f')(Symbol('x'))", "only Function(...) may be called twice"),
        ("Function('f', 'g')(Symbol('x'))", "Function takes one name"),
        ("Function('a b')(Symbol('x'))", "Function name must be a plain identifier"),
        ("Function('f')(Symbol('x'), evaluate=True)", "keywords in an applied function"),
        ("Integer('7')", "Integer takes integers"),
        ("Rational(1, 2, q=3)", "Rational takes integers"),
        ("Float(1)", "bad Float"),
        ("Float('1.5', dps=3)", "bad Float"),
        ("Float('1.5', precision=5000)", "Float precision out of range"),
        ("Float('1.5', precision=0)", "Float precision out of range"),
        ("Add(Symbol('x'), Symbol('y'), evaluate=True)", "keywords in Add(...)"),
        ("Symbol('x', commutative=1)", "keyword 'commutative' is not an assumption"),
        ("Symbol('x', **True)", "keyword None is not an assumption"),
        ("Symbol('x', real=1.5)", "expected a literal"),
        ("PaperSymbol('mallory')", "PaperSymbol 'mallory' is not one of ours"),
        ("Lambda(Symbol('x'), Symbol('x'))", "class 'Lambda' is not allowed"),
        ("Add(Symbol('x'),", "unparseable srepr"),
        ("[Symbol('x')]", "unexpected syntax List"),
    ],
)
def test_read_srepr_refuses_what_it_never_writes(text: str, why: str) -> None:
    with pytest.raises(UnsafeEntry, match=why.replace("(", r"\(").replace(")", r"\)")):
        read_srepr(text)


def test_read_srepr_takes_only_text() -> None:
    with pytest.raises(UnsafeEntry, match="missing or too long"):
        read_srepr(b"Symbol('x')")  # type: ignore[arg-type]


def test_extra_functions_must_be_sympy_function_classes() -> None:
    with pytest.raises(TypeError, match="sympy.Function subclasses"):
        read_srepr("Symbol('x')", functions=(int,))  # type: ignore[arg-type]
    # a registered function class is rebuilt under its own name
    f = sp.Function("g_extra")
    x = sp.Symbol("x")
    assert read_srepr(sp.srepr(f(x)), functions=(f,)) == f(x)


def test_read_srepr_rebuilds_what_it_writes() -> None:
    x = sp.Symbol("x", positive=True)
    g = sp.Function("g")  # (srepr drops a function's assumptions: dumps' round trip refuses it)
    assert read_srepr("Mul(Integer(-3), Symbol('x', positive=True))", ()) == -3 * x
    assert read_srepr("-oo") is sp.S.NegativeInfinity  # the one unary minus read
    unevaluated = read_srepr("Add(-oo, Integer(1))")  # evaluate=False: kept as written
    assert isinstance(unevaluated, sp.Add) and set(unevaluated.args) == {-sp.oo, sp.S.One}
    assert read_srepr("Rational(-1, 3)") == sp.Rational(-1, 3)
    assert read_srepr("Float('0.125', precision=53)") == sp.Float(0.125)
    assert read_srepr(sp.srepr(g(x))) == g(x)
    assert read_srepr("Interval(Integer(0), Integer(1))") == sp.Interval(0, 1)
    # evaluate=False: the tree read is the tree written, a huge power stays a power
    huge = read_srepr("Pow(Integer(2), Integer(1000000000))")
    assert isinstance(huge, sp.Pow) and huge.exp == 10**9


def test_float_round_trip_and_nan_is_not_cached() -> None:
    for value in (1.5, -0.0, 1e-300, (2.5, [3.25])):
        text = dumps(value, _PLAIN)
        assert loads(text, _PLAIN) == value
    assert dumps(0.1, _PLAIN) == '{"float":"0.1"}'
    # NaN is not equal to itself: the round-trip check refuses to store it
    with pytest.raises(ValueError, match="does not survive the round trip"):
        dumps(math.nan, _PLAIN)


def test_registered_dataclass_round_trip_and_unregistered_refused() -> None:
    p = _Point(3, "a")
    text = dumps({"k": p, 1: None}, _PLAIN)
    assert loads(text, _PLAIN) == {"k": p, 1: None}
    with pytest.raises(TypeError, match="not a registered type"):
        dumps(p, registry_for(_Opaque))


def test_unevaluable_annotation_registers_the_class_alone() -> None:
    reg = registry_for(_Opaque)
    assert list(reg.dataclasses.values()) == [_Opaque]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("{not json", "not JSON"),
        ("1.5", "unexpected JSON value"),
        ('{"a":1,"b":2,"c":3}', "unexpected JSON value"),
        ('{"dict":[[1]]}', "bad dict item"),
        ('{"dict":[1]}', "bad dict item"),
        ('{"float":"one"}', "bad float"),
        ('{"float":1.5}', "unknown tag 'float'"),
        ('{"pickle":"x"}', "unknown tag 'pickle'"),
        ('{"type":"builtins.object","fields":{}}', "is not registered"),
        (f'{{"type":"{__name__}._Point","fields":[]}}', "is not registered"),
        (f'{{"type":"{__name__}._Point","fields":{{"x":1}}}}', "fields of _Point do not match"),
        ('{"sympy":"Symbol(\'x\')(1)"}', "only Function"),
    ],
)
def test_loads_refuses_foreign_json(text: str, why: str) -> None:
    with pytest.raises(UnsafeEntry, match=why.replace("(", r"\(")):
        loads(text, _PLAIN)


def test_loads_refuses_an_oversized_entry_before_parsing() -> None:
    from deqrmt.symbolic import _serialize

    with pytest.raises(UnsafeEntry, match="entry too long"):
        loads(" " * (_serialize._MAX_TEXT + 1), _PLAIN)

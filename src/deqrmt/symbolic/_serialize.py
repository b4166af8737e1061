"""JSON text for cached symbolic results, read back without executing anything.

The disk cache used to be pickle, which runs code named by the file: a planted entry in a shared
``DEQRMT_CACHE_DIR`` would run as the user.  Here a value is encoded as JSON, SymPy expressions
as ``sp.srepr`` strings, and read back by a reader that parses the srepr with
``ast.parse(mode="eval")`` and rebuilds only calls of whitelisted SymPy classes with literal or
rebuilt arguments; never ``eval`` or ``sympify``.  Dataclasses are rebuilt only when their type
is in the registry the caller passes (by default the expected type and the dataclasses its
field annotations name, recursively).

This module is one layer of the cache's threat model (:mod:`deqrmt.symbolic._cache`: the text
it reads is untrusted until its MAC verifies, and even then only data).  Names of symbols and
undefined functions must be identifiers (``str.isidentifier``: letters, digits, ``_``; Greek
letters too) of at most 64 characters, so no quote, parenthesis or newline is ever rebuilt into
a name; and no name is ever printed into code (:mod:`deqrmt.numeric._printer` names every
symbol itself).  The formulas' own symbols (:class:`~deqrmt.symbolic._symbols.PaperSymbol`, which
print as LaTeX) are written ``PaperSymbol('sigma_a2', positive=True)`` and rebuilt only under
the names that module defines, so their LaTeX is always the package's.

Encoding::

    None, bool, int, str      JSON as is            list   JSON array
    float                     {"float": repr}       tuple  {"tuple": [...]}
    dict (any keys)           {"dict": [[k, v], ...]}
    SymPy Basic               {"sympy": srepr(order="none"), the args in stored order}
    registered dataclass      {"type": "module.Name", "fields": {name: value, ...}}

Expressions are rebuilt with ``evaluate=False`` where the class takes it, so the tree read is
the tree written (``Pow(Integer(2), Integer(10**9))`` stays a tree instead of a huge number);
:func:`dumps` checks that ``loads(dumps(v)) == v`` before anything is stored.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import typing
from collections.abc import Iterable, Mapping
from typing import Any

import sympy as sp
from sympy.core.assumptions import _assume_defined
from sympy.functions.elementary.piecewise import ExprCondPair
from sympy.functions.special.hyper import TupleArg

from ._symbols import PaperSymbol, paper_latex

__all__ = ["dumps", "loads", "Registry", "registry_for", "UnsafeEntry", "read_srepr"]


class UnsafeEntry(ValueError):
    """The text is not something this module writes (tampered, foreign or corrupt)."""


# --- SymPy: srepr reader ---------------------------------------------------------------------

#: classes a cached expression may be built from (srepr prints the class name)
_CLASSES: tuple[type[sp.Basic], ...] = (
    sp.Add, sp.Mul, sp.Pow,
    sp.exp, sp.log, sp.erf, sp.erfc, sp.erfi, sp.Abs, sp.sign, sp.Heaviside, sp.Max, sp.Min,
    sp.sin, sp.cos, sp.tan, sp.sinh, sp.cosh, sp.tanh,
    sp.asin, sp.acos, sp.atan, sp.atan2, sp.asinh, sp.acosh, sp.atanh, sp.re, sp.im,
    sp.gamma, sp.lowergamma, sp.uppergamma, sp.Ei, sp.expint, sp.Si, sp.Ci, sp.LambertW,
    sp.besseli, sp.besselj, sp.besselk, sp.hyper, sp.meijerg, sp.polylog, sp.DiracDelta,
    sp.Piecewise, ExprCondPair,
    sp.Equality, sp.Unequality, sp.StrictGreaterThan, sp.StrictLessThan, sp.GreaterThan,
    sp.LessThan, sp.And, sp.Or, sp.Not,
    sp.Tuple, TupleArg, sp.Integral, sp.Derivative,
    sp.Interval, sp.Union, sp.Intersection, sp.Complement, sp.FiniteSet,
)  # fmt: skip
#: singletons srepr prints as a bare name
_NAMES: dict[str, sp.Basic] = {
    "pi": sp.pi, "E": sp.E, "I": sp.I, "oo": sp.oo, "zoo": sp.zoo, "nan": sp.nan,
    "true": sp.true, "false": sp.false, "EulerGamma": sp.EulerGamma,
    "Reals": sp.S.Reals, "EmptySet": sp.S.EmptySet, "Integers": sp.S.Integers,
    "Naturals": sp.S.Naturals, "Naturals0": sp.S.Naturals0, "Complexes": sp.S.Complexes,
}  # fmt: skip
_ASSUMPTIONS = frozenset(_assume_defined)
_MAX_FLOAT_PRECISION = 4096  # bits; Float('1', precision=10**9) would allocate gigabytes
_MAX_TEXT = 64 * 2**20  # characters of one entry
_MAX_NAME = 64  # characters of a symbol's or function's name


def _plain_name(name: str) -> bool:
    """A symbol's or function's name as we write them: an identifier, not too long."""
    return name.isidentifier() and len(name) <= _MAX_NAME


def _takes_evaluate(cls: type) -> bool:
    """Whether ``cls`` takes ``evaluate=False`` (the others do not rewrite their arguments)."""
    plain = (sp.Tuple, sp.Integral, sp.Interval, ExprCondPair)
    return not issubclass(cls, plain)


class _Reader:
    def __init__(self, functions: Iterable[type[sp.Basic]]) -> None:
        self.classes: dict[str, type[sp.Basic]] = {c.__name__: c for c in _CLASSES}
        for f in functions:
            if not (isinstance(f, type) and issubclass(f, sp.Function)):
                raise TypeError(f"functions must be sympy.Function subclasses, got {f!r}.")
            self.classes[f.__name__] = f

    def read(self, text: str) -> sp.Basic:
        if not isinstance(text, str) or len(text) > _MAX_TEXT:
            raise UnsafeEntry("srepr text missing or too long")
        try:
            tree = ast.parse(text, mode="eval")
        except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
            raise UnsafeEntry(f"unparseable srepr: {exc}") from None
        out = self._node(tree.body)
        if not isinstance(out, sp.Basic):
            raise UnsafeEntry("srepr does not describe a SymPy object")
        return out

    def _literal(self, node: ast.expr) -> object:
        """An int, str or bool literal (ints may carry a unary minus)."""
        if isinstance(node, ast.Constant) and type(node.value) in (int, str, bool):
            return node.value
        if (
            isinstance(node, ast.UnaryOp)
            and isinstance(node.op, ast.USub)
            and isinstance(node.operand, ast.Constant)
            and type(node.operand.value) is int
        ):
            return -node.operand.value
        raise UnsafeEntry(f"expected a literal, got {ast.dump(node)[:80]}")

    def _assumptions(
        self, keywords: list[ast.keyword], extra: tuple[str, ...] = ()
    ) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for kw in keywords:
            value = self._literal(kw.value)
            ok = (kw.arg in extra and type(value) is int) or (
                kw.arg in _ASSUMPTIONS and type(value) is bool
            )
            if kw.arg is None or not ok:
                raise UnsafeEntry(f"keyword {kw.arg!r} is not an assumption")
            out[kw.arg] = value
        return out

    def _node(self, node: ast.expr) -> sp.Basic:
        if isinstance(node, ast.Name):
            if node.id in _NAMES:
                return _NAMES[node.id]
            raise UnsafeEntry(f"name {node.id!r} is not allowed")
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            if isinstance(node.operand, ast.Name) and node.operand.id == "oo":
                return sp.S.NegativeInfinity
            raise UnsafeEntry("unary minus outside a number")
        if not isinstance(node, ast.Call):
            raise UnsafeEntry(f"unexpected syntax {type(node).__name__}")
        func = node.func
        if isinstance(func, ast.Call):
            # Function('g', real=True)(x): an undefined function applied.
            if not (isinstance(func.func, ast.Name) and func.func.id == "Function"):
                raise UnsafeEntry("only Function(...) may be called twice")
            if len(func.args) != 1:
                raise UnsafeEntry("Function takes one name")
            name = self._literal(func.args[0])
            if type(name) is not str or not _plain_name(name):
                raise UnsafeEntry("Function name must be a plain identifier")
            undef = sp.Function(name, **self._assumptions(func.keywords))
            if node.keywords:
                raise UnsafeEntry("keywords in an applied function")
            return undef(*[self._node(a) for a in node.args])  # type: ignore[no-any-return]
        if not isinstance(func, ast.Name):
            raise UnsafeEntry("call of something other than a class name")
        name = func.id
        args = node.args
        if name in ("Symbol", "Dummy", "PaperSymbol"):
            label = self._literal(args[0]) if len(args) == 1 else None
            if type(label) is not str or not _plain_name(label):
                raise UnsafeEntry(f"{name} takes one plain identifier")
            extra = ("dummy_index",) if name == "Dummy" else ()
            kwargs = self._assumptions(node.keywords, extra)
            if name == "PaperSymbol":  # only the package's own (its LaTeX is package text)
                if paper_latex(label) is None:
                    raise UnsafeEntry(f"PaperSymbol {label!r} is not one of ours")
                return PaperSymbol(label, **kwargs)
            return sp.Dummy(label, **kwargs) if name == "Dummy" else sp.Symbol(label, **kwargs)
        if name in ("Integer", "Rational"):
            nums = [self._literal(a) for a in args]
            if node.keywords or not all(type(n) is int for n in nums):
                raise UnsafeEntry(f"{name} takes integers")
            if name == "Integer" and len(nums) == 1:
                return sp.Integer(nums[0])
            if name == "Rational" and len(nums) == 2 and nums[1] != 0:
                return sp.Rational(nums[0], nums[1])
            raise UnsafeEntry(f"bad {name}")
        if name == "Float":
            digits = self._literal(args[0]) if len(args) == 1 else None
            kw = {k.arg: self._literal(k.value) for k in node.keywords}
            prec = kw.pop("precision", 53)
            if type(digits) is not str or kw or type(prec) is not int:
                raise UnsafeEntry("bad Float")
            if not 1 <= prec <= _MAX_FLOAT_PRECISION or len(digits) > 2000:
                raise UnsafeEntry("Float precision out of range")
            return sp.Float(digits, precision=prec)
        cls = self.classes.get(name)
        if cls is None:
            raise UnsafeEntry(f"class {name!r} is not allowed")
        if node.keywords:
            raise UnsafeEntry(f"keywords in {name}(...)")
        built = [self._node(a) for a in args]
        if _takes_evaluate(cls):
            return cls(*built, evaluate=False)  # type: ignore[call-arg]
        return cls(*built)


def read_srepr(text: str, functions: Iterable[type[sp.Basic]] = ()) -> sp.Basic:
    """Rebuild the SymPy object ``sp.srepr`` printed as ``text``, or raise :class:`UnsafeEntry`.

    Only whitelisted classes (and the ``functions`` given, e.g. ``DualDerivative``) are called,
    with literal or rebuilt arguments.

    Example:
      >>> read_srepr("Mul(Integer(2), Symbol('x', positive=True))")
      2*x
      >>> read_srepr("__import__('os').system('true')")  # doctest: +IGNORE_EXCEPTION_DETAIL
      Traceback (most recent call last):
        ...
      deqrmt.symbolic._serialize.UnsafeEntry: call of something other than a class name
    """
    return _Reader(functions).read(text)


# --- dataclasses: the registry ---------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Registry:
    """What an entry may rebuild: dataclasses by ``module.QualName`` and extra SymPy functions."""

    dataclasses: Mapping[str, type]
    functions: tuple[type[sp.Basic], ...] = ()


def _type_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _mentioned_dataclasses(hint: object, out: dict[str, type]) -> None:
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        if _type_name(hint) in out:
            return
        out[_type_name(hint)] = hint
        try:
            hints = typing.get_type_hints(hint)
        except Exception:  # an annotation that cannot be evaluated names no registrable type
            hints = {}
        for h in hints.values():
            _mentioned_dataclasses(h, out)
        return
    for arg in typing.get_args(hint):
        _mentioned_dataclasses(arg, out)


def registry_for(
    expect: type | tuple[type, ...],
    types_: Iterable[type] = (),
    functions: Iterable[type[sp.Basic]] = (),
) -> Registry:
    """The registry for a value of type ``expect``: it and the dataclasses its fields name."""
    roots = (expect,) if isinstance(expect, type) else tuple(expect)
    found: dict[str, type] = {}
    for cls in (*roots, *types_):
        _mentioned_dataclasses(cls, found)
    return Registry(found, tuple(functions))


# --- encode / decode -------------------------------------------------------------------------


def _encode(value: object, reg: Registry) -> object:
    if value is None or type(value) in (bool, int, str):
        return value
    if type(value) is float:
        return {"float": repr(value)}
    if isinstance(value, sp.Basic):
        # order="none": the args as stored; srepr would sort them, and a non-canonical tree
        # (sp.factor builds Mul(-1, 2, x)) would then come back as a different tree.
        return {"sympy": sp.srepr(value, order="none")}
    if type(value) is tuple:
        return {"tuple": [_encode(v, reg) for v in value]}
    if type(value) is list:
        return [_encode(v, reg) for v in value]
    if type(value) is dict:
        return {"dict": [[_encode(k, reg), _encode(v, reg)] for k, v in value.items()]}
    cls = type(value)
    if dataclasses.is_dataclass(value) and reg.dataclasses.get(_type_name(cls)) is cls:
        fields = {f.name: _encode(getattr(value, f.name), reg) for f in dataclasses.fields(value)}
        return {"type": _type_name(cls), "fields": fields}
    raise TypeError(f"cannot cache a {cls.__name__}: not a registered type")


def _decode(obj: object, reg: Registry, reader: _Reader) -> object:
    if obj is None or type(obj) in (bool, int, str):
        return obj
    if type(obj) is list:
        return [_decode(v, reg, reader) for v in obj]
    if type(obj) is not dict or len(obj) not in (1, 2):
        raise UnsafeEntry("unexpected JSON value")
    if len(obj) == 1:
        ((tag, body),) = obj.items()
        if tag == "sympy":
            return reader.read(body)
        if tag == "tuple" and type(body) is list:
            return tuple(_decode(v, reg, reader) for v in body)
        if tag == "dict" and type(body) is list:
            out = {}
            for pair in body:
                if type(pair) is not list or len(pair) != 2:
                    raise UnsafeEntry("bad dict item")
                out[_decode(pair[0], reg, reader)] = _decode(pair[1], reg, reader)
            return out
        if tag == "float" and type(body) is str:
            try:
                return float(body)
            except ValueError:
                raise UnsafeEntry("bad float") from None
        raise UnsafeEntry(f"unknown tag {tag!r}")
    cls = reg.dataclasses.get(obj.get("type"))  # type: ignore[arg-type]
    fields = obj.get("fields")
    if cls is None or type(fields) is not dict:
        raise UnsafeEntry(f"type {obj.get('type')!r} is not registered")
    names = {f.name for f in dataclasses.fields(cls) if f.init}
    if set(fields) != names:
        raise UnsafeEntry(f"fields of {cls.__name__} do not match")
    return cls(**{k: _decode(v, reg, reader) for k, v in fields.items()})


def dumps(value: object, reg: Registry) -> str:
    """JSON text for ``value``; raises TypeError/ValueError if it cannot be stored exactly."""
    text = json.dumps(_encode(value, reg), ensure_ascii=True, separators=(",", ":"))
    if loads(text, reg) != value:
        raise ValueError("value does not survive the round trip; not cached")
    return text


def loads(text: str, reg: Registry) -> object:
    """The value :func:`dumps` wrote; :class:`UnsafeEntry` for anything else."""
    if len(text) > _MAX_TEXT:
        raise UnsafeEntry("entry too long")
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise UnsafeEntry(f"not JSON: {exc}") from None
    return _decode(obj, reg, _Reader(reg.functions))

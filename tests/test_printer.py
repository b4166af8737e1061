"""The one door into executed code (issue 27) and names that are ours (issue 25).

Every path from SymPy to executed source (``compile_function``, ``function_source``,
``print_constant``, the printer itself, the array dialect for numpy/torch) accepts only
declared symbols and whitelisted classes and prints every symbol as an identifier of its own.
The serializer rebuilds any name for a Symbol, Dummy or undefined Function from a cache file;
here each class it whitelists carries hostile names through each path, and nothing runs.
"""

from __future__ import annotations

import ast
import math
import os
import subprocess
from pathlib import Path

import mpmath
import pytest
import sympy as sp
from hypothesis import example, given
from hypothesis import strategies as st
from sympy.functions.elementary.piecewise import ExprCondPair

from deqrmt._errors import DerivationError
from deqrmt.numeric._contexts import NUMPY
from deqrmt.numeric._printer import (
    STABLE_FORMS,
    ContextPrinter,
    Logistic,
    Softplus,
    compile_function,
    function_source,
    print_constant,
    stable_forms,
)
from deqrmt.symbolic import X
from deqrmt.symbolic._serialize import _CLASSES, _NAMES


def _hostile_names(marker: Path) -> list[str]:
    run = f"open({str(marker)!r}, 'w')"
    return [
        f"({run} and 0)",  # parentheses: the exploit
        f"__import__('os').system('touch {marker}')",
        f"x'\"; {run}; '",  # quotes
        f"x\n{run}\n",  # newlines
        "lambda",  # keywords
        "import",
        "ξ\u202e\x1b[2J",  # Unicode, bidi override, ESC
        "ctx",  # the generated code's own names
        "_a0",
        "_t0",
        "exp",
    ]


def _carriers(name: str) -> list[sp.Basic]:
    return [
        sp.Symbol(name),
        sp.Symbol(name, real=True),
        sp.Dummy(name),
        sp.Wild(name),
        sp.Function(name)(X),
    ]


def _instances(c: sp.Basic) -> list[sp.Basic]:
    """One instance of every class the serializer rebuilds (and each named singleton),
    containing ``c``."""
    special = {
        "Piecewise": lambda: sp.Piecewise((c, X > 0), (0, True)),
        "ExprCondPair": lambda: ExprCondPair(c, X > 0),
        "And": lambda: sp.And(sp.Gt(c, 0), X > 0),
        "Or": lambda: sp.Or(sp.Gt(c, 0), X > 0),
        "Not": lambda: sp.Not(sp.Gt(c, 0)),
        "Integral": lambda: sp.Integral(c, (X, 0, 1)),
        "hyper": lambda: sp.hyper([c], [1], X),
        "meijerg": lambda: sp.meijerg([[c], []], [[], []], X),
        "Union": lambda: sp.Union(sp.Interval(c, 1), sp.Interval(2, 3), evaluate=False),
        "Intersection": lambda: sp.Intersection(
            sp.Interval(c, 1), sp.Interval(0, 3), evaluate=False
        ),
        "Complement": lambda: sp.Complement(sp.Interval(c, 1), sp.Interval(0, 3), evaluate=False),
    }
    out: list[sp.Basic] = []
    for cls in _CLASSES:
        made = None
        if cls.__name__ in special:
            made = special[cls.__name__]()
        else:
            for args in ((c, X), (c,), (c, X, X)):
                try:
                    made = cls(*args, evaluate=False)
                except TypeError:
                    try:
                        made = cls(*args)
                    except Exception:
                        continue
                except Exception:
                    continue
                if made.has(c):
                    break
        assert made is not None and made.has(c), cls
        out.append(made)
    if isinstance(c, sp.Symbol):  # a bound variable too
        out.append(sp.Integral(X, (c, 0, 1)))
    out += [sp.Add(v, c, evaluate=False) for v in _NAMES.values() if isinstance(v, sp.Expr)]
    return out


def _paths() -> list:  # type: ignore[type-arg]
    return [
        lambda e: compile_function("f", [X], [e]),
        lambda e: function_source("f", [X], [e]),
        lambda e: function_source("f", [X], [e], labels=("x",), rewrite=STABLE_FORMS),
        lambda e: print_constant(e),
        lambda e: ContextPrinter({X: "x"}).doprint(e),
        lambda e: compile_function("f", [X], [e], arrays=True),
        lambda e: compile_function("f", [X], [e, X], rewrite=STABLE_FORMS, arrays=True),
        lambda e: ContextPrinter({X: "x"}, arrays=True).doprint(e),
    ]


@pytest.mark.parametrize("which", range(len(_hostile_names(Path("m")))))
def test_no_hostile_name_runs_through_any_path(tmp_path: Path, which: int) -> None:
    marker = tmp_path / "executed"
    name = _hostile_names(marker)[which]
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        for carrier in _carriers(name):
            for expr in _instances(carrier):
                for path in _paths():
                    with pytest.raises(DerivationError):
                        path(expr)
    finally:
        os.chdir(cwd)
    assert list(tmp_path.iterdir()) == []


def _identifiers(src: str) -> set[str]:
    """Every name the source binds or reads (attributes of ``ctx`` aside)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, ast.FunctionDef):
            out.add(node.name)
    return out


@pytest.mark.parametrize("which", range(len(_hostile_names(Path("m")))))
def test_a_declared_argument_prints_as_ours_whatever_its_name(tmp_path: Path, which: int) -> None:
    name = _hostile_names(tmp_path / "executed")[which]
    for a in (sp.Symbol(name), sp.Symbol(name, positive=True), sp.Dummy(name)):
        src = function_source("f", [a, X], [a * X + 1, sp.tanh(a) + sp.tanh(a) ** 2])
        assert src.startswith("def f(ctx, _a0, _a1):\n")
        assert _identifiers(src) <= {"f", "ctx", "_a0", "_a1", "_t0"}, src
        f = compile_function("f", [a, X], [a * X + 1])
        assert f(mpmath.mp, 2, 3) == (7,)
        g = compile_function("g", [a], [a**2], arrays=True)
        assert g(NUMPY, 3.0) == (9.0,)
        assert _identifiers(function_source("g", [a], [a**2], arrays=True)) <= {"g", "ctx", "_a0"}
    assert list(tmp_path.iterdir()) == []


def test_foreign_symbols_are_refused_even_when_named_like_ours() -> None:
    y = sp.Symbol("y")
    for stranger in (y, sp.Symbol("_a0"), sp.Symbol("x"), sp.Dummy("x")):  # X is x, real
        with pytest.raises(DerivationError, match="declared argument"):
            function_source("f", [X], [X + stranger])
    with pytest.raises(DerivationError):
        function_source("f", [X, X], [X])  # arguments are distinct
    with pytest.raises(DerivationError):
        function_source("f", [sp.Wild("w")], [X])


@pytest.mark.parametrize("name", ["f(x)", "a b", "def", "", "x\n", "é", "_" * 100])
def test_function_names_are_plain_identifiers(name: str) -> None:
    with pytest.raises(DerivationError):
        function_source(name, [X], [X])


@pytest.mark.parametrize("label", ["ctx", "lambda", "_a0", "X", "x y", "abs", "max", "ξ"])
def test_labels_are_our_fixed_lowercase_names(label: str) -> None:
    with pytest.raises(DerivationError):
        function_source("f", [X], [X], labels=(label,))
    assert function_source("f", [X], [X], labels=("x",)) == "def f(ctx, x):\n    return (x,)\n"


def test_family_parameter_named_ctx(cli_prefix: list[str], tmp_path: Path) -> None:
    # issue 25: "SyntaxError: duplicate argument 'ctx'" from generated code (exit 70)
    proc = subprocess.run(
        [*cli_prefix, "design", "--deq", "tanh", "--family", "ctx*x + a*x**3", "--starts", "4"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    assert "parameters a, ctx" in proc.stdout and "solution 1: a = 0.0644683538717" in proc.stdout


# --- stable forms ------------------------------------------------------------------------------

_U = X  # the argument of the forms below: a·x + b
_FORMS = {
    "sigmoid": lambda u: 1 / (1 + sp.exp(-u)),
    "sigmoid'": lambda u: sp.diff(1 / (1 + sp.exp(-u)), X),
    "exp ratio": lambda u: sp.exp(u) / (sp.exp(u) + 1),
    "exp ratio'": lambda u: sp.diff(sp.exp(u) / (sp.exp(u) + 1), X),
    "softplus": lambda u: sp.log(1 + sp.exp(u)),
    "mish": lambda u: X * sp.tanh(sp.log(1 + sp.exp(u))),
    "mish'": lambda u: sp.diff(X * sp.tanh(sp.log(1 + sp.exp(u))), X),
    "log(c + e^u)": lambda u: sp.log(sp.Rational(3, 2) + sp.exp(u)),
    "c/(c + e^u)^2": lambda u: sp.exp(2 * u) / (sp.Rational(1, 3) + sp.exp(u)) ** 3,
    "log-sum-exp": lambda u: sp.log(sp.exp(u) + sp.exp(-2 * u)),
    "expm1": lambda u: sp.exp(u) - 1,
}


def test_stable_forms_rewrite_what_overflows() -> None:
    from sympy.codegen.cfunctions import expm1

    for name, form in _FORMS.items():
        e = stable_forms(form(sp.Rational(3, 2) * X - 1))
        if name == "expm1":
            assert e.has(expm1) and not e.has(sp.exp), e
        else:  # no exponential is left outside the branches that never overflow
            assert e.has(Logistic) or e.has(Softplus), (name, e)
            assert not e.has(sp.exp), (name, e)


@example(name="sigmoid", a=1, b=0, x=-800.0)
@example(name="mish'", a=3, b=1, x=-1e6)
@example(name="exp ratio'", a=2, b=0, x=400.0)
@example(name="log-sum-exp", a=1, b=0, x=-500.0)
@given(
    name=st.sampled_from(sorted(_FORMS)),
    a=st.integers(-5, 5).filter(bool),
    b=st.integers(-3, 3),
    x=st.floats(-1e6, 1e6),
)
def test_stable_forms_keep_the_value_and_evaluate_in_floats(
    name: str, a: int, b: int, x: float
) -> None:
    u = sp.Rational(a, 2) * X + sp.Rational(b, 3)
    expr = _FORMS[name](u)
    plain = compile_function("plain", [X], [expr])
    src = function_source("stable", [X], [expr], rewrite=STABLE_FORMS)
    ns: dict[str, object] = {}
    exec(compile(src, "<test>", "exec"), ns)  # our own printer's output
    stable = ns["stable"]
    ctx = mpmath.MPContext()
    ctx.dps = 40
    want = plain(ctx, ctx.mpf(x))[0]
    got_mp = stable(ctx, ctx.mpf(x))[0]  # type: ignore[operator]
    assert abs(got_mp - want) <= ctx.mpf(10) ** -30 * max(1, abs(want))
    if abs(want) > 1e300:
        return  # the value itself is out of the floats' range (e^u - 1 at u = 710)
    got_fp = stable(mpmath.fp, x)[0]  # type: ignore[operator]
    assert math.isfinite(got_fp)
    assert abs(got_fp - float(want)) <= 1e-12 * max(1.0, abs(float(want)))

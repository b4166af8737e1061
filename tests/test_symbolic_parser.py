"""The safe activation parser: a whitelist grammar, exact decimals, nothing ever executed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import pytest
import sympy as sp
from hypothesis import example, given
from hypothesis import strategies as st

from deqrmt import BudgetExceeded, DeqrmtError, InvalidArgument, ParseError, UnknownActivation
from deqrmt.symbolic import X, get_activation, parse_activation, parse_expression

# --- rejection of everything outside the grammar ------------------------------------------

HOSTILE = [
    "__import__('os').system('x')",
    "x.__class__",
    "().__class__",
    "().__class__.__bases__[0].__subclasses__()",
    "lambda: 1",
    "[x]",
    "[x for x in (1,)]",
    "{x: 1}",
    "{x}",
    "x if x else 1",
    "open('f')",
    "eval('x')",
    "exec('x')",
    "getattr(x, 'y')",
    "x[0]",
    "x.real",
    "__builtins__",
    "_",
    "x == 1",
    "x < 1",
    "not x",
    "x and 1",
    "~x",
    "x % 2",
    "x // 2",
    "x @ x",
    "f'{x}'",
    "'x'",
    "b'x'",
    "True * x",
    "None",
    "x; 1",
    "(x := 2)",
    "x, 1",
    "1j * x",
    "0x1f * x",
    "1_000 * x",
    "tanh(x, 1)",
    "max(x)",
    "tanh(*[x])",
    "tanh(x=1)",
    "leaky_relu(slope=0.1)",
    "y",
    "foo(x)",
    "e * x",
    "E * x",
    "I * x",
    "oo * x",
    "nan * x",
    "inf * x",
    "x / 0",
    "x / (x - x)",
    "x +",
    "",
    "   ",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_or_malformed_text_is_rejected(text):
    with pytest.raises(InvalidArgument) as info:
        parse_activation(text)
    assert isinstance(info.value, (ParseError, UnknownActivation))
    assert str(info.value)


def test_rejection_executes_nothing(tmp_path):
    canary = tmp_path / "canary"
    for text in (
        f"__import__('os').system('touch {canary}')",
        f"open('{canary}', 'w')",
        f"(lambda: __import__('pathlib').Path('{canary}').touch())()",
    ):
        with pytest.raises(DeqrmtError):
            parse_activation(text)
    assert not canary.exists()


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("y", UnknownActivation),
        ("foo(x)", UnknownActivation),
        ("open('f')", UnknownActivation),
        ("x.__class__", ParseError),
        ("__import__('os')", ParseError),
        ("_x", ParseError),
        ("lambda: 1", ParseError),
    ],
)
def test_error_classes(text, error):
    with pytest.raises(error):
        parse_activation(text)


def test_error_messages_name_the_culprit():
    with pytest.raises(UnknownActivation, match="foo"):
        parse_activation("tanh(x) + foo(x)")
    with pytest.raises(ParseError, match="Attribute"):
        parse_activation("x.real")


def test_constant_activations_are_refused():
    for text in ("2", "pi", "x - x + 1", "0.5"):
        with pytest.raises(ParseError, match="does not depend on x"):
            parse_activation(text)


@pytest.mark.parametrize("text", ["polynomial(1)", "polynomial(0, 0)", "polynomial(2.5)"])
def test_constant_library_activations_are_refused_too(text):
    # "2" is refused as "does not depend on x"; polynomial(2) is the same function and should be.
    # (Today it runs and reports γ* = κ* = 0.)
    with pytest.raises(InvalidArgument, match="depend on x"):
        parse_activation(text)


@pytest.mark.parametrize("value", [None, 1.0, 3, b"x", ["x"]])
def test_non_string_input(value):
    with pytest.raises(ParseError):
        parse_activation(value)


# --- bounded work: no text makes the parser crawl -------------------------------------------


@pytest.mark.parametrize(
    "text", ["9**9**9", "x**9**9**9", "2**2**2**2**2*x", "x**70", "x**(1/65)", "x**1e3"]
)
def test_constant_exponents_are_bounded(text):
    # refused by the parser before evaluating the power (how fast: benchmarks/limits.py)
    with pytest.raises((ParseError, BudgetExceeded), match="exponent"):
        parse_activation(text)


def test_exponents_up_to_the_bound_are_accepted():
    assert parse_expression("x**64") == X**64
    assert parse_expression("x**(1/64)") == X ** sp.Rational(1, 64)
    assert parse_expression("x**-2") == X**-2


def _parse_in_subprocess(text: str, seconds: float) -> str:
    """Parse ``text`` in a child with a memory cap and a wall-clock limit; its one-line verdict."""
    code = textwrap.dedent(
        """
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
        from deqrmt import DeqrmtError
        from deqrmt.symbolic import parse_activation
        try:
            parse_activation(sys.argv[1])
        except DeqrmtError as e:
            print("rejected", type(e).__name__)
        else:
            print("accepted")
        """
    )
    try:
        out = subprocess.run(
            [sys.executable, "-c", code, text], capture_output=True, text=True, timeout=seconds
        )
    except subprocess.TimeoutExpired:
        return "timeout"
    return out.stdout.strip() or f"crashed: {out.stderr.strip().splitlines()[-1:]}"


def test_nested_constant_powers_are_bounded():
    # issue 2: "SymPy must never hang".  Each exponent is ≤ 64, but the base grows with every
    # level: 64**64 has 116 digits and five levels ask for a 2**(6·10⁹)-bit integer.
    verdict = _parse_in_subprocess("((((64**64)**64)**64)**64)**64*x", seconds=60)
    assert verdict.startswith("rejected"), verdict


def test_composed_powers_of_x_are_bounded():
    # (x**64)**64 = x**4096: the degree bound the parser enforces per operator is bypassed.
    with pytest.raises(BudgetExceeded, match="MAX_POWER"):
        parse_activation("(x**64)**64")


def test_huge_constants_from_powers_are_bounded():
    # 1e100 is accepted as a literal (exponent ≤ 100); its 64th power is a 6401-digit integer,
    # far past the literal-length limit the parser enforces on numbers.
    with pytest.raises(ParseError):
        parse_activation("(1e100)**64*x")


def test_length_limit():
    ok = "x" + " " * 399
    assert len(ok) == 400
    assert parse_activation(ok).expr == X
    too_long = "x" + " " * 400
    with pytest.raises(BudgetExceeded, match="400"):
        parse_activation(too_long)
    with pytest.raises(BudgetExceeded, match="400"):
        parse_activation("+".join(["x"] * 201))


@pytest.mark.parametrize(
    "text", ["-" * 399 + "x", "(" * 150 + "x" + ")" * 150, "tanh(" * 80 + "x" + ")" * 80]
)
def test_deep_nesting_is_parsed_or_refused_cleanly(text):
    try:
        act = parse_activation(text)
    except DeqrmtError:
        return
    assert act.expr.has(X)


def test_huge_literals_are_refused():
    with pytest.raises(ParseError):
        parse_activation("1" * 61 + "*x")
    with pytest.raises(ParseError):
        parse_activation("1e101*x")
    assert parse_expression("1e100*x") == sp.Integer(10) ** 100 * X


@pytest.mark.parametrize("text", ["log(0)*x", "0**-1*x", "x + log(0)", "x**-1 - (x - x)**-1"])
def test_non_finite_constants_are_refused(text):
    # log(0), 0**-1 and (x − x)**-1 are SymPy's zoo: not a number an activation can contain.
    with pytest.raises(ParseError):
        parse_activation(text)


@pytest.mark.parametrize("text", ["max(x, log(0))", "max((-pi)**(2/3), -x)", "min(x, log(-2))"])
def test_incomparable_arguments_of_max_are_clean_errors(text):
    # SymPy's Max/Min raise a plain ValueError ("... is not comparable") on a zoo or complex
    # argument; found by test_grammar_gives_exact_expressions_or_clean_errors.
    with pytest.raises(DeqrmtError):
        parse_activation(text)


# --- exact numbers ---------------------------------------------------------------------------


def test_decimal_is_exact():
    expr = parse_activation("0.1*x").expr
    assert expr == sp.Rational(1, 10) * X
    assert not expr.atoms(sp.Float)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0.1", sp.Rational(1, 10)),
        (".5", sp.Rational(1, 2)),
        ("5.", sp.Integer(5)),
        ("2.50E+2", sp.Integer(250)),
        ("1e-3", sp.Rational(1, 1000)),
        ("0.3333333333333333333333", sp.Rational(3333333333333333333333, 10**22)),
        ("123456789.987654321", sp.Rational(123456789987654321, 10**9)),
    ],
)
def test_number_formats_are_read_from_their_digits(text, value):
    assert parse_expression(f"{text}*x") == value * X


_DIGITS = st.text("0123456789", min_size=1, max_size=20)


@given(whole=_DIGITS, frac=_DIGITS, exp=st.integers(-30, 30))
@example(whole="0", frac="1", exp=0)
@example(whole="0", frac="30000000000000004", exp=0)  # 0.1 + 0.2 in binary
@example(whole="9", frac="99999999999999999999", exp=-30)
def test_every_decimal_is_the_rational_of_its_digits(whole, frac, exp):
    text = f"{whole}.{frac}e{exp}"
    expr = parse_expression(f"{text}*x")
    expected = sp.Rational(int(whole + frac), 10 ** len(frac)) * sp.Rational(10) ** exp
    assert expr == expected * X
    assert not expr.atoms(sp.Float)


# --- the whitelisted functions and the library -----------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("exp(x)", sp.exp(X)),
        ("log(1 + x**2)", sp.log(1 + X**2)),
        ("sqrt(1 + x**2)", sp.sqrt(1 + X**2)),
        ("abs(x)", sp.Abs(X)),
        ("max(x, 0, x/2)", sp.Max(X, 0, X / 2)),
        ("min(x, 1)", sp.Min(X, 1)),
        ("tanh(x)", sp.tanh(X)),
        ("sin(x)", sp.sin(X)),
        ("cos(x)", sp.cos(X)),
        ("erf(x)", sp.erf(X)),
        ("erfc(x)", sp.erfc(X)),
        ("sigmoid(x)", 1 / (1 + sp.exp(-X))),
        ("softplus(x)", sp.log(1 + sp.exp(X))),
        ("relu(2*x)", sp.Max(2 * X, 0)),
        ("heaviside(x)", sp.Heaviside(X, sp.S.Half)),
        ("sign(x)", sp.sign(X)),
        ("pi*x", sp.pi * X),
        ("-x", -X),
        ("+x", X),
        ("x - 2/3*x**2", X - sp.Rational(2, 3) * X**2),
        ("2**x", 2**X),
        ("x**2**3", X**8),
    ],
)
def test_whitelisted_functions(text, expected):
    assert sp.simplify(parse_expression(text) - expected) == 0


@pytest.mark.parametrize(
    ("text", "same_as"),
    [
        ("tanh", "tanh(x)"),
        ("leaky_relu(0.1)", "max(x, 0.1*x)"),
        ("polynomial(0, 1, 0.25)", "x + 0.25*x**2"),
        ("quadratic", "x + x**2/4"),
        ("hard_tanh(1.2, 0.8)", "1.2*min(max(x, -0.8), 0.8)"),
        ("elu(0.5)", "max(x, 0) + 0.5*(exp(min(x, 0)) - 1)"),
        ("relu", "max(x, 0)"),
        ("  relu  ", "max(x, 0)"),
    ],
)
def test_library_calls_with_exact_parameters(text, same_as):
    a, b = parse_activation(text), parse_activation(same_as)
    assert a.kinks == b.kinks
    for p, q in zip(a.pieces, b.pieces, strict=True):
        assert sp.simplify(p.expr - q.expr) == 0


@pytest.mark.parametrize(
    ("text", "same_as"),
    [
        # issue 10, point 10: library activations inside expressions
        ("gelu(x)", "x*(1 + erf(x/sqrt(2)))/2"),
        ("elu(x)", "max(x, 0) + exp(min(x, 0)) - 1"),
        ("2*leaky_relu(0.2)", "2*max(x, 0.2*x)"),  # numeric arguments: the parameters, at x
        ("leaky_relu(x)", "max(x, 0.01*x)"),
        ("leaky_relu(2*x, 0.2)", "max(2*x, 0.4*x)"),
        ("tanh(x) + elu(0.5)", "tanh(x) + max(x, 0) + 0.5*(exp(min(x, 0)) - 1)"),
        ("0.5*gelu + 0.5*tanh", "x*(1 + erf(x/sqrt(2)))/4 + tanh(x)/2"),  # bare names: at x
        ("hard_tanh(1.2, 0.8) + x", "1.2*min(max(x, -0.8), 0.8) + x"),
        ("silu(2*x)", "2*x*sigmoid(2*x)"),
    ],
)
def test_library_activations_inside_expressions(text, same_as):
    a, b = parse_activation(text), parse_activation(same_as)
    assert a.kinks == b.kinks
    for p, q in zip(a.pieces, b.pieces, strict=True):
        assert sp.simplify(p.expr - q.expr) == 0


@pytest.mark.parametrize(
    "text", ["leaky_relu(0.2)(x)", "leaky_relu(x, x)", "gelu(x, 1)", "leaky_relu(2)"]
)
def test_library_calls_inside_expressions_are_checked(text):
    with pytest.raises(InvalidArgument):
        parse_activation(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("cosh(x)/10", sp.cosh(X) / 10), ("sinh(x)", sp.sinh(X)), ("atan(x)", sp.atan(X))],
)
def test_more_elementary_functions(text, expected):
    assert parse_expression(text) == expected


@pytest.mark.parametrize(
    ("text", "suggestion"),
    [("tanhh", "tanh"), ("tanhh(x)", "tanh"), ("X", "x"), ("gleu(x)", "gelu"), ("Relu", "relu")],
)
def test_did_you_mean(text, suggestion):
    with pytest.raises(UnknownActivation, match=f"did you mean '{suggestion}'"):
        parse_activation(text)


# --- hostile characters: refused before parsing (issue 9) ------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "x # comment",
        "x #",
        'x # """; import os; os.system("id") #',
        "tanh(x)  # tanh",
        "#x",
    ],
)
def test_comments_are_refused(text):
    with pytest.raises(ParseError, match="comments"):
        parse_activation(text)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("tanh(x)\x1b[2J", r"'\x1b'"),
        ("x\x00", r"'\x00'"),
        ("x\x07", r"'\x07'"),
        ("x\u202e", r"'\u202e'"),  # right-to-left override
        ("x\u200b", r"'\u200b'"),  # zero-width space
        ("\uff58", "FULLWIDTH"),  # NFKC would make it x
        ("x\udcff", r"'\udcff'"),  # an undecodable argv byte
        ("x \u2212 1", "write '-'"),  # a minus sign pasted from a paper: the fix is named
        ("2\u00b7x", "write '*'"),
        ("x\u00b2", "write '**2'"),
    ],
)
def test_control_and_non_ascii_characters_are_refused(text, shown):
    with pytest.raises(ParseError, match=re.escape(shown)) as info:
        parse_activation(text)
    assert str(info.value).isascii() and str(info.value).isprintable()


def test_activation_names_collapse_whitespace():
    assert parse_activation("max(x,\n\t 0.1*x)").name == "max(x, 0.1*x)"
    assert parse_activation("  0.5 *  tanh(x) ").name == "0.5 * tanh(x)"


# --- work limits: checked on the syntax tree, before any SymPy work (issue 9) -----------------


def _sum_of_kinks(n):
    return "(" + "+".join(f"abs(x-{k}/{n})" for k in range(n)) + f")/{n}"


@pytest.mark.parametrize(
    ("text", "limit"),
    [
        (_sum_of_kinks(9), "MAX_KINKS"),
        (_sum_of_kinks(50), "MAX_"),  # the 120 s hang of issue 9
        ("abs(abs(abs(abs(x) - 1) - 1) - 1)", "MAX_KINKS"),  # kinks multiply under nesting
        ("max(x, " + ", ".join(f"{k}*x/10" for k in range(9)) + ")", "MAX_KINKS"),
        ("hard_tanh(x) + hard_tanh(2*x) + hard_tanh(3*x) + hard_tanh(4*x) + relu(x)", "MAX_KINKS"),
        ("tanh(" * 4 + "x" + ")" * 4, "MAX_TRANSCENDENTAL_DEPTH"),
        ("(" + "+".join(f"gelu(abs(x-{k}/4))" for k in range(4)) + ")/4", "MAX_WORK"),  # 5·9
        ("tanh(x)+tanh(2*x)+tanh(3*x)+tanh(4*x)+" + _sum_of_kinks(8), "MAX_WORK"),  # 9·5
        ("exp(-" * 60 + "x" + ")" * 60, "MAX_"),
        ("tanh(" * 60 + "x" + ")" * 60, "MAX_"),
        ("+".join(f"tanh({k}*x)" for k in range(1, 12)), "MAX_TRANSCENDENTAL"),
        ("gelu + silu + tanh + erf + sigmoid + softplus + sin + cos + sinh + atan + exp", "MAX_TR"),
        ("x**0.5 + " * 11 + "x", "MAX_TRANSCENDENTAL"),
        ("sigmoid(sigmoid(sigmoid(x))) + sigmoid(sigmoid(sigmoid(2*x)))", "MAX_TRANSCENDENTAL"),
        ("+".join(f"gelu(x-{k}/8)" for k in range(8)), "MAX_TRANSCENDENTAL"),  # 8·2
        ("(x**8)**9", "MAX_POWER"),
        ("x**2*x**63", "MAX_POWER"),
        ("polynomial(" + ", ".join(["1"] * 66) + ")", "MAX_POWER"),
        ("-" * 30 + "x", "MAX_DEPTH"),
        ("(" * 30 + "x" + " + 1)*2" * 30, "MAX_DEPTH"),
        ("+".join(["x*1"] * 70), "MAX_NODES"),
        ("sin(1000000*x)", "MAX_FREQUENCY"),  # ran for minutes (quadrature of 10^6 oscillations)
        ("cos(x/0.0001)", "MAX_FREQUENCY"),
        ("sin(1000*1000*x)", "MAX_FREQUENCY"),
        ("sin(x**4)", "MAX_FREQUENCY"),  # slope 4·10³ at |x| = 10
        ("sin(exp(x))", "MAX_FREQUENCY"),
    ],
)
def test_limits_are_named(text, limit):
    # how fast each is refused: benchmarks/limits.py (no clock in a test)
    with pytest.raises(BudgetExceeded, match=limit) as info:
        parse_activation(text)
    assert "docs/limits.md" in str(info.value)


@pytest.mark.parametrize(
    "text",
    [
        _sum_of_kinks(8),
        "tanh(" * 3 + "x" + ")" * 3,
        "+".join(f"tanh({k}*x)" for k in range(1, 9)),
        "gelu(abs(x-1/3)) + gelu(abs(x+1/5)) + gelu(x/2)",  # work (2 + 1)·(6 + 1) = 21
        "erf(erf(erf(x)))",  # 2 + 3 + 4 = 9
        "sin(1000*x) + cos(x**3)",  # frequencies 1000 and 300
        "x**64",
        "+".join(["x"] * 100),  # a long flat sum is one level deep
        "abs(abs(abs(x) - 1) - 1)",  # 7 kinks at most
    ],
)
def test_inputs_at_the_limits_are_accepted(text):
    assert parse_activation(text).expr.has(X)


def test_library_parameter_errors():
    with pytest.raises(InvalidArgument, match="slope"):
        parse_activation("leaky_relu(2)")
    with pytest.raises(InvalidArgument):
        parse_activation("tanh(0.5)")


# --- fuzzing: the grammar never produces a Float, and nothing but DeqrmtError escapes ------

_UNARY = [
    "exp",
    "log",
    "sqrt",
    "abs",
    "tanh",
    "sin",
    "cos",
    "erf",
    "erfc",
    "sigmoid",
    "softplus",
    "relu",
    "heaviside",
    "sign",
]
_LEAF = st.one_of(
    st.just("x"),
    st.just("pi"),
    st.integers(0, 999).map(str),
    st.tuples(st.integers(0, 99), st.integers(0, 999)).map(lambda t: f"{t[0]}.{t[1]}"),
    st.tuples(st.integers(1, 9), st.integers(-20, 20)).map(lambda t: f"{t[0]}e{t[1]}"),
)


def _extend(children):
    return st.one_of(
        children.map(lambda a: f"-{a}"),
        st.tuples(st.sampled_from(_UNARY), children).map(lambda t: f"{t[0]}({t[1]})"),
        st.tuples(st.sampled_from(["max", "min"]), children, children).map(
            lambda t: f"{t[0]}({t[1]}, {t[2]})"
        ),
        st.tuples(children, st.sampled_from(["+", "-", "*", "/"]), children).map(
            lambda t: f"({t[0]} {t[1]} {t[2]})"
        ),
        st.tuples(children, st.sampled_from(["2", "3", "-1", "(1/2)", "(2/3)", "0.5"])).map(
            lambda t: f"({t[0]})**{t[1]}"
        ),
    )


GRAMMAR = st.recursive(_LEAF, _extend, max_leaves=8)


@given(text=GRAMMAR)
@example(text="(0.1 + 0.2)*x")
@example(text="max(x, 0.1*x)")
@example(text="(x)**0.5")
def test_grammar_gives_exact_expressions_or_clean_errors(text):
    try:
        act = parse_activation(text)
    except DeqrmtError:
        return
    assert not act.expr.atoms(sp.Float), act.expr
    assert act.expr.free_symbols == {X}
    assert not act.expr.has(sp.zoo, sp.nan, sp.oo), act.expr


@given(text=st.text(alphabet="x()+-*/.,_0123456789 abcdeilmnoprstwhq'[]:=<>!%", max_size=40))
@example(text="x)(")
@example(text="max(,x)")
@example(text="x..1")
@example(text="_.__")
def test_arbitrary_text_only_raises_deqrmt_errors(text):
    try:
        act = parse_activation(text)
    except DeqrmtError:
        return
    assert not act.expr.atoms(sp.Float)


def test_get_activation_uses_the_parser():
    assert get_activation("0.5*tanh(x)").expr == sp.tanh(X) / 2


def test_parser_never_calls_eval_or_sympify(monkeypatch):
    """The raw text reaches neither eval/exec nor sympify/parse_expr."""
    import builtins

    import deqrmt.symbolic._parser as parser_module

    def boom(*a, **k):
        raise AssertionError("raw text was evaluated")

    monkeypatch.setattr(builtins, "eval", boom)
    monkeypatch.setattr(builtins, "exec", boom)
    monkeypatch.setattr(sp, "sympify", boom)
    monkeypatch.setattr(sp, "parse_expr", boom, raising=False)
    for name in ("sympify", "S", "parse_expr", "eval", "exec"):
        if hasattr(parser_module, name):
            monkeypatch.setattr(parser_module, name, boom)
    assert parse_expression("max(x, 0.1*x) + tanh(x)**2") == sp.Max(X, X / 10) + sp.tanh(X) ** 2
    assert os.getcwd()  # the interpreter is still healthy

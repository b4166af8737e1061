"""The activation library: exact expressions, kinks, smooth pieces, parity, continuity."""

from __future__ import annotations

from fractions import Fraction

import mpmath
import pytest
import sympy as sp
from hypothesis import example, given
from hypothesis import strategies as st

from deqrmt import ActivationError, DeqrmtError, InvalidArgument, UnknownActivation
from deqrmt.symbolic import (
    LIBRARY,
    Activation,
    X,
    activation_names,
    get_activation,
    library_activation,
)
from helpers import CATALOGUE

ISSUE_LIBRARY = [
    "relu", "leaky_relu", "tanh", "hard_tanh", "erf", "sigmoid", "silu", "swish", "gelu",
    "softplus", "elu", "sin", "cos", "identity", "sign", "polynomial",
]  # fmt: skip
_SMOOTH_ONLY = (sp.Max, sp.Min, sp.Abs, sp.Heaviside, sp.sign, sp.Piecewise)


def test_library_names_cover_the_issue():
    names = activation_names()
    assert names == sorted(names)
    assert set(ISSUE_LIBRARY) <= set(names)
    assert set(names) == set(LIBRARY)


@pytest.mark.parametrize("name", sorted(set(LIBRARY) - {"polynomial"}))
def test_library_activation_is_exact_in_real_x(name):
    act = library_activation(name)
    assert isinstance(act, Activation)
    assert act.expr.free_symbols == {X}
    assert X.is_real
    assert not act.expr.atoms(sp.Float)
    assert act.x is X


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("relu", sp.Max(X, 0)),
        ("leaky_relu(0.1)", sp.Max(X, X / 10)),
        ("leaky_relu", sp.Max(X, X / 100)),  # documented default slope 0.01
        ("tanh", sp.tanh(X)),
        ("erf", sp.erf(X)),
        ("sigmoid", 1 / (1 + sp.exp(-X))),
        ("silu", X / (1 + sp.exp(-X))),
        ("swish", X / (1 + sp.exp(-X))),
        ("gelu", X * (1 + sp.erf(X / sp.sqrt(2))) / 2),
        ("softplus", sp.log(1 + sp.exp(X))),
        ("sin", sp.sin(X)),
        ("cos", sp.cos(X)),
        ("identity", X),
        ("sign", sp.sign(X)),
        ("quadratic", X + X**2 / 4),
        ("polynomial(0, 1, 0.25)", X + X**2 / 4),
        ("polynomial(1, -2, 0, 3)", 1 - 2 * X + 3 * X**3),
        ("hard_tanh", sp.Min(sp.Max(X, -1), 1)),
        (
            "hard_tanh(1.2, 0.8)",
            sp.Rational(6, 5) * sp.Min(sp.Max(X, -sp.Rational(4, 5)), sp.Rational(4, 5)),
        ),
    ],
)
def test_library_expressions_by_hand(spec, expected):
    act = get_activation(spec)
    assert sp.simplify(act.expr - expected) == 0
    assert not act.expr.atoms(sp.Float)


def test_elu_matches_its_definition():
    for spec, alpha in (("elu", 1), ("elu(0.5)", sp.Rational(1, 2))):
        act = get_activation(spec)
        pos, neg = act.pieces[1].expr, act.pieces[0].expr
        assert sp.simplify(pos - X) == 0
        assert sp.simplify(neg - alpha * (sp.exp(X) - 1)) == 0


def test_gelu_is_x_times_the_normal_cdf():
    # x·Φ(x) with Φ the standard normal cdf, checked numerically against mpmath.ncdf.
    expr = get_activation("gelu").expr
    with mpmath.workdps(30):
        for x in ("-2.5", "-0.3", "0.7", "3.1"):
            got = sp.N(expr.subs(X, sp.Rational(x)), 30)
            want = mpmath.mpf(x) * mpmath.ncdf(mpmath.mpf(x))
            assert abs(mpmath.mpf(str(got)) - want) < mpmath.mpf(10) ** -27


@pytest.mark.parametrize(
    ("spec", "kinks"),
    [
        ("relu", [0]),
        ("leaky_relu(0.1)", [0]),
        ("max(x, 0.1*x)", [0]),
        ("hard_tanh", [-1, 1]),
        ("hard_tanh(1.2, 0.8)", [sp.Rational(-4, 5), sp.Rational(4, 5)]),
        ("elu", [0]),
        ("abs(x)", [0]),
        ("relu(x-1)", [1]),
        ("max(2*x+1, 0)", [sp.Rational(-1, 2)]),
        ("min(max(x, -2), 3)", [-2, 3]),
        ("sign", [0]),
        ("heaviside(x)", [0]),
        ("tanh", []),
        ("gelu", []),
        ("x + 0.25*x**2", []),
    ],
)
def test_kinks_are_exact_and_sorted(spec, kinks):
    act = get_activation(spec)
    assert list(act.kinks) == [sp.sympify(k) for k in kinks]
    assert all(k.is_Rational for k in act.kinks)


@pytest.mark.parametrize(
    "spec", sorted(CATALOGUE) + ["abs(x)", "min(max(x, -2), 3)", "sign", "heaviside(x)"]
)
def test_pieces_are_smooth_and_cover_the_line(spec):
    act = get_activation(spec)
    bounds = [p.lo for p in act.pieces] + [act.pieces[-1].hi]
    assert bounds[0] is sp.S.NegativeInfinity and bounds[-1] is sp.S.Infinity
    assert bounds[1:-1] == list(act.kinks)
    for p, d in zip(act.pieces, act.derivative_pieces, strict=True):
        assert not p.expr.has(*_SMOOTH_ONLY), p.expr
        assert not d.expr.has(sp.DiracDelta), d.expr
        assert (p.lo, p.hi) == (d.lo, d.hi)


def _piece_at(act, x):
    for p in act.pieces:
        if (p.lo is sp.S.NegativeInfinity or p.lo < x) and (p.hi is sp.S.Infinity or x < p.hi):
            return p
    raise AssertionError(f"{x} lies on a kink of {act.name}")


_X_VALUES = st.fractions(min_value=-6, max_value=6, max_denominator=1000)


@given(name=st.sampled_from(sorted(CATALOGUE)), x=_X_VALUES)
@example(name="hard_tanh(1.2, 0.8)", x=Fraction(79, 100))
@example(name="hard_tanh(1.2, 0.8)", x=Fraction(81, 100))
@example(name="relu", x=Fraction(-1, 1000))
def test_pieces_and_derivatives_reproduce_the_hand_coded_activation(name, x):
    """The piece containing x, and its derivative, equal φ(x) and φ'(x) coded by hand (helpers)."""
    ref = CATALOGUE[name]
    act = get_activation(ref.spec)
    xs = sp.Rational(x.numerator, x.denominator)
    if xs in act.kinks:
        return
    i = act.pieces.index(_piece_at(act, xs))
    with mpmath.workdps(30):
        xm = mpmath.mpf(x.numerator) / x.denominator
        for expr, want in (
            (act.pieces[i].expr, ref.phi(xm)),
            (act.derivative_pieces[i].expr, ref.dphi(xm)),
        ):
            got = mpmath.mpf(str(sp.N(expr.subs(X, xs), 35)))
            assert abs(got - want) <= mpmath.mpf(10) ** -25 * max(1, abs(want)), (name, x, expr)


@pytest.mark.parametrize(
    ("spec", "parity"),
    [
        ("tanh", -1), ("erf", -1), ("sin", -1), ("identity", -1), ("sign", -1), ("hard_tanh", -1),
        ("hard_tanh(1.2, 0.8)", -1), ("x**3 - x", -1), ("relu(x) - relu(-x)", -1),
        ("cos", 1), ("abs(x)", 1), ("x**2", 1), ("exp(-x**2)", 1), ("polynomial(1, 0, 1)", 1),
        ("relu", 0), ("leaky_relu(0.1)", 0), ("elu", 0), ("gelu", 0), ("silu", 0), ("sigmoid", 0),
        ("softplus", 0), ("quadratic", 0), ("relu(x-1)", 0), ("min(max(x, -2), 3)", 0),
    ],
)  # fmt: skip
def test_parity_by_hand(spec, parity):
    assert get_activation(spec).parity == parity


@pytest.mark.parametrize(
    ("spec", "parity"),
    [
        ("sigmoid", -1), ("erfc(x)", -1), ("heaviside(x)", -1), ("tanh(x) + 1", -1),
        ("relu(x) - relu(-x) + 1", -1), ("tanh", -1), ("cos", 1), ("cos(x) + 2", 1),
        ("relu", 0), ("softplus", 0), ("silu", 0), ("sigmoid(x) + x**2", 0), ("relu(x-2) + 1", 0),
    ],
)  # fmt: skip
def test_derivative_parity_sees_through_a_constant(spec, parity):
    """φ − c odd or even for the constant c = mean of φ(0±): the parity of φ', φ'', …"""
    assert get_activation(spec).derivative_parity == parity


def test_sigmoid_shifted_is_odd():
    # σ(x) − 1/2 = tanh(x/2)/2 is odd: parity has to see through exp rewriting.
    assert get_activation("sigmoid(x) - 0.5").parity == -1


_COEFF = st.integers(min_value=-3, max_value=3)


# a constant polynomial is refused (it must depend on x; see test_symbolic_parser)
@given(coeffs=st.lists(_COEFF, min_size=2, max_size=6).filter(lambda c: any(c[1:])))
@example(coeffs=[0, 1])
@example(coeffs=[0, 0, 1])
@example(coeffs=[1, 1])
def test_polynomial_parity_follows_its_coefficients(coeffs):
    act = library_activation("polynomial", [sp.Integer(c) for c in coeffs])
    even = all(c == 0 for k, c in enumerate(coeffs) if k % 2 == 1)
    odd = all(c == 0 for k, c in enumerate(coeffs) if k % 2 == 0)
    assert act.parity == (1 if even else -1 if odd else 0)


@pytest.mark.parametrize(
    ("spec", "continuous"),
    [
        ("relu", True), ("hard_tanh", True), ("elu(0.5)", True), ("abs(x)", True),
        ("heaviside(x)*x", True), ("tanh", True),
        ("sign", False), ("heaviside(x)", False), ("relu(x) + heaviside(x - 1)", False),
        ("relu(x) + 0.5*sign(x)", False),
    ],
)  # fmt: skip
def test_continuity(spec, continuous):
    assert get_activation(spec).is_continuous is continuous


def test_elu_with_alpha_one_is_c1_but_not_otherwise():
    # φ'(0±): elu(1) joins with slope 1 on both sides; elu(1/2) has a jump 1 − 1/2 in φ'.
    for spec, jump in (("elu", 0), ("elu(0.5)", sp.Rational(1, 2))):
        left, right = get_activation(spec).derivative_pieces
        assert right.expr.subs(X, 0) - left.expr.subs(X, 0) == jump


def test_leaky_relu_with_zero_slope_is_relu():
    a, b = library_activation("leaky_relu", [sp.S.Zero]), get_activation("relu")
    assert a.kinks == b.kinks
    assert [p.expr for p in a.pieces] == [p.expr for p in b.pieces]


def test_silu_and_swish_are_the_same_function():
    assert sp.simplify(get_activation("silu").expr - get_activation("swish").expr) == 0


def test_float_expressions_become_exact_rationals():
    act = Activation("mine", sp.Float("0.1") * X + sp.Float("0.25") * X**2)
    assert not act.expr.atoms(sp.Float)
    assert act.expr == X / 10 + X**2 / 4
    assert library_activation("leaky_relu", [sp.Float("0.1")]).expr == sp.Max(X, X / 10)


def test_centered_subtracts_the_constant():
    act = get_activation("relu")
    c = sp.Rational(3, 7)
    assert sp.simplify(act.centered(c).expr - (sp.Max(X, 0) - c)) == 0


def test_get_activation_passes_activations_through():
    act = get_activation("tanh")
    assert get_activation(act) is act


@pytest.mark.parametrize(
    ("build", "error"),
    [
        (lambda: Activation("y", sp.Symbol("y") * X), InvalidArgument),
        (lambda: Activation("s", sp.Symbol("x")), InvalidArgument),  # a different (non-real) x
        (lambda: Activation("n", "x"), InvalidArgument),
        (lambda: library_activation("leaky_relu", [sp.S.One]), InvalidArgument),
        (lambda: library_activation("leaky_relu", [sp.Rational(-1, 10)]), InvalidArgument),
        (lambda: library_activation("hard_tanh", [sp.S.One, sp.S.Zero]), InvalidArgument),
        (lambda: library_activation("polynomial", []), InvalidArgument),
        (lambda: library_activation("tanh", [sp.S.One]), InvalidArgument),
        (lambda: library_activation("no_such_thing"), UnknownActivation),
        (lambda: get_activation("no_such_thing"), UnknownActivation),
    ],
)
def test_bad_activations_are_refused(build, error):
    with pytest.raises(error) as info:
        build()
    assert isinstance(info.value, DeqrmtError)
    assert isinstance(info.value, ValueError)
    assert str(info.value)


def test_unknown_activation_is_also_a_key_error_with_a_plain_message():
    with pytest.raises(KeyError) as info:
        library_activation("nope")
    msg = str(info.value)
    assert "nope" in msg and not msg.startswith('"')
    assert "relu" in msg  # lists what exists


def test_activation_error_is_an_invalid_argument():
    assert issubclass(ActivationError, InvalidArgument)

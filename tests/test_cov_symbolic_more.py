"""More edges of the symbolic package: the sphere calculus, the bias derivation's bounded
steps, the parser's refusals and hints, the TeX argument reader.

References by hand: E[uv] = ρ and E[u²v²] = 1 + 2ρ² for unit Gaussians of correlation ρ;
y' = −x/y and y'' = −(x² + y²)/y³ on the circle x² + y² = 1; the binomial theorem.
"""

from __future__ import annotations

import ast

import pytest
import sympy as sp

from deqrmt._errors import DerivationError, InvalidArgument, ParseError
from deqrmt.symbolic import _bias_steps, _document, _hints, _parser, parse_activation
from deqrmt.symbolic._sphere_calculus import (
    _price_rule,
    dual_taylor_coefficient,
    implicit_derivatives,
    inner_product_equivalent,
    polynomial_dual,
)
from deqrmt.symbolic._sphere_symbols import RHO, DualDerivative, S

x = sp.Symbol("x", real=True)
t = sp.Symbol("t", real=True)
g = sp.Function("g")(x)

# --- sphere calculus ---------------------------------------------------------------------------


def test_implicit_derivatives_on_the_circle() -> None:
    d1, d2 = implicit_derivatives(g**2 + x**2 - 1, g, x, 2)
    assert sp.simplify(d1 - (-x / g)) == 0
    assert sp.simplify(d2 - (-(x**2 + g**2) / g**3)) == 0


def test_implicit_derivatives_refusals() -> None:
    with pytest.raises(InvalidArgument, match="order must be >= 1"):
        implicit_derivatives(g - x, g, x, 0)
    with pytest.raises(DerivationError, match="not linear in y"):
        implicit_derivatives(sp.exp(sp.Derivative(g, x)) - x, g, x, 1)
    with pytest.raises(DerivationError, match="y is not defined implicitly"):
        implicit_derivatives(x**2 - 1, g, x, 1)


def test_polynomial_duals_by_hand() -> None:
    assert polynomial_dual(t, t) == RHO
    assert polynomial_dual(t**2, t) == 1 + 2 * RHO**2
    with pytest.raises(InvalidArgument, match="needs a polynomial in t"):
        polynomial_dual(sp.exp(t), t)


def test_inner_product_equivalent_needs_three_coefficients() -> None:
    with pytest.raises(InvalidArgument, match="needs"):
        inner_product_equivalent([sp.S.One, sp.S.One], sp.S.One)
    # κ(ρ) = 1 + ρ + ρ²: α = 1 + 2/2·(1/d), β = 1, μ = κ(1) − 1 − 1 = 1
    d = sp.Symbol("d", positive=True)
    alpha, beta, mu = inner_product_equivalent([1, 1, 2], sp.Integer(3), d)
    assert (sp.simplify(alpha - (1 + 1 / d)), beta, mu) == (0, 1, 1)


def test_dual_taylor_coefficient_edges() -> None:
    act = parse_activation("tanh")
    with pytest.raises(InvalidArgument, match="k must be >= 0"):
        dual_taylor_coefficient(act, -1)
    assert dual_taylor_coefficient(act, 1) is None  # E[tanh'(τξ)] has no closed form
    relu = parse_activation("relu")
    # f'(0) = s·E[φ'(√s ξ)]² = s·(1/2)² for relu
    assert sp.simplify(dual_taylor_coefficient(relu, 1) - S / 4) == 0


def test_price_rule_refuses_an_interior_point() -> None:
    with pytest.raises(DerivationError, match=r"f\^\(1\)\(1/2\) is not a one-dimensional"):
        _price_rule(DualDerivative(1, sp.Rational(1, 2)), S, {}, {})
    assert _price_rule(DualDerivative(1, 0), S, {1: sp.Integer(3)}, {}) == 9 * S


# --- the bias derivation's bounded steps --------------------------------------------------------


def test_large_expressions_are_cancelled_not_simplified() -> None:
    big = sp.expand((x + 1) ** 60)
    assert sp.count_ops(big - (x + 1) ** 60) > _bias_steps._MAX_OPS_SIMPLIFY
    assert _bias_steps._is_zero(big - (x + 1) ** 60)  # the binomial theorem
    assert _bias_steps._antiderivative(big, x) is None  # too large to integrate


def test_sign_of_and_beta_symbol() -> None:
    assert _bias_steps._sign_of(sp.Integer(-2)) == -1
    assert _bias_steps._sign_of(sp.S.Zero) == 0
    with pytest.raises(InvalidArgument, match="is not real"):
        _bias_steps._sign_of(sp.I)
    assert _bias_steps._beta_symbol(sp.Interval(-sp.oo, 0)).is_negative
    assert _bias_steps._beta_symbol(sp.Interval(0, 1)).is_positive
    b = _bias_steps._beta_symbol(sp.Union(sp.Interval(-2, -1), sp.Interval(1, 2)))
    assert b.is_real and b.is_positive is None


def test_sample_points() -> None:
    third = sp.Rational(1, 3)
    assert _bias_steps._sample_points(sp.Interval(-sp.oo, 1), 0) == [0, 1 - third, -1, -10]
    assert _bias_steps._sample_points(sp.Interval(0, 7), 1) == [1, 1, 3, 6]
    assert _bias_steps._sample_points(sp.FiniteSet(1, 2), 5) == [5]


def test_h_without_a_compact_form() -> None:
    raw = sum(sp.sin(k * x) ** k for k in range(1, 200))
    with pytest.raises(DerivationError, match="no compact closed form"):
        _bias_steps._compact_h(raw, x)


# --- the parser's refusals and hints -----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("log(0)*x", "not finite"),
        # six literals of 60 digits (the most one may have): a product of 1196 bits
        ("x*" + "*".join(["9" * 60] * 6), "a constant in it is too large"),
        ("exp*x", "exp is a function: write exp\\(x\\)"),
        ("max(*x)", r"\*args are not allowed"),
        ("x*0,5 +", "a decimal comma\\? write a decimal point: 'x\\*0.5 \\+'"),
        ("y = 2*x", "without '='"),
        ("leaky_relu(0.1, slope=0.2)", "its parameters are slope, in that order"),
    ],
)
def test_parse_refusals(text: str, why: str) -> None:
    with pytest.raises(InvalidArgument, match=why):  # ParseError or UnknownActivation
        parse_activation(text)


def test_parser_tree_needs_text() -> None:
    with pytest.raises(ParseError, match="activation must be a string, got int"):
        _parser._tree(3)  # type: ignore[arg-type]


def test_implicit_product_leaves_exponents_alone() -> None:
    assert _hints.implicit_product("2x") == "2*x"
    assert _hints.implicit_product("2 e-3") is None  # a spaced exponent is no product
    assert _hints.syntax_hint("2 e-3", "invalid syntax") == ""


def test_keywords_hint_for_a_function_without_parameters() -> None:
    node = ast.parse("tanh(x=1)", mode="eval").body
    assert isinstance(node, ast.Call)
    assert "its argument is positional, tanh(x)" in _hints.keywords_hint("tanh(x=1)", node)


# --- TeX arguments -----------------------------------------------------------------------------


def test_tex_argument_reader() -> None:
    assert _document._argument("   ", 0) == ("", 3)  # nothing left
    assert _document._argument(" {a{b}}c", 0) == ("a{b}", 7)
    assert _document._argument("{a{b}", 0) == ("a{b}", 5)  # unclosed: the rest


# --- sphere records and symbols ----------------------------------------------------------------


def test_sphere_symbols_latex_and_derivatives() -> None:
    from sympy.core.function import ArgumentIndexError

    from deqrmt.symbolic._sphere_symbols import NTKMapDerivative

    c = sp.Symbol("c")
    assert sp.latex(NTKMapDerivative(0, c)) == r"h\left(c\right)"
    assert sp.latex(NTKMapDerivative(2, c)) == r"h''\left(c\right)"
    assert sp.latex(NTKMapDerivative(4, c)) == r"h^{(4)}\left(c\right)"
    assert sp.diff(NTKMapDerivative(1, c**2), c) == 2 * c * NTKMapDerivative(2, c**2)
    for cls in (DualDerivative, NTKMapDerivative):
        with pytest.raises(ArgumentIndexError):
            cls(1, c).fdiff(1)


def test_sphere_records_validate_themselves() -> None:
    from deqrmt.symbolic._sphere import QuadraticFormulas, QuadraticSolution

    with pytest.raises(InvalidArgument, match="signs must be three"):
        QuadraticSolution("++", sp.S.One, sp.S.One, sp.S.One)
    with pytest.raises(InvalidArgument, match="signs must be three"):
        QuadraticSolution("+-*", sp.S.One, sp.S.One, sp.S.One)
    one = QuadraticSolution("+++", sp.S.One, sp.S.One, sp.S.One)
    with pytest.raises(DerivationError, match=r"Corollary 1 \(ck\): expected 8 solutions"):
        QuadraticFormulas(t**2, {}, (), (), (one,), (one,) * 8)


# --- small public refusals -----------------------------------------------------------------------


def test_small_refusals_and_lazy_names() -> None:
    from deqrmt import symbolic
    from deqrmt.symbolic import _latex, _recursion, _symbols
    from deqrmt.symbolic._family import get_family

    with pytest.raises(InvalidArgument, match="has type int, not text"):
        get_family(3)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="unknown target 'deq'"):
        _latex.equations("deq")
    name, tex = next(iter(_symbols._LATEX.items()))
    _symbols._register(name, tex)  # the same LaTeX again: nothing to do
    with pytest.raises(ValueError, match="is already defined with LaTeX"):
        _symbols._register(name, tex + "'")
    assert set(symbolic.__all__) <= set(dir(symbolic))
    q = sp.Symbol("q")
    assert _recursion._solve_linear(q, 2 * q + 1) == -1  # q = 2q + 1 ⇔ q = −1
    with pytest.raises(DerivationError, match="is not linear in q"):
        _recursion._solve_linear(q, q**2)
    tagged = _recursion.MomentSymbols.make("_x")
    assert all(str(s).endswith("_x") for s in (*tagged.mu, tagged.sq, tagged.sq2, tagged.dsq))
    assert len(set(tagged.mu)) == 6


def test_sphere_solvers_refuse_what_they_cannot_do() -> None:
    import dataclasses

    from deqrmt.symbolic._sphere import _at_origin, _triangular_solve, derive_sphere

    y = sp.Symbol("y")
    # x = 2, then y² = x: two solutions, found one unknown at a time
    sols = _triangular_solve([y**2 - x, x - 2], [x, y])
    assert sorted((s[x], s[y]) for s in sols) == sorted([(2, -sp.sqrt(2)), (2, sp.sqrt(2))])
    with pytest.raises(DerivationError, match="not triangular"):
        _triangular_solve([x + y - 1, x - y], [x, y])
    with pytest.raises(DerivationError, match="unresolved dual-activation term"):
        _at_origin(DualDerivative(1, sp.Symbol("z")), g, 2)
    formulas = derive_sphere(2)
    with pytest.raises(DerivationError, match="do not match `order`"):
        dataclasses.replace(formulas, order=3)


def test_text_block_names_only_what_needs_naming() -> None:
    from deqrmt.symbolic._latex import Equation, text_block

    q, a = sp.Symbol("q"), sp.Symbol("a")
    plain = Equation("eq:q", r"\tau_*^2", 2 * q, {q: "q"})  # q is its own plain name
    assert text_block([plain]) == "tau*^2 = 2*q\n"
    named = Equation("eq:a", "y", 2 * a, {a: r"\alpha_{*,4}"})
    assert text_block([named]) == "y = 2*a\nwhere a = alpha*_4\n"


def test_a_family_with_a_kink_instantiates_piecewise() -> None:
    from deqrmt.symbolic._activation import X
    from deqrmt.symbolic._family import get_family

    # max(a x, b x) with a = 2, b = 1/2: slope 2 right of 0, 1/2 left of it
    act = get_family("leaky_relu").instantiate([2, sp.Rational(1, 2)])
    values = [act.expr.subs(X, v) for v in (-2, 3)]
    assert values == [-1, 6]
    assert act.kinks == (0,)

"""Moment evaluation in any mpmath context, and the code generation behind it."""

from __future__ import annotations

import re

import mpmath
import pytest
import sympy as sp
from hypothesis import example, given, settings
from hypothesis import strategies as st

from deqrmt import ActivationError, DerivationError
from deqrmt.numeric import compile_function, evaluator_for, function_source
from deqrmt.symbolic import TAU, X, get_activation, moment_set
from helpers import CATALOGUE, SMOOTH, gauss, raw_moments

NAMES = ("phi", "d1", "d2", "sq", "sq2", "dsq")
_DISTINCT = [n for n in CATALOGUE if n not in ("swish", "quadratic")]


def _ctx(dps: int):
    ctx = mpmath.MPContext()
    ctx.dps = dps
    return ctx


@pytest.mark.parametrize("spec", _DISTINCT)
def test_moments_agree_with_quadrature_of_the_definitions(spec):
    """Every moment (closed form or the engine's quadrature) vs tanh-sinh on the definition."""
    ref = CATALOGUE[spec]
    ctx = _ctx(30)
    tau = ctx.mpf(83) / 100
    got = evaluator_for(get_activation(spec))(ctx, tau, NAMES)
    with mpmath.workdps(40):
        want = raw_moments(ref, mpmath.mpf(83) / 100)
        for n in NAMES:
            assert abs(mpmath.mpf(got[n].value) - want[n]) <= mpmath.mpf(10) ** -28 * max(abs(want[n]), 1), (
                spec, n, got[n].value, want[n],
            )  # fmt: skip


@pytest.mark.parametrize("spec", [n for n in _DISTINCT if CATALOGUE[n].closed])
def test_reference_closed_forms_match_reference_quadrature(spec):
    """The hand closed forms in helpers.py are themselves checked against their definitions."""
    ref = CATALOGUE[spec]
    with mpmath.workdps(25):
        tau = mpmath.mpf(13) / 10
        names = tuple(ref.closed)
        closed = raw_moments(ref, tau, names=names)
        quad = raw_moments(ref, tau, use_closed=False, names=names)
        for n in names:
            assert abs(closed[n] - quad[n]) <= mpmath.mpf(10) ** -22 * max(abs(quad[n]), 1), (
                spec,
                n,
            )


def test_exact_zeros_are_flagged():
    ctx = _ctx(30)
    got = evaluator_for(get_activation("tanh"))(ctx, ctx.mpf(1), NAMES)
    assert got["phi"].exact_zero and got["d2"].exact_zero
    assert got["phi"].value == 0 and got["d2"].value == 0
    assert not got["d1"].exact_zero and not got["sq"].exact_zero
    got = evaluator_for(get_activation("relu"))(ctx, ctx.mpf(1), NAMES)
    assert not any(v.exact_zero for v in got.values())


def test_float64_context():
    ev = evaluator_for(get_activation("tanh"))
    got = ev(mpmath.fp, 0.9, NAMES)
    with mpmath.workdps(30):
        want = raw_moments(CATALOGUE["tanh"], mpmath.mpf("0.9"))
    for n in NAMES:
        assert isinstance(got[n].value, float) or got[n].value == 0
        assert abs(got[n].value - float(want[n])) <= 1e-13 * max(abs(float(want[n])), 1), n


@pytest.mark.parametrize("spec", ["relu", "sin", "x + 0.25*x**2"])
def test_closed_forms_at_100_digits(spec):
    """A float constant anywhere in the compiled code would cap these at ~16 digits."""
    ctx = _ctx(100)
    tau = ctx.mpf(7) / 5
    got = evaluator_for(get_activation(spec))(ctx, tau, NAMES)
    with mpmath.workdps(110):
        want = raw_moments(CATALOGUE[spec], mpmath.mpf(7) / 5, use_closed=True)
        for n in NAMES:
            assert abs(mpmath.mpf(got[n].value) - want[n]) <= mpmath.mpf(10) ** -98 * max(
                abs(want[n]), 1
            ), n


def test_quadrature_at_60_digits():
    ctx = _ctx(60)
    tau = ctx.mpf(6) / 5
    got = evaluator_for(get_activation("tanh"))(ctx, tau, ("d1", "sq"))
    with mpmath.workdps(70):
        want = raw_moments(CATALOGUE["tanh"], mpmath.mpf(6) / 5, names=("d1", "sq"))
        for n in ("d1", "sq"):
            assert abs(mpmath.mpf(got[n].value) - want[n]) <= mpmath.mpf(10) ** -58 * abs(
                want[n]
            ), n


def test_global_precision_is_neither_used_nor_changed():
    mpmath.mp.dps = 5
    ctx = _ctx(40)
    got = evaluator_for(get_activation("tanh"))(ctx, ctx.mpf(1), ("sq",))
    assert mpmath.mp.dps == 5
    with mpmath.workdps(50):
        want = raw_moments(CATALOGUE["tanh"], mpmath.mpf(1), names=("sq",))["sq"]
        assert abs(mpmath.mpf(got["sq"].value) - want) < mpmath.mpf(10) ** -38


@pytest.mark.parametrize("spec", ["elu", "elu(0.5)"])
def test_closed_forms_keep_their_precision_at_large_scale(spec):
    """ELU's closed forms contain e^{2q}·(1 − erf(√2 τ))/2: at τ = 8 the two factors are
    10^{55} and 10^{-57}, and 1 − erf evaluated as a difference rounds to 0 at 30 digits."""
    ctx = _ctx(30)
    got = evaluator_for(get_activation(spec))(ctx, ctx.mpf(8), ("sq", "sq2", "dsq"))
    with mpmath.workdps(45):
        want = raw_moments(
            CATALOGUE[spec], mpmath.mpf(8), use_closed=False, names=("sq", "sq2", "dsq")
        )
        for n in ("sq", "sq2", "dsq"):
            assert abs(mpmath.mpf(got[n].value) - want[n]) <= mpmath.mpf(10) ** -20 * abs(want[n]), (
                n, got[n].value, want[n],
            )  # fmt: skip


# --- weak derivatives ------------------------------------------------------------------------


def test_weak_derivatives_of_a_jump():
    """sign: φ' = 2δ, φ''' = 2δ''; E[δ(X)] = 1/(τ√(2π)), E[δ''(X)] = −1/(τ³√(2π))."""
    ctx = _ctx(30)
    tau = ctx.mpf(3) / 2
    got = evaluator_for(get_activation("sign"))(ctx, tau, ("phi", "d1", "d2", "d3", "sq"))
    assert got["phi"].value == 0 and got["d2"].value == 0
    assert abs(got["d1"].value - 2 / (tau * ctx.sqrt(2 * ctx.pi))) < ctx.mpf(10) ** -28
    assert abs(got["d3"].value + 2 / (tau**3 * ctx.sqrt(2 * ctx.pi))) < ctx.mpf(10) ** -28
    assert abs(got["sq"].value - 1) < ctx.mpf(10) ** -28


@pytest.mark.parametrize("spec", ["sign", "heaviside(x)", "relu(x) + heaviside(x - 1)"])
def test_derivative_square_of_a_discontinuous_activation_is_refused(spec):
    ev = evaluator_for(get_activation(spec))
    with pytest.raises(ActivationError, match="discontinuous"):
        ev(_ctx(20), 1, ("dsq",))


def _stencil(k: int):
    """Central finite-difference weights for the k-th derivative, O(h²)."""
    return {
        1: ((-1, -mpmath.mpf(1) / 2), (1, mpmath.mpf(1) / 2)),
        2: ((-1, 1), (0, -2), (1, 1)),
        3: ((-2, -mpmath.mpf(1) / 2), (-1, 1), (1, -1), (2, mpmath.mpf(1) / 2)),
        4: ((-2, 1), (-1, -4), (0, 6), (1, -4), (2, 1)),
    }[k]


_SMOOTH_NOT_QUADRATIC = [s for s in SMOOTH if s != "x + 0.25*x**2"] + [
    "x + 0.25*x**2",
    "exp(-x**2/2)*x",
]


@settings(max_examples=10)
@given(
    spec=st.sampled_from(_SMOOTH_NOT_QUADRATIC),
    tau=st.integers(30, 250).map(lambda k: mpmath.mpf(k) / 100),
    k=st.integers(1, 4),
)
@example(spec="tanh", tau=mpmath.mpf(3) / 10, k=4)
@example(spec="sin", tau=mpmath.mpf(5) / 2, k=3)
def test_stein_identity_matches_finite_differences(spec, tau, k):
    """E[φ^{(k)}(τξ)] from the engine (Stein: τ^{-k} E[He_k(ξ)φ(τξ)]) equals the quadrature of
    the classical k-th derivative by central differences, h = 10^{-6} (error O(h²))."""
    act = get_activation(spec)
    name = f"d{k}"
    ctx = _ctx(30)
    got = evaluator_for(act)(ctx, ctx.mpf(tau), (name,))[name].value
    f = compile_function("phi_fd", [X], [act.expr])  # φ itself; no derivative from the engine
    with mpmath.workdps(45):
        h = mpmath.mpf(10) ** -6
        stencil = _stencil(k)

        def fd(x):
            return sum(w * f(mpmath.mp, x + j * h)[0] for j, w in stencil) / h**k

        want = gauss(fd, tau)
        assert abs(mpmath.mpf(got) - want) <= mpmath.mpf(10) ** -9 * max(abs(want), 1), (
            spec,
            k,
            got,
            want,
        )


# --- code generation ---------------------------------------------------------------------------


def test_rationals_print_as_context_mpf_ratios():
    src = function_source("f", [X], [sp.Rational(1, 10) * X])
    # every symbol prints as an identifier of ours, never by its SymPy name (issue 27)
    assert src == "def f(ctx, _a0):\n    return ((ctx.mpf(1)/ctx.mpf(10))*_a0,)\n"


def test_common_subexpressions_and_context_functions():
    src = function_source("g", [X], [sp.tanh(X) ** 2 + sp.tanh(X), sp.exp(-(X**2) / 2)])
    assert src == (
        "def g(ctx, _a0):\n"
        "    _t0 = ctx.tanh(_a0)\n"
        "    return (_t0**2 + _t0, ctx.exp(-ctx.mpf(1)/ctx.mpf(2)*_a0**2),)\n"
    )


def test_docstring_is_emitted():
    src = function_source("h", [TAU], [TAU], doc="identity")
    # a repr literal, never an f-string docstring: user text in ``doc`` cannot end it (issue 9)
    assert src.splitlines()[1] == "    'identity'"


@pytest.mark.parametrize(
    "expr", [sp.Float("0.1") * X, X + sp.Float(2.5), sp.exp(sp.Float("1e-3") * X)]
)
def test_float_in_an_expression_is_refused(expr):
    with pytest.raises(DerivationError, match="Float"):
        function_source("bad", [X], [expr])
    with pytest.raises(DerivationError):
        compile_function("bad", [X], [expr])


def test_compiled_function_runs_at_the_context_precision():
    f = compile_function("tenth", [X], [sp.Rational(1, 10) * X + sp.pi])
    mpmath.mp.dps = 15
    ctx = _ctx(60)
    (v,) = f(ctx, ctx.one)
    assert mpmath.mp.dps == 15
    with mpmath.workdps(70):
        assert abs(v - (mpmath.mpf(1) / 10 + mpmath.pi)) < mpmath.mpf(10) ** -58
    (w,) = f(mpmath.fp, 1.0)
    assert isinstance(w, float) and abs(w - (0.1 + 3.141592653589793)) < 1e-15
    assert "def tenth(ctx, _a0)" in f.__doc__


_FLOAT_LITERAL = re.compile(r"(?<![\w.])\d+\.\d*(?:[eE][+-]?\d+)?|(?<![\w.])\d+[eE][+-]?\d+")


@pytest.mark.parametrize("spec", sorted(CATALOGUE))
def test_generated_closed_form_source_has_no_float_literals(spec):
    ms = moment_set(get_activation(spec))
    closed = [m.closed_form for m in ms.moments.values() if m.closed_form is not None]
    src = function_source("closed", [TAU], closed)
    assert not _FLOAT_LITERAL.search(src), _FLOAT_LITERAL.search(src)
    assert "mpmath." not in src and "math." not in src

"""Every PyTorch activation by name: the library names, proven coefficients, fair pricing by the
parser and torch.nn class names answered with the library's name."""

from __future__ import annotations

import ast

import mpmath
import pytest
import sympy as sp

from deqrmt import UnknownActivation, deq_coefficients
from deqrmt.symbolic import LIBRARY, X, get_activation
from deqrmt.symbolic._activation import TORCH_NAMES
from deqrmt.symbolic._parse_limits import _cost

NEW = [
    "mish", "hardswish", "hardsigmoid", "selu", "celu", "softsign", "logsigmoid", "tanhshrink",
    "softshrink", "hardshrink", "relu6", "gelu_tanh",
]  # fmt: skip

#: the formulas as torch's documentation writes them, in the parser's own functions
WRITTEN = {
    "mish": "x*tanh(softplus(x))",
    "hardswish": "x*min(max(x/6 + 1/2, 0), 1)",
    "hardsigmoid": "min(max(x/6 + 1/2, 0), 1)",
    "selu": "1.0507009873554804934193349852946*elu(1.6732632423543772848170429916717)",
    "celu": "elu",
    "softsign": "x/(1 + abs(x))",
    "logsigmoid": "-softplus(-x)",
    "tanhshrink": "x - tanh(x)",
    "softshrink": "x - min(max(x, -0.5), 0.5)",
    "hardshrink": "x*heaviside(x - 0.5) + x*heaviside(-x - 0.5)",
    "relu6": "min(max(x, 0), 6)",
    "gelu_tanh": "x*(1 + tanh(sqrt(2/pi)*(x + 0.044715*x**3)))/2",
}


def test_every_torch_activation_is_a_library_name() -> None:
    assert set(NEW) <= set(LIBRARY)
    assert set(TORCH_NAMES.values()) <= set(LIBRARY)


@pytest.mark.parametrize("name", NEW)
def test_the_library_formula_is_torchs(name: str) -> None:
    """Against the formula written by hand (torch's own outputs are compared with every
    module in test_activation_objects), at points off the kinks, to 25 digits."""
    ours, written = get_activation(name).expr, get_activation(WRITTEN[name]).expr
    for x in ("-7.3", "-1.9", "-0.31", "0.27", "0.8", "2.6", "6.4", "9.1"):
        a = ours.subs(X, sp.Rational(x)).evalf(30)
        b = written.subs(X, sp.Rational(x)).evalf(30)
        assert abs(a - b) < 1e-25, (name, x, a, b)


@pytest.mark.parametrize("name", NEW)
def test_the_parser_prices_a_name_as_its_formula(name: str) -> None:
    """A library name must not be cheaper for the parser's limits than its formula written
    out: the limits bound the work the engine does on it (the constant sqrt(2/pi) is no
    work)."""
    named, written = (
        _cost(ast.parse(name, mode="eval")),
        _cost(ast.parse(WRITTEN[name].replace("sqrt(2/pi)", "0.8"), mode="eval")),
    )
    assert named.calls >= written.calls, (name, named.calls, written.calls)
    assert named.kinks >= min(written.kinks, 2), (name, named.kinks, written.kinks)
    assert named.depth == written.depth


def _moments(name: str, tau: mpmath.mpf) -> tuple[mpmath.mpf, mpmath.mpf]:
    """E[φ(τξ)] and Var[φ(τξ)] by mpmath's quadrature of the hand-written formula (split at
    the kinks), independent of the engine."""
    f = sp.lambdify(X, get_activation(WRITTEN[name]).expr, "mpmath")
    pts = [-mpmath.inf, -6 / tau, -3 / tau, 0, 3 / tau, 6 / tau, mpmath.inf]
    m1 = mpmath.quad(lambda z: f(tau * z) * mpmath.npdf(z), pts)
    m2 = mpmath.quad(lambda z: f(tau * z) ** 2 * mpmath.npdf(z), pts)
    return m1, m2 - m1**2


@pytest.mark.parametrize("name", ["mish", "hardswish", "selu", "relu6"])
def test_coefficients_are_proven_and_right(name: str) -> None:
    """Proven, and τ* solves the fixed point of the centered φ: τ² = σ_a² Var[φ(τξ)] + σ_b²."""
    c = deq_coefficients(name, dps=15)
    assert c.certified, c.reason
    tau = mpmath.mpf(c.values["tau_star"].text)
    with mpmath.workdps(30):
        mean, var = _moments(name, tau)
        assert abs(tau**2 - var / 5 - mpmath.mpf(4) / 5) < 1e-13
        assert abs(mean - mpmath.mpf(c.values["center"].text)) < 1e-13


@pytest.mark.parametrize(
    ("typed", "suggested"),
    [("Mish", "mish"), ("LeakyReLU", "leaky_relu"), ("Hardtanh", "hard_tanh"), ("ReLU6", "relu6")],
)
def test_torch_class_names_suggest_the_library_name(typed: str, suggested: str) -> None:
    with pytest.raises(
        UnknownActivation, match=rf"did you mean '{suggested}'\? \(torch\.nn\.{typed}\)"
    ):
        get_activation(typed)
    with pytest.raises(UnknownActivation, match=rf"did you mean '{suggested}'"):
        get_activation(f"0.5*{typed}(x)")

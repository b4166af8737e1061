"""Activations as objects (issue 23, item 2): SymPy, Lambda, numpy/math/torch callables and
torch.nn modules are the same Activation as the corresponding string; anything else is refused
with what is accepted, and no user code is ever called."""

from __future__ import annotations

import functools
import math
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
import sympy as sp

import deqrmt
from deqrmt import InvalidArgument
from deqrmt.symbolic import X, get_activation, get_activations

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

# --- the same Activation as the string -----------------------------------------------------------

SAME = [
    (np.tanh, "tanh"),
    (np.sin, "sin"),
    (np.cos, "cos"),
    (np.exp, "exp(x)"),
    (np.arctan, "atan(x)"),
    (np.abs, "abs(x)"),
    (math.tanh, "tanh"),
    (math.erf, "erf"),
    (math.sinh, "sinh(x)"),
    (abs, "abs(x)"),
    (torch.tanh, "tanh"),
    (torch.sigmoid, "sigmoid"),
    (torch.relu, "relu"),
    (torch.erf, "erf"),
    (F.relu, "relu"),
    (F.gelu, "gelu"),
    (F.silu, "silu"),
    (F.softplus, "softplus"),
    (F.elu, "elu"),
    (F.leaky_relu, "leaky_relu"),
    (F.hardtanh, "hard_tanh"),
    (F.mish, "mish"),
    (F.hardswish, "hardswish"),
    (nn.Mish(), "mish"),
    (nn.SELU(), "selu"),
    (nn.CELU(), "celu"),
    (nn.CELU(alpha=2.0), "celu(2)"),
    (nn.ReLU6(), "relu6"),
    (nn.Hardshrink(), "hardshrink"),
    (nn.Softshrink(0.4), "softshrink(0.4)"),
    (nn.Tanh(), "tanh"),
    (nn.ReLU(), "relu"),
    (nn.Sigmoid(), "sigmoid"),
    (nn.SiLU(), "silu"),
    (nn.GELU(), "gelu"),
    (nn.GELU(approximate="tanh"), "gelu_tanh"),
    (nn.Softplus(), "softplus"),
    (nn.Softplus(beta=2), "softplus(2*x)/2"),
    (nn.Softplus(beta=0.5, threshold=5), "2*softplus(x/2)"),
    (nn.LeakyReLU(), "leaky_relu"),
    (nn.LeakyReLU(0.1), "leaky_relu(0.1)"),
    (nn.ELU(), "elu"),
    (nn.ELU(alpha=0.5), "elu(0.5)"),
    (nn.Hardtanh(), "hard_tanh"),
    (nn.Hardtanh(-2.0, 2.0), "hard_tanh(1, 2)"),
    (nn.Identity(), "identity"),
    (functools.partial(F.leaky_relu, negative_slope=0.2), "leaky_relu(0.2)"),
    (functools.partial(F.elu, alpha=2.0), "elu(2)"),
    (sp.tanh, "tanh(x)"),
    (sp.tanh(sp.Symbol("t")), "tanh(x)"),
    # a SymPy expression's string is SymPy's printing of it, in the parser's spelling
    (sp.Max(sp.Symbol("u"), sp.Symbol("u") / 10), "max(x, x/10)"),
    (sp.Lambda(sp.Symbol("y"), sp.sin(sp.Symbol("y")) + sp.Symbol("y") / 2), "x/2 + sin(x)"),
    (sp.exp(-(sp.Symbol("y", positive=True) ** 2)), "exp(-x**2)"),
]


@pytest.mark.parametrize(("obj", "text"), SAME, ids=[t for _, t in SAME])
def test_an_object_is_the_activation_of_its_string(obj: Any, text: str) -> None:
    got, want = get_activation(obj), get_activation(text)
    assert got == want  # same name and same expression: same cache entries, same output bytes
    assert repr(got) == repr(want)


def test_scipy_special_functions() -> None:
    special = pytest.importorskip("scipy.special")
    assert get_activation(special.expit) == get_activation("sigmoid")
    assert get_activation(special.erf) == get_activation("erf")


# --- the mapping is right: torch's own outputs against the exact expression ----------------------

MODULES = [
    nn.Tanh(), nn.ReLU(), nn.Sigmoid(), nn.SiLU(), nn.GELU(), nn.GELU(approximate="tanh"),
    nn.Softplus(beta=2.0), nn.Softplus(beta=0.5), nn.LeakyReLU(0.2), nn.LeakyReLU(1.5),
    nn.LeakyReLU(-0.3), nn.ELU(alpha=0.7), nn.CELU(alpha=2.0), nn.Hardtanh(-2.0, 2.0),
    nn.Hardtanh(-1.0, 3.0), nn.Identity(), nn.Mish(), nn.Softsign(), nn.ReLU6(),
    nn.Hardsigmoid(), nn.Hardswish(), nn.SELU(), nn.Tanhshrink(), nn.LogSigmoid(),
    nn.Softshrink(0.4), nn.Hardshrink(0.3), nn.CELU(alpha=0.5),
]  # fmt: skip
POINTS = [-7.1, -3.2, -1.3, -0.45, 0.05, 0.4, 1.7, 3.5, 6.9]


@pytest.mark.parametrize("module", MODULES, ids=[type(m).__name__ for m in MODULES])
def test_torch_modules_agree_with_their_exact_expression(module: Any) -> None:
    """The reference is torch itself in float64; the expression is evaluated by SymPy at 30
    digits.  A wrong parameter (β, slope, clip bounds, the SELU constants) would fail."""
    act = get_activation(module)
    with torch.no_grad():
        ours = module(torch.tensor(POINTS, dtype=torch.float64)).tolist()
    for x, y in zip(POINTS, ours, strict=True):
        exact = float(act.expr.subs(X, sp.Rational(str(x))).evalf(30))
        assert exact == pytest.approx(y, rel=1e-12, abs=1e-12), (type(module).__name__, x)


def test_partial_keywords_agree_with_torch() -> None:
    """Above βx = threshold (20) torch returns x: the exact softplus differs from it by less
    than float32's resolution, as get_activation's documentation says (here 5e-11 at x = 6.9)."""
    fn = functools.partial(F.softplus, beta=3.0)
    act = get_activation(fn)
    with torch.no_grad():
        ours = fn(torch.tensor(POINTS, dtype=torch.float64)).tolist()
    for x, y in zip(POINTS, ours, strict=True):
        rel = 1e-7 if 3 * x > 20 else 1e-12
        assert float(act.expr.subs(X, sp.Rational(str(x))).evalf(30)) == pytest.approx(y, rel)


def test_a_sympy_piecewise_is_read_piece_by_piece() -> None:
    t = sp.Symbol("t")
    act = get_activation(sp.Piecewise((t, t > 0), (t / 10, True)))
    ref = get_activation("leaky_relu(0.1)")
    assert act.kinks == ref.kinks == (0,)
    assert [sp.simplify(p.expr - q.expr) for p, q in zip(act.pieces, ref.pieces, strict=True)] == [
        0,
        0,
    ]


# --- every public function takes them ------------------------------------------------------------


def test_deq_coefficients_of_objects() -> None:
    """The issue's 'done when': a torch module and a SymPy expression work end to end."""
    silu = deqrmt.deq_coefficients(nn.SiLU(), dps=15)
    assert silu.to_json() == deqrmt.deq_coefficients("silu", dps=15).to_json()
    c = deqrmt.deq_coefficients(sp.tanh(sp.Symbol("x")), dps=15)
    assert (
        c.values["alpha_1"].text == deqrmt.deq_coefficients("tanh", dps=15).values["alpha_1"].text
    )


def test_layers_are_explicit_a_bare_activation_is_one_layer() -> None:
    """``explicit_coefficients("relu")`` read 'relu' as the layers 'r', 'e', 'l', 'u'."""
    one = deqrmt.explicit_coefficients("relu", dps=15).to_dict()
    assert one == deqrmt.explicit_coefficients(["relu"], dps=15).to_dict()
    assert deqrmt.explicit_coefficients(nn.ReLU(), dps=15).to_dict() == one
    two = deqrmt.explicit_coefficients([nn.ReLU(), np.tanh], dps=15)
    assert [a.name for a in two.activations] == ["relu", "tanh"]
    assert [a.name for a in get_activations(("relu", "tanh"), hi=8)] == ["relu", "tanh"]


# --- anything else is refused, and never called ---------------------------------------------------


class _Spy:
    """Callable, with the repr of numpy's tanh: recognised by neither."""

    called = False

    def __call__(self, x: Any) -> Any:
        _Spy.called = True
        return x

    def __repr__(self) -> str:
        return "<ufunc 'tanh'>"


class _MyTanh(nn.Tanh):  # a subclass may override forward: not torch's Tanh
    pass


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (lambda x: np.tanh(x), "never called"),
        (_Spy(), "never called"),
        (_MyTanh(), "activation modules are read"),
        (nn.Linear(2, 2), "activation modules are read"),
        (np.arcsinh, "never called"),
        (5, "accepted: a library name"),
        (None, "accepted: a library name"),
        (sp.Symbol("a") * sp.Symbol("b"), "one symbol"),
        (sp.Integer(3), "a constant"),
        (sp.Function("f")(sp.Symbol("x")), "the function 'f' is not supported"),
        (sp.asinh(sp.Symbol("x")), "asinh"),
        (sp.Eq(sp.Symbol("x"), 1), "not an expression"),
        (sp.Lambda((sp.Symbol("a"), sp.Symbol("b")), sp.Symbol("a")), "one variable"),
        (
            sp.Piecewise((sp.Symbol("x"), (sp.Symbol("x") > 0) & (sp.Symbol("x") < 1)), (0, True)),
            "one comparison per branch",
        ),
        (functools.partial(F.leaky_relu, slope=0.1), "negative_slope"),
        (functools.partial(F.leaky_relu, 0.1), "as keywords"),
        (nn.Softplus(beta=-1.0), "beta > 0"),
    ],
)
def test_anything_else_is_refused_with_what_is_accepted(value: Any, says: str) -> None:
    _Spy.called = False
    with pytest.raises(InvalidArgument) as info:
        get_activation(value)
    assert says in str(info.value), str(info.value)
    assert "\n" not in str(info.value)
    assert not _Spy.called


def test_a_module_parameter_must_be_a_plain_number() -> None:
    m = nn.LeakyReLU(0.1)
    m.negative_slope = "0.1; import os"  # type: ignore[assignment]
    with pytest.raises(InvalidArgument, match="expected a number"):
        get_activation(m)


def test_a_huge_sympy_expression_is_refused_before_printing() -> None:
    t = sp.Symbol("t")
    with pytest.raises(deqrmt.BudgetExceeded):
        get_activation(sp.Add(*[sp.tanh(k * t) for k in range(1, 400)]))


def test_string_activations_import_neither_torch_nor_numpy() -> None:
    code = (
        "import sys; from deqrmt.symbolic import get_activation; get_activation('tanh'); "
        "get_activation('gelu'); print('torch' in sys.modules, 'scipy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False"]

"""φ_c and φ_c' compiled to torch agree with SymPy; closed forms are recognised (issue 4)."""

from __future__ import annotations

import math

import pytest
import sympy as sp

torch = pytest.importorskip("torch")

from deqrmt import ActivationError  # noqa: E402
from deqrmt.symbolic import library_activation, parse_activation  # noqa: E402
from deqrmt.validate._pointwise import CenteredActivation, PiecewiseLinear, ScaledErf  # noqa: E402

NAMES = [
    "relu",
    "leaky_relu",
    "tanh",
    "erf",
    "silu",
    "gelu",
    "softplus",
    "elu",
    "sin",
    "hard_tanh",
    "quadratic",
]
POINTS = [-3.7, -1.0, -0.31, 0.0, 0.42, 1.0, 2.9]


def _act(spec: str):
    return parse_activation(spec) if "(" in spec or "x" in spec else library_activation(spec)


@pytest.mark.parametrize("name", NAMES + ["max(x, 0.1*x)", "min(max(x, -2), 1) + 0.5*x", "abs(x)"])
def test_phi_and_derivative_match_sympy(name: str) -> None:
    act = _act(name)
    c = 0.137
    ca = CenteredActivation.from_activation(act, c)
    t = torch.tensor(POINTS, dtype=torch.float64)
    got, dgot = ca.phi(t), ca.dphi(t)
    f = sp.lambdify(act.x, act.expr, "mpmath")
    df = sp.lambdify(act.x, sp.diff(act.expr, act.x), "mpmath")
    kinks = {float(k) for k in act.kinks}
    for i, x in enumerate(POINTS):
        assert float(got[i]) == pytest.approx(float(f(x)) - c, rel=1e-14, abs=1e-14)
        if x not in kinks:  # the derivative at a kink is a convention
            assert float(dgot[i]) == pytest.approx(float(df(x)), rel=1e-13, abs=1e-14)


def test_identity_piece_is_not_modified_in_place() -> None:
    ca = CenteredActivation.from_activation(parse_activation("x"), 0.5)
    ca2 = CenteredActivation.from_activation(parse_activation("x + 0*tanh(x)"), 0.5)
    for a in (ca, ca2):
        t = torch.tensor([1.0, 2.0], dtype=torch.float64)
        out = a.phi(t)
        assert t.tolist() == [1.0, 2.0]
        assert out.tolist() == [0.5, 1.5]


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        ("relu", PiecewiseLinear(1.0, 0.0)),
        ("leaky_relu", PiecewiseLinear(1.0, 0.01)),
        ("abs(x)", PiecewiseLinear(1.0, -1.0)),
        ("erf", ScaledErf(1.0, 1.0, 0.0)),
        ("2*erf(3*x) + 1", ScaledErf(2.0, 3.0, 1.0)),
        ("tanh", None),
        ("gelu", None),
        ("max(x, 0) + 1", None),  # not positively homogeneous: Mehler, not arc-cosine
    ],
)
def test_closed_form_detection(spec: str, want: object) -> None:
    assert CenteredActivation.from_activation(_act(spec), 0.0).closed_form == want


def test_discontinuous_activation_is_rejected() -> None:
    with pytest.raises(ActivationError, match="discontinuous"):
        CenteredActivation.from_activation(library_activation("sign"), 0.0)


def test_float32_and_shapes() -> None:
    ca = CenteredActivation.from_activation(library_activation("gelu"), 0.25)
    t = torch.linspace(-3, 3, 12, dtype=torch.float32).reshape(3, 4)
    out = ca.phi(t)
    assert out.dtype == torch.float32 and out.shape == (3, 4)
    ref = t * 0.5 * (1 + torch.special.erf(t / math.sqrt(2))) - 0.25
    assert torch.allclose(out, ref, atol=1e-6)


@pytest.mark.parametrize("spec", ["hard_tanh", "relu", "min(max(x, -1), 1) + 0.5*x", "elu"])
def test_constant_pieces_keep_the_input_dtype_and_shape(spec: str) -> None:
    # a piece that is a constant (hard_tanh's φ' = 0, 1, 0) is a number in the generated code:
    # φ_c and φ_c' still come back in the input's dtype and shape, never aliasing a constant
    ca = CenteredActivation.from_activation(_act(spec), 0.0)
    for dtype in (torch.float32, torch.float64):
        t = torch.linspace(-3, 3, 12, dtype=dtype).reshape(3, 4)
        for out in (ca.phi(t), ca.dphi(t)):
            assert out.dtype == dtype and out.shape == (3, 4)
            out.add_(1)  # a tensor of its own (in-place works)

"""Explicit-network coefficients (Theorem 3): layer recursion against independent references."""

from __future__ import annotations

import json
from decimal import Decimal

import mpmath
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from deqrmt import CenteringError, InvalidArgument, UnknownActivation
from deqrmt.numeric import LAYER_KEYS, explicit_coefficients
from helpers import CATALOGUE, assert_close, explicit_reference, to_mpf

ZERO_SCALE = mpmath.mpf(10) ** -10
TAU0 = st.integers(50, 200).map(lambda k: str(Decimal(k).scaleb(-2)))


@pytest.mark.parametrize(
    "stack",
    [
        ["relu"],
        ["tanh", "relu"],
        ["relu", "relu", "relu"],
        ["sin", "x + 0.25*x**2"],
        ["leaky_relu(0.1)", "erf", "hard_tanh(1.2, 0.8)"],
    ],
)
def test_layers_agree_with_the_hand_recursion(stack):
    res = explicit_coefficients(stack, dps=30)
    ref = explicit_reference([CATALOGUE[s] for s in stack], dps=40)
    assert len(res.layers) == len(stack)
    with mpmath.workdps(50):
        for l, (got, want) in enumerate(zip(res.layers, ref, strict=True), start=1):
            for key in LAYER_KEYS:
                assert got[key].digits == 30
                assert_close(got[key].value, want[key], 28, ZERO_SCALE, what=f"layer {l} {key}")
                assert_close(
                    mpmath.mpf(got[key].text),
                    want[key],
                    28,
                    ZERO_SCALE,
                    what=f"layer {l} {key} text",
                )


def test_relu_stack_scale_by_hand():
    # τ̃_l = τ̃_{l−1} √(1/2 − 1/(2π)) (centered ReLU), center_l = τ̃_{l−1}/√(2π),
    # α̃_{l,1} = E[σ']^{2l} = 4^{-l}, κ̃_l² = τ̃_l² + κ̃_{l−1}²/2.
    res = explicit_coefficients(["relu"] * 4, tau0="1.5", dps=30)
    with mpmath.workdps(40):
        tau = kappa = mpmath.mpf(3) / 2
        for l, layer in enumerate(res.layers, start=1):
            assert_close(layer["center"].value, tau / mpmath.sqrt(2 * mpmath.pi), 29)
            tau = tau * mpmath.sqrt(mpmath.mpf(1) / 2 - 1 / (2 * mpmath.pi))
            kappa = mpmath.sqrt(tau**2 + kappa**2 / 2)
            assert_close(layer["tau"].value, tau, 29)
            assert_close(layer["kappa"].value, kappa, 29)
            assert_close(layer["alpha_1"].value, mpmath.mpf(4) ** -l, 29)


@given(depth=st.integers(1, 5), tau0=TAU0)
@example(depth=1, tau0="1.00")
def test_identity_layers_by_hand(depth, tau0):
    """σ = identity: τ̃ = τ0, α̃ = (1, 0, 0, 1), β̃ = (l + 1, 0, 0), κ̃_l = τ0 √(l + 1)."""
    res = explicit_coefficients(["identity"] * depth, tau0=tau0, dps=30)
    with mpmath.workdps(40):
        t0 = to_mpf(tau0)
        for l, layer in enumerate(res.layers, start=1):
            want = {
                "tau": t0, "alpha_1": 1, "alpha_2": 0, "alpha_3": 0, "alpha_4": 1,
                "beta_1": l + 1, "beta_2": 0, "beta_3": 0, "kappa": t0 * mpmath.sqrt(l + 1), "center": 0,
            }  # fmt: skip
            for key, v in want.items():
                assert_close(layer[key].value, v, 29, ZERO_SCALE, what=f"layer {l} {key}")


_ONE_LAYER = [
    "relu",
    "leaky_relu(0.1)",
    "sin",
    "cos",
    "elu(0.5)",
    "hard_tanh",
    "x + 0.25*x**2",
    "gelu",
    "erf",
    "identity",
]


@given(spec=st.sampled_from(_ONE_LAYER), tau0=TAU0)
@example(spec="relu", tau0="0.50")
@example(spec="x + 0.25*x**2", tau0="2.00")
def test_one_layer_alpha_2_is_half_alpha_3(spec, tau0):
    """From the input layer (α̃_0 = (1, 0, 0, 1)): α̃_{1,2} = a2²/4 and α̃_{1,3} = a2²/2."""
    (layer,) = explicit_coefficients([spec], tau0=tau0, dps=30).layers
    with mpmath.workdps(40):
        a2, a3 = layer["alpha_2"].value, layer["alpha_3"].value
        assert abs(a2 - a3 / 2) <= mpmath.mpf(10) ** -28 * max(abs(a3), ZERO_SCALE), (a2, a3)
    if spec in ("relu", "leaky_relu(0.1)", "cos", "x + 0.25*x**2", "elu(0.5)", "gelu"):
        assert layer["alpha_3"].value > 0  # not a vacuous 0 = 0/2
    else:  # odd activations: E[σ''] = 0
        assert layer["alpha_3"].value == 0


def test_dps_30_and_60_agree():
    a = explicit_coefficients(["tanh", "relu", "x + 0.25*x**2"], tau0="0.7", dps=30)
    b = explicit_coefficients(["tanh", "relu", "x + 0.25*x**2"], tau0="0.7", dps=60)
    with mpmath.workdps(80):
        for la, lb in zip(a.layers, b.layers, strict=True):
            for key in LAYER_KEYS:
                assert lb[key].digits == 60
                assert_close(la[key].value, lb[key].value, 28, ZERO_SCALE, what=key)


def test_global_precision_untouched():
    mpmath.mp.dps = 5
    res = explicit_coefficients(["relu", "sin"], dps=30)
    assert mpmath.mp.dps == 5
    ref = explicit_reference([CATALOGUE["relu"], CATALOGUE["sin"]], dps=40)
    with mpmath.workdps(50):
        for got, want in zip(res.layers, ref, strict=True):
            for key in LAYER_KEYS:
                assert_close(got[key].value, want[key], 28, ZERO_SCALE, what=key)


def test_no_center():
    with pytest.raises(CenteringError, match="center=False"):
        explicit_coefficients(["tanh", "relu"], dps=15, center=False)
    res = explicit_coefficients(["tanh", "sin"], dps=20, center=False)
    assert not res.centered
    assert all(layer["center"].text == "0" for layer in res.layers)


@pytest.mark.parametrize(
    ("args", "kwargs", "error"),
    [
        ([], {}, InvalidArgument),
        (["relu"], {"tau0": float("nan")}, InvalidArgument),
        (["relu"] * 9, {}, InvalidArgument),  # more layers than the budget (BudgetExceeded)
        (["relu"], {"tau0": "0"}, InvalidArgument),
        (["relu"], {"dps": 3}, InvalidArgument),
        (["relu", "nope"], {}, UnknownActivation),
        (["x.__class__"], {}, InvalidArgument),
    ],
)
def test_invalid_arguments(args, kwargs, error):
    with pytest.raises(error):
        explicit_coefficients(args, **kwargs)


def test_json_shape():
    res = explicit_coefficients(["relu", "tanh"], tau0="1/2", dps=20)
    d = json.loads(res.to_json())
    assert d["activations"] == ["relu", "tanh"]
    assert (d["tau0"], d["dps"], d["centered"]) == ("1/2", 20, True)
    assert len(d["layers"]) == 2
    for layer in d["layers"]:
        assert list(layer) == list(LAYER_KEYS)
        for v in layer.values():
            Decimal(v)
    assert res.as_floats()[0]["tau"] == float(res.layers[0]["tau"].value)

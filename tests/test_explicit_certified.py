"""Certified explicit networks (issue 21): per-layer balls against independent 70-digit references.

The references are computed here, not by the engine: the Gaussian integrals by ``mpmath.quad``
at 80 digits (ReLU by its arc-cosine closed forms), and Theorem 3's layer recursion written out
by hand:

    τ̃_l² = E[σ_c²],  α̃_{l,1} = μ₁² α̃_{l−1,1},  α̃_{l,2} = μ₁² α̃_{l−1,2} + μ₂² α̃_{l−1,4}²/4,
    α̃_{l,3} = μ₁² α̃_{l−1,3} + μ₂² α̃_{l−1,1}²/2,  α̃_{l,4} = E[(σ_c²)″] α̃_{l−1,4}/2,
    β̃_{l,1} = μ₁² (α̃_{l−1,1} + β̃_{l−1,1}),  β̃_{l,2} = α̃_{l,2} + μ₁² β̃_{l−1,2},
    β̃_{l,3} = α̃_{l,3} + μ₁² β̃_{l−1,3} + μ₂² α̃_{l−1,1} β̃_{l−1,1},
    κ̃_l² = τ̃_l² + E[σ′²] κ̃_{l−1}²,

with μ_k = E[σ^{(k)}(τ̃_{l−1}ξ)] (Stein: τ^{−k} E[He_k(ξ) σ(τξ)]), σ_c = σ − c, c = E[σ(τ̃_{l−1}ξ)],
E[σ_c²] = E[σ²] − c², E[(σ_c²)″] = E[(σ²)″] − 2c μ₂.
"""

from __future__ import annotations

import json

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deqrmt.cli import main
from deqrmt.numeric import LAYER_KEYS, explicit_coefficients
from deqrmt.numeric._enclose import NotEnclosable

REF_DPS = 80


_MOMENTS: dict[tuple[str, mpmath.mpf], dict[str, mpmath.mpf]] = {}


def _moments(name: str, tau: mpmath.mpf) -> dict[str, mpmath.mpf]:
    """E[σ], E[σ′], E[σ″], E[σ²], E[(σ²)″], E[σ′²] at scale τ, by hand (memoised: the
    wrong recursion below shares the right one's moments)."""
    if (name, tau) not in _MOMENTS:
        _MOMENTS[name, tau] = _by_hand(name, tau)
    return _MOMENTS[name, tau]


def _by_hand(name: str, tau: mpmath.mpf) -> dict[str, mpmath.mpf]:
    if name == "relu":  # arc-cosine kernel of degree 1 on the diagonal, and its derivatives
        r = 1 / mpmath.sqrt(2 * mpmath.pi)
        return {"c": tau * r, "m1": mpmath.mpf(1) / 2, "m2": r / tau, "sq": tau**2 / 2,
                "sq2": mpmath.mpf(1), "dsq": mpmath.mpf(1) / 2}  # fmt: skip
    steep = {"tanh": 1, "tanh(30*x)": 30}[name]

    def e(f):  # E[f(τξ)] = ∫ f(x) e^{−x²/(2τ²)} dx / (τ√(2π)), |x| ≤ 40τ
        # panels of width 1/(2·steep) (tanh's poles lie π/(2·steep) off the axis) where
        # tanh(steep·x) differs from ±1 by more than 1e-82, one panel beyond on each side
        edge = min(40 * tau, mpmath.mpf(95) / steep)
        n = int(edge * 2 * steep) + 1
        pts = [edge * k / n for k in range(-n, n + 1)]
        if edge < 40 * tau:
            pts = [-40 * tau, *pts, 40 * tau]
        g = lambda x: f(x) * mpmath.exp(-(x**2) / (2 * tau**2))  # noqa: E731
        q = mpmath.quad(g, pts, method="gauss-legendre")
        return q / (tau * mpmath.sqrt(2 * mpmath.pi))

    s = lambda x: mpmath.tanh(steep * x)  # noqa: E731
    ds = lambda x: steep * mpmath.sech(steep * x) ** 2  # noqa: E731
    zero = mpmath.mpf(0)  # tanh is odd: E[σ] = E[σ″] = 0 exactly (quad would leave 1e-176)
    return {
        "c": zero,
        "m1": e(ds),
        "m2": zero,
        "sq": e(lambda x: s(x) ** 2),
        "sq2": e(lambda x: (x**2 / tau**2 - 1) * s(x) ** 2) / tau**2,
        "dsq": e(lambda x: ds(x) ** 2),
    }


def reference(stack: list[str], tau0: int = 1, *, half: bool = True) -> list[dict[str, mpmath.mpf]]:
    """Theorem 3's recursion by hand (centered layers, every layer trainable), 80 digits.
    ``half=False`` drops the ½ of α̃_{l,4}: the deliberately wrong recursion."""
    out = []
    with mpmath.workdps(REF_DPS):
        t = mpmath.mpf(tau0)
        p = {"tau": t, "alpha_1": 1, "alpha_2": 0, "alpha_3": 0, "alpha_4": 1,
             "beta_1": 1, "beta_2": 0, "beta_3": 0, "kappa": t}  # fmt: skip
        for name in stack:
            m = _moments(name, p["tau"])
            c, m1, m2 = m["c"], m["m1"], m["m2"]
            sq, sq2 = m["sq"] - c**2, m["sq2"] - 2 * c * m2
            a2 = m1**2 * p["alpha_2"] + m2**2 * p["alpha_4"] ** 2 / 4
            a3 = m1**2 * p["alpha_3"] + m2**2 * p["alpha_1"] ** 2 / 2
            layer = {
                "tau": mpmath.sqrt(sq),
                "alpha_1": m1**2 * p["alpha_1"],
                "alpha_2": a2,
                "alpha_3": a3,
                "alpha_4": sq2 * p["alpha_4"] / (2 if half else 1),
                "beta_1": m1**2 * (p["alpha_1"] + p["beta_1"]),
                "beta_2": a2 + m1**2 * p["beta_2"],
                "beta_3": a3 + m1**2 * p["beta_3"] + m2**2 * p["alpha_1"] * p["beta_1"],
                "kappa": mpmath.sqrt(sq + m["dsq"] * p["kappa"] ** 2),
                "center": c,
            }
            out.append(layer)
            p = {k: v for k, v in layer.items() if k != "center"}
    return out


def misses(res, ref) -> list[str]:
    """The values whose proven ball, or whose printed JSON ball, misses the reference."""
    doc = res.to_dict()
    bad = []
    with mpmath.workdps(REF_DPS):
        for l, (layer, want, printed) in enumerate(
            zip(res.layers, ref, doc["balls"], strict=True), start=1
        ):
            for k in LAYER_KEYS:
                mid, rad = (mpmath.mpf(printed[k][f]) for f in ("midpoint", "radius"))
                if not layer[k].contains(want[k]) or abs(mid - want[k]) > rad:
                    bad.append(f"layer {l} {k}")
    return bad


@pytest.fixture(scope="module")
def steep_ref():
    return reference(["tanh(30*x)", "relu"])


def test_the_issue_command_prints_proven_balls_that_contain_the_reference(capsys, steep_ref):
    assert main(["explicit", "tanh(30*x)", "relu", "--dps", "50", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["certified"] is True and doc["prec_bits"] > 166 and "reason" not in doc
    with mpmath.workdps(REF_DPS):
        for l, (balls, texts, want) in enumerate(
            zip(doc["balls"], doc["layers"], steep_ref, strict=True), start=1
        ):
            for k in LAYER_KEYS:
                mid, rad = mpmath.mpf(balls[k]["midpoint"]), mpmath.mpf(balls[k]["radius"])
                assert abs(mid - want[k]) <= rad, f"layer {l} {k}"
                assert rad <= abs(want[k]) * mpmath.mpf(10) ** -50 or want[k] == 0
                # the printed digits are the reference's, rounded
                digits = len(texts[k].lstrip("0.").replace(".", ""))
                if want[k] != 0:
                    assert digits >= 50
                    assert (
                        abs(mpmath.mpf(texts[k]) - want[k]) <= abs(want[k]) * mpmath.mpf(10) ** -49
                    ), f"layer {l} {k}"


@pytest.mark.parametrize(
    "stack", [["relu", "tanh"], ["tanh", "tanh(30*x)", "relu"], ["relu", "relu", "relu"]]
)
def test_balls_contain_the_hand_recursion(stack):
    res = explicit_coefficients(stack, dps=40)
    assert res.certified and res.reason is None and res.prec_bits > 0
    assert all(v.digits == 40 for layer in res.layers for v in layer.values())
    assert misses(res, reference(stack)) == []


def test_a_wrong_recursion_is_rejected(steep_ref):
    res = explicit_coefficients(["tanh(30*x)", "relu"], dps=40)
    assert misses(res, steep_ref) == []
    wrong = reference(["tanh(30*x)", "relu"], half=False)  # α̃_{l,4} without its ½
    assert "layer 1 alpha_4" in misses(res, wrong)


def test_an_activation_outside_the_rules_falls_back_with_the_reason():
    # exp(x²/16) grows like a Gaussian: the tail lemma does not apply
    res = explicit_coefficients(["x*exp(x**2/16)"], dps=12)
    assert not res.certified and "grows like a Gaussian" in res.reason
    assert res.layers[0]["tau"].radius is None and res.prec_bits == 0
    doc = res.to_dict()
    assert doc["certified"] is False and "balls" not in doc and doc["reason"] == res.reason


def test_a_refusal_of_the_encloser_falls_back(monkeypatch):
    import deqrmt.numeric._explicit_certified as cert

    def refuse(act):
        raise NotEnclosable("a test refusal")

    monkeypatch.setattr(cert, "encloser_for", refuse)
    res = explicit_coefficients(["relu", "tanh"], dps=20)
    assert not res.certified and res.reason == "a test refusal"
    assert res.layers[1]["alpha_1"].digits == 20


def test_no_certify_is_the_verified_path(capsys):
    res = explicit_coefficients(["relu", "tanh"], dps=20, certify=False)
    assert not res.certified and res.reason is None
    cert = explicit_coefficients(["relu", "tanh"], dps=20)
    assert [{k: v.text for k, v in la.items()} for la in res.layers] == [
        {k: v.text for k, v in la.items()} for la in cert.layers
    ]
    assert main(["explicit", "relu", "tanh", "--dps", "20", "--no-certify"]) == 0
    assert "verified (two evaluations agree)" in capsys.readouterr().out
    assert main(["explicit", "relu", "tanh", "--dps", "20"]) == 0
    assert "proven (Arb balls)" in capsys.readouterr().out


def test_uncentered_layers_are_proved_or_refused():
    from deqrmt import CenteringError

    odd = explicit_coefficients(["tanh", "sin"], dps=20, center=False)  # E[odd σ] = 0 exactly
    assert odd.certified and odd.layers[1]["center"].text == "0"
    with pytest.raises(CenteringError, match="center=False"):
        explicit_coefficients(["relu"], dps=20, center=False)


@settings(max_examples=12, deadline=None)
@given(
    stack=st.lists(st.sampled_from(["relu", "tanh", "erf", "sin", "gelu"]), min_size=1, max_size=3),
    tau0=st.integers(1, 40).map(lambda k: f"{k / 10}"),
    dps=st.integers(10, 40),
)
def test_printed_balls_enclose_the_arb_balls(stack, tau0, dps):
    from flint import arb

    from deqrmt.numeric._arb import arb_to_mpf
    from deqrmt.numeric._explicit_certified import layer_balls
    from deqrmt.numeric._numbers import exact_number

    res = explicit_coefficients(stack, tau0, dps=dps)
    assert res.certified, res.reason
    balls = layer_balls(res.activations, exact_number(tau0, "tau0"), res.prec_bits)
    doc = res.to_dict()
    with mpmath.workdps(4 * res.prec_bits):
        for layer, printed in zip(balls, doc["balls"], strict=True):
            for k in LAYER_KEYS:
                b = layer[k]
                mid, rad = mpmath.mpf(printed[k]["midpoint"]), mpmath.mpf(printed[k]["radius"])
                m, r = arb_to_mpf(b), arb_to_mpf(arb(b.rad()))  # exact: dyadic numbers
                # the printed ball holds [mid − rad, mid + rad] of the Arb ball
                assert mid - rad <= m - r and m + r <= mid + rad, k


# -- the verified path for steep activations (numeric/_quadrature.py's pole distance) ----------


@pytest.mark.parametrize(
    ("expr", "distance"),
    [
        ("tanh(x)", mpmath.pi / 2),
        ("tanh(30*x)", mpmath.pi / 60),  # poles at ±iπ/60
        ("tanh(30*tanh(30*x))", mpmath.pi / 64),  # π/1800, but work is bounded: s ≤ 32
        ("x/(1 + x**2)", 1),  # poles at ±i
        ("1/(1 + exp(-x))", mpmath.pi / 2),  # at most tanh's: sigmoid's are at ±iπ
    ],
)
def test_the_pole_distance_follows_the_steepness(expr, distance):
    import sympy as sp

    from deqrmt.numeric._quadrature import pole_distance
    from deqrmt.symbolic import X

    got = pole_distance([sp.sympify(expr, locals={"x": X})], X)
    assert abs(got - float(distance)) < 1e-9


def test_the_verified_path_handles_steep_activations(steep_ref):
    # before the steepness rule: PrecisionLoss (2 digits agree) at any dps
    res = explicit_coefficients(["tanh(30*x)", "relu"], dps=16, certify=False)
    assert not res.certified
    with mpmath.workdps(REF_DPS):
        for l, (layer, want) in enumerate(zip(res.layers, steep_ref, strict=True), start=1):
            for k in LAYER_KEYS:
                if want[k] == 0:
                    assert layer[k].text == "0"
                    continue
                assert layer[k].digits == 16, f"layer {l} {k}"
                tol = abs(want[k]) * mpmath.mpf(10) ** -15
                assert abs(mpmath.mpf(layer[k].text) - want[k]) <= tol, f"layer {l} {k}"


@pytest.mark.slow
def test_the_deq_verified_path_handles_steep_activations():
    from deqrmt import deq_coefficients

    ver = deq_coefficients("tanh(30*x)", "0.2", dps=15, certify=False)
    cert = deq_coefficients("tanh(30*x)", "0.2", dps=15)
    assert not ver.certified and cert.certified
    for k, v in ver.values.items():
        want = cert.values[k].value
        assert v.digits == 15 or v.text == "0", k
        assert abs(mpmath.mpf(v.text) - want) <= abs(want) * mpmath.mpf(10) ** -14, k

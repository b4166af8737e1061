"""DEQ coefficients: verified digits against independent references, closed forms, errors."""

from __future__ import annotations

import json
from decimal import Decimal
from fractions import Fraction

import mpmath
import pytest
import sympy as sp
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from deqrmt import (
    ActivationError,
    CenteringError,
    ContractionError,
    DeqrmtError,
    InvalidArgument,
    PrecisionLoss,
)
from deqrmt.numeric import DEQ_KEYS, MOMENT_KEYS, deq_coefficients
from helpers import (
    CATALOGUE,
    CHEAP,
    MAIN_EIGHT,
    assert_close,
    deq_formulas,
    deq_reference,
    quadratic_ref,
    to_mpf,
)

#: values that vanish (odd φ: α2, α3, β2, β3, the center) are compared in absolute terms
#: against this scale: 10^{-digits}·10^{-10}.
ZERO_SCALE = mpmath.mpf(10) ** -10


def _decimals(lo: int, hi: int, places: int = 2):
    """Exact decimal strings k/10^places for k in [lo, hi]."""
    return st.integers(lo, hi).map(lambda k: str(Decimal(k).scaleb(-places)))


SIGMA_A2 = _decimals(5, 60)  # 0.05 … 0.60
TAU0 = _decimals(50, 200)  # 0.50 … 2.00


# --- 1. forty verified digits against an independent check ---------------------------------


@pytest.mark.parametrize("spec", MAIN_EIGHT)
def test_forty_digits_agree_with_an_independent_reference(spec):
    res = deq_coefficients(spec, dps=40)
    ref = deq_reference(CATALOGUE[spec], dps=50)
    with mpmath.workdps(60):
        for key in DEQ_KEYS:
            v = res.values[key]
            assert v.digits == 40, (key, v.digits)
            assert_close(v.value, ref[key], 38, ZERO_SCALE, what=f"{spec} {key}")
            assert_close(
                mpmath.mpf(v.text), ref[key], 38, ZERO_SCALE, what=f"{spec} {key} (printed)"
            )
        for key in MOMENT_KEYS:
            assert_close(res.moments[key].value, ref[key], 38, ZERO_SCALE, what=f"{spec} {key}")
        # Negative control: the comparison has teeth at the 38th digit.
        with pytest.raises(AssertionError):
            assert_close(
                res.values["alpha_1"].value * (1 + mpmath.mpf(10) ** -36), ref["alpha_1"], 38
            )


def test_rejected_slide_variants_differ_from_the_engine():
    """Negative controls: the disputed slide readings give other numbers (ReLU, σ_a² = 0.2)."""
    res = deq_coefficients("relu", dps=30)
    with mpmath.workdps(40):
        ref = deq_reference(CATALOGUE["relu"], dps=40)
        m1, m2 = ref["E_phi_prime"], ref["E_phi_second"]
        a2, b2 = mpmath.mpf(1) / 5, mpmath.mpf(4) / 5
        d = 1 - a2 * m1**2
        variants = {
            "alpha_2": m2**2 * ref["alpha_4"] / (4 * d),  # α4 to the first power
            "kappa_star": ref["tau_star"]
            / mpmath.sqrt(1 - a2 * ref["E_phi_prime_sq"]),  # τ* not γ*
            "beta_3": (ref["alpha_3"] + a2 * m2**2 * ref["beta_1"] * a2 * ref["alpha_1"] + b2)
            / d,  # bracket
        }
        for key, wrong in variants.items():
            assert abs(res.values[key].value - wrong) > mpmath.mpf(10) ** -3 * abs(wrong), key


# --- 2. precision-independence ----------------------------------------------------------------


@settings(max_examples=12)
@given(spec=st.sampled_from(CHEAP), sigma_a2=SIGMA_A2, tau0=TAU0)
@example(spec="tanh", sigma_a2="0.37", tau0="1.70")
@example(spec="relu", sigma_a2="0.60", tau0="2.00")
def test_dps_30_and_60_agree_to_28_digits(spec, sigma_a2, tau0):
    r30 = deq_coefficients(spec, sigma_a2, tau0=tau0, dps=30)
    r60 = deq_coefficients(spec, sigma_a2, tau0=tau0, dps=60)
    with mpmath.workdps(80):
        for key in DEQ_KEYS:
            v30, v60 = r30.values[key], r60.values[key]
            assert v60.digits == 60 and v30.digits == 30, key
            assert_close(v30.value, v60.value, 28, ZERO_SCALE, what=key)
            # The printed 30 digits are the 60-digit value rounded.
            assert_close(
                mpmath.mpf(v30.text), v60.value, v30.digits - 1, ZERO_SCALE, what=f"{key} text"
            )


# --- 3. closed forms by hand ----------------------------------------------------------------


def _relu_hand(sa2: str, sb2: str, tau0: str) -> dict:
    """ReLU: Var[X⁺] = q(π − 1)/(2π) ⇒ q* = σ_b²τ0²/(1 − σ_a²(π − 1)/(2π)); moments by hand."""
    a2, b2, t0 = to_mpf(sa2), to_mpf(sb2), to_mpf(tau0)
    q = b2 * t0**2 / (1 - a2 * (mpmath.pi - 1) / (2 * mpmath.pi))
    tau = mpmath.sqrt(q)
    c = tau / mpmath.sqrt(2 * mpmath.pi)
    m = {
        "m1": mpmath.mpf(1) / 2,
        "m2": 1 / (tau * mpmath.sqrt(2 * mpmath.pi)),
        "sq": q * (mpmath.pi - 1) / (2 * mpmath.pi),
        "sq2": 1 - 1 / mpmath.pi,  # E[2H] − 2c E[δ]
        "dsq": mpmath.mpf(1) / 2,
    }
    return deq_formulas(m, a2, b2, tau) | {"center": c}


@given(sigma_a2=_decimals(1, 199), sigma_b2=_decimals(5, 200), tau0=_decimals(25, 400))
@example(sigma_a2="1.99", sigma_b2="0.05", tau0="4.00")
@example(sigma_a2="0.01", sigma_b2="2.00", tau0="0.25")
def test_relu_matches_its_closed_form(sigma_a2, sigma_b2, tau0):
    res = deq_coefficients("relu", sigma_a2, sigma_b2, tau0, dps=30)
    with mpmath.workdps(45):
        want = _relu_hand(sigma_a2, sigma_b2, tau0)
        for key in DEQ_KEYS:
            assert_close(res.values[key].value, want[key], 29, what=key)


@given(sigma_a2=_decimals(200, 400), sigma_b2=_decimals(5, 200))
@example(sigma_a2="2.00", sigma_b2="0.50")  # σ_a² E[φ'²] = 1 exactly
@example(sigma_a2="2.90", sigma_b2="0.10")  # issue 8: once refused, τ* exists (F' ≈ 0.988)
@example(sigma_a2="2.94", sigma_b2="0.50")  # past 2π/(π − 1): the τ map itself diverges
def test_relu_beyond_the_ntk_region_keeps_the_ck(sigma_a2, sigma_b2):
    """ReLU: F(q) = σ_a² q (π − 1)/(2π) + σ_b², so τ* exists iff σ_a² < 2π/(π − 1) ≈ 2.934
    (hand closed form q* = σ_b²/(1 − σ_a²(π − 1)/(2π))); the NTK needs σ_a² E[φ'²] = σ_a²/2 < 1.
    Between the two the CK is reported and the NTK's coefficients raise a named error."""
    with mpmath.workdps(30):
        slope = to_mpf(sigma_a2) * (mpmath.pi - 1) / (2 * mpmath.pi)
        if slope >= 1:
            with pytest.raises(ContractionError, match="sigma_a2"):
                deq_coefficients("relu", sigma_a2, sigma_b2, dps=15)
            return
        q_star = to_mpf(sigma_b2) / (1 - slope)
    res = deq_coefficients("relu", sigma_a2, sigma_b2, dps=15)
    with mpmath.workdps(30):
        assert_close(res.values["tau_star"].value, mpmath.sqrt(q_star), 14, what="tau_star")
    assert "beta_1" not in res.values and res.to_dict()["kappa_star"] is None
    assert "NTK diverges" in res.notes[0]
    with pytest.raises(ContractionError, match="NTK"):
        res["beta_1"]  # noqa: B018


_SLOPES = st.integers(-150, 150).filter(lambda k: k != 0).map(lambda k: str(Decimal(k).scaleb(-2)))


@given(a=_SLOPES, sigma_a2=_decimals(5, 95), sigma_b2=_decimals(10, 100), tau0=TAU0)
@example(a="1.00", sigma_a2="0.50", sigma_b2="0.50", tau0="1.00")
@example(a="-1.40", sigma_a2="0.50", sigma_b2="0.50", tau0="1.00")  # σ_a² a² = 0.98
@example(a="1.50", sigma_a2="0.50", sigma_b2="0.50", tau0="1.00")  # σ_a² a² = 1.125
def test_linear_activation_gives_the_hand_closed_forms(a, sigma_a2, sigma_b2, tau0):
    """φ = a·x: q* = σ_b²τ0²/D, γ*² = a²q*, α1 = σ_b²a²/D, α2 = α3 = 0, α4 = σ_b²/D, β1 = α1/D,
    β2 = β3 = 0, κ*² = a²q*/D with D = 1 − σ_a²a² (exact rationals), center 0."""
    fa, fs, fb, ft = (Fraction(v) for v in (a, sigma_a2, sigma_b2, tau0))
    d = 1 - fs * fa * fa
    if d <= 0:
        with pytest.raises(ContractionError):
            deq_coefficients(f"{a}*x", sigma_a2, sigma_b2, tau0, dps=15)
        return
    q = fb * ft * ft / d
    exact = {
        "tau_star": ("sqrt", q),
        "gamma_star": ("sqrt", fa * fa * q),
        "alpha_1": fb * fa * fa / d,
        "alpha_2": Fraction(0),
        "alpha_3": Fraction(0),
        "alpha_4": fb / d,
        "beta_1": fb * fa * fa / d / d,
        "beta_2": Fraction(0),
        "beta_3": Fraction(0),
        "kappa_star": ("sqrt", fa * fa * q / d),
        "center": Fraction(0),
    }
    res = deq_coefficients(f"{a}*x", sigma_a2, sigma_b2, tau0, dps=30)
    with mpmath.workdps(45):
        for key, v in exact.items():
            want = mpmath.sqrt(to_mpf(v[1])) if isinstance(v, tuple) else to_mpf(v)
            assert_close(res.values[key].value, want, 29, ZERO_SCALE, what=key)


# --- 6. several roots: the quadratic ------------------------------------------------------------


def _quadratic_roots(b, sa2, sb2, t0):
    """φ = x + b x²: Var[φ(√q ξ)] = q + 2b²q², so q = σ_a²(q + 2b²q²) + σ_b²τ0², i.e.
    2σ_a²b² q² − (1 − σ_a²) q + σ_b²τ0² = 0."""
    a, c0 = 2 * sa2 * b * b, sb2 * t0 * t0
    disc = (1 - sa2) ** 2 - 4 * a * c0
    if disc < 0:
        return disc, None, None
    r = mpmath.sqrt(disc)
    return disc, ((1 - sa2) - r) / (2 * a), ((1 - sa2) + r) / (2 * a)


@given(
    b=_decimals(5, 100),
    sigma_a2=SIGMA_A2,
    sigma_b2=_decimals(10, 100),
    tau0=TAU0,
)
@example(b="0.25", sigma_a2="0.20", sigma_b2="0.80", tau0="1.00")
@example(b="1.00", sigma_a2="0.50", sigma_b2="0.50", tau0="1.00")  # no fixed point
def test_quadratic_reports_the_attracting_root(b, sigma_a2, sigma_b2, tau0):
    spec = f"x + {b}*x**2"
    with mpmath.workdps(45):
        disc, q_small, q_big = _quadratic_roots(*(to_mpf(v) for v in (b, sigma_a2, sigma_b2, tau0)))
    assume(abs(disc) > 1e-3)  # a (near-)double root is a separate, ill-conditioned story
    if disc < 0:
        with pytest.raises(ContractionError):
            deq_coefficients(spec, sigma_a2, sigma_b2, tau0, dps=15)
        return
    res = deq_coefficients(spec, sigma_a2, sigma_b2, tau0, dps=30)
    with mpmath.workdps(45):
        assert_close(
            res.values["tau_star"].value ** 2, q_small, 29, what="tau_star² (smaller root)"
        )
        # Start the reference at the hand root: near a double root the Picard start is slow.
        ref = deq_reference(quadratic_ref(b), sigma_a2, sigma_b2, tau0, dps=40, q_start=q_small)
        for key in DEQ_KEYS:
            assert_close(res.values[key].value, ref[key], 28, ZERO_SCALE, what=key)
    if q_big / q_small < 100:
        assert res.notes and "another fixed point" in res.notes[0]
        assert len(res.other_fixed_points) == 1


def test_default_quadratic_note_names_the_other_root():
    res = deq_coefficients("x + 0.25*x**2", dps=30)
    with mpmath.workdps(40):
        _, q_small, q_big = _quadratic_roots(
            mpmath.mpf(1) / 4, mpmath.mpf(1) / 5, mpmath.mpf(4) / 5, 1
        )
        assert_close(res.tau_star, mpmath.sqrt(q_small), 29)
    assert len(res.notes) == 1 and "another fixed point" in res.notes[0]
    assert "attracting" in res.notes[0]
    assert float(mpmath.sqrt(q_big)) > float(res.other_fixed_points[0]) / 2


def test_the_other_root_is_right_to_the_digits_printed():
    """The other root is a verified decimal string (issue 8: once a raw float such as
    '2.0000000000001523'); the root of 2σ_a²b²q² − (1 − σ_a²)q + σ_b²τ0² = 0 is τ = √q = 5.5655…:
    every printed digit must hold."""
    res = deq_coefficients("x + 0.25*x**2", dps=20)
    with mpmath.workdps(40):
        _, _, q_big = _quadratic_roots(
            mpmath.mpf(1) / 4, mpmath.mpf(1) / 5, mpmath.mpf(4) / 5, mpmath.mpf(1)
        )
        (other,) = res.other_fixed_points
        assert res.to_dict()["other_fixed_points"] == [other.text]
        assert other.text in res.notes[0]
        assert_close(mpmath.mpf(other.text), mpmath.sqrt(q_big), other.digits - 1)
        assert other.digits >= 15


# --- 7. precision through a context, never the global one ------------------------------------


def test_global_mpmath_precision_is_neither_used_nor_changed():
    mpmath.mp.dps = 5
    res = deq_coefficients("relu", dps=40)
    sin = deq_coefficients("sin", dps=40)
    assert mpmath.mp.dps == 5
    with mpmath.workdps(60):
        want = _relu_hand("0.2", "0.8", "1")
        want_sin = deq_reference(CATALOGUE["sin"], dps=50)
        for key in DEQ_KEYS:
            assert_close(res.values[key].value, want[key], 38, ZERO_SCALE, what=key)
            assert_close(sin.values[key].value, want_sin[key], 38, ZERO_SCALE, what=key)
    assert mpmath.mp.dps == 5


# --- every printed digit is verified ------------------------------------------------------------


def test_reported_digits_hold_where_closed_forms_cancel():
    """ELU at τ0 = 10 (τ* ≈ 9.3): the closed form of E[φ'²] has e^{2q}(1 − erf(√2τ*))/2 with
    1 − erf(13.2) ≈ 10^{-77}.  At both the working and the check precision 1 − erf rounds to 0,
    the two runs agree, and ~18 digits are reported that are wrong from the 3rd.  Refusing
    (PrecisionLoss) would be honest; printing wrong digits is not."""
    try:
        res = deq_coefficients("elu", tau0="10", dps=30)
    except PrecisionLoss:
        return
    ref = deq_reference(CATALOGUE["elu"], tau0="10", dps=40)
    with mpmath.workdps(50):
        for key in DEQ_KEYS:
            v = res.values[key]
            assert_close(
                mpmath.mpf(v.text),
                ref[key],
                v.digits - 1,
                ZERO_SCALE,
                what=f"{key} ({v.digits} digits)",
            )


def test_too_steep_activation_loses_precision_loudly():
    # Negative control for the verification: tanh(1000x) cannot be integrated at 15 digits by
    # the quadrature (the Arb proof, the default, now certifies it: tests/test_steep_roots.py).
    with pytest.raises(PrecisionLoss, match="agree"):
        deq_coefficients("tanh(1000*x)", dps=15, certify=False)


# --- 5. errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "sigma_a2", "sigma_b2"),
    [
        ("relu", "3", "0.5"),  # σ_a² Var'[φ] > 1: the τ map diverges
        ("x + x**2", "0.5", "0.5"),  # no real fixed point at all
        ("2*x", "0.3", None),  # σ_a² a² = 1.2
        ("exp(x)", "0.2", None),
    ],
)
def test_contraction_errors(spec, sigma_a2, sigma_b2):
    with pytest.raises(ContractionError) as info:
        deq_coefficients(spec, sigma_a2, sigma_b2, dps=15)
    assert "sigma_a2" in str(info.value)  # library errors name the argument, not a CLI flag
    assert isinstance(info.value, InvalidArgument)


@pytest.mark.parametrize("spec", ["relu", "leaky_relu(0.1)", "x + 0.25*x**2", "cos"])
def test_no_center_refuses_uncentered_activations(spec):
    with pytest.raises(CenteringError, match="center=False"):
        deq_coefficients(spec, dps=15, center=False)


@pytest.mark.parametrize("spec", ["tanh", "sin", "hard_tanh"])
def test_no_center_accepts_odd_activations_unchanged(spec):
    a = deq_coefficients(spec, dps=20, center=False)
    b = deq_coefficients(spec, dps=20)
    assert a.values["center"].text == "0" and b.values["center"].text == "0"
    assert not a.centered and b.centered
    for key in DEQ_KEYS:
        assert a.values[key].text == b.values[key].text, key


@pytest.mark.parametrize(
    "kwargs",
    [
        {"sigma_a2": True},
        {"sigma_a2": float("nan")},
        {"sigma_a2": float("inf")},
        {"sigma_a2": "1e999999999"},  # issue 9: refused on its text, no 10^999999999 built
        {"sigma_b2": "1e300"},
        {"sigma_a2": "200"},
        {"tau0": 1e-9},
        {"sigma_a2": "abc"},
        {"sigma_a2": "1/0"},
        {"sigma_a2": "nan"},
        {"sigma_a2": "inf"},
        {"sigma_a2": "0"},
        {"sigma_a2": "-0.1"},
        {"sigma_a2": "1"},  # default σ_b² = 1 − σ_a² = 0
        {"sigma_b2": "0"},
        {"tau0": "0"},
        {"tau0": "-1"},
        {"dps": 4},
        {"dps": 1001},
        {"dps": 30.0},
        {"dps": "30"},
        {"sigma_a2": None},
    ],
)
def test_invalid_arguments(kwargs):
    with pytest.raises(InvalidArgument):
        deq_coefficients("relu", **kwargs)


def test_floats_mean_their_shortest_repr():
    """Issue 10: a float is the decimal its repr shows (0.2 is 1/5), numpy scalars too."""
    import numpy as np

    want = deq_coefficients("relu", "0.2", "0.8", "1", dps=20).to_dict()
    for args in ((0.2, 0.8, 1.0), (np.float64(0.2), np.float32(0.8), np.int64(1))):
        assert deq_coefficients("relu", *args, dps=20).to_dict() == want


def test_trainable_names_are_checked():
    from deqrmt import UnknownTrainable

    with pytest.raises(UnknownTrainable, match="'aA'"):
        deq_coefficients("tanh", trainable="aA")  # issue 9: once silently read as {a, A}
    with pytest.raises(UnknownTrainable, match="'Z'"):
        deq_coefficients("tanh", trainable=("a", "Z"))
    with pytest.raises(UnknownTrainable, match="empty"):
        deq_coefficients("tanh", trainable=())
    assert deq_coefficients("tanh", trainable="a,A,B", dps=10).trainable == ("a", "A", "B")


def test_exact_inputs_in_every_form_agree():
    texts = [
        deq_coefficients("relu", s, dps=20).to_dict()["alpha_3"]
        for s in ("0.2", "1/5", Fraction(1, 5), sp.Rational(1, 5), " 0.20 ")
    ]
    assert len(set(texts)) == 1


@pytest.mark.parametrize(
    "spec",
    [
        "log(x)",  # complex for x < 0
        "sqrt(x)",
        "x**(2/3)",
        "x**x",
        "log(-2)*x",  # a complex constant
        "sqrt(-x**2)",
        "exp(exp(x))",  # overflows float64 in the Picard start
        "exp(4e12)*x",
        "min(exp(4e12), max(x, 6))",  # MemoryError
        "1/heaviside(x + 2)",  # zoo on x < −2
        "1/x",  # a pole: E[φ²] = ∞
    ],
)
def test_activations_that_are_not_real_or_finite_fail_cleanly(spec):
    # The user gets a DeqrmtError (one line in the CLI), never a TypeError, OverflowError,
    # KeyError or MemoryError.  (Found by fuzzing deq_coefficients with the parser's grammar.)
    with pytest.raises(DeqrmtError):
        deq_coefficients(spec, dps=15)


def test_a_pole_is_refused_before_any_numeric_work():
    """13.98/x: the float64 Picard start ran its 10 000 iterations (≈ 70 s on 2 cores) and then
    reported "τ² passed 1e+10", which never happened.  Now the pole is refused when the
    activation's pieces are formed, before any numeric work (how fast: benchmarks/limits.py)."""
    from deqrmt.symbolic import get_activation

    with pytest.raises(ActivationError, match="pole"):
        get_activation("13.98/x").pieces  # noqa: B018
    with pytest.raises(ActivationError, match="pole"):
        deq_coefficients("13.98/x", dps=12)


# --- results -------------------------------------------------------------------------------------


def test_result_object_and_json():
    res = deq_coefficients("relu", "0.3", dps=20)
    assert res.sigma_b2 == sp.Rational(7, 10)  # default 1 − σ_a²
    d = json.loads(res.to_json())
    assert set(DEQ_KEYS) <= set(d)
    assert set(d["moments"]) == set(MOMENT_KEYS)
    assert (d["sigma_a2"], d["sigma_b2"], d["tau0"], d["dps"]) == ("3/10", "7/10", "1", 20)
    assert d["centered"] is True and d["notes"] == [] and d["other_fixed_points"] == []
    for key in DEQ_KEYS:
        Decimal(d[key])  # decimal strings
        assert d["digits"][key] == 20
        assert res.values[key].text == d[key]
    assert res.alpha_1 is res.values["alpha_1"] and res["alpha_1"] is res.alpha_1
    assert res.center is res.values["center"]
    assert res["E_phi_prime"] is res.moments["E_phi_prime"]
    assert res.as_floats()["tau_star"] == float(res.values["tau_star"].value)
    assert set(res.moments_as_floats()) == set(MOMENT_KEYS)
    with pytest.raises(AttributeError):
        res.no_such_coefficient  # noqa: B018

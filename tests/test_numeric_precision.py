"""High precision (issue 24): certified coefficients past 150 digits, against independent
references, and the cost model that replaced the fixed cap of 150 digits.

References are computed here without deqrmt's moments: erf's Gaussian moments in closed form
(E[erf(τξ)²] = (2/π) asin(2τ²/(1 + 2τ²)), E[erf'(τξ)] = 2/√(π(1 + 2τ²)),
E[erf'(τξ)²] = 4/(π√(1 + 4τ²))) with τ*² = σ_a² E[φ(τ*ξ)²] + σ_b² τ0² solved by mpmath's
findroot, and tanh's E[tanh²(τξ)] by plain ``mpmath.quad``.
"""

from __future__ import annotations

import mpmath
import pytest

from deqrmt import BudgetExceeded
from deqrmt.numeric import DEQProblem, deq_coefficients
from deqrmt.numeric._moments import MAX_DPS_QUADRATURE
from deqrmt.numeric._precision_cost import (
    BUDGET_SECONDS,
    MAX_DPS_CLOSED,
    check_dps,
    dps_limit,
    precision_cost,
)
from deqrmt.symbolic import get_activation

# the defaults σ_a² = 1/5, σ_b² = 1 − σ_a², τ0 = 1, made mpmath numbers at the working precision
SA2, SB2 = (1, 5), (4, 5)


def _q(pq: tuple[int, int]) -> mpmath.mpf:
    return mpmath.mpf(pq[0]) / pq[1]


def _within_half_ulp(text: str, digits: int, ref: mpmath.mpf) -> bool:
    """The decimal ``text`` of ``digits`` significant digits is ``ref`` correctly rounded
    (|text − ref| ≤ half a unit of its last digit; a tie-breaking slack of 10⁻¹⁰ of it)."""
    with mpmath.workdps(digits + 40):
        v = mpmath.mpf(text)
        e = int(mpmath.floor(mpmath.log10(abs(v))))
        return bool(
            abs(v - ref) <= mpmath.mpf(10) ** (e - digits + 1) / 2 * (1 + mpmath.mpf(10) ** -10)
        )


def _erf_references(dps: int) -> dict[str, mpmath.mpf]:
    """τ*, γ*, E[φ'], E[φ'²] of erf at the defaults, from the closed forms (no deqrmt)."""
    with mpmath.workdps(dps + 30):
        pi = mpmath.pi

        def h(t: mpmath.mpf) -> mpmath.mpf:
            return _q(SA2) * 2 / pi * mpmath.asin(2 * t * t / (1 + 2 * t * t)) + _q(SB2) - t * t

        tau = mpmath.findroot(h, mpmath.mpf("0.9425526498101495"))
        return {
            "tau_star": +tau,
            "gamma_star": mpmath.sqrt(2 / pi * mpmath.asin(2 * tau**2 / (1 + 2 * tau**2))),
            "E_phi_prime": 2 / mpmath.sqrt(pi * (1 + 2 * tau**2)),
            "E_phi_prime_sq": 4 / (pi * mpmath.sqrt(1 + 4 * tau**2)),
        }


def _check_erf(dps: int) -> None:
    c = deq_coefficients("erf", dps=dps)
    assert c.certified
    refs = _erf_references(dps)
    shown = {**dict(c.items()), **c.moments}
    for key, ref in refs.items():
        v = shown[key]
        assert v.digits == dps, (key, v.digits)
        assert _within_half_ulp(v.text, dps, ref), key
    # a deliberately wrong reference (the last digit off by one unit) is rejected
    t = shown["tau_star"]
    with mpmath.workdps(dps + 40):
        wrong = refs["tau_star"] + mpmath.mpf(10) ** (-dps)
    assert not _within_half_ulp(t.text, dps, wrong)


def test_erf_200_digits_match_closed_forms() -> None:
    # 150 was the fixed cap before issue 24: 200 digits were refused with BudgetExceeded
    _check_erf(200)


@pytest.mark.slow
def test_erf_500_digits_match_closed_forms() -> None:
    _check_erf(500)


@pytest.mark.slow
def test_tanh_500_digits_match_plain_mpmath_quad() -> None:
    """τ* and E[φ'(τ*ξ)] = 1 − E[tanh²(τ*ξ)] of tanh at 500 digits, against mpmath.quad at 520.

    With q = τ*² as printed, the fixed-point residual F(q) − q (F(q) = σ_a² E[tanh²(√q ξ)] +
    σ_b²) bounds the distance to the true root: |q − q*| ≤ |F(q) − q| / (1 − max|F'|), and
    F' < 1/2 here, so a printed τ* right to 500 digits leaves a residual below ~10⁻⁴⁹⁹.
    """
    dps = 500
    c = deq_coefficients("tanh", dps=dps)
    assert c.certified
    assert c["tau_star"].digits == dps and c.moments["E_phi_prime"].digits == dps
    with mpmath.workdps(dps + 20):
        tau = mpmath.mpf(c["tau_star"].text)

        def f(x: mpmath.mpf) -> mpmath.mpf:
            return mpmath.tanh(tau * x) ** 2 * mpmath.exp(-x * x / 2)

        # even integrand; e^{-50²/2} < 10^-540, tanh's poles at ±iπ/(2τ) ≈ ±1.7i
        m2 = 2 * mpmath.quad(f, list(range(0, 52, 2))) / mpmath.sqrt(2 * mpmath.pi)
        residual = _q(SA2) * m2 + _q(SB2) - tau * tau
        assert abs(residual) < mpmath.mpf(10) ** (-(dps - 2))
        # a τ* wrong in its 498th digit leaves a residual the test sees
        bad = tau + mpmath.mpf(10) ** (-497)
        assert abs(_q(SA2) * m2 + _q(SB2) - bad * bad) > mpmath.mpf(10) ** (-(dps - 2))
        printed = mpmath.mpf(c.moments["E_phi_prime"].text)
        assert abs(printed - (1 - m2)) < mpmath.mpf(10) ** (-(dps - 2))


# -- the cost model ----------------------------------------------------------------------------


def test_library_activations_are_admitted_to_500_digits_certified() -> None:
    for name in ("tanh", "gelu", "silu", "erf", "softplus", "sigmoid"):
        act = get_activation(name)
        cost = precision_cost(act, 500)
        assert cost.how == "certified" and cost.seconds <= BUDGET_SECONDS, (name, cost)
        assert dps_limit(act) >= 500
        assert DEQProblem.make(name, dps=500).dps == 500  # not refused: the old cap was 150


def test_closed_forms_reach_1000_digits() -> None:
    act = get_activation("relu")
    assert precision_cost(act, MAX_DPS_CLOSED).how == "closed"
    assert check_dps(MAX_DPS_CLOSED, act) == MAX_DPS_CLOSED
    with pytest.raises(BudgetExceeded, match=r"dps=1001 exceeds 1000"):
        check_dps(MAX_DPS_CLOSED + 1, act)


def test_refusal_states_the_estimate_and_the_fix() -> None:
    # tanh(30x): poles 30 times nearer the axis, 30 times the panels
    act = get_activation("tanh(30*x)")
    cost = precision_cost(act, 600)
    assert cost.seconds > BUDGET_SECONDS and MAX_DPS_QUADRATURE <= cost.limit < 600
    with pytest.raises(BudgetExceeded) as info:
        check_dps(600, act)
    msg = str(info.value)
    assert "\n" not in msg
    assert f"estimated at {cost.seconds:.0f} s" in msg
    assert f"ask for dps={cost.limit} or fewer" in msg
    assert check_dps(cost.limit, act) == cost.limit  # the dps the message offers is admitted


def test_at_most_150_digits_nothing_changes() -> None:
    # the cost model only decides above the old cap: every dps up to it is admitted as before
    assert check_dps(MAX_DPS_QUADRATURE, get_activation("tanh(1000*x)")) == MAX_DPS_QUADRATURE


def test_activation_outside_the_enclosure_rules_keeps_150_digits() -> None:
    # a cube root is not a holomorphic integrand Arb encloses: the verified quadrature does it
    act = get_activation("(1+x**2)**(1/3)")
    cost = precision_cost(act, 200)
    assert cost.how == "verified" and cost.limit == MAX_DPS_QUADRATURE
    with pytest.raises(BudgetExceeded, match=r"dps=200 exceeds 150: .* ask for dps=150 or fewer"):
        check_dps(200, act)


def test_verified_path_is_refused_past_its_budget() -> None:
    # certify=False runs the mpmath quadrature (two evaluations), budgeted to 150 digits:
    # at 300 digits it would take minutes; refused before any quadrature
    with pytest.raises(BudgetExceeded, match=r"budgeted to dps=150"):
        deq_coefficients("tanh", dps=300, certify=False)
    # closed forms need no quadrature: the verified path reaches 1000 digits there
    assert deq_coefficients("relu", dps=400, certify=False)["alpha_1"].digits == 400


def test_cli_refusals_name_the_flags(capsys: pytest.CaptureFixture[str]) -> None:
    from deqrmt.cli import main

    rc = main(["coefficients", "tanh", "--dps", "300", "--no-certify"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "BudgetExceeded" in err, err
    assert "--no-certify" in err and "--dps 150 or fewer" in err and "certify=False" not in err
    rc = main(["coefficients", "silu", "--dps", "1000"])
    err = capsys.readouterr().err
    assert rc == 2 and "BudgetExceeded" in err and "estimated at" in err, err
    assert "--dps 925 or fewer" in err

"""Sensitivities ∂/∂σ_a², ∂/∂σ_b² of the DEQ coefficients (issue 23).

The independent reference is a central difference of :func:`deq_coefficients` itself, at 80
digits with the step h = 10⁻²⁵: its truncation error is O(h²) ≈ 10⁻⁵⁰ and its rounding error
10⁻⁸⁰/h = 10⁻⁵⁵, so it pins each derivative to ~50 digits without ever using the derivative
formulas.  The derived derivatives must agree with it to 40 digits.  Beside it: relu's τ*² is
explicit in σ_a², σ_b², so its derivatives are also differentiated by hand (SymPy on the
closed form), and a formula without the dτ*/dσ chain term must be rejected.
"""

from __future__ import annotations

import json
from fractions import Fraction

import mpmath
import pytest
import sympy as sp

import deqrmt
from deqrmt.cli import main
from deqrmt.numeric import DEQ_KEYS, deq_coefficients
from deqrmt.numeric._problem import DEQProblem
from deqrmt.numeric._sensitivity import _verified, sensitivities

#: the step of the central differences and the precision they are taken at
STEP = Fraction(1, 10**25)
FD_DPS = 80
#: digits the derived derivatives must share with the central differences
AGREE = 40

_CTX = mpmath.MPContext()
_CTX.dps = 2 * FD_DPS


def present(c: object) -> list[str]:
    """The coefficient keys a result holds (β*, κ* are absent where the NTK diverges); read
    by key, so it does not depend on how the record stores them."""
    out = []
    for k in DEQ_KEYS:
        try:
            c[k]  # type: ignore[index]
        except (KeyError, deqrmt.ContractionError):
            continue
        out.append(k)
    return out


def central_differences(act: str, a2: Fraction, b2: Fraction) -> dict[str, dict[str, object]]:
    """key → parameter → (f(σ + h) − f(σ − h)) / 2h, from the coefficients alone."""
    out: dict[str, dict[str, object]] = {}
    for p, (da, db) in (("sigma_a2", (STEP, 0)), ("sigma_b2", (0, STEP))):
        hi = deq_coefficients(act, a2 + da, b2 + db, dps=FD_DPS)
        lo = deq_coefficients(act, a2 - da, b2 - db, dps=FD_DPS)
        for k in present(hi):
            diff = _CTX.mpf(hi[k].value) - _CTX.mpf(lo[k].value)
            out.setdefault(k, {})[p] = diff / (2 * _CTX.mpf(STEP.numerator) / STEP.denominator)
    return out


def agreeing_digits(derived: object, reference: object) -> float:
    """Relative digits two numbers share (inf when both are 0)."""
    d, r = _CTX.mpf(derived), _CTX.mpf(reference)
    if d == r:
        return float("inf")
    return float(-_CTX.log10(abs(d - r) / max(abs(r), abs(d))))


def worst_agreement(sens: deqrmt.DEQSensitivities, fd: dict) -> tuple[float, str]:
    return min(
        (agreeing_digits(v.value, fd[k][p]), f"d{k}/d{p}")
        for k, d in sens.items()
        for p, v in d.items()
    )


SETTINGS = [
    ("tanh", Fraction(1, 5), Fraction(4, 5)),
    # kinked: E[φ''] is a Dirac mass, E[φ'''] its derivative
    ("relu", Fraction(1, 5), Fraction(4, 5)),
    ("silu", Fraction(1, 5), Fraction(4, 5)),  # no closed forms: Arb quadrature of every moment
    ("erf", Fraction(3, 10), Fraction(1, 2)),  # σ_b² ≠ 1 − σ_a²
    ("silu", Fraction(1, 2), Fraction(1, 3)),
]


@pytest.mark.parametrize(("act", "a2", "b2"), SETTINGS)
def test_derivatives_agree_with_central_differences_to_40_digits(act, a2, b2):
    sens = sensitivities(act, a2, b2, dps=AGREE + 5)
    assert sens.certified, sens.reason
    assert list(sens) == present(deq_coefficients(act, a2, b2))
    digits, where = worst_agreement(sens, central_differences(act, a2, b2))
    assert digits >= AGREE, f"{act}: {where} agrees with the central difference to {digits:.1f}"


def test_verified_path_agrees_with_central_differences():
    # the mpmath quadrature of E[(φ²)''''] and E[(φ'²)''] (no Arb): silu has no closed forms
    a2, b2 = Fraction(1, 5), Fraction(4, 5)
    sens = sensitivities("silu", a2, b2, dps=AGREE + 5, certify=False)
    assert not sens.certified
    digits, where = worst_agreement(sens, central_differences("silu", a2, b2))
    assert digits >= AGREE, f"{where}: {digits:.1f} digits"


def test_cli_json_sensitivities_agree_with_central_differences(capsys):
    # the "done when": coefficients tanh --sensitivity --json, at 40 digits
    assert main(["coefficients", "tanh", "--sensitivity", "--json", "--dps", "45"]) == 0
    doc = json.loads(capsys.readouterr().out)
    sens = doc["sensitivities"]
    assert sens["certified"] is True
    fd = central_differences("tanh", Fraction(1, 5), Fraction(4, 5))
    assert set(sens["values"]) == set(fd)
    for k, d in sens["values"].items():
        assert set(d) == {"sigma_a2", "sigma_b2"}
        for p, text in d.items():
            if fd[k][p] == 0:
                assert text == "0"
            else:
                assert agreeing_digits(text, fd[k][p]) >= AGREE, (k, p, text)
            ball = sens["balls"][k][p]
            assert _CTX.mpf(ball["radius"]) < abs(_CTX.mpf(fd[k][p])) * _CTX.mpf(10) ** -40 or (
                fd[k][p] == 0
            )


def test_relu_closed_form_by_hand():
    # relu: E[φ] = τ/√(2π), E[φ²] = τ²/2, so the centered F(q) = σ_a² k q + σ_b² τ0² with
    # k = 1/2 − 1/(2π), and τ*² = σ_b² τ0²/(1 − σ_a² k) is explicit; E[φ'] = 1/2, E[φ'²] = 1/2.
    # Differentiate those closed forms directly (no implicit function, no heat rule).
    a, b = sp.symbols("a b", positive=True)
    k = sp.Rational(1, 2) - 1 / (2 * sp.pi)
    q = b / (1 - a * k)
    tau = sp.sqrt(q)
    closed = {
        "tau_star": tau,
        "center": tau / sp.sqrt(2 * sp.pi),
        "gamma_star": sp.sqrt(k * q),
        "alpha_1": b / 4 / (1 - a / 4),
        "kappa_star": sp.sqrt(k * q / (1 - a / 2)),
    }
    at = {a: sp.Rational(1, 5), b: sp.Rational(4, 5)}
    sens = sensitivities("relu", "1/5", "4/5", dps=40)
    assert sens.certified
    for key, expr in closed.items():
        for p, sym in (("sigma_a2", a), ("sigma_b2", b)):
            exact = sp.diff(expr, sym).subs(at)
            v = sens[key][p]
            assert v.digits == 40
            assert v.contains(str(sp.N(exact, 60))), (key, p, v, sp.N(exact, 45))


def test_dropping_the_chain_term_is_rejected():
    # negative control: ∂E/∂σ alone (τ* held fixed) is the classic mistake; the comparison
    # with central differences must reject it, and clearly
    a2, b2 = Fraction(1, 5), Fraction(4, 5)
    problem = DEQProblem.make("tanh", a2, b2, dps=AGREE + 5)
    wrong = _verified(problem, ntk=True, drop_chain=True)
    digits, where = worst_agreement(wrong, central_differences("tanh", a2, b2))
    assert digits < 2, f"the wrong formula was not rejected ({where}: {digits:.1f} digits)"


def test_result_is_a_mapping_with_columns():
    s = deqrmt.sensitivities("tanh", sigma_a2="0.2", dps=15)
    d = dict(s)
    assert list(d) == list(s.keys()) == [
        "tau_star", "gamma_star", "alpha_1", "alpha_2", "alpha_3", "alpha_4",
        "beta_1", "beta_2", "beta_3", "kappa_star", "center",
    ]  # fmt: skip
    assert s.wrt("sigma_b2")["tau_star"] is s["tau_star"]["sigma_b2"]
    assert s["center"]["sigma_a2"].text == "0"  # tanh is odd: c = 0 at every σ
    doc = s.to_dict()
    assert doc["certified"] is True and doc["prec_bits"] > 0
    assert doc["values"]["tau_star"]["sigma_a2"] == s["tau_star"]["sigma_a2"].text
    assert "sensitivities" not in repr(s) and "dtau_star" in repr(s)
    with pytest.raises(deqrmt.InvalidArgument):
        s.wrt("tau0")


def test_cli_table_and_refusals(capsys):
    assert main(["coefficients", "relu", "--sensitivity", "--dps", "12"]) == 0
    out = capsys.readouterr().out
    assert "∂/∂σ_a²" in out and "independent" in out
    assert "0.0554016620499" in out  # ∂α*₁/∂σ_a² = σ_b²/16/(1 − σ_a²/4)² = 4/(5·16·0.9025)
    assert main(["coefficients", "relu", "--sigma-a2", "0.1,0.2", "--sensitivity"]) == 2
    assert "--sensitivity takes one" in capsys.readouterr().err


def test_no_ntk_no_ntk_derivatives():
    # σ_a² E[φ'²] ≥ 1 while F still contracts: β*, κ* do not exist, nor do their derivatives
    c = deq_coefficients("4*tanh(x)", sigma_a2="0.3", dps=15)
    s = sensitivities("4*tanh(x)", sigma_a2="0.3", dps=15)
    assert list(s) == present(c) == [
        "tau_star", "gamma_star", "alpha_1", "alpha_2", "alpha_3", "alpha_4", "center",
    ]  # fmt: skip
    assert s.notes and s.notes[0].startswith("the NTK diverges")

"""`deqrmt.testing` (issue 14): the strategies draw what they promise, and the properties fail
when an identity is wrong."""

from __future__ import annotations

from fractions import Fraction

import mpmath
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import deqrmt.testing as dt
from deqrmt._errors import ActivationError, InvalidArgument
from deqrmt.check import _consistency as check_module
from deqrmt.numeric import deq_coefficients, lipschitz_bound
from deqrmt.numeric._verified import Verified
from deqrmt.symbolic import Activation, X, parse_activation


@settings(max_examples=10)
@given(act=dt.activations())
def test_activations_are_parsed_continuous_lipschitz_and_cheap(act):
    assert isinstance(act, Activation)
    assert act.expr.free_symbols == {X}
    assert act.is_continuous
    assert any(p.expr != 0 for p in act.derivative_pieces)
    b = lipschitz_bound(act, rtol=0.05)
    assert b.finite, b.reason
    from deqrmt.numeric import evaluator_for

    assert not evaluator_for(act).open_names  # closed forms only: milliseconds per example


@settings(max_examples=6, derandomize=True)  # deterministic: see the issue-14 report
@given(data=st.data())
def test_settings_lie_in_the_contraction_region(data):
    act = data.draw(dt.activations(kinds=("kinked", "piecewise")))
    s = data.draw(dt.settings(act))
    for v in (s.sigma_a2, s.sigma_b2, s.tau0):
        assert isinstance(v, str) and "e" not in v.lower()  # exact, readable decimals
    c = deq_coefficients(act, s.sigma_a2, s.sigma_b2, s.tau0, dps=15)
    sa2 = mpmath.mpf(s.sigma_a2)
    assert sa2 * c.moments["E_phi_sq_second"].value / 2 < 1  # F'(τ*²) < 1: attracting
    assert sa2 * c.moments["E_phi_prime_sq"].value < 1  # the NTK exists


@settings(max_examples=8)
@given(act=dt.library_activations())
def test_library_activations_are_lipschitz(act):
    assert act.is_continuous
    assert lipschitz_bound(act, rtol=0.05).finite


@settings(max_examples=10)
@given(kinked=dt.activations(kinds=("kinked",)))
def test_kinked_activations_are_piecewise_linear(kinked):
    assert kinked.kinks
    assert all(p.expr.is_polynomial(X) and sp.degree(p.expr, X) <= 1 for p in kinked.pieces)


def test_activation_arguments_are_validated():
    with pytest.raises(InvalidArgument, match="kinds"):
        dt.activations(kinds=("wavy",))
    with pytest.raises(InvalidArgument, match="max_terms"):
        dt.activations(max_terms=0)


def test_settings_refuse_a_discontinuous_activation():
    with pytest.raises(ActivationError):
        dt.sigma_a2_cap(Activation("sign", sp.sign(X)))


def test_settings_with_assumption_respect_the_lipschitz_bound():
    cap = dt.sigma_a2_cap(parse_activation("2*tanh(x)"), assumption=True)
    assert cap < Fraction(1, 16)  # 1/(4L₁²) with L₁ = 2


def test_assert_consistent_passes_for_relu():
    dt.assert_consistent("relu", dt.Setting("0.2", "0.8", "1"))


def test_assert_consistent_reports_a_wrong_identity(monkeypatch):
    """Negative control: an explicit network with a wrong α̃₁ must make the σ_a² → 0 item FAIL,
    and assert_consistent must raise with that item's line."""
    real = check_module.explicit_coefficients

    def wrong(*args, **kwargs):
        out = real(*args, **kwargs)
        layer = dict(out.layers[0])
        a1 = layer["alpha_1"]
        layer["alpha_1"] = Verified(a1.value * (1 + mpmath.mpf(10) ** -5), a1.digits, a1.text)
        return type(out)(out.activations, out.tau0, out.dps, out.centered, (layer,))

    monkeypatch.setattr(check_module, "explicit_coefficients", wrong)
    with pytest.raises(AssertionError, match="σ_a² → 0 limit") as info:
        dt.assert_consistent("relu", dt.Setting("0.2", "0.8", "1"), checks=("explicit_limit",))
    assert "FAIL" in str(info.value) and "alpha_1" in str(info.value)


def test_assert_consistent_checks_are_validated():
    with pytest.raises(InvalidArgument, match="checks"):
        dt.assert_consistent("relu", dt.Setting("0.2", "0.8", "1"), checks=("vibes",))


def test_assert_assumption():
    dt.assert_assumption("relu", dt.Setting("0.2", "0.8", "1"))
    with pytest.raises(AssertionError, match="L₁"):
        dt.assert_assumption("x**2/4 + x", dt.Setting("0.5", "0.5", "1"))


def test_public_surface():
    assert set(dt.__all__) <= set(dir(dt))
    for name in ("activations", "settings", "library_activations", "assert_consistent"):
        assert callable(getattr(dt, name))


def test_exponential_denominators_need_no_bounded_sympy_attempt(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The bumps' pieces have denominators e^{u} (denom of e^{−u}): never zero, decided without
    # solveset, whose bounded attempt clears SymPy's cache (the strategies' main cost, issue 14).
    from deqrmt.symbolic import _effort

    def refuse(*args: object) -> None:
        raise AssertionError("bounded() called")

    monkeypatch.setattr(_effort, "bounded", refuse)
    act = parse_activation("x/5 + 3*(0.4*x - 1)*exp(-(0.4*x - 1)**2/2)")
    assert len(act.pieces) == 1
    monkeypatch.undo()
    with pytest.raises(ActivationError, match="pole"):
        parse_activation("exp(-x)/x").pieces  # noqa: B018 (the property raises)

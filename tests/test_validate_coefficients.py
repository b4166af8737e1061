"""The float64 coefficients under test and their slide variants (issue 4)."""

from __future__ import annotations

import dataclasses
import math

import pytest

from deqrmt import InvalidArgument
from deqrmt.validate._coefficients import VARIANTS, Coefficients


@pytest.fixture(scope="module")
def relu() -> Coefficients:
    return Coefficients.from_numeric("relu", "0.7", "0.3", 1.1, dps=20)[0]


def test_engine_numbers_satisfy_the_hand_derived_formulas(relu: Coefficients) -> None:
    assert relu.sigma_a2 == 0.7 and relu.sigma_b2 == 0.3 and relu.tau0 == 1.1
    for name, dev in relu.formula_residuals().items():
        assert dev < 1e-13, name
    # ReLU moments at τ*: E[φ'] = 1/2, E[φ''] = 1/(τ*√(2π)), E[φ'²] = 1/2.
    assert relu.E_phi_prime == pytest.approx(0.5, rel=1e-15)
    assert relu.E_phi_second == pytest.approx(
        1 / (relu.tau_star * math.sqrt(2 * math.pi)), rel=1e-14
    )
    assert relu.E_phi_prime_sq == pytest.approx(0.5, rel=1e-15)


@pytest.mark.parametrize("which", VARIANTS)
def test_variants_change_exactly_their_coefficient(relu: Coefficients, which: str) -> None:
    v = relu.variant(which)
    assert v.label == which
    changed = {
        f.name for f in dataclasses.fields(relu) if getattr(v, f.name) != getattr(relu, f.name)
    }
    expect = {
        "alpha2_slide": {"alpha_2", "beta_2", "label"},
        "kappa_slide": {"kappa_star", "label"},
        "beta3_slide": {"beta_3", "label"},
        "alpha1_x1.2": {"alpha_1", "label"},
    }[which]
    assert changed == expect
    # The perturbed coefficient breaks its formula (β₂ = α₂/D still holds inside the α₂
    # variant; α₁ × 1.2 also breaks the formulas that use α₁).
    bad = {k for k, d in v.formula_residuals().items() if d > 1e-3}
    assert expect - {"label", "beta_2"} <= bad


def test_variants_at_the_negative_control_setting_differ_clearly(relu: Coefficients) -> None:
    # α₂: α₄ vs α₄²; at σ_b² = 0.3, α₄ ≈ 0.4, so the slide's α₂ is ~2.5× too large.
    assert relu.variant("alpha2_slide").alpha_2 / relu.alpha_2 > 2
    assert relu.variant("kappa_slide").kappa_star / relu.kappa_star > 1.2


def test_inconsistent_numbers_are_rejected(relu: Coefficients) -> None:
    with pytest.raises(InvalidArgument, match="τ\\*²"):
        dataclasses.replace(relu, tau0=2.0)
    with pytest.raises(InvalidArgument, match="not finite"):
        dataclasses.replace(relu, alpha_3=math.nan)
    with pytest.raises(InvalidArgument, match="unknown variant"):
        relu.variant("alpha9")

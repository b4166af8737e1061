"""The n-sweep accepts the theorems' coefficients and rejects perturbed ones (issue 4).

Negative controls (no Monte Carlo, n = 256, 512, 1024, ~2 s each): each wrong coefficient is
tried where it differs from the right one by enough to matter in spectral norm —
the slide's α₂ (α₄ not squared) at σ_b² = 0.3 (α₄ ≈ 0.4, so α₂ is 2.5× too large; in the
paper preset at σ_b² = 0.8 the two differ by only ~16%), α₁ × 1.2, and the slide's κ* and β₃
with zero class means (otherwise the class-mean spike, ‖K*‖ ≈ 14, hides a shift of the identity
part or of the J-block: with the spike the slide's κ* leaves a flat but only ~1.2× larger error).
"""

from __future__ import annotations

import functools

import pytest

pytest.importorskip("torch")

from deqrmt import InvalidArgument  # noqa: E402
from deqrmt.validate import ValidationConfig, ValidationResult, run_validation  # noqa: E402

NS = (256, 512, 1024)


@functools.cache
def _run(
    act: str, sigma_a2: str, sigma_b2: str | None, preset: str, variant: str | None
) -> ValidationResult:
    cfg = ValidationConfig(
        act,
        ns=NS,
        sigma_a2=sigma_a2,
        sigma_b2=sigma_b2,
        preset=preset,
        monte_carlo=False,
        variant=variant,
    )
    return run_validation(cfg)


def _final(r: ValidationResult, kernel: str) -> float:
    return getattr(r.runs[-1], kernel).exact_vs_equiv


@pytest.mark.parametrize(
    ("act", "sa2", "sb2", "preset", "variant", "kernel"),
    [
        ("relu", "0.7", "0.3", "paper", "alpha2_slide", "ck"),
        ("relu", "0.2", None, "zero-means", "kappa_slide", "ntk"),
        ("tanh", "0.2", None, "paper", "alpha1_x1.2", "ck"),
        ("relu", "0.2", None, "zero-means", "beta3_slide", "ntk"),
    ],
)
def test_perturbed_coefficient_is_rejected(
    act: str, sa2: str, sb2: str | None, preset: str, variant: str, kernel: str
) -> None:
    good = _run(act, sa2, sb2, preset, None)
    bad = _run(act, sa2, sb2, preset, variant)
    assert good.passed, good.verdict.reasons
    assert not bad.passed
    slope_good = good.slope_ck if kernel == "ck" else good.slope_ntk
    slope_bad = bad.slope_ck if kernel == "ck" else bad.slope_ntk
    assert slope_good is not None and slope_bad is not None
    assert slope_good <= -0.3 < slope_bad  # the wrong coefficient leaves an error floor
    assert _final(bad, kernel) > 1.3 * _final(good, kernel)
    assert any(kernel.upper() in r for r in bad.verdict.reasons)


def test_paper_preset_errors_fall_like_n_to_the_minus_half() -> None:
    r = _run("relu", "0.2", None, "paper", None)
    assert r.passed
    assert -0.7 < r.slope_ck < -0.4 and -0.7 < r.slope_ntk < -0.4  # type: ignore[operator]
    assert _final(r, "ck") < 0.1 and _final(r, "ntk") < 0.1
    assert [x.p for x in r.runs] == [205, 410, 819]  # p = round(0.8 n)
    for x in r.runs:  # τ0² = 1 + 4/√p at the actual p
        assert x.coefficients.tau0**2 == pytest.approx(1 + 4 / x.p**0.5, rel=1e-12)
        assert x.ck.mc_vs_exact is None
        assert set(x.spectra) == {"G_exact", "G_equiv", "K_exact", "K_equiv"}


@pytest.mark.parametrize(
    "kw",
    [
        {"ns": ()},
        {"ns": (512, 256)},
        {"ns": (4,)},
        {"sigma_a2": "abc"},
        {"sigma_a2": "1.5"},  # σ_b² = 1 − σ_a² < 0
        {"ratio": 0.0},
        {"preset": "mnist"},
        {"dtype": "float16"},
        {"device": "tpu"},
        {"variant": "alpha9"},
        {"m": 0},
    ],
)
def test_config_validation(kw: dict) -> None:
    with pytest.raises(InvalidArgument):
        ValidationConfig("relu", **kw)

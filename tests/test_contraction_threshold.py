"""Messages that carry the number: a ContractionError names the largest σ_a² with an attracting
fixed point (and the NTK's own bound), and an out-of-range default says it is one and which flag
sets it.  References are closed forms derived by hand, not the engine."""

from __future__ import annotations

import math
import subprocess

import pytest

from deqrmt import ContractionError, InvalidArgument, deq_coefficients
from deqrmt.numeric._problem import DEQProblem
from deqrmt.numeric._threshold import contraction_thresholds, threshold_text


def _leaky(s: float) -> tuple[float, float]:
    """φ = max(x, s·x), centered: Var[φ(τξ)] = τ²((1 + s²)/2 − (1 − s)²/(2π)), E[φ'²] =
    (1 + s²)/2.  F(q) − q0 = σ_a² q·v is linear in q: the fixed point exists for σ_a² < 1/v
    (its limit as τ → ∞); the NTK needs σ_a² (1 + s²)/2 < 1."""
    v = (1 + s * s) / 2 - (1 - s) ** 2 / (2 * math.pi)
    return 1 / v, 2 / (1 + s * s)


@pytest.mark.parametrize(("spec", "slope"), [("relu", 0.0), ("leaky_relu(0.1)", 0.1)])
@pytest.mark.parametrize("sigma_b2", ["1", "0.3"])
def test_piecewise_linear_thresholds_match_the_closed_form(
    spec: str, slope: float, sigma_b2: str
) -> None:
    t = contraction_thresholds(DEQProblem.make(spec, "3", sigma_b2), 3.0)
    ck, ntk = _leaky(slope)
    assert t is not None and t.at_infinity and not t.at_least
    assert t.ck == pytest.approx(ck, rel=1e-9)  # the limit, reached to ~q0/q = 1e-12
    assert t.ntk == pytest.approx(ntk, rel=1e-9)


@pytest.mark.parametrize("spec", ["relu", "hardswish", "leaky_relu(0.3)"])
def test_the_threshold_separates_fixed_point_from_divergence(spec: str) -> None:
    """Just below the stated σ_a² the engine finds an attracting fixed point; just above it,
    none (the engine's own scan, a different computation from the sup of S)."""
    t = contraction_thresholds(DEQProblem.make(spec, "3", "1"), 3.0)
    assert t is not None and t.ck is not None
    deq_coefficients(spec, f"{t.ck * (1 - 1e-3):.9f}", 1, dps=10)
    with pytest.raises(ContractionError, match=r"only below about"):
        deq_coefficients(spec, f"{t.ck * (1 + 1e-3):.9f}", 1, dps=10)


def test_bounded_activations_have_no_threshold() -> None:
    # V(q) ≤ 1: S(q) grows like q, so every σ_a² has a fixed point: nothing to say
    assert threshold_text(DEQProblem.make("tanh", "3", "1")) == ""
    t = contraction_thresholds(DEQProblem.make("tanh", "3", "1"), 3.0)
    assert t is not None and t.ck is None


def test_relu_error_names_the_thresholds(cli_prefix: list[str]) -> None:
    proc = subprocess.run(
        [*cli_prefix, "coefficients", "relu", "--sigma-a2", "3", "--sigma-b2", "1"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stderr
    # 2π/(π − 1) = 2.93388…: the CK's bound; 2 = 1/E[relu'²]: the NTK's
    assert "only below about 2.934 " in proc.stderr
    assert "σ_a² below about 2 (above it only the CK exists)" in proc.stderr
    assert "--sigma-b2 1" in proc.stderr


def test_an_out_of_range_default_says_it_is_one(cli_prefix: list[str]) -> None:
    with pytest.raises(InvalidArgument, match=r"default.*sigma_b2=1"):
        deq_coefficients("relu", 3)
    proc = subprocess.run(
        [*cli_prefix, "coefficients", "relu", "--sigma-a2", "3"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2
    assert "--sigma-a2 3 leaves σ_b² at its default" in proc.stderr
    assert "`--sigma-b2`" in proc.stderr


def test_a_diverging_ntk_says_where_it_exists() -> None:
    # ReLU: E[φ'²] = 1/2 at every τ, so the NTK exists exactly for σ_a² < 2 (the CK up to 2.93)
    c = deq_coefficients("relu", "2.5", 1, dps=10)
    assert "beta_1" not in c.values
    assert "the NTK exists for σ_a² below about 2 at sigma_b2=1" in c.notes[0]

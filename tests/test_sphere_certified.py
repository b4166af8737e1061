"""Certified sphere constants (issue 11): every ball contains an independent reference.

References come from other methods than the code under test: the verified path (Gauss–Legendre
quadrature with a fixed-point Hermite recursion in mpmath, Newton on mpf) at 45 digits, the
arc-cosine closed form for √2·ReLU, and mpmath.quad of Stein's identity for b_1.
"""

from __future__ import annotations

import argparse
import json

import mpmath
import pytest
import sympy as sp
from flint import arb
from mpmath import mpf

from deqrmt.cli.sphere import configure_sphere_parser, run_sphere
from deqrmt.numeric._arb import arb_to_mpf, workprec
from deqrmt.numeric._enclose import NotEnclosable
from deqrmt.numeric._sphere import NTK_EXTRA_KEYS, SPHERE_KEYS, sphere_coefficients
from deqrmt.numeric._sphere_certified import Controls, Dual, Projections
from deqrmt.symbolic import get_activation

KEYS = (*SPHERE_KEYS, *NTK_EXTRA_KEYS)
ACTIVATIONS = ["tanh", "relu", "erf", "x + 0.25*x**2", "sin"]


def _contains(v, ref) -> bool:
    return v.contains(ref)


@pytest.mark.parametrize("sigma_a2", ["0.2", "0.5"])
@pytest.mark.parametrize("act", ACTIVATIONS)
def test_balls_contain_the_45_digit_verified_values(act, sigma_a2):
    """dps 30: every ball holds the verified path's 45-digit value; radius < 1e-30 relative."""
    got = sphere_coefficients(act, sigma_a2, dps=30)
    ref = sphere_coefficients(act, sigma_a2, dps=45, certify=False)
    assert got.certified and got.reason is None
    for k in KEYS:
        v = got.values[k]
        assert v.certified, k
        assert v.digits == 30, (k, v.digits)
        assert _contains(v, ref.values[k].value), (k, v.text, ref.values[k].text)
        assert v.radius <= abs(v.value) * mpf(10) ** -30, (k, v.radius)
    assert [q.signs for q in got.quadratic_ck] == [q.signs for q in ref.quadratic_ck]
    assert [q.signs for q in got.quadratic_ntk] == [q.signs for q in ref.quadratic_ntk]
    for mine, theirs in (
        *zip(got.quadratic_ck, ref.quadratic_ck, strict=True),
        *zip(got.quadratic_ntk, ref.quadratic_ntk, strict=True),
    ):
        for a, b in ((mine.a2, theirs.a2), (mine.a1, theirs.a1), (mine.a0, theirs.a0)):
            assert a.certified and _contains(a, b.value), (mine.signs, a.text, b.text)


def _acos_kernel(r):
    """HLD 2023, Lemma 1: the dual of √2·max(x, 0) at s = 1."""
    return (mpmath.sqrt(1 - r * r) + (mpmath.pi - mpmath.acos(r)) * r) / mpmath.pi


def test_normalized_relu_against_the_closed_form():
    """√2·ReLU with σ_b² = 1 − σ_a²: s = 1 exactly, g(0) the root of g = σ_a² f(g), f arc-cosine."""
    got = sphere_coefficients("sqrt(2)*max(x, 0)", "0.2", dps=30)
    assert got.certified
    with mpmath.workdps(60):
        a2 = mpf(1) / 5
        g0 = mpmath.findroot(lambda y: y - a2 * _acos_kernel(y), mpf("0.07"))
        gp = (1 - a2) / (1 - a2 * mpmath.diff(_acos_kernel, g0, 1))
        assert got.values["g_at_1"].contains(1)
        assert got.values["g0"].contains(g0)
        assert got.values["g_prime_0"].contains(gp)
        assert not got.values["g0"].contains(g0 * (1 + mpf(10) ** -28))


# ---------------------------------------------------------------------------
# Negative controls: each tail bound does real work
# ---------------------------------------------------------------------------


def _b1_reference(tau):
    """b_1 = E[ξ tanh(τξ)] by mpmath.quad (a different rule from acb.integral)."""
    with mpmath.workdps(50):
        return mpmath.quad(
            lambda x: x * mpmath.tanh(tau * x) * mpmath.npdf(x), [-mpmath.inf, 0, mpmath.inf]
        )


@pytest.mark.parametrize("tail", [True, False])
def test_gaussian_tail_control(tail):
    """|x| ≤ 5 for tanh at τ = 1: with the Cramér tail bound b_1's ball holds the reference;
    without it the ball misses by the dropped mass (~1e-5)."""
    act = get_activation("tanh")
    with workprec(160):
        proj = Projections(act, arb(1), 160, Controls(cut=5, gaussian_tail=tail))
        proj.extend(1, lambda k: 160)
    ref = _b1_reference(1)
    b1 = proj.b[1]
    with mpmath.workdps(50):
        inside = abs(arb_to_mpf(b1) - ref) <= arb_to_mpf(arb(b1.rad()))
    assert inside is tail


@pytest.mark.parametrize("tail", [True, False])
def test_series_tail_control(tail):
    """The Mehler series of √2·ReLU (f(1) = 1) cut at 8 terms, at r = 3/10: with the Parseval
    bound every f^{(j)} ball holds the arc-cosine value; without it some ball misses."""
    act = get_activation("sqrt(2)*max(x, 0)")
    with workprec(160):
        controls = Controls(series_tail=tail)
        proj = Projections(act, arb(1), 160, controls)
        proj.extend(8, lambda k: 160)
        dual = Dual(proj, arb(1), controls)
        r = arb(3) / 10
        balls = [dual(r, j) for j in range(4)]
    with mpmath.workdps(50):
        refs = [mpmath.diff(_acos_kernel, mpf(3) / 10, j) for j in range(4)]
        inside = [
            abs(arb_to_mpf(b) - x) <= arb_to_mpf(arb(b.rad()))
            for b, x in zip(balls, refs, strict=True)
        ]
    assert all(inside) if tail else not all(inside)


def test_the_series_tail_bound_is_sharp_enough_with_more_terms():
    """With enough terms the same ball is tight: radius < 1e-30 at r = 3/10."""
    act = get_activation("sqrt(2)*max(x, 0)")
    with workprec(160):
        proj = Projections(act, arb(1), 160, Controls())
        proj.extend(80, lambda k: 160)
        dual = Dual(proj, arb(1), Controls())
        ball = dual(arb(3) / 10, 1)
    with mpmath.workdps(50):
        ref = mpmath.diff(_acos_kernel, mpf(3) / 10, 1)
        assert abs(arb_to_mpf(ball) - ref) <= arb_to_mpf(arb(ball.rad()))
        assert arb_to_mpf(arb(ball.rad())) < mpf(10) ** -30


# ---------------------------------------------------------------------------
# Fallback, API and command line
# ---------------------------------------------------------------------------


def test_not_enclosable_falls_back_to_verified(monkeypatch):
    import deqrmt.numeric._sphere_certified as cs

    def refuse(*args, **kwargs):
        raise NotEnclosable("a test refusal")

    monkeypatch.setattr(cs, "certify_sphere", refuse)
    res = sphere_coefficients("tanh", "0.2", dps=12)
    assert not res.certified and res.reason == "a test refusal"
    assert all(not v.certified for v in res.values.values())
    doc = res.to_dict()
    assert doc["certified"] is False and doc["reason"] == "a test refusal" and "balls" not in doc


def test_no_certify_is_the_verified_path():
    res = sphere_coefficients("relu", "0.2", dps=12, certify=False)
    assert not res.certified and res.reason is None
    assert all(not v.certified for v in res.values.values())


def test_odd_activation_exact_zeros():
    """φ odd: g(0) = α = 0 exactly (b_0 = b_2 = 0 by symmetry, r₀ = 0 proved)."""
    res = sphere_coefficients("tanh", "0.2", dps=20)
    assert res.certified
    for k in ("g0", "alpha"):
        assert res.values[k].text == "0" and res.values[k].radius == 0
    assert res.quadratic_ck == ()


def test_cli_certify_flags(capsys):
    p = argparse.ArgumentParser()
    configure_sphere_parser(p)
    assert run_sphere(p.parse_args(["relu", "--dps", "15", "--json"])) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["certified"] is True and doc["prec_bits"] > 0
    assert set(doc["balls"]) == set(KEYS)
    assert set(doc["quadratic_ck"]["balls"]) == {"a2", "a1", "a0"}
    for ball in doc["balls"].values():
        assert float(ball["radius"]) <= 1e-15 * max(abs(float(ball["midpoint"])), 1e-300) or (
            ball["radius"] == "0"
        )
    assert run_sphere(p.parse_args(["relu", "--dps", "15", "--no-certify", "--json"])) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["certified"] is False and "balls" not in doc
    assert run_sphere(p.parse_args(["relu", "--dps", "12"])) == 0
    assert "proven (Arb balls)" in capsys.readouterr().out


def test_sympy_inputs_stay_exact():
    res = sphere_coefficients("relu", sp.Rational(1, 5), dps=12)
    assert res.sigma_a2 == sp.Rational(1, 5) and res.certified

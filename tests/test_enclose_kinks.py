"""Arb enclosures of moments of a φ with a kink, against mpmath at 50 digits.

φ(x) = tanh(max(x, √2)) is tanh(√2) below its kink at √2 (an irrational point: Arb holds it
as a ball, and the quadrature splits there) and tanh above; no closed form, so the moments are
integrated piece by piece.  References: E[g(φ(τξ))] = Φ(√2/τ) g(tanh √2) + ∫_{√2/τ}^∞
g(tanh(τξ)) pdf(ξ) dξ by mpmath quadrature at 50 digits.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import pytest

from deqrmt.numeric._enclose import enclose_moments


def _reference(power: int, tau: int) -> mpmath.mpf:
    with mpmath.workdps(50):
        k = mpmath.sqrt(2) / tau
        below = mpmath.ncdf(k) * mpmath.tanh(mpmath.sqrt(2)) ** power
        above = mpmath.quad(
            lambda s: mpmath.tanh(tau * s) ** power * mpmath.npdf(s), [k, mpmath.inf]
        )
        return below + above


def _contains(ball, x: mpmath.mpf) -> bool:
    """x in the ball, compared exactly (the ball's dyadic ends, x's binary value)."""

    def exact(v) -> Fraction:
        man, exp = v.man_exp()
        return Fraction(int(man)) * Fraction(2) ** int(exp)

    mid, rad = exact(ball.mid()), exact(ball.rad())
    sign, man, exp, _ = x._mpf_
    value = (-1) ** sign * Fraction(int(man)) * Fraction(2) ** int(exp)
    return mid - rad <= value <= mid + rad


@pytest.mark.parametrize("tau", [1, 2])
def test_moments_across_an_irrational_kink_contain_the_reference(tau):
    balls = enclose_moments("tanh(max(x, sqrt(2)))", tau, ["phi", "sq"], dps=30)
    for name, power in (("phi", 1), ("sq", 2)):
        ball, want = balls[name], _reference(power, tau)
        text = ball.str(45, radius=True)
        # the reference is 50 digits: within 10^-45 of the truth, far inside a 10^-30 ball
        assert _contains(ball, want), (name, tau, text, want)
        assert float(ball.rad()) < 1e-28, (name, text)


def test_the_end_point_error_of_an_inexact_kink_widens_every_ball(monkeypatch):
    """Whatever its size, the end-point error of an inexact kink joins the ball: with it made
    1/64 per end point (so the sum stays below 1), each moment's radius grows by at least
    1/64 × the Gaussian normalisation (≥ 0.39/τ for τ = 1) over the unpatched ball's."""
    from flint import arb

    import deqrmt.numeric._enclose as enc

    base = enclose_moments("tanh(max(x, sqrt(2)))", 1, ["phi", "sq"], dps=30)
    enc.encloser_for.cache_clear()
    monkeypatch.setattr(
        enc, "_endpoint_error", lambda f, p: arb(0) if p.rad() == 0 else arb(1) / 64
    )
    try:
        widened = enclose_moments("tanh(max(x, sqrt(2)))", 1, ["phi", "sq"], dps=30)
    finally:
        enc.encloser_for.cache_clear()
    norm = 1 / (2 * mpmath.pi) ** 0.5
    for name in ("phi", "sq"):
        grown = float(widened[name].rad()) - float(base[name].rad())
        assert grown >= norm / 64 * 0.99, (name, grown)

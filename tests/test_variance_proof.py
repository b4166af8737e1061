"""The attraction verdict of :func:`deqrmt.numeric._variance_proof.prove_fixed_point`.

A DEQ's variance map reached from q0 upward crosses the diagonal with 0 ≤ F' < 1, so the
certified paths never show the other verdicts; here linear maps F(q) = c + s·q with a known
fixed point q* = c/(1 − s) and slope s (exact balls, so |F'| is decided exactly) stand in for
the variance balls: s ∈ (−1, 1) is proved and returned, |s| ≥ 1 (F' = −1 included: a period-two
oscillation, not an attracting point) raises ContractionError, and a slope ball that straddles
−1 is undecided (NotEnclosable), never a verdict.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from flint import arb

from deqrmt._errors import ContractionError
from deqrmt.numeric._arb import to_arb, workprec
from deqrmt.numeric._enclose import NotEnclosable
from deqrmt.numeric._problem import DEQProblem
from deqrmt.numeric._variance_proof import prove_fixed_point

PREC = 200


class _Linear:
    """h(q) = F(q) − q with F(q) = c + s·q; h' = s − 1 as the ball ``dh`` (exact unless given)."""

    caches = False

    def __init__(self, c: Fraction, s: Fraction, dh: arb | None = None) -> None:
        self.c, self.s = c, s
        self._dh = dh
        self.problem = DEQProblem.make("relu", "0.5", "0.5")  # named in the error message

    def h(self, q: arb, prec: int) -> arb:
        with workprec(prec):
            return to_arb(self.c) + (to_arb(self.s) - 1) * q

    def dh(self, q: arb, prec: int) -> arb:
        return self._dh if self._dh is not None else to_arb(self.s - 1)

    def both(self, q: arb, prec: int) -> tuple[arb, arb]:
        return self.h(q, prec), self.dh(q, prec)


def _prove(vmap: _Linear, start: Fraction) -> tuple[arb, arb]:
    with workprec(PREC):
        return prove_fixed_point(vmap, to_arb(start), 10, PREC)


@pytest.mark.parametrize("s", [Fraction(-1, 2), Fraction(-7, 8), Fraction(0), Fraction(3, 4)])
def test_an_attracting_fixed_point_is_proved_with_its_slope(s):
    c = 1 - s  # q* = 1
    k, slope = _prove(_Linear(c, s), Fraction(1001, 1000))
    assert k.contains(1) and arb(k.rad()) < arb(2) ** -150
    assert slope.contains(to_arb(s)) and slope.rad() == 0


@pytest.mark.parametrize("s", [Fraction(-2), Fraction(-1), Fraction(3, 2)])
def test_a_slope_of_modulus_one_or_more_is_refused(s):
    c = 1 - s  # q* = 1
    with pytest.raises(ContractionError, match=r"\|F'\| ≥ 1.*sigma_a2=1/2; reduce sigma_a2"):
        _prove(_Linear(c, s), Fraction(1001, 1000))


def test_a_slope_that_straddles_minus_one_is_undecided():
    """F' ∈ [−1.1, −0.9]: neither attracting nor repelling is proved."""
    with workprec(PREC):
        dh = arb(-2, 0.1)
    with pytest.raises(NotEnclosable, match="undecided"):
        _prove(_Linear(Fraction(2), Fraction(-1), dh), Fraction(1001, 1000))


class _Curved(_Linear):
    """h(q) = (1 − q) + 2^10 (q − 1)² (F' = 0 at q* = 1): Newton's last point is off by up to 2^10 times the
    square of its last step, about 2^(2−known) relative, so only a ball wider than the bits
    Newton trusts holds the zero (the radii start at 2^(4−known))."""

    def __init__(self) -> None:
        super().__init__(Fraction(0), Fraction(0))

    def h(self, q: arb, prec: int) -> arb:
        with workprec(prec):
            return (1 - q) + 1024 * (q - 1) ** 2

    def dh(self, q: arb, prec: int) -> arb:
        with workprec(prec):
            return 2048 * (q - 1) - 1


def test_the_first_ball_is_wider_than_the_bits_newton_trusts():
    k, slope = _prove(_Curved(), 1 + Fraction(1, 2**14))
    assert k.contains(1) and arb(k.rad()) < arb(2) ** -150
    assert slope.contains(0) and arb(slope.rad()) < arb(2) ** -40  # h'(Q) on the wide Q

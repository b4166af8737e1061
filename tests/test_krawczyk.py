"""The Krawczyk prover's three steps on functions whose zeros are known independently.

h(x) = x² − c has the zero √c, computed by mpmath at twice the working precision (a reference
the prover never sees); h(x) = x² + 1 has none.  Each step is checked for what it promises: the
points Newton returns approach the zero to the bits it claims; a ball Krawczyk proves contains
the zero, lies inside the ball Q tested and has the preconditioner 1/h'(x̃); a ball ``contract``
returns still contains the zero, lies inside the ball it got, and is as narrow as documented.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import pytest
from flint import arb

from deqrmt.numeric._arb import workprec
from deqrmt.numeric._enclose import NotEnclosable
from deqrmt.numeric._krawczyk import contract, krawczyk, newton

PREC = 200


def _fraction(x: arb) -> Fraction:
    man, exp = x.mid().man_exp()
    m, e = int(man), int(exp)
    return Fraction(m * 2**e) if e >= 0 else Fraction(m, 2**-e)


def _ends(x: arb) -> tuple[Fraction, Fraction]:
    mid = _fraction(x)
    man, exp = arb(x.rad()).man_exp()
    m, e = int(man), int(exp)
    rad = Fraction(m * 2**e) if e >= 0 else Fraction(m, 2**-e)
    return mid - rad, mid + rad


def _root(c: int) -> Fraction:
    """√c to 2·PREC bits by mpmath, as an exact Fraction (the independent reference)."""
    with mpmath.workprec(2 * PREC):
        man, exp = mpmath.sqrt(c).man_exp
    return Fraction(int(man) * 2**exp) if exp >= 0 else Fraction(int(man), 2**-exp)


def _contains(ball: arb, v: Fraction, slack: Fraction = Fraction(0)) -> bool:
    lo, hi = _ends(ball)
    return lo - slack <= v <= hi + slack


def _start(c: int) -> arb:
    """The float root: how the engine starts (a float64 solve), ~50 bits right."""
    return arb(math.sqrt(c))


def _square_minus(c: int):  # type: ignore[no-untyped-def]
    def both(x: arb, p: int) -> tuple[arb, arb]:
        with workprec(p):
            return x * x - c, 2 * x

    def h_at(x: arb) -> arb:
        with workprec(PREC):
            return x * x - c

    def dh_on(q: arb) -> arb:
        with workprec(PREC):
            return 2 * q

    return both, h_at, dh_on


@pytest.mark.parametrize("c", [2, 3, 10])
def test_newton_reaches_the_bits_it_claims(c: int) -> None:
    both, _, _ = _square_minus(c)
    x, known = newton(both, _start(c), 30, PREC, "x")
    assert x.rad() == 0  # an exact point
    assert 4 * known >= PREC + 32  # the loop's own stopping rule, reached
    assert known <= PREC - 8
    error = abs(_fraction(x) - _root(c))
    assert error <= _root(c) * Fraction(2) ** (-known), (float(error), known)
    # and no further: the point is only as good as a few Newton steps make it
    assert known >= PREC // 4


@pytest.mark.parametrize("e", [12, 16, 20, 23, 25, 27, 29, 31, 35, 40])
def test_newton_from_starts_of_every_accuracy(e: int) -> None:
    """A start off by ~2^−e relative: however many steps that takes, the point returned is
    trusted to ≥ (prec + 32)/4 bits and is that close to √2."""
    both, _, _ = _square_minus(2)
    with workprec(PREC):
        start = arb((arb(2).sqrt() * (1 + arb(2) ** -e)).mid())
    x, known = newton(both, start, 8, PREC, "x")
    assert 4 * known >= PREC + 32
    assert abs(_fraction(x) - _root(2)) <= _root(2) * Fraction(2) ** (-known)


def test_newton_stops_at_the_first_step_that_reaches_a_quarter_of_the_bits() -> None:
    """One step from √2·(1 + 0.9·2^−33): it is trusted to 2·33 − 8 = 58 bits, and
    4·58 = prec + 32 ends the loop (the rule: stop once 4·known ≥ prec + 32)."""
    both, _, _ = _square_minus(2)
    calls: list[int] = []

    def counted(x: arb, p: int) -> tuple[arb, arb]:
        calls.append(p)
        return both(x, p)

    with workprec(PREC):
        start = arb((arb(2).sqrt() * (1 + arb(0.9) * arb(2) ** -33)).mid())
    x, known = newton(counted, start, 30, PREC, "x")
    assert (known, len(calls)) == (58, 1)
    assert abs(_fraction(x) - _root(2)) <= _root(2) * Fraction(2) ** -58


def test_newton_takes_a_step_even_when_told_the_start_is_exact() -> None:
    """A start right to 20 bits but claimed to 300 is still stepped (the step resets the claim)."""
    both, _, _ = _square_minus(2)
    precisions: list[int] = []

    def counted(x: arb, p: int) -> tuple[arb, arb]:
        precisions.append(p)
        return both(x, p)

    x, known = newton(counted, arb(1.41421), 300, PREC, "x")
    assert abs(_fraction(x) - _root(2)) < Fraction(1, 10**10)
    assert known <= PREC - 8
    # never above the working precision, however many bits the start claims
    assert len(precisions) >= 2 and max(precisions) == PREC


def test_newton_at_an_exact_zero_stays_there() -> None:
    """x = 2 is the zero of x² − 4: the step is exactly 0 and the point is kept as it is."""
    both, _, _ = _square_minus(4)
    x, known = newton(both, arb(2), 30, PREC, "x")
    assert x == 2 and x.rad() == 0
    assert 4 * known >= PREC + 32 and known <= PREC - 8


def test_newton_settles_from_8_trusted_bits_and_refuses_fewer() -> None:
    """The first step trusts 2·(bits of the step) − 8: a start 0.75·2^−8 off gives 8 bits, the
    least Newton goes on from; 0.75·2^−7 off gives 6, and is refused."""
    both, _, _ = _square_minus(2)
    with workprec(PREC):
        near = arb((arb(2).sqrt() * (1 + arb(0.75) * arb(2) ** -8)).mid())
        far = arb((arb(2).sqrt() * (1 + arb(0.75) * arb(2) ** -7)).mid())
    x, known = newton(both, near, 30, PREC, "x")
    assert abs(_fraction(x) - _root(2)) <= _root(2) * Fraction(2) ** (-known)
    with pytest.raises(NotEnclosable, match="does not settle"):
        newton(both, far, 30, PREC, "x")


def test_newton_refuses_a_function_without_a_zero() -> None:
    def both(x: arb, p: int) -> tuple[arb, arb]:
        with workprec(p):
            return x * x + 1, 2 * x

    with pytest.raises(NotEnclosable, match="Newton on the unknown does not settle"):
        newton(both, arb(3), 8, PREC, "the unknown")


@pytest.mark.parametrize("c", [2, 3, 10])
def test_krawczyk_proves_a_ball_around_the_zero(c: int) -> None:
    both, h_at, dh_on = _square_minus(c)
    x, known = newton(both, _start(c), 30, PREC, "x")
    radii = [arb(2) ** (-(known - w)) for w in (4, 12, 24)]
    proof = krawczyk(x, h_at(x), dh_on, radii, PREC)
    assert proof is not None
    k, dh_q, y = proof
    root = _root(c)
    assert _contains(k, root)
    # K lies inside the first Q = [x ± r] (the test that proves uniqueness), strictly
    q_lo, q_hi = _fraction(x) - _fraction(radii[0]), _fraction(x) + _fraction(radii[0])
    k_lo, k_hi = _ends(k)
    assert q_lo < k_lo and k_hi < q_hi
    # h'(Q) encloses h' = 2x on Q, and Y ≈ 1/h'(x̃)
    assert _contains(dh_q, 2 * q_lo) and _contains(dh_q, 2 * q_hi)
    assert abs(_fraction(y) * 2 * _fraction(x) - 1) < Fraction(1, 2 ** (PREC - 4))
    # quadratic: K is about as wide as r², far narrower than Q
    assert _fraction(k.rad()) < _fraction(radii[0]) ** 2 * 2**16


def test_krawczyk_says_none_when_no_ball_passes() -> None:
    _, h_at, dh_on = _square_minus(2)
    far = arb(3)  # √2 is 1.59 away: no ball of these radii holds a zero
    radii = [arb(2) ** -e for e in (10, 20, 40)]
    assert krawczyk(far, h_at(far), dh_on, radii, PREC) is None
    # a ball so wide that h' vanishes in it (x = 0): K(Q) is not inside Q
    assert krawczyk(arb(1), h_at(arb(1)), dh_on, [arb(4)], PREC) is None


def test_a_zero_on_the_boundary_of_q_is_not_proved() -> None:
    """h(x) = x − z with z on the boundary of Q = [x̃ ± r]: K(Q) = {z} lies in Q but not in its
    interior, which is what the theorem asks; a wider Q proves it.  (Arb rounds a radius up
    to its 30-bit format: z is placed at the radius Arb stores.)"""

    def dh_on(q: arb) -> arb:
        return arb(1)

    x = arb(0.5)
    with workprec(PREC):
        z = x + arb(x, 0.5).rad()  # the boundary of the Q that krawczyk builds
        h_x = x - z
    assert krawczyk(x, h_x, dh_on, [arb(0.5)], PREC) is None
    proof = krawczyk(x, h_x, dh_on, [arb(0.5), arb(0.75)], PREC)
    assert proof is not None and proof[0] == z and proof[0].rad() == 0


def test_krawczyk_takes_the_first_radius_that_passes() -> None:
    both, h_at, dh_on = _square_minus(2)
    x, known = newton(both, _start(2), 30, PREC, "x")
    tiny = arb(2) ** (-(PREC + 40))  # below the point's error: Q misses the zero
    good = arb(2) ** (-(known - 4))
    proof = krawczyk(x, h_at(x), dh_on, [tiny, good], PREC)
    assert proof is not None and _contains(proof[0], _root(2))
    lo, hi = _ends(proof[0])
    assert hi - lo < 2 * _fraction(good)


@pytest.mark.parametrize("c", [2, 3, 10])
def test_contract_narrows_to_the_documented_width_and_keeps_the_zero(c: int) -> None:
    both, h_at, dh_on = _square_minus(c)
    x, known = newton(both, _start(c), 30, PREC, "x")
    # a deliberately wide proved ball: Krawczyk on Q of radius 2^-(known/2)
    radii = [arb(2) ** (-(known // 2))]
    proof = krawczyk(x, h_at(x), dh_on, radii, PREC)
    assert proof is not None
    k, dh_q, y = proof
    narrow = contract(h_at, k, dh_q, y, PREC)
    root = _root(c)
    assert _contains(narrow, root)
    k_lo, k_hi = _ends(k)
    n_lo, n_hi = _ends(narrow)
    assert k_lo <= n_lo and n_hi <= k_hi  # inside the ball it got
    # ~2^−(prec−16) relative (the stopping rule), or stopped by a round that shrank < 4×;
    # either way far below the input's width
    assert (n_hi - n_lo) < (k_hi - k_lo) / 2**20
    assert (n_hi - n_lo) / 2 <= root * Fraction(2) ** (16 - PREC) * 2**20


def test_contract_runs_at_most_four_rounds() -> None:
    """From Q of radius 2^−10 each round multiplies the width by |1 − Y h'(Q)| ≈ 2^−10, more
    than fourfold: four rounds, the most ``contract`` takes, still leave the ball wider than
    its stopping width, and each evaluation is at a point."""
    both, h_at, dh_on = _square_minus(2)
    x, _ = newton(both, _start(2), 30, PREC, "x")
    proof = krawczyk(x, h_at(x), dh_on, [arb(2) ** -10], PREC)
    assert proof is not None
    k, dh_q, y = proof
    calls: list[arb] = []

    def counted(x: arb) -> arb:
        calls.append(x)
        return h_at(x)

    narrow = contract(counted, k, dh_q, y, PREC)
    assert len(calls) == 4 and all(c.rad() == 0 for c in calls)
    assert _contains(narrow, _root(2))
    assert _fraction(narrow.rad()) > _root(2) * Fraction(2) ** (16 - PREC)
    assert _fraction(narrow.rad()) < _fraction(k.rad()) / 4**4


def test_contract_stops_when_a_round_no_longer_shrinks() -> None:
    """h known only to ±2^−100 (a noisy evaluation): the proved ball is already as narrow as
    that noise allows, the first round does not shrink it fourfold, and contract stops there
    (one evaluation, not four) with the zero still inside."""
    both, h_at, dh_on = _square_minus(2)
    x, known = newton(both, _start(2), 30, PREC, "x")

    def noisy(x: arb) -> arb:
        with workprec(PREC):
            return h_at(x) + arb(0, arb(2) ** -100)

    proof = krawczyk(x, noisy(x), dh_on, [arb(2) ** (-(known - 4))], PREC)
    assert proof is not None
    k, dh_q, y = proof
    calls: list[arb] = []

    def counted(x: arb) -> arb:
        calls.append(x)
        return noisy(x)

    out = contract(counted, k, dh_q, y, PREC)
    assert len(calls) == 1
    assert _contains(out, _root(2))


def test_contract_leaves_a_ball_already_narrow_enough_alone() -> None:
    both, h_at, dh_on = _square_minus(2)
    x, known = newton(both, _start(2), 30, PREC, "x")
    with workprec(PREC):
        k = arb(x, arb(2) ** (-(PREC - 8)))  # narrower than 2^−(prec−16)·|x|: done already
    calls: list[arb] = []

    def counted(x: arb) -> arb:
        calls.append(x)
        return h_at(x)

    out = contract(counted, k, dh_on(k), 1 / arb(2 * x), PREC)
    assert calls == [] and out.mid() == k.mid() and out.rad() == k.rad()

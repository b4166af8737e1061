"""Edges of the Arb contexts (``numeric/_arb.py``) and of ``Verified`` (``numeric/_verified.py``).

Every Arb function of the contexts must return a ball containing mpmath's value of the same
function at 50 digits; ``Verified``'s rarer paths (a proven ball that proves no digit, an
operand it does not know, a value with no finite exact form) answer as documented.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import pytest
import sympy as sp
from flint import acb, arb

from deqrmt._errors import InvalidArgument
from deqrmt.numeric._arb import ARB_FUNCTIONS, AcbContext, ArbContext, to_arb, unsupported
from deqrmt.numeric._verified import Verified, proven
from deqrmt.symbolic import X


def _in_ball(ball: arb, value: mpmath.mpf) -> bool:
    lo, hi = ball.lower(), ball.upper()
    with mpmath.workdps(50):
        return (
            mpmath.mpf(lo.str(60, radius=False)) - mpmath.mpf(10) ** -45
            <= value
            <= (mpmath.mpf(hi.str(60, radius=False)) + mpmath.mpf(10) ** -45)
        )


@pytest.mark.parametrize(
    ("name", "point"),
    [
        ("tan", "0.7"),
        ("asin", "0.3"),
        ("acos", "0.3"),
        ("atan", "2.5"),
        ("asinh", "1.5"),
        ("acosh", "1.5"),
        ("atanh", "0.4"),
        ("gamma", "3.25"),
        ("sinh", "0.5"),
        ("cosh", "0.5"),
        ("erfc", "0.5"),
    ],
)
def test_arb_context_functions_enclose_mpmath(name: str, point: str) -> None:
    ctx = ArbContext(160)
    with ctx.workprec():
        ball = getattr(ctx, name)(Fraction(point))
    with mpmath.workdps(50):
        want = getattr(mpmath, name)(mpmath.mpf(point))
    assert ball.rad() < arb(2) ** -140
    assert _in_ball(ball, want)


@pytest.mark.parametrize("z", [complex(0.5, 0.0), complex(0.3, 0.4), complex(-1.2, 0.2)])
def test_acb_atan_is_atan(z: complex) -> None:
    ctx = AcbContext(160)
    with ctx.workprec():
        w = ctx.atan(acb(arb(z.real), arb(z.imag)))
    with mpmath.workdps(50):
        want = mpmath.atan(mpmath.mpc(z.real, z.imag))
    assert _in_ball(w.real, want.real) and _in_ball(w.imag, want.imag)


def test_acb_atan_on_its_cut_is_not_finite_when_analytic() -> None:
    """On the cut (iy, |y| > 1) an analytic integrand must answer a non-finite ball."""
    ctx = AcbContext(64)
    ctx.analytic = True
    with ctx.workprec():
        w = ctx.atan(acb(0, 2))
    assert not w.is_finite()


def test_unsupported_names_non_finite_numbers_and_accepts_positive_bases() -> None:
    assert unsupported(X + sp.oo, ARB_FUNCTIONS, holomorphic=False) == ["number oo"]
    assert unsupported(sp.Integer(2) ** X, ARB_FUNCTIONS, holomorphic=True) == []
    assert unsupported(X ** sp.Rational(1, 3), ARB_FUNCTIONS, holomorphic=True) == [
        "power x**(1/3)"
    ]


# -- Verified -------------------------------------------------------------------------------


def test_a_proven_ball_around_zero_proves_no_digit_and_says_how_small() -> None:
    v = proven(arb(0, arb(2) ** -70), 10)
    assert v.digits == 0 and v.text == "" and v.certified
    text = repr(v)
    assert "digits=0" in text and "within ±" in text
    rad = float(text.rsplit("±", 1)[1].rstrip(")"))
    assert 2.0**-70 * 0.99 <= rad <= 2.0**-70 * 1.01


def test_a_ball_straddling_a_rounding_boundary_proves_no_digit() -> None:
    """[0.09, 0.21]: one digit would be 0.09 or 0.2, so not even one digit is proven."""
    v = proven(to_arb(Fraction(15, 100)) + arb(0, to_arb(Fraction(6, 100))), 10)
    assert v.digits == 0 and v.text == ""
    assert v.contains(Fraction(1, 10)) and v.contains("0.2") and not v.contains("0.25")


def test_negation_keeps_an_empty_or_zero_text() -> None:
    assert (-proven(arb(0, arb(2) ** -70), 5)).text == ""
    assert (-proven(arb(0), 5)).text == "0"


def test_ball_of_a_value_without_verified_digits_is_refused() -> None:
    v = Verified(mpmath.mpf(1), 0, "")
    with pytest.raises(InvalidArgument, match="no verified digit"):
        _ = v.ball


def test_a_non_finite_value_has_no_exact_form() -> None:
    v = Verified(mpmath.inf, 0, "")
    with pytest.raises(InvalidArgument, match="not a finite number"):
        hash(v)


def test_bool_and_strings_are_not_operands() -> None:
    v = Verified(mpmath.mpf(1), 3, "1.00")
    assert (v == True) is False  # noqa: E712 (bool is not a number here, on purpose)
    with pytest.raises(TypeError):
        _ = v < "2"  # type: ignore[operator]


def test_contains_refuses_a_numeral_longer_than_1000_characters() -> None:
    v = proven(arb(1), 5)
    with pytest.raises(InvalidArgument, match="1000"):
        v.contains("1" * 1001)


def test_arithmetic_with_arb_balls() -> None:
    """A proven Verified and a ball: a proven result (the class's contract: "every other operand
    exact or an arb ball"); with an unproven Verified: an mpmath number."""
    third = arb(1) / 3
    p = proven(arb(1), 20) + third
    assert isinstance(p, Verified) and p.certified and p.contains(Fraction(4, 3))
    # the ball 1/3 was rounded at 53 bits: about 16 digits of 4/3 are proven, each one right
    assert p.digits >= 15
    assert abs(Fraction(p.text) - Fraction(4, 3)) <= Fraction(1, 10 ** (p.digits - 1))
    u = Verified(mpmath.mpf(1), 10, "1.000000000") + third
    assert not isinstance(u, Verified)
    assert abs(u - mpmath.mpf(4) / 3) < mpmath.mpf(10) ** -15


def test_a_ball_exponent_keeps_its_radius() -> None:
    """2 ** [1.9, 2.1] contains 2^1.9 and 2^2.1 (the ball is not read as its midpoint 2)."""
    e = arb(2) + arb(0, to_arb(Fraction(1, 10)))
    r = proven(arb(2), 20) ** e
    assert isinstance(r, Verified) and r.certified
    with mpmath.workdps(30):
        for x in ("1.9", "2.1"):
            assert r.contains(mpmath.mpf(2) ** mpmath.mpf(x))

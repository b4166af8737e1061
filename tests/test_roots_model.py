"""The scan's cell model (``_roots``): the cubic Hermite interpolant and its turning points.

A cubic h is its own Hermite interpolant, so the model must reproduce it exactly (to rounding)
at every t; its interior critical points are checked against numpy's companion-matrix roots of
the derivative.  The scan decides where to split a cell from these two, so a wrong coefficient
hides a root pair without any sign change to give it away.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from deqrmt.numeric._roots import NoBracket, _cubic, _extrema, _hermite, polish, scan

# hundredths in [−10, 10]: exact zeros (a parabola, a line) come up, subnormals do not
coef = st.integers(-1000, 1000).map(lambda k: k / 100)


def _poly(p: tuple[float, float, float, float], q: float) -> tuple[float, float]:
    p0, p1, p2, p3 = p
    return p0 + q * (p1 + q * (p2 + q * p3)), p1 + q * (2 * p2 + 3 * q * p3)


@given(
    st.tuples(coef, coef, coef, coef),
    st.floats(min_value=-5, max_value=5),
    st.floats(min_value=0.1, max_value=5),
)
def test_a_cubic_is_its_own_hermite_model(p, a: float, width: float) -> None:
    b = a + width
    (ha, da), (hb, db) = _poly(p, a), _poly(p, b)
    model = _hermite(a, b, ha, da, hb, db)
    scale = 1 + sum(abs(c) for c in p) * (1 + abs(a) + width) ** 3
    for t in (0.0, 0.1, 0.25, 0.5, 0.8, 1.0):
        want = _poly(p, a + t * width)[0]
        assert _cubic(model, t) == pytest.approx(want, abs=1e-9 * scale)


def test_the_model_value_and_slope_at_both_ends() -> None:
    # h(0) = 2, h'(0) = −3, h(2) = 5, h'(2) = 7 on [0, 2]: t = q/2, dh/dt = 2 h'
    c = _hermite(0.0, 2.0, 2.0, -3.0, 5.0, 7.0)
    assert _cubic(c, 0.0) == 2.0 and _cubic(c, 1.0) == pytest.approx(5.0)
    assert c[1] == -6.0  # dh/dt at t = 0
    assert c[1] + 2 * c[2] + 3 * c[3] == pytest.approx(14.0)  # dh/dt at t = 1


def test_known_turning_points() -> None:
    # p'(t) = 3 (t − 0.3)(t − 0.6) = 3t² − 2.7t + 0.54
    assert _extrema((1.0, 0.54, -1.35, 1.0)) == pytest.approx([0.3, 0.6])
    # only one of p'(t) = 3 (t − 0.5)(t − 2) inside (0, 1)
    assert _extrema((0.0, 3.0, -3.75, 1.0)) == pytest.approx([0.5])
    # a parabola (c3 = 0): p'(t) = 2 c2 t + c1 vanishes at 0.4
    assert _extrema((0.0, -0.8, 1.0, 0.0)) == pytest.approx([0.4])
    # p'(t) = 3t² + 1 > 0: none; a straight line: none
    assert _extrema((0.0, 1.0, 0.0, 1.0)) == []
    assert _extrema((1.0, 2.0, 0.0, 0.0)) == []
    # turning points at the ends are not interior
    assert _extrema((0.0, 0.0, -1.5, 1.0)) == []  # p'(t) = 3t(t − 1)


@given(st.tuples(coef, coef, coef, coef))
def test_turning_points_agree_with_numpy(c) -> None:
    _, c1, c2, c3 = c
    found = _extrema(c)
    assert found == sorted(found) and all(0 < t < 1 for t in found)
    deriv = [3 * c3, 2 * c2, c1]
    while deriv and deriv[0] == 0:
        deriv = deriv[1:]
    if len(deriv) < 2:
        assert found == []
        return
    roots = np.roots(deriv)
    real = sorted(
        float(r.real) for r in roots if abs(r.imag) <= 1e-9 * (1 + abs(r)) and 0 < r.real < 1
    )
    # a double root (disc ≈ 0) or one within rounding of an end may go either way: compare
    # the ones clear of both
    clear = [t for t in real if 1e-6 < t < 1 - 1e-6]
    if len(real) == 2 and math.isclose(real[0], real[1], abs_tol=1e-6):
        return
    for t in clear:
        assert any(math.isclose(t, f, rel_tol=1e-6, abs_tol=1e-9) for f in found), (c, found)
    for f in found:
        slope = c1 + 2 * c2 * f + 3 * c3 * f * f
        assert abs(slope) <= 1e-6 * (abs(c1) + abs(c2) + abs(c3)), (c, f, slope)


@pytest.mark.parametrize("bad", ["value", "slope"])
def test_a_value_or_slope_not_finite_ends_the_scan_incomplete(bad: str) -> None:
    """h = 2 − q is finite up to 1.5; past it either h or h' is not: the scan stops there and
    says it is incomplete, rather than reading a root into the non-finite node."""

    def h(q: float) -> tuple[float, float]:
        if q < 1.5:
            return 2 - q, -1.0
        return (math.nan, -1.0) if bad == "value" else (2 - q, math.inf)

    roots, complete = scan(h, 1.0)
    assert roots == [] and complete is False


def test_polish_returns_an_end_only_where_h_is_exactly_zero() -> None:
    def line(q: float) -> tuple[float, float]:
        return 2.0 - q, -1.0

    assert polish(line, 2.0, 3.0, 1e-12) == 2.0  # h(a) = 0
    assert polish(line, 1.0, 2.0, 1e-12) == 2.0  # h(b) = 0
    # h(a) = 1, h(b) = −1: neither end is the root
    assert polish(line, 1.0, 3.0, 1e-12) == pytest.approx(2.0, rel=1e-12)
    assert polish(line, 1.5, 2.5, 1e-12, ha=0.5, hb=-0.5) == pytest.approx(2.0, rel=1e-12)
    with pytest.raises(NoBracket):
        polish(line, 3.0, 4.0, 1e-12)

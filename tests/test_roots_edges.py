"""The fixed-point scan and polish of ``numeric/_roots.py`` on functions with known roots.

h is a polynomial (or a cubic spline of one) written out here, whose roots are known exactly:
the scan must bracket each, polish must land on it, and the refusals (no bracket, a double
root, a lost root, a budget spent) must be the documented exceptions.
"""

from __future__ import annotations

import math

import mpmath
import pytest

from deqrmt.numeric._roots import NoBracket, bracket, locate, polish, refine, scan


def _poly(roots: list[float], sign: float = -1.0):
    """h(q) = sign·Π(q − r), with its derivative: the roots are exactly ``roots``."""

    def h(q):
        v = sign
        d = 0.0 * q
        for i, r in enumerate(roots):
            term = sign
            for j, s in enumerate(roots):
                if j != i:
                    term = term * (q - s)
            d = d + term
            v = v * (q - r)
        return v, d

    return h


def test_scan_finds_a_root_that_sits_on_a_grid_node() -> None:
    """h(q) = −(q − 2): q0 = 1 and the grid ratio 2 put a node exactly on the root, which both
    cells around it see: it is reported once, as the exact point (2, 2), falling through 0."""
    roots, complete = scan(_poly([2.0]), 1.0, ratio=2.0, decades=1)
    assert complete
    assert roots == [(2.0, 2.0, -1)]


def test_scan_root_at_q0_itself() -> None:
    """h(q0) = 0 exactly: the first cell starts on the root; it is reported once, at q0."""
    roots, _ = scan(_poly([1.0]), 1.0, ratio=2.0, decades=1)
    assert roots == [(1.0, 1.0, -1)]


@pytest.mark.parametrize(
    ("roots_in", "on_node"),
    [
        ((1.5, 4.0, 10.0), (4.0, 4.0, 1)),  # a rising root on the node 4
        ((1.5, 3.0, 8.0), (8.0, 8.0, -1)),  # a falling root on the node 8, after two others
    ],
)
def test_scan_root_on_a_node_after_other_roots(roots_in, on_node) -> None:  # type: ignore[no-untyped-def]
    """Three roots on the grid 1, 2, 4, 8, …, one of them on a node: three brackets, each
    root inside its own, the one on the node once and exactly, with its kind (h' there)."""
    roots, complete = scan(_poly(list(roots_in)), 1.0, ratio=2.0, decades=1, cap=64.0)
    assert complete
    assert len(roots) == 3, roots
    assert on_node in roots
    for (a, b, kind), r, want in zip(roots, roots_in, (-1, 1, -1), strict=True):
        assert a <= r <= b and kind == want, roots


def test_scan_finds_a_root_inside_a_cell_that_starts_on_a_root() -> None:
    """Roots 2 (on the node 2), 2.6 and 3.2 (inside the cell [2, 4]): all three, bracketed."""
    roots, _ = scan(_poly([2.0, 2.6, 3.2]), 1.0, ratio=2.0, decades=1, cap=64.0)
    assert len(roots) == 3, roots
    for (a, b, _), r in zip(roots, (2.0, 2.6, 3.2), strict=True):
        assert a <= r <= b


def test_scan_finds_three_close_roots_in_one_cell() -> None:
    """Three simple roots inside one grid cell: the cubic model's turning points split it."""
    h = _poly([1.30, 1.31, 1.32])
    roots, complete = scan(h, 1.0, ratio=2.0, decades=1, cap=4.0)
    assert complete
    found = sorted(r for r in roots)
    assert len(found) == 3
    for (a, b, _), r in zip(found, [1.30, 1.31, 1.32], strict=True):
        assert a <= r <= b


def test_scan_reports_a_touching_root_once_as_neutral() -> None:
    """h(q) = (q − 3)² touches 0 at 3 without changing sign: the cubic model of a quadratic is
    exact, so the split lands on q = 3 itself; one root, kind 0 (F' = 1), not an attracting one."""
    for ratio in (1.3, 1.5, 2**0.5):
        roots, _ = scan(_poly([3.0, 3.0], sign=1.0), 1.0, ratio=ratio, decades=1, cap=10.0)
        assert roots == [(3.0, 3.0, 0)], ratio


def test_scan_stops_when_h_overflows_or_raises() -> None:
    def h(q):
        if q > 5:
            raise ZeroDivisionError("a pole")
        return 1.0, 0.0

    roots, complete = scan(h, 1.0, ratio=2.0)
    assert roots == [] and complete is False

    def h_nan(q):
        return (float("nan"), 0.0) if q > 5 else (1.0, 0.0)

    assert scan(h_nan, 1.0, ratio=2.0) == ([], False)


def test_scan_with_a_tiny_budget_is_incomplete() -> None:
    roots, complete = scan(_poly([1000.0]), 1.0, max_evals=3)
    assert complete is False and roots == []


def test_scan_below_zero_at_q0_is_a_root_at_q0() -> None:
    """h(q0) < 0 (float round-off at a φ ~ 0): q0 is reported as the root."""
    roots, _ = scan(lambda q: (-1e-20, -1.0), 1.0, ratio=2.0, cap=4.0)
    assert roots[0] == (1.0, 1.0, -1)


@pytest.mark.parametrize("root", [2.0, math.pi, 17.25])
def test_polish_lands_on_the_root(root: float) -> None:
    h = _poly([root])
    x = polish(h, 1.0, 40.0, 1e-15)
    assert abs(x - root) <= 4e-15 * root


def test_polish_returns_an_end_that_is_a_root_and_refuses_no_bracket() -> None:
    h = _poly([2.0])
    assert polish(h, 2.0, 5.0, 1e-12) == 2.0
    assert polish(h, 1.0, 2.0, 1e-12) == 2.0
    with pytest.raises(NoBracket):
        polish(h, 3.0, 5.0, 1e-12)


def test_polish_gives_up_when_the_function_never_settles() -> None:
    """A sign change with no root (a jump): at a tolerance below float64's spacing the
    bracket stops shrinking, and the budget of steps runs out."""

    def step(q):
        return (1.0 if q < math.sqrt(2) else -1.0), 0.0

    with pytest.raises(ArithmeticError, match="no convergence"):
        polish(step, 1.0, 2.0, 1e-300)


def test_bracket_widens_until_the_sign_changes_and_gives_up_far_away() -> None:
    h = _poly([2.0])
    assert bracket(h, 2.0) == (2.0, 2.0)
    a, b = bracket(h, 2.0 + 1e-6)
    assert a < 2.0 < b
    with pytest.raises(ArithmeticError, match="lost"):
        bracket(_poly([2.0]), 50.0)


def test_locate_inside_the_cell_and_at_its_ends() -> None:
    h = _poly([2.0])
    assert locate(h, 2.0, 3.0, -1) == (2.0, 2.0, 0.0, 0.0)
    assert locate(h, 1.0, 2.0, -1)[:2] == (2.0, 2.0)
    lo, hi, hlo, hhi = locate(h, 1.0, 3.0, -1)
    assert (lo, hi) == (1.0, 3.0) and hlo > 0 > hhi


@pytest.mark.parametrize(("a", "b"), [(3.0, 3.5), (1.0, 1.5), (5.0, 5.0)])
def test_locate_walks_out_of_the_cell_towards_the_root(a: float, b: float) -> None:
    """The root 2 lies outside the cell; the walk follows the signs to a bracket around it."""
    h = _poly([2.0])
    lo, hi, hlo, hhi = locate(h, a, b, -1, floor=0.0)
    assert lo <= 2.0 <= hi
    assert (hlo > 0) != (hhi > 0) or hlo == hhi == 0


def test_locate_lands_exactly_on_a_root_while_walking() -> None:
    h = _poly([2.0])
    assert locate(h, 3.0, 4.0, -1) == (2.0, 2.0, 0.0, 0.0)  # steps of 1 from 3 reach 2


def test_locate_refuses_when_no_sign_change_is_reachable() -> None:
    h = _poly([2.0])
    with pytest.raises(ArithmeticError):
        locate(h, 0.0, 0.0, -1)  # a zero-width cell at 0: no step to take
    with pytest.raises(ArithmeticError):
        locate(lambda q: (1.0, 0.0), 1.0, 2.0, -1, max_evals=5)
    with pytest.raises(ArithmeticError):
        locate(lambda q: (-1.0, 0.0), 1.0, 2.0, -1, floor=0.999999)  # no room above the floor


def test_refine_polishes_in_another_number_type() -> None:
    """Float stage, then mpmath at 50 digits: the root √2 of 2 − q² to 1e-40 relative."""

    def h(q):
        return 2 - q * q, -2 * q

    with mpmath.workdps(50):
        q = refine(h, h, (1.0, 2.0, -1), mpmath.mpf, mpmath.mpf(10) ** -40)
        assert abs(q - mpmath.sqrt(2)) < mpmath.mpf(10) ** -39


def test_refine_starts_from_an_exact_grid_root_and_refuses_a_double_root() -> None:
    def h(q):
        return 2.0 - q, -1.0

    assert refine(h, h, (2.0, 2.0, -1), float, 1e-15) == 2.0
    with pytest.raises(ValueError, match="double root"):
        refine(h, h, (2.0, 2.0, 0), float, 1e-15)


def test_refine_searches_again_where_float_and_working_h_disagree() -> None:
    """The float h has its root at 2, the working one at 2.5: locate finds the latter."""
    q = refine(_poly([2.0]), _poly([2.5]), (1.5, 2.2, -1), float, 1e-14, floor=1.0)
    assert abs(q - 2.5) < 1e-12


def test_scan_says_incomplete_where_h_vanishes_beside_its_zero() -> None:
    """h = 0 on all of [2, 2.1] (a flat stretch, not isolated roots), then negative: the zero on
    node 2 is recorded, but h vanishes just past it as well, so the scan cannot resolve the
    cell and must not claim completeness."""

    def h(q):
        if q < 2:
            return 2.0 - q, -1.0
        if q <= 2.1:
            return 0.0, 0.0
        return 2.1 - q, -1.0

    roots, complete = scan(h, 1.0, ratio=2.0, decades=1, cap=64.0)
    assert roots[0] == (2.0, 2.0, 0)
    assert not complete


def test_scan_past_a_zero_on_a_node_finds_a_simple_root_in_the_same_cell() -> None:
    """h = (q − 2)(q − 3): roots 2 (on the node 2, h falls: attracting) and 3 (inside the cell
    [2, 4], h rises: repelling), each bracketed, and the scan complete."""
    roots, complete = scan(_poly([2.0, 3.0], sign=1.0), 1.0, ratio=2.0, decades=1, cap=64.0)
    assert complete
    assert len(roots) == 2, roots
    (a0, b0, k0), (a1, b1, k1) = roots
    assert a0 == b0 == 2.0 and k0 == -1
    assert 2.0 < a1 <= 3.0 <= b1 and k1 == 1


@pytest.mark.parametrize("budget", range(1, 16))
def test_scan_claims_complete_only_with_every_root(budget: int) -> None:
    """Whatever the evaluation budget, a scan that says it is complete has bracketed both roots of
    h = (q − 2)(q − 3), the first of them on the node 2; a budget spent at that zero (3
    evaluations) leaves the rest of its cell unlooked-at, which the scan must admit."""
    roots, complete = scan(
        _poly([2.0, 3.0], sign=1.0), 1.0, ratio=2.0, decades=1, cap=64.0, max_evals=budget
    )
    if complete:
        assert len(roots) == 2 and roots[0] == (2.0, 2.0, -1), roots
        assert roots[1][0] <= 3.0 <= roots[1][1] and roots[1][2] == 1
    if budget == 3:
        assert roots == [(2.0, 2.0, -1)] and not complete

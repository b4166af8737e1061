"""The one τ* solver (issue 8): derived map, every root found, any contraction rate below 1."""

from __future__ import annotations

import math
import re
from fractions import Fraction
from pathlib import Path

import mpmath
import pytest
import sympy as sp
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

import deqrmt.testing as dt
from deqrmt import ContractionError
from deqrmt.numeric import DEQProblem, deq_coefficients
from deqrmt.numeric._enclose import linear_envelope
from deqrmt.numeric._fixed_point import root_free_above, scan_fixed_points, variance_map
from deqrmt.numeric._roots import polish, scan
from deqrmt.symbolic import SIGMA_A2, SIGMA_B2, TAU0, X, derive_fixed_point, get_activation
from helpers import assert_close, to_mpf

SRC = Path(__file__).resolve().parent.parent / "src" / "deqrmt"


# --- the map is derived, and written once ------------------------------------------------------


def test_derived_map_matches_the_hand_derivation():
    """By hand: F(q) = σ_a² Var[φ(√q ξ)] + σ_b²τ0² = σ_a²(E[φ²] − E[φ]²) + σ_b²τ0², and with
    d/dq E[g(√q ξ)] = E[g'']/2: F'(q) = σ_a²(E[(φ²)'']/2 − E[φ]E[φ'']).  Uncentered: no E[φ]²."""
    f = derive_fixed_point(center=True)
    mu0, mu2, sq, sq2 = f.m.mu[0], f.m.mu[2], f.m.sq, f.m.sq2
    assert sp.expand(f.F - (SIGMA_A2 * (sq - mu0**2) + SIGMA_B2 * TAU0**2)) == 0
    assert sp.expand(f.dF - SIGMA_A2 * (sq2 / 2 - mu0 * mu2)) == 0
    assert f.center == mu0
    assert sp.expand(f.centered[sq] - (sq - mu0**2)) == 0
    assert sp.expand(f.centered[sq2] - (sq2 - 2 * mu0 * mu2)) == 0
    u = derive_fixed_point(center=False)
    assert sp.expand(u.F - (SIGMA_A2 * sq + SIGMA_B2 * TAU0**2)) == 0
    assert sp.expand(u.dF - SIGMA_A2 * sq2 / 2) == 0


def test_the_fixed_point_map_is_written_once():
    """No module types F or the centering identities again (issue 8 found 11 copies)."""
    typed = re.compile(r"""sq2"?\]?\s*-\s*2\s*\*\s*c\b|\bsq"?\]?\s*-\s*c\s*\*\s*c\b""")
    hits = [
        f"{p.relative_to(SRC)}:{i}"
        for p in SRC.rglob("*.py")
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if typed.search(line)
    ]
    assert hits == []


# --- the root finder on functions with known roots ---------------------------------------------


def _poly_h(roots: list[float]):
    """h(q) = (−1)^n Π(q − r): positive below the first root, like F(q) − q."""

    def h(q: float) -> tuple[float, float]:
        v, d = float((-1) ** len(roots)), 0.0
        for r in roots:
            d = d * (q - r) + v
            v = v * (q - r)
        return v, d

    return h


@settings(max_examples=200, derandomize=True)
@given(
    first=st.floats(0.2, 50),
    gaps=st.lists(st.floats(1.0001, 3.0), min_size=1, max_size=3),
)
@example(first=1.0, gaps=[1.0001])
@example(first=1.0, gaps=[1.0001, 2.0])
def test_scan_finds_every_root_however_close(first, gaps):
    """A pair of roots however close is found; three roots inside one grid cell (a factor
    √2 in q) may show as one crossing, so the triples here are spread wider than a cell."""
    assume(all(a * b >= 1.5 for a, b in zip(gaps, gaps[1:], strict=False)))
    roots = [first]
    for g in gaps:
        roots.append(roots[-1] * g)
    found, complete = scan(_poly_h(roots), first / 3)
    assert complete
    crossings = [(a, b) for a, b, kind in found if a != b]
    assert len(crossings) == len(roots), (roots, found)
    for r, (a, b) in zip(roots, crossings, strict=True):
        assert a <= r <= b
    assert [k for _, _, k in found] == [(-1) ** (i + 1) for i in range(len(roots))]


@settings(max_examples=100, derandomize=True)
@given(rate=st.floats(0.0, 0.999999), q_star=st.floats(0.1, 10))
@example(rate=0.988, q_star=1.93)  # issue 8: F' = 0.988 was refused
@example(rate=0.999999, q_star=1.0)
def test_polish_converges_for_every_contraction_rate(rate, q_star):
    """F(q) = q* + rate·(q − q*): h = F − q has slope rate − 1, however flat."""
    h = lambda q: ((rate - 1) * (q - q_star), rate - 1)  # noqa: E731
    (a, b, kind), *_ = scan(h, q_star / 5)[0]
    assert kind == -1
    assert abs(polish(h, a, b, 1e-14) - q_star) <= 1e-12 * q_star


def test_polish_budget_comes_from_the_precision():
    ctx = mpmath.MPContext()
    ctx.dps = 200
    calls = [0]

    def h(q):
        calls[0] += 1
        return q * q - 2, 2 * q

    root = polish(h, ctx.mpf(1), ctx.mpf(2), ctx.mpf(10) ** -195)
    assert abs(root - ctx.sqrt(2)) < ctx.mpf(10) ** -190
    assert calls[0] <= 2 * math.log2(10**195) + 10


# --- the engine on quadratics near their double root ---------------------------------------------


def _quadratic_setting(s: Fraction, rho: Fraction) -> tuple[str, Fraction, Fraction, Fraction]:
    """φ = x + x²/4: Var[φ(√q ξ)] = q + q²/8, so F(q) = q ⇔ (s/8)q² − (1 − s)q + σ_b² = 0.
    Choosing the roots q₁ and q₂ = ρ q₁: q₁ = (1 − s)/((s/8)(1 + ρ)), σ_b² = (s/8) ρ q₁²."""
    a = s / 8
    q1 = (1 - s) / (a * (1 + rho))
    return "x + x**2/4", q1, rho * q1, a * rho * q1 * q1


@settings(max_examples=500, derandomize=True, deadline=None)
@given(
    s=st.integers(5, 80).map(lambda k: Fraction(k, 100)),
    r=st.integers(10, 500).map(lambda k: Fraction(1000 + k, 1000)),  # τ₂/τ₁ = 1.01 … 1.5
)
@example(s=Fraction(666, 1000), r=Fraction(101, 100))
def test_near_double_roots_report_both(s, r):
    spec, q1, q2, sb2 = _quadratic_setting(s, r * r)
    res = deq_coefficients(spec, s, sb2, 1, dps=15)
    with mpmath.workdps(30):
        assert_close(res.tau_star.value, mpmath.sqrt(to_mpf(q1)), 14, what="tau_star")
        (other,) = res.other_fixed_points
        assert_close(mpmath.mpf(other.text), mpmath.sqrt(to_mpf(q2)), other.digits - 1)
    assert "repelling" in res.notes[0]


def test_issue_8_settings():
    """The false refusal and the missed root of issue 8, with hand closed forms."""
    res = deq_coefficients("x**2/4+x", "0.6664", "0.3336", dps=20)
    s, b = Fraction("0.6664"), Fraction("0.3336")
    # (s/8) q² − (1 − s) q + σ_b² = 0, smaller root
    a = s / 8
    with mpmath.workdps(40):
        d = mpmath.sqrt(to_mpf((1 - s) ** 2 - 4 * a * b))
        q1 = (to_mpf(1 - s) - d) / (2 * to_mpf(a))
        assert_close(res.tau_star.value, mpmath.sqrt(q1), 19)
    assert res.tau_star.text.startswith("1.3903465344362886")  # the issue: 1.39034653443629
    quad = deq_coefficients("x**2/4+x", "0.666", dps=20)
    assert quad.tau_star.text.startswith("1.37704")
    assert quad.other_fixed_points[0].text.startswith("1.454568")  # the issue: 1.45457


def test_no_fixed_point_is_refused_with_the_argument_name():
    with pytest.raises(ContractionError, match="sigma_a2"):
        deq_coefficients("x + x**2", "0.5", "0.5", dps=15)


def test_high_precision_budget_does_not_overflow_a_float():
    """The bisection budget at 505 digits once went through float('inf') (a bug the sweep's
    engineer met); both paths must reach 500 digits."""
    for certify in (False, True):
        res = deq_coefficients("relu", dps=500, certify=certify)
        assert res.alpha_1.digits == 500


def test_a_root_exactly_at_the_first_iterate():
    """relu(x − 2) at τ = √q0 ≈ 0.16 is 0 to float64, so F(q0) − q0 = 0 exactly at the scan's
    first node (found by deqrmt.testing's property run): τ* = √q0 = √(0.1·0.25), F' ≈ 0."""
    for certify in (False, True):
        res = deq_coefficients("relu(x-2)", "0.2", "0.1", "0.5", dps=20, certify=certify)
        with mpmath.workdps(30):
            assert_close(res.tau_star.value, mpmath.sqrt(mpmath.mpf(1) / 40), 19)


def test_a_root_at_the_first_iterate_below_float_round_off():
    """0.1·max(0.2x − 0.3, 0) is ~0 at τ = √q0 ≈ 0.22, so F(q0) − q0 came out −7e-18 in
    float64 and the scan saw no sign change (found by the 200-example user test)."""
    res = deq_coefficients("0.1*max(0.2*x - 0.3, 0)", "0.0225", "0.1", "0.7", dps=20)
    with mpmath.workdps(40):
        assert_close(res.tau_star.value**2, mpmath.mpf(49) / 1000, 15)
        assert res.tau_star.value**2 >= mpmath.mpf(49) / 1000  # F(q) ≥ q0: τ*² never below


# --- the scan's proved end (issue 11: the search for other fixed points made cheap) --------------

ENVELOPED = ["tanh", "erf", "sin", "relu", "leaky_relu(0.1)", "silu", "gelu", "elu", "softplus"]


@pytest.mark.parametrize("name", [*ENVELOPED, "sigmoid", "hard_tanh", "relu(x-2)", "x*tanh(x)"])
def test_linear_envelope_bounds_phi(name):
    """|φ(x)| ≤ A + B|x| checked pointwise (SymPy's own evaluation of φ at 40 digits, a path
    independent of the interval bounds) on a grid reaching far beyond every kink."""
    act = get_activation(name)
    # |x| ≤ 25 in steps of 1/8, then (3/2)^k from 26 to ~1.2·10^5, all exact
    points = [Fraction(k, 8) for k in range(-200, 201)]
    points += [s * Fraction(3, 2) ** k for k in range(9, 30) for s in (1, -1)]
    _assert_enveloped(act, linear_envelope(act), points)


def _assert_enveloped(act, envelope, points):
    """|φ(x)| ≤ A + B_±|x| at every point, φ evaluated by SymPy's lambdify at 40 digits."""
    a, b_plus, b_minus = (mpmath.mpf(v.upper().str(30, radius=False)) for v in envelope)
    with mpmath.workdps(40):
        phi = sp.lambdify(X, act.expr, "mpmath")
        for p in points:
            x = to_mpf(p)
            assert abs(phi(x)) <= a + (b_plus if x >= 0 else b_minus) * abs(x), (act.name, p)


def test_no_envelope_where_phi_outgrows_a_line():
    for name in ("x**2/4+x", "exp(x)", "x*abs(x)"):
        assert linear_envelope(get_activation(name)) is None


@pytest.mark.parametrize("sigma_a2", ["0.2", "0.5"])
@pytest.mark.parametrize("name", ENVELOPED)
def test_no_fixed_point_above_the_proved_end(name, sigma_a2):
    """F(q) < q above root_free_above, by the engine's own F at 20 digits on a wide grid."""
    problem = DEQProblem.make(name, sigma_a2, dps=20)
    limit = root_free_above(problem)
    assert limit is not None
    h = variance_map(problem).h(mpmath.mp)
    with mpmath.workdps(20):
        for factor in ("1", "1.01", "1.5", "3", "10", "100", "1000"):
            assert h(mpmath.mpf(limit) * mpmath.mpf(factor))[0] < 0, (name, factor)
    scan = scan_fixed_points(problem)
    assert scan.complete and scan.whole and len(scan.roots) == 1


def test_proved_end_of_a_bounded_phi_is_the_closed_form():
    """|tanh| ≤ 1 (A = 1, B = 0): F(q) ≤ σ_a² + σ_b²τ0², so the end is that, to round-off."""
    problem = DEQProblem.make("tanh", "0.3", "0.5", "2", dps=20)
    assert root_free_above(problem) == pytest.approx(0.3 + 0.5 * 4, rel=1e-9)
    assert root_free_above(problem) >= 0.3 + 0.5 * 4


@pytest.mark.parametrize(
    ("name", "slope", "left"),
    [("softplus", 1, 0), ("log(cosh(x))", 1, 1), ("x/(1+abs(x))", 0.5, 0.5)],
)
def test_envelope_slope_of_logs_is_exact(name, slope, left):
    """log(1 + e^x) ≤ log 2 + x: the slope is 1, where the growth bound's c(1 + x) gave
    1 + log 2, so σ_a² ≥ 0.35 proved no end and the scan ran to overflow (1 s, and a note)."""
    _, b_plus, b_minus = linear_envelope(get_activation(name))
    assert b_plus.contains(slope) and b_plus.rad() == 0
    assert b_minus == left  # softplus flattens on the left


@pytest.mark.parametrize(
    ("name", "sigma_a2"),
    [("relu(x-1)*tanh(x)+softplus(x)", "0.35"), ("sqrt(2)*relu(x)", "0.8"), ("2*relu(x)", "0.45")],
)
def test_one_sided_slopes_end_the_scan(name, sigma_a2):
    """Slope 2 on the right, 0 on the left: σ_a²(B₊² + B₋²)/2 < 1 where the symmetric bound
    σ_a²·4 < 1 failed, and the scan ran to overflow with a note.  For √2·ReLU the condition
    is σ_a² < 1, exactly the contraction condition."""
    problem = DEQProblem.make(name, sigma_a2, dps=20)
    limit = root_free_above(problem)
    assert limit is not None
    h = variance_map(problem).h(mpmath.mp)
    with mpmath.workdps(20):
        for factor in ("1", "1.5", "10", "1000"):
            assert h(mpmath.mpf(limit) * mpmath.mpf(factor))[0] < 0, (name, factor)
    assert scan_fixed_points(problem).whole
    assert not any("stopped early" in n for n in deq_coefficients(name, sigma_a2, dps=20).notes)


@pytest.mark.parametrize("name", ["softplus", "log(cosh(x))"])
def test_scan_of_log_activations_is_complete(name):
    res = deq_coefficients(name, "0.45", dps=20)
    assert not any("stopped early" in n for n in res.notes)
    assert scan_fixed_points(DEQProblem.make(name, "0.45", dps=20)).whole


def test_silu_scan_is_complete():
    """silu's scan to 10⁴·q* overflowed in float64 (incomplete, with a note); the proved end
    now stops it long before."""
    res = deq_coefficients("silu", "0.2", dps=20, certify=False)
    assert not any("stopped early" in n for n in res.notes)


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_linear_envelope_holds_for_random_activations(data):
    """The same pointwise check on random expressions of the grammar (kinks, compositions)."""
    act = data.draw(dt.activations())
    envelope = linear_envelope(act)
    assume(envelope is not None)
    # |x| ≤ 10 in steps of 1/4, then 2^11 … 2^30
    points = [Fraction(k, 4) for k in range(-40, 41)]
    points += [s * Fraction(2) ** k for k in range(11, 31) for s in (1, -1)]
    _assert_enveloped(act, envelope, points)

"""Edges of ``deqrmt.check``: the verdicts for enclosures and engine results built by hand.

Each item is decided from numbers written here (an enclosure of L₁, a missing fixed point), so
the expected verdict follows from the assumption's inequality by hand, not from the engine.
"""

from __future__ import annotations

import importlib.util
from fractions import Fraction

import mpmath
import pytest
import sympy as sp

from deqrmt._errors import ActivationError, InvalidArgument, MissingExtra
from deqrmt.check import check_activation
from deqrmt.check._assumptions import (
    _beyond_item,
    _center_ball,
    _centred_item,
    _contraction_items,
    lipschitz_item,
    variance_lipschitz_item,
)
from deqrmt.check._consistency import consistency_items, guard
from deqrmt.check._engine import Solved
from deqrmt.check._monte_carlo import _decimal_text, monte_carlo_item
from deqrmt.check._report import ASSUMPTION_KEYS, FAIL, NA, PASS, CheckItem
from deqrmt.numeric import DEQProblem, LipschitzBound


@pytest.fixture(scope="module")
def problem() -> DEQProblem:
    return DEQProblem.make("tanh", "1/4", None, 1, 30)


def _no_fixed_point(problem: DEQProblem) -> Solved:
    return Solved(problem, None, None, None, None, "no fixed point: the map diverges")


def test_lipschitz_undecided_shows_the_lower_bound() -> None:
    b = LipschitzBound("undecided", mpmath.mpf(2), mpmath.inf, "samples", "no rule applies")
    item = lipschitz_item(b)
    assert item.status == FAIL
    assert item.numbers == {"L₁": "?", "L₁ ≥": "2.0"}
    assert item.explanation == "no rule applies (samples)"


@pytest.mark.parametrize(
    ("lo", "hi", "status", "why"),
    [
        # σ_a² = 1/4: 4·σ_a²·L² = L², so the verdict is L < 1, by hand
        ("0.5", "0.75", PASS, "proved with the upper bound"),
        ("0.875", "1.125", FAIL, "undecided: σ_a² lies inside"),
        ("1.0", "1.5", FAIL, "fails already for the lower bound"),
    ],
)
def test_variance_lipschitz_from_an_enclosure(lo: str, hi: str, status: str, why: str) -> None:
    b = LipschitzBound("bounded", mpmath.mpf(lo), mpmath.mpf(hi), "hand")
    item = variance_lipschitz_item(sp.Rational(1, 4), b)
    assert item.status == status and why in item.explanation
    assert item.numbers["σ_a²"] == "1/4"


def test_variance_lipschitz_with_a_zero_lower_bound() -> None:
    # L₁ ∈ [0, 1/2]: 1/(4L₁²) ∈ [1, ∞): only the lower end is printed
    b = LipschitzBound("bounded", mpmath.mpf(0), mpmath.mpf("0.5"), "hand")
    item = variance_lipschitz_item(sp.Rational(1, 2), b)
    assert item.status == PASS  # 4·(1/2)·(1/4) = 1/2 < 1


def test_no_fixed_point_items(problem: DEQProblem) -> None:
    solved = _no_fixed_point(problem)
    centred = _centred_item(solved)
    assert centred.status == NA and "no fixed point τ*: no fixed point" in centred.explanation
    assert _center_ball(solved) == (0, 0)
    ck, ntk = _contraction_items(problem, solved)
    assert (ck.key, ck.status, ck.explanation) == (
        "contraction_ck",
        FAIL,
        "no fixed point: the map diverges",
    )
    assert (ntk.key, ntk.status) == ("contraction_ntk", FAIL)


def _items(failing: tuple[str, ...], ck: str, ntk: str) -> list[CheckItem]:
    items = [
        CheckItem(k, k.upper(), FAIL if k in failing else PASS, {}, "", "assumption")
        for k in ASSUMPTION_KEYS
    ]
    items.append(CheckItem("contraction_ck", "CK", ck, {}, "", "assumption"))
    items.append(CheckItem("contraction_ntk", "NTK", ntk, {}, "", "assumption"))
    return items


def test_beyond_the_assumption() -> None:
    holds = _beyond_item(_items((), PASS, PASS))
    assert holds.status == NA and "nothing beyond it is used" in holds.explanation
    ck_only = _beyond_item(_items(("lipschitz",), PASS, FAIL))
    assert ck_only.status == PASS and "the CK (not the NTK)" in ck_only.explanation
    assert ck_only.numbers == {"fails": "LIPSCHITZ"}
    nothing = _beyond_item(_items(("lipschitz", "moments"), FAIL, FAIL))
    assert nothing.status == NA and "so does the contraction" in nothing.explanation
    assert nothing.numbers == {"fails": "LIPSCHITZ; MOMENTS"}


def test_guard_turns_an_engine_refusal_into_a_failed_item() -> None:
    def refuse() -> CheckItem:
        raise ActivationError("φ has a pole")

    item = guard("digits", refuse)
    assert item.status == FAIL and item.explanation == "the engine refused: φ has a pole"


def test_consistency_items_refuse_unknown_checks(problem: DEQProblem) -> None:
    with pytest.raises(InvalidArgument, match="unknown bogus"):
        consistency_items(problem, ["digits", "bogus"])


def test_consistency_items_when_the_engine_refuses() -> None:
    sign = DEQProblem.make("sign(x)", "1/4", None, 1, 30)
    items = consistency_items(sign, ["digits", "stein"])
    assert [(i.key, i.status) for i in items] == [("digits", FAIL), ("stein", FAIL)]
    assert all(i.explanation.startswith("the engine refused: ") for i in items)


@pytest.mark.parametrize(
    ("r", "text"),
    [
        (sp.Rational(1, 5), "0.2"),
        (sp.Rational(3, 8), "0.375"),
        (sp.Rational(1, 3), "0.333333333333333333333333333333"),  # 30 digits, by hand
        (sp.Rational(2, 3), "0.666666666666666666666666666667"),
    ],
)
def test_decimal_text(r: sp.Rational, text: str) -> None:
    assert _decimal_text(r) == text
    assert abs(Fraction(text) - Fraction(int(r.p), int(r.q))) <= Fraction(1, 10**30)


def test_monte_carlo_without_torch(problem: DEQProblem, monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *a: object) -> object:
        return None if name == "torch" else real(name, *a)  # type: ignore[arg-type]

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(MissingExtra, match=r"pip install 'deqrmt\[validate\]'"):
        monte_carlo_item(problem)


def test_monte_carlo_is_not_applicable_without_coefficients() -> None:
    r = check_activation("sign(x)", mc=True)
    item = r["monte_carlo"]
    assert item.status == NA and item.explanation.startswith("no coefficients: ")


def test_stein_ball_of_an_exact_number() -> None:
    from flint import arb

    from deqrmt.check._stein import _ball

    a = arb(3)
    assert _ball(a) is a
    b = _ball(mpmath.mpf("0.75"))  # a binary number: the ball is exact
    assert b.rad() == 0 and float(b.mid()) == 0.75


def _ns(**kw: object) -> object:
    import types

    return types.SimpleNamespace(**kw)


def test_digits_item_from_hand_made_values() -> None:
    from deqrmt.check._consistency import digits_item

    one = _ns(value=mpmath.mpf(1), digits=30, text="1.0")
    coarse = _ns(dps=30, values={"tau_star": one})
    missing = digits_item(coarse, _ns(dps=60, values={}))  # type: ignore[arg-type]
    assert missing.status == FAIL and missing.explanation == "tau_star missing at dps 60"
    assert missing.numbers == {"least agreement": "exact"}
    # 1 vs 1.001: |a − b|/max = 0.001/1.001, so floor(−log10) = 3 digits agree, not 29
    off = _ns(dps=60, values={"tau_star": _ns(value=mpmath.mpf("1.001"))})
    item = digits_item(coarse, off)  # type: ignore[arg-type]
    assert item.status == FAIL and "(3 digits)" in item.explanation
    assert item.numbers == {"least agreement": "3 digits (tau_star)"}
    same = digits_item(coarse, _ns(dps=60, values={"tau_star": one}))  # type: ignore[arg-type]
    assert same.status == PASS and same.numbers == {"least agreement": "exact"}


def test_codegen_item_when_the_generated_module_fails(problem: DEQProblem) -> None:
    from deqrmt.check._consistency import codegen_item
    from deqrmt.numeric import deq_coefficients

    c = deq_coefficients(problem)
    source = "def coefficients(*args):\n    raise ZeroDivisionError('a pole')\n"
    item = codegen_item(c, source=source)
    assert item.status == FAIL and item.explanation == "the generated module failed: a pole"


def test_no_fixed_point_at_all() -> None:
    """φ = exp: E[φ(τξ)²] = e^{2τ²} outgrows any τ², so τ² ← σ_a² Var φ + σ_b² has no fixed
    point (by hand: the iteration from 0 increases without bound), and E[(φ²)''] = 4e^{2τ²}
    is unbounded in τ, so σ_a² < 2/sup is no bound the enclosure can prove."""
    r = check_activation("exp(x)", sigma_a2="1/5")
    assert r["centred"].status == NA and "no fixed point" in r["centred"].explanation
    assert r["contraction_ck"].status == FAIL and "diverges" in r["contraction_ck"].explanation
    curvature = r["variance_curvature"]
    assert curvature.status == FAIL and curvature.explanation.startswith("undecided: ")
    assert curvature.numbers["sup E[(φ_c²)'']"].endswith(", ∞]")
    assert r["monte_carlo"].status == NA and not r.passed


def _refuse(*args: object, **kw: object) -> object:
    from deqrmt.numeric import NotEnclosable

    raise NotEnclosable("no enclosure rule (test)")


_Y = sp.Symbol("y")


def _gauss_mean(expr: sp.Expr) -> mpmath.mpf:
    """E[expr(ξ)], ξ ~ N(0, 1), by mpmath's quadrature (independent of the engine)."""
    f = sp.lambdify(_Y, expr, "mpmath")
    return mpmath.quad(lambda v: f(v) * mpmath.npdf(v), [-mpmath.inf, 0, mpmath.inf])


def test_moments_fall_back_to_the_engines_quadrature(
    problem: DEQProblem, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where Arb has no rule, the item says the numbers are the engine's quadrature, not a
    proof; the reference is mpmath's quadrature of SymPy's own derivatives of tanh."""
    from deqrmt.check import _assumptions

    monkeypatch.setattr(_assumptions, "enclose_moments", _refuse)
    bound = LipschitzBound("bounded", mpmath.mpf(1), mpmath.mpf(1), "hand")
    item = _assumptions._moments_item(problem.activation, _no_fixed_point(problem), bound)
    assert item.status == PASS and "the engine's quadrature (not a proof)" in item.explanation
    assert list(item.numbers) == ["max_k |E[φ^(k)]| at τ = 1"]  # no τ*: τ = 1 only
    with mpmath.workdps(30):
        want = max(abs(_gauss_mean(sp.diff(sp.tanh(_Y), _Y, k))) for k in range(5))
    assert float(item.numbers["max_k |E[φ^(k)]| at τ = 1"]) == pytest.approx(float(want), 1e-5)


def test_moments_that_are_not_finite_fail(
    problem: DEQProblem, monkeypatch: pytest.MonkeyPatch
) -> None:
    from deqrmt.check import _assumptions

    class _Value:
        value = mpmath.inf

    monkeypatch.setattr(_assumptions, "enclose_moments", _refuse)
    monkeypatch.setattr(
        _assumptions,
        "evaluator_for",
        lambda act: lambda ctx, t, names: dict.fromkeys(names, _Value()),
    )
    bound = LipschitzBound("bounded", mpmath.mpf(1), mpmath.mpf(1), "hand")
    item = _assumptions._moments_item(problem.activation, _no_fixed_point(problem), bound)
    assert item.status == FAIL and item.explanation == "a moment at τ = 1 is not finite"

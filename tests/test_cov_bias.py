"""Edges of the two-parameter implicit-bias step (``_bias_conserved``): the tidy form of a
conserved quantity, the sign relations, and the refusals.

References by hand: w − w²/2 − u²/2 = (1 − u² − (w − 1)²)/2, so its tidy form is
u² + (w − 1)²; a quantity conserved by ∇c ⊥ ∇g is checked with our own derivatives.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import pytest
import sympy as sp

from deqrmt._errors import BudgetExceeded, DerivationError, InvalidArgument
from deqrmt.symbolic._bias import derive_bias, parse_init, parse_parametrization
from deqrmt.symbolic._bias_conserved import (
    _first_integral,
    _normalise_invariant,
    _sign_relation,
    _two_parameters,
)

u, w = sp.symbols("u w", real=True)
THETA = (u, w)


def _conserved(c: sp.Expr, g: sp.Expr) -> bool:
    return sp.simplify(sp.diff(c, u) * sp.diff(g, u) + sp.diff(c, w) * sp.diff(g, w)) == 0


def test_normalise_completes_squares_and_fixes_the_sign() -> None:
    assert _normalise_invariant(w - w**2 / 2 - u**2 / 2, THETA) == u**2 + (w - 1) ** 2
    # a cross term: no square is completed, the constant still goes
    assert _normalise_invariant(-(u**2) - u * w + 5, THETA) == u**2 + u * w
    # not a polynomial: only the constant goes
    assert _normalise_invariant(sp.exp(u) * w + 3, THETA) == sp.exp(u) * w


def test_first_integral_when_g_ignores_a_parameter() -> None:
    # g = w²: u never moves, so u itself is conserved
    assert _first_integral(w**2, THETA) == u
    assert _first_integral(sp.Integer(5), THETA) == u  # a constant g: nothing moves at all
    c = _first_integral(u / (1 - w), THETA)
    assert _conserved(c, u / (1 - w))


def test_first_integral_refuses_a_large_pde() -> None:
    g = sum(u**k * w ** (k + 1) / (k + 1) for k in range(1, 16))
    with pytest.raises(DerivationError, match="too large to attempt"):
        _first_integral(g, THETA)


def test_transcendental_conserved_quantity_is_refused() -> None:
    # g = u + w²: dw/du = g_w/g_u = 2w, so c = log(w)/2 − u (or w·e^(−2u)): not algebraic
    c = _first_integral(u + w**2, THETA)
    assert _conserved(c, u + w**2) and c.has(sp.log, sp.exp)
    with pytest.raises(DerivationError, match="is not algebraic"):
        _two_parameters(u + w**2, THETA, (sp.Rational(1, 2), sp.Rational(1, 2)), sp.S.One)


@pytest.mark.parametrize(
    ("base", "positive", "relation"),
    [
        (1 - w, True, w < 1),
        (w - 1, False, w < 1),
        (2 * w + 1, True, w > sp.Rational(-1, 2)),
        (1 - 2 * u, False, u > sp.Rational(1, 2)),
        (u**2 - w, True, u**2 - w > 0),  # not linear in one symbol: kept as it is
        (u - w, False, u - w < 0),
    ],
)
def test_sign_relation(base: sp.Expr, positive: bool, relation: sp.Basic) -> None:
    assert _sign_relation(base, positive) == relation


# --- the public entry and its records ------------------------------------------------------------


@pytest.fixture(scope="module")
def deq():  # type: ignore[no-untyped-def]
    return derive_bias("1/(1-w)")


def test_record_fields_go_together(deq) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidArgument, match="one initial value each"):
        dataclasses.replace(deq, init=(sp.Integer(1), sp.Integer(2)))
    with pytest.raises(InvalidArgument, match="exactly for two parameters"):
        dataclasses.replace(deq, conserved=w)
    with pytest.raises(InvalidArgument, match="go together"):
        dataclasses.replace(deq, conserved_symbol=sp.Symbol("c"))
    with pytest.raises(InvalidArgument, match=r"h depends on \['z'\], not on β alone"):
        dataclasses.replace(deq, h=deq.h + sp.Symbol("z"))


@pytest.mark.parametrize(
    ("expression", "parameters", "why"),
    [
        (u * w, ["u"], "must name the free symbols"),
        (2 * sp.Symbol("w"), None, "must be real symbols"),
        (3.5, None, "neither text nor a SymPy expression"),
        (sum(w**k / k for k in range(1, 30)), None, "is too large"),
    ],
)
def test_derive_bias_refuses_sympy_input(expression, parameters, why) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidArgument, match=why):
        derive_bias(expression, parameters)


def test_derive_bias_names_what_is_supported() -> None:
    with pytest.raises(DerivationError, match=r"is not algebraic.*\(.*supported"):
        derive_bias("u + w**2", init="1/2")


def test_parse_input_edges() -> None:
    with pytest.raises(InvalidArgument, match=r"does not depend on \['u'\]"):
        parse_parametrization("w**2", ["w", "u"])
    with pytest.raises(BudgetExceeded, match="has too many digits"):
        parse_init(Fraction(1, 3**200), 1)
    assert parse_init(2, 1) == (2,)
    assert parse_init((1, sp.Rational(1, 2)), 2) == (1, sp.Rational(1, 2))
    assert parse_init(Fraction(3, 4), 2) == (sp.Rational(3, 4), sp.Rational(3, 4))


def test_no_conserved_quantity_is_a_named_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # g = uw(u − w): b/a = (u² − 2uw)/(2uw − w²) does not separate, and SymPy's pdsolve fails
    # with an IndexError of its own (at 3.8 M calls), which was a raw exception of derive_bias
    def pdsolve(*args: object, **kw: object) -> object:
        raise IndexError("list index out of range")

    monkeypatch.setattr(sp, "pdsolve", pdsolve)
    with pytest.raises(DerivationError, match="no conserved quantity found"):
        _first_integral(u * w * (u - w), THETA)


def test_pdsolve_has_a_call_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    # uw² + w: dsolve's Lie-group heuristics run for minutes; over the budget there is no
    # candidate and the error is named (the real budget is 6 M calls; here 50 k, to be quick)
    from deqrmt.symbolic import _bias_conserved

    monkeypatch.setattr(_bias_conserved, "SYMPY_PDSOLVE_CALLS", 50_000)
    with pytest.raises(DerivationError, match="no conserved quantity found"):
        _first_integral(u * w**2 + w, THETA)


def test_real_logs() -> None:
    from deqrmt.symbolic._bias_potential import _real_logs

    b = sp.Symbol("b", real=True)
    # β − 1 < 0 on (−1, 1): log(β − 1) = log(1 − β) + iπ, and the constant iπ is dropped
    assert _real_logs(sp.log(b - 1) + b, b, sp.Interval.open(-1, 1)) == sp.log(1 - b) + b
    assert _real_logs(sp.log(b + 2), b, sp.Interval.open(-1, 1)) == sp.log(b + 2)  # positive
    assert _real_logs(sp.log(b - 1), b, sp.FiniteSet(0)) == sp.log(b - 1)  # no interval


def test_the_system_solve_has_a_call_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    # β = uw, c = u² − w²: solved in ~25 k calls; with a budget of 1000 there is no branch,
    # and the error says what could not be done (u³w's system ran for minutes before)
    from deqrmt.symbolic import _bias_conserved

    monkeypatch.setattr(_bias_conserved, "SYMPY_SYSTEM_CALLS", 1000)
    half = sp.Rational(1, 2)
    with pytest.raises(DerivationError, match="cannot express h"):
        _two_parameters(u * w, THETA, (half, half / 2), u**2 + w**2)

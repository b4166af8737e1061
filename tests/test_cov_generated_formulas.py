"""Every generated formula function, called once and checked against SymPy's own evaluation.

``tests/test_generated_formulas.py`` compares the module's *text* with a fresh print; here each
function is *run* (mpmath at 50 digits) and compared with the derivation's expressions evaluated
by SymPy's ``evalf`` at the same point: an independent evaluator (no printer, no generated code),
so a printer bug that still prints deterministically would be caught too.
"""

from __future__ import annotations

import mpmath
import pytest
import sympy as sp

from deqrmt.numeric import _generated_formulas
from deqrmt.numeric._formula_table import KEYS, _derive, formula_set
from helpers import deq_formulas

#: a point inside every formula's domain: σ_a² E[φ'²] < 1 (so the NTK exists), positive
#: radicands (dsq·σ_a² < 1, σ_a² sq2 ≠ 2); exact rationals, so both sides see the same numbers
_POINT = {
    "sigma_a2": sp.Rational(1, 5),
    "sigma_b2": sp.Rational(2, 3),
    "tau_0": sp.Rational(5, 4),
    "d1": sp.Rational(3, 7),
    "d2": sp.Rational(5, 11),
    "sq": sp.Rational(7, 5),
    "sq2": sp.Rational(9, 13),
    "dsq": sp.Rational(1, 2),
    "phi": sp.Rational(-2, 9),
    "kappa_prev": sp.Rational(6, 7),
}


def _value(name: str) -> sp.Rational:
    if name in _POINT:
        return _POINT[name]
    # the explicit layer's previous coefficients: distinct, positive, not special
    return sp.Rational(3 + len(name), 7 + 2 * sum(map(ord, name)) % 11)


TOL = mpmath.mpf(10) ** -45


@pytest.mark.parametrize("key", KEYS)
def test_generated_function_agrees_with_sympy_evalf(key: str) -> None:
    fs = formula_set(key)
    assert fs.function is _generated_formulas.FORMULAS[key][0]
    derived = _derive(key)
    assert derived.names == fs.args
    assert derived.outputs == fs.outputs
    point = {sym: _value(name) for sym, name in zip(derived.args, derived.names, strict=True)}
    with mpmath.workdps(50):
        got = fs.function(mpmath.mp, *(mpmath.mpf(point[s].p) / point[s].q for s in derived.args))
        assert len(got) == len(fs.outputs)
        for name, value, expr in zip(fs.outputs, got, derived.exprs, strict=True):
            want = sp.N(expr.subs(point), 60)
            assert want.is_real, (key, name, want)
            want_mp = mpmath.mpf(str(want))
            assert abs(mpmath.mpf(value) - want_mp) <= TOL * max(1, abs(want_mp)), (key, name)


@pytest.mark.parametrize("trainable", ["a", "A", "B", "a_A", "a_B", "A_B", "a_A_B"])
def test_ck_entries_equal_the_ck_part_of_the_ntk_entries(trainable: str) -> None:
    """The CK (γ*, α*₁…α*₄) does not depend on whether the NTK exists: the ``_ck`` function and
    the first five outputs of the full one agree wherever both are defined."""
    full, ck = formula_set(f"deq_{trainable}"), formula_set(f"deq_{trainable}_ck")
    assert full.outputs[:5] == ck.outputs
    with mpmath.workdps(30):
        env = {n: mpmath.mpf(_value(n).p) / _value(n).q for n in full.args}
        a = full.function(mpmath.mp, *(env[n] for n in full.args))
        b = ck.function(mpmath.mp, *(env[n] for n in ck.args))
    assert a[:5] == b


@pytest.mark.parametrize("trainable", ["a", "A", "B", "a_A", "a_B", "A_B", "a_A_B"])
def test_ck_outputs_match_the_hand_derived_formulas(trainable: str) -> None:
    """γ*, α*₁…α*₄ against the hand-derived formulas of tests/helpers.py (not SymPy's)."""
    ck = formula_set(f"deq_{trainable}_ck")
    with mpmath.workdps(40):
        env = {n: mpmath.mpf(_value(n).p) / _value(n).q for n in ck.args}
        got = dict(zip(ck.outputs, ck.function(mpmath.mp, *(env[n] for n in ck.args)), strict=True))
        m = {"m1": env["d1"], "m2": env["d2"], "sq": env["sq"], "sq2": env["sq2"], "dsq": 0}
        want = deq_formulas(m, env["sigma_a2"], env["sigma_b2"], None)
        for name in ck.outputs:
            assert abs(got[name] - want[name]) <= mpmath.mpf(10) ** -35 * abs(want[name]), name

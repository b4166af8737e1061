"""Numbers that behave (issue 23): Verified arithmetic, comparisons, numpy, ``.ball``; results
as Mappings.

References are exact: Fraction arithmetic on the dyadic numbers a Verified holds, and closed
forms (ReLU's α*₁ = 4/19 at σ_a² = 1/5), never the code under test.
"""

from __future__ import annotations

import decimal
import sys
from collections.abc import Mapping, ValuesView
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import deqrmt
from deqrmt import DeqrmtError, InvalidArgument, MissingExtra
from deqrmt.numeric import DEQ_KEYS, Verified
from deqrmt.numeric._arb import to_arb, workprec
from deqrmt.numeric._proven import proven


def _exact(x: object) -> Fraction:
    """The exact binary number an mpmath value holds."""
    sign, man, exp, _ = x._mpf_ if hasattr(x, "_mpf_") else mpmath.mpf(x)._mpf_
    m = -int(man) if sign else int(man)
    return Fraction(m * 2**exp) if exp >= 0 else Fraction(m, 2**-exp)


def _proven(fr: Fraction, dps: int = 30) -> Verified:
    """A proven Verified of an exact number (a ball of radius ≈ 2^-200 around it)."""
    with workprec(700):
        return proven(to_arb(fr), dps)


def _unproven(fr: Fraction, digits: int = 20) -> Verified:
    """A Verified as two agreeing evaluations give it: no radius."""
    with mpmath.workdps(digits + 20):
        v = mpmath.mpf(fr.numerator) / fr.denominator
        return Verified(v, digits, mpmath.nstr(v, digits, strip_zeros=False))


rationals = st.fractions(min_value=-1000, max_value=1000, max_denominator=10**6).filter(
    lambda f: f != 0
)
operands = st.one_of(
    st.integers(-(10**6), 10**6),
    rationals,
    st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False),
)
OPS = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
}


def _encloses(res: Verified, exact: Fraction) -> bool:
    mid, rad = _exact(res.value), _exact(res.radius)
    return abs(mid - exact) <= rad


@settings(max_examples=60, deadline=None)
@given(a=rationals, b=operands, op=st.sampled_from(sorted(OPS)), left=st.booleans())
def test_proven_arithmetic_encloses_the_exact_result(
    a: Fraction, b: object, op: str, left: bool
) -> None:
    """A proven Verified with an exact operand (int, Fraction, float taken exactly) gives a
    proven Verified whose ball holds the exact Fraction result, and whose digits round it."""
    va = _proven(a)
    fb = Fraction(b)  # type: ignore[arg-type]  # a float is the binary number it holds
    if op == "div" and (fb if left else a) == 0:
        return
    res = OPS[op](va, b) if left else OPS[op](b, va)
    exact = OPS[op](_exact(va.value), fb) if left else OPS[op](fb, _exact(va.value))
    assert isinstance(res, Verified) and res.certified
    assert _encloses(res, exact)
    if res.digits:  # the printed digits are the exact value's rounding (within half a unit)
        text = Fraction(decimal.Decimal(res.text))
        unit = Fraction(10) ** (decimal.Decimal(res.text).adjusted() - res.digits + 1)
        assert abs(text - exact) <= unit / 2


@settings(max_examples=40, deadline=None)
@given(a=rationals, b=rationals, op=st.sampled_from(sorted(OPS)))
def test_proven_with_proven_is_a_ball_and_unproven_gives_mpmath(
    a: Fraction, b: Fraction, op: str
) -> None:
    pa, pb, ua = _proven(a), _proven(b), _unproven(a)
    both = OPS[op](pa, pb)
    assert isinstance(both, Verified) and both.certified
    assert _encloses(both, OPS[op](_exact(pa.value), _exact(pb.value)))
    mixed = OPS[op](ua, pb)
    assert isinstance(mixed, mpmath.mpf)  # an unproven operand: no ball, an mpmath number
    exact = OPS[op](_exact(ua.value), _exact(pb.value))
    # computed at 20 digits + the guard: an error below 10^-25 of the operands' scale (a sum
    # that cancels keeps an absolute error, a product a relative one)
    xa, xb = _exact(ua.value), _exact(pb.value)
    scale = max(abs(exact), abs(xa), abs(xb)) if op in ("add", "sub") else abs(exact)
    assert abs(_exact(mixed) - exact) <= scale * Fraction(1, 10**25)


def test_relu_alpha_1_in_arithmetic() -> None:
    """α*₁ = 4/19 for ReLU at σ_a² = 1/5: 19 α*₁ − 4 is a proven ball around 0."""
    v = deqrmt.deq_coefficients("relu", dps=20).alpha_1
    zero = 19 * v - 4
    assert zero.certified and zero.contains(0) and zero.radius < 1e-30
    assert (v + 1).text == "1.2105263157894736842"
    assert (v * Fraction(19, 4)).contains(1)
    assert _encloses(v**2, Fraction(16, 361))
    assert (1 / v).contains(mpmath.mpf(19) / 4)
    assert (-v).text == "-0.21052631578947368421" and abs(-v) == v and +v is v
    # mpmath operand: mpmath's arithmetic, at the value's precision (no 53-bit float)
    m = v + mpmath.mpf(1)
    assert isinstance(m, mpmath.mpf)
    with mpmath.workdps(40):
        assert abs(m - mpmath.mpf(23) / 19) < mpmath.mpf(10) ** -25


def test_power_and_errors() -> None:
    v = _proven(Fraction(-3, 2))
    assert _encloses(v**3, Fraction(-27, 8))  # an integer power of a negative ball
    assert (4**v).ball.contains(to_arb(Fraction(1, 8)))  # 4^(−3/2) = 1/8
    with pytest.raises(InvalidArgument, match="not a finite real ball"):
        v ** Fraction(1, 2)
    with pytest.raises(ZeroDivisionError):
        v / 0
    with pytest.raises(InvalidArgument, match="not a finite number"):
        v + float("nan")
    with pytest.raises(TypeError):
        v + "1"  # type: ignore[operator]
    with pytest.raises(TypeError):
        v + True  # type: ignore[operator]  # a bool is not a number here


def test_comparisons_and_hash_are_exact() -> None:
    third = _unproven(Fraction(1, 3))
    quarter = _proven(Fraction(1, 4))
    assert quarter == 0.25 == Fraction(1, 4) and hash(quarter) == hash(0.25) == hash(Fraction(1, 4))
    assert third != Fraction(1, 3)  # the binary value is not 1/3 exactly
    assert third > 0.3333 and third < Fraction(1, 3) + Fraction(1, 10**30) and quarter <= third
    assert third >= quarter and {quarter: 1}[Fraction(1, 4)] == 1
    assert sorted([third, quarter, 0.3]) == [quarter, 0.3, third]
    assert (third == "x") is False


def test_float_numpy_and_int() -> None:
    c = deqrmt.deq_coefficients("tanh", dps=15)
    arr = np.asarray([c.alpha_1, c.beta_1], dtype=float)
    assert arr.dtype == np.float64 and arr.tolist() == [float(c.alpha_1), float(c.beta_1)]
    zero_d = np.asarray(c.alpha_1)
    assert zero_d.dtype == np.float64 and zero_d.shape == () and float(zero_d) == float(c.alpha_1)
    assert np.array([c.alpha_1, c.tau_star]).dtype == np.float64  # not dtype object
    with pytest.raises(InvalidArgument, match="round"):
        int(c.alpha_1)


def test_ball_encloses() -> None:
    """``.ball``: the proven ball, or the verified digits ± half a unit of the last one."""
    c = deqrmt.deq_coefficients("relu", dps=20)
    with workprec(300):  # 4/19 as a ball narrower than the proven one
        assert c.alpha_1.ball.contains(to_arb(Fraction(4, 19)))
        assert c.alpha_1.ball.rad() < 1e-30
    v = Verified(mpmath.mpf("0.12345678"), 5, "0.12346")
    lo, hi = v.ball.lower(), v.ball.upper()
    assert lo <= to_arb(Fraction(123455, 10**6)) and hi >= to_arb(Fraction(123465, 10**6))
    assert not v.ball.contains(to_arb(Fraction(12347, 10**5)))
    assert Verified(mpmath.mpf(0), 30, "0").ball == 0


# -- results as Mappings ----------------------------------------------------------------------


def test_deq_coefficients_is_a_mapping() -> None:
    c = deqrmt.deq_coefficients("tanh", dps=15)
    assert isinstance(c, Mapping)
    d = dict(c)
    assert list(d) == list(c.keys()) == list(DEQ_KEYS) and len(c) == len(DEQ_KEYS)
    assert all(d[k] is c[k] is getattr(c, k) for k in DEQ_KEYS)
    # ``values``: the attribute it always was, and the Mapping method
    assert c.values["alpha_1"] is c.alpha_1 and sorted(c.values)[:1] == ["alpha_1"]
    assert isinstance(c.values(), ValuesView) and list(c.values()) == [c[k] for k in c]
    assert list(c.items()) == list(d.items())
    assert c.to_dict(float) == {k: float(v) for k, v in d.items()}
    assert all(type(x) is float for x in c.to_dict(float).values())
    assert c.to_dict(str)["tau_star"] == c.tau_star.text
    assert c.to_dict()["tau_star"] == c.tau_star.text  # the JSON record is unchanged
    assert c["E_phi_prime"] is c.moments["E_phi_prime"]  # moments by key, not iterated
    with pytest.raises(InvalidArgument, match="kind"):
        c.to_dict(int)


def test_absent_ntk_keys_are_absent_from_the_mapping() -> None:
    """Past E[φ'²] σ_a² ≥ 1 the NTK diverges: β*, κ* are not keys, and get() says None."""
    c = deqrmt.deq_coefficients("relu", "5/2", 1, dps=12)
    assert "beta_1" not in c and c.get("beta_1") is None and "alpha_1" in c
    assert set(dict(c)) == set(DEQ_KEYS) - {"beta_1", "beta_2", "beta_3", "kappa_star"}


def test_sphere_explicit_and_check_are_mappings() -> None:
    s = deqrmt.sphere_coefficients("tanh", dps=15)
    assert isinstance(s, Mapping) and dict(s)["mu"] is s.mu and s.values["mu"] is s.mu
    assert s.to_dict(float)["mu"] == float(s.mu)
    e = deqrmt.explicit_coefficients(["relu"], dps=12)
    assert dict(e.layers[0])["alpha_1"] == Fraction(1, 4)  # ReLU layer 1: α̃₁ = μ₁² = 1/4
    assert e.layers[0].to_dict(float)["alpha_1"] == 0.25
    r = deqrmt.check_activation("tanh", sigma_a2="0.2")
    assert isinstance(r, Mapping) and list(r) == [i.key for i in r.items]
    assert dict(r)["lipschitz"] is r.items[0] and len(r) == len(r.items)
    assert dict(r.items()) == dict(r)


def test_to_pandas_without_pandas_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)  # as if not installed
    c = deqrmt.deq_coefficients("relu", dps=12)
    with pytest.raises(MissingExtra, match="pip install"):
        c.to_pandas()
    with pytest.raises(MissingExtra, match="pip install"):
        deqrmt.explicit_coefficients(["relu"], dps=12).to_pandas()
    assert issubclass(MissingExtra, DeqrmtError)


def test_non_finite_and_truth() -> None:
    v = _proven(Fraction(1, 4))
    assert v < float("inf") and v > float("-inf") and not v == float("nan")  # noqa: SIM201
    assert not (v < float("nan")) and v != mpmath.inf
    zero = deqrmt.deq_coefficients("tanh", dps=12).alpha_2  # odd φ: exactly 0
    assert not zero and v and zero == 0
    chained = (v - v) + 1  # a ball proving no digit, then 1 ± tiny: digits again
    assert chained.certified and chained.text.startswith("1.0000") and chained.contains(1)


class _Frame:
    """A stand-in for pandas.DataFrame (pandas is optional and not needed to check the rows)."""

    def __init__(self, rows: list[dict[str, object]]) -> None:
        self.rows, self.index = rows, None

    def set_index(self, key: str) -> _Frame:
        self.index = [row.pop(key) for row in self.rows]
        return self


def test_to_pandas_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = type(sys)("pandas")
    fake.DataFrame = _Frame  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pandas", fake)
    c = deqrmt.deq_coefficients("relu", dps=12)
    df = c.to_pandas()
    assert df.index == list(c.keys())
    row = df.rows[df.index.index("alpha_1")]
    assert row["text"] == "0.210526315789" and row["value"] == float(c.alpha_1)
    assert row["certified"] is True and row["digits"] == 12
    e = deqrmt.explicit_coefficients(["relu", "tanh"], dps=12).to_pandas()
    assert e.index == [1, 2] and e.rows[1]["activation"] == "tanh" and e.rows[0]["alpha_1"] == 0.25
    r = deqrmt.check_activation("tanh", sigma_a2="0.2").to_pandas()
    assert r.index[0] == "lipschitz" and r.rows[0]["status"] == "PASS"

"""Numbers that behave (issue 23): Verified arithmetic, comparisons, numpy, ``.ball``; results
as Mappings.

References are exact: Fraction arithmetic on the dyadic numbers a Verified holds, and closed
forms (ReLU's α*₁ = 4/19 at σ_a² = 1/5), never the code under test.
"""

from __future__ import annotations

import decimal
import math
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
from deqrmt.numeric._verified import proven


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


# -- the number protocols: pickle, format, bounded powers, Fraction and Decimal ----------------

#: float's format specs: every presentation type, fill, alignment, sign, z, #, zero padding,
#: grouping.  ``%`` is compared only where x·100 is exact in float (float rounds it first).
SPECS = [
    "", ".5f", "f", "e", "g", "%", ".3%", ".20f", ">20", "+.3e", "E", "G", ".0f", ".0e", "#.0f",
    "#.0e", "#g", ".1g", ".10g", ".3", ".1", "015.3f", "015,.3f", "010,.1f", "<12.2e",
    "^13.3g", "*^13.3g", "=+12.2f", "z.2f", "z.1e", ",.2f", "_.2f", ",g", " .4e", ".17g",
    ".30e", ".2n", "08.3g", "#.3g", "#10.0f", "-^9.1%", "020,.5e", "025_.4f",
]  # fmt: skip


def _of_float(x: float) -> Verified:
    """A Verified holding the float ``x`` exactly (its repr as the text)."""
    return Verified(mpmath.mpf(x), 17, repr(x))


@settings(max_examples=150, deadline=None)
@given(
    x=st.one_of(
        st.floats(allow_nan=False, allow_infinity=False),
        st.floats(-1e6, 1e6),
        st.sampled_from([0.5, 2.5, -2.5, 0.125, 9.5, 0.95, 99999.5, 1e16, 5e-324]),
    ).map(lambda x: x + 0.0),  # mpmath has no −0.0
    spec=st.sampled_from(SPECS[1:]),
)
def test_format_matches_float_on_floats(x: float, spec: str) -> None:
    """On a value that is a float, ``format`` is float's, digit for digit (half-even on the
    exact binary value, default precision 6, ``g`` without trailing zeros, 2-digit exponents)."""
    # float's "%" formats x*100 rounded to a float (inf past 1.8e306): compare only where exact
    if "%" in spec and (not math.isfinite(x * 100) or Fraction(x * 100) != Fraction(x) * 100):
        return
    assert format(_of_float(x), spec) == format(x, spec)


@settings(max_examples=150, deadline=None)
@given(
    num=st.integers(-(10**60), 10**60),
    shift=st.integers(0, 300),
    places=st.integers(0, 60),
)
def test_format_rounds_the_exact_value_not_a_float(num: int, shift: int, places: int) -> None:
    """``.Nf`` of a value carried at 1000+ bits is its exact Fraction rounded half-even to N
    places (Fraction's own round), where a trip through float would keep 17 digits."""
    exact = Fraction(num, 2**shift)
    with mpmath.workprec(400):
        v = Verified(mpmath.mpf(num) / 2**shift, 50, "")
    assert _exact(v.value) == exact
    n = round(exact * 10**places)  # half-even, exact
    sign = "-" if exact < 0 else ""
    digits = str(abs(n)).rjust(places + 1, "0")
    want = sign + digits[: len(digits) - places] + ("." + digits[-places:] if places else "")
    assert f"{v:.{places}f}" == want


def test_format_of_results() -> None:
    """ReLU's α*₁ = 4/19 = 0.2105263157894736842105…: every float spec, from the exact value."""
    v = deqrmt.deq_coefficients("relu", dps=30).alpha_1
    assert f"{v:.5f}" == "0.21053" and f"{v:e}" == "2.105263e-01" and f"{v:g}" == "0.210526"
    assert f"{v:.2%}" == "21.05%" and f"{v:.25f}" == "0.2105263157894736842105263"
    assert f"{v}" == str(v) == v.text and f"{v:>34}" == v.text.rjust(34)
    with pytest.raises(ValueError, match="format"):
        format(v, "d")
    for spec in (".100000000f", "1000000000", "." + "9" * 5000 + "f"):
        with pytest.raises(deqrmt.BudgetExceeded, match="width or precision"):
            format(v, spec)


@settings(max_examples=60, deadline=None)
@given(a=rationals, proven_=st.booleans(), digits=st.integers(1, 60))
def test_pickle_round_trips_exactly(a: Fraction, proven_: bool, digits: int) -> None:
    """A Verified pickles (the engines' private-context mpf included) and comes back equal:
    the same exact value, digits, text, radius and proof status."""
    import pickle

    v = _proven(a, digits) if proven_ else _unproven(a, digits)
    ctx = mpmath.MPContext()  # an engine's private context: its mpf class pickle cannot name
    ctx.prec = 400
    w = Verified(ctx.make_mpf(v.value._mpf_), v.digits, v.text, v.radius)
    for x in (v, w):
        y = pickle.loads(pickle.dumps(x))
        assert y == x and _exact(y.value) == _exact(x.value)
        assert (y.text, y.digits) == (x.text, x.digits)
        assert y.certified == x.certified == proven_
        if proven_:
            assert _exact(y.radius) == _exact(x.radius) and y.contains(_exact(x.value))


def test_results_pickle() -> None:
    """Result records cross process boundaries (joblib, multiprocessing, Dask pickle them)."""
    import pickle

    for r in (
        deqrmt.deq_coefficients("relu", dps=12),
        deqrmt.explicit_coefficients(["relu"], dps=12),
        deqrmt.sensitivities("relu", dps=12),
        deqrmt.sphere_coefficients("relu", dps=12),
    ):
        back = pickle.loads(pickle.dumps(r))
        assert back == r and type(back) is type(r)
    c = pickle.loads(pickle.dumps(deqrmt.deq_coefficients("relu", dps=12)))
    assert c.alpha_1.certified and c.alpha_1.contains(Fraction(4, 19))


def test_huge_powers_are_refused_and_small_ones_exact() -> None:
    v = deqrmt.deq_coefficients("relu", dps=12).alpha_1
    with pytest.raises(deqrmt.BudgetExceeded, match="logarithms"):
        v**10**7
    with pytest.raises(deqrmt.BudgetExceeded, match="logarithms"):
        2 ** (v * 10**7)
    assert (v**1000).contains(Fraction(4, 19) ** 1000)
    assert _proven(Fraction(1)) ** 10**30 == 1  # |base| = 1: any exponent is cheap


def test_contains_fraction_and_decimal_and_snan() -> None:
    v = deqrmt.deq_coefficients("relu", dps=20).alpha_1
    assert v.contains(Fraction(4, 19)) and not v.contains(Fraction(4, 19) + Fraction(1, 10**20))
    assert v.contains(decimal.Decimal(4) / decimal.Decimal(19)) is False  # 28 digits: outside
    assert not v.contains(float("nan")) and not v.contains(decimal.Decimal("Infinity"))
    snan = decimal.Decimal("sNaN")
    for op in (
        lambda: v + snan,
        lambda: snan * v,
        lambda: v == snan,
        lambda: v < snan,
        lambda: v.contains(snan),
    ):
        with pytest.raises(InvalidArgument, match="signalling NaN"):
            op()
    assert v + decimal.Decimal("0.5") > Fraction(1, 2)
    # an operand whose exact value is a 3.3-gigabit integer is refused before it is expanded
    for huge in (decimal.Decimal("1e999999999"), decimal.Decimal("1e-999999999")):
        with pytest.raises(deqrmt.BudgetExceeded, match="bits"):
            v < huge  # noqa: B015
        with pytest.raises(deqrmt.BudgetExceeded, match="bits"):
            v + huge
        with pytest.raises(deqrmt.BudgetExceeded, match="bits"):
            v.contains(huge)
    with pytest.raises(deqrmt.BudgetExceeded, match="bits"):
        v * mpmath.mpf("1e999999999")
    assert v < decimal.Decimal("1e9999") and not v.contains(decimal.Decimal("1e-9999"))


@settings(max_examples=60, deadline=None)
@given(a=rationals, shift=st.fractions(-1, 1, max_denominator=10**30))
def test_contains_agrees_across_fraction_float_and_decimal(a: Fraction, shift: Fraction) -> None:
    """``contains`` decides exactly, whatever the type of the same number: a proven ball of
    radius ~2^-700 around ``a`` holds ``a`` and nothing 10^-30 away; a float or a Decimal is
    judged as the exact number it holds."""
    v = _proven(a)
    assert v.contains(a)
    far = a + (shift or Fraction(1, 3)) / 10**30 * (abs(a) if abs(a) > 1 else 1)
    assert not v.contains(far)
    for x in (float(a), decimal.Decimal(a.numerator) / decimal.Decimal(a.denominator)):
        assert v.contains(x) == v.contains(Fraction(x))


def test_every_result_pickles() -> None:
    """The public results cross process boundaries: the same text, the same numbers."""
    import pickle

    problem = deqrmt.DEQProblem.make("tanh", sigma_a2="0.2")
    results: list[object] = [
        problem,
        deqrmt.scan_fixed_points(problem),
        deqrmt.check_activation("relu"),
        deqrmt.coefficient_expression("relu", "alpha_1"),
        deqrmt.deq_coefficients("tanh", dps=12, certify=False),
    ]
    for r in results:
        back = pickle.loads(pickle.dumps(r))
        assert type(back) is type(r) and repr(back) == repr(r)
    c = deqrmt.deq_coefficients("tanh", dps=12, certify=False)
    back = pickle.loads(pickle.dumps(c))
    assert back == c and not back.alpha_1.certified and back.to_dict() == c.to_dict()


def test_torch_side_results_pickle() -> None:
    """Spectra, equivalent kernels and the scikit-learn kernel pickle and come back with the
    same fields (their repr) and the same arrays."""
    pytest.importorskip("torch")
    import pickle

    X = np.random.default_rng(0).standard_normal((6, 4))
    for r in (
        deqrmt.spectrum("relu", points=64),
        deqrmt.spectrum("relu", points=64).ck.law,
        deqrmt.equivalent_kernels("relu", X, labels=[0, 0, 0, 1, 1, 1]),
        deqrmt.DEQKernel("relu"),
    ):
        back = pickle.loads(pickle.dumps(r))
        assert type(back) is type(r) and repr(back) == repr(r)
    report = deqrmt.spectrum("relu", points=64)
    back = pickle.loads(pickle.dumps(report))
    assert np.array_equal(back.ck.law.density, report.ck.law.density)


@settings(max_examples=40, deadline=None)
@given(
    a=rationals.filter(lambda f: abs(f) != 1),
    n=st.one_of(st.integers(-300, 300), st.integers(-(10**9), 10**9)),
)
def test_powers_are_exact_or_refused_by_their_size(a: Fraction, n: int) -> None:
    """``v ** n``: refused (BudgetExceeded) exactly when |n·log₂|a|| passes MAX_POWER_BITS, else
    a proven ball holding Fraction(a)**n (checked exactly for |n| ≤ 300)."""
    import math

    from deqrmt.numeric._verified import MAX_POWER_BITS

    bits = abs(n * math.log2(abs(a)))
    v = _proven(a)
    if bits > 1.01 * MAX_POWER_BITS:
        with pytest.raises(deqrmt.BudgetExceeded, match="logarithms"):
            v**n
    elif bits < 0.99 * MAX_POWER_BITS and abs(n) <= 300:
        r = v**n
        assert r.certified and _encloses(r, a**n)

"""`deqrmt check` (issue 14): Assumption 1, the contraction used, and the engine's consistency.

The "done when" cases of the issue, the rigorous L₁ bound against known constants, negative
controls (a wrong identity must be reported FAIL) and the command through a tiny argparse
harness.
"""

from __future__ import annotations

import argparse
import dataclasses
import json

import mpmath
import pytest
import sympy as sp

from deqrmt._errors import DeqrmtError, InvalidArgument, UnknownActivation
from deqrmt.check import (
    FAIL,
    NA,
    PASS,
    CheckItem,
    check_activation,
    codegen_item,
    digits_item,
    explicit_limit_item,
    fixed_point_item,
    stein_item,
    variance_lipschitz_item,
)
from deqrmt.cli import check as check_cli
from deqrmt.numeric import (
    compile_function,
    deq_coefficients,
    explicit_coefficients,
    lipschitz_bound,
)
from deqrmt.numeric._verified import Verified
from deqrmt.symbolic import X, parse_activation

_CONSISTENCY = ("digits", "fixed_point", "stein", "codegen", "explicit_limit")


@pytest.fixture(scope="module")
def tanh_report():
    return check_activation("tanh")


# ---------------------------------------------------------------------------
# The "done when" cases
# ---------------------------------------------------------------------------


def test_check_tanh_passes_everything(tanh_report):
    r = tanh_report
    assert r.passed and r.assumption_holds
    for item in r.items:
        expected = NA if item.key in ("beyond", "monte_carlo") else PASS
        assert item.status == expected, item.line()
    assert r["lipschitz"].numbers["L₁"] == "1.0"
    assert "interval arithmetic" in r["lipschitz"].explanation


def test_check_relu_passes_and_names_the_smoothness_items():
    r = check_activation("relu")
    assert r.passed, [i.line() for i in r.failures()]
    assert r["stein"].status == NA
    assert "kinks at x = 0" in r["stein"].explanation
    # the weak derivatives are what the other items use: E[φ''] = pdf(0)/τ exists
    assert r["moments"].status == PASS and "Stein" in r["moments"].explanation
    assert r["lipschitz"].explanation.startswith("exact")
    for key in ("digits", "fixed_point", "codegen", "explicit_limit"):
        assert r[key].status == PASS, r[key].line()


def test_check_quadratic_beyond_the_assumption():
    r = check_activation("x**2/4+x", sigma_a2="0.5")
    assert r["lipschitz"].status == FAIL
    assert r["lipschitz"].numbers["L₁"] == "∞"
    assert "tends to +∞" in r["lipschitz"].explanation
    assert not r.assumption_holds and not r.passed
    assert r["variance_lipschitz"].status == FAIL
    assert r["contraction_ck"].status == PASS
    assert r["contraction_ntk"].status == PASS
    beyond = r["beyond"]
    assert beyond.status == PASS and "contraction the proofs use holds" in beyond.explanation
    for key in _CONSISTENCY:
        assert r[key].status == PASS, r[key].line()


def test_check_sign_fails_with_the_reason():
    r = check_activation("sign(x)")
    assert not r.passed
    assert r["lipschitz"].status == FAIL
    assert "jumps by 2 at x = 0" in r["lipschitz"].explanation
    assert r["contraction_ntk"].status == FAIL
    assert "Dirac" in r["contraction_ntk"].explanation
    # the CK's fixed point exists (φ² = 1 a.e.): that is said, not hidden
    assert r["contraction_ck"].status == PASS
    assert all(r[k].status == NA for k in _CONSISTENCY)


def test_report_lines_and_json_round_trip(tanh_report):
    lines = tanh_report.lines()
    assert lines[0].startswith("deqrmt check tanh")
    assert len([ln for ln in lines if ln.startswith("  ")]) == len(tanh_report.items)
    d = json.loads(tanh_report.to_json())
    assert d["passed"] is True
    assert [i["key"] for i in d["items"]] == list(tanh_report.keys())
    with pytest.raises(KeyError, match="no such item"):
        tanh_report["nope"]


def test_report_inputs_are_the_problem_records():
    # One home for how inputs serialise: the report's input fields are DEQProblem.to_dict's.
    report = check_activation("max(x, 0.1*x)", "0.3", "1/2", "1.5")
    inputs = report.problem.to_dict()
    d = report.to_dict()
    assert list(d)[:5] == ["activation", "expression", "sigma_a2", "sigma_b2", "tau0"]
    assert all(d[k] == inputs[k] for k in list(d)[:5])
    assert (d["sigma_a2"], d["sigma_b2"], d["tau0"]) == ("3/10", "1/2", "3/2")
    assert (report.sigma_a2, report.tau0) == (sp.Rational(3, 10), sp.Rational(3, 2))


def test_item_status_is_validated():
    with pytest.raises(InvalidArgument, match="PASS, FAIL or N/A"):
        CheckItem("x", "x", "OK", {}, "")


def test_bad_input_raises_instead_of_reporting():
    with pytest.raises(InvalidArgument, match="sigma_a2"):
        check_activation("tanh", sigma_a2="abc")
    with pytest.raises(UnknownActivation):
        check_activation("foo(x)")


# ---------------------------------------------------------------------------
# L₁
# ---------------------------------------------------------------------------


def _max_of(f, x0):
    """max of f near x0, independently of deqrmt: plain mpmath at 30 digits (f' = 0)."""
    with mpmath.workdps(30):
        x = mpmath.findroot(lambda t: mpmath.diff(f, t), x0)
        return f(x)


def _sig(x):
    return 1 / (1 + mpmath.exp(-x))


def _silu_prime(x):
    return _sig(x) * (1 + x * (1 - _sig(x)))


def _gelu_prime(x):
    return mpmath.ncdf(x) + x * mpmath.npdf(x)


_KNOWN_L1 = [
    ("tanh", lambda: 1),
    ("relu", lambda: 1),
    ("leaky_relu(0.1)", lambda: 1),
    ("hard_tanh", lambda: 1),
    ("elu", lambda: 1),
    ("sin", lambda: 1),
    ("erf", lambda: 2 / mpmath.sqrt(mpmath.pi)),
    ("sigmoid", lambda: mpmath.mpf(1) / 4),
    ("silu", lambda: _max_of(_silu_prime, 2.4)),  # σ(x)(1 + x(1 − σ(x))) at x ≈ 2.3994
    ("x*sigmoid(1.702*x)", lambda: _max_of(_silu_prime, 2.4)),  # the same maximum (y = 1.702x)
    ("gelu", lambda: _max_of(_gelu_prime, 1.4)),  # Φ(x) + xφ(x), at x = √2
    ("x*exp(-x**2/2)", lambda: 1),
    ("0.5*x + 0.3*tanh(2*x - 1)", lambda: mpmath.mpf("1.1")),
]


@pytest.mark.parametrize(("spec", "true"), _KNOWN_L1)
def test_lipschitz_enclosure_contains_the_true_constant(spec, true):
    b = lipschitz_bound(spec)
    ref = true()
    assert b.kind == "bounded"
    assert b.lower <= ref <= b.upper
    assert b.upper <= ref * (1 + mpmath.mpf("1e-6"))  # and it is tight


@pytest.mark.parametrize(("spec", "true"), _KNOWN_L1)
def test_lipschitz_text_encloses_the_true_constant(spec, true):
    """issue 21: the printed L₁ was [1.09984, 1.10052] for x·σ(1.702x), excluding 1.0998393:
    the lower end was rounded to nearest.  The text is the proven digits or an outward
    interval: either way the true value lies inside what is printed."""
    ref = mpmath.mpf(true())
    text = lipschitz_bound(spec).text()
    if text.startswith("["):
        lo, hi = (mpmath.mpf(t) for t in text[1:-1].split(", "))
        assert lo <= ref <= hi, text
    else:  # n proven digits: the true value rounds to them
        assert mpmath.nstr(ref, 6) == text, text


def test_interval_text_rounds_outward():
    from fractions import Fraction

    from deqrmt.numeric import interval_text

    assert interval_text(Fraction(10998377, 10**7), Fraction(110052, 10**5)) == "[1.09983, 1.10052]"
    assert interval_text(Fraction(-1, 3), Fraction(1, 3)) == "[-0.333334, 0.333334]"
    assert interval_text(Fraction(1), Fraction(10000001, 10**7)) == "1.0"  # both round to 1.0


@pytest.mark.parametrize("spec", ["x**2/4+x", "x**2", "exp(x)", "exp(-x)", "x**3/10"])
def test_lipschitz_unbounded_is_proved(spec):
    b = lipschitz_bound(spec)
    assert b.kind == "unbounded" and b.text() == "∞"
    assert "monotone" in b.reason


@pytest.mark.parametrize("spec", ["sign(x)", "heaviside(x)", "max(x, 0) + heaviside(x - 1)"])
def test_lipschitz_discontinuous(spec):
    b = lipschitz_bound(spec)
    assert b.kind == "discontinuous" and "jumps" in b.reason


def test_lipschitz_undecided_is_not_a_bound():
    # x·sin(x): φ' = x cos x + sin x oscillates with growing amplitude; neither bounded nor
    # monotone on any tail, so no rule applies and nothing is claimed
    b = lipschitz_bound("x*sin(x)")
    assert b.kind == "undecided" and not b.finite


@pytest.mark.parametrize(
    "spec", ["silu", "softplus", "0.3*(0.5*x - 1)*exp(-(0.5*x - 1)**2/2) + 0.2*abs(x - 1)"]
)
def test_lipschitz_samples_lie_inside_the_enclosure(spec):
    act = parse_activation(spec)
    b = lipschitz_bound(act)
    seen = mpmath.mpf(0)
    for p in act.derivative_pieces:
        dphi = compile_function("dphi", [X], [p.expr])
        for k in range(-400, 401):
            x = mpmath.mpf(k) / 20
            if p.lo < x < p.hi:
                seen = max(seen, abs(dphi(mpmath.mp, x)[0]))
    assert seen <= b.upper
    assert b.lower <= b.upper <= seen * (1 + 1e-2) + 1e-12


# ---------------------------------------------------------------------------
# Negative controls: each consistency item must report a wrong number as FAIL
# ---------------------------------------------------------------------------


def _perturbed(c, key, rel):
    """``c`` with ``key`` multiplied by 1 + rel, computed at 100 digits (1 + 1e-20 is 1 at the
    global 53 bits, and a certified value's own context may be that narrow too)."""
    values = dict(c.values)
    v = values[key]
    with mpmath.workdps(100):
        new = mpmath.mpf(v.value) * (1 + mpmath.mpf(rel))
        values[key] = Verified(new, v.digits, mpmath.nstr(new, v.digits))
    return dataclasses.replace(c, values=values)


@pytest.fixture(scope="module")
def relu_pair():
    return deq_coefficients("relu", dps=30), deq_coefficients("relu", dps=60)


def test_negative_control_fixed_point_identity(relu_pair):
    c30, c60 = relu_pair
    assert fixed_point_item(c60).status == PASS
    wrong = _perturbed(c60, "gamma_star", "1e-20")
    item = fixed_point_item(wrong)
    assert item.status == FAIL, item.line()


def test_negative_control_digits(relu_pair):
    c30, c60 = relu_pair
    assert digits_item(c30, c60).status == PASS
    item = digits_item(c30, _perturbed(c60, "alpha_2", "1e-25"))
    assert item.status == FAIL and "alpha_2" in item.explanation


def test_negative_control_stein():
    c = deq_coefficients("x**2/4 + x", "0.5", dps=20)
    tau = c.values["tau_star"].value
    assert stein_item(c.activation, tau).status == PASS
    from deqrmt.numeric import evaluator_for

    ctx = mpmath.MPContext()
    ctx.dps = 20
    good = evaluator_for(c.activation)(ctx, ctx.mpf(tau), ("d1", "d2", "d3", "d4", "sq2"))
    wrong = {k: v.value for k, v in good.items()}
    wrong["d3"] += mpmath.mpf("0.001")  # φ''' of a quadratic is 0, not 1e-3
    item = stein_item(c.activation, tau, stein=wrong)
    assert item.status == FAIL and "φ'''" in item.explanation


def test_negative_control_codegen(relu_pair):
    c30, _ = relu_pair
    from deqrmt.numeric._codegen import generate_module

    source = generate_module(c30.activation)
    assert codegen_item(c30, source=source).status == PASS
    tampered = source + (
        "\n\n_original = coefficients\n\n\n"
        "def coefficients(*args, **kwargs):\n"
        "    out = _original(*args, **kwargs)\n"
        "    out['alpha_3'] = out['alpha_3'] * (1 + mpmath.mpf(10) ** -9)\n"
        "    return out\n"
    )
    item = codegen_item(c30, source=tampered)
    assert item.status == FAIL and "alpha_3" in item.explanation


def test_negative_control_explicit_limit():
    act = parse_activation("relu")
    ck = explicit_coefficients([act], 1, 15).layers[0]
    ntk = explicit_coefficients([act], 1, 15, input_layer_trainable=False).layers[0]
    assert explicit_limit_item(act, 1, explicit=(ck, ntk)).status == PASS
    wrong_ck = dict(ck)
    a1 = ck["alpha_1"]
    wrong_ck["alpha_1"] = Verified(a1.value * (1 + mpmath.mpf(10) ** -6), a1.digits, a1.text)
    item = explicit_limit_item(act, 1, explicit=(wrong_ck, ntk))
    assert item.status == FAIL and "alpha_1" in item.explanation


def test_negative_control_variance_condition_uses_the_right_bound():
    # 2·tanh has L₁ = 2, so 1/(4L₁²) = 1/16: 0.2 is proved to fail (with the lower bound of
    # L₁), 0.06 proved to hold (with the upper bound)
    b = lipschitz_bound("2*tanh(x)")
    item = variance_lipschitz_item(sp.Rational(1, 5), b)
    assert item.status == FAIL and "lower bound" in item.explanation
    assert variance_lipschitz_item(sp.Rational(6, 100), b).status == PASS


# ---------------------------------------------------------------------------
# The command, through a tiny argparse harness
# ---------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="deqrmt")
    sub = parser.add_subparsers(dest="command", required=True)
    check_cli.register(sub)
    return parser


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    args = _parser().parse_args(argv)
    code = check_cli.run(args)
    return code, capsys.readouterr().out


def test_cli_relu_exit_0_one_line_per_item(capsys):
    code, out = _run(["check", "relu"], capsys)
    assert code == 0
    items = [ln.strip() for ln in out.splitlines() if ln.startswith("  ")]
    assert len(items) == 14  # 8 assumption items, 5 consistency items, the optional --mc
    assert all(ln.split()[0] in ("PASS", "FAIL", "N/A") for ln in items)
    assert any(ln.startswith("N/A   Stein") for ln in items)


def test_cli_quadratic_exit_1_reports_unbounded(capsys):
    code, out = _run(["check", "x**2/4+x", "--sigma-a2", "0.5"], capsys)
    assert code == 1
    assert "FAIL  L₁ (φ Lipschitz): L₁ = ∞" in out
    assert "PASS  contraction used" in out


def test_cli_sign_exit_1_json(capsys):
    code, out = _run(["check", "sign(x)", "--json"], capsys)
    assert code == 1
    d = json.loads(out)
    lip = next(i for i in d["items"] if i["key"] == "lipschitz")
    assert lip["status"] == "FAIL" and "jumps" in lip["explanation"]


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["check", "tanh", "--sigma-a2", "abc"], InvalidArgument),
        (["check", "tanh", "--sigma-a2", "1"], InvalidArgument),  # σ_b² = 1 − σ_a² = 0
        (["check", "frob(x)"], UnknownActivation),
        (["check", "x +"], InvalidArgument),
    ],
)
def test_cli_bad_input_raises_a_deqrmt_error(argv, error, capsys):
    args = _parser().parse_args(argv)
    with pytest.raises(error) as info:
        check_cli.run(args)
    assert isinstance(info.value, DeqrmtError)


def test_cli_help_documents_every_option():
    p = _parser()
    sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    cp = sub.choices["check"]
    for action in cp._actions:
        if action.dest == "help":
            continue
        assert action.help, action.dest
        if action.option_strings:
            text = cp.format_help()
            assert action.option_strings[-1] in text
    help_text = " ".join(cp.format_help().split())
    for flag in ("--sigma-a2", "--sigma-b2", "--tau0", "--mc", "--json", "--device"):
        assert flag in help_text
    assert "default" in help_text


@pytest.mark.slow
def test_check_tanh_with_monte_carlo():
    pytest.importorskip("torch")
    r = check_activation("tanh", mc=True, device="cpu")
    item = r["monte_carlo"]
    assert item.status == PASS, item.line()
    assert -0.8 <= float(item.numbers["CK slope"]) <= -0.3

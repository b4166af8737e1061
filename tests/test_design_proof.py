"""Issue 21, "certified designs": each design solution is proved by a Krawczyk step.

The reference root is independent of the prover: mpmath.findroot at 60 digits on the matching
equations written here from the public API (``explicit_coefficients`` of the library's
``hard_tanh`` at exact parameters and ``deq_coefficients``, both at 70 digits), which shares neither the
family's closed-form moments nor their symbolic derivatives with the proof.
"""

from __future__ import annotations

import json
from fractions import Fraction

import mpmath
import pytest
import sympy as sp
from flint import arb

from deqrmt.cli import main
from deqrmt.numeric import deq_coefficients, explicit_coefficients
from deqrmt.numeric._arb import workprec
from deqrmt.numeric._design import design_enn
from deqrmt.numeric._design_proof import prove_design_solution
from deqrmt.numeric._design_search import SearchBudget
from deqrmt.symbolic import get_family

REF_DPS = 60


@pytest.fixture(scope="module")
def readme_design():  # type: ignore[no-untyped-def]
    """The README's example: ``deqrmt design --deq tanh --family hard_tanh`` (its defaults)."""
    return design_enn("tanh", "hard_tanh")


def _rational(v: mpmath.mpf) -> sp.Rational:
    sign, man, exp, _ = v._mpf_  # (``man_exp`` drops the sign)
    return (-1) ** sign * sp.Rational(int(man)) * sp.Rational(2) ** int(exp)


def _reference_root(start: list[mpmath.mpf]) -> list[mpmath.mpf]:
    """The root of τ̃₁² = γ*², α̃₁,₁ = α*₁ by mpmath.findroot at 60 digits (public API only)."""
    hard_tanh = get_family("hard_tanh")
    with mpmath.workdps(REF_DPS + 10):
        deq = deq_coefficients("tanh", dps=REF_DPS + 10)
        g2, a1 = deq.gamma_star.value**2, deq.alpha_1.value

        def f(a: mpmath.mpf, c: mpmath.mpf) -> list[mpmath.mpf]:
            act = hard_tanh.instantiate([_rational(a), _rational(c)])  # exact parameters
            layer = explicit_coefficients([act], dps=REF_DPS + 5, certify=False).layers[0]
            return [layer["tau"].value ** 2 - g2, layer["alpha_1"].value - a1]

        root = mpmath.findroot(f, [mpmath.mpf(s) for s in start], tol=mpmath.mpf(10) ** -110)
        return [root[0], root[1]]


def test_readme_design_is_proved_and_its_balls_contain_a_60_digit_root(readme_design) -> None:  # type: ignore[no-untyped-def]
    (sol,) = readme_design.solutions
    assert sol.proof is not None and sol.proof.certified, sol.proof
    d = sol.to_dict()
    assert d["certified"] is True and "reason" not in d
    ref = _reference_root([sol.values[0][0], sol.values[0][1]])
    for name, r in zip(("a", "c"), ref, strict=True):
        ball = d["balls"][0][name]
        mid, rad = Fraction(ball["midpoint"]), Fraction(ball["radius"])
        assert 0 < rad < Fraction(1, 10**35)  # about the DEQ balls (~1e-41), beyond 30 digits
        # the printed ball contains the independent root (to 60 digits, far inside the radius)
        with mpmath.workdps(REF_DPS + 10):
            assert (
                abs(mpmath.mpf(mid.numerator) / mid.denominator - r)
                <= mpmath.mpf(rad.numerator) / rad.denominator - mpmath.mpf(10) ** -REF_DPS
            )
        # and it contains the Arb ball that was proved (outward rounding)
        b = sol.proof.balls[0][name]
        with workprec(400):
            assert arb(f"{ball['midpoint']} +/- {ball['radius']}").contains(b)


def test_readme_design_table_and_json_say_proven(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["design", "--deq", "tanh", "--family", "hard_tanh", "--dps", "15"]) == 0
    out = capsys.readouterr().out
    assert "proven (Krawczyk): the unique root in a ∈ [" in out
    assert main(["design", "--deq", "tanh", "--family", "hard_tanh", "--dps", "15", "--json"]) == 0
    (sol,) = json.loads(capsys.readouterr().out)["solutions"]
    assert sol["certified"] is True and set(sol["balls"][0]) == {"a", "c"}
    assert main(["design", "--deq", "tanh", "--family", "hard_tanh", "--dps", "15",
                 "--json", "--no-certify"]) == 0  # fmt: skip
    (sol,) = json.loads(capsys.readouterr().out)["solutions"]
    assert "certified" not in sol and "balls" not in sol


def _targets(deq_dps: int = 30) -> list[arb]:
    v = deq_coefficients("tanh", dps=deq_dps).values
    with workprec(200):
        return [v["gamma_star"].ball ** 2, v["alpha_1"].ball, v["alpha_2"].ball, v["alpha_3"].ball]


def _prove(solution: list[mpmath.mpf], targets: list[arb], family: str = "hard_tanh", **kw):  # type: ignore[no-untyped-def]
    return prove_design_solution(
        get_family(family), solution, [], layers=1, kernel="ck", active=[0, 1], targets=targets,
        tau0=1, input_trainable=False, dps=30, **kw,
    )  # fmt: skip


def test_a_shifted_equation_is_not_proved_on_the_original_ball(readme_design) -> None:  # type: ignore[no-untyped-def]
    (sol,) = readme_design.solutions
    y = list(sol.values[0])
    targets = _targets()
    original = _prove(y, targets)
    assert original.certified  # the unshifted system proves (so the test below can fail)
    with workprec(200):
        shifted = [targets[0] + arb("1e-12"), *targets[1:]]
    moved = _prove(y, shifted)
    if moved.certified:  # then the root it proves is another one: disjoint from the original
        assert moved.balls is not None and original.balls is not None
        assert any(not moved.balls[0][k].overlaps(original.balls[0][k]) for k in ("a", "c"))
    else:
        assert moved.reason


def test_a_singular_jacobian_at_a_symmetric_solution_is_reported() -> None:
    # φ = c1 x + c2 x², one layer, τ0 = 1: τ̃² = c1² + 2 c2², α̃₁ = c1² (centered moments).  At
    # c2 = 0 (the fixed set of the symmetry c2 → −c2) the column ∂/∂c2 vanishes: singular.
    c1 = mpmath.mpf(1) / 2
    targets = [arb(1) / 4, arb(1) / 4, arb(0), arb(0)]
    proof = _prove([c1, mpmath.mpf(0)], targets, family="polynomial2")
    assert not proof.certified and proof.balls is None
    assert proof.reason is not None and "singular" in proof.reason
    d = proof.to_dict(20)
    assert d == {"certified": False, "reason": proof.reason}
    # the same system away from the symmetric point proves (c2 = 1/4: τ̃² = 1/4 + 2/16); the
    # equations left out (α̃₂ = c2², α̃₃ = 2 c2²) must then hold on the box too
    off = [arb(3) / 8, arb(1) / 4]
    ok = _prove([c1, mpmath.mpf(1) / 4], [*off, arb(1) / 16, arb(1) / 8], family="polynomial2")
    assert ok.certified, ok.reason
    with workprec(100):
        assert ok.balls is not None and ok.balls[0]["c2"].contains(arb(1) / 4)
        assert ok.balls[0]["c1"].contains(arb(1) / 2)
    bad = _prove([c1, mpmath.mpf(1) / 4], [*off, arb(0), arb(0)], family="polynomial2")
    assert not bad.certified and "not 0 on the box" in (bad.reason or "")


def test_a_spent_budget_skips_the_proof_with_its_reason(readme_design) -> None:  # type: ignore[no-untyped-def]
    (sol,) = readme_design.solutions
    spent = SearchBudget(limit=100.0, used=100.0)
    proof = _prove(list(sol.values[0]), _targets(), budget=spent)
    assert not proof.certified and proof.reason is not None and "budget" in proof.reason


def test_a_quadrature_family_says_why_it_is_not_proved() -> None:
    d = design_enn("tanh", "a*tanh(b*x)", dps=15, starts=2)
    for sol in d.solutions:
        assert sol.proof is not None and not sol.proof.certified
        assert "closed-form" in (sol.proof.reason or "")
        assert sol.to_dict()["certified"] is False


def test_the_layer_chain_rule_matches_central_differences() -> None:
    """The Jacobian carried through two layers (∂ wrt the previous layer's values too) against
    central differences of the same network's values at 50 digits (h = 1e-20)."""
    from deqrmt.numeric._design_proof import _network

    fam = get_family("hard_tanh")
    point = [mpmath.mpf("0.8"), mpmath.mpf("1.3"), mpmath.mpf("1.7"), mpmath.mpf("0.6")]

    def values(p: list[mpmath.mpf]) -> dict[str, arb]:
        with workprec(300):
            thetas = [[_mpf_to_arb(v) for v in p[:2]], [_mpf_to_arb(v) for v in p[2:]]]
        return _network(fam, thetas, [], sp.Rational(3, 2), True, 300)[0]

    with workprec(300):
        thetas = [[_mpf_to_arb(v) for v in point[:2]], [_mpf_to_arb(v) for v in point[2:]]]
    _, grad = _network(fam, thetas, [0, 1, 2, 3], sp.Rational(3, 2), True, 300)
    with mpmath.workdps(50):
        h = mpmath.mpf("1e-20")
        for j in range(4):
            up, down = list(point), list(point)
            up[j] += h
            down[j] -= h
            hi, lo = values(up), values(down)
            for k in ("tau", "alpha_1", "alpha_4", "beta_1", "kappa"):
                fd = (
                    mpmath.mpf(hi[k].mid().str(45, radius=False))
                    - mpmath.mpf(lo[k].mid().str(45, radius=False))
                ) / (2 * h)
                exact = mpmath.mpf(grad[k][j].mid().str(45, radius=False))
                assert abs(fd - exact) <= mpmath.mpf("1e-15") * max(1, abs(exact)), (k, j)


def _mpf_to_arb(v: mpmath.mpf) -> arb:
    return arb(mpmath.nstr(v, 60))


@pytest.mark.parametrize("deq_name", ["silu", "gelu"])  # gelu's solution has c3_1 < 0
def test_a_two_layer_design_with_held_parameters_is_proved_and_contains_the_root(
    deq_name: str,
) -> None:
    """silu/gelu DEQ ← two cubic layers (six parameters, c1 of each layer held at its 2-digit
    value): the proof's balls contain the root of the four equations found by findroot at 50
    digits."""
    d = design_enn(deq_name, "polynomial3", dps=20, starts=4)
    sol = d.solutions[0]
    assert sol.proof is not None and sol.proof.certified, sol.proof
    fam = get_family("polynomial3")
    held = [Fraction(layer["c1"]) for layer in sol.params]
    with mpmath.workdps(60):
        deq = deq_coefficients(deq_name, dps=55).values
        targets = [
            deq["gamma_star"].value ** 2,
            *(deq[k].value for k in ("alpha_1", "alpha_2", "alpha_3")),
        ]

        def f(*x: mpmath.mpf) -> list[mpmath.mpf]:
            acts = [
                fam.instantiate([sp.Rational(held[l].numerator, held[l].denominator),
                                 _rational(x[2 * l]), _rational(x[2 * l + 1])])
                for l in range(2)
            ]  # fmt: skip
            last = explicit_coefficients(acts, dps=55, certify=False).layers[-1]
            vals = [last["tau"].value ** 2, last["alpha_1"].value, last["alpha_2"].value,
                    last["alpha_3"].value]  # fmt: skip
            return [v - t for v, t in zip(vals, targets, strict=True)]

        start = [mpmath.mpf(sol.params[l][k]) for l in range(2) for k in ("c2", "c3")]
        root = mpmath.findroot(f, start, tol=mpmath.mpf(10) ** -90)
        d_json = sol.to_dict()
        for i, (l, k) in enumerate((l, k) for l in range(2) for k in ("c2", "c3")):
            ball = d_json["balls"][l][k]
            mid, rad = mpmath.mpf(ball["midpoint"]), mpmath.mpf(ball["radius"])
            assert 0 < rad < mpmath.mpf("1e-25")
            assert abs(root[i] - mid) <= rad, (l, k)
        for l in range(2):  # the held parameters are printed as what was held
            assert Fraction(d_json["balls"][l]["c1"]["midpoint"]) == held[l]


def test_a_design_against_unproven_deq_values_says_so() -> None:
    deq = deq_coefficients("tanh", dps=15, certify=False)
    assert not deq.certified
    (sol,) = design_enn(deq, "hard_tanh", starts=2).solutions
    assert sol.proof is not None and not sol.proof.certified
    assert "DEQ" in (sol.proof.reason or "") and "not proven" in (sol.proof.reason or "")


def test_a_box_across_the_family_constraint_is_refused() -> None:
    """hard tanh's closed forms assume c > 0: a box reaching c ≤ 0 must not be evaluated."""
    from deqrmt.numeric._design_proof import NotProvable, _network

    with pytest.raises(NotProvable, match=r"constraints \(c > 0\) are not proved"):
        _network(get_family("hard_tanh"), [[arb("0.7"), arb("0.05", "0.1")]], [0, 1],
                 sp.Integer(1), False, 100)  # fmt: skip


def test_a_negative_parameter_enters_with_its_sign() -> None:
    from deqrmt.numeric._design_proof import _mpf_arb

    ctx = mpmath.MPContext()
    ctx.dps = 50
    with workprec(200):
        assert _mpf_arb(ctx.mpf("-0.25")) == arb(-1) / 4
        assert _mpf_arb(ctx.mpf(-3)) == -3 and _mpf_arb(ctx.mpf(0)) == 0

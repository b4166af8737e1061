"""Issue #5: designed ENNs match the DEQ's coefficients, checked by an independent recomputation.

The returned parameters (decimal strings) are turned into exact library activations and fed to
the explicit-network path (`explicit_coefficients`), which shares no code with the design
solver's family moments; its coefficients must equal the DEQ's to 25 digits.
"""

from __future__ import annotations

import mpmath
import pytest

from deqrmt import InvalidArgument
from deqrmt.numeric import deq_coefficients, explicit_coefficients
from deqrmt.numeric._design import design_enn

DPS = 30


def _close(a: mpmath.mpf, b: mpmath.mpf, digits: int = 25) -> bool:
    with mpmath.workdps(60):
        return bool(abs(a - b) <= mpmath.mpf(10) ** (-digits) * max(1, abs(b)))


def _layers(family: str, params: list[dict[str, str]]) -> list[str]:
    if family == "hard_tanh":
        return [f"hard_tanh({p['a']}, {p['c']})" for p in params]
    # the leaky-ReLU family is slope a right of 0, b left of it, with a > b: max(a x, b x)
    return [f"max({p['a']}*x, {p['b']}*x)" for p in params]


@pytest.mark.parametrize(
    ("deq", "family", "layers"),
    [("tanh", "hard_tanh", 1), ("relu", "leaky_relu", 2)],
)
def test_ck_design_matches_to_25_digits(deq: str, family: str, layers: int) -> None:
    d = design_enn(deq, family, dps=DPS, starts=6, seed=1)
    assert d.layers == layers  # the depth rule picked the paper's depth
    assert d.solutions
    target = deq_coefficients(deq, dps=DPS).values
    # issue #10 (6): one solution per symmetry orbit, the symmetry named, the scale explained
    if family == "hard_tanh":
        assert len(d.solutions) == 1 and d.symmetries == ("a → -a (φ → -φ)",)
        assert float(d.solutions[0].params[0]["a"]) > 0
    else:
        assert any("mirror" in s for s in d.symmetries)
        assert any("rescaling" in s for s in d.symmetries)
        (note,) = d.to_dict()["depth_rule"]["normalization"]
        assert "max(|a_1|, |b_1|) = 1" in note and "homogeneous" in note and "λ" in note
        canon = [tuple(float(v) for layer in s.params for v in layer.values()) for s in d.solutions]
        assert len(set(canon)) == len(canon)  # no two reported solutions are mirror copies
        for s in d.solutions:
            assert max(abs(float(v)) for v in s.params[0].values()) == 1
    for sol in d.solutions:
        assert sol.residual < mpmath.mpf("1e-25")
        enn = explicit_coefficients(_layers(family, list(sol.params)), dps=DPS).layers[-1]
        assert _close(enn["tau"].value, target["gamma_star"].value)
        for k in ("alpha_1", "alpha_2", "alpha_3"):
            assert _close(enn[k].value, target[k].value), k


def test_ntk_design_matches_to_25_digits() -> None:
    """DEQ (a, A), B fixed  ↔  ENN with its input layer fixed."""
    d = design_enn("tanh", "hard_tanh", kernel="ntk", dps=DPS, starts=4)
    target = deq_coefficients("tanh", dps=DPS).values
    for sol in d.solutions:
        enn = explicit_coefficients(
            _layers("hard_tanh", list(sol.params)), dps=DPS, input_layer_trainable=False
        ).layers[-1]
        assert _close(enn["kappa"].value, target["kappa_star"].value)
        assert _close(enn["beta_1"].value, target["beta_1"].value)


@pytest.mark.parametrize("deq", ["gelu", "silu"])
def test_two_layer_designs_for_new_activations(deq: str) -> None:
    """No new code: a two-layer cubic-polynomial ENN for GELU/SiLU DEQs (α*₂ ≠ α*₃/2).

    (Two-layer leaky ReLU has only three effective parameters, its scaling symmetry eating the
    fourth; it matches the homogeneous ReLU DEQ but not GELU/SiLU, and says so.)
    """
    d = design_enn(deq, "polynomial3", dps=20, starts=4)
    assert d.layers == 2 and not d.depth_rule["one_layer_suffices"]
    assert d.solutions and all(s.residual < mpmath.mpf("1e-15") for s in d.solutions)
    target = deq_coefficients(deq, dps=20).values
    sol = d.solutions[0]
    acts = [f"polynomial(0, {p['c1']}, {p['c2']}, {p['c3']})" for p in sol.params]
    enn = explicit_coefficients(acts, dps=20).layers[-1]
    for k in ("alpha_1", "alpha_2", "alpha_3"):
        assert _close(enn[k].value, target[k].value, digits=12), k


def test_depth_rule_refuses_one_layer_for_relu() -> None:
    with pytest.raises(InvalidArgument, match="layers=2"):
        design_enn("relu", "hard_tanh", layers=1, dps=20)


def test_too_few_parameters_is_a_clear_error() -> None:
    # one parameter cannot meet the two nontrivial CK equations of a tanh DEQ
    with pytest.raises(InvalidArgument, match="parameters"):
        design_enn("tanh", "a*x", dps=20, starts=2)


def test_hard_tanh_sign_copies_are_one_orbit() -> None:
    """Issue #10 (6): ±a gave two 'solutions'; now one, with the symmetry and copies named."""
    lines: list[str] = []
    d = design_enn("tanh", "hard_tanh", dps=20, starts=6, seed=3, progress=lines.append)
    assert len(d.solutions) == 1
    sol = d.solutions[0]
    assert float(sol.params[0]["a"]) > 0 and float(sol.params[0]["c"]) > 0
    out = d.to_dict()
    assert out["symmetries"] == ["a → -a (φ → -φ)"]
    assert out["solutions"][0]["copies_found"] == sol.copies_found >= 1
    assert "normalization" not in out["depth_rule"]  # isolated solutions: nothing fixed
    # progress: one line per multi-start, then the symmetry test
    starts = [ln for ln in lines if "multi-start" in ln]
    assert starts and starts[-1].endswith(")") and "6/6" in " ".join(lines)


def test_sixteen_sign_copies_have_one_canonical_member() -> None:
    """The orbit step alone: a → -a, b → -b (and both) per layer on a two-layer point."""
    import itertools

    from deqrmt.numeric._design import _canonical, _Transform

    ts = [_Transform((0, 1), (-1, 1)), _Transform((0, 1), (1, -1)), _Transform((0, 1), (-1, -1))]
    group = list(itertools.product([None, *ts], repeat=2))
    point = [mpmath.mpf("0.7"), mpmath.mpf("1.3"), mpmath.mpf("0.4"), mpmath.mpf("2.1")]
    canon = set()
    for sa1, sb1, sa2, sb2 in itertools.product((1, -1), repeat=4):
        x = [sa1 * point[0], sb1 * point[1], sa2 * point[2], sb2 * point[3]]
        _, y = _canonical((x, x), group, 2, 2, False, mpmath.mp, mpmath.mp)
        canon.add(tuple(y))
    assert canon == {tuple(point)}


def test_normalization_text_explains_the_scaling_symmetry() -> None:
    from deqrmt.numeric._design import _normalization_text
    from deqrmt.symbolic._family import get_family

    fam = get_family("leaky_relu")
    (text,) = _normalization_text(fam, {3: mpmath.mpf(-1)}, 2, 2, True, 1, [1, 0.5, 2, 1], True)
    assert text.startswith("max(|a_1|, |b_1|) = 1: the family is positively homogeneous")
    assert "continuous scaling symmetry" in text

"""One verdict rule for ``validate``, ``check --mc`` and ``enn-check`` (issue 23, point 3).

The error sequences below are the ones measured by ``deqrmt validate … --no-mc --json`` (seed 0,
paper preset): tanh at σ_a² = 0.2 and sin(x)+x/2 at σ_a² = 0.5.  The wiring tests replace the
measurement of one n (``_sweep._measure_point``) by those fixed errors, so both commands judge
identical numbers, fast and deterministically.
"""

from __future__ import annotations

import argparse
import json
import math
import types
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("torch")

from deqrmt import InvalidArgument  # noqa: E402
from deqrmt.validate import _sweep, judge, judge_errors  # noqa: E402
from deqrmt.validate._compare import KernelErrors  # noqa: E402
from deqrmt.validate._verdict import REFERENCE_N, SCATTER  # noqa: E402

#: n → (CK, NTK) exact-vs-equivalent errors, measured (seed 0)
TANH = {128: (0.4075810785, 0.4257463783), 256: (0.2395780127, 0.2515768041)}
SIN = {256: (0.2890896494, 0.3817328092), 512: (0.1993800016, 0.2700168046)}


def _judge(table: dict[int, tuple[float, float]]) -> Any:
    ns = sorted(table)
    return judge(ns, [table[n][0] for n in ns], [table[n][1] for n in ns])


# -- the rule itself ---------------------------------------------------------------------------


def test_tanh_128_256_no_longer_contradicts_256_alone() -> None:
    """Issue 23: NTK 0.426 at n=128 was over the point bound 0.424 while n=256 alone passed."""
    both = _judge(TANH)
    alone = _judge({256: TANH[256]})
    assert both.passed, both.reasons
    assert alone.passed, alone.reasons
    ntk = both.kernels[1]
    assert ntk.rate.passed is True and ntk.rate.slope == pytest.approx(-0.7587, abs=1e-3)
    assert ntk.level is not None and ntk.level.value < 0.15


def test_sin_level_fails_alike_with_one_or_two_sample_sizes() -> None:
    """Issue 23: validate --n 512 said REJECTED, check --mc (n = 256, 512) PASS, same errors."""
    one = _judge({512: SIN[512]})
    two = _judge(SIN)
    assert not one.passed and not two.passed
    assert one.failed == ("level",) and two.failed == ("level",)
    assert one.rate_passed is None and two.rate_passed is True
    assert "NTK: level" in two.reasons[0] and "rate passed" in two.reasons[0]


def test_flat_errors_are_rejected_on_the_rate() -> None:
    """A deliberately wrong equivalent: its error does not fall (slope 0)."""
    for ns in ((256, 512, 1024), (128, 256, 512, 1024, 2048)):
        v = judge_errors(ns, {"CK": [0.05] * len(ns)})
        assert not v.passed
        assert v.failed == ("rate",), v.reasons  # the level (0.05 < 0.15) is fine
        assert v.kernels[0].rate.passed is False
        assert "rate" in v.reasons[0] and "flatter" in v.reasons[0]


def test_flat_noisy_errors_are_rejected_on_the_rate() -> None:
    rng = np.random.default_rng(7)
    ns = np.array([256, 512, 1024, 2048])
    for _ in range(20):
        errs = 0.05 * np.exp(rng.normal(0, SCATTER * np.sqrt(REFERENCE_N / ns)))
        assert judge_errors(ns.tolist(), {"NTK": errs.tolist()}).rate_passed is False


def test_clean_square_root_law_with_noise_passes() -> None:
    rng = np.random.default_rng(1)
    for ns in ((128, 256), (256, 512, 1024), (128, 256, 512, 1024, 2048)):
        n = np.array(ns, float)
        for _ in range(20):
            errs = (
                0.1 * np.sqrt(REFERENCE_N / n) * np.exp(rng.normal(0, SCATTER * np.sqrt(1024 / n)))
            )
            v = judge_errors(ns, {"CK": errs.tolist()})
            assert v.passed, v.reasons
            rate = v.kernels[0].rate
            assert rate.slope is not None and rate.stderr is not None
            assert abs(rate.slope + 0.5) < 4 * rate.stderr  # the stated scatter is the real one


def test_one_sample_size_gives_a_level_only_verdict() -> None:
    v = judge([256], [0.1], [0.12])
    assert v.passed and v.rate_passed is None
    assert "rate not measured" in v.summary()
    assert all(k.rate.slope is None and k.rate.passed is None for k in v.kernels)
    d = v.as_dict()
    assert d["rate"]["passed"] is None and d["rate"]["ck"]["slope"] is None
    assert d["level"]["ntk"]["value"] == pytest.approx(0.06)  # 0.12·(256/1024)^½
    bad = judge([256], [0.1], [0.5])
    assert not bad.passed and bad.failed == ("level",)


def test_non_finite_error_fails_and_bad_thresholds_are_refused() -> None:
    v = judge([256, 512], [0.1, math.nan], [0.1, 0.07])
    assert not v.passed and "CK: non-finite error" in v.reasons
    with pytest.raises(InvalidArgument, match="max_error=…"):
        judge([256], [0.1], [0.1], max_error=0)
    with pytest.raises(InvalidArgument, match="differ in length"):
        judge([256, 512], [0.1], [0.1, 0.1])
    with pytest.raises(InvalidArgument, match="max_error=…"):
        _sweep.ValidationConfig("tanh", max_error=-1.0)


def test_known_monte_carlo_variance_widens_the_slope_interval() -> None:
    ns = [256, 512, 1024]
    errs = {"CK": [0.2, 0.14, 0.1]}
    plain = judge_errors(ns, errs).kernels[0].rate.stderr
    wider = judge_errors(ns, errs, extra_scatter={"CK": [0.2, 0.2, 0.2]}).kernels[0].rate.stderr
    assert plain is not None and wider is not None and wider > 2 * plain


@settings(max_examples=200, deadline=None)
@given(
    ns=st.lists(st.integers(16, 8192), min_size=1, max_size=5, unique=True),
    data=st.data(),
    c=st.floats(1e-3, 1.0, exclude_max=True),
)
def test_smaller_errors_never_turn_a_pass_into_a_fail(ns: list[int], data: Any, c: float) -> None:
    errs = data.draw(st.lists(st.floats(1e-4, 2.0), min_size=len(ns), max_size=len(ns)))
    ns = sorted(ns)
    before = judge_errors(ns, {"CK": errs})
    after = judge_errors(ns, {"CK": [c * e for e in errs]})
    if before.passed:
        assert after.passed, after.reasons
    assert after.kernels[0].rate.passed == before.kernels[0].rate.passed


# -- the same numbers through each caller's wiring ---------------------------------------------


def _fake_measure(table: dict[int, tuple[float, float]]) -> Any:
    coefficients = types.SimpleNamespace(tau0=1.0, as_floats=dict, label="fixed")

    def measure(
        config: Any, n: int, activation: Any, device: Any, dtype: Any, tick: Any
    ) -> tuple[Any, Any]:
        ck, ntk = table[n]
        point = _sweep.SweepPoint(
            n=n,
            p=config.p_of(n),
            m=config.m,
            ck=KernelErrors(ck),
            ntk=KernelErrors(ntk),
            seconds=0.0,
            coefficients=coefficients,  # type: ignore[arg-type]
            spectra={},
            timings={},
            exact_method="fixed",
            exact_degree=0,
            deq_iterations=(),
        )
        return point, activation

    return measure


def _validate_cli(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> tuple[int, dict[str, Any]]:
    from deqrmt.cli import validate as cli

    p = argparse.ArgumentParser()
    cli.configure_parser(p)
    args = p.parse_args([*argv, "--no-mc", "--device", "cpu", "--json"])
    args.command = "validate"
    rc = cli.run(args)
    return rc, json.loads(capsys.readouterr().out)


def _check_mc(activation: str, sigma_a2: str) -> Any:
    from deqrmt.check._monte_carlo import monte_carlo_item
    from deqrmt.numeric import DEQProblem

    return monte_carlo_item(DEQProblem.make(activation, sigma_a2, None, 1, 30), device="cpu")


@pytest.mark.parametrize(
    ("activation", "sigma_a2", "table", "passed", "failed"),
    [
        ("sin(x)+x/2", "0.5", SIN, False, ["level"]),
        ("tanh", "0.2", {256: TANH[256], 512: (0.157, 0.166)}, True, []),
    ],
)
def test_validate_and_check_mc_agree_on_the_same_errors(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    activation: str,
    sigma_a2: str,
    table: dict[int, tuple[float, float]],
    passed: bool,
    failed: list[str],
) -> None:
    monkeypatch.setattr(_sweep, "_measure_point", _fake_measure(table))
    ns = ",".join(map(str, sorted(table)))
    rc, out = _validate_cli([activation, "--sigma-a2", sigma_a2, "--n", ns], capsys)
    item = _check_mc(activation, sigma_a2)
    assert out["passed"] is passed and rc == (0 if passed else 1)
    assert out["verdict"]["failed"] == failed
    assert item.passed is passed, item.line()
    assert (
        out["verdict"]
        == judge(
            sorted(table),
            [table[n][0] for n in sorted(table)],
            [table[n][1] for n in sorted(table)],
        ).as_dict()
    )
    if not passed:
        assert "REJECTED (level)" in item.explanation
    # the keys kept from before issue 23, next to the new ones
    assert set(out["verdict"]) >= {"passed", "reasons", "max_slope", "max_error", "rate", "level"}
    assert out["reasons"] == out["verdict"]["reasons"]
    assert set(out["verdict"]["rate"]["ntk"]) >= {"slope", "stderr", "interval", "passed"}
    assert set(out["verdict"]["level"]["ntk"]) >= {"value", "bound", "passed"}


def test_validate_text_report_names_rate_and_level(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from deqrmt.cli import validate as cli

    monkeypatch.setattr(_sweep, "_measure_point", _fake_measure({512: SIN[512]}))
    p = argparse.ArgumentParser()
    cli.configure_parser(p)
    rc = cli.run(p.parse_args(["sin(x)+x/2", "--sigma-a2", "0.5", "--n", "512", "--no-mc"]))
    text = capsys.readouterr().out
    assert rc == 1
    assert "rate:" in text and "not measured (one n)" in text
    assert "level:" in text and "REJECTED (level): NTK: level" in text


def test_enn_check_decides_by_the_same_rule() -> None:
    from deqrmt.validate._certificate import certificate_decision

    def runs(designed: list[float], naive: list[float]) -> list[dict[str, Any]]:
        return [
            {"n": n, "designed_exact": d, "naive_exact": c}
            for n, d, c in zip((256, 512, 1024), designed, naive, strict=True)
        ]

    good = [0.021, 0.015, 0.0105]
    passed, reasons, verdict = certificate_decision(runs(good, [0.06] * 3))
    assert passed and not reasons
    assert verdict.as_dict() == judge_errors((256, 512, 1024), {"designed": good}).as_dict()
    # a flat designed error (it used to pass: "the last ≤ 1.05 × the first") fails on the rate
    passed, reasons, verdict = certificate_decision(runs([0.02, 0.02, 0.0205], [0.2] * 3))
    assert not passed and verdict.failed == ("rate",) and reasons[0].startswith("designed: rate")
    # no better than the naive control
    passed, reasons, _ = certificate_decision(runs(good, [0.015] * 3))
    assert not passed and reasons == [
        "control: at n=1024 the designed ENN's error 0.0105 is not below half the naive ENN's 0.015"
    ]

"""``proven_or_agreed``: the one fallback of every engine (proven by Arb, else two evaluations
agree, with the reason), and the engines that use it say why a value is not proven."""

from __future__ import annotations

import dataclasses

import pytest

from deqrmt.numeric._growth import NotEnclosable
from deqrmt.numeric._verify import proven_or_agreed


@dataclasses.dataclass(frozen=True)
class _Result:
    how: str
    reason: str | None = None


def _agree() -> _Result:
    return _Result("agreed")


def test_a_proof_is_returned_as_it_is() -> None:
    assert proven_or_agreed(lambda: _Result("proven"), _agree) == _Result("proven", None)


def test_outside_the_enclosure_rules_the_agreed_result_carries_the_reason() -> None:
    def prove() -> _Result:
        raise NotEnclosable("no growth bound for zeta(x)")

    assert proven_or_agreed(prove, _agree) == _Result("agreed", "no growth bound for zeta(x)")


def test_any_other_error_is_not_a_fallback() -> None:
    def prove() -> _Result:
        raise ZeroDivisionError("a bug, not a missing rule")

    with pytest.raises(ZeroDivisionError, match="a bug"):
        proven_or_agreed(prove, _agree)


def test_the_agreed_path_runs_only_when_the_proof_fails() -> None:
    calls: list[str] = []

    def agree() -> _Result:
        calls.append("agree")
        return _Result("agreed")

    proven_or_agreed(lambda: _Result("proven"), agree)
    assert calls == []


def test_sensitivities_outside_the_rules_are_agreed_with_the_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import deqrmt.numeric._sensitivity as sens

    def refuse(problem: object, ntk: bool) -> None:
        raise NotEnclosable("a test refusal")

    monkeypatch.setattr(sens, "_certified", refuse)
    sens._dispatch.cache_clear()
    try:
        got = sens.sensitivities("tanh", sigma_a2="0.15", dps=11)
        agreed = sens.sensitivities("tanh", sigma_a2="0.15", dps=11, certify=False)
    finally:
        sens._dispatch.cache_clear()  # no refused result stays cached for other tests
    assert not got.certified and got.reason == "a test refusal"
    assert agreed.reason is None
    assert got["alpha_1"]["sigma_a2"].text == agreed["alpha_1"]["sigma_a2"].text
    assert "beta_1" in got  # the NTK converges at σ_a² = 0.15: its keys are there

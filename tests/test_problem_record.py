"""DEQProblem validates each field once: ``make`` supplies defaults, the record checks."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

import deqrmt.numeric._problem as problem_module
from deqrmt import InvalidArgument
from deqrmt.numeric import DEQProblem


def _count(monkeypatch: pytest.MonkeyPatch, name: str) -> Counter[str]:
    calls: Counter[str] = Counter()
    original = getattr(problem_module, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[repr(args[1]) if name == "exact_number" else repr(args[0])] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(problem_module, name, counted)
    return calls


def test_make_checks_every_field_once(monkeypatch: pytest.MonkeyPatch) -> None:
    ranges = _count(monkeypatch, "in_range")
    trainable = _count(monkeypatch, "parse_trainable")
    dps = _count(monkeypatch, "check_dps")
    p = DEQProblem.make("tanh", sigma_a2="0.2", sigma_b2="1/2", tau0=2, dps=20, trainable="a,B")
    assert (str(p.sigma_a2), str(p.sigma_b2), str(p.tau0), p.trainable) == (
        "1/5",
        "1/2",
        "2",
        ("a", "B"),
    )
    assert ranges == Counter({"'sigma_a2'": 1, "'sigma_b2'": 1, "'tau0'": 1})
    assert sum(trainable.values()) == 1 and sum(dps.values()) == 1


def test_an_out_of_range_sigma_a2_is_named_before_the_default_sigma_b2() -> None:
    with pytest.raises(InvalidArgument, match="outside the accepted range"):
        DEQProblem.make("tanh", sigma_a2=200)
    with pytest.raises(InvalidArgument, match="leaves σ_b² at its default"):
        DEQProblem.make("tanh", sigma_a2=2)

"""Every command's --json follows docs/json.md (issue 10): one schema, inputs as given, floats."""

from __future__ import annotations

import json
from decimal import Decimal
from fractions import Fraction

import pytest

from deqrmt import __version__
from deqrmt._json import SCHEMA, float_copy, is_exact_number
from deqrmt.cli import main

COMMANDS = [
    ["coefficients", "tanh", "--sigma-a2", "0.2", "--dps", "15"],
    ["coefficients", "relu", "--sigma-a2", "2.5", "--sigma-b2", "1", "--dps", "12"],
    ["explicit", "relu", "tanh", "--dps", "12"],
    ["sphere", "relu", "--dps", "12"],
    ["design", "--deq", "tanh", "--family", "hard_tanh", "--dps", "12", "--starts", "4"],
    ["activations"],
    ["families"],
    ["check", "tanh"],
    ["bias", "1/(1-w)"],
    ["validate", "tanh", "--n", "64,128", "--no-mc"],
    ["spectrum", "tanh", "--data", "gmm", "--n", "64"],
    ["risk", "tanh", "--n", "32", "--ratios", "0.5,2"],
]


def _exact_leaves(value, path=()):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _exact_leaves(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _exact_leaves(v, (*path, i))
    elif is_exact_number(value):
        yield path, value


def _at(doc, path):
    for k in path:
        doc = doc[k]
    return doc


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: a[0] + ("-" + a[1] if len(a) > 1 else ""))
def test_json_follows_the_convention(argv, capsys):
    if argv[0] == "validate":
        pytest.importorskip("torch")
    code = main([*argv, "--json"])
    out = capsys.readouterr().out
    assert code in (0, 1), out
    doc = json.loads(out)
    assert doc["schema"] == SCHEMA and doc["command"] == argv[0] and doc["version"] == __version__
    inputs = doc["inputs"]
    assert isinstance(inputs, dict)
    # inputs echoed as given: a value typed on the command line comes back as the same string
    for flag, typed in zip(argv[1:], argv[2:], strict=False):
        if flag.startswith("--") and not typed.startswith("--"):
            key = flag[2:].replace("-", "_")
            if key in inputs:
                assert str(inputs[key]) == typed, (key, inputs[key], typed)
    result = {
        k: v
        for k, v in doc.items()
        if k not in ("schema", "command", "version", "inputs", "floats")
    }
    assert doc["floats"] == (float_copy(result) or {})
    for path, text in _exact_leaves(result):
        exact = Fraction(text) if "/" in text else Decimal(text)
        assert _at(doc["floats"], path) == pytest.approx(float(exact), rel=1e-15, abs=1e-300)


def test_float_copy_keeps_structure_and_drops_text():
    got = float_copy({"a": "0.25", "b": "x", "c": ["1/4", None], "d": {"e": "tanh"}})
    assert got == {"a": 0.25, "c": [0.25, None]}

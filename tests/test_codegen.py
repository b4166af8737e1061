"""Modules from ``deqrmt codegen`` evaluate for every activation (issues 25 and 21).

They integrate over the whole line with ``mpmath.fp`` to find τ*, where ``math.exp`` of a large
argument overflowed (sigmoid, silu, softplus, mish, …: ``OverflowError: math range error``); the
printer's stable forms fix that.  Each test compares the module with the engine, which proves
its digits by Arb: an independent evaluation (tanh-sinh over the line, floats for the scan),
not the same code.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from decimal import Decimal
from pathlib import Path
from typing import Any

import mpmath
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import deqrmt.testing as dt
from deqrmt._errors import ActivationError
from deqrmt.check import codegen_item
from deqrmt.numeric import deq_coefficients
from deqrmt.numeric._codegen import generate_module
from deqrmt.symbolic import LIBRARY, parse_activation

#: only mpmath on the path: the module needs nothing else (no sympy, no deqrmt)
_ONLY_MPMATH = textwrap.dedent(
    """
    import importlib.util, json, runpy, sys
    for name in ("sympy", "deqrmt", "numpy"):
        assert importlib.util.find_spec(name) is None, name
    module = runpy.run_path(sys.argv[1])
    import mpmath
    values = module["coefficients"](dps=30)
    print(json.dumps({k: mpmath.nstr(v, 30) for k, v in values.items()}))
    """
)


def _only_mpmath_path(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    site.mkdir()
    (site / "mpmath").symlink_to(Path(mpmath.__file__).parent, target_is_directory=True)
    return site


@pytest.mark.parametrize("activation", ["x*tanh(softplus(x))", "x*sigmoid(1.702*x)"])
def test_module_runs_with_only_mpmath_and_agrees_to_every_printed_digit(
    cli_prefix: list[str], tmp_path: Path, activation: str
) -> None:
    module = tmp_path / "act.py"
    subprocess.run(
        [*cli_prefix, "codegen", activation, "-o", str(module)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    engine = json.loads(
        subprocess.run(
            [*cli_prefix, "coefficients", activation, "--json"],
            check=True,
            capture_output=True,
            text=True,
            timeout=600,
        ).stdout
    )
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(_only_mpmath_path(tmp_path))}
    run = subprocess.run(
        [sys.executable, "-S", "-s", "-c", _ONLY_MPMATH, str(module)],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    got = json.loads(run.stdout)
    keys = [k for k in engine["digits"] if k in got]
    assert len(keys) == 11
    for k in keys:
        assert engine["digits"][k] == 30
        # the engine prints 30 significant digits, the module's nstr the same rounded value
        assert Decimal(got[k]) == Decimal(engine[k]), (k, got[k], engine[k])


def _library_specs() -> list[str]:
    return sorted("polynomial(0, 1, 0.25)" if n == "polynomial" else n for n in LIBRARY)


@pytest.mark.slow  # ~30 s of CPU; sigmoid runs in the default suite below
@pytest.mark.parametrize("spec", _library_specs())
def test_generated_module_item_passes_for_every_library_activation(spec: str) -> None:
    # the `deqrmt check` item "generated module vs engine", for every name `deqrmt activations`
    # lists (sign has no NTK: the check reports N/A)
    if spec in ("sign", "hardshrink"):
        with pytest.raises(ActivationError):
            deq_coefficients(spec, dps=15)
        return
    item = codegen_item(deq_coefficients(spec, dps=15))
    assert item.status == "PASS", item


def test_check_sigmoid_passes_its_generated_module_item(cli_prefix: list[str]) -> None:
    proc = subprocess.run(
        [*cli_prefix, "check", "sigmoid", "--json"], capture_output=True, text=True, timeout=600
    )
    items = {i["key"]: i["status"] for i in json.loads(proc.stdout)["items"]}
    assert items["codegen"] == "PASS" and proc.returncode == 0


def _load(source: str, path: Path) -> Any:
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _compare(act: Any, setting: dt.Setting, path: Path) -> None:
    dps = 15
    engine = deq_coefficients(act, setting.sigma_a2, setting.sigma_b2, setting.tau0, dps)
    module = _load(generate_module(act), path)
    got = module.coefficients(setting.sigma_a2, setting.sigma_b2, setting.tau0, dps)
    compared = 0
    for k, v in engine.values.items():
        if k in got:
            want = v.value
            assert abs(got[k] - want) <= mpmath.mpf(10) ** (5 - dps) * max(1, abs(want)), (k, act)
            compared += 1
    assert compared >= 10


@pytest.mark.parametrize(
    "text",
    [
        "-0.7*sigmoid(1.9*x + 0.4) + 0.3*x",  # exp of -u overflowed in floats for x << 0
        "exp(x)/(1 + exp(x))",
        "log(1 + exp(2*x))",
        pytest.param("1.2*softplus(-1.5*x - 0.2)", marks=pytest.mark.slow),
        pytest.param("softplus(x/2)", marks=pytest.mark.slow),
        pytest.param("x*sigmoid(3*x)", marks=pytest.mark.slow),
    ],
)
def test_generated_module_agrees_with_the_engine_where_floats_overflowed(
    tmp_path: Path, text: str
) -> None:
    _compare(parse_activation(text), dt.Setting("0.2", "0.8", "1"), tmp_path / "gen.py")


#: the parser's own strategy (deqrmt.testing), weighted towards smooth draws, which include the
#: quadrature kinds (tanh, erf, sigmoid, softplus) whose exponentials overflowed in floats
_ACTIVATIONS = st.one_of(
    dt.activations(cheap=False), dt.activations(kinds=("smooth",), cheap=False)
)


@settings(max_examples=8, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_generated_module_agrees_with_the_engine(
    tmp_path_factory: pytest.TempPathFactory, data: Any
) -> None:
    act = data.draw(_ACTIVATIONS, label="activation")
    setting = data.draw(dt.settings(act), label="setting")
    _compare(act, setting, tmp_path_factory.mktemp("gen") / "gen.py")

"""Outputs are bytes-for-bytes reproducible: no clock, no cache history, no hash seed decides them.

A SIGALRM budget once let ``deqrmt derive``/``latex``/``codegen`` depend on machine load (and on
whichever run filled the cache: an erf closed form found in 5 s but not in 0.4 s).  SymPy's
effort is now a count of Python calls (``deqrmt.symbolic._effort``).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

COMMANDS = {
    "derive": ["derive", "deq-ck", "--latex"],
    "latex": ["latex", "erf", "-o", "{out}"],
    "codegen": ["codegen", "gelu", "-o", "{out}"],
}


def _outputs(cli_prefix: list[str], cache: Path, work: Path, seed: str | None) -> dict[str, bytes]:
    env = dict(os.environ, DEQRMT_CACHE_DIR=str(cache))
    env.pop("DEQRMT_NO_CACHE", None)
    if seed is None:
        env.pop("PYTHONHASHSEED", None)
    else:
        env["PYTHONHASHSEED"] = seed
    work.mkdir(parents=True, exist_ok=True)
    out: dict[str, bytes] = {}
    for name, args in COMMANDS.items():
        target = work / f"{name}.out"
        argv = [a.replace("{out}", str(target)) for a in args]
        proc = subprocess.run(
            [*cli_prefix, *argv], env=env, cwd=work, capture_output=True, timeout=600
        )
        assert proc.returncode == 0, proc.stderr.decode()[-2000:]
        out[name] = target.read_bytes() if "{out}" in args else proc.stdout
    return out


def test_cli_outputs_do_not_depend_on_load_cache_or_hash_seed(
    cli_prefix: list[str], tmp_path: Path
) -> None:
    cold = _outputs(cli_prefix, tmp_path / "cache-a", tmp_path / "run-1", seed="0")
    # Same commands, a second empty cache, another hash seed, and two processes burning CPU.
    with contextlib.ExitStack() as stack:  # the burners are killed and reaped on every path
        for _ in range(2):
            burner = stack.enter_context(
                subprocess.Popen([sys.executable, "-c", "while True: pass"])
            )
            stack.callback(burner.kill)
        loaded = _outputs(cli_prefix, tmp_path / "cache-b", tmp_path / "run-2", seed="1")
    warm = _outputs(cli_prefix, tmp_path / "cache-a", tmp_path / "run-3", seed=None)
    for name in COMMANDS:
        assert cold[name] == loaded[name], f"{name}: cold idle vs cold loaded"
        assert cold[name] == warm[name], f"{name}: cold vs warm cache"
    assert list((tmp_path / "cache-a").glob("*.json"))  # the warm run did read a cache


_SYMPY_ATTEMPT = textwrap.dedent(
    """
    import os
    os.environ["DEQRMT_NO_CACHE"] = "1"
    import sympy as sp
    from deqrmt.symbolic import Activation, X, _effort, _expectation as E, library_activation

    act = Activation("probe", sp.erf(sp.Abs(X)))
    _, kind, k = E.MOMENTS["phi"]
    pieces = E._integrand_pieces(act, kind)
    print(sp.srepr(E._closed_sympy(E._weight(k), pieces)))  # closes well inside the budget
    E.SYMPY_INTEGRATE_CALLS = 100_000
    print(sp.srepr(E._closed_sympy(E._weight(k), pieces)))  # runs out: None
    ms = E.moment_set(library_activation("gelu"))
    print(sp.srepr(sorted((n, m.closed_form) for n, m in ms.moments.items())))
    """
)


def test_sympy_attempt_does_not_depend_on_the_hash_seed() -> None:
    outs = []
    for seed in ("0", "1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        proc = subprocess.run(
            [sys.executable, "-c", _SYMPY_ATTEMPT], env=env, capture_output=True, timeout=600
        )
        assert proc.returncode == 0, proc.stderr.decode()[-2000:]
        outs.append(proc.stdout)
    assert outs[0] == outs[1] == outs[2]
    first, exhausted, _ = outs[0].decode().splitlines()
    assert "atan" in first
    assert exhausted == "None"


@pytest.mark.parametrize("spec", ["erf", "gelu"])
def test_library_erf_moments_need_no_sympy_attempt(
    spec: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # erf of a linear argument is integrated exactly (Stein's identity), so the library's
    # erf-type closed forms cannot depend on any budget.
    from deqrmt.symbolic import _expectation, library_activation

    monkeypatch.setenv("DEQRMT_NO_CACHE", "1")

    def refuse(*args: object) -> None:
        raise AssertionError("SymPy integrate attempted")

    monkeypatch.setattr(_expectation, "bounded", refuse)
    ms = _expectation.moment_set.__wrapped__(library_activation(spec))
    closed = {n for n, m in ms.moments.items() if m.is_closed}
    assert {"phi", "d1", "d2", "d3", "d4"} <= closed

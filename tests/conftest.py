"""Shared fixtures: global mpmath state is restored, hypothesis runs few, slow-tolerant examples."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import mpmath
import pytest
from hypothesis import HealthCheck, settings

# tests/helpers.py is imported as a plain module by the test files.
sys.path.insert(0, str(Path(__file__).parent))

# Each example runs part of the engine (milliseconds to a second): no deadline, few examples.
# HYPOTHESIS_PROFILE=ci runs more.
settings.register_profile(
    "default",
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "ci",
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(autouse=True)
def _restore_mpmath_precision():
    """Every test starts and ends at mpmath's default precision, whatever it (or deqrmt) did."""
    prec = mpmath.mp.prec
    mpmath.mp.prec = 53
    try:
        yield
    finally:
        mpmath.mp.prec = prec


def _cli_prefix() -> list[str]:
    script = Path(sys.executable).parent / "deqrmt"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from deqrmt.cli import main; sys.exit(main())"]


@pytest.fixture(scope="session")
def cli_prefix() -> list[str]:
    """The command that runs the installed ``deqrmt`` console script."""
    return _cli_prefix()

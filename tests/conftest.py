"""Shared fixtures: global mpmath state is restored, hypothesis runs few, slow-tolerant examples.

Hermetic by construction, also under pytest-xdist (``-n auto``) and in random order
(pytest-randomly): each process that runs tests (each xdist worker) gets, before collection,
its own empty ``HOME`` (so nothing reads or writes the user's ``~/.cache``, ``~/.config``,
matplotlib's font cache, Dask's or Jupyter's configuration) and its own deqrmt cache; both are
inherited by every subprocess and removed at the end.  No test may depend on another's cache
entries or on the order tests run in.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import sys
import tempfile
from pathlib import Path

import mpmath
import pytest
from hypothesis import HealthCheck, settings

# tests/helpers.py is imported as a plain module by the test files.
sys.path.insert(0, str(Path(__file__).parent))

# Each example runs part of the engine (milliseconds to a second): no deadline, few examples.
# Under CI (CI=true, as .ci/run is run) the profile is derandomised: the same examples every
# run, so CI is steady; failing examples found by hand are pinned with @example.
# HYPOTHESIS_PROFILE=explore runs many random examples locally.
settings.register_profile(
    "default",
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "ci",
    max_examples=15,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "explore",
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "default")
)


#: What pytest_configure points at a private directory (and restores at the end).
_HERMETIC_VARS = (
    "HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "DEQRMT_CACHE_DIR",
    "DEQRMT_CACHE_KEY",
)  # fmt: skip
_SAVED: dict[str, str | None] = {}
_PRIVATE: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    """Before collection (test modules may compute at import): a private HOME and cache for
    this process, in os.environ (not monkeypatch, which is per test) so that subprocesses
    inherit them.  Each xdist worker runs this itself: one home and one cache per worker."""
    root = tempfile.mkdtemp(prefix="deqrmt-tests-")
    _PRIVATE.append(root)
    paths = {
        "HOME": os.path.join(root, "home"),
        "XDG_CACHE_HOME": os.path.join(root, "home", ".cache"),
        "XDG_CONFIG_HOME": os.path.join(root, "home", ".config"),
        "XDG_DATA_HOME": os.path.join(root, "home", ".local", "share"),
        "DEQRMT_CACHE_DIR": os.path.join(root, "deqrmt-cache"),
    }
    for name in _HERMETIC_VARS:
        _SAVED[name] = os.environ.get(name)
        if name in paths:
            os.makedirs(paths[name], exist_ok=True)
            os.environ[name] = paths[name]
    # The cache key too (issue 27): never ~/.config/deqrmt/cache.key; one key per process.
    os.environ["DEQRMT_CACHE_KEY"] = secrets.token_hex(32)
    _SAVED["MPLCONFIGDIR"] = os.environ.pop("MPLCONFIGDIR", None)  # matplotlib: under HOME
    # Ctrl-C as a terminal delivers it, however the suite was started: a shell without job
    # control starts background commands (`… &`, nohup) with SIGINT ignored, an ignore that
    # every child inherits and that Python then respects (no KeyboardInterrupt at all).  A
    # handler installed here is reset to the default at exec, so the processes the tests start
    # get Python's KeyboardInterrupt again.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_unconfigure(config: pytest.Config) -> None:
    for name, value in _SAVED.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    for root in _PRIVATE:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(autouse=True)
def _restore_mpmath_precision():
    """Every test starts and ends at mpmath's default precision, whatever it (or deqrmt) did."""
    prec = mpmath.mp.prec
    mpmath.mp.prec = 53
    try:
        yield
    finally:
        mpmath.mp.prec = prec


@pytest.fixture(scope="session", autouse=True)
def _no_internal_errors(tmp_path_factory: pytest.TempPathFactory):
    """The session fails if any `deqrmt` run took the internal-error path (exit 70, a bug).

    The CLI appends a line to ``$DEQRMT_BUG_LOG`` on that path; it is set in ``os.environ`` so
    console-script subprocesses inherit it.  A test that provokes a bug on purpose points the
    variable elsewhere with ``monkeypatch.setenv``.
    """
    log = tmp_path_factory.mktemp("bug-log") / "bugs.txt"
    log.touch()
    old = os.environ.get("DEQRMT_BUG_LOG")
    os.environ["DEQRMT_BUG_LOG"] = str(log)
    try:
        yield log
    finally:
        if old is None:
            os.environ.pop("DEQRMT_BUG_LOG", None)
        else:
            os.environ["DEQRMT_BUG_LOG"] = old
    bugs = log.read_text(encoding="utf-8")
    if bugs.strip():
        pytest.fail(f"`deqrmt` reached its internal-error path (exit 70):\n{bugs}", pytrace=False)


def _cli_prefix() -> list[str]:
    script = Path(sys.executable).parent / "deqrmt"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from deqrmt.cli import main; sys.exit(main())"]


@pytest.fixture(scope="session")
def cli_prefix() -> list[str]:
    """The command that runs the installed ``deqrmt`` console script."""
    return _cli_prefix()


# --- the three parametrizations of issue 13, shared by the bias tests -----------------------------


@pytest.fixture(scope="session")
def deq():  # type: ignore[no-untyped-def]
    """The diagonal DEQ β = 1/(1 − w) (readout 1)."""
    from deqrmt.symbolic._bias import derive_bias

    return derive_bias("1/(1-w)")


@pytest.fixture(scope="session")
def deq_out():  # type: ignore[no-untyped-def]
    """The diagonal DEQ with a trained readout, β = u/(1 − w)."""
    from deqrmt.symbolic._bias import derive_bias

    return derive_bias("u/(1-w)")


@pytest.fixture(scope="session")
def diagonal():  # type: ignore[no-untyped-def]
    """Woodworth et al.'s diagonal network β = u² − v²."""
    from deqrmt.symbolic._bias import derive_bias

    return derive_bias("u**2-v**2")

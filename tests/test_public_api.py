"""``deqrmt.__all__`` is the public API: complete, resolvable, and what ``dir(deqrmt)`` shows.

The expectation is derived from the package's own tables (``_LAZY``, the lazily loaded names, and
``deqrmt._errors.__all__``, the error classes), never typed in here, so that a name added to
``_LAZY`` on any branch is checked without touching this file.  ``import deqrmt`` stays lazy
(PEP 562): it imports neither SymPy nor torch (checked in a fresh interpreter).
"""

from __future__ import annotations

import subprocess
import sys

import deqrmt
from deqrmt import _errors


def test_all_lists_every_lazy_name_and_error() -> None:
    public = set(deqrmt.__all__)
    missing_lazy = sorted(set(deqrmt._LAZY) - public)
    assert not missing_lazy, f"names in deqrmt._LAZY but not in deqrmt.__all__: {missing_lazy}"
    missing_errors = sorted(set(_errors.__all__) - public)
    assert not missing_errors, f"error classes not in deqrmt.__all__: {missing_errors}"
    assert "__version__" in public
    assert len(deqrmt.__all__) == len(public), "deqrmt.__all__ has duplicates"


def test_every_error_class_is_exported() -> None:
    """Every ``DeqrmtError`` subclass the package defines is importable from ``deqrmt``."""
    defined = {
        name
        for name, obj in vars(_errors).items()
        if isinstance(obj, type) and issubclass(obj, _errors.DeqrmtError)
    }
    assert defined <= set(deqrmt.__all__), sorted(defined - set(deqrmt.__all__))


def test_every_public_name_resolves() -> None:
    unresolved = [name for name in deqrmt.__all__ if not hasattr(deqrmt, name)]
    assert not unresolved, f"deqrmt.__all__ names that do not resolve: {unresolved}"


def test_dir_is_the_public_api() -> None:
    shown = dir(deqrmt)
    assert sorted(shown) == sorted(deqrmt.__all__)
    for noise in ("Any", "TYPE_CHECKING", "annotations", "importlib"):
        assert noise not in shown


def test_star_import_gives_the_public_api() -> None:
    namespace: dict[str, object] = {}
    exec("from deqrmt import *", namespace)  # noqa: S102 - the statement under test
    assert set(deqrmt.__all__) <= set(namespace)


def test_import_stays_lazy() -> None:
    code = (
        "import sys, deqrmt; names = deqrmt.__all__; dir(deqrmt); "
        "heavy = [m for m in ('sympy', 'mpmath', 'torch', 'numpy') if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "", f"import deqrmt imported {proc.stdout.strip()}"

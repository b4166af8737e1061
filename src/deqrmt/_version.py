"""The package version: one home, read from the installed distribution's metadata.

Every module that needs the version (JSON documents, cache keys, generated code, the sweep
store, ``deqrmt --version``) imports it from here, never from the package root, so that no
module inside the package imports ``deqrmt/__init__.py`` (the import-layer test, tests/test_architecture.py).
"""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

__all__ = ["__version__"]

_DISTRIBUTION = "deqrmt"


def _from_source_tree() -> str:
    """The version in the source tree's ``pyproject.toml`` (an uninstalled checkout)."""
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    try:
        text = pyproject.read_text(encoding="utf-8")
    except OSError:
        return "0+unknown"
    # The [project] table's ``version = "…"``: the first such line (tomllib would parse the whole
    # file at every import; the line is written by hand and has one form).
    match = re.search(r'^version\s*=\s*"([^"\n]+)"\s*$', text, re.MULTILINE)
    return match.group(1) if match else "0+unknown"


def _version() -> str:
    try:
        return metadata.version(_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return _from_source_tree()


__version__: str = _version()

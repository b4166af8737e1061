"""Names a package loads on first use (PEP 562): one home for its ``__getattr__`` and ``__dir__``.

A package lists ``{name: module}`` and forwards its module-level ``__getattr__`` and ``__dir__``
here, so ``import deqrmt.numeric`` imports none of the modules behind its names until one is
read (``tests/test_cold_start.py`` keeps that so).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["load", "names"]


def load(package: str, table: Mapping[str, str], namespace: dict[str, Any], name: str) -> Any:
    """``name`` from the module ``table`` names (relative to ``package``), kept in
    ``namespace`` so that later lookups skip ``__getattr__``."""
    module = table.get(name)
    if module is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, package), name)
    namespace[name] = value
    return value


def names(namespace: Mapping[str, Any], public: Iterable[str]) -> list[str]:
    """``dir(package)``: what it holds already and every public name, sorted."""
    return sorted(set(namespace) | set(public))

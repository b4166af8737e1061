"""Where ``deqrmt sphere`` used to live; it is :mod:`deqrmt.cli.sphere` now (kept for imports)."""

from __future__ import annotations

from ..cli.sphere import configure_sphere_parser as configure_sphere_parser
from ..cli.sphere import run_sphere as run_sphere

__all__ = ["configure_sphere_parser", "run_sphere"]

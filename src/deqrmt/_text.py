"""Plain-text output shared by the command-line front ends (no heavy imports)."""

from __future__ import annotations

__all__ = ["table"]


def table(rows: list[tuple[str, str, str]], title: str) -> str:
    """A titled, column-aligned table of (name, symbol, value) rows."""
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    lines = [title, "-" * len(title)]
    lines += [f"{a:<{w0}}  {b:<{w1}}  {c}" for a, b, c in rows]
    return "\n".join(lines)

"""Regenerate the modules SymPy prints once: the general formulas and the library's activations.

    python tools/regenerate_formulas.py           # write the modules (atomically)
    python tools/regenerate_formulas.py --check   # exit 1 if a module is stale

``src/deqrmt/numeric/_generated_formulas.py`` comes from
:func:`deqrmt.numeric._formula_table.render_module`: every general formula (``derive_deq`` for
each trainable set, ``derive_fixed_point``, ``derive_layer``) derived by SymPy and printed by
the one printer.  ``src/deqrmt/validate/_generated_activations.py`` comes from
:func:`deqrmt.validate._activation_table.render_module`: φ and φ' of every library activation
that takes no parameters, printed by the same printer for the exact kernels (with its kinks
and closed form).  The same input gives the same bytes on every run.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "src" / "deqrmt" / "numeric" / "_generated_formulas.py"
ACTIVATIONS = ROOT / "src" / "deqrmt" / "validate" / "_generated_activations.py"


def _renderers() -> dict[Path, Callable[[], str]]:
    sys.path.insert(0, str(ROOT / "src"))
    from deqrmt.numeric._formula_table import render_module
    from deqrmt.validate._activation_table import render_module as render_activations

    return {TARGET: render_module, ACTIVATIONS: render_activations}


def _write(target: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".generated-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        os.replace(tmp, target)
    except BaseException:
        os.unlink(tmp)
        raise
    print(f"wrote {target} ({len(text)} characters)")


def main(argv: list[str]) -> int:
    if argv[1:] not in ([], ["--check"]):
        print(__doc__, file=sys.stderr)
        return 2
    stale = 0
    for target, render in _renderers().items():
        text = render()
        if argv[1:] == ["--check"]:
            current = target.read_text(encoding="utf-8") if target.exists() else ""
            if current != text:
                print(
                    f"{target} is stale; run python tools/regenerate_formulas.py", file=sys.stderr
                )
                stale = 1
            else:
                print(f"{target} is up to date")
        else:
            _write(target, text)
    return stale


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""Regenerate ``src/deqrmt/numeric/_generated_formulas.py`` from the SymPy derivations.

    python tools/regenerate_formulas.py           # write the module (atomically)
    python tools/regenerate_formulas.py --check   # exit 1 if the module is stale

The text comes from :func:`deqrmt.numeric._formula_table.render_module`: every general formula
(``derive_deq`` for each trainable set, ``derive_fixed_point``, ``derive_layer``) derived by
SymPy and printed by the one printer.  The same input gives the same bytes on every run.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "src" / "deqrmt" / "numeric" / "_generated_formulas.py"


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(ROOT / "src"))
    from deqrmt.numeric._formula_table import render_module

    text = render_module()
    if argv[1:] == ["--check"]:
        current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
        if current != text:
            print(f"{TARGET} is stale; run python tools/regenerate_formulas.py", file=sys.stderr)
            return 1
        print(f"{TARGET} is up to date")
        return 0
    if argv[1:]:
        print(__doc__, file=sys.stderr)
        return 2
    fd, tmp = tempfile.mkstemp(dir=TARGET.parent, prefix=".generated-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        os.replace(tmp, TARGET)
    except BaseException:
        os.unlink(tmp)
        raise
    print(f"wrote {TARGET} ({len(text)} characters)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

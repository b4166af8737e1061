"""``deqrmt families``: the activation families ``deqrmt design --family`` accepts."""

from __future__ import annotations

import argparse
from typing import Any

from ._common import add_command, add_json, print_json
from ._math_text import math_text

__all__ = ["EXAMPLES", "NAME", "register", "run"]

NAME = "families"


def register(subparsers: Any) -> argparse.ArgumentParser:
    p = add_command(
        subparsers,
        NAME,
        help="list the ENN activation families for `deqrmt design`",
        description="The library's parametric activation families φ(x; θ): formula, each "
        "parameter's meaning and the constraints on them. `deqrmt design --family` also accepts "
        "any expression in x whose other names are parameters, e.g. 'a*tanh(b*x)' (smooth, no "
        "kinks). A design reports one solution per symmetry orbit (e.g. a and -a for hard_tanh).",
    )
    add_json(p)
    return p


def run(args: argparse.Namespace) -> int:
    from ..symbolic._family import family_catalogue

    entries = family_catalogue()
    if args.json:
        print_json(args, {"families": [e.to_dict() for e in entries]})
        return 0
    for e in entries:
        print(f"{e.name}: φ(x) = {math_text(e.formula)}")
        for name, meaning in e.params:
            print(f"  {name:<4} {meaning}")
        if e.constraints:
            print(f"  constraints: {', '.join(e.constraints)}")
        print(f"  {e.note}")
    print("any expression in x with parameters, e.g. 'a*tanh(b*x)', is a family too.")
    return 0


#: Real invocations shown on its page of the CLI reference (run when the docs build).
EXAMPLES: tuple[str, ...] = ("families",)

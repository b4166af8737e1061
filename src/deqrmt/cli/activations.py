"""``deqrmt activations``: the activation library."""

from __future__ import annotations

import argparse
from typing import Any

from ._common import add_command, add_json, print_json

__all__ = ["EXAMPLES", "NAME", "register", "run"]

NAME = "activations"


def register(subparsers: Any) -> argparse.ArgumentParser:
    p = add_command(
        subparsers,
        NAME,
        help="list the activation library",
        description="The library's activations with their formulas. Each name can be used as "
        "ACT, with parameters (leaky_relu(0.2), hard_tanh(1.2, 0.8)), or inside an expression "
        "in x ('0.5*gelu(x) + tanh(x)', '2*leaky_relu(0.2)'). Expressions may also use exp, "
        "log, sqrt, abs, max, min, tanh, sin, cos, sinh, cosh, atan, erf, erfc, sigmoid, "
        "softplus, relu, heaviside, sign and the constant pi.",
    )
    add_json(p)
    return p


def run(args: argparse.Namespace) -> int:
    from ..symbolic import LIBRARY

    if args.json:
        print_json(args, {"activations": {k: v.text for k, v in sorted(LIBRARY.items())}})
    else:
        for k, e in sorted(LIBRARY.items()):
            print(f"{k:<12} {e.text}")
    return 0


#: Real invocations shown on its page of the CLI reference (run when the docs build).
EXAMPLES: tuple[str, ...] = ("activations",)

"""``deqrmt codegen ACT -o FILE``: a standalone, mpmath-only Python module for one activation."""

from __future__ import annotations

import argparse
from typing import Any

from ._common import add_activation, add_command, add_output, add_trainable, print_stderr

__all__ = ["EXAMPLES", "NAME", "register", "run"]

NAME = "codegen"


def register(subparsers: Any) -> argparse.ArgumentParser:
    p = add_command(
        subparsers,
        NAME,
        help="a standalone mpmath-only Python module for one activation",
        description="Write a Python module that needs only mpmath and computes the DEQ's "
        "coefficients for this activation at any σ_a², σ_b², τ0 and precision: "
        "coefficients(sigma_a2, sigma_b2, tau0, dps).",
    )
    add_activation(p)
    add_output(p, ".py file")
    add_trainable(p)
    return p


def run(args: argparse.Namespace) -> int:
    from .._io import check_output, write_output

    check_output(args.output, force=args.force)  # refuse first: before SymPy is even imported
    from ..symbolic import get_activation

    act = get_activation(args.activation)
    from ..numeric._codegen import generate_module

    src = generate_module(act, trainable=args.trainable)
    path = write_output(args.output, src, force=args.force)
    if path != "-":
        print_stderr(f"wrote {path}")
    return 0


#: Real invocations shown on its page of the CLI reference (run when the docs build).
EXAMPLES: tuple[str, ...] = ("codegen relu -o -",)

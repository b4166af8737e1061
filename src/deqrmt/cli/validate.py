"""``deqrmt validate ACT``: the equivalents against exact kernels and Monte Carlo DEQs (options
and body in :mod:`deqrmt.validate._cli`)."""

from __future__ import annotations

import argparse
from typing import Any

from ._common import add_command, validate_extra

__all__ = ["NAME", "register", "run"]

NAME = "validate"


def register(subparsers: Any) -> argparse.ArgumentParser:
    from ..validate._cli import configure_parser

    p = add_command(
        subparsers,
        NAME,
        help="Monte Carlo / exact-kernel check of the coefficients (needs the [validate] extra)",
        description="",  # set by configure_parser
        epilog="exit codes: 0 the equivalents pass, 1 they are rejected, 2 bad input. "
        "To check a designed ENN instead, see `deqrmt certify --enn DESIGN.json`; "
        "`deqrmt validate --deq ACT --enn DESIGN.json` is the same command.",
    )
    configure_parser(p)
    return p


def run(args: argparse.Namespace) -> int:
    with validate_extra(NAME):
        from ..validate._cli import run as run_validate

        return int(run_validate(args))

"""``deqrmt latex ACT -o FILE``: a complete, compilable LaTeX derivation for one activation."""

from __future__ import annotations

import argparse
from typing import Any

from ._common import add_activation, add_command, add_dps, add_output, add_problem, print_stderr

__all__ = ["EXAMPLES", "NAME", "register", "run"]

NAME = "latex"


def register(subparsers: Any) -> argparse.ArgumentParser:
    p = add_command(
        subparsers,
        NAME,
        help="a complete, compilable LaTeX derivation for one activation",
        description="Write a LaTeX document (amsmath, amssymb, geometry only) with the model, "
        "the assumptions, the derived general formulas, the activation's closed-form Gaussian "
        "moments, the coefficients written out for it where SymPy finds closed forms, and the "
        "numerical values, each marked 'proven (Arb)' or 'two evaluations agree'.",
    )
    add_activation(p)
    add_output(p, ".tex file")
    add_problem(p)
    add_dps(p)
    p.add_argument(
        "--no-certify",
        action="store_true",
        help="skip the Arb proof: the values are the digits two evaluations agree on, and the "
        "document says so (default: proven by ball arithmetic where the activation allows it)",
    )
    return p


def run(args: argparse.Namespace) -> int:
    from .._io import check_output, write_output
    from .._version import __version__

    check_output(args.output, force=args.force)  # refuse first: before SymPy is even imported
    from ..symbolic import get_activation

    act = get_activation(args.activation)
    from ..numeric import deq_coefficients
    from ..symbolic._document import derivation_document

    res = deq_coefficients(
        act, args.sigma_a2, args.sigma_b2, args.tau0, args.dps, certify=not args.no_certify
    )
    d = res.to_dict()
    params = {k: str(d[k]) for k in ("sigma_a2", "sigma_b2", "tau0", "dps")}
    doc = derivation_document(
        res.activation,
        res.values,
        params,
        moments=res.moments,
        reason=res.reason,
        version=__version__,
    )
    path = write_output(args.output, doc, force=args.force)
    if path != "-":
        print_stderr(f"wrote {path}")
    return 0


#: Real invocations shown on its page of the CLI reference (run when the docs build).
EXAMPLES: tuple[str, ...] = ("latex relu -o -",)

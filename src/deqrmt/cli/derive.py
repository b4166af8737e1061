"""``deqrmt derive TARGET``: the general formulas SymPy derives (text or LaTeX)."""

from __future__ import annotations

import argparse
from typing import Any

from ._common import add_command, add_trainable
from ._common import names as _names

__all__ = ["EXAMPLES", "NAME", "register", "run"]

NAME = "derive"

#: = ``deqrmt.symbolic._latex.TARGETS`` (repeated so that building the parser imports no SymPy).
TARGETS = ("deq-ck", "deq-ntk", "explicit-ck", "explicit-ntk", "sphere")


def register(subparsers: Any) -> argparse.ArgumentParser:
    p = add_command(
        subparsers,
        NAME,
        help="print the derived general formulas (text or LaTeX)",
        description="The formulas SymPy derives from the kernel map for any activation: "
        "nothing is typed in. Moments appear as symbols (mu1 = E[φ'(τ*ξ)], sq = E[φ²(τ*ξ)], …).",
    )
    p.add_argument(
        "target",
        choices=TARGETS,
        help="which formulas: the DEQ's CK or NTK, an explicit layer's CK or NTK, or the sphere "
        "setting",
    )
    p.add_argument(
        "--latex",
        action="store_true",
        help="print an amsmath align block, ready to paste (default: plain text)",
    )
    add_trainable(p, help="the DEQ NTK's parameter set: a,A | a,A,B | A,B")
    p.add_argument(
        "--no-injection",
        action="store_true",
        help="derive for a DEQ with σ_b = 0, no input injection (default: with injection)",
    )
    return p


def run(args: argparse.Namespace) -> int:
    from ..symbolic._latex import equations, latex_block, text_block

    eqs = equations(
        args.target, trainable=_names(args.trainable), input_injection=not args.no_injection
    )
    print(latex_block(eqs) if args.latex else text_block(eqs), end="")
    return 0


#: Real invocations shown on its page of the CLI reference (run when the docs build).
EXAMPLES: tuple[str, ...] = (
    "derive deq-ck",
    "derive deq-ntk --latex",
)

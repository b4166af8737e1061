"""``deqrmt check ACT``: does φ satisfy Assumption 1 (ICML 2024), and are deqrmt's numbers for it
consistent?

One line per item, PASS / FAIL / N/A with its numbers.  Exit status 0 when every applicable item
passes, 1 when one fails (a finding about φ or the setting: not Lipschitz, no contraction, an
inconsistent number); bad input raises :class:`deqrmt.DeqrmtError` subclasses, which the main
CLI prints as one line (exit 2).
"""

from __future__ import annotations

import argparse
from typing import Any

from ._common import (
    add_activation,
    add_command,
    add_device,
    add_json,
    add_mc,
    add_problem,
    print_json,
)

__all__ = ["EXAMPLES", "NAME", "register", "run"]

NAME = "check"


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``check`` command to ``subparsers`` (from ``ArgumentParser.add_subparsers``)."""
    p = add_command(
        subparsers,
        NAME,
        help="check Assumption 1 (ICML 2024) for φ and the consistency of deqrmt's numbers",
        description="Checks, for one activation and setting: the paper's Assumption 1 (φ "
        "L₁-Lipschitz with L₁ bounded rigorously by interval arithmetic, finite weak moments, "
        "σ_a² < 1/(4L₁²), σ_a² < 2/E[(φ²)''(τξ)] for every τ > 0 with the supremum proved by "
        "interval arithmetic), the contraction the proofs actually use "
        "(σ_a² E[(φ_c²)''(τ*ξ)]/2 < 1, σ_a² E[φ'(τ*ξ)²] < 1) and whether it holds beyond the "
        "assumption; and the engine's consistency: digits stable from dps 30 to 60, "
        "τ*² = σ_a²γ*² + σ_b²τ0², Stein weak derivatives against finite differences (smooth φ), "
        "the generated module against the engine, and the σ_a² → 0 limit against the one-layer "
        "explicit network. One line per item: PASS, FAIL or N/A with its numbers.",
        epilog="exit status: 0 every applicable item passes; 1 an item fails; 2 bad input.",
    )
    add_activation(p)
    add_problem(p)
    add_mc(
        p,
        "also compare the exact infinite-width kernels with the equivalents at n = 256 and "
        "512 on the paper's Gaussian mixture and check the n^(-1/2) slope (needs the [validate] "
        "extra: torch; default: off)",
    )
    add_device(p, "where the --mc kernels run (default: auto, a GPU when torch sees one)")
    add_json(p)
    return p


def run(args: argparse.Namespace) -> int:
    """Run the check and print the report; 0 when every applicable item passes, else 1."""
    import contextlib

    from ..check import check_activation
    from ._common import validate_extra

    guard = validate_extra(NAME) if args.mc else contextlib.nullcontext()
    with guard:
        report = check_activation(
            args.activation,
            args.sigma_a2,
            args.sigma_b2,
            args.tau0,
            mc=args.mc,
            device=args.device,
        )
    if args.json:
        print_json(args, report.to_dict())
    else:
        print("\n".join(report.lines()))
    return 0 if report.passed else 1


#: Real invocations shown on its page of the CLI reference (run when the docs build).
EXAMPLES: tuple[str, ...] = ("check tanh",)

"""``deqrmt explicit ACT [ACT …]``: per-layer τ̃, α̃, β̃, κ̃ of an explicit network (Theorem 3)."""

from __future__ import annotations

import argparse
from typing import Any

from ._common import add_command, add_dps, add_json, print_json

__all__ = ["NAME", "register", "run"]

NAME = "explicit"


def register(subparsers: Any) -> argparse.ArgumentParser:
    p = add_command(
        subparsers,
        NAME,
        help="per-layer τ̃, α̃, β̃, κ̃ of an explicit network (Theorem 3)",
        description="Coefficients of the equivalents of the explicit network "
        "x^(l) = σ_l(W_l x^(l−1))/√m, one activation per layer, to verified digits.",
    )
    p.add_argument(
        "activations",
        metavar="ACT",
        nargs="+",
        help="one activation per layer, first layer first (library names or expressions in x)",
    )
    p.add_argument("--tau0", default="1", metavar="T", help="τ0 = √(tr C°/p) of the input data")
    p.add_argument(
        "--no-center",
        action="store_true",
        help="keep each σ_l as given and refuse if it is not centered (default: center each)",
    )
    add_dps(p)
    add_json(p)
    return p


def run(args: argparse.Namespace) -> int:
    from .._text import table
    from ..numeric import LAYER_KEYS, explicit_coefficients

    res = explicit_coefficients(args.activations, args.tau0, args.dps, center=not args.no_center)
    if args.json:
        print_json(args, res.to_dict())
        return 0
    for l, (act, layer) in enumerate(zip(res.activations, res.layers, strict=True), start=1):
        rows = [(k, "", layer[k].text) for k in LAYER_KEYS]
        print(table(rows, f"layer {l}: σ_{l}(x) = {act.expr}"))
        print()
    return 0

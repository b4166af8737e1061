"""``deqrmt explicit ACT [ACT …]``: per-layer τ̃, α̃, β̃, κ̃ of an explicit network (Theorem 3)."""

from __future__ import annotations

import argparse
from typing import Any

from . import _common
from ._common import add_command, add_dps, add_json, print_json, print_notes
from ._math_text import math_text

__all__ = ["EXAMPLES", "NAME", "register", "run"]

NAME = "explicit"


def register(subparsers: Any) -> argparse.ArgumentParser:
    p = add_command(
        subparsers,
        NAME,
        help="per-layer τ̃, α̃, β̃, κ̃ of an explicit network (Theorem 3)",
        description="Coefficients of the equivalents of the explicit network "
        "x^(l) = σ_l(W_l x^(l−1))/√m, one activation per layer.  Every digit shown is proven "
        "by Arb ball arithmetic, layer by layer (or, with --no-certify or outside the enclosure "
        "rules, agrees between two evaluations at different precisions).",
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
    p.add_argument(
        "--no-certify",
        action="store_true",
        help="skip the Arb proof and show the digits two evaluations agree on (default: every "
        "digit is proven by ball arithmetic where the activations allow it)",
    )
    add_dps(p)
    add_json(p)
    return p


def run(args: argparse.Namespace) -> int:
    from .._text import table
    from ..numeric import LAYER_KEYS, explicit_coefficients

    res = explicit_coefficients(
        args.activations,
        args.tau0,
        args.dps,
        center=not args.no_center,
        certify=not args.no_certify,
    )
    if args.json:
        print_json(args, res.to_dict())
        return 0
    print(_header(res))
    print()
    for l, (act, layer) in enumerate(zip(res.activations, res.layers, strict=True), start=1):
        rows = [(k, _SYMBOLS[k].format(l=l), layer[k].text) for k in LAYER_KEYS]
        print(table(rows, f"layer {l}: σ_{l}(x) = {math_text(act.expr)}  ({act.name})"))
        print()
    short = [
        f"layer {l} {k}"
        for l, layer in enumerate(res.layers, start=1)
        for k in LAYER_KEYS
        if layer[k].digits < res.dps
    ]
    print_notes(short, res.reason, ())
    return 0


#: what each key is, for layer l (Theorem 3's notation)
_SYMBOLS = {
    "tau": "τ̃_{l}", "alpha_1": "α̃_{l},1", "alpha_2": "α̃_{l},2", "alpha_3": "α̃_{l},3",
    "alpha_4": "α̃_{l},4", "beta_1": "β̃_{l},1", "beta_2": "β̃_{l},2", "beta_3": "β̃_{l},3",
    "kappa": "κ̃_{l}", "center": "c_{l} (σ_{l} − c_{l} centered)",
}  # fmt: skip


def _header(res: Any) -> str:
    """Which network the tables are for: the recursion, its depth, τ0, centering, digits."""
    depth = len(res.layers)
    how = _common.how_proven(res.certified)
    return (
        f"explicit network x^(l) = σ_l(W_l x^(l−1))/√m, l = 1..{depth} "
        f"({depth} layer{'s' if depth > 1 else ''}; ICML 2024, Theorem 3), τ0 = {res.tau0}; "
        + ("each σ_l centered at its input scale τ̃_(l−1)" if res.centered else "σ_l as given")
        + f"; NTK over every layer's weights; {res.dps} digits requested, {how}"
    )


#: Real invocations shown on its page of the CLI reference (run when the docs build).
EXAMPLES: tuple[str, ...] = ("explicit relu tanh --dps 20",)

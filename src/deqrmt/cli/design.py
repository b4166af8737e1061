"""``deqrmt design --deq ACT --family FAMILY``: an equivalent explicit network (ENN) for a DEQ."""

from __future__ import annotations

import argparse
from typing import Any

from .._untrusted import integer
from ._common import (
    add_command,
    add_dps,
    add_json,
    add_problem,
    add_seed,
    add_trainable,
    print_json,
    print_stderr,
)

__all__ = ["NAME", "register", "run"]

NAME = "design"


def register(subparsers: Any) -> argparse.ArgumentParser:
    p = add_command(
        subparsers,
        NAME,
        help="design an equivalent explicit network (ENN) for a DEQ",
        description="Solve the CK (or NTK) matching equations for an L-layer explicit network "
        "whose activations come from a family, so that its kernel equivalent equals the DEQ's. "
        "`deqrmt enn-check` then checks a design against the DEQ.",
        epilog="budget: a design spends at most 1.2 million work units (one unit: the family "
        "evaluated at one quadrature node at 40 digits, ~30 µs on one core, so ~40 s; closed-form "
        "families such as hard_tanh cost far less); a design estimated to need more is refused "
        "before it starts, and one that reaches the budget stops with BudgetExceeded. "
        "Progress (one line per multi-start) is shown on stderr when it is a terminal. "
        "Each solution is proved by a Krawczyk step on the matching equations (a unique root in "
        "the printed ball) or says why not; --no-certify skips the proof. "
        "exit codes: 0 solved, 2 bad input or no solution.",
    )
    p.add_argument("--deq", required=True, metavar="ACT", help="the DEQ's activation (required)")
    p.add_argument(
        "--family",
        required=True,
        metavar="FAMILY",
        help="the ENN's activation family (required): hard_tanh | leaky_relu | polynomialD | "
        "an expression in x with parameters, e.g. 'a*tanh(b*x)'",
    )
    p.add_argument(
        "--layers",
        type=integer,
        default=None,
        metavar="L",
        help="ENN depth (default: the depth rule, 1 if α*₂ = α*₃/2 else 2)",
    )
    p.add_argument(
        "--kernel",
        choices=["ck", "ntk"],
        default="ck",
        help="match the conjugate kernel or the neural tangent kernel",
    )
    add_problem(p)
    add_trainable(
        p,
        help="the DEQ NTK's parameter set; a,A ↔ ENN input layer fixed, a,A,B ↔ all layers "
        "trainable",
    )
    p.add_argument(
        "--starts",
        type=integer,
        default=24,
        metavar="K",
        help="multi-start count of the root search (1 to 200; each costs part of the budget)",
    )
    add_seed(p, "seed of the multi-start points (≥ 0)")
    p.add_argument(
        "--no-certify",
        action="store_true",
        help="skip the Krawczyk proof of each solution (default: each solution is proved the "
        "unique root of the matching equations in a ball around it, printed, or says why not)",
    )
    add_dps(p)
    add_json(p)
    return p


def run(args: argparse.Namespace) -> int:
    from ..numeric._design import design_enn

    res = design_enn(
        args.deq,
        args.family,
        layers=args.layers,
        kernel=args.kernel,
        sigma_a2=args.sigma_a2,
        sigma_b2=args.sigma_b2,
        tau0=args.tau0,
        dps=args.dps,
        trainable=args.trainable,
        starts=args.starts,
        seed=args.seed,
        progress=_progress(),
        certify=not args.no_certify,
    )
    if args.json:
        print_json(args, res.to_dict())
        return 0
    d = res.to_dict()
    print(
        f"{args.kernel.upper()} matching: {d['setting']['deq']} DEQ ← {res.layers}-layer "
        f"{res.family.name} ENN"
    )
    rule = d.get("depth_rule", {})
    if rule:
        print(
            f"depth rule: α*₂ = {rule.get('alpha_2')}, α*₃/2 = {rule.get('alpha_3_over_2')}"
            f" → at least {rule.get('min_layers')} layer(s)"
        )
    print(
        f"family: φ(x) = {res.family.formula}, parameters {', '.join(map(str, res.family.params))}"
    )
    for note in rule.get("normalization", []):
        print(f"normalised: {note}")
    print("equations: " + "; ".join(d.get("equations", [])))
    for sym in d.get("symmetries", []):
        print(f"symmetry: {sym} (one solution per orbit is shown)")
    for i, sol in enumerate(d.get("solutions", []), start=1):
        layers = " | ".join(
            ", ".join(f"{k} = {v}" for k, v in layer.items()) for layer in sol["params"]
        )
        copies = sol.get("copies_found", 1)
        found = f", {copies} symmetric copies found" if copies > 1 else ""
        print(f"solution {i}: {layers}   (residual {sol['residual']}{found})")
        if "certified" in sol:
            print(f"  {_proof_line(sol)}")
    return 0


def _proof_line(sol: dict[str, Any]) -> str:
    """``proven (Krawczyk): a ∈ [m ± r], …`` (the printed balls, rounded outward), or why not."""
    if not sol["certified"]:
        return f"not proven: {sol.get('reason')}"
    balls = " | ".join(
        ", ".join(f"{k} ∈ [{b['midpoint']} ± {b['radius']}]" for k, b in layer.items())
        for layer in sol["balls"]
    )
    return f"proven (Krawczyk): the unique root in {balls}"


def _progress() -> Any:
    """The budget, then one status line per multi-start, on stderr when it is a terminal
    (silent in pipes and logs, like the progress bars of certify, experiment and sweep)."""
    import sys

    if not sys.stderr.isatty():
        return None
    return lambda line: print_stderr(f"design: {line}")

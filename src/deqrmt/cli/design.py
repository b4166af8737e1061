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
    add_quiet,
    add_seed,
    add_trainable,
    bar_enabled,
    print_json,
    print_stderr,
)

__all__ = ["EXAMPLES", "NAME", "register", "run"]

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
    add_quiet(p)
    return p


def run(args: argparse.Namespace) -> int:
    from .._progress import progress_bar
    from ..numeric._design import design_enn

    # the multi-starts: a probe of up to 4, then the search's (the total grows if the search
    # must run again with parameters fixed)
    expected = min(args.starts, 4) + (args.starts if args.starts > 4 else 0)
    with progress_bar(expected, "design", unit="start", enabled=bar_enabled(args)) as bar:
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
            progress=_Starts(bar, bar_enabled(args)),
            certify=not args.no_certify,
        )
        bar.set(bar.total)
    if args.json:
        print_json(args, res.to_dict())
        return 0
    d: dict[str, Any] = res.to_dict()  # the table shows what --json prints
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


class _Starts:
    """The design's status lines on the bar: each multi-start counts one (the phases' counts
    add up), the other lines (the budget, the symmetries, the proofs) are written above it.

    Without tqdm (a core install) the lines are printed at a terminal as they come."""

    def __init__(self, bar: Any, enabled: bool | None) -> None:
        from .._progress import progress_enabled

        self.bar = bar
        self.lines = not bar.drawn and progress_enabled(enabled)
        self.offset = 0  # the multi-starts of the phases before this one
        self.phase: tuple[str, int] | None = None

    def __call__(self, line: str) -> None:
        if self.lines:
            print_stderr(f"design: {line}")
        start = getattr(line, "start", None)
        if start is None:
            self.bar.write(f"design: {line}")
            return
        starts = int(getattr(line, "starts", 1))
        phase = (str(getattr(line, "label", "")), starts)
        if phase != self.phase or start == 1:
            if self.phase is not None:
                self.offset += self.phase[1]
            self.phase = phase
        self.bar.note(f"{phase[0]}, {getattr(line, 'found', 0)} solution(s)")
        # before start k: k − 1 done in this phase; the total is what is known so far
        self.bar.set(self.offset + start - 1, max(self.bar.total, self.offset + starts))


#: Real invocations shown on its page of the CLI reference (run when the docs build).
EXAMPLES: tuple[str, ...] = ("design --deq tanh --family hard_tanh --dps 20",)

"""``deqrmt sphere ACT``: HLD 2023's sphere-setting coefficients from the command line.

Building the parser imports nothing heavy; :func:`run_sphere` imports the numeric engine.
"""

from __future__ import annotations

import argparse
from typing import Any

from ._common import add_command, add_dps, add_json, add_problem, print_json, print_notes

__all__ = ["EXAMPLES", "NAME", "configure_sphere_parser", "register", "run", "run_sphere"]

NAME = "sphere"

_SYMBOLS = {
    "g0": "g(0)",
    "g_at_1": "g(1)",
    "g_prime_0": "g'(0)",
    "g_second_0": "g''(0)",
    "alpha": "α   (Thm 1)",
    "beta": "β   (Thm 1)",
    "mu": "μ   (Thm 1)",
    "ntk_alpha": "α̇   (Thm 3)",
    "ntk_beta": "β̇   (Thm 3)",
    "ntk_mu": "μ̇   (Thm 3)",
    "k0": "k(0)",
    "k_at_1": "k(1)",
    "k_prime_0": "k'(0)",
    "k_second_0": "k''(0)",
}


def register(subparsers: Any) -> argparse.ArgumentParser:
    p = add_command(
        subparsers,
        NAME,
        help="α, β, μ (CK) and NTK versions of a DEQ on sphere data, and Corollary 1's "
        "quadratics (HLD 2023)",
        description="The HLD 2023 sphere setting (data uniform on the sphere of dimension d) for "
        "an arbitrary activation: the dual-activation derivatives, the CK coefficients α, β, μ "
        "(Theorem 1), their NTK versions (Theorem 3) and the quadratic activations of "
        "Corollary 1.  Every digit shown is proven by Arb ball arithmetic (or, with --no-certify or "
        "outside the enclosure rules, agrees between two evaluations at different precisions).",
    )
    configure_sphere_parser(p)
    return p


def run(args: argparse.Namespace) -> int:
    return run_sphere(args)


def configure_sphere_parser(p: argparse.ArgumentParser) -> None:
    """Add the ``sphere`` command's arguments to ``p``."""
    p.add_argument(
        "activation",
        metavar="ACT",
        help="library name (relu, tanh, …), name(params) or an expression in x, e.g. 'sqrt(2)*max(x, 0)'",
    )
    add_problem(p, tau0=False)
    p.add_argument("--d", type=int, default=1200, help="data dimension d (default 1200)")
    add_dps(p)
    p.add_argument(
        "--certify",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="prove every digit by ball arithmetic where the activation allows it (default); "
        "--no-certify skips the Arb proof and shows the digits two evaluations agree on",
    )
    add_json(p)


def run_sphere(args: argparse.Namespace) -> int:
    """Run ``deqrmt sphere``; deqrmt errors propagate (the CLI prints them, exit code 2)."""
    from .._text import table
    from ..numeric import SPHERE_KEYS, sphere_coefficients
    from ..numeric._sphere_records import NTK_EXTRA_KEYS

    res = sphere_coefficients(
        args.activation, args.sigma_a2, args.sigma_b2, args.d, args.dps, certify=args.certify
    )
    if args.json:
        print_json(args, res.to_dict())
        return 0
    title = (
        f"HLD 2023 sphere setting, {res.activation.name}: φ(x) = {res.activation.expr}, "
        f"σ_a² = {res.sigma_a2}, σ_b² = {res.sigma_b2}, d = {res.d} ({res.dps} digits requested, "
        + ("proven (Arb balls))" if res.certified else "verified (two evaluations agree))")
    )
    keys = (*SPHERE_KEYS, *NTK_EXTRA_KEYS)
    print(table([(k, _SYMBOLS[k], res.values[k].text) for k in keys], title))
    for name, sols in (("quadratic_ck", res.quadratic_ck), ("quadratic_ntk", res.quadratic_ntk)):
        print()
        if not sols:
            print(f"{name}: none real (see notes)")
            continue
        first = sols[0]
        print(f"{name} (Corollary 1, signs of a2, a1, a0 + a2: {first.signs})")
        print(f"  a2 = {first.a2.text}\n  a1 = {first.a1.text}\n  a0 = {first.a0.text}")
        others = ", ".join(q.signs for q in sols[1:])
        print(f"  other_signs: {others} (--json lists their values)")
    short = [k for k in keys if res.values[k].digits < res.dps]
    print_notes(short, res.reason, res.notes, gap=True)
    return 0


#: Real invocations shown on its page of the CLI reference (run when the docs build).
EXAMPLES: tuple[str, ...] = ("sphere 'sqrt(2)*max(x, 0)' --sigma-a2 0.2 --dps 20",)

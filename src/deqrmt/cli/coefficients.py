"""``deqrmt coefficients ACT``: τ*, γ*, α*₁..₄, β*₁..₃, κ* of a DEQ (ICML 2024, Theorems 1–2)."""

from __future__ import annotations

import argparse
from typing import Any

from .._errors import DeqrmtError, InvalidArgument
from ._common import (
    add_activation,
    add_command,
    add_dps,
    add_force,
    add_json,
    add_problem,
    add_trainable,
    check_plot_target,
    extra_imports,
    flag_names,
    how_proven,
    print_json,
    print_notes,
    print_stderr,
    require_extra,
)

__all__ = ["EXAMPLES", "NAME", "register", "run"]

NAME = "coefficients"

#: what ``--plot`` imports (from the [validate] extra)
PLOT_EXTRA = ("matplotlib",)

_DEQ_SYMBOLS = {
    "tau_star": "τ*", "gamma_star": "γ*", "alpha_1": "α*₁", "alpha_2": "α*₂", "alpha_3": "α*₃",
    "alpha_4": "α*₄", "beta_1": "β*₁", "beta_2": "β*₂", "beta_3": "β*₃", "kappa_star": "κ*",
    "center": "c (φ − c centered)",
}  # fmt: skip
_MOMENT_SYMBOLS = {
    "E_phi_prime": "E[φ'(τ*ξ)]", "E_phi_second": "E[φ''(τ*ξ)]",
    "E_phi_prime_sq": "E[φ'(τ*ξ)²]", "E_phi_sq_second": "E[(φ²)''(τ*ξ)]",
}  # fmt: skip


def register(subparsers: Any) -> argparse.ArgumentParser:
    p = add_command(
        subparsers,
        NAME,
        help="τ*, γ*, α*₁..₄, β*₁..₃, κ* of a DEQ (ICML 2024, Theorems 1–2)",
        description="Coefficients of the high-dimensional equivalents of the conjugate kernel "
        "G* and the NTK K* of the DEQ z = φ(σ_a A z + σ_b B x)/√m.  Every digit shown is proven "
        "by Arb ball arithmetic (or, with --no-certify or outside the enclosure rules, agrees "
        "between two evaluations at different precisions).  --sigma-a2 also takes a range "
        "start:stop:count or a list a,b,c: then one row per σ_a² (and --plot).",
    )
    add_activation(p)
    add_problem(p)
    p.add_argument(
        "--no-center",
        action="store_true",
        help="keep φ as given and refuse if E[φ(τ*ξ)] ≠ 0 (default: center φ at its fixed point)",
    )
    add_trainable(p)
    p.add_argument(
        "--no-certify",
        action="store_true",
        help="skip the Arb proof and show the digits two evaluations agree on (default: every "
        "digit is proven by ball arithmetic where the activation allows it)",
    )
    p.add_argument(
        "--plot",
        default=None,
        metavar="DIR",
        help="with a σ_a² range or list: write coefficients.png (coefficients against σ_a²) into "
        "DIR (needs matplotlib, in the [validate] extra; default: no plot)",
    )
    p.add_argument(
        "--sensitivity",
        action="store_true",
        help="also show ∂/∂σ_a² and ∂/∂σ_b² of every coefficient, derived by implicit "
        "differentiation of the fixed point and proven like the coefficients (JSON: "
        '"sensitivities").  Partial derivatives, σ_a² and σ_b² independent: where σ_b² '
        "defaults to 1 − σ_a², the derivative along that line is ∂/∂σ_a² − ∂/∂σ_b²; one σ_a² only",
    )
    add_force(p)
    add_dps(p)
    add_json(p)
    return p


def run(args: argparse.Namespace) -> int:
    if args.plot:
        require_extra(f"{NAME} --plot", PLOT_EXTRA)  # before any work, not after the table
        check_plot_target(args.plot, ("coefficients.png",), force=args.force)
    from ..symbolic import get_activation

    act = get_activation(args.activation)  # bad text is refused before the engine is imported
    from ..numeric import number_grid

    grid = number_grid(args.sigma_a2, "sigma_a2")
    if len(grid) > 1 or ":" in args.sigma_a2 or "," in args.sigma_a2:
        if args.sensitivity:
            raise InvalidArgument(
                "--sensitivity takes one σ_a², not a range or list; give e.g. --sigma-a2 0.2."
            )
        return _run_grid(args, act, grid)
    if args.plot:
        raise InvalidArgument("--plot needs a σ_a² range or list, e.g. --sigma-a2 0.05:0.6:12.")
    res = _compute(args, act, args.sigma_a2)
    sens = _sensitivities(args, res.problem) if args.sensitivity else None
    if args.json:
        out = res.to_dict()
        if sens is not None:
            out["sensitivities"] = sens.to_dict()
        print_json(args, out)
        return 0
    _print_table(res)
    if sens is not None:
        _print_sensitivities(sens)
    return 0


def _sensitivities(args: argparse.Namespace, problem: Any) -> Any:
    from ..numeric._sensitivity import sensitivities

    return sensitivities(problem, certify=not args.no_certify)


def _print_sensitivities(sens: Any) -> None:
    """The derivative table: one row per coefficient, a column per parameter."""
    from .._text import table

    p = sens.problem
    how = how_proven(sens.certified)
    title = (
        f"∂/∂σ_a² and ∂/∂σ_b² at σ_a² = {p.sigma_a2}, σ_b² = {p.sigma_b2} (partial: σ_a², σ_b² "
        f"independent; along σ_b² = 1 − σ_a² take ∂/∂σ_a² − ∂/∂σ_b²); {how}"
    )
    header = ("", "", "∂/∂σ_a²", "∂/∂σ_b²")
    rows = [(k, _DEQ_SYMBOLS[k], d["sigma_a2"].text, d["sigma_b2"].text) for k, d in sens.items()]
    print()
    print(table([header, *rows], title))
    short = [f"d{k}/d{q}" for k, d in sens.items() for q, v in d.items() if v.digits < p.dps]
    print_notes(short, sens.reason, ())


def _compute(args: argparse.Namespace, act: Any, sigma_a2: Any) -> Any:
    from ..numeric import deq_coefficients

    return deq_coefficients(
        act,
        sigma_a2,
        args.sigma_b2,
        args.tau0,
        args.dps,
        center=not args.no_center,
        trainable=args.trainable,
        certify=not args.no_certify,
    )


def _print_table(res: Any) -> None:
    from .._text import table
    from ..numeric import DEQ_KEYS

    p = res.problem
    how = how_proven(res.certified)
    title = (
        f"DEQ {p.activation.name}: φ(x) = {p.activation.expr}, σ_a² = {p.sigma_a2}, "
        f"σ_b² = {p.sigma_b2}, τ0 = {p.tau0}; NTK over ({', '.join(p.trainable)}); "
        + ("φ centered at τ*" if p.center else "φ as given")
        + f"; {p.dps} digits requested, {how}"
    )
    # Without an NTK (σ_a² E[φ'²] ≥ 1) the β*, κ* keys are absent; a note says why.
    rows = [
        (k, _DEQ_SYMBOLS[k], res.values[k].text if k in res.values else "n/a (see note)")
        for k in DEQ_KEYS
    ]
    rows += [(k, _MOMENT_SYMBOLS[k], v.text) for k, v in res.moments.items()]
    print(table(rows, title))
    short = [k for k in DEQ_KEYS if k in res.values and res.values[k].digits < p.dps]
    print_notes(short, res.reason, res.notes)


def _run_grid(args: argparse.Namespace, act: Any, grid: list[Any]) -> int:
    from .._text import table
    from ..numeric import DEQ_KEYS, exact_text

    outcomes = [_outcome(args, act, s) for s in grid]
    results = [r for r in outcomes if not isinstance(r, DeqrmtError)]
    refused = [(s, e) for s, e in zip(grid, outcomes, strict=True) if isinstance(e, DeqrmtError)]
    if not results:
        raise refused[0][1]  # every point refused: the first reason, as for one σ_a²
    if args.json:
        print_json(
            args,
            {
                "rows": [r.to_dict() for r in results],
                "refused": [
                    {"sigma_a2": exact_text(s), "error": type(e).__name__, "message": str(e)}
                    for s, e in refused
                ],
            },
        )
    else:
        keys = [k for k in DEQ_KEYS if k != "center"]
        digits = min(args.dps, 12)  # a grid is read by eye: 12 digits (all proven) per cell
        rows = [
            (exact_text(s), *(("refused", *("–",) * (len(keys) - 1)) if isinstance(r, DeqrmtError)
                              else (_short(r, k, digits) for k in keys)))
            for s, r in zip(grid, outcomes, strict=True)
        ]  # fmt: skip
        header = ("σ_a²", *(_DEQ_SYMBOLS[k] for k in keys))
        print(table([header, *rows], f"DEQ {act.name} against σ_a² ({digits} digits shown)"))
        for s, e in refused:
            print(f"note: σ_a² = {exact_text(s)} refused: {type(e).__name__}: {flag_names(str(e))}")
    if args.plot:
        from .._io import write_directory

        def produce(tmp: str) -> list[str]:
            import os

            from ..sweep._plots import coefficients_png

            path = os.path.join(tmp, "coefficients.png")
            points = [(float(r.problem.sigma_a2), r.as_floats()) for r in results]
            coefficients_png({act.name: points}, path, f"DEQ {act.name} against σ_a²")
            return [path]

        with extra_imports(f"{NAME} --plot", PLOT_EXTRA):
            written = write_directory(args.plot, produce, force=args.force)
        for path in written:
            print_stderr(f"wrote {path}")
    return 0


def _outcome(args: argparse.Namespace, act: Any, sigma_a2: Any) -> Any:
    """One σ_a² of a range: its result, or the named error that refused it (a note, so that
    one refused point does not end the range)."""
    try:
        return _compute(args, act, sigma_a2)
    except DeqrmtError as e:
        return e


def _short(res: Any, key: str, digits: int) -> str:
    if key not in res.values:
        return "n/a"
    import mpmath

    v = res.values[key]
    if v.digits <= digits or v.value == 0:
        return v.text
    return mpmath.nstr(v.value, digits, strip_zeros=False)


#: Real invocations shown on its page of the CLI reference (run when the docs build).
EXAMPLES: tuple[str, ...] = (
    "coefficients tanh --sigma-a2 0.2",
    "coefficients relu --dps 15 --json",
)

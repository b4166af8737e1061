"""``deqrmt compare ACT1 ACT2 …``: the DEQ coefficients of several activations side by side."""

from __future__ import annotations

import argparse
from typing import Any

from .._errors import DeqrmtError, InvalidArgument
from ._common import (
    add_command,
    add_dps,
    add_force,
    add_json,
    add_plot,
    add_problem,
    check_plot_target,
    extra_imports,
    flag_names,
    print_json,
    print_stderr,
    require_extra,
)

__all__ = ["EXAMPLES", "NAME", "MAX_ACTIVATIONS", "PLOT_NAME", "register", "run"]

NAME = "compare"

#: at most this many activations in one comparison (a table wider than this is not read)
MAX_ACTIVATIONS = 8
#: the one PNG ``--plot DIR`` writes
PLOT_NAME = "compare.png"
#: what ``--plot`` imports (from the [validate] extra)
PLOT_EXTRA = ("matplotlib",)
#: digits per cell of the table (the JSON carries every verified digit)
TABLE_DIGITS = 12
#: σ_a² points of ``--plot`` at most (× 8 activations: a few minutes on one core at worst)
MAX_PLOT_POINTS = 40
#: digits of each plotted point (a plot is read to ~3 digits; 15 keeps each point fast)
PLOT_DPS = 15

_SYMBOLS = {
    "tau_star": "τ*", "gamma_star": "γ*", "alpha_1": "α*₁", "alpha_2": "α*₂", "alpha_3": "α*₃",
    "alpha_4": "α*₄", "beta_1": "β*₁", "beta_2": "β*₂", "beta_3": "β*₃", "kappa_star": "κ*",
    "center": "c (centering)",
}  # fmt: skip


def register(subparsers: Any) -> argparse.ArgumentParser:
    p = add_command(
        subparsers,
        NAME,
        help="the DEQ coefficients of several activations side by side",
        description="τ*, γ*, α*₁..₄, β*₁..₃, κ* of the DEQ z = φ(σ_a A z + σ_b B x)/√m for 1 to "
        f"{MAX_ACTIVATIONS} activations at one setting: a table with one row per coefficient and "
        "one column per activation (or --json), and with --plot one PNG of every coefficient "
        "against σ_a² for all of them.  Digits are proven by Arb where the activation allows, "
        "as for `deqrmt coefficients`.",
    )
    p.add_argument(
        "activations",
        metavar="ACT",
        nargs="+",
        help=f"1 to {MAX_ACTIVATIONS} activations: library names (tanh, relu, silu, "
        "leaky_relu(0.1), …; see `deqrmt activations`) or expressions in x such as 'max(x, 0.1*x)'",
    )
    add_problem(p)
    add_plot(
        p,
        f"write {PLOT_NAME} (each coefficient against σ_a², one line per activation) into "
        "DIR (needs matplotlib, in the [validate] extra; default: no plot)",
    )
    p.add_argument(
        "--plot-range",
        default="0.05:0.6:12",
        metavar="A:B:N",
        help="the σ_a² values of --plot: N points from A to B (or a list a,b,c), at most "
        f"{MAX_PLOT_POINTS}; σ_b² is --sigma-b2, or 1 − σ_a² at each point "
        "(default: 0.05:0.6:12)",
    )
    add_force(p)
    add_dps(p)
    add_json(p)
    return p


def run(args: argparse.Namespace) -> int:
    if args.plot:  # the target first: refused at once, before SymPy is even imported
        require_extra(f"{NAME} --plot", PLOT_EXTRA)
        check_plot_target(args.plot, (PLOT_NAME,), force=args.force)
    acts = _activations(args.activations)
    if any(c in str(args.sigma_a2) for c in ":,"):
        raise InvalidArgument(
            f"--sigma-a2 {args.sigma_a2}: compare tables one σ_a²; for a range plot use "
            "--plot DIR --plot-range 0.05:0.6:12, or `deqrmt coefficients ACT --sigma-a2 A:B:N`."
        )
    grid: list[Any] = []
    if args.plot:
        from ..numeric import number_grid

        grid = number_grid(args.plot_range, "plot_range")
        if len(grid) > MAX_PLOT_POINTS:
            raise InvalidArgument(
                f"--plot-range {args.plot_range}: {len(grid)} points; compare plots at most "
                f"{MAX_PLOT_POINTS} (docs/limits.md), e.g. 0.05:0.6:{MAX_PLOT_POINTS}."
            )
    outcomes = [_outcome(args, act, args.sigma_a2, args.dps) for act in acts]
    answered = [r for r in outcomes if not isinstance(r, DeqrmtError)]
    if not answered:
        raise outcomes[0]  # every activation refused: the first reason, as for one
    if args.json:
        print_json(args, _json(acts, outcomes))
    else:
        _print_table(acts, outcomes, args.dps)
    if args.plot:
        _plot(args, acts, grid)
    return 0


def _activations(texts: list[str]) -> list[Any]:
    if len(texts) > MAX_ACTIVATIONS:
        raise InvalidArgument(
            f"{len(texts)} activations: compare takes at most {MAX_ACTIVATIONS} "
            "(docs/limits.md); split them into several comparisons."
        )
    from ..symbolic import get_activation

    acts = [get_activation(t) for t in texts]  # bad text is refused before any engine work
    names = [a.name for a in acts]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        from .._text import escape_controls

        raise InvalidArgument(
            f"{escape_controls(', '.join(dup), keep='')} given twice: name each activation once."
        )
    return acts


def _outcome(args: argparse.Namespace, act: Any, sigma_a2: Any, dps: int) -> Any:
    """One activation's result, or the named error that refused it (a note in the table, so
    that one refused activation does not end the comparison)."""
    from ..numeric import deq_coefficients

    try:
        return deq_coefficients(act, sigma_a2, args.sigma_b2, args.tau0, dps)
    except DeqrmtError as e:
        return e


def _json(acts: list[Any], outcomes: list[Any]) -> dict[str, Any]:
    return {
        "activations": [a.name for a in acts],
        "results": [r.to_dict() for r in outcomes if not isinstance(r, DeqrmtError)],
        "refused": [
            {"activation": a.name, "error": type(r).__name__, "message": str(r)}
            for a, r in zip(acts, outcomes, strict=True)
            if isinstance(r, DeqrmtError)
        ],
    }


def _cell(res: Any, key: str, digits: int) -> str:
    if isinstance(res, DeqrmtError):
        return "refused"
    if key not in res.values:
        return "n/a"
    import mpmath

    v = res.values[key]
    if v.digits <= digits or v.value == 0:
        return str(v.text)
    return str(mpmath.nstr(v.value, digits, strip_zeros=False))


def _print_table(acts: list[Any], outcomes: list[Any], dps: int) -> None:
    from .._text import escape_controls, table
    from ..numeric import DEQ_KEYS

    first = next(r for r in outcomes if not isinstance(r, DeqrmtError))
    p = first.problem
    digits = min(dps, TABLE_DIGITS)
    proven = all(r.certified for r in outcomes if not isinstance(r, DeqrmtError))
    how = "all proven (Arb balls)" if proven else "verified; see the notes"
    title = (
        f"DEQ coefficients at σ_a² = {p.sigma_a2}, σ_b² = {p.sigma_b2}, τ0 = {p.tau0}; "
        f"NTK over ({', '.join(p.trainable)}); φ centered at τ*; {digits} digits shown, {how}"
    )
    header = ("", *(escape_controls(a.name, keep="") for a in acts))
    rows = [(_SYMBOLS[k], *(_cell(r, k, digits) for r in outcomes)) for k in DEQ_KEYS]
    print(table([header, *rows], title))
    for a, r in zip(acts, outcomes, strict=True):
        name = escape_controls(a.name, keep="")
        if isinstance(r, DeqrmtError):
            print(f"note: {name} refused: {type(r).__name__}: {flag_names(str(r))}")
            continue
        if not r.certified and r.reason:
            print(f"note: {name} not certified ({r.reason}); its digits agree between two "
                  "evaluations")  # fmt: skip
        for n in r.notes:
            print(f"note: {name}: {escape_controls(n, keep='')}")


def _shown(name: str) -> str:
    from .._text import escape_controls

    return escape_controls(name, keep="")


def _plot(args: argparse.Namespace, acts: list[Any], grid: list[Any]) -> None:
    from .._io import write_directory

    lines: dict[str, list[tuple[float, dict[str, float]]]] = {}
    for i, act in enumerate(acts, 1):
        # progress on stderr: the plot is the long part (len(grid) points per activation)
        print_stderr(f"{NAME} --plot: {_shown(act.name)} at {len(grid)} σ_a² ({i}/{len(acts)})")
        pts = [(s, _outcome(args, act, s, min(args.dps, PLOT_DPS))) for s in grid]
        # a refused σ_a² (e.g. past the contraction) is a gap in that activation's line
        lines[act.name] = [(float(s), r.to_dict(float)) for s, r in pts
                           if not isinstance(r, DeqrmtError)]  # fmt: skip

    def produce(tmp: str) -> list[str]:
        import os

        from ..sweep._plots import coefficients_png

        path = os.path.join(tmp, PLOT_NAME)
        from .._text import escape_controls

        sb = "1 − σ_a²" if args.sigma_b2 is None else escape_controls(str(args.sigma_b2), keep="")
        coefficients_png(lines, path, f"DEQ coefficients against σ_a² (σ_b² = {sb})")
        return [path]

    with extra_imports(f"{NAME} --plot", PLOT_EXTRA):
        written = write_directory(args.plot, produce, force=args.force)
    for path in written:
        print_stderr(f"wrote {path}")


#: Real invocations shown on its page of the CLI reference (run when the docs build).
EXAMPLES: tuple[str, ...] = (
    "compare relu tanh silu",
    "compare tanh erf --sigma-a2 0.3 --dps 15 --json",
)

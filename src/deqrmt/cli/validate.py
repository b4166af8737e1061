"""``deqrmt validate ACT``: the equivalents against exact kernels and Monte Carlo DEQs.

torch is imported only inside :func:`run_validate`, so building the parser (``deqrmt --help``)
stays light.  Exit status: 0 when the equivalents pass the verdict, 1 when they are rejected;
errors the user can cause raise :class:`deqrmt.DeqrmtError` subclasses (the main CLI prints them
as one line, exit 2).
"""

from __future__ import annotations

import argparse
from typing import Any

from ._common import (
    add_command,
    add_device,
    add_force,
    add_json,
    add_plot,
    add_problem,
    add_quiet,
    add_seed,
    bar_enabled,
    names,
    sample_sizes,
    validate_extra,
)

__all__ = ["EXAMPLES", "NAME", "configure_parser", "register", "run", "run_validate"]

NAME = "validate"


def register(subparsers: Any) -> argparse.ArgumentParser:
    p = add_command(
        subparsers,
        NAME,
        help="Monte Carlo / exact-kernel check of the coefficients (needs the [validate] extra)",
        description="",  # set by configure_parser
        epilog="exit codes: 0 the equivalents pass, 1 they are rejected, 2 bad input. "
        "To check a designed ENN instead, see `deqrmt enn-check --enn DESIGN.json`; "
        "`deqrmt validate --deq ACT --enn DESIGN.json` is the same command.",
    )
    configure_parser(p)
    return p


def run(args: argparse.Namespace) -> int:
    with validate_extra(NAME):
        return int(run_validate(args))


#: = ``_sweep.PRESETS`` keys (repeated here so that building the parser never imports torch).
PRESET_NAMES = ("paper", "zero-means")


def configure_parser(p: argparse.ArgumentParser) -> None:
    """Add the ``validate`` arguments to ``p``."""
    p.description = (
        "Check the equivalent kernels Ḡ, K̄ against the exact infinite-width implicit kernels "
        "G*, K* and against Monte Carlo DEQs of width m, over an n-sweep (slides, Theorems 1–2)."
    )
    p.add_argument(
        "activation",
        metavar="ACT",
        help="library name (tanh, relu, leaky_relu(0.1), …) or an expression in x",
    )
    p.add_argument(
        "--preset",
        default="paper",
        choices=PRESET_NAMES,
        help="data: the slides' two-class GMM (paper, default) or the same without class means",
    )
    p.add_argument(
        "--n",
        dest="ns",
        type=sample_sizes,
        default=(256, 512, 1024),
        help="sample sizes, comma-separated (default 256,512,1024)",
    )
    p.add_argument(
        "--m", type=int, default=2048, help="width of the Monte Carlo DEQs (default 2048)"
    )
    p.add_argument("--draws", type=int, default=4, help="Monte Carlo networks per n (default 4)")
    add_problem(p, tau0=False)
    p.add_argument(
        "--ratio",
        type=float,
        default=0.8,
        help="p/n (default 0.8, as on the slides; the authors' code uses 1.25)",
    )
    add_device(p, "Monte Carlo and exact kernels; auto uses CUDA when available")
    p.add_argument(
        "--dtype",
        default="float64",
        choices=["float64", "float32"],
        help="Monte Carlo precision (exact kernels are always float64)",
    )
    add_seed(p, "base seed (default 0)")
    add_json(p)
    add_plot(p, "write PNG figures into DIR, created if needed (default: no plots)")
    add_force(p)
    add_quiet(p)
    p.add_argument(
        "--no-mc",
        action="store_true",
        help="skip the Monte Carlo networks: exact vs equivalent only (default: run them)",
    )
    p.add_argument(
        "--trainable",
        type=names,
        default=("a", "A"),
        help="parameters of the NTK: a,A (default: the slides' K*), a,A,B, A, …",
    )
    p.add_argument(
        "--max-error",
        type=float,
        default=0.15,
        help="level: the n^(-1/2) law fitted to the errors, read at n = 1024, must be at most "
        "this; the check fails (exit 1) when it is above by more than 2 standard errors "
        "(default: 0.15)",
    )
    p.add_argument(
        "--max-slope",
        type=float,
        default=-0.3,
        help="rate: the fitted log-log slope of the error against n must be consistent with at "
        "most this (fails when flatter by more than 2 standard errors; not measured with one n; "
        "theory: -1/2, a wrong formula gives a flat error) (default: -0.3)",
    )
    # A deliberately wrong coefficient (alpha2_slide, kappa_slide, beta3_slide, alpha1_x1.2):
    # the negative controls, hidden from --help.
    p.add_argument("--variant", default=None, help=argparse.SUPPRESS)


def run_validate(args: argparse.Namespace) -> int:
    """Run the sweep described by ``args``; print the table or JSON; write plots."""
    if args.plot:  # the target first: refused at once, before torch is even imported
        from ._common import check_plot_target

        names = ("errors.png", f"spectrum_n{max(args.ns)}.png")
        check_plot_target(args.plot, names, force=getattr(args, "force", False))
    from .._io import write_directory
    from .._progress import progress_bar
    from .._text import print_stderr
    from ..symbolic import get_activation
    from ..validate._plots import write_plots
    from ..validate._report import report_dict, report_text
    from ..validate._sweep import ValidationConfig, resolve_device, run_validation

    config = ValidationConfig(
        activation=args.activation,
        ns=tuple(args.ns),
        m=args.m,
        draws=args.draws,
        sigma_a2=str(args.sigma_a2),
        sigma_b2=None if args.sigma_b2 is None else str(args.sigma_b2),
        ratio=args.ratio,
        preset=args.preset,
        device=args.device,
        dtype=args.dtype,
        seed=args.seed,
        monte_carlo=not args.no_mc,
        variant=getattr(args, "variant", None),
        trainable=tuple(args.trainable),
        max_error=args.max_error,
        max_slope=args.max_slope,
    )
    # Fail fast, before the progress bar draws anything, on what can be checked up front.
    resolve_device(config.device)
    get_activation(config.activation)
    # a bar only at a terminal: in a log file it is noise, and errors stay one line
    desc = f"validate {args.activation}"
    with progress_bar(config.steps(), desc, unit="step", enabled=bar_enabled(args)) as bar:

        def progress(label: str) -> None:
            bar.note(label)
            bar.advance()

        result = run_validation(config, progress=progress)
    if args.json:
        from ._common import print_json

        print_json(args, report_dict(result))
    else:
        print(report_text(result))
    if args.plot:
        paths = write_directory(
            args.plot, lambda tmp: write_plots(result, tmp), force=getattr(args, "force", False)
        )
        print_stderr("wrote " + ", ".join(paths))
    return 0 if result.passed else 1


#: Real invocations shown on its page of the CLI reference (run when the docs build).
EXAMPLES: tuple[str, ...] = ("validate relu --n 256,512 --no-mc",)

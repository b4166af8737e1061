"""``deqrmt spectrum ACT``: the predicted eigenvalue laws of the DEQ's CK and NTK.

The density, support, atoms, spikes and eigenvector alignments of the equivalent kernels' limiting
spectra (HLD 2023 sphere setting, or the ICML 2024 Gaussian mixture), and with ``--mc`` the
sampled spectra of the exact kernels (and of a finite-width DEQ) with their Kolmogorov distance.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
from typing import Any

from .._errors import InvalidArgument, MissingExtra
from ._common import (
    add_activation,
    add_command,
    add_device,
    add_force,
    add_json,
    add_mc,
    add_plot,
    add_problem,
    add_quiet,
    add_seed,
    bar_enabled,
    print_json,
    print_stderr,
    validate_extra,
)

__all__ = ["EXAMPLES", "NAME", "register", "run"]

NAME = "spectrum"
PLOT_NAME = "spectrum.png"


def register(subparsers: Any) -> argparse.ArgumentParser:
    p = add_command(
        subparsers,
        NAME,
        help="predicted eigenvalue density, support, spikes and alignments of the CK and NTK "
        "(--mc and --plot need the [validate] extra)",
        description="The limiting eigenvalue distributions of the DEQ's conjugate kernel and "
        "NTK, read off their high-dimensional equivalents: for data on the sphere (HLD 2023) an "
        "affine image of the Marchenko–Pastur law plus the spike of the 11ᵀ term; for a Gaussian "
        "mixture (ICML 2024) the fixed point of the mixture's resolvent plus the spikes of the "
        "class means and of the ψ, t, T terms, with their eigenvectors' class alignments.  "
        "--mc samples the data and compares the exact kernels' eigenvalues with the prediction.",
        epilog="exit codes: 0 ok (with --mc: the sampled spectra match), 1 an --mc check failed, "
        "2 bad input.",
    )
    add_activation(p)
    p.add_argument(
        "--data",
        choices=("sphere", "gmm"),
        default="sphere",
        help="sphere: n points uniform on the sphere of dimension d, φ as given (HLD 2023); "
        "gmm: the paper's two-class Gaussian mixture at p = round(0.8 n), or --mixture, φ "
        "centred at τ* (ICML 2024)",
    )
    p.add_argument(
        "--mixture",
        default=None,
        metavar="FILE.toml",
        help="a Gaussian mixture with diagonal covariances (p, [[class]] weight, mean, "
        "mean_offset, variance; see docs/json.md); implies --data gmm (default: the preset)",
    )
    p.add_argument(
        "--enn",
        default=None,
        metavar="DESIGN.json",
        help="with --data gmm: a designed ENN (`deqrmt design --json`): its predicted spectrum, "
        "and with --mc its exact kernel's eigenvalues against the DEQ's law (default: none)",
    )
    p.add_argument(
        "--n",
        type=int,
        default=None,
        metavar="N",
        help="number of samples = matrix size (default: 1000 for the sphere, 1024 for gmm)",
    )
    p.add_argument(
        "--d",
        type=int,
        default=None,
        metavar="D",
        help="data dimension (default: 1200 for the sphere; round(0.8 n) for the preset)",
    )
    add_problem(p, tau0=False)
    add_mc(
        p,
        "sample the data, compute the exact kernels and compare their eigenvalues with the "
        "prediction (default: prediction only)",
    )
    p.add_argument(
        "--width",
        type=int,
        default=None,
        metavar="M",
        help="with --mc, also one finite-width DEQ of width M (default: none)",
    )
    add_seed(p, "seed of the sampled data and networks")
    add_device(p, "for --mc; auto uses CUDA when available")
    p.add_argument(
        "--max-ks",
        type=float,
        default=0.05,
        help="--mc fails (exit 1) when the Kolmogorov distance of a sampled bulk exceeds this",
    )
    p.add_argument(
        "--max-spike-error",
        type=float,
        default=0.05,
        help="--mc fails (exit 1) when the top spike is off by more than this (relative)",
    )
    p.add_argument("--points", type=int, default=801, help="points of the predicted density's grid")
    add_plot(
        p,
        f"write {PLOT_NAME} (HLD 2023 Figure 1 layout) into DIR (needs matplotlib; "
        "default: no plot)",
    )
    add_force(p)
    add_json(p)
    add_quiet(p)
    return p


def _need_matplotlib() -> None:
    try:
        found = importlib.util.find_spec("matplotlib") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise MissingExtra(
            f"`deqrmt {NAME} --plot` needs matplotlib: pip install 'deqrmt[validate]' "
            "(missing: matplotlib)."
        )


def run(args: argparse.Namespace) -> int:
    from .._io import check_directory, check_output

    if args.plot:  # refuse an unusable plot path or a missing matplotlib first, before SymPy
        _need_matplotlib()
        check_directory(args.plot)
        if os.path.isdir(args.plot):
            check_output(os.path.join(args.plot, PLOT_NAME), force=args.force)
    from ..symbolic import get_activation

    get_activation(args.activation)  # bad text is refused before anything is computed
    if args.points < 64 or args.points > 20001:
        raise InvalidArgument(f"--points must be in [64, 20001], got {args.points}.")
    if args.width is not None and not args.mc:
        raise InvalidArgument("--width needs --mc (a finite DEQ is a Monte Carlo sample).")
    design = None
    if args.enn is not None:
        from ..validate._design_file import check_design
        from .enn_check import _check_deq, _read_json

        raw = _read_json(args.enn)
        setting = raw.get("setting") if isinstance(raw, dict) else None
        if isinstance(setting, dict) and isinstance(setting.get("deq"), str):
            _check_deq(None, setting["deq"], args.enn)  # the design's DEQ parses
        design = check_design(raw, f"the design {args.enn!r}")
        _same_deq(args.activation, design.deq, args.enn)
    mixture = None
    data = args.data
    if args.mixture is not None:
        from ..validate._mixture_spec import load_mixture

        mixture = load_mixture(args.mixture)
        data = "gmm"
    if args.mc:
        with validate_extra(NAME):
            report = _compute(args, data, mixture, design)
    else:
        report = _compute(args, data, mixture, design)
    if args.plot:
        _write_plot(args, report)
    if args.json:
        print_json(args, report.to_dict())
    else:
        _print(report)
    if report.passed is False:
        return 1
    return 0


def _same_deq(given: str, theirs: str, path: str) -> None:
    import sympy as sp

    from ..symbolic import get_activation

    a, b = get_activation(given).expr, get_activation(theirs).expr
    if a != b and sp.simplify(a - b) != 0:
        raise InvalidArgument(
            f"ACT {given!r} is not the DEQ the design {path!r} was solved for ({theirs!r}); "
            f"give ACT {theirs!r}, or design an ENN for {given!r} (`deqrmt design`)."
        )


def _compute(args: argparse.Namespace, data: str, mixture: Any, design: Any) -> Any:
    from .._progress import progress_bar
    from ..validate._spectrum import spectrum

    # the engine's steps: the predicted laws; with --mc the exact kernels, the DEQ of --width,
    # the designed ENN, and the CK's and NTK's eigenvalues (only --mc takes long: a bar for it;
    # one step fewer where the NTK diverges, and the bar then ends at the steps taken)
    steps = 1 + (1 + (args.width is not None) + (design is not None) + 2 if args.mc else 0)
    enabled = bar_enabled(args) if args.mc else False
    with progress_bar(steps, f"spectrum {args.activation}", unit="step", enabled=enabled) as bar:

        def progress(label: str) -> None:
            bar.note(label)
            bar.advance()

        report = spectrum(
            args.activation, data=data, n=args.n, d=args.d, mixture=mixture,
            sigma_a2=args.sigma_a2, sigma_b2=args.sigma_b2, mc=args.mc, width=args.width,
            seed=args.seed, device=args.device, max_ks=args.max_ks,
            max_spike_error=args.max_spike_error, points=args.points, enn=design,
            progress=progress,
        )  # fmt: skip
        bar.set(bar.done, bar.done)
        return report


def _print(report: Any) -> None:
    from ..validate._spectrum_text import report_lines

    print("\n".join(report_lines(report)))


def _write_plot(args: argparse.Namespace, report: Any) -> None:
    from .._io import write_directory

    def produce(tmp: str) -> list[str]:
        from ..validate._spectrum_plot import plot_spectrum

        return [str(plot_spectrum(report, os.path.join(tmp, PLOT_NAME)))]

    for path in write_directory(args.plot, produce, force=args.force):
        print_stderr(f"wrote {path}")


#: Real invocations shown on its page of the CLI reference (run when the docs build).
#: HLD 2023's sphere, checked on samples; a mixture described in TOML (its class alignments)
EXAMPLES: tuple[str, ...] = (
    "spectrum 'sqrt(2)*relu' --data sphere --n 200 --d 240 --sigma-a2 0.2 --mc",
    "cat > mixture.toml <<EOF",
    "p = 200",
    "[[class]]",
    "weight = 0.5",
    "mean = [4.0]",
    "variance = 1.0",
    "[[class]]",
    "weight = 0.5",
    "mean = [4.0]",
    "mean_offset = 1",
    "variance = 1.5",
    "EOF",
    "spectrum tanh --mixture mixture.toml --n 256",
)

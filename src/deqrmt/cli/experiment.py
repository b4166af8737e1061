"""``deqrmt experiment``: accuracy and cost of the DEQ vs a designed ENN vs a naive ENN."""

from __future__ import annotations

import argparse
import os
from typing import Any

from .._untrusted import integer
from ._common import (
    add_command,
    add_device,
    add_force,
    add_json,
    add_plot,
    add_quiet,
    bar_enabled,
    print_json,
    print_stderr,
    validate_extra,
)

__all__ = ["EXAMPLES", "NAME", "register", "run"]

NAME = "experiment"


def register(subparsers: Any) -> argparse.ArgumentParser:
    p = add_command(
        subparsers,
        NAME,
        help="accuracy and cost: DEQ vs designed ENN vs naive ENN random features (needs the "
        "[validate] extra)",
        description="Random-feature ridge classification with (a) the DEQ, (b) an ENN designed "
        "to match it (`deqrmt design`) and (c) a naive ENN with the DEQ's activation, on each "
        "dataset for several seeds: test accuracy (mean ± std) and feature time.",
    )
    p.add_argument("--deq", default="tanh", metavar="ACT", help="the DEQ's activation")
    p.add_argument(
        "--family", default="hard_tanh", metavar="FAMILY", help="the designed ENN's family"
    )
    p.add_argument(
        "--layers",
        type=integer,
        default=None,
        metavar="L",
        help="ENN depth (default: the depth rule of `deqrmt design`)",
    )
    p.add_argument(
        "--dataset",
        default="gmm,digits",
        metavar="LIST",
        help="comma-separated datasets: gmm, digits, mnist:DIR, fashion:DIR",
    )
    p.add_argument("--sigma-a2", default="0.2", metavar="S", help="σ_a² of the DEQ")
    p.add_argument("--m", type=integer, default=1024, help="width of every network")
    p.add_argument("--seeds", type=integer, default=5, help="repetitions with different weights")
    p.add_argument("--n-train", type=integer, default=1000, help="training samples per dataset")
    p.add_argument("--n-test", type=integer, default=500, help="test samples per dataset")
    add_device(p, "torch device; auto uses CUDA when available")
    add_json(p)
    add_plot(p, "write experiment.png into DIR, created if needed (default: no plot)")
    add_force(p)
    add_quiet(p)
    return p


def run(args: argparse.Namespace) -> int:
    from .._io import check_directory, check_output, write_directory

    if args.plot:  # refuse an unusable plot path before the work, not after
        check_directory(args.plot)
        if os.path.isdir(args.plot):
            check_output(os.path.join(args.plot, "experiment.png"), force=args.force)
    datasets = [d.strip() for d in args.dataset.split(",") if d.strip()]
    with validate_extra(NAME, ("sklearn",) if "digits" in datasets else ()):
        import torch

        from .._progress import progress_bar
        from ..validate._experiment import check_arguments, plot_experiment, run_experiment

        # sizes, datasets and the work estimate refused before any work (and before the bar)
        check_arguments(datasets, args.layers, args.m, args.seeds, args.n_train, args.n_test)

        device = args.device
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        steps = len(datasets) * (1 + 3 * args.seeds)  # per dataset: the design, 3 models a seed
        with progress_bar(steps, "experiment", unit="step", enabled=bar_enabled(args)) as bar:
            res = run_experiment(
                args.deq, args.family, datasets=datasets, layers=args.layers,
                sigma_a2=args.sigma_a2, m=args.m, seeds=args.seeds, n_train=args.n_train,
                n_test=args.n_test, device=device, progress=bar,
            )  # fmt: skip
        summary = res.summary()
        if args.plot:
            paths = write_directory(
                args.plot,
                lambda tmp: [plot_experiment(res, os.path.join(tmp, "experiment.png"))],
                force=args.force,
            )
            summary["plot"] = paths[0]
    if args.json:
        print_json(args, summary)
        return 0
    print(settings_text(summary["settings"]))
    for ds, models in summary["datasets"].items():
        print(f"{ds}:")
        for model, v in models.items():
            if isinstance(v, dict):
                print(
                    f"  {model:<13} accuracy {v['accuracy_mean']:.4f} ± {v['accuracy_std']:.4f}"
                    f"   features {v['seconds_mean']:.3f} s"
                )
        print(f"  designed ENN / DEQ feature time: {models['enn_over_deq_time']:.3g}")
    if args.plot:
        print_stderr(f"wrote {summary['plot']}")
    return 0


def settings_text(s: dict[str, Any]) -> str:
    """What ran, before the results: widths, seeds, device, and each dataset's sizes."""
    seeds = s["seeds"]

    def span(v: list[int]) -> str:
        return "none" if not v else f"{v[0]}" if len(v) == 1 else f"{v[0]}–{v[-1]}"

    lines = [
        f"settings: width m = {s['m']} (the DEQ and both ENNs), device {s['device']}, "
        f"{s['dtype']}; design: {s['design']['starts']} multi-starts at {s['design']['dps']} "
        "digits",
        f"  seeds: {seeds} (data {span(s['data_seeds'])}, DEQ weights "
        f"{span(s['deq_weight_seeds'])}, ENN weights {span(s['enn_weight_seeds'])})",
    ]
    for ds, d in s["datasets"].items():
        lines.append(
            f"  {ds}: n_train = {d['n_train']}, n_test = {d['n_test']}, p = {d['p']}, "
            f"{d['classes']} classes, τ0 = {d['tau0']:.6g}, ENN depth {d['enn_layers']}"
        )
    return "\n".join(lines)


#: Real invocations shown on its page of the CLI reference (run when the docs build).
EXAMPLES: tuple[str, ...] = (
    "experiment --deq tanh --dataset gmm,digits --m 256 --seeds 2 --n-train 400 --n-test 200",
)

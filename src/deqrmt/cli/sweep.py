"""``deqrmt sweep SPEC.toml``: run a grid of tasks on Dask, resumable, with a summary and plots.

Building the parser imports neither dask nor torch.  ``--export FILE`` writes the spec's
results as a table (.csv, or .parquet with pyarrow) after the run; when everything is stored
already, the command only reads the store, so ``deqrmt sweep SPEC --export results.csv`` is
also how a finished sweep is read back.  Exit status: 0 when every task of the
spec is stored without an error, 1 when some failed (or are missing), 130 after Ctrl-C at any
moment (one line ``deqrmt: interrupted; …``; what is stored stays stored; the same command
resumes); bad input (the spec, the store, the scheduler address, the plot directory) raises
:class:`deqrmt.DeqrmtError` subclasses, which the main CLI prints as one line (exit 2), all of
them before any work.
"""

from __future__ import annotations

import argparse
from typing import Any

from .._errors import FileError, MissingExtra
from .._text import print_stderr
from ._common import (
    add_command,
    add_device,
    add_force,
    add_json,
    add_plot,
    add_quiet,
    add_workers,
    bar_enabled,
    print_json,
)

__all__ = ["EXAMPLES", "NAME", "register", "run"]

NAME = "sweep"


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``sweep`` command to ``subparsers`` (from ``ArgumentParser.add_subparsers``)."""
    p = add_command(
        subparsers,
        NAME,
        help="run a grid of coefficient/exact/validate/design/certify tasks on Dask (resumable)",
        description="Run every task of SPEC (TOML) that the store does not hold yet, on Dask's "
        "distributed scheduler (an embedded cluster, or --scheduler), storing each result "
        "as it arrives. The same command again computes only what is missing; Ctrl-C stops "
        "cleanly. The spec format: examples/sweep.toml.",
        epilog="exit codes: 0 every task stored without error; 1 some tasks failed or are "
        "missing (the summary lists them); 2 bad input; 130 interrupted (stored results are kept).",
    )
    p.add_argument("spec", metavar="SPEC", help="the sweep spec (TOML), e.g. examples/sweep.toml")
    p.add_argument(
        "--store",
        metavar="PATH",
        default=None,
        help="SQLite results file (default: SPEC with the suffix .sqlite, next to the spec)",
    )
    p.add_argument(
        "--scheduler",
        metavar="tcp://HOST:PORT",
        default=None,
        help="address of a running Dask scheduler, tcp://HOST:PORT (default: start an embedded "
        "cluster, which needs no port and starts no HTTP server)",
    )
    add_workers(p)
    add_device(
        p,
        "where exact/validate tasks run: cuda sends them only to workers with the Dask "
        "resource GPU (dask worker --resources GPU=1); auto uses such workers when the cluster "
        "has them (default: auto)",
    )
    add_plot(
        p,
        "write coefficients.png, error_vs_n.png and error_heatmap.png into DIR; existing "
        "PNGs are replaced only with --force (default: no plots)",
    )
    p.add_argument(
        "--export",
        metavar="FILE",
        default=None,
        help="after the run, write the spec's results as a table: FILE.csv, or FILE.parquet "
        "(needs pyarrow); one row per task, one column per input and output "
        "(deqrmt.sweep._export); replaced only with --force. With everything stored, this only "
        "reads the store (default: no export)",
    )
    add_force(p)
    p.add_argument(
        "--retry-failed",
        action="store_true",
        help="run the spec's stored failures again (default: a stored failure counts as done)",
    )
    add_json(p)
    add_quiet(p)
    return p


def run(args: argparse.Namespace) -> int:
    """Run the sweep; print a progress bar (on a terminal), the summary, and write plots."""
    import importlib.util

    from ..sweep import SweepProgress, check_scheduler, load_spec, run_sweep, write_plots
    from ..sweep._cluster import INSTALL_HINT
    from ..sweep._export import check_export
    from ..sweep._plots import check_plot_directory

    # Every input is checked before anything starts: the spec, the scheduler, the plot target.
    spec = load_spec(args.spec)
    if args.scheduler is not None:
        check_scheduler(args.scheduler)
    force = bool(getattr(args, "force", False))
    if args.plot:
        if importlib.util.find_spec("matplotlib") is None:
            raise MissingExtra(f"--plot needs matplotlib; {INSTALL_HINT}.")
        check_plot_directory(args.plot, force=force)
    if args.export:
        check_export(args.export, force=force)
    from .._progress import progress_bar

    def progress(p: SweepProgress) -> None:
        # the tasks this run submits (the total is known once the store is read)
        bar.note(f"failed={p.failed}, stored={p.already_stored + p.done}")
        bar.set(p.done, p.submitted)

    with progress_bar(0, "sweep", unit="task", enabled=bar_enabled(args)) as bar:
        result = run_sweep(
            spec,
            store=args.store,
            scheduler=args.scheduler,
            workers=args.workers,
            device=args.device,
            retry_failed=args.retry_failed,
            progress=progress,
        )
    plots: list[str] = []
    if args.plot and not result.interrupted:
        try:
            plots = [
                str(p) for p in write_plots(result.store, args.plot, keys=spec.keys, force=force)
            ]
        except ImportError as e:
            raise MissingExtra(f"--plot needs matplotlib ({e}); {INSTALL_HINT}.") from None
        except FileError:
            raise
        except OSError as e:
            raise FileError(f"cannot write plots into {args.plot!r}: {e.strerror}.") from None
    exported = None
    if args.export and not result.interrupted:
        from ..sweep import ResultStore

        with ResultStore(result.store, create=False) as store:
            exported = store.export(args.export, keys=spec.keys, force=force)
    if args.json:
        d = result.to_dict()
        d["plots"] = plots
        d["export"] = exported
        print_json(args, d)
    else:
        print(result.table())
        if plots:
            print_stderr("wrote " + ", ".join(plots))
        if exported:
            print_stderr(f"wrote {exported}")
    if result.interrupted:
        rest = "; run the same command to resume" if result.missing else ""
        print_stderr(
            f"deqrmt: interrupted; {result.completed} results of this run stored in "
            f"{result.store}{rest}"
        )
        return 130
    return 0 if result.ok else 1


#: Real invocations shown on its page of the CLI reference (run when the docs build).
EXAMPLES: tuple[str, ...] = (
    "cat > grid.toml <<EOF",
    'kind = ["coefficients"]',
    'activations = ["tanh", "relu"]',
    'sigma_a2 = ["0.1", "0.2"]',
    "dps = 15",
    "EOF",
    "sweep grid.toml --workers 1",
)

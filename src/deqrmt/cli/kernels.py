"""``deqrmt kernels ACT --data X.npy --out K.zarr``: an exact kernel on Dask, into a Zarr store.

The kernel of :func:`deqrmt.kernels` for data beyond one machine's memory, computed tile by
tile on Dask workers (an embedded cluster, or ``--scheduler``) and written to a chunked Zarr
store; the same command again computes only the missing tiles.  ``--data`` is a ``.npy`` file
(memory-mapped), a Zarr array, or a small ``.csv``/``.txt`` table (read here and copied into
the store).  The workers read the data and write the store themselves, so they must see the
same file system.  Exit status: 0 when the store is complete, 130 after Ctrl-C (the tiles done
are kept; the same command resumes), 2 for bad input, all of it refused before any work
(a store for other data or settings, a budget: the store's size against the disk's free space,
a tile against the workers' memory, the kernel's size).
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from .._text import print_stderr
from ._common import (
    add_activation,
    add_command,
    add_device,
    add_json,
    add_problem,
    add_trainable,
    add_workers,
    names,
    positive_int,
    print_json,
    require_extra,
)

__all__ = ["EXAMPLES", "NAME", "register", "run"]

NAME = "kernels"

#: The most bytes of a text table (``--data X.csv``): larger data belongs in a .npy file.
MAX_TEXT_BYTES = 64 * 1024**2


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``kernels`` command to ``subparsers``."""
    p = add_command(
        subparsers,
        NAME,
        help="an exact CK/NTK of your data on Dask, tile by tile into a Zarr store (resumable)",
        description="Compute the exact infinite-width DEQ kernel (deqrmt.kernels) of the rows of "
        "--data, tile by tile on Dask workers (an embedded cluster, or --scheduler), into the "
        "chunked Zarr store --out; the same command again computes only the missing tiles. "
        "The workers read --data and write --out themselves: they must share this file system.",
        epilog="exit codes: 0 the store is complete; 2 bad input (refused before any work); "
        "130 interrupted (the tiles done are kept: run the same command to resume).",
    )
    add_activation(p)
    p.add_argument(
        "--data",
        required=True,
        metavar="PATH",
        help="the data, rows are samples: a .npy file (memory-mapped), a Zarr array, or a small "
        ".csv/.txt table (up to 64 MiB)",
    )
    p.add_argument(
        "--data2",
        default=None,
        metavar="PATH",
        help="second data set: the n1 × n2 kernel between the rows of --data and --data2 "
        "(default: the symmetric kernel of --data)",
    )
    p.add_argument(
        "--out", required=True, metavar="PATH", help="the Zarr store to write (a directory)"
    )
    p.add_argument(
        "--kind",
        default="ck",
        choices=("ck", "ntk", "both"),
        help="ck: G*; ntk: K* over --trainable; both: two arrays in the store (default: ck)",
    )
    add_problem(p, tau0=False)
    add_trainable(p)
    p.add_argument(
        "--tol", type=float, default=1e-13, metavar="TOL", help="the fixed point's tolerance"
    )
    p.add_argument(
        "--tile",
        type=positive_int,
        default=None,
        metavar="T",
        help="tile side, 1 to 2048: the store's chunks are T × T, one Dask task per tile "
        "(default: 1024)",
    )
    p.add_argument(
        "--scheduler",
        metavar="tcp://HOST:PORT",
        default=None,
        help="address of a running Dask scheduler whose workers share this file system "
        "(default: an embedded cluster)",
    )
    add_workers(p)
    add_device(
        p, "where each tile runs on its worker: auto uses the worker's GPU when torch sees one"
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="replace a kernel store made for other data or settings (default: refuse); a path "
        "that is not a kernel store is never replaced",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar (default: on a terminal)")
    add_json(p)
    return p


def _data(path: str, what: str) -> Any:
    """A text table read into memory (bounded); other paths go to the store's reader as is."""
    if os.path.splitext(path)[1].lower() not in (".csv", ".txt"):
        return path
    import io

    import numpy as np

    from .._errors import BudgetExceeded, InvalidArgument
    from .._io import read_limited

    blob = read_limited(path, f"{what} {path!r}", MAX_TEXT_BYTES)
    if len(blob) > MAX_TEXT_BYTES:
        raise BudgetExceeded(
            f"{what} {path!r} is larger than 64 MiB of text; save it with numpy.save as .npy."
        )
    delimiter = "," if path.lower().endswith(".csv") else None
    try:
        return np.loadtxt(io.BytesIO(blob), delimiter=delimiter, ndmin=2, dtype=np.float64)
    except ValueError as e:
        raise InvalidArgument(f"{what} {path!r} is not a table of numbers: {e}.") from None


def run(args: argparse.Namespace) -> int:
    """Write the store; print what was done (a table, or JSON with --json)."""
    require_extra(NAME, ("torch",))  # zarr and Dask: the sweep extra, checked by write_kernels
    from .._progress import progress_bar
    from .._text import table
    from ..sweep import check_scheduler, write_kernels

    if args.scheduler is not None:
        check_scheduler(args.scheduler)
    X1 = _data(args.data, "--data")
    X2 = None if args.data2 is None else _data(args.data2, "--data2")
    with progress_bar(0, "tiles", unit="tile", enabled=False if args.quiet else None) as bar:
        result = write_kernels(
            args.activation, X1, X2, out=args.out, sigma_a2=args.sigma_a2,
            sigma_b2=args.sigma_b2, kind=args.kind, trainable=names(args.trainable),
            device=args.device, tol=args.tol, tile=args.tile, scheduler=args.scheduler,
            workers=args.workers, force=args.force, progress=bar,
        )  # fmt: skip
    if args.json:
        print_json(args, result.to_dict())
    else:
        from .._budget import format_bytes

        n1, n2 = result.shape
        rows = [
            ("store", result.store),
            ("kernel", f"{' and '.join(result.kinds)}, {n1} × {n2}, {format_bytes(result.bytes)}"),
            ("tiles", f"{result.tiles} of {result.tile} × {result.tile}"),
            ("computed", f"{result.computed} in {result.seconds:.1f} s"),
            ("already done", str(result.already_done)),
            ("ran on", result.scheduler),
        ]
        print(table(rows, f"deqrmt kernels {args.activation}"))
    if result.interrupted:
        print_stderr(
            f"deqrmt: interrupted; {result.already_done + result.computed} of {result.tiles} "
            f"tiles are stored in {result.store}; run the same command to resume"
        )
        return 130
    return 0


#: Real invocations shown on its page of the CLI reference (run when the docs build).
#: a small table copied into the store; one worker, tiles of 4 (3 tasks)
EXAMPLES: tuple[str, ...] = (
    "cat > X.csv <<EOF",
    "0.5,-0.2,0.1",
    "0.3,0.8,-0.4",
    "-0.6,0.1,0.7",
    "0.2,0.2,0.9",
    "-0.1,-0.9,0.3",
    "0.7,-0.5,-0.2",
    "EOF",
    "kernels relu --data X.csv --out K.zarr --kind both --tile 4 --workers 1",
)

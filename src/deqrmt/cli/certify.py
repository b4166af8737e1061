"""``deqrmt certify --enn DESIGN.json``: check a designed ENN against its DEQ, kernel vs n.

Also reachable as ``deqrmt validate --deq ACT --enn DESIGN.json`` (the older spelling).
"""

from __future__ import annotations

import argparse
import json
import os
import stat
import sys
from typing import Any

from .._errors import FileError, InvalidArgument
from ._common import (
    add_command,
    add_json,
    print_json,
    require_validate_extra,
    sample_sizes,
    validate_extra,
)

__all__ = ["NAME", "register", "run"]

NAME = "certify"

#: A design file is a few kB; anything far larger is not one (and is not read into memory).
MAX_DESIGN_BYTES = 1 << 20


def register(subparsers: Any) -> argparse.ArgumentParser:
    p = add_command(
        subparsers,
        NAME,
        help="certify a designed ENN: DEQ kernel vs ENN kernel vs n (needs the [validate] extra)",
        description="Compare the DEQ's exact infinite-width kernel with the designed ENN's (exact "
        "and Monte Carlo) and with a naive ENN's (the DEQ's activation in every layer), over a "
        "sweep of sample sizes n; the design passes when its error falls with n and stays below "
        "the naive one. The DEQ, σ_a², σ_b² and the kernel are read from the design file.",
        epilog="exit codes: 0 passed, 1 failed, 2 bad input.",
    )
    p.add_argument(
        "--enn",
        required=True,
        metavar="DESIGN.json",
        help="the design to check: the output of `deqrmt design --json` (required)",
    )
    p.add_argument(
        "--deq",
        default=None,
        metavar="ACT",
        help="the DEQ's activation; must be the design's (default: the one in the design file)",
    )
    p.add_argument(
        "--n", type=sample_sizes, default=(256, 512, 1024), metavar="N1,N2,…", help="sample sizes"
    )
    p.add_argument("--ratio", type=float, default=0.8, help="p/n, as on the slides")
    p.add_argument("--m", type=int, default=1024, help="width of the Monte Carlo ENNs")
    p.add_argument("--seed", type=int, default=0, help="seed of the data and the networks")
    add_json(p)
    return p


def _read_design(path: str) -> dict[str, Any]:
    """The design file, read without blocking (a FIFO or a device is refused) and checked."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        raise FileError(f"cannot read the design {path!r}: {e.strerror}.") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise FileError(f"cannot read the design {path!r}: not a regular file.")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            blob = fh.read(MAX_DESIGN_BYTES + 1)
    except OSError as e:
        if isinstance(e, FileError):
            raise
        raise FileError(f"cannot read the design {path!r}: {e.strerror}.") from None
    finally:
        os.close(fd)
    if len(blob) > MAX_DESIGN_BYTES:
        raise InvalidArgument(
            f"{path!r} is larger than {MAX_DESIGN_BYTES} bytes: not a `deqrmt design --json` output."
        )
    try:
        design = json.loads(blob.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise InvalidArgument(f"cannot read the design {path!r}: not JSON ({e}).") from None
    _check_design(design, path)
    return design  # type: ignore[no-any-return]


def _check_design(design: object, path: str) -> None:
    """The fields certify reads, with their types; anything else is not a design."""
    problem = None
    inputs = design.get("setting") if isinstance(design, dict) else None
    solutions = design.get("solutions") if isinstance(design, dict) else None
    if not isinstance(inputs, dict):
        problem = "no `setting` object"
    elif not isinstance(inputs.get("deq"), str):
        problem = "`setting.deq` is not an activation string"
    elif inputs.get("kernel") not in ("ck", "ntk"):
        problem = "`setting.kernel` is not 'ck' or 'ntk'"
    elif not all(isinstance(inputs.get(k), (str, int, float)) for k in ("sigma_a2", "sigma_b2")):
        problem = "`setting.sigma_a2` or `setting.sigma_b2` is not a number"
    elif not isinstance(solutions, list) or not solutions:
        problem = "no solution"
    elif not all(
        isinstance(sol, dict)
        and isinstance(sol.get("params"), list)
        and all(isinstance(layer, dict) for layer in sol["params"])
        for sol in solutions
    ):
        problem = "a solution without a `params` list of layers"
    if problem is not None:
        raise InvalidArgument(
            f"{path!r} is not a `deqrmt design --json` output: {problem}; write one with "
            "`deqrmt design --deq ACT --family FAMILY --json > DESIGN.json`."
        )


def _check_deq(given: str | None, design_deq: str, path: str) -> None:
    """Refuse a design whose DEQ cannot be read, or a --deq other than the design's."""
    import sympy as sp

    from ..symbolic import get_activation

    try:
        theirs = get_activation(design_deq)
    except InvalidArgument as e:
        raise InvalidArgument(
            f"the design {path!r} names the DEQ {design_deq!r}, which is refused: {e}"
        ) from None
    if given is None:
        return
    ours = get_activation(given)
    if ours.expr != theirs.expr and sp.simplify(ours.expr - theirs.expr) != 0:
        raise InvalidArgument(
            f"--deq {given!r} is not the DEQ the design {path!r} was solved for "
            f"({design_deq!r}); drop --deq to use the design's, or design for {given!r}."
        )


def run(args: argparse.Namespace) -> int:
    require_validate_extra(NAME)  # before any work
    design = _read_design(args.enn)
    deq = design["setting"]["deq"]
    _check_deq(args.deq, deq, args.enn)
    with validate_extra(NAME):
        from tqdm import tqdm

        from ..validate._certificate import certify_design

        ns = list(args.n)
        with tqdm(total=len(ns), desc="certificate", file=sys.stderr, disable=None) as bar:
            res = certify_design(
                deq,
                design,
                ns=ns,
                ratio=args.ratio,
                m=args.m,
                seed=args.seed,
                progress=lambda _m: bar.update(1),
            )
    if args.json:
        print_json(args, res.to_dict())
    else:
        print(_legend(design["setting"].get("kernel"), args.m, args.ratio))
        print(f"{'n':>6} {'designed (exact)':>18} {'naive (exact)':>15} {'designed (MC)':>15}")
        for r in res.runs:
            mc = f"{r['designed_mc']:15.4g}" if "designed_mc" in r else f"{'-':>15}"
            print(f"{r['n']:>6} {r['designed_exact']:18.4g} {r['naive_exact']:15.4g} {mc}")
        slope = res.slope
        print(f"slopes: designed {slope['designed_exact']:.3g}, naive {slope['naive_exact']:.3g}")
        if any("designed_mc" in r for r in res.runs):
            print(
                f"note: the MC column is one network of width m = {args.m}, an n×n kernel "
                "estimated from m random features: its error grows with n/m, so at a fixed m it "
                "rises with n; raise --m to lower it. The certificate reads the exact columns."
            )
        print("certificate: " + ("PASSED" if res.passed else "FAILED"))
    return 0 if res.passed else 1


def _legend(kernel: Any, m: int, ratio: float) -> str:
    """What the columns are: relative spectral-norm errors against the DEQ's exact kernel."""
    ours, theirs = ("K*", "Θ") if kernel == "ntk" else ("G*", "Σ")
    return (
        f"‖{ours} − {theirs}‖/‖{ours}‖ (relative spectral-norm error against the DEQ's exact "
        f"{ours}, on n GMM samples of dimension p = {ratio:g}·n): designed (exact) = the designed "
        f"ENN's infinite-width {theirs}; naive (exact) = an ENN of the same depth with the DEQ's "
        f"own activation, the control; designed (MC) = the designed ENN at width m = {m} (CK "
        "designs only). The certificate PASSES when, at the largest n, the designed error is "
        "below half the naive one and does not grow with n."
    )

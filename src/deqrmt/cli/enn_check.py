"""``deqrmt enn-check --enn DESIGN.json``: check a designed ENN against its DEQ, kernel vs n.

Also reachable as ``deqrmt certify`` (the name until 0.1, deprecated: "certify" is the Arb proof
now, docs/architecture.md) and as ``deqrmt validate --deq ACT --enn DESIGN.json`` (the older
spelling).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from .._errors import InvalidArgument
from .._io import read_limited
from .._untrusted import decimal, integer
from ._common import (
    add_command,
    add_json,
    add_quiet,
    add_seed,
    bar_enabled,
    print_json,
    require_validate_extra,
    validate_extra,
)

__all__ = ["EXAMPLES", "DEPRECATED_NAME", "NAME", "register", "run"]

NAME = "enn-check"
#: the command's name until 0.1, kept as an alias for one release (a note on stderr when used)
DEPRECATED_NAME = "certify"

#: A design file is a few kB; anything far larger is not one (and is not read into memory).
MAX_DESIGN_BYTES = 1 << 20


def register(subparsers: Any) -> argparse.ArgumentParser:
    p = _add(
        subparsers,
        NAME,
        "check a designed ENN: DEQ kernel vs ENN kernel vs n (needs the [validate] extra)",
    )
    # the old name: a parser of its own (so `deqrmt certify --json` says "command": "certify",
    # as it did), left out of --help (it has no page); cli/__init__.py prints the deprecation
    # note and runs this
    _add(subparsers, DEPRECATED_NAME, None)
    return p


def _add(subparsers: Any, name: str, help: str | None) -> argparse.ArgumentParser:
    p = add_command(
        subparsers,
        name,
        help=help,
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
        "--n",
        type=_sample_sizes,
        default=(256, 512, 1024),
        metavar="N1,N2,…",
        help="sample sizes in increasing order, 16 to 4096, at most 8 of them",
    )
    p.add_argument("--ratio", type=decimal, default=0.8, help="p/n, as on the slides (1/256 to 16)")
    p.add_argument(
        "--m", type=integer, default=1024, help="width of the Monte Carlo ENNs (1 to 16384)"
    )
    add_seed(p, "seed of the data and the networks (≥ 0)")
    add_json(p)
    add_quiet(p)
    return p


def _sample_sizes(text: str) -> tuple[int, ...]:
    """argparse type of ``--n``: comma-separated ASCII integers, at least one (``256,512``)."""
    parts = [v for v in text.split(",") if v.strip()]
    if not parts:
        raise argparse.ArgumentTypeError("expected at least one sample size, e.g. 256,512,1024")
    if len(parts) > 64:
        raise argparse.ArgumentTypeError(f"{len(parts)} sample sizes; at most 8 are run")
    try:
        return tuple(integer(v) for v in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}"
        ) from None


def _read_json(path: str) -> Any:
    """The design file, read without blocking (a FIFO or a device is refused) and checked."""
    blob = read_limited(path, f"the design {path!r}", MAX_DESIGN_BYTES)
    if len(blob) > MAX_DESIGN_BYTES:
        raise InvalidArgument(
            f"{path!r} is larger than {MAX_DESIGN_BYTES} bytes: not a `deqrmt design --json` output."
        )
    try:
        design = json.loads(blob.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise InvalidArgument(f"cannot read the design {path!r}: not JSON ({e}).") from None
    return design


def _check_deq(given: str | None, design_deq: str, path: str) -> None:
    """Refuse a design whose DEQ cannot be read, or a --deq other than the design's."""
    import sympy as sp

    from ..symbolic import get_activation

    try:
        theirs = get_activation(design_deq)
    except InvalidArgument as e:  # the same class (ParseError, BudgetExceeded …), the field named
        raise type(e)(
            f"the design {path!r} names the DEQ {design_deq!r} (`setting.deq`), which is "
            f"refused: {e}"
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
    require_validate_extra(NAME)  # a missing extra before any work
    from ..validate._design_file import check_certificate_sizes, check_design

    raw = _read_json(args.enn)
    setting = raw.get("setting") if isinstance(raw, dict) else None
    if isinstance(setting, dict) and isinstance(setting.get("deq"), str):
        _check_deq(args.deq, setting["deq"], args.enn)  # a --deq mismatch is the first thing to say
    # every field and size checked before any work is done
    design = check_design(raw, f"the design {args.enn!r}")
    check_certificate_sizes(args.n, args.ratio, args.m, args.seed, design.kernel)
    deq = design.deq
    with validate_extra(NAME):
        from .._progress import progress_bar
        from ..validate._certificate import certify_design

        ns = list(args.n)

        def progress(label: str) -> None:
            bar.note(label)
            bar.advance()

        with progress_bar(len(ns), "certificate", unit="n", enabled=bar_enabled(args)) as bar:
            res = certify_design(
                deq, design, ns=ns, ratio=args.ratio, m=args.m, seed=args.seed, progress=progress
            )
    if args.json:
        print_json(args, res.to_dict())
    else:
        print(_legend(design.kernel, args.m, args.ratio))
        print(f"{'n':>6} {'designed (exact)':>18} {'naive (exact)':>15} {'designed (MC)':>15}")
        for r in res.runs:
            mc = f"{r['designed_mc']:15.4g}" if "designed_mc" in r else f"{'-':>15}"
            print(f"{r['n']:>6} {r['designed_exact']:18.4g} {r['naive_exact']:15.4g} {mc}")
        slope = res.slope
        if slope["designed_exact"] is None or slope["naive_exact"] is None:
            print("slopes: none (one sample size; give two or more with --n for a slope)")
        else:
            print(
                f"slopes: designed {slope['designed_exact']:.3g}, naive {slope['naive_exact']:.3g}"
            )
        if any("designed_mc" in r for r in res.runs):
            print(
                f"note: the MC column is one network of width m = {args.m}, an n×n kernel "
                "estimated from m random features: its error grows with n/m, so at a fixed m it "
                "rises with n; raise --m to lower it. The certificate reads the exact columns."
            )
        print("certificate: " + ("PASSED" if res.passed else "FAILED: " + "; ".join(res.reasons)))
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


#: Real invocations shown on its page of the CLI reference (run when the docs build).
EXAMPLES: tuple[str, ...] = (
    "design --deq tanh --family hard_tanh --json > design.json",
    "enn-check --enn design.json --n 256,512 --m 512",
)

"""``deqrmt risk ACT --data gmm --n 512 --ratios 0.25,0.5,1,2,4 --ridge 1e-3 --mc``: the
training and test MSE of ridge regression on width-m DEQ random features, predicted from G* and
from Ḡ by the random-features deterministic equivalent and, with ``--mc``, sampled
(:func:`deqrmt.risk`).

``--plot CURVES.png`` writes the curves against m/n atomically (never over a file without
``--force``); ``--json`` prints the :meth:`deqrmt.RiskCurve.to_dict` object (docs/json.md).
"""

from __future__ import annotations

import argparse
from typing import Any

from .._errors import InvalidArgument
from ._common import (
    add_activation,
    add_command,
    add_device,
    add_force,
    add_json,
    add_mc,
    add_problem,
    add_quiet,
    add_seed,
    bar_enabled,
    number_list,
    positive_int,
    print_json,
    print_stderr,
    validate_extra,
)

__all__ = ["EXAMPLES", "NAME", "register", "run"]

NAME = "risk"


def register(subparsers: Any) -> argparse.ArgumentParser:
    p = add_command(
        subparsers,
        NAME,
        help="training and test MSE of ridge regression on DEQ random features against m/n: "
        "predicted from G* and from Ḡ, and sampled with --mc (needs the [validate] extra)",
        description="The learning curve of ridge regression on the fixed points z*(x) of "
        "width-m DEQs with random weights (Louart, Liao & Couillet 2018's deterministic "
        "equivalent): predicted with the exact CK G* on the data, with the equivalent Ḡ of "
        "the proven scalars, and with --mc sampled from DEQs of each width (mean ± standard "
        "deviation over --seeds networks).  The deterministic equivalent is proven for i.i.d. "
        "random features, not for DEQ features (coupled through A): --mc judges it.",
        epilog="exit codes: 0 ok (with --mc: both predictions within the tolerance of the "
        "sampled test MSE at every point), 1 an --mc check failed, 2 bad input.",
    )
    add_activation(p)
    p.add_argument(
        "--data",
        choices=("gmm",),
        default="gmm",
        help="gmm: the paper's two-class Gaussian mixture at p = round(0.8 n), or --mixture, "
        "φ centred at τ* (ICML 2024) (default: gmm)",
    )
    p.add_argument(
        "--mixture",
        default=None,
        metavar="FILE.toml",
        help="a Gaussian mixture with diagonal covariances (as for `deqrmt spectrum`) "
        "(default: the preset)",
    )
    p.add_argument(
        "--n", type=positive_int, default=512, metavar="N", help="training points (default 512)"
    )
    p.add_argument(
        "--n-test",
        type=positive_int,
        default=None,
        metavar="N",
        help="test points of the same law (default: N)",
    )
    p.add_argument(
        "--ratios",
        default="0.25,0.5,1,2,4",
        metavar="R[,R…]",
        help="widths as m/n, comma separated (default: 0.25,0.5,1,2,4)",
    )
    p.add_argument(
        "--ridge",
        default="1e-3",
        metavar="L[,L…]",
        help="ridge(s) λ > 0, comma separated (default: 1e-3)",
    )
    add_problem(p, tau0=False)
    add_mc(p, "sample --seeds DEQs per width and judge the predictions (default: off)")
    p.add_argument(
        "--seeds",
        type=positive_int,
        default=5,
        metavar="S",
        help="DEQs sampled per width with --mc, ≥ 2 (default: 5)",
    )
    add_seed(p, "seed of the sampled data and networks")
    p.add_argument(
        "--z",
        default="3",
        metavar="Z",
        help="--mc passes where |predicted − sampled| ≤ Z·SE + RTOL·|sampled| (default: 3)",
    )
    p.add_argument("--rtol", default="0.1", metavar="RTOL", help="see --z (default: 0.1)")
    add_device(p, "where the DEQs are solved; auto uses CUDA when available")
    p.add_argument(
        "--plot",
        default=None,
        metavar="PNG",
        help="write the curves against m/n to this PNG (needs matplotlib; default: none)",
    )
    add_force(p)
    add_json(p)
    add_quiet(p)
    return p


def run(args: argparse.Namespace) -> int:
    from .._io import check_output

    if args.plot is not None:
        import importlib.util

        if importlib.util.find_spec("matplotlib") is None:
            raise InvalidArgument(
                f"`deqrmt {NAME} --plot` needs matplotlib: pip install 'deqrmt[validate]'."
            )
        check_output(args.plot, force=args.force)
    ratios = number_list(args.ratios, "--ratios", "1,2")
    ridges = number_list(args.ridge, "--ridge", "1,2")
    with validate_extra(NAME):
        from .._progress import progress_bar
        from ..validate import risk

        # one bar over the sampled networks (the predictions alone take seconds: no bar)
        total = args.seeds * len(ratios) if args.mc else 1
        enabled = bar_enabled(args) if args.mc else False
        with progress_bar(total, f"risk {args.activation}", unit="net", enabled=enabled) as bar:
            curve = risk(
                args.activation, data=args.data, n=args.n, n_test=args.n_test,
                mixture=args.mixture, ratios=ratios, ridges=ridges, sigma_a2=args.sigma_a2,
                sigma_b2=args.sigma_b2, mc=args.mc, seeds=args.seeds, seed=args.seed, z=args.z,
                rtol=args.rtol, device=args.device, progress=bar if args.mc else None,
            )  # fmt: skip
    if args.plot is not None:
        _write_plot(args, curve)
    if args.json:
        print_json(args, curve.to_dict())
    else:
        print(curve.table())
    if curve.passed is False:
        return 1
    return 0


def _write_plot(args: argparse.Namespace, curve: Any) -> None:
    import io

    from .._io import write_output

    buf = io.BytesIO()
    curve.figure().savefig(buf, format="png", dpi=110)
    write_output(args.plot, buf.getvalue(), force=args.force)
    print_stderr(f"wrote {args.plot}")


#: Real invocations shown on its page of the CLI reference (run when the docs build).
EXAMPLES: tuple[str, ...] = ("risk tanh --n 64 --ratios 0.5,1,2 --ridge 1e-3",)

"""``deqrmt bias EXPR``: the implicit regularizer of gradient flow through β = g(θ).

Prints h(β), the conserved quantity, q(β) and its convexity domain; ``--check`` runs PyTorch
gradient descent against the predicted limit β̂ and the ℓ2 negative control; ``--plot DIR``
draws q(β) (and, with ``--check``, the GD paths against β̂).  torch is imported only for
``--check``, matplotlib only for ``--plot``.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from .._untrusted import decimal, integer
from ._common import (
    add_command,
    add_device,
    add_dps,
    add_force,
    add_json,
    add_plot,
    add_seed,
    extra_imports,
    names,
    print_json,
    print_stderr,
    require_extra,
    require_validate_extra,
    validate_extra,
)

__all__ = ["EXAMPLES", "NAME", "register", "run"]

NAME = "bias"


def register(subparsers: Any) -> argparse.ArgumentParser:
    p = add_command(
        subparsers,
        NAME,
        help="implicit bias of gradient flow through β = g(θ): h, conserved quantity, q(β)",
        description="Derive the regularizer q(β) whose sum gradient flow on the square loss "
        "implicitly minimises among interpolants, for a per-coordinate parametrization "
        "β = g(θ) in one or two trainable parameters (the diagonal DEQ 1/(1-w), u/(1-w), the "
        "diagonal network u**2-v**2): h = |∇_θ g|², the conserved quantity, ψ'' = 1/h, "
        "q = ψ(β) − ψ'(β(0))·β, and the domain the flow cannot leave.",
        epilog="example: deqrmt bias '1/(1-w)' --check --d 100 --n 40 --seed 0",
    )
    p.add_argument(
        "expression",
        metavar="EXPR",
        help="β as an expression in the trainable parameters, e.g. '1/(1-w)', 'u/(1-w)', "
        "'u**2-v**2' (parsed safely; + - * / ** and exp, log, sqrt, tanh, …)",
    )
    p.add_argument(
        "--params",
        default=None,
        metavar="NAMES",
        help="the trainable parameters in order, comma-separated: w or u,w "
        "(default: every name in EXPR, sorted)",
    )
    p.add_argument(
        "--init",
        default="0.5",
        metavar="V",
        help="θ(0): one value for every parameter, or one per parameter (0.5 or 1,0.25); "
        "exact decimals or fractions",
    )
    p.add_argument("--latex", action="store_true", help="print a LaTeX align* block (default: off)")
    add_json(p)
    check = p.add_argument_group("gradient-descent check (needs the validate extra)")
    check.add_argument(
        "--check",
        action="store_true",
        help="run PyTorch gradient descent (float64) at decreasing step sizes and compare its "
        "limit with the predicted β̂ and with the ℓ2 min-norm interpolant (default: off)",
    )
    check.add_argument(
        "--d", type=integer, default=100, metavar="D", help="coordinates d (N < d ≤ 10000)"
    )
    check.add_argument("--n", type=integer, default=40, metavar="N", help="samples N (N < d)")
    add_seed(check, "seed of X and β* (≥ 0)", metavar="S")
    check.add_argument(
        "--planted",
        choices=["sparse", "dense"],
        default="sparse",
        help="β* = β(0) + z with z sparse (N//8 non-zero N(0,1) entries) or dense",
    )
    check.add_argument(
        "--steps",
        default=None,
        metavar="LRS",
        help="comma-separated step sizes, at most 8 (default: η0, η0/4, η0/16, η0/64 with "
        "η0 = 1/(‖X‖² max h) over β(0) and β̂)",
    )
    check.add_argument(
        "--tolerance",
        type=decimal,
        default=1e-3,
        metavar="T",
        help="largest accepted ‖β_GD − β̂‖/‖β̂‖ at the smallest step",
    )
    add_device(check, "torch device (auto: cuda when available)")
    add_dps(check, help="digits of the predicted limit β̂ (15 to 1000)")
    add_plot(
        p,
        "write q.png (and with --check path.png) into DIR, created if needed (default: no plot)",
    )
    add_force(p)
    return p


def _step_sizes(text: str | None) -> tuple[float, ...] | None:
    from .._errors import BudgetExceeded, InvalidArgument
    from ..numeric._bias import MAX_STEP_SIZES

    if text is None:
        return None
    parts = names(text)
    if len(parts) > MAX_STEP_SIZES:
        raise BudgetExceeded(
            f"--steps has {len(parts)} step sizes; at most {MAX_STEP_SIZES} (one GD run each)."
        )
    try:
        values = tuple(decimal(v) for v in parts)
    except ValueError:
        raise InvalidArgument(
            f"--steps {text!r} must be comma-separated decimals in ASCII digits."
        ) from None
    if not values or any(not (v > 0 and v < float("inf")) for v in values):
        raise InvalidArgument(f"--steps {text!r} must be positive numbers.")
    return values


def _text(d: Any) -> str:
    from ._math_text import set_text

    inits = ", ".join(f"{t}(0) = {v}" for t, v in zip(d.parameters, d.init, strict=True))
    lines = [
        f"β = {d.expression}    ({inits}; β(0) = {d.beta0_value})",
        f"h(β)           {d.h}",
    ]
    if d.conserved is not None:
        lines.append(
            f"conserved      {d.conserved_symbol} = {d.conserved}    "
            f"({d.conserved_symbol}(0) = {d.conserved_value})"
        )
    else:
        lines.append("conserved      none (one parameter)")
    lines += [
        f"ψ(β)           {d.psi}    (ψ'' = 1/h)",
        f"q(β)           {d.q_at_init}    (ψ(β) − ψ'(β(0))·β)",
        f"convex domain  {set_text(d.domain)}    (h > 0; the flow never leaves it)",
        "preserved      " + (", ".join(map(str, d.invariants)) or "nothing beyond the domain"),
    ]
    if not d.closed_form:
        lines.append("note           ψ has no closed form here: a quadrature representation")
    return "\n".join(lines) + "\n"


def _check_text(c: Any) -> str:
    header = f"{'step η':>12}  {'GD steps':>9}  {'residual':>9}  ‖β_GD − β̂‖/‖β̂‖"
    rows = [
        f"{r.lr:>12.4g}  {r.steps:>9d}  {r.residual:>9.2g}  {g:.3e}"
        for r, g in zip(c.runs, c.gaps, strict=True)
    ]
    out = [
        f"gradient descent: N = {c.problem.X.shape[0]}, d = {c.problem.X.shape[1]}, "
        f"seed = {c.problem.seed}, planted {c.problem.planted}, device {c.device}",
        header,
        *rows,
        f"Richardson extrapolation of the two smallest steps: gap {c.extrapolated_gap:.3e}",
        f"ℓ2 min-norm interpolant: ‖β_ℓ2 − β̂‖/‖β̂‖ = {c.l2_gap:.3e} (negative control)",
        f"min β_i along the GD paths: {min(r.min_beta for r in c.runs):.4g}",
    ]
    if c.passed:
        out.append(f"PASS: GD → β̂ within {c.tolerance:g}; the gap shrinks with the step")
    else:
        out += [f"FAIL: {f}" for f in c.failures]
    return "\n".join(out) + "\n"


def _plot_q(d: Any, path: str, check: Any = None) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from ..numeric._bias import domain_bounds, float_functions

    lo, hi = domain_bounds(d)
    b0 = float(d.beta0_value)
    pts = [b0] + ([] if check is None else list(check.beta_hat))
    left, right = min(pts), max(pts)
    pad = max(1.0, right - left)
    a = max(left - pad, lo + 1e-3 * pad) if np.isfinite(lo) else left - pad
    b = min(right + pad, hi - 1e-3 * pad) if np.isfinite(hi) else right + pad
    grid = np.linspace(a, b, 400)
    q, _, _ = float_functions(d)(grid)
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(grid, q, label="q(β)")
    ax.axvline(b0, color="grey", ls=":", label="β(0)")
    if check is not None:
        qb, _, _ = float_functions(d)(check.beta_hat)
        ax.plot(check.beta_hat, qb, "o", ms=3, label="β̂ coordinates")
    ax.set_xlabel("β")
    ax.set_ylabel("q(β)")
    ax.set_title(f"β = {d.expression}: q = ψ − ψ'(β(0))·β")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _plot_path(c: Any, path: str) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.2))
    ref = np.linalg.norm(c.beta_hat)
    for r in c.runs:
        steps = np.maximum(r.path_steps, 1)
        dist = np.linalg.norm(r.path - c.beta_hat[None, :], axis=1) / ref
        ax.loglog(steps, dist, label=f"GD, step {r.lr:.3g}")
    ax.axhline(c.l2_gap, color="k", ls="--", label="ℓ2 interpolant")
    ax.set_xlabel("GD step")
    ax.set_ylabel("‖β(t) − β̂‖ / ‖β̂‖")
    ax.legend(fontsize=8)
    lo, hi = float(c.beta_hat.min()), float(c.beta_hat.max())
    bx.plot([lo, hi], [lo, hi], color="grey", lw=1)
    bx.plot(c.beta_hat, c.runs[-1].beta, "o", ms=3, label="GD limit (smallest step)")
    bx.plot(c.beta_hat, c.l2, "x", ms=3, label="ℓ2 min-norm interpolant")
    bx.set_xlabel("predicted β̂_i")
    bx.set_ylabel("β_i")
    bx.legend(fontsize=8)
    fig.suptitle(f"β = {c.derivation.expression}: GD path against the predicted limit")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def run(args: argparse.Namespace) -> int:
    from .._errors import InvalidArgument
    from .._io import check_directory, check_output

    plots = ["q.png", "path.png"] if args.check else ["q.png"]
    if args.plot:  # refuse an unusable plot path first, before SymPy is even imported
        require_extra(f"{NAME} --plot", ("matplotlib",))
        check_directory(args.plot)
        if os.path.isdir(args.plot):
            for name in plots:
                check_output(os.path.join(args.plot, name), force=args.force)
    from ..symbolic._bias import bias_latex, derive_bias, domain_text

    params = names(args.params) if args.params is not None else None
    if args.params is not None and not params:
        raise InvalidArgument("--params must name one or two parameters, e.g. w or u,w.")
    steps = _step_sizes(args.steps)
    if args.check and not 1 <= args.n < args.d:
        raise InvalidArgument(f"--n {args.n} and --d {args.d}: need 1 ≤ N < d.")
    if args.check and not 0 < args.tolerance < 1:
        raise InvalidArgument(f"--tolerance {args.tolerance} must lie in (0, 1).")
    if args.check:  # a missing extra is refused before any work
        require_validate_extra(NAME)
    if args.check:  # sizes, seed and digits before the derivation and any numeric work
        from .._untrusted import bounded_int
        from ..numeric._bias import check_sizes

        bounded_int(args.seed, "--seed", 0, 2**32 - 1, fix="a seed is a non-negative integer")
        bounded_int(args.dps, "--dps", 15, 1000, fix="digits of the predicted limit")
        check_sizes(args.n, args.d, step_sizes=len(steps) if steps else 4, dps=args.dps)
    d = derive_bias(args.expression, params, init=args.init)
    result: dict[str, Any] = {
        "beta": d.beta.name,
        "h": str(d.h),
        "conserved": None if d.conserved is None else str(d.conserved),
        "q": str(d.q_at_init),
        "convex_domain": domain_text(d.domain),
    }
    check = None
    if args.check:
        with validate_extra(NAME):
            from ..validate._bias import check_bias

            check = check_bias(
                d,
                n=args.n,
                d=args.d,
                seed=args.seed,
                planted=args.planted,
                step_sizes=steps,
                tolerance=args.tolerance,
                device=args.device,
                dps=args.dps,
            )
        result["gd_gap"] = check.gd_gap
        result["l2_gap"] = check.l2_gap
    written: list[str] = []
    if args.plot:
        with extra_imports(f"{NAME} --plot", ("matplotlib",)):
            from .._io import write_directory

            def produce(tmp: str) -> list[str]:
                made = [_plot_q(d, os.path.join(tmp, "q.png"), check)]
                if check is not None:
                    made.append(_plot_path(check, os.path.join(tmp, "path.png")))
                return made

            written = write_directory(args.plot, produce, force=args.force)
    if args.json:
        print_json(args, result)
    elif args.latex:
        print(bias_latex(d), end="")
        if check is not None:
            print(_check_text(check), end="")
    else:
        print(_text(d), end="")
        if check is not None:
            print(_check_text(check), end="")
    for path in written:
        print_stderr(f"wrote {path}")
    return 0 if check is None or check.passed else 1


#: Real invocations shown on its page of the CLI reference (run when the docs build).
EXAMPLES: tuple[str, ...] = (
    "bias '1/(1-w)'",
    "bias 'u**2-v**2' --init 1,0.5",
)

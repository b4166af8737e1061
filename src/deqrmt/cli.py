"""The ``deqrmt`` command line.

Heavy modules are imported inside each command, so ``deqrmt coefficients`` never imports
torch.  Every error deqrmt raises on purpose is printed as one line on stderr, exit code 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from ._errors import DeqrmtError
from ._text import table

__all__ = ["main", "build_parser"]


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``deqrmt: error: …`` on stderr, exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dps", type=int, default=30, help="significant digits to report (default 30)")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def build_parser(with_validate: bool = True) -> argparse.ArgumentParser:
    """The argument parser; ``with_validate=False`` skips importing deqrmt.validate."""
    parser = _Parser(
        prog="deqrmt",
        description="Derived high-dimensional equivalents of DEQ conjugate and neural tangent kernels.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser(
        "coefficients",
        help="τ*, γ*, α*₁..₄, β*₁..₃, κ* of a DEQ (ICML 2024, Theorems 1–2)",
        description="Coefficients of the DEQ z = φ(σ_a A z + σ_b B x)/√m, to verified digits.",
    )
    p.add_argument(
        "activation",
        metavar="ACT",
        help="library name (tanh, relu, leaky_relu(0.1), …) or an expression in x",
    )
    p.add_argument("--sigma-a2", default="0.2", help="σ_a² (default 0.2)")
    p.add_argument("--sigma-b2", default=None, help="σ_b² (default 1 − σ_a²)")
    p.add_argument("--tau0", default="1", help="τ0 = √(tr C°/p) (default 1)")
    p.add_argument(
        "--no-center", action="store_true", help="keep φ as given; refuse if E[φ(τ*ξ)] ≠ 0"
    )
    p.add_argument(
        "--trainable",
        default="a,A",
        help="parameters the NTK is over: a,A (default; the paper's K* = G*/(1 − Ġ*)), a,A,B or A,B",
    )
    _add_common(p)

    p = sub.add_parser(
        "explicit",
        help="per-layer τ̃, α̃, β̃, κ̃ of an explicit network (Theorem 3)",
        description="Coefficients of x^(l) = σ_l(W_l x^(l−1))/√m, one activation per layer.",
    )
    p.add_argument("activations", metavar="ACT", nargs="+", help="one activation per layer")
    p.add_argument("--tau0", default="1", help="τ0 (default 1)")
    p.add_argument("--no-center", action="store_true", help="keep each σ_l as given")
    _add_common(p)

    p = sub.add_parser(
        "sphere",
        help="α, β, μ (CK) and NTK versions of a DEQ on sphere data, and Corollary 1's quadratics (HLD 2023)",
        description="HLD 2023 sphere setting for an arbitrary activation, to verified digits.",
    )
    from .numeric._sphere_cli import configure_sphere_parser

    configure_sphere_parser(p)

    p = sub.add_parser(
        "derive",
        help="print the derived general formulas (text or LaTeX)",
        description="The formulas derived by SymPy from the kernel map; nothing is typed in.",
    )
    p.add_argument("target", choices=["deq-ck", "deq-ntk", "explicit-ck", "explicit-ntk", "sphere"])
    p.add_argument("--latex", action="store_true", help="an amsmath align block, ready to paste")
    p.add_argument("--trainable", default="a,A", help="DEQ NTK parameter set (a,A | a,A,B | A,B)")
    p.add_argument(
        "--no-injection", action="store_true", help="DEQ with σ_b = 0 (no input injection)"
    )

    p = sub.add_parser("latex", help="a complete, compilable LaTeX derivation for one activation")
    p.add_argument("activation", metavar="ACT")
    p.add_argument("-o", "--output", required=True, help="the .tex file to write")
    p.add_argument("--sigma-a2", default="0.2")
    p.add_argument("--sigma-b2", default=None)
    p.add_argument("--tau0", default="1")
    p.add_argument("--dps", type=int, default=30)

    p = sub.add_parser("codegen", help="a standalone mpmath-only Python module for one activation")
    p.add_argument("activation", metavar="ACT")
    p.add_argument("-o", "--output", required=True, help="the .py file to write")
    p.add_argument("--trainable", default="a,A")

    p = sub.add_parser(
        "design",
        help="design an equivalent explicit network (ENN) for a DEQ",
        description="Solve the CK (or NTK) matching equations for an L-layer ENN from a family.",
    )
    p.add_argument("--deq", required=True, metavar="ACT", help="the DEQ's activation")
    p.add_argument(
        "--family",
        required=True,
        help="hard_tanh | leaky_relu | polynomialD | an expression with parameters, e.g. 'a*tanh(b*x)'",
    )
    p.add_argument("--layers", type=int, default=None, help="ENN depth (default: the depth rule)")
    p.add_argument("--kernel", choices=["ck", "ntk"], default="ck")
    p.add_argument("--sigma-a2", default="0.2")
    p.add_argument("--sigma-b2", default=None)
    p.add_argument("--tau0", default="1")
    p.add_argument(
        "--trainable",
        default="a,A",
        help="DEQ NTK set; a,A ↔ ENN input layer fixed, a,A,B ↔ all layers trainable",
    )
    p.add_argument("--starts", type=int, default=24, help="multi-start count (default 24)")
    p.add_argument("--seed", type=int, default=0)
    _add_common(p)

    p = sub.add_parser(
        "experiment",
        help="accuracy and cost: DEQ vs designed ENN vs naive ENN random features (needs [validate])",
    )
    p.add_argument("--deq", default="tanh", metavar="ACT")
    p.add_argument("--family", default="hard_tanh")
    p.add_argument("--layers", type=int, default=None)
    p.add_argument(
        "--dataset", default="gmm,digits", help="comma list of gmm, digits, mnist:DIR, fashion:DIR"
    )
    p.add_argument("--sigma-a2", default="0.2")
    p.add_argument("--m", type=int, default=1024, help="width (default 1024)")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--n-train", type=int, default=1000)
    p.add_argument("--n-test", type=int, default=500)
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    p.add_argument("--json", action="store_true")
    p.add_argument("--plot", default=None, metavar="DIR", help="write experiment.png there")

    p = sub.add_parser("activations", help="list the activation library")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser(
        "validate",
        help="Monte Carlo / exact-kernel check of the coefficients (needs the [validate] extra)",
    )
    configure: Any = None
    if with_validate:
        try:
            from .validate import _cli as validate_cli
        except ImportError:  # the [validate] extra is missing: the rest of the CLI still works
            pass
        else:
            configure = getattr(validate_cli, "configure_parser", None)
    if configure is None:
        p.add_argument("rest", nargs=argparse.REMAINDER)
    else:
        configure(p)
    return parser


_DEQ_SYMBOLS = {
    "tau_star": "τ*", "gamma_star": "γ*", "alpha_1": "α*₁", "alpha_2": "α*₂", "alpha_3": "α*₃",
    "alpha_4": "α*₄", "beta_1": "β*₁", "beta_2": "β*₂", "beta_3": "β*₃", "kappa_star": "κ*",
    "center": "c (φ − c centered)",
}  # fmt: skip
_MOMENT_SYMBOLS = {
    "E_phi_prime": "E[φ'(τ*ξ)]", "E_phi_second": "E[φ''(τ*ξ)]",
    "E_phi_prime_sq": "E[φ'(τ*ξ)²]", "E_phi_sq_second": "E[(φ²)''(τ*ξ)]",
}  # fmt: skip


def _coefficients(args: argparse.Namespace) -> int:
    from .numeric import DEQ_KEYS, deq_coefficients

    res = deq_coefficients(
        args.activation,
        args.sigma_a2,
        args.sigma_b2,
        args.tau0,
        args.dps,
        center=not args.no_center,
        trainable=_trainable(args.trainable),
    )
    if args.json:
        print(res.to_json())
        return 0
    title = (
        f"DEQ {res.activation.name}: φ(x) = {res.activation.expr}, σ_a² = {res.sigma_a2}, "
        f"σ_b² = {res.sigma_b2}, τ0 = {res.tau0} ({res.dps} digits requested)"
    )
    rows = [(k, _DEQ_SYMBOLS[k], res.values[k].text) for k in DEQ_KEYS]
    rows += [(k, _MOMENT_SYMBOLS[k], v.text) for k, v in res.moments.items()]
    print(table(rows, title))
    short = [k for k in DEQ_KEYS if res.values[k].digits < res.dps]
    if short:
        print(f"note: only the digits both evaluations agree on are shown for {', '.join(short)}")
    for note in res.notes:
        print(f"note: {note}")
    return 0


def _explicit(args: argparse.Namespace) -> int:
    from .numeric import LAYER_KEYS, explicit_coefficients

    res = explicit_coefficients(args.activations, args.tau0, args.dps, center=not args.no_center)
    if args.json:
        print(res.to_json())
        return 0
    for l, (act, layer) in enumerate(zip(res.activations, res.layers, strict=True), start=1):
        rows = [(k, "", layer[k].text) for k in LAYER_KEYS]
        print(table(rows, f"layer {l}: σ_{l}(x) = {act.expr}"))
        print()
    return 0


def _trainable(text: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in text.split(",") if v.strip())


def _derive(args: argparse.Namespace) -> int:
    from .symbolic._latex import equations, latex_block, text_block

    eqs = equations(
        args.target, trainable=_trainable(args.trainable), input_injection=not args.no_injection
    )
    print(latex_block(eqs) if args.latex else text_block(eqs), end="")
    return 0


def _write(path: str, text: str) -> None:
    """Write via a temporary file and rename, so a failed run never leaves half a file."""
    from ._errors import InvalidArgument

    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except OSError as e:
        raise InvalidArgument(f"cannot write {path!r}: {e.strerror}.") from None


def _latex(args: argparse.Namespace) -> int:
    from . import __version__
    from .numeric import deq_coefficients
    from .symbolic._latex import derivation_document

    res = deq_coefficients(args.activation, args.sigma_a2, args.sigma_b2, args.tau0, args.dps)
    d = res.to_dict()
    params = {k: str(d[k]) for k in ("sigma_a2", "sigma_b2", "tau0", "dps")}
    _write(args.output, derivation_document(res.activation, d, params, version=__version__))
    print(f"wrote {args.output}")
    return 0


def _codegen(args: argparse.Namespace) -> int:
    from .numeric._codegen import generate_module
    from .symbolic import get_activation

    src = generate_module(get_activation(args.activation), trainable=_trainable(args.trainable))
    _write(args.output, src)
    print(f"wrote {args.output}")
    return 0


def _design(args: argparse.Namespace) -> int:
    from .numeric._design import design_enn

    res = design_enn(
        args.deq,
        args.family,
        layers=args.layers,
        kernel=args.kernel,
        sigma_a2=args.sigma_a2,
        sigma_b2=args.sigma_b2,
        tau0=args.tau0,
        dps=args.dps,
        trainable=_trainable(args.trainable),
        starts=args.starts,
        seed=args.seed,
    )
    if args.json:
        print(res.to_json())
        return 0
    d = res.to_dict()
    print(
        f"{args.kernel.upper()} matching: {d['inputs']['deq']} DEQ ← {res.layers}-layer {res.family.name} ENN"
    )
    print(
        f"depth rule: α*₂ = {d['depth_rule']['alpha_2']}, α*₃/2 = {d['depth_rule']['alpha_3_over_2']}"
        f" → at least {d['depth_rule']['min_layers']} layer(s)"
    )
    for note in d["depth_rule"].get("normalization", []):
        print(f"normalised: {note} (scaling symmetry of the family)")
    print("equations: " + "; ".join(d["equations"]))
    for i, sol in enumerate(d["solutions"], start=1):
        layers = " | ".join(
            ", ".join(f"{k} = {v}" for k, v in layer.items()) for layer in sol["params"]
        )
        print(f"solution {i}: {layers}   (residual {sol['residual']})")
    return 0


def _needs_validate_extra(command: str, error: ImportError) -> DeqrmtError:
    """The error for a command whose optional [validate] dependencies are missing."""
    from ._errors import InvalidArgument

    return InvalidArgument(
        f"`deqrmt {command}` needs the validate extra: pip install 'deqrmt[validate]' ({error})."
    )


def _experiment(args: argparse.Namespace) -> int:
    try:
        import torch
        from tqdm import tqdm

        from .validate._experiment import plot_experiment, run_experiment
    except ImportError as e:
        raise _needs_validate_extra("experiment", e) from None
    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    datasets = [d.strip() for d in args.dataset.split(",") if d.strip()]
    bar = tqdm(total=len(datasets) * args.seeds, desc="experiment", file=sys.stderr, disable=None)
    res = run_experiment(
        args.deq, args.family, datasets=datasets, layers=args.layers, sigma_a2=args.sigma_a2, m=args.m,
        seeds=args.seeds, n_train=args.n_train, n_test=args.n_test, device=device,
        progress=lambda _msg: bar.update(1),
    )  # fmt: skip
    bar.close()
    summary = res.summary()
    if args.plot:
        os.makedirs(args.plot, exist_ok=True)
        summary["plot"] = str(plot_experiment(res, os.path.join(args.plot, "experiment.png")))
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    for ds, models in summary["datasets"].items():
        print(f"{ds}:")
        for model, v in models.items():
            if isinstance(v, dict):
                print(
                    f"  {model:<13} accuracy {v['accuracy_mean']:.4f} ± {v['accuracy_std']:.4f}   features {v['seconds_mean']:.3f} s"
                )
        print(f"  designed ENN / DEQ feature time: {models['enn_over_deq_time']:.3g}")
    return 0


def _certificate_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="deqrmt validate",
        description="Certify a designed ENN: DEQ kernel vs ENN kernel (exact and Monte Carlo) vs n.",
    )
    p.add_argument("--deq", required=True, metavar="ACT")
    p.add_argument(
        "--enn", required=True, metavar="DESIGN.json", help="output of `deqrmt design --json`"
    )
    p.add_argument("--n", default="256,512,1024")
    p.add_argument("--ratio", type=float, default=0.8, help="p/n (default 0.8, as on the slide)")
    p.add_argument("--m", type=int, default=1024)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true")
    return p


def _certify(args: argparse.Namespace) -> int:
    from ._errors import InvalidArgument

    try:
        with open(args.enn, encoding="utf-8") as fh:
            design = json.load(fh)
    except (OSError, json.JSONDecodeError) as e:
        raise InvalidArgument(f"cannot read the design {args.enn!r}: {e}.") from None
    if not isinstance(design, dict) or "solutions" not in design or not design["solutions"]:
        raise InvalidArgument(
            f"{args.enn!r} is not a `deqrmt design --json` output with a solution."
        )
    try:
        from tqdm import tqdm

        from .validate._certificate import certify_design
    except ImportError as e:
        raise _needs_validate_extra("validate --enn", e) from None
    ns = [int(v) for v in args.n.split(",") if v.strip()]
    bar = tqdm(total=len(ns), desc="certificate", file=sys.stderr, disable=None)
    res = certify_design(
        args.deq,
        design,
        ns=ns,
        ratio=args.ratio,
        m=args.m,
        seed=args.seed,
        progress=lambda _m: bar.update(1),
    )
    bar.close()
    if args.json:
        print(res.to_json())
    else:
        print(f"{'n':>6} {'designed (exact)':>18} {'naive (exact)':>15} {'designed (MC)':>15}")
        for r in res.runs:
            mc = f"{r['designed_mc']:15.4g}" if "designed_mc" in r else f"{'-':>15}"
            print(f"{r['n']:>6} {r['designed_exact']:18.4g} {r['naive_exact']:15.4g} {mc}")
        print(f"slopes: designed {res.slope['designed_exact']}, naive {res.slope['naive_exact']}")
        print("certificate: " + ("PASSED" if res.passed else "FAILED"))
    return 0 if res.passed else 1


def _sphere(args: argparse.Namespace) -> int:
    from .numeric._sphere_cli import run_sphere

    result: int = run_sphere(args)
    return result


def _activations(args: argparse.Namespace) -> int:
    from .symbolic import LIBRARY

    if args.json:
        print(
            json.dumps({k: v[1] for k, v in sorted(LIBRARY.items())}, indent=2, ensure_ascii=False)
        )
    else:
        for k, (_, doc) in sorted(LIBRARY.items()):
            print(f"{k:<12} {doc}")
    return 0


def _validate(args: argparse.Namespace) -> int:
    try:
        from .validate._cli import run
    except ImportError as e:
        raise _needs_validate_extra("validate", e) from None
    result: int = run(args)
    return result


_COMMANDS: dict[str, Any] = {
    "coefficients": _coefficients,
    "explicit": _explicit,
    "activations": _activations,
    "derive": _derive,
    "sphere": _sphere,
    "design": _design,
    "experiment": _experiment,
    "certify": _certify,
    "latex": _latex,
    "codegen": _codegen,
    "validate": _validate,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``deqrmt`` console script; returns the exit code."""
    from ._errors import DeqrmtError

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["validate"] and any(a == "--enn" or a.startswith("--enn=") for a in argv):
        # `deqrmt validate --deq ACT --enn DESIGN.json`: the certificate of a designed ENN
        parser = _certificate_parser()
        args = parser.parse_args(argv[1:])
        args.command = "certify"
    else:
        # Only `validate` needs its (torch-side) options; other commands start without it.
        parser = build_parser(with_validate=bool(argv) and argv[0] == "validate")
        args = parser.parse_args(argv)
    try:
        return int(_COMMANDS[args.command](args))
    except DeqrmtError as e:
        print(f"deqrmt: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `deqrmt … | head`: the reader left, nothing is lost
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the flush at exit
        return 0
    except (OverflowError, MemoryError, RecursionError, ArithmeticError) as e:
        if os.environ.get("DEQRMT_DEBUG"):
            raise
        print(
            f"deqrmt: error: the computation overflowed ({type(e).__name__}: {e}); the activation "
            "or the parameters are out of the supported range",
            file=sys.stderr,
        )
        return 2
    except Exception as e:  # a bug: still one line, the traceback on request
        if os.environ.get("DEQRMT_DEBUG"):
            raise
        print(
            f"deqrmt: error: unexpected {type(e).__name__}: {e} (a bug; rerun with DEQRMT_DEBUG=1 "
            "for the traceback and report it)",
            file=sys.stderr,
        )
        return 2
    except KeyboardInterrupt:
        print("deqrmt: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

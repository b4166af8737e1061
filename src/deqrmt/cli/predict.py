"""``deqrmt predict ACT --train X.npy --labels y.npy --test Xte.npy``: what the infinitely wide
DEQ trained on the data predicts at the test points (:func:`deqrmt.predict`).

The arrays are ``.npy`` files (read without pickles) or text files of numbers (``.csv``: comma
separated; any other name: whitespace separated), each read within :data:`MAX_INPUT_BYTES`.
``--out FILE.npy`` writes the mean predictions (the shape of :attr:`deqrmt.Prediction.mean`)
atomically; the table shows the first test points, ``--json`` all of them.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from .._errors import InvalidArgument
from ._common import (
    add_activation,
    add_command,
    add_device,
    add_force,
    add_json,
    add_problem,
    add_quiet,
    add_trainable,
    bar_enabled,
    names,
    number_list,
    print_json,
    print_stderr,
    validate_extra,
)

__all__ = ["EXAMPLES", "MAX_INPUT_BYTES", "NAME", "register", "run"]

NAME = "predict"
#: the largest input file read (bytes): 1 GiB, a 16384 × 8192 float64 matrix
MAX_INPUT_BYTES = 2**30
#: test points shown in the table (``--json`` and ``--out`` have them all)
SHOWN = 10


def register(subparsers: Any) -> argparse.ArgumentParser:
    p = add_command(
        subparsers,
        NAME,
        help="predictions of the infinitely wide DEQ trained on your data: gradient flow with "
        "the NTK at any time t, or the GP posterior with the CK (needs the [validate] extra)",
        description="The mean (and with --variance the variance) over initialisations of the "
        "predictions of the infinitely wide DEQ trained by gradient flow on ½‖f(X) − y‖² for "
        "time t, from its exact NTK K* and CK G* on the data (Lee et al. 2019, §2.3); "
        "t = inf is kernel regression with K*.  --kind nngp gives the Bayesian posterior with "
        "the CK G* as prior instead.  Arrays are .npy files (no pickles) or text files of "
        "numbers (.csv comma separated, else whitespace separated); rows are samples.",
        epilog="exit codes: 0 ok, 2 bad input (unreadable arrays, mismatched shapes, a "
        "singular training kernel at t = inf without --diag-reg).",
    )
    add_activation(p)
    p.add_argument(
        "--train", required=True, metavar="X.npy", help="the n × p training inputs (required)"
    )
    p.add_argument(
        "--labels",
        required=True,
        metavar="Y.npy",
        help="the n training labels, shape (n,) or (n, k) (required)",
    )
    p.add_argument(
        "--test", required=True, metavar="XTE.npy", help="the m × p test inputs (required)"
    )
    p.add_argument(
        "--t",
        default="inf",
        metavar="T[,T…]",
        help="training time(s), comma separated, ≥ 0 or inf (default: inf, kernel regression)",
    )
    p.add_argument(
        "--diag-reg",
        default="0",
        metavar="R",
        help="regularisation added to the training kernel's diagonal, relative to its mean "
        "diagonal (default: 0)",
    )
    p.add_argument(
        "--kind",
        choices=("ntk", "nngp"),
        default="ntk",
        help="ntk: gradient flow with the NTK K*; nngp: the GP posterior with the CK G* "
        "(t = inf only) (default: ntk)",
    )
    add_trainable(p)
    add_problem(p, tau0=False)
    p.add_argument(
        "--variance",
        action="store_true",
        help="also the variance of each test prediction (costs the m × m test kernels; "
        "default: off)",
    )
    add_device(p, "where the kernels run; auto uses CUDA when available")
    p.add_argument(
        "--out",
        default=None,
        metavar="PREDS.npy",
        help="write the mean predictions to this .npy file (default: none)",
    )
    add_force(p)
    add_json(p)
    add_quiet(p)
    return p


def _times(text: str) -> list[float] | float:
    """``--t``: one number or a comma-separated list (``inf`` allowed); the library checks each."""
    items = number_list(text, "--t", "1,10,inf")
    out: list[Any] = [math.inf if v.lower() in ("inf", "+inf") else v for v in items]
    return out[0] if len(out) == 1 else out


def read_array(path: str, flag: str) -> Any:
    """The numeric array in the file at ``path`` (for ``flag``), read as untrusted input.

    Raises:
      FileError: missing, unreadable, or not a regular file.
      BudgetExceeded: larger than :data:`MAX_INPUT_BYTES`.
      InvalidArgument: not an .npy file of numbers (a pickled or structured array) or not a
        text file of numbers.
    """
    import io

    import numpy as np

    from .._io import open_regular
    from .._untrusted import shown

    name = f"{flag} {shown(path, 80)}"
    with open_regular(path, name, MAX_INPUT_BYTES) as fh:
        head = fh.read(6)
        fh.seek(0)
        try:
            if head == b"\x93NUMPY":
                a = np.load(fh, allow_pickle=False)
            else:
                text = fh.read(MAX_INPUT_BYTES + 1).decode("utf-8")
                delimiter = "," if path.endswith(".csv") else None
                a = np.loadtxt(io.StringIO(text), delimiter=delimiter, ndmin=1)
        except (ValueError, OSError, EOFError, UnicodeDecodeError) as e:
            raise InvalidArgument(
                f"{name}: not an .npy file or a text file of numbers ({shown(str(e), 120)}); "
                "save it with numpy.save(path, array) (no object arrays)."
            ) from None
    if not isinstance(a, np.ndarray) or a.dtype.kind not in "fiu":
        raise InvalidArgument(f"{name}: holds {getattr(a, 'dtype', type(a))}, not real numbers.")
    return a


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from .._io import check_output

    if args.out is not None:
        check_output(args.out, force=args.force)
    from ..symbolic import get_activation

    get_activation(args.activation)  # bad text is refused before the files are read
    t = _times(args.t)
    X = read_array(args.train, "--train")
    y = read_array(args.labels, "--labels")
    Xte = read_array(args.test, "--test")
    with validate_extra(NAME):
        from .._progress import progress_bar
        from ..validate import predict

        # one bar over the tiles of each kernel in turn (the training kernel, the test rows, …)
        with progress_bar(
            1, f"predict {args.activation}", unit="tile", enabled=bar_enabled(args)
        ) as bar:
            result = predict(
                args.activation, X, y, Xte, t=t, kind=args.kind, diag_reg=args.diag_reg,
                covariance=args.variance, sigma_a2=args.sigma_a2, sigma_b2=args.sigma_b2,
                trainable=names(args.trainable), device=args.device, progress=bar,
            )  # fmt: skip
    mean = np.asarray(result.mean)
    times = [result.t] if isinstance(result.t, float) else list(result.t)
    var = None
    if result.covariance is not None:
        var = np.diagonal(np.asarray(result.covariance), axis1=-2, axis2=-1)
    if args.out is not None:
        import io

        from .._io import write_output

        buf = io.BytesIO()
        np.save(buf, mean, allow_pickle=False)
        write_output(args.out, buf.getvalue(), force=args.force)
        print_stderr(f"wrote {args.out}")
    if args.json:
        print_json(args, _document(result, mean, var, times))
    else:
        _print(args, result, mean, var, times)
    return 0


def _num(x: float) -> str:
    return "inf" if math.isinf(x) else repr(float(x))


def _nested(a: Any) -> Any:
    import numpy as np

    if np.ndim(a) == 0:
        return _num(float(a))
    return [_nested(v) for v in a]


def _document(result: Any, mean: Any, var: Any, times: list[float]) -> dict[str, Any]:
    import numpy as np

    means = mean if len(times) > 1 else mean[None]
    out: dict[str, Any] = {
        "kind": result.kind,
        "trainable": list(result.trainable),
        "diag_reg": _num(result.diag_reg),
        "regularizer": _num(result.regularizer),
        "predictions": [{"t": _num(s), "mean": _nested(means[i])} for i, s in enumerate(times)],
    }
    if var is not None:
        vs = var if len(times) > 1 else np.asarray(var)[None]
        for i, entry in enumerate(out["predictions"]):
            entry["variance"] = _nested(vs[i])
    return out


def _print(args: argparse.Namespace, result: Any, mean: Any, var: Any, times: list[float]) -> None:
    import numpy as np

    means = mean if len(times) > 1 else mean[None]
    vs = None if var is None else (var if len(times) > 1 else np.asarray(var)[None])
    what = (
        f"gradient flow with the NTK over {','.join(result.trainable)}"
        if result.kind == "ntk"
        else "GP posterior with the CK"
    )
    m = means.shape[1]
    print(
        f"predict {args.activation}: {what}, σ_a² = {args.sigma_a2}, diag_reg = "
        f"{result.diag_reg:g} (r = {result.regularizer:.6g}); {m} test points"
    )
    for i, s in enumerate(times):
        print(f"\nt = {_num(s)}")
        for j in range(min(m, SHOWN)):
            row = np.atleast_1d(means[i, j])
            text = "  ".join(f"{v: .6g}" for v in row)
            if vs is not None:
                text += f"   variance {vs[i, j]:.6g}"
            print(f"  x{j:<5} {text}")
        if m > SHOWN:
            print(f"  … {m - SHOWN} more (--json or --out for all)")


#: Real invocations shown on its page of the CLI reference (run when the docs build).
#: four training points and two test points in 3 dimensions, as text files of numbers
EXAMPLES: tuple[str, ...] = (
    "cat > X.csv <<EOF",
    "0.6,0.1,-0.3",
    "-0.2,0.5,0.4",
    "0.3,-0.6,0.2",
    "-0.5,-0.2,-0.4",
    "EOF",
    "cat > y.csv <<EOF",
    "1",
    "-1",
    "1",
    "-1",
    "EOF",
    "cat > Xte.csv <<EOF",
    "0.5,0.2,-0.1",
    "-0.4,0.3,0.5",
    "EOF",
    "predict tanh --train X.csv --labels y.csv --test Xte.csv --t 1,inf --variance",
)

"""The optional kernel item of ``deqrmt check`` (``mc=True``): exact infinite-width kernels
against the equivalents on the paper's Gaussian mixture (torch, through :mod:`deqrmt.validate`)."""

from __future__ import annotations

import importlib.util
from decimal import Decimal

import sympy as sp

from .._errors import MissingExtra
from ..numeric import DEQProblem
from ._engine import context
from ._report import FAIL, PASS, CheckItem

__all__ = ["MC_NS", "MC_SLOPE", "MC_TITLE", "monte_carlo_item"]

#: the sample sizes and the slope window of the optional kernel check
MC_NS = (256, 512)
MC_SLOPE = (-0.8, -0.3)
MC_TITLE = f"exact kernel vs equivalent, n = {', '.join(map(str, MC_NS))}"


def _decimal_text(r: sp.Rational) -> str:
    """A decimal string for the validation config: exact when r terminates (1/5 → 0.2)."""
    q = int(r.q)
    for f in (2, 5):
        while q % f == 0:
            q //= f
    if q == 1:
        return str(Decimal(int(r.p)) / Decimal(int(r.q)))
    ctx = context(40)
    return str(ctx.nstr(ctx.mpf(int(r.p)) / int(r.q), 30))  # float64 downstream anyway


def monte_carlo_item(problem: DEQProblem, *, device: str = "auto") -> CheckItem:
    """Exact infinite-width kernels vs the equivalents at n = 256, 512 on the paper's GMM:
    the relative spectral error must fall like n^−1/2 (slope within :data:`MC_SLOPE`).

    Runs :func:`deqrmt.validate.run_validation` (torch, imported only here).
    """
    title = MC_TITLE
    if importlib.util.find_spec("torch") is None:
        raise MissingExtra(
            "mc=True (--mc) needs torch: pip install 'deqrmt[validate]' (missing: torch)."
        )
    from ..validate import ValidationConfig, run_validation

    config = ValidationConfig(
        activation=problem.activation.name or str(problem.activation.expr),
        ns=MC_NS,
        sigma_a2=_decimal_text(problem.sigma_a2),
        sigma_b2=_decimal_text(problem.sigma_b2),
        monte_carlo=False,
        device=device,
        max_slope=MC_SLOPE[1],
        max_error=1.0,
    )
    result = run_validation(config)
    slopes = {"CK": result.slope_ck, "NTK": result.slope_ntk}
    errs = {f"{k} error n={r.n}": f"{e:.3g}" for r in result.runs
            for k, e in (("CK", r.ck.exact_vs_equiv), ("NTK", r.ntk.exact_vs_equiv))}  # fmt: skip
    nums = {**errs, **{f"{k} slope": f"{s:.3f}" for k, s in slopes.items() if s is not None}}
    ok = all(s is not None and MC_SLOPE[0] <= s <= MC_SLOPE[1] for s in slopes.values())
    how = (
        f"relative spectral error ‖G* − Ḡ‖/‖G*‖ on the paper's GMM (τ0 from the data), "
        f"log-log slope expected −1/2 (accepted {MC_SLOPE[0]}..{MC_SLOPE[1]}), {result.device}"
    )
    return CheckItem("monte_carlo", title, PASS if ok else FAIL, nums, how)

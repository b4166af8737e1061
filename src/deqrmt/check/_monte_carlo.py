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

__all__ = ["MC_NS", "MC_TITLE", "monte_carlo_item"]

#: the sample sizes of the optional kernel check (its verdict is validate's: deqrmt.validate.judge)
MC_NS = (256, 512)
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
    """Exact infinite-width kernels vs the equivalents at n = 256, 512 on the paper's GMM,
    judged by the one verdict rule of ``deqrmt validate`` (:func:`deqrmt.validate.judge`, its
    default thresholds): the same errors give the same verdict in both commands.

    Runs :func:`deqrmt.validate.run_validation` (torch, imported only here).
    """
    title = MC_TITLE
    if importlib.util.find_spec("torch") is None:
        raise MissingExtra("mc=True needs torch: pip install 'deqrmt[validate]' (missing: torch).")
    from ..validate import ValidationConfig, run_validation

    config = ValidationConfig(
        activation=problem.activation.name or str(problem.activation.expr),
        ns=MC_NS,
        sigma_a2=_decimal_text(problem.sigma_a2),
        sigma_b2=_decimal_text(problem.sigma_b2),
        monte_carlo=False,
        device=device,
    )
    result = run_validation(config)
    v = result.verdict
    nums = {f"{k} error n={r.n}": f"{e:.3g}" for r in result.runs
            for k, e in (("CK", r.ck.exact_vs_equiv), ("NTK", r.ntk.exact_vs_equiv))}  # fmt: skip
    for k in v.kernels:
        if k.rate.slope is not None:
            nums[f"{k.name} slope"] = f"{k.rate.slope:.3f}"
            nums[f"{k.name} slope s.e."] = f"{k.rate.stderr:.3f}"
        if k.level is not None:
            nums[f"{k.name} level n={k.level.reference_n}"] = f"{k.level.value:.3g}"
    how = (
        f"relative spectral error ‖G* − Ḡ‖/‖G*‖ on the paper's GMM (τ0 from the data), "
        f"{result.device}; validate's verdict: rate (log-log slope consistent with ≤ "
        f"{v.max_slope:g}, theory −1/2) and level (n^-1/2 law at n = {v.reference_n} ≤ "
        f"{v.max_error:g})"
    )
    if v.passed:
        return CheckItem("monte_carlo", title, PASS, nums, how)
    return CheckItem("monte_carlo", title, FAIL, nums, f"{v.summary()} — {how}")

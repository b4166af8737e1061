"""The engine's consistency for one φ and setting: each item takes what it compares, so a test
can feed it a wrong value (a negative control) and see it FAIL.

* digits stable from dps 30 to 60, and τ*² = σ_a²γ*² + σ_b²τ0² (Theorem 1's fixed point);
* Stein weak derivatives against finite differences (:mod:`._stein`);
* the module ``deqrmt codegen`` writes, run on its own, against the engine;
* the σ_a² → 0 limit against the one-layer explicit network (Theorem 3).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import tempfile
from collections.abc import Callable, Sequence
from typing import Any

import mpmath
import sympy as sp

from .._errors import InvalidArgument
from ..numeric import (
    DEQCoefficients,
    DEQProblem,
    deq_coefficients,
    exact_number,
    explicit_coefficients,
    generate_module,
)
from ..symbolic import Activation
from ._engine import FINDINGS, context, exact_mpf
from ._monte_carlo import MC_TITLE
from ._report import FAIL, PASS, CheckItem, number_text
from ._stein import stein_item

__all__ = [
    "CONSISTENCY_CHECKS",
    "DPS_PAIR",
    "TITLES",
    "consistency_items",
    "guard",
    "digits_item",
    "fixed_point_item",
    "codegen_item",
    "explicit_limit_item",
    "CODEGEN_DPS",
]


def _values(c: DEQCoefficients) -> dict[str, Any]:
    return {k: v.value for k, v in c.values.items()}


def digits_item(coarse: DEQCoefficients, fine: DEQCoefficients) -> CheckItem:
    """Every verified digit at the lower precision survives at the higher one."""
    title = f"digits stable, dps {coarse.dps} → {fine.dps}"
    ctx = context(fine.dps + 10)
    worst, worst_key, bad = None, "", []
    for k, v in coarse.values.items():
        if k not in fine.values:
            bad.append(f"{k} missing at dps {fine.dps}")
            continue
        a, b = ctx.mpf(v.value), ctx.mpf(fine.values[k].value)
        if a == b:
            continue
        rel = abs(a - b) / max(abs(a), abs(b))
        agreed = int(ctx.floor(-ctx.log10(rel))) if rel > 0 else fine.dps
        if agreed < v.digits - 1:
            bad.append(f"{k}: {v.text} vs {number_text(b, v.digits + 3)} ({agreed} digits)")
        if worst is None or agreed < worst:
            worst, worst_key = agreed, k
    nums = {"least agreement": f"{worst} digits ({worst_key})" if worst is not None else "exact"}
    return CheckItem.verdict(
        "digits", title, nums, "; ".join(bad),
        f"each of the {len(coarse.values)} values keeps its verified digits at dps {fine.dps}",
    )  # fmt: skip


def fixed_point_item(c: DEQCoefficients) -> CheckItem:
    """Theorem 1's fixed point: τ*² = σ_a² γ*² + σ_b² τ0², from the reported values."""
    title = "τ*² = σ_a²γ*² + σ_b²τ0²"
    ctx = context(c.dps + 10)
    v = _values(c)
    tau, gamma = ctx.mpf(v["tau_star"]), ctx.mpf(v["gamma_star"])
    rhs = (
        exact_mpf(ctx, c.sigma_a2) * gamma**2
        + exact_mpf(ctx, c.sigma_b2) * exact_mpf(ctx, c.tau0) ** 2
    )
    rel = abs(tau**2 - rhs) / tau**2
    tol = ctx.mpf(10) ** (-(min(d.digits for d in c.values.values()) - 2))
    nums = {"relative residual": number_text(rel, 3), "tolerance": number_text(tol, 2)}
    return CheckItem(
        "fixed_point", title, PASS if rel <= tol else FAIL, nums,
        f"τ* = {c.values['tau_star'].text}, γ* = {c.values['gamma_star'].text} at dps {c.dps}",
    )  # fmt: skip


def _load_module(source: str) -> Any:
    """Import generated source from a temporary file into a fresh module (not in sys.modules)."""
    with tempfile.TemporaryDirectory(prefix="deqrmt-check-") as d:
        path = os.path.join(d, "deqrmt_check_generated.py")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(source)
        spec = importlib.util.spec_from_file_location("deqrmt_check_generated", path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import the generated module from {path}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return module


@functools.lru_cache(maxsize=64)
def _generated_source(act: Activation, trainable: tuple[str, ...]) -> str:
    return generate_module(act, trainable=trainable)


#: digits at which the generated module is compared (it integrates by mpmath.quad: slow)
CODEGEN_DPS = 15


def codegen_item(c: DEQCoefficients, *, source: str | None = None) -> CheckItem:
    """The module ``deqrmt codegen`` writes, run on its own, reproduces the engine's values.

    ``source`` replaces the generated source (for negative controls).
    """
    title = "generated module vs engine"
    if source is None:
        source = _generated_source(c.activation, c.trainable)
    module = _load_module(source)
    try:
        got = module.coefficients(str(c.sigma_a2), str(c.sigma_b2), str(c.tau0), CODEGEN_DPS)
    except ArithmeticError as e:
        return CheckItem("codegen", title, FAIL, {}, f"the generated module failed: {e}")
    v = _values(c)
    common = [k for k in v if k in got]
    tol = mpmath.mpf(10) ** -(CODEGEN_DPS - 5)
    errs = {
        k: abs(mpmath.mpf(got[k]) - v[k]) / max(abs(v[k]), mpmath.mpf(10) ** -CODEGEN_DPS)
        for k in common
    }
    worst = max(common, key=lambda k: errs[k])
    nums = {
        "max relative difference": f"{number_text(errs[worst], 2)} ({worst})",
        "dps": str(CODEGEN_DPS),
    }
    bad = [k for k in common if errs[k] > tol] + [k for k in ("tau_star",) if k not in got]
    return CheckItem.verdict(
        "codegen", title, nums,
        "; ".join(f"{k}: module {number_text(got.get(k, mpmath.nan), 12)} vs engine {number_text(v[k], 12)}" for k in bad),
        f"the standalone mpmath module (imported from a temporary file) matches all "
        f"{len(common)} values to {number_text(tol, 1)}",
    )  # fmt: skip


#: DEQ (σ_a² → 0, σ_b² = 1) → explicit one-layer network at the same τ0: CK against the
#: explicit CK, NTK (over a, A) against the explicit NTK with the input layer fixed
_LIMIT_CK = {"gamma_star": "tau", "alpha_1": "alpha_1", "alpha_2": "alpha_2",
             "alpha_3": "alpha_3", "center": "center"}  # fmt: skip
_LIMIT_NTK = {"beta_1": "beta_1", "beta_2": "beta_2", "beta_3": "beta_3", "kappa_star": "kappa"}
_LIMIT_EPS = (sp.Rational(2, 10**6), sp.Rational(1, 10**6))
_LIMIT_TOL = 1e-8


def explicit_limit_item(
    act: Activation, tau0: Any, *, dps: int = 15, explicit: Any = None
) -> CheckItem:
    """σ_a² → 0 (σ_b² = 1): the DEQ becomes the one-layer network x ↦ φ(Bx)/√m (Theorem 3).

    The DEQ is solved at σ_a² = 2·10⁻⁶ and 10⁻⁶ and extrapolated linearly (Richardson, error
    O(σ_a⁴)).  ``explicit`` replaces the explicit records ``(ck, ntk)`` (negative controls).
    """
    title = "σ_a² → 0 limit vs one-layer explicit network"
    tau0 = exact_number(tau0, "tau0")
    deqs = [deq_coefficients(act, eps, 1, tau0, dps) for eps in _LIMIT_EPS]
    if explicit is None:
        explicit = (
            explicit_coefficients([act], tau0, dps).layers[0],
            explicit_coefficients([act], tau0, dps, input_layer_trainable=False).layers[0],
        )
    ck, ntk = explicit
    pairs = [(k, ck[e]) for k, e in _LIMIT_CK.items()]
    pairs += [(k, ntk[e]) for k, e in _LIMIT_NTK.items() if k in deqs[0].values]
    errs = {}
    for k, ref in pairs:
        v0 = 2 * deqs[1].values[k].value - deqs[0].values[k].value
        r = mpmath.mpf(ref.value)
        errs[k] = abs(v0 - r) / (abs(r) + mpmath.mpf(10) ** -12)
    t0 = 2 * deqs[1].values["tau_star"].value - deqs[0].values["tau_star"].value
    errs["tau_star"] = abs(t0 - exact_mpf(mpmath.mp, tau0)) / exact_mpf(mpmath.mp, tau0)
    worst = max(errs, key=lambda k: errs[k])
    nums = {"max relative difference": f"{number_text(errs[worst], 2)} ({worst})", "τ0": str(tau0)}
    bad = [k for k in errs if errs[k] > _LIMIT_TOL]
    how = (
        "DEQ at σ_a² = 2e-6, 1e-6 (σ_b² = 1) extrapolated to 0: τ* → τ0, γ* → τ̃₁, α*₁..₃ → α̃₁..₃, "
        "β*, κ* → the explicit NTK with the input layer fixed"
    )
    failure = f"{how}; differ: {', '.join(bad)}" if bad else ""
    return CheckItem.verdict("explicit_limit", title, nums, failure, how)


#: the two precisions of the digit-stability check
DPS_PAIR = (30, 60)
#: the consistency items, in report order (``monte_carlo`` is separate: it needs torch)
CONSISTENCY_CHECKS = ("digits", "fixed_point", "stein", "codegen", "explicit_limit")
TITLES = {
    "digits": f"digits stable, dps {DPS_PAIR[0]} → {DPS_PAIR[1]}",
    "fixed_point": "τ*² = σ_a²γ*² + σ_b²τ0²",
    "stein": "Stein weak derivatives vs finite differences",
    "codegen": "generated module vs engine",
    "explicit_limit": "σ_a² → 0 limit vs one-layer explicit network",
    "monte_carlo": MC_TITLE,
}


def guard(key: str, fn: Callable[[], CheckItem]) -> CheckItem:
    """Run one consistency item; an engine refusal is a FAIL of that item, with its message."""
    try:
        return fn()
    except FINDINGS as e:
        return CheckItem(key, TITLES[key], FAIL, {}, f"the engine refused: {e}")


def consistency_items(
    problem: DEQProblem,
    checks: Sequence[str] = CONSISTENCY_CHECKS,
    *,
    coefficients: DEQCoefficients | None = None,
) -> list[CheckItem]:
    """The consistency items ``checks`` for one problem (its dps is the lower of the pair).

    Args:
      problem: the activation and setting.
      checks: a subset of :data:`CONSISTENCY_CHECKS`, reported in that order.
      coefficients: the engine's result for ``problem`` if already computed.

    Raises:
      InvalidArgument: an unknown name in ``checks``.
    """
    unknown = sorted(set(checks) - set(CONSISTENCY_CHECKS))
    if unknown:
        raise InvalidArgument(
            f"checks={list(checks)!r}: unknown {', '.join(unknown)}; choose from "
            f"{', '.join(CONSISTENCY_CHECKS)}."
        )
    act = problem.activation
    try:
        c = coefficients if coefficients is not None else deq_coefficients(problem)
    except FINDINGS as e:
        return [CheckItem(k, TITLES[k], FAIL, {}, f"the engine refused: {e}")
                for k in CONSISTENCY_CHECKS if k in checks]  # fmt: skip
    fine = problem.replace(dps=DPS_PAIR[1])
    runs: dict[str, Callable[[], CheckItem]] = {
        "digits": lambda: digits_item(c, deq_coefficients(fine)),
        "fixed_point": lambda: fixed_point_item(deq_coefficients(fine)),
        "stein": lambda: stein_item(act, c.values["tau_star"].value),
        "codegen": lambda: codegen_item(c),
        "explicit_limit": lambda: explicit_limit_item(act, problem.tau0),
    }
    return [guard(k, runs[k]) for k in CONSISTENCY_CHECKS if k in checks]

"""Reports of a :class:`ValidationResult`: the JSON object of ``deqrmt validate --json`` and a table."""

from __future__ import annotations

import json
import math
from typing import Any

from ._sweep import ValidationResult
from ._verdict import Verdict, Z

__all__ = ["report_dict", "report_json", "report_text", "verdict_lines"]


def _num(v: float | None) -> float | None:
    return None if v is None or not math.isfinite(v) else float(v)


def report_dict(result: ValidationResult) -> dict[str, Any]:
    """``{setting, device, runs: [{n, p, m, ck, ntk, seconds, …}], slope: {ck, ntk}, passed,
    reasons, verdict}``: ``verdict`` is :meth:`Verdict.as_dict` (rate and level, docs/json.md)."""
    runs = []
    for r in result.runs:
        runs.append(
            {
                "n": r.n,
                "p": r.p,
                "m": r.m,
                "ck": {k: _num(v) for k, v in r.ck.as_dict().items()},
                "ntk": {k: _num(v) for k, v in r.ntk.as_dict().items()},
                "seconds": round(r.seconds, 3),
                "timings": {k: round(v, 3) for k, v in r.timings.items()},
                "tau0": r.coefficients.tau0,
                "coefficients": r.coefficients.as_floats(),
                "coefficient_label": r.coefficients.label,
                "exact_method": r.exact_method,
                "deq_iterations": list(r.deq_iterations),
            }
        )
    return {
        "setting": result.config.as_dict(),
        "device": result.device,
        "runs": runs,
        "slope": {"ck": _num(result.slope_ck), "ntk": _num(result.slope_ntk)},
        "passed": result.verdict.passed,
        "reasons": list(result.verdict.reasons),
        "verdict": result.verdict.as_dict(),
    }


def report_json(result: ValidationResult) -> str:
    """:func:`report_dict` as indented JSON text (the CLI wraps the same dict in docs/json.md's convention)."""
    return json.dumps(report_dict(result), indent=2, ensure_ascii=False)


def _f(v: float | None, fmt: str = ".4f") -> str:
    return "—" if v is None else format(v, fmt)


def report_text(result: ValidationResult) -> str:
    """A fixed-width table, one row per n, then the slopes and the verdict."""
    c = result.config
    lines = [
        f"validate {c.activation}: preset {c.preset}, σ_a² = {c.sigma_a2}, p/n = {c.ratio:g}, "
        + (
            f"m = {c.m}, draws = {c.draws}, device {result.device}"
            if c.monte_carlo
            else "Monte Carlo off (--no-mc): exact kernels vs equivalents only"
        )
        + (f", variant {c.variant}" if c.variant else ""),
        "relative spectral-norm errors ‖A − B‖/‖A‖",
        f"{'n':>6} {'p':>6} | {'CK ex↔eq':>9} {'mc↔ex':>8} {'mc↔eq':>8} | "
        f"{'NTK ex↔eq':>9} {'mc↔ex':>8} {'mc↔eq':>8} | {'s':>6}",
    ]
    for r in result.runs:
        lines.append(
            f"{r.n:>6} {r.p:>6} | {_f(r.ck.exact_vs_equiv):>9} {_f(r.ck.mc_vs_exact):>8} "
            f"{_f(r.ck.mc_vs_equiv):>8} | {_f(r.ntk.exact_vs_equiv):>9} {_f(r.ntk.mc_vs_exact):>8} "
            f"{_f(r.ntk.mc_vs_equiv):>8} | {r.seconds:>6.1f}"
        )
    v = result.verdict
    lines += verdict_lines(v)
    lines.append(v.summary())
    return "\n".join(lines)


def _interval(iv: tuple[float, float] | None, fmt: str) -> str:
    return "" if iv is None else f" [{iv[0]:{fmt}}, {iv[1]:{fmt}}]"


def _mark(passed: bool | None) -> str:
    return {True: "ok", False: "FAILED", None: "not measured (one n)"}[passed]


def verdict_lines(v: Verdict) -> list[str]:
    """Two lines: the rate (fitted log–log slope) and the level (error at the reference n)."""
    rate = []
    level = []
    for k in v.kernels:
        r = k.rate
        slope = "—" if r.slope is None else f"{r.slope:.3f} ± {r.stderr:.3f}"
        rate.append(f"{k.name} {slope}{_interval(r.interval, '.2f')} {_mark(r.passed)}")
        if k.level is None:
            level.append(f"{k.name} — FAILED (non-finite error)")
        else:
            lv = k.level
            level.append(
                f"{k.name} {lv.value:.4f}{_interval(lv.interval, '.4f')} {_mark(lv.passed)}"
            )
    return [
        f"rate: log–log slope of ex↔eq vs n (theory −0.5; fails when flatter than "
        f"{v.max_slope:g} by > {Z:g} s.e.): " + ", ".join(rate),
        f"level: the n^(−½) law's ex↔eq error at n = {v.reference_n} (bound {v.max_error:g}, "
        f"fails when above it by > {Z:g} s.e.): " + ", ".join(level),
    ]

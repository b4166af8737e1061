r"""The one verdict rule of ``validate``, ``check --mc`` and ``enn-check``: a fit of the n^(−½) law.

The theorems (ICML 2024, Theorems 1–2) say the relative spectral-norm error
e(n) = ‖exact − equivalent‖/‖exact‖ falls like n^(−½).  Errors e_i measured at n_i are fitted
in log–log space, x_i = ln n_i, y_i = ln e_i, by weighted least squares, each point with the
standard deviation of ln e over data draws,

    σ_i = SCATTER · (REFERENCE_N / n_i)^½        (measured: 0.069, 0.06, 0.03, 0.024 at
                                                  n = 128, 256, 512, 1024, tanh and sin(x)+x/2)

(plus, where a point is itself a Monte Carlo estimate, that estimate's own known variance:
``extra_scatter``).  Two things are judged separately:

* **rate**: the fitted slope b (standard error s_b = φ/√Σw_i(x_i − x̄)²) must be consistent with
  b ≤ ``max_slope`` (default −0.3 = −½ + 0.2): it fails when b − Z·s_b > ``max_slope``, i.e. when
  the error decays significantly slower than the law allows (a wrong formula leaves an error
  floor, b ≈ 0).  With one n the rate is *not measured* (``passed = None``), not failed.
* **level**: the n^(−½) law fitted with its slope fixed at −½ gives the error at
  ``REFERENCE_N``, L = exp(Σw_i(y_i + ½ ln(n_i/REFERENCE_N))/Σw_i), with standard error
  s_L = φ/√Σw_i of ln L; it fails when L·e^(−Z·s_L) > ``max_error`` (default 0.15).  Fixing
  the slope keeps a narrow n-range from amplifying its slope error into the extrapolation; the
  rate item is what tests the slope.

φ = max(1, χ²/(k − 2))^½ inflates both standard errors when k ≥ 3 points scatter more about the
fitted line than σ_i allows (never deflates them).  Z = 2: a verdict fails only when the data
show the violation at about two standard errors; scaling every error by c < 1 never turns a
pass into a fail.  Non-finite errors fail.  The rule is pure numpy: no torch.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .._errors import InvalidArgument

__all__ = [
    "DEFAULT_MAX_ERROR",
    "DEFAULT_MAX_SLOPE",
    "REFERENCE_N",
    "SCATTER",
    "THEORY_SLOPE",
    "Z",
    "KernelVerdict",
    "Level",
    "Rate",
    "Verdict",
    "judge",
    "judge_errors",
]

#: the n at which ``max_error`` applies (and the level is reported)
REFERENCE_N = 1024
#: the theorems' rate: e(n) = O(n^(−½))
THEORY_SLOPE = -0.5
#: standard deviation of ln(error) over data draws at n = REFERENCE_N; σ(n) scales by (REFERENCE_N/n)^½
SCATTER = 0.025
#: standard errors a violation must exceed to fail (≈ 97.7 % one-sided)
Z = 2.0
DEFAULT_MAX_SLOPE = -0.3
DEFAULT_MAX_ERROR = 0.15


def _num(v: float | None) -> float | None:
    return None if v is None or not math.isfinite(v) else float(v)


@dataclasses.dataclass(frozen=True)
class Rate:
    """The fitted log–log slope and its verdict (``passed`` None: not measured, one n)."""

    slope: float | None
    stderr: float | None
    max_slope: float
    passed: bool | None

    @property
    def interval(self) -> tuple[float, float] | None:
        """slope ± Z·stderr."""
        if self.slope is None or self.stderr is None:
            return None
        return (self.slope - Z * self.stderr, self.slope + Z * self.stderr)

    def as_dict(self) -> dict[str, Any]:
        iv = self.interval
        return {
            "slope": _num(self.slope),
            "stderr": _num(self.stderr),
            "interval": None if iv is None else [_num(iv[0]), _num(iv[1])],
            "max_slope": self.max_slope,
            "passed": self.passed,
        }


@dataclasses.dataclass(frozen=True)
class Level:
    """The n^(−½) law's error at ``reference_n`` (``stderr`` of its logarithm) and its verdict."""

    value: float
    stderr: float
    bound: float
    reference_n: int
    passed: bool

    @property
    def interval(self) -> tuple[float, float]:
        """value·e^(∓Z·stderr)."""
        return (self.value * math.exp(-Z * self.stderr), self.value * math.exp(Z * self.stderr))

    def as_dict(self) -> dict[str, Any]:
        lo, hi = self.interval
        return {
            "value": _num(self.value),
            "stderr": _num(self.stderr),
            "interval": [_num(lo), _num(hi)],
            "bound": self.bound,
            "reference_n": self.reference_n,
            "passed": self.passed,
        }


@dataclasses.dataclass(frozen=True)
class KernelVerdict:
    """The rule applied to one error sequence (one kernel); ``level`` None when an error is not finite."""

    name: str
    ns: tuple[int, ...]
    errors: tuple[float, ...]
    rate: Rate
    level: Level | None
    reasons: tuple[str, ...]

    @property
    def passed(self) -> bool:
        return not self.reasons

    def as_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "rate": self.rate.as_dict(),
            "level": None if self.level is None else self.level.as_dict(),
            "reasons": list(self.reasons),
        }


@dataclasses.dataclass(frozen=True)
class Verdict:
    """Whether the equivalents pass, and which of rate or level failed (module docstring).

    ``passed``, ``reasons``, ``max_slope``, ``max_error`` summarise the whole check; ``kernels``
    holds the rate and level of each error sequence.
    """

    passed: bool
    reasons: tuple[str, ...]
    max_slope: float
    max_error: float
    kernels: tuple[KernelVerdict, ...] = ()
    reference_n: int = REFERENCE_N

    def bound(self, n: int) -> float:
        """The n^(−½) law through ``max_error`` at ``reference_n``, evaluated at n (for plots)."""
        return self.max_error * math.sqrt(self.reference_n / n)

    @property
    def rate_passed(self) -> bool | None:
        """False if any rate failed, None if no rate was measured (one n), else True."""
        rates = [k.rate.passed for k in self.kernels]
        if any(r is False for r in rates):
            return False
        return None if all(r is None for r in rates) else True

    @property
    def level_passed(self) -> bool:
        return all(k.level is not None and k.level.passed for k in self.kernels)

    @property
    def failed(self) -> tuple[str, ...]:
        """Which of ``rate``, ``level`` failed (``level`` also for a non-finite error)."""
        out = ("rate",) if self.rate_passed is False else ()
        return out + (("level",) if not self.level_passed else ())

    def summary(self) -> str:
        """``PASSED …`` or ``REJECTED (rate, level): reason; reason``."""
        if self.passed:
            note = "" if self.rate_passed is not None else " (level only: rate not measured, one n)"
            return "PASSED" + note
        return f"REJECTED ({', '.join(self.failed)}): " + "; ".join(self.reasons)

    def as_dict(self) -> dict[str, Any]:
        """The ``verdict`` object of the JSON reports (docs/json.md)."""
        return {
            "passed": self.passed,
            "failed": list(self.failed),
            "reasons": list(self.reasons),
            "max_slope": self.max_slope,
            "max_error": self.max_error,
            "reference_n": self.reference_n,
            "z": Z,
            "rate": {
                "passed": self.rate_passed,
                **{k.name.lower(): k.rate.as_dict() for k in self.kernels},
            },
            "level": {
                "passed": self.level_passed,
                **{
                    k.name.lower(): None if k.level is None else k.level.as_dict()
                    for k in self.kernels
                },
            },
        }


def _check_thresholds(max_slope: float, max_error: float) -> None:
    if not math.isfinite(max_slope):
        raise InvalidArgument(f"max_slope=… must be a finite number, got {max_slope!r}.")
    if not (max_error > 0 and math.isfinite(max_error)):
        raise InvalidArgument(f"max_error=… must be positive and finite, got {max_error!r}.")


def _judge_one(
    name: str,
    ns: Sequence[int],
    errors: Sequence[float],
    max_slope: float,
    max_error: float,
    extra_scatter: Sequence[float] | None,
) -> KernelVerdict:
    ns_t = tuple(int(n) for n in ns)
    errs = tuple(float(e) for e in errors)
    if not all(math.isfinite(e) for e in errs):
        rate = Rate(None, None, max_slope, None)
        return KernelVerdict(name, ns_t, errs, rate, None, (f"{name}: non-finite error",))
    if any(e < 0 for e in errs):
        raise InvalidArgument(f"{name}: relative errors must be ≥ 0, got {errs!r}.")
    x = np.log(np.asarray(ns_t, float))
    # an error of exactly 0 (an exact equivalent) is the smallest positive float: it passes
    y = np.log(np.maximum(np.asarray(errs), np.finfo(float).tiny))
    var = SCATTER**2 * (REFERENCE_N / np.exp(x))
    if extra_scatter is not None:
        var = var + np.asarray(extra_scatter, float) ** 2
    w = 1 / var
    k = len(ns_t)
    phi = 1.0
    reasons = []
    if k >= 2:
        xm = float(w @ x / w.sum())
        sxx = float(w @ (x - xm) ** 2)
        ym = float(w @ y / w.sum())
        slope = float(w @ ((x - xm) * (y - ym)) / sxx)
        if k >= 3:
            chi2 = float(w @ (y - ym - slope * (x - xm)) ** 2)
            phi = math.sqrt(max(1.0, chi2 / (k - 2)))
        se = phi / math.sqrt(sxx)
        ok = slope - Z * se <= max_slope
        rate = Rate(slope, se, max_slope, ok)
        if not ok:
            reasons.append(
                f"{name}: rate: log–log slope {slope:.2f} ± {se:.2f} is flatter than "
                f"{max_slope:g} by more than {Z:g} standard errors (theory −0.5; a wrong "
                "equivalent leaves an error floor, slope ≈ 0)"
            )
    else:
        rate = Rate(None, None, max_slope, None)
    u = y + (-THEORY_SLOPE) * (x - math.log(REFERENCE_N))
    log_level = float(w @ u / w.sum())
    se_level = phi / math.sqrt(float(w.sum()))
    value = math.exp(log_level)
    level_ok = value * math.exp(-Z * se_level) <= max_error
    level = Level(value, se_level, max_error, REFERENCE_N, level_ok)
    if not level_ok:
        lo, hi = level.interval
        converges = (
            " (the rate passed: the error falls with n, but with a larger constant than the "
            "bound allows)"
            if rate.passed
            else ""
        )
        reasons.append(
            f"{name}: level: the n^(−½) law through the errors gives {value:.3g} "
            f"[{lo:.3g}, {hi:.3g}] at n = {REFERENCE_N}, above the bound {max_error:g}" + converges
        )
    return KernelVerdict(name, ns_t, errs, rate, level, tuple(reasons))


def judge_errors(
    ns: Sequence[int],
    errors: Mapping[str, Sequence[float]],
    *,
    max_slope: float = DEFAULT_MAX_SLOPE,
    max_error: float = DEFAULT_MAX_ERROR,
    extra_scatter: Mapping[str, Sequence[float]] | None = None,
) -> Verdict:
    """The verdict for relative errors measured at ``ns``, one sequence per named kernel.

    Args:
      ns: sample sizes, one per error (positive, any order).
      errors: name (``"CK"``, ``"NTK"``, ``"designed"``) → errors at ``ns``.
      max_slope, max_error: the thresholds of the rate and of the level at :data:`REFERENCE_N`.
      extra_scatter: name → the standard deviation of ln(error) a Monte Carlo estimate adds at
        each n, where it is known (added in quadrature to the data-draw scatter).

    Raises:
      InvalidArgument: lengths differ, n < 1, a negative error, or thresholds out of range.

    Example:
      >>> v = judge_errors([128, 256], {"NTK": [0.4257, 0.2516]})
      >>> v.passed, round(v.kernels[0].level.value, 3)
      (True, 0.134)
    """
    _check_thresholds(max_slope, max_error)
    if not ns or any(int(n) < 1 for n in ns):
        raise InvalidArgument(f"sample sizes must be positive integers, got {list(ns)!r}.")
    kernels = []
    for name, errs in errors.items():
        extra = None if extra_scatter is None else extra_scatter.get(name)
        if len(errs) != len(ns) or (extra is not None and len(extra) != len(ns)):
            raise InvalidArgument(f"{name}: ns and errors differ in length.")
        kernels.append(_judge_one(name, ns, errs, max_slope, max_error, extra))
    reasons = tuple(r for k in kernels for r in k.reasons)
    return Verdict(not reasons, reasons, max_slope, max_error, tuple(kernels))


def judge(
    ns: Sequence[int],
    ck: Sequence[float],
    ntk: Sequence[float],
    *,
    max_slope: float = DEFAULT_MAX_SLOPE,
    max_error: float = DEFAULT_MAX_ERROR,
) -> Verdict:
    """The verdict for exact-vs-equivalent errors ``ck``, ``ntk`` measured at ``ns``
    (:func:`judge_errors` with the kernels ``CK`` and ``NTK``)."""
    return judge_errors(ns, {"CK": ck, "NTK": ntk}, max_slope=max_slope, max_error=max_error)

r"""``deqrmt check``: does φ satisfy the paper's assumptions, and are deqrmt's numbers for it consistent?

Assumption 1 of Ling, Liao, Qiu (ICML 2024): φ centred and L₁-Lipschitz,
max_{k ≤ 4} |E[φ^{(k)}(ξ)]| < ∞, σ_a² < 1/(4L₁²) and σ_a² < 2/E[(φ²)''(τξ)] for τ > 0.  What the
proofs use is weaker: the variance map F(q) = σ_a² Var[φ(√q ξ)] + σ_b² τ0² contracts at τ*²
(F'(τ*²) = σ_a² E[(φ_c²)''(τ*ξ)]/2 < 1) and the NTK series converges (σ_a² E[φ'(τ*ξ)²] < 1).
The report says which of the two holds, so a φ outside the assumption (x + x²/4, the reviews'
"tiny variances" complaint) is not silently refused.

Every number comes from the engine: the problem record (:class:`DEQProblem`), the one τ*
solver, the verified coefficients, the moment evaluator (Stein weak derivatives), the code
generator and the explicit-network recursion.  This module only compares them.

L₁ = sup |φ'| is enclosed rigorously (:func:`lipschitz_bound`), with interval arithmetic
(:mod:`mpmath.iv`, outward rounding; erf and erfc end points by Arb balls), piece by piece
between the kinks (a jump is found exactly by SymPy: no L₁):

* on [−R, R] (R = 16, widened to contain every kink) by branch and bound over dyadic
  sub-intervals, each enclosed by the naive interval extension met with the mean value form;
* on |x| ≥ R by interval evaluation on [R, ∞], or, where that loses the decay (x·e^{−x} is
  0·∞ for intervals), by a growth envelope |φ'(x)| ≤ c (1 + x)^p e^{a x} derived from the
  expression tree (sums, products, powers, exp of a polynomial of degree ≤ 2, bounded
  functions, and lower envelopes for denominators), whose supremum over [R, ∞) is explicit;
* L₁ = ∞ is proved when φ'' has one sign on a tail (interval evaluation) and SymPy's limit of
  φ' there is infinite.  Anything else is "undecided", never a bound.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import heapq
import importlib.util
import itertools
import json
import math
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from fractions import Fraction
from typing import Any

import mpmath
import sympy as sp
from mpmath.ctx_iv import MPIntervalContext
from mpmath.libmp import from_man_exp

from .. import _arguments
from .._errors import (
    ActivationError,
    CenteringError,
    ContractionError,
    DeqrmtError,
    InvalidArgument,
    MissingExtra,
    NoConvergence,
    PrecisionLoss,
)
from .._text import escape_controls
from ..symbolic import Activation, X, get_activation
from ..symbolic._effort import bounded
from ._coefficients import DEQCoefficients, deq_coefficients, explicit_coefficients
from ._moments import evaluator_for
from ._printer import compile_function
from ._problem import DEQProblem, ProblemFields, exact_number
from ._quadrature import panels

__all__ = [
    "PASS",
    "FAIL",
    "NA",
    "CheckItem",
    "CheckReport",
    "LipschitzBound",
    "check_activation",
    "lipschitz_bound",
    "curvature_sup",
    "assumption_items",
    "consistency_items",
    "CONSISTENCY_CHECKS",
    "lipschitz_item",
    "variance_lipschitz_item",
    "digits_item",
    "fixed_point_item",
    "stein_item",
    "codegen_item",
    "explicit_limit_item",
    "monte_carlo_item",
]

PASS, FAIL, NA = "PASS", "FAIL", "N/A"
#: the engine's refusals that are findings about φ or the setting (reported as FAIL), as
#: opposed to malformed input (raised: exit status 2)
_FINDINGS = (ActivationError, ContractionError, CenteringError, PrecisionLoss, NoConvergence)


# ---------------------------------------------------------------------------
# Report records
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class CheckItem:
    """One line of the report.

    Attributes:
      key: stable machine name (``"lipschitz"``, ``"digits"``, …).
      title: what is checked, as printed.
      status: ``PASS``, ``FAIL`` or ``N/A`` (not applicable, with the reason).
      numbers: the numbers behind the verdict, as text (JSON-ready).
      explanation: how it was decided, or why it fails / does not apply.
      group: ``"assumption"`` (Assumption 1 and the contraction) or ``"consistency"``.
    """

    key: str
    title: str
    status: str
    numbers: Mapping[str, str]
    explanation: str
    group: str = "consistency"

    def __post_init__(self) -> None:
        if self.status not in (PASS, FAIL, NA):
            raise InvalidArgument(f"status={self.status!r}: expected PASS, FAIL or N/A.")

    @classmethod
    def verdict(
        cls, key: str, title: str, numbers: Mapping[str, str], failure: str, passed: str
    ) -> CheckItem:
        """FAIL explained by ``failure`` when it is not empty, else PASS explained by ``passed``."""
        if failure:
            return cls(key, title, FAIL, numbers, failure)
        return cls(key, title, PASS, numbers, passed)

    @property
    def passed(self) -> bool:
        """True unless FAIL (N/A does not fail)."""
        return self.status != FAIL

    def line(self) -> str:
        nums = ", ".join(f"{k} = {v}" for k, v in self.numbers.items())
        head = f"{self.status:<4}  {self.title}"
        line = f"{head}: {nums} — {self.explanation}" if nums else f"{head} — {self.explanation}"
        return escape_controls(line, keep="")

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "title": self.title,
            "status": self.status,
            "group": self.group,
            "numbers": dict(self.numbers),
            "explanation": self.explanation,
        }


@dataclasses.dataclass(frozen=True)
class CheckReport(ProblemFields):
    """Every item :func:`check_activation` checked, for one activation and one setting.

    A mapping from item key (``"lipschitz"``, ``"contraction_ck"``, ``"stein"``, …) to its
    ``CheckItem`` (``status`` PASS, FAIL or N/A, ``numbers``, ``explanation``); ``passed`` is the
    CLI's exit status 0, ``assumption_holds`` the paper's Assumption 1.

    Attributes:
      problem: the activation and setting checked (at the lower precision of the digit pair).
      items: the report's lines, in order.

    Example:
      >>> report = check_activation("tanh", sigma_a2="0.2")
      >>> report.assumption_holds, report["contraction_ck"].status
      (True, 'PASS')
    """

    problem: DEQProblem
    items: tuple[CheckItem, ...]

    @property
    def passed(self) -> bool:
        """Everything applicable passed (the CLI's exit status 0)."""
        return all(item.passed for item in self.items)

    @property
    def assumption_holds(self) -> bool:
        """Assumption 1 of the paper holds (its items all PASS)."""
        return all(self[k].status == PASS for k in _ASSUMPTION_KEYS if k in self.keys())

    def keys(self) -> list[str]:
        return [item.key for item in self.items]

    def __getitem__(self, key: str) -> CheckItem:
        for item in self.items:
            if item.key == key:
                return item
        raise KeyError(f"{key!r}: no such item; items are {', '.join(self.keys())}")

    def failures(self) -> tuple[CheckItem, ...]:
        return tuple(item for item in self.items if item.status == FAIL)

    def lines(self) -> list[str]:
        """The report as text, one line per item, headed by the activation and setting."""
        head = (
            f"deqrmt check {self.activation.name}: φ(x) = {self.activation.expr}, "
            f"σ_a² = {self.sigma_a2}, σ_b² = {self.sigma_b2}, τ0 = {self.tau0}"
        )
        out = [head]
        for group, label in (("assumption", "Assumption 1 (ICML 2024) and the contraction used"),
                             ("consistency", "Consistency of the engine")):  # fmt: skip
            out.append(f"{label}:")
            out += ["  " + item.line() for item in self.items if item.group == group]
        n_fail = len(self.failures())
        out.append("all applicable checks pass" if not n_fail else f"{n_fail} check(s) FAIL")
        # user text (the activation's name, an engine message quoting it) as repr(str) shows
        # control and bidi characters: printing a report cannot drive the terminal
        return [escape_controls(line, keep="") for line in out]

    def to_dict(self) -> dict[str, Any]:
        # The inputs as the problem record writes them; the report has always carried only
        # the activation and the setting (not dps, centring, trainable parameters).
        inputs = self.problem.to_dict()
        return {
            **{k: inputs[k] for k in _REPORT_INPUTS},
            "passed": self.passed,
            "assumption_holds": self.assumption_holds,
            "items": [item.to_dict() for item in self.items],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)


#: the problem's fields a report's JSON carries, in this order
_REPORT_INPUTS = ("activation", "expression", "sigma_a2", "sigma_b2", "tau0")
_ASSUMPTION_KEYS = ("lipschitz", "moments", "centred", "variance_lipschitz", "variance_curvature")


def _n(v: Any, digits: int = 6) -> str:
    return str(mpmath.nstr(v, digits))


def _ctx(dps: int) -> Any:
    ctx = mpmath.MPContext()
    ctx.dps = dps
    return ctx


def _mpf(ctx: Any, r: sp.Rational) -> Any:
    return ctx.mpf(int(r.p)) / int(r.q)


# ---------------------------------------------------------------------------
# Interval enclosures of expressions in x (for L₁)
# ---------------------------------------------------------------------------


class _Undecided(Exception):
    """An enclosure rule does not apply (unsupported function, domain, infinite range)."""


_IV = MPIntervalContext()
_IV.prec = 64
_INF = mpmath.inf
#: Python calls one SymPy factor/limit may make inside the tail rules before the rule declines
#: (counted, not timed: the report must not depend on the machine's load)
_SYMPY_CALLS = 400_000


def _ends(v: Any) -> tuple[Any, Any]:
    a, b = v._mpi_
    return mpmath.mp.make_mpf(a), mpmath.mp.make_mpf(b)


def _hull(lo: Any, hi: Any) -> Any:
    return _IV.mpf([lo, hi])


def _arb_point(fn: str, v: Any) -> tuple[Any, Any]:
    """Rigorous bounds of erf/erfc at the exact binary number ``v`` (an Arb ball)."""
    from flint import arb

    sign, man, exp, _ = v._mpf_
    ball = getattr(arb(-int(man) if sign else int(man)) * arb(2) ** int(exp), fn)()
    if not ball.is_finite():
        raise _Undecided(f"{fn}({v}) did not evaluate")
    out = []
    for end in (ball.lower(), ball.upper()):
        m, e = end.man_exp()  # exact end points: no rounding on the way to mpmath
        out.append(mpmath.mp.make_mpf(from_man_exp(int(m), int(e))))
    return out[0], out[1]


def _monotone_ends(v: Any, f: Callable[[Any], tuple[Any, Any]], increasing: bool) -> Any:
    lo, hi = _ends(v)
    if increasing:
        return _hull(f(lo)[0], f(hi)[1])
    return _hull(f(hi)[0], f(lo)[1])


def _tanh_point(v: Any) -> tuple[Any, Any]:
    if mpmath.isinf(v):
        return (mpmath.mpf(1), mpmath.mpf(1)) if v > 0 else (mpmath.mpf(-1), mpmath.mpf(-1))
    p = _IV.mpf([v, v])
    return _ends(1 - 2 / (_IV.exp(2 * p) + 1))


def _erf_point(v: Any) -> tuple[Any, Any]:
    if mpmath.isinf(v):
        s = mpmath.mpf(1 if v > 0 else -1)
        return s, s
    return _arb_point("erf", v)


def _erfc_point(v: Any) -> tuple[Any, Any]:
    if mpmath.isinf(v):
        s = mpmath.mpf(0 if v > 0 else 2)
        return s, s
    return _arb_point("erfc", v)


def _enclose(e: sp.Expr, x: Any) -> Any:
    """An interval containing e(t) for every t in the interval ``x`` (end points may be ±∞)."""
    iv = _IV
    if e == X:
        return x
    if e.is_Integer:
        return iv.mpf(int(e))
    if e.is_Rational:
        return iv.mpf(int(e.p)) / int(e.q)
    if e is sp.pi:
        return iv.pi
    if e is sp.E:
        return iv.e
    if isinstance(e, sp.Add):
        total = iv.mpf(0)
        for a in e.args:
            total = total + _enclose(a, x)
        return total
    if isinstance(e, sp.Mul):
        parts = [_enclose(a, x) for a in e.args]
        if any(_ends(p) == (0, 0) for p in parts):
            return iv.mpf(0)  # 0·∞ = 0 for an exact zero factor
        prod = iv.mpf(1)
        for p in parts:
            prod = prod * p
        return prod
    if isinstance(e, sp.Pow):
        base, n = e.base, e.exp
        if n.is_Integer:
            return _enclose(base, x) ** int(n)
        if n.has(X):
            if base.has(X) or not base.is_positive:
                raise _Undecided(f"power {e}")
            return iv.exp(_enclose(n, x) * iv.log(_enclose(base, x)))
        b = _enclose(base, x)
        lo, hi = _ends(b)
        if lo < 0 or not n.is_Rational:
            raise _Undecided(f"{e} on a base that may be negative")
        if n == sp.S.Half:
            return iv.sqrt(b)
        r = iv.mpf(int(n.p)) / int(n.q)
        if lo > 0:
            return iv.exp(r * iv.log(b))
        # t**r on [0, hi] is monotone: 0 (r > 0) or +∞ (r < 0) at 0
        top = _ends(iv.exp(r * iv.log(_hull(hi, hi))))[1 if n > 0 else 0] if hi > 0 else None
        if n > 0:
            return _hull(mpmath.mpf(0), top) if top is not None else iv.mpf(0)
        if top is None:
            raise _Undecided(f"{e} at 0")
        return _hull(top, _INF)
    if isinstance(e, sp.Heaviside):
        lo, hi = _ends(_enclose(e.args[0], x))
        at0 = e.args[1] if len(e.args) > 1 else sp.S.Half
        vals = ([mpmath.mpf(0)] if lo < 0 else []) + ([mpmath.mpf(1)] if hi > 0 else [])
        if lo <= 0 <= hi:
            vals.append(mpmath.mpf(int(at0.p)) / int(at0.q))
        return _hull(min(vals), max(vals))
    if isinstance(e, (sp.Max, sp.Min)):
        parts = [_ends(_enclose(a, x)) for a in e.args]
        pick = max if isinstance(e, sp.Max) else min
        return _hull(pick(p[0] for p in parts), pick(p[1] for p in parts))
    if isinstance(e, sp.Function) and len(e.args) == 1:
        a = _enclose(e.args[0], x)
        f = type(e)
        if f is sp.exp:
            return iv.exp(a)
        if f is sp.log:
            if _ends(a)[0] < 0:
                raise _Undecided(f"log of a range that may be negative in {e}")
            return iv.log(a)
        if f is sp.sin:
            return iv.sin(a)
        if f is sp.cos:
            return iv.cos(a)
        if f is sp.tanh:
            return _monotone_ends(a, _tanh_point, True)
        if f is sp.erf:
            return _monotone_ends(a, _erf_point, True)
        if f is sp.erfc:
            return _monotone_ends(a, _erfc_point, False)
        if f is sp.sinh:
            return (iv.exp(a) - iv.exp(-a)) / 2
        if f is sp.cosh:
            return (iv.exp(abs(a)) + iv.exp(-abs(a))) / 2
        if f is sp.Abs:
            return abs(a)
        if f is sp.sign:
            lo, hi = _ends(a)
            return _hull(mpmath.sign(lo), mpmath.sign(hi))
    raise _Undecided(f"{type(e).__name__} in {e}")


def _finite(v: Any) -> bool:
    lo, hi = _ends(v)
    return bool(mpmath.isfinite(lo) and mpmath.isfinite(hi))


def _meet(a: Any, b: Any) -> Any:
    (a0, a1), (b0, b1) = _ends(a), _ends(b)
    return _hull(max(a0, b0), min(a1, b1))


def _abs_upper(v: Any) -> Any:
    lo, hi = _ends(v)
    return max(abs(lo), abs(hi))


def _abs_lower(v: Any) -> Any:
    lo, hi = _ends(v)
    return max(lo, -hi, mpmath.mpf(0))


# ---------------------------------------------------------------------------
# Growth envelopes on a tail [T, ∞) (for L₁ beyond the bisected range)
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Growth:
    """c (1 + x)^p e^{a x} for x ≥ T ≥ 1: an upper bound of |g| (``_upper``) or a lower bound
    (``_lower``).  ``c`` is an interval (its upper or lower end is used), ``p`` and ``a`` are
    exact: ``a < 0`` is exponential decay, which is what beats x·e^{−x} (0·∞ for intervals)."""

    c: Any
    p: Fraction
    a: Fraction

    def __mul__(self, other: _Growth) -> _Growth:
        return _Growth(self.c * other.c, self.p + other.p, self.a + other.a)

    def power(self, n: Fraction) -> _Growth:
        c = self.c ** int(n) if n.denominator == 1 else _IV.exp(_frac_iv(n) * _IV.log(self.c))
        return _Growth(c, self.p * n, self.a * n)


def _frac_iv(f: Fraction) -> Any:
    return _IV.mpf(f.numerator) / f.denominator


def _sup_growth(g: _Growth, t: Fraction) -> Any:
    """sup over x ≥ t of c (1 + x)^p e^{a x} (upper end; +∞ when it grows)."""
    if g.a > 0 or (g.a == 0 and g.p > 0):
        return _INF
    x = t
    if g.a < 0 and g.p > 0:
        x = max(t, -g.p / g.a - 1)  # the maximum of (1 + x)^p e^{ax}
    xv = _frac_iv(x)
    val = g.c * _IV.exp(_frac_iv(g.p) * _IV.log(1 + xv) + _frac_iv(g.a) * xv)
    return _ends(val)[1]


def _scale_down(g: _Growth, p: Fraction, a: Fraction, t: Fraction) -> _Growth:
    """g ≤ c' (1 + x)^p e^{ax} on [t, ∞) for p ≥ g.p, a ≥ g.a (c' absorbs the difference)."""
    k = _sup_growth(_Growth(_IV.mpf(1), g.p - p, g.a - a), t)
    return _Growth(g.c * _IV.mpf([0, k]), p, a)


def _poly_coeffs(u: sp.Expr) -> list[Fraction] | None:
    """[c0, c1, c2] of a polynomial of degree ≤ 2 in x with rational coefficients, else None."""
    if not u.is_polynomial(X):
        return None
    poly = sp.Poly(u, X)
    cs = poly.all_coeffs()[::-1]
    if poly.degree() > 2 or not all(c.is_Rational for c in cs):
        return None
    return [Fraction(int(c.p), int(c.q)) for c in cs] + [Fraction(0)] * (3 - len(cs))


def _const(v: Any) -> _Growth:
    return _Growth(v, Fraction(0), Fraction(0))


def _upper(e: sp.Expr, t: Fraction) -> _Growth:
    """An upper envelope of |e(x)| on [t, ∞), from the expression tree."""
    tail = _hull(_frac_iv(t), _INF)
    if not e.has(X):
        return _const(_IV.mpf([0, _abs_upper(_enclose(e, 0))]))
    if e == X:
        return _Growth(_IV.mpf(1), Fraction(1), Fraction(0))
    if isinstance(e, sp.Mul):
        out = _const(_IV.mpf(1))
        for arg in e.args:
            out = out * _upper(arg, t)
        return out
    if isinstance(e, sp.Add):
        terms = [_upper(arg, t) for arg in e.args]
        a = max(g.a for g in terms)
        p = max(g.p for g in terms if g.a == a)
        c = _IV.mpf(0)
        for g in terms:
            c = c + (g if (g.a == a and g.p == p) else _scale_down(g, p, a, t)).c
        return _Growth(c, p, a)
    if isinstance(e, sp.Pow) and e.exp.is_Rational:
        n = Fraction(int(e.exp.p), int(e.exp.q))
        if n > 0:
            return _upper(e.base, t).power(n)
        low = _lower(e.base, t)
        if low is None:
            raise _Undecided(f"no positive lower bound of {e.base} on the tail")
        inv = _Growth(1 / low.c, -low.p, -low.a)
        return inv.power(-n)
    if isinstance(e, sp.exp):
        cs = _poly_coeffs(e.args[0])
        if cs is not None:
            c0, c1, c2 = cs
            if c2 <= 0:  # c2 x² ≤ c2 t x on [t, ∞)
                return _Growth(_IV.exp(_frac_iv(c0)), Fraction(0), c2 * t + c1)
    if isinstance(e, (sp.tanh, sp.erf, sp.sin, sp.cos, sp.sign)):
        return _const(_IV.mpf([0, 1]))
    if isinstance(e, sp.Abs):
        return _upper(e.args[0], t)
    v = _enclose(e, tail)
    if not _finite(v):
        raise _Undecided(f"{e} is not bounded on the tail by interval evaluation")
    return _const(_IV.mpf([0, _abs_upper(v)]))


def _lower(e: sp.Expr, t: Fraction) -> _Growth | None:
    """A lower envelope of |e(x)| on [t, ∞) with c > 0 (e has no zero there), or None."""
    tail = _hull(_frac_iv(t), _INF)
    try:
        if e == X:
            return _Growth(_frac_iv(t) / (1 + _frac_iv(t)), Fraction(1), Fraction(0))
        if isinstance(e, sp.Mul):
            parts = [_lower(arg, t) for arg in e.args]
            if any(q is None for q in parts):
                return None
            out = _const(_IV.mpf(1))
            for q in parts:
                out = out * q  # type: ignore[operator]
            return out
        if isinstance(e, sp.Pow) and e.exp.is_Rational:
            n = Fraction(int(e.exp.p), int(e.exp.q))
            if n > 0:
                low = _lower(e.base, t)
                return None if low is None else low.power(n)
            up = _upper(e.base, t)
            return _Growth(1 / up.c, -up.p, -up.a).power(-n)
        if isinstance(e, sp.exp):
            cs = _poly_coeffs(e.args[0])
            if cs is not None and cs[2] >= 0:  # c2 x² ≥ c2 t x on [t, ∞)
                return _Growth(_IV.exp(_frac_iv(cs[0])), Fraction(0), cs[2] * t + cs[1])
        if isinstance(e, sp.Add):
            ends = [_ends(_enclose(arg, tail)) for arg in e.args]
            if all(lo >= 0 for lo, _ in ends) or all(hi <= 0 for _, hi in ends):
                # no cancellation: |Σ| ≥ each |term|; keep the fastest-growing one
                lows = [q for q in (_lower(arg, t) for arg in e.args) if q is not None]
                if lows:
                    return max(lows, key=lambda q: (q.a, q.p, _ends(q.c)[0]))
        v = _abs_lower(_enclose(e, tail))
    except (_Undecided, ZeroDivisionError, ValueError):
        return None
    return _const(_IV.mpf([v, v])) if v > 0 else None


def _tail_sup(g: sp.Expr, t: Fraction) -> Any:
    """An upper bound of |g| on [t, ∞): interval evaluation, or the growth envelope when the
    interval rules lose the decay (x·e^{−x} is 0·∞ for them), whichever is smaller."""
    best = _INF
    with contextlib.suppress(_Undecided, ZeroDivisionError, ValueError):
        best = _abs_upper(_enclose(g, _hull(_frac_iv(t), _INF)))
    for form in (lambda: g, lambda: _rewritten(g)):
        if mpmath.isfinite(best):
            break
        h = form()
        if h is None:
            continue
        try:
            best = min(best, _sup_growth(_upper(h, t), t))
        except (_Undecided, ZeroDivisionError, ValueError):
            continue
    return best


@functools.lru_cache(maxsize=512)
def _rewritten(g: sp.Expr) -> sp.Expr | None:
    """g with tanh/sinh/cosh in exponentials, over one denominator (1 − tanh² → 4/(e^x + e^−x)²)."""
    if not g.has(sp.tanh, sp.sinh, sp.cosh):
        return None
    return bounded(lambda: sp.cancel(g.rewrite(sp.exp)), _SYMPY_CALLS)


@functools.lru_cache(maxsize=512)
def _tends_to_infinity(g: sp.Expr, t: Fraction) -> sp.Expr | None:
    """±oo when g is proved monotone on [t, ∞) (interval sign of g') with an infinite limit."""
    d = sp.factor_terms(sp.diff(g, X))
    try:
        lo, hi = _ends(_enclose(d, _hull(_frac_iv(t), _INF)))
    except (_Undecided, ZeroDivisionError, ValueError):
        return None
    if not (lo >= 0 or hi <= 0):
        return None
    lim = bounded(lambda: sp.limit(g, X, sp.oo), _SYMPY_CALLS)
    return lim if lim in (sp.oo, -sp.oo) else None


# ---------------------------------------------------------------------------
# L₁
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class LipschitzBound:
    """L₁ = sup |φ'| enclosed: ``lower ≤ L₁ ≤ upper`` (exact binary numbers, mpmath mpf).

    Attributes:
      kind: ``"bounded"``, ``"unbounded"`` (proved: φ' is monotone on a tail with an infinite
        limit), ``"discontinuous"`` (φ jumps: no Lipschitz constant) or ``"undecided"``.
      lower, upper: the enclosure (``upper`` is +∞ unless bounded; ``lower`` is a value
        |φ'(x)| attained, so a proved lower bound).
      method: how it was bounded, for the report.
      reason: for the three other kinds, why.
    """

    kind: str
    lower: Any
    upper: Any
    method: str
    reason: str = ""

    @property
    def finite(self) -> bool:
        return self.kind == "bounded"

    def text(self) -> str:
        if self.kind == "bounded":
            lo, hi = _n(self.lower, 6), _n(self.upper, 6)
            return lo if lo == hi else f"[{lo}, {hi}]"
        return {"unbounded": "∞", "discontinuous": "none (φ jumps)"}.get(self.kind, "?")


def _to_fraction(v: Any) -> Fraction:
    sign, man, exp, _ = mpmath.mpf(v)._mpf_
    return (-1 if sign else 1) * Fraction(int(man)) * Fraction(2) ** int(exp)


def _mean_value_form(g: sp.Expr, dg: sp.Expr) -> Callable[[Any], Any]:
    """I ↦ g(I) ∩ (g(m) + g'(I)(I − m)): the mean value form is tight where g is flat,
    which the naive enclosure never is (a plateau would need ever finer pieces)."""

    def f(iv: Any) -> Any:
        naive = _enclose(g, iv)
        lo, hi = _ends(iv)
        if lo == hi:
            return naive
        m = (lo + hi) / 2
        try:
            mvf = _enclose(g, _hull(m, m)) + _enclose(dg, iv) * (iv - _hull(m, m))
        except (_Undecided, ZeroDivisionError, ValueError):
            return naive
        return _meet(naive, mvf)

    return f


def _sup_abs(
    f: Callable[[Any], Any], a: Any, b: Any, rtol: float, budget: int
) -> tuple[Any, Any, int]:
    """Branch and bound for sup |f| on [a, b]: (proved lower, proved upper, evaluations)."""

    def upper(lo: Any, hi: Any) -> Any:
        try:
            return _abs_upper(f(_hull(lo, hi)))
        except (_Undecided, ZeroDivisionError, ValueError):
            return _INF

    def at(point: Any) -> Any:
        try:
            return _abs_lower(f(_hull(point, point)))
        except (_Undecided, ZeroDivisionError, ValueError):
            return mpmath.mpf(0)

    best = at((a + b) / 2)
    counter = itertools.count()
    heap = [(-upper(a, b), next(counter), a, b)]
    evals = 2
    while evals < budget:
        neg_u, _, lo, hi = heap[0]
        if -neg_u <= best * (1 + rtol) + mpmath.mpf(10) ** -15:
            break
        heapq.heappop(heap)
        mid = (lo + hi) / 2
        for x0, x1 in ((lo, mid), (mid, hi)):
            heapq.heappush(heap, (-upper(x0, x1), next(counter), x0, x1))
            best = max(best, at((x0 + x1) / 2))
            evals += 2
    return best, -heap[0][0], evals


#: largest ``radius`` and ``budget`` :func:`lipschitz_bound` accepts (work grows with both)
MAX_LIPSCHITZ_RADIUS, MAX_LIPSCHITZ_BUDGET = 10**4, 10**6


def lipschitz_bound(
    activation: str | Activation, *, radius: int = 16, rtol: float = 1e-3, budget: int = 4000
) -> LipschitzBound:
    """L₁ = sup |φ'| enclosed rigorously by interval arithmetic (see the module docstring).

    Args:
      activation: library name, expression in x or :class:`Activation`.
      radius: R; [−R, R] (widened to contain every kink) is bisected, |x| ≥ R are tails.
      rtol: stop refining when the enclosure is this tight (relative).
      budget: interval evaluations per piece before settling for a looser bound.

    Example:
      >>> lipschitz_bound("tanh").text()
      '1.0'
      >>> lipschitz_bound("x**2/4 + x").kind
      'unbounded'
    """
    act = get_activation(activation)
    radius = _arguments.integer(radius, "radius", 1, MAX_LIPSCHITZ_RADIUS)
    tol = _arguments.number(rtol, "rtol")
    if not 0 < tol < 1:
        raise InvalidArgument(f"rtol={_arguments.show(rtol)}: choose a tolerance in (0, 1).")
    budget = _arguments.integer(budget, "budget", 1, MAX_LIPSCHITZ_BUDGET)
    return _lipschitz_bound(act, radius, float(tol), budget)


@functools.lru_cache(maxsize=256)
def _lipschitz_bound(act: Activation, radius: int, rtol: float, budget: int) -> LipschitzBound:
    if not act.is_continuous:
        jumps = []
        for left, right in zip(act.pieces[:-1], act.pieces[1:], strict=True):
            jump = sp.simplify(right.expr.subs(X, left.hi) - left.expr.subs(X, left.hi))
            if jump != 0:
                jumps.append(f"by {jump} at x = {left.hi}")
        return LipschitzBound(
            "discontinuous", mpmath.mpf(0), _INF, "exact (SymPy, at the kinks)",
            f"φ jumps {', '.join(jumps)}: not continuous, so no Lipschitz constant exists",
        )  # fmt: skip
    kinks = [abs(float(k)) for k in act.kinks]
    r = Fraction(max([radius, *(math.ceil(2 * k + 1) for k in kinks)]))
    lower, upper = mpmath.mpf(0), mpmath.mpf(0)
    n_evals = 0
    constant_pieces = 0
    for piece in act.derivative_pieces:
        g = piece.expr
        if not g.has(X):
            value = _enclose(g, _IV.mpf(0))
            lower, upper = max(lower, _abs_lower(value)), max(upper, _abs_upper(value))
            constant_pieces += 1
            continue
        rv = mpmath.mpf(r.numerator) / r.denominator
        lo = -rv if piece.lo is sp.S.NegativeInfinity else max(-rv, _ends(_enclose(piece.lo, 0))[0])
        hi = rv if piece.hi is sp.S.Infinity else min(rv, _ends(_enclose(piece.hi, 0))[1])
        if lo < hi:
            best, top, evals = _sup_abs(
                _mean_value_form(g, sp.diff(g, X)), mpmath.mpf(lo), mpmath.mpf(hi), rtol, budget
            )
            lower, upper = max(lower, best), max(upper, top)
            n_evals += evals
        for side in (1, -1):
            if (piece.hi if side == 1 else piece.lo) is not (sp.oo if side == 1 else -sp.oo):
                continue
            near = piece.lo if side == 1 else -piece.hi
            start = r if near.is_infinite else max(r, _to_fraction(_ends(_enclose(near, 0))[1]))
            h = g if side == 1 else g.subs(X, -X)
            where = "x → +∞" if side == 1 else "x → −∞"
            top = _tail_sup(h, start)
            if mpmath.isinf(top):
                lim = _tends_to_infinity(h, start)
                if lim is not None:
                    return LipschitzBound(
                        "unbounded", lower, _INF,
                        "interval arithmetic: φ'' has one sign on the tail, limit by SymPy",
                        f"φ'(x) = {g} is monotone for |x| ≥ {float(start):g} and tends "
                        f"to {'+' if lim is sp.oo else '−'}∞ as {where}: no "
                        "Lipschitz constant",
                    )  # fmt: skip
                return LipschitzBound(
                    "undecided", lower, _INF, "interval arithmetic",
                    f"could not bound φ'(x) = {g} for |x| ≥ {float(start):g} ({where})",
                )  # fmt: skip
            upper = max(upper, top)
            try:
                at = _enclose(h, _frac_iv(start))
                lower = max(lower, _abs_lower(at))
            except (_Undecided, ZeroDivisionError, ValueError):
                pass
    if n_evals == 0:
        method = f"exact: φ' is constant on each of the {constant_pieces} pieces"
    else:
        method = (
            f"interval arithmetic: φ' on dyadic pieces of [−{r}, {r}] ({n_evals} interval "
            f"evaluations, branch and bound, mean value form), and on |x| ≥ {r} by interval "
            "evaluation or a growth envelope c(1+|x|)^p e^(a|x|) from the expression tree"
        )
    return LipschitzBound("bounded", lower, upper, method)


# ---------------------------------------------------------------------------
# Engine access (one place, so that a change of the engine's records touches only this)
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Solved:
    """What the engine gave for one problem: coefficients, or at least τ* (CK only), or why not."""

    problem: DEQProblem
    coefficients: DEQCoefficients | None
    tau: Any  # mpf or None
    center: Any  # mpf or None
    slope: Any  # F'(τ*²) or None
    error: str = ""


def _solve(problem: DEQProblem) -> _Solved:
    try:
        c = deq_coefficients(problem)
    except _FINDINGS as e:
        if not isinstance(e, ActivationError):
            return _Solved(problem, None, None, None, None, str(e))
        # φ' has a Dirac mass (a jump): no NTK, but the CK's fixed point still exists
        from ._fixed_point import solve_tau

        try:
            fp = solve_tau(problem, _ctx(problem.dps + 5))
        except _FINDINGS as e2:
            return _Solved(problem, None, None, None, None, f"{e}; {e2}")
        return _Solved(problem, None, fp.tau, fp.center, fp.slope, str(e))
    sa2 = _mpf(mpmath.mp, problem.sigma_a2)
    slope = sa2 / 2 * c.moments["E_phi_sq_second"].value
    return _Solved(problem, c, c.values["tau_star"].value, c.values["center"].value, slope)


# ---------------------------------------------------------------------------
# Assumption items
# ---------------------------------------------------------------------------


def lipschitz_item(bound: LipschitzBound) -> CheckItem:
    """Assumption 1: φ is L₁-Lipschitz."""
    title = "L₁ (φ Lipschitz)"
    if bound.finite:
        return CheckItem("lipschitz", title, PASS, {"L₁": bound.text()}, bound.method, "assumption")
    nums = {"L₁": bound.text()}
    if bound.kind == "undecided":
        nums["L₁ ≥"] = _n(bound.lower)
    return CheckItem(
        "lipschitz", title, FAIL, nums, f"{bound.reason} ({bound.method})", "assumption"
    )


def _moments_item(act: Activation, solved: _Solved, bound: LipschitzBound) -> CheckItem:
    title = "E[φ^(k)(τξ)] finite, k ≤ 4"
    ctx = _ctx(20)
    taus = [("1", ctx.one)]
    if solved.tau is not None:
        taus.append(("τ*", ctx.mpf(solved.tau)))
    nums: dict[str, str] = {}
    try:
        for label, tau in taus:
            m = evaluator_for(act)(ctx, tau, ("phi", "d1", "d2", "d3", "d4", "sq"))
            big = max(abs(v.value) for k, v in m.items() if k != "sq")
            if not ctx.isfinite(big) or not ctx.isfinite(m["sq"].value):
                raise ActivationError(f"a moment at τ = {_n(tau)} is not finite")
            nums[f"max_k |E[φ^(k)]| at τ = {label}"] = _n(big)
    except (DeqrmtError, OverflowError, ZeroDivisionError) as e:
        return CheckItem("moments", title, FAIL, nums, str(e), "assumption")
    why = "weak derivatives by Stein's identity E[φ^(k)(τξ)] = τ^(−k) E[He_k(ξ) φ(τξ)]"
    if bound.finite:
        why += "; finite for every τ since |φ(x)| ≤ |φ(0)| + L₁|x|"
    return CheckItem("moments", title, PASS, nums, why, "assumption")


def _centred_item(solved: _Solved) -> CheckItem:
    title = "φ centred at τ*"
    if solved.center is None:
        return CheckItem(
            "centred", title, NA, {}, f"no fixed point τ*: {solved.error}", "assumption"
        )
    nums = {"τ*": _n(solved.tau, 10), "c = E[φ(τ*ξ)]": _n(solved.center, 10)}
    if solved.center == 0:
        why = "E[φ(τ*ξ)] = 0 already (exactly, by symmetry or by value)"
    else:
        why = (
            "the theorems use φ_c = φ − c, centred at its own fixed point (solved jointly with τ*)"
        )
    return CheckItem("centred", title, PASS, nums, why, "assumption")


def variance_lipschitz_item(sa2: sp.Rational, bound: LipschitzBound) -> CheckItem:
    """Assumption 1: σ_a² < 1/(4L₁²), decided exactly from the enclosure of L₁."""
    title = "σ_a² < 1/(4L₁²)"
    s = Fraction(int(sa2.p), int(sa2.q))
    if not bound.finite:
        return CheckItem(
            "variance_lipschitz", title, FAIL, {"σ_a²": str(sa2), "1/(4L₁²)": "0"},
            {"unbounded": "L₁ = ∞", "discontinuous": "φ is discontinuous (no L₁)"}.get(
                bound.kind, "L₁ could not be bounded"
            ) + ", so no σ_a² > 0 satisfies it", "assumption",
        )  # fmt: skip
    hi, lo = _to_fraction(bound.upper), _to_fraction(bound.lower)
    nums = {"σ_a²": str(sa2), "1/(4L₁²)": _n(1 / (4 * bound.upper**2))}
    if 4 * s * hi * hi < 1:
        return CheckItem(
            "variance_lipschitz",
            title,
            PASS,
            nums,
            "proved with the upper bound of L₁",
            "assumption",
        )
    if 4 * s * lo * lo >= 1:
        return CheckItem(
            "variance_lipschitz", title, FAIL, nums, "fails already for the lower bound of L₁",
            "assumption",
        )  # fmt: skip
    return CheckItem(
        "variance_lipschitz", title, FAIL, nums,
        "undecided: σ_a² lies inside the enclosure of 1/(4L₁²)", "assumption",
    )  # fmt: skip


def curvature_sup(
    act: Activation, center: Any, taus: Sequence[Any], dps: int = 15
) -> tuple[Any, Any]:
    """max over ``taus`` of E[(φ_c²)''(τξ)] = E[(φ²)''] − 2c E[φ''] (Stein), and its argmax.

    A sampled supremum (not a proof): the assumption asks for it at every τ > 0.
    """
    ctx = _ctx(dps)
    ev = evaluator_for(act)
    c = ctx.mpf(center)
    best, where = -ctx.inf, None
    for tau in taus:
        m = ev(ctx, ctx.mpf(tau), ("sq2", "d2"))
        v = m["sq2"].value - 2 * c * m["d2"].value
        if not ctx.isfinite(v):
            return ctx.inf, tau
        if v > best:
            best, where = v, tau
    return best, where


def _variance_curvature_item(act: Activation, sa2: sp.Rational, solved: _Solved) -> CheckItem:
    title = "σ_a² < 2/E[(φ²)''(τξ)] for τ > 0"
    ref = mpmath.mpf(solved.tau) if solved.tau is not None else mpmath.mpf(1)
    c = solved.center if solved.center is not None else 0
    taus = [ref * mpmath.mpf(2) ** (mpmath.mpf(k) / 2) for k in range(-8, 9)]
    try:
        top, where = curvature_sup(act, c, taus)
    except (DeqrmtError, OverflowError, ZeroDivisionError) as e:
        return CheckItem(
            "variance_curvature", title, FAIL, {"σ_a²": str(sa2)},
            f"E[(φ²)''(τξ)] is not finite on τ ∈ [τ*/16, 16τ*]: {e}", "assumption",
        )  # fmt: skip
    s = mpmath.mpf(int(sa2.p)) / int(sa2.q)
    bound = 2 / top if top > 0 else mpmath.inf
    nums = {
        "σ_a²": str(sa2),
        "max E[(φ_c²)'']": _n(top),
        "at τ": _n(where, 4),
        "2/max": _n(bound) if mpmath.isfinite(bound) else "∞",
    }
    how = (
        f"sampled on 17 scales τ ∈ [τ*/16, 16τ*] (τ* = {_n(ref, 6)}), φ_c = φ − c; weak (φ²)'' "
        "by Stein"
    )
    return CheckItem(
        "variance_curvature", title, PASS if s < bound else FAIL, nums, how, "assumption"
    )


def _contraction_items(problem: DEQProblem, solved: _Solved) -> list[CheckItem]:
    sa2 = problem.sigma_a2
    title_ck = "contraction used: σ_a² E[(φ_c²)''(τ*ξ)]/2 < 1"
    title_ntk = "NTK: σ_a² E[φ'(τ*ξ)²] < 1"
    items = []
    if solved.slope is None:
        items.append(CheckItem("contraction_ck", title_ck, FAIL, {}, solved.error, "assumption"))
    else:
        ok = abs(solved.slope) < 1
        items.append(
            CheckItem(
                "contraction_ck",
                title_ck,
                PASS if ok else FAIL,
                {"F'(τ*²)": _n(solved.slope, 8), "τ*": _n(solved.tau, 10)},
                "the DEQ's variance iteration from z = 0 converges to τ* and τ* attracts"
                if ok
                else "τ* does not attract the DEQ's iteration",
                "assumption",
            )  # fmt: skip
        )
    c = solved.coefficients
    if c is None:
        why = solved.error or "no fixed point"
        items.append(CheckItem("contraction_ntk", title_ntk, FAIL, {}, why, "assumption"))
    else:
        dsq = c.moments["E_phi_prime_sq"].value
        v = mpmath.mpf(int(sa2.p)) / int(sa2.q) * dsq
        ok = v < 1
        items.append(
            CheckItem(
                "contraction_ntk",
                title_ntk,
                PASS if ok else FAIL,
                {"σ_a² E[φ'²]": _n(v, 8)},
                "K* = G*/(1 − Ġ*) converges"
                if ok
                else "the NTK series diverges: K* does not exist (the CK stands)",
                "assumption",
            )  # fmt: skip
        )
    return items


def _beyond_item(items: Sequence[CheckItem]) -> CheckItem:
    title = "beyond Assumption 1"
    by_key = {i.key: i for i in items}
    failed = [by_key[k].title for k in _ASSUMPTION_KEYS if by_key[k].status == FAIL]
    ck, ntk = by_key["contraction_ck"].status, by_key["contraction_ntk"].status
    if not failed:
        return CheckItem(
            "beyond", title, NA, {}, "Assumption 1 holds: nothing beyond it is used", "assumption"
        )
    if ck == PASS:
        what = "the CK and NTK" if ntk == PASS else "the CK (not the NTK)"
        return CheckItem(
            "beyond", title, PASS, {"fails": "; ".join(failed)},
            f"Assumption 1 fails, but the contraction the proofs use holds at τ*: {what} "
            "fixed point exists and attracts, so the engine's numbers are well defined here; "
            "the theorems' O(n^−1/2) guarantee is not proved for this φ (check it with --mc)",
            "assumption",
        )  # fmt: skip
    return CheckItem(
        "beyond", title, NA, {"fails": "; ".join(failed)},
        "Assumption 1 fails and so does the contraction: nothing holds beyond it", "assumption",
    )  # fmt: skip


# ---------------------------------------------------------------------------
# Consistency items (each takes what it compares, so a test can feed it a wrong value)
# ---------------------------------------------------------------------------


def _values(c: DEQCoefficients) -> dict[str, Any]:
    return {k: v.value for k, v in c.values.items()}


def digits_item(coarse: DEQCoefficients, fine: DEQCoefficients) -> CheckItem:
    """Every verified digit at the lower precision survives at the higher one."""
    title = f"digits stable, dps {coarse.dps} → {fine.dps}"
    ctx = _ctx(fine.dps + 10)
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
            bad.append(f"{k}: {v.text} vs {_n(b, v.digits + 3)} ({agreed} digits)")
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
    ctx = _ctx(c.dps + 10)
    v = _values(c)
    tau, gamma = ctx.mpf(v["tau_star"]), ctx.mpf(v["gamma_star"])
    rhs = _mpf(ctx, c.sigma_a2) * gamma**2 + _mpf(ctx, c.sigma_b2) * _mpf(ctx, c.tau0) ** 2
    rel = abs(tau**2 - rhs) / tau**2
    tol = ctx.mpf(10) ** (-(min(d.digits for d in c.values.values()) - 2))
    nums = {"relative residual": _n(rel, 3), "tolerance": _n(tol, 2)}
    return CheckItem(
        "fixed_point", title, PASS if rel <= tol else FAIL, nums,
        f"τ* = {c.values['tau_star'].text}, γ* = {c.values['gamma_star'].text} at dps {c.dps}",
    )  # fmt: skip


#: finite-difference step in the shift h of E[φ(τξ + h)] and the accepted error
_FD_STEP = sp.Rational(1, 10**3)
_FD_TOL = 1e-5
_FD_DPS = 20
_STEIN = ("d1", "d2", "d3", "d4", "sq2")


_H = sp.Symbol("h", real=True)


@functools.lru_cache(maxsize=64)
def _shifted(act: Activation) -> Callable[..., tuple[Any, ...]]:
    """φ(x + h), compiled once for every shift (φ smooth: one piece)."""
    (piece,) = act.pieces
    return compile_function("phi_shifted", [X, _H], [piece.expr.subs(X, X + _H)])


def _shifted_expectations(act: Activation, ctx: Any, tau: Any, shift: Any) -> tuple[Any, Any]:
    """E[φ(τξ + h)] and E[φ(τξ + h)²] on the engine's quadrature panels (no Stein identity)."""
    f = _shifted(act)
    s1 = s2 = ctx.zero
    for panel in panels(ctx, tau, (), ctx.dps, 0, evaluator_for(act).entire):
        for xi, w in zip(panel.nodes, panel.weights, strict=True):
            v = f(ctx, tau * xi, shift)[0]
            s1 += w * v
            s2 += w * v * v
    return s1, s2


def stein_item(
    act: Activation, tau: Any, *, dps: int = _FD_DPS, stein: Mapping[str, Any] | None = None
) -> CheckItem:
    """E[φ^(k)(τξ)] by Stein (the engine's weak derivatives) vs finite differences in h of
    E[φ(τξ + h)] (and of E[φ²(τξ + h)] for (φ²)''), each a plain quadrature of the shifted φ
    on the engine's Gauss–Legendre panels.

    ``stein`` replaces the engine's Stein values (for negative controls).
    """
    title = "Stein weak derivatives vs finite differences"
    if act.kinks:
        where = ", ".join(str(k) for k in act.kinks)
        return CheckItem(
            "stein", title, NA, {},
            f"φ is not smooth (kinks at x = {where}): classical φ'' … φ'''' do not exist, only "
            "their weak (Stein) forms, which the other items use",
        )  # fmt: skip
    ctx = _ctx(dps)
    t = ctx.mpf(tau)
    h = _FD_STEP
    hv = _mpf(ctx, h)
    base = evaluator_for(act)(ctx, t, _STEIN)
    engine = {k: base[k].value for k in _STEIN} if stein is None else dict(stein)
    f, g = {}, {}
    for j in (-2, -1, 0, 1, 2):
        f[j], g[j] = _shifted_expectations(act, ctx, t, j * hv)
    fd = {
        "d1": (f[1] - f[-1]) / (2 * hv),
        "d2": (f[1] - 2 * f[0] + f[-1]) / hv**2,
        "d3": (f[2] - 2 * f[1] + 2 * f[-1] - f[-2]) / (2 * hv**3),
        "d4": (f[2] - 4 * f[1] + 6 * f[0] - 4 * f[-1] + f[-2]) / hv**4,
        "sq2": (g[1] - 2 * g[0] + g[-1]) / hv**2,
    }
    errs = {k: abs(fd[k] - engine[k]) / (1 + abs(engine[k])) for k in _STEIN}
    worst = max(errs, key=lambda k: errs[k])
    label = {"d1": "φ'", "d2": "φ''", "d3": "φ'''", "d4": "φ''''", "sq2": "(φ²)''"}
    nums = {"max error": f"{_n(errs[worst], 2)} ({label[worst]})", "h": str(h), "τ": _n(t, 8)}
    bad = [k for k in _STEIN if errs[k] > _FD_TOL]
    return CheckItem.verdict(
        "stein", title, nums,
        "; ".join(f"E[{label[k]}]: Stein {_n(engine[k], 10)} vs FD {_n(fd[k], 10)}" for k in bad),
        f"E[φ^(k)], k = 1..4, and E[(φ²)''] at τ agree with central differences (O(h²), "
        f"tolerance {_FD_TOL:g})",
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
    from ._codegen import generate_module

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
    nums = {"max relative difference": f"{_n(errs[worst], 2)} ({worst})", "dps": str(CODEGEN_DPS)}
    bad = [k for k in common if errs[k] > tol] + [k for k in ("tau_star",) if k not in got]
    return CheckItem.verdict(
        "codegen", title, nums,
        "; ".join(f"{k}: module {_n(got.get(k, mpmath.nan), 12)} vs engine {_n(v[k], 12)}" for k in bad),
        f"the standalone mpmath module (imported from a temporary file) matches all "
        f"{len(common)} values to {_n(tol, 1)}",
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
    errs["tau_star"] = abs(t0 - _mpf(mpmath.mp, tau0)) / _mpf(mpmath.mp, tau0)
    worst = max(errs, key=lambda k: errs[k])
    nums = {"max relative difference": f"{_n(errs[worst], 2)} ({worst})", "τ0": str(tau0)}
    bad = [k for k in errs if errs[k] > _LIMIT_TOL]
    how = (
        "DEQ at σ_a² = 2e-6, 1e-6 (σ_b² = 1) extrapolated to 0: τ* → τ0, γ* → τ̃₁, α*₁..₃ → α̃₁..₃, "
        "β*, κ* → the explicit NTK with the input layer fixed"
    )
    failure = f"{how}; differ: {', '.join(bad)}" if bad else ""
    return CheckItem.verdict("explicit_limit", title, nums, failure, how)


#: the sample sizes and the slope window of the optional kernel check
MC_NS = (256, 512)
MC_SLOPE = (-0.8, -0.3)


def _decimal_text(r: sp.Rational) -> str:
    """A decimal string for the validation config: exact when r terminates (1/5 → 0.2)."""
    q = int(r.q)
    for f in (2, 5):
        while q % f == 0:
            q //= f
    if q == 1:
        return str(Decimal(int(r.p)) / Decimal(int(r.q)))
    ctx = _ctx(40)
    return str(ctx.nstr(ctx.mpf(int(r.p)) / int(r.q), 30))  # float64 downstream anyway


def monte_carlo_item(problem: DEQProblem, *, device: str = "auto") -> CheckItem:
    """Exact infinite-width kernels vs the equivalents at n = 256, 512 on the paper's GMM:
    the relative spectral error must fall like n^−1/2 (slope within :data:`MC_SLOPE`).

    Runs :func:`deqrmt.validate.run_validation` (torch, imported only here).
    """
    title = f"exact kernel vs equivalent, n = {', '.join(map(str, MC_NS))}"
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


# ---------------------------------------------------------------------------
# The check
# ---------------------------------------------------------------------------


def _assumption_items(problem: DEQProblem, solved: _Solved) -> list[CheckItem]:
    act = problem.activation
    bound = lipschitz_bound(act)
    items = [
        lipschitz_item(bound),
        _moments_item(act, solved, bound),
        _centred_item(solved),
        variance_lipschitz_item(problem.sigma_a2, bound),
        _variance_curvature_item(act, problem.sigma_a2, solved),
        *_contraction_items(problem, solved),
    ]
    items.append(_beyond_item(items))
    return items


def assumption_items(problem: DEQProblem) -> list[CheckItem]:
    """The Assumption 1 items (and the contraction used, and the note beyond it) for one
    problem: the first part of :func:`check_activation`'s report."""
    return _assumption_items(problem, _solve(problem))


#: the two precisions of the digit-stability check
DPS_PAIR = (30, 60)
#: the consistency items, in report order (``monte_carlo`` is separate: it needs torch)
CONSISTENCY_CHECKS = ("digits", "fixed_point", "stein", "codegen", "explicit_limit")
_TITLES = {
    "digits": f"digits stable, dps {DPS_PAIR[0]} → {DPS_PAIR[1]}",
    "fixed_point": "τ*² = σ_a²γ*² + σ_b²τ0²",
    "stein": "Stein weak derivatives vs finite differences",
    "codegen": "generated module vs engine",
    "explicit_limit": "σ_a² → 0 limit vs one-layer explicit network",
    "monte_carlo": f"exact kernel vs equivalent, n = {', '.join(map(str, MC_NS))}",
}


def _guard(key: str, fn: Callable[[], CheckItem]) -> CheckItem:
    """Run one consistency item; an engine refusal is a FAIL of that item, with its message."""
    try:
        return fn()
    except _FINDINGS as e:
        return CheckItem(key, _TITLES[key], FAIL, {}, f"the engine refused: {e}")


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
    except _FINDINGS as e:
        return [CheckItem(k, _TITLES[k], FAIL, {}, f"the engine refused: {e}")
                for k in CONSISTENCY_CHECKS if k in checks]  # fmt: skip
    fine = problem.replace(dps=DPS_PAIR[1])
    runs: dict[str, Callable[[], CheckItem]] = {
        "digits": lambda: digits_item(c, deq_coefficients(fine)),
        "fixed_point": lambda: fixed_point_item(deq_coefficients(fine)),
        "stein": lambda: stein_item(act, c.values["tau_star"].value),
        "codegen": lambda: codegen_item(c),
        "explicit_limit": lambda: explicit_limit_item(act, problem.tau0),
    }
    return [_guard(k, runs[k]) for k in CONSISTENCY_CHECKS if k in checks]


def check_activation(
    activation: str | Activation,
    sigma_a2: Any = "0.2",
    sigma_b2: Any = None,
    tau0: Any = 1,
    *,
    mc: bool = False,
    device: str = "auto",
) -> CheckReport:
    """Check Assumption 1 (ICML 2024) for φ and the engine's self-consistency for one setting.

    Args:
      activation: library name, ``name(params)``, an expression in x, or an Activation.
      sigma_a2, sigma_b2, tau0: the setting, exact (σ_b² defaults to 1 − σ_a²).
      mc: also compare exact kernels with the equivalents at n = 256, 512 (needs torch).
      device: where the ``mc`` kernels run (``auto``, ``cpu``, ``cuda``).

    Returns:
      A :class:`CheckReport`; ``report.passed`` is True when every applicable item passes.

    Raises:
      InvalidArgument: malformed input (unknown activation, σ out of range, …).  Findings
        about φ (discontinuous, no contraction, …) are FAIL items, not exceptions.

    Example:
      >>> report = check_activation("relu")
      >>> report.passed, report["stein"].status          # Stein vs finite differences: φ not smooth
      (True, 'N/A')
      >>> report["lipschitz"].numbers
      {'L₁': '1.0'}
    """
    mc = _arguments.boolean(mc, "mc")
    _arguments.choice(device, "device", ("auto", "cpu", "cuda"))
    problem = DEQProblem.make(activation, sigma_a2, sigma_b2, tau0, DPS_PAIR[0])
    solved = _solve(problem)
    items = _assumption_items(problem, solved)
    c = solved.coefficients
    if c is None:
        why = f"no coefficients to check: {solved.error}"
        items += [CheckItem(k, _TITLES[k], NA, {}, why) for k in CONSISTENCY_CHECKS]
    else:
        items += consistency_items(problem, coefficients=c)
    if not mc:
        items.append(
            CheckItem("monte_carlo", _TITLES["monte_carlo"], NA, {}, "not requested (--mc)")
        )
    elif c is None:
        items.append(
            CheckItem(
                "monte_carlo", _TITLES["monte_carlo"], NA, {}, f"no coefficients: {solved.error}"
            )
        )
    else:
        items.append(_guard("monte_carlo", lambda: monte_carlo_item(problem, device=device)))
    return CheckReport(problem, tuple(items))

r"""The dual activation as a Mehler series, to verified digits (HLD 2023, eq. (3)).

The dual of φ at the variance s, f(r) = E[φ(u)φ(v)] (Var u = Var v = s, Cov = s r), from its
Taylor series at 0 (Mehler):

    f(r) = Σ_k c_k r^k,   c_k = f^{(k)}(0)/k! = s^k E[φ^{(k)}(√s ξ)]²/k! = b_k²,
    b_k = E[h_k(ξ) φ(√s ξ)],   h_k = He_k/√k!                                    (Stein)

The b_k come from one composite Gauss–Legendre pass over panels split at φ's kinks, with the
Hermite recursion run in fixed-point integers (Python ints, 2^P scaling): for a hundred terms
on a few thousand nodes that is ~10× faster than mpf arithmetic, and exact up to the 2^{-P}
truncation of each step.  Since c_k ≥ 0 and Σ_k c_k = f(1) = E[φ(√s ξ)²] (Parseval), the
tail after K terms obeys, for j ≤ J and K + 1 ≥ j/(1 − |r|),

    |Σ_{k>K} c_k (k)_j r^{k−j}| ≤ (f(1) − Σ_{k≤K} c_k)·(K+1)_j |r|^{K+1−j},

which fixes K; |r| near 1 therefore costs many terms (refused beyond :data:`MAX_TERMS`).

Exact zeros, decided from φ's form as the DEQ's moments are by parity: b_k = 0 for even k when
φ is odd, for odd k when φ is even, and for every k above the degree when φ is a polynomial
(Hermite polynomials are orthogonal to every polynomial of lower degree).  The certified
series (:mod:`._sphere_certified`) uses the same rules.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from typing import Any

import mpmath
import numpy as np
import sympy as sp

from .. import _arguments
from .._errors import BudgetExceeded, InvalidArgument, NoConvergence
from ..symbolic import Activation, X, get_activation
from ._context import EngineContext, Num
from ._numbers import exact_number
from ._printer import compile_function
from ._quadrature import gauss_legendre

__all__ = [
    "MAX_DERIVATIVE",
    "MAX_TERMS",
    "MAX_VARIANCE",
    "DualSeries",
    "HermiteProjection",
    "dual_series",
    "known_zero",
    "polynomial_degree",
    "series_derivative",
    "terms_needed",
    "too_close",
]

#: Most Mehler terms we sum; a correlation so close to 1 that more are needed is refused.
MAX_TERMS = 3000
_POLE_DISTANCE = math.pi / 2  # tanh's, as in ._quadrature: the nearest singularity we plan for
_LADDER = (8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)


@functools.lru_cache(maxsize=256)
def polynomial_degree(act: Activation) -> int | None:
    """φ's degree when φ is one polynomial on the whole line, else None."""
    if len(act.pieces) != 1 or not act.expr.is_polynomial(X):
        return None
    return int(sp.Poly(act.expr, X).degree())


def known_zero(act: Activation, k: int) -> bool:
    """b_k = E[h_k(ξ) φ(τξ)] = 0 exactly for every τ: by parity (φ odd: even k; φ even: odd k)
    or by degree (φ a polynomial of degree below k)."""
    parity = act.parity
    if (parity == -1 and k % 2 == 0) or (parity == 1 and k % 2 == 1):
        return True
    degree = polynomial_degree(act)
    return degree is not None and k > degree


# ---------------------------------------------------------------------------
# Hermite projections b_k = E[h_k(ξ) φ(τξ)]
# ---------------------------------------------------------------------------


def _ladder(n: int) -> int:
    for m in _LADDER:
        if m >= n:
            return m
    return _LADDER[-1]


@functools.lru_cache(maxsize=64)
def _piece_functions(act: Activation) -> tuple[Callable[..., tuple[Num, ...]], ...]:
    return tuple(
        compile_function("phi_piece", [X], [p.expr], doc=f"{act.name} on ({p.lo}, {p.hi})")
        for p in act.pieces
    )


def _to_fixed(ctx: EngineContext, v: Num, bits: int) -> int:
    """⌊v·2^bits⌉ as a Python int (mpf → int is exact: mantissa shifted)."""
    return int(ctx.nint(ctx.ldexp(v, bits)))


class HermiteProjection:
    """The normalized Hermite coefficients b_0, b_1, … of ξ ↦ φ(τξ), extended on demand.

    Panels: composite Gauss–Legendre, never across a kink of φ (at k/τ in ξ).  The integrand
    h_k(ξ)·pdf(ξ)·φ(τξ) is bounded by e^{−ξ²/4}|φ| for every k (Cramér's inequality for
    Hermite functions), which sets the cut-off |ξ| ≤ L and how many digits a panel in the
    tails must deliver; on the Bernstein ellipse of a panel h_k grows by at most e^{√(k+1)·y}
    (y the ellipse's half-height), which the node count pays for up to ``k_layout`` terms.
    """

    def __init__(
        self, act: Activation, tau: Num, ctx: EngineContext, digits: int, refine: int, k_layout: int
    ) -> None:
        self.act, self.ctx, self.digits, self.refine, self.k_layout = (
            act,
            ctx,
            digits,
            refine,
            k_layout,
        )
        nodes, weights, values = self._nodes(tau)
        self.n_nodes = len(nodes)
        # Fixed point: P bits after the point; the extra bits absorb the N·K rounding steps.
        self.bits = ctx.prec + 24 + (len(nodes) * max(k_layout, 1)).bit_length()
        p = self.bits
        self._xi = np.array([_to_fixed(ctx, x, p) for x in nodes], dtype=object)
        self._w = np.array(
            [_to_fixed(ctx, w * v, p) for w, v in zip(weights, values, strict=True)], dtype=object
        )
        self.norm = ctx.fsum(w * v * v for w, v in zip(weights, values, strict=True))
        self.scale = ctx.sqrt(self.norm) if self.norm > 0 else ctx.one
        self._h_prev: Num = None
        self._h: Any = np.array([1 << p] * len(nodes), dtype=object)
        self.b: list[Num] = []

    def _nodes(self, tau: Num) -> tuple[list[Num], list[Num], list[Num]]:
        ctx = self.ctx
        ln10 = math.log(10)
        tau_f = float(tau)
        big_l = 2 * math.sqrt((self.digits + 2) * ln10) + 3
        half = min(0.5 / tau_f, 0.5)  # panel half-width in ξ; at most 1/2 in x = τξ
        ratio = _POLE_DISTANCE / (half * tau_f)
        rho = min(ratio + math.sqrt(ratio * ratio + 1), 8.0)
        y = half * (rho - 1 / rho) / 2
        extra = math.sqrt(self.k_layout + 1) * y + y * y / 2  # nats lost to h_k, pdf on the ellipse
        kinks = self.act.kinks
        inside = [k for k in kinks if -big_l < float(k) / tau_f < big_l]
        bounds_f = [-big_l] + [float(k) / tau_f for k in inside] + [big_l]
        bounds = [-ctx.mpf(big_l)] + [ctx.mpf(k) / tau for k in inside] + [ctx.mpf(big_l)]
        first_piece = sum(1 for k in kinks if float(k) / tau_f <= -big_l)
        fns = _piece_functions(self.act)
        inv_sqrt_2pi = 1 / ctx.sqrt(2 * ctx.pi)
        nodes: list[Num] = []
        weights: list[Num] = []
        values: list[Num] = []
        for seg in range(len(bounds) - 1):
            a, b = bounds[seg], bounds[seg + 1]
            count = max(1, math.ceil((bounds_f[seg + 1] - bounds_f[seg]) / (2 * half)))
            f = fns[first_piece + seg]
            for j in range(count):
                lo = a + (b - a) * j / count
                hi = a + (b - a) * (j + 1) / count
                near = min(abs(float(lo)), abs(float(hi))) if float(lo) * float(hi) > 0 else 0.0
                need = self.digits + 2 - near * near / (4 * ln10)
                if need <= 0:
                    continue
                n = _ladder(
                    math.ceil((1 + self.refine / 2) * (need * ln10 + extra) / (2 * math.log(rho)))
                    + 3
                )
                gx, gw = gauss_legendre(ctx, n)
                mid, rad = (lo + hi) / 2, (hi - lo) / 2
                for g, w in zip(gx, gw, strict=True):
                    x = mid + rad * g
                    nodes.append(x)
                    weights.append(rad * w * ctx.exp(-x * x / 2) * inv_sqrt_2pi)
                    values.append(f(ctx, tau * x)[0])
        return nodes, weights, values

    @property
    def terms(self) -> int:
        return len(self.b)

    @property
    def coefficients(self) -> list[Num]:
        """c_k = b_k², the Taylor coefficients of the dual at r = 0."""
        return [b * b for b in self.b]

    def extend(self, k_max: int) -> None:
        """Compute b_k up to k = k_max (inclusive)."""
        ctx, p = self.ctx, self.bits
        zero_below = ctx.mpf(10) ** (-(self.digits - 2)) * self.scale
        while len(self.b) <= k_max:
            k = len(self.b)
            if k == 1:
                self._h_prev, self._h = self._h, self._xi.copy()
            elif k >= 2:
                # h_k = (ξ h_{k−1} − √(k−1) h_{k−2})/√k, in 2^p fixed point.
                c1 = _to_fixed(ctx, 1 / ctx.sqrt(k), p)
                c2 = _to_fixed(ctx, ctx.sqrt(ctx.mpf(k - 1) / k), p)
                new = (((self._xi * self._h) >> p) * c1 - self._h_prev * c2) >> p
                self._h_prev, self._h = self._h, new
            if known_zero(self.act, k):
                self.b.append(ctx.zero)  # exactly zero by symmetry or degree
                continue
            total = int((self._w * self._h).sum())
            v = ctx.ldexp(ctx.mpf(total), -2 * p)
            # Below the quadrature's noise floor relative to ‖φ‖: a coefficient that cancels.
            self.b.append(ctx.zero if abs(v) <= zero_below else v)


def terms_needed(r: float, digits: float, j_max: int) -> int:
    """Smallest K with (K+1)_j r^{K+1−j} ≤ 10^{−digits} for j ≤ j_max (Parseval tail ≤ f(1))."""
    if r == 0:
        return j_max
    if r >= 1:
        return MAX_TERMS + 1
    target = -digits * math.log(10)
    log_r = math.log(r)
    for k in range(j_max, MAX_TERMS + 1):
        worst = -math.inf
        for j in range(j_max + 1):
            if k + 1 < j / (1 - r):
                worst = math.inf
                break
            falling = sum(math.log(k + 1 - i) for i in range(j))
            worst = max(worst, falling + (k + 1 - j) * log_r)
        if worst <= target:
            return k
    return MAX_TERMS + 1


def series_derivative(ctx: EngineContext, coeffs: list[Num], r: Num, j: int) -> Num:
    """Σ_{k≥j} c_k k!/(k−j)! r^{k−j}."""
    total = ctx.zero
    power = ctx.one
    for k in range(j, len(coeffs)):
        c = coeffs[k]
        if c:
            falling = math.prod(range(k - j + 1, k + 1))
            total += c * falling * power
        power *= r
    return total


def too_close(r: float) -> NoConvergence:
    return NoConvergence(
        f"the dual activation is needed at correlation r = {r:.6g}: its Mehler series needs more "
        f"than {MAX_TERMS} terms there; lower sigma_a2 (r = g(0)/g(1) grows with it) or ask "
        "for fewer digits (dps)."
    )


# ---------------------------------------------------------------------------
# The dual activation as a series (public, for tests and the Monte Carlo check)
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class DualSeries:
    r"""f(r) = E[φ(u)φ(v)], Var u = Var v = s, Cov = s r, as Σ_k c_k r^k (HLD 2023, eq. (3)).

    Good to ``dps`` digits (relative to f(1)) for |r| ≤ ``r_max``, derivatives up to
    ``max_derivative``.  Values are mpf numbers of a private context at ``dps`` + 10 digits.

    Attributes:
      activation: φ.
      s: the variance.
      coefficients: c_k = s^k E[φ^{(k)}(√s ξ)]²/k! (exact zeros from symmetry).
      norm: f(1) = E[φ(√s ξ)²] on the same quadrature rule (Parseval: Σ c_k = norm).
    """

    activation: Activation
    s: Num
    r_max: float
    dps: int
    max_derivative: int
    coefficients: tuple[Num, ...]
    norm: Num
    ctx: EngineContext = dataclasses.field(repr=False, compare=False)

    def __call__(self, r: Num, derivative: int = 0) -> Num:
        """f^{(derivative)}(r), r in [−r_max, r_max]."""
        if (
            isinstance(derivative, bool)
            or not isinstance(derivative, int)
            or not (0 <= derivative <= self.max_derivative)
        ):
            raise InvalidArgument(
                f"derivative={_arguments.show(derivative)}: choose an integer from 0 to "
                f"{self.max_derivative}, or build the series with a larger max_derivative."
            )
        rr = _mp_real(self.ctx, r, "r", binary_float=True)
        if abs(rr) > self.r_max * (1 + 1e-12):
            raise InvalidArgument(
                f"r = {self.ctx.nstr(rr, 8)} lies outside |r| <= r_max = {self.r_max}; build the "
                "series with a larger r_max."
            )
        return series_derivative(self.ctx, list(self.coefficients), rr, derivative)

    def float_coefficients(self) -> np.ndarray:
        """c_k as float64 (for the Monte Carlo kernels)."""
        return np.array([float(c) for c in self.coefficients], dtype=np.float64)


def _projection(
    act: Activation, s: Num, ctx: EngineContext, digits: int, refine: int, terms: int
) -> HermiteProjection:
    proj = HermiteProjection(act, ctx.sqrt(s), ctx, digits, refine, k_layout=max(terms, 16))
    proj.extend(terms)
    return proj


#: highest derivative a :class:`DualSeries` may be sized for, and its largest variance s
MAX_DERIVATIVE = 20
MAX_VARIANCE = 10**4


def _mp_real(ctx: EngineContext, value: Num, name: str, *, binary_float: bool = False) -> Num:
    """``value`` in ``ctx``: an mpf of any context exactly (a float too, as its binary value,
    with ``binary_float``), anything else by the argument rules (exact; a float is its shortest
    repr); complex, NaN, inf, bool and text are refused."""
    if not isinstance(value, bool) and (
        hasattr(value, "_mpf_") or (binary_float and isinstance(value, float | int))
    ):
        v = ctx.convert(value)
        if not ctx.isfinite(v):
            raise InvalidArgument(f"{name}={_arguments.show(value)} is not finite.")
        return v
    q = exact_number(value, name)
    return ctx.mpf(int(q.p)) / int(q.q)


def dual_series(
    activation: str | Activation,
    s: Num,
    *,
    r_max: float = 0.5,
    dps: int = 30,
    max_derivative: int = 3,
    refine: int = 0,
) -> DualSeries:
    r"""The dual activation of φ at variance ``s`` as a Mehler series, good for |r| ≤ ``r_max``.

    Args:
      activation: library name, ``name(params)`` or an expression in ``x``.
      s: the variance (exact decimal string, int, Fraction, or an mpf).
      r_max: largest |r| the series must serve, in [0, 1).
      dps: digits (relative to f(1)) the truncation and quadrature must deliver.
      max_derivative: highest f^{(j)} the truncation is sized for.
      refine: 1 for the finer (check) quadrature rule.

    Example:
      >>> f = dual_series("sqrt(2)*max(x, 0)", 1, r_max=0.5, dps=20)   # arc-cosine kernel
      >>> mpmath.nstr(f(0), 15)                                          # 1/π
      '0.318309886183791'
    """
    act = get_activation(activation)
    dps = _arguments.integer(dps, "dps", 5, 300)
    r_exact = _arguments.number(r_max, "r_max")
    if not 0 <= r_exact < 1:
        raise InvalidArgument(f"r_max={_arguments.show(r_max)}: choose r_max in [0, 1).")
    r_max = float(r_exact)
    max_derivative = _arguments.integer(max_derivative, "max_derivative", 0, MAX_DERIVATIVE)
    refine = _arguments.integer(refine, "refine", 0, 1)
    ctx = mpmath.MPContext()
    ctx.dps = dps + 10
    s_val = _mp_real(ctx, s, "s")
    if not s_val > 0:
        raise InvalidArgument(f"s={_arguments.show(s)}: the variance must be > 0.")
    if s_val > MAX_VARIANCE:
        # the quadrature's panels are 1/2 wide in x = √s ξ: their count grows like √s
        raise BudgetExceeded(
            f"s={_arguments.show(s)}: a variance above {MAX_VARIANCE} (docs/limits.md); "
            "rescale φ (φ(√s ξ) at a smaller s)."
        )
    terms = terms_needed(r_max, dps + 2, max_derivative)
    if terms > MAX_TERMS:
        raise too_close(r_max)
    proj = _projection(act, s_val, ctx, dps + 5, refine, terms)
    return DualSeries(
        act, s_val, float(r_max), dps, max_derivative, tuple(proj.coefficients), proj.norm, ctx
    )

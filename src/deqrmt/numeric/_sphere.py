r"""The sphere setting of HLD 2023 evaluated to verified digits, for an arbitrary activation.

What :func:`deqrmt.symbolic.derive_sphere` derives needs numbers for: the diagonal variance
s = g(1) (a one-dimensional fixed point, Newton on the Gaussian moments of
:mod:`._moments`), the off-diagonal fixed point g(0) = s·r₀, and the dual activation's
derivatives f^{(j)}(r₀).  The dual comes from its Taylor series at 0 (Mehler):

    f(r) = Σ_k c_k r^k,   c_k = f^{(k)}(0)/k! = s^k E[φ^{(k)}(√s ξ)]²/k! = b_k²,
    b_k = E[h_k(ξ) φ(√s ξ)],   h_k = He_k/√k!                                    (Stein)

The b_k come from one composite Gauss–Legendre pass over panels split at φ's kinks, with the
Hermite recursion run in fixed-point integers (Python ints, 2^P scaling): for a hundred terms
on a few thousand nodes that is ~10× faster than mpf arithmetic, and exact up to the 2^{-P}
truncation of each step.  Since c_k ≥ 0 and Σ_k c_k = f(1) = E[φ(√s ξ)²] (Parseval), the
tail after K terms obeys, for j ≤ J and K + 1 ≥ j/(1 − |r|),

    |Σ_{k>K} c_k (k)_j r^{k−j}| ≤ (f(1) − Σ_{k≤K} c_k)·(K+1)_j |r|^{K+1−j},

which fixes K; |r| near 1 therefore costs many terms (refused beyond :data:`MAX_TERMS`).

By default every digit is *proven* instead (:mod:`._certify_sphere`: Krawczyk proofs of s and
r₀, the b_k and the tails as Arb balls); with ``certify=False``, or where Arb cannot enclose
the activation, two evaluations (dps + 5 with the working rule, dps + 20 with a finer one) are
compared and only the digits they share are reported (:func:`deqrmt.numeric._verify.verify`).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections.abc import Callable, Mapping
from typing import Any

import mpmath
import numpy as np
import sympy as sp

from .. import _arguments
from .._errors import BudgetExceeded, ContractionError, InvalidArgument, NoConvergence
from ..symbolic import Activation, X, get_activation
from ..symbolic._sphere import (
    ALPHA,
    BETA,
    DIM,
    MU,
    QuadraticSolution,
    derive_quadratic,
    derive_sphere,
)
from . import _display
from ._fixed_point import solve_tau
from ._moments import evaluator_for
from ._printer import compile_function
from ._problem import DEQProblem, exact_number
from ._quadrature import gauss_legendre
from ._verify import Verified, ball_dict, certification_fields, verify

__all__ = [
    "SPHERE_KEYS",
    "NTK_EXTRA_KEYS",
    "MAX_TERMS",
    "DualSeries",
    "QuadraticActivation",
    "SphereCoefficients",
    "dual_series",
    "sphere_variance",
    "sphere_coefficients",
]

#: The numbers ``deqrmt sphere`` prints, in order (HLD 2023, Theorems 1 and 3).
SPHERE_KEYS = (
    "g0", "g_at_1", "g_prime_0", "g_second_0", "alpha", "beta", "mu",
    "ntk_alpha", "ntk_beta", "ntk_mu",
)  # fmt: skip
#: The NTK kernel's own values k(0), k(1), k'(0), k''(0), reported beside them.
NTK_EXTRA_KEYS = ("k0", "k_at_1", "k_prime_0", "k_second_0")
#: Most Mehler terms we sum; a correlation so close to 1 that more are needed is refused.
MAX_TERMS = 3000
_GUARD_WORK, _GUARD_CHECK = 5, 20
_ORDER = 2  # Theorems 1–4 use g and k to second order
_POLE_DISTANCE = math.pi / 2  # tanh's, as in ._quadrature: the nearest singularity we plan for
_LADDER = (8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)


# ---------------------------------------------------------------------------
# Hermite projections b_k = E[h_k(ξ) φ(τξ)]
# ---------------------------------------------------------------------------


def _ladder(n: int) -> int:
    for m in _LADDER:
        if m >= n:
            return m
    return _LADDER[-1]


@functools.lru_cache(maxsize=64)
def _piece_functions(act: Activation) -> tuple[Callable[..., tuple[Any, ...]], ...]:
    return tuple(
        compile_function("phi_piece", [X], [p.expr], doc=f"{act.name} on ({p.lo}, {p.hi})")
        for p in act.pieces
    )


def _to_fixed(ctx: Any, v: Any, bits: int) -> int:
    """⌊v·2^bits⌉ as a Python int (mpf → int is exact: mantissa shifted)."""
    return int(ctx.nint(ctx.ldexp(v, bits)))


class _HermiteProjection:
    """The normalized Hermite coefficients b_0, b_1, … of ξ ↦ φ(τξ), extended on demand.

    Panels: composite Gauss–Legendre, never across a kink of φ (at k/τ in ξ).  The integrand
    h_k(ξ)·pdf(ξ)·φ(τξ) is bounded by e^{−ξ²/4}|φ| for every k (Cramér's inequality for
    Hermite functions), which sets the cut-off |ξ| ≤ L and how many digits a panel in the
    tails must deliver; on the Bernstein ellipse of a panel h_k grows by at most e^{√(k+1)·y}
    (y the ellipse's half-height), which the node count pays for up to ``k_layout`` terms.
    """

    def __init__(
        self, act: Activation, tau: Any, ctx: Any, digits: int, refine: int, k_layout: int
    ) -> None:
        self.act, self.ctx, self.digits, self.refine, self.k_layout = (
            act,
            ctx,
            digits,
            refine,
            k_layout,
        )
        self.parity = act.parity
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
        self._h_prev: Any = None
        self._h: Any = np.array([1 << p] * len(nodes), dtype=object)
        self.b: list[Any] = []

    def _nodes(self, tau: Any) -> tuple[list[Any], list[Any], list[Any]]:
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
        nodes: list[Any] = []
        weights: list[Any] = []
        values: list[Any] = []
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
    def coefficients(self) -> list[Any]:
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
            if (self.parity == -1 and k % 2 == 0) or (self.parity == 1 and k % 2 == 1):
                self.b.append(ctx.zero)  # exactly zero by symmetry
                continue
            total = int((self._w * self._h).sum())
            v = ctx.ldexp(ctx.mpf(total), -2 * p)
            # Below the quadrature's noise floor relative to ‖φ‖: a coefficient that cancels.
            self.b.append(ctx.zero if abs(v) <= zero_below else v)


def _terms_needed(r: float, digits: float, j_max: int) -> int:
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


def _series_derivative(ctx: Any, coeffs: list[Any], r: Any, j: int) -> Any:
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


def _too_close(r: float) -> NoConvergence:
    return NoConvergence(
        f"the dual activation is needed at correlation r = {r:.6g}: its Mehler series needs more "
        f"than {MAX_TERMS} terms there; lower --sigma-a2 (r = g(0)/g(1) grows with it) or ask "
        "for fewer digits (--dps)."
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
    s: Any
    r_max: float
    dps: int
    max_derivative: int
    coefficients: tuple[Any, ...]
    norm: Any
    ctx: Any = dataclasses.field(repr=False, compare=False)

    def __call__(self, r: Any, derivative: int = 0) -> Any:
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
        return _series_derivative(self.ctx, list(self.coefficients), rr, derivative)

    def float_coefficients(self) -> np.ndarray:
        """c_k as float64 (for the Monte Carlo kernels)."""
        return np.array([float(c) for c in self.coefficients], dtype=np.float64)


def _projection(
    act: Activation, s: Any, ctx: Any, digits: int, refine: int, terms: int
) -> _HermiteProjection:
    proj = _HermiteProjection(act, ctx.sqrt(s), ctx, digits, refine, k_layout=max(terms, 16))
    proj.extend(terms)
    return proj


#: highest derivative a :class:`DualSeries` may be sized for, and its largest variance s
MAX_DERIVATIVE = 20
MAX_VARIANCE = 10**4


def _mp_real(ctx: Any, value: Any, name: str, *, binary_float: bool = False) -> Any:
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
    s: Any,
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
    terms = _terms_needed(r_max, dps + 2, max_derivative)
    if terms > MAX_TERMS:
        raise _too_close(r_max)
    proj = _projection(act, s_val, ctx, dps + 5, refine, terms)
    return DualSeries(
        act, s_val, float(r_max), dps, max_derivative, tuple(proj.coefficients), proj.norm, ctx
    )


# ---------------------------------------------------------------------------
# The coefficients
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class QuadraticActivation:
    """σ(t) = a2 t² + a1 t + a0 of HLD 2023, Corollary 1, to verified digits.

    ``signs``: the signs of (a2, a1, a0 + a2), the paper's three ± choices.
    """

    signs: str
    a2: Verified
    a1: Verified
    a0: Verified

    def to_dict(self) -> dict[str, str]:
        return {"a2": self.a2.text, "a1": self.a1.text, "a0": self.a0.text, "signs": self.signs}


@dataclasses.dataclass(frozen=True)
class SphereCoefficients:
    r"""HLD 2023's sphere-setting coefficients for one activation, each with its verified digits.

    ``values`` maps :data:`SPHERE_KEYS` and :data:`NTK_EXTRA_KEYS` to :class:`Verified`.
    ``quadratic_ck``/``quadratic_ntk`` hold Corollary 1's real solutions, ``"+++"`` first, or
    are empty when none is real (e.g. α < μ/d, as for an odd φ where α = 0).
    """

    activation: Activation
    sigma_a2: sp.Rational
    sigma_b2: sp.Rational
    d: int
    dps: int
    values: Mapping[str, Verified]
    quadratic_ck: tuple[QuadraticActivation, ...]
    quadratic_ntk: tuple[QuadraticActivation, ...]
    series_terms: int
    notes: tuple[str, ...] = ()
    certified: bool = False
    prec_bits: int = 0
    reason: str | None = None

    def __post_init__(self) -> None:
        missing = [k for k in SPHERE_KEYS if k not in self.values]
        if missing:
            raise InvalidArgument(f"SphereCoefficients is missing {missing}.")

    def __getattr__(self, name: str) -> Any:
        values = object.__getattribute__(self, "values")
        if name in values:
            return values[name].value
        raise AttributeError(name)

    def as_floats(self) -> dict[str, float]:
        return {k: float(v.value) for k, v in self.values.items()}

    def _quadratic_dict(self, sols: tuple[QuadraticActivation, ...]) -> dict[str, Any] | None:
        if not sols:
            return None

        def one(q: QuadraticActivation) -> dict[str, Any]:
            d: dict[str, Any] = dict(q.to_dict())
            if self.certified:
                d["balls"] = {f"a{i}": ball_dict(v) for i, v in ((2, q.a2), (1, q.a1), (0, q.a0))}
            return d

        out: dict[str, Any] = one(sols[0])
        out["other_signs"] = [one(q) for q in sols[1:]]
        return out

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "activation": self.activation.name,
            "expression": str(self.activation.expr),
            "sigma_a2": str(self.sigma_a2),
            "sigma_b2": str(self.sigma_b2),
            "d": self.d,
            "dps": self.dps,
        }
        out.update({k: self.values[k].text for k in SPHERE_KEYS})
        out["quadratic_ck"] = self._quadratic_dict(self.quadratic_ck)
        out["quadratic_ntk"] = self._quadratic_dict(self.quadratic_ntk)
        out.update({k: self.values[k].text for k in NTK_EXTRA_KEYS if k in self.values})
        out["digits"] = {k: v.digits for k, v in self.values.items()}
        out["series_terms"] = self.series_terms
        out.update(
            certification_fields(
                self.certified, self.values, self.prec_bits, self.reason, self.notes
            )
        )
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)

    def _repr_html_(self) -> str:
        return _display.html(self)

    def _repr_latex_(self) -> str:
        return _display.latex(self)

    def _repr_markdown_(self) -> str:
        return _display.markdown(self)


@functools.lru_cache(maxsize=2)
def _sphere_function() -> tuple[
    Callable[..., tuple[Any, ...]], tuple[str, ...], tuple[sp.Symbol, ...]
]:
    formulas = derive_sphere(_ORDER)
    exprs = formulas.as_dict()
    names = tuple(k for k in (*SPHERE_KEYS, *NTK_EXTRA_KEYS))
    args = formulas.numeric_inputs()
    fn = compile_function(
        "sphere_coefficients",
        args,
        [exprs[k] for k in names],
        doc="HLD 2023 Theorems 1 and 3 for an arbitrary φ (derived by deqrmt.symbolic).",
    )
    return fn, names, args


@functools.lru_cache(maxsize=2)
def _quadratic_functions() -> tuple[
    tuple[str, ...], Callable[..., tuple[Any, ...]], Callable[..., tuple[Any, ...]]
]:
    q = derive_quadratic()

    def flat(sols: tuple[QuadraticSolution, ...]) -> list[sp.Expr]:
        return [e for sol in sols for e in (sol.a2, sol.a1, sol.a0)]

    args = [ALPHA, BETA, MU, DIM]
    ck = compile_function("quadratic_ck", args, flat(q.ck), doc="HLD 2023 Corollary 1 (CK).")
    ntk = compile_function("quadratic_ntk", args, flat(q.ntk), doc="HLD 2023 Corollary 1 (NTK).")
    return tuple(s.signs for s in q.ck), ck, ntk


def _sphere_problem(act: Activation, sa2: sp.Rational, sb2: sp.Rational) -> DEQProblem:
    """The sphere's diagonal map s ← σ_a² E[φ(√s ξ)²] + σ_b² is the DEQ's variance map with
    τ0 = 1 (‖x‖ = 1) and no centering: one problem record, one solver."""
    return DEQProblem(act, sa2, sb2, sp.S.One, 30, center=False)


def _variance(
    act: Activation, a2: Any, b2: Any, ctx: Any, refine: int, problem: DEQProblem
) -> tuple[Any, Any, Any]:
    """s = σ_a² E[φ(√s ξ)²] + σ_b² by the one τ* solver; returns (s, F'(s), E[φ'(√s ξ)²])."""
    del a2, b2  # in the problem
    fp = solve_tau(problem, ctx, refine)
    m = evaluator_for(act)(ctx, fp.tau, ("dsq",), refine)
    return fp.q, fp.slope, m["dsq"].value


def _origin(
    proj: _HermiteProjection, s: Any, tau: Any, a2: Any, digits: int
) -> tuple[Any, _HermiteProjection]:
    """r₀ = g(0)/s: the root of s r = σ_a² f(r) in [0, 1), with enough Mehler terms for it.

    f is increasing and convex on [0, 1) (c_k ≥ 0), so Newton from r = 0 climbs monotonically
    to the root; the series is extended until its Parseval tail bound at r₀ is below
    10^{−digits}.  Returns r₀ and the projection (rebuilt with more nodes when the terms needed
    outgrow the ones its panels were sized for).
    """
    ctx = proj.ctx
    tol = ctx.mpf(10) ** (-digits)
    while True:
        coeffs = proj.coefficients
        r = ctx.zero
        for _ in range(200):
            f0 = _series_derivative(ctx, coeffs, r, 0)
            f1 = _series_derivative(ctx, coeffs, r, 1)
            step = (s * r - a2 * f0) / (s - a2 * f1)
            r -= step
            if abs(step) <= tol * max(abs(r), tol):
                break
        else:
            raise NoConvergence("Newton on g(0) = σ_a² f(g(0)/s) did not converge.")
        r_f = float(r)
        if not 0 <= r_f < 1:
            raise ContractionError(
                f"g(0)/g(1) = {r_f:.6g} is outside [0, 1): no admissible fixed point at ρ = 0; "
                "reduce --sigma-a2."
            )
        # A hair above r₀ so that the bound also covers the iterate after the extension.
        need = _terms_needed(min(r_f * (1 + 1e-6) + 1e-12, 1.0), digits + 2, _ORDER + 1)
        if need > MAX_TERMS:
            raise _too_close(r_f)
        if need < proj.terms:
            return r, proj
        if need > proj.k_layout:
            proj = _HermiteProjection(proj.act, tau, ctx, proj.digits, proj.refine, 2 * need)
        proj.extend(need)


def _sphere_run(
    act: Activation,
    sa2: sp.Rational,
    sb2: sp.Rational,
    d: int,
    digits: int,
    refine: int,
    q_start: Any,  # unused: the one solver brackets its own start
) -> tuple[dict[str, Any], list[tuple[Any, ...] | None], list[tuple[Any, ...] | None], int]:
    ctx = mpmath.MPContext()
    ctx.dps = digits
    a2, b2 = (ctx.mpf(int(v.p)) / int(v.q) for v in (sa2, sb2))
    s, fprime, m_dsq = _variance(act, a2, b2, ctx, refine, _sphere_problem(act, sa2, sb2))
    if fprime >= 1:
        raise ContractionError(
            f"σ_a² E[(φ²)''(√s ξ)]/2 = {ctx.nstr(fprime, 8)} ≥ 1 at s = g(1) = {ctx.nstr(s, 8)}: "
            "the diagonal fixed point is not attracting; reduce --sigma-a2."
        )
    if a2 * m_dsq >= 1:
        raise ContractionError(
            f"σ_a² E[φ'(√s ξ)²] = {ctx.nstr(a2 * m_dsq, 8)} ≥ 1: the kernel map is not a "
            "contraction off the diagonal and K* = G*/(1 − Ġ*) diverges; choose --sigma-a2 < "
            f"{ctx.nstr(1 / m_dsq, 8)} (with σ_b² fixed)."
        )
    tau = ctx.sqrt(s)
    proj = _HermiteProjection(act, tau, ctx, digits, refine, k_layout=128)
    proj.extend(_ORDER + 1)
    r0, proj = _origin(proj, s, tau, a2, digits)
    coeffs = proj.coefficients
    fs = [_series_derivative(ctx, coeffs, r0, j) for j in range(_ORDER + 2)]
    fn, names, _ = _sphere_function()
    env = [a2, b2, s, ctx.mpf(d), s * r0, m_dsq, *fs]
    values = dict(zip(names, fn(ctx, *env), strict=True))
    _, qck, qntk = _quadratic_functions()

    def solutions(f: Callable[..., tuple[Any, ...]], prefix: str) -> list[tuple[Any, ...] | None]:
        flat = f(
            ctx,
            values[f"{prefix}alpha"],
            values[f"{prefix}beta"],
            values[f"{prefix}mu"],
            ctx.mpf(d),
        )
        out: list[tuple[Any, ...] | None] = []
        for i in range(0, len(flat), 3):
            triple = tuple(ctx.convert(v) for v in flat[i : i + 3])
            real = all(ctx.im(v) == 0 for v in triple)
            out.append(tuple(ctx.re(v) for v in triple) if real else None)
        return out

    return values, solutions(qck, ""), solutions(qntk, "ntk_"), proj.terms


def sphere_variance(
    activation: str | Activation, sigma_a2: Any = "0.2", sigma_b2: Any = None, dps: int = 30
) -> Any:
    """s = g(1), the root of s = σ_a² E[φ(√s ξ)²] + σ_b² reached from the DEQ's own iteration.

    Returned as an mpf of a private context at ``dps`` + 10 digits (not verified: a helper for
    :func:`dual_series`; :func:`sphere_coefficients` reports it verified as ``g_at_1``).
    """
    act = get_activation(activation)
    sa2, sb2 = _sigmas(sigma_a2, sigma_b2)
    ctx = mpmath.MPContext()
    ctx.dps = dps + 10
    return solve_tau(_sphere_problem(act, sa2, sb2), ctx).q


def _sigmas(sigma_a2: Any, sigma_b2: Any) -> tuple[sp.Rational, sp.Rational]:
    sa2 = exact_number(sigma_a2, "sigma_a2")
    if sa2 <= 0:
        raise InvalidArgument(f"sigma_a2 must be > 0, got {sa2}.")
    sb2 = 1 - sa2 if sigma_b2 is None else exact_number(sigma_b2, "sigma_b2")
    if sb2 <= 0:
        raise InvalidArgument(
            f"sigma_b2 must be > 0 (got {sb2}); with the default σ_b² = 1 − σ_a² (HLD 2023, "
            "Assumption 1) this needs σ_a² < 1, or pass --sigma-b2."
        )
    return sa2, sb2


#: largest data dimension d of :func:`sphere_coefficients` (it only enters the formulas)
MAX_DIMENSION = 10**15


def sphere_coefficients(
    activation: str | Activation,
    sigma_a2: Any = "0.2",
    sigma_b2: Any = None,
    d: int = 1200,
    dps: int = 30,
    *,
    certify: bool = True,
) -> SphereCoefficients:
    """HLD 2023's α, β, μ (Theorem 1), α̇, β̇, μ̇ (Theorem 3) and Corollary 1's quadratics.

    For data uniform on S^{d−1}, the DEQ z = φ(σ_a A z/√m + σ_b B x/√m) has G* = g(XᵀX) with
    g = σ_a² f_φ(g/s) + σ_b² ρ and s = g(1) (see :mod:`deqrmt.symbolic._sphere`), and
    G* ≈ α11ᵀ + βXᵀX + μI, K* ≈ α̇11ᵀ + β̇XᵀX + μ̇I in operator norm.

    Args:
      activation: library name, ``name(params)`` or an expression in ``x``.
      sigma_a2, sigma_b2: exact numbers; σ_b² defaults to 1 − σ_a² (the paper's assumption).
      d: the data dimension (enters α and the quadratic's a0).
      dps: significant digits wanted.
      certify: prove every digit by Arb ball arithmetic (default: it is also faster, see
        :mod:`._certify_sphere`); an activation outside the enclosure rules falls back to the
        digits two evaluations agree on (``certified=False`` with the ``reason``).  False: the
        two evaluations only (dps + 5 and dps + 20).

    Returns:
      A ``SphereCoefficients`` whose ``values`` maps to :class:`Verified` numbers: ``g_at_1``
      (s = g(1)), ``g0``, ``g_prime_0``, ``g_second_0``, ``k_at_1``, ``k0``, ``k_prime_0``,
      ``k_second_0`` (the CK map g and the NTK map k at 0 and 1), ``alpha``, ``beta``, ``mu``
      (CK) and ``ntk_alpha``, ``ntk_beta``, ``ntk_mu`` (NTK); plus Corollary 1's quadratic
      activations and the dual's derivatives.

    Raises:
      InvalidArgument: malformed input.
      ContractionError: σ_a² too large for an attracting fixed point or a finite NTK.
      NoConvergence: g(0)/g(1) so close to 1 that the dual's series would need too many terms.
      PrecisionLoss: fewer than 10 digits agree between the two evaluations.

    Example:
      >>> s = sphere_coefficients("sqrt(2)*max(x, 0)", sigma_a2="0.2", dps=12)
      >>> s.values["g_at_1"].text, s.values["beta"].text     # s = 1 when σ_a² + σ_b² = 1
      ('1.00000000000', '0.893373907130')
    """
    act = get_activation(activation)
    sa2, sb2 = _sigmas(sigma_a2, sigma_b2)
    d = _arguments.integer(d, "d", 1, MAX_DIMENSION)  # a number in the formulas, not a size
    dps = _arguments.integer(dps, "dps", 5, 200)
    certify = _arguments.boolean(certify, "certify")
    if certify:
        from ._certify_sphere import certify_sphere  # Arb is loaded only when a proof is asked for
        from ._enclose import NotEnclosable

        try:
            balls = certify_sphere(_sphere_problem(act, sa2, sb2), d, dps)
        except NotEnclosable as e:
            return dataclasses.replace(_verified_sphere(act, sa2, sb2, d, dps), reason=str(e))
        return _from_balls(act, sa2, sb2, d, dps, balls)
    return _verified_sphere(act, sa2, sb2, d, dps)


def _no_quadratic_note(values: Mapping[str, Verified], which: str, d: int) -> str:
    prefix = "" if which == "CK" else "ntk_"
    alpha, mu = values[f"{prefix}alpha"].text, values[f"{prefix}mu"].text
    return (
        f"Corollary 1 ({which}): no real quadratic activation: it needs α ≥ μ/d and μ, β ≥ 0, "
        f"here α = {alpha}, μ = {mu}, d = {d} (for an odd φ, α = 0)."
    )


def _from_balls(
    act: Activation, sa2: sp.Rational, sb2: sp.Rational, d: int, dps: int, balls: Any
) -> SphereCoefficients:
    """A :class:`SphereCoefficients` whose every value is the digits its ball proves."""
    from ._certify import proven

    values = {k: proven(v, dps) for k, v in balls.values.items()}
    signs, _, _ = _quadratic_functions()
    notes: list[str] = []

    def quadratics(sols: Any, which: str) -> tuple[QuadraticActivation, ...]:
        out = tuple(
            QuadraticActivation(sign, *(proven(v, dps) for v in sol))
            for sign, sol in zip(signs, sols, strict=True)
            if sol is not None
        )
        if not out:
            notes.append(_no_quadratic_note(values, which, d))
        return out

    qck = quadratics(balls.quadratic_ck, "CK")
    qntk = quadratics(balls.quadratic_ntk, "NTK")
    return SphereCoefficients(
        act, sa2, sb2, d, dps, values, qck, qntk, balls.terms, tuple(notes),
        certified=True, prec_bits=balls.prec_bits,
    )  # fmt: skip


def _verified_sphere(
    act: Activation, sa2: sp.Rational, sb2: sp.Rational, d: int, dps: int
) -> SphereCoefficients:
    """The verified path: two evaluations (dps+5, dps+20 with a finer rule), agreeing digits."""
    work, wck, wntk, terms = _sphere_run(act, sa2, sb2, d, dps + _GUARD_WORK, 0, None)
    check, cck, cntk, terms_c = _sphere_run(act, sa2, sb2, d, dps + _GUARD_CHECK, 1, work["g_at_1"])
    keys = (*SPHERE_KEYS, *NTK_EXTRA_KEYS)
    values = {k: verify(k, work[k], check[k], dps) for k in keys}
    signs, _, _ = _quadratic_functions()
    notes: list[str] = []

    def quadratics(w: list[Any], c: list[Any], which: str) -> tuple[QuadraticActivation, ...]:
        out = []
        for sign, ws, cs in zip(signs, w, c, strict=True):
            if ws is None or cs is None:
                continue
            a2v, a1v, a0v = (
                verify(f"{which} a{i} ({sign})", x, y, dps)
                for i, x, y in zip((2, 1, 0), ws, cs, strict=True)
            )
            out.append(QuadraticActivation(sign, a2v, a1v, a0v))
        if not out:
            notes.append(_no_quadratic_note(values, which, d))
        return tuple(out)

    qck = quadratics(wck, cck, "CK")
    qntk = quadratics(wntk, cntk, "NTK")
    return SphereCoefficients(
        act, sa2, sb2, d, dps, values, qck, qntk, max(terms, terms_c), tuple(notes)
    )

r"""Implicit bias of gradient flow through a per-coordinate parametrization β = g(θ).

Setting (diagonal linear DEQ, NeurIPS 2024, Section 5): the predictor is `f(x) = ⟨β, x⟩` with
`β_i = g(θ_i)` for a trainable parameter vector `θ_i` (one or two scalars per coordinate), e.g.

- `1/(1-w)`: the diagonal DEQ `z = diag(w) z + x`, `f = Σ z_i` (output weights fixed at 1);
- `u/(1-w)`: the same DEQ with a trainable output weight `u`;
- `u**2-v**2`: the diagonal linear network of Woodworth et al. (COLT 2020).

Gradient flow `θ̇_i = -∇_θ L` on any loss `L(β)` moves β_i along
`β̇_i = ∇g·θ̇_i = -h_i ∂L/∂β_i` with `h = |∇_θ g|²` (chain rule, nothing else).  What follows is
derived, per coordinate:

1. Two parameters: a conserved quantity `c(θ)`, `∇c ⊥ ∇g` (the first-order linear PDE
   `g_u c_u + g_w c_w = 0`); then `ċ = ∇c·θ̇ = -(∂L/∂β)(∇c·∇g) = 0` on every trajectory, checked
   symbolically.  On the level set `c = c(θ(0))`, `h` becomes a function `h(β, c)` of β alone.
2. The potential ψ with `ψ'' = 1/h`: then `d/dt ψ'(β_i) = ψ''·β̇_i = -∂L/∂β_i`, so for the square
   loss `L = ½‖Xβ - y‖²`, `ψ'(β(t)) = ψ'(β(0)) - Xᵀv(t)` with `v(t) = ∫₀ᵗ (Xβ - y) ds`.  If the
   flow converges to an interpolant β̂, then `∇Q(β̂) = -Xᵀv(∞) ∈ range(Xᵀ)` for
   `Q(β) = Σ_i q(β_i)`, `q(β) = ψ(β) - ψ'(β(0)) β`: β̂ is the KKT point, hence (q strictly convex)
   the minimiser, of Q on `{Xβ = y}` within the domain the flow cannot leave.
3. The domain.  One parameter: the flow `θ̇ = -g'(θ) ∂L/∂β` can never reach a critical point of g
   (it is stationary there, and solutions are unique) nor a singularity (β stays finite), so θ stays
   in the interval `I ∋ θ(0)` on which g is smooth and strictly monotone; β stays in the open
   interval `g(I)`, on which `h > 0` and q is strictly convex.  Two parameters: the set of β where
   `h(β, c) > 0`, together with the signs the flow preserves (those of the denominator factors of
   g, and of the factors of c when `c(θ(0)) ≠ 0`).

For `1/(1-w)`: `h = β⁴`, `ψ' = -1/(3β³)`, so `β(t)⁻³ = β(0)⁻³ + 3Xᵀv(t)`, the reviewers'
formula, and `q = 1/(6β²) + β/(3β(0)³)` on `β > 0` (for `w(0) < 1`).

SymPy's effort is bounded deterministically: every step tries a fixed, short sequence of methods
on an expression whose size is checked first; no wall-clock timeouts.

References:
  Woodworth, Gunasekar, Lee, Moroshko, Savarese, Golan, Soudry, Srebro, "Kernel and Rich Regimes
  in Overparametrized Models", COLT 2020, https://arxiv.org/abs/2002.09277 (Theorem 1).
  Sun, Li, Wang, Zhang, Li, Lin, "Separation and Bias of Deep Equilibrium Models on
  Expressivity and Learning Dynamics", NeurIPS 2024, Theorem 3 and the OpenReview discussion.
"""

from __future__ import annotations

import dataclasses
import fractions
import numbers
import re
from collections.abc import Sequence
from typing import Any

import sympy as sp
from sympy.calculus.util import continuous_domain
from sympy.functions.elementary.hyperbolic import HyperbolicFunction
from sympy.functions.elementary.trigonometric import TrigonometricFunction
from sympy.integrals.manualintegrate import manualintegrate
from sympy.integrals.rationaltools import ratint

from .._errors import BudgetExceeded, DerivationError, InvalidArgument
from .._untrusted import exact_fraction, shown
from ._cache import cached
from ._parser import parse_expression_with_parameters
from ._symbols import PaperSymbol

__all__ = [
    "BETA0",
    "BiasDerivation",
    "bias_latex",
    "derive_bias",
    "domain_text",
    "parse_init",
    "parse_parametrization",
]

BETA0 = PaperSymbol("β0", real=True)
"""β(0), the value of β at the initialisation, kept symbolic in `BiasDerivation.q`."""

_S = sp.Symbol("s", real=True)  # integration variable of the quadrature representation

# Size limits (sp.count_ops) beyond which a SymPy step is not attempted: this, not a clock,
# bounds the effort.  The parametrizations of interest are a handful of operations.
_MAX_OPS_G = 40
_MAX_OPS_SIMPLIFY = 150
_MAX_OPS_INTEGRAND = 80
_MAX_OPS_PDE = 60
_MAX_OPS_H = 60  # h(β) beyond this is no usable closed form (and would stall what follows)
# manualintegrate explores many rewrites: only on small algebraic integrands (one of 30
# operations, or cosh(log(…))**-4 of 8, can keep it busy for minutes).
_MAX_OPS_MANUAL = 20
_MAX_OPS_RISCH = 40


@dataclasses.dataclass(frozen=True)
class BiasDerivation:
    r"""The implicit regularizer of gradient flow through `β = g(θ)`, one coordinate.

    `β̇ = -h(β) ∂L/∂β` with `h = |∇_θ g|²`; `ψ'' = 1/h`; `q(β) = ψ(β) - ψ'(β(0)) β`;
    gradient flow on `L = ½‖Xβ - y‖²`, if it converges to an interpolant, converges to
    `argmin Σ_i q(β_i)` subject to `Xβ = y` and `β_i ∈ domain`.

    Attributes:
      expression: g(θ), the parametrization.
      parameters: θ, one or two real symbols, in the order of `init`.
      init: θ(0), exact numbers (every coordinate starts there).
      beta: the symbol β (with the sign assumptions the domain implies).
      beta0_value: g(θ(0)); `q` keeps `BETA0` symbolic, `q_at_init` substitutes this.
      h_theta: `|∇_θ g|²` as a function of θ.
      conserved: c(θ) with `∇c·∇g = 0` (two parameters), else None.
      conserved_symbol: the symbol standing for the value of c in `h`, `psi`, `q`.
      conserved_value: c(θ(0)).
      h: h as a function of β (and of the conserved value).
      dpsi: ψ'(β), an antiderivative of 1/h (or `Integral(1/h(s), (s, β0, β))`).
      psi: ψ(β), an antiderivative of `dpsi` (or a quadrature representation).
      q: `ψ(β) - ψ'(β0) β`, β0 = `BETA0`.
      domain: the open set of β the flow never leaves, on which h > 0 and q is strictly convex.
      invariants: relations in θ that the flow preserves (`w < 1`, `Eq(u*v, 1/4)`, `u > 0`).
      closed_form: False when `dpsi` or `psi` is a quadrature representation.
    """

    expression: sp.Expr
    parameters: tuple[sp.Symbol, ...]
    init: tuple[sp.Expr, ...]
    beta: sp.Symbol
    beta0_value: sp.Expr
    h_theta: sp.Expr
    conserved: sp.Expr | None
    conserved_symbol: sp.Symbol | None
    conserved_value: sp.Expr | None
    h: sp.Expr
    dpsi: sp.Expr
    psi: sp.Expr
    q: sp.Expr
    domain: sp.Set
    invariants: tuple[sp.Basic, ...]
    closed_form: bool

    def __post_init__(self) -> None:
        if len(self.parameters) not in (1, 2) or len(self.init) != len(self.parameters):
            raise InvalidArgument(
                f"expected one or two parameters with one initial value each, got "
                f"parameters={self.parameters!r}, init={self.init!r}."
            )
        if (self.conserved is None) != (len(self.parameters) == 1):
            raise InvalidArgument("a conserved quantity exists exactly for two parameters.")
        if (self.conserved is None) != (self.conserved_symbol is None) or (
            self.conserved is None
        ) != (self.conserved_value is None):
            raise InvalidArgument("conserved, conserved_symbol, conserved_value go together.")
        allowed = {self.beta, BETA0, _S} | (
            {self.conserved_symbol} if self.conserved_symbol is not None else set()
        )
        for name in ("h", "dpsi", "psi", "q"):
            extra = getattr(self, name).free_symbols - allowed
            if extra:
                raise InvalidArgument(
                    f"{name} depends on {sorted(map(str, extra))}, not on β alone."
                )

    @property
    def q_at_init(self) -> sp.Expr:
        """q with β(0) substituted; the conserved value stays a symbol."""
        return self.q.subs(BETA0, self.beta0_value)

    @property
    def is_reviewers_form(self) -> bool:
        """Whether ψ' is `-1/(3β³)` up to a constant, i.e. `β(t)⁻³ = β(0)⁻³ + 3Xᵀv(t)`."""
        return sp.simplify(sp.diff(self.dpsi + 1 / (3 * self.beta**3), self.beta)) == 0


# ---------------------------------------------------------------------------------------------
# input
# ---------------------------------------------------------------------------------------------


def parse_parametrization(
    text: str, parameters: Sequence[str] | None = None
) -> tuple[sp.Expr, tuple[sp.Symbol, ...]]:
    """Parse `g(θ)` with the safe parser; `parameters` fixes the names and their order.

    Example:
      >>> parse_parametrization("u/(1-w)")
      (u/(1 - w), (u, w))
    """
    expr, found = parse_expression_with_parameters(text)
    # `x` is the parser's activation variable; here it may serve as a parameter name too.
    symbols = {s.name: s for s in expr.free_symbols if isinstance(s, sp.Symbol)}
    symbols.update({s.name: s for s in found})
    if parameters is None:
        names = sorted(symbols)
    else:
        names = [p.strip() for p in parameters]
        if any(not n for n in names) or len(set(names)) != len(names):
            raise InvalidArgument(f"parameters={list(parameters)!r}: names must be distinct.")
        missing = sorted(set(symbols) - set(names))
        if missing:
            raise InvalidArgument(
                f"{text!r} depends on {', '.join(missing)}, which is not in "
                f"parameters={names!r}; list every trainable name, or write constants as numbers."
            )
        unused = [n for n in names if n not in symbols]
        if unused:
            raise InvalidArgument(f"parameters={names!r}: {text!r} does not depend on {unused}.")
    if len(names) not in (1, 2):
        raise InvalidArgument(
            f"{text!r} has {len(names)} parameters ({', '.join(names) or 'none'}); "
            "one (`1/(1-w)`) or two (`u/(1-w)`, `u**2-v**2`) are supported."
        )
    # The parser makes every parameter real; keep exactly those symbols.
    theta = tuple(symbols[n] if n in symbols else sp.Symbol(n, real=True) for n in names)
    return expr, theta


#: |θ(0)| accepted: the derivation is exact at any size, but --check runs float64 gradient
#: descent from θ(0), and a parametrization's scale is O(1) in every use of interest
MAX_INIT = 10**6
#: digits of one value of θ(0) (exact rationals; SymPy's work grows with their size)
MAX_INIT_DIGITS = 60


def _number(value: Any, what: str) -> sp.Rational:
    if isinstance(value, sp.Rational):
        value = fractions.Fraction(int(value.p), int(value.q))
    if isinstance(value, fractions.Fraction):
        f = value
        if max(abs(f.numerator), f.denominator).bit_length() > 200:
            raise BudgetExceeded(f"{what}={shown(value)} has too many digits.")
    else:
        if isinstance(value, numbers.Integral) and not isinstance(value, bool):
            value = int(value)
        f = exact_fraction(
            value,
            what,
            max_digits=MAX_INIT_DIGITS,
            fix="write a decimal like 0.5 or a fraction like 1/2 (one per parameter: 1,0.25)",
        )
    if abs(f) > MAX_INIT:
        raise InvalidArgument(
            f"{what}={shown(value)}: |θ(0)| must be at most {MAX_INIT} (an initialisation of a "
            "parametrization is a number of order one)."
        )
    return sp.Rational(f.numerator, f.denominator)


def parse_init(value: Any, n_parameters: int) -> tuple[sp.Rational, ...]:
    """θ(0) as exact rationals: one number for every parameter, or one per parameter.

    Example:
      >>> parse_init("0.5", 2)
      (1/2, 1/2)
      >>> parse_init("1,0.25", 2)
      (1, 1/4)
    """
    if isinstance(value, str):
        parts: list[Any] = [p for p in value.split(",")]
    elif isinstance(value, Sequence):
        parts = list(value)
    else:
        parts = [value]
    if len(parts) == 1:
        parts = parts * n_parameters
    if len(parts) != n_parameters:
        raise InvalidArgument(
            f"init={value!r} has {len(parts)} values for {n_parameters} parameters; give one "
            "value for all or one per parameter."
        )
    return tuple(_number(p, "init") for p in parts)


# ---------------------------------------------------------------------------------------------
# bounded SymPy steps
# ---------------------------------------------------------------------------------------------


def _simplify(e: sp.Expr) -> sp.Expr:
    """`simplify` on small expressions, `cancel` on large ones: effort bounded by size."""
    if sp.count_ops(e) <= _MAX_OPS_SIMPLIFY:
        return sp.simplify(e)
    return sp.cancel(e)


def _is_zero(e: sp.Expr) -> bool:
    return _simplify(e) == 0


def _antiderivative(f: sp.Expr, x: sp.Symbol) -> sp.Expr | None:
    """An elementary antiderivative by a fixed sequence of methods, or None.

    Hermite–Rothstein–Trager for rational integrands (fast and complete), manualintegrate
    (rule-based) for small algebraic ones, the Risch algorithm (a decision procedure for
    transcendental integrands; it refuses algebraic ones) for the rest.
    """
    ops = sp.count_ops(f)
    if ops > _MAX_OPS_INTEGRAND:
        return None
    algebraic = _is_algebraic(f)
    attempts = (
        lambda: ratint(f, x) if f.is_rational_function(x) else None,
        lambda: manualintegrate(f, x) if algebraic and ops <= _MAX_OPS_MANUAL else None,
        lambda: sp.integrate(f, x, risch=True) if not algebraic and ops <= _MAX_OPS_RISCH else None,
    )
    for attempt in attempts:
        try:
            F = attempt()
        except (NotImplementedError, ValueError, TypeError, sp.PolynomialError):
            continue
        if (
            isinstance(F, sp.Expr)
            and not F.has(sp.Integral, sp.Piecewise)
            and _is_zero(sp.diff(F, x) - f)
        ):
            return F
    return None


def _sign_of(value: sp.Expr) -> int:
    v = sp.N(value, 30)
    if v.is_zero or v == 0:
        return 0
    if not v.is_real:
        raise InvalidArgument(f"the value {value} at the initialisation is not real.")
    return 1 if v > 0 else -1


def _close(a: sp.Expr, b: sp.Expr) -> bool:
    va, vb = complex(sp.N(a, 30)), complex(sp.N(b, 30))
    return abs(va - vb) <= 1e-20 * (1 + abs(vb))


# ---------------------------------------------------------------------------------------------
# one parameter
# ---------------------------------------------------------------------------------------------


def _monotone_interval(g: sp.Expr, w: sp.Symbol, w0: sp.Expr) -> sp.Interval:
    """The interval I ∋ w0 on which g is smooth and g' ≠ 0 (the flow never leaves it)."""
    gp = sp.diff(g, w)
    try:
        smooth = continuous_domain(g, w, sp.S.Reals).intersect(continuous_domain(gp, w, sp.S.Reals))
        critical = sp.solveset(sp.numer(sp.together(gp)), w, sp.S.Reals)
    except (NotImplementedError, ValueError, TypeError) as e:
        raise DerivationError(
            f"cannot locate the singular and critical points of {g}: {e}"
        ) from None
    if not isinstance(critical, (sp.FiniteSet, type(sp.S.EmptySet))):
        raise DerivationError(
            f"the critical points of {g} are {critical}, not a finite set; use a parametrization "
            "that is monotone between finitely many critical points."
        )
    region = smooth - critical
    pieces = region.args if isinstance(region, sp.Union) else (region,)
    for piece in pieces:
        if isinstance(piece, sp.Interval) and piece.contains(w0) == sp.true:
            return sp.Interval.open(piece.start, piece.end)
    if w0 in critical:
        raise InvalidArgument(
            f"init {w}={w0} is a critical point of {g} (g'=0): gradient flow never moves; "
            "choose another initialisation."
        )
    raise InvalidArgument(f"init {w}={w0} is not in the domain of {g} ({region}).")


def _image(g: sp.Expr, w: sp.Symbol, interval: sp.Interval) -> sp.Interval:
    """g(I) for g strictly monotone on the open interval I: limits at the ends."""
    try:
        lo = sp.limit(g, w, interval.start, "+")
        hi = sp.limit(g, w, interval.end, "-")
    except (NotImplementedError, ValueError) as e:
        raise DerivationError(
            f"cannot take the limits of {g} at the ends of {interval}: {e}"
        ) from None
    ends = (lo, hi)
    if any(e.has(sp.zoo, sp.nan, sp.AccumBounds) or not e.is_extended_real for e in ends):
        raise DerivationError(f"the range of {g} on {interval} has ends {ends}.")
    return sp.Interval.open(sp.Min(lo, hi), sp.Max(lo, hi))


def _beta_symbol(domain: sp.Set) -> sp.Symbol:
    if isinstance(domain, sp.Interval) and domain.start >= 0:
        return PaperSymbol("β", positive=True)
    if isinstance(domain, sp.Interval) and domain.end <= 0:
        return PaperSymbol("β", negative=True)
    return PaperSymbol("β", real=True)


def _sample_points(domain: sp.Set, anchor: sp.Expr) -> list[sp.Expr]:
    """A few exact points of an open interval, anchor first (to tell branches apart)."""
    pts = [anchor]
    if isinstance(domain, sp.Interval):
        a, b = domain.start, domain.end
        if a.is_finite and b.is_finite:
            pts += [a + (b - a) * sp.Rational(k, 7) for k in (1, 3, 6)]
        elif a.is_finite:
            pts += [a + sp.Rational(1, 3), a + 2, a + 11]
        elif b.is_finite:
            pts += [b - sp.Rational(1, 3), b - 2, b - 11]
        else:
            pts += [sp.Rational(-5, 2), sp.Rational(1, 3), sp.Rational(7, 2)]
    return pts


def _compact_h(raw: sp.Expr, g: sp.Expr) -> sp.Expr:
    """h(β) simplified, or a DerivationError if it has no compact form."""
    if sp.count_ops(raw) > 4 * _MAX_OPS_SIMPLIFY:
        raise DerivationError(f"h(β) for {g} has no compact closed form ({sp.count_ops(raw)} ops).")
    simple = _simplify(raw)
    candidates = [simple, sp.factor(simple)]
    if simple.has(HyperbolicFunction, TrigonometricFunction):
        candidates.append(_simplify(simple.rewrite(sp.exp)))  # cosh(asinh β)² → β² + 1
    h = min(candidates, key=sp.count_ops)
    if sp.count_ops(h) > _MAX_OPS_H:
        raise DerivationError(f"h(β) = {h} for {g} is too large to integrate.")
    return h


def _one_parameter(
    g: sp.Expr, w: sp.Symbol, w0: sp.Expr
) -> tuple[sp.Symbol, sp.Expr, sp.Set, tuple[sp.Basic, ...]]:
    interval = _monotone_interval(g, w, w0)
    domain = _image(g, w, interval)
    beta = _beta_symbol(domain)
    beta0 = g.subs(w, w0)
    invariants = tuple(r for r in (interval.as_relational(w),) if r != sp.true)
    # First try g' as a function of g itself (tanh' = 1 - tanh², exp' = exp), also through
    # an affine outer map (g = 2 tanh(w/2 - 1) + 3): an identity on all of I, no branch needed.
    gp = sp.diff(g, w)
    T = sp.Dummy("T")
    for atom in sorted(g.atoms(sp.Function), key=sp.count_ops):
        outer = g.subs(atom, T)
        # exp(exp(w)) with atom exp(w) gives exp(T): not a polynomial in T, so no affine map
        if w in outer.free_symbols or not outer.is_polynomial(T) or sp.degree(outer, T) != 1:
            continue
        (inner_value,) = sp.solve(outer - beta, T)
        direct = gp.subs(atom, inner_value)
        if w not in direct.free_symbols:
            return beta, _compact_h(direct**2, g), domain, invariants
    try:
        # check=False: SymPy's own check simplifies each candidate without bound (minutes for
        # tanh(tanh(w))); every branch is checked numerically below instead
        branches = sp.solve(sp.Eq(beta, g), w, dict=False, check=False)
    except (NotImplementedError, ValueError, TypeError):
        branches = []
    points = _sample_points(domain, beta0)
    for branch in branches if isinstance(branches, list) else []:
        if not isinstance(branch, sp.Expr) or branch.has(sp.RootOf, sp.CRootOf):
            continue
        try:
            ok = _close(branch.subs(beta, beta0), w0) and all(
                sp.N(branch.subs(beta, p), 30).is_real
                and interval.contains(sp.N(branch.subs(beta, p), 30)) == sp.true
                and _close(g.subs(w, branch.subs(beta, p)), p)
                for p in points[1:]
            )
        except (TypeError, ValueError):
            ok = False
        if ok:
            h = _compact_h(sp.diff(g, w).subs(w, branch) ** 2, g)
            return beta, h, domain, invariants
    raise DerivationError(
        f"cannot invert β = {g} on {interval} in closed form (branches found: {branches}); "
        "the derivation needs w as a function of β."
    )


# ---------------------------------------------------------------------------------------------
# two parameters
# ---------------------------------------------------------------------------------------------


def _normalise_invariant(c: sp.Expr, theta: tuple[sp.Symbol, ...]) -> sp.Expr:
    """A tidy representative of `F(c)`: constants dropped, squares completed, primitive.

    Any function of a conserved quantity is conserved; this picks `u**2 + (w - 1)**2` over
    `w - w**2/2 - u**2/2`.
    """
    c = sp.expand(c)
    c = c - c.as_independent(*theta, as_Add=True)[0]
    if not c.is_polynomial(*theta):
        return c
    poly = sp.Poly(c, *theta)
    _, prim = poly.primitive()
    if prim.LC() < 0:
        prim = -prim
    c = prim.as_expr()
    for t in theta:
        p = sp.Poly(c, t)
        if p.degree() == 2:
            a, b, rest = (p.coeff_monomial(t**k) for k in (2, 1, 0))
            if not (a.free_symbols | b.free_symbols):  # no cross terms: complete the square
                c = a * (t + b / (2 * a)) ** 2 + sp.expand(rest)
    return c - c.as_independent(*theta, as_Add=True)[0]


def _first_integral(g: sp.Expr, theta: tuple[sp.Symbol, ...]) -> sp.Expr:
    """c(u, w) with `g_u c_u + g_w c_w = 0`, by a fixed sequence of methods.

    1. The characteristic ODE `dw/du = g_w/g_u`; if it separates, `dw/du = P(u) Q(w)`, then
       `c = ∫dw/Q - ∫P du` (two antiderivatives).
    2. `sympy.pdsolve` (`1st_linear_variable_coeff`), whose answer is `F(c)`.
    Every candidate is checked: `∇c·∇g` must simplify to 0.
    """
    u, w = theta
    gu, gw = sp.together(sp.diff(g, u)), sp.together(sp.diff(g, w))
    # Clear denominators and common factors: the PDE is homogeneous, any common factor may go.
    common = sp.lcm(sp.denom(gu), sp.denom(gw))
    a, b = sp.cancel(gu * common), sp.cancel(gw * common)
    common_num = sp.gcd(a, b)
    if common_num != 0:
        a, b = sp.cancel(a / common_num), sp.cancel(b / common_num)
    if sp.count_ops(a) + sp.count_ops(b) > _MAX_OPS_PDE:
        raise DerivationError(f"the conservation PDE for {g} is too large to attempt.")

    def separable() -> sp.Expr | None:
        if a == 0:
            return u  # g does not depend on u: u itself is conserved
        sep = sp.separatevars(sp.cancel(b / a), [u, w], dict=True)
        if not sep:
            return None
        fu = _antiderivative(sep["coeff"] * sep[u], u)
        fw = _antiderivative(1 / sep[w], w)
        if fu is None or fw is None:
            return None
        cand = sp.logcombine(sp.expand_log(fw - fu, force=True), force=True)
        return cand.args[0] if isinstance(cand, sp.log) else cand  # c ↦ exp(c)

    def pde() -> sp.Expr | None:
        F, c = sp.Function("F"), sp.Function("c")
        rhs = sp.pdsolve(a * c(u, w).diff(u) + b * c(u, w).diff(w), c(u, w)).rhs
        if isinstance(rhs, sp.Function) and rhs.func == F and len(rhs.args) == 1:
            return rhs.args[0]
        return None

    for method in (separable, pde):
        try:
            cand = method()
        except (NotImplementedError, ValueError, TypeError, sp.PolynomialError):
            continue
        if cand is None or not cand.free_symbols & {u, w}:
            continue
        cand = _normalise_invariant(_simplify(cand), theta)
        if _is_zero(sp.diff(cand, u) * sp.diff(g, u) + sp.diff(cand, w) * sp.diff(g, w)):
            return cand
    raise DerivationError(
        f"no conserved quantity found for {g}: the separable characteristic ODE and pdsolve "
        "both failed."
    )


def _is_algebraic(e: sp.Expr) -> bool:
    """Built from symbols and numbers by + - * / and rational powers only."""
    return (
        not e.atoms(sp.Function)
        and all(p.exp.is_Rational for p in e.atoms(sp.Pow) if p.base.free_symbols)
        and not any(p.exp.free_symbols for p in e.atoms(sp.Pow))
    )


def _sign_relation(base: sp.Expr, positive: bool) -> sp.Basic:
    """`base > 0` (or `< 0`), as `w < 1` when base is linear in one symbol."""
    rel = base > 0 if positive else base < 0
    (t,) = base.free_symbols if len(base.free_symbols) == 1 else (None,)
    if t is not None and sp.degree(base, t) == 1:
        a, b = sp.Poly(base, t).all_coeffs()
        root = -b / a
        return (t > root) if (a > 0) == positive else (t < root)
    return rel


def _two_parameters(
    g: sp.Expr, theta: tuple[sp.Symbol, ...], theta0: tuple[sp.Expr, ...], h_theta: sp.Expr
) -> tuple[sp.Symbol, sp.Expr, sp.Symbol, sp.Expr, sp.Expr, sp.Set, tuple[sp.Basic, ...]]:
    # sympy.solve on a transcendental 2×2 system can run for many minutes: algebraic only.
    if not _is_algebraic(g):
        raise DerivationError(
            f"β = {g} is not algebraic in the parameters; two-parameter parametrizations must "
            "be built from + - * / and rational powers."
        )
    xi = _first_integral(g, theta)
    if not _is_algebraic(xi):
        raise DerivationError(f"the conserved quantity c = {xi} of β = {g} is not algebraic.")
    at0 = dict(zip(theta, theta0, strict=True))
    c0 = _simplify(xi.subs(at0))
    sign = _sign_of(c0)
    # The value's sign is an assumption SymPy uses (sqrt(c**2) = c); c = 0 is substituted.
    c = sp.Symbol("c", positive=True) if sign > 0 else sp.Symbol("c", negative=True)
    if sign == 0:
        c = sp.Symbol("c", real=True)
    beta = PaperSymbol("β", real=True)
    beta0 = _simplify(g.subs(at0))
    c_value: sp.Expr = c if sign != 0 else sp.S.Zero
    try:
        # check=False: SymPy's check runs powsimp without bound (sqrt(u)*w); the branch is
        # checked numerically at the initialisation below, and ψ''·h = 1 after
        branches = sp.solve([beta - g, c_value - xi], list(theta), dict=True, check=False)
    except (NotImplementedError, ValueError, TypeError):
        branches = []
    h: sp.Expr | None = None
    for branch in branches:
        if len(branch) != 2:
            continue
        at = {beta: beta0, c: c0}
        try:
            ok = all(_close(branch[t].subs(at), t0) for t, t0 in at0.items())
        except (TypeError, ValueError):
            ok = False
        if ok:
            h = _compact_h(h_theta.subs(branch), g)
            break
    if h is None:
        raise DerivationError(
            f"cannot express h = {h_theta} through β = {g} and c = {xi} on the branch of the "
            f"initialisation {at0}."
        )
    try:
        domain = continuous_domain(h, beta, sp.S.Reals).intersect(
            sp.solveset(h > 0, beta, sp.S.Reals)
        )
    except (NotImplementedError, ValueError, TypeError):
        # Correct but implicit; the numerics then guard every evaluation of h instead.
        domain = sp.ConditionSet(beta, h > 0, sp.S.Reals)
    # β cannot cross a zero of h (a critical point of g on the level set is stationary for the
    # θ-flow) nor leave the branch: it stays in the piece of the domain that holds β(0).
    pieces = domain.args if isinstance(domain, sp.Union) else (domain,)
    for piece in pieces:
        if isinstance(piece, sp.Interval) and piece.contains(beta0) == sp.true:
            domain = piece
            signed = _beta_symbol(piece)
            if signed.assumptions0 != beta.assumptions0:
                h = _compact_h(h.subs(beta, signed), g)
                beta = signed
            break
    invariants: list[sp.Basic] = [sp.Eq(xi, c0)]
    # β stays finite, so no denominator factor of g changes sign.
    for base, _ in sp.factor_list(sp.denom(sp.together(g)))[1]:
        if base.free_symbols and not base.is_nonnegative:
            invariants.append(_sign_relation(base, _sign_of(base.subs(at0)) > 0))
    # c = c0 ≠ 0 for all time, so no factor of a product c vanishes.
    factors = [f for f, _ in sp.factor_list(xi)[1] if f.free_symbols]
    if sign != 0 and sp.denom(sp.together(xi)) == 1 and len(factors) > 1:
        for base in factors:
            if not base.is_nonnegative and not (-base).is_nonnegative:
                invariants.append(_sign_relation(base, _sign_of(base.subs(at0)) > 0))
    return beta, h, c, c0, xi, domain, tuple(invariants)


# ---------------------------------------------------------------------------------------------
# potential
# ---------------------------------------------------------------------------------------------


def _real_logs(F: sp.Expr, beta: sp.Symbol, domain: sp.Set) -> sp.Expr:
    """Replace `log(a)` by `log(-a)` where a < 0 on the domain: the same antiderivative up to the
    constant iπ, but real (ratint writes `log(β - 1)` for β ∈ (-1, 1))."""
    points = [p for p in _sample_points(domain, sp.S.Zero)[1:] if p.is_real]
    if not points:
        return F
    fixes = {}
    for lg in F.atoms(sp.log):
        values = [sp.N(lg.args[0].subs(beta, p), 20) for p in points]
        if all(v.is_real and v < 0 for v in values):
            fixes[lg] = sp.log(-lg.args[0])
    return F.xreplace(fixes) if fixes else F


def _potential(h: sp.Expr, beta: sp.Symbol, domain: sp.Set) -> tuple[sp.Expr, sp.Expr, bool]:
    """(ψ', ψ, closed_form) with ψ'' = 1/h.

    ψ = β ψ' - ∫ β/h dβ (integration by parts): ∫β/h is often elementary when ∫ψ' is not
    attempted successfully (ψ' may be transcendental, 1/h algebraic).
    """
    inv = _simplify(1 / h)
    dpsi = _antiderivative(inv, beta)
    if dpsi is not None:
        dpsi = _real_logs(dpsi, beta, domain)
    closed = dpsi is not None
    if dpsi is None:
        dpsi = sp.Integral(inv.subs(beta, _S), (_S, BETA0, beta))
    moment = _antiderivative(_simplify(beta * inv), beta)
    if moment is not None:
        moment = _real_logs(moment, beta, domain)
    if moment is None:
        closed = False
        moment = sp.Integral((_S * inv.subs(beta, _S)), (_S, BETA0, beta))
    psi = beta * dpsi - moment
    if closed:
        psi = _simplify(psi)
    return dpsi, psi, closed


def _check_potential(
    h: sp.Expr,
    psi: sp.Expr,
    beta: sp.Symbol,
    domain: sp.Set,
    anchor: sp.Expr,
    extra: dict[Any, Any],
) -> None:
    """ψ''·h = 1: symbolically when SymPy can, else at sample points of the domain."""
    second = sp.diff(psi, beta, 2)
    if not second.has(sp.Integral) and _is_zero(second * h - 1):
        return
    for p in _sample_points(domain, anchor):
        at = {beta: p, BETA0: anchor, **extra}
        value = sp.N((second * h).subs(at), 30)
        if not _close(value, 1):
            raise DerivationError(f"ψ''·h = {value} ≠ 1 at β = {p}; the potential is wrong.")


# ---------------------------------------------------------------------------------------------
# entry point
# ---------------------------------------------------------------------------------------------


def _derive(
    g: sp.Expr, theta: tuple[sp.Symbol, ...], theta0: tuple[sp.Rational, ...]
) -> BiasDerivation:
    at0 = dict(zip(theta, theta0, strict=True))
    beta0 = sp.simplify(g.subs(at0))
    if beta0.has(sp.zoo, sp.oo, -sp.oo, sp.nan) or not sp.N(beta0, 30).is_real:
        raise InvalidArgument(f"g = {g} is not finite and real at the initialisation {at0}.")
    grad = [sp.diff(g, t) for t in theta]
    h_theta = _simplify(sum((d**2 for d in grad), sp.S.Zero))
    if all(_sign_of(d.subs(at0)) == 0 for d in grad):
        raise InvalidArgument(
            f"the initialisation {at0} is a critical point of g = {g} (∇g = 0): gradient flow "
            "never moves; choose another init."
        )
    conserved = conserved_symbol = conserved_value = None
    extra: dict[Any, Any] = {}
    if len(theta) == 1:
        beta, h, domain, invariants = _one_parameter(g, theta[0], theta0[0])
    else:
        beta, h, c, c0, xi, domain, invariants = _two_parameters(g, theta, theta0, h_theta)
        conserved, conserved_symbol, conserved_value = xi, c, c0
        extra = {c: c0}
    dpsi, psi, closed = _potential(h, beta, domain)
    _check_potential(h, psi, beta, domain, beta0, extra)
    q = psi - dpsi.subs(beta, BETA0) * beta
    if closed:
        q = sp.expand(q) if sp.count_ops(q) <= _MAX_OPS_SIMPLIFY else q
    return BiasDerivation(
        expression=g,
        parameters=theta,
        init=tuple(theta0),
        beta=beta,
        beta0_value=beta0,
        h_theta=h_theta,
        conserved=conserved,
        conserved_symbol=conserved_symbol,
        conserved_value=conserved_value,
        h=h,
        dpsi=dpsi,
        psi=psi,
        q=q,
        domain=domain,
        invariants=invariants,
        closed_form=closed,
    )


#: what the derivation handles, for the message when SymPy cannot take one of its steps
SUPPORTED = (
    "supported: one parameter β = g(w), smooth and strictly monotone between finitely many "
    "critical points and invertible in closed form (1/(1-w), tanh(w), exp(w), w**3 + w, "
    "log(1 + exp(w))), or two parameters built from + - * / and rational powers (u/(1-w), "
    "u**2-v**2)"
)


def _derive_or_explain(
    g: sp.Expr, theta: tuple[sp.Symbol, ...], theta0: tuple[sp.Rational, ...]
) -> BiasDerivation:
    """:func:`_derive`, with SymPy's own failures on a parametrization outside the method
    (a polynomial step on a non-polynomial, an unimplemented solve or limit) named as a
    :class:`DerivationError` that says what is supported."""
    try:
        return _derive(g, theta, theta0)
    except DerivationError as e:
        if "supported:" in str(e):
            raise
        raise DerivationError(f"{e} ({SUPPORTED}).") from None
    except (sp.polys.polyerrors.BasePolynomialError, NotImplementedError, RecursionError) as e:
        raise DerivationError(
            f"the implicit-bias derivation cannot handle β = {g}: SymPy's "
            f"{type(e).__name__} in one of its steps; {SUPPORTED}."
        ) from None


def derive_bias(
    expression: str | sp.Expr,
    parameters: Sequence[str] | None = None,
    *,
    init: Any = "1/2",
) -> BiasDerivation:
    r"""Derive h, the conserved quantity, ψ, q and the domain for `β = g(θ)`.

    Args:
      expression: g as text (parsed by the safe parser, never `sympify`) or a SymPy expression
        in real symbols.
      parameters: the trainable names in order (`["w"]`, `["u", "w"]`); default: all names,
        sorted.
      init: θ(0), one number for every parameter or one per parameter (`"0.5"`, `(1, 0.25)`).
        Keyword-only.

    Returns:
      A `BiasDerivation`; results are cached on disk (see `deqrmt.symbolic._cache`).

    Raises:
      InvalidArgument: bad text, parameter names, or an initialisation where g is undefined or
        critical.
      DerivationError: SymPy could not invert g, find c, or locate the domain.

    Example:
      >>> d = derive_bias("1/(1-w)")
      >>> d.h, d.q_at_init, d.domain
      (β**4, β/24 + 1/(6*β**2), Interval.open(0, oo))
    """
    if isinstance(expression, str):
        g, theta = parse_parametrization(expression, parameters)
    elif isinstance(expression, sp.Expr):
        symbols = sorted(expression.free_symbols, key=lambda s: s.name)
        by_name = {s.name: s for s in symbols if isinstance(s, sp.Symbol)}
        names = list(parameters) if parameters is not None else sorted(by_name)
        if set(names) != set(by_name) or len(names) not in (1, 2):
            raise InvalidArgument(
                f"parameters={names!r} must name the free symbols {sorted(by_name)} (one or two)."
            )
        if any(not by_name[n].is_real for n in names):
            raise InvalidArgument("the parameters must be real symbols: Symbol('w', real=True).")
        g, theta = expression, tuple(by_name[n] for n in names)
    else:
        raise InvalidArgument(f"expression={expression!r} is neither text nor a SymPy expression.")
    if sp.count_ops(g) > _MAX_OPS_G:
        raise InvalidArgument(
            f"{g} is too large ({sp.count_ops(g)} operations; limit {_MAX_OPS_G})."
        )
    theta0 = parse_init(init, len(theta))
    request = f"{sp.srepr(g)}|{[t.name for t in theta]}|{[str(v) for v in theta0]}"
    return cached(
        "bias",
        request,
        lambda: _derive_or_explain(g, theta, theta0),
        BiasDerivation,
        symbols=_entry_symbols(theta),
    )


def _entry_symbols(theta: tuple[sp.Symbol, ...]) -> tuple[sp.Symbol, ...]:
    """Every symbol a "bias" entry for ``theta`` may hold (checked when read back): θ, β and
    the conserved value c with each sign assumption, β0, the quadrature variable."""
    signs = ({"positive": True}, {"negative": True}, {"real": True})
    betas = (PaperSymbol("β", **a) for a in signs)
    return (*theta, BETA0, _S, *betas, *(sp.Symbol("c", **a) for a in signs))


# ---------------------------------------------------------------------------------------------
# output
# ---------------------------------------------------------------------------------------------


def domain_text(domain: sp.Set) -> str:
    """The domain as a `sympify`-able string (the real line as `Interval(-oo, oo)`).

    Example:
      >>> domain_text(sp.S.Reals), domain_text(sp.Interval.open(0, sp.oo))
      ('Interval(-oo, oo)', 'Interval.open(0, oo)')
    """
    return re.sub(r"\bReals\b", "Interval(-oo, oo)", sp.sstr(domain))


def bias_latex(d: BiasDerivation) -> str:
    r"""The derivation as a LaTeX `align*` block (needs amsmath).

    Example:
      >>> print(bias_latex(derive_bias("1/(1-w)")).splitlines()[1])
      \beta &= \frac{1}{1 - w}, \qquad w(0) = \frac{1}{2},\ \beta(0) = 2 \\
    """
    names = {d.beta: r"\beta", BETA0: r"\beta_0"}

    def lx(e: Any) -> str:
        return sp.latex(e, symbol_names=names)

    inits = ",\\ ".join(f"{lx(t)}(0) = {lx(v)}" for t, v in zip(d.parameters, d.init, strict=True))
    lines = [
        "\\begin{align*}",
        f"\\beta &= {lx(d.expression)}, \\qquad {inits},\\ \\beta(0) = {lx(d.beta0_value)} \\\\",
        f"h &= |\\nabla_\\theta \\beta|^2 = {lx(d.h_theta)} \\\\",
    ]
    if d.conserved is not None and d.conserved_symbol is not None:
        lines.append(
            f"{lx(d.conserved_symbol)} &= {lx(d.conserved)} \\quad \\text{{(conserved)}}, "
            f"\\qquad {lx(d.conserved_symbol)}(0) = {lx(d.conserved_value)} \\\\"
        )
    lines += [
        f"h(\\beta) &= {lx(d.h)} \\\\",
        f"\\psi'(\\beta) &= {lx(d.dpsi)} \\\\",
        f"\\psi(\\beta) &= {lx(d.psi)}, \\qquad \\psi'' = 1/h \\\\",
        f"q(\\beta) &= \\psi(\\beta) - \\psi'(\\beta_0)\\,\\beta = {lx(d.q)} \\\\",
        f"\\beta &\\in {lx(d.domain)} \\quad \\text{{(preserved; $q$ strictly convex)}}",
        "\\end{align*}",
    ]
    return "\n".join(lines) + "\n"

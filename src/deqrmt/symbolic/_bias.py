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

Where each part lives: the record :mod:`._bias_records`, the input :mod:`._bias_input`, the
bounded steps :mod:`._bias_steps`, step 1 and 3 for one parameter :mod:`._bias_monotone` and
for two :mod:`._bias_conserved`, step 2 :mod:`._bias_potential`; this module runs them
(:func:`derive_bias`, cached) and writes the result (:func:`bias_latex`, :func:`domain_text`).

References:
  Woodworth, Gunasekar, Lee, Moroshko, Savarese, Golan, Soudry, Srebro, "Kernel and Rich Regimes
  in Overparametrized Models", COLT 2020, https://arxiv.org/abs/2002.09277 (Theorem 1).
  Sun, Li, Wang, Zhang, Li, Lin, "Separation and Bias of Deep Equilibrium Models on
  Expressivity and Learning Dynamics", NeurIPS 2024, Theorem 3 and the OpenReview discussion.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import sympy as sp

from .._errors import DerivationError, InvalidArgument
from ._bias_conserved import _two_parameters
from ._bias_input import MAX_INIT as MAX_INIT
from ._bias_input import MAX_INIT_DIGITS as MAX_INIT_DIGITS
from ._bias_input import parse_init, parse_parametrization
from ._bias_monotone import _one_parameter
from ._bias_potential import _check_potential as _check_potential
from ._bias_potential import _potential
from ._bias_records import _S, BETA0, BiasDerivation
from ._bias_steps import _MAX_OPS_G, _MAX_OPS_SIMPLIFY, _sign_of, _simplify
from ._cache import cached
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

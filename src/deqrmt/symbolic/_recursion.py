r"""Derivation of the CK/NTK coefficient formulas from the kernel map, by SymPy.

Nothing here is transcribed from the paper.  For two samples i ≠ j the pre-activations
(u, v) are centered Gaussians with Var u = τ² + δ_i, Var v = τ² + δ_j and Cov = c, where in
the GMM regime c = O(p^{-1/2}) and δ = O(p^{-1/2}).  A second-order Taylor expansion of the
bivariate expectation uses, at (c, δ_i, δ_j) = 0,

    ∂^a_c ∂^b_{δ_i} ∂^e_{δ_j} E[f(u) g(v)] = 2^{-(b+e)} E[f^{(a+2b)}(τξ)] E[g^{(a+2e)}(τξ)]      (heat eq.)

The off-diagonal kernel is written on the ansatz basis {X, S, T} with
X = x_iᵀx_j (order ε), S = s_i s_j with s_i = t_a/√p + ψ_i (order ε²), T = T_ab/p (order ε²),
and the diagonal fluctuation δ_i = α₄ s_i (order ε).  Products reduce by
X² → T (self-averaging of (x_iᵀx_j)²), s_i s_j → S, and X·s_i → 0 (a diagonal-times-XᵀX matrix
of vanishing operator norm).  Any other term of order ≤ ε² (a constant, a lone s_i, s_i²)
would not be captured by the ansatz and raises :class:`~deqrmt.DerivationError`.  Matching
the coefficients of X, S, T (and of s_i on the diagonal) gives linear equations that SymPy
solves: fixed-point equations for the DEQ, one-step recursions for an explicit layer.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Mapping

import sympy as sp

from .. import _arguments
from .._errors import DerivationError, UnknownTrainable
from ._cache import cached
from ._symbols import MOMENT_NAMES, PREVIOUS, SIGMA_A2, SIGMA_B2, TAU0, UNKNOWNS, moment_symbol

__all__ = [
    "FixedPointMap",
    "derive_fixed_point",
    "diagonal_expectation",
    "MomentSymbols",
    "DEQFormulas",
    "LayerFormulas",
    "derive_deq",
    "TRAINABLE_SETS",
    "derive_layer",
    "cross_expectation",
    "reduce_to_ansatz",
    "SIGMA_A2",
    "SIGMA_B2",
    "TAU0",
]

# SIGMA_A2, SIGMA_B2, TAU0 and every other symbol a result holds: ._symbols (LaTeX as in the paper)
EPS = sp.Symbol("epsilon")
X_, S_, T_, SI, SJ = sp.symbols("X S T s_i s_j")


@dataclasses.dataclass(frozen=True)
class MomentSymbols:
    """Named symbols for the Gaussian moments of one activation at one scale τ.

    ``mu[k]`` is E[φ^{(k)}(τξ)] (weak), ``sq`` E[φ²], ``sq2`` E[(φ²)''], ``dsq`` E[φ'²].
    """

    mu: tuple[sp.Symbol, ...]
    sq: sp.Symbol
    sq2: sp.Symbol
    dsq: sp.Symbol

    @staticmethod
    def make(tag: str = "") -> MomentSymbols:
        """The moment symbols (printing as E[φ'(τξ)] …); with a ``tag``, plain SymPy symbols
        ``mu1{tag}`` … apart from them."""
        if not tag:
            mu = tuple(moment_symbol("phi" if k == 0 else f"d{k}") for k in range(6))
            return MomentSymbols(mu, *(moment_symbol(n) for n in ("sq", "sq2", "dsq")))
        names = {n: (s, a) for n, (s, a, _) in MOMENT_NAMES.items()}
        plain = [sp.Symbol(f"{names[n][0]}{tag}", **names[n][1]) for n in MOMENT_NAMES]
        return MomentSymbols(tuple(plain[:6]), *plain[6:])

    def names(self) -> dict[sp.Symbol, str]:
        """Symbol → moment name used by :func:`deqrmt.symbolic.moment_set`."""
        out = {m: ("phi" if k == 0 else f"d{k}") for k, m in enumerate(self.mu)}
        out.update({self.sq: "sq", self.sq2: "sq2", self.dsq: "dsq"})
        return out


def cross_expectation(
    f_mu: tuple[sp.Expr, ...], g_mu: tuple[sp.Expr, ...], c: sp.Expr, di: sp.Expr, dj: sp.Expr
) -> sp.Expr:
    """Second-order expansion of E[f(u) g(v)] in (c, δ_i, δ_j) by the heat-equation rule."""
    total = sp.S.Zero
    for a, b, e in itertools.product(range(3), repeat=3):
        if a + b + e > 2:
            continue
        coef = sp.Rational(1, 2 ** (b + e)) / (sp.factorial(a) * sp.factorial(b) * sp.factorial(e))
        total += coef * f_mu[a + 2 * b] * g_mu[a + 2 * e] * c**a * di**b * dj**e
    return total


def diagonal_expectation(g_mu: tuple[sp.Expr, ...], delta: sp.Expr, order: int = 1) -> sp.Expr:
    """Expansion of E[g(u)], Var u = τ² + δ, to ``order`` in δ by the heat-equation rule.

    ∂_δ E[g(√(τ²+δ) ξ)] = E[g''(τξ)]/2, so E[g(u)] = Σ_b δ^b E[g^{(2b)}(τξ)] / (2^b b!).
    ``g_mu[k]`` is E[g^{(k)}(τξ)].  This is :func:`cross_expectation` with the second factor 1.
    """
    one = (sp.S.One,) + (sp.S.Zero,) * (len(g_mu) - 1)
    t = sp.Dummy("t")
    poly = sp.Poly(cross_expectation(g_mu, one, sp.S.Zero, t, sp.S.Zero), t)
    kept = sum((coef * t**k for (k,), coef in poly.terms() if k <= order), sp.S.Zero)
    return sp.expand(kept.subs(t, delta))


def _square_moments(m: MomentSymbols) -> tuple[sp.Expr, ...]:
    """E[(φ²)^{(k)}] for k = 0..4 in the symbols ``m`` knows (odd and 4th orders as dummies).

    Only orders the expansions actually keep may survive; a dummy left in a result means a
    derivation needed a moment the engine does not evaluate, and is caught by the tests.
    """
    return (m.sq, sp.Symbol("sq1_unused"), m.sq2, sp.Symbol("sq3_unused"), sp.Symbol("sq4_unused"))


def _prime_square_moments(m: MomentSymbols) -> tuple[sp.Expr, ...]:
    """E[(φ'²)^{(k)}]: only the order-0 moment E[φ'²] is a symbol the engine evaluates."""
    return (m.dsq,) + tuple(sp.Symbol(f"dsq{k}_unused") for k in range(1, 5))


def centered_moments(m: MomentSymbols, c: sp.Expr) -> dict[sp.Symbol, sp.Expr]:
    """Moments of φ_c = φ − c in the raw moments of φ, by linearity of E and of d/dx.

    E[φ_c] = E[φ] − c, E[φ_c^{(k)}] = E[φ^{(k)}] (k ≥ 1), E[φ_c²] = E[φ²] − 2cE[φ] + c²,
    E[(φ_c²)''] = E[(φ²)''] − 2cE[φ''], E[φ_c'²] = E[φ'²]: each is the expectation of the
    expanded polynomial (P − c)^j in P = φ, with P^j ↦ the raw moment of φ^j.
    """
    p = sp.Symbol("P")
    out: dict[sp.Symbol, sp.Expr] = {}
    # order-0 moments of φ_c^j: expand (P − c)^j and map P^j to the raw moment of φ^j
    raw0 = {0: sp.S.One, 1: m.mu[0], 2: m.sq}
    # order-2 moments of (φ_c^j)'': constants vanish, P ↦ E[φ''], P² ↦ E[(φ²)'']
    raw2 = {0: sp.S.Zero, 1: m.mu[2], 2: m.sq2}
    for j, target0, target2 in ((1, m.mu[0], m.mu[2]), (2, m.sq, m.sq2)):
        poly = sp.Poly(sp.expand((p - c) ** j), p)
        out[target0] = sum((coef * raw0[k] for (k,), coef in poly.terms()), sp.S.Zero)
        out[target2] = sum((coef * raw2[k] for (k,), coef in poly.terms()), sp.S.Zero)
    for k in (1, 3, 4, 5):
        out[m.mu[k]] = m.mu[k]  # derivatives of order ≥ 1 do not see the constant
    out[m.dsq] = m.dsq
    return out


@dataclasses.dataclass(frozen=True)
class FixedPointMap:
    r"""The DEQ's variance map q ↦ F(q) and F'(q), derived (ICML 2024, τ* of Theorem 1).

    ``F(q) = σ_a² E[φ_c²(√q ξ)] + σ_b² τ0²``: the diagonal of Λ = σ_a² G + σ_b² XᵀX at its
    fixed point, from :func:`diagonal_expectation` at order 0.  With ``center=True`` the
    constant is φ's own mean at the same scale, c = E[φ(√q ξ)] (so F uses E[φ²] − E[φ]²); F' is
    d/dq of F with every raw moment differentiated by the heat rule d/dq E[g(√q ξ)] =
    E[g''(√q ξ)]/2.  All expressions are in the RAW moments ``m`` of φ at τ = √q and in
    :data:`SIGMA_A2`, :data:`SIGMA_B2`, :data:`TAU0`.

    Attributes:
      m: raw moment symbols (``m.mu[0]`` is E[φ], ``m.mu[2]`` E[φ''], ``m.sq``, ``m.sq2``, …).
      F, dF: the map and its derivative in q.
      center: the centering constant c (E[φ] or 0).
      centered: moment symbol of φ_c (same names as ``m``) → expression in raw moments.
      needs: the raw moment names F and dF use (for the evaluator).
    """

    m: MomentSymbols
    F: sp.Expr
    dF: sp.Expr
    center: sp.Expr
    centered: Mapping[sp.Symbol, sp.Expr]
    needs: tuple[str, ...]


def derive_fixed_point(*, center: bool = True, input_injection: bool = True) -> FixedPointMap:
    """Derive the variance map F(q), its derivative F'(q) and the centering identities.

    F(q) = σ_a² E[φ_c²(√q ξ)] + σ_b² τ0², whose attracting fixed point is τ*²; memoised.

    Args:
      center: center φ at its own mean at the same scale, c = E[φ(√q ξ)] (the engine's
        default); False: F uses φ as given.
      input_injection: False drops the σ_b² τ0² term.

    Returns:
      A :class:`~deqrmt.symbolic.FixedPointMap` with ``F``, ``dF``, ``center`` and
      ``centered`` as SymPy expressions in the raw moment symbols (``mu0`` = E[φ(√q ξ)],
      ``sq`` = E[φ²], ``sq2`` = E[(φ²)''], …) and ``needs``, the moments they use.

    Example:
      >>> fp = derive_fixed_point()
      >>> fp.F                                  # σ_a² (E[φ²] − E[φ]²) + σ_b² τ0²
      -mu0**2*sigma_a2 + sigma_a2*sq + sigma_b2*tau_0**2
      >>> fp.needs
      ('d2', 'phi', 'sq', 'sq2')
    """
    return _derive_fixed_point(
        center=_arguments.boolean(center, "center"),
        input_injection=_arguments.boolean(input_injection, "input_injection"),
    )


@functools.lru_cache(maxsize=4)
def _derive_fixed_point(*, center: bool, input_injection: bool) -> FixedPointMap:
    m = MomentSymbols.make()
    q = sp.Symbol("q", positive=True)
    c = m.mu[0] if center else sp.S.Zero
    cm = centered_moments(m, c)
    sb2 = SIGMA_B2 if input_injection else sp.S.Zero
    # Λ_ii = σ_a² G_ii + σ_b² ‖x_i‖², G_ii = E[φ_c(u_i)²]: order 0 of the diagonal expansion.
    g_ii = diagonal_expectation(tuple(cm.get(s, s) for s in _square_moments(m)), sp.S.Zero, 0)
    F = sp.expand(SIGMA_A2 * g_ii + sb2 * TAU0**2)
    # d/dq: raw moments are functions of q; the heat rule shifts the derivative order by 2.
    funcs = {s: sp.Function(s.name)(q) for s in (*m.mu, m.sq, m.sq2, m.dsq)}
    rule = {funcs[m.mu[k]].diff(q): m.mu[k + 2] / 2 for k in range(4)}
    rule[funcs[m.sq].diff(q)] = m.sq2 / 2
    dF = F.xreplace(funcs).diff(q).xreplace(rule).xreplace({v: k for k, v in funcs.items()})
    if dF.has(sp.Derivative):
        raise DerivationError(f"F'(q) = {dF} needs a moment the heat rule cannot shift.")
    names = m.names()
    needs = tuple(sorted({names[s] for s in (F.free_symbols | dF.free_symbols) if s in names}))
    return FixedPointMap(m, F, sp.expand(dF), c, cm, needs)


def reduce_to_ansatz(expr: sp.Expr) -> dict[sp.Symbol, sp.Expr]:
    """Truncate at order ε², reduce products, and return the coefficients of X, S, T."""
    poly = sp.Poly(sp.expand(expr), EPS, X_, S_, T_, SI, SJ)
    out: dict[sp.Symbol, sp.Expr] = {X_: sp.S.Zero, S_: sp.S.Zero, T_: sp.S.Zero}
    for (ke, kx, ks, kt, ki, kj), coeff in poly.terms():
        if ke > 2:
            continue
        monom = (kx, ks, kt, ki, kj)
        if monom == (1, 0, 0, 0, 0):
            out[X_] += coeff
        elif monom in ((0, 1, 0, 0, 0), (0, 0, 0, 1, 1)):
            out[S_] += coeff
        elif monom in ((0, 0, 1, 0, 0), (2, 0, 0, 0, 0)):
            out[T_] += coeff
        elif monom in ((1, 0, 0, 1, 0), (1, 0, 0, 0, 1)):
            continue  # D_s XᵀX: operator norm O(p^{-1/2})
        elif sp.expand(coeff) != 0:
            raise DerivationError(
                f"term {coeff}·{sp.Mul(*[v**k for v, k in zip((X_, S_, T_, SI, SJ), monom, strict=True)])} "
                "at order ≤ ε² is outside the ansatz {X, S, T}; is the activation centered?"
            )
    return out


def _off_diag(c1: sp.Expr, c2: sp.Expr, c3: sp.Expr) -> sp.Expr:
    return EPS * c1 * X_ + EPS**2 * (c2 * S_ + c3 * T_)


@dataclasses.dataclass(frozen=True)
class DEQFormulas:
    r"""Fixed-point formulas of the DEQ's CK and NTK (ICML 2024, Theorems 1–2, derived).

    All expressions are in :data:`SIGMA_A2`, :data:`SIGMA_B2`, :data:`TAU0` and the moment
    symbols ``m`` of the centered φ at τ*.  ``tau_sq_map`` is the right side of
    τ*² = σ_a² E[φ²(τ*ξ)] + σ_b² τ0²; ``kappa_sq`` is κ*², the NTK diagonal.
    """

    m: MomentSymbols
    tau_sq_map: sp.Expr
    gamma_sq: sp.Expr
    alpha: tuple[sp.Expr, sp.Expr, sp.Expr, sp.Expr]
    beta: tuple[sp.Expr, sp.Expr, sp.Expr]
    kappa_sq: sp.Expr
    trainable: tuple[str, ...] = ("a", "A")
    input_injection: bool = True
    #: the same results in the paper's nested form (α*₂ through α*₄, β*₃ through β*₁, …)
    structured: Mapping[str, sp.Expr] = dataclasses.field(default_factory=dict)

    def as_dict(self) -> dict[str, sp.Expr]:
        return {
            "gamma_star": sp.sqrt(self.gamma_sq),
            "alpha_1": self.alpha[0],
            "alpha_2": self.alpha[1],
            "alpha_3": self.alpha[2],
            "alpha_4": self.alpha[3],
            "beta_1": self.beta[0],
            "beta_2": self.beta[1],
            "beta_3": self.beta[2],
            "kappa_star": sp.sqrt(self.kappa_sq),
        }


@dataclasses.dataclass(frozen=True)
class LayerFormulas:
    r"""One explicit layer x^{(l)} = σ_l(W_l x^{(l−1)})/√m (ICML 2024, Theorem 3, derived).

    Expressions in the previous layer's ``prev`` symbols (tau, alpha_1..4, beta_1..3, kappa)
    and the moments ``m`` of the centered σ_l at τ̃_{l−1}.  NTK: Θ^{(l)} = Σ^{(l)} + Θ^{(l−1)}∘Σ̇^{(l)},
    every layer trainable.
    """

    m: MomentSymbols
    prev: Mapping[str, sp.Symbol]
    tau_sq: sp.Expr
    alpha: tuple[sp.Expr, sp.Expr, sp.Expr, sp.Expr]
    beta: tuple[sp.Expr, sp.Expr, sp.Expr]
    kappa_sq: sp.Expr


def _solve_linear(unknown: sp.Symbol, rhs: sp.Expr) -> sp.Expr:
    """Solve ``unknown = rhs`` where rhs is affine in ``unknown`` (a fixed-point equation)."""
    coeff = sp.diff(rhs, unknown)
    if sp.diff(coeff, unknown) != 0:
        raise DerivationError(f"{unknown} = {rhs} is not linear in {unknown}.")
    rest = sp.expand(rhs - coeff * unknown)
    return rest / (1 - coeff)


def _centered(expr: sp.Expr, m: MomentSymbols) -> sp.Expr:
    return expr.subs(m.mu[0], 0)


#: Trainable-parameter sets of the DEQ f(x) = aᵀz*(x) whose NTK limit can be derived.
TRAINABLE_SETS: dict[str, tuple[str, ...]] = {
    "a,A": ("a", "A"),  # the paper's K* = G*/(1 − Ġ*)
    "a,A,B": ("a", "A", "B"),
    "A,B": ("A", "B"),
    "a": ("a",),
    "A": ("A",),
}


def derive_deq(
    *, input_injection: bool = True, trainable: tuple[str, ...] | str = ("a", "A")
) -> DEQFormulas:
    """Derive the DEQ's CK and NTK formulas from the kernel map (ICML 2024, Theorems 1–2).

    The second-order expansion of E[φ(u)φ(v)] (heat-equation rule, see the module docstring)
    matched on the ansatz {XᵀX, ssᵀ, T} at the fixed point Λ = σ_a² G + σ_b² XᵀX; memoised in
    memory and on disk (the cache).

    Args:
      input_injection: False derives the DEQ with σ_b = 0 (no input injection).
      trainable: the NTK's parameter set, a subset of ``("a", "A", "B")`` in that order.

    Returns:
      A :class:`~deqrmt.symbolic.DEQFormulas`: ``gamma_sq``, ``alpha`` (α*₁..₄), ``beta``
      (β*₁..₃), ``kappa_sq`` and ``tau_sq_map`` as SymPy expressions in σ_a², σ_b², τ0 and the
      moment symbols ``m`` (``mu1`` = E[φ'(τ*ξ)], ``sq`` = E[φ²], ``dsq`` = E[φ'²], …);
      ``as_dict()`` keys them like :func:`deq_coefficients`.

    Raises:
      UnknownTrainable: ``trainable`` is empty or names something outside (a, A, B).
      DerivationError: a term outside the ansatz (a bug in the derivation, never user input).

    Example:
      >>> f = derive_deq()
      >>> f.alpha[0]                                   # α*₁ = σ_b² E[φ']² / (1 − σ_a² E[φ']²)
      -mu1**2*sigma_b2/(mu1**2*sigma_a2 - 1)
      >>> f.kappa_sq                                   # κ*² = E[φ²] / (1 − σ_a² E[φ'²])
      -sq/(dsq*sigma_a2 - 1)
    """
    return _derive_deq_memo(
        input_injection=_arguments.boolean(input_injection, "input_injection"),
        trainable=_arguments.name_set(
            trainable,
            "trainable",
            ("a", "A", "B"),
            error=UnknownTrainable,
            hint="choose a non-empty subset of a (readout), A (recurrent weights), B (input "
            "weights), e.g. ('a', 'A') or ('a', 'A', 'B').",
        ),
    )


@functools.lru_cache(maxsize=16)
def _derive_deq_memo(
    *, input_injection: bool = True, trainable: tuple[str, ...] = ("a", "A")
) -> DEQFormulas:
    trainable = tuple(sorted(set(trainable), key="aAB".index))
    return cached(
        "derive-deq",
        f"injection={input_injection}|trainable={trainable}",
        lambda: _derive_deq(input_injection, trainable),
        DEQFormulas,
        symbols=_entry_symbols(),
    )


def _entry_symbols() -> tuple[sp.Symbol, ...]:
    """Every symbol a derive-deq or derive-layer entry may hold (checked when read back)."""
    m = MomentSymbols.make()
    own = (SIGMA_A2, SIGMA_B2, TAU0, *UNKNOWNS.values(), *PREVIOUS.values())
    return (*m.mu, m.sq, m.sq2, m.dsq, *own)


def _derive_deq(input_injection: bool, trainable: tuple[str, ...]) -> DEQFormulas:
    r"""Derive τ*, γ*, α*₁..₄, β*₁..₃, κ* for f(x) = aᵀz*, z = φ(σ_a A z + σ_b B x)/√m.

    The pre-activation kernel is Λ = σ_a² G + σ_b² XᵀX (``input_injection=False`` drops the
    σ_b² XᵀX term, i.e. σ_b = 0).  CK: G = E[φ(u)φ(v)] at the fixed point.

    NTK for the trainable set θ ⊆ {a, A, B}: unrolling the fixed point, the weights used at one
    layer contribute (σ_a² G [A ∈ θ] + σ_b² XᵀX [B ∈ θ])∘Ḋ with Ḋ = E[φ'(u)φ'(v)], propagated
    through the later layers by the factor Ġ = σ_a² Ḋ; so the pre-activation part P solves
    P = ([A]σ_a² G + [B]σ_b² XᵀX)∘Ḋ + P∘Ġ and K = [a] G + P.  For θ = (a, A) this is
    K* = G*/(1 − Ġ*), the paper's Theorem 2.
    """
    m = MomentSymbols.make()
    mu = tuple(_c for _c in m.mu)
    a1, a2, a3, a4 = (UNKNOWNS[f"alpha_{k}"] for k in range(1, 5))
    b1, b2, b3 = (UNKNOWNS[f"beta_{k}"] for k in range(1, 4))
    sb2 = SIGMA_B2 if input_injection else sp.S.Zero
    has_a, has_A, has_B = ("a" in trainable), ("A" in trainable), ("B" in trainable)

    # Diagonal: Λ_ii − τ*² = δ_i = σ_a² (G_ii − γ*²) + σ_b² ε s_i, with G_ii = E[φ_c(u_i)²],
    # Var u_i = τ*² + δ_i, expanded by the heat rule; δ_i = ε α₄ s_i, match the ε s_i term.
    g_ii = diagonal_expectation(_square_moments(m), EPS * a4 * SI, 1)
    lam_ii = SIGMA_A2 * (g_ii - m.sq) + sb2 * EPS * SI
    a4_sol = _solve_linear(a4, sp.expand(lam_ii).coeff(EPS).coeff(SI))

    # Off-diagonal CK fixed point.  Unknowns stay symbols until the end: expanding with the
    # solved rational expressions inside would cost seconds for nothing.
    g = _off_diag(a1, a2, a3)
    lam = SIGMA_A2 * g + sb2 * EPS * X_
    di, dj = EPS * a4 * SI, EPS * a4 * SJ
    rhs = reduce_to_ansatz(_centered(cross_expectation(mu, mu, lam, di, dj), m))
    a1_sol = _solve_linear(a1, rhs[X_])
    a2_sol = _solve_linear(a2, rhs[S_])
    a3_sol = _solve_linear(a3, rhs[T_])
    known = {a4: a4_sol}
    known[a1] = a1_sol.subs(known)
    known[a2] = a2_sol.subs(known)
    known[a3] = a3_sol.subs(known)
    alpha = tuple(sp.factor(known[s]) for s in (a1, a2, a3, a4))

    # NTK: K = [a] G + P,  P = ([A] σ_a² G + [B] σ_b² XᵀX)∘Ḋ + P∘(σ_a² Ḋ).
    k = _off_diag(b1, b2, b3)
    ddot = cross_expectation(mu[1:], mu[1:], lam, di, dj)
    source = (SIGMA_A2 * g if has_A else 0) + (sb2 * EPS * X_ if has_B else 0)
    p_part = k - (g if has_a else 0)  # P expressed through the unknown K
    rhs_k = reduce_to_ansatz(
        _centered((g if has_a else 0) + source * ddot + p_part * SIGMA_A2 * ddot, m)
    )
    b1_str = _solve_linear(b1, rhs_k[X_])
    b2_str = _solve_linear(b2, rhs_k[S_])
    b3_str = _solve_linear(b3, rhs_k[T_])
    b1_sol = b1_str
    b2_sol = b2_str.subs(b1, b1_sol)
    b3_sol = b3_str.subs(b1, b1_sol)
    beta = tuple(sp.factor(sp.together(b.subs(known))) for b in (b1_sol, b2_sol, b3_sol))

    # Diagonal (order 0): K_ii = [a] G_ii + P_ii, P_ii = ([A] σ_a² G_ii + [B] σ_b² τ0²) Ḋ_ii +
    # P_ii σ_a² Ḋ_ii, with G_ii = E[φ_c²] and Ḋ_ii = E[φ_c'²] from the diagonal expansion.
    pii = sp.Symbol("P_ii")
    g_ii0 = diagonal_expectation(_square_moments(m), sp.S.Zero, 0)
    d_ii0 = diagonal_expectation(_prime_square_moments(m), sp.S.Zero, 0)
    src_ii = (SIGMA_A2 * g_ii0 if has_A else 0) + (sb2 * TAU0**2 if has_B else 0)
    p_ii = _solve_linear(pii, src_ii * d_ii0 + pii * SIGMA_A2 * d_ii0)
    kappa_sq = (g_ii0 if has_a else 0) + p_ii
    structured = {
        key: sp.factor(expr)
        for key, expr in (
            ("alpha_4", a4_sol), ("alpha_1", a1_sol), ("alpha_2", a2_sol), ("alpha_3", a3_sol),
            ("beta_1", b1_str), ("beta_2", b2_str), ("beta_3", b3_str), ("kappa_sq", kappa_sq),
        )
    }  # fmt: skip
    return DEQFormulas(
        m=m,
        tau_sq_map=SIGMA_A2 * g_ii0 + sb2 * TAU0**2,
        gamma_sq=g_ii0,
        alpha=alpha,  # type: ignore[arg-type]
        beta=beta,  # type: ignore[arg-type]
        kappa_sq=sp.factor(kappa_sq),
        trainable=trainable,
        input_injection=input_injection,
        structured=structured,
    )


@functools.lru_cache(maxsize=4)
def derive_layer() -> LayerFormulas:
    """Derive one explicit layer's recursion (ICML 2024, Theorem 3, as derived here; memoised).

    Λ^{(l)} = Σ^{(l−1)} and Σ^{(l)} = E[σ_l(u)σ_l(v)] expanded like the DEQ, for the NTK
    Θ^{(l)} = Σ^{(l)} + Θ^{(l−1)}∘Σ̇^{(l)} with every layer trainable.

    Returns:
      A :class:`~deqrmt.symbolic.LayerFormulas`: ``tau_sq``, ``alpha`` (α̃_{l,1..4}), ``beta``
      (β̃_{l,1..3}) and ``kappa_sq`` in the previous layer's symbols ``prev`` (``alpha_1_prev``,
      …) and the moment symbols ``m`` of the centered σ_l at τ̃_{l−1}.

    Example:
      >>> l = derive_layer()
      >>> l.alpha[0]                           # α̃_{l,1} = E[σ_l']² α̃_{l−1,1}
      alpha_1_prev*mu1**2
      >>> l.alpha[3]                           # α̃_{l,4} = ½ E[(σ_l²)''] α̃_{l−1,4}
      alpha_4_prev*sq2/2
    """
    return cached("derive-layer", "v1", _derive_layer, LayerFormulas, symbols=_entry_symbols())


def _derive_layer() -> LayerFormulas:
    r"""Derive one explicit layer's recursion: Λ^{(l)} = Σ^{(l−1)}, Σ^{(l)} = E[σ_l(u)σ_l(v)]."""
    m = MomentSymbols.make()
    mu = m.mu
    prev = dict(PREVIOUS)
    lam = _off_diag(prev["alpha_1"], prev["alpha_2"], prev["alpha_3"])
    di, dj = EPS * prev["alpha_4"] * SI, EPS * prev["alpha_4"] * SJ
    sigma = reduce_to_ansatz(_centered(cross_expectation(mu, mu, lam, di, dj), m))
    theta_prev = _off_diag(prev["beta_1"], prev["beta_2"], prev["beta_3"])
    sigma_full = _off_diag(sigma[X_], sigma[S_], sigma[T_])
    sdot = cross_expectation(mu[1:], mu[1:], lam, di, dj)
    theta = reduce_to_ansatz(_centered(sigma_full + theta_prev * sdot, m))
    # Diagonal: Σ^{(l)}_ii = E[σ_c(u_i)²], Var u_i = τ̃²_{l−1} + ε α̃_{l−1,4} s_i (heat rule):
    # order 0 is τ̃_l², the ε s_i term is α̃_{l,4}; Θ_ii = Σ_ii + Θ^{(l−1)}_ii E[σ_c'²].
    g_ii = sp.expand(diagonal_expectation(_square_moments(m), EPS * prev["alpha_4"] * SI, 1))
    d_ii0 = diagonal_expectation(_prime_square_moments(m), sp.S.Zero, 0)
    tau_sq = g_ii.coeff(EPS, 0)
    alpha = (sigma[X_], sigma[S_], sigma[T_], g_ii.coeff(EPS).coeff(SI))
    beta = (theta[X_], theta[S_], theta[T_])
    return LayerFormulas(
        m=m,
        prev=prev,
        tau_sq=tau_sq,
        alpha=alpha,
        beta=beta,
        kappa_sq=tau_sq + prev["kappa"] ** 2 * d_ii0,
    )


# derive_deq.__wrapped__: the derivation without the in-memory memo (through the disk cache),
# as it was before derive_deq checked its arguments in front of the memo
derive_deq.__wrapped__ = _derive_deq_memo.__wrapped__  # type: ignore[attr-defined]

r"""The implicit-bias derivation's record: h, the conserved quantity, ψ, q and the domain of
gradient flow through `β = g(θ)`, one coordinate (NeurIPS 2024, Section 5).

Built by :func:`deqrmt.symbolic._bias.derive_bias`; the record checks when it is built that
every formula in β depends on β alone (and on β(0) and the conserved value).
"""

from __future__ import annotations

import dataclasses

import sympy as sp

from .._errors import InvalidArgument
from ._symbols import PaperSymbol

__all__ = ["BETA0", "BiasDerivation"]

BETA0 = PaperSymbol("β0", real=True)
"""β(0), the value of β at the initialisation, kept symbolic in `BiasDerivation.q`."""

_S = sp.Symbol("s", real=True)  # integration variable of the quadrature representation


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

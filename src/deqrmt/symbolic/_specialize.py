r"""A derived coefficient written out for one activation: ``coefficient_expression("relu", "alpha_2")``.

The general formulas of :func:`~deqrmt.symbolic.derive_deq` are in the moments of the centered
φ_c at τ*.  Here the centering identities (:func:`~deqrmt.symbolic.derive_fixed_point`) express
them in φ's raw moments, and every raw moment with a closed form (piecewise exp-polynomials,
erf-type integrals SymPy closed within its effort bound) is replaced by it, evaluated at the
symbol τ* (:data:`TAU_STAR`).  Moments without a closed form stay symbols ``E[φ'(τ*ξ)]`` …
Every symbol prints in LaTeX as the paper writes it (:mod:`._symbols`): ``sympy.latex`` of the
result compiles with amsmath and amssymb.
"""

from __future__ import annotations

import sympy as sp

from .._arguments import show
from .._errors import InvalidArgument
from ._activation import Activation
from ._expectation import TAU, moment_set
from ._latex import natural_sign
from ._objects import get_activation
from ._recursion import derive_deq, derive_fixed_point
from ._symbols import TAU_STAR, moment_at_tau_star

__all__ = ["coefficient_expression", "TAU_STAR", "COEFFICIENT_KEYS"]

COEFFICIENT_KEYS = (
    "gamma_star", "alpha_1", "alpha_2", "alpha_3", "alpha_4",
    "beta_1", "beta_2", "beta_3", "kappa_star",
)  # fmt: skip


def coefficient_expression(
    activation: str | Activation,
    key: str,
    *,
    trainable: tuple[str, ...] | str = ("a", "A"),
    center: bool = True,
) -> sp.Expr:
    """The derived formula of one DEQ coefficient, specialised to ``activation``.

    Args:
      activation: library name, ``name(params)``, an expression in ``x``, or an Activation.
      key: one of :data:`COEFFICIENT_KEYS` (``"alpha_2"`` is α*₂ of ICML 2024, Theorem 1).
      trainable: the NTK's parameter set (for β*, κ*).
      center: φ centered at τ* (the default, as in the engine).

    Returns:
      A SymPy expression in σ_a², σ_b², τ0, :data:`TAU_STAR` and, where no closed form exists,
      moment symbols ``E[φ'(τ*ξ)]`` etc.; in a notebook it renders as LaTeX.

    Raises:
      InvalidArgument: ``key`` is not a coefficient name.
      UnknownActivation, ParseError: ``activation`` does not parse.

    Example:
      >>> coefficient_expression("relu", "alpha_1")        # E[φ'] = 1/2 for ReLU
      sigma_b2/(4 - sigma_a2)
      >>> coefficient_expression("tanh", "alpha_1")        # no closed form: a moment symbol
      E[φ'(τ*ξ)]**2*sigma_b2/(-E[φ'(τ*ξ)]**2*sigma_a2 + 1)
    """
    if not isinstance(key, str) or key not in COEFFICIENT_KEYS:
        raise InvalidArgument(f"key={show(key)}: choose one of {', '.join(COEFFICIENT_KEYS)}.")
    act = get_activation(activation)
    formulas = derive_deq(trainable=trainable)  # checks trainable: a set of a, A, B
    fpm = derive_fixed_point(center=center)  # checks center: a bool
    expr = formulas.as_dict()[key].xreplace(dict(fpm.centered))
    # γ*, κ*: simplify the square and take the root once, so that √(a/(2 − σ_a²)) is not split
    # into √a·√(−1/(σ_a² − 2))
    root = key in ("gamma_star", "kappa_star")
    if root:
        expr = expr**2
    names = fpm.m.names()
    ms = moment_set(act)
    closed, opaque = {}, {}
    for sym in expr.free_symbols:
        name = names.get(sym)
        if name is None:
            continue
        form = ms[name].closed_form if name in ms.moments else None
        if form is not None:
            closed[sym] = form.subs(TAU, TAU_STAR)
        else:
            opaque[sym] = moment_at_tau_star(name)
    out = natural_sign(sp.simplify(expr.xreplace(closed)).xreplace(opaque))
    return sp.sqrt(out) if root else out

r"""``deq_coefficients``: the DEQ's coefficients, proven (Arb) or verified (two evaluations).

The one entry point for ICML 2024's Theorems 1–2.  It builds the problem record
(:class:`~deqrmt.numeric.DEQProblem`, validated once) and chooses the path:

* certified (:mod:`._deq_certified`, the default): every digit proven by ball arithmetic;
  an activation outside the enclosure rules falls back to the verified path, with the reason;
* verified (:mod:`._deq_verified`): the digits two evaluations agree on.

Both return a :class:`~deqrmt.numeric.DEQCoefficients` (:mod:`._deq_records`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from .. import _arguments
from ..symbolic import Activation
from ._deq_records import DEQCoefficients
from ._deq_verified import verified
from ._numbers import ExactInput
from ._problem import DEQProblem
from ._verify import proven_or_agreed

__all__ = ["certified", "deq_coefficients"]


def deq_coefficients(
    activation: str | Activation | DEQProblem,
    sigma_a2: ExactInput = "0.2",
    sigma_b2: ExactInput | None = None,
    tau0: ExactInput = 1,
    dps: int = 30,
    *,
    center: bool = True,
    trainable: str | Sequence[str] = ("a", "A"),
    certify: bool = True,
) -> DEQCoefficients:
    """Coefficients of the DEQ z = φ(σ_a A z + σ_b B x)/√m, every printed digit proven.

    The scalars of the high-dimensional equivalents Ḡ (ICML 2024, Theorem 1) and K̄ (Theorem 2),
    from formulas SymPy derives for ``activation`` (:func:`derive_deq`), at the fixed point τ*
    the DEQ's own iteration reaches (:func:`scan_fixed_points`).

    Args:
      activation: library name, ``name(params)``, an expression in ``x``, or a ready
        :class:`DEQProblem` (then the other arguments are ignored).
      sigma_a2, sigma_b2, tau0: numbers — int, float (read as its shortest repr: 0.2 is 1/5),
        decimal or fraction strings, Fraction, Decimal, numpy scalars; σ_b² defaults to 1 − σ_a².
      dps: significant digits wanted.
      center: center φ at its own fixed point (default); False checks E[φ(τ*ξ)] = 0 instead.
      trainable: the parameters of f(x) = aᵀz* the NTK (β*, κ*) is taken over; the default
        (a, A) is the paper's K* = G*/(1 − Ġ*).  Any non-empty subset of (a, A, B).
      certify: prove every digit by Arb ball arithmetic (default: it is also faster); an
        activation outside the enclosure rules falls back to digits verified by two
        evaluations (``certified=False`` with the ``reason``).  False: the two evaluations only.

    Returns:
      A :class:`DEQCoefficients`, a mapping of :class:`Verified` numbers with the keys
      ``tau_star``, ``gamma_star``, ``alpha_1`` … ``alpha_4``, ``beta_1`` … ``beta_3``,
      ``kappa_star`` and ``center`` (the constant c of φ_c = φ − c).  When
      σ_a² E[φ'(τ*ξ)²] ≥ 1 the NTK diverges: the ``beta_*`` and ``kappa_star`` keys are absent
      and ``notes`` says why.  ``moments`` holds E[φ_c'], E[φ_c'²], E[φ_c''], E[(φ_c²)''] at τ*
      (keys ``E_phi_prime``, ``E_phi_prime_sq``, ``E_phi_second``, ``E_phi_sq_second``).

    Raises:
      UnknownActivation, ParseError: ``activation`` is not a library name nor a valid expression.
      InvalidArgument: a number out of range or malformed (σ_a² ∉ (0, 1), dps < 1, …).
      UnknownTrainable: ``trainable`` is empty or names something outside (a, A, B).
      BudgetExceeded: the input is beyond a stated work limit (docs/limits.md).
      ContractionError: σ_a² outside the region of a unique attracting fixed point.
      CenteringError: ``center=False`` and E[φ(τ*ξ)] ≠ 0.
      PrecisionLoss: fewer than 10 digits agree between the two evaluations.

    Example:
      >>> c = deq_coefficients("relu", sigma_a2="0.2", dps=12)
      >>> c["alpha_1"]
      Verified('0.210526315789', digits=12)
      >>> c.alpha_1.text, round(float(c.tau_star), 6), c.certified
      ('0.210526315789', 0.926566, True)
    """
    certify = _arguments.boolean(certify, "certify")
    problem = (
        activation
        if isinstance(activation, DEQProblem)
        else DEQProblem.make(
            activation, sigma_a2, sigma_b2, tau0, dps, center=center, trainable=trainable
        )
    )
    return certified(problem) if certify else verified(problem)


@functools.lru_cache(maxsize=32)
def certified(problem: DEQProblem) -> DEQCoefficients:
    """The certified path, or the verified path with the reason when a moment or a decision
    is outside what ball arithmetic proves here."""
    from ._deq_certified import certify  # Arb is loaded only when a proof is asked for

    return proven_or_agreed(lambda: certify(problem), lambda: verified(problem))

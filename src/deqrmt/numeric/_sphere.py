r"""``sphere_coefficients``: HLD 2023's sphere setting for an arbitrary activation.

The one entry point for the sphere.  The setting is one problem record: the sphere's diagonal
map s ← σ_a² E[φ(√s ξ)²] + σ_b² is the DEQ's variance map with τ0 = 1 (‖x‖ = 1) and no
centering, so :func:`sphere_problem` builds a :class:`~deqrmt.numeric.DEQProblem` with its
range checks and σ_b²'s default 1 − σ_a² (HLD 2023, Assumption 1), and the one τ* solver gives
s = g(1).  Then the path:

* certified (:mod:`._sphere_certified`, the default): every digit proven by ball arithmetic;
  an activation outside the enclosure rules falls back to the verified path, with the reason;
* verified (:mod:`._sphere_verified`): the digits two evaluations agree on.

Both return a :class:`~deqrmt.numeric.SphereCoefficients` (:mod:`._sphere_records`); the
dual activation's Mehler series is :mod:`._mehler`.
"""

from __future__ import annotations

import mpmath
import sympy as sp

from .. import _arguments
from ..symbolic import Activation, get_activation
from ._context import Num
from ._fixed_point import solve_tau
from ._mehler import MAX_TERMS, DualSeries, dual_series
from ._numbers import ExactInput
from ._problem import DEQProblem
from ._sphere_records import NTK_EXTRA_KEYS, SPHERE_KEYS, QuadraticActivation, SphereCoefficients
from ._sphere_verified import verified_sphere
from ._verify import proven_or_agreed

__all__ = [
    "MAX_DIMENSION",
    "MAX_SPHERE_DPS",
    "sphere_coefficients",
    "sphere_problem",
    "sphere_variance",
    # the sphere's other names, for the modules that import them from here
    "MAX_TERMS",
    "NTK_EXTRA_KEYS",
    "SPHERE_KEYS",
    "DualSeries",
    "QuadraticActivation",
    "SphereCoefficients",
    "dual_series",
]

#: largest data dimension d of :func:`sphere_coefficients` (it only enters the formulas)
MAX_DIMENSION = 10**15
#: most digits the sphere answers (its Hermite projections cost more per digit than moments)
MAX_SPHERE_DPS = 200


def sphere_problem(
    activation: str | Activation,
    sigma_a2: ExactInput = "0.2",
    sigma_b2: ExactInput | None = None,
    dps: int = 30,
) -> DEQProblem:
    """The sphere's setting as the problem record: φ, σ_a², σ_b² (default 1 − σ_a²) and
    ``dps``, with τ0 = 1 and φ uncentered; every argument validated by
    :meth:`DEQProblem.make`."""
    return DEQProblem.make(activation, sigma_a2, sigma_b2, sp.S.One, dps, center=False)


def sphere_variance(
    activation: str | Activation,
    sigma_a2: ExactInput = "0.2",
    sigma_b2: ExactInput | None = None,
    dps: int = 30,
) -> Num:
    """s = g(1), the root of s = σ_a² E[φ(√s ξ)²] + σ_b² reached from the DEQ's own iteration.

    Returned as an mpf of a private context at ``dps`` + 10 digits (not verified: a helper for
    :func:`dual_series`; :func:`sphere_coefficients` reports it verified as ``g_at_1``).
    """
    problem = sphere_problem(activation, sigma_a2, sigma_b2, dps)
    ctx = mpmath.MPContext()
    ctx.dps = problem.dps + 10
    return solve_tau(problem, ctx).q


def sphere_coefficients(
    activation: str | Activation,
    sigma_a2: ExactInput = "0.2",
    sigma_b2: ExactInput | None = None,
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
      sigma_a2, sigma_b2: exact numbers within the problem record's ranges; σ_b² defaults to
        1 − σ_a² (the paper's assumption).
      d: the data dimension (enters α and the quadratic's a0).
      dps: significant digits wanted (at most :data:`MAX_SPHERE_DPS`, and the problem
        record's cap for the activation).
      certify: prove every digit by Arb ball arithmetic (default: it is also faster, see
        :mod:`._sphere_certified`); an activation outside the enclosure rules falls back to the
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
    d = _arguments.integer(d, "d", 1, MAX_DIMENSION)  # a number in the formulas, not a size
    dps = _arguments.integer(dps, "dps", 5, MAX_SPHERE_DPS)
    certify = _arguments.boolean(certify, "certify")
    problem = sphere_problem(act, sigma_a2, sigma_b2, dps)
    if not certify:
        return verified_sphere(problem, d)
    from ._sphere_certified import certify_sphere  # Arb is loaded only when a proof is asked for

    return proven_or_agreed(lambda: certify_sphere(problem, d), lambda: verified_sphere(problem, d))

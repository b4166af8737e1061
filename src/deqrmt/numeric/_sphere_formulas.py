r"""The sphere setting's derived formulas, each compiled once (HLD 2023).

* :func:`sphere_formulas`: Theorems 1 and 3 (g(0), g(1), g'(0), g''(0), α, β, μ, their NTK
  versions and k(0), k(1), k'(0), k''(0)) from s, g(0), E[φ'(√s ξ)²] and the dual's
  derivatives f^{(j)}(r₀) (:func:`deqrmt.symbolic.derive_sphere`);
* :func:`quadratic_formulas`: Corollary 1's (a2, a1, a0), one function per sign pattern, so that
  a pattern whose radicand is negative cannot stop the others
  (:func:`deqrmt.symbolic.derive_quadratic`);
* :func:`exact_zeros`: the constants that vanish by φ's form, set to an exact 0 by both paths
  (the formulas compute them as a difference that cancels, which neither two evaluations nor a
  ball can decide).

Context-generic (:mod:`._formulas`): the verified path runs them on mpmath contexts, the
certified path on Arb balls.
"""

from __future__ import annotations

import functools

from ..symbolic import ALPHA, BETA, DIM, MU, Activation, derive_quadratic, derive_sphere
from ._formulas import Formulas, compile_formulas
from ._mehler import polynomial_degree
from ._sphere_records import NTK_EXTRA_KEYS, SPHERE_KEYS

__all__ = ["ORDER", "exact_zeros", "quadratic_formulas", "quadratic_signs", "sphere_formulas"]

#: Theorems 1–4 use g and k to second order: the dual's derivatives f, f', f'', f''' at r₀
ORDER = 2
#: the names Corollary 1's formulas take their arguments by (the prefix "ntk_" for the NTK)
_QUADRATIC_NAMES = {ALPHA: "alpha", BETA: "beta", MU: "mu", DIM: "d"}


@functools.lru_cache(maxsize=2)
def sphere_formulas() -> Formulas:
    """:data:`SPHERE_KEYS` and :data:`NTK_EXTRA_KEYS`, in that order, from the environment
    ``sigma_a2, sigma_b2, s, d, g_0, m_dsq, f_0 … f_3``."""
    formulas = derive_sphere(ORDER)
    exprs = formulas.as_dict()
    return compile_formulas(
        "sphere_coefficients",
        [exprs[k] for k in (*SPHERE_KEYS, *NTK_EXTRA_KEYS)],
        args=formulas.numeric_inputs(),
        doc="HLD 2023 Theorems 1 and 3 for an arbitrary φ (derived by deqrmt.symbolic).",
    )


@functools.lru_cache(maxsize=2)
def quadratic_signs() -> tuple[str, ...]:
    """Corollary 1's sign patterns (signs of a2, a1, a0 + a2), ``"+++"`` first."""
    return tuple(s.signs for s in derive_quadratic().ck)


@functools.lru_cache(maxsize=2)
def quadratic_formulas(kind: str) -> tuple[Formulas, ...]:
    """Corollary 1's (a2, a1, a0) for ``kind`` ("ck" or "ntk"), one compiled function per sign
    pattern in the order of :func:`quadratic_signs`, from ``alpha, beta, mu, d``."""
    q = derive_quadratic()
    return tuple(
        compile_formulas(
            f"quadratic_{kind}_" + s.signs.replace("+", "p").replace("-", "m"),
            [s.a2, s.a1, s.a0],
            _QUADRATIC_NAMES,
            args=[ALPHA, BETA, MU, DIM],
            doc=f"HLD 2023 Corollary 1 ({kind.upper()}), signs {s.signs}.",
        )
        for s in (q.ck if kind == "ck" else q.ntk)
    )


def exact_zeros(act: Activation) -> tuple[str, ...]:
    """The constants that are exactly 0 for every setting because of φ's form.

    φ affine (a polynomial of degree ≤ 1): its dual f(r) = c_0 + c_1 r is affine (b_k = 0 for
    k ≥ 2, :func:`._mehler.known_zero`), so g = σ_a² f(g/s) + σ_b² ρ and k = h∘g, with
    h(c) = c/(1 − σ_a² f'(c/s)/s) linear, are affine in ρ too: μ = g(1) − g(0) − g'(0) = 0 and
    μ̇ = k(1) − k(0) − k'(0) = 0.  (g''(0), k''(0) and the rest come out exactly from the exact
    zeros among the f^{(j)}.)
    """
    degree = polynomial_degree(act)
    return ("mu", "ntk_mu") if degree is not None and degree <= 1 else ()

r"""The coefficients under test, as floats, with the slide variants used as negative controls.

The numbers come from :func:`deqrmt.numeric.deq_coefficients` (verified digits); this module
only carries them in float64 and builds deliberately wrong variants.  With the moments of the
centred φ at τ*, m₁ = E[φ'], m₂ = E[φ''], D = 1 − σ_a² m₁², the theorems' coefficients are
(slides, Theorems 1–2, as corrected by the derivation engine):

    α₂ = m₂² α₄² / (4D),          κ*² = γ*² / (1 − σ_a² E[φ'²]),
    β₃ = (α₃ + σ_a² m₂² β₁ (σ_a² α₁ + σ_b²)) / D,

and the slide text prints instead

    α₂ = m₂² α₄ / (4D)            (α₄ not squared),           variant "alpha2_slide"
    κ* = τ* / √(1 − σ_a² E[φ'²])  (τ* in place of γ*),        variant "kappa_slide"
    β₃ = (α₃ + β₁(σ_a² m₂² + σ_b²) α₁) / D,                   variant "beta3_slide"

plus "alpha1_x1.2" (α₁ scaled by 1.2).  A validator must reject each of them where they differ.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from .._errors import InvalidArgument

__all__ = ["Coefficients", "VARIANTS"]

#: Negative-control variants accepted by :meth:`Coefficients.variant`.
VARIANTS = ("alpha2_slide", "kappa_slide", "beta3_slide", "alpha1_x1.2")

_VALUE_KEYS = (
    "tau_star", "gamma_star", "alpha_1", "alpha_2", "alpha_3", "alpha_4",
    "beta_1", "beta_2", "beta_3", "kappa_star", "center",
)  # fmt: skip


@dataclasses.dataclass(frozen=True)
class Coefficients:
    """τ*, γ*, α₁..₄, β₁..₃, κ*, the centre c and the moments at τ*, in float64.

    ``label`` is "theorem" for the engine's numbers and the variant's name otherwise.
    """

    sigma_a2: float
    sigma_b2: float
    tau0: float
    tau_star: float
    gamma_star: float
    alpha_1: float
    alpha_2: float
    alpha_3: float
    alpha_4: float
    beta_1: float
    beta_2: float
    beta_3: float
    kappa_star: float
    center: float
    E_phi_prime: float
    E_phi_second: float
    E_phi_prime_sq: float
    E_phi_sq_second: float
    label: str = "theorem"

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name != "label" and not math.isfinite(v):
                raise InvalidArgument(f"coefficient {f.name}={v!r} is not finite.")
        # τ*² = σ_a² γ*² + σ_b² τ0² is the defining fixed-point equation (slides, "A fixed point").
        lhs = self.tau_star**2
        rhs = self.sigma_a2 * self.gamma_star**2 + self.sigma_b2 * self.tau0**2
        if abs(lhs - rhs) > 1e-9 * rhs:
            raise InvalidArgument(
                f"τ*² = {lhs!r} but σ_a²γ*² + σ_b²τ0² = {rhs!r}: the coefficients were computed "
                "for different σ_a², σ_b² or τ0."
            )
        if self.denominator <= 0:
            raise InvalidArgument(f"1 − σ_a² E[φ']² = {self.denominator!r} must be positive.")

    @property
    def denominator(self) -> float:
        """D = 1 − σ_a² E[φ'(τ*ξ)]²."""
        return 1 - self.sigma_a2 * self.E_phi_prime**2

    @classmethod
    def from_numeric(
        cls,
        activation: Any,
        sigma_a2: str,
        sigma_b2: str | None,
        tau0: float,
        dps: int = 20,
        trainable: tuple[str, ...] = ("a", "A"),
    ) -> tuple[Coefficients, Any]:
        """Compute with :func:`deqrmt.numeric.deq_coefficients`; returns (coefficients, Activation).

        ``tau0`` is passed as its shortest round-trip decimal string (τ0 of the actual data);
        ``trainable`` is the NTK's parameter set (β*, κ* depend on it).
        """
        from ..numeric import deq_coefficients

        res = deq_coefficients(
            activation,
            sigma_a2=sigma_a2,
            sigma_b2=sigma_b2,
            tau0=repr(float(tau0)),
            dps=dps,
            trainable=trainable,
        )
        v, m = res.as_floats(), res.moments_as_floats()
        out = cls(
            sigma_a2=float(res.sigma_a2),
            sigma_b2=float(res.sigma_b2),
            tau0=float(res.tau0),
            tau_star=v["tau_star"],
            gamma_star=v["gamma_star"],
            alpha_1=v["alpha_1"],
            alpha_2=v["alpha_2"],
            alpha_3=v["alpha_3"],
            alpha_4=v["alpha_4"],
            beta_1=v["beta_1"],
            beta_2=v["beta_2"],
            beta_3=v["beta_3"],
            kappa_star=v["kappa_star"],
            center=v["center"],
            E_phi_prime=m["E_phi_prime"],
            E_phi_second=m["E_phi_second"],
            E_phi_prime_sq=m["E_phi_prime_sq"],
            E_phi_sq_second=m["E_phi_sq_second"],
        )
        return out, res.activation

    def as_floats(self) -> dict[str, float]:
        """The keys of :meth:`deqrmt.numeric.DEQCoefficients.as_floats`."""
        return {k: float(getattr(self, k)) for k in _VALUE_KEYS}

    def formula_residuals(self) -> dict[str, float]:
        """Relative deviation of each coefficient from the formulas of the module docstring.

        A cross-check of the engine at float64: all entries are ~1e-15 for the engine's numbers.
        """
        sa2, sb2 = self.sigma_a2, self.sigma_b2
        m1, m2, d = self.E_phi_prime, self.E_phi_second, self.denominator
        want = {
            "alpha_4": sb2 / (1 - sa2 / 2 * self.E_phi_sq_second),
            "alpha_1": sb2 * m1**2 / d,
            "alpha_2": m2**2 * self.alpha_4**2 / (4 * d),
            "alpha_3": m2**2 * (sa2 * self.alpha_1 + sb2) ** 2 / (2 * d),
            "beta_1": self.alpha_1 / d,
            "beta_2": self.alpha_2 / d,
            "beta_3": (self.alpha_3 + sa2 * m2**2 * self.beta_1 * (sa2 * self.alpha_1 + sb2)) / d,
            "kappa_star": math.sqrt(self.gamma_star**2 / (1 - sa2 * self.E_phi_prime_sq)),
        }
        return {k: abs(getattr(self, k) - w) / max(abs(w), 1e-300) for k, w in want.items()}

    def variant(self, which: str) -> Coefficients:
        """A deliberately wrong copy (see the module docstring); ``which`` in :data:`VARIANTS`."""
        sa2, sb2 = self.sigma_a2, self.sigma_b2
        m2, d = self.E_phi_second, self.denominator
        if which == "alpha2_slide":
            a2 = m2**2 * self.alpha_4 / (4 * d)
            return dataclasses.replace(self, alpha_2=a2, beta_2=a2 / d, label=which)
        if which == "kappa_slide":
            kappa = self.tau_star / math.sqrt(1 - sa2 * self.E_phi_prime_sq)
            return dataclasses.replace(self, kappa_star=kappa, label=which)
        if which == "beta3_slide":
            b3 = (self.alpha_3 + self.beta_1 * (sa2 * m2**2 + sb2) * self.alpha_1) / d
            return dataclasses.replace(self, beta_3=b3, label=which)
        if which == "alpha1_x1.2":
            return dataclasses.replace(self, alpha_1=1.2 * self.alpha_1, label=which)
        raise InvalidArgument(f"unknown variant {which!r}; choose one of {', '.join(VARIANTS)}.")

r"""The DEQ result record: τ*, γ*, α*₁..₄, β*₁..₃, κ* and the moments of one problem.

What the verified path (:mod:`._deq_verified`) and the certified path (:mod:`._deq_certified`)
both return; :func:`~deqrmt.numeric.deq_coefficients` (:mod:`._deq`) chooses between them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from .. import _arguments
from .._errors import ContractionError
from .._json import JSONObject
from .._text import escape_controls
from . import _display
from ._mapping import AttributeHints, ValueTable, VerifiedMapping, convert, verified_property
from ._problem import DEQProblem, ProblemFields
from ._verified import Verified
from ._verify import certification_fields

__all__ = [
    "DEQCoefficients",
    "DEQ_KEYS",
    "MOMENT_KEYS",
    "NTK_KEYS",
    "shown",
]

DEQ_KEYS = (
    "tau_star", "gamma_star", "alpha_1", "alpha_2", "alpha_3", "alpha_4",
    "beta_1", "beta_2", "beta_3", "kappa_star", "center",
)  # fmt: skip
#: the NTK's coefficients: absent when σ_a² E[φ'²] ≥ 1 (Ġ* has spectral radius ≥ 1)
NTK_KEYS = ("beta_1", "beta_2", "beta_3", "kappa_star")
#: JSON name → internal moment of the centered φ at τ*.
MOMENT_KEYS = {
    "E_phi_prime": "d1",
    "E_phi_second": "d2",
    "E_phi_prime_sq": "dsq",
    "E_phi_sq_second": "sq2",
}


def shown(text: str) -> str:
    """User text (an activation's name) as a repr or table shows it: control and bidi
    characters escaped the way ``repr(str)`` does (``\\x1b``, ``\\u202e``), so printing a
    result cannot drive or reorder the terminal."""
    return escape_controls(text, keep="")


@dataclasses.dataclass(frozen=True, repr=False)
class DEQCoefficients(AttributeHints, ProblemFields, _display.Displayed, VerifiedMapping):
    """τ*, γ*, α*₁..₄, β*₁..₃, κ* and the centering constant of one :class:`DEQProblem`.

    Every number is a :class:`Verified` (value, digits, text), reachable as an attribute
    (``c.alpha_1``), by key (``c["alpha_1"]``) or in ``values``; ``moments`` holds the
    Gaussian moments of φ_c at τ* (by key too: ``c["E_phi_prime"]``).

    The record is a read-only ``collections.abc.Mapping`` over the coefficients it holds
    (``keys()``, ``items()``, ``len``, ``dict(c)``; β*, κ* are absent when the NTK diverges);
    ``values`` is both the attribute it always was (``c.values["alpha_1"]``) and the Mapping
    method (``c.values()``): see :class:`~deqrmt.numeric._mapping.ValueTable`.
    ``to_dict(float)`` gives plain floats, ``to_pandas()`` a table.  ``other_fixed_points`` are the other roots of τ² = F(τ²)
    in range (verified τ values), with their kind in ``notes``.

    ``certified``: every digit is proven by Arb ball arithmetic (each value has a ``radius``);
    otherwise the digits are the ones two evaluations agree on, and ``reason`` says why no
    proof was attempted or possible.  ``prec_bits``: the ball evaluation's precision.

    Example:
      >>> from deqrmt import deq_coefficients
      >>> c = deq_coefficients("tanh", sigma_a2="0.2", dps=15)
      >>> sorted(c.values)[:4]
      ['alpha_1', 'alpha_2', 'alpha_3', 'alpha_4']
      >>> c.tau_star.text
      '0.934871610924773'
    """

    problem: DEQProblem
    # field() with no default: the Mapping method ``values`` must not become the default
    values: Mapping[str, Verified] = dataclasses.field()
    moments: Mapping[str, Verified]
    other_fixed_points: tuple[Verified, ...] = ()
    notes: tuple[str, ...] = ()
    certified: bool = False
    prec_bits: int = 0
    reason: str | None = None

    tau_star = verified_property("tau_star")
    gamma_star = verified_property("gamma_star")
    alpha_1 = verified_property("alpha_1")
    alpha_2 = verified_property("alpha_2")
    alpha_3 = verified_property("alpha_3")
    alpha_4 = verified_property("alpha_4")
    beta_1 = verified_property("beta_1")
    beta_2 = verified_property("beta_2")
    beta_3 = verified_property("beta_3")
    kappa_star = verified_property("kappa_star")
    center = verified_property("center")

    def __post_init__(self) -> None:
        # read-only tables: ``values`` answers both c.values["alpha_1"] and c.values()
        object.__setattr__(self, "values", ValueTable(self.values))
        object.__setattr__(self, "moments", ValueTable(self.moments))

    def __getitem__(self, key: str) -> Verified:
        if not isinstance(key, str):
            raise KeyError(f"{_arguments.show(key)}: a key is a name such as 'alpha_1'")
        if key in self.values:
            return self.values[key]
        if key in self.moments:
            return self.moments[key]
        if key in NTK_KEYS:
            raise ContractionError(f"{key}: {self.notes[0]}")
        raise KeyError(
            f"{_arguments.show(key)}: not a coefficient; choose one of {', '.join(DEQ_KEYS)}"
        )

    @property
    def dps(self) -> int:
        return self.problem.dps

    @property
    def centered(self) -> bool:
        return self.problem.center

    @property
    def trainable(self) -> tuple[str, ...]:
        return self.problem.trainable

    def as_floats(self) -> dict[str, float]:
        """The coefficients as Python floats (for plotting or numpy), keyed like ``values``."""
        return {k: float(v.value) for k, v in self.values.items()}

    def moments_as_floats(self) -> dict[str, float]:
        """The moments of φ_c at τ* as Python floats."""
        return {k: float(v.value) for k, v in self.moments.items()}

    def to_dict(self, kind: object = None) -> JSONObject:
        """JSON-ready: the inputs, every value as its verified decimal string, the digits.

        ``to_dict(float)``: only the coefficients, ``{name: float}`` (as ``dict(c)`` but with
        plain floats); ``to_dict(str)``: ``{name: verified digits}``."""
        if kind is not None:
            return {k: convert(v, kind) for k, v in self.values.items()}
        out = self.problem.to_dict()
        out.update({k: self.values[k].text if k in self.values else None for k in DEQ_KEYS})
        out["moments"] = {k: v.text for k, v in self.moments.items()}
        out["digits"] = {k: v.digits for k, v in self.values.items()}
        out["other_fixed_points"] = [v.text for v in self.other_fixed_points]
        out.update(
            certification_fields(
                self.certified,
                {**self.values, **self.moments},
                self.prec_bits,
                self.reason,
                self.notes,
            )
        )
        return out

    def _setting(self) -> str:
        p = self.problem
        return (
            f"{shown(p.activation.name)}: σ_a² = {p.sigma_a2}, σ_b² = {p.sigma_b2}, "
            f"τ0 = {p.tau0}, "
            f"NTK over ({', '.join(p.trainable)}), "
            + ("φ centered at τ*" if p.center else "φ as given (E[φ(τ*ξ)] = 0)")
        )

    def __repr__(self) -> str:
        rows = [f"DEQCoefficients({self._setting()}; {self.dps} digits)"]
        rows += [f"  {k:<11} {self.values[k].text}" for k in DEQ_KEYS if k in self.values]
        rows += [f"  note: {shown(n)}" for n in self.notes]
        return "\n".join(rows)

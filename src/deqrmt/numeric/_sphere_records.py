r"""The sphere result record: HLD 2023's constants and Corollary 1's quadratics for one φ.

What the verified path (:mod:`._sphere_verified`) and the certified path
(:mod:`._sphere_certified`) both return; :func:`~deqrmt.numeric.sphere_coefficients`
(:mod:`._sphere`) chooses between them.  Like :class:`~deqrmt.numeric.DEQCoefficients`, every
value is a :class:`~deqrmt.numeric.Verified` and the setting is one
:class:`~deqrmt.numeric.DEQProblem` (τ0 = 1, no centering).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from .. import _arguments
from .._errors import InvalidArgument
from .._json import JSONObject
from . import _display
from ._mapping import AttributeHints, ValueTable, VerifiedMapping, convert, verified_property
from ._problem import DEQProblem, ProblemFields
from ._verified import Verified
from ._verify import ball_dict, certification_fields

__all__ = [
    "NTK_EXTRA_KEYS",
    "SPHERE_KEYS",
    "QuadraticActivation",
    "SphereCoefficients",
    "no_quadratic_note",
]

#: The numbers ``deqrmt sphere`` prints, in order (HLD 2023, Theorems 1 and 3).
SPHERE_KEYS = (
    "g0", "g_at_1", "g_prime_0", "g_second_0", "alpha", "beta", "mu",
    "ntk_alpha", "ntk_beta", "ntk_mu",
)  # fmt: skip
#: The NTK kernel's own values k(0), k(1), k'(0), k''(0), reported beside them.
NTK_EXTRA_KEYS = ("k0", "k_at_1", "k_prime_0", "k_second_0")


@dataclasses.dataclass(frozen=True)
class QuadraticActivation:
    """σ(t) = a2 t² + a1 t + a0 of HLD 2023, Corollary 1, to verified digits.

    ``signs``: the signs of (a2, a1, a0 + a2), the paper's three ± choices.
    """

    signs: str
    a2: Verified
    a1: Verified
    a0: Verified

    def to_dict(self) -> dict[str, str]:
        return {"a2": self.a2.text, "a1": self.a1.text, "a0": self.a0.text, "signs": self.signs}


@dataclasses.dataclass(frozen=True, repr=False)
class SphereCoefficients(AttributeHints, ProblemFields, _display.Displayed, VerifiedMapping):
    r"""HLD 2023's sphere-setting coefficients for one activation, each with its verified digits.

    ``problem`` holds φ, σ_a², σ_b² and the digits asked for (τ0 = 1: ‖x‖ = 1; φ uncentered);
    ``d`` is the data dimension.  ``values`` maps :data:`SPHERE_KEYS` and
    :data:`NTK_EXTRA_KEYS` to :class:`Verified`, reachable as attributes (``c.mu``) and by key
    (``c["mu"]``) too.  ``quadratic_ck``/``quadratic_ntk`` hold Corollary 1's real solutions,
    ``"+++"`` first, or are empty when none is real (e.g. α < μ/d, as for an odd φ where
    α = 0).  ``certified``, ``prec_bits`` and ``reason`` mean what they mean for
    :class:`~deqrmt.numeric.DEQCoefficients`.  Like it, the record is a read-only Mapping
    over ``values`` (``dict(c)``, ``c.keys()``, ``c.values()``, ``to_dict(float)``,
    ``to_pandas()``).
    """

    problem: DEQProblem
    d: int
    # field() with no default: the Mapping method ``values`` must not become the default
    values: Mapping[str, Verified] = dataclasses.field()
    quadratic_ck: tuple[QuadraticActivation, ...]
    quadratic_ntk: tuple[QuadraticActivation, ...]
    series_terms: int
    notes: tuple[str, ...] = ()
    certified: bool = False
    prec_bits: int = 0
    reason: str | None = None

    g0 = verified_property("g0")
    g_at_1 = verified_property("g_at_1")
    g_prime_0 = verified_property("g_prime_0")
    g_second_0 = verified_property("g_second_0")
    alpha = verified_property("alpha")
    beta = verified_property("beta")
    mu = verified_property("mu")
    ntk_alpha = verified_property("ntk_alpha")
    ntk_beta = verified_property("ntk_beta")
    ntk_mu = verified_property("ntk_mu")
    k0 = verified_property("k0")
    k_at_1 = verified_property("k_at_1")
    k_prime_0 = verified_property("k_prime_0")
    k_second_0 = verified_property("k_second_0")

    def __post_init__(self) -> None:
        missing = [k for k in (*SPHERE_KEYS, *NTK_EXTRA_KEYS) if k not in self.values]
        if missing:
            raise InvalidArgument(f"SphereCoefficients is missing {missing}.")
        object.__setattr__(self, "values", ValueTable(self.values))

    def __getitem__(self, key: str) -> Verified:
        if isinstance(key, str) and key in self.values:
            return self.values[key]
        raise KeyError(
            f"{_arguments.show(key)}: not a sphere constant; choose one of "
            f"{', '.join((*SPHERE_KEYS, *NTK_EXTRA_KEYS))}"
        )

    @property
    def dps(self) -> int:
        return self.problem.dps

    def as_floats(self) -> dict[str, float]:
        return {k: float(v.value) for k, v in self.values.items()}

    def _quadratic_dict(self, sols: tuple[QuadraticActivation, ...]) -> JSONObject | None:
        if not sols:
            return None

        def one(q: QuadraticActivation) -> JSONObject:
            d: JSONObject = dict(q.to_dict())
            if self.certified:
                d["balls"] = {f"a{i}": ball_dict(v) for i, v in ((2, q.a2), (1, q.a1), (0, q.a0))}
            return d

        out = one(sols[0])
        out["other_signs"] = [one(q) for q in sols[1:]]
        return out

    def to_dict(self, kind: object = None) -> JSONObject:
        """JSON-ready (docs/json.md); ``to_dict(float)``: ``{name: float}`` of the values only,
        ``to_dict(str)``: ``{name: verified digits}``."""
        if kind is not None:
            return {k: convert(v, kind) for k, v in self.values.items()}
        out: JSONObject = {
            "activation": self.activation.name,
            "expression": str(self.activation.expr),
            "sigma_a2": str(self.sigma_a2),
            "sigma_b2": str(self.sigma_b2),
            "d": self.d,
            "dps": self.dps,
        }
        out.update({k: self.values[k].text for k in SPHERE_KEYS})
        out["quadratic_ck"] = self._quadratic_dict(self.quadratic_ck)
        out["quadratic_ntk"] = self._quadratic_dict(self.quadratic_ntk)
        out.update({k: self.values[k].text for k in NTK_EXTRA_KEYS})
        out["digits"] = {k: v.digits for k, v in self.values.items()}
        out["series_terms"] = self.series_terms
        out.update(
            certification_fields(
                self.certified, self.values, self.prec_bits, self.reason, self.notes
            )
        )
        return out


def no_quadratic_note(values: Mapping[str, Verified], which: str, d: int) -> str:
    """The note for Corollary 1 (``which``: "CK" or "NTK") when no quadratic is real."""
    prefix = "" if which == "CK" else "ntk_"
    alpha, mu = values[f"{prefix}alpha"].text, values[f"{prefix}mu"].text
    return (
        f"Corollary 1 ({which}): no real quadratic activation: it needs α ≥ μ/d and μ, β ≥ 0, "
        f"here α = {alpha}, μ = {mu}, d = {d} (for an odd φ, α = 0)."
    )

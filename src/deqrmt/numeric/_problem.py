r"""The DEQ problem record: one activation and one setting, validated once.

Every consumer (coefficients, design, sweep, experiment, code generation, certification)
takes a :class:`DEQProblem`; nothing re-validates σ_a², σ_b², τ0, dps or the trainable set.
Messages name the Python argument and its value (``sigma_a2=…``); the CLI maps those names
to its flags.

Numbers are exact (:mod:`._numbers` reads them), within :data:`._ranges.RANGES`; the digits
asked for are priced by :mod:`._precision_cost`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

import sympy as sp

from .. import _arguments
from .._errors import InvalidArgument
from .._json import JSONObject
from ..symbolic import Activation, get_activation
from ._numbers import ExactInput, exact_number
from ._precision_cost import check_dps
from ._ranges import in_range
from ._trainable import parse_trainable

__all__ = ["DEQProblem", "ProblemFields", "check_problem"]


@dataclasses.dataclass(frozen=True)
class DEQProblem:
    """The DEQ z = φ(σ_a A z + σ_b B x)/√m on GMM data with τ0² = tr C°/p (ICML 2024, eq. (1)).

    Build it with :meth:`make` (which parses the activation and supplies σ_b²'s default);
    ``__post_init__`` converts and validates every field, once; fields are exact.
    Every function of the engine takes it (or builds it from the same arguments).

    Attributes:
      activation: φ.
      sigma_a2, sigma_b2, tau0: exact Rationals within :data:`RANGES`.
      dps: significant digits wanted.
      center: use φ_c = φ − E[φ(τ*ξ)] (default) or require E[φ(τ*ξ)] = 0.
      trainable: parameters the NTK is taken over, a subset of (a, A, B) in that order.

    Example:
      >>> p = DEQProblem.make("tanh", sigma_a2=0.2)        # a float means its shortest repr
      >>> p.sigma_a2, p.sigma_b2, p.tau0, p.trainable
      (1/5, 4/5, 1, ('a', 'A'))
    """

    activation: Activation
    sigma_a2: sp.Rational
    sigma_b2: sp.Rational
    tau0: sp.Rational
    dps: int = 30
    center: bool = True
    trainable: tuple[str, ...] = ("a", "A")

    def __post_init__(self) -> None:
        if not isinstance(self.activation, Activation):
            raise InvalidArgument(
                f"activation={_arguments.show(self.activation)}: expected an Activation; use "
                "DEQProblem.make to parse a name or expression."
            )
        for name in ("sigma_a2", "sigma_b2", "tau0"):
            object.__setattr__(self, name, in_range(name, exact_number(getattr(self, name), name)))
        object.__setattr__(self, "trainable", parse_trainable(self.trainable))
        object.__setattr__(self, "dps", check_dps(self.dps, self.activation))
        object.__setattr__(self, "center", _arguments.boolean(self.center, "center"))

    @classmethod
    def make(
        cls,
        activation: str | Activation,
        sigma_a2: ExactInput = "0.2",
        sigma_b2: ExactInput | None = None,
        tau0: ExactInput = 1,
        dps: int = 30,
        *,
        center: bool = True,
        trainable: str | Iterable[str] = ("a", "A"),
    ) -> DEQProblem:
        """Parse the activation; σ_b² defaults to 1 − σ_a² (unit pre-activation variance
        scale).  Every field is validated once, by the record itself (``__post_init__``); σ_a²
        is read here only for the default (an exact Rational, which the record takes as is)."""
        act = get_activation(activation)
        sa2 = exact_number(sigma_a2, "sigma_a2")
        if sigma_b2 is None:
            default: sp.Rational = 1 - sa2
            if default <= 0:
                in_range("sigma_a2", sa2)  # an out-of-range σ_a² is named as such first
                raise InvalidArgument(
                    f"sigma_a2={sa2} leaves σ_b² at its default, 1 − σ_a² = {default}, which is "
                    "not positive (the default keeps σ_a² + σ_b² = 1, so it needs σ_a² < 1): "
                    "set σ_b² yourself with `sigma_b2` (any value > 0, e.g. sigma_b2=1)."
                )
            sigma_b2 = default
        # the record converts and checks each field (σ_b² and τ0 as given, the trainable set
        # from its text or names)
        return cls(act, sa2, sigma_b2, tau0, dps, center, trainable)  # type: ignore[arg-type]

    def replace(self, **changes: Any) -> DEQProblem:
        """A copy with some fields changed (validated again)."""
        fields = [f.name for f in dataclasses.fields(self)]
        for key in changes:
            if key not in fields:
                shown = key if key.isidentifier() and key.isascii() else _arguments.show(key)
                raise InvalidArgument(
                    f"{shown}: not a field of DEQProblem; choose from {', '.join(fields)}."
                )
        return dataclasses.replace(self, **changes)

    @property
    def q0(self) -> sp.Rational:
        """σ_b² τ0²: the DEQ iteration's first variance (z = 0), a lower bound of every τ²."""
        return self.sigma_b2 * self.tau0**2

    def to_dict(self) -> JSONObject:
        """Inputs as JSON-ready values (exact decimal/fraction strings)."""
        return {
            "activation": self.activation.name,
            "expression": str(self.activation.expr),
            "sigma_a2": str(self.sigma_a2),
            "sigma_b2": str(self.sigma_b2),
            "tau0": str(self.tau0),
            "dps": self.dps,
            "centered": self.center,
            "trainable": list(self.trainable),
        }


def check_problem(problem: object, name: str = "problem") -> DEQProblem:
    """``problem`` when it is a :class:`DEQProblem`; otherwise an InvalidArgument that says how
    to build one (``scan_fixed_points('tanh')`` is refused, not an AttributeError)."""
    if not isinstance(problem, DEQProblem):
        raise InvalidArgument(
            f"{name}={_arguments.show(problem)}: expected a DEQProblem, got "
            f"{type(problem).__name__}; build one with DEQProblem.make('tanh', sigma_a2=0.2)."
        )
    return problem


class ProblemFields:
    """The setting of a result record that holds its :class:`DEQProblem` as ``problem``:
    ``activation``, ``sigma_a2``, ``sigma_b2``, ``tau0`` read through, never stored twice."""

    problem: DEQProblem

    @property
    def activation(self) -> Activation:
        return self.problem.activation

    @property
    def sigma_a2(self) -> sp.Rational:
        return self.problem.sigma_a2

    @property
    def sigma_b2(self) -> sp.Rational:
        return self.problem.sigma_b2

    @property
    def tau0(self) -> sp.Rational:
        return self.problem.tau0

r"""The DEQ problem record: one activation and one setting, validated once.

Every consumer (coefficients, design, sweep, experiment, code generation, certification)
takes a :class:`DEQProblem`; nothing re-validates σ_a², σ_b², τ0, dps or the trainable set.
Messages name the Python argument and its value (``sigma_a2=…``); the CLI maps those names
to its flags.

Numbers are exact.  A float means the decimal its shortest ``repr`` shows (``0.2`` is 1/5,
not the binary double 0.2000000000000000111…), which is what a notebook user typed or read.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from fractions import Fraction
from typing import Any

import sympy as sp

from .. import _arguments
from .._errors import BudgetExceeded, InvalidArgument, UnknownTrainable
from ..symbolic import Activation, get_activation

__all__ = [
    "DEQProblem",
    "MAX_SWEEP",
    "ProblemFields",
    "check_problem",
    "exact_number",
    "exact_text",
    "number_grid",
    "sweep_arguments",
    "parse_trainable",
    "dps_limit",
    "precision_cost",
    "PrecisionCost",
    "BUDGET_SECONDS",
    "RANGES",
    "MIN_DPS",
    "MAX_LAYERS",
    "TRAINABLE_NAMES",
]

#: Accepted ranges (inclusive) of the setting.  Outside them the Gaussian moments are taken at
#: scales where quadrature cannot promise digits within the time budget (docs/limits.md).
RANGES: dict[str, tuple[Fraction, Fraction]] = {
    "sigma_a2": (Fraction(1, 10**6), Fraction(100)),
    "sigma_b2": (Fraction(1, 10**6), Fraction(10**4)),
    "tau0": (Fraction(1, 10**3), Fraction(100)),
}
MIN_DPS = 5
#: layers of an explicit network or of a designed ENN (each layer adds a moment evaluation
#: and, in a design, parameters to the multi-start solve)
MAX_LAYERS = 8
#: The most digits any activation is computed to (relu at dps 1000: ~1 s cold on one core).
MAX_DPS_CLOSED = 1000
#: Seconds (one idle core, cold cache) a certified call may be estimated to take.
BUDGET_SECONDS = 60.0
#: The certified path's cost model: ``COST_FIXED_S + COST_PER_INTEGRAL_S · n · (dps /
#: COST_REF_DPS) ** COST_EXPONENT`` seconds, n the ``acb.integral`` calls one moment evaluation
#: makes (:func:`precision_cost`).  Fitted on the library activations, cold, one core, and
#: rounded up (docs/limits.md has the measurements).
COST_FIXED_S = 3.0
COST_PER_INTEGRAL_S = 3.0
COST_REF_DPS = 500
COST_EXPONENT = 3.0
TRAINABLE_NAMES = ("a", "A", "B")


def exact_number(value: Any, name: str) -> sp.Rational:
    """An exact Rational from int, float, str, Fraction, Decimal, numpy, mpmath or SymPy reals.

    Strings are decimals (``"0.2"``, ``"1e-3"``) or fractions (``"1/5"``) in ASCII digits; a
    float is read as its shortest repr.  Sizes are checked on the text or the bit length
    before any big integer is built, so ``"1e999999999"`` and ``10**5000`` are refused at once
    (:func:`deqrmt._arguments.number` has the rules).
    """
    if isinstance(value, sp.Rational):  # the common internal case: already exact
        _arguments.number(value, name)  # the same size budget
        return value
    f = _arguments.number(value, name)
    return sp.Rational(f.numerator, f.denominator)


#: points a command-line range or list may have (each is one full computation)
MAX_GRID = 200


def number_grid(value: Any, name: str) -> list[sp.Rational]:
    """Exact numbers from ``"start:stop:count"`` (count points, both ends included), a comma
    list ``"0.1,0.2"``, a Python list, or one number; each read by :func:`exact_number`.

    The count is ASCII digits from 1 to :data:`MAX_GRID`; a list has 1 to MAX_GRID values.
    """

    # each item is named as the whole argument (``sigma_a2='abc'``): the command line turns
    # that into its flag, a sweep spec into its key
    def item(v: Any, _: str) -> Fraction:
        return _arguments.number(v, name)

    if isinstance(value, str) and ":" in value:
        points = _arguments.number_range(value, name, MAX_GRID)
    elif isinstance(value, str) and "," in value:
        items = [t for t in value.split(",") if t.strip()]
        points = _arguments.sequence(items, name, "numbers", hi=MAX_GRID, item=item)
    elif isinstance(value, list | tuple):
        points = _arguments.sequence(value, name, "numbers", hi=MAX_GRID, item=item)
    else:
        points = _arguments.real_sequence(value, name, hi=MAX_GRID)
    return [sp.Rational(f.numerator, f.denominator) for f in points]


#: σ_a² values of one float sweep (``deq_coefficients_sweep``: ~1 ms each on one core)
MAX_SWEEP = 10_000


def sweep_arguments(sigma_a2: Any, sigma_b2: Any) -> tuple[list[float], list[float] | None]:
    """A float sweep's σ_a² (one number or a non-empty 1-D sequence of finite reals, at most
    :data:`MAX_SWEEP`) and σ_b² (None, one number, or one per σ_a²) as floats, or a named
    :class:`~deqrmt.InvalidArgument`; each value is read exactly first (0.2 is 1/5)."""
    sa2 = [float(v) for v in _arguments.real_sequence(sigma_a2, "sigma_a2", hi=MAX_SWEEP)]
    if sigma_b2 is None:
        return sa2, None
    sb2 = [float(v) for v in _arguments.real_sequence(sigma_b2, "sigma_b2", hi=MAX_SWEEP)]
    if len(sb2) == 1:
        sb2 *= len(sa2)
    if len(sb2) != len(sa2):
        raise InvalidArgument(
            f"sigma_b2: {len(sb2)} values for {len(sa2)} values of sigma_a2; give one sigma_b2 "
            "for all or one per sigma_a2."
        )
    return sa2, sb2


def exact_text(x: Fraction | sp.Rational) -> str:
    """Canonical exact text: a finite decimal when there is one ("0.05"), else "p/q"."""
    x = Fraction(int(x.p), int(x.q)) if isinstance(x, sp.Rational) else x
    if x.denominator == 1:
        return str(x.numerator)
    d, twos, fives = x.denominator, 0, 0
    while d % 2 == 0:
        d, twos = d // 2, twos + 1
    while d % 5 == 0:
        d, fives = d // 5, fives + 1
    if d != 1:
        return f"{x.numerator}/{x.denominator}"
    digits = max(twos, fives)
    scaled = x * 10**digits
    assert scaled.denominator == 1
    sign = "-" if scaled < 0 else ""
    s = str(abs(scaled.numerator)).rjust(digits + 1, "0")
    return f"{sign}{s[:-digits]}.{s[-digits:]}".rstrip("0").rstrip(".")


def _range_text(name: str) -> str:
    lo, hi = RANGES.get(name, (None, None))
    return f"[{_fmt(lo)}, {_fmt(hi)}]" if lo is not None else "finite numbers"


def _fmt(v: Fraction | None) -> str:
    if v is None:
        return "?"
    return str(v) if v.denominator == 1 else f"{float(v):g}"


def in_range(name: str, value: sp.Rational) -> sp.Rational:
    lo, hi = RANGES[name]
    if not lo <= Fraction(int(value.p), int(value.q)) <= hi:
        raise InvalidArgument(
            f"{name}={value} is outside the accepted range {_range_text(name)} (docs/limits.md)."
        )
    return value


def parse_trainable(trainable: str | Iterable[str]) -> tuple[str, ...]:
    """A trainable set as a tuple in the order (a, A, B): from ``("a", "A")`` or ``"a,A"``.

    Raises:
      UnknownTrainable: an empty set or a name outside (a, A, B) — ``"aA"`` is not ``a,A``.
    """
    return _arguments.name_set(
        trainable,
        "trainable",
        TRAINABLE_NAMES,
        error=UnknownTrainable,
        hint="choose a non-empty subset of a (readout), A (recurrent weights), B (input "
        "weights), e.g. ('a', 'A') or 'a,A,B'.",
    )


@dataclasses.dataclass(frozen=True)
class PrecisionCost:
    """What ``dps`` digits of ``activation`` cost, by the model of docs/limits.md.

    Attributes:
      seconds: the estimate (one idle core, cold cache).
      limit: the largest dps admitted for this activation.
      how: ``"closed"`` (every moment in closed form), ``"certified"`` (``acb.integral``)
        or ``"verified"`` (mpmath quadrature only: outside the enclosure rules, ``reason``).
      integrals: ``acb.integral`` calls per moment evaluation (``"certified"``; else 0).
    """

    seconds: float
    limit: int
    how: str
    integrals: int = 0
    reason: str = ""


def _certified_seconds(integrals: float, dps: int) -> float:
    return COST_FIXED_S + COST_PER_INTEGRAL_S * integrals * (dps / COST_REF_DPS) ** COST_EXPONENT


def precision_cost(activation: Activation, dps: int) -> PrecisionCost:
    """The cost model behind :func:`check_dps` (constants :data:`COST_FIXED_S` …).

    Closed forms cost little per digit (up to :data:`MAX_DPS_CLOSED`).  Moments by quadrature
    are certified by ``acb.integral`` (:mod:`._enclose`): the estimate grows with the integrals
    one moment evaluation makes (two moments share one complex integral; the steeper φ, the
    more panels: tanh(3x) counts 3) and with the cube of the digits (Gauss–Legendre nodes
    grow like the digits, an evaluation at p bits costs ~p^1.6, and the Gaussian's cut like
    √p; measured 2.2 from 300 to 500 digits, 3.0 from 500 to 700).  An activation outside the
    enclosure rules is computed by the verified quadrature, to
    :data:`._moments.MAX_DPS_QUADRATURE`.
    """
    from ._moments import MAX_DPS_QUADRATURE, evaluator_for

    if not evaluator_for(activation).open_names:
        return PrecisionCost(COST_FIXED_S * (dps / MAX_DPS_CLOSED) ** 2, MAX_DPS_CLOSED, "closed")
    from ._enclose import NotEnclosable, encloser_for

    try:
        n = encloser_for(activation).integrals()
    except NotEnclosable as e:
        return PrecisionCost(math.inf, MAX_DPS_QUADRATURE, "verified", reason=str(e))
    room = (BUDGET_SECONDS - COST_FIXED_S) / (COST_PER_INTEGRAL_S * n)
    limit = min(
        MAX_DPS_CLOSED, max(MAX_DPS_QUADRATURE, int(COST_REF_DPS * room ** (1 / COST_EXPONENT)))
    )
    return PrecisionCost(_certified_seconds(n, dps), limit, "certified", n)


def dps_limit(activation: Activation) -> int:
    """The largest dps the cost model admits for ``activation`` (:func:`precision_cost`)."""
    return precision_cost(activation, MAX_DPS_CLOSED).limit


def check_dps(dps: Any, activation: Activation | None = None) -> int:
    """``dps`` as an int within [MIN_DPS, the activation's limit]; named errors otherwise.

    Raises:
      BudgetExceeded: beyond :data:`MAX_DPS_CLOSED`, or beyond what the cost model admits for
        ``activation`` (the message gives the estimate and the largest dps admitted).
    """
    dps = _arguments.integer(dps, "dps", MIN_DPS)
    if dps > MAX_DPS_CLOSED:
        raise BudgetExceeded(
            f"dps={_arguments.show(dps)} exceeds {MAX_DPS_CLOSED}, the most digits the time "
            "budget allows for any activation (docs/limits.md); ask for fewer digits."
        )
    if activation is None:
        return dps
    from ._moments import MAX_DPS_QUADRATURE, evaluator_for  # the engine the cap belongs to

    if dps <= MAX_DPS_QUADRATURE:
        evaluator_for(activation)  # the moment set is checked here at every dps
        return dps
    cost = precision_cost(activation, dps)
    if dps <= cost.limit:
        return dps
    if cost.how == "verified":
        raise BudgetExceeded(
            f"dps={_arguments.show(dps)} exceeds {cost.limit}: the moments of "
            f"{activation.name} need quadrature outside the Arb enclosure rules, so they are "
            f"verified by mpmath quadrature, which is budgeted to {cost.limit} digits "
            f"(docs/limits.md); ask for dps={cost.limit} or fewer."
        )
    raise BudgetExceeded(
        f"dps={_arguments.show(dps)}: certifying {activation.name} by {cost.integrals} Arb "
        f"integrals per moment evaluation is estimated at {cost.seconds:.0f} s, over the "
        f"{BUDGET_SECONDS:.0f} s budget (cost model in docs/limits.md); ask for "
        f"dps={cost.limit} or fewer."
    )


@dataclasses.dataclass(frozen=True)
class DEQProblem:
    """The DEQ z = φ(σ_a A z + σ_b B x)/√m on GMM data with τ0² = tr C°/p (ICML 2024, eq. (1)).

    Build it with :meth:`make`, which converts and validates every argument; fields are exact.
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
        object.__setattr__(self, "dps", check_dps(self.dps, self.activation))
        object.__setattr__(self, "trainable", parse_trainable(self.trainable))
        object.__setattr__(self, "center", _arguments.boolean(self.center, "center"))

    @classmethod
    def make(
        cls,
        activation: str | Activation,
        sigma_a2: Any = "0.2",
        sigma_b2: Any = None,
        tau0: Any = 1,
        dps: int = 30,
        *,
        center: bool = True,
        trainable: str | Iterable[str] = ("a", "A"),
    ) -> DEQProblem:
        """Parse and validate; σ_b² defaults to 1 − σ_a² (unit pre-activation variance scale)."""
        act = get_activation(activation)
        sa2 = in_range("sigma_a2", exact_number(sigma_a2, "sigma_a2"))
        if sigma_b2 is None:
            sb2 = 1 - sa2
            if sb2 <= 0:
                raise InvalidArgument(
                    f"sigma_a2={sa2} leaves σ_b² at its default, 1 − σ_a² = {sb2}, which is "
                    "not positive (the default keeps σ_a² + σ_b² = 1, so it needs σ_a² < 1): "
                    "set σ_b² yourself with `sigma_b2` (any value > 0, e.g. sigma_b2=1)."
                )
        else:
            sb2 = exact_number(sigma_b2, "sigma_b2")
        return cls(
            act, sa2, sb2, exact_number(tau0, "tau0"), dps, center, parse_trainable(trainable)
        )

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

    def to_dict(self) -> dict[str, Any]:
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


def check_problem(problem: Any, name: str = "problem") -> DEQProblem:
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

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
import decimal
import numbers
import re
from collections.abc import Iterable
from fractions import Fraction
from typing import Any

import sympy as sp

from .._errors import BudgetExceeded, InvalidArgument, UnknownTrainable
from ..symbolic import Activation, get_activation

__all__ = [
    "DEQProblem",
    "ProblemFields",
    "exact_number",
    "exact_text",
    "number_grid",
    "parse_trainable",
    "dps_limit",
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
#: dps caps from the cost model: closed-form moments cost little per digit, quadrature
#: (Gauss–Legendre panels whose node count grows with the digits) much more.  Measured on 2
#: cores: tanh at dps 150 answers in ~12 s cold, relu at dps 1000 in ~8 s.
MAX_DPS_CLOSED = 1000
MAX_DPS_QUADRATURE = 150
TRAINABLE_NAMES = ("a", "A", "B")
_DECIMAL = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_FRACTION = re.compile(r"^[+-]?\d+\s*/\s*[+-]?\d+$")
_MAX_DIGITS = 60
_MAX_EXPONENT = 100


def exact_number(value: Any, name: str) -> sp.Rational:
    """An exact Rational from int, float, str, Fraction, Decimal, numpy scalar or Rational.

    Strings are decimals (``"0.2"``, ``"1e-3"``) or fractions (``"1/5"``); a float is read as
    its shortest repr.  Sizes are checked on the text before any big integer is built, so
    ``"1e999999999"`` is refused at once instead of materialising 10^999999999.
    """
    if isinstance(value, bool):
        raise InvalidArgument(f"{name}={value!r}: expected a number, got a bool.")
    if isinstance(value, sp.Rational):
        return value
    if isinstance(value, sp.Float):
        value = str(value)
    if isinstance(value, numbers.Integral):  # int, numpy integers
        value = str(int(value))
    elif isinstance(value, Fraction):
        value = f"{value.numerator}/{value.denominator}"
    elif isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise InvalidArgument(f"{name}={value!r} is not finite.")
        value = str(value)
    elif isinstance(value, numbers.Real):  # float, numpy floating
        f = float(value)
        if f != f or f in (float("inf"), float("-inf")):
            raise InvalidArgument(f"{name}={value!r} is not finite.")
        # str is the shortest repr in the value's own precision (np.float32(0.8) → '0.8')
        value = str(value) if _DECIMAL.match(str(value)) else repr(f)
    if not isinstance(value, str):
        raise InvalidArgument(
            f"{name}={value!r}: expected a number (int, float, decimal string like '0.2', "
            f"fraction like '1/5'), got {type(value).__name__}."
        )
    text = value.strip()
    digits = sum(ch.isdigit() for ch in text)
    m = _DECIMAL.match(text)
    if m and m.group(2) and abs(int(m.group(2)[1:])) > _MAX_EXPONENT:
        raise InvalidArgument(
            f"{name}={value!r}: exponent beyond ±{_MAX_EXPONENT}; the accepted range is "
            f"{_range_text(name)}."
        )
    if (m or _FRACTION.match(text)) and digits > _MAX_DIGITS:
        raise InvalidArgument(f"{name}={value!r}: more than {_MAX_DIGITS} digits.")
    try:
        if m:
            return sp.Rational(Fraction(text))
        if _FRACTION.match(text):
            num, den = (int(t) for t in text.split("/"))
            if den != 0:
                return sp.Rational(num, den)
    except (ValueError, ZeroDivisionError):
        pass
    raise InvalidArgument(f"{name}={value!r}: expected a decimal like 0.2 or a fraction like 1/5.")


#: points a command-line range or list may have (each is one full computation)
MAX_GRID = 200


def number_grid(value: Any, name: str) -> list[sp.Rational]:
    """Exact numbers from ``"start:stop:count"`` (count points, both ends included), a comma
    list ``"0.1,0.2"``, a Python list, or one number; each read by :func:`exact_number`."""
    if isinstance(value, str) and value.count(":") == 2:
        a, b, c = (t.strip() for t in value.split(":"))
        start, stop = exact_number(a, name), exact_number(b, name)
        if not c.isdigit() or not 1 <= int(c) <= MAX_GRID:
            raise InvalidArgument(
                f"{name}={value!r}: the count in start:stop:count must be an integer from 1 to "
                f"{MAX_GRID}."
            )
        count = int(c)
        if count > 1 and stop <= start:
            raise InvalidArgument(f"{name}={value!r}: a range needs start < stop.")
        if count == 1:
            return [start]
        return [start + i * (stop - start) / (count - 1) for i in range(count)]
    if isinstance(value, str) and "," in value:
        value = [t for t in value.split(",") if t.strip()]
    items = list(value) if isinstance(value, list | tuple) else [value]
    if not items or len(items) > MAX_GRID:
        raise InvalidArgument(f"{name}={value!r}: give 1 to {MAX_GRID} values.")
    return [exact_number(v, name) for v in items]


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
    if isinstance(trainable, str):
        names = [t.strip() for t in trainable.split(",") if t.strip()]
    else:
        try:
            names = list(trainable)
        except TypeError:
            names = [trainable]  # type: ignore[list-item]
    bad = [t for t in names if not isinstance(t, str) or t not in TRAINABLE_NAMES]
    if bad or not names:
        raise UnknownTrainable(
            f"trainable={trainable!r}: "
            + (f"unknown name(s) {', '.join(map(repr, bad))}; " if bad else "empty; ")
            + "choose a non-empty subset of a (readout), A (recurrent weights), B (input "
            "weights), e.g. ('a', 'A') or 'a,A,B'."
        )
    return tuple(t for t in TRAINABLE_NAMES if t in names)


def dps_limit(activation: Activation) -> int:
    """The largest dps the cost model admits for ``activation`` (see :data:`MAX_DPS_CLOSED`)."""
    from ._moments import evaluator_for

    return MAX_DPS_QUADRATURE if evaluator_for(activation).open_names else MAX_DPS_CLOSED


def check_dps(dps: Any, activation: Activation | None = None) -> int:
    """``dps`` as an int within [MIN_DPS, the activation's cap]; named errors otherwise."""
    if isinstance(dps, bool) or not isinstance(dps, numbers.Integral):
        raise InvalidArgument(f"dps={dps!r}: expected an integer number of digits.")
    dps = int(dps)
    cap = MAX_DPS_CLOSED if activation is None else dps_limit(activation)
    if dps < MIN_DPS:
        raise InvalidArgument(f"dps={dps}: at least {MIN_DPS} digits.")
    if dps > cap:
        what = "by quadrature" if cap == MAX_DPS_QUADRATURE else "in closed form"
        raise BudgetExceeded(
            f"dps={dps} exceeds {cap}, the most digits the time budget allows for an activation "
            f"whose moments are computed {what} (docs/limits.md); ask for fewer digits."
        )
    return dps


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
                f"activation={self.activation!r}: use DEQProblem.make to parse a string."
            )
        for name in ("sigma_a2", "sigma_b2", "tau0"):
            object.__setattr__(self, name, in_range(name, exact_number(getattr(self, name), name)))
        object.__setattr__(self, "dps", check_dps(self.dps, self.activation))
        object.__setattr__(self, "trainable", parse_trainable(self.trainable))
        object.__setattr__(self, "center", bool(self.center))

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
                    f"sigma_b2 defaults to 1 - sigma_a2 = {sb2}, which is not positive; pass "
                    "sigma_b2 explicitly or choose sigma_a2 < 1."
                )
        else:
            sb2 = exact_number(sigma_b2, "sigma_b2")
        return cls(
            act, sa2, sb2, exact_number(tau0, "tau0"), dps, center, parse_trainable(trainable)
        )

    def replace(self, **changes: Any) -> DEQProblem:
        """A copy with some fields changed (validated again)."""
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

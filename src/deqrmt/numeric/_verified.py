"""The Verified number: a value and the digits of it that are printed, agreed or proven.

The digits come from two evaluations that agree (:func:`._verify.verify`) or from an Arb ball
that proves them (:func:`proven`, here because Verified's own ball arithmetic returns one).

A :class:`Verified` is also a number: arithmetic with int, float, Fraction, Decimal, mpmath and
other Verified; comparisons and hashing by exact value; ``float``; numpy's ``__array__``;
``format`` with float's format specs, rounded from the exact value; pickling (exact, the proof
kept); and ``.ball``, a python-flint ``arb`` enclosing it.
"""

from __future__ import annotations

import dataclasses
import decimal
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import mpmath

from .._arguments import show
from .._errors import BudgetExceeded, InvalidArgument
from .._text import escape_controls
from ._context import Num
from ._number_format import format_exact

__all__ = [
    "Verified",
    "proven",
    "MIN_DIGITS",
    "ARITHMETIC_GUARD",
    "MAX_POWER_BITS",
    "MAX_OPERAND_BITS",
]

#: Fewer agreeing digits than this (or than the request, if smaller) is an error, not a result.
MIN_DIGITS = 10
#: Arithmetic on a Verified runs at its digits plus these guard digits (mpmath) or bits (Arb).
ARITHMETIC_GUARD = 10
#: ``v ** n`` is refused when |n·log₂|v|| passes this: the result's exponent alone would be
#: over 78,000 decimal digits, and printing its digits takes time quadratic in that.
MAX_POWER_BITS = 1 << 18
#: an operand (Decimal, mpmath) whose exact value would need more bits than this is refused
#: before it is expanded: Decimal('1e999999999') is a 3.3-gigabit integer
MAX_OPERAND_BITS = 1 << 20


@dataclasses.dataclass(frozen=True, repr=False, eq=False)
class Verified:
    """A number and the significant digits of it that two evaluations agree on.

    ``text`` holds exactly the verified digits (trailing zeros kept: 30 digits asked, 30 shown);
    ``value`` is the more precise evaluation, for further arithmetic (``float(v)`` works too).
    ``radius`` is None when the digits are verified by two evaluations, and a number when they
    are *proven*: the true value lies within ``radius`` of ``value`` (Arb ball arithmetic).

    A Verified behaves as a number:

    * ``+ - * / **`` with int, float, Fraction, Decimal, mpmath numbers, python-flint ``arb``
      and other Verified.  When every Verified operand is proven (``certified``) and every
      other operand is exact (int, float, Fraction, Decimal: a float is the binary number it
      holds) or an ``arb`` ball, the result is a proven ``Verified``: the Arb ball of the
      operation, printed to the digits it proves (:func:`proven`).
      Otherwise (an unproven operand, or an mpmath number) it is an mpmath ``mpf`` computed
      at the largest operand's digits plus :data:`ARITHMETIC_GUARD`; no operand passes
      through a Python float.  ``-v``, ``+v`` and ``abs(v)`` are exact: a Verified with the
      same digits.  With an mpmath number or a numpy scalar on the *left*, that library's
      own rules apply (mpmath rounds to ``mp.prec``; numpy converts to float64).
    * ``== < <= > >=`` compare ``value`` exactly with the other number, ``hash`` agrees
      with ``==`` (equal to ``hash`` of the same int, float or Fraction), and ``bool(v)`` is
      ``v != 0``.  To decide a comparison with proof, compare the ``.ball`` of each (an
      ``arb`` comparison is true only when certain).
    * ``float(v)`` and numpy: ``np.asarray(v)`` is a float64 0-d array, and
      ``np.asarray([c.alpha_1, c.beta_1], dtype=float)`` a float64 vector.  ``int(v)`` is
      refused: say how to round (``round(float(v))``, ``math.floor(v.value)``).
    * ``format(v, spec)`` and f-strings take float's specs (``.5f``, ``e``, ``g``, ``%``,
      width, fill, grouping) and round half-even from the exact ``value``, never through a
      float; digits past ``digits`` are the evaluation's, not verified.  An empty spec is
      ``str(v)``, the verified digits.
    * ``pickle`` round-trips exactly: same value, digits, text and ball.
    * ``.ball``: a python-flint ``arb`` that encloses the number: the proven ball when
      certified, else the verified digits ± half a unit of the last one.

    Example:
      >>> from deqrmt import deq_coefficients
      >>> v = deq_coefficients("relu", dps=12).alpha_1      # α*₁ = σ_b² μ₁²/(1 − σ_a² μ₁²) = 4/19
      >>> v.text, v.digits, float(v) == 4 / 19
      ('0.210526315789', 12, True)
      >>> v.radius < 1e-20                                   # proven: a ball around ``value``
      True
      >>> v + 1, (19 * v - 4).contains(0)                    # proven too: Arb balls
      (Verified('1.21052631579', digits=12), True)
    """

    value: Num  # mpf from the more precise evaluation (a ball's midpoint when certified)
    digits: int
    text: str
    radius: Num = None

    @property
    def certified(self) -> bool:
        """True when the digits are proven by a ball, not only agreed on by two evaluations."""
        return self.radius is not None

    def contains(self, x: Num) -> bool:
        """Whether ``x`` lies in the proven ball (certified values only)."""
        if self.radius is None:
            raise InvalidArgument(
                "contains: a value verified by two evaluations has no ball; only a certified "
                "Verified (radius is not None) can enclose"
            )
        if isinstance(x, bool) or hasattr(x, "_mpc_") or isinstance(x, complex):
            raise InvalidArgument(f"x={show(x)}: expected a real number.")
        if isinstance(x, str):  # a decimal numeral is an exact number: read it as one
            x = _decimal_text(x)
        if _non_finite(x):
            return False  # ±inf and nan lie in no ball
        exact = _as_exact(x)
        if exact is None:
            raise InvalidArgument(
                f"x={show(x)}: expected a real number (int, float, Fraction, Decimal, mpmath)."
            )
        return abs(exact - self._exact()) <= _fraction(self.radius)

    def __repr__(self) -> str:
        if self.radius is not None and self.digits == 0:
            # a proven ball that proves no digit (it contains 0): say how small it is
            rad = mpmath.nstr(mpmath.mpf(self.radius), 3)
            return f"Verified({mpmath.nstr(mpmath.mpf(self.value), 3)!r}, digits=0, within ±{rad})"
        return f"Verified({self.text!r}, digits={self.digits})"

    def __str__(self) -> str:
        return escape_controls(self.text, keep="")  # our digits; a hand-built one is escaped

    def __float__(self) -> float:
        return float(self.value)

    def __getstate__(self) -> dict[str, Any]:
        # the engines compute in private mpmath contexts, whose mpf classes pickle cannot find
        # by name: pickle the same exact values as mpmath's global mpf
        return {k: _portable(v) for k, v in vars(self).items()}

    def __format__(self, spec: str) -> str:
        return format_exact(self._exact(), spec, str(self))

    def __int__(self) -> int:
        raise InvalidArgument(
            f"int({self.text or 'Verified'}): a Verified does not round itself; write "
            "round(float(v)), math.floor(v.value) or math.ceil(v.value)."
        )

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        import numpy as np

        return np.asarray(float(self.value), dtype=dtype if dtype is not None else np.float64)

    @property
    def _mpf_(self) -> Num:
        # mpmath reads this: a Verified takes part in mpmath arithmetic as its value
        return mpmath.mpf(self.value)._mpf_

    # -- the number it is ---------------------------------------------------------------

    @property
    def ball(self) -> Num:
        """A python-flint ``arb`` enclosing the number: the proven ball ``value ± radius``
        when certified, else the verified digits ``text`` ± half a unit of the last one (the
        interval two agreeing evaluations claim, not a proof)."""
        from flint import arb

        from ._arb import to_arb, workprec

        if self.radius is not None:
            mid, rad = _fraction(self.value), _fraction(self.radius)
            with workprec(_bits(mid) + _bits(rad) + 64):
                return to_arb(mid).union(to_arb(mid - rad)).union(to_arb(mid + rad))
        if self.text in ("", "0") and self.value == 0:
            return arb(0)
        if not self.text:
            raise InvalidArgument("ball: this Verified has no verified digit to build a ball on.")
        mid = Fraction(decimal.Decimal(self.text))
        half = Fraction(1, 2) * Fraction(10) ** (_decimal_exponent(self.text) - self.digits + 1)
        with workprec(_bits(mid) + 64):
            return to_arb(mid - half).union(to_arb(mid + half))

    def _exact(self) -> Fraction:
        return _fraction(self.value)

    def __bool__(self) -> bool:
        return self.value != 0  # a number: zero is false (tanh's α*₂)

    def __eq__(self, other: object) -> bool:
        if _non_finite(other):
            return False
        o = _as_exact(other)
        if o is None:
            return NotImplemented
        return self._exact() == o

    def __hash__(self) -> int:
        return hash(self._exact())

    def __lt__(self, other: Num) -> bool:
        return self._compare(other, lambda a, b: a < b)

    def __le__(self, other: Num) -> bool:
        return self._compare(other, lambda a, b: a <= b)

    def __gt__(self, other: Num) -> bool:
        return self._compare(other, lambda a, b: a > b)

    def __ge__(self, other: Num) -> bool:
        return self._compare(other, lambda a, b: a >= b)

    def _compare(self, other: Num, op: Callable[[Num, Num], bool]) -> Num:
        if _non_finite(other):  # ±inf orders as a float does, nan compares false
            return op(float(self.value), float(other))
        o = _as_exact(other)
        if o is None:
            return NotImplemented
        return op(self._exact(), o)

    def __neg__(self) -> Verified:
        v = self.value
        # exact: make_mpf wraps the negated raw value without rounding it to mp.prec
        neg = mpmath.mp.make_mpf(mpmath.libmp.mpf_neg(v._mpf_)) if _is_mpf(v) else -v
        return Verified(neg, self.digits, _negated(self.text), self.radius)

    def __pos__(self) -> Verified:
        return self

    def __abs__(self) -> Verified:
        return -self if self.value < 0 else self

    def __add__(self, other: Num) -> Num:
        return _arithmetic(self, other, "add")

    def __radd__(self, other: Num) -> Num:
        return _arithmetic(other, self, "add")

    def __sub__(self, other: Num) -> Num:
        return _arithmetic(self, other, "sub")

    def __rsub__(self, other: Num) -> Num:
        return _arithmetic(other, self, "sub")

    def __mul__(self, other: Num) -> Num:
        return _arithmetic(self, other, "mul")

    def __rmul__(self, other: Num) -> Num:
        return _arithmetic(other, self, "mul")

    def __truediv__(self, other: Num) -> Num:
        return _arithmetic(self, other, "div")

    def __rtruediv__(self, other: Num) -> Num:
        return _arithmetic(other, self, "div")

    def __pow__(self, other: Num) -> Num:
        return _arithmetic(self, other, "pow")

    def __rpow__(self, other: Num) -> Num:
        return _arithmetic(other, self, "pow")


def _portable(x: Num) -> Num:
    """An mpmath real of any context as the same exact value in mpmath's global context."""
    return mpmath.mp.make_mpf(x._mpf_) if _is_mpf(x) and type(x) is not mpmath.mpf else x


def _fraction(x: Num) -> Fraction:
    """An mpmath number (or anything mpmath reads) as the exact Fraction it holds."""
    # read ``_mpf_`` as it is: a value from a private mpmath context (the engine's) is not an
    # instance of mpmath.mpf, and mpmath.mpf(x) would round it to the global 53 bits
    raw = x._mpf_ if _is_mpf(x) else mpmath.mpf(x)._mpf_
    if raw[1] == 0 and raw != mpmath.libmp.fzero:
        raise InvalidArgument(f"{show(x)}: not a finite number.")
    sign, man, exp, _ = raw
    m = -int(man) if sign else int(man)
    return Fraction(m * 2**exp) if exp >= 0 else Fraction(m, 2**-exp)


def _refuse_huge(x: Num, bits: float) -> None:
    if bits > MAX_OPERAND_BITS:
        raise BudgetExceeded(
            f"{show(x)}: its exact value needs about {bits:.3g} bits, more than the "
            f"{MAX_OPERAND_BITS} a Verified operand may have; use float(v) or mpmath."
        )


def _refuse_snan(x: Num) -> None:
    if isinstance(x, decimal.Decimal) and x.is_snan():
        raise InvalidArgument(
            f"{show(x)} is a signalling NaN, not a number; pass a finite Decimal "
            "(a signalling NaN marks a missing value: replace it first)."
        )


def _non_finite(x: Num) -> bool:
    """An inf or nan float, Decimal or mpmath number (compared as floats, never converted)."""
    _refuse_snan(x)
    if isinstance(x, float | decimal.Decimal):
        return not x.is_finite() if isinstance(x, decimal.Decimal) else not math.isfinite(x)
    if _is_mpf(x):
        return not mpmath.isfinite(mpmath.mpf(x._mpf_))
    return False


def _is_mpf(x: Num) -> bool:
    """An mpmath real of any context (``mpf`` of the global one or of a private one)."""
    return hasattr(x, "_mpf_") and not isinstance(x, Verified)


def _bits(x: Fraction) -> int:
    return max(x.numerator.bit_length(), x.denominator.bit_length(), 1)


def _raw(x: Num) -> Num:
    """What mpmath.mpf() takes without rounding through another context: the raw tuple."""
    return x._mpf_ if _is_mpf(x) else x


def _decimal_exponent(text: str) -> int:
    """The power of ten of the leading digit of a decimal text (nstr style)."""
    return int(decimal.Decimal(text).adjusted())


def _negated(text: str) -> str:
    if not text or text == "0":
        return text
    return text[1:] if text.startswith("-") else "-" + text


def _decimal_text(text: str) -> decimal.Decimal:
    """A decimal numeral (at most 1000 characters) as an exact Decimal, or InvalidArgument."""
    if len(text) > 1000:
        raise InvalidArgument(
            f"x={show(text)}: a numeral of {len(text)} characters; give at most 1000."
        )
    try:
        return decimal.Decimal(text.strip().replace("_", ""))
    except decimal.InvalidOperation:
        raise InvalidArgument(
            f"x={show(text)}: expected a real number (int, float, Fraction, Decimal, mpmath, "
            "or a decimal numeral such as '1.25e-3')."
        ) from None


def _as_exact(x: Num) -> Fraction | None:
    """An exact operand (int, float, Fraction, Decimal, mpmath mpf, Verified) as a Fraction,
    or None for anything else (the operator then returns NotImplemented)."""
    if isinstance(x, bool):
        return None
    if isinstance(x, Verified):
        return x._exact()
    if isinstance(x, int | Fraction):
        return Fraction(x)
    if isinstance(x, float | decimal.Decimal):
        _refuse_snan(x)
        if not x.is_finite() if isinstance(x, decimal.Decimal) else not math.isfinite(x):
            raise InvalidArgument(f"{show(x)}: not a finite number.")
        if isinstance(x, decimal.Decimal):
            exponent = x.as_tuple().exponent
            assert isinstance(exponent, int)  # finite
            _refuse_huge(
                x, 3.33 * (max(abs(x.adjusted()), abs(exponent)) + len(x.as_tuple().digits))
            )
        return Fraction(x)
    if _is_mpf(x):
        raw = x._mpf_
        if raw[1]:  # finite and nonzero: refuse an exponent that cannot be expanded
            _refuse_huge(x, abs(raw[2]) + raw[3])
        return _fraction(x)
    return None


def _is_arb(x: Num) -> bool:
    return type(x).__name__ == "arb" and type(x).__module__.startswith("flint")


_MP_OPS: dict[str, Callable[[Num, Num], Num]] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "pow": lambda a, b: mpmath.power(a, b),
}


def _arithmetic(a: Num, b: Num, op: str) -> Num:
    """``a op b`` where at least one side is a Verified (see :class:`Verified`)."""
    sides = (a, b)
    if any(isinstance(x, bool) for x in sides):
        return NotImplemented
    for x in sides:
        if not (isinstance(x, Verified) or _is_arb(x) or _as_exact(x) is not None):
            return NotImplemented
    if op == "pow":
        _check_power(a, b)
    # a proven ball that proves no digit (x − x) caps nothing: its radius decides the digits
    digits = max(x.digits for x in sides if isinstance(x, Verified)) or 3 * MIN_DIGITS
    # an arb is a ball (python-flint gives it an ``_mpf_`` too): proven, not an mpmath number
    proven = all(
        (x.certified if isinstance(x, Verified) else _is_arb(x) or not _is_mpf(x)) for x in sides
    )
    if proven:
        return _ball_arithmetic(a, b, op, digits)
    with mpmath.workdps(digits + ARITHMETIC_GUARD):
        x, y = (_to_mpf(v) for v in sides)
        return _MP_OPS[op](x, y)


def _check_power(base: Num, exponent: Num) -> None:
    """Refuse ``base ** exponent`` whose result would have more than :data:`MAX_POWER_BITS`
    bits of exponent (its digits could not be printed within a budget)."""
    with mpmath.workprec(64):
        b, e = _to_mpf(base), _to_mpf(exponent)
        if b == 0 or abs(b) == 1 or e == 0:
            return
        bits = abs(e * mpmath.log(abs(b), 2))
    if bits > MAX_POWER_BITS:
        raise BudgetExceeded(
            f"pow: the result would be about 2^{mpmath.nstr(bits, 3)} (a binary exponent "
            f"beyond ±{MAX_POWER_BITS}); work with logarithms instead, e.g. "
            "n * mpmath.log(v.value)."
        )


def _to_mpf(x: Num) -> Num:
    """An operand as an mpmath number at the working precision (a float exactly)."""
    if isinstance(x, Verified):
        return +mpmath.mpf(_raw(x.value))
    if _is_arb(x):
        from ._arb import arb_to_mpf

        return +arb_to_mpf(x)
    if _is_mpf(x):
        return +mpmath.mpf(x._mpf_)
    if isinstance(x, int | float):
        return mpmath.mpf(x)
    fr = Fraction(x)
    return mpmath.mpf(fr.numerator) / fr.denominator


def _ball_arithmetic(a: Num, b: Num, op: str, digits: int) -> Verified:
    from ._arb import bits_for_digits, to_arb, workprec

    def ball(x: Num) -> Num:
        if isinstance(x, Verified):
            return x.ball
        if _is_arb(x):
            return x
        fr = _as_exact(x)
        assert fr is not None
        return to_arb(fr)

    with workprec(bits_for_digits(digits + ARITHMETIC_GUARD) + 64):
        x = ball(a)
        if op == "pow" and not (isinstance(b, Verified) or _is_arb(b)) and _as_exact(b) is not None:
            e = _as_exact(b)
            assert e is not None
            y = int(e) if e.denominator == 1 else ball(b)  # x**n for a negative ball too
        else:
            y = ball(b)
        if op == "div" and not isinstance(y, int) and y.contains(0):
            raise ZeroDivisionError("division by a ball that contains 0")
        r = {
            "add": lambda: x + y,
            "sub": lambda: x - y,
            "mul": lambda: x * y,
            "div": lambda: x / y,
            "pow": lambda: x**y,
        }[op]()
        if not r.is_finite():
            raise InvalidArgument(
                f"{op}: the result is not a finite real ball (a negative base to a "
                "non-integer power, or 0 to a negative one)."
            )
        return proven(r, digits)


def proven(x: Num, dps: int) -> Verified:
    """The digits the ball ``x`` proves, at most ``dps`` (0 digits: it contains 0 or straddles).

    A value is printed to n digits when both ends of its ball round (exactly, ties away from 0)
    to the same n-digit decimal (:func:`._arb.round_digits`); rounding is monotone, so the true
    value rounds to it too.  The ball itself stays in the result (``value`` its midpoint,
    ``radius``).
    """
    from flint import arb

    from ._arb import arb_to_mpf, format_digits, round_digits

    if x.is_exact():
        mid = arb_to_mpf(x)
        if x == 0:
            return Verified(mid, dps, "0", mpmath.mpf(0))
        r = round_digits(x, dps)
        assert r is not None  # an exact nonzero number rounds to itself
        return Verified(mid, dps, format_digits(r, dps), mpmath.mpf(0))
    mid, rad = arb_to_mpf(x), arb_to_mpf(arb(x.rad()))
    if x.contains(0) or not x.is_finite():
        return Verified(mid, 0, "", rad)
    # the digits the radius allows, then down until both ends round alike
    rel = float(abs(arb(x.rad()) / abs(x.mid())).upper()) if x.mid() != 0 else math.inf
    n = dps if rel == 0 else min(dps, max(1, int(-math.log10(rel)) + 1))
    for k in range(n, 0, -1):
        r = round_digits(x, k)
        if r is not None:
            return Verified(mid, k, format_digits(r, k), rad)
    return Verified(mid, 0, "", rad)

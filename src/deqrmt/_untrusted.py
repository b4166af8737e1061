"""Values from outside the package (a design file, a flag's text, a family or parametrization
string) checked for type, size and range before any work, with a one-line error naming the field.

The rules every command shares: numbers are ASCII decimals (``0.25``, ``-1.5e-3``) or fractions
(``1/4``) — no other Unicode digit (``²``, ``②``, Arabic-Indic) is a digit here; sizes (digits,
exponent) are read off the text before any big integer is built, so ``1e999999999`` is refused
at once instead of materialising 10^999999999.  Pure functions, no I/O; the lowest layer, so
symbolic, numeric, validate and cli all use the same rules (it imports nothing heavy).
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

from ._errors import BudgetExceeded, InvalidArgument

__all__ = [
    "MAX_EXPONENT",
    "MAX_NUMBER_DIGITS",
    "bounded_int",
    "decimal",
    "exact_fraction",
    "integer",
    "shown",
]

#: digits a number may have (a design at --dps 1000 writes 1000-digit parameters)
MAX_NUMBER_DIGITS = 1100
#: |exponent| of a decimal in scientific notation
MAX_EXPONENT = 100

# [0-9], not \d: \d matches every Unicode decimal digit ('٣', '５')
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE]([+-]?[0-9]+))?")
_FRACTION = re.compile(r"([+-]?[0-9]+)[ ]*/[ ]*([+-]?[0-9]+)")


def shown(value: object, limit: int = 40) -> str:
    """``repr(value)`` cut to ``limit`` characters: a 5000-digit value is not echoed whole
    (repr also escapes control characters, so the text is safe on a terminal)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def exact_fraction(
    value: Any,
    what: str,
    *,
    max_digits: int = MAX_NUMBER_DIGITS,
    max_exponent: int = MAX_EXPONENT,
    fix: str = "write a decimal like 0.25 or a fraction like 1/4",
) -> Fraction:
    """An exact number from an int, a finite float or ASCII text (decimal or fraction).

    Raises :class:`InvalidArgument` naming ``what`` for anything else (a bool, None, a list, a
    symbol, NaN, a zero denominator, a non-ASCII digit), :class:`BudgetExceeded` for more than
    ``max_digits`` digits or an exponent beyond ±``max_exponent``.

    Example:
      >>> exact_fraction("1/4", "init"), exact_fraction("-2.5e-1", "init")
      (Fraction(1, 4), Fraction(-1, 4))
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise InvalidArgument(
            f"{what}={shown(value)} has type {type(value).__name__}, not a number; {fix}."
        )
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise InvalidArgument(f"{what}={shown(value)} is not finite; {fix}.")
        value = repr(value)  # the shortest decimal that reads back as this double
    if isinstance(value, int):
        # int → str is quadratic and refused past 4300 digits: bound the bits first
        if value.bit_length() > max_digits * 3.33:
            raise BudgetExceeded(f"{what} has more than {max_digits} digits; {fix}.")
        value = str(value)
    text = value.strip(" ")
    if len(text) > max_digits + 50:
        raise BudgetExceeded(
            f"{what}={shown(value)} is {len(text)} characters long; at most {max_digits} "
            f"digits are accepted; {fix}."
        )
    if not text.isascii():
        raise InvalidArgument(
            f"{what}={shown(value)} has a character that is not an ASCII digit, sign, point, "
            f"'e' or '/'; {fix}."
        )
    decimal = _DECIMAL.fullmatch(text)
    fraction = None if decimal else _FRACTION.fullmatch(text)
    if decimal is None and fraction is None:
        raise InvalidArgument(f"{what}={shown(value)} is not a number; {fix}.")
    digits = sum(ch.isdigit() for ch in text)
    if decimal is not None and decimal.group(1) is not None:
        exponent = decimal.group(1).lstrip("+-").lstrip("0")
        digits -= len(decimal.group(1).lstrip("+-"))
        if len(exponent) > 6 or int(exponent or "0") > max_exponent:
            raise BudgetExceeded(
                f"{what}={shown(value)} has an exponent beyond ±{max_exponent}; {fix}."
            )
    if digits > max_digits:
        raise BudgetExceeded(f"{what}={shown(value)} has more than {max_digits} digits; {fix}.")
    if fraction is not None:
        num, den = int(fraction.group(1)), int(fraction.group(2))
        if den == 0:
            raise InvalidArgument(f"{what}={shown(value)} divides by zero; {fix}.")
        return Fraction(num, den)
    return Fraction(text)


def bounded_int(value: Any, what: str, lo: int, hi: int, *, fix: str = "") -> int:
    """An int (not a bool, not a float) in ``[lo, hi]``; the message names ``what`` and the range.

    Example:
      >>> bounded_int(3, "layers", 1, 8)
      3
    """
    tail = f"; {fix}" if fix else ""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgument(
            f"{what}={shown(value)} has type {type(value).__name__}, not an integer "
            f"in [{lo}, {hi}]{tail}."
        )
    if not lo <= value <= hi:
        error = BudgetExceeded if value > hi else InvalidArgument
        raise error(f"{what}={shown(value)} is outside [{lo}, {hi}]{tail}.")
    return value


def integer(text: str) -> int:
    """An integer written in ASCII digits, at most 30 of them (``int`` also reads '٣', '３' and
    '1_000', and spends quadratic time on 4000 digits).  Named so that argparse, which uses it
    as an option's ``type``, says ``invalid integer value: '٣'``.

    Example:
      >>> integer("-12")
      -12
    """
    body = text.strip(" ")
    digits = body[1:] if body[:1] in ("+", "-") else body
    if not (digits.isascii() and digits.isdigit()) or len(digits) > 30:
        raise ValueError(f"not an integer in ASCII digits: {shown(text)}")
    return int(body)


def decimal(text: str) -> float:
    """A finite number written in ASCII (``0.25``, ``1e-3``, ``1/4``), as a float: argparse's
    ``type`` for options such as ``--ratio`` (``float`` also reads 'nan', 'inf', '1e999' and
    other scripts' digits).

    Example:
      >>> decimal("1/4")
      0.25
    """
    try:
        return float(exact_fraction(text, "value", max_digits=40, max_exponent=300))
    except InvalidArgument:
        raise ValueError(f"not a finite decimal in ASCII digits: {shown(text)}") from None

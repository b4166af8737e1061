r"""One home for checking what a caller passes: numbers, booleans, integers, seeds, sizes,
sequences, ranges and names, with the same rules as the command line (docs/limits.md).

Every public function of :mod:`deqrmt`, :mod:`deqrmt.numeric`, :mod:`deqrmt.symbolic` and
:mod:`deqrmt.testing` checks its arguments here, at its boundary, before any work.  A refused
argument is an :class:`~deqrmt.InvalidArgument` (a :class:`~deqrmt.BudgetExceeded` when it is
beyond a stated size) whose one-line message names the argument as Python does
(``sigma_a2=…``, never a CLI flag: the command line translates with ``cli._common.flag_names``)
and says what is accepted.

The rules:

* **numbers** are exact: int, :class:`~fractions.Fraction`, :class:`~decimal.Decimal`, a
  decimal or fraction string (``"0.2"``, ``"1e-3"``, ``"1/5"``), a float (read as its shortest
  repr: ``0.2`` is 1/5), numpy/mpmath/SymPy reals.  Refused: bool, complex, NaN/±inf, symbolic
  values, more than :data:`MAX_DIGITS` digits or a decimal exponent beyond ±:data:`MAX_EXPONENT`
  (checked on the integer's bit length or the text, before any big integer is built or printed),
  and any digit that is not ASCII ``0``–``9`` (``"٠.٢"`` and ``"②"`` are not numbers here);
* **booleans** are ``True``/``False`` (or numpy's); ``"False"`` is refused, not read as true;
* **integers** (digits, layers, counts, seeds) are ints within a stated interval;
* **sizes** are positive ints whose allocation, estimated by the caller, fits the memory this
  process may use (:mod:`deqrmt._budget`): the message gives the estimate;
* **sequences** (a sweep's σ_a², a network's layers) are lists, tuples or 1-D arrays: never a
  string, a mapping, a set or a one-shot iterator; non-empty and within a size budget;
* **ranges** ``start:stop:count`` have an ASCII count from 1 to a budget.

Pure Python (no SymPy, mpmath or numpy import), so every layer can use it.
"""

from __future__ import annotations

import decimal
import math
import numbers
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any, TypeVar

from ._errors import BudgetExceeded, InvalidArgument
from ._text import escape_controls

__all__ = [
    "MAX_DIGITS",
    "MAX_EXPONENT",
    "MAX_NUMBER_TEXT",
    "MAX_SEED",
    "MAX_SEQUENCE",
    "boolean",
    "choice",
    "choices",
    "format_bytes",
    "integer",
    "memory_budget",
    "name_set",
    "number",
    "number_range",
    "optional_callable",
    "real_sequence",
    "seed",
    "sequence",
    "show",
    "size",
    "text",
]

#: significant digits a number may carry (numerator and denominator each)
MAX_DIGITS = 60
#: largest |e| of a decimal exponent, ``1e100``
MAX_EXPONENT = 100
#: characters of a number's text (spaces included): a megabyte of zeros is refused unread
MAX_NUMBER_TEXT = 200
#: seeds are integers in [0, MAX_SEED] (what numpy and torch both take)
MAX_SEED = 2**63 - 1
#: items of a sequence argument (a float sweep's σ_a² values, …) unless the caller says less
MAX_SEQUENCE = 100_000
#: longest repr of a value shown in a message
_SHOW = 60

_DECIMAL = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?", re.ASCII)
_FRACTION = re.compile(r"([+-]?[0-9]+)\s*/\s*([+-]?[0-9]+)", re.ASCII)
_ASCII_COUNT = re.compile(r"[0-9]+", re.ASCII)
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+>")
_NUMBER_HELP = (
    "give a real number: an int, a decimal like 0.2 or '1e-3', a fraction like '1/5', a "
    "Fraction or a Decimal"
)
T = TypeVar("T")


# ---------------------------------------------------------------------------
# Showing a value in a message
# ---------------------------------------------------------------------------


def show(value: Any) -> str:
    """``value`` as a message shows it: its repr, one line, controls escaped, at most ~60
    characters; never fails (a 5000-digit int is described, not converted to text).

    Example:
      >>> show(10**5000)
      'an int of 5001 digits'
      >>> show("tanh\\x1b[2J")
      "'tanh\\\\x1b[2J'"
    """
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 190:
        return f"an int of {_int_digits(value)} digits"
    if isinstance(value, str) and len(value) > _SHOW:
        return repr(value[: _SHOW - 10]) + f"… ({len(value)} characters)"
    try:
        text = repr(value)
    except Exception:  # a broken __repr__ must not hide the real error
        text = f"<{type(value).__name__} object>"
    text = " ".join(text.split())  # numpy arrays print over several lines
    text = _ADDRESS.sub(">", text)  # '<generator object f at 0x7f…>': the same bytes every run
    if len(text) > _SHOW:
        text = text[: _SHOW - 1] + "…"
    return escape_controls(text, keep="")


def _int_digits(n: int) -> int:
    """Decimal digits of ``n`` from its bit length (exact, no conversion to text)."""
    n = abs(n)
    if n == 0:
        return 1
    guess = int(n.bit_length() * math.log10(2))  # digits − 1 or digits
    return guess + 1 if n >= 10**guess else guess


def _type_name(value: Any) -> str:
    return type(value).__name__


def _numpy_bool(value: Any) -> bool:
    """numpy's boolean scalar: ``numpy.bool_`` before numpy 2, named ``numpy.bool`` since."""
    kind = type(value)
    return kind.__module__ == "numpy" and kind.__name__ in ("bool_", "bool")


# ---------------------------------------------------------------------------
# Numbers
# ---------------------------------------------------------------------------


def _too_many_digits(name: str, value: Any) -> BudgetExceeded:
    return BudgetExceeded(
        f"{name}={show(value)}: more than {MAX_DIGITS} digits; give at most {MAX_DIGITS} "
        "significant digits (docs/limits.md)."
    )


def _check_int_size(n: int, name: str, value: Any) -> int:
    if abs(n) >= 10**MAX_DIGITS:
        raise _too_many_digits(name, value)
    return n


def _from_text(text: str, name: str, value: Any) -> Fraction:
    if len(text) > MAX_NUMBER_TEXT:
        raise BudgetExceeded(
            f"{name}={show(value)}: {len(text)} characters; a number has at most "
            f"{MAX_NUMBER_TEXT} (docs/limits.md)."
        )
    if not text.isascii():
        raise InvalidArgument(
            f"{name}={show(value)}: only ASCII digits 0-9 are read; write the number as "
            "'0.2' or '1/5'."
        )
    t = text.strip()
    m = _DECIMAL.fullmatch(t)
    if m:
        digits = sum(c.isdigit() for c in m.group(1))
        if m.group(2) and abs(int(m.group(2)[1:])) > MAX_EXPONENT:
            raise BudgetExceeded(
                f"{name}={show(value)}: a decimal exponent beyond ±{MAX_EXPONENT}; write the "
                "number with a smaller exponent (docs/limits.md)."
            )
        if digits > MAX_DIGITS:
            raise _too_many_digits(name, value)
        return Fraction(t)
    f = _FRACTION.fullmatch(t)
    if f:
        if sum(c.isdigit() for c in t) > MAX_DIGITS:
            raise _too_many_digits(name, value)
        num, den = int(f.group(1)), int(f.group(2))
        if den == 0:
            raise InvalidArgument(f"{name}={show(value)}: the denominator is 0.")
        return Fraction(num, den)
    if re.fullmatch(r"[+-]?[0-9]+,[0-9]+", t):
        raise InvalidArgument(
            f"{name}={show(value)}: a decimal comma? numbers take a decimal point: "
            f"{t.replace(',', '.')!r}."
        )
    raise InvalidArgument(f"{name}={show(value)} is not a number; {_NUMBER_HELP}.")


def _not_finite(name: str, value: Any) -> InvalidArgument:
    return InvalidArgument(f"{name}={show(value)} is not finite; {_NUMBER_HELP}.")


def number(value: Any, name: str) -> Fraction:
    """``value`` as an exact :class:`~fractions.Fraction` (see the module docstring's rules).

    Example:
      >>> number(0.2, "sigma_a2"), number("1/5", "sigma_a2"), number("1e-3", "tau0")
      (Fraction(1, 5), Fraction(1, 5), Fraction(1, 1000))
    """
    if isinstance(value, bool) or _numpy_bool(value):
        raise InvalidArgument(f"{name}={show(value)}: a bool is not a number; {_NUMBER_HELP}.")
    if isinstance(value, str):
        return _from_text(value, name, value)
    if (
        hasattr(value, "_mpc_")
        or isinstance(value, complex)
        or (isinstance(value, numbers.Complex) and not isinstance(value, numbers.Real))
    ):
        raise InvalidArgument(
            f"{name}={show(value)}: a complex number; give its real part if that is meant."
        )
    if (
        getattr(value, "ndim", None) == 0
        and hasattr(value, "item")
        and not isinstance(value, numbers.Number)  # numpy scalars keep their own precision
    ):  # a 0-d numpy array
        return number(value.item(), name)
    if isinstance(value, numbers.Integral):  # int, numpy and SymPy integers
        return Fraction(_check_int_size(int(value), name, value))
    if isinstance(value, Fraction) or (
        isinstance(value, numbers.Rational) and _type_name(value) != "mpf"
    ):  # Fraction, SymPy Rational
        n, d = int(value.numerator), int(value.denominator)
        _check_int_size(n, name, value)
        _check_int_size(d, name, value)
        return Fraction(n, d)
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise _not_finite(name, value)
        return _from_text(str(value), name, value)
    if hasattr(value, "_mpf_"):  # mpmath: its str is the shortest decimal at its precision
        s = str(value)
        if s in ("nan", "+inf", "-inf", "inf"):
            raise _not_finite(name, value)
        return _from_text(s, name, value)
    if isinstance(value, numbers.Real) and getattr(value, "is_Number", None) is not False:
        try:
            f = float(value)
        except (TypeError, ValueError, OverflowError):
            raise InvalidArgument(
                f"{name}={show(value)} is not a number; {_NUMBER_HELP}."
            ) from None
        if not math.isfinite(f):
            raise _not_finite(name, value)
        # str is the shortest repr in the value's own precision (np.float32(0.8) → '0.8');
        # a SymPy Float's str is its decimal digits
        s = str(value)
        return _from_text(s if _DECIMAL.fullmatch(s.strip()) else repr(f), name, value)
    if getattr(value, "is_number", False) or getattr(value, "free_symbols", None) is not None:
        raise InvalidArgument(
            f"{name}={show(value)}: a symbolic value, not an exact number; {_NUMBER_HELP} "
            "(e.g. a decimal approximation of sqrt(2))."
        )
    raise InvalidArgument(
        f"{name}={show(value)}: expected a number, got {_type_name(value)}; {_NUMBER_HELP}."
    )


# ---------------------------------------------------------------------------
# Booleans, integers, seeds, sizes, names
# ---------------------------------------------------------------------------


def boolean(value: Any, name: str) -> bool:
    """``value`` when it is True or False (Python's or numpy's); anything else is refused, so
    ``center="False"`` cannot turn centering on."""
    if isinstance(value, bool):
        return value
    if _numpy_bool(value):
        return bool(value)
    raise InvalidArgument(f"{name}={show(value)}: expected True or False, got {_type_name(value)}.")


def integer(value: Any, name: str, lo: int | None = None, hi: int | None = None) -> int:
    """``value`` as an int in [lo, hi] (an int or numpy integer; never a bool, float or text).

    Above ``hi`` is a :class:`BudgetExceeded` (a limit on work), below ``lo`` an
    :class:`InvalidArgument`.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidArgument(
            f"{name}={show(value)}: expected an integer, got {_type_name(value)}"
            + (f"; choose {_interval(lo, hi)}." if lo is not None or hi is not None else ".")
        )
    n = int(value)
    if lo is not None and n < lo:
        raise InvalidArgument(f"{name}={show(n)}: choose {_interval(lo, hi)}.")
    if hi is not None and n > hi:
        raise BudgetExceeded(f"{name}={show(n)}: choose {_interval(lo, hi)} (docs/limits.md).")
    return n


def _interval(lo: int | None, hi: int | None) -> str:
    if lo is not None and hi is not None:
        return f"an integer from {lo} to {hi}"
    if lo is not None:
        return f"an integer ≥ {lo}"
    return f"an integer ≤ {hi}"


def seed(value: Any, name: str = "seed") -> int:
    """A random seed: an int from 0 to :data:`MAX_SEED`."""
    return integer(value, name, 0, MAX_SEED)


def format_bytes(n: float) -> str:
    """``n`` bytes for people: ``'7.3 TiB'``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def memory_budget(nbytes: float, name: str, value: Any, what: str) -> None:
    """Refuse (:class:`BudgetExceeded`) an allocation estimated at ``nbytes`` when it exceeds
    what this process may use (:func:`deqrmt._budget.available_memory`: free memory, the
    address-space and cgroup limits); ``what`` says what would be allocated (``"the n×n
    kernel"``)."""
    from ._budget import check_memory

    check_memory(nbytes, f"{name}={show(value)}: {what}", f"choose a smaller {name}")


def size(
    value: Any,
    name: str,
    *,
    lo: int = 1,
    hi: int | None = None,
    nbytes: Callable[[int], float] | None = None,
    what: str = "the computation",
) -> int:
    """A size (a dimension, a sample count): an int in [lo, hi] whose allocation
    ``nbytes(n)`` (the caller's estimate, in bytes) fits the memory this process may use."""
    n = integer(value, name, lo, hi)
    if nbytes is not None:
        memory_budget(nbytes(n), name, n, what)
    return n


def text(value: Any, name: str, what: str = "a string") -> str:
    """``value`` when it is a str; otherwise an InvalidArgument that says ``what`` is wanted."""
    if not isinstance(value, str):
        raise InvalidArgument(f"{name}={show(value)}: expected {what}, got {_type_name(value)}.")
    return value


def choice(value: Any, name: str, options: Sequence[str]) -> str:
    """``value`` when it is one of ``options`` (strings)."""
    if not isinstance(value, str) or value not in options:
        raise InvalidArgument(
            f"{name}={show(value)}: choose one of {', '.join(map(repr, options))}."
        )
    return value


def optional_callable(value: Any, name: str) -> Any:
    """``value`` when it is None or callable."""
    if value is not None and not callable(value):
        raise InvalidArgument(
            f"{name}={show(value)}: expected a function or None, got {_type_name(value)}."
        )
    return value


def name_set(
    value: Any,
    name: str,
    allowed: Sequence[str],
    *,
    error: type[InvalidArgument] = InvalidArgument,
    hint: str = "",
) -> tuple[str, ...]:
    """A non-empty set of names from ``allowed``, in ``allowed``'s order, from a tuple, list or
    set of strings or a comma-separated string (``"a,A"``); ``hint`` ends the message."""
    if isinstance(value, str):
        items: list[Any] = [t.strip() for t in value.split(",") if t.strip()]
    elif isinstance(value, list | tuple | set | frozenset):
        items = list(value)
    else:
        raise error(
            f"{name}={show(value)}: expected names as a tuple, list or set, or a string like "
            f"{','.join(allowed[:2])!r}, got {_type_name(value)}; {hint or _choose(allowed)}"
        )
    bad = [t for t in items if not isinstance(t, str) or t not in allowed]
    if bad or not items:
        head = f"unknown name(s) {', '.join(show(t) for t in bad[:3])}" if bad else "empty"
        raise error(f"{name}={show(value)}: {head}; {hint or _choose(allowed)}")
    return tuple(t for t in allowed if t in items)


def _choose(allowed: Sequence[str]) -> str:
    return f"choose a non-empty subset of {', '.join(allowed)}."


# ---------------------------------------------------------------------------
# Sequences and ranges
# ---------------------------------------------------------------------------


def sequence(
    value: Any,
    name: str,
    what: str,
    *,
    lo: int = 1,
    hi: int = MAX_SEQUENCE,
    item: Callable[[Any, str], T] | None = None,
) -> list[T]:
    """The items of a list, tuple, range or 1-D array, each checked by ``item(v, name)``.

    Refused: a string (``what`` is expected, not text), a mapping, a set (no order), an
    iterator or generator (it would be consumed: pass ``list(it)``), a nested (2-D) array,
    fewer than ``lo`` or more than ``hi`` items.
    """
    if isinstance(value, str | bytes):
        raise InvalidArgument(
            f"{name}={show(value)}: expected a list or tuple of {what}, got a string; write "
            f"[{show(value)}] for a single one."
        )
    if isinstance(value, Mapping | set | frozenset):
        raise InvalidArgument(
            f"{name}={show(value)}: expected a list or tuple of {what}, got {_type_name(value)}."
        )
    ndim = getattr(value, "ndim", None)
    if ndim is not None and ndim != 1:
        raise InvalidArgument(
            f"{name}: expected a 1-D sequence of {what}, got an array of shape "
            f"{tuple(getattr(value, 'shape', ()))}; flatten it first (e.g. x.ravel())."
        )
    if not isinstance(value, Sequence) and ndim is None:
        hint = "pass list(...) of it" if isinstance(value, Iterable) else "give a list or tuple"
        raise InvalidArgument(
            f"{name}={show(value)}: expected a list or tuple of {what}, got "
            f"{_type_name(value)}; {hint}."
        )
    n = len(value)
    if n < lo:
        raise InvalidArgument(
            f"{name}={show(value)}: {n} {what}; give {lo} to {hi}"
            + (" (a list with one item for a single one)." if lo == 1 else ".")
        )
    if n > hi:
        raise BudgetExceeded(f"{name}={show(value)}: {n} {what}; at most {hi} (docs/limits.md).")
    items = list(value)
    for i, v in enumerate(items):
        if isinstance(v, list | tuple | Mapping | set | frozenset) or _ndim(v) > 0:
            raise InvalidArgument(
                f"{name}[{i}]={show(v)}: expected a flat sequence of {what}, got a nested "
                f"{_type_name(v)}."
            )
    return [item(v, f"{name}[{i}]") for i, v in enumerate(items)] if item else items


def choices(value: Any, name: str, what: str, options: Sequence[str]) -> list[str]:
    """A list of ``options`` (strings, repeats allowed), at most four times as many items as
    there are options: :func:`sequence` of :func:`choice`."""
    return sequence(
        value,
        name,
        what,
        hi=len(options) * 4,
        item=lambda v, item_name: choice(v, item_name, options),
    )


def _ndim(v: Any) -> int:
    n = getattr(v, "ndim", 0)
    return n if isinstance(n, int) else 0


def real_sequence(
    value: Any, name: str, *, hi: int = MAX_SEQUENCE, scalar: bool = True
) -> list[Fraction]:
    """Exact numbers from a 1-D list, tuple or array (each by :func:`number`), or from one
    number when ``scalar``: non-empty, finite, real, at most ``hi`` values."""
    if scalar and (
        isinstance(value, str | numbers.Number | decimal.Decimal)
        or hasattr(value, "_mpf_")
        or getattr(value, "ndim", None) == 0
    ):
        if isinstance(value, str) and ("," in value or ":" in value):
            pass  # fall through: a string of several values is not one number
        else:
            return [number(value, name)]
    return sequence(value, name, "real numbers", hi=hi, item=number)


def number_range(value: str, name: str, max_count: int) -> list[Fraction]:
    """``"start:stop:count"``: ``count`` exact numbers from start to stop, both included.

    The count is ASCII digits from 1 to ``max_count``, checked as text before it is read
    (a 5000-digit count is refused at once); start and stop are :func:`number` s.
    """
    parts = [t.strip() for t in value.split(":")]
    if len(parts) == 2:
        a, b = (escape_controls(t, keep="")[:20] for t in parts)
        raise InvalidArgument(
            f"{name}={show(value)}: a range needs its number of points, start:stop:COUNT, "
            f"e.g. '{a}:{b}:5'."
        )
    if len(parts) != 3:
        raise InvalidArgument(
            f"{name}={show(value)}: a range is start:stop:count, e.g. '0.05:0.6:12'."
        )
    a, b, c = parts
    start, stop = number(a, name), number(b, name)
    if not _ASCII_COUNT.fullmatch(c):
        raise InvalidArgument(
            f"{name}={show(value)}: the count in start:stop:count must be a whole number in "
            f"ASCII digits 0-9, from 1 to {max_count}."
        )
    if len(c) > 9 or not 1 <= int(c) <= max_count:  # 5000 digits are refused unread
        raise BudgetExceeded(
            f"{name}={show(value)}: the count in start:stop:count must be from 1 to "
            f"{max_count} (each point is one full computation; docs/limits.md)."
        )
    count = int(c)
    if count > 1 and stop <= start:
        raise InvalidArgument(f"{name}={show(value)}: a range needs start < stop.")
    if count == 1:
        return [start]
    return [start + i * (stop - start) / (count - 1) for i in range(count)]

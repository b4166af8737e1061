"""Text for a terminal: the one place that makes output safe to print (no heavy imports).

Every line the command line prints goes through :func:`for_stream`: it

* replaces control characters and invisible formatting characters (ESC, ``\\r``, BEL, bidi
  overrides, zero-width joiners, lone surrogates from undecodable ``argv`` bytes, …) by
  visible escapes such as ``\\x1b`` or ``\\u202e``, so user text can neither drive the terminal
  nor hide or reorder what is shown;
* falls back to ASCII names (``phi``, ``tau*``, ``alpha*_1``, ``sigma_a^2``) for characters the
  stream's encoding cannot carry (``LC_ALL=C``, ``PYTHONIOENCODING=ascii``), and to
  ``\\uXXXX`` escapes for anything without a name.

The command line installs :class:`SafeStream` over ``sys.stdout`` for the duration of a
command, so plain ``print`` in a command module is safe; error messages use
:func:`one_line`, which also escapes newlines.

Enclosures become text here too, for every command: :func:`ball_text` and
:func:`interval_text` round outward (exactly, in rational arithmetic), so that a printed
ball or interval contains the one computed.
"""

from __future__ import annotations

import contextlib
import decimal
import io
import math
import sys
import unicodedata
from collections.abc import Iterator, Sequence
from fractions import Fraction
from typing import Any, TextIO

from ._errors import FileError

__all__ = [
    "RADIUS_DIGITS",
    "STDOUT_CLOSED",
    "SafeStream",
    "ball_text",
    "escape_controls",
    "for_stream",
    "decimal_value",
    "exact_value",
    "format_decimal",
    "interval_ends",
    "round_decimal",
    "round_ratio",
    "one_line",
    "print_stderr",
    "table",
    "to_ascii",
]

# Names for the characters our own output uses, in the notation of the paper's ASCII
# transcriptions.  Combining marks follow their base letter: "α̇" → "alpha_dot".
_ASCII_NAMES: dict[str, str] = {
    "α": "alpha", "β": "beta", "γ": "gamma", "δ": "delta", "ε": "epsilon", "ζ": "zeta",
    "η": "eta", "θ": "theta", "κ": "kappa", "λ": "lambda", "μ": "mu", "ν": "nu", "ξ": "xi",
    "π": "pi", "ρ": "rho", "σ": "sigma", "τ": "tau", "φ": "phi", "ϕ": "phi", "χ": "chi",
    "ψ": "psi", "ω": "omega", "Γ": "Gamma", "Δ": "Delta", "Θ": "Theta", "Λ": "Lambda",
    "Σ": "Sigma", "Φ": "Phi", "Ψ": "Psi", "Ω": "Omega",
    "₀": "_0", "₁": "_1", "₂": "_2", "₃": "_3", "₄": "_4", "₅": "_5", "₆": "_6", "₇": "_7",
    "₈": "_8", "₉": "_9", "ₗ": "_l", "ₐ": "_a", "ᵦ": "_b",
    "⁰": "^0", "¹": "^1", "²": "^2", "³": "^3", "⁴": "^4", "⁵": "^5", "⁶": "^6", "⁷": "^7",
    "⁸": "^8", "⁹": "^9", "⁻": "^-", "⁺": "^+", "ᵀ": "^T", "ᵗ": "^t",
    "−": "-", "–": "-", "—": "--", "·": "*", "×": "x", "÷": "/", "±": "+/-", "≠": "!=",
    "≤": "<=", "≥": ">=", "≈": "~=", "∼": "~", "←": "<-", "→": "->", "↔": "<->", "⇒": "=>",
    "√": "sqrt", "∞": "inf", "…": "...", "‖": "||", "∈": " in ",
    "°": "o", "′": "'", "″": "''", "“": '"', "”": '"', "‘": "'", "’": "'", "•": "*",
    "│": "|", "─": "-", "✓": "ok", "✗": "x",
    "\u0307": "_dot", "\u0304": "_bar", "\u0303": "_tilde", "\u0302": "_hat", "\u0308": "_ddot",
}  # fmt: skip

# Unicode categories that are never printed as they are: controls (Cc), format characters
# (Cf: bidi overrides, zero-width space/joiner, tag characters), surrogates (Cs: undecodable
# argv bytes), private use (Co), unassigned (Cn), and line/paragraph separators (Zl, Zp).
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def _escape(ch: str) -> str:
    o = ord(ch)
    if o < 0x80:
        return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(ch, f"\\x{o:02x}")
    if o <= 0xFFFF:
        return f"\\u{o:04x}"
    return f"\\U{o:08x}"


def _unsafe(ch: str) -> bool:
    return unicodedata.category(ch) in _UNSAFE_CATEGORIES


def escape_controls(text: str, keep: str = "\n\t") -> str:
    """``text`` with every control/format character except those in ``keep`` made visible.

    Example:
      >>> escape_controls("tanh\\x1b[2J\\u202e")
      'tanh\\\\x1b[2J\\\\u202e'
    """
    if text.isprintable() and not any(c in text for c in "\u2028\u2029"):
        return text  # the common case: nothing to do
    return "".join(_escape(c) if c not in keep and _unsafe(c) else c for c in text)


def to_ascii(text: str) -> str:
    """``text`` with non-ASCII characters replaced by ASCII names or ``\\uXXXX`` escapes.

    Example:
      >>> to_ascii("α*₁ = φ(τ*ξ), σ_a² = 1/5")
      'alpha*_1 = phi(tau*xi), sigma_a^2 = 1/5'
    """
    return _encodable(text, "ascii")


def _encodable(text: str, encoding: str) -> str:
    try:
        text.encode(encoding)
        return text
    except (UnicodeEncodeError, LookupError):
        pass
    out = []
    for ch in text:
        out.append(ch if _fits(ch, encoding) else _name_for(ch, encoding))
    return "".join(out)


def _fits(ch: str, encoding: str) -> bool:
    try:
        ch.encode(encoding)
        return True
    except (UnicodeEncodeError, LookupError):
        return False


def _name_for(ch: str, encoding: str) -> str:
    if ch in _ASCII_NAMES:
        return _ASCII_NAMES[ch]
    parts = unicodedata.normalize("NFKD", ch)
    if parts != ch and all(_fits(p, encoding) or p in _ASCII_NAMES for p in parts):
        return "".join(p if _fits(p, encoding) else _ASCII_NAMES[p] for p in parts)
    return _escape(ch)


def for_stream(text: str, encoding: str | None, *, keep: str = "\n\t") -> str:
    """``text`` made safe for a stream with ``encoding``: controls escaped, ASCII fallback."""
    return _encodable(escape_controls(text, keep), encoding or "utf-8")


def one_line(text: str, encoding: str | None = None) -> str:
    """``text`` as one safe line (newlines and tabs escaped too), e.g. for an error message."""
    return for_stream(text.strip(), encoding, keep="")


@contextlib.contextmanager
def _stdout_errors() -> Iterator[None]:
    """A failing write (full disk, I/O error) becomes a :class:`deqrmt.FileError`; a closed
    pipe stays a BrokenPipeError, which the command line treats as the reader leaving."""
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as e:
        raise FileError(f"cannot write to standard output: {e.strerror or e}.") from None


#: The message of a write to a standard output that was closed when the process started.
STDOUT_CLOSED = "cannot write to standard output: it is closed (started with >&-)."


def print_stderr(line: str) -> None:
    """Print ``line`` on stderr as one safe line (controls escaped, ASCII where needed); where
    stderr is closed (``2>&-``) or broken, say nothing: there is nowhere to say it."""
    err = sys.stderr
    if err is None:
        return
    try:
        err.write(one_line(line, getattr(err, "encoding", None)) + "\n")
        err.flush()
    except (OSError, ValueError):
        pass  # stderr itself is gone: nothing more can be said


class SafeStream(io.TextIOBase):
    """A text stream that passes everything written through :func:`for_stream` to ``raw``.

    ``buffer``, ``fileno``, ``isatty`` and ``encoding`` are those of ``raw``, so code that
    writes bytes (``write_output("-", ...)``) or asks for a terminal still can.  ``raw`` is
    None where the process started with standard output closed (``>&-``): then the first
    write, or a request for ``buffer``, raises :class:`deqrmt.FileError` (exit 2, one line).
    """

    def __init__(self, raw: TextIO | None) -> None:
        super().__init__()
        self.raw = raw
        self.failed: OSError | None = None  # the first write error

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.raw, "encoding", None) or "utf-8"

    @property
    def buffer(self) -> io.BufferedIOBase | None:
        if self.raw is None:
            raise FileError(STDOUT_CLOSED)
        return getattr(self.raw, "buffer", None)

    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        if self.raw is None:
            if not s:
                return 0
            self.failed = FileError(STDOUT_CLOSED)
            raise self.failed
        try:
            with _stdout_errors():
                self.raw.write(for_stream(s, self.encoding))
        except OSError as e:  # FileError, BrokenPipeError
            self.failed = e
            raise
        return len(s)

    def flush(self) -> None:
        """Flush ``raw``; raise again a write error that a caller swallowed (argparse's
        ``--help`` ignores OSError), so that the output lost is reported once, at the end."""
        if self.failed is not None:
            raise self.failed
        if self.raw is None:
            return  # nothing was written
        try:
            with _stdout_errors():
                self.raw.flush()
        except OSError as e:
            self.failed = e
            raise

    def isatty(self) -> bool:
        return bool(getattr(self.raw, "isatty", lambda: False)())

    def fileno(self) -> int:
        if self.raw is None:
            raise io.UnsupportedOperation(STDOUT_CLOSED)
        return self.raw.fileno()


def table(rows: Sequence[Sequence[str]], title: str, encoding: str | None = None) -> str:
    """A titled, column-aligned table (any number of columns; the last is left unpadded).

    Cells are rendered for ``encoding`` (default: that of ``sys.stdout``) first, so the columns
    stay aligned when Greek symbols fall back to ASCII names.
    """
    enc = encoding or getattr(sys.stdout, "encoding", None) or "utf-8"
    cells = [tuple(for_stream(c, enc) for c in r) for r in rows]
    title = for_stream(title, enc)
    ncol = max(len(r) for r in cells)
    widths = [max(len(r[i]) for r in cells if i < len(r)) for i in range(ncol - 1)]
    lines = [title, "-" * len(title)]
    for r in cells:
        head = "  ".join(f"{c:<{w}}" for c, w in zip(r[:-1], widths, strict=False))
        lines.append(f"{head}  {r[-1]}" if head else r[-1])
    return "\n".join(lines)


# --- enclosures as text ---------------------------------------------------------------------
# A ball or an interval that becomes text must still enclose (the brief: "an enclosure printed
# encloses").  Rounding the midpoint to fewer digits moves it; the printed radius absorbs that
# move and is rounded up, as Arb's own ``str(radius=True)`` does; an interval's ends are
# rounded outward.  Exact rational arithmetic throughout: no float, no working precision.

#: significant digits of a printed radius
RADIUS_DIGITS = 3


def exact_value(x: Any, name: str = "x") -> Fraction:
    """``x`` as an exact Fraction: int, Fraction, Decimal, float (its binary value) or an
    mpmath mpf (anything with ``_mpf_``), converted without rounding."""
    if isinstance(x, Fraction):
        return x
    if isinstance(x, int | float | decimal.Decimal) and not isinstance(x, bool):
        if not math.isfinite(x):
            raise ValueError(f"{name}={x!r} is not finite")
        return Fraction(x)
    raw = getattr(x, "_mpf_", None)
    if raw is None:
        raise TypeError(f"{name}: expected an exact real number, got {type(x).__name__}")
    sign, man, exp, bc = raw
    if not man:
        if bc:  # mpmath's inf, -inf and nan have a zero mantissa and a nonzero bit count
            raise ValueError(f"{name}={x!r} is not finite")
        return Fraction(0)
    v = Fraction(int(man) << int(exp)) if exp >= 0 else Fraction(int(man), 1 << -int(exp))
    return -v if sign else v


def round_decimal(v: Fraction, n: int, mode: str = "nearest") -> tuple[int, int, int]:
    """(sign, N, e): v rounded to n significant digits is sign·N·10^(e−n+1), 10^(n−1) ≤ N < 10^n.

    ``mode``: "nearest" (ties away from 0, as ``mpmath.nstr``), "floor" (toward −∞) or
    "ceiling" (toward +∞).
    """
    return round_ratio(v.numerator, v.denominator, n, mode)


def round_ratio(num: int, den: int, n: int, mode: str = "nearest") -> tuple[int, int, int]:
    """:func:`round_decimal` of num/den (``den`` > 0, the ratio need not be reduced): integers
    only, since Fraction arithmetic takes a gcd at every step, quadratic in the size, and a
    tiny moment (E[cos(1000τξ)] ≈ 10^-217147) is a ratio of 700,000-bit integers."""
    if num == 0:
        return (0, 0, 0)
    sign = -1 if num < 0 else 1
    num = abs(num)
    # floor(log10 |v|) from the bit lengths (str() of a huge int hits Python's digit limit),
    # within a couple of units; one big power of ten, then exact steps by 10: a/b = |v|/10^e
    e = math.floor((num.bit_length() - den.bit_length()) * math.log10(2))
    a, b = (num, den * 10**e) if e >= 0 else (num * 10**-e, den)
    while a >= 10 * b:
        b, e = 10 * b, e + 1
    while a < b:
        a, e = 10 * a, e - 1
    p, q = a * 10 ** (n - 1), b  # |v|·10^(n−1−e) = p/q, in [10^(n−1), 10^n)
    if mode == "nearest":
        digits = (2 * p + q) // (2 * q)  # floor(p/q + 1/2)
    elif (mode == "ceiling") == (sign > 0):  # away from zero
        digits = -(-p // q)
    else:  # toward zero
        digits = p // q
    if digits == 10**n:
        digits, e = 10 ** (n - 1), e + 1
    return (sign, digits, e)


def decimal_value(rounded: tuple[int, int, int], n: int) -> Fraction:
    sign, digits, e = rounded
    return sign * digits * Fraction(10) ** (e - n + 1)


def format_decimal(rounded: tuple[int, int, int], n: int, *, strip_zeros: bool = False) -> str:
    """A rounded decimal in ``mpmath.nstr``'s style: fixed near unity, else ``1.5e-7``."""
    sign, digits_int, exponent = rounded
    if sign == 0:
        return "0.0"
    digits = str(digits_int)
    min_fixed, max_fixed = min(-(n // 3), -5), n
    if min_fixed < exponent < max_fixed:
        if exponent < 0:
            digits = "0" * (-exponent) + digits
            split = 1
        else:
            split = exponent + 1  # ≤ n: exponent < max_fixed = n, and there are n digits
        exponent = 0
    else:
        split = 1
    text = digits[:split] + "." + digits[split:]
    if strip_zeros:  # mpmath's rule: "2." only gets its "0" back when zeros are stripped
        text = text.rstrip("0")
        if text.endswith("."):
            text += "0"
    text = ("-" if sign < 0 else "") + text
    if exponent == 0:
        return text
    return text + ("e+" if exponent > 0 else "e") + str(exponent)


def ball_text(mid: Any, rad: Any, digits: int) -> tuple[str, str]:
    """A ball [mid ± rad] as (midpoint, radius) decimal text whose ball contains it.

    The midpoint is ``mid`` rounded to ``digits`` significant digits (to nearest, trailing
    zeros kept); the radius is ``rad`` widened by that rounding, |printed midpoint − mid|, and
    rounded up to :data:`RADIUS_DIGITS` significant digits (``"0"`` only for an exact ball
    printed exactly).  Both are exact numbers (int, Fraction, Decimal, float, mpmath mpf).

    Example:
      >>> ball_text(Fraction(1, 3), Fraction(1, 10**30), 10)
      ('0.3333333333', '3.34e-11')
    """
    m, r = exact_value(mid, "mid"), exact_value(rad, "rad")
    if r < 0:
        raise ValueError(f"rad={rad!r} is negative")
    shown = round_decimal(m, digits, "nearest")
    total = r + abs(decimal_value(shown, digits) - m)
    radius = (
        "0"
        if total == 0
        else format_decimal(
            round_decimal(total, RADIUS_DIGITS, "ceiling"), RADIUS_DIGITS, strip_zeros=True
        )
    )
    return format_decimal(shown, digits, strip_zeros=False), radius


def interval_ends(lo: Any, hi: Any, digits: int) -> tuple[str, str]:
    """An interval [lo, hi] as decimal text rounded outward: ``lo`` down, ``hi`` up, each to
    ``digits`` significant digits, so the printed interval contains it.

    Example:
      >>> interval_ends(Fraction(1, 3), Fraction(2, 3), 4)
      ('0.3333', '0.6667')
    """
    a, b = exact_value(lo, "lo"), exact_value(hi, "hi")
    if a > b:
        raise ValueError(f"lo={lo!r} exceeds hi={hi!r}")
    return (
        format_decimal(round_decimal(a, digits, "floor"), digits, strip_zeros=False),
        format_decimal(round_decimal(b, digits, "ceiling"), digits, strip_zeros=False),
    )

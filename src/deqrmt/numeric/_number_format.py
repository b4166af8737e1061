"""An exact binary number formatted as ``format(float, spec)`` would, rounded from its exact value.

``format(v, ".5f")`` of a :class:`~deqrmt.numeric._verified.Verified` must not go through a float:
a value carried at 100 digits rounds from those, and a float would round twice (and overflow
past 1.8e308).  :func:`format_exact` takes the exact value as a Fraction of a power of two and
follows the float rules of the format mini-language (types ``e E f F g G n %``, default
precision 6, ``g`` strips trailing zeros unless ``#``, two exponent digits, fill, alignment,
sign, ``z``, ``#``, zero padding and grouping); the digits are rounded half-even from the
exact value, as Python rounds a float's exact binary value.  ``n`` is formatted as ``g``.
"""

from __future__ import annotations

import decimal
import re
from fractions import Fraction

from .._errors import BudgetExceeded

__all__ = ["MAX_FORMAT_BITS", "MAX_FORMAT_WIDTH", "format_exact"]

#: The largest numerator/denominator formatted (bits): a hand-built Verified of 2^(10^9)
#: is refused instead of being expanded into 300 million digits.
MAX_FORMAT_BITS = 1 << 20
#: The largest width or precision of a spec: ``.100000000f`` would build a 100 MB string.
MAX_FORMAT_WIDTH = 100_000

_SPEC = re.compile(
    r"(?:(?P<fill>.)?(?P<align>[<>=^]))?(?P<sign>[-+ ])?(?P<z>z)?(?P<alt>\#)?(?P<zero>0)?"
    r"(?P<width>[0-9]+)?(?P<grouping>[,_])?(?:\.(?P<precision>[0-9]+))?(?P<type>[eEfFgGn%])?",
    re.DOTALL,
)


def _exact_decimal(x: Fraction) -> decimal.Decimal:
    """``x`` (a dyadic rational: its denominator a power of two) as an exact Decimal."""
    num, den = x.numerator, x.denominator
    k = den.bit_length() - 1
    assert den == 1 << k, "not a dyadic rational"
    if max(abs(num).bit_length(), k) > MAX_FORMAT_BITS:
        raise BudgetExceeded(
            f"format: the value has more than {MAX_FORMAT_BITS} bits; format float(v) or use "
            "v.text (its verified digits)."
        )
    digits = num * 5**k  # num / 2^k = num·5^k / 10^k exactly
    with decimal.localcontext() as ctx:
        ctx.prec = abs(digits).bit_length() * 30103 // 100000 + 30
        ctx.Emax, ctx.Emin = decimal.MAX_EMAX, decimal.MIN_EMIN
        return decimal.Decimal(digits).scaleb(-k)


def _shift(d: decimal.Decimal, n: int) -> decimal.Decimal:
    """``d·10^n`` exactly (``scaleb`` and ``*`` round to the context's precision)."""
    t = d.as_tuple()
    assert isinstance(t.exponent, int)
    return decimal.Decimal((t.sign, t.digits, t.exponent + n))


def _round(d: decimal.Decimal, exponent: int) -> decimal.Decimal:
    """``d`` rounded half-even to a multiple of 10^exponent (exact: ``d`` is exact)."""
    with decimal.localcontext() as ctx:
        ctx.prec = max(d.adjusted() - exponent + 2, 1) + 2
        ctx.Emax, ctx.Emin = decimal.MAX_EMAX, decimal.MIN_EMIN
        ctx.rounding = decimal.ROUND_HALF_EVEN
        return d.quantize(decimal.Decimal(1).scaleb(exponent))


def _significant(d: decimal.Decimal, p: int) -> tuple[decimal.Decimal, int]:
    """``d`` rounded to ``p`` significant digits, and the power of ten of its leading digit."""
    if d == 0:
        return _round(d, -(p - 1)), 0
    r = _round(d, d.adjusted() - p + 1)
    if r.adjusted() > d.adjusted():  # 9.99… rounded up to 10.0…: one digit fewer
        r = _round(d, d.adjusted() - p + 2)
    return r, r.adjusted()


def _body(d: decimal.Decimal, kind: str, p: int, alt: bool, strip: bool) -> str:
    """The digits (no sign) of ``|d|`` in notation ``kind`` (``f`` or ``e``) with ``p`` places
    (``strip``: trailing zeros dropped, as ``g`` does unless ``alt``)."""
    a = d.copy_abs()
    if kind == "f":
        text = f"{_round(a, -p):f}"
        if "." not in text and p > 0:
            text += "." + "0" * p
    else:
        r, e10 = _significant(a, p + 1)
        mantissa = _shift(r, -e10)
        text = f"{_round(mantissa, -p):f}"
        if p > 0 and "." not in text:
            text += "." + "0" * p
        sign = "-" if e10 < 0 else "+"
        text += f"e{sign}{abs(e10):02d}"
    if strip and not alt:
        head, _, exp = text.partition("e")
        if "." in head:
            head = head.rstrip("0").rstrip(".")
        text = head + ("e" + exp if exp else "")
    if alt and "." not in text:
        head, _, exp = text.partition("e")
        text = head + "." + ("e" + exp if exp else "")
    return text


def _group(text: str, sep: str) -> str:
    head, dot, tail = text.partition(".")
    if "e" in head:
        head, e, exp = head.partition("e")
        tail, exp = "", e + exp
    else:
        exp = ""
    groups: list[str] = []
    while len(head) > 3:
        groups.insert(0, head[-3:])
        head = head[:-3]
    groups.insert(0, head)
    return sep.join(groups) + dot + tail + exp


def _zero_pad(body: str, width: int, sep: str | None) -> str:
    """Leading zeros to ``width`` characters, grouped like the integer part (float's rule: the
    result may exceed ``width`` rather than start with a separator)."""
    if not sep:
        return "0" * max(width - len(body), 0) + body
    cut = next((k for k, ch in enumerate(body) if ch in ".eE%"), len(body))
    digits, rest = body[:cut].replace(sep, ""), body[cut:]
    while len(_group(digits, sep)) + len(rest) < width:
        digits = "0" + digits
    return _group(digits, sep) + rest


def format_exact(x: Fraction, spec: str, plain: str) -> str:
    """``x`` formatted per ``spec`` with float's rules; ``plain`` is the text for an empty
    presentation type without precision (float uses ``repr``; a Verified its verified digits).

    Raises ValueError for a malformed spec, as ``format(1.0, spec)`` does.

    Example:
      >>> format_exact(Fraction(1, 8), ".2f", "0.125"), format_exact(Fraction(3, 8), ".1%", "")
      ('0.12', '37.5%')
    """
    m = _SPEC.fullmatch(spec)
    if m is None:
        raise ValueError(f"Invalid format specifier {spec[:40]!r} for a Verified number")
    fill, align = m["fill"] or " ", m["align"]
    kind, alt, sep = m["type"] or "", bool(m["alt"]), m["grouping"]
    if m["zero"] and align is None:
        fill, align = "0", "="
    align = align or ">"
    if max(len(m["width"] or ""), len(m["precision"] or "")) > 9:  # before int(): no 10^4300
        raise BudgetExceeded(f"format spec {spec[:40]!r}: a width or precision of 10 digits.")
    width = int(m["width"] or 0)
    precision = None if m["precision"] is None else int(m["precision"])
    if max(width, precision or 0) > MAX_FORMAT_WIDTH:
        raise BudgetExceeded(
            f"format spec {spec[:40]!r}: a width or precision above {MAX_FORMAT_WIDTH}; "
            "ask for fewer characters."
        )
    if not kind and precision is None:
        negative, text = plain.startswith("-"), plain.lstrip("-")
        if sep and "e" not in text.lower():
            text = _group(text, sep)
    else:
        d = _exact_decimal(x)
        p = 6 if precision is None else precision
        if kind == "%":
            d = _shift(d, 2)
        lower = kind.lower()
        if lower in ("f", "%"):
            text = _body(d, "f", p, alt, strip=False)
        elif lower == "e":
            text = _body(d, "e", p, alt, strip=False)
        else:  # g, G, n, or no type with a precision: float's 'g' rule
            p = max(p, 1)
            r, e10 = _significant(d.copy_abs(), p)
            if -4 <= e10 < (p - 1 if not kind else p):
                text = _body(d, "f", p - 1 - e10, alt, strip=True)
                if not kind and "." not in text:  # the empty type keeps one decimal place
                    text += ".0"
            else:
                text = _body(d, "e", p - 1, alt, strip=True)
        mantissa = text.partition("e")[0]
        negative = d < 0 and not (m["z"] and set(mantissa) <= set("0."))
        if sep:
            text = _group(text, sep)
        if kind in ("E", "F", "G"):
            text = text.upper()
        if kind == "%":
            text += "%"
    sign = "-" if negative else {"+": "+", " ": " "}.get(m["sign"] or "", "")
    if align == "=" and fill == "0" and m["zero"]:
        return sign + _zero_pad(text, width - len(sign), sep)
    pad = max(width - len(sign) - len(text), 0)
    if align == "<":
        return sign + text + fill * pad
    if align == "^":
        return fill * (pad // 2) + sign + text + fill * (pad - pad // 2)
    if align == "=":
        return sign + fill * pad + text
    return fill * pad + sign + text

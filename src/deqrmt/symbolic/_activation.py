"""Activations as exact SymPy expressions in one real variable ``x``.

An activation is split once into smooth *pieces* between its kinks (the points where
Max/Min/Abs/Heaviside/sign/Piecewise switch branch).  Everything downstream, closed-form
Gaussian integrals, quadrature and the weak derivatives of the theorems, works piece by piece,
so a kink never reaches a derivative and no DiracDelta is ever formed.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import sympy as sp

from .. import _arguments
from .._errors import ActivationError, InvalidArgument, UnknownActivation
from .._text import escape_controls

__all__ = [
    "X",
    "Activation",
    "Piece",
    "LIBRARY",
    "Entry",
    "Price",
    "TORCH_NAMES",
    "library_activation",
    "activation_names",
]

#: The activation's argument.  Real, so that sqrt(x**2) is |x| and conjugates vanish.
X = sp.Symbol("x", real=True)


def exact(expr: sp.Expr | int | str) -> sp.Expr:
    """Return ``expr`` with every Float replaced by the Rational of its decimal digits.

    `0.1` becomes `1/10`, not the binary double nearest to it: a user who typed 0.1 meant 1/10.
    Anything that is not already SymPy is read as a number by the argument rules (never by
    ``sympify``, which would evaluate a string as Python).
    """
    if not isinstance(expr, sp.Basic):
        f = _arguments.number(expr, "value")
        return sp.Rational(f.numerator, f.denominator)
    e = expr
    floats = {f: sp.Rational(str(f)) for f in e.atoms(sp.Float)}
    return e.xreplace(floats) if floats else e


@dataclasses.dataclass(frozen=True)
class Piece:
    """φ restricted to the open interval (lo, hi): a smooth (analytic) expression in `x`."""

    lo: sp.Expr
    hi: sp.Expr
    expr: sp.Expr


def _branch_at(pw: sp.Piecewise, point: sp.Expr) -> sp.Expr:
    for value, cond in pw.args:
        if cond is sp.true or bool(cond.subs(X, point)):
            return value
    raise ActivationError(f"Piecewise {pw} is undefined at x = {point}.")


def _select(expr: sp.Expr, point: sp.Expr) -> sp.Expr:
    """The branch of every Piecewise inside `expr` that holds at `point`."""
    while expr.has(sp.Piecewise):
        expr = expr.replace(lambda e: isinstance(e, sp.Piecewise), lambda pw: _branch_at(pw, point))
    return expr


def _breakpoints(expr: sp.Expr) -> list[sp.Expr]:
    points: set[sp.Expr] = set()
    for pw in expr.atoms(sp.Piecewise):
        for _, cond in pw.args:
            for rel in cond.atoms(sp.core.relational.Relational):
                diff = sp.expand(rel.lhs - rel.rhs)
                if not diff.has(X):
                    continue
                poly = sp.Poly(diff, X) if diff.is_polynomial(X) else None
                if poly is None or poly.degree() != 1:
                    raise ActivationError(
                        f"cannot locate the kink of condition {rel}: only conditions linear "
                        "in x are supported."
                    )
                a, b = poly.all_coeffs()
                points.add(sp.nsimplify(-b / a))
    real = [p for p in points if p.is_real]
    return sorted(real, key=lambda p: float(p))


def _never_zero(den: sp.Expr) -> bool:
    """``den`` is a product of nonzero numbers and exponentials (``denom`` of e^{−u} is e^{u}).

    Decided structurally, before ``solveset``: its answer would be the same (no root), but each
    bounded attempt clears SymPy's cache, which slows everything derived after it.
    """
    for f in sp.Mul.make_args(den):
        base = f.base if f.is_Pow and f.exp.is_Integer else f
        if not (isinstance(base, sp.exp) or (base.is_Rational and base != 0)):
            return False
    return True


def _check_no_pole(name: str, expr: sp.Expr, lo: sp.Expr, hi: sp.Expr) -> None:
    """Refuse a piece whose denominator vanishes inside its interval (φ = 1/x, …).

    A polynomial denominator's real roots are isolated exactly; any other gets one ``solveset``
    within a fixed call budget (no clock: the verdict must not depend on machine load).
    """
    from ._effort import SYMPY_SOLVESET_CALLS, bounded

    den = sp.denom(sp.together(expr))
    if not den.has(X) or _never_zero(den):
        return
    roots: list[sp.Expr] | None = None
    if den.is_polynomial(X):
        try:
            roots = sp.Poly(den, X).real_roots()
        except (NotImplementedError, sp.PolynomialError):
            roots = None  # irrational coefficients: let solveset try
    if roots is None:
        found = bounded(lambda: sp.solveset(den, X, sp.Reals), SYMPY_SOLVESET_CALLS)
        if not isinstance(found, sp.FiniteSet):
            return  # undecided: the quadrature's checks still apply
        roots = list(found)
    for r in roots:
        try:
            inside = (lo is sp.S.NegativeInfinity or bool(r > lo)) and (
                hi is sp.S.Infinity or bool(r < hi)
            )
        except TypeError:
            continue  # a comparison SymPy cannot decide
        if inside:
            raise ActivationError(
                f"{name} has a pole at x = {r}: Gaussian moments diverge; the theorems need a "
                "Lipschitz φ."
            )


def _nonzero_somewhere(expr: sp.Expr, piece: Piece) -> bool:
    """True when ``expr`` is provably nonzero at a rational point inside ``piece``'s interval
    (30-digit evaluation, the value far above its error); False means undecided."""
    lo = sp.Integer(-3) if piece.lo.is_infinite else piece.lo
    hi = sp.Integer(3) if piece.hi.is_infinite else piece.hi
    if piece.lo.is_infinite and not piece.hi.is_infinite:
        lo = hi - 3
    if piece.hi.is_infinite and not piece.lo.is_infinite:
        hi = lo + 3
    for t in (sp.Rational(3, 7), sp.Rational(11, 13)):
        v = expr.subs(X, lo + t * (hi - lo)).evalf(30)
        if v.is_real and v.is_finite and abs(v) > sp.Float("1e-15"):
            return True
    return False


@dataclasses.dataclass(frozen=True)
class Activation:
    """A pointwise activation φ(x), exact.

    Attributes:
      name: a label (library name or the user's expression).
      expr: SymPy expression in :data:`X` with exact (Rational/symbolic) constants.
    """

    name: str
    expr: sp.Expr

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise InvalidArgument(
                f"Activation name={type(self.name).__name__}: the name must be a string."
            )
        if not isinstance(self.expr, sp.Expr):
            raise InvalidArgument(f"Activation {self.name!r}: expr must be a SymPy expression.")
        extra = self.expr.free_symbols - {X}
        if extra:
            raise InvalidArgument(
                f"Activation {self.name!r} has free symbols {sorted(map(str, extra))}; "
                "only `x` is allowed (give parameters numeric values)."
            )
        if self.expr.atoms(sp.Float):
            object.__setattr__(self, "expr", exact(self.expr))
        if not self.expr.has(X):
            raise InvalidArgument(
                f"activation {self.name!r} is the constant {self.expr}; it must depend on x."
            )
        if self.expr.has(sp.zoo, sp.oo, -sp.oo, sp.nan, sp.I):
            raise InvalidArgument(
                f"activation {self.name!r} simplifies to {self.expr}, which is not a finite real "
                "function (a log(0), 1/0 or complex constant?)."
            )

    def __repr__(self) -> str:
        # the dataclass repr, with the control and bidi characters a hand-built name (or an
        # undefined function's name in expr) may hold escaped the way repr(str) escapes them
        return escape_controls(f"Activation(name={self.name!r}, expr={self.expr!r})", keep="")

    @property
    def x(self) -> sp.Symbol:
        return X

    @functools.cached_property
    def _piecewise(self) -> sp.Expr:
        e = self.expr.rewrite(sp.Piecewise)
        return sp.piecewise_fold(e) if e.has(sp.Piecewise) else e

    @functools.cached_property
    def kinks(self) -> tuple[sp.Expr, ...]:
        """Points where φ switches branch (sorted, exact)."""
        return tuple(_breakpoints(self._piecewise))

    @functools.cached_property
    def pieces(self) -> tuple[Piece, ...]:
        """φ on each interval between consecutive kinks, each a smooth expression."""
        bounds = [sp.S.NegativeInfinity, *self.kinks, sp.S.Infinity]
        out = []
        for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
            if lo is sp.S.NegativeInfinity:
                mid = hi - 1 if hi is not sp.S.Infinity else sp.S.Zero
            elif hi is sp.S.Infinity:
                mid = lo + 1
            else:
                mid = (lo + hi) / 2
            piece = _select(self._piecewise, mid)
            # Heaviside/sign inside a piece are constant there; freeze them.
            piece = piece.replace(
                lambda e: isinstance(e, (sp.Heaviside, sp.sign)),
                lambda e, at=mid: e.subs(X, at),
            )
            piece = sp.simplify(piece) if piece.has(sp.Abs) else piece
            if piece.has(sp.zoo, sp.oo, -sp.oo, sp.nan):
                raise ActivationError(f"{self.name} is infinite on ({lo}, {hi}): {piece}.")
            _check_no_pole(self.name, piece, lo, hi)
            out.append(Piece(lo, hi, piece))
        return tuple(out)

    @functools.cached_property
    def derivative_pieces(self) -> tuple[Piece, ...]:
        """Classical φ' on each piece (no DiracDelta: kinks are excluded from the intervals)."""
        return tuple(Piece(p.lo, p.hi, sp.diff(p.expr, X)) for p in self.pieces)

    @functools.cached_property
    def is_continuous(self) -> bool:
        """True when the pieces join at every kink (φ' then has no Dirac mass)."""
        ps = self.pieces
        for left, right in zip(ps[:-1], ps[1:], strict=True):
            k = left.hi
            if sp.simplify(left.expr.subs(X, k) - right.expr.subs(X, k)) != 0:
                return False
        return True

    @functools.cached_property
    def parity(self) -> int:
        """+1 if φ is even, -1 if odd, 0 otherwise (decided exactly, piece by piece)."""
        ps = self.pieces
        if [sp.simplify(-k) for k in reversed(self.kinks)] != list(self.kinks):
            return 0
        for sign in (-1, 1):
            ok = True
            for p, q in zip(ps, reversed(ps), strict=True):
                diff = sp.expand(p.expr.subs(X, -X) - sign * q.expr)
                # a clearly nonzero value at a point of the piece decides it at once; only a
                # possible zero needs the (seconds-long) symbolic simplification
                if diff != 0 and (
                    _nonzero_somewhere(diff, p) or sp.simplify(diff.rewrite(sp.exp)) != 0
                ):
                    ok = False
                    break
            if ok:
                return sign
        return 0

    @functools.cached_property
    def derivative_parity(self) -> int:
        """The parity of φ', φ'', … as far as Gaussian moments see it: +1 even, -1 odd, 0 neither.

        For k ≥ 1, E[φ^(k)(τξ)] = τ^(-k) E[He_k(ξ) φ(τξ)] does not see a constant added to φ
        (E[He_k(ξ)] = 0), so what decides which of them vanish is the parity of φ − c, with
        c the mean of φ's one-sided values at 0: sigmoid − 1/2 is odd, so E[sigmoid''] = 0.
        """
        if self.parity:
            return self.parity
        left = right = None
        for p in self.pieces:
            if p.hi == 0:  # 0 is a kink: the one-sided values of the two pieces
                left = p.expr.subs(X, 0)
            elif p.lo == 0:
                right = p.expr.subs(X, 0)
            elif bool(p.lo < 0) and bool(p.hi > 0):
                left = right = p.expr.subs(X, 0)
        if left is None or right is None:
            return 0
        c = sp.nsimplify((left + right) / 2)
        if c == 0 or not c.is_real or not c.is_finite:
            return 0
        # a constant shift cannot make φ even (φ(−x) − φ(x) does not change): only odd remains
        return -1 if Activation(f"{self.name} - c", self.expr - c).parity == -1 else 0

    def centered(self, c: sp.Expr) -> Activation:
        """φ − c, the activation the theorems see once centered at its fixed point."""
        return Activation(f"{self.name} - c", self.expr - c)


# ---------------------------------------------------------------------------
# The library.  Each entry is (builder, parameter names, defaults); parameters are exact.
# ---------------------------------------------------------------------------


def _relu() -> sp.Expr:
    return sp.Max(X, 0)


_ONE_PERCENT = sp.Rational(1, 100)


def _leaky_relu(slope: sp.Expr = _ONE_PERCENT) -> sp.Expr:
    if not (0 <= slope < 1):
        raise InvalidArgument(f"leaky_relu expects 0 <= slope < 1, got slope={slope}.")
    return sp.Max(X, slope * X)


def _hard_tanh(a: sp.Expr = sp.S.One, c: sp.Expr = sp.S.One) -> sp.Expr:
    if not c > 0:
        raise InvalidArgument(f"hard_tanh expects c > 0, got c={c}.")
    return a * sp.Min(sp.Max(X, -c), c)


def _elu(alpha: sp.Expr = sp.S.One) -> sp.Expr:
    return sp.Piecewise((X, X > 0), (alpha * (sp.exp(X) - 1), True))


#: torch's SELU constants (torch.nn.SELU's documentation), exact as the decimals printed there
_SELU_ALPHA = sp.Rational("1.6732632423543772848170429916717")
_SELU_SCALE = sp.Rational("1.0507009873554804934193349852946")
_HALF = sp.Rational(1, 2)


def _selu() -> sp.Expr:
    return _SELU_SCALE * _elu(_SELU_ALPHA)


def _celu(alpha: sp.Expr = sp.S.One) -> sp.Expr:
    if not alpha > 0:
        raise InvalidArgument(
            f"celu expects alpha > 0, got alpha={alpha} (below 0 it grows like e^(-x/alpha))."
        )
    return sp.Piecewise((X, X > 0), (alpha * (sp.exp(X / alpha) - 1), True))


def _clip(u: sp.Expr, lo: sp.Expr, hi: sp.Expr) -> sp.Expr:
    return sp.Min(sp.Max(u, lo), hi)


def _softshrink(lambd: sp.Expr = _HALF) -> sp.Expr:
    if not lambd >= 0:
        raise InvalidArgument(f"softshrink expects lambd >= 0, got lambd={lambd}.")
    return X - _clip(X, -lambd, lambd)


def _hardshrink(lambd: sp.Expr = _HALF) -> sp.Expr:
    if not lambd > 0:
        raise InvalidArgument(f"hardshrink expects lambd > 0, got lambd={lambd}.")
    return sp.Piecewise((X, X > lambd), (X, X < -lambd), (0, True))  # noqa: SIM300


def _gelu_tanh() -> sp.Expr:
    # torch's GELU(approximate='tanh'), its constant 0.044715 exact as printed
    inner = sp.sqrt(2 / sp.pi) * (X + sp.Rational("0.044715") * X**3)
    return X * (1 + sp.tanh(inner)) / 2


def _polynomial(*coeffs: sp.Expr) -> sp.Expr:
    if not coeffs:
        raise InvalidArgument(
            "polynomial needs its coefficients c0, c1, ...: polynomial(0, 1, 0.25)."
        )
    return sp.Add(*[c * X**k for k, c in enumerate(coeffs)])


class Price(NamedTuple):
    """What one application of a library activation costs the parser's limits
    (:mod:`._parse_limits`), declared beside its formula so that no table elsewhere can miss it.

    Attributes:
      kinks: kinks it adds per application (relu 1, hard_tanh 2).
      calls: transcendental calls its formula nests (softplus 1, mish = x·tanh(softplus(x)) 2;
        0 for a piecewise-polynomial activation): a call at nesting level d weighs d + 1.
      heavy: one more for an erf-type call (slow at many digits).
      degree: its degree in x when it is a polynomial (identity 1, quadratic 2).
    """

    kinks: int = 0
    calls: int = 0
    heavy: bool = False
    degree: int | None = None


class Entry(NamedTuple):
    """One library activation: its builder (parameters → formula in x), its formula as text,
    and its parse price."""

    builder: Callable[..., sp.Expr]
    text: str
    price: Price


#: The library: adding an activation is one entry here (its price included).
LIBRARY: dict[str, Entry] = {
    "relu": Entry(_relu, "max(x, 0)", Price(kinks=1)),
    "leaky_relu": Entry(_leaky_relu, "max(x, slope·x); slope defaults to 0.01", Price(kinks=1)),
    "tanh": Entry(lambda: sp.tanh(X), "tanh(x)", Price(calls=1)),
    "hard_tanh": Entry(_hard_tanh, "a·clip(x, −c, c); a = c = 1 by default", Price(kinks=2)),
    "erf": Entry(lambda: sp.erf(X), "erf(x)", Price(calls=1, heavy=True)),
    "sigmoid": Entry(lambda: 1 / (1 + sp.exp(-X)), "1/(1 + e^{−x})", Price(calls=1)),
    "silu": Entry(lambda: X / (1 + sp.exp(-X)), "x·sigmoid(x)", Price(calls=1)),
    "swish": Entry(lambda: X / (1 + sp.exp(-X)), "x·sigmoid(x) (= silu)", Price(calls=1)),
    "gelu": Entry(
        lambda: X * (1 + sp.erf(X / sp.sqrt(2))) / 2, "x·Φ(x), exact", Price(calls=1, heavy=True)
    ),
    "softplus": Entry(lambda: sp.log(1 + sp.exp(X)), "log(1 + e^x)", Price(calls=1)),
    "elu": Entry(
        _elu, "x for x > 0, α(e^x − 1) otherwise; α = 1 by default", Price(kinks=1, calls=1)
    ),
    "sin": Entry(lambda: sp.sin(X), "sin(x)", Price(calls=1)),
    "cos": Entry(lambda: sp.cos(X), "cos(x)", Price(calls=1)),
    "identity": Entry(lambda: X, "x", Price(degree=1)),
    "sign": Entry(
        lambda: sp.sign(X),
        "sign(x): not Lipschitz (it jumps at 0), so the theorems' Assumption 1 fails and the "
        "coefficient commands refuse it; `deqrmt check sign` shows which conditions fail",
        Price(kinks=1),
    ),
    "polynomial": Entry(_polynomial, "c0 + c1·x + c2·x² + …, coefficients given", Price()),
    "quadratic": Entry(
        lambda: X + X**2 / 4,
        "x + x²/4 (a quadratic with an attracting fixed point)",
        Price(degree=2),
    ),
    # the rest of PyTorch's activations (torch.nn.Mish, …), each the exact function torch computes
    "mish": Entry(
        lambda: X * sp.tanh(sp.log(1 + sp.exp(X))),
        "x·tanh(softplus(x)) (torch Mish)",
        Price(calls=2),
    ),
    "gelu_tanh": Entry(
        _gelu_tanh, "x(1 + tanh(√(2/π)(x + 0.044715x³)))/2 (torch GELU('tanh'))", Price(calls=1)
    ),
    "selu": Entry(
        _selu,
        "λ·elu(x, α) with torch's λ = 1.0507…, α = 1.6732… (torch SELU)",
        Price(kinks=1, calls=1),
    ),
    "celu": Entry(
        _celu,
        "x for x > 0, α(e^{x/α} − 1) otherwise; α = 1 by default (torch CELU)",
        Price(kinks=1, calls=1),
    ),
    "softsign": Entry(lambda: X / (1 + sp.Abs(X)), "x/(1 + |x|) (torch Softsign)", Price(kinks=1)),
    "logsigmoid": Entry(
        lambda: -sp.log(1 + sp.exp(-X)), "−log(1 + e^{−x}) (torch LogSigmoid)", Price(calls=1)
    ),
    "tanhshrink": Entry(lambda: X - sp.tanh(X), "x − tanh(x) (torch Tanhshrink)", Price(calls=1)),
    "relu6": Entry(lambda: _clip(X, 0, 6), "min(max(x, 0), 6) (torch ReLU6)", Price(kinks=2)),
    "hardsigmoid": Entry(
        lambda: _clip(X / 6 + _HALF, 0, 1),
        "clip(x/6 + 1/2, 0, 1) (torch Hardsigmoid)",
        Price(kinks=2),
    ),
    "hardswish": Entry(
        lambda: X * _clip(X / 6 + _HALF, 0, 1),
        "x·clip(x/6 + 1/2, 0, 1) (torch Hardswish)",
        Price(kinks=2),
    ),
    "softshrink": Entry(
        _softshrink, "x − clip(x, −λ, λ); λ = 1/2 by default (torch Softshrink)", Price(kinks=2)
    ),
    "hardshrink": Entry(
        _hardshrink,
        "x for |x| > λ, 0 otherwise; λ = 1/2 by default (torch Hardshrink): it jumps at ±λ, so "
        "like sign the coefficient commands refuse it",
        Price(kinks=2),
    ),
}

#: ``torch.nn`` class names of the library's activations, for "did you mean" hints
TORCH_NAMES: dict[str, str] = {
    "ReLU": "relu", "LeakyReLU": "leaky_relu", "Tanh": "tanh", "Hardtanh": "hard_tanh",
    "Sigmoid": "sigmoid", "SiLU": "silu", "GELU": "gelu", "Softplus": "softplus", "ELU": "elu",
    "Identity": "identity", "Mish": "mish", "SELU": "selu", "CELU": "celu",
    "Softsign": "softsign", "LogSigmoid": "logsigmoid", "Tanhshrink": "tanhshrink",
    "ReLU6": "relu6", "Hardsigmoid": "hardsigmoid", "Hardswish": "hardswish",
    "Softshrink": "softshrink", "Hardshrink": "hardshrink",
}  # fmt: skip


#: parameters a library activation may take (``polynomial(c0, …)`` has the most)
MAX_PARAMETERS = 65


def _parameter(value: Any, name: str) -> sp.Expr:
    """One parameter of a library activation: a number (exact, by the argument rules) or a
    real constant SymPy expression (what the parser builds: ``leaky_relu(1/sqrt(2))``)."""
    if isinstance(value, sp.Basic):
        if (
            value.free_symbols
            or value.is_real is False
            or value.has(sp.nan, sp.zoo, sp.oo, sp.S.NegativeInfinity)
        ):
            raise InvalidArgument(
                f"{name}={_arguments.show(value)}: a parameter is a finite real constant."
            )
        return exact(value)
    f = _arguments.number(value, name)
    return sp.Rational(f.numerator, f.denominator)


def activation_names() -> list[str]:
    return sorted(LIBRARY)


def library_activation(name: str, params: Sequence[sp.Expr] = ()) -> Activation:
    """Build a library activation with exact parameters, e.g. ``("leaky_relu", [1/10])``."""
    if not isinstance(name, str) or name not in LIBRARY:
        torch_name = TORCH_NAMES.get(name) if isinstance(name, str) else None
        if torch_name is not None:
            raise UnknownActivation(
                f"unknown activation {_arguments.show(name)}; did you mean {torch_name!r}? "
                f"(torch.nn.{name} is the library's {torch_name})"
            )
        raise UnknownActivation(
            f"unknown activation {_arguments.show(name)}; library names: "
            f"{', '.join(activation_names())}, or give an expression in x such as "
            "'max(x, 0.1*x)'."
        )
    builder = LIBRARY[name].builder
    params = _arguments.sequence(
        params, "params", "parameters", lo=0, hi=MAX_PARAMETERS, item=_parameter
    )
    try:
        expr = builder(*params)
    except TypeError:
        raise InvalidArgument(
            f"{name} takes different parameters than {len(params)} given: {LIBRARY[name].text}."
        ) from None
    label = name if not params else f"{name}({', '.join(str(p) for p in params)})"
    return Activation(label, exact(expr))

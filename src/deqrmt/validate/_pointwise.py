r"""The centred activation φ_c(x) = φ(x) − c as torch functions, built piece by piece.

The DEQ of the theorems runs φ_c, centred so that `E[φ_c(τ*ξ)] = 0` (slides, "High-dimensional
Equivalents", Theorem 1).  :class:`deqrmt.symbolic.Activation` already splits φ into smooth
pieces between its kinks; each piece is compiled here by a small SymPy-tree walker into torch
operations, and φ_c, φ_c' are assembled with ``torch.where``.  We do not use ``lambdify``: its
torch printer calls ``torch.sqrt`` on Python ints and ``torch.max`` on mixed scalar/tensor
arguments, and a constant sub-expression is evaluated here once, in float64, instead.

Two families get their bivariate Gaussian expectations in closed form (:mod:`._bivariate`), so
they are recognised here: positively homogeneous piecewise-linear φ (ReLU, leaky ReLU, |x|,
identity) and ``A·erf(s·x) + d``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import sympy as sp
import torch

from .._errors import ActivationError, InvalidArgument

__all__ = ["CenteredActivation", "PiecewiseLinear", "ScaledErf"]

_Fn = Callable[[torch.Tensor], "torch.Tensor | float"]

_UNARY: dict[type, Callable[[torch.Tensor], torch.Tensor]] = {
    sp.exp: torch.exp,
    sp.log: torch.log,
    sp.tanh: torch.tanh,
    sp.sinh: torch.sinh,
    sp.cosh: torch.cosh,
    sp.sin: torch.sin,
    sp.cos: torch.cos,
    sp.tan: torch.tan,
    sp.atan: torch.atan,
    sp.asinh: torch.asinh,
    sp.erf: torch.special.erf,
    sp.erfc: torch.special.erfc,
    sp.Abs: torch.abs,
    sp.sign: torch.sign,
}


def _tensor_like(v: torch.Tensor | float, like: torch.Tensor) -> torch.Tensor:
    return v if isinstance(v, torch.Tensor) else torch.full_like(like, v)


def _compile_cond(cond: sp.Basic, x: sp.Symbol) -> Callable[[torch.Tensor], torch.Tensor]:
    if cond is sp.true:
        return lambda t: torch.ones_like(t, dtype=torch.bool)
    if cond is sp.false:
        return lambda t: torch.zeros_like(t, dtype=torch.bool)
    if isinstance(cond, sp.core.relational.Relational):
        lhs, rhs = _compile(cond.lhs, x), _compile(cond.rhs, x)
        op = {"<": torch.lt, "<=": torch.le, ">": torch.gt, ">=": torch.ge, "==": torch.eq}.get(
            cond.rel_op
        )
        if op is None:
            raise InvalidArgument(f"unsupported condition {cond} in the activation.")
        return lambda t: op(_tensor_like(lhs(t), t), _tensor_like(rhs(t), t))
    if isinstance(cond, (sp.And, sp.Or)):
        parts = [_compile_cond(c, x) for c in cond.args]
        combine = torch.logical_and if isinstance(cond, sp.And) else torch.logical_or

        def both(t: torch.Tensor) -> torch.Tensor:
            out = parts[0](t)
            for p in parts[1:]:
                out = combine(out, p(t))
            return out

        return both
    if isinstance(cond, sp.Not):
        inner = _compile_cond(cond.args[0], x)
        return lambda t: torch.logical_not(inner(t))
    raise InvalidArgument(f"unsupported condition {cond} in the activation.")


def _compile(e: sp.Basic, x: sp.Symbol) -> _Fn:
    """A function of a tensor ``t`` computing ``e`` at x = t (a Python float if constant)."""
    if not e.has(x):
        try:
            v = float(e)
        except TypeError:
            raise InvalidArgument(f"constant {e} in the activation is not real.") from None
        return lambda t: v
    if e == x:
        return lambda t: t
    if isinstance(e, sp.Add):
        fs = [_compile(a, x) for a in e.args]
        return lambda t: sum((f(t) for f in fs[1:]), fs[0](t))  # type: ignore[arg-type,return-value]
    if isinstance(e, sp.Mul):
        fs = [_compile(a, x) for a in e.args]

        def prod(t: torch.Tensor) -> torch.Tensor | float:
            out = fs[0](t)
            for f in fs[1:]:
                out = out * f(t)
            return out

        return prod
    if isinstance(e, sp.Pow):
        base, expo = _compile(e.base, x), e.exp
        if not expo.has(x):
            v = float(expo)
            p: int | float = int(v) if v.is_integer() else v
            return lambda t: base(t) ** p
        fexp = _compile(expo, x)
        return lambda t: torch.exp(fexp(t) * torch.log(_tensor_like(base(t), t)))
    if type(e) in _UNARY:
        f, arg = _UNARY[type(e)], _compile(e.args[0], x)
        return lambda t: f(_tensor_like(arg(t), t))
    if isinstance(e, sp.Heaviside):
        arg = _compile(e.args[0], x)
        h0 = float(e.args[1]) if len(e.args) > 1 else 0.5
        return lambda t: torch.heaviside(
            _tensor_like(arg(t), t), torch.tensor(h0, dtype=t.dtype, device=t.device)
        )
    if isinstance(e, (sp.Max, sp.Min)):
        fs = [_compile(a, x) for a in e.args]
        pick = torch.maximum if isinstance(e, sp.Max) else torch.minimum

        def extreme(t: torch.Tensor) -> torch.Tensor:
            out = _tensor_like(fs[0](t), t)
            for f in fs[1:]:
                out = pick(out, _tensor_like(f(t), t))
            return out

        return extreme
    if isinstance(e, sp.Piecewise):
        branches = [(_compile(v, x), _compile_cond(c, x)) for v, c in e.args]

        def piecewise(t: torch.Tensor) -> torch.Tensor:
            out = torch.full_like(t, math.nan)
            for v, c in reversed(branches):  # earlier branches take precedence
                out = torch.where(c(t), _tensor_like(v(t), t), out)
            return out

        return piecewise
    raise InvalidArgument(
        f"cannot evaluate {type(e).__name__} ({e}) in torch; supported: "
        f"{', '.join(sorted(f.__name__ for f in _UNARY))}, Heaviside, Max, Min, Piecewise, powers."
    )


@dataclasses.dataclass(frozen=True)
class PiecewiseLinear:
    """φ(x) = s₊·x for x > 0 and s₋·x for x < 0 (ReLU: s₊ = 1, s₋ = 0)."""

    slope_pos: float
    slope_neg: float


@dataclasses.dataclass(frozen=True)
class ScaledErf:
    """φ(x) = amplitude·erf(scale·x) + offset."""

    amplitude: float
    scale: float
    offset: float


def _closed_form(
    pieces: tuple, kinks: tuple[float, ...], x: sp.Symbol
) -> PiecewiseLinear | ScaledErf | None:
    if set(kinks) <= {0.0} and len(pieces) <= 2:
        slopes = []
        for p in pieces:
            e = sp.expand(p.expr)
            if not e.is_polynomial(x) or sp.Poly(e, x).degree() > 1 or e.subs(x, 0) != 0:
                break
            slopes.append(float(sp.diff(e, x)))
        else:
            return PiecewiseLinear(slopes[-1], slopes[0])
    if not kinks:
        a, s, d = (sp.Wild(n, exclude=[x]) for n in "asd")
        m = sp.expand(pieces[0].expr).match(a * sp.erf(s * x) + d)
        if m and m.get(s, 0) != 0 and m.get(a, 0) != 0:
            cand = m[a] * sp.erf(m[s] * x) + m.get(d, 0)
            if sp.simplify(cand - pieces[0].expr) == 0:
                return ScaledErf(float(m[a]), abs(float(m[s])), float(m.get(d, 0)))
    return None


@dataclasses.dataclass(frozen=True, eq=False)
class CenteredActivation:
    r"""φ_c(x) = φ(x) − c and its a.e. derivative φ_c'(x) = φ'(x), as torch functions.

    Build it with :meth:`from_activation`.  ``phi``/``dphi`` accept a tensor of any shape,
    dtype and device.  At a kink ``dphi`` returns the left derivative (any value will do:
    kinks have Gaussian measure zero).

    Attributes:
      name: the activation's label.
      expr: the uncentred φ as a SymPy expression in ``x``.
      center: c, chosen by :mod:`deqrmt.numeric` so that `E[φ_c(τ*ξ)] = 0`.
      kinks: the points where φ switches branch, as floats, sorted.
      closed_form: a :class:`PiecewiseLinear` or :class:`ScaledErf` description of the
        *uncentred* φ when it has closed-form bivariate moments, else None.
    """

    name: str
    expr: sp.Expr
    center: float
    kinks: tuple[float, ...]
    closed_form: PiecewiseLinear | ScaledErf | None
    _pieces: tuple[_Fn, ...] = dataclasses.field(repr=False)
    _dpieces: tuple[_Fn, ...] = dataclasses.field(repr=False)

    @classmethod
    def from_activation(cls, activation: object, center: float) -> CenteredActivation:
        """From a :class:`deqrmt.symbolic.Activation` (``.name``, ``.pieces``, ``.kinks``).

        Raises:
          ActivationError: if φ is discontinuous (the DEQ's NTK needs φ' in the classical sense).
        """
        pieces = activation.pieces  # type: ignore[attr-defined]
        dpieces = activation.derivative_pieces  # type: ignore[attr-defined]
        x = activation.x  # type: ignore[attr-defined]
        if not activation.is_continuous:  # type: ignore[attr-defined]
            raise ActivationError(
                f"activation {activation.name!r} is discontinuous: the DEQ map is not "  # type: ignore[attr-defined]
                "Lipschitz and its NTK is undefined; validate needs a continuous φ."
            )
        kinks = tuple(float(k) for k in activation.kinks)  # type: ignore[attr-defined]
        if not math.isfinite(center):
            raise InvalidArgument(f"center must be finite, got center={center!r}.")
        return cls(
            name=str(activation.name),  # type: ignore[attr-defined]
            expr=activation.expr,  # type: ignore[attr-defined]
            center=float(center),
            kinks=kinks,
            closed_form=_closed_form(tuple(pieces), kinks, x),
            _pieces=tuple(_compile(p.expr, x) for p in pieces),
            _dpieces=tuple(_compile(p.expr, x) for p in dpieces),
        )

    def _assemble(self, fns: tuple[_Fn, ...], t: torch.Tensor) -> torch.Tensor:
        out = fns[0](t)
        for k, f in zip(self.kinks, fns[1:], strict=True):
            v = f(t)
            if not isinstance(out, torch.Tensor) and not isinstance(v, torch.Tensor):
                out = _tensor_like(out, t)
            out = torch.where(t > k, v, out)  # type: ignore[arg-type]
        return _tensor_like(out, t)

    def phi(self, t: torch.Tensor) -> torch.Tensor:
        """φ_c(t) = φ(t) − c, elementwise."""
        cf = self.closed_form
        if isinstance(cf, PiecewiseLinear):  # s₋x + (s₊ − s₋)relu(x): fewer ops than where()
            out = torch.relu(t) * (cf.slope_pos - cf.slope_neg)
            out = out + cf.slope_neg * t if cf.slope_neg else out
            return out - self.center if self.center else out
        out = self._assemble(self._pieces, t)  # may alias t (identity piece): no in-place ops
        return out - self.center if self.center else out

    def dphi(self, t: torch.Tensor) -> torch.Tensor:
        """φ_c'(t) = φ'(t), elementwise (left derivative at a kink)."""
        cf = self.closed_form
        if isinstance(cf, PiecewiseLinear):
            return (t > 0).to(t.dtype) * (cf.slope_pos - cf.slope_neg) + cf.slope_neg
        return self._assemble(self._dpieces, t)

r"""The centred activation φ_c(x) = φ(x) − c as torch functions, printed by the one printer.

The DEQ of the theorems runs φ_c, centred so that `E[φ_c(τ*ξ)] = 0` (slides, "High-dimensional
Equivalents", Theorem 1).  :class:`deqrmt.symbolic.Activation` already splits φ into smooth
pieces between its kinks; :func:`deqrmt.numeric._contexts.activation_functions` joins them into
one Piecewise for φ and one for φ' (the left piece at a kink), printed in the stable forms by the
printer that writes the engine's code, and run here on the torch context
(:mod:`._torch_context`): the Monte Carlo evaluates φ through the same code as every other
backend.

Two families get their bivariate Gaussian expectations in closed form (:mod:`._bivariate`), so
they are recognised here: positively homogeneous piecewise-linear φ (ReLU, leaky ReLU, |x|,
identity) and ``A·erf(s·x) + d``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from .._errors import ActivationError, InvalidArgument
from ._torch_context import TORCH

if TYPE_CHECKING:
    import sympy as sp

__all__ = ["CenteredActivation", "PiecewiseLinear", "ScaledErf"]


def _like(v: Any, t: torch.Tensor) -> torch.Tensor:
    """``v`` (a tensor, or a number for a constant piece) as a tensor of ``t``'s dtype and shape."""
    if not isinstance(v, torch.Tensor):
        return torch.full_like(t, float(v))
    v = v if v.dtype == t.dtype else v.to(t.dtype)
    return v if v.shape == t.shape else v.expand(t.shape).clone()


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
    import sympy as sp

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


def closed_form_record(form: PiecewiseLinear | ScaledErf | None) -> tuple[Any, ...] | None:
    """A closed form as plain data (what :mod:`._generated_activations` holds)."""
    if isinstance(form, PiecewiseLinear):
        return ("linear", form.slope_pos, form.slope_neg)
    if isinstance(form, ScaledErf):
        return ("erf", form.amplitude, form.scale, form.offset)
    return None


def _from_record(record: tuple[Any, ...] | None) -> PiecewiseLinear | ScaledErf | None:
    if record is None:
        return None
    kind, *values = record
    return PiecewiseLinear(*values) if kind == "linear" else ScaledErf(*values)


def _check_center(center: float) -> None:
    if not math.isfinite(center):
        raise InvalidArgument(f"center must be finite, got center={center!r}.")


@dataclasses.dataclass(frozen=True, eq=False)
class CenteredActivation:
    r"""φ_c(x) = φ(x) − c and its a.e. derivative φ_c'(x) = φ'(x), as torch functions.

    Build it with :meth:`from_activation` (any activation: SymPy prints φ and φ' now) or
    :meth:`from_library` (a library name: the functions the printer wrote into
    :mod:`._generated_activations`, no SymPy import).  ``phi``/``dphi`` accept a tensor of any
    shape, dtype and device.  At a kink ``dphi`` returns the left derivative (any value will
    do: kinks have Gaussian measure zero).

    Attributes:
      name: the activation's label.
      expr: the uncentred φ as a SymPy expression in ``x`` (a library activation's is parsed
        on first access).
      center: c, chosen by :mod:`deqrmt.numeric` so that `E[φ_c(τ*ξ)] = 0`.
      kinks: the points where φ switches branch, as floats, sorted.
      closed_form: a :class:`PiecewiseLinear` or :class:`ScaledErf` description of the
        *uncentred* φ when it has closed-form bivariate moments, else None.
    """

    name: str
    center: float
    kinks: tuple[float, ...]
    closed_form: PiecewiseLinear | ScaledErf | None
    _phi: Callable[..., tuple[Any]] = dataclasses.field(repr=False)
    _dphi: Callable[..., tuple[Any]] = dataclasses.field(repr=False)
    #: the :class:`deqrmt.symbolic.Activation`, or the library name it is parsed from
    _source: Any = dataclasses.field(repr=False)

    @property
    def expr(self) -> sp.Expr:
        """The uncentred φ as a SymPy expression in ``x``."""
        source = self._source
        if isinstance(source, str):
            from ..symbolic import get_activation

            source = get_activation(source)
        return source.expr

    @classmethod
    def from_activation(cls, activation: object, center: float) -> CenteredActivation:
        """From a :class:`deqrmt.symbolic.Activation` (``.name``, ``.pieces``, ``.kinks``).

        Raises:
          ActivationError: if φ is discontinuous (the DEQ's NTK needs φ' in the classical sense).
        """
        from ..numeric import activation_functions

        pieces = activation.pieces  # type: ignore[attr-defined]
        x = activation.x  # type: ignore[attr-defined]
        if not activation.is_continuous:  # type: ignore[attr-defined]
            raise ActivationError(
                f"activation {activation.name!r} is discontinuous: the DEQ map is not "  # type: ignore[attr-defined]
                "Lipschitz and its NTK is undefined; validate needs a continuous φ."
            )
        kinks = tuple(float(k) for k in activation.kinks)  # type: ignore[attr-defined]
        _check_center(center)
        phi, dphi = activation_functions(activation)  # type: ignore[arg-type]
        return cls(
            name=str(activation.name),  # type: ignore[attr-defined]
            center=float(center),
            kinks=kinks,
            closed_form=_closed_form(tuple(pieces), kinks, x),
            _phi=phi,
            _dphi=dphi,
            _source=activation,
        )

    @classmethod
    def from_library(cls, name: str, center: float) -> CenteredActivation | None:
        """The library activation ``name`` (exactly its name, no parameters) from the functions
        printed into :mod:`._generated_activations`, or None when ``name`` is not there
        (parametrised, an expression, a discontinuous entry: :meth:`from_activation` then).

        The same φ, φ', kinks and closed form as ``from_activation(get_activation(name), c)``
        (``tests/test_generated_activations.py`` compares them), without importing SymPy.
        """
        from ._generated_activations import ACTIVATIONS

        entry = ACTIVATIONS.get(name) if isinstance(name, str) else None
        if entry is None:
            return None
        phi, dphi, kinks, closed = entry
        _check_center(center)
        return cls(
            name=name,
            center=float(center),
            kinks=kinks,
            closed_form=_from_record(closed),
            _phi=phi,
            _dphi=dphi,
            _source=name,
        )

    def phi(self, t: torch.Tensor) -> torch.Tensor:
        """φ_c(t) = φ(t) − c, elementwise."""
        cf = self.closed_form
        if isinstance(cf, PiecewiseLinear):  # s₋x + (s₊ − s₋)relu(x): fewer ops than where()
            out = torch.relu(t) * (cf.slope_pos - cf.slope_neg)
            out = out + cf.slope_neg * t if cf.slope_neg else out
            return out - self.center if self.center else out
        out = _like(self._phi(TORCH, t)[0], t)  # may alias t (identity piece): no in-place ops
        return out - self.center if self.center else out

    def dphi(self, t: torch.Tensor) -> torch.Tensor:
        """φ_c'(t) = φ'(t), elementwise (left derivative at a kink)."""
        cf = self.closed_form
        if isinstance(cf, PiecewiseLinear):
            return (t > 0).to(t.dtype) * (cf.slope_pos - cf.slope_neg) + cf.slope_neg
        return _like(self._dphi(TORCH, t)[0], t)

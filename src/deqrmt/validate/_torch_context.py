"""The torch context: code printed with ``arrays=True`` run on tensors, any device and dtype.

The same interface as :data:`deqrmt.numeric._contexts.NUMPY` (every name in
:data:`deqrmt.numeric._printer.ARRAY_NAMES`): a function of a tensor returns a tensor on its
device, in its dtype; a function of Python numbers (a constant sub-expression, printed like any
other) returns a Python float, computed by the numpy context in float64, so constants never
create tensors on the wrong device.  The special functions torch lacks (``gamma``,
``gammainc``, the Bessel functions) go through the numpy context on the host and back.

``piecewise`` evaluates every branch and selects lane by lane with ``torch.where``: a branch
that overflows where it is not selected never reaches the result.  ``logistic`` is
``torch.sigmoid``; ``softplus`` is ``max(u, 0) + log1p(e^(−|u|))`` (torch's own softplus
returns u beyond a threshold, an error of e^(−20) relative).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from ..numeric import NUMPY

if TYPE_CHECKING:
    from ..numeric import ArrayContext

__all__ = ["TORCH", "TorchContext"]

Tensor = torch.Tensor


def _scalar(value: Any) -> float:
    return float(np.asarray(value, dtype=np.float64))


def _unary(on_tensor: Callable[[Tensor], Tensor], name: str) -> Callable[[Any], Any]:
    on_number = getattr(NUMPY, name)

    def f(x: Any) -> Any:
        return on_tensor(x) if isinstance(x, Tensor) else _scalar(on_number(x))

    f.__name__ = name
    return f


def _reference(args: tuple[Any, ...]) -> Tensor | None:
    """The first floating tensor among ``args``, else the first tensor, else None."""
    tensors = [a for a in args if isinstance(a, Tensor)]
    floating = [a for a in tensors if a.is_floating_point()]
    candidates = floating or tensors
    return candidates[0] if candidates else None


def _host(name: str) -> Callable[..., Any]:
    """The numpy context's ``name`` on the host, the result back on the tensor's device."""
    on_number = getattr(NUMPY, name)

    def f(*args: Any) -> Any:
        ref = _reference(args)
        if ref is None:
            return _scalar(on_number(*args))
        host = [a.detach().cpu().numpy() if isinstance(a, Tensor) else a for a in args]
        return torch.as_tensor(on_number(*host), **_floating(ref))

    f.__name__ = name
    return f


def _as_tensor(v: Any, like: Tensor) -> Tensor:
    return v if isinstance(v, Tensor) else torch.as_tensor(v, dtype=like.dtype, device=like.device)


def _floating(ref: Tensor) -> dict[str, Any]:
    """dtype and device for values beside ``ref`` (float64 when ``ref`` holds conditions)."""
    return {"dtype": ref.dtype if ref.is_floating_point() else torch.float64, "device": ref.device}


def _pairwise(on_tensors: Callable[[Tensor, Tensor], Tensor], on_numbers: Callable[..., Any]):  # type: ignore[no-untyped-def]
    def f(*args: Any) -> Any:
        def two(a: Any, b: Any) -> Any:
            if not isinstance(a, Tensor) and not isinstance(b, Tensor):
                return on_numbers(a, b)
            like = a if isinstance(a, Tensor) else b
            if not like.is_floating_point() and like.dtype != torch.bool:
                like = like.to(torch.float64)
            return on_tensors(_as_tensor(a, like), _as_tensor(b, like))

        return functools.reduce(two, args)

    return f


class TorchContext:
    """The context interface on torch tensors: ``f(TORCH, t)`` for printed ``f``.

    Its functions keep each tensor's dtype and device; ``dtype`` is the one its precision
    (``eps``, the machine epsilon a test states its tolerance in) is declared for.
    """

    def __init__(self, dtype: torch.dtype = torch.float64) -> None:
        self.dtype = dtype
        self.eps = float(torch.finfo(dtype).eps)

    mpf = staticmethod(float)
    pi = math.pi
    e = math.e
    euler = NUMPY.euler
    inf = math.inf
    zero = 0.0
    one = 1.0

    exp = staticmethod(_unary(torch.exp, "exp"))
    log = staticmethod(_unary(torch.log, "log"))
    sqrt = staticmethod(_unary(torch.sqrt, "sqrt"))
    sign = staticmethod(_unary(torch.sign, "sign"))
    sin = staticmethod(_unary(torch.sin, "sin"))
    cos = staticmethod(_unary(torch.cos, "cos"))
    tan = staticmethod(_unary(torch.tan, "tan"))
    sinh = staticmethod(_unary(torch.sinh, "sinh"))
    cosh = staticmethod(_unary(torch.cosh, "cosh"))
    tanh = staticmethod(_unary(torch.tanh, "tanh"))
    asin = staticmethod(_unary(torch.asin, "asin"))
    acos = staticmethod(_unary(torch.acos, "acos"))
    atan = staticmethod(_unary(torch.atan, "atan"))
    asinh = staticmethod(_unary(torch.asinh, "asinh"))
    acosh = staticmethod(_unary(torch.acosh, "acosh"))
    atanh = staticmethod(_unary(torch.atanh, "atanh"))
    erf = staticmethod(_unary(torch.special.erf, "erf"))
    erfc = staticmethod(_unary(torch.special.erfc, "erfc"))
    expm1 = staticmethod(_unary(torch.expm1, "expm1"))
    log1p = staticmethod(_unary(torch.log1p, "log1p"))
    logistic = staticmethod(_unary(torch.sigmoid, "logistic"))
    atan2 = staticmethod(_pairwise(torch.atan2, NUMPY.atan2))
    maximum = staticmethod(_pairwise(torch.maximum, max))
    minimum = staticmethod(_pairwise(torch.minimum, min))
    logical_and = staticmethod(_pairwise(torch.logical_and, lambda a, b: bool(a and b)))
    logical_or = staticmethod(_pairwise(torch.logical_or, lambda a, b: bool(a or b)))

    gamma = staticmethod(_host("gamma"))
    gammainc = staticmethod(_host("gammainc"))
    besseli = staticmethod(_host("besseli"))
    besselj = staticmethod(_host("besselj"))
    besselk = staticmethod(_host("besselk"))

    @staticmethod
    def logical_not(a: Any) -> Any:
        return torch.logical_not(a) if isinstance(a, Tensor) else not a

    @staticmethod
    def softplus(u: Any) -> Any:
        """log(1 + e^u) = max(u, 0) + log1p(e^(−|u|)): no branch overflows."""
        if not isinstance(u, Tensor):
            return _scalar(NUMPY.softplus(u))
        return torch.clamp(u, min=0) + torch.log1p(torch.exp(-torch.abs(u)))

    @staticmethod
    def heaviside(x: Any, h0: Any) -> Any:
        if not isinstance(x, Tensor):
            return _scalar(NUMPY.heaviside(x, h0))
        return torch.heaviside(x, torch.as_tensor(h0, dtype=x.dtype, device=x.device))

    @staticmethod
    def piecewise(*pairs: tuple[Any, Any]) -> Any:
        """The value of the first pair whose condition holds, lane by lane (nan if none)."""
        ref = _reference(tuple(v for _, v in pairs) + tuple(c for c, _ in pairs))
        if ref is None:  # constants only: Python's own branching
            return next((v for c, v in pairs if c), math.nan)
        kind = _floating(ref)
        out = torch.as_tensor(math.nan, **kind)
        for cond, value in reversed(pairs):
            v = value if isinstance(value, Tensor) else torch.as_tensor(value, **kind)
            if isinstance(cond, Tensor):
                out = torch.where(cond, v, out)
            elif cond:
                out = v
        return out


#: The torch context (stateless: one instance serves every caller).
TORCH = TorchContext()

if TYPE_CHECKING:  # mypy checks the class against the interface the printer's code calls
    _IS_AN_ARRAY_CONTEXT: ArrayContext = TORCH

r"""The arguments of the exact kernels on the user's data (:func:`deqrmt.kernels`,
:func:`~deqrmt.validate.kernel_diagonal`, :class:`deqrmt.DEQKernel`), all checked before any work.

The same rules as every public function (:mod:`deqrmt._arguments`): σ's are exact numbers,
``kind``/``method``/``device`` one of their names, ``trainable`` a set of a, A, B (the rule of
:func:`deqrmt.DEQProblem.make`), ``center`` a number or None, ``tol`` a number in
[:data:`MIN_TOL`, :data:`MAX_TOL`], ``tile`` an integer, ``progress`` None, a bool or a
function; the data by :mod:`._data_args` (dtype, shape, finite), and the float64 copies with
the n1 × n2 output asked of the memory budget before anything is converted or allocated.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import numpy as np
import torch

from .._arguments import choice, integer, number, show
from .._errors import InvalidArgument
from ._data_args import data_pair, fit_in_memory
from ._pointwise import CenteredActivation

__all__ = [
    "KINDS",
    "MAX_TOL",
    "METHODS",
    "MIN_TOL",
    "KernelArguments",
    "KernelOptions",
    "as_activation",
    "kernel_arguments",
    "kernel_options",
    "resolve",
    "sigmas",
]

KINDS = ("ck", "ntk")
#: the kernel engine's methods (:class:`~._exact.KernelEngine`)
METHODS = ("auto", "mehler", "conditional", "gauss-hermite")
#: the relative tolerance of the fixed points: float64 resolves no less than ~1e-15 of a
#: kernel's scale, and above 1e-2 the result is no longer the kernel
MIN_TOL, MAX_TOL = 1e-15, 1e-2


def sigmas(sigma_a2: Any, sigma_b2: Any) -> tuple[float, float]:
    """σ_a², σ_b² as floats; σ_b² defaults to 1 − σ_a² (the papers' normalization).

    Read exactly by the rules of every number (:func:`deqrmt._arguments.number`, the reader
    behind ``deqrmt.numeric.exact_number``), then rounded once: no SymPy import."""
    a2 = float(number(sigma_a2, "sigma_a2"))
    b2 = 1 - a2 if sigma_b2 is None else float(number(sigma_b2, "sigma_b2"))
    if not a2 > 0:
        raise InvalidArgument(f"sigma_a2 must be > 0, got sigma_a2={show(sigma_a2)}.")
    if not b2 > 0:
        raise InvalidArgument(
            f"sigma_b2 must be > 0, got {b2:g}; with the default σ_b² = 1 − σ_a² this needs "
            "sigma_a2 < 1, or pass sigma_b2."
        )
    return a2, b2


def as_activation(act: Any, center: float | None, name: str = "act") -> CenteredActivation:
    """A :class:`CenteredActivation` from a name/expression/Activation and a centre (None: 0);
    ``name`` is the argument's, for messages."""
    if isinstance(act, CenteredActivation):
        if center is not None and center != act.center:
            raise InvalidArgument(
                f"center={show(center)}: given for an activation that is already centred."
            )
        return act
    c = 0.0 if center is None else float(center)
    if isinstance(act, str):
        return _named_activation(act, c, name)
    from ..symbolic import get_activation

    return CenteredActivation.from_activation(get_activation(act, name), c)


@functools.lru_cache(maxsize=32)
def _named_activation(act: str, center: float, name: str) -> CenteredActivation:
    """:func:`as_activation` of a name or expression, kept per (text, centre): a second kernel
    of the same φ skips the parse and the torch functions' lookup (a CenteredActivation is
    immutable; an error is raised again each time, never cached).  A library name is read from
    the generated functions (:meth:`CenteredActivation.from_library`: no SymPy import)."""
    library = CenteredActivation.from_library(act, center)
    if library is not None:
        return library
    from ..symbolic import get_activation

    return CenteredActivation.from_activation(get_activation(act, name), center)


def resolve(device: Any) -> torch.device:
    """``auto`` → CUDA when available, else the CPU; ``cpu``, ``cuda``, ``cuda:N`` or a
    :class:`torch.device` as given (a CUDA device only when torch sees one)."""
    if isinstance(device, str) and device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if not isinstance(device, str | torch.device):
        raise InvalidArgument(
            f"device={show(device)}: expected 'auto', 'cpu', 'cuda' or a torch.device, got "
            f"{type(device).__name__}."
        )
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise InvalidArgument(
            f"device={show(device)}: expected 'auto', 'cpu', 'cuda' or 'cuda:N'."
        ) from None
    if dev.type not in ("cpu", "cuda"):
        raise InvalidArgument(f"device={show(device)}: only cpu and cuda are supported.")
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise InvalidArgument(
            f"device={show(device)}: torch sees no CUDA device; use device='cpu'."
        )
    return dev


def _center(center: Any) -> float | None:
    return None if center is None else float(number(center, "center"))


def _trainable(trainable: Any) -> tuple[str, ...]:
    from ..numeric import parse_trainable

    return parse_trainable(trainable)


def _progress(progress: Any) -> Any:
    if progress is None or callable(progress):
        return progress
    if isinstance(progress, bool | np.bool_):  # numpy 2 names its type "bool", not "bool_"
        return bool(progress)
    raise InvalidArgument(
        f"progress={show(progress)}: expected True, False, None or a function "
        f"progress(done, total), got {type(progress).__name__}."
    )


@dataclasses.dataclass(frozen=True)
class KernelOptions:
    """The checked options of a kernel (everything but the data)."""

    phi: CenteredActivation
    sigma_a2: float
    sigma_b2: float
    kind: str
    center: float | None
    trainable: tuple[str, ...]


def kernel_options(
    act: Any,
    *,
    sigma_a2: Any,
    sigma_b2: Any,
    kind: Any,
    center: Any,
    trainable: Any,
    name: str = "act",
) -> KernelOptions:
    """The options shared by :func:`deqrmt.kernels`, ``kernel_diagonal`` and ``DEQKernel``,
    checked (cheap arguments first, the activation's parse last)."""
    kind = choice(kind, "kind", KINDS)
    c = _center(center)
    tr = _trainable(trainable)
    a2, b2 = sigmas(sigma_a2, sigma_b2)
    return KernelOptions(as_activation(act, c, name), a2, b2, kind, c, tr)


@dataclasses.dataclass(frozen=True)
class KernelArguments:
    """Every argument of :func:`deqrmt.kernels`, checked: the options, the data as float64
    tensors (``X2`` None for k(X1, X1)), the device and the engine's settings."""

    options: KernelOptions
    X1: torch.Tensor
    X2: torch.Tensor | None
    torch_in: bool
    device: torch.device
    method: str
    tol: float
    tile: int
    progress: Any


def kernel_arguments(
    act: Any,
    X1: Any,
    X2: Any,
    *,
    sigma_a2: Any,
    sigma_b2: Any,
    kind: Any,
    center: Any,
    trainable: Any,
    device: Any,
    method: Any,
    tol: Any,
    progress: Any,
    tile: Any,
    max_tile: int,
) -> KernelArguments:
    """Check every argument of :func:`deqrmt.kernels` and convert the data (after asking the
    memory budget for the float64 copies and the n1 × n2 output).

    Raises:
      InvalidArgument (UnknownTrainable, ParseError, …): a malformed argument, named.
      BudgetExceeded: ``tile`` above ``max_tile``; the data's copies and the output beyond
        the memory this process may use.
    """
    method = choice(method, "method", METHODS)
    t = float(number(tol, "tol"))
    if not MIN_TOL <= t <= MAX_TOL:
        raise InvalidArgument(
            f"tol={show(tol)}: choose a tolerance from {MIN_TOL:g} to {MAX_TOL:g}."
        )
    tile = integer(tile, "tile", lo=1, hi=max_tile)
    progress = _progress(progress)
    dev = resolve(device)
    d1, d2 = data_pair(X1, X2)
    opts = kernel_options(
        act, sigma_a2=sigma_a2, sigma_b2=sigma_b2, kind=kind, center=center, trainable=trainable
    )
    n1 = d1.shape[0]
    n2 = n1 if d2 is None else d2.shape[0]
    fit_in_memory(
        f"the {n1} × {n2} kernel (8·n1·n2 bytes) and float64 copies of the data",
        d1,
        d2,
        extra=8.0 * n1 * n2,
        fix="compute it in pieces (rows of X1 at a time, deqrmt.kernels(act, X1[i:j], X2))",
    )
    A = d1.torch()
    B = None if d2 is None else d2.torch()
    return KernelArguments(opts, A, B, d1.is_torch, dev, method, t, tile, progress)

r"""The user's data matrices, checked before any work: one rule for every function that takes
samples (:func:`deqrmt.kernels`, :class:`deqrmt.DEQKernel`, :func:`deqrmt.equivalent_kernels`).

A data matrix is a numpy array, a torch tensor, or anything ``np.asarray`` reads as one (nested
lists, a pandas frame of numbers), with rows the samples.  The rules:

* **dtype**: real numbers only.  Complex data is refused (its imaginary part would be dropped
  without a word: the kernels are of real data), and so are booleans, text, dates and object
  arrays (mixed or ragged rows), each with the fix in the message.  Integers and float16/32
  (and bfloat16, longdouble) are converted to float64 on purpose: the kernels are computed in
  float64;
* **shape**: 2-D, at least ``min_rows`` rows and one feature (a 1-D array is refused with the
  ``reshape`` that was probably meant);
* **memory**: the float64 copy (8 bytes per entry, 8× the bytes of uint8 data), with what the
  caller will allocate from it (an n1 × n2 kernel), is asked of :mod:`deqrmt._budget` before
  anything is converted;
* **finite**: no NaN or ±inf (checked on the data as given, through its minimum and maximum,
  which propagate NaN, without an n × p temporary; once more after the conversion for a
  longdouble beyond float64's range).

torch is not imported here: a tensor is recognised by its type's module, so numpy-only callers
(:func:`deqrmt.equivalent_kernels`) stay numpy-only.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np

from .._arguments import show
from .._budget import check_memory
from .._errors import InvalidArgument

__all__ = ["DataMatrix", "data_matrix", "data_pair", "fit_in_memory"]

#: dtype kinds refused, with the fix (numpy's ``dtype.kind``)
_REFUSED = {
    "c": "complex entries: the kernels are of real data and the imaginary part would be "
    "dropped; pass X.real if it is zero, or its real and imaginary parts as features "
    "(np.hstack([X.real, X.imag]))",
    "b": "boolean entries; convert them deliberately, e.g. X.astype(float)",
    "O": "an object array (mixed types or ragged rows); give a numeric array of one dtype",
    "U": "text entries; give numbers (e.g. np.asarray(X, dtype=float) after parsing them)",
    "S": "bytes entries; give numbers",
    "M": "dates; give numbers",
    "m": "time differences; give numbers",
    "V": "a structured array; give a plain numeric array",
}


def _is_torch(x: Any) -> bool:
    return type(x).__module__.split(".")[0] == "torch" and hasattr(x, "detach")


@dataclasses.dataclass(frozen=True)
class DataMatrix:
    """A checked n × p data matrix, not yet converted: ``raw`` is a numpy array or a torch
    tensor (``is_torch``) of real numbers; :meth:`numpy` and :meth:`torch` give float64."""

    raw: Any
    name: str
    is_torch: bool

    @property
    def shape(self) -> tuple[int, int]:
        return (int(self.raw.shape[0]), int(self.raw.shape[1]))

    @property
    def copy_bytes(self) -> int:
        """Bytes of the float64 copy the conversion makes (0 when there is none)."""
        n, p = self.shape
        if self.is_torch:
            import torch

            same = self.raw.dtype == torch.float64
        else:
            same = self.raw.dtype == np.float64 and self.raw.flags.c_contiguous
        return 0 if same else 8 * n * p

    def numpy(self) -> np.ndarray:
        """The matrix as a float64 numpy array."""
        a = self.raw.detach().cpu().numpy() if self.is_torch else self.raw
        # a longdouble beyond float64's range never gets here: data_matrix's _finite_np reads
        # its extremes as floats (inf) and refuses it
        return np.asarray(a, dtype=np.float64)

    def torch(self) -> Any:
        """The matrix as a float64 torch tensor (on the input's device when it is a tensor)."""
        import torch

        if self.is_torch:
            return self.raw.detach().to(torch.float64)
        return torch.as_tensor(self.numpy())  # numpy converts every real dtype (longdouble too)


def _finite_np(a: np.ndarray) -> bool:
    """No NaN or ±inf (the minimum and maximum propagate NaN: no n × p temporary)."""
    if a.dtype.kind != "f" or not a.size:
        return True
    return math.isfinite(float(a.min())) and math.isfinite(float(a.max()))


def _finite_torch(t: Any) -> bool:
    import torch

    if not t.dtype.is_floating_point or not t.numel():
        return True
    lo, hi = torch.aminmax(t)  # NaN propagates, unlike isfinite(t).all() no n × p temporary
    return bool(torch.isfinite(lo) & torch.isfinite(hi))


def _not_finite(name: str) -> InvalidArgument:
    return InvalidArgument(
        f"{name} has non-finite entries (nan or inf, or beyond float64's range); remove or "
        "impute them first."
    )


def _refuse_kind(name: str, kind: str, dtype: Any) -> None:
    if kind in _REFUSED:
        raise InvalidArgument(f"{name} has dtype {dtype}: {_REFUSED[kind]}.")


def _torch_raw(X: Any, name: str) -> Any:
    import torch

    if X.layout != torch.strided:
        raise InvalidArgument(f"{name} is a sparse tensor ({X.layout}); pass {name}.to_dense().")
    dt = X.dtype
    if dt.is_complex:
        _refuse_kind(name, "c", dt)
    if dt == torch.bool:
        _refuse_kind(name, "b", dt)
    if not (dt.is_floating_point or dt in _torch_ints()):
        raise InvalidArgument(f"{name} has dtype {dt}; give real numbers (float or int).")
    return X


def _torch_ints() -> set[Any]:
    import torch

    names = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
    return {getattr(torch, t) for t in names if hasattr(torch, t)}


def _numpy_raw(X: Any, name: str) -> np.ndarray:
    if X is None or isinstance(X, str | bytes | Mapping | set | frozenset | numbers.Number):
        raise InvalidArgument(
            f"{name}={show(X)}: expected a 2-D array of numbers (rows are samples), got "
            f"{type(X).__name__}."
        )
    if not isinstance(X, np.ndarray) and hasattr(X, "toarray"):  # a scipy.sparse matrix
        raise InvalidArgument(
            f"{name} is a sparse matrix ({type(X).__name__}); pass {name}.toarray() (the kernels "
            "are dense n1 × n2 matrices in any case)."
        )
    if isinstance(X, np.ndarray):
        a = X
    else:
        try:
            a = np.asarray(X)
        except (TypeError, ValueError) as e:  # ragged nested lists, an unconvertible object
            raise InvalidArgument(
                f"{name}: expected a 2-D array of numbers (rows are samples); numpy cannot "
                f"read it as one ({show(str(e))}): are its rows of different lengths?"
            ) from None
    if isinstance(a, np.ma.MaskedArray):
        raise InvalidArgument(
            f"{name} is a masked array; fill or drop the masked entries ({name}.filled(...))."
        )
    if a.dtype.kind not in "fiu":
        _refuse_kind(name, a.dtype.kind, a.dtype)
        raise InvalidArgument(f"{name} has dtype {a.dtype}; give real numbers.")
    return a


def data_matrix(X: Any, name: str, *, min_rows: int = 1) -> DataMatrix:
    """``X`` checked as an n × p matrix of real numbers (see the module's rules), unconverted.

    Raises:
      InvalidArgument: not an array of real numbers (complex, bool, text, object, ragged), not
        2-D, fewer than ``min_rows`` rows or no feature; the message names ``name``.

    Example:
      >>> d = data_matrix(np.arange(6, dtype=np.uint8).reshape(3, 2), "X")
      >>> d.shape, d.copy_bytes, d.numpy().dtype
      ((3, 2), 48, dtype('float64'))
    """
    is_torch = _is_torch(X)
    raw = _torch_raw(X, name) if is_torch else _numpy_raw(X, name)
    shape = tuple(int(s) for s in raw.shape)
    if len(shape) == 1:
        raise InvalidArgument(
            f"{name} must be 2-D (rows are samples), got shape {shape}; use "
            f"{name}.reshape(-1, 1) for one feature or {name}.reshape(1, -1) for one sample."
        )
    if len(shape) != 2:
        raise InvalidArgument(
            f"{name} must be a 2-D array (rows are samples, columns features), got shape {shape}."
        )
    if shape[0] < min_rows or shape[1] < 1:
        rows = "one row" if min_rows == 1 else f"{min_rows} rows"
        raise InvalidArgument(
            f"{name} must have at least {rows} and one feature, got shape {shape}."
        )
    if not (_finite_torch(raw) if is_torch else _finite_np(raw)):
        raise _not_finite(name)
    return DataMatrix(raw, name, is_torch)


def data_pair(
    X1: Any, X2: Any, names: tuple[str, str] = ("X1", "X2")
) -> tuple[DataMatrix, DataMatrix | None]:
    """Two data matrices with the same number of features (``X2`` None: only X1)."""
    d1 = data_matrix(X1, names[0])
    d2 = None if X2 is None else data_matrix(X2, names[1])
    if d2 is not None and d2.shape[1] != d1.shape[1]:
        raise InvalidArgument(
            f"{names[0]} and {names[1]} must have the same number of features, got "
            f"{d1.shape[1]} and {d2.shape[1]}."
        )
    return d1, d2


def fit_in_memory(what: str, *data: DataMatrix | None, extra: float = 0, fix: str) -> None:
    """Ask the memory budget for the float64 copies of ``data`` and ``extra`` more bytes (the
    caller's output) before anything is converted or allocated.

    Raises:
      BudgetExceeded: more than this process may use; the message gives the estimate and ``fix``.
    """
    need = extra + sum(d.copy_bytes for d in data if d is not None and not _on_gpu(d))
    shapes = " and ".join(f"{d.name} of shape {d.shape} ({d.raw.dtype})" for d in data if d)
    check_memory(need, f"{what} for {shapes}", fix)


def _on_gpu(d: DataMatrix) -> bool:
    return d.is_torch and d.raw.device.type != "cpu"

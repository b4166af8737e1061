r"""Relative spectral-norm errors and the log–log slope of an n-sweep (the verdict: :mod:`._verdict`).

The theorems state `‖G* − Ḡ‖ = O(n^{−1/2})` and `‖K* − K̄‖ = O(n^{−1/2})` in operator norm
(slides, Theorems 1–2), while ‖G*‖ = O(n) because of the class-mean spike; the slides' figure
plots `‖G* − Ḡ‖/‖G*‖`.  A correct set of coefficients makes this error fall with n; a wrong one
leaves an O(1)·‖ΔC‖ discrepancy in the low-rank part, so the error levels off (slope ≈ 0).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import torch

from .._errors import InvalidArgument
from ._threads import torch_threads

__all__ = [
    "KernelErrors",
    "relative_spectral_error",
    "spectral_norm",
    "eigenvalues",
    "loglog_slope",
]


def eigenvalues(A: np.ndarray, device: str = "cpu") -> np.ndarray:
    """Ascending eigenvalues of the symmetric part of A, in float64 on ``device``.

    On the CPU, LAPACK's syevd runs on one thread (see :mod:`._threads` for why).
    """
    on_cpu = torch.device(device).type == "cpu"
    with torch_threads(1 if on_cpu else torch.get_num_threads()):
        t = torch.as_tensor(A, dtype=torch.float64, device=device)
        return torch.linalg.eigvalsh(0.5 * (t + t.T)).cpu().numpy()


def spectral_norm(A: np.ndarray, device: str = "cpu") -> float:
    """‖A‖₂ of a symmetric matrix: its largest |eigenvalue|."""
    w = eigenvalues(A, device)
    return float(np.abs(w).max()) if w.size else 0.0


def relative_spectral_error(
    A: np.ndarray, B: np.ndarray, norm_A: float | None = None, device: str = "cpu"
) -> float:
    """`‖A − B‖₂ / ‖A‖₂` for symmetric A, B (pass ``norm_A`` if already known)."""
    if A.shape != B.shape:
        raise InvalidArgument(f"shapes differ: {A.shape} vs {B.shape}.")
    den = spectral_norm(A, device) if norm_A is None else norm_A
    if den == 0:
        raise InvalidArgument("relative error against a zero matrix.")
    return spectral_norm(A - B, device) / den


def loglog_slope(ns: Sequence[int], errors: Sequence[float]) -> float | None:
    """Least-squares slope of log(error) against log(n); None for fewer than two points."""
    if len(ns) != len(errors):
        raise InvalidArgument("ns and errors differ in length.")
    if len(ns) < 2:
        return None
    x, y = np.log(np.asarray(ns, float)), np.log(np.asarray(errors, float))
    return float(np.polyfit(x, y, 1)[0])


@dataclasses.dataclass(frozen=True)
class KernelErrors:
    """Relative spectral errors for one kernel (CK or NTK) at one n.

    ``exact_vs_equiv`` = ‖exact − equivalent‖/‖exact‖ (the slides' figure);
    ``mc_vs_exact`` = ‖MC − exact‖/‖MC‖; ``mc_vs_equiv`` = ‖MC − equivalent‖/‖MC‖ (normalised by
    the first-named matrix throughout).  The MC entries are None with ``--no-mc``.
    """

    exact_vs_equiv: float
    mc_vs_exact: float | None = None
    mc_vs_equiv: float | None = None

    def as_dict(self) -> dict[str, float | None]:
        return dataclasses.asdict(self)

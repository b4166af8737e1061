r"""The equivalent kernels Ḡ, K̄ of ICML 2024 (Theorems 1–2) for the user's labelled data.

    Ḡ = α*₁ XᵀX + V C* Vᵀ + (γ*² − τ0² α*₁) I,   K̄ likewise with β*₁..₃, κ*²,   V = [J/√p, ψ],

with the mixture statistics J, ψ, t, T, τ0 estimated from the data and its labels
(:func:`~._data.empirical_statistics`: class means, traces and cross-traces; consistent, O(n^{-1/2})
errors) or given, and the coefficients for τ0 from :func:`deqrmt.deq_coefficients` (φ centred at
τ*; the same c makes :func:`deqrmt.kernels` ``(…, center=c)`` the exact kernel Ḡ approximates).

The theorems' scaling is √p·x_i ~ N(μ_a, C_a): squared norms ‖x_i‖² of order one (divide raw
features by √p).  numpy only: no torch is needed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from .._arguments import show
from .._errors import InvalidArgument
from ._data import MixtureSample, MixtureStatistics, empirical_statistics
from ._data_args import data_matrix, fit_in_memory

__all__ = ["EquivalentKernels", "equivalent_kernels"]


@dataclasses.dataclass(frozen=True)
class EquivalentKernels:
    """Ḡ and K̄ for one data set, with what they were built from.

    Attributes:
      G: Ḡ, n × n.
      K: K̄, n × n (None when the NTK diverges: σ_a² E[φ'²] ≥ 1; see ``coefficients.notes``).
      coefficients: the :class:`deqrmt.DEQCoefficients` at the data's τ0.
      statistics: J, ψ, t, T, τ0 used (estimated or given).
      classes: the label of each class, in the order of J's columns.
    """

    G: np.ndarray
    K: np.ndarray | None
    coefficients: Any
    statistics: MixtureStatistics
    classes: tuple[Any, ...]

    @property
    def center(self) -> float:
        """c of φ_c = φ − c (pass it to :func:`deqrmt.kernels` for the matching exact kernel)."""
        return float(self.coefficients.values["center"].value)


def _labels(labels: Any, n: int) -> tuple[np.ndarray, tuple[Any, ...]]:
    if labels is None:
        return np.zeros(n, dtype=np.int64), ("all",)
    if isinstance(labels, str | bytes | Mapping | set | frozenset) or not hasattr(
        labels, "__len__"
    ):
        raise InvalidArgument(
            f"labels={show(labels)}: expected one class per sample (a list or 1-D array of "
            f"{n} labels), got {type(labels).__name__}."
        )
    arr = np.asarray(labels) if len(labels) == n else None
    if arr is None or arr.ndim != 1 or arr.shape[0] != n:
        shape = f"{len(labels)} labels" if arr is None else f"shape {arr.shape}"
        raise InvalidArgument(f"labels must be one class per sample (shape ({n},)), got {shape}.")
    try:
        classes, idx = np.unique(arr, return_inverse=True)
    except TypeError:  # labels of types that do not compare (1 and "a")
        raise InvalidArgument(
            f"labels={show(labels)}: mixed types that cannot be ordered; give labels of one type."
        ) from None
    return idx.reshape(-1).astype(np.int64), tuple(v.item() for v in classes)


def equivalent_kernels(
    act: Any,
    X: Any,
    labels: Any = None,
    *,
    statistics: MixtureStatistics | None = None,
    sigma_a2: Any = 0.2,
    sigma_b2: Any = None,
    trainable: Any = ("a", "A"),
    dps: int = 20,
) -> EquivalentKernels:
    r"""Ḡ and K̄ (ICML 2024, Theorems 1–2) for data X (rows are samples) with class ``labels``.

    Args:
      act: the activation (name, expression in x, or Activation).
      X: n × p data (numpy or anything ``np.asarray`` takes), scaled so that ‖x_i‖² = O(1).
      labels: the class of each sample (any hashable values; ≥ 2 samples per class), or None
        for one class.  Ignored when ``statistics`` is given.
      statistics: J, ψ, t, T, τ0 to use instead of estimating them (e.g. the population values
        of :meth:`deqrmt.validate.GaussianMixture.statistics`).
      sigma_a2, sigma_b2, trainable, dps: as for :func:`deqrmt.deq_coefficients`.

    Returns:
      An :class:`EquivalentKernels` record: ``G`` (Ḡ, n × n numpy array), ``K`` (K̄, or None
      when the NTK diverges), ``coefficients`` (the :class:`deqrmt.DEQCoefficients` at the
      data's τ0), ``statistics`` (the J, ψ, t, T, τ0 used), ``classes`` (the label of each of
      J's columns) and ``center`` (c of φ_c = φ − c, for the matching exact
      :func:`deqrmt.kernels`).

    Raises:
      InvalidArgument: X not an n × p array of finite numbers with n ≥ 2, labels of the wrong
        shape, a class with fewer than 2 samples, statistics for another n, all-zero data.
      ParseError, UnknownActivation: the activation is not understood.
      ContractionError, CenteringError: as for :func:`deqrmt.deq_coefficients`.

    Example:
      >>> import numpy as np
      >>> rng = np.random.default_rng(0)
      >>> X = rng.standard_normal((40, 30)) / np.sqrt(30)
      >>> eq = equivalent_kernels("tanh", X, labels=[0] * 20 + [1] * 20)
      >>> eq.G.shape, eq.K.shape
      ((40, 40), (40, 40))
    """
    from ..numeric import DEQProblem, deq_coefficients, equivalent_kernel
    from ..symbolic import get_activation

    # the activation, σ's, trainable and dps first (the problem at τ0 = 1): cheap, and a
    # wrong one is named before the data is touched
    act = get_activation(act, "act")
    DEQProblem.make(act, sigma_a2, sigma_b2, 1, dps, trainable=trainable)
    if statistics is not None and not isinstance(statistics, MixtureStatistics):
        raise InvalidArgument(
            f"statistics={show(statistics)}: expected None or a MixtureStatistics (e.g. "
            f"GaussianMixture.statistics(...)), got {type(statistics).__name__}."
        )
    dm = data_matrix(X, "X", min_rows=2)
    n, p = dm.shape
    # Ḡ, K̄ and their n × n terms (numeric.equivalent_kernel), the data's transposed copy
    fit_in_memory(
        f"Ḡ and K̄ of {n} samples (4·8·n² bytes)",
        dm,
        extra=8.0 * (4 * n * n + n * p),
        fix="use fewer samples",
    )
    data = dm.numpy()
    Xt = np.ascontiguousarray(data.T)
    if statistics is None:
        idx, classes = _labels(labels, n)
        counts = np.bincount(idx)
        if (counts < 2).any():
            raise InvalidArgument(
                f"labels: every class needs at least 2 samples to estimate its covariance; class "
                f"{classes[int(np.argmin(counts))]!r} has {int(counts.min())}."
            )
        stats = empirical_statistics(MixtureSample(Xt, idx, counts))
    else:
        stats = statistics
        if stats.J.shape[0] != n:
            raise InvalidArgument(f"statistics are for {stats.J.shape[0]} samples, X has {n}.")
        classes = tuple(range(stats.J.shape[1]))
    coef = deq_coefficients(
        act, sigma_a2, sigma_b2, repr(float(stats.tau0)), dps, trainable=trainable
    )
    v = coef.as_floats()
    args = (Xt, stats.J, stats.psi, stats.t, stats.T, stats.tau0)
    G = equivalent_kernel(v["alpha_1"], v["alpha_2"], v["alpha_3"], v["gamma_star"] ** 2, *args)
    K = None
    if "beta_1" in v:
        K = equivalent_kernel(v["beta_1"], v["beta_2"], v["beta_3"], v["kappa_star"] ** 2, *args)
    return EquivalentKernels(G, K, coef, stats, classes)

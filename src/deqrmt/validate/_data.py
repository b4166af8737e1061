r"""K-class Gaussian mixtures and the statistics the equivalent kernels are built from.

Slides, "GMM Data" and "High-dimensional Statistics": for x_i ∈ C_a, √p·x_i ~ N(μ_a, C_a);

    J = [j_1, …, j_K] (n × K one-hot),   ψ_i = ‖ω_i‖² − tr(C_a)/p,  ω_i = x_i − μ_a/√p,
    t_a = tr(C_a°)/√p,   T_ab = tr(C_a C_b)/p,   τ0 = √(tr C°/p),

with C° = Σ_b (n_b/n) C_b and C_a° = C_a − C°.  The statistics are the population ones at the
actual p (e.g. τ0² = 1 + 4/√p in the preset), not their p → ∞ limits;
:func:`empirical_statistics` gives plug-in estimates from the sample alone.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .._errors import InvalidArgument

__all__ = [
    "GaussianMixture",
    "MixtureSample",
    "MixtureStatistics",
    "paper_mixture",
    "empirical_statistics",
]


@dataclasses.dataclass(frozen=True)
class MixtureSample:
    """n draws, sorted by class.

    Attributes:
      X: data matrix, p × n (columns are the x_i; √p·x_i ~ N(μ_a, C_a)).
      labels: class index of each column, shape (n,).
      counts: n_a per class, shape (K,).
    """

    X: np.ndarray
    labels: np.ndarray
    counts: np.ndarray

    @property
    def n(self) -> int:
        return int(self.X.shape[1])

    @property
    def p(self) -> int:
        return int(self.X.shape[0])


@dataclasses.dataclass(frozen=True)
class MixtureStatistics:
    """J, ψ, t, T, τ0 of one sample (slides, "High-dimensional Statistics")."""

    J: np.ndarray  # n × K
    psi: np.ndarray  # n
    t: np.ndarray  # K
    T: np.ndarray  # K × K
    tau0: float

    def __post_init__(self) -> None:
        for field in ("J", "psi", "t", "T"):
            v = getattr(self, field)
            if not isinstance(v, np.ndarray) or v.dtype.kind not in "fiu":
                raise InvalidArgument(
                    f"MixtureStatistics.{field}: expected a numpy array of real numbers."
                )
            if v.size and not np.isfinite(v).all():
                raise InvalidArgument(
                    f"MixtureStatistics.{field} has non-finite entries (nan or inf)."
                )
        if self.J.ndim != 2:
            raise InvalidArgument(f"MixtureStatistics.J must be n × K, got {self.J.shape}.")
        n, k = self.J.shape
        if self.psi.shape != (n,) or self.t.shape != (k,) or self.T.shape != (k, k):
            raise InvalidArgument(
                f"inconsistent shapes: J {self.J.shape}, psi {self.psi.shape}, "
                f"t {self.t.shape}, T {self.T.shape}."
            )
        if not (self.tau0 > 0 and math.isfinite(self.tau0)):
            raise InvalidArgument(f"tau0 must be positive and finite, got {self.tau0!r}.")


@dataclasses.dataclass(frozen=True)
class GaussianMixture:
    """√p·x ~ Σ_a π_a N(μ_a, C_a).

    Attributes:
      means: μ_a, shape (K, p).
      covariances: C_a, shape (K, p) for diagonal C_a or (K, p, p).
      weights: class proportions π_a, shape (K,), summing to 1.
      name: a label for reports.
    """

    means: np.ndarray
    covariances: np.ndarray
    weights: np.ndarray
    name: str = "custom"

    def __post_init__(self) -> None:
        self.check("GaussianMixture")

    def check(self, name: str) -> None:
        """Refuse (:class:`InvalidArgument`, the message starting with ``name``) arrays that
        are not real and finite, shapes that disagree, a negative variance (the diagonal of
        every C_a ≥ 0) or weights that are not positive proportions summing to 1.  Run again
        where a mixture is used: its arrays may have been changed since it was built."""
        arrays = {}
        for field in ("means", "covariances", "weights"):
            v = getattr(self, field)
            if not isinstance(v, np.ndarray) or v.dtype.kind not in "fiu":
                kind = f"dtype {v.dtype}" if isinstance(v, np.ndarray) else type(v).__name__
                raise InvalidArgument(
                    f"{name}.{field}: expected a numpy array of real numbers, got {kind}."
                )
            if v.size and not np.isfinite(v).all():
                raise InvalidArgument(f"{name}.{field} has non-finite entries (nan or inf).")
            arrays[field] = v
        if arrays["means"].ndim != 2 or 0 in arrays["means"].shape:
            raise InvalidArgument(
                f"{name}.means must have shape (K, p), got {arrays['means'].shape}."
            )
        k, p = self.means.shape
        if self.covariances.shape not in {(k, p), (k, p, p)}:
            raise InvalidArgument(
                f"{name}.covariances must have shape ({k}, {p}) or ({k}, {p}, {p}), "
                f"got {self.covariances.shape}."
            )
        variances = (
            self.covariances if self.covariances.ndim == 2
            else np.diagonal(self.covariances, axis1=1, axis2=2)
        )  # fmt: skip
        if (variances < 0).any():
            raise InvalidArgument(f"{name}.covariances: a negative variance; C_a must be ≥ 0.")
        if self.covariances.ndim == 3 and not np.allclose(
            self.covariances, np.swapaxes(self.covariances, 1, 2)
        ):
            raise InvalidArgument(f"{name}.covariances: a C_a that is not symmetric.")
        w = self.weights
        if w.shape != (k,) or not (w > 0).all() or not math.isclose(float(w.sum()), 1.0):
            raise InvalidArgument(
                f"{name}.weights must be {k} positive proportions summing to 1, got "
                f"{np.array2string(w, threshold=6)}."
            )

    @property
    def p(self) -> int:
        return int(self.means.shape[1])

    @property
    def diagonal(self) -> bool:
        return self.covariances.ndim == 2

    def _traces(self) -> np.ndarray:
        c = self.covariances
        return c.sum(axis=1) if self.diagonal else np.trace(c, axis1=1, axis2=2)

    def _cross_traces(self) -> np.ndarray:
        c = self.covariances
        return c @ c.T if self.diagonal else np.einsum("aij,bji->ab", c, c)

    def counts(self, n: int) -> np.ndarray:
        """n_a = round(π_a n), adjusted so that they sum to n (largest remainders)."""
        raw = self.weights * n
        out = np.floor(raw).astype(int)
        out[np.argsort(raw - out)[::-1][: n - int(out.sum())]] += 1
        if (out == 0).any():
            raise InvalidArgument(f"n={n} leaves a class empty; use a larger n.")
        return out

    def sample(self, n: int, rng: np.random.Generator) -> MixtureSample:
        """Draw n points, class by class (class a occupies a contiguous block of columns)."""
        counts = self.counts(n)
        p = self.p
        cols = []
        for a, na in enumerate(counts):
            g = rng.standard_normal((p, int(na)))
            c = self.covariances[a]
            if self.diagonal:
                z = np.sqrt(c)[:, None] * g
            else:
                w, v = np.linalg.eigh(c)
                z = (v * np.sqrt(np.clip(w, 0, None))) @ (v.T @ g)
            cols.append((self.means[a][:, None] + z) / math.sqrt(p))
        labels = np.repeat(np.arange(len(counts)), counts)
        return MixtureSample(np.concatenate(cols, axis=1), labels, counts)

    def statistics(self, sample: MixtureSample) -> MixtureStatistics:
        """Population J, ψ, t, T, τ0 for ``sample`` (C° weighted by the sample's n_a/n)."""
        p, n = sample.p, sample.n
        K = len(sample.counts)
        J = np.zeros((n, K))
        J[np.arange(n), sample.labels] = 1.0
        tr = self._traces()
        omega = sample.X - self.means[sample.labels].T / math.sqrt(p)
        psi = (omega * omega).sum(axis=0) - tr[sample.labels] / p
        frac = sample.counts / n
        tr0 = float(frac @ tr)
        t = (tr - tr0) / math.sqrt(p)
        T = self._cross_traces() / p
        return MixtureStatistics(J=J, psi=psi, t=t, T=T, tau0=math.sqrt(tr0 / p))

    def tau0(self, n: int) -> float:
        """τ0 = √(tr C°/p) for a sample of size n (through n_a/n)."""
        frac = self.counts(n) / n
        return math.sqrt(float(frac @ self._traces()) / self.p)


def paper_mixture(
    p: int, *, classes: int = 2, mean_norm: float = 8.0, cov_shift: float = 8.0
) -> GaussianMixture:
    r"""The slides' figure setting: μ_a = 8·e_{8(a−1)+1}, C_a = (1 + 8(a−1)/√p)·I_p, equal π_a.

    With two equal classes: τ0² = tr C°/p = 1 + 4/√p, t = (−4, 4) and
    T_ab = (1 + 8(a−1)/√p)(1 + 8(b−1)/√p).
    """
    if p < 8 * classes:
        raise InvalidArgument(f"the paper preset needs p ≥ {8 * classes}, got p={p}.")
    means = np.zeros((classes, p))
    for a in range(classes):
        means[a, 8 * a] = mean_norm
    scales = 1 + cov_shift * np.arange(classes) / math.sqrt(p)
    covs = np.repeat(scales[:, None], p, axis=1)
    return GaussianMixture(means, covs, np.full(classes, 1 / classes), name="paper")


def empirical_statistics(sample: MixtureSample) -> MixtureStatistics:
    r"""Plug-in J, ψ, t, T, τ0 from the sample alone (class means and traces estimated).

    tr(C_a)/p is estimated by `(1/(n_a−1)) Σ_{i∈a} ‖x_i − x̄_a‖²`, T_ab (a ≠ b) by
    `p · mean_{i∈a, j∈b} (ω_iᵀω_j)²` and T_aa by the same over i ≠ j, with ω centred by the class
    means; the estimates are consistent, with O(1/√n) errors.
    """
    X, labels, counts = sample.X, sample.labels, sample.counts
    p, n = X.shape
    K = len(counts)
    J = np.zeros((n, K))
    J[np.arange(n), labels] = 1.0
    means = (X @ J) / counts
    omega = X - means[:, labels]
    sq = (omega * omega).sum(axis=0)
    tr = np.array([sq[labels == a].sum() / (counts[a] - 1) for a in range(K)])  # tr(C_a)/p
    psi = sq * (counts[labels] / (counts[labels] - 1)) - tr[labels]
    gram = omega.T @ omega
    T = np.empty((K, K))
    for a in range(K):
        for b in range(K):
            block = gram[np.ix_(labels == a, labels == b)] ** 2
            if a == b:
                T[a, b] = p * (block.sum() - np.trace(block)) / (counts[a] * (counts[a] - 1))
            else:
                T[a, b] = p * block.mean()
    tr0 = float(counts / n @ tr)
    if not tr0 > 0:  # named here: MixtureStatistics would only say "tau0 … got 0.0"
        raise InvalidArgument(
            "X has no within-class variance (every sample equals its class mean: τ0 = 0); "
            "the equivalent needs data with noise: check X and the labels."
        )
    return MixtureStatistics(J=J, psi=psi, t=(tr - tr0) * math.sqrt(p), T=T, tau0=math.sqrt(tr0))

r"""Sampled eigenvalues against a predicted :class:`~._spectrum.SpectralLaw`: the Kolmogorov
distance of the bulk and the relative errors of the spikes (numpy only)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .._errors import InvalidArgument
from .._json import JSONObject
from ._context import Num
from ._spectrum import SpectralLaw

__all__ = ["Kolmogorov", "kolmogorov_distance"]

Real = np.ndarray  # float64 arrays


@dataclasses.dataclass(frozen=True)
class Kolmogorov:
    """Sampled eigenvalues against a :class:`SpectralLaw`.

    Attributes:
      distance: sup |F_n − F| between the sampled bulk (the eigenvalues matched to spikes and to
        atoms removed) and the law's continuous part, both normalized to mass 1.  An atom is
        left out because the Kolmogorov distance is not continuous there: an O(n^{-1/2})
        perturbation of the n·w eigenvalues of an atom of mass w moves it by up to w.
      distance_with_atoms: the same with the atoms' eigenvalues kept (the law's full CDF).
      spikes: the sampled eigenvalues matched to the predicted spikes (same order).
      spike_errors: |sampled − predicted|/|sampled| per spike.
      bulk: how many sampled eigenvalues the distance compares.
    """

    distance: float
    distance_with_atoms: float
    spikes: tuple[float, ...]
    spike_errors: tuple[float, ...]
    bulk: int

    def to_dict(self) -> JSONObject:
        """``kolmogorov``, ``kolmogorov_with_atoms``, ``spikes``, ``spike_errors``,
        ``bulk_count`` (the keys of ``deqrmt spectrum --json``'s ``mc`` objects)."""
        return {
            "kolmogorov": self.distance,
            "kolmogorov_with_atoms": self.distance_with_atoms,
            "spikes": list(self.spikes),
            "spike_errors": list(self.spike_errors),
            "bulk_count": self.bulk,
        }


def _ks(sorted_sample: Real, cdf: Real) -> float:
    m = sorted_sample.shape[0]
    if m == 0:
        return math.nan
    i = np.arange(1, m + 1)
    return float(max(np.max(i / m - cdf), np.max(cdf - (i - 1) / m)))


def kolmogorov_distance(law: SpectralLaw, eigenvalues: Num) -> Kolmogorov:
    """Match the sampled ``eigenvalues`` to the law's spikes and atoms; measure the bulk.

    Spikes above the bulk take the largest sampled eigenvalues, those below the smallest, those
    in a gap the nearest; an atom of mass w takes the round(w·n) eigenvalues nearest to it.

    Args:
      law: the predicted :class:`SpectralLaw`.
      eigenvalues: the sampled eigenvalues (any order, any array shape).

    Returns:
      A :class:`Kolmogorov` record: ``distance`` (bulk only), ``distance_with_atoms``,
      ``spikes`` (the matched sampled eigenvalues), ``spike_errors`` (relative) and ``bulk``
      (how many eigenvalues the distance compares).

    Raises:
      InvalidArgument: fewer than two eigenvalues, or a non-finite one.

    Example:
      >>> import numpy as np
      >>> from deqrmt.numeric import sphere_spectrum
      >>> n, d = 300, 360
      >>> law = sphere_spectrum(0.07, 0.9, 0.04, n, d, points=201)
      >>> X = np.random.default_rng(0).standard_normal((d, n))
      >>> X /= np.linalg.norm(X, axis=0)                       # n points on the sphere
      >>> ev = np.linalg.eigvalsh(0.07 + 0.9 * X.T @ X + 0.04 * np.eye(n))
      >>> k = kolmogorov_distance(law, ev)
      >>> k.bulk, k.distance < 0.05, k.spike_errors[0] < 0.02
      (299, True, True)
    """
    ev = np.sort(np.asarray(eigenvalues, dtype=float).ravel())
    if ev.size < 2 or not np.isfinite(ev).all():
        raise InvalidArgument("need at least two finite eigenvalues.")
    free = np.ones(ev.size, dtype=bool)
    lo, hi = law.bulk_edges
    matched: dict[int, float] = {}
    above = [(k, s) for k, s in enumerate(law.spikes) if not s < hi]
    below = [(k, s) for k, s in enumerate(law.spikes) if s < lo]
    inner = [(k, s) for k, s in enumerate(law.spikes) if lo <= s < hi]
    for j, (k, _) in enumerate(above):  # spikes are decreasing: the j-th above takes ev[-1-j]
        idx = ev.size - 1 - j
        matched[k] = float(ev[idx])
        free[idx] = False
    for j, (k, _) in enumerate(sorted(below, key=lambda ks: ks[1])):
        matched[k] = float(ev[j])
        free[j] = False
    for k, s in inner:
        cand = np.flatnonzero(free)
        idx = int(cand[np.argmin(np.abs(ev[cand] - s))])
        matched[k] = float(ev[idx])
        free[idx] = False
    with_atoms = free.copy()
    for loc, mass in law.atoms:
        take = int(round(mass * ev.size))
        cand = np.flatnonzero(free)
        nearest = cand[np.argsort(np.abs(ev[cand] - loc), kind="stable")[:take]]
        free[nearest] = False
    bulk = ev[free]
    d = _ks(bulk, law.cdf(bulk, atoms=False))
    kept = ev[with_atoms]
    d_atoms = _ks(kept, law.cdf(kept, atoms=True))
    sampled = tuple(matched[k] for k in range(len(law.spikes)))
    errors = tuple(
        abs(s - p) / max(abs(s), 1e-300) for s, p in zip(sampled, law.spikes, strict=True)
    )
    return Kolmogorov(d, d_atoms, sampled, errors, int(bulk.size))

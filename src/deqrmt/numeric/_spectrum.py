r"""Predicted eigenvalue spectra of the equivalent kernels: density, support, atoms, spikes, alignments.

Both settings give an equivalent kernel of the form "bulk + low rank" (numpy only, no torch):

**Gaussian mixture** (ICML 2024, Theorems 1–2).  For √p x_i ~ N(μ_a, C_a), X = (M Jᵀ + W)/√p
with W's columns ~ N(0, C_a); with Z = W/√p, Y = √c₁ Z and c₀ = d − τ0² c₁,

    Ḡ = c₁ XᵀX + V C Vᵀ + (d − τ0² c₁) I = YᵀY + c₀ I + U Ω Uᵀ,   U = [J/√p, YᵀE, ψ],
    Ω = [[c₁ RᵀR + c₂ ttᵀ + c₃ T,  √c₁ Rᵀ,  c₂ t],
         [√c₁ R,                    0,       0  ],
         [c₂ tᵀ,                    0,       c₂ ]],

where M = E R (E: orthonormal basis of the span of the means) and (c₁, c₂, c₃, d) =
(α*₁, α*₂, α*₃, γ*²) for Ḡ, (β*₁, β*₂, β*₃, κ*²) for K̄.  The bulk YᵀY + c₀I has the law of
:class:`~._resolvent.MixtureGram` shifted by c₀ (with an atom at c₀ of mass 1 − p/n when p < n).

**Sphere** (HLD 2023, Theorems 1, 3).  Ḡ = α 11ᵀ + β XᵀX + μ I with x_i uniform on S^{d−1}:
the bulk is the Marchenko–Pastur law of ratio n/d scaled by β and shifted by μ; the low-rank part
is (1/√n)(α n)(1/√n)ᵀ.

The isolated eigenvalues (spikes) of bulk + UΩUᵀ and their eigenvectors' alignments are
:mod:`._spikes`'s; this module builds the bulk's law (support, grid, CDF) and the two settings.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from .. import _arguments
from .._errors import InvalidArgument, NoConvergence
from .._json import JSONObject
from ._context import Num
from ._mapping import AttributeHints
from ._resolvent import MixtureGram, marchenko_pastur_density, marchenko_pastur_edges
from ._spikes import Alignment, LowRank, Real, isolated_eigenvalues

__all__ = ["SpectralLaw", "mixture_spectrum", "sphere_spectrum"]

#: points of the density grid, shared among the support's intervals by length (≥ 48 each)
GRID_POINTS = 801
#: uniform scan that locates the support's intervals before their edges are bisected
_SCAN_POINTS = 1600
_REL_INSIDE = 1e-7


@dataclasses.dataclass(frozen=True)
class SpectralLaw(AttributeHints):
    """The predicted eigenvalue distribution of an n × n equivalent kernel.

    Attributes:
      x: the grid of the absolutely continuous part (Chebyshev-clustered at the edges of every
        support interval, so the square-root edges are resolved).
      density: the density on ``x``; it integrates to ``1 − Σ atom masses``.
      support: the intervals of the absolutely continuous part.
      atoms: (location, mass) point masses of the bulk (an n − p-fold eigenvalue when p < n).
      spikes: the isolated eigenvalues (each as often as its multiplicity), decreasing.
      alignments: per distinct spike, its eigenvectors' class alignment.
      n: the matrix size the law is for (spike counts are out of n).
      setting: "sphere" or "mixture".

    ``cdf(t)`` is the bulk's cumulative distribution (``atoms=False``: the continuous part
    alone), ``bulk_edges`` the bulk's extent and ``to_dict()`` the ``deqrmt spectrum --json``
    form (``density`` {x, y}, ``support``, ``atoms`` {location, mass}, ``spikes``,
    ``alignments``).  Built by :func:`sphere_spectrum` and :func:`mixture_spectrum`, or read
    off a :class:`deqrmt.SpectrumReport` (``report.ck.law``).

    Example:
      >>> law = sphere_spectrum(0.0709, 0.893, 0.0357, n=200, d=240, points=201)
      >>> law.setting, law.n, len(law.spikes), law.atoms
      ('sphere', 200, 1, ())
      >>> round(float(law.cdf(law.bulk_edges[1])), 6)     # the bulk has mass 1
      1.0
    """

    x: Real
    density: Real
    support: tuple[tuple[float, float], ...]
    atoms: tuple[tuple[float, float], ...]
    spikes: tuple[float, ...]
    alignments: tuple[Alignment, ...]
    n: int
    setting: str
    _cdf: Real = dataclasses.field(repr=False)

    def __repr__(self) -> str:
        from ._display import law_lines, short

        return short(law_lines(self))

    def _repr_html_(self) -> str:
        from ._display import law_lines, lines_html

        return lines_html(law_lines(self))

    def cdf(self, t: Num, *, atoms: bool = True) -> Real:
        """P(λ ≤ t) of the bulk law (spikes carry no mass); ``atoms=False``: the continuous part
        alone, normalized to total mass 1."""
        atoms = _arguments.boolean(atoms, "atoms")
        refused = InvalidArgument(
            f"t={_arguments.show(t)}: expected real numbers (a number or an array of them)."
        )
        if t is None or isinstance(t, str | bytes | bool):
            raise refused
        try:
            if np.iscomplexobj(t):
                raise refused
            t = np.asarray(t, dtype=float)
        except (TypeError, ValueError):
            raise refused from None
        cont = np.zeros_like(t)
        if self.x.size:
            cont = np.interp(t, self.x, self._cdf, left=0.0, right=float(self._cdf[-1]))
        if not atoms:
            total = float(self._cdf[-1]) if self._cdf.size else 0.0
            return cont / total if total > 0 else cont
        for loc, mass in self.atoms:
            cont = cont + mass * (t >= loc)
        return cont

    @property
    def bulk_edges(self) -> tuple[float, float]:
        """The smallest and largest point of the bulk (support and atoms)."""
        pts = [v for iv in self.support for v in iv] + [a for a, _ in self.atoms]
        return (min(pts), max(pts)) if pts else (math.nan, math.nan)

    def to_dict(self) -> JSONObject:
        """The law as JSON-ready lists (the ``ck`` / ``ntk`` object of ``deqrmt spectrum``)."""
        return {
            "density": {"x": [float(v) for v in self.x], "y": [float(v) for v in self.density]},
            "support": [[float(a), float(b)] for a, b in self.support],
            "atoms": [{"location": float(a), "mass": float(m)} for a, m in self.atoms],
            "spikes": [float(v) for v in self.spikes],
            "alignments": [
                {
                    "eigenvalue": a.eigenvalue,
                    "multiplicity": a.multiplicity,
                    "classes": [float(v) for v in a.classes],
                }
                for a in self.alignments
            ],
        }


# ---------------------------------------------------------------------------
# The bulk: support, grid, CDF
# ---------------------------------------------------------------------------


def _chebyshev(a: float, b: float, k: int) -> tuple[Real, Real]:
    """x_j = a + (b − a)(1 − cos θ_j)/2, θ_j = jπ/(k − 1), and dx/dθ."""
    theta = np.linspace(0.0, np.pi, k)
    x = a + (b - a) * (1 - np.cos(theta)) / 2
    return x, (b - a) * np.sin(theta) / 2


def _grid_law(
    intervals: Sequence[tuple[float, float]], density: Num, points: int
) -> tuple[Real, Real, Real]:
    """Density and cumulative mass on Chebyshev grids over ``intervals`` (trapezoid in θ, where
    the square-root edge behaviour becomes smooth)."""
    total = sum(b - a for a, b in intervals) or 1.0
    xs, ys, cs = [], [], []
    acc = 0.0
    for a, b in intervals:
        k = max(48, int(points * (b - a) / total))
        x, jac = _chebyshev(a, b, k)
        y = np.zeros_like(x)
        y[1:-1] = density(x[1:-1])
        g = y * jac
        dtheta = np.pi / (k - 1)
        c = acc + np.concatenate([[0.0], np.cumsum((g[1:] + g[:-1]) / 2 * dtheta)])
        acc = float(c[-1])
        xs.append(x)
        ys.append(y)
        cs.append(c)
    if not xs:
        return np.zeros(0), np.zeros(0), np.zeros(0)
    return np.concatenate(xs), np.concatenate(ys), np.concatenate(cs)


def _support(gram: MixtureGram) -> list[tuple[float, float]]:
    """The intervals where the density is positive (w-coordinates: before the shift by c₀)."""
    hi = 1.02 * gram.top()
    x = np.linspace(0.0, hi, _SCAN_POINTS + 1)[1:]
    f = gram.density(x)
    if not (f > 0).any():
        return []
    thr = _REL_INSIDE * float(f.max())
    inside = f > thr
    edges = np.flatnonzero(np.diff(inside.astype(int)))
    starts = ([0] if inside[0] else []) + [int(i) + 1 for i in edges if not inside[i]]
    ends = [int(i) for i in edges if inside[i]] + ([len(x) - 1] if inside[-1] else [])
    out = []
    for s, e in zip(starts, ends, strict=True):
        lo_out = x[s - 1] if s > 0 else 0.0
        hi_out = x[e + 1] if e + 1 < len(x) else hi
        a = _bisect_edge(gram, lo_out, x[s], thr)
        b = _bisect_edge(gram, hi_out, x[e], thr)
        out.append((a, b))
    return out


def _bisect_edge(gram: MixtureGram, outside: float, inside: float, thr: float) -> float:
    # an interval reaching 0 (p = n): the edge is 0 itself
    if outside == 0.0 and inside > 0 and gram.density(np.array([inside * 1e-6]))[0] > thr:
        return 0.0
    tol = 1e-13 * max(abs(outside), abs(inside))
    for _ in range(60):
        mid = 0.5 * (outside + inside)
        if abs(inside - outside) <= tol or mid in (outside, inside):
            break
        if gram.density(np.array([mid]))[0] > thr:
            inside = mid
        else:
            outside = mid
    return inside


# ---------------------------------------------------------------------------
# The two settings
# ---------------------------------------------------------------------------


def _law(
    gram: MixtureGram,
    c0: float,
    low: LowRank,
    setting: str,
    *,
    closed_form: Callable[[Real], Real] | None = None,
    intervals: list[tuple[float, float]] | None = None,
    points: int = GRID_POINTS,
) -> SpectralLaw:
    atom_mass = gram.atom()
    bulk = intervals if intervals is not None else (_support(gram) if gram.s.any() else [])
    density = closed_form if closed_form is not None else gram.density
    x, y, c = _grid_law(bulk, density, points)
    cont = float(c[-1]) if c.size else 0.0
    if abs(cont + atom_mass - 1.0) > 2e-3:
        raise NoConvergence(
            f"the predicted bulk has mass {cont + atom_mass:.5f}, not 1: the support was not "
            "resolved (a very narrow interval?); this is a limitation of the grid."
        )
    atoms = ((c0, atom_mass),) if atom_mass > 0 else ()
    spikes, aligned = isolated_eigenvalues(gram, low, c0, bulk, atom_mass > 0)
    return SpectralLaw(
        x=x + c0,
        density=y,
        support=tuple((float(a + c0), float(b + c0)) for a, b in bulk),
        atoms=tuple((float(a), float(m)) for a, m in atoms),
        spikes=tuple(spikes),
        alignments=tuple(aligned),
        n=gram.n,
        setting=setting,
        _cdf=c,
    )


def sphere_spectrum(
    alpha: float, beta: float, mu: float, n: int, d: int, *, points: int = GRID_POINTS
) -> SpectralLaw:
    r"""The spectrum of α 11ᵀ + β XᵀX + μ I, x_i uniform on S^{d−1} (HLD 2023, Theorems 1, 3).

    Bulk: Marchenko–Pastur of ratio n/d, scaled by β, shifted by μ (closed form); an atom at μ of
    mass 1 − d/n when d < n.  Spike: the root of 1 + α n m(λ) = 0 (m the bulk's Stieltjes
    transform), its eigenvector's alignment with 1/√n being 1/(α² n² m'(λ)).

    Args:
      alpha, beta, mu: the equivalent's scalars (:func:`deqrmt.sphere_coefficients`: ``alpha``,
        ``beta``, ``mu`` for the CK, ``ntk_alpha``, … for the NTK).
      n: the number of points (the matrix size); d: the dimension of the sphere's space.
      points: the density grid's size.

    Returns:
      A :class:`SpectralLaw` with ``setting="sphere"``: one support interval
      β[(1 − √(n/d))², (1 + √(n/d))²] + μ (none when β = 0), the atom (μ, 1 − d/n) when d < n,
      and the spike with its alignment with the all-ones direction.

    Raises:
      InvalidArgument: n or d not an integer ≥ 2, a non-finite scalar, β < 0.

    Example:
      >>> law = sphere_spectrum(0.0709, 0.893, 0.0357, 1000, 1200)
      >>> [round(v, 3) for v in law.support[0]], round(law.spikes[0], 2)
      ([0.042, 3.303], 71.84)
    """
    _check_size(n, "n")
    _check_size(d, "d")
    if not all(math.isfinite(v) for v in (alpha, beta, mu)) or beta < 0:
        raise InvalidArgument(f"need finite α, β, μ with β ≥ 0, got {alpha!r}, {beta!r}, {mu!r}.")
    gram = MixtureGram.from_variances(np.array([n]), np.full((1, d), float(beta)))
    a, b = marchenko_pastur_edges(n / d, beta)
    intervals = [(a, b)] if beta > 0 else []
    low = LowRank(
        omega=np.array([[alpha * d]]), E_groups=np.zeros((1, 0, 0)), T_diag=None, K=1, r=0
    )
    return _law(
        gram, mu, low, "sphere",
        closed_form=lambda x: marchenko_pastur_density(x, n / d, beta),
        intervals=intervals, points=points,
    )  # fmt: skip


def mixture_spectrum(
    c1: float,
    c2: float,
    c3: float,
    diag: float,
    counts: Sequence[int] | NDArray[np.int64],
    means: Real,
    variances: Real,
    *,
    points: int = GRID_POINTS,
) -> SpectralLaw:
    r"""The spectrum of c₁XᵀX + VCVᵀ + (diag − τ0²c₁)I for a K-class mixture (ICML 2024, Thm 1–2).

    Args:
      c1, c2, c3, diag: (α*₁, α*₂, α*₃, γ*²) for the CK, (β*₁, β*₂, β*₃, κ*²) for the NTK.
      counts: n_a, the class sizes (n = Σ n_a).
      means: μ_a, shape (K, p), for √p x ~ N(μ_a, C_a).
      variances: the diagonals of C_a, shape (K, p).

    The statistics t, T, τ0 are the population ones for these n_a (:mod:`deqrmt.validate._data`).

    Returns:
      A :class:`SpectralLaw` with ``setting="mixture"``: the bulk (the mixture's resolvent fixed
      point, shifted by c₀ = diag − τ0²c₁), an atom at c₀ of mass 1 − p/n when p < n, the spikes
      and their class alignments.

    Raises:
      InvalidArgument: shapes that disagree, a non-finite coefficient, c₁ < 0, negative or
        non-finite variances, a class of size ≤ 0.
      NoConvergence: the resolvent's fixed point did not converge, or the bulk's support was not
        resolved on the grid (a very narrow interval).

    Example:
      >>> import numpy as np
      >>> p = 50
      >>> means = np.zeros((2, p)); means[0, 0] = means[1, 1] = 3.0
      >>> variances = np.ones((2, p)); variances[1] *= 1.5
      >>> law = mixture_spectrum(0.3, 0.0, 0.0, 0.4, [60, 60], means, variances, points=201)
      >>> len(law.support), [round(s, 2) for s in law.spikes]
      (1, [4.72, 4.58])
      >>> [tuple(round(c, 2) for c in a.classes) for a in law.alignments]   # one class each
      [(0.0, 0.76), (0.75, 0.0)]
    """
    counts = np.asarray(counts, dtype=np.int64)
    means = np.asarray(means, dtype=float)
    variances = np.asarray(variances, dtype=float)
    K, p = variances.shape
    if means.shape != (K, p):
        raise InvalidArgument(f"means must have shape {(K, p)}, got {means.shape}.")
    if not all(math.isfinite(v) for v in (c1, c2, c3, diag)) or c1 < 0:
        raise InvalidArgument(f"need finite coefficients with c1 ≥ 0, got {(c1, c2, c3, diag)}.")
    _check_size(int(counts.sum()), "n")
    n = int(counts.sum())
    tr = variances.sum(axis=1) / p  # tr C_a / p
    tr0 = float((counts / n) @ tr)
    t = (tr - tr0) * math.sqrt(p)
    T = (variances @ variances.T) / p
    tau0_2 = tr0
    c0 = diag - tau0_2 * c1
    gram = MixtureGram.from_variances(counts, c1 * variances)
    # span of the means: M = E R
    u, sv, vt = np.linalg.svd(means.T, full_matrices=False)
    keep = sv > 1e-12 * max(float(sv.max()) if sv.size else 0.0, 1e-300)
    E, R = u[:, keep], sv[keep, None] * vt[keep]
    r = E.shape[1]
    groups = int(gram.group.max()) + 1
    Eg = np.zeros((groups, r, r))
    np.add.at(Eg, gram.group, np.einsum("ki,kj->kij", E, E))
    rc = math.sqrt(c1)
    omega = np.zeros((K + r + 1, K + r + 1))
    omega[:K, :K] = c1 * R.T @ R + c2 * np.outer(t, t) + c3 * T
    omega[:K, K : K + r] = rc * R.T
    omega[K : K + r, :K] = rc * R
    omega[:K, -1] = omega[-1, :K] = c2 * t
    omega[-1, -1] = c2
    low = LowRank(omega=omega, E_groups=Eg, T_diag=np.diag(T).copy(), K=K, r=r)
    return _law(gram, c0, low, "mixture", points=points)


def _check_size(v: int, name: str) -> None:
    if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 2:
        raise InvalidArgument(f"{name} must be an integer ≥ 2, got {name}={v!r}.")

r"""Exact values where the data make the maths exact: zero rows and identical rows.

Two cases need no bivariate expectation at all, and the iteration would only blur them:

* **A zero row** (‖x_i‖ = 0) with φ_c(0) = 0: q_i = 0 is the diagonal fixed point
  (`q = σ_a² E[φ_c(√q ξ)²] + 0`), so u_i ≡ 0 and `G*_ij = E[φ_c(0)φ_c(v)] = 0` for every j, the
  diagonal included; the NTK's terms `G`, `Ġ·W·G` and `σ_b² E'·W·x_iᵀx_j` all vanish too.  The
  engine keeps a floor on q (:func:`q_floor`, for the divisions by √q), which left
  `k(0, ·) ≈ 2e-7` for ReLU when it was an absolute 1e-12; the values are set to 0 instead.
* **Identical rows** (x_i = x_j bit for bit): Λ_ij = Λ_ii at the fixed point, so ρ = 1, u = v
  almost surely, and `G*_ij = G*_ii`, `Ġ*_ij = Ġ*_ii` (the univariate fixed point, which the
  pairwise map has as its unique fixed point when it contracts).  At ρ = 1 the bivariate map is
  at its least well conditioned (ReLU's Ġ has a √(1 − ρ) singularity there: rounding in ρ moved
  the NTK by ~1e-9 relative), so the pairs of identical rows copy the diagonal's values.

Identical rows are found exactly: samples are grouped by ‖x‖² (equal for identical rows, as the
same arithmetic on the same bits), and only within a group of two or more are rows compared,
by their bytes; on data with distinct norms this costs one sort of n numbers.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from ._pointwise import CenteredActivation

__all__ = ["Degenerate", "degenerate_samples", "q_floor"]


@dataclasses.dataclass(frozen=True)
class Degenerate:
    """The samples whose kernel values are known exactly (see the module docstring).

    Attributes:
      zero: boolean (n,), True for a zero row when φ_c(0) = 0 (None when there is none).
      twin: int64 (n,), a class id shared by identical samples, −1 for a sample without one
        (None when no two samples are identical).
    """

    zero: torch.Tensor | None
    twin: torch.Tensor | None

    def fix_tile(
        self,
        rows: slice,
        cols: slice,
        g: torch.Tensor,
        gdot: torch.Tensor,
        g_diag: torch.Tensor,
        gdot_diag: torch.Tensor,
    ) -> torch.Tensor | None:
        """Overwrite G and Ġ of one tile where they are exact; returns 1 − Ġ when Ġ changed."""
        changed = False
        same = self.twins(rows, cols)
        if same is not None and bool(same.any()):
            idx = same.nonzero(as_tuple=True)
            at = idx[0] + (rows.start or 0)
            g[idx] = g_diag[at]
            gdot[idx] = gdot_diag[at]
            changed = True
        if self.zero is not None:
            g[self.zero[rows], :] = 0.0
            g[:, self.zero[cols]] = 0.0
        return torch.rsub(gdot, 1.0) if changed else None

    def twins(self, rows: slice, cols: slice) -> torch.Tensor | None:
        """The pairs of identical samples in a tile (None when there are none anywhere)."""
        if self.twin is None:
            return None
        tr, tc = self.twin[rows], self.twin[cols]
        return (tr[:, None] == tc[None, :]) & (tr >= 0)[:, None]

    def unify(self, out: torch.Tensor, n1: int, symmetric: bool) -> None:
        """Make the rows (X1's samples) and columns (X2's, or X1's when ``symmetric``) of
        identical samples equal bit for bit in the finished n1 × n2 kernel ``out``: each takes
        its first twin's.  (Their pairs with a third sample are equal in exact arithmetic; the
        Gram products of different tiles may round differently.)"""
        if self.twin is None:
            return
        twin = self.twin.cpu().numpy()
        for axis, ids in ((0, twin[:n1]), (1, twin[:n1] if symmetric else twin[n1:])):
            first: dict[int, int] = {}
            for k, c in enumerate(ids.tolist()):
                if c < 0:
                    continue
                f = first.setdefault(c, k)
                if f != k:
                    if axis == 0:
                        out[k] = out[f]
                    else:
                        out[:, k] = out[:, f]


def degenerate_samples(
    act: CenteredActivation, samples: list[torch.Tensor] | None, sq_norms: torch.Tensor
) -> Degenerate:
    """Zero rows and identical rows of the samples (the columns of each p × n_k tensor in
    ``samples``, in order), given their squared norms; ``samples`` None: zero rows only."""
    sq = sq_norms.detach().cpu().numpy()
    zero = None
    if bool((sq == 0).any()):
        at_zero = act.phi(torch.zeros(1, dtype=torch.float64))
        if float(at_zero[0]) == 0.0:
            zero = torch.as_tensor(sq == 0, device=sq_norms.device)
    twin = None if samples is None else _twins(samples, sq)
    return Degenerate(zero, None if twin is None else torch.as_tensor(twin, device=sq_norms.device))


def _twins(samples: list[torch.Tensor], sq: np.ndarray) -> np.ndarray | None:
    """Class ids of identical samples (−1 for a unique one), None when all differ."""
    _, inverse, counts = np.unique(sq, return_inverse=True, return_counts=True)
    shared = np.flatnonzero(counts[inverse] >= 2)  # samples whose norm another sample has
    if shared.size == 0:
        return None
    offsets = np.cumsum([0] + [int(s.shape[1]) for s in samples])
    out = np.full(sq.shape[0], -1, dtype=np.int64)
    seen: dict[tuple[float, bytes], int] = {}
    members: dict[int, int] = {}
    for k in shared.tolist():
        part = int(np.searchsorted(offsets, k, side="right")) - 1
        col = samples[part][:, k - int(offsets[part])]
        key = (float(sq[k]), col.detach().cpu().contiguous().numpy().tobytes())
        cls = seen.setdefault(key, len(seen))
        out[k] = cls
        members[cls] = members.get(cls, 0) + 1
    lonely = [c for c, m in members.items() if m < 2]
    if lonely:
        out[np.isin(out, lonely)] = -1
    return out if bool((out >= 0).any()) else None


def q_floor(sq_norms: torch.Tensor, sigma_b2: float) -> torch.Tensor:
    """A lower bound of each q_i* that keeps q > 0: σ_b²‖x_i‖² (q* ≥ it, as g ≥ 0), and for a
    zero row 1e-12 of the largest (its q* is 0 when φ_c(0) = 0; its values are then set exactly,
    see :class:`Degenerate`, and the floor only keeps √q away from 0).

    A floor relative to the data, not an absolute one: data scaled by 10⁻⁶ have q ~ 1e-12.
    """
    low = sigma_b2 * sq_norms
    top = float(low.max()) if low.numel() else 0.0
    zero_floor = 1e-12 * top if top > 0 else 1e-12
    return torch.where(low > 0, low, torch.full_like(low, zero_floor))

r"""The low-rank part of a predicted spectrum: the isolated eigenvalues (spikes) and alignments.

An equivalent kernel is "bulk + U Ω Uᵀ" (:mod:`._spectrum` builds U, Ω and the bulk for the
mixture and the sphere settings; ICML 2024 Theorems 1–2, HLD 2023 Theorems 1, 3).

**Spikes.**  An eigenvalue λ of bulk + UΩUᵀ outside the bulk's support solves
`det(I + Ω H(λ)) = 0`, H the deterministic equivalent of UᵀQ(λ)U, Q = (bulk − λ)^{-1}:

    H = blockdiag( diag((n_a/p) q_a),  Eᵀ(I − T̄)E,  Σ_a 2 (n_a/p) T_aa q_a ),

(the off-diagonal blocks vanish: odd in Y, or sums of O(p^{-1/2}) terms of random sign; the ψ
block uses E[ψ_i²] = 2 tr C_a²/p² = 2 T_aa/p).  Above the bulk H is negative definite and
S(λ) = Ω + H(λ)^{-1} decreases (Loewner order), so the k-th largest eigenvalue of S crosses zero
exactly once: bisection finds every spike, repeated ones included.  Below the bulk, likewise with
signs reversed; in the gaps of the support, by sign changes of the determinant.

**Alignments.**  The spectral projector of an isolated eigenvalue is −Res Q̃ (Q̃ the full
resolvent), and UᵀQ̃U = H (I + ΩH)^{-1}; so the class-indicator alignment of the eigenvectors of λ
is `Σ_k (v̂_kᵀ j_a)²/n_a = −(p/n_a) [H(λ) Res_λ (I + ΩH)^{-1}]_{aa}`, with
Res = R (Lᵀ Ω H'(λ) R)^{-1} Lᵀ over the right/left null vectors R, L.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from .._errors import NoConvergence
from ._resolvent import MixtureGram

__all__ = ["Alignment", "LowRank", "Real", "isolated_eigenvalues"]

Real = np.ndarray  # float64 arrays


@dataclasses.dataclass(frozen=True)
class Alignment:
    """One isolated eigenvalue λ (``multiplicity`` equal copies) and its eigenvectors' alignment.

    Attributes:
      eigenvalue: the predicted isolated eigenvalue λ.
      multiplicity: how many equal copies of λ the law predicts.
      classes: ``classes[a]`` = Σ_k (v̂_kᵀ j_a)²/n_a over the eigenvectors v̂_k of λ, j_a the
        indicator of class a (for the sphere one "class", the all-ones vector): a number in
        [0, 1], 0 when the eigenvectors carry no class information, 1 when they are j_a/√n_a.
    """

    eigenvalue: float
    multiplicity: int
    classes: tuple[float, ...]


@dataclasses.dataclass(frozen=True)
class LowRank:
    """Ω and what H(λ) is built from (see the module docstring)."""

    omega: Real  # (K + r + [1]) square
    E_groups: Real  # (#groups, r, r): Σ_{k in group} E_k E_kᵀ
    T_diag: Real | None  # T_aa for the ψ block, or None (no ψ: the sphere)
    K: int
    r: int


def _h_blocks(gram: MixtureGram, low: LowRank, lam: Real, c0: float) -> tuple[Real, Real]:
    """H(λ) and H'(λ) (shape (N, D, D)) at real λ outside the bulk."""
    w = np.asarray(lam, dtype=float) - c0
    delta = gram.solve(w + 0j).real
    ddelta = gram.derivative(w, delta)
    q = 1.0 / (delta - w[:, None])
    dq = -(ddelta - 1.0) * q * q
    K, r = low.K, low.r
    D = low.omega.shape[0]
    N = w.shape[0]
    H = np.zeros((N, D, D))
    dH = np.zeros((N, D, D))
    idx = np.arange(K)
    H[:, idx, idx] = gram.nu * q
    dH[:, idx, idx] = gram.nu * dq
    if r:
        tb, dtb = gram.tbar(w, delta, ddelta)
        H[:, K : K + r, K : K + r] = np.einsum("ng,gij->nij", 1.0 - tb, low.E_groups)
        dH[:, K : K + r, K : K + r] = np.einsum("ng,gij->nij", -dtb, low.E_groups)
    if low.T_diag is not None:
        H[:, -1, -1] = (2 * gram.nu * low.T_diag * q).sum(axis=1)
        dH[:, -1, -1] = (2 * gram.nu * low.T_diag * dq).sum(axis=1)
    return H, dH


def _range_basis(H: Real) -> Real:
    """An orthonormal basis of H's range (its null space, directions without noise, is fixed)."""
    w, v = np.linalg.eigh(H)
    keep = np.abs(w) > 1e-12 * max(float(np.abs(w).max()), 1e-300)
    return v[:, keep]


def _branch_roots(
    fn: Callable[[float], Real], lo: float, hi: float, count: int, descending: bool
) -> list[float]:
    """Roots of the ordered eigenvalue branches ν_k(λ) of S(λ) = Ω + H^{-1} on (lo, hi).

    ``descending``: S decreases from λ = lo (the bulk's top) to +∞ and the k-th largest
    eigenvalue is positive at lo; else the region lies below the bulk (hi is its bottom) and
    the k-th smallest eigenvalue is negative at hi.
    """
    roots = []
    tol = 1e-14 * max(abs(lo), abs(hi))
    for k in range(count):
        a, b = lo, hi
        for _ in range(200):
            mid = 0.5 * (a + b)
            if b - a <= tol or mid in (a, b):
                break
            nu = fn(mid)
            if descending:
                a, b = (mid, b) if nu[-1 - k] > 0 else (a, mid)
            else:
                a, b = (a, mid) if nu[k] < 0 else (mid, b)
        roots.append(0.5 * (a + b))
    return roots


def isolated_eigenvalues(
    gram: MixtureGram,
    low: LowRank,
    c0: float,
    bulk: list[tuple[float, float]],
    atom: bool,
) -> tuple[list[float], list[Alignment]]:
    """Isolated eigenvalues above and below the bulk, in its gaps, with their alignments."""
    if not np.any(low.omega):
        return [], []
    scale = max(gram.top(), abs(c0), 1e-300)
    eps = 1e-9 * scale
    top = c0 + (bulk[-1][1] if bulk else 0.0)
    bottom = c0 + (bulk[0][0] if bulk else 0.0)
    if not bulk:  # no bulk at all (c₁ = 0): the atom at c₀ is everything
        top = bottom = c0
    ref = np.array([top + 2 * scale + 1.0])
    P = _range_basis(_h_blocks(gram, low, ref, c0)[0][0])
    if P.shape[1] == 0:
        return [], []
    om = P.T @ low.omega @ P

    def s_eigs(lam: float) -> Real:
        H = P.T @ _h_blocks(gram, low, np.array([lam]), c0)[0][0] @ P
        return np.linalg.eigvalsh(om + np.linalg.inv(H))

    found: list[float] = []
    # above the bulk
    start = top + eps
    n_up = int((s_eigs(start) > 0).sum())
    if n_up:
        hi = top + scale
        while (s_eigs(hi) > 0).any():
            hi = top + 2 * (hi - top)
            if hi - top > 1e12 * scale:
                raise NoConvergence("a spike grows without bound: the low-rank part is unbounded.")
        found += _branch_roots(s_eigs, start, hi, n_up, descending=True)
    # below the bulk (and below an atom at c₀, which sits at or under the bulk's bottom)
    floor = (c0 if atom else bottom) - eps
    n_down = int((s_eigs(floor) < 0).sum())
    if n_down:
        lo = floor - scale
        while (s_eigs(lo) < 0).any():
            lo = floor - 2 * (floor - lo)
            if floor - lo > 1e12 * scale:
                raise NoConvergence("a spike decreases without bound.")
        found += _branch_roots(s_eigs, lo, floor, n_down, descending=False)
    # gaps: between the atom and the bulk, and between support intervals
    gaps = [(c0 + b1, c0 + a2) for (_, b1), (a2, _) in zip(bulk[:-1], bulk[1:], strict=False)]
    if atom and bulk and bulk[0][0] > 0:
        gaps.insert(0, (c0, c0 + bulk[0][0]))
    for a, b in gaps:
        found += _gap_roots(gram, low, P, c0, a + eps, b - eps)
    found = sorted((float(v) for v in found), reverse=True)
    return found, _alignments(gram, low, P, c0, found)


def _gap_roots(
    gram: MixtureGram, low: LowRank, P: Real, c0: float, a: float, b: float
) -> list[float]:
    if not b > a:
        return []
    lam = np.linspace(a, b, 201)
    H = P.T @ _h_blocks(gram, low, lam, c0)[0] @ P
    om = P.T @ low.omega @ P
    det = np.linalg.det(np.eye(P.shape[1]) + om @ H)
    roots = []
    for i in np.flatnonzero(np.sign(det[1:]) != np.sign(det[:-1])):
        lo, hi = lam[i], lam[i + 1]
        f_lo = det[i]
        for _ in range(100):
            mid = 0.5 * (lo + hi)
            if hi - lo <= 1e-14 * max(abs(lo), abs(hi)) or mid in (lo, hi):
                break
            Hm = P.T @ _h_blocks(gram, low, np.array([mid]), c0)[0][0] @ P
            f = np.linalg.det(np.eye(P.shape[1]) + om @ Hm)
            if np.sign(f) == np.sign(f_lo):
                lo, f_lo = mid, f
            else:
                hi = mid
        roots.append(0.5 * (lo + hi))
    return roots


def _alignments(
    gram: MixtureGram, low: LowRank, P: Real, c0: float, spikes: list[float]
) -> list[Alignment]:
    out: list[Alignment] = []
    i = 0
    om = P.T @ low.omega @ P
    eye = np.eye(P.shape[1])
    while i < len(spikes):
        j = i + 1
        while j < len(spikes) and abs(spikes[j] - spikes[i]) <= 1e-8 * max(1.0, abs(spikes[i])):
            j += 1
        mult = j - i
        lam = float(np.mean(spikes[i:j]))
        Hf, dHf = _h_blocks(gram, low, np.array([lam]), c0)
        H, dH = P.T @ Hf[0] @ P, P.T @ dHf[0] @ P
        A = eye + om @ H
        u, _, vt = np.linalg.svd(A)
        R = vt[-mult:].T
        L = u[:, -mult:]
        res = R @ np.linalg.solve(L.T @ om @ dH @ R, L.T)
        proj = -(P @ (H @ res) @ P.T)  # (J/√p)ᵀ Π (J/√p) block and the rest
        counts = gram.nu * gram.p
        cls = tuple(
            float(np.clip(proj[a, a] * gram.p / counts[a], 0.0, 1.0)) + 0.0 for a in range(low.K)
        )
        out.append(Alignment(lam, mult, cls))
        i = j
    return out

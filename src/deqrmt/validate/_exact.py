r"""Exact infinite-width implicit kernels G* and K* = G*/(1 − Ġ*) for given data.

Slides, "Implicit CK and NTK": `G*_ij = E[φ_c(u)φ_c(v)]`, (u, v) ~ N(0, [[Λ_ii, Λ_ij],
[Λ_ij, Λ_jj]]), `Λ = σ_a² G* + σ_b² XᵀX`; `Ġ*_ij = σ_a² E[φ_c'(u)φ_c'(v)]`;
`K*_ij = G*_ij/(1 − Ġ*_ij)`.

The matrix fixed point decouples, which is what makes it fast:

1. **Diagonal.**  `G_ii` depends only on `Λ_ii = σ_a² G_ii + σ_b²‖x_i‖²`: n scalar equations
   `q = σ_a² g(q) + σ_b²‖x_i‖²` with `g(q) = E[φ_c(√q ξ)²]`, solved together by Newton.
2. **Off-diagonal.**  With the diagonal fixed, `G_ij = F(G_ij)` is a *scalar* equation per pair,
   and `∂F/∂G_ij = σ_a² E[φ_c'(u)φ_c'(v)] = Ġ_ij` (Price's theorem) is exactly what K* needs.
   Newton therefore converges quadratically (3–4 evaluations on the paper preset, versus
   12–13 for the plain iteration G ← F(G) that layer-by-layer codes perform; see
   ``benchmarks/exact_kernel.py``), and the last evaluation gives Ġ*.

The iteration has a unique attracting fixed point when σ_a² E[φ'²] < 1 (slides, Assumption
(3)); the Newton step divides by 1 − Ġ_ij > 0 there.

Nothing couples different pairs, so the same engine (:class:`KernelEngine`) gives cross kernels
G*(x_i, x'_j) between two data sets, and works through row blocks of ~2^17 entries: besides the
result, memory stays O(block · n).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

import numpy as np
import torch

from .._errors import ContractionError, InvalidArgument, NoConvergence
from ._bivariate import bivariate, diagonal_moments
from ._pointwise import CenteredActivation
from ._threads import torch_threads

__all__ = [
    "ExactKernels", "KernelEngine", "diagonal_kernel", "exact_kernels", "fill_blocks", "ntk_limit",
]  # fmt: skip


@dataclasses.dataclass(frozen=True)
class ExactKernels:
    """G*, Ġ*, K* for one data set (float64 numpy, n × n).

    Attributes:
      G: the implicit CK G*.
      Gdot: Ġ* = σ_a² E[φ_c'(u)φ_c'(v)] at the fixed point.
      K: the implicit NTK over ``trainable``; for (a, A), K* = G*/(1 − Ġ*) entrywise.
      q: the diagonal pre-activation variances Λ*_ii.
      method: "arc-cosine", "arcsine", "mehler", "conditional" or "gauss-hermite-2d".
      evaluations: bivariate-map evaluations per entry (the most over blocks).
      degree: the largest Mehler degree used (0 for closed forms).
      fallback_pairs: pair evaluations (summed over Newton steps) done by the nested-quadrature
        fallback for ``|ρ|`` near 1 (0 for the paper preset).
      seconds: wall time.
      trainable: the NTK's parameter set.
    """

    G: np.ndarray
    Gdot: np.ndarray
    K: np.ndarray
    q: np.ndarray
    method: str
    evaluations: int
    degree: int
    fallback_pairs: int
    seconds: float
    trainable: tuple[str, ...] = ("a", "A")


def ntk_limit(
    G: np.ndarray,
    Gdot: np.ndarray,
    gram: np.ndarray,
    sigma_a2: float,
    sigma_b2: float,
    trainable: tuple[str, ...] = ("a", "A"),
) -> np.ndarray:
    r"""The m → ∞ NTK over a parameter set θ ⊆ {a, A, B} (see :mod:`._ntk` for the gradients).

    With W = 1/(1 − Ġ) the limit of (1/m)w_iᵀw_j and E' = Ġ/σ_a² = E[φ_c'(u)φ_c'(v)]:

        K = [a] G + [A] Ġ·W·G + [B] σ_b² E'·W·XᵀX,

    which for (a, A) is the slides' `K* = G*/(1 − Ġ*)`.
    """
    _check_trainable(trainable)
    w = 1 / (1 - Gdot)
    K = G.copy() if "a" in trainable else np.zeros_like(G)
    if "A" in trainable:
        K += Gdot * w * G
    if "B" in trainable:
        K += sigma_b2 * (Gdot / sigma_a2) * w * gram
    return K


def _solve_diagonal(
    act: CenteredActivation, sq_norms: torch.Tensor, sigma_a2: float, sigma_b2: float, tol: float
) -> torch.Tensor:
    # Start from G_ii ≈ c² (= φ_c(0)² when φ(0) = 0): cheap, and Newton does the rest.
    q = sigma_b2 * sq_norms + sigma_a2 * act.center**2
    q = q.clamp(min=1e-12)
    for _ in range(100):
        g, dg, _ = diagonal_moments(act, q, derivative=False)
        r = q - sigma_a2 * g - sigma_b2 * sq_norms
        slope = 1 - sigma_a2 * dg
        if bool((slope <= 0).any()):
            raise ContractionError(
                f"the diagonal kernel map is not a contraction (σ_a²·g'(q) ≥ 1 at "
                f"q = {float(q[slope <= 0][0]):.4g}); lower sigma_a2."
            )
        step = r / slope
        q = (q - step).clamp(min=1e-12)
        if float(step.abs().max()) <= tol * float(q.max()):
            return q
    raise NoConvergence("the diagonal fixed point q = σ_a² g(q) + σ_b²‖x‖² did not converge.")


class KernelEngine:
    r"""The pairwise fixed point G_ij = F(G_ij) for the rows of X1 against X1 or X2, block by block.

    Args:
      act: the centred activation.
      X1, X2: data, p × n1 and p × n2 (columns are samples), already on ``device`` in float64;
        X2 None for the symmetric kernel of X1.
      method, tol, nodes, max_iter: see :func:`exact_kernels`.

    Attributes:
      q: the diagonal pre-activation variances Λ*_ii of X1's samples then X2's.
      g_diag, d_diag: `g(q_i)` and `E[φ_c'(√q_i ξ)²]` per sample (the univariate entries).
    """

    def __init__(
        self,
        act: CenteredActivation,
        X1: torch.Tensor,
        X2: torch.Tensor | None,
        sigma_a2: float,
        sigma_b2: float,
        *,
        method: str = "auto",
        tol: float = 1e-13,
        nodes: int = 25,
        max_iter: int = 60,
    ) -> None:
        if method not in {"auto", "mehler", "conditional", "gauss-hermite"}:
            raise InvalidArgument(
                f"method must be auto, mehler, conditional or gauss-hermite, got {method!r}."
            )
        self.X1, self.X2 = X1, X2
        self.n1 = int(X1.shape[1])
        self.n2 = int(X2.shape[1]) if X2 is not None else self.n1
        self.sigma_a2, self.sigma_b2 = sigma_a2, sigma_b2
        self.max_iter = max_iter
        self.newton = method != "gauss-hermite"
        sq = (X1 * X1).sum(0) if X2 is None else torch.cat([(X1 * X1).sum(0), (X2 * X2).sum(0)])
        self.q = _solve_diagonal(act, sq, sigma_a2, sigma_b2, 1e-14)
        g_diag, _, d_diag = diagonal_moments(act, self.q)
        assert d_diag is not None
        self.g_diag, self.d_diag = g_diag, d_diag
        self.biv = bivariate(act, self.q, method=method, tol=tol / 10, nodes=nodes)
        self.stop = tol * float(g_diag.abs().max())
        self.evaluations = 0
        # Row blocks of ~2^17 entries: large enough to amortise torch's per-call overhead,
        # small enough to stay in cache through the Horner loop.
        self.block = max(8, 2**17 // max(self.n2, 1))

    @property
    def symmetric(self) -> bool:
        return self.X2 is None

    def row_blocks(self) -> list[tuple[int, int]]:
        return [(r0, min(self.n1, r0 + self.block)) for r0 in range(0, self.n1, self.block)]

    def solve(self, r0: int, r1: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
        """(G, Ġ, XᵀX') for rows r0:r1 against columns r0:n1 (symmetric) or all of X2.

        In the symmetric case the pairs i = j of the block hold placeholders (the caller writes
        the univariate values).
        """
        sa2 = self.sigma_a2
        device = self.q.device
        if self.symmetric:
            rows, cols = slice(r0, r1), slice(r0, self.n1)
            gram = self.X1[:, rows].T @ self.X1[:, cols]
            ar = torch.arange(r0, r1, device=device)
            on_diag = ar[:, None] == torch.arange(r0, self.n1, device=device)[None, :]
        else:
            assert self.X2 is not None
            rows, cols = slice(r0, r1), slice(self.n1, self.n1 + self.n2)
            gram = self.X1[:, rows].T @ self.X2
            on_diag = None
        base = self.sigma_b2 * gram
        g = torch.zeros_like(base)
        biv = self.biv
        for it in range(1, self.max_iter + 1):  # noqa: B007 - `it` is read after the loop
            f, df = biv(rows, cols, sa2 * g + base)
            gdot = df.mul_(sa2)
            if self.newton:
                if bool((gdot >= 1).any()):
                    raise ContractionError(
                        "Ġ ≥ 1 for some pair: the kernel map is not a contraction; lower sigma_a2."
                    )
                # Newton on the scalar equation G = F(G): the step is (F − G)/(1 − Ġ).
                step = f.sub_(g).div_(1 - gdot)
            else:
                step = f.sub_(g)
            if on_diag is not None:
                # Pairs i = j are overwritten by the univariate values; the bivariate evaluators
                # treat them loosely, so keep them out of the Newton test.
                step.masked_fill_(on_diag, 0.0)
            g.add_(step)
            # Quadratic convergence: once the step is ≤ stop, the iterate is exact to ~stop²,
            # and Ġ, evaluated one step back, is off by ~F''·stop.
            if float(step.abs().max()) <= self.stop:
                break
        else:
            raise NoConvergence(
                f"the off-diagonal kernel fixed point did not converge in {self.max_iter} "
                f"evaluations (last step {float(step.abs().max()):.3g}); lower sigma_a2."
            )
        if not self.newton:
            gdot = sa2 * biv(rows, cols, sa2 * g + base)[1]
        self.evaluations = max(self.evaluations, it)
        return g, gdot, gram, it

    def diagonal(self, every: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """(G*_ii, Ġ*_ii) of X1's samples (``every``: X2's too), the univariate fixed point."""
        k = self.q.shape[0] if every else self.n1
        return _checked_diagonal(self.g_diag[:k], self.d_diag[:k], self.sigma_a2)


def _checked_diagonal(
    g: torch.Tensor, d: torch.Tensor, sigma_a2: float
) -> tuple[np.ndarray, np.ndarray]:
    gd = sigma_a2 * d.cpu().numpy()
    if (gd >= 1).any():
        raise ContractionError(
            "Ġ* ≥ 1 on the diagonal: K* = G*/(1 − Ġ*) is undefined; lower sigma_a2."
        )
    return g.cpu().numpy(), gd


def diagonal_kernel(
    act: CenteredActivation, sq_norms: torch.Tensor, sigma_a2: float, sigma_b2: float
) -> tuple[np.ndarray, np.ndarray]:
    """(G*_ii, Ġ*_ii) for samples of squared norms ``sq_norms``: the univariate fixed point only."""
    q = _solve_diagonal(act, sq_norms.to(torch.float64), sigma_a2, sigma_b2, 1e-14)
    g, _, d = diagonal_moments(act, q)
    assert d is not None
    return _checked_diagonal(g, d, sigma_a2)


def fill_blocks(
    engine: KernelEngine,
    outputs: dict[str, np.ndarray],
    per_block: Callable[[np.ndarray, np.ndarray, np.ndarray], dict[str, np.ndarray]],
    diagonal: dict[str, np.ndarray] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> None:
    """Run ``engine`` over its row blocks, writing ``per_block(G, Ġ, XᵀX')`` into ``outputs``.

    Symmetric kernels: only the upper triangle is computed, and every block is mirrored in place
    (no n × n temporaries); ``diagonal`` then holds the values written on the diagonal.
    """
    blocks = engine.row_blocks()
    for k, (r0, r1) in enumerate(blocks):
        g, gd, gram, _ = engine.solve(r0, r1)
        parts = per_block(g.cpu().numpy(), gd.cpu().numpy(), gram.cpu().numpy())
        for name, blk in parts.items():
            out = outputs[name]
            if engine.symmetric:
                w = r1 - r0
                out[r0:r1, r1:] = blk[:, w:]
                out[r1:, r0:r1] = blk[:, w:].T
                sq = np.triu(blk[:, :w], 1)
                out[r0:r1, r0:r1] = sq + sq.T
            else:
                out[r0:r1] = blk
        if progress is not None:
            progress(k + 1, len(blocks))
    if engine.symmetric and diagonal:
        idx = np.arange(engine.n1)
        for name, values in diagonal.items():
            outputs[name][idx, idx] = values


def exact_kernels(
    act: CenteredActivation,
    X: np.ndarray | torch.Tensor,
    sigma_a2: float,
    sigma_b2: float,
    *,
    method: str = "auto",
    tol: float = 1e-13,
    nodes: int = 25,
    device: str | torch.device = "cpu",
    max_iter: int = 60,
    trainable: tuple[str, ...] = ("a", "A"),
) -> ExactKernels:
    r"""G* and K* for data ``X`` (p × n) and the centred activation ``act``.

    Args:
      method: ``"auto"`` (closed form or Mehler series, then Newton), ``"mehler"`` (the series
        even where a closed form exists), ``"conditional"`` (nested quadrature for every pair:
        slow, an independent check) or ``"gauss-hermite"`` (the baseline: 2-D Gauss–Hermite
        with ``nodes**2`` points and the plain iteration G ← F(G)).
      tol: relative tolerance of the fixed point (the Mehler series is truncated at tol/10).
      device: where to compute (float64 throughout).
      trainable: the NTK's parameter set ⊆ {a, A, B} (:func:`ntk_limit`).

    Returns:
      An :class:`ExactKernels`.  Accuracy ~1e-13 relative (tested at 1e-10 against mpmath) for
      ``method="auto"``.

    Raises:
      ContractionError: if the kernel map is not a contraction (Ġ ≥ 1 somewhere).
      NoConvergence: if the fixed point is not reached in ``max_iter`` evaluations.

    Example:
      >>> import numpy as np, deqrmt.symbolic as S
      >>> act = CenteredActivation.from_activation(S.library_activation("erf"), 0.0)
      >>> X = np.eye(3)
      >>> ex = exact_kernels(act, X, 0.2, 0.8)
      >>> bool(np.allclose(ex.G, ex.G.T)), ex.method
      (True, 'arcsine')
    """
    _check_trainable(trainable)
    # Elementwise-bound: one CPU thread is fastest (see ._threads); a GPU is unaffected.
    with torch_threads(1 if torch.device(device).type == "cpu" else torch.get_num_threads()):
        t0 = time.perf_counter()
        Xt = torch.as_tensor(X, dtype=torch.float64, device=device)
        engine = KernelEngine(
            act, Xt, None, sigma_a2, sigma_b2, method=method, tol=tol, nodes=nodes,
            max_iter=max_iter,
        )  # fmt: skip
        n = engine.n1
        G = np.zeros((n, n))
        Gd = np.zeros((n, n))
        g_diag, gd_diag = engine.diagonal()
        fill_blocks(
            engine,
            {"G": G, "Gdot": Gd},
            lambda g, gd, _gram: {"G": g, "Gdot": gd},
            {"G": g_diag, "Gdot": gd_diag},
        )
        gram = (Xt.T @ Xt).cpu().numpy() if "B" in trainable else np.zeros((0, 0))
        biv = engine.biv
        return ExactKernels(
            G=G,
            Gdot=Gd,
            K=ntk_limit(G, Gd, gram, sigma_a2, sigma_b2, tuple(trainable)),
            q=engine.q.cpu().numpy(),
            method=biv.method,
            evaluations=engine.evaluations,
            degree=int(getattr(biv, "degree_used", 0)),
            fallback_pairs=int(getattr(biv, "fallback_pairs", 0)),
            seconds=time.perf_counter() - t0,
            trainable=tuple(trainable),
        )


def _check_trainable(trainable: tuple[str, ...]) -> None:
    if not trainable or not set(trainable) <= {"a", "A", "B"}:
        raise InvalidArgument(
            f"trainable must be a non-empty subset of a, A, B; got {trainable!r}."
        )

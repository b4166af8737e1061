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
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import torch

from .._errors import ContractionError, InvalidArgument, NoConvergence
from ._bivariate import bivariate, diagonal_moments
from ._pointwise import CenteredActivation
from ._threads import torch_threads

__all__ = ["ExactKernels", "exact_kernels", "ntk_limit"]


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
    if not trainable or not set(trainable) <= {"a", "A", "B"}:
        raise InvalidArgument(
            f"trainable must be a non-empty subset of a, A, B; got {trainable!r}."
        )
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
    # Elementwise-bound: one CPU thread is fastest (see ._threads); a GPU is unaffected.
    with torch_threads(1 if torch.device(device).type == "cpu" else torch.get_num_threads()):
        return _exact_kernels(
            act, X, sigma_a2, sigma_b2, method, tol, nodes, device, max_iter, tuple(trainable)
        )


def _exact_kernels(
    act: CenteredActivation,
    X: np.ndarray | torch.Tensor,
    sigma_a2: float,
    sigma_b2: float,
    method: str,
    tol: float,
    nodes: int,
    device: str | torch.device,
    max_iter: int,
    trainable: tuple[str, ...],
) -> ExactKernels:
    if not trainable or not set(trainable) <= {"a", "A", "B"}:
        raise InvalidArgument(
            f"trainable must be a non-empty subset of a, A, B; got {trainable!r}."
        )
    if method not in {"auto", "mehler", "conditional", "gauss-hermite"}:
        raise InvalidArgument(
            f"method must be auto, mehler, conditional or gauss-hermite, got {method!r}."
        )
    t0 = time.perf_counter()
    dt = torch.float64
    Xt = torch.as_tensor(X, dtype=dt, device=device)
    n = Xt.shape[1]
    gram = Xt.T @ Xt
    q = _solve_diagonal(act, torch.diagonal(gram).clone(), sigma_a2, sigma_b2, 1e-14)
    g_diag, _, d_diag = diagonal_moments(act, q)
    assert d_diag is not None
    newton = method != "gauss-hermite"
    biv = bivariate(act, q, method=method, tol=tol / 10, nodes=nodes)
    stop = tol * float(g_diag.abs().max())
    G = torch.zeros((n, n), dtype=dt, device=device)
    Gd = torch.zeros((n, n), dtype=dt, device=device)
    # Row blocks of the upper triangle, ~2^17 entries each: large enough to amortise torch's
    # per-call overhead, small enough to stay in cache through the Horner loop.
    block = max(8, 2**17 // max(n, 1))
    most = 0
    for r0 in range(0, n, block):
        rows, cols = slice(r0, min(n, r0 + block)), slice(r0, n)
        base = sigma_b2 * gram[rows, cols]
        g = torch.zeros_like(base)
        # Pairs i = j of this block are overwritten by the univariate values below; the
        # bivariate evaluators treat them loosely, so keep them out of the Newton test.
        ar = torch.arange(rows.start, rows.stop, device=device)
        on_diag = ar[:, None] == torch.arange(cols.start, n, device=device)[None, :]
        for it in range(1, max_iter + 1):  # noqa: B007 - `it` is read after the loop
            f, df = biv(rows, cols, sigma_a2 * g + base)
            gdot = df.mul_(sigma_a2)
            if newton:
                if bool((gdot >= 1).any()):
                    raise ContractionError(
                        "Ġ ≥ 1 for some pair: the kernel map is not a contraction; lower sigma_a2."
                    )
                # Newton on the scalar equation G = F(G): the step is (F − G)/(1 − Ġ).
                step = f.sub_(g).div_(1 - gdot)
            else:
                step = f.sub_(g)
            step.masked_fill_(on_diag, 0.0)
            g.add_(step)
            # Quadratic convergence: once the step is ≤ stop, the iterate is exact to ~stop²,
            # and Ġ, evaluated one step back, is off by ~F''·stop.
            if float(step.abs().max()) <= stop:
                break
        else:
            raise NoConvergence(
                f"the off-diagonal kernel fixed point did not converge in {max_iter} evaluations "
                f"(last step {float(step.abs().max()):.3g}); lower sigma_a2."
            )
        most = max(most, it)
        if not newton:
            gdot = sigma_a2 * biv(rows, cols, sigma_a2 * g + base)[1]
        G[rows, cols] = g
        Gd[rows, cols] = gdot
    Gn = G.cpu().numpy()
    Gdn = Gd.cpu().numpy()
    Gn = np.triu(Gn, 1) + np.triu(Gn, 1).T
    Gdn = np.triu(Gdn, 1) + np.triu(Gdn, 1).T
    idx = np.arange(n)
    Gn[idx, idx] = g_diag.cpu().numpy()
    Gdn[idx, idx] = sigma_a2 * d_diag.cpu().numpy()
    if (Gdn >= 1).any():
        raise ContractionError(
            "Ġ* ≥ 1 on the diagonal: K* = G*/(1 − Ġ*) is undefined; lower sigma_a2."
        )
    return ExactKernels(
        G=Gn,
        Gdot=Gdn,
        K=ntk_limit(Gn, Gdn, gram.cpu().numpy(), sigma_a2, sigma_b2, trainable),
        q=q.cpu().numpy(),
        method=biv.method,
        evaluations=most,
        degree=int(getattr(biv, "degree_used", 0)),
        fallback_pairs=int(getattr(biv, "fallback_pairs", 0)),
        seconds=time.perf_counter() - t0,
        trainable=trainable,
    )

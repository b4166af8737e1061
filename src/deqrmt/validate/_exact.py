r"""Exact infinite-width implicit kernels G* and K* = G*/(1 − Ġ*) for given data.

Slides, "Implicit CK and NTK": `G*_ij = E[φ_c(u)φ_c(v)]`, (u, v) ~ N(0, [[Λ_ii, Λ_ij],
[Λ_ij, Λ_jj]]), `Λ = σ_a² G* + σ_b² XᵀX`; `Ġ*_ij = σ_a² E[φ_c'(u)φ_c'(v)]`;
`K*_ij = G*_ij/(1 − Ġ*_ij)`.

The matrix fixed point decouples, which is what makes it fast:

1. **Diagonal** (:mod:`._diagonal`).  `G_ii` depends only on `Λ_ii = σ_a² G_ii + σ_b²‖x_i‖²`:
   n scalar equations `q = σ_a² g(q) + σ_b²‖x_i‖²` with `g(q) = E[φ_c(√q ξ)²]`, solved together
   by Newton.  Its last pass of φ over the samples' quadrature nodes is also the per-sample
   tables' pass (:mod:`._moments`): φ runs once or twice over the n × ~1100 nodes, φ' once.
2. **Off-diagonal.**  With the diagonal fixed, `G_ij = F(G_ij)` is a *scalar* equation per pair,
   and `∂F/∂G_ij = σ_a² E[φ_c'(u)φ_c'(v)] = Ġ_ij` (Price's theorem) is exactly what K* needs.
   Newton therefore converges quadratically, and the last evaluation gives Ġ*.  From the fixed
   point of Mehler's series cut after ρ¹ (a few passes per tile) it takes 2 evaluations on the
   paper preset at n = 8192 and 3 at n = 2048 (3–4 from G = 0; 12–13 for the plain iteration
   G ← F(G) that layer-by-layer codes perform; see ``benchmarks/exact_kernel.py``).

The iteration has a unique attracting fixed point when σ_a² E[φ'²] < 1 (slides, Assumption
(3)); the Newton step divides by 1 − Ġ_ij > 0 there.

Nothing couples different pairs, so the same engine (:class:`KernelEngine`) gives cross kernels
G*(x_i, x'_j) between two data sets, tile by tile on every core (:mod:`._kernels`, used by
:func:`deqrmt.kernels`), and :func:`exact_kernels` runs it near the hardware: the
Gram matrix XᵀX by a rank-k update on every core straight into G*'s buffer, then square tiles
of the upper triangle on worker threads, each overwriting its part of XᵀX with G* and writing
K*, so that G* and K* are the only n × n arrays (:func:`exact_kernels_memory`).
"""

from __future__ import annotations

import dataclasses
import functools
import threading
import time
from collections.abc import Callable
from typing import TypeVar

import numpy as np
import torch

from .._errors import ContractionError, InvalidArgument, NoConvergence
from ._bivariate import bivariate
from ._degenerate import degenerate_samples
from ._diagonal import _checked_diagonal, _diagonal_fixed_point
from ._heap import release_free_memory
from ._moments import diagonal_moments
from ._pointwise import CenteredActivation
from ._saturation import warn_if_saturated
from ._threads import blas_threads, tile_workers, torch_threads
from ._tiles import (
    Tile,
    abs_max,
    gram_upper,
    mirror,
    mirror_lower,
    run_tiles,
    tile_gram,
    upper_tiles,
)

__all__ = [
    "ExactKernels", "KernelEngine", "exact_kernels", "exact_kernels_memory", "ntk_limit",
]  # fmt: skip

#: a whole kernel (numpy) or one tile of it (torch)
_Array = TypeVar("_Array", np.ndarray, torch.Tensor)


@dataclasses.dataclass(frozen=True)
class ExactKernels:
    """G*, Ġ*, K* for one data set (float64 numpy, n × n).

    Attributes:
      G: the implicit CK G*.
      K: the implicit NTK over ``trainable``; for (a, A), K* = G*/(1 − Ġ*) entrywise.
      Gdot: Ġ* = σ_a² E[φ_c'(u)φ_c'(v)] at G* (a property: computed on first access, which
        costs one more Gram matrix and one evaluation of the kernel map, and one more n × n
        array; :func:`exact_kernels` keeps only G* and K* so that n = 16384 fits in 7 GB).
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
    K: np.ndarray
    q: np.ndarray
    method: str
    evaluations: int
    degree: int
    fallback_pairs: int
    seconds: float
    trainable: tuple[str, ...] = ("a", "A")
    gdot_source: Callable[[np.ndarray], np.ndarray] | None = dataclasses.field(
        default=None, repr=False, compare=False
    )

    @functools.cached_property
    def Gdot(self) -> np.ndarray:  # noqa: N802 - the paper's symbol
        """Ġ* at G*, computed once on first access (see the class docstring)."""
        if self.gdot_source is None:
            raise InvalidArgument("this ExactKernels was built without a way to compute Ġ*.")
        return self.gdot_source(self.G)


def ntk_limit(
    G: _Array,
    Gdot: _Array,
    gram: _Array,
    sigma_a2: float,
    sigma_b2: float,
    trainable: tuple[str, ...] = ("a", "A"),
) -> _Array:
    r"""The m → ∞ NTK over a parameter set θ ⊆ {a, A, B} (see :mod:`._ntk` for the gradients).

    With W = 1/(1 − Ġ) the limit of (1/m)w_iᵀw_j and E' = Ġ/σ_a² = E[φ_c'(u)φ_c'(v)]:

        K = [a] G + [A] Ġ·W·G + [B] σ_b² E'·W·XᵀX,

    which for (a, A) is the slides' `K* = G*/(1 − Ġ*)`.
    """
    _check_trainable(trainable)
    if set(trainable) == {"a", "A"}:
        return G / (1 - Gdot)  # the same value, one rounding and four passes fewer
    w = 1 / (1 - Gdot)
    # numpy arrays (whole kernels) and torch tensors (one tile of exact_kernels): one formula
    if isinstance(G, torch.Tensor):
        K = G.clone() if "a" in trainable else torch.zeros_like(G)
    else:
        K = G.copy() if "a" in trainable else np.zeros_like(G)
    if "A" in trainable:
        K += Gdot * w * G
    if "B" in trainable:
        K += sigma_b2 * (Gdot / sigma_a2) * w * gram
    return K


def _sq_norms(X: torch.Tensor, chunk: int = 256) -> torch.Tensor:
    """‖x_j‖² of the columns of X (p × n), a few columns at a time: no p × n temporary."""
    return torch.cat(
        [X[:, c : c + chunk].square().sum(0) for c in range(0, int(X.shape[1]), chunk)]
        or [X.new_zeros(0)]
    )


class KernelEngine:
    r"""The pairwise fixed point G_ij = F(G_ij) for the rows of X1 against X1 or X2, block by block.

    Args:
      act: the centred activation.
      X1, X2: data, p × n1 and p × n2 (columns are samples), already on ``device`` in float64;
        X2 None for the symmetric kernel of X1.
      method, tol, nodes, max_iter: see :func:`exact_kernels`.
      sq_norms: the samples' squared norms ‖x_i‖² when the caller has them (the diagonal of
        its Gram matrix); computed from X1, X2 otherwise.

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
        sq_norms: torch.Tensor | None = None,
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
        self.newton_steps = method != "gauss-hermite"
        if sq_norms is None:
            sq_norms = torch.cat([_sq_norms(X1)] + ([] if X2 is None else [_sq_norms(X2)]))
        self.q, values = _diagonal_fixed_point(act, sq_norms, sigma_a2, sigma_b2, 1e-14)
        warn_if_saturated(act, self.q, sq_norms, sigma_b2)  # the rows' scale decides: say so
        g_diag, _, d_diag = diagonal_moments(act, self.q, values=values)
        assert d_diag is not None
        # zero rows (φ_c(0) = 0) and identical rows: their values are exact (see _degenerate)
        self.exact = degenerate_samples(act, [X1] + ([] if X2 is None else [X2]), sq_norms)
        if self.exact.zero is not None:
            g_diag = g_diag.masked_fill(self.exact.zero, 0.0)
        self.g_diag, self.d_diag = g_diag, d_diag
        self.biv = bivariate(act, self.q, method=method, tol=tol / 10, nodes=nodes, values=values)
        del values  # n × ~1100: not kept beyond the tables
        self.stop = tol * float(g_diag.abs().max())
        self.evaluations = 0
        self._lock = threading.Lock()  # tiles run on several threads (see exact_kernels)

    @property
    def symmetric(self) -> bool:
        return self.X2 is None

    def newton(
        self, rows: slice, cols: slice, gram: torch.Tensor, on_diag: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor, int]:
        """(G, Ġ, evaluations) for the pairs ``rows`` × ``cols`` of the samples, given XᵀX' there.

        ``on_diag`` marks the pairs i = j (their values are placeholders).  The iteration stops
        at the first iterate whose step would be ≤ ``stop`` and returns that iterate with the Ġ
        evaluated *at it*, so K = G/(1 − Ġ) holds at the returned G (and
        :attr:`ExactKernels.Gdot` recomputes the same Ġ from G).
        """
        g, gdot, _, it = self.solve_tile(rows, cols, self.sigma_b2 * gram, on_diag)
        return g, gdot, it

    def solve_tile(
        self, rows: slice, cols: slice, base: torch.Tensor, on_diag: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
        """:meth:`newton` given ``base`` = σ_b² XᵀX' (kept by the kernel map: not to be changed
        after), returning 1 − Ġ at G as well: K* = G*/(1 − Ġ*) is then one pass."""
        sa2 = self.sigma_a2
        twins = self.exact.twins(rows, cols)
        if twins is not None:
            # identical samples (ρ = 1, the series' slowest case) get the diagonal's values
            # below: solve them at ρ = 0 meanwhile, which costs nothing
            base.masked_fill_(twins, 0.0)
        kernel_map = self.biv.on_tile(rows, cols, base, sa2)
        # The plain iteration (the benchmark's baseline) starts at G = 0, as layer-by-layer codes.
        g = kernel_map.start() if self.newton_steps else None
        for it in range(1, self.max_iter + 1):  # noqa: B007 - `it` is read after the loop
            f, df = kernel_map(g)
            gdot = df.mul_(sa2)
            w = torch.rsub(gdot, 1.0)  # 1 − Ġ
            if w.numel() and float(w.min()) <= 0:
                raise ContractionError(
                    "Ġ ≥ 1 for some pair: the kernel map is not a contraction; lower sigma_a2."
                )
            # Newton on the scalar equation G = F(G): the step is (F − G)/(1 − Ġ); the plain
            # iteration (the benchmark's baseline) steps by F − G.
            step = f if g is None else f.sub_(g)
            if self.newton_steps:
                step.div_(w)
            if on_diag is not None:
                # Pairs i = j are overwritten by the univariate values; the bivariate evaluators
                # treat them loosely, so keep them out of the Newton test.
                step.masked_fill_(on_diag, 0.0)
            # Quadratic convergence: a step ≤ stop means the iterate is already exact to ~stop
            # (the step before it was ~√stop), so it is kept as it is, with its own Ġ.
            last = abs_max(step)
            if last <= self.stop:
                break
            g = step if g is None else g.add_(step)
        else:
            raise NoConvergence(
                f"the off-diagonal kernel fixed point did not converge in {self.max_iter} "
                f"evaluations (last step {last:.3g}); lower sigma_a2."
            )
        with self._lock:
            self.evaluations = max(self.evaluations, it)
        if g is None:  # the first step was already below the tolerance: G = 0
            g = torch.zeros_like(gdot)
        if self.exact.zero is not None or self.exact.twin is not None:
            fixed = self.exact.fix_tile(rows, cols, g, gdot, self.g_diag, self.d_diag * sa2)
            w = w if fixed is None else fixed
        return g, gdot, w, it

    def diagonal(self, every: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """(G*_ii, Ġ*_ii) of X1's samples (``every``: X2's too), the univariate fixed point."""
        k = self.q.shape[0] if every else self.n1
        return _checked_diagonal(self.g_diag[:k], self.d_diag[:k], self.sigma_a2)


#: the side of the square tiles of the upper triangle (2^16 entries, 0.5 MB per array: a tile
#: and the Horner loop's few temporaries stay in a core's L2 cache)
TILE = 256
#: float64 arrays of one tile alive at once in a worker, with room to spare (counted: about 14
#: in a Newton step — XᵀX, σ_b²XᵀX, G, Λ, ρ, √(q_i q_j), the masked ρ, the Horner pair, Ġ,
#: 1 − Ġ, the step — plus K and the mirrored copies when the tile is written)
_TILE_ARRAYS = 24


def exact_kernels_memory(
    n: int, p: int, *, workers: int = 1, copies_data: bool = False, tile: int = TILE
) -> int:
    r"""Bytes :func:`exact_kernels` holds beyond the interpreter and torch: its memory model.

    `16 n²` (the outputs G*, K*: float64 n × n, the only n × n arrays; the Gram matrix XᵀX is
    written into G*'s buffer and each tile's part is read before the tile overwrites it)
    `+ 8 p n` when X is copied (not float64, or on another device)
    `+ workers · 24 · 8 · tile²` (the tiles in flight, 12.6 MB per worker at tile 256)
    `+ 8 n · 200` (per-sample tables: quadrature, Mehler coefficients up to degree 160).
    Before K* exists, φ on the samples' quadrature nodes (`8 n · ~1100` bytes, freed and
    returned to the OS before K* is allocated) is held instead: less than K* for n > 1100, less
    than one worker's tiles below.
    On CUDA the same bytes are held on the device, and G*, K* once more on the host at the end.
    """
    tiles = workers * _TILE_ARRAYS * 8 * tile**2
    return 16 * n * n + (8 * p * n if copies_data else 0) + tiles + 1600 * n


def _check_fits(n: int, p: int, dev: torch.device, workers: int, copies: bool) -> None:
    from .._budget import check_gpu_memory, check_memory

    need = exact_kernels_memory(n, p, workers=workers, copies_data=copies)
    fix = (
        "use fewer samples, or compute kernels on pieces of the data (deqrmt.kernels(act, X1, X2))"
    )
    if dev.type == "cuda":
        free, _ = torch.cuda.mem_get_info(dev)
        check_gpu_memory(need, free, f"exact kernels for n = {n}, p = {p} need", fix)
        need = 16 * n * n  # the host copies of G*, K*
    check_memory(need, f"exact kernels for n = {n}, p = {p} (16·n² bytes for G*, K*)", fix)


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
    tile: int = TILE,
) -> ExactKernels:
    r"""G* and K* for data ``X`` (p × n) and the centred activation ``act``.

    How: (1) the Gram matrix XᵀX by a symmetric rank-k update on every core
    (:func:`gram_upper`), written into the buffer that becomes G*; (2) the diagonal fixed point
    (n scalar Newton solves); (3) the pairwise Newton iteration over square tiles of the upper
    triangle, one tile per worker thread (torch on one intra-op thread each, see
    :mod:`._threads`), each tile reading its part of XᵀX, writing G* and K* in place and
    mirroring them below the diagonal.  Float64 throughout; the same code on CUDA.

    Memory (:func:`exact_kernels_memory`): `16 n²` bytes for G*, K* (the only n × n arrays),
    `8 p n` more when X is not float64 on ``device`` already, ~13 MB per worker for tiles,
    ~1.6 kB per sample for tables: at n = 16384, p = 13107 with X given in float64, 4.3 GB
    plus the data's 1.7 GB.  A call that would not fit is refused before it allocates.

    Args:
      method: ``"auto"`` (closed form or Mehler series, then Newton), ``"mehler"`` (the series
        even where a closed form exists), ``"conditional"`` (nested quadrature for every pair:
        slow, an independent check) or ``"gauss-hermite"`` (the baseline: 2-D Gauss–Hermite
        with ``nodes**2`` points and the plain iteration G ← F(G)).
      tol: relative tolerance of the fixed point (the Mehler series is truncated at tol/10).
      device: where to compute (float64 throughout).
      trainable: the NTK's parameter set ⊆ {a, A, B} (:func:`ntk_limit`).
      tile: the side of the square tiles (a tuning knob; results agree to rounding).

    Returns:
      An :class:`ExactKernels`.  Accuracy ~1e-13 relative (tested at 1e-10 against mpmath) for
      ``method="auto"``.

    Raises:
      BudgetExceeded: G* and K* would not fit in the memory available (the estimate is in the
        message).
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
    trainable = tuple(trainable)
    t0 = time.perf_counter()
    dev = torch.device(device)
    workers = tile_workers(dev)
    Xt = torch.as_tensor(X, dtype=torch.float64, device=dev)
    if Xt.ndim != 2:
        raise InvalidArgument(f"X must be 2-D (p × n, columns are samples), got {tuple(Xt.shape)}.")
    copies = not (isinstance(X, np.ndarray | torch.Tensor) and _shares(X, Xt))
    p, n = int(Xt.shape[0]), int(Xt.shape[1])
    _check_fits(n, p, dev, workers, copies)
    G = torch.empty((n, n), dtype=torch.float64, device=dev)
    with torch_threads(blas_threads(dev)):
        gram_upper(Xt, G)
    sq = G.diagonal().clone()
    # The per-sample tables (n × ~1100 quadrature nodes, elementwise and BLAS) on every core;
    # each entry is computed by one thread, so the bytes do not depend on the thread count.
    with torch_threads(blas_threads(dev)):
        engine = KernelEngine(
            act, Xt, None, sigma_a2, sigma_b2, method=method, tol=tol, nodes=nodes,
            max_iter=max_iter, sq_norms=sq,
        )  # fmt: skip
    release_free_memory()  # the tables' freed temporaries, before K* takes n² more
    with torch_threads(1 if dev.type == "cpu" else torch.get_num_threads()):
        K = torch.empty_like(G)
        g_diag, gd_diag = engine.diagonal()
        tiles = upper_tiles(n, max(1, int(tile)))

        fill = functools.partial(_kernel_tile, engine, G, K, trainable=trainable)
        run_tiles(fill, tiles, workers)
        G.diagonal().copy_(torch.as_tensor(g_diag, device=dev))
        k_diag = ntk_limit(g_diag, gd_diag, sq.cpu().numpy(), sigma_a2, sigma_b2, trainable)
        K.diagonal().copy_(torch.as_tensor(k_diag, device=dev))
        for M in (G, K):
            engine.exact.unify(M, n, True)
    biv = engine.biv
    Gn, Kn = G.cpu().numpy(), K.cpu().numpy()
    del G, K  # on CUDA: the device copies go now
    source = functools.partial(
        _recompute_gdot, X, act, engine, dev, workers, max(1, int(tile)), gd_diag
    )
    return ExactKernels(
        G=Gn,
        K=Kn,
        q=engine.q.cpu().numpy(),
        method=biv.method,
        evaluations=engine.evaluations,
        degree=int(getattr(biv, "degree_used", 0)),
        fallback_pairs=int(getattr(biv, "fallback_pairs", 0)),
        seconds=time.perf_counter() - t0,
        trainable=trainable,
        gdot_source=source,
    )


def _shares(X: np.ndarray | torch.Tensor, Xt: torch.Tensor) -> bool:
    if isinstance(X, torch.Tensor):
        return X.data_ptr() == Xt.data_ptr()
    return Xt.device.type == "cpu" and np.may_share_memory(X, Xt.numpy())


def _kernel_tile(
    engine: KernelEngine,
    G: torch.Tensor,
    K: torch.Tensor,
    t: Tile,
    *,
    trainable: tuple[str, ...],
) -> None:
    """One tile of the upper triangle: read XᵀX from G's buffer, write G*, K* and mirror them.

    Tiles never overlap: (r, c) with c ≥ r reads and writes its own block and writes the block
    (c, r) below the diagonal, which no tile reads, so tiles may run in any order, at once.
    """
    r0, r1, c0, c1 = t
    rows, cols = slice(r0, r1), slice(c0, c1)
    if r0 != c0 and set(trainable) == {"a", "A"}:
        # The common case, in the fewest passes: σ_b² XᵀX read straight from G's buffer, and
        # K* = G*/(1 − Ġ*) (as ntk_limit) written straight into K's.
        g, _, w, _ = engine.solve_tile(rows, cols, G[rows, cols].mul(engine.sigma_b2), None)
        mirror(G, g, t)
        torch.div(g, w, out=K[rows, cols])
        mirror_lower(K, t)
        return
    gram = tile_gram(G, r0, r1, c0, c1)
    on_diag = None
    if r0 == c0:
        on_diag = torch.eye(r1 - r0, dtype=torch.bool, device=gram.device)
    g, gdot, _ = engine.newton(rows, cols, gram, on_diag)
    mirror(G, g, t)
    mirror(K, ntk_limit(g, gdot, gram, engine.sigma_a2, engine.sigma_b2, trainable), t)


def _recompute_gdot(
    X: np.ndarray | torch.Tensor,
    act: CenteredActivation,
    engine: KernelEngine,
    dev: torch.device,
    workers: int,
    tile: int,
    gd_diag: np.ndarray,
    G: np.ndarray,
) -> np.ndarray:
    """Ġ* = σ_a² F'(σ_a² G* + σ_b² XᵀX), tile by tile as :func:`exact_kernels` evaluated it."""
    del act  # the evaluator in ``engine`` carries it
    Xt = torch.as_tensor(X, dtype=torch.float64, device=dev)
    n = int(Xt.shape[1])
    out = torch.empty((n, n), dtype=torch.float64, device=dev)
    with torch_threads(blas_threads(dev)):
        gram_upper(Xt, out)
    Gt = torch.as_tensor(G, device=dev)
    sa2, sb2 = engine.sigma_a2, engine.sigma_b2

    def one(t: Tile) -> None:
        r0, r1, c0, c1 = t
        base = tile_gram(out, r0, r1, c0, c1).mul_(sb2)
        kernel_map = engine.biv.on_tile(slice(r0, r1), slice(c0, c1), base, sa2)
        mirror(out, kernel_map(Gt[r0:r1, c0:c1].contiguous())[1].mul_(sa2), t)

    with torch_threads(1 if dev.type == "cpu" else torch.get_num_threads()):
        run_tiles(one, upper_tiles(n, tile), workers)
    out.diagonal().copy_(torch.as_tensor(gd_diag, device=dev))
    return out.cpu().numpy()


def _check_trainable(trainable: tuple[str, ...]) -> None:
    if not trainable or not set(trainable) <= {"a", "A", "B"}:
        raise InvalidArgument(
            f"trainable must be a non-empty subset of a, A, B; got {trainable!r}."
        )

r"""The exact infinite-width DEQ kernels on the user's own data, neural-tangents style.

``kernels(act, X1, X2)`` returns the DEQ's conjugate kernel G*(x_i, x'_j) or its NTK K* for rows
x_i of X1 and x'_j of X2 (rows are samples, as in neural-tangents' ``kernel_fn(x1, x2)``): the
fixed point `G = E[φ(u)φ(v)]`, `(u, v) ~ N(0, [[Λ_ii, Λ_ij], [Λ_ij, Λ_jj]])`,
`Λ = σ_a² G + σ_b² x_iᵀx'_j` (slides, "Implicit CK and NTK"; Feng & Kolter 2020), solved pair by
pair by :class:`~._exact.KernelEngine`, and `K* = G*/(1 − Ġ*)` for the NTK over (a, A).  The
activation is used as given unless ``center`` is set (the theorems' φ_c = φ − c).

Near the hardware, as :func:`~._exact.exact_kernels`: the pairs are cut into tiles
(:func:`kernel_tiles`: square tiles of the upper triangle for k(X, X), whose lower triangle is
their mirror image; rows × columns for k(X1, X2)), run on one worker thread per core with torch
on one intra-op thread each (:mod:`._threads`, :func:`~._tiles.run_tiles`).  Each tile forms its
own block of XᵀX', solves it, and writes its values straight into the output, the only n1 × n2
array.  A tile's values depend on the tile alone, never on the thread that ran it, so the output
has the same bytes for any number of workers.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import torch

from ._data_args import data_matrix
from ._diagonal import diagonal_kernel
from ._exact import _TILE_ARRAYS, TILE, KernelEngine, _sq_norms, ntk_limit
from ._kernel_args import as_activation, kernel_arguments, kernel_options, resolve, sigmas
from ._threads import blas_threads, tile_workers, torch_threads
from ._tiles import Tile, mirror, run_tiles, upper_tiles

__all__ = [
    "kernels", "kernel_diagonal", "kernel_tiles", "kernels_memory", "as_activation", "sigmas",
]  # fmt: skip

#: the largest tile side: a worker holds ~24 float64 arrays of a tile, 0.8 GB at 2048²
MAX_TILE = 2048
#: samples (X1's and X2's) from which the per-sample tables are built on every core
_POOL_FROM = 1024


def kernels(
    act: Any,
    X1: Any,
    X2: Any = None,
    *,
    sigma_a2: Any = 0.2,
    sigma_b2: Any = None,
    kind: str = "ck",
    center: float | None = None,
    trainable: Sequence[str] = ("a", "A"),
    device: str | torch.device = "auto",
    method: str = "auto",
    tol: float = 1e-13,
    progress: bool | Callable[[int, int], None] | None = None,
    tile: int = TILE,
) -> Any:
    r"""The DEQ's exact infinite-width CK G* or NTK K* between the rows of X1 and X2.

    Args:
      act: the activation φ: a library name, an expression in x, an Activation, or a
        ``CenteredActivation``.
      X1, X2: data, rows are samples (n1 × p and n2 × p), numpy arrays or torch tensors; X2 None
        (default) for the n1 × n1 kernel of X1.  Computed in float64.
      sigma_a2, sigma_b2: σ_a², σ_b² (σ_b² defaults to 1 − σ_a²).
      kind: ``"ck"`` for G*, ``"ntk"`` for K* (over ``trainable``; (a, A) gives K* = G*/(1 − Ġ*)).
      center: c in φ_c = φ − c (default None: φ as given).  The equivalent kernels of the ICML
        2024 theorems use the c that centres φ at τ* (see :func:`equivalent_kernels`).
      device: ``"auto"`` (CUDA when available), ``"cpu"``, ``"cuda"``.
      method, tol: see :func:`deqrmt.validate.exact_kernels`.
      progress: True for a progress bar over the tiles on stderr (a notebook's bar in Jupyter;
        ``DEQRMT_NO_PROGRESS=1`` turns it off); None or False (default) for none; or a callable,
        called as ``progress(done, total)`` after every tile (``total`` tiles; the calls come one
        at a time, from the worker threads, with ``done`` increasing).
      tile: the side of the tiles the pairs are cut into, 1 to 2048 (a tuning knob, see
        :func:`kernel_tiles`; results agree to rounding).

    Returns:
      The n1 × n2 kernel, float64: a numpy array, or a torch tensor on X1's device when X1 is one.
      Its (i, j) entry is G*(x_i, x'_j) (``kind="ck"``) or K*(x_i, x'_j) (``kind="ntk"``).

    Cost: closed forms (ReLU-like, erf) and the Mehler series are a few passes over the n1·n2
    pairs.  Without a closed form, pairs whose pre-activations correlate beyond the tiles'
    series (`|ρ| > 0.91` for tanh at ``tol=1e-13`` on normalised rows, 0.82 on raw pixel rows
    whose scale saturates φ) are summed pair by pair with a series of degree up to 3000, and
    only those beyond its reach (`|ρ| ≳ 0.99`: near-duplicate points) by nested quadrature,
    ~0.1 s per pair; ``tol=1e-8`` widens the reach, or use high-dimensional data as the
    theory does (`|ρ| = O(p^{-1/2})`).  Zero rows (when φ(0) = 0) and identical rows give
    their exact values (0; equal entries).

    Warns:
      DataWarning: once per call, when the rows' scale puts φ deep in its saturated limit
        (median pre-activation variance ≥ 100: raw pixel rows, ‖x‖² in the thousands); the
        kernel is computed all the same.

    Raises:
      InvalidArgument: malformed data (complex, boolean, text or object entries, not 2-D,
        empty, non-finite, X1 and X2 with different numbers of features), σ's ≤ 0, an unknown
        ``kind``, ``method`` or ``device`` (or ``cuda`` without a CUDA device), ``tol`` outside
        [1e-15, 1e-2], a ``center`` that is not a number, a ``progress`` that is not a
        function; each named (:mod:`._kernel_args`).
      UnknownTrainable: ``trainable`` not a non-empty subset of a, A, B.
      BudgetExceeded: a kernel that would not fit in the memory available
        (:func:`kernels_memory`: 8·n1·n2 bytes and the tables; the message has the estimate and
        the ways round it: rows of X1 at a time, or ``out='K.zarr'``), or ``tile`` above 2048.
      ParseError, UnknownActivation: the activation is not understood.
      ContractionError: σ_a² too large for the kernel map to contract (Ġ ≥ 1 somewhere).

    Example:
      >>> import numpy as np
      >>> X = np.random.default_rng(0).standard_normal((5, 3)) / np.sqrt(3)
      >>> G = kernels("relu", X, sigma_a2=0.2)
      >>> G.shape, bool(np.allclose(G, G.T))
      ((5, 5), True)
    """

    args = kernel_arguments(
        act, X1, X2, sigma_a2=sigma_a2, sigma_b2=sigma_b2, kind=kind, center=center,
        trainable=trainable, device=device, method=method, tol=tol, progress=progress,
        tile=tile, max_tile=MAX_TILE,
    )  # fmt: skip
    o = args.options
    phi, a2, b2, kind, trainable = o.phi, o.sigma_a2, o.sigma_b2, o.kind, o.trainable
    A, B, torch_in = args.X1, args.X2, args.torch_in
    method, tol, tile, progress = args.method, args.tol, args.tile, args.progress
    if B is not None and B.shape == A.shape and bool(torch.equal(A, B)):
        # k(X, X) (scikit-learn's SVC asks for it): the symmetric path, whose diagonal is the
        # univariate fixed point, instead of n pairs at correlation 1
        B = None
    n1, n2 = A.shape[0], (B.shape[0] if B is not None else A.shape[0])
    dev = resolve(device)
    copies = not _shares(X1, A) or (B is not None and not _shares(X2, B)) or dev.type != "cpu"
    _check_fits(n1, n2, int(A.shape[1]), dev, tile_workers(dev), tile, copies)
    out_device = X1.device if torch_in else None
    tiles = kernel_tiles(n1, None if B is None else n2, tile)
    out = np.zeros((n1, n2))
    # the per-sample tables on every core (as in exact_kernels), then one thread per tile; a
    # few samples' tables on one thread: their passes are elementwise ops on ~10⁵ entries, where
    # torch's pool costs more than it saves (60 rows: 0.33 s of CPU on two threads against
    # 0.08 s on one, measured on a busy 2-core machine)
    samples = n1 + (0 if B is None else n2)
    pool = blas_threads(dev) if dev.type != "cpu" or samples >= _POOL_FROM else 1
    with torch_threads(pool):
        # the engine takes p × n (columns are samples): the transposed views of the rows, no
        # copy (a tile's XᵀX' block is then A[rows] @ A[cols]ᵀ, both read row by row)
        A, B = A.to(dev), None if B is None else B.to(dev)
        sq = torch.cat([_sq_norms(A.T)] + ([] if B is None else [_sq_norms(B.T)]))
        engine = KernelEngine(
            phi, A.T, None if B is None else B.T, a2, b2, method=method, tol=tol, sq_norms=sq
        )
    with torch_threads(1 if dev.type == "cpu" else torch.get_num_threads()):
        diag = None
        if engine.symmetric:
            g, gd = engine.diagonal()
            k_diag = g if kind == "ck" else ntk_limit(g, gd, sq.cpu().numpy(), a2, b2, trainable)
            diag = torch.as_tensor(k_diag)
        elif kind == "ntk":
            engine.diagonal(every=True)  # the univariate Ġ ≥ 1 check, X2's samples included
        with _tile_progress(progress, len(tiles)) as tick:
            fill = _TileFiller(
                engine, torch.from_numpy(out), None if kind == "ck" else trainable, diag,
                len(tiles), tick,
            )  # fmt: skip
            run_tiles(fill, tiles, tile_workers(dev))
    engine.exact.unify(torch.from_numpy(out), n1, engine.symmetric)  # identical rows: equal
    if torch_in:
        return torch.as_tensor(out).to(out_device)
    return out


@contextlib.contextmanager
def _tile_progress(progress: Any, total: int) -> Iterator[Callable[[int, int], None] | None]:
    """The tiles' callback: a bar for ``progress=True`` (closed on the way out), the caller's
    callable as it is, or None."""
    if progress is True:
        from .._progress import progress_bar

        with progress_bar(total, "kernels", unit="tile", enabled=True) as bar:
            yield bar
    else:
        yield progress or None


def kernels_memory(
    n1: int, n2: int, p: int, *, workers: int = 1, tile: int = TILE, copies_data: bool = False
) -> int:
    r"""Bytes :func:`kernels` holds beyond the interpreter and torch: its memory model.

    `8 n1 n2` (the output, the only n1 × n2 array) `+ 8 p (n1 + n2)` when the data are copied
    (not float64, or on another device) `+ workers · 24 · 8 · tile²` (the tiles in flight)
    `+ 64 kB` per sample (φ on the samples' ~4000 quadrature nodes while a table is built, and
    the tables: the most when the rows' scale needs Mehler's series to degree 3000).
    """
    samples = n1 + (0 if n2 == n1 else n2)
    tiles = workers * _TILE_ARRAYS * 8 * tile * tile
    return 8 * n1 * n2 + (8 * p * samples if copies_data else 0) + tiles + 64_000 * samples


def _check_fits(
    n1: int, n2: int, p: int, dev: torch.device, workers: int, tile: int, copies: bool
) -> None:
    """Refuse, before anything is allocated, a kernel the memory available cannot hold."""
    from .._budget import check_gpu_memory, check_memory

    need = kernels_memory(n1, n2, p, workers=workers, tile=tile, copies_data=copies)
    fix = (
        "compute it in pieces (rows of X1 at a time: deqrmt.kernels(act, X1[i:j], X2)), or "
        "write it to disk as it is computed (deqrmt.kernels(..., out='K.zarr'), or "
        "deqrmt kernels --out K.zarr)"
    )
    if dev.type == "cuda":
        free, _ = torch.cuda.mem_get_info(dev)
        check_gpu_memory(need, free, f"a {n1} × {n2} kernel needs", fix)
        need = 8 * n1 * n2  # the host copy
    check_memory(need, f"a {n1} × {n2} kernel (8·n1·n2 bytes, and its tables)", fix)


def _shares(X: Any, t: torch.Tensor) -> bool:
    """Whether the float64 tensor ``t`` reads the caller's ``X`` in place (no copy was made)."""
    if isinstance(X, torch.Tensor):
        return X.dtype == torch.float64 and X.data_ptr() == t.data_ptr()
    arr = np.asarray(X) if isinstance(X, np.ndarray) else None
    return arr is not None and arr.dtype == np.float64 and np.may_share_memory(arr, t.numpy())


def kernel_tiles(n1: int, n2: int | None, tile: int = TILE) -> list[Tile]:
    """The tiles of an n1 × n2 kernel (n2 None: n1 × n1, symmetric), as (r0, r1, c0, c1).

    Symmetric: the square ``tile`` × ``tile`` tiles on and above the diagonal
    (:func:`~._tiles.upper_tiles`).  Otherwise every rows × columns tile, ``tile`` columns wide
    (fewer when n2 is smaller) and tall enough for about ``tile``² pairs, so that a kernel
    against a few samples is still cut into tiles of a useful size.  The tiles depend on the
    sizes alone, never on the number of workers.
    """
    if n2 is None:
        return upper_tiles(n1, tile)
    width = min(tile, n2)
    height = max(tile, tile * tile // width)
    return [
        (r0, min(n1, r0 + height), c0, min(n2, c0 + width))
        for r0 in range(0, n1, height)
        for c0 in range(0, n2, width)
    ]


class _TileFiller:
    """One tile of :func:`kernels`: its block of XᵀX', the pairwise Newton solve, the values
    written into the output (and mirrored below the diagonal in the symmetric case).

    Tiles never overlap, so any number of workers may run them at once; ``progress`` is called
    under a lock, with the count of tiles done (monotone; the last call has the total).
    """

    def __init__(
        self,
        engine: KernelEngine,
        out: torch.Tensor,
        trainable: tuple[str, ...] | None,
        diagonal: torch.Tensor | None,
        total: int,
        progress: Callable[[int, int], None] | None,
    ) -> None:
        self.engine, self.out, self.trainable, self.diagonal = engine, out, trainable, diagonal
        self.total, self.progress = total, progress
        self.done = 0
        self.lock = threading.Lock()

    def __call__(self, t: Tile) -> None:
        r0, r1, c0, c1 = t
        e = self.engine
        rows = slice(r0, r1)
        if e.X2 is None:
            # the columns' samples are X1's: the pairs i = j of a diagonal tile are placeholders
            gram = e.X1[:, rows].T @ e.X1[:, c0:c1]
            cols = slice(c0, c1)
            on_diag = None
            if r0 == c0:
                on_diag = torch.eye(r1 - r0, dtype=torch.bool, device=gram.device)
        else:
            gram = e.X1[:, rows].T @ e.X2[:, c0:c1]
            cols = slice(e.n1 + c0, e.n1 + c1)  # X2's samples follow X1's in the engine
            on_diag = None
        g, gdot, _ = e.newton(rows, cols, gram, on_diag)
        if self.trainable is not None:
            g = ntk_limit(g, gdot, gram, e.sigma_a2, e.sigma_b2, self.trainable)
        k = g.cpu()
        if e.X2 is None:
            if on_diag is not None:
                assert self.diagonal is not None
                k.diagonal().copy_(self.diagonal[r0:r1])  # the univariate fixed point
            mirror(self.out, k, t)
        else:
            self.out[r0:r1, c0:c1] = k
        if self.progress is not None:
            with self.lock:
                self.done += 1
                self.progress(self.done, self.total)


def kernel_diagonal(
    act: Any,
    X: Any,
    *,
    sigma_a2: Any = 0.2,
    sigma_b2: Any = None,
    kind: str = "ck",
    center: float | None = None,
    trainable: Sequence[str] = ("a", "A"),
) -> np.ndarray:
    """The diagonal of :func:`kernels` ``(act, X)`` alone: one scalar fixed point per sample.

    G*_ii depends on x_i only through ‖x_i‖² (the univariate fixed point
    Λ_ii = σ_a² E[φ(√Λ_ii ξ)²] + σ_b² ‖x_i‖²), so this costs O(n) instead of the n² pairs.

    Args:
      act, sigma_a2, sigma_b2, kind, center, trainable: as for :func:`kernels`.
      X: n × p data, rows are samples.

    Returns:
      The n diagonal entries (float64 numpy array): G*_ii for ``kind="ck"``, K*_ii for
      ``"ntk"``.

    Raises:
      InvalidArgument, ContractionError: as for :func:`kernels`.

    Example:
      >>> import numpy as np
      >>> X = np.random.default_rng(0).standard_normal((5, 3)) / np.sqrt(3)
      >>> d = kernel_diagonal("relu", X, sigma_a2=0.2)
      >>> bool(np.allclose(d, np.diag(kernels("relu", X, sigma_a2=0.2))))
      True
    """
    o = kernel_options(
        act, sigma_a2=sigma_a2, sigma_b2=sigma_b2, kind=kind, center=center, trainable=trainable
    )
    A = data_matrix(X, "X").torch()
    sq = (A * A).sum(1)
    g, gd = diagonal_kernel(o.phi, sq, o.sigma_a2, o.sigma_b2)
    if o.kind == "ck":
        return g
    return ntk_limit(g, gd, sq.numpy(), o.sigma_a2, o.sigma_b2, o.trainable)

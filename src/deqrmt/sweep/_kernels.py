r"""``deqrmt.kernels``: the exact kernels in memory, or on Dask into a Zarr store (``out=``).

Without ``out`` this is :func:`deqrmt.validate.kernels`, unchanged.  With ``out`` the kernel is
computed tile by tile on a Dask cluster and written to a chunked Zarr store
(:func:`~._kernel_run.write_kernels`), for kernels beyond one machine's memory; the opened
store is returned, read lazily.  It lives here, above validate, so that validate never imports
Dask.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from .._arguments import boolean
from .._errors import InvalidArgument

__all__ = ["kernels"]


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
    device: Any = "auto",
    method: str = "auto",
    tol: float = 1e-13,
    progress: Any = None,
    tile: int | None = None,
    out: str | os.PathLike[str] | None = None,
    scheduler: str | None = None,
    workers: int | None = None,
    force: bool = False,
) -> Any:
    r"""The DEQ's exact infinite-width CK G* or NTK K* between the rows of X1 and X2.

    Args:
      act: the activation φ: a library name, an expression in x, an Activation, or a
        ``CenteredActivation`` (with ``out``: a name or an expression string).
      X1, X2: data, rows are samples (n1 × p and n2 × p), numpy arrays or torch tensors; X2 None
        (default) for the n1 × n1 kernel of X1.  Computed in float64.  With ``out`` also the
        path of a ``.npy`` file (memory-mapped) or of a Zarr array, which every worker reads.
      sigma_a2, sigma_b2: σ_a², σ_b² (σ_b² defaults to 1 − σ_a²).
      kind: ``"ck"`` for G*, ``"ntk"`` for K* (over ``trainable``; (a, A) gives K* = G*/(1 − Ġ*));
        with ``out`` also ``"both"``.
      center: c in φ_c = φ − c (default None: φ as given).  The equivalent kernels of the ICML
        2024 theorems use the c that centres φ at τ* (see :func:`deqrmt.equivalent_kernels`).
      device: ``"auto"`` (CUDA when available), ``"cpu"``, ``"cuda"``.
      method, tol: see :func:`deqrmt.validate.exact_kernels`.
      progress: called as ``progress(done, total)`` after every tile (``total`` tiles; the
        calls come one at a time, from the worker threads, with ``done`` increasing).
      tile: the side of the tiles the pairs are cut into, 1 to 2048 (a tuning knob, see
        :func:`deqrmt.validate.kernels`; results agree to rounding); default 256, and 1024
        with ``out`` (the store's chunks).
      out: a directory path: compute the kernel on Dask, tile by tile, into a Zarr store there
        (default None: in memory).  Rerun with the same arguments to resume an interrupted
        store: only the missing tiles are computed.  A store made for other data or settings
        is refused, and replaced only with ``force=True``.
      scheduler: with ``out``: ``tcp://HOST:PORT`` of a running Dask scheduler whose workers
        see the same file system; default: an embedded cluster of ``workers`` processes.
      workers: with ``out``: the embedded cluster's worker processes (default: one per core),
        or with ``scheduler`` the workers to wait for (default 1).
      force: with ``out``: replace a kernel store made for other data or settings.

    Returns:
      The n1 × n2 kernel, float64: a numpy array, or a torch tensor on X1's device when X1 is one.
      Its (i, j) entry is G*(x_i, x'_j) (``kind="ck"``) or K*(x_i, x'_j) (``kind="ntk"``).
      With ``out``: the store's ``zarr.Array`` (opened read-only, read lazily:
      ``K[idx][:, idx]`` reads only the chunks it needs), or for ``kind="both"`` the
      ``zarr.Group`` holding ``ck`` and ``ntk``.

    Cost: closed forms (ReLU-like, erf) and the Mehler series are a few passes over the n1·n2
    pairs.  Without a closed form, pairs whose pre-activations correlate beyond the series'
    reach (`|ρ| > 0.91` for tanh at ``tol=1e-13``: near-duplicate points, or low-dimensional
    data) fall back to nested quadrature, ~0.1 s per pair; ``tol=1e-8`` widens the reach
    (0.98 for tanh), or use high-dimensional data as the theory does (`|ρ| = O(p^{-1/2})`).
    With ``out``, ``kind="both"`` costs the two kinds' passes.

    Raises:
      InvalidArgument: malformed data (not 2-D, empty, non-finite, X1 and X2 with different
        numbers of features), σ's ≤ 0, an unknown ``kind`` or ``device`` (or ``cuda`` without a
        CUDA device); ``scheduler``, ``workers`` or ``force`` without ``out``.
      BudgetExceeded: an output of more than 2.5·10⁸ entries (compute it for a few rows of X1
        at a time, or pass ``out``), or ``tile`` above 2048; with ``out``: more than 4·10¹⁰
        entries or 2·10⁵ tiles, a store larger than its disk's free space, a tile larger than
        a worker's memory limit per thread.
      ParseError, UnknownActivation: the activation is not understood.
      ContractionError: σ_a² too large for the kernel map to contract (Ġ ≥ 1 somewhere).
      StoreError, FileError, SchedulerError, MissingExtra: with ``out``: a store for other
        data or settings, an ``out`` that exists and is no kernel store, an unreachable
        scheduler, zarr or Dask not installed (``pip install 'deqrmt[sweep]'``).

    Example:
      >>> import numpy as np
      >>> X = np.random.default_rng(0).standard_normal((5, 3)) / np.sqrt(3)
      >>> G = kernels("relu", X, sigma_a2=0.2)
      >>> G.shape, bool(np.allclose(G, G.T))
      ((5, 5), True)
      >>> K = kernels("relu", "X.npy", out="K.zarr")  # doctest: +SKIP
    """
    force = boolean(force, "force")
    if out is None:
        extra = [n for n, v in (("scheduler", scheduler), ("workers", workers)) if v is not None]
        if force:
            extra.append("force")
        if extra:
            raise InvalidArgument(f"{', '.join(extra)} needs out=… (a Zarr store to write).")
        if kind == "both":
            raise InvalidArgument("kind='both' needs out=… (a Zarr store holding ck and ntk).")
        from ..validate import kernels as in_memory

        options: dict[str, Any] = {} if tile is None else {"tile": tile}
        return in_memory(
            act, X1, X2, sigma_a2=sigma_a2, sigma_b2=sigma_b2, kind=kind, center=center,
            trainable=trainable, device=device, method=method, tol=tol, progress=progress,
            **options,
        )  # fmt: skip
    from .._progress import progress_bar
    from ._kernel_run import write_kernels
    from ._kernel_store import require_zarr

    zarr = require_zarr()
    enabled = progress if isinstance(progress, bool) else False
    with progress_bar(0, "tiles", unit="tile", enabled=enabled) as bar:
        callback = progress if callable(progress) else bar
        run = write_kernels(
            act, X1, X2, out=out, sigma_a2=sigma_a2, sigma_b2=sigma_b2, kind=kind,
            center=center, trainable=trainable, device=device, method=method, tol=tol,
            tile=tile, scheduler=scheduler, workers=workers, force=force, progress=callback,
        )  # fmt: skip
    if run.interrupted:
        raise KeyboardInterrupt
    group = zarr.open_group(run.store, mode="r")
    return group if kind == "both" else group[kind]

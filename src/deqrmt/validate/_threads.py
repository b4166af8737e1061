"""Scoped torch intra-op thread count.

Why: on a small, shared CPU (2 cores here), torch's OpenMP pool makes *elementwise* ops on
10⁴–10⁶-element tensors slower than one thread (measured 0.2 ns vs up to 50 ns per element-op
when another process holds a core: the pool's threads wait on each other), and LAPACK's
``syevd`` likewise (eigvalsh of 1024 × 1024: 0.13 s on one thread, 0.7–1.8 s on two).  The
elementwise-heavy stages (exact kernels, spectra) therefore run on one thread; the BLAS-3
Monte Carlo solves keep the caller's setting.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

__all__ = ["torch_threads"]


@contextlib.contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Run the block with ``torch.set_num_threads(n)``, restoring the old value afterwards."""
    old = torch.get_num_threads()
    if n == old:
        yield
        return
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)

"""Give the C heap's free memory back to the operating system (glibc's ``malloc_trim``).

Why: glibc keeps freed blocks smaller than its mmap threshold (dynamic, up to 32 MB) in the
heap, and up to twice that at the heap's top, as resident memory.  :func:`._exact.exact_kernels`
frees tens of MB of per-sample tables just before it allocates K* (n × n); trimming there lowers
the call's peak RSS by that much (``benchmarks/exact_kernel.py --scale``).  Where the C library
has no ``malloc_trim`` (macOS, musl) this does nothing.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable

__all__ = ["release_free_memory"]


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        fn = ctypes.CDLL(None).malloc_trim  # the process's own symbols: the C library's
    except (AttributeError, OSError):
        return None
    fn.argtypes = [ctypes.c_size_t]
    fn.restype = ctypes.c_int
    return fn  # type: ignore[no-any-return]


def release_free_memory() -> bool:
    """Return free heap memory to the OS; True if some was released (False where unsupported)."""
    fn = _malloc_trim()
    return bool(fn(0)) if fn is not None else False

"""IDX files (MNIST, Fashion-MNIST in torchvision's raw layout) read as untrusted data.

The format: two zero bytes, the type (``0x08``: unsigned bytes), the rank, then one big-endian
uint32 per dimension, then the values.  A file is opened with :func:`deqrmt._io.open_regular`
(a FIFO, ``/dev/zero`` or a directory is refused at once), its header is parsed and checked
against what the caller expects (the rank, the image size) before the body is read, and the
body must be exactly as long as the header says: a truncated file, a header that claims more
than the file holds, or trailing data are each a one-line :class:`~deqrmt.InvalidArgument`.
A ``.gz`` file is decompressed in a stream that stops one byte past the size its header
announces, and that size is capped first (:data:`MAX_IDX_BYTES`), so a gzip bomb costs at
most that much memory.
"""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path
from typing import BinaryIO

import numpy as np

from .._errors import BudgetExceeded, InvalidArgument
from .._untrusted import shown

__all__ = ["MAX_IDX_BYTES", "read_idx"]

#: The largest IDX body accepted (bytes, decompressed): MNIST's training images are 47 MB.
MAX_IDX_BYTES = 64 * 2**20


def _unreadable(e: Exception, name: str) -> InvalidArgument:
    if isinstance(e, gzip.BadGzipFile):
        return InvalidArgument(f"{name} is not a gzip file (its name ends in .gz); {_FIX}")
    return InvalidArgument(f"{name} cannot be read as IDX data ({e}); {_FIX}")


def _read_exactly(fh: BinaryIO, n: int, name: str, what: str) -> bytes:
    try:
        blob = fh.read(n)
    except (OSError, EOFError, zlib.error) as e:
        raise _unreadable(e, name) from None
    if len(blob) < n:
        raise InvalidArgument(
            f"{name} is truncated: {what} needs {n} bytes, the file has {len(blob)}; {_FIX}"
        )
    return blob


_FIX = "download the file again (torchvision's raw MNIST/Fashion-MNIST IDX files)."


def read_idx(path: Path, rank: int, item_shape: tuple[int, ...] = ()) -> np.ndarray:
    """The uint8 array of the IDX file at ``path`` (gzip-compressed when it ends in ``.gz``).

    Args:
      path: the file.
      rank: the number of dimensions it must have (3 for images, 1 for labels).
      item_shape: the dimensions after the first that it must have (``(28, 28)`` for MNIST).

    Raises:
      FileError: not a regular file, or unreadable.
      InvalidArgument: not IDX, another rank or item shape, truncated, or longer than its
        header says.
      BudgetExceeded: a header that announces more than :data:`MAX_IDX_BYTES`.
    """
    from .._io import open_regular

    name = f"the IDX file {shown(str(path), 80)}"
    with open_regular(path, name, MAX_IDX_BYTES) as raw:
        fh: BinaryIO = raw
        if path.suffix == ".gz":
            fh = gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[assignment]
        try:
            return _parse(fh, name, rank, item_shape)
        finally:
            fh.close()


def _parse(fh: BinaryIO, name: str, rank: int, item_shape: tuple[int, ...]) -> np.ndarray:
    magic = _read_exactly(fh, 4, name, "the header")
    if magic[:2] != b"\0\0" or magic[2] != 0x08:
        raise InvalidArgument(
            f"{name} is not an IDX file of unsigned bytes (it starts with {magic.hex()}, "
            f"not 000008..); {_FIX}"
        )
    if magic[3] != rank:
        raise InvalidArgument(f"{name} has {magic[3]} dimensions, expected {rank}; {_FIX}")
    head = _read_exactly(fh, 4 * rank, name, "the header")
    dims = tuple(int.from_bytes(head[4 * i : 4 * i + 4], "big") for i in range(rank))
    if dims[1:] != item_shape:
        shape = "×".join(map(str, dims[1:]))
        want = "×".join(map(str, item_shape))
        raise InvalidArgument(f"{name} holds items of shape {shape}, expected {want}; {_FIX}")
    if dims[0] == 0:
        raise InvalidArgument(f"{name} holds no items; {_FIX}")
    size = int(np.prod(dims, dtype=object))
    if size > MAX_IDX_BYTES:
        raise BudgetExceeded(
            f"{name} announces {dims[0]} items ({size} bytes), more than the {MAX_IDX_BYTES} "
            f"accepted (MAX_IDX_BYTES; MNIST's training images are 47 MB); {_FIX}"
        )
    body = _read_exactly(fh, size, name, f"a header of {dims[0]} items")
    try:
        extra = fh.read(1)
    except (OSError, EOFError, zlib.error) as e:
        raise _unreadable(e, name) from None
    if extra:
        raise InvalidArgument(
            f"{name} is longer than its header says ({dims[0]} items, {size} bytes); {_FIX}"
        )
    return np.frombuffer(body, dtype=np.uint8).reshape(dims)

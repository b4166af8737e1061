r"""An exact kernel on disk: a Zarr store whose chunks are the tiles, with what made it.

The layout of ``K.zarr`` (a Zarr v3 group, uncompressed float64, so its size is known before
any work: 8 bytes per entry):

* ``ck`` and/or ``ntk``: the n1 × n2 kernel G* / K* (:func:`deqrmt.kernels`), chunked
  ``tile`` × ``tile``: one chunk per tile, so a tile is written as whole chunk files, each
  replaced atomically (Zarr's local store writes a temporary file and renames it).
* ``done``: one bool per tile (chunks of 1 × 1, one file each), set only after every chunk of
  its tile is written.  A tile without its mark is computed again; a killed worker's half
  written tile has none.  For k(X, X) only the tiles on and above the diagonal are computed:
  each writes its block and the transposed block below the diagonal.
* ``X1`` (and ``X2``): the data, when it came as an in-memory array (the workers read it from
  the store; a ``.npy`` file or a Zarr array is read where it is, by every worker).
* the group's attributes ``deqrmt``: what the kernel is of (:func:`metadata`): the activation,
  σ_a², σ_b², centre, kinds, trainable set, tolerance, method, shapes, tile, the deqrmt version
  and the SHA-256 of the data (float64 rows, streamed).  A store made for other data or other
  settings is refused (:func:`check_metadata`) instead of being resumed into a mixture.
"""

from __future__ import annotations

import hashlib
import math
import os
import shutil
import stat
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import FileError, InvalidArgument, MissingExtra, StoreError
from .._version import __version__
from ._limits import show

__all__ = [
    "FORMAT",
    "DataRef",
    "KernelSpec",
    "check_metadata",
    "create_store",
    "data_ref",
    "metadata",
    "open_store",
    "read_rows",
    "require_zarr",
    "store_id",
    "tile_grid",
]

#: The store's format name and version (attrs["deqrmt"]["format"]).
FORMAT = "deqrmt-kernels/1"
#: Rows hashed (and checked finite) at a time: 64 MiB of float64 at p = 1024.
HASH_BLOCK = 8192
INSTALL = "pip install 'deqrmt[sweep]'"


def require_zarr() -> Any:
    """``import zarr`` (3.x), or a one-line :class:`MissingExtra` naming the extra."""
    try:
        import zarr
    except ImportError as e:
        raise MissingExtra(
            f"a kernel store needs zarr, which is not installed ({e}); {INSTALL}."
        ) from None
    if int(zarr.__version__.split(".")[0]) < 3:
        raise MissingExtra(f"a kernel store needs zarr 3, found {zarr.__version__}; {INSTALL}.")
    return zarr


# ---------------------------------------------------------------------------------- the data


@dataclass(frozen=True)
class DataRef:
    """Where the workers read the data: a ``.npy`` file (memory-mapped) or a Zarr array
    (``path`` is its store, ``name`` the array inside, "" for an array at the root)."""

    kind: str  # "npy" or "zarr"
    path: str
    name: str
    shape: tuple[int, int]
    sha256: str


def read_rows(ref: DataRef, r0: int, r1: int) -> np.ndarray:
    """Rows r0:r1 of the data as a float64 array (the only rows a task holds)."""
    if ref.kind == "npy":
        X = np.load(ref.path, mmap_mode="r", allow_pickle=False)
        return np.array(X[r0:r1], dtype=np.float64)
    zarr = require_zarr()
    group_or_array = zarr.open(ref.path, mode="r")
    arr = group_or_array[ref.name] if ref.name else group_or_array
    return np.asarray(arr[r0:r1], dtype=np.float64)


def _regular(path: str, what: str) -> None:
    try:
        st = os.stat(path)
    except OSError as e:
        raise FileError(f"cannot read {what} {show(path)}: {e.strerror}.") from None
    if not stat.S_ISREG(st.st_mode):
        raise FileError(f"cannot read {what} {show(path)}: not a regular file.")


def _open_array(source: Any, what: str) -> tuple[Any, str, str, str]:
    """(array-like, kind, path, name) of a ``.npy`` path, a Zarr path or a Zarr array."""
    if isinstance(source, str | os.PathLike):
        path = os.fspath(source)
        if os.path.isdir(path):
            zarr = require_zarr()
            try:
                arr = zarr.open_array(path, mode="r")
            except Exception as e:  # not a Zarr array (a group, any directory)
                raise InvalidArgument(
                    f"{what} {show(path)} is a directory but not a Zarr array ({type(e).__name__}); "
                    "give a .npy file or the path of a 2-D Zarr array."
                ) from None
            return arr, "zarr", os.path.abspath(path), ""
        _regular(path, what)
        try:
            X = np.load(path, mmap_mode="r", allow_pickle=False)
        except (ValueError, OSError, EOFError) as e:
            raise InvalidArgument(
                f"{what} {show(path)} is not a .npy array file ({e}); save it with numpy.save."
            ) from None
        if not isinstance(X, np.ndarray):
            raise InvalidArgument(
                f"{what} {show(path)} holds several arrays (.npz); give one .npy."
            )
        return X, "npy", os.path.abspath(path), ""
    zarr = require_zarr()
    if isinstance(source, zarr.Array):
        root = getattr(source.store, "root", None)
        if root is None:
            raise InvalidArgument(
                f"{what} is a Zarr array outside the file system; the workers read the data "
                "from a path: save it to a local Zarr store or a .npy file."
            )
        return source, "zarr", os.path.abspath(os.fspath(root)), source.path
    raise TypeError  # an in-memory array: the caller copies it into the store


def _hash_rows(X: Any, what: str) -> str:
    """SHA-256 of the shape and the float64 rows, streamed; refuses non-finite entries."""
    n, p = X.shape
    h = hashlib.sha256(f"float64 {n} {p}\n".encode())
    for r0 in range(0, n, HASH_BLOCK):
        block = np.ascontiguousarray(np.asarray(X[r0 : r0 + HASH_BLOCK], dtype=np.float64))
        if not np.isfinite(block).all():
            raise InvalidArgument(f"{what} has non-finite entries (nan or inf).")
        h.update(block.tobytes())
    return h.hexdigest()


def _check_shape(X: Any, what: str) -> tuple[int, int]:
    shape = tuple(int(s) for s in X.shape)
    if len(shape) != 2 or shape[0] < 1 or shape[1] < 1:
        raise InvalidArgument(
            f"{what} must be a non-empty 2-D array (rows are samples), got shape {shape}."
        )
    kind = np.dtype(X.dtype).kind
    if kind not in "biuf":
        raise InvalidArgument(f"{what} must hold real numbers, got dtype {X.dtype}.")
    return shape[0], shape[1]


def data_ref(source: Any, what: str, store: str) -> tuple[DataRef, np.ndarray | None]:
    """(where the workers read ``source``, None) for data on disk; for data in memory, (its
    place in the store at ``store``, under the name ``what``; the float64 array, which the
    caller copies there).  The shape and the entries are checked, the SHA-256 taken."""
    try:
        X, kind, path, name = _open_array(source, what)
    except TypeError:
        try:
            arr = np.asarray(
                source.detach().cpu().numpy() if hasattr(source, "detach") else source,
                dtype=np.float64,
            )
        except (TypeError, ValueError) as e:
            raise InvalidArgument(f"{what} must be a 2-D array of numbers: {e}.") from None
        shape = _check_shape(arr, what)
        ref = DataRef("zarr", os.path.abspath(store), what, shape, _hash_rows(arr, what))
        return ref, arr
    shape = _check_shape(X, what)
    return DataRef(kind, path, name, shape, _hash_rows(X, what)), None


# ---------------------------------------------------------------------------------- the kernel


@dataclass(frozen=True)
class KernelSpec:
    """One kernel to store: the settings every tile is computed with, and its data."""

    activation: str
    sigma_a2: float
    sigma_b2: float
    center: float | None
    kinds: tuple[str, ...]
    trainable: tuple[str, ...]
    tol: float
    method: str
    tile: int
    x1: DataRef
    x2: DataRef | None

    @property
    def symmetric(self) -> bool:
        return self.x2 is None

    @property
    def shape(self) -> tuple[int, int]:
        n2 = self.x1.shape[0] if self.x2 is None else self.x2.shape[0]
        return self.x1.shape[0], n2

    @property
    def grid(self) -> tuple[int, int]:
        n1, n2 = self.shape
        return math.ceil(n1 / self.tile), math.ceil(n2 / self.tile)

    def bounds(self, i: int, j: int) -> tuple[int, int, int, int]:
        """(r0, r1, c0, c1) of tile (i, j)."""
        n1, n2 = self.shape
        t = self.tile
        return i * t, min(n1, (i + 1) * t), j * t, min(n2, (j + 1) * t)


def tile_grid(spec: KernelSpec) -> list[tuple[int, int]]:
    """The tiles to compute: (i, j) on and above the diagonal for k(X, X), all for k(X1, X2)."""
    g1, g2 = spec.grid
    return [(i, j) for i in range(g1) for j in range(g2) if not spec.symmetric or j >= i]


def metadata(spec: KernelSpec) -> dict[str, Any]:
    """What the store records about its kernel (the group's ``attrs["deqrmt"]``)."""
    return {
        "format": FORMAT,
        "deqrmt_version": __version__,
        "activation": spec.activation,
        "sigma_a2": spec.sigma_a2,
        "sigma_b2": spec.sigma_b2,
        "center": spec.center,
        "kind": list(spec.kinds),
        "trainable": list(spec.trainable),
        "tol": spec.tol,
        "method": spec.method,
        "shape": list(spec.shape),
        "symmetric": spec.symmetric,
        "tile": spec.tile,
        "X1_sha256": spec.x1.sha256,
        "X2_sha256": None if spec.x2 is None else spec.x2.sha256,
        "p": spec.x1.shape[1],
    }


#: what a reader of a mismatch is told the entry means
_LABELS = {
    "deqrmt_version": "deqrmt version",
    "X1_sha256": "data (SHA-256 of X)",
    "X2_sha256": "data (SHA-256 of X2)",
}


def check_metadata(stored: Any, expected: Mapping[str, Any], path: str) -> None:
    """Raise :class:`StoreError` naming the first entries that differ (store vs this run)."""
    if not isinstance(stored, Mapping) or stored.get("format") != FORMAT:
        raise StoreError(
            f"{show(path)} is not a deqrmt kernel store ({FORMAT}); give out=… a new path, or "
            "remove it yourself."
        )
    differ = [k for k in expected if stored.get(k) != expected[k]]
    if differ:
        what = "; ".join(
            f"{_LABELS.get(k, k)}: store {_short(stored.get(k))}, now {_short(expected[k])}"
            for k in differ[:3]
        )
        raise StoreError(
            f"the kernel store {show(path)} was made for other data or settings ({what}); "
            "give out=… a new path, or pass force=True to replace it."
        )


def _short(value: Any) -> str:
    text = show(value)
    return text if len(text) <= 20 else text[:16] + "…"


# ---------------------------------------------------------------------------------- the store


def _is_kernel_store(path: str) -> bool:
    """True for a directory whose zarr.json says it is a group with our attributes."""
    meta = os.path.join(path, "zarr.json")
    try:
        if os.path.islink(path) or not os.path.isfile(meta) or os.path.getsize(meta) > 1 << 20:
            return False
        import json

        with open(meta, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        return False
    deqrmt = (doc.get("attributes") or {}).get("deqrmt") if isinstance(doc, dict) else None
    return isinstance(deqrmt, dict) and deqrmt.get("format") == FORMAT


def open_store(path: str, spec: KernelSpec, force: bool) -> tuple[Any | None, bool]:
    """(the existing store at ``path`` for ``spec``, to resume; or None, and whether a store
    is there to be replaced when the new one is made).

    Refused: a link, a file or a directory that is not a deqrmt kernel store (never replaced,
    ``force`` or not: it is not ours to delete); a kernel store for other data or settings,
    unless ``force`` (it is then replaced by :func:`create_store`, after every check passed).
    """
    if os.path.islink(path):
        raise FileError(
            f"refusing to use {show(path)}: it is a symbolic link; give the store's real path."
        )
    if not os.path.lexists(path):
        parent = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(parent):
            raise FileError(
                f"cannot write {show(path)}: the directory {show(parent)} does not exist."
            )
        return None, False
    if not _is_kernel_store(path):
        what = "a directory" if os.path.isdir(path) else "a file"
        raise FileError(
            f"refusing to write the kernel store {show(path)}: it exists and is {what}, not a "
            "deqrmt kernel store; give out=… a new path."
        )
    zarr = require_zarr()
    group = zarr.open_group(path, mode="r+")
    try:
        check_metadata(group.attrs.get("deqrmt"), metadata(spec), path)
    except StoreError:
        if not force:
            raise
        return None, True
    return group, False


def create_store(
    path: str, spec: KernelSpec, inputs: Sequence[tuple[str, np.ndarray]], replace: bool = False
) -> tuple[Any, str]:
    """A new store at ``path`` for ``spec``, holding the in-memory ``inputs`` (name, array)
    that the workers read; (the opened group, its id).  ``replace``: the kernel store at
    ``path`` (one for other settings, :func:`open_store` said) is removed first.

    Made whole in a temporary directory beside ``path`` (the kernel arrays, the marks, the
    inputs, the metadata with a fresh ``store_id``), then renamed to ``path``: a store is
    there complete or not at all, and an interrupted creation leaves nothing to refuse.
    """
    zarr = require_zarr()
    n1, n2 = spec.shape
    parent, base = os.path.split(os.path.abspath(path))
    tmp = os.path.join(parent, f".{base}.{uuid.uuid4().hex[:12]}.creating")
    sid = uuid.uuid4().hex
    try:
        group = zarr.open_group(tmp, mode="w-")
        for kind in spec.kinds:
            group.create_array(
                kind, shape=(n1, n2), chunks=(spec.tile, spec.tile), dtype="float64",
                compressors=None, fill_value=np.nan,
            )  # fmt: skip
        group.create_array("done", shape=spec.grid, chunks=(1, 1), dtype="bool", fill_value=False)
        for name, arr in inputs:
            rows = max(1, min(arr.shape[0], (8 << 20) // (8 * arr.shape[1])))
            group.create_array(name, data=arr, chunks=(rows, arr.shape[1]))
        group.attrs["deqrmt"] = {**metadata(spec), "store_id": sid}
        if replace and _is_kernel_store(path):
            shutil.rmtree(path)
        try:
            os.rename(tmp, path)  # a directory: refused when path exists and is not empty
        except OSError as e:
            raise FileError(
                f"cannot create the kernel store {show(path)}: {e.strerror} (did another run "
                "create it meanwhile?)."
            ) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return zarr.open_group(path, mode="r+"), sid


def store_id(group: Any) -> str:
    """The id a store was created with (its tasks write only into that store)."""
    return str((group.attrs.get("deqrmt") or {}).get("store_id", ""))


def done_marks(group: Any, spec: KernelSpec) -> np.ndarray:
    """The ``done`` array as numpy (one bool per tile; small)."""
    return np.asarray(group["done"][...], dtype=bool)


def stored_bytes(spec: KernelSpec) -> int:
    n1, n2 = spec.shape
    return 8 * n1 * n2 * len(spec.kinds)


def path_of(out: Any) -> str:
    if not isinstance(out, str | os.PathLike):
        raise InvalidArgument(f"out must be a path (str or os.PathLike), got {show(out)}.")
    name = os.fspath(out)
    if not name or "\x00" in name or name == "-":
        raise InvalidArgument(f"out must be the path of a directory to create, got {show(name)}.")
    return str(Path(name))

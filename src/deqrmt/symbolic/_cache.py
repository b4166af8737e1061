"""A disk cache for slow symbolic results (bounded SymPy integrals, derivations).

Entries are keyed by a hash of deqrmt's own symbolic source code and of the request, so a
cache written by another version is never read.  Each file stores its key and a SHA-256 of
its payload; anything that does not match, fails to load, or is not the expected type is
discarded and rebuilt.  The cache is only an accelerator: if the directory is not writable,
results are simply recomputed.  ``DEQRMT_CACHE_DIR`` moves it; ``DEQRMT_NO_CACHE=1`` turns it off.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

__all__ = ["cached", "cache_dir", "source_fingerprint"]

T = TypeVar("T")
_MAGIC = b"deqrmt-cache-v1\n"


def cache_dir() -> Path:
    env = os.environ.get("DEQRMT_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "deqrmt"


@functools.lru_cache(maxsize=1)
def source_fingerprint() -> str:
    """Hash of the symbolic package's source: any change to the derivation invalidates."""
    from .. import __version__

    h = hashlib.sha256(__version__.encode())
    here = Path(__file__).parent
    for path in sorted(here.glob("*.py")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:20]


def cached(kind: str, request: str, build: Callable[[], T], expect: type | tuple[type, ...]) -> T:
    """``build()``, memoised on disk under (source fingerprint, kind, request)."""
    if os.environ.get("DEQRMT_NO_CACHE"):
        return build()
    key = hashlib.sha256(f"{source_fingerprint()}|{kind}|{request}".encode()).hexdigest()
    path = cache_dir() / f"{kind}-{key[:32]}.pkl"
    try:
        blob = path.read_bytes()
        head, rest = blob[: len(_MAGIC)], blob[len(_MAGIC) :]
        stored_key, digest, payload = rest.split(b"\n", 2)
        if (
            head == _MAGIC
            and stored_key.decode() == key
            and hashlib.sha256(payload).hexdigest().encode() == digest
        ):
            value = pickle.loads(payload)  # our own file, integrity-checked above
            if isinstance(value, expect):
                return value  # type: ignore[no-any-return,return-value]
    except (
        OSError,
        ValueError,
        pickle.UnpicklingError,
        EOFError,
        AttributeError,
        ImportError,
        TypeError,
    ):
        pass  # missing or corrupt: rebuild
    value = build()
    try:
        payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "wb") as fh:
            fh.write(
                _MAGIC
                + key.encode()
                + b"\n"
                + hashlib.sha256(payload).hexdigest().encode()
                + b"\n"
                + payload
            )
        os.replace(tmp, path)
    except (OSError, pickle.PicklingError, TypeError, AttributeError, RecursionError):
        pass  # unwritable cache directory: fine, we only lose speed
    return value

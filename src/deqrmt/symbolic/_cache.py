"""A disk cache for slow symbolic results (derivations, Gaussian moments), which never executes.

Entries are JSON text (:mod:`deqrmt.symbolic._serialize`): reading one rebuilds whitelisted SymPy
classes and registered dataclasses only, so a file planted in a shared ``DEQRMT_CACHE_DIR`` can
at worst be ignored; unlike pickle it cannot run code.  The key hashes the package version, the
symbolic source, the SymPy effort budgets (with the SymPy and Python versions the budgets'
outcomes depend on), the kind and the request, so an entry from another version or budget is
never read.  Anything that does not match, does not parse, or is not of the expected type is
ignored and rebuilt; the cache never raises.  Writes go to a temporary file in the same
directory and are renamed over the entry (atomic on POSIX and Windows), so concurrent processes
see either no entry or a complete one.  ``DEQRMT_CACHE_DIR`` moves the cache;
``DEQRMT_NO_CACHE=1`` turns it off.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

import sympy as sp

from ._effort import budget_fingerprint
from ._serialize import Registry, dumps, loads, registry_for

__all__ = ["cached", "cache_dir", "source_fingerprint", "entry_key"]

T = TypeVar("T")
_FORMAT = "deqrmt-cache/2"
_KIND = re.compile(r"[a-z0-9][a-z0-9-]{0,40}")
_MAX_BYTES = 64 * 2**20  # larger files are not ours: do not read them into memory


def cache_dir() -> Path:
    env = os.environ.get("DEQRMT_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "deqrmt"


@functools.lru_cache(maxsize=1)
def source_fingerprint() -> str:
    """Hash of the symbolic package's source: any change to the derivation invalidates."""
    h = hashlib.sha256()
    here = Path(__file__).parent
    for path in sorted(here.glob("*.py")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:20]


def entry_key(kind: str, request: str) -> str:
    """SHA-256 of everything an entry's value depends on besides the code path it names."""
    from .. import __version__

    parts = [_FORMAT, __version__, source_fingerprint(), budget_fingerprint(), kind, request]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def _read(path: Path, key: str, reg: Registry) -> tuple[bool, object]:
    """(True, value) for a valid entry, (False, None) for anything else; never raises."""
    try:
        with open(path, "rb") as fh:
            blob = fh.read(_MAX_BYTES + 1)
        if len(blob) > _MAX_BYTES:
            return False, None
        head, payload = blob.decode("utf-8").split("\n", 1)
        header = json.loads(head)
        if (
            type(header) is not dict
            or header.get("format") != _FORMAT
            or header.get("key") != key
            or header.get("sha256") != hashlib.sha256(payload.encode()).hexdigest()
        ):
            return False, None
        return True, loads(payload, reg)
    except FileNotFoundError:
        return False, None
    # A tampered entry may make any SymPy constructor fail in its own way (ValueError,
    # TypeError, AttributeError, RecursionError, MemoryError, …); the cache is only an
    # accelerator, so every failure means "rebuild".
    except Exception:
        return False, None


def _write(path: Path, key: str, text: str) -> None:
    digest = hashlib.sha256(text.encode()).hexdigest()
    header = json.dumps({"format": _FORMAT, "key": key, "sha256": digest})
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(header + "\n" + text)
        os.replace(tmp, path)
        tmp = None
    except OSError:
        pass  # unwritable cache directory: fine, we only lose speed
    finally:
        if tmp is not None:  # failed or interrupted (KeyboardInterrupt too): leave no debris
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def cached(
    kind: str,
    request: str,
    build: Callable[[], T],
    expect: type | tuple[type, ...],
    *,
    types: Iterable[type] = (),
    functions: Iterable[type[sp.Basic]] = (),
) -> T:
    """``build()``, memoised on disk under (versions, source, budgets, ``kind``, ``request``).

    Args:
      kind: a short lowercase name (the file name's prefix), e.g. ``"derive-deq"``.
      request: everything else the result depends on, as text.
      build: computes the value; called when no valid entry exists.
      expect: the value's type; it and the dataclasses its fields' annotations name are the
        only types an entry may rebuild.
      types: further dataclasses the value may contain (ones no annotation names).
        Keyword-only.
      functions: SymPy ``Function`` subclasses of our own that the value may contain
        (e.g. ``DualDerivative``). Keyword-only.

    A value that does not survive ``loads(dumps(v)) == v`` (a type or SymPy class outside the
    registry and whitelist) is returned but not stored; ``_serialize.dumps(v,
    registry_for(T))`` raises and says why.
    """
    if os.environ.get("DEQRMT_NO_CACHE") or not _KIND.fullmatch(kind):
        return build()
    reg = registry_for(expect, types, functions)
    key = entry_key(kind, request)
    path = cache_dir() / f"{kind}-{key[:32]}.json"
    ok, value = _read(path, key, reg)
    if ok and isinstance(value, expect):
        return value  # type: ignore[return-value]
    value = build()
    try:
        text = dumps(value, reg)
    # Not exactly representable (dumps checks the round trip), or a SymPy constructor refused
    # the rebuilt tree: the value is right, it is just not stored.
    except Exception:
        return value
    _write(path, key, text)
    return value

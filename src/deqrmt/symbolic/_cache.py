"""A disk cache for slow symbolic results (derivations, Gaussian moments): data with an owner.

Threat model.  Trusted: the installed package and the cache key.  Untrusted: every file in the
cache directory (like every sweep spec, store and design file a command reads).  A cache
directory may be shared (``DEQRMT_CACHE_DIR`` on a cluster's disk), so anyone who can write
there can plant any file; such a file must neither run code nor change a printed digit.

* Nothing read runs.  Entries are JSON text (:mod:`deqrmt.symbolic._serialize`): reading one
  rebuilds whitelisted SymPy classes and registered dataclasses only, never pickle or ``eval``;
  the printer (:mod:`deqrmt.numeric._printer`) prints no SymPy name into code, whatever a
  rebuilt expression contains.
* Nothing unauthenticated is used.  Each entry carries an HMAC-SHA256 of its body under a
  per-user key: ``DEQRMT_CACHE_KEY`` (any text of 16 characters or more; workers of a cluster
  that share results share it), else 32 random bytes in ``$XDG_CONFIG_HOME/deqrmt/cache.key``
  (``~/.config/deqrmt/cache.key``), created with mode 0600 outside the cache directory and
  refused if anyone else could read or write it.  Files are named with the key's id, so two
  keys share a directory without reading each other's entries.
* What an entry may contain is checked too: its type (and the dataclasses that type names)
  and the symbols of every expression, which must be among those the caller declares for that
  kind of entry (``symbols``, ``undefined``).

An entry that fails any check is ignored and rebuilt (and then overwritten).  A *stale* entry is
rebuilt silently: unreadable, of another format or version, keyed for another request, or
written under another key (its key id is not ours).  A *forged* entry gets one warning line on
stderr: current format, our key id and request, but a MAC that does not verify (someone without
the key wrote it, or the disk changed it); so does an entry whose MAC verifies but whose content
does not (a bug, or a key holder's doing).

The entry key hashes the package version, the symbolic source, the SymPy effort budgets (with
the SymPy and Python versions the budgets' outcomes depend on), the kind and the request.
Writes go to a temporary file in the same directory and are renamed over the entry (atomic on
POSIX and Windows).  The cache never raises.  ``DEQRMT_CACHE_DIR`` moves the cache (default
``$XDG_CACHE_HOME/deqrmt``, else ``~/.cache/deqrmt``); ``DEQRMT_NO_CACHE=1`` turns it off.
When the home directory does not exist nothing is created under it: a temporary cache and key
serve the run, and one line on stderr says so.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import functools
import hashlib
import hmac
import json
import os
import re
import secrets
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NamedTuple, TypeVar

import sympy as sp
from sympy.core.function import AppliedUndef

from .._io import open_regular
from .._text import print_stderr
from ._effort import budget_fingerprint
from ._serialize import Registry, dumps, loads, registry_for

__all__ = ["cached", "cache_dir", "cache_key", "source_fingerprint", "entry_key", "CacheKey"]

T = TypeVar("T")
_FORMAT = "deqrmt-cache/3"
_KIND = re.compile(r"[a-z0-9][a-z0-9-]{0,40}")
_MAX_BYTES = 64 * 2**20  # larger files are not ours: do not read them into memory
_MIN_KEY_TEXT = 16  # characters of DEQRMT_CACHE_KEY
_KEY_FILE = re.compile(rb"[0-9a-f]{64}\n?")
_noted: set[str] = set()


def _note(line: str) -> None:
    """Print ``line`` on stderr once per process."""
    if line not in _noted:
        _noted.add(line)
        print_stderr(line)


# --- where: the directory and the key --------------------------------------------------------


def _home() -> Path | None:
    """The home directory if it exists (``HOME=/nonexistent`` on build machines: None)."""
    try:
        home = Path.home()
    except (RuntimeError, KeyError, OSError):
        return None
    return home if home.is_dir() else None


@functools.lru_cache(maxsize=1)
def _temporary_dir() -> Path:
    path = Path(tempfile.mkdtemp(prefix="deqrmt-cache-"))
    atexit.register(shutil.rmtree, path, True)
    return path


def _no_home_note() -> None:
    home = os.environ.get("HOME", "")
    _note(
        f"deqrmt: note: the home directory {home!r} does not exist, so this run uses a "
        "temporary cache; set DEQRMT_CACHE_DIR and DEQRMT_CACHE_KEY to keep results."
    )


def cache_dir() -> Path:
    """``DEQRMT_CACHE_DIR``, else ``$XDG_CACHE_HOME/deqrmt``, else ``~/.cache/deqrmt``; a
    temporary directory (removed at exit) when none of these can be used."""
    env = os.environ.get("DEQRMT_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "deqrmt"
    home = _home()
    if home is None:
        _no_home_note()
        return _temporary_dir()
    return home / ".cache" / "deqrmt"


class CacheKey(NamedTuple):
    """The secret entries are authenticated under, and its public id (in file names).

    A temporary key (this process only) goes with a temporary directory: entries no later run
    can use are not left in a lasting one."""

    secret: bytes
    key_id: str
    temporary: bool = False


def _make_key(secret: bytes, temporary: bool = False) -> CacheKey:
    key_id = hashlib.sha256(b"deqrmt cache key id\0" + secret).hexdigest()[:16]
    return CacheKey(secret, key_id, temporary)


@functools.lru_cache(maxsize=1)
def _temporary_key() -> CacheKey:
    return _make_key(secrets.token_bytes(32), temporary=True)


def _key_path() -> Path | None:
    xdg = os.environ.get("XDG_CONFIG_HOME")
    if xdg and os.path.isabs(xdg):
        base = Path(xdg)
        return base / "deqrmt" / "cache.key" if base.is_dir() else None
    home = _home()
    return None if home is None else home / ".config" / "deqrmt" / "cache.key"


def _read_key_file(path: Path) -> bytes:
    """The key in ``path``; FileNotFoundError if absent, ValueError if unusable (and why)."""
    # O_NONBLOCK: a FIFO planted as the key must not hang every command at the open
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags | getattr(os, "O_NOCTTY", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError("is not a regular file")
        if os.name == "posix":  # (Windows has ACLs instead of these bits)
            if st.st_uid != os.getuid():
                raise ValueError("belongs to another user")
            if st.st_mode & 0o077:
                raise ValueError("can be read or written by others (chmod 600 it)")
        blob = os.read(fd, 200)
    finally:
        os.close(fd)
    if not _KEY_FILE.fullmatch(blob):
        raise ValueError("is not 64 hex digits (delete it and a new key is made)")
    return bytes.fromhex(blob[:64].decode())


def _create_key_file(path: Path) -> None:
    """Write a new random key to ``path`` (mode 0600) unless another process already did."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".cache.key.", suffix=".tmp")  # 0600
    try:
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(secrets.token_hex(32) + "\n")
        # link(), not rename(): the first process to finish wins and nobody overwrites a key
        # that entries were already written under.
        with contextlib.suppress(FileExistsError):
            os.link(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


@functools.lru_cache(maxsize=8)
def _key_for(env_text: str | None, path: Path | None) -> CacheKey | None:
    if env_text:
        if len(env_text) < _MIN_KEY_TEXT:
            _note(
                f"deqrmt: note: DEQRMT_CACHE_KEY is shorter than {_MIN_KEY_TEXT} characters, so "
                "the cache is off; use e.g. the output of `openssl rand -hex 32`."
            )
            return None
        text = env_text.encode("utf-8", "surrogateescape")
        return _make_key(hashlib.sha256(b"deqrmt cache key\0" + text).digest())
    if path is None:
        if os.environ.get("XDG_CONFIG_HOME"):
            _note(
                "deqrmt: note: XDG_CONFIG_HOME is not an existing absolute directory, so this "
                "run uses a temporary cache and key; set DEQRMT_CACHE_KEY to keep results."
            )
        else:
            _no_home_note()
        return _temporary_key()
    try:
        try:
            return _make_key(_read_key_file(path))
        except FileNotFoundError:
            _create_key_file(path)
            return _make_key(_read_key_file(path))
    except (OSError, ValueError) as e:
        why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        _note(
            f"deqrmt: note: the cache key {str(path)!r} cannot be used ({why}), so this run "
            "uses a temporary cache and key."
        )
        return _temporary_key()


def cache_key() -> CacheKey | None:
    """The key entries are authenticated under (None: the cache is off)."""
    return _key_for(os.environ.get("DEQRMT_CACHE_KEY") or None, _key_path())


# --- what: the entry key and its checks ------------------------------------------------------


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
    from .._version import __version__

    parts = [_FORMAT, __version__, source_fingerprint(), budget_fingerprint(), kind, request]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def _mac(key: CacheKey, entry: str, payload: bytes) -> str:
    message = b"\0".join([_FORMAT.encode(), key.key_id.encode(), entry.encode(), payload])
    return hmac.new(key.secret, message, hashlib.sha256).hexdigest()


def _contents_ok(value: object, symbols: frozenset[sp.Basic], undefined: frozenset[str]) -> bool:
    """Every symbol of every expression in ``value`` is declared, every undefined function too."""
    if isinstance(value, sp.Basic):
        if not value.atoms(sp.Symbol) <= symbols:
            return False
        return all(type(f).__name__ in undefined for f in value.atoms(AppliedUndef))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        items: Iterable[object] = (getattr(value, f.name) for f in dataclasses.fields(value))
    elif isinstance(value, dict):
        items = [*value.keys(), *value.values()]
    elif isinstance(value, (tuple, list)):
        items = value
    else:
        return True
    return all(_contents_ok(v, symbols, undefined) for v in items)


def _read(path: Path, key: CacheKey, entry: str, reg: Registry) -> tuple[bool, object]:
    """(True, value) for an authenticated entry, (False, None) for anything else (a forged
    one with a warning line); never raises."""
    try:
        # never blocks (a FIFO planted as an entry), refuses a device or an oversized file
        with open_regular(path, f"the cache entry {str(path)!r}", _MAX_BYTES) as fh:
            blob = fh.read(_MAX_BYTES + 1)
        if len(blob) > _MAX_BYTES:
            return False, None
        head, payload = blob.split(b"\n", 1)
        header = json.loads(head)
        if (
            type(header) is not dict
            or header.get("format") != _FORMAT
            or header.get("key_id") != key.key_id
            or header.get("key") != entry
        ):
            return False, None  # stale: another version, request or key
        mac = header.get("mac")
        if not isinstance(mac, str) or not hmac.compare_digest(mac, _mac(key, entry, payload)):
            _warn(path, "its MAC does not verify (forged, or changed on disk)")
            return False, None
    except Exception:  # missing (FileError), unreadable or not ours at all: stale
        return False, None
    try:
        return True, loads(payload.decode("utf-8"), reg)
    # Authenticated, yet a SymPy constructor fails in its own way (ValueError, TypeError,
    # AttributeError, RecursionError, MemoryError, …): the cache is only an accelerator.
    except Exception:
        _warn(path, _INVALID)
        return False, None


_INVALID = "its MAC verifies but its content is not what this kind of entry holds"


def _warn(path: Path, why: str) -> None:
    _note(f"deqrmt: warning: ignored the cache entry {str(path)!r}: {why}; rebuilt it.")


def _write(path: Path, key: CacheKey, entry: str, text: str) -> None:
    payload = text.encode("utf-8")
    header = json.dumps(
        {"format": _FORMAT, "key_id": key.key_id, "key": entry, "mac": _mac(key, entry, payload)}
    )
    tmp: str | None = None
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(header.encode("utf-8") + b"\n" + payload)
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
    symbols: Iterable[sp.Symbol],
    undefined: Iterable[str] = (),
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
      symbols: every symbol an expression of this kind of entry may contain (with its
        assumptions); an entry with any other is rebuilt. Keyword-only.
      undefined: names of undefined functions (``sp.Function("g")``) it may contain.
        Keyword-only.
      types: further dataclasses the value may contain (ones no annotation names).
        Keyword-only.
      functions: SymPy ``Function`` subclasses of our own that the value may contain
        (e.g. ``DualDerivative``). Keyword-only.

    A value that does not survive ``loads(dumps(v)) == v`` (a type or SymPy class outside the
    registry and whitelist), or that holds a symbol outside ``symbols``, is returned but not
    stored.
    """
    if os.environ.get("DEQRMT_NO_CACHE") or not _KIND.fullmatch(kind):
        return build()
    key = cache_key()
    if key is None:
        return build()
    allowed = frozenset(symbols)
    names = frozenset(undefined)
    reg = registry_for(expect, types, functions)
    entry = entry_key(kind, request)
    directory = _temporary_dir() if key.temporary else cache_dir()
    path = directory / f"{kind}-{key.key_id[:8]}-{entry[:32]}.json"
    ok, value = _read(path, key, entry, reg)
    if ok:
        if isinstance(value, expect) and _contents_ok(value, allowed, names):
            return value  # type: ignore[return-value]
        _warn(path, _INVALID)
    value = build()
    try:
        if not _contents_ok(value, allowed, names):
            return value  # a symbol the caller did not declare: a bug there, not stored
        text = dumps(value, reg)
    # Not exactly representable (dumps checks the round trip), or a SymPy constructor refused
    # the rebuilt tree: the value is right, it is just not stored.
    except Exception:
        return value
    _write(path, key, entry, text)
    return value

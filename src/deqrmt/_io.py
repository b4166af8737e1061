"""Files in and out: a named output written atomically, never through a link, never over a
device or a file; an input file opened without blocking and read within a size limit.

:func:`write_output` is the only way deqrmt writes a file the user names (``latex -o``,
``codegen -o``, ``--plot``).  The rules:

* ``-`` means standard output;
* an existing path that is not a regular file (a directory, a device such as ``/dev/full``, a
  FIFO, a socket) or that is a symbolic link is refused, not replaced: replacing a link would
  leave its target stale, and replacing a device as root would destroy it;
* an existing regular file is replaced only with ``force=True`` (``--force``);
* the bytes go to a temporary file in the same directory, are flushed to disk (``fsync``) and
  renamed over the path (``os.replace``), so a reader sees the old file or the new one, never
  half of one; the temporary file is removed on any failure, Ctrl-C included.

Every refusal or failure is a :class:`deqrmt.FileError` whose message names the path and the
remedy; nothing has been changed when it is raised.

Every command checks its targets before it starts working (:func:`check_output` for a file,
:func:`check_directory` for a ``--plot`` directory): the rules above, and a directory in which
a file can actually be created (a probe file is made and removed; permission bits alone do not
say so for root, a read-only mount or /proc).

:func:`open_regular` is the only way deqrmt opens a file it reads (a design, a mixture, a cache
entry, a data set): ``O_NONBLOCK`` so that a FIFO without a writer cannot hang the open, then
``fstat`` on the open descriptor (no race with a swapped path): a regular file, of at most the
reader's limit of bytes, else a :class:`deqrmt.FileError` (a FIFO, a device such as
``/dev/zero``, a directory) or :class:`deqrmt.BudgetExceeded` (too large) at once.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable
from typing import Any, BinaryIO

from ._errors import BudgetExceeded, FileError, InvalidArgument, MissingExtra

__all__ = [
    "STDOUT",
    "check_directory",
    "check_output",
    "open_regular",
    "pandas",
    "read_limited",
    "write_output",
    "write_directory",
]

#: The path that means "standard output".
STDOUT = "-"

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def _refuse_existing(path: str, *, force: bool) -> os.stat_result | None:
    """The ``lstat`` of ``path`` if it may be replaced, None if it does not exist; else raise."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise FileError(f"cannot write {path!r}: {e.strerror}.") from None
    if stat.S_ISLNK(st.st_mode):
        raise FileError(
            f"refusing to write {path!r}: it is a symbolic link (deqrmt does not replace links); "
            "give the link's target path, or remove the link first."
        )
    if not stat.S_ISREG(st.st_mode):
        raise FileError(
            f"refusing to write {path!r}: it is {_kind(st.st_mode)}, not a regular file; "
            "give the path of a file to create."
        )
    if not force:
        raise FileError(
            f"refusing to overwrite {path!r}: it exists; pass force=True to replace it."
        )
    return st


def check_output(path: str | os.PathLike[str], *, force: bool = False) -> None:
    """Raise :class:`FileError` now if :func:`write_output` would refuse ``path`` (so that a
    long computation is not wasted on an output that cannot be written): a link, a device, a
    FIFO, a directory, a file without ``force``, or a directory that is missing or in which no
    file can be created."""
    name = os.fspath(path)
    if name != STDOUT:
        if not name or "\x00" in name:
            raise FileError(f"invalid output path {name!r}.")
        _refuse_existing(name, force=force)
        directory = os.path.dirname(os.path.abspath(name))
        if not os.path.isdir(directory):
            raise FileError(f"cannot write {name!r}: the directory {directory!r} does not exist.")
        _probe(directory, name)


def check_directory(directory: str | os.PathLike[str]) -> None:
    """Raise :class:`FileError` unless ``directory`` is a directory files can be created in, or
    does not exist yet and can be created (its nearest existing ancestor is such a directory)."""
    target = os.fspath(directory)
    if target == STDOUT or not target or "\x00" in target:
        raise FileError(f"a directory is needed here, not {target!r}.")
    if os.path.lexists(target):
        if not os.path.isdir(target):
            raise FileError(f"refusing to use {target!r} as the output directory: not a directory.")
        _probe(target, target)
        return
    ancestor = os.path.dirname(os.path.abspath(target))
    while not os.path.lexists(ancestor):
        ancestor = os.path.dirname(ancestor)
    if not os.path.isdir(ancestor):
        raise FileError(
            f"cannot create the directory {target!r}: {ancestor!r} is not a directory; give "
            "another directory."
        )
    _probe(ancestor, target)


def _probe(directory: str, name: str) -> None:
    """Raise :class:`FileError` unless a file can be created in ``directory``: one is made and
    removed at once.  Why not ``os.access``: it says yes to root on a read-only directory of
    /proc or sysfs, and permission bits are not the only obstacle (read-only mounts, quotas)."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=".deqrmt-probe.", dir=directory)
    except OSError as e:
        raise FileError(
            f"cannot write {name!r}: {e.strerror} (in {directory!r}); give a path in a "
            "directory you can write to."
        ) from None
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(tmp)


def write_directory(
    directory: str | os.PathLike[str],
    produce: Callable[[str], Iterable[str | os.PathLike[str]]],
    *,
    force: bool = False,
) -> list[str]:
    """Let ``produce(tmpdir)`` write files into a private temporary directory, then move each
    into ``directory`` (created if missing) with :func:`write_output`'s rules.

    For writers that only take a path (matplotlib's ``savefig``): no file of theirs ever lands
    on a link, a device or an existing file.  Every target is checked before any is written.
    """
    target = os.fspath(directory)
    check_directory(target)
    with tempfile.TemporaryDirectory(prefix="deqrmt-") as tmp:
        made = [os.fspath(p) for p in produce(tmp)]
        try:
            os.makedirs(target, exist_ok=True)
        except OSError as e:
            raise FileError(f"cannot create the directory {target!r}: {e.strerror}.") from None
        pairs = [(p, os.path.join(target, os.path.basename(p))) for p in made]
        for _, dest in pairs:
            _refuse_existing(dest, force=force)
        out = []
        for src, dest in pairs:
            with open(src, "rb") as fh:
                out.append(write_output(dest, fh.read(), force=force))
    return out


def _to_stdout(data: bytes | str) -> None:
    try:
        _write_stdout(data)
    except BrokenPipeError:
        raise  # the reader left: the command line exits quietly
    except FileError:
        raise
    except OSError as e:
        raise FileError(f"cannot write to standard output: {e.strerror or e}.") from None


def _write_stdout(data: bytes | str) -> None:
    if sys.stdout is None:  # the process started with standard output closed (>&-)
        from ._text import STDOUT_CLOSED

        raise FileError(STDOUT_CLOSED)
    if isinstance(data, str):
        sys.stdout.write(data)
        sys.stdout.flush()
        return
    sys.stdout.flush()
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:
        raise FileError("cannot write binary output to this standard output; give a file path.")
    buffer.write(data)
    buffer.flush()


def _new_file_mode() -> int:
    """0o666 minus the umask, what ``open(path, "w")`` would have created."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_output(path: str | os.PathLike[str], data: bytes | str, *, force: bool = False) -> str:
    """Write ``data`` (text is encoded as UTF-8) to ``path`` atomically; ``-`` is stdout.

    Args:
      path: the file to create or, with ``force``, to replace; ``"-"`` writes to stdout.
      data: the whole content.
      force: replace an existing regular file (never a link, directory or device).

    Returns:
      The path written (``"-"`` for stdout).

    Raises:
      FileError: the path is refused or cannot be written; nothing was changed.

    Example:
      >>> import os, tempfile
      >>> p = os.path.join(tempfile.mkdtemp(), "out.txt")
      >>> write_output(p, "hello\\n") == p
      True
    """
    name = os.fspath(path)
    if name == STDOUT:
        _to_stdout(data)
        return STDOUT
    if not name or "\x00" in name:
        raise FileError(f"invalid output path {name!r}.")
    blob = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    old = _refuse_existing(name, force=force)
    directory = os.path.dirname(os.path.abspath(name))
    base = os.path.basename(name) or "output"
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{base}.", suffix=".tmp", dir=directory)
    except OSError as e:
        raise FileError(f"cannot write {name!r}: {e.strerror} (in {directory!r}).") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(blob)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, stat.S_IMODE(old.st_mode) if old is not None else _new_file_mode())
        # The path may have changed since the check (another process); check again.
        if _refuse_existing(name, force=force) is None:
            try:
                os.link(tmp, name)  # atomic and never clobbers: fails if the name appeared
            except FileExistsError:
                raise FileError(
                    f"refusing to overwrite {name!r}: it appeared while writing; pass force=True "
                    "to replace it."
                ) from None
            except OSError:
                os.replace(tmp, name)  # a file system without hard links
            else:
                os.unlink(tmp)
        else:
            os.replace(tmp, name)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(e, OSError) and not isinstance(e, FileError):
            raise FileError(f"cannot write {name!r}: {e.strerror or e}.") from None
        raise
    return name


def pandas(what: str) -> Any:
    """The pandas module, or :class:`MissingExtra` saying how to install it (no extra brings
    pandas: a table export is optional, and ``to_dict(float)`` needs nothing)."""
    try:
        import pandas as pd
    except ImportError:
        raise MissingExtra(
            f"{what} needs pandas, which is not installed: pip install pandas "
            "(or use to_dict(float), which needs nothing)."
        ) from None
    return pd


def open_regular(
    path: str | os.PathLike[str],
    name: str,
    limit: int | None,
    *,
    follow: bool = True,
    error: type[FileError] | type[InvalidArgument] = FileError,
) -> BinaryIO:
    """The regular file at ``path``, open for binary reading, checked before any read.

    Args:
      path: the file.
      name: how messages call it, already printable (``"the design 'd.json'"``).
      limit: its largest accepted size in bytes (None: any); a reader still reads at most
        ``limit + 1`` bytes, since a file can grow after the check.
      follow: False refuses a symbolic link as the last component (``O_NOFOLLOW``).
      error: the class raised for a file that cannot be read (a reader's own, such as
        :class:`~deqrmt.SpecError`); default :class:`~deqrmt.FileError`.

    Raises:
      FileError: missing, unreadable, or not a regular file (a FIFO, device, directory,
        socket; a link when ``follow`` is False); ``error`` if given.
      BudgetExceeded: larger than ``limit``.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        why = "it is a symbolic link" if not follow and os.path.islink(path) else e.strerror
        raise error(f"cannot read {name}: {why}.") from None
    except ValueError:  # an embedded NUL
        raise error(f"cannot read {name}: invalid path.") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise error(
                f"cannot read {name}: it is {_kind(st.st_mode)}, not a regular file; give the "
                "path of a file."
            )
        if limit is not None and st.st_size > limit:
            raise BudgetExceeded(
                f"{name} is {st.st_size} bytes, more than the {limit} this reader accepts "
                "(docs/limits.md)."
            )
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_limited(path: str, name: str, limit: int) -> bytes:
    """At most ``limit + 1`` bytes of the regular file at ``path`` (so a caller sees that it is
    larger than ``limit``), opened with :func:`open_regular`'s checks: a FIFO, a device or a
    directory is a :class:`FileError` at once instead of a hang.  ``name`` is how messages call
    the file, already made printable (``"the design 'd.json'"``).
    """
    with open_regular(path, name, None) as fh:
        try:
            return fh.read(limit + 1)
        except OSError as e:
            raise FileError(f"cannot read {name}: {e.strerror}.") from None

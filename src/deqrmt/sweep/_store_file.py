"""A store's file, opened safely: a regular file, never through a link, nothing planted beside it.

A store is untrusted input, and SQLite follows whatever the path names: a symbolic link would
make it write to the link's target (or create a file elsewhere), a FIFO would block it, and a
link planted as its journal would be written through too.  Each check here refuses with a
:class:`~deqrmt.StoreError` that names the store (its shown path) and the fix.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import NoReturn

from .._errors import StoreError
from ._limits import show
from ._store_rows import ANOTHER_STORE
from ._store_schema import SIDE_FILES

__all__ = ["check_companions", "check_unchanged", "create", "existing", "file_kind", "refuse"]

#: The identity of a file: (device, inode).
Ident = tuple[int, int]


def refuse(name: str, why: str, fix: str = f"{ANOTHER_STORE}, or move this file away") -> NoReturn:
    """Raise the one-line refusal of the store ``name``: ``store NAME WHY; FIX.``"""
    raise StoreError(f"store {name} {why}; {fix}.")


def file_kind(mode: int) -> str:
    for test, what in (
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return what
    return "not a regular file"


def existing(path: Path, name: str) -> Ident | None:
    """(device, inode) of the store if it exists and is a regular file; None if absent."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise StoreError(
            f"cannot open the store {name}: {getattr(e, 'strerror', None) or e}."
        ) from None
    if stat.S_ISLNK(st.st_mode):
        refuse(
            name,
            "is a symbolic link (a store is never opened through a link: writing it would "
            "change the link's target, or create a file elsewhere)",
            "give the path of the file itself, or a new path",
        )
    if not stat.S_ISREG(st.st_mode):
        refuse(name, f"is {file_kind(st.st_mode)}, not a regular file", "give the path of a file")
    return st.st_dev, st.st_ino


def create(path: Path, name: str) -> Ident:
    """Create an empty store file; never through a link, never over anything."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0), 0o666)
    except FileExistsError:  # appeared meanwhile (or a dangling link): check it as it is
        ident = existing(path, name)
        if ident is None:
            refuse(name, "changed while being opened", "try again")
        return ident
    except (OSError, ValueError) as e:
        raise StoreError(
            f"cannot create the store {name}: {getattr(e, 'strerror', None) or e}."
        ) from None
    try:
        st = os.fstat(fd)
    finally:
        os.close(fd)
    return st.st_dev, st.st_ino


def check_companions(path: Path, name: str) -> None:
    """No companion file (``PATH-journal``, …) is anything but a regular file: SQLite would
    write through a planted link there too."""
    for suffix in SIDE_FILES:
        side = f"{path}{suffix}"
        with contextlib.suppress(OSError):
            st = os.lstat(side)
            if not stat.S_ISREG(st.st_mode):
                refuse(
                    name,
                    f"has a companion {show(os.path.basename(side))} that is "
                    f"{file_kind(st.st_mode)}",
                    "remove it",
                )


def check_unchanged(path: Path, name: str, ident: Ident) -> None:
    """The path still names the regular file ``ident`` that was checked before connecting."""
    try:
        now: os.stat_result | None = os.lstat(path)
    except OSError:
        now = None
    if now is None or not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != ident:
        refuse(name, "changed while being opened", "try again")

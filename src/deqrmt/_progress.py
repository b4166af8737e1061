"""Progress of long work, as people expect it: one home for every bar (tqdm, imported lazily).

A bar shows done/total, the rate and the ETA.  It is drawn only where a person watches:

* ``enabled=None`` (the CLI's default): on when stderr is a terminal or the code runs in a
  Jupyter kernel, off otherwise (stderr to a file or a pipe, CI logs) — so ``--json`` output and
  redirected stderr stay byte for byte what they were;
* ``enabled=False`` (``--quiet``): off;  ``enabled=True`` (the API's ``progress=True``): on.

The object a :func:`progress_bar` yields is also the ``progress(done, total)`` callback the
engines take (:func:`deqrmt.kernels`), so an engine never imports tqdm itself.

Example:
  >>> with progress_bar(3, "tiles", enabled=False) as bar:
  ...     for i in range(3):
  ...         bar.advance()
  >>> bar.done
  3
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["Progress", "progress_bar", "progress_enabled"]


def _in_notebook() -> bool:
    """True inside a Jupyter kernel (where stderr is no terminal but a person watches)."""
    shell = sys.modules.get("IPython")
    if shell is None or "ipykernel" not in sys.modules:
        return False
    try:
        ip = shell.get_ipython()  # type: ignore[attr-defined]
    except Exception:
        return False
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"


def progress_enabled(enabled: bool | None = None) -> bool:
    """Whether to draw a bar: ``enabled`` when given, else stderr is a terminal (or a notebook);
    never when ``DEQRMT_NO_PROGRESS`` is set to a non-empty value."""
    if os.environ.get("DEQRMT_NO_PROGRESS"):
        return False
    if enabled is not None:
        return bool(enabled)
    try:
        tty = sys.stderr is not None and sys.stderr.isatty()
    except (AttributeError, ValueError, OSError):
        tty = False
    return tty or _in_notebook()


class Progress:
    """A running count (``done`` of ``total``), drawn by tqdm when enabled.

    Thread-safe: engines call it from their worker threads.  Also callable as
    ``progress(done, total)``, the engines' callback convention.
    """

    def __init__(self, bar: Any, total: int) -> None:
        self._bar = bar
        self._lock = threading.Lock()
        self.total = int(total)
        self.done = 0

    def set(self, done: int, total: int | None = None) -> None:
        """Move the count to ``done`` (and the total to ``total`` when given)."""
        with self._lock:
            if total is not None and int(total) != self.total:
                self.total = int(total)
                if self._bar is not None:
                    self._bar.total = self.total
                    self._bar.refresh()
            step = int(done) - self.done
            self.done = int(done)
            if self._bar is not None and step:
                self._bar.update(step)

    def advance(self, k: int = 1) -> None:
        """Count ``k`` more units done."""
        with self._lock:
            self.done += int(k)
            if self._bar is not None:
                self._bar.update(int(k))

    def note(self, text: str) -> None:
        """A short status after the bar (e.g. the current setting); plain text only."""
        if self._bar is not None:
            self._bar.set_postfix_str(text[:60], refresh=False)

    def write(self, line: str) -> None:
        """A line of status above the bar (which is redrawn below it); nothing when no bar is
        drawn, so a caller need not know whether one is."""
        if self._bar is not None:
            with self._lock:
                self._bar.write(line, file=sys.stderr)

    @property
    def drawn(self) -> bool:
        """Whether a bar is drawn (stderr a terminal or a notebook, and not switched off)."""
        return self._bar is not None

    def __call__(self, done: int, total: int | None = None) -> None:
        self.set(done, total)


def _have_tqdm() -> bool:
    # tqdm comes with the validate and sweep extras; a core install shows no bar, silently
    try:
        import tqdm  # noqa: F401
    except ImportError:
        return False
    return True


@contextlib.contextmanager
def progress_bar(
    total: int, desc: str, *, unit: str = "it", enabled: bool | None = None
) -> Iterator[Progress]:
    """A :class:`Progress` over ``total`` units, drawn on stderr when :func:`progress_enabled`.

    The bar is closed on the way out, also on an exception or Ctrl-C (the line is left as it
    stood, so a person sees how far the work got).
    """
    bar = None
    if progress_enabled(enabled) and _have_tqdm():
        if _in_notebook():
            try:
                from tqdm.notebook import tqdm as tqdm_cls
            except ImportError:  # no ipywidgets: the text bar, which notebooks show too
                from tqdm import tqdm as tqdm_cls
        else:
            from tqdm import tqdm as tqdm_cls
        try:
            bar = tqdm_cls(
                total=int(total), desc=desc, unit=unit, file=sys.stderr, dynamic_ncols=True,
                leave=True, smoothing=0.1,
            )  # fmt: skip
        except Exception:  # a notebook bar without its widgets: fall back to text
            from tqdm import tqdm as text_tqdm

            bar = text_tqdm(total=int(total), desc=desc, unit=unit, file=sys.stderr)
    progress = Progress(bar, total)
    try:
        yield progress
    finally:
        if bar is not None:
            with contextlib.suppress(Exception):
                bar.close()

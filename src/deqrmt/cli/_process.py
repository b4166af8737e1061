"""The ``deqrmt`` process: Ctrl-C at any moment, closed standard streams, the way out.

:func:`deqrmt.cli.main` calls :func:`take_over` as its first statement when it runs as the
console script (``argv`` not given), before it imports anything heavy (argparse, SymPy,
flint, torch); this module imports only ``os``, ``signal``, ``atexit`` and what ``deqrmt``
has loaded already.  From then on a SIGINT gives exactly one line ``deqrmt: interrupted`` and
exit status 130, whenever it arrives:

* while the command works, it raises :class:`KeyboardInterrupt` once, so that ``finally``
  blocks remove temporary files, and ``main`` prints the line (a second Ctrl-C during that
  clean-up exits at once);
* before the work starts and after it ended (the error line, the flush, the exit handlers of
  interpreter shutdown) nothing is left to clean up: the handler prints the line, unless it
  was printed already, and ends the process with ``os._exit(130)``;
* once the exit handlers have run (the last moments of interpreter shutdown), SIGINT is
  ignored: the output is complete and the exit status is the command's own.

What no code of ours can handle is the interpreter's start-up before ``main`` runs (30–40 ms
on an idle 2-core machine, more under load: the loader, ``site``, the console script's own
``import re``, ``deqrmt/__init__``): a SIGINT there is Python's, a death by the signal
(shells report it as 130 too) or a traceback of that import.  A SIGINT that the parent held
blocked until then is taken here: :func:`take_over` unblocks SIGINT after installing the
handler.  An inherited "ignore SIGINT" (a background job) is respected.

Closed standard streams: a descriptor 0, 1 or 2 that is closed at start is pointed at
``/dev/null``, so that no file deqrmt opens later gets its number (and no child process
writes into it); ``sys.stdout`` stays ``None``, which :class:`deqrmt._text.SafeStream` turns
into the one-line ``FileError`` "standard output is closed" at the first write.

Test-only: ``DEQRMT_TEST_HOLD`` with ``DEQRMT_TEST_READY_FILE`` (see :func:`test_hold`) make
the process stop at a named moment, say so in a file and wait there, so that a test can send
a signal exactly there instead of guessing from CPU time.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import FrameType

__all__ = [
    "INTERRUPTED_LINE",
    "announce_interrupt",
    "finished",
    "interrupt_raised",
    "mark_announced",
    "take_over",
    "test_hold",
    "working",
]

INTERRUPTED_LINE = "deqrmt: interrupted"
_STATUS = 130

# The phases of the process: before the work (nothing to clean up), during it (raise, so that
# finally blocks run), after it (nothing to clean up: exit at once).
_START, _WORK, _EXIT = "start", "work", "exit"


class _State:
    active = False  # take_over() ran: this process is the console script
    phase = _START
    raised = False  # a KeyboardInterrupt was raised in this process
    announced = False  # the line was printed


def _announce() -> None:
    if _State.announced:
        return
    _State.announced = True
    with contextlib.suppress(OSError):  # stderr is gone: nothing more can be said
        os.write(2, (INTERRUPTED_LINE + "\n").encode())


def _exit_now() -> None:
    _announce()
    os._exit(_STATUS)


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    if _State.phase == _WORK and not _State.raised:
        _State.raised = True
        raise KeyboardInterrupt
    _exit_now()


def _last_exit_handler() -> None:
    # Registered first, so it runs after every other exit handler: from here on the interpreter
    # only frees memory, and restores SIG_DFL for a Python-level handler (a SIGINT would then
    # kill the process silently).  Nothing is left that an interrupt could change.
    with contextlib.suppress(ValueError, OSError):
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _occupy_closed_descriptors() -> None:
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            try:
                null = os.open(os.devnull, os.O_RDWR)
            except OSError:
                return
            if null != fd:
                os.dup2(null, fd)
                os.close(null)


def take_over() -> bool:
    """Install the SIGINT handler for this process (the console script only); False where
    SIGINT is ignored by inheritance or this is not the main thread."""
    try:
        if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
            return False
        signal.signal(signal.SIGINT, _on_sigint)
    except ValueError:  # not the main thread: an embedding program owns the signals
        return False
    _State.active = True
    _State.phase = _START
    atexit.register(_last_exit_handler)
    _occupy_closed_descriptors()
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # a held Ctrl-C lands now
    return True


def working() -> None:
    """The command starts: an interrupt now raises :class:`KeyboardInterrupt`."""
    if _State.active:
        _State.phase = _WORK


def finished() -> None:
    """The command ended (or is reporting how it ended): an interrupt now exits at once."""
    if _State.active:
        _State.phase = _EXIT


def interrupt_raised() -> bool:
    """Whether this process raised a KeyboardInterrupt for a SIGINT (whatever a library has
    made of it since).  Always False outside the console script."""
    return _State.active and _State.raised


def announce_interrupt(fallback: Callable[[str], None]) -> None:
    """Print ``deqrmt: interrupted``: once, straight to file descriptor 2, in the console
    script; through ``fallback`` (``print_stderr``) in a library call."""
    if _State.active:
        _announce()
    else:
        fallback(INTERRUPTED_LINE)


def mark_announced() -> None:
    """The command printed its own interrupted line: a later interrupt adds none."""
    _State.announced = True


# --- test-only: stop at a named moment, say so, and wait -----------------------------------------

#: Where DEQRMT_TEST_HOLD can stop: ``main`` (the work is about to start), ``import:MODULE``
#: (when MODULE's import begins), ``call:QUALNAME`` (when a Python function of that qualified
#: name is entered, e.g. an integrand that flint calls back), ``exit`` (an exit handler, during
#: interpreter shutdown after the output was flushed).
HOLD_POINTS = ("main", "import:", "call:", "exit")

_HOLD_SECONDS = 120.0


def _hold(where: str, path: str) -> None:
    import time

    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(where + "\n")
    os.replace(tmp, path)  # the test sees the whole name or nothing
    deadline = time.monotonic() + _HOLD_SECONDS
    while os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.01)  # a signal interrupts the sleep; the handler runs here


class _ImportHold:
    """A meta-path finder that holds when ``name`` is about to be imported (finds nothing)."""

    def __init__(self, name: str, path: str) -> None:
        self.name, self.path = name, path

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        if fullname == self.name:
            sys.meta_path.remove(self)
            _hold(f"import:{fullname}", self.path)
        return None


def test_hold(where: str) -> None:
    """Test-only readiness hook.  With ``DEQRMT_TEST_HOLD`` = ``where`` (or, for ``where`` =
    ``"setup"``, one of the points set up in advance: ``import:``, ``call:``, ``exit``) and
    ``DEQRMT_TEST_READY_FILE`` = PATH, write the hold point's name to PATH and wait while PATH
    exists (up to 120 s), so that a signal lands exactly there; deleting PATH lets the process
    go on.  Does nothing when the variables are unset."""
    spec = os.environ.get("DEQRMT_TEST_HOLD", "")
    path = os.environ.get("DEQRMT_TEST_READY_FILE", "")
    if not spec or not path:
        return
    if where == "main" and spec == "main":
        _hold("main", path)
    elif where != "setup":
        return
    elif spec.startswith("import:"):
        sys.meta_path.insert(0, _ImportHold(spec.partition(":")[2], path))
    elif spec.startswith("call:"):
        qualname = spec.partition(":")[2]

        # A profile function runs with tracing off (the interpreter's rule), so coverage
        # cannot see its lines; the "call:" holds of tests/test_process.py exercise it.
        def profile(frame: FrameType, event: str, arg: Any) -> None:  # pragma: no cover
            if event == "call" and frame.f_code.co_qualname == qualname:
                sys.setprofile(None)
                _hold(spec, path)

        sys.setprofile(profile)
    elif spec == "exit":
        atexit.register(_hold, "exit", path)  # runs before _last_exit_handler (LIFO)

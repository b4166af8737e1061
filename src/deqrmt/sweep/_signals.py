"""Ctrl-C during a sweep: the steps that must not be cut in half, and the test suite's hook.

A SIGINT normally raises :class:`KeyboardInterrupt` wherever the main thread is.  A few steps
of a sweep must finish once begun, or they leave something behind: a store transaction between
``BEGIN`` and ``COMMIT``, the spawn of the cluster's process, the connect and the close of the
Dask client and of the embedded cluster.  :func:`deferred_interrupts` runs such a step with
SIGINT *recorded*, then delivers it (``KeyboardInterrupt``) as soon as the step is done: the
interrupt is never lost, only delayed by a bounded step.

:func:`phase` is a hook for the test suite only: with ``DEQRMT_TEST_PHASES=FILE`` in the
environment, the driver appends the name of each step (and the Unix time) to FILE as it reaches it, so that a test
can send SIGINT at a known moment instead of after a guessed delay; ``DEQRMT_TEST_HOLD`` names
steps (comma-separated) at which the driver then lingers 0.5 s, so that the signal lands inside
that step however loaded the machine is.  Without the variables it does nothing.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

__all__ = ["Deferred", "deferred_interrupts", "phase"]

PHASES_ENV = "DEQRMT_TEST_PHASES"
HOLD_ENV = "DEQRMT_TEST_HOLD"
HOLD_SECONDS = 0.5


class Deferred:
    """What :func:`deferred_interrupts` saw: ``count`` SIGINTs so far (a second one may ask
    to cut a slow step short, e.g. to kill a cluster that does not close)."""

    def __init__(self) -> None:
        self.count = 0

    def _handler(self, signum: int, frame: Any) -> None:
        self.count += 1


@contextlib.contextmanager
def deferred_interrupts() -> Iterator[Deferred]:
    """Run the body with SIGINT recorded, then deliver it to the handler that was installed.

    Only the main thread receives signals (and may install handlers); elsewhere, or where
    SIGINT is ignored, the body runs as it is.  Nested uses pass the signal outwards.
    """
    state = Deferred()
    if threading.current_thread() is not threading.main_thread():
        yield state
        return
    old = signal.getsignal(signal.SIGINT)
    if old is None or old == signal.SIG_IGN:  # not ours to change, or nothing to defer
        yield state
        return
    signal.signal(signal.SIGINT, state._handler)
    try:
        yield state
    finally:
        signal.signal(signal.SIGINT, old)
        if state.count:
            if callable(old):
                old(signal.SIGINT, None)  # default_int_handler: raises KeyboardInterrupt
            else:  # SIG_DFL: the process would have died; the next best is to stop now
                raise KeyboardInterrupt


def phase(name: str) -> None:
    """Test-suite hook: record reaching step ``name`` (see the module docstring)."""
    path = os.environ.get(PHASES_ENV)
    if not path:
        return
    with contextlib.suppress(OSError), open(path, "a", encoding="utf-8") as fh:
        fh.write(f"{name} {time.time():.3f}\n")
    if name in os.environ.get(HOLD_ENV, "").split(","):
        end = time.monotonic() + HOLD_SECONDS
        while time.monotonic() < end:
            time.sleep(0.02)

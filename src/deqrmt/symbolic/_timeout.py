"""Bounded effort for SymPy calls that may run for minutes (``integrate``, ``simplify``).

SymPy is pure Python, so a SIGALRM raised inside it interrupts it cleanly.  Outside the main
thread (or on a platform without ``setitimer``) no timer can be armed and the attempt is
skipped: a missing closed form only costs speed, a hang would cost the user's session.
"""

from __future__ import annotations

import gc
import signal
import threading
from collections.abc import Callable
from typing import TypeVar

__all__ = ["bounded"]

T = TypeVar("T")


class _Expired(Exception):
    pass


def _raise(signum: int, frame: object) -> None:
    raise _Expired


def bounded(fn: Callable[[], T], seconds: float) -> T | None:
    """Run ``fn()``; return None if it takes longer than ``seconds`` or raises."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(
        signal, "setitimer"
    ):
        return None
    previous = signal.signal(signal.SIGALRM, _raise)
    # A SIGALRM landing inside a GC callback becomes an "unraisable" exception instead of
    # interrupting fn(); keep the collector out of the window.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn()
    except _Expired:
        return None
    except (ValueError, TypeError, NotImplementedError, ZeroDivisionError, RecursionError):
        return None  # SymPy gave up on its own
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if gc_was_enabled:
            gc.enable()

"""The one progress helper: drawn only where a person watches, counts right from threads."""

from __future__ import annotations

import io
import sys
import threading

import pytest

from deqrmt._progress import progress_bar, progress_enabled


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_off_when_stderr_is_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DEQRMT_NO_PROGRESS", raising=False)
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert progress_enabled() is False
    with progress_bar(5, "work") as bar:
        bar.advance(5)
    assert sys.stderr.getvalue() == ""


def test_on_at_a_terminal_and_counts_from_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DEQRMT_NO_PROGRESS", raising=False)
    err = _Tty()
    monkeypatch.setattr(sys, "stderr", err)
    assert progress_enabled() is True
    with progress_bar(400, "tiles", unit="tile") as bar:
        threads = [
            threading.Thread(target=lambda: [bar.advance() for _ in range(100)]) for _ in range(4)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert bar.done == 400
    assert "400/400" in err.getvalue() and "tiles" in err.getvalue()


def test_quiet_and_environment_switch_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stderr", _Tty())
    assert progress_enabled(False) is False
    monkeypatch.setenv("DEQRMT_NO_PROGRESS", "1")
    assert progress_enabled(True) is False


def test_callback_convention(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    with progress_bar(10, "x", enabled=False) as bar:
        bar(3, 10)
        bar(7, 12)
    assert (bar.done, bar.total) == (7, 12)


def test_write_puts_a_line_above_the_bar_only_when_drawn(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DEQRMT_NO_PROGRESS", raising=False)
    err = _Tty()
    monkeypatch.setattr(sys, "stderr", err)
    with progress_bar(2, "work") as bar:
        bar.write("budget: 12 units")
        bar.advance(2)
    assert bar.drawn and "budget: 12 units\n" in err.getvalue() and "2/2" in err.getvalue()
    quiet = _Tty()
    monkeypatch.setattr(sys, "stderr", quiet)
    with progress_bar(2, "work", enabled=False) as bar:
        bar.write("budget: 12 units")
    assert not bar.drawn and quiet.getvalue() == ""

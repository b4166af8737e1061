"""Edges of the small shared modules: _text, _io, _progress, _budget, _version.

Every expected value is written out by hand (an escape spelled from the code point, the bytes
a file must hold, the error a user sees); the fakes stand for what a test cannot make real
(a closed stdout, a notebook kernel, a tree of /proc and cgroup files).
"""

from __future__ import annotations

import io
import os
import sys
import types
from fractions import Fraction
from pathlib import Path

import mpmath
import pytest

from deqrmt import _budget, _io, _progress, _text, _version
from deqrmt._errors import FileError

# --- _text ---------------------------------------------------------------------------------------


def test_escapes_spell_the_code_point() -> None:
    # U+E0041 (TAG LATIN CAPITAL LETTER A, category Cf) lies above the BMP: \U and 8 digits
    assert _text.escape_controls("a\U000e0041b") == "a\\U000e0041b"
    assert _text.escape_controls("\x07") == "\\x07"
    assert _text.escape_controls("\u2028") == "\\u2028"
    # no ASCII name and no decomposition: the \u escape (U+20AC EURO SIGN)
    assert _text.to_ascii("5 €") == "5 \\u20ac"
    assert _text.to_ascii("ﬁ") == "fi"  # U+FB01 LATIN SMALL LIGATURE FI decomposes to "fi"


class _Raw(io.StringIO):
    """A text stream whose flush fails like a full disk, and whose fileno is 7."""

    def __init__(self, fail_flush: bool = False) -> None:
        super().__init__()
        self.fail_flush = fail_flush

    def flush(self) -> None:
        if self.fail_flush:
            raise OSError(28, "No space left on device")
        super().flush()

    def fileno(self) -> int:
        return 7


def test_safe_stream_over_a_closed_stdout() -> None:
    s = _text.SafeStream(None)
    assert s.writable()
    assert s.write("") == 0  # nothing to write, nothing to report
    s.flush()  # nothing was written: no error
    with pytest.raises(FileError, match="it is closed"):
        _ = s.buffer
    with pytest.raises(io.UnsupportedOperation, match="it is closed"):
        s.fileno()
    assert s.encoding == "utf-8" and not s.isatty()
    with pytest.raises(FileError, match="it is closed"):
        s.write("x")
    with pytest.raises(FileError, match="it is closed"):
        s.flush()  # the lost output is reported again at the end


def test_safe_stream_passes_through_and_reports_a_failed_flush() -> None:
    raw = _Raw()
    s = _text.SafeStream(raw)
    assert s.write("tanh\x1b[2J\n") == len("tanh\x1b[2J\n")
    assert raw.getvalue() == "tanh\\x1b[2J\n"
    assert s.fileno() == 7 and s.buffer is None and not s.isatty()
    raw.fail_flush = True
    with pytest.raises(FileError, match="No space left on device"):
        s.flush()
    raw.fail_flush = False
    with pytest.raises(FileError, match="No space left on device"):
        s.flush()  # a swallowed error is raised again


def test_interval_ends_refuses_reversed_ends() -> None:
    with pytest.raises(ValueError, match="exceeds"):
        _text.interval_ends(Fraction(2), Fraction(1), 3)
    assert _text.interval_ends(Fraction(-1, 3), Fraction(1, 3), 3) == ("-0.334", "0.334")


@pytest.mark.parametrize(
    ("value", "n"),
    [
        (Fraction(12345), 5),  # exponent n − 1: fixed, every digit before the point
        (Fraction(1234, 10), 4),
        (Fraction(1, 1000), 3),
        (Fraction(123456), 5),  # exponent n: scientific
    ],
)
@pytest.mark.parametrize("strip", [False, True])
def test_format_decimal_is_mpmath_nstr(value: Fraction, n: int, strip: bool) -> None:
    # the values are exact binary-free decimals well inside a double: nstr of the float is exact
    want = mpmath.nstr(mpmath.mpf(value.numerator) / value.denominator, n, strip_zeros=strip)
    got = _text.format_decimal(_text.round_decimal(value, n), n, strip_zeros=strip)
    assert got == want


# --- _io -----------------------------------------------------------------------------------------


def test_kind_of_an_unknown_mode() -> None:
    assert _io._kind(0) == "not a regular file"


@pytest.mark.parametrize("bad", ["", "a\x00b"])
def test_invalid_paths_are_refused_before_anything(bad: str) -> None:
    with pytest.raises(FileError, match="invalid output path"):
        _io.check_output(bad)
    with pytest.raises(FileError, match="invalid output path"):
        _io.write_output(bad, "x")
    with pytest.raises(FileError, match="a directory is needed here"):
        _io.check_directory(bad)
    with pytest.raises(FileError, match="invalid path"):
        _io.open_regular(bad or "\x00", "the file", None)


def test_check_directory_walks_up_to_the_nearest_existing_ancestor(tmp_path: Path) -> None:
    deep = tmp_path / "a" / "b" / "c"
    _io.check_directory(deep)  # tmp_path is writable: accepted
    assert not (tmp_path / "a").exists()  # and nothing was created
    with pytest.raises(FileError, match="a directory is needed here"):
        _io.check_directory("-")


def test_write_output_into_a_missing_directory(tmp_path: Path) -> None:
    target = tmp_path / "missing" / "out.txt"
    with pytest.raises(FileError, match="No such file or directory"):
        _io.write_output(target, "x")
    assert not target.parent.exists()


def test_write_directory_when_the_target_appears_as_a_file(tmp_path: Path) -> None:
    target = tmp_path / "plots"

    def produce(tmp: str) -> list[str]:
        target.write_text("someone else's")  # appears while the files are being made
        p = os.path.join(tmp, "a.png")
        Path(p).write_bytes(b"png")
        return [p]

    with pytest.raises(FileError, match="cannot create the directory"):
        _io.write_directory(target, produce)
    assert target.read_text() == "someone else's"


def test_write_output_when_the_name_appears_while_writing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "out.txt"

    def link(src: str, dst: str) -> None:
        Path(dst).write_text("theirs")
        raise FileExistsError(17, "File exists")

    monkeypatch.setattr(os, "link", link)
    with pytest.raises(FileError, match="appeared while writing"):
        _io.write_output(target, "ours")
    assert target.read_text() == "theirs"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]  # no temporary left


def test_write_output_on_a_file_system_without_hard_links(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def link(src: str, dst: str) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "link", link)
    target = tmp_path / "out.txt"
    assert _io.write_output(target, "ours\n") == str(target)
    assert target.read_text() == "ours\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


class _Stdout:
    """A standard output whose write fails with ``error``."""

    def __init__(self, error: OSError) -> None:
        self.error = error

    def write(self, data: str) -> int:
        raise self.error

    def flush(self) -> None:
        pass


def test_stdout_text_binary_closed_and_failing(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = io.BytesIO()
    wrapper = io.TextIOWrapper(raw, encoding="utf-8")
    monkeypatch.setattr(sys, "stdout", wrapper)
    assert _io.write_output("-", b"\x89PNG") == "-"
    assert raw.getvalue() == b"\x89PNG"
    monkeypatch.setattr(sys, "stdout", io.StringIO())  # no .buffer
    with pytest.raises(FileError, match="cannot write binary output"):
        _io.write_output("-", b"\x00")
    monkeypatch.setattr(sys, "stdout", None)
    with pytest.raises(FileError, match="it is closed"):
        _io.write_output("-", "x")
    monkeypatch.setattr(sys, "stdout", _Stdout(OSError(5, "Input/output error")))
    with pytest.raises(FileError, match="cannot write to standard output: Input/output error"):
        _io.write_output("-", "x")
    monkeypatch.setattr(sys, "stdout", _Stdout(BrokenPipeError(32, "Broken pipe")))
    with pytest.raises(BrokenPipeError):  # the reader left: the command line exits quietly
        _io.write_output("-", "x")


@pytest.mark.skipif(not os.path.exists("/proc/self/mem"), reason="Linux /proc only")
def test_a_regular_file_that_fails_to_read() -> None:
    # /proc/self/mem is a regular file whose first page is unmapped: read() gives EIO
    with pytest.raises(FileError, match="cannot read the memory: Input/output error"):
        _io.read_limited("/proc/self/mem", "the memory", 10)
    assert _budget._read("/proc/self/mem") is None


# --- _progress -----------------------------------------------------------------------------------


def _fake_notebook(monkeypatch: pytest.MonkeyPatch, shell: object) -> None:
    ipython = types.ModuleType("IPython")

    def get_ipython() -> object:
        if isinstance(shell, Exception):
            raise shell
        return shell

    ipython.get_ipython = get_ipython  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    monkeypatch.setitem(sys.modules, "ipykernel", types.ModuleType("ipykernel"))


class ZMQInteractiveShell:
    """Named as Jupyter's kernel shell (the check is by class name)."""


def test_notebook_detection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DEQRMT_NO_PROGRESS", raising=False)
    _fake_notebook(monkeypatch, RuntimeError("no kernel"))
    assert not _progress._in_notebook()
    _fake_notebook(monkeypatch, object())
    assert not _progress._in_notebook()
    _fake_notebook(monkeypatch, ZMQInteractiveShell())
    assert _progress._in_notebook()
    assert _progress.progress_enabled()  # a person watches the notebook


@pytest.mark.parametrize("widgets", [False, True])
def test_notebook_bar_falls_back_to_text(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], widgets: bool
) -> None:
    pytest.importorskip("tqdm")
    monkeypatch.delenv("DEQRMT_NO_PROGRESS", raising=False)
    _fake_notebook(monkeypatch, ZMQInteractiveShell())
    if not widgets:  # tqdm.notebook cannot even be imported
        monkeypatch.setitem(sys.modules, "tqdm.notebook", None)
    else:  # it imports, but its widget cannot be built without ipywidgets
        notebook = types.ModuleType("tqdm.notebook")

        def tqdm(**kw: object) -> None:
            raise ImportError("IProgress not found. Please update jupyter and ipywidgets.")

        notebook.tqdm = tqdm  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, "tqdm.notebook", notebook)
    with _progress.progress_bar(3, "moments", unit="m") as p:
        assert p.drawn
        p.advance(3)
    err = capsys.readouterr().err
    assert "moments" in err and "3/3" in err


def test_no_tqdm_no_bar(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DEQRMT_NO_PROGRESS", raising=False)
    monkeypatch.setitem(sys.modules, "tqdm", None)
    assert not _progress._have_tqdm()
    with _progress.progress_bar(2, "x", enabled=True) as p:
        assert not p.drawn
        p(2)
        assert p.done == 2


def test_a_closed_stderr_is_no_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DEQRMT_NO_PROGRESS", raising=False)
    closed = io.StringIO()
    closed.close()  # isatty() on a closed file raises ValueError
    monkeypatch.setattr(sys, "stderr", closed)
    monkeypatch.delitem(sys.modules, "ipykernel", raising=False)
    assert _progress.progress_enabled() is False


# --- _budget -------------------------------------------------------------------------------------


def test_physical_memory_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    def sysconf(name: str) -> int:
        raise ValueError(name)

    monkeypatch.setattr(os, "sysconf", sysconf)
    assert _budget._physical() is None
    monkeypatch.setattr(os, "sysconf", lambda name: -1)  # what sysconf says when unknown
    assert _budget._physical() is None
    monkeypatch.setattr(_budget, "MEMINFO", "/nonexistent/meminfo")
    monkeypatch.setattr(_budget, "SELF_CGROUP", "/nonexistent/cgroup")
    monkeypatch.setattr(_budget, "CGROUP_ROOT", "/nonexistent")
    monkeypatch.setitem(sys.modules, "resource", None)  # not POSIX: no rlimits
    assert _budget._rlimit_headroom() == {}
    assert _budget.memory_limits() == {}


def test_cgroup_lines_malformed_and_repeated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "cgroup"
    (root / "a").mkdir(parents=True)
    (root / "a" / "memory.max").write_text("3000\n")
    (root / "a" / "memory.current").write_text("1000\n")
    (root / "memory.max").write_text("max\n")
    cgroup = tmp_path / "self_cgroup"
    # a line without three fields is skipped; the same directory twice is read once
    cgroup.write_text("garbage\n0::/a\n0::/a/.\n")
    monkeypatch.setattr(_budget, "SELF_CGROUP", str(cgroup))
    monkeypatch.setattr(_budget, "CGROUP_ROOT", str(root))
    assert _budget._cgroup_dirs() == [
        (str(root / "a"), "memory.max", "memory.current"),
        (str(root), "memory.max", "memory.current"),
        (str(root / "a"), "memory.max", "memory.current"),
        (str(root), "memory.max", "memory.current"),
    ]
    assert _budget._cgroup_headroom() == 2000


# --- _version ------------------------------------------------------------------------------------


def test_version_without_a_readable_pyproject(monkeypatch: pytest.MonkeyPatch) -> None:
    def unreadable(self: Path, *a: object, **k: object) -> str:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "read_text", unreadable)
    assert _version._from_source_tree() == "0+unknown"

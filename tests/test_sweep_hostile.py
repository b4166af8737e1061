"""A hostile corpus for ``deqrmt sweep`` (issue 19): specs, stores, plot targets, schedulers.

Every case is a command line over files made in a fresh directory.  Each must end with the
expected exit code and, for a refusal, exactly one printable line naming the expected
:class:`deqrmt.DeqrmtError` subclass (the class, not only the shape: a catch-all would give the
shape too), before any work; and no file may change that the user did not name.

* ``test_corpus_in_process`` runs every case through ``deqrmt.cli.main`` (the default suite).
* ``test_corpus_console_script`` (slow) runs every case through the installed console script,
  under a 4 GiB address-space limit and a 60 s timeout, with HOME and TMPDIR of its own.
* ``python tests/test_sweep_hostile.py`` runs the console-script corpus and prints the counts
  the issue asks for: tracebacks, exit-70s, hangs past 60 s, processes killed for memory, files
  changed that the user did not name.

No case starts a cluster: a case whose sweep would run has its store filled beforehand, so
the command checks, summarises and plots only.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import re
import resource
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import deqrmt._errors as errors
from deqrmt._errors import (
    BudgetExceeded,
    DeqrmtError,
    FileError,
    InvalidArgument,
    SchedulerError,
    SpecError,
    StoreError,
)

SPEC = 'kind = "coefficients"\nactivations = "relu"\nsigma_a2 = [0.2, 0.3]\ndps = 12\n'
HEAD = 'kind = "exact"\nactivations = "relu"\nsigma_a2 = 0.2\n'
CANARY = "deqrmt-sweep-canary"


@dataclasses.dataclass(frozen=True)
class Case:
    """One command line: ``setup(directory)`` makes its files and returns the arguments after
    ``deqrmt sweep``; ``error`` is the class a refusal names (None: the command runs), ``rc``
    its exit code, ``named`` the paths (relative to the directory) the command may change: the
    plots asked for, and the store (``spec.sqlite``, the documented default, records each run)."""

    id: str
    setup: Callable[[Path], list[str]]
    error: type[DeqrmtError] | None
    rc: int = 2
    named: tuple[str, ...] = ()


def _spec(text: str, name: str = "spec.toml") -> Callable[[Path], list[str]]:
    def setup(d: Path) -> list[str]:
        (d / name).write_text(text, encoding="utf-8")
        return [str(d / name)]

    return setup


def _spec_bytes(data: bytes) -> Callable[[Path], list[str]]:
    def setup(d: Path) -> list[str]:
        (d / "spec.toml").write_bytes(data)
        return [str(d / "spec.toml")]

    return setup


def _special(make: Callable[[Path], Path]) -> Callable[[Path], list[str]]:
    def setup(d: Path) -> list[str]:
        return [str(make(d))]

    return setup


def _fifo(d: Path) -> Path:
    os.mkfifo(d / "spec.toml")
    return d / "spec.toml"


def _link_to_zero(d: Path) -> Path:
    (d / "spec.toml").symlink_to("/dev/zero")
    return d / "spec.toml"


# --- stores ----------------------------------------------------------------------------------


def _filled_store(path: Path) -> None:
    """A store holding every task of SPEC, computed for real (relu: milliseconds each)."""
    from deqrmt.sweep import Record, ResultStore, execute, parse_spec

    with ResultStore(path) as st:
        for t in parse_spec(SPEC).tasks:
            r = execute(t.kind, t.inputs)
            st.add(Record(t.key, t.kind, t.inputs, r["outputs"], r["error"], r["seconds"], 0.0))


def _tampered(*sql: str) -> Callable[[Path], list[str]]:
    """SPEC with a filled store, then ``sql`` run on it outside deqrmt."""

    def setup(d: Path) -> list[str]:
        (d / "spec.toml").write_text(SPEC)
        _filled_store(d / "s.sqlite")
        db = sqlite3.connect(d / "s.sqlite")
        try:
            db.execute("PRAGMA ignore_check_constraints = ON")
            for s in sql:
                db.execute(s)
            db.commit()
        finally:
            db.close()
        return [str(d / "spec.toml"), "--store", str(d / "s.sqlite")]

    return setup


def _store(make: Callable[[Path], None], store: str = "s.sqlite") -> Callable[[Path], list[str]]:
    def setup(d: Path) -> list[str]:
        (d / "spec.toml").write_text(SPEC)
        make(d)
        return [str(d / "spec.toml"), "--store", str(d / store)]

    return setup


def _foreign(*sql: str) -> Callable[[Path], None]:
    def make(d: Path) -> None:
        db = sqlite3.connect(d / "s.sqlite")
        try:
            for s in sql:
                db.execute(s)
            db.commit()
        finally:
            db.close()

    return make


def _victim(d: Path) -> None:
    (d / "victim.txt").write_text("the user's file\n")


def _store_link(d: Path) -> None:
    _victim(d)
    (d / "s.sqlite").symlink_to(d / "victim.txt")


def _store_dangling(d: Path) -> None:
    (d / "elsewhere").mkdir()
    (d / "s.sqlite").symlink_to(d / "elsewhere" / "new.sqlite")


def _default_store_link(d: Path) -> list[str]:
    (d / "spec.toml").write_text(SPEC)
    _filled_store(d / "victim.sqlite")
    (d / "spec.sqlite").symlink_to(d / "victim.sqlite")
    return [str(d / "spec.toml")]


def _journal_link(d: Path) -> None:
    _filled_store(d / "s.sqlite")
    _victim(d)
    (d / "s.sqlite-journal").symlink_to(d / "victim.txt")


def _store_inputs_mismatch(d: Path) -> list[str]:
    args = _tampered()(d)
    db = sqlite3.connect(d / "s.sqlite")
    with db:
        db.execute("UPDATE results SET inputs = json_set(inputs, '$.activation', 'tanh')")
    db.close()
    return args


# --- plots -----------------------------------------------------------------------------------


def _plots(make: Callable[[Path], None], *extra: str) -> Callable[[Path], list[str]]:
    """SPEC with a complete default store (nothing runs), plots into ``plots/``."""

    def setup(d: Path) -> list[str]:
        (d / "spec.toml").write_text(SPEC)
        _filled_store(d / "spec.sqlite")
        (d / "plots").mkdir()
        make(d / "plots")
        return [str(d / "spec.toml"), "--plot", str(d / "plots"), *extra]

    return setup


def _png(p: Path) -> None:
    (p / "coefficients.png").write_bytes(b"the user's figure")


def _png_fifo(p: Path) -> None:
    os.mkfifo(p / "coefficients.png")


def _png_link(p: Path) -> None:
    (p.parent / "victim.txt").write_text("the user's file\n")
    (p / "coefficients.png").symlink_to(p.parent / "victim.txt")


def _png_dir(p: Path) -> None:
    (p / "coefficients.png").mkdir()


def _tmp_link(p: Path) -> None:
    """The temporary name the old code used, planted as a link to the user's file."""
    (p.parent / "victim.txt").write_text("the user's file\n")
    (p / "coefficients.tmp.png").symlink_to(p.parent / "victim.txt")


def _plot_dir_is_file(d: Path) -> list[str]:
    (d / "spec.toml").write_text(SPEC)
    _filled_store(d / "spec.sqlite")
    (d / "plots").write_text("a file")
    return [str(d / "spec.toml"), "--plot", str(d / "plots")]


ESC_DIR = "p\x1b[31mred\x07"


def _plot_dir_esc(d: Path) -> list[str]:
    (d / "spec.toml").write_text(SPEC)
    _filled_store(d / "spec.sqlite")
    return [str(d / "spec.toml"), "--plot", str(d / ESC_DIR)]


def _garbage_scheduler(d: Path) -> list[str]:
    """A port that answers like a web server, not like Dask (the 8 bytes Dask reads as a frame
    count become a 3 EiB allocation): on 127.0.0.1, a port the OS picks, for 60 s."""
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)

    def serve() -> None:
        deadline = time.monotonic() + 60
        with server:
            while time.monotonic() < deadline:
                try:
                    conn, _ = server.accept()
                except OSError:
                    continue
                with conn, contextlib.suppress(OSError):
                    conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n" * 4)

    threading.Thread(target=serve, daemon=True).start()
    (d / "spec.toml").write_text(SPEC)
    return [str(d / "spec.toml"), "--scheduler", f"tcp://127.0.0.1:{server.getsockname()[1]}"]


def _scheduler(address: str) -> Callable[[Path], list[str]]:
    def setup(d: Path) -> list[str]:
        (d / "spec.toml").write_text(SPEC)
        return [str(d / "spec.toml"), "--scheduler", address]

    return setup


CASES = [
    # --- specs: budgets before any work --------------------------------------------------------
    Case("spec-4e7-tasks", _spec('kind = "exact"\nactivations = "relu"\nsigma_a2 = "0.05:0.5:10"\n'
         'sigma_b2 = "0.01:2:200"\nn = [64, 128]\nseeds = 10000\n'), BudgetExceeded),
    Case("spec-1e8-seeds", _spec(HEAD + "n = [64]\nseeds = 100000000\n"), BudgetExceeded),
    Case("spec-seed-list-10001", _spec(HEAD + "n = [64]\nseeds = [" +
         ",".join(map(str, range(10001))) + "]\n"), BudgetExceeded),
    Case("spec-n-list-5000", _spec(HEAD + "n = [" + ",".join(map(str, range(64, 5064))) + "]\n"),
         BudgetExceeded),
    Case("spec-n-list-1e6", _spec(HEAD + "n = [" + ",".join(map(str, range(64, 10**6))) + "]\n"),
         BudgetExceeded),
    Case("spec-n-1e6", _spec(HEAD + "n = [1000000]\n"), BudgetExceeded),
    Case("spec-m-1e7", _spec(HEAD.replace("exact", "validate") + "n = [64]\nm = [10000000]\n"),
         BudgetExceeded),
    Case("spec-ratio-1e3-n-1e5", _spec(HEAD + "n = [100000]\nratio = 1000\n"), BudgetExceeded),
    Case("spec-deep-brackets", _spec("kind = " + "[" * 100000 + "]" * 100000), BudgetExceeded),
    Case("spec-deep-tables", _spec("a = " + "{b = " * 5000 + "1" + "}" * 5000), BudgetExceeded),
    Case("spec-dotted-key-1e5", _spec("a" + ".a" * 100000 + " = 1\n"), BudgetExceeded),
    Case("spec-file-300k", _spec(SPEC + "# " + "x" * 300_000 + "\n"), BudgetExceeded),
    Case("spec-superscript-count", _spec(SPEC.replace("[0.2, 0.3]", '"0.1:0.5:²"')), SpecError),
    Case("spec-superscript-sigma", _spec(SPEC.replace("[0.2, 0.3]", '"0.2²"')), SpecError),
    Case("spec-arabic-digits", _spec(SPEC.replace("[0.2, 0.3]", '"٠.٢"')), SpecError),
    Case("spec-fullwidth-digits", _spec(SPEC.replace("[0.2, 0.3]", '"０.２"')), SpecError),
    Case("spec-int-5000-digits", _spec(SPEC + "tau0 = " + "9" * 5000 + "\n"), SpecError),
    Case("spec-ratio-huge-int", _spec(HEAD + "n = [64]\nratio = " + "9" * 400 + "\n"), SpecError),
    Case("spec-ratio-nan", _spec(HEAD + "n = [64]\nratio = nan\n"), SpecError),
    Case("spec-sigma-1e50", _spec(SPEC.replace("[0.2, 0.3]", '"1e50"') + "sigma_b2 = 1\n"),
         SpecError),
    Case("spec-tau0-zero", _spec(SPEC + "tau0 = 0\n"), SpecError),
    Case("spec-dps-huge", _spec(SPEC.replace("dps = 12", "dps = 10000000")), SpecError),
    Case("spec-draws-huge", _spec(HEAD.replace("exact", "validate") +
         "n = [64]\ndraws = 1000000000\n"), SpecError),
    Case("spec-layers-huge", _spec(SPEC.replace("coefficients", "design") +
         'family = "a*tanh(b*x)"\nlayers = 1000000\n'), SpecError),
    Case("spec-starts-huge", _spec(SPEC.replace("coefficients", "design") +
         'family = "a*tanh(b*x)"\nstarts = 1000000000\n'), SpecError),
    Case("spec-seed-negative", _spec(HEAD + "n = [64]\nseeds = [-1]\n"), SpecError),
    Case("spec-injection", _spec(SPEC.replace('"relu"', repr(
         f"__import__('os').system('touch {CANARY}')").replace("'", '"'))), SpecError),
    Case("spec-activation-esc", _spec(SPEC.replace('"relu"', '"tanh\\u001b[2J"')), SpecError),
    Case("spec-activation-bidi", _spec(SPEC.replace('"relu"', '"relu\\u202e"')), SpecError),
    Case("spec-activation-10k", _spec(SPEC.replace('"relu"', '"' + "x+" * 5000 + 'x"')),
         SpecError),
    Case("spec-activations-1000", _spec(SPEC.replace('"relu"', "[" + ",".join(
         f'"relu(x-{i})"' for i in range(1000)) + "]")), BudgetExceeded),
    Case("spec-family-unknown", _spec(SPEC.replace("coefficients", "design") +
         'family = "nope\\u001b"\n'), SpecError),
    Case("spec-key-esc", _spec(SPEC + '"\\u001b]0;owned\\u0007" = 1\n'), SpecError),
    Case("spec-kind-nested", _spec("kind = [[[1]]]\n"), SpecError),
    Case("spec-empty", _spec(""), SpecError),
    Case("spec-nul-bytes", _spec_bytes(b"kind = \x00\x00\n"), SpecError),
    Case("spec-not-utf8", _spec_bytes(b"kind = '\xff\xfe'\n"), SpecError),
    Case("spec-fifo", _special(_fifo), SpecError),
    Case("spec-dev-zero", _special(lambda d: Path("/dev/zero")), SpecError),
    Case("spec-link-to-dev-zero", _special(_link_to_zero), SpecError),
    Case("spec-directory", _special(lambda d: d), SpecError),
    Case("spec-missing", _special(lambda d: d / "missing.toml"), SpecError),
    # --- stores: a regular file with deqrmt's schema, every row read validated -----------------
    Case("store-symlink", _store(_store_link), StoreError),
    Case("store-dangling-symlink", _store(_store_dangling), StoreError),
    Case("store-default-symlink", _default_store_link, StoreError),
    Case("store-fifo", _store(lambda d: os.mkfifo(d / "s.sqlite")), StoreError),
    Case("store-directory", _store(lambda d: (d / "s.sqlite").mkdir()), StoreError),
    Case("store-dev-null", _store(lambda d: None, "/dev/null"), StoreError),
    Case("store-text-file", _store(lambda d: (d / "s.sqlite").write_text("notes " * 500)),
         StoreError),
    Case("store-other-schema", _store(_foreign("CREATE TABLE results (a, b)")), StoreError),
    Case("store-view-results", _store(_foreign(
         "CREATE TABLE runs (x)", "CREATE VIEW results AS SELECT 1 AS key")), StoreError),
    Case("store-trigger", _tampered(
         "CREATE TRIGGER t AFTER INSERT ON results BEGIN DELETE FROM runs; END"), StoreError),
    Case("store-extra-index", _tampered("CREATE INDEX i ON results(kind)"), StoreError),
    Case("store-extra-table", _tampered("CREATE TABLE notes (x)"), StoreError),
    Case("store-inputs-not-json", _tampered("UPDATE results SET inputs = '{not json'"),
         StoreError),
    Case("store-outputs-deep-json", _tampered(
         "UPDATE results SET outputs = '" + "[" * 100000 + "]" * 100000 + "'"), StoreError),
    Case("store-outputs-list", _tampered("UPDATE results SET outputs = '[1, 2]'"), StoreError),
    Case("store-seconds-text", _tampered("UPDATE results SET seconds = 'abc'"), StoreError),
    Case("store-finished-null-text", _tampered("UPDATE results SET finished = 'x'"), StoreError),
    Case("store-kind-unknown", _tampered("UPDATE results SET kind = 'x'"), StoreError),
    Case("store-stages-text", _tampered("UPDATE results SET stages = '{\"a\": \"b\"}'"),
         StoreError),
    Case("store-both-null", _tampered("UPDATE results SET outputs = NULL"), StoreError),
    Case("store-blob-inputs", _tampered("UPDATE results SET inputs = x'00ff'"), StoreError),
    Case("store-huge-cell", _tampered(
         "UPDATE results SET error = NULL, outputs = '\"' || hex(zeroblob(3000000)) || '\"'"),
         StoreError),
    Case("store-other-application", _tampered("PRAGMA application_id = 1234"), StoreError),
    Case("store-inputs-mismatch", _store_inputs_mismatch, StoreError),
    Case("store-journal-symlink", _store(_journal_link), StoreError),
    # --- plot targets: written like every other output ----------------------------------------
    Case("plot-png-exists", _plots(_png), FileError),
    Case("plot-png-exists-force", _plots(_png, "--force"), None, 0,
         ("spec.sqlite", "plots/coefficients.png")),
    Case("plot-png-fifo", _plots(_png_fifo, "--force"), FileError),
    Case("plot-png-symlink", _plots(_png_link, "--force"), FileError),
    Case("plot-png-directory", _plots(_png_dir, "--force"), FileError),
    Case("plot-tmp-name-symlink", _plots(_tmp_link), None, 0, ("spec.sqlite", "plots/coefficients.png")),
    Case("plot-dir-is-file", _plot_dir_is_file, FileError),
    Case("plot-dir-escape", _plot_dir_esc, None, 0, ("spec.sqlite", ESC_DIR)),
    # --- scheduler addresses: tcp://HOST:PORT --------------------------------------------------
    Case("scheduler-no-port", _scheduler("tcp://127.0.0.1"), SchedulerError),
    Case("scheduler-host-no-port", _scheduler("localhost"), SchedulerError),
    Case("scheduler-tls", _scheduler("tls://127.0.0.1:8786"), SchedulerError),
    Case("scheduler-ucx", _scheduler("ucx://127.0.0.1:8786"), SchedulerError),
    Case("scheduler-inproc", _scheduler("inproc://127.0.0.1/1/1"), SchedulerError),
    Case("scheduler-ws", _scheduler("ws://127.0.0.1:8786"), SchedulerError),
    Case("scheduler-http", _scheduler("http://127.0.0.1:8787"), SchedulerError),
    Case("scheduler-port-0", _scheduler("tcp://127.0.0.1:0"), SchedulerError),
    Case("scheduler-port-99999", _scheduler("tcp://127.0.0.1:99999"), SchedulerError),
    Case("scheduler-ipv6-no-port", _scheduler("tcp://[::1]"), SchedulerError),
    Case("scheduler-escape", _scheduler("tcp://host\x1b[2J:8786"), SchedulerError),
    Case("scheduler-long-host", _scheduler("tcp://" + "a" * 5000 + ":8786"), SchedulerError),
    Case("scheduler-empty", _scheduler(""), SchedulerError),
    Case("scheduler-not-dask", _garbage_scheduler, SchedulerError, 2, ("spec.sqlite",)),
    Case("workers-huge", lambda d: [*_spec(SPEC)(d), "--workers", "100000"], InvalidArgument),
]  # fmt: skip


# --- the checks ------------------------------------------------------------------------------


def _tree(root: Path) -> dict[str, tuple[object, ...]]:
    """Every path under ``root`` (links not followed): its type, size, content hash or target."""
    out: dict[str, tuple[object, ...]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            rel = os.path.relpath(p, root)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(p))
            elif stat.S_ISREG(st.st_mode):
                with open(p, "rb") as fh:
                    out[rel] = ("file", hashlib.sha256(fh.read()).hexdigest())
            else:
                out[rel] = (stat.S_IFMT(st.st_mode),)
    return out


def _changed(before: dict[str, tuple[object, ...]], after: dict[str, tuple[object, ...]],
             named: tuple[str, ...]) -> list[str]:  # fmt: skip
    paths = set(before) | set(after)
    changed = sorted(p for p in paths if before.get(p) != after.get(p))
    return [p for p in changed if not any(p == n or p.startswith(n + os.sep) for n in named)]


def _error_class(line: str) -> type[BaseException] | None:
    m = re.match(r"deqrmt: error: ([A-Za-z]+): ", line)
    cls = getattr(errors, m.group(1), None) if m else None
    return cls if isinstance(cls, type) else None


def _check(case: Case, rc: int, err: str, changed: list[str]) -> None:
    assert "Traceback" not in err, err
    assert rc == case.rc, (rc, err)
    assert not changed, f"files changed that the user did not name: {changed}"
    assert "\x1b" not in err and "\x07" not in err, repr(err)  # control characters escaped
    if case.error is not None:
        lines = err.splitlines()
        assert len(lines) == 1, err
        cls = _error_class(lines[0])
        assert cls is not None and issubclass(cls, case.error), (case.error, lines[0])
        assert all(c.isprintable() for c in lines[0]), repr(lines[0])


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_corpus_in_process(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from deqrmt.cli import main

    monkeypatch.chdir(tmp_path)  # a canary would land here
    argv = case.setup(tmp_path)
    before = _tree(tmp_path)
    rc = main(["sweep", *argv])
    err = capsys.readouterr().err
    _check(case, rc, err, _changed(before, _tree(tmp_path), case.named))
    assert not (tmp_path / CANARY).exists()


def test_corpus_is_big_enough() -> None:
    """The issue asks for at least ~60 cases over specs, stores, plots and schedulers."""
    assert len(CASES) >= 60 and len({c.id for c in CASES}) == len(CASES)
    kinds = {c.id.split("-")[0] for c in CASES}
    assert {"spec", "store", "plot", "scheduler"} <= kinds


# --- the console script, under limits ----------------------------------------------------------

MEMORY_LIMIT = 4 * 2**30
TIMEOUT = 60


def _script() -> list[str]:
    script = Path(sys.executable).parent / "deqrmt"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from deqrmt.cli import main; sys.exit(main())"]


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


@dataclasses.dataclass
class Outcome:
    rc: int | None
    err: str
    seconds: float
    changed: list[str]
    leftovers: list[str]

    @property
    def hang(self) -> bool:
        return self.rc is None

    @property
    def killed_for_memory(self) -> bool:
        """Killed by the kernel (SIGKILL), or died of a MemoryError (not a refusal quoting one)."""
        crashed = self.rc not in (0, 1, 2, 130)
        return self.rc == -signal.SIGKILL or (crashed and "MemoryError" in self.err)


def _matplotlib_cache(path: str) -> bool:
    """matplotlib's own per-user font cache (``~/.cache/matplotlib``, and ``~/.config`` it
    creates on the way): a library's cache, made by any use of matplotlib, not deqrmt's."""
    return path in (".cache", ".config") or path.split(os.sep)[1:2] == ["matplotlib"]


def run_console(case: Case, directory: Path, timeout: float = TIMEOUT) -> Outcome:
    """``case`` through the console script, in ``directory`` (HOME and TMPDIR inside it)."""
    work = directory / "work"
    home, tmp = directory / "home", directory / "tmp"
    for d in (work, home, tmp):
        d.mkdir(parents=True, exist_ok=True)
    argv = case.setup(work)
    before = _tree(work)
    env = dict(os.environ, HOME=str(home), TMPDIR=str(tmp))
    env.setdefault("DEQRMT_CACHE_DIR", str(directory / "cache"))
    t = time.monotonic()
    proc = subprocess.Popen(
        [*_script(), "sweep", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=work,
        env=env, preexec_fn=_limit_memory, start_new_session=True,
    )  # fmt: skip
    try:
        _, err = proc.communicate(timeout=timeout)
        rc: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        rc, err = None, b""
    finally:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    seconds = time.monotonic() - t
    changed = _changed(before, _tree(work), case.named)
    leftovers = [f"home/{p}" for p in _tree(home) if not _matplotlib_cache(p)]
    leftovers += [f"tmp/{p}" for p in _tree(tmp)]
    if (work / CANARY).exists():
        changed.append(CANARY)
    return Outcome(rc, err.decode("utf-8", "backslashreplace"), seconds, changed, leftovers)


@pytest.mark.slow  # ~85 interpreter starts: 2–4 minutes on 2 cores
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_corpus_console_script(case: Case, tmp_path: Path) -> None:
    out = run_console(case, tmp_path)
    assert not out.hang, f"no answer within {TIMEOUT} s"
    assert not out.killed_for_memory, out.err
    assert not out.leftovers, out.leftovers  # nothing under HOME or TMPDIR
    assert out.rc is not None
    _check(case, out.rc, out.err, out.changed)


@contextlib.contextmanager
def _scratch() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="deqrmt-corpus-"))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """Run the corpus through the console script; print one line per case and the counts.

    ``--timeout S`` (default 60) is what counts as a hang; ``-k TEXT`` runs the cases whose id
    contains TEXT.
    """
    import argparse

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--timeout", type=float, default=TIMEOUT)
    ap.add_argument("-k", default="")
    args = ap.parse_args(argv)
    hangs = f"hangs > {args.timeout:g} s"
    counts = dict.fromkeys(
        ("cases", "tracebacks", "exit-70s", hangs, "killed for memory",
         "files changed unnamed", "leftovers in HOME/TMPDIR", "wrong outcome"), 0,
    )  # fmt: skip
    with _scratch() as root:
        os.environ.setdefault("DEQRMT_CACHE_DIR", str(root / "cache"))
        for i, case in enumerate(c for c in CASES if args.k in c.id):
            out = run_console(case, root / f"{i:03d}", args.timeout)
            counts["cases"] += 1
            counts["tracebacks"] += "Traceback" in out.err
            counts["exit-70s"] += out.rc == 70
            counts[hangs] += out.hang
            counts["killed for memory"] += out.killed_for_memory
            counts["files changed unnamed"] += bool(out.changed)
            counts["leftovers in HOME/TMPDIR"] += bool(out.leftovers)
            try:
                assert out.rc is not None
                _check(case, out.rc, out.err, out.changed)
                verdict = "ok"
            except AssertionError as e:
                counts["wrong outcome"] += 1
                verdict = f"WRONG {str(e)[:200]!r}"
            line = out.err.strip().splitlines()[-1][:110] if out.err.strip() else ""
            if out.leftovers:
                line += f"  [left under HOME/TMPDIR: {', '.join(out.leftovers[:4])}]"
            print(f"{case.id:28s} rc={out.rc} {out.seconds:5.1f}s {verdict}  {line}", flush=True)
    print(json.dumps(counts, indent=1))
    return 0 if all(v == 0 for k, v in counts.items() if k != "cases") else 1


if __name__ == "__main__":
    sys.exit(main())

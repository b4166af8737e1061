"""Hostile input through the console script: nothing runs, nothing hangs, nothing is overwritten.

Issue 9.  Every refusal is exit 2 with exactly one line on stderr that names a deqrmt error
class, and no traceback; a bug (exit 70) fails the session through DEQRMT_BUG_LOG (conftest).
Cheap cases run in-process through ``deqrmt.cli.main``; what needs a real process (signals,
pipes, locales, undecodable argv bytes, /dev/full on stdout) runs the installed script.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import deqrmt
import deqrmt._errors as deqrmt_errors
from deqrmt._io import write_directory, write_output
from deqrmt.cli import main
from deqrmt.symbolic import get_activation

# --- helpers ---------------------------------------------------------------------------------


def _error_class(line: str) -> type[BaseException]:
    m = re.match(r"deqrmt: error: ([A-Za-z]+): ", line)
    assert m, line
    cls = getattr(deqrmt_errors, m.group(1), None)
    assert isinstance(cls, type) and issubclass(cls, deqrmt.DeqrmtError), line
    return cls


def _assert_refused(rc: int, out: str, err: str, error: type[BaseException]) -> str:
    """Exit 2, nothing on stdout, one safe line on stderr naming a subclass of ``error``."""
    assert rc == 2, (rc, err)
    assert out == "", out
    assert "Traceback" not in err, err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert all(c.isprintable() for c in lines[0]), repr(lines[0])  # no raw control characters
    assert issubclass(_error_class(lines[0]), error), (error, lines[0])
    return lines[0]


def _in_process(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def _script(
    prefix: list[str], *argv: str | bytes, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*prefix, *argv], capture_output=True, timeout=timeout, env=env or dict(os.environ)
    )


def _text(b: bytes) -> str:
    return b.decode("utf-8", "backslashreplace")


# --- 1. injection strings: refused by the parser, nothing executed --------------------------------

CANARY = "deqrmt-canary"
INJECTIONS = [
    f"__import__('os').system('touch {CANARY}')",
    f"x # '''; __import__('os').system('touch {CANARY}') #",
    f'x # """\nimport os; os.system("touch {CANARY}")\n"""',
    f'tanh(x) """; import os; os.system("touch {CANARY}"); """',
    f"x'''+__import__('os').system('touch {CANARY}')+'''",
    f"x \\\n+ __import__('os').system('touch {CANARY}')",
    f"x\n__import__('os').system('touch {CANARY}')",
    f"x; __import__('os').system('touch {CANARY}')",
    f"(lambda: __import__('os').system('touch {CANARY}'))()",
    f"[__import__('os').system('touch {CANARY}') for _ in (1,)]",
    f'f\'{{__import__("os").system("touch {CANARY}")}}\'',
    f"x if __import__('os').system('touch {CANARY}') else x",
    f"(y := __import__('os').system('touch {CANARY}'))",
    f"open('{CANARY}', 'w')",
    "x.__class__.__mro__[-1].__subclasses__()",
    "().__class__.__base__",
    "getattr(x, 'real')",
    "x.real",
    "pi.evalf()",
    "exec('import os')",
    "eval('1')",
    "globals()",
    "breakpoint()",
    "print(x)",
    "import os",
    "sympy.exp(x)",
    "S('x')",
    "__builtins__",
    "_",
    "tanh(*[x])",
    "tanh(x=1)",
    "'x'",
    "b'x'",
    "x @ x",
    "x[0]",
    "{x}",
    "await x",
    "x ** 'a'",
    "\\N{LATIN SMALL LETTER X}",
    "ｘ",  # fullwidth x: NFKC would turn it into x
    "ｅｘｅｃ('1')",
    "x\u202e)x(hnat",  # right-to-left override
    "x\u200b",  # zero-width space
    "x\u2028+1",  # line separator
    "tanh(x)\x1b[2J\x1b[31m",
    "x\r+1\x07",
    "x\x7f",
]


@pytest.mark.parametrize("text", INJECTIONS)
def test_injection_strings_are_refused_and_run_nothing(
    text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    for command in (["coefficients", text], ["codegen", text, "-o", "gen.py"]):
        rc, out, err = _in_process(capsys, *command)
        line = _assert_refused(rc, out, err, deqrmt.InvalidArgument)
        assert issubclass(_error_class(line), (deqrmt.ParseError, deqrmt.UnknownActivation))
    assert sorted(os.listdir(tmp_path)) == [], "a file was created"


def test_injections_through_the_console_script(cli_prefix: list[str], tmp_path: Path) -> None:
    # The same, through the installed script, for the payloads aimed at generated code.
    for text in INJECTIONS[:4]:
        out = _script(cli_prefix, "codegen", text, "-o", str(tmp_path / "gen.py"))
        _assert_refused(out.returncode, _text(out.stdout), _text(out.stderr), deqrmt.ParseError)
    assert os.listdir(tmp_path) == []
    assert not Path(CANARY).exists()


# --- 2. control bytes anywhere in the arguments: escaped, never echoed raw ------------------------


@pytest.mark.parametrize(
    ("argv", "shown", "error"),
    [
        (["coefficients", "x\x1b]0;owned\x07"], r"'\x1b'", deqrmt.ParseError),
        (["coefficients", "relu", "--sigma-a2", "\x1b[31m0.2"], r"\x1b", deqrmt.InvalidArgument),
        (["coefficients", "relu", "--trainable", "a,\x1b[2J"], r"\x1b", deqrmt.InvalidArgument),
        (["coefficients", "relu", "--tau0", "1\u202e"], r"\u202e", deqrmt.InvalidArgument),
        (["explicit", "relu", "\x9b31m"], r"'\x9b'", deqrmt.ParseError),
        (["design", "--deq", "relu", "--family", "a*tanh(b*x)\x1b[1A"], r"\x1b", deqrmt.ParseError),
    ],
)
def test_control_characters_are_escaped_in_errors(
    argv: list[str], shown: str, error: type, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, err = _in_process(capsys, *argv)
    line = _assert_refused(rc, out, err, error)
    assert shown in line, line


@pytest.mark.parametrize(
    "argv",
    [["\x1b[2Jcoefficients", "relu"], ["coefficients", "relu", "--\x1b[31mdps", "3"]],
)
def test_control_characters_are_escaped_in_usage_errors(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, err = _in_process(capsys, *argv)
    assert rc == 2 and out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and "error:" in lines[0] and "\\x1b" in lines[0], err
    assert all(c.isprintable() for c in lines[0])


def test_undecodable_argv_bytes(cli_prefix: list[str]) -> None:
    # An argument that is not UTF-8 reaches Python as lone surrogates (surrogateescape).
    out = _script(cli_prefix, b"coefficients", b"tanh\xff\xfe(x)")
    line = _assert_refused(out.returncode, _text(out.stdout), _text(out.stderr), deqrmt.ParseError)
    assert r"\udcff" in line


# --- 3. work limits: refused fast, by name --------------------------------------------------------


def _kinks(n: int) -> str:
    return "(" + "+".join(f"abs(x-{k})" for k in range(1, n + 1)) + ")/100"


@pytest.mark.parametrize(
    ("text", "limit"),
    [
        (_kinks(50), "MAX_"),  # issue 9: a sum of 50 kinks hung > 120 s
        (_kinks(9), "MAX_KINKS"),
        ("sin(1000000*x)", "MAX_FREQUENCY"),  # ran for minutes
        ("exp(" * 60 + "x" + ")" * 60, "MAX_"),  # issue 9: 60 nested exp hung
        ("tanh(" * 60 + "x" + ")" * 60, "MAX_"),  # issue 9: 60 nested tanh hung
        ("tanh(" * 4 + "x" + ")" * 4, "MAX_TRANSCENDENTAL_DEPTH"),
        ("(" + "+".join(f"gelu(abs(x-{k}/4))" for k in range(4)) + ")/4", "MAX_WORK"),  # 5·9
        ("+".join(f"tanh(x/{k})" for k in range(1, 12)), "MAX_TRANSCENDENTAL"),
        ("x" * 401, "MAX_LENGTH"),
        ("(x**8)**9", "MAX_POWER"),
        ("-" * 40 + "x", "MAX_DEPTH"),
        ("+".join(["x*1"] * 70), "MAX_NODES"),
        ("max(x, " + ", ".join(f"x/{k}" for k in range(2, 12)) + ")", "MAX_KINKS"),
    ],
)
def test_oversized_activations_are_refused_by_the_parser(
    text: str, limit: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Refused when the text is read, before any engine work (how fast: benchmarks/limits.py).
    with pytest.raises(deqrmt.BudgetExceeded, match=limit):
        get_activation(text)
    rc, out, err = _in_process(capsys, "coefficients", "--", text)
    line = _assert_refused(rc, out, err, deqrmt.BudgetExceeded)
    assert limit in line and "docs/limits.md" in line, line


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["coefficients", "relu", "--sigma-a2=1e999999999"], "--sigma-a2"),
        (["coefficients", "relu", "--sigma-b2=1e300"], "--sigma-b2"),
        (["coefficients", "relu", "--sigma-a2", "nan"], "--sigma-a2"),
        (["coefficients", "relu", "--sigma-a2", "inf"], "--sigma-a2"),
        (["coefficients", "relu", "--sigma-a2", "1/0"], "--sigma-a2"),
        (["coefficients", "relu", "--sigma-a2", "-0"], "--sigma-a2"),
        (["coefficients", "relu", "--sigma-a2", ""], "--sigma-a2"),
        (["coefficients", "relu", "--sigma-a2", "9" * 5000], "--sigma-a2"),
        (["coefficients", "relu", "--tau0", "1e-300"], "--tau0"),
        (["coefficients", "relu", "--dps", "100000000"], "--dps"),
        (["coefficients", "relu", "--trainable", "Z"], "--trainable"),
        (["codegen", "relu", "--trainable", "Z", "-o", "-"], "--trainable"),
        (["derive", "deq-ntk", "--trainable", "Q"], "--trainable"),
        (["design", "--deq", "relu", "--family", "hard_tanh", "--layers", "1000"], "--layers"),
        (["design", "--deq", "relu", "--family", "hard_tanh", "--starts", "100000"], "--starts"),
        (["explicit", *(["relu"] * 1000)], "layers"),
    ],
)
def test_bad_numbers_are_refused_naming_the_flag(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # How fast each is refused: benchmarks/limits.py (no clock in a test).
    rc, out, err = _in_process(capsys, *argv)
    line = _assert_refused(rc, out, err, deqrmt.InvalidArgument)
    assert says in line, line
    assert "sigma_a2=" not in line and "sigma_b2=" not in line  # flags, not argument names


# --- 4. output files: atomic, never through a link, never over a device or a file ----------------


def _listing(d: Path) -> list[str]:
    return sorted(os.listdir(d))


def test_output_refuses_an_existing_file_unless_forced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "gen.py"
    target.write_text("precious\n")

    def work(*args: object, **kwargs: object) -> None:
        raise AssertionError("the work started before the output was checked")

    with monkeypatch.context() as m:  # refused before the work: the engine is never called
        m.setattr("deqrmt.symbolic.get_activation", work)
        m.setattr("deqrmt.numeric._codegen.generate_module", work)
        rc, out, err = _in_process(capsys, "codegen", "relu", "-o", str(target))
    line = _assert_refused(rc, out, err, deqrmt.FileError)
    assert "--force" in line
    assert target.read_text() == "precious\n"
    target.chmod(0o640)
    assert main(["codegen", "relu", "-o", str(target), "--force"]) == 0
    assert "do not edit" in target.read_text()
    assert stat.S_IMODE(target.stat().st_mode) == 0o640  # the replaced file keeps its mode
    assert _listing(tmp_path) == ["gen.py"]  # no temporary file left behind


def test_output_refuses_symlinks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    real = tmp_path / "real.py"
    real.write_text("target\n")
    link = tmp_path / "link.py"
    link.symlink_to(real)
    dangling = tmp_path / "dangling.py"
    dangling.symlink_to(tmp_path / "nowhere.py")
    for path in (link, dangling):
        for force in ([], ["--force"]):
            rc, out, err = _in_process(capsys, "codegen", "relu", "-o", str(path), *force)
            assert "symbolic link" in _assert_refused(rc, out, err, deqrmt.FileError)
    assert link.is_symlink() and real.read_text() == "target\n"
    assert dangling.is_symlink() and not (tmp_path / "nowhere.py").exists()
    assert _listing(tmp_path) == ["dangling.py", "link.py", "real.py"]


def test_output_refuses_directories_fifos_and_devices(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "dir").mkdir()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    targets = [(tmp_path / "dir", "a directory"), (fifo, "FIFO")]
    if os.path.exists("/dev/full"):
        targets.append((Path("/dev/full"), "character device"))
    before = os.stat("/dev/full") if os.path.exists("/dev/full") else None
    for path, kind in targets:
        for command in ("codegen", "latex"):
            rc, out, err = _in_process(capsys, command, "relu", "-o", str(path), "--force")
            assert kind in _assert_refused(rc, out, err, deqrmt.FileError)
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and (tmp_path / "dir").is_dir()
    if before is not None:  # the device is untouched: still the same character device
        after = os.stat("/dev/full")
        assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev
        assert after.st_ino == before.st_ino
    assert _listing(tmp_path) == ["dir", "fifo"]


def test_output_into_a_missing_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, err = _in_process(capsys, "codegen", "relu", "-o", str(tmp_path / "no" / "gen.py"))
    assert "does not exist" in _assert_refused(rc, out, err, deqrmt.FileError)
    assert _listing(tmp_path) == []


def test_output_dash_is_stdout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _in_process(capsys, "codegen", "relu", "-o", "-")
    assert rc == 0 and err == "" and "do not edit" in out
    compile(out, "gen.py", "exec")
    rc, out, err = _in_process(capsys, "latex", "relu", "-o", "-", "--dps", "12")
    assert rc == 0 and err == "" and out.startswith("\\documentclass")


def test_a_failed_write_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "out.txt"

    def interrupted(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_output(target, "text\n")
    assert _listing(tmp_path) == []

    def full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(deqrmt.FileError, match="No space left"):
        write_output(target, b"bytes")
    assert _listing(tmp_path) == []


def test_plot_directories_follow_the_same_rules(tmp_path: Path) -> None:
    def produce(tmp: str) -> list[str]:
        p = os.path.join(tmp, "figure.png")
        Path(p).write_bytes(b"\x89PNG")
        return [p]

    out = tmp_path / "plots"
    assert write_directory(out, produce) == [str(out / "figure.png")]
    with pytest.raises(deqrmt.FileError, match="pass force=True"):
        write_directory(out, produce)
    assert write_directory(out, produce, force=True) == [str(out / "figure.png")]
    (tmp_path / "file").write_text("x")
    with pytest.raises(deqrmt.FileError, match="not a directory"):
        write_directory(tmp_path / "file", produce)
    assert _listing(out) == ["figure.png"]


def test_certify_reads_only_a_design_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    for content in (b"\xff\xfe not json", b"[1, 2]", b"{" * 100_000, b'{"setting": {}}'):
        bad.write_bytes(content)
        rc, out, err = _in_process(capsys, "enn-check", "--enn", str(bad))
        _assert_refused(rc, out, err, deqrmt.InvalidArgument)
    rc, out, err = _in_process(capsys, "enn-check", "--enn", str(tmp_path / "missing.json"))
    _assert_refused(rc, out, err, deqrmt.FileError)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # opening it for reading would wait for a writer forever
    for path in (tmp_path, fifo, Path("/dev/zero")):
        rc, out, err = _in_process(capsys, "enn-check", "--enn", str(path))
        assert "not a regular file" in _assert_refused(rc, out, err, deqrmt.FileError)
    inputs = {"deq": "tanh", "kernel": "ck", "sigma_a2": "1/5", "sigma_b2": "4/5"}
    design = tmp_path / "design.json"
    for broken in ({"kernel": None}, {"deq": 5}, {"sigma_a2": None}, {"deq": "x # comment"}):
        design.write_text(
            json.dumps({"setting": {**inputs, **broken}, "solutions": [{"params": []}]})
        )
        rc, out, err = _in_process(capsys, "enn-check", "--enn", str(design))
        _assert_refused(rc, out, err, deqrmt.InvalidArgument)
    design.write_text(json.dumps({"setting": inputs, "solutions": [{"params": [{}]}]}))
    rc, out, err = _in_process(capsys, "enn-check", "--deq", "relu", "--enn", str(design))
    assert "not the DEQ the design" in _assert_refused(rc, out, err, deqrmt.InvalidArgument)


# --- 5. generated modules from tricky activations run nothing but their own code ------------------

#: Accepted activations whose text is odd (whitespace, newlines, library calls inside expressions).
TRICKY_ACCEPTED = [
    "relu",
    "  max(x,\n\t0.1*x)  ",
    "(x\n+\nx**2/4)",
    "x*pi/pi",
    "2*leaky_relu(0.2)",
    "abs(x)",
    "x",
]
#: Refused ones: each would break out of a docstring, comment or string if copied verbatim.
TRICKY_REFUSED = [
    'x # """\nimport os\nos.system("touch SENTINEL")\n"""',
    "x # '''\nimport os\nos.system('touch SENTINEL')\n'''",
    "x # \\\nimport os",
    "x\n#\nimport os",
    "x\x00import os",
    'x"""+__import__("os").system("touch SENTINEL")+"""',
]

_IMPORT_GUARD = textwrap.dedent(
    """
    import importlib, sys
    sys.dont_write_bytecode = True
    FORBIDDEN = ("os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
                 "subprocess.Popen", "socket.", "os.remove", "os.unlink", "os.rename",
                 "shutil.", "ctypes.", "os.chmod", "os.kill", "os.putenv", "os.truncate")
    def hook(event, args):
        if event.startswith(FORBIDDEN):
            raise SystemExit(f"forbidden audit event {event} {args!r}")
        if event == "open" and args[1] is not None and any(c in str(args[1]) for c in "wax+"):
            raise SystemExit(f"file opened for writing: {args!r}")
    sys.addaudithook(hook)
    sys.path.insert(0, sys.argv[1])
    for name in sys.argv[2:]:
        mod = importlib.import_module(name)
        assert mod.__file__.startswith(sys.argv[1]) and callable(mod.coefficients), name
    print("imported", len(sys.argv) - 2)
    """
)


def test_generated_modules_import_without_side_effects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    names = []
    for i, act in enumerate(TRICKY_ACCEPTED):
        name = f"gen_{i}"
        rc, _, err = _in_process(capsys, "codegen", act, "-o", f"{name}.py")
        assert rc == 0, (act, err)
        names.append(name)
    for act in TRICKY_REFUSED:
        rc, out, err = _in_process(capsys, "codegen", act, "-o", "refused.py")
        _assert_refused(rc, out, err, deqrmt.ParseError)
    proc = subprocess.run(
        [sys.executable, "-I", "-c", _IMPORT_GUARD, str(tmp_path), *names],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == f"imported {len(names)}"
    assert _listing(tmp_path) == sorted(f"{n}.py" for n in names)  # no SENTINEL, no temp file


def test_latex_document_holds_no_user_text(capsys: pytest.CaptureFixture[str]) -> None:
    from deqrmt.symbolic._latex import _tex_number, _tex_text

    rc, out, _ = _in_process(capsys, "latex", "  2*leaky_relu(0.2)\n", "-o", "-", "--dps", "12")
    assert rc == 0 and "leaky" not in out  # only SymPy's LaTeX of the parsed expression
    assert _tex_text("\\input{/etc/passwd}$%&#_^~{}") == (
        r"\textbackslash{}input\{/etc/passwd\}\$\%\&\#\_\textasciicircum{}\textasciitilde{}\{\}"
    )
    assert _tex_number("1/5") == "1/5" and _tex_number("2.5e-7") == r"2.5\times 10^{-7}"
    assert _tex_number("1}\\input{x") == r"\text{1\}\textbackslash{}input\{x}"


# --- 6. environment: ASCII locale, closed pipes, full disk, Ctrl-C --------------------------------


def _ascii_env() -> dict[str, str]:
    env = dict(os.environ, LC_ALL="C", LANG="C", PYTHONUTF8="0")
    env.pop("PYTHONIOENCODING", None)
    return env


def test_ascii_locale_falls_back_to_ascii_names(cli_prefix: list[str]) -> None:
    env = _ascii_env()
    probe = subprocess.run(
        [sys.executable, "-c", "import sys; print(sys.stdout.encoding)"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert probe.stdout.strip().lower() in ("ascii", "ansi_x3.4-1968")
    out = _script(cli_prefix, "coefficients", "tanh", "--dps", "12", env=env)
    assert out.returncode == 0, _text(out.stderr)
    text = out.stdout.decode("ascii")  # every byte is ASCII
    for name in ("phi(x) = tanh(x)", "sigma_a^2 = 1/5", "tau*", "alpha*_1", "kappa*"):
        assert name in text, (name, text)
    assert out.stderr == b""
    out = _script(cli_prefix, "coefficients", "x \u2212 1", env=env)
    line = _assert_refused(out.returncode, _text(out.stdout), _text(out.stderr), deqrmt.ParseError)
    assert line.isascii() and "undecodable byte 0xe2" in line  # UTF-8 bytes in an ASCII locale
    out = _script(cli_prefix, "--help", env=env)
    assert out.returncode == 0 and out.stdout.isascii() and b"coefficients" in out.stdout


def test_closed_pipe_is_silent(cli_prefix: list[str]) -> None:
    with subprocess.Popen(
        [*cli_prefix, "activations"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as proc:
        assert proc.stdout is not None
        try:
            proc.stdout.close()  # the reader leaves before the first byte: `deqrmt … | true`
            _, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert proc.returncode == 2
    assert err == b""
    shell = subprocess.run(
        ["bash", "-c", 'set -o pipefail; "$@" activations | head -1', "sh", *cli_prefix],
        capture_output=True,
        timeout=120,
    )
    assert shell.stderr == b"" and shell.returncode in (0, 2)
    assert len(shell.stdout.splitlines()) == 1


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_full_disk_on_stdout_is_one_line(cli_prefix: list[str]) -> None:
    with open("/dev/full", "wb") as full:
        proc = subprocess.run(
            [*cli_prefix, "activations"], stdout=full, stderr=subprocess.PIPE, timeout=120
        )
    line = _assert_refused(proc.returncode, "", _text(proc.stderr), deqrmt.FileError)
    assert "standard output" in line and "No space left" in line


# Ctrl-C at every moment (readiness hook, not CPU time), closed stdout/stderr and missing
# extras through the console script: test_process.py.

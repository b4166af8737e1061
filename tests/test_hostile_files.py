"""Every file deqrmt reads is untrusted, every file it writes replaces (never writes through).

Reading: a FIFO, a device, a directory or an oversized file in place of a cache key, a cache
entry, a data set or an IDX file is refused at once (or, for the cache, ignored with a note),
never waited on; an IDX file is parsed against its header (rank, item shape, count, exact
length) and a gzip stream is decompressed only as far as the header announces.  ``deqrmt
experiment`` refuses bad sizes and datasets before any work.  Writing: an output replaced with
``--force`` is a new file renamed over the target, so a hard link to the old one keeps the old
bytes.  Refusals through the command line are exit 2 with one line naming a deqrmt error; a
hang would fail the subprocess's timeout (no speed is asserted).
"""

from __future__ import annotations

import gzip
import os
import re
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import deqrmt._errors as deqrmt_errors
from deqrmt import BudgetExceeded, DeqrmtError, FileError, InvalidArgument
from deqrmt._io import open_regular, read_limited, write_output
from deqrmt._text import round_decimal, round_ratio
from deqrmt.cli import main

# --- helpers ---------------------------------------------------------------------------------


def _refused(rc: int, out: str, err: str, error: type[BaseException] = DeqrmtError) -> str:
    """Exit 2, nothing on stdout, one line on stderr naming a subclass of ``error``."""
    assert rc == 2, (rc, err)
    assert out == "", out
    assert "Traceback" not in err, err
    lines = err.splitlines()
    assert len(lines) == 1, err
    m = re.match(r"deqrmt: error: ([A-Za-z]+): ", lines[0])
    assert m, lines[0]
    cls = getattr(deqrmt_errors, m.group(1), None)
    assert isinstance(cls, type) and issubclass(cls, error), (error, lines[0])
    return lines[0]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def _console(*argv: str, env: dict[str, str], timeout: float = 300) -> tuple[int, str, str]:
    """The console script in a child process, always killed and reaped."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "deqrmt", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        proc.kill()
        proc.wait()
    return proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "DEQRMT_CACHE_KEY"}
    src = str(Path(__file__).resolve().parents[1] / "src")
    env["PYTHONPATH"] = os.pathsep.join([src, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.update(extra)
    return env


# --- the one reader: open_regular ------------------------------------------------------------


def test_open_regular_refuses_what_is_not_a_regular_file(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # a blocking open would wait for a writer forever
    for path, kind in ((fifo, "FIFO"), (Path("/dev/zero"), "character device"), (tmp_path, "dir")):
        with pytest.raises(FileError, match="not a regular file") as info:
            open_regular(path, "the test file", 100)
        assert kind.split()[0] in str(info.value)
    link = tmp_path / "link"
    link.symlink_to("/dev/zero")  # followed, then refused for what it is
    with pytest.raises(FileError, match="character device"):
        read_limited(str(link), "the test file", 100)
    real = tmp_path / "real"
    real.write_bytes(b"x" * 101)
    (tmp_path / "to-real").symlink_to(real)
    with pytest.raises(FileError, match="symbolic link"):
        open_regular(tmp_path / "to-real", "the test file", None, follow=False)
    with pytest.raises(BudgetExceeded, match="101 bytes"):
        open_regular(real, "the test file", 100)
    with open_regular(real, "the test file", 101) as fh:
        assert fh.read() == b"x" * 101
    assert read_limited(str(real), "the test file", 10) == b"x" * 11  # the caller sees "more"
    with pytest.raises(FileError, match="No such file"):
        open_regular(tmp_path / "missing", "the test file", 1)


# --- the cache: a FIFO as the key or as an entry ---------------------------------------------


def test_a_fifo_as_the_cache_key_is_noted_not_waited_on(tmp_path: Path) -> None:
    config = tmp_path / "config"
    (config / "deqrmt").mkdir(parents=True)
    os.mkfifo(config / "deqrmt" / "cache.key")
    env = _env(tmp_path, XDG_CONFIG_HOME=str(config), DEQRMT_CACHE_DIR=str(tmp_path / "cache"))
    rc, out, err = _console("coefficients", "relu", "--dps", "12", "--json", env=env)
    assert rc == 0, err
    assert "cache key" in err and "not a regular file" in err and "temporary" in err
    assert '"alpha_1"' in out


def test_fifos_planted_as_cache_entries_are_ignored(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    env = _env(tmp_path, DEQRMT_CACHE_KEY="k" * 32, DEQRMT_CACHE_DIR=str(cache))
    argv = ("coefficients", "relu", "--dps", "12", "--json")
    rc, first, err = _console(*argv, env=env)
    assert rc == 0, err
    entries = sorted(p for p in cache.rglob("*.json") if p.is_file())
    assert entries, "the first run stored no cache entry"
    for entry in entries:
        entry.unlink()
        os.mkfifo(entry)
    rc, second, err = _console(*argv, env=env)
    assert rc == 0, err
    assert second == first  # rebuilt, same bytes


# --- exact rounding of huge ratios (a proven tiny moment, E[cos(1000τξ)] ≈ 10^-217147) ----------


@given(
    num=st.integers(-(10**40), 10**40).filter(bool),
    den=st.integers(1, 10**40),
    n=st.integers(1, 30),
    mode=st.sampled_from(["nearest", "floor", "ceiling"]),
)
def test_round_ratio_is_the_exact_rounding(num: int, den: int, n: int, mode: str) -> None:
    """Against Fraction: n significant digits, ties away from zero for "nearest"."""
    v = Fraction(num, den)
    sign, digits, e = round_ratio(num, den, n, mode)
    assert 10 ** (n - 1) <= digits < 10**n and sign == (1 if v > 0 else -1)
    unit = Fraction(10) ** (e - n + 1)
    got = sign * digits * unit
    if mode == "nearest":
        assert abs(got - v) <= unit / 2
        if abs(got - v) == unit / 2:
            assert abs(got) > abs(v)  # a tie rounds away from zero
    elif mode == "floor":
        assert got <= v < got + unit
    else:
        assert got - unit < v <= got
    assert round_decimal(v, n, mode) == (sign, digits, e)


def test_round_ratio_of_a_700000_bit_ratio() -> None:
    """3^450000/2^1440000 ≈ 10^-218779: its leading digits from 10^e's integer arithmetic
    (Fractions took 8 s a call in their gcds; a ball proof calls it dozens of times)."""
    num, den = 3**450000 + 1, 2**1440000
    sign, digits, e = round_ratio(num, den, 20)
    assert sign == 1 and e == -218779  # 450000·log10 3 − 1440000·log10 2 = −218778.2…
    # check the digits on the logarithm's first 30 digits
    import mpmath

    with mpmath.workdps(60):
        lg = 450000 * mpmath.log10(3) - 1440000 * mpmath.log10(2)
        lead = int(mpmath.nint(mpmath.power(10, lg - mpmath.floor(lg) + 19)))
    assert abs(digits - lead) <= 1


# --- IDX files and `deqrmt experiment` -------------------------------------------------------


def _idx(arr: np.ndarray, *, rank: int | None = None, dims: tuple[int, ...] | None = None) -> bytes:
    dims = arr.shape if dims is None else dims
    rank = len(dims) if rank is None else rank
    head = bytes([0, 0, 8, rank]) + b"".join(int(d).to_bytes(4, "big") for d in dims)
    return head + arr.astype(np.uint8).tobytes()


def _mnist(folder: Path, n_train: int = 60, n_test: int = 20) -> Path:
    """A tiny MNIST in torchvision's raw layout (uncompressed): ``folder/raw``."""
    raw = folder / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    files = {
        "train-images-idx3-ubyte": _idx(rng.integers(0, 255, (n_train, 28, 28))),
        "train-labels-idx1-ubyte": _idx(rng.integers(0, 10, n_train)),
        "t10k-images-idx3-ubyte": _idx(rng.integers(0, 255, (n_test, 28, 28))),
        "t10k-labels-idx1-ubyte": _idx(rng.integers(0, 10, n_test)),
    }
    for stem, blob in files.items():
        (raw / stem).write_bytes(blob)
    return raw


@pytest.fixture
def experiment() -> object:
    pytest.importorskip("torch")
    pytest.importorskip("sklearn")
    from deqrmt.validate import _experiment

    return _experiment


def test_idx_files_that_lie_are_refused(tmp_path: Path, experiment: object) -> None:
    from deqrmt.validate._idx import MAX_IDX_BYTES, read_idx

    f = tmp_path / "f"
    images = np.zeros((10, 28, 28))
    cases: list[tuple[bytes, type[BaseException], str]] = [
        (_idx(images)[:-5], InvalidArgument, "truncated"),
        (_idx(images, dims=(60000, 28, 28)), InvalidArgument, "truncated"),
        (_idx(images, rank=0, dims=()), InvalidArgument, "0 dimensions"),
        (_idx(images) + b"\0", InvalidArgument, "longer than its header"),
        (_idx(np.zeros((10, 27, 28))), InvalidArgument, "shape 27×28"),
        (b"\x1f\x8b\x08\x00" + b"\0" * 20, InvalidArgument, "not an IDX file"),
        (b"PK\x03\x04", InvalidArgument, "not an IDX file"),
        (b"", InvalidArgument, "truncated"),
        (_idx(images, dims=(2**31, 28, 28))[:16], BudgetExceeded, "MAX_IDX_BYTES"),
        (_idx(np.zeros((0, 28, 28))), InvalidArgument, "no items"),
    ]
    for blob, error, message in cases:
        f.write_bytes(blob)
        with pytest.raises(error, match=message):
            read_idx(f, 3, (28, 28))
    ok = read_idx(_mnist(tmp_path / "ok") / "t10k-images-idx3-ubyte", 3, (28, 28))
    assert ok.shape == (20, 28, 28) and ok.dtype == np.uint8
    # gzip: a bomb (a header of 10 images, then 80 MB of zeros) stops one byte past the header
    bomb = tmp_path / "bomb.gz"
    with gzip.open(bomb, "wb", compresslevel=1) as fh:
        fh.write(_idx(images))
        for _ in range(80):
            fh.write(bytes(2**20))
    assert bomb.stat().st_size < MAX_IDX_BYTES
    with pytest.raises(InvalidArgument, match="longer than its header"):
        read_idx(bomb, 3, (28, 28))
    broken = tmp_path / "broken.gz"
    broken.write_bytes(gzip.compress(_idx(images))[:-12])
    with pytest.raises(InvalidArgument, match="cannot be read|truncated"):
        read_idx(broken, 3, (28, 28))
    (tmp_path / "plain.gz").write_bytes(_idx(images))
    with pytest.raises(InvalidArgument, match="not a gzip file"):
        read_idx(tmp_path / "plain.gz", 3, (28, 28))


def test_mnist_folders_that_lie_are_refused_by_the_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], experiment: object
) -> None:
    def run(folder: Path, *more: str) -> str:
        argv = ["experiment", "--dataset", f"mnist:{folder}", "--m", "16", "--seeds", "1"]
        return _refused(*_run(capsys, *argv, "--n-train", "20", "--n-test", "5", *more))

    def folder(name: str) -> Path:
        return _mnist(tmp_path / name).parent

    d = folder("labels")
    (d / "raw" / "train-labels-idx1-ubyte").write_bytes(_idx(np.zeros(59)))
    assert "60 images but 59 labels" in run(d)
    d = folder("truncated")
    blob = (d / "raw" / "train-images-idx3-ubyte").read_bytes()
    (d / "raw" / "train-images-idx3-ubyte").write_bytes(blob[: len(blob) // 2])
    assert "truncated" in run(d)
    d = folder("claims")
    claims = _idx(np.zeros((60, 28, 28)), dims=(60000, 28, 28))  # 60 images, 60000 claimed
    (d / "raw" / "train-images-idx3-ubyte").write_bytes(claims)
    assert "truncated" in run(d)
    d = folder("ndim0")
    (d / "raw" / "t10k-images-idx3-ubyte").write_bytes(bytes([0, 0, 8, 0]))
    assert "0 dimensions" in run(d)
    d = folder("zero")
    (d / "raw" / "train-images-idx3-ubyte").unlink()
    (d / "raw" / "train-images-idx3-ubyte").symlink_to("/dev/zero")
    assert "character device" in run(d)
    d = folder("fifo")
    (d / "raw" / "t10k-labels-idx1-ubyte").unlink()
    os.mkfifo(d / "raw" / "t10k-labels-idx1-ubyte")
    assert "FIFO" in run(d)
    d = folder("few")
    assert "has 60 samples" in run(d, "--n-train", "61")
    assert "nothing is downloaded" in run(tmp_path / "absent")
    assert "File name too long" in run(tmp_path / ("a" * 5000))
    with pytest.raises(FileError, match="null byte"):
        experiment.load_dataset("mnist:a\x00b", n_train=2, n_test=1, seed=0)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--seeds", "0"], r"seeds[= ]0 is outside"),
        (["--seeds", "-3"], r"seeds[= ]-3 is outside"),
        (["--m", "10000000"], r"m[= ]10000000 is outside"),
        (["--m", "0"], r"m[= ]0 is outside"),
        (["--n-train", "100000000"], r"n.train[= ]100000000 is outside"),
        (["--n-test", "0"], r"n.test[= ]0 is outside"),
        (["--layers", "0"], r"layers[= ]0 is outside"),
        (["--dataset", ""], "no dataset given"),
        (["--dataset", ",,"], "no dataset given"),
        (["--dataset", "gmm,imagenet"], "unknown dataset 'imagenet'"),
        (["--dataset", "mnist:"], "unknown dataset 'mnist:'"),
        (["--dataset", "digits", "--n-train", "5000"], "digits has 1797 samples"),
        (["--m", "8192", "--n-train", "60000", "--seeds", "100"], "floating-point operations"),
    ],
)
def test_experiment_sizes_and_datasets_are_refused_before_any_work(
    capsys: pytest.CaptureFixture[str], experiment: object, argv: list[str], message: str
) -> None:
    line = _refused(*_run(capsys, "experiment", "--seeds", "1", "--m", "16", *argv))
    assert re.search(message, line), line


def test_experiment_work_estimate_admits_the_defaults(experiment: object) -> None:
    flops, peak = experiment.work_estimate(("gmm", "digits"), None, 1024, 5, 1000, 500)  # type: ignore[attr-defined]
    assert 1e11 < flops < experiment.MAX_FLOPS / 4  # type: ignore[attr-defined]
    assert peak < 2**30
    with pytest.raises(InvalidArgument, match="give a list"):
        experiment.check_arguments("gmm", None, 16, 1, 20, 5)  # type: ignore[attr-defined]


# --- writes replace, never write through -----------------------------------------------------


def test_forced_writes_replace_a_hard_link_and_refuse_a_symlink(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old")
    other = tmp_path / "other.txt"
    os.link(target, other)  # the same inode under another name
    assert write_output(str(target), "new", force=True) == str(target)
    assert target.read_text() == "new" and other.read_text() == "old"
    assert os.stat(target).st_ino != os.stat(other).st_ino
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched")
    link = tmp_path / "link.txt"
    link.symlink_to(victim)
    with pytest.raises(FileError, match="symbolic link"):
        write_output(str(link), "new", force=True)
    assert victim.read_text() == "untouched" and link.is_symlink()


def test_forced_writes_through_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``latex -o FILE --force`` and ``--plot DIR --force`` (write_directory): the other name of
    a hard-linked target keeps the old bytes; a symbolic link is refused, its target untouched."""
    from deqrmt._io import write_directory

    out = tmp_path / "relu.tex"
    out.write_text("old")
    os.link(out, tmp_path / "keep.tex")
    rc, _, err = _run(capsys, "latex", "relu", "-o", str(out), "--force")
    assert rc == 0, err
    assert (tmp_path / "keep.tex").read_text() == "old" and "alpha" in out.read_text()
    victim = tmp_path / "victim.tex"
    victim.write_text("untouched")
    (tmp_path / "link.tex").symlink_to(victim)
    line = _refused(*_run(capsys, "latex", "relu", "-o", str(tmp_path / "link.tex"), "--force"))
    assert "symbolic link" in line and victim.read_text() == "untouched"
    plots = tmp_path / "plots"
    plots.mkdir()
    (plots / "figure.png").write_bytes(b"old")
    os.link(plots / "figure.png", tmp_path / "keep.png")

    def produce(tmp: str) -> list[str]:
        Path(tmp, "figure.png").write_bytes(b"new")
        return [os.path.join(tmp, "figure.png")]

    write_directory(plots, produce, force=True)
    assert (plots / "figure.png").read_bytes() == b"new"
    assert (tmp_path / "keep.png").read_bytes() == b"old"


# --- escapes: an activation's name in every LaTeX repr ---------------------------------------

HOSTILE_NAMES = [
    r"\input{/etc/passwd}",
    "a$b$c",
    "x & y",
    "50% off",
    "#1 ## #",
    "x^2_1 ~ {}",
    "\\\\ \\end{aligned}",
    "line\nbreak",
]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_latex_reprs_escape_the_activation_name(name: str) -> None:
    """``\\input``, ``$``, ``&``, ``%``, ``#`` and the rest reach the title row escaped: every
    special is preceded by a backslash (``\\textbackslash{}`` for the backslash itself)."""
    import sympy as sp

    import deqrmt
    from deqrmt.symbolic import Activation
    from deqrmt.symbolic._activation import X

    act = Activation(name, sp.Max(X, 0))
    for result in (
        deqrmt.deq_coefficients(act, dps=12),
        deqrmt.explicit_coefficients([act], dps=12),
        deqrmt.sphere_coefficients(act, dps=12),
    ):
        tex = result._repr_latex_()
        title = tex.splitlines()[1]
        assert title.startswith(r"\text{") and "\n" not in title
        plain = title.replace(r"\textbackslash{}", "").replace(r"\textasciicircum{}", "")
        plain = plain.replace(r"\textasciitilde{}", "")
        # inside the name, a special character only ever appears escaped
        body = plain[plain.index(",") : plain.index(":}")]
        assert not re.search(r"(?<!\\)[$&%#_{}]", body), body
        assert r"\input" not in plain and r"\end{aligned}" not in title
        assert tex.count(r"\end{aligned}") == 1


# --- `check` within the budget rule ------------------------------------------------------------


@pytest.mark.slow
def test_check_of_a_fast_oscillation_answers(tmp_path: Path) -> None:
    """``check 'sin(1000*x)'`` ran past 150 s (the proven digits of E[cos(1000τξ)] ≈ 10^-217147
    were rounded with 700,000-bit Fractions); now it answers (about 4 s of CPU, not asserted)."""
    env = _env(tmp_path, DEQRMT_CACHE_DIR=str(tmp_path / "cache"))
    rc, out, err = _console("check", "sin(1000*x)", "--json", env=env, timeout=600)
    assert rc in (0, 1), err  # 1: Assumption 1 fails for φ with L₁ = 1000, as it should
    assert '"lipschitz"' in out and "Traceback" not in err


def test_compare_plot_force_replaces_a_hard_linked_png(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``compare --plot DIR --force`` over a PNG that has a second name: the new plot is a new
    file; the other name keeps the old bytes."""
    pytest.importorskip("matplotlib")
    from deqrmt.cli.compare import PLOT_NAME

    plots = tmp_path / "plots"
    plots.mkdir()
    (plots / PLOT_NAME).write_bytes(b"old")
    os.link(plots / PLOT_NAME, tmp_path / "elsewhere.png")
    argv = ["compare", "relu", "--plot", str(plots), "--plot-range", "0.1:0.2:2", "--force"]
    rc, _, err = _run(capsys, *argv)
    assert rc == 0, err
    assert (tmp_path / "elsewhere.png").read_bytes() == b"old"
    assert (plots / PLOT_NAME).read_bytes().startswith(b"\x89PNG")

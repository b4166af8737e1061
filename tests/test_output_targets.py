"""Every command's output target is checked before any work starts.

Each command that writes files (``-o``, ``--plot DIR``, ``--export``, ``--store``) is run
in-process against targets it cannot use: a path under a regular file, a directory of /proc
(no file can be created there, not even by root), a FIFO, a symbolic link, an existing file
without ``--force`` and, when the tests do not run as root (for whom permission bits do not
stop a write), a read-only directory.  Each must exit 2 with one line naming the path, without
starting its work: the function that does the work is replaced by one that records a call, and
no call may be recorded.  A test also enumerates the commands of the parser, so that a new
command with ``--force`` (one that writes files) must be added to the table here.
"""

from __future__ import annotations

import argparse
import os
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from deqrmt.cli import build_parser, main

#: the options that name something a command writes
OUTPUT_OPTIONS = ("--output", "--out", "--plot", "--export", "--store")

SPEC = """\
kind = "coefficients"
activations = ["relu"]
sigma_a2 = ["0.2"]
dps = 12
"""


#: (command, option) → (argv before the option, the work to watch, a file the option writes
#: (a name inside the directory for --plot), whether it takes a directory)
CASES: dict[tuple[str, str], tuple[list[str], str, str, bool]] = {
    ("latex", "--output"): (["latex", "tanh"], "deqrmt.numeric:deq_coefficients", "", False),
    ("codegen", "--output"): (
        ["codegen", "tanh"],
        "deqrmt.numeric._codegen:generate_module",
        "",
        False,
    ),
    ("compare", "--plot"): (
        ["compare", "tanh", "relu"],
        "deqrmt.cli.compare:_outcome",
        "compare.png",
        True,
    ),
    ("coefficients", "--plot"): (
        ["coefficients", "tanh", "--sigma-a2", "0.1:0.3:3"],
        "deqrmt.cli.coefficients:_run_grid",
        "coefficients.png",
        True,
    ),
    ("validate", "--plot"): (
        ["validate", "tanh"],
        "deqrmt.validate._sweep:run_validation",
        "errors.png",
        True,
    ),
    ("spectrum", "--plot"): (
        ["spectrum", "tanh"],
        "deqrmt.cli.spectrum:_compute",
        "spectrum.png",
        True,
    ),
    ("experiment", "--plot"): (
        ["experiment", "--dataset", "gmm"],
        "deqrmt.validate._experiment:run_experiment",
        "experiment.png",
        True,
    ),
    ("bias", "--plot"): (
        ["bias", "1/(1-w)"],
        "deqrmt.symbolic._bias:derive_bias",
        "q.png",
        True,
    ),
    ("sweep", "--plot"): (["sweep", "SPEC"], "deqrmt.sweep:run_sweep", "coefficients.png", True),
    ("sweep", "--export"): (["sweep", "SPEC"], "deqrmt.sweep:run_sweep", "", False),
    ("sweep", "--store"): (["sweep", "SPEC"], "deqrmt.sweep._run:_pending", "", False),
    ("risk", "--plot"): (
        ["risk", "tanh", "--n", "32", "--ratios", "1"],
        "deqrmt.validate._risk:_run",
        "",
        False,
    ),
    ("predict", "--out"): (
        ["predict", "tanh", "--train", "X.npy", "--labels", "y.npy", "--test", "Xte.npy"],
        "deqrmt.symbolic:get_activation",
        "",
        False,
    ),
}

#: output options whose refusals are tested with their own store's rules, elsewhere
TESTED_ELSEWHERE = {
    # a Zarr store (a directory): a foreign path, a link, an existing store for other data,
    # --force and the budgets are all checked before any tile (tests/test_kernels_store.py)
    ("kernels", "--out"),
}


def _suffix(command: str, option: str) -> str:
    return {"latex": ".tex", "codegen": ".py"}.get(command, ".csv" if option == "--export" else "")


def _under_file(tmp: Path, name: str, is_dir: bool) -> tuple[str, str]:
    (tmp / "afile").write_text("keep\n")
    return str(tmp / "afile" / ("plots" if is_dir else "out" + name)), "afile"


def _proc(tmp: Path, name: str, is_dir: bool) -> tuple[str, str]:
    if not os.path.isdir("/proc/self"):
        pytest.skip("no /proc")
    return "/proc/self/deqrmt-out" + ("" if is_dir else name), "proc"


def _fifo(tmp: Path, name: str, is_dir: bool) -> tuple[str, str]:
    path = tmp / ("fifo" + ("" if is_dir else name))
    os.mkfifo(path)
    return str(path), "fifo"


def _link(tmp: Path, name: str, is_dir: bool, plot_name: str) -> tuple[str, str]:
    (tmp / "target").write_text("keep\n")
    if is_dir:
        (tmp / "plots").mkdir()
        (tmp / "plots" / plot_name).symlink_to(tmp / "target")
        return str(tmp / "plots"), "link"
    (tmp / ("link" + name)).symlink_to(tmp / "target")
    return str(tmp / ("link" + name)), "link"


def _existing(tmp: Path, name: str, is_dir: bool, plot_name: str) -> tuple[str, str]:
    if is_dir:
        (tmp / "plots").mkdir()
        (tmp / "plots" / plot_name).write_text("keep\n")
        return str(tmp / "plots"), "existing"
    (tmp / ("old" + name)).write_text("keep\n")
    return str(tmp / ("old" + name)), "existing"


def _read_only(tmp: Path, name: str, is_dir: bool) -> tuple[str, str]:
    if os.geteuid() == 0:
        pytest.skip("root writes into a read-only directory; the other targets cover root")
    ro = tmp / "ro"
    ro.mkdir()
    ro.chmod(stat.S_IRUSR | stat.S_IXUSR)
    return str(ro / ("plots" if is_dir else "out" + name)), "read-only"


TARGETS: dict[str, Callable[..., tuple[str, str]]] = {
    "under-a-file": _under_file,
    "proc": _proc,
    "fifo": _fifo,
    "link": _link,
    "existing": _existing,
    "read-only": _read_only,
}


def _output_options() -> set[tuple[str, str]]:
    """(command, option) for every option of OUTPUT_OPTIONS the parser has."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found = set()
    for name, p in sub.choices.items():
        opts = {o for a in p._actions for o in a.option_strings}
        if "--force" in opts:
            assert opts & set(OUTPUT_OPTIONS), f"{name} has --force but no known output option"
        found |= {(name, o) for o in OUTPUT_OPTIONS if o in opts}
    return found


def test_every_output_option_is_in_the_table():
    assert _output_options() == set(CASES) | TESTED_ELSEWHERE


@pytest.mark.parametrize("target", sorted(TARGETS))
@pytest.mark.parametrize("case", sorted(CASES), ids=lambda c: f"{c[0]}{c[1]}")
def test_an_unusable_output_is_refused_before_the_work(tmp_path, monkeypatch, capsys, case, target):
    command, option = case
    before, work, plot_name, is_dir = CASES[case]
    if command == "sweep":
        pytest.importorskip("distributed")
    if command in ("validate", "experiment", "spectrum") or option == "--plot":
        pytest.importorskip("matplotlib")
    if command in ("validate", "experiment"):
        pytest.importorskip("torch")
    build = TARGETS[target]
    suffix = _suffix(command, option)
    if target in ("link", "existing"):
        path, _ = build(tmp_path, suffix, is_dir, plot_name)
    else:
        path, _ = build(tmp_path, suffix, is_dir)
    if option == "--store" and target == "existing":
        pytest.skip("an existing store is resumed, not replaced: not a refusal")
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC)
    argv = [str(spec) if a == "SPEC" else a for a in before] + [option, path]
    calls: list[str] = []
    module, attr = work.split(":")
    mod = __import__(module, fromlist=[attr])

    def watched(*args, **kwargs):
        calls.append(work)
        raise AssertionError(f"{work} ran before the output was checked")

    monkeypatch.setattr(mod, attr, watched)
    monkeypatch.chdir(tmp_path)
    snapshot = {
        p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and not p.is_symlink()
    }
    code = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert not calls, f"the work started: {calls}"
    assert code == 2, (code, err)
    assert len(err) == 1 and err[0].startswith("deqrmt: error:"), err
    assert "FileError" in err[0] or "StoreError" in err[0], err
    for p, data in snapshot.items():
        if p.name != "spec.toml":
            assert p.read_bytes() == data  # nothing the user had was touched


def test_compare_plot_in_an_unusable_directory_is_refused_at_once(tmp_path):
    """The console script, as a user runs it: `compare tanh relu --plot pl` where pl cannot be
    created.  Exit 2, one line, and none of the plot's progress lines (the work never began).
    The time to the refusal is printed for the record (-s), not asserted."""
    (tmp_path / "afile").write_text("")
    cmd = [sys.executable, "-m", "deqrmt", "compare", "tanh", "relu", "--plot", "afile/pl"]
    t0 = time.monotonic()
    proc = subprocess.Popen(
        cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env()
    )
    try:
        out, err = proc.communicate(timeout=300)
    finally:
        proc.kill()
        proc.wait()
    print(f"refused after {time.monotonic() - t0:.2f} s")
    lines = err.decode().strip().splitlines()
    assert proc.returncode == 2, (proc.returncode, lines)
    assert len(lines) == 1 and "afile" in lines[0], lines
    assert not out  # no table: the coefficients were not computed


def _env() -> dict[str, str]:
    src = str(Path(__file__).resolve().parents[1] / "src")
    return dict(os.environ, PYTHONPATH=os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]))

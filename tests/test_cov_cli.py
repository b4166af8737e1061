"""Edges of the command line that the command tests do not reach: usage hints for a list
given with spaces or words the shell split, the argparse types of ``--n`` and ``--workers``,
the notes under a table, a broken optional import, the text of SymPy sets, the exit paths of
``main`` (SystemExit, DEQRMT_DEBUG, a stream that cannot be flushed), and ``coefficients
--plot``.  Expected strings are written out by hand.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest
import sympy as sp

from deqrmt import InvalidArgument, MissingExtra
from deqrmt.cli import _common as common
from deqrmt.cli import _math_text, _outcome, _settle_stdout, main


def _usage_error(argv: list[str], capsys) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err  # one line
    return err


def test_a_list_given_with_spaces_is_joined_with_commas_up_to_the_next_flag(capsys) -> None:
    err = _usage_error(
        ["coefficients", "tanh", "--sigma-a2", "0.1", "0.2", "0.3", "--dps", "20"], capsys
    )
    assert (
        "--sigma-a2 takes one value; for several, join them with commas: --sigma-a2 0.1,0.2,0.3"
        in err
    )


def test_an_unknown_flag_without_a_command_points_at_the_top_level_help(capsys) -> None:
    err = _usage_error(["--nonsense-flag"], capsys)
    assert "the following arguments are required: COMMAND (see deqrmt --help)" in err


def test_words_of_one_argument_are_not_hinted_at_separately(capsys) -> None:
    # "x y" is one argument; argparse reports its words, which are not arguments themselves
    err = _usage_error(["coefficients", "tanh", "x y"], capsys)
    assert "unrecognized arguments: x y" in err
    assert "join them with commas" not in err and "quote it" not in err


def test_a_decimal_comma_in_a_value_is_pointed_out() -> None:
    msg = "argument --tol: invalid float value: '1,5'"
    assert common.usage_hint(msg, [], argparse.ArgumentParser(), argparse.ArgumentParser()) == (
        "; a decimal comma? write 1.5"
    )
    # an integer option: "1,5" may be a list, not a decimal
    msg = "argument --m: invalid int value: '1,5'"
    assert common.usage_hint(msg, [], argparse.ArgumentParser(), argparse.ArgumentParser()) == ""


@pytest.mark.parametrize(
    ("text", "expected"),
    [("256", (256,)), ("256, 512", (256, 512)), ("64,", (64,))],
)
def test_sample_sizes(text: str, expected: tuple[int, ...]) -> None:
    assert common.sample_sizes(text) == expected


@pytest.mark.parametrize(
    ("text", "match"), [("a,2", "comma-separated integers"), (" , ", "at least one")]
)
def test_sample_sizes_refused(text: str, match: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=match):
        common.sample_sizes(text)


def test_positive_int() -> None:
    assert common.positive_int("7") == 7
    for bad in ("x", "0", "-3", "1.5"):
        with pytest.raises(
            argparse.ArgumentTypeError, match=f"expected a positive integer, got '{bad}'"
        ):
            common.positive_int(bad)


def test_number_list() -> None:
    assert common.number_list(" 1, 1/3 ,inf", "--t", "1,10") == ["1", "1/3", "inf"]
    with pytest.raises(
        InvalidArgument, match=r"--t '1,,2': expected numbers separated by commas, e.g. 1,10\."
    ):
        common.number_list("1,,2", "--t", "1,10")


def test_print_notes(capsys) -> None:
    common.print_notes(["alpha_1", "kappa"], "Arb failed", ("one", "two"), gap=True)
    assert capsys.readouterr().out == (
        "\nnote: fewer digits than requested are proven/verified for alpha_1, kappa\n"
        "note: not certified (Arb failed); the digits shown agree between two evaluations\n"
        "note: one\nnote: two\n"
    )
    common.print_notes([], None, ())
    assert capsys.readouterr().out == ""


def test_a_failing_import_of_an_extra_is_a_missing_extra() -> None:
    plot = ("coefficients --plot", ("matplotlib",))
    missing = r"pip install 'deqrmt\[validate\]' \(missing: matplotlib.pyplot\)"
    with pytest.raises(MissingExtra, match=missing), common.extra_imports(*plot):
        raise ImportError("broken", name="matplotlib.pyplot")
    # not one of the extra's modules: a bug, passed on
    with pytest.raises(ImportError, match="other"), common.extra_imports(*plot):
        raise ImportError("other", name="numpy")
    # already said: passed on as it is
    with pytest.raises(MissingExtra, match="^inner$"), common.extra_imports(*plot):
        raise MissingExtra("inner")


def test_math_and_set_text() -> None:
    x = sp.Symbol("x")
    assert _math_text.math_text(sp.Abs(x) + x**3) == "x³ + |x|"
    assert _math_text.set_text(sp.Interval(-sp.oo, 0, right_open=True)) == "(-∞, 0)"
    assert _math_text.set_text(sp.Interval(-1, 1)) == "[-1, 1]"
    assert _math_text.set_text(
        sp.Union(sp.Interval.open(-sp.oo, 0), sp.Interval.open(0, sp.oo))
    ) == ("(-∞, 0) ∪ (0, ∞)")
    assert _math_text.set_text(sp.FiniteSet(-1, 2)) == "{-1, 2}"
    assert _math_text.set_text(sp.S.EmptySet) == "∅"
    assert _math_text.set_text(sp.S.Naturals) == "Naturals"


# -- main's exit paths ---------------------------------------------------------------------------


def test_system_exit_is_not_translated() -> None:
    with pytest.raises(SystemExit):
        _outcome(SystemExit(3), [])


def test_deqrmt_debug_raises_a_user_error_with_its_traceback(monkeypatch) -> None:
    monkeypatch.setenv("DEQRMT_DEBUG", "1")
    err = InvalidArgument("bad")
    with pytest.raises(InvalidArgument, match="^bad$"):
        _outcome(err, [])
    monkeypatch.delenv("DEQRMT_DEBUG")
    monkeypatch.delenv("DEQRMT_BUG_LOG", raising=False)
    assert _outcome(ValueError("a bug"), []) == 70  # no log file asked for: nothing written


def test_a_stream_that_cannot_be_flushed_is_pointed_at_dev_null(tmp_path: Path) -> None:
    fd = os.open(tmp_path / "out", os.O_WRONLY | os.O_CREAT)

    class Full:
        def flush(self) -> None:
            raise OSError(28, "No space left on device")

        def fileno(self) -> int:
            return fd

    try:
        _settle_stdout(Full())
        assert os.path.samestat(os.fstat(fd), os.stat(os.devnull))
    finally:
        os.close(fd)


# -- coefficients --plot ----------------------------------------------------------------------


def test_coefficients_plot_writes_one_png(tmp_path: Path, capsys) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "plots"
    assert (
        main(["coefficients", "tanh", "--sigma-a2", "0.1,0.3", "--dps", "15", "--plot", str(out)])
        == 0
    )
    captured = capsys.readouterr()
    png = out / "coefficients.png"
    assert f"wrote {png}" in captured.err
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_coefficients_plot_needs_a_range(tmp_path: Path, capsys) -> None:
    assert main(["coefficients", "tanh", "--sigma-a2", "0.2", "--plot", str(tmp_path / "p")]) == 2
    assert "--plot needs a σ_a² range or list" in capsys.readouterr().err
    assert not (tmp_path / "p").exists()


def test_take_over_outside_the_main_thread_leaves_the_signals_alone() -> None:
    import signal
    import threading

    from deqrmt.cli import _process

    before = signal.getsignal(signal.SIGINT)
    got: list[bool] = []
    t = threading.Thread(target=lambda: got.append(_process.take_over()))
    t.start()
    t.join()
    assert got == [False]
    assert signal.getsignal(signal.SIGINT) is before
    assert _process._State.active is False


def test_sweep_plot_with_matplotlib_blocked_is_a_missing_extra(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    # matplotlib blocked (sys.modules[...] = None: find_spec says it is absent): the one-line
    # MissingExtra (exit 2), before the spec's store is made.
    import sys

    spec = tmp_path / "s.toml"
    spec.write_text('kind = "coefficients"\nactivations = ["tanh"]\nsigma_a2 = 0.2\n')
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert main(["sweep", str(spec), "--plot", str(tmp_path / "plots")]) == 2
    err = capsys.readouterr().err
    assert "MissingExtra: --plot needs matplotlib" in err
    assert not (tmp_path / "s.sqlite").exists()


@pytest.mark.parametrize("points", ["10", "30000"])
def test_spectrum_points_out_of_range_is_refused(points: str, capsys) -> None:
    assert main(["spectrum", "tanh", "--points", points]) == 2
    assert f"--points must be in [64, 20001], got {points}." in capsys.readouterr().err


def test_spectrum_plot_with_a_broken_matplotlib_spec_is_a_missing_extra(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    import sys
    import types

    broken = types.ModuleType("matplotlib")  # in sys.modules with no __spec__: find_spec raises
    broken.__spec__ = None
    monkeypatch.setitem(sys.modules, "matplotlib", broken)
    assert main(["spectrum", "tanh", "--plot", str(tmp_path / "p")]) == 2
    assert "--plot` needs matplotlib" in capsys.readouterr().err


def test_an_interrupt_a_library_swallowed_still_exits_130(monkeypatch, capsys) -> None:
    # The command finished, but a KeyboardInterrupt was raised in it (a library caught it and
    # went on): the run is reported interrupted (130), not as a success.
    from deqrmt.cli import _process

    assert main(["families"]) == 0
    capsys.readouterr()
    monkeypatch.setattr(_process, "interrupt_raised", lambda: True)
    assert main(["families"]) == 130
    assert capsys.readouterr().err == "deqrmt: interrupted\n"

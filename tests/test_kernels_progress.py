"""deqrmt.kernels(progress=…): opt-in bar, a callable's counts, and a refused value."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("tqdm")

import deqrmt  # noqa: E402
from deqrmt import InvalidArgument  # noqa: E402
from deqrmt.validate._kernels import kernel_tiles  # noqa: E402

X = np.random.default_rng(0).standard_normal((40, 12)) / np.sqrt(12)
TILES = len(kernel_tiles(40, None, 8))  # 15 tiles on and above the diagonal


def test_progress_true_draws_a_bar_over_the_tiles(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DEQRMT_NO_PROGRESS", raising=False)
    plain = deqrmt.kernels("relu", X, tile=8, device="cpu")
    assert capsys.readouterr().err == ""  # no bar unless asked for, even at a terminal
    G = deqrmt.kernels("relu", X, tile=8, device="cpu", progress=True)
    err = capsys.readouterr().err
    # asked for: drawn on stderr even when it is not a terminal (here: captured)
    assert "kernels" in err and f"{TILES}/{TILES} [" in err and "tile/s" in err, err
    np.testing.assert_array_equal(G, plain)


def test_environment_switch_wins(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEQRMT_NO_PROGRESS", "1")
    deqrmt.kernels("relu", X, tile=8, device="cpu", progress=True)
    assert capsys.readouterr().err == ""


def test_a_callable_gets_every_tile_and_false_means_none(
    capsys: pytest.CaptureFixture[str],
) -> None:
    calls: list[tuple[int, int]] = []
    deqrmt.kernels("relu", X, tile=8, device="cpu", progress=lambda d, t: calls.append((d, t)))
    assert calls == [(k, TILES) for k in range(1, TILES + 1)]
    deqrmt.kernels("relu", X, tile=8, device="cpu", progress=False)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("bad", ["yes", 1, 0.5, [True]])
def test_anything_else_is_refused_naming_progress(bad: object) -> None:
    with pytest.raises(
        InvalidArgument, match=r"^progress=.*expected True.*progress\(done, total\)"
    ):
        deqrmt.kernels("relu", X, progress=bad)

"""Exact kernels near the hardware (issue 24): the tiled, in-place path against a dense reference.

The reference is written here, plainly: the whole n × n Gram matrix, the Newton iteration
G ← G + (F(G) − G)/(1 − Ġ) on the whole matrix at once with the bivariate evaluator, the
univariate fixed point on the diagonal, K by :func:`ntk_limit`.  The tiled path must agree
to float64 rounding (rtol 1e-12) with tiles and Gram blocks forced small, so that there are
many tiles, diagonal tiles, short last tiles and several worker threads.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import deqrmt._budget as budget  # noqa: E402
import deqrmt.validate._exact as exact  # noqa: E402
import deqrmt.validate._tiles as tiles  # noqa: E402
from deqrmt import BudgetExceeded  # noqa: E402
from deqrmt.symbolic import library_activation  # noqa: E402
from deqrmt.validate import paper_mixture  # noqa: E402
from deqrmt.validate._bivariate import bivariate  # noqa: E402
from deqrmt.validate._diagonal import diagonal_kernel  # noqa: E402
from deqrmt.validate._exact import exact_kernels, ntk_limit  # noqa: E402
from deqrmt.validate._pointwise import CenteredActivation  # noqa: E402

SA2, SB2 = 0.2, 0.8


@pytest.fixture(scope="module")
def data() -> np.ndarray:
    return paper_mixture(40).sample(37, np.random.default_rng(11)).X  # p = 40, n = 37


def _act(name: str, c: float) -> CenteredActivation:
    return CenteredActivation.from_activation(library_activation(name), c)


def _dense_reference(
    act: CenteredActivation, X: np.ndarray, trainable: tuple[str, ...]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(G*, Ġ*, K*) by a dense Newton iteration on the whole matrix (no tiles, no threads)."""
    gram = X.T @ X
    n = gram.shape[0]
    g_diag, gd_diag = diagonal_kernel(act, torch.as_tensor(np.diag(gram).copy()), SA2, SB2)
    q = torch.as_tensor(SA2 * g_diag + SB2 * np.diag(gram))
    biv = bivariate(act, q, tol=1e-14)
    off = ~np.eye(n, dtype=bool)
    G = np.zeros((n, n))
    stop = 1e-13 * float(np.abs(g_diag).max())
    for _ in range(60):
        f, df = biv(slice(0, n), slice(0, n), torch.as_tensor(SA2 * G + SB2 * gram))
        gdot = SA2 * df.numpy()
        step = (f.numpy() - G) / (1 - gdot)
        G[off] += step[off]
        if np.abs(step[off]).max() <= stop:
            break
    f, df = biv(slice(0, n), slice(0, n), torch.as_tensor(SA2 * G + SB2 * gram))
    gdot = SA2 * df.numpy()
    np.fill_diagonal(G, g_diag)
    np.fill_diagonal(gdot, gd_diag)
    return G, gdot, ntk_limit(G, gdot, gram, SA2, SB2, trainable)


@pytest.fixture
def small_tiles(monkeypatch: pytest.MonkeyPatch) -> None:
    # Gram blocks of 5 rows, 3 worker threads whatever the machine has
    monkeypatch.setattr(tiles, "GRAM_BLOCK", 5)
    monkeypatch.setattr(tiles.gram_upper, "__defaults__", (5,))
    monkeypatch.setattr(exact, "tile_workers", lambda device: 3)


@pytest.mark.usefixtures("small_tiles")
@pytest.mark.parametrize("trainable", [("a", "A"), ("a", "A", "B")])
@pytest.mark.parametrize(("name", "c"), [("tanh", 0.0), ("relu", 0.4), ("hard_tanh", 0.05)])
def test_tiles_match_a_dense_reference(
    data: np.ndarray, name: str, c: float, trainable: tuple[str, ...]
) -> None:
    act = _act(name, c)
    G, gdot, K = _dense_reference(act, data, trainable)
    for tile in (4, 8, 37):  # 10 tiles per row with a short last one; one tile
        ex = exact_kernels(act, data, SA2, SB2, tile=tile, trainable=trainable)
        np.testing.assert_allclose(ex.G, G, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(ex.K, K, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(ex.Gdot, gdot, rtol=1e-12, atol=1e-15)
        assert np.array_equal(ex.G, ex.G.T) and np.array_equal(ex.K, ex.K.T)


@pytest.mark.usefixtures("small_tiles")
def test_tile_size_and_threads_change_nothing_but_rounding(data: np.ndarray) -> None:
    act = _act("gelu", 0.29)
    one = exact_kernels(act, data, SA2, SB2, tile=37)
    many = exact_kernels(act, data, SA2, SB2, tile=6)
    np.testing.assert_allclose(many.G, one.G, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(many.K, one.K, rtol=1e-12, atol=1e-15)
    again = exact_kernels(act, data, SA2, SB2, tile=6)  # threads, any order: the same bits
    assert np.array_equal(again.G, many.G) and np.array_equal(again.K, many.K)


def test_gram_upper_is_x_transpose_x_above_the_diagonal() -> None:
    X = torch.as_tensor(np.random.default_rng(3).standard_normal((9, 23)))
    out = torch.full((23, 23), np.nan, dtype=torch.float64)
    tiles.gram_upper(X, out, block=4)
    want = (X.T @ X).numpy()
    iu = np.triu_indices(23)
    np.testing.assert_allclose(out.numpy()[iu], want[iu], rtol=1e-14)
    # each tile reads a symmetric Gram block from the upper triangle alone
    for r0, r1, c0, c1 in tiles.upper_tiles(23, 6):
        np.testing.assert_allclose(
            tiles.tile_gram(out, r0, r1, c0, c1).numpy(), want[r0:r1, c0:c1], rtol=1e-14
        )
    cover = np.zeros((23, 23), dtype=int)
    for r0, r1, c0, c1 in tiles.upper_tiles(23, 6):
        cover[r0:r1, c0:c1] += 1
    assert (cover[iu] == 1).all()  # every entry on and above the diagonal exactly once


def test_a_failing_tile_stops_the_workers_and_is_raised() -> None:
    done: list[tiles.Tile] = []
    lock = threading.Lock()

    def one(t: tiles.Tile) -> None:
        if t[0] == 8:
            raise ZeroDivisionError("tile 8")
        with lock:
            done.append(t)

    all_tiles = tiles.upper_tiles(400, 4)
    with pytest.raises(ZeroDivisionError, match="tile 8"):
        tiles.run_tiles(one, all_tiles, 2)
    assert len(done) < len(all_tiles) - 1  # stopped, not run to the end


def test_a_kernel_that_would_not_fit_is_refused_before_allocating(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # n = 300 000 samples of one feature: 1.4 TB of outputs; the data is 2.4 MB
    monkeypatch.setattr(budget, "available_memory", lambda: 8 * 2**30)
    X = np.ones((1, 300_000))
    with pytest.raises(BudgetExceeded, match=r"n = 300000.*1\.31 TiB.*fewer samples") as e:
        exact_kernels(_act("tanh", 0.0), X, SA2, SB2)
    assert "\n" not in str(e.value)
    # the model: 16 n² bytes for G*, K*, the data when copied, tiles, per-sample tables
    assert (
        exact.exact_kernels_memory(16384, 13107) == 16 * 16384**2 + 24 * 8 * 256**2 + 1600 * 16384
    )
    assert exact.exact_kernels_memory(100, 80, copies_data=True) > exact.exact_kernels_memory(
        100, 80
    )


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_runs_the_same_code(data: np.ndarray) -> None:
    act = _act("tanh", 0.0)
    cpu = exact_kernels(act, data, SA2, SB2, tile=8)
    gpu = exact_kernels(act, data, SA2, SB2, tile=8, device="cuda")
    np.testing.assert_allclose(gpu.G, cpu.G, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(gpu.K, cpu.K, rtol=1e-12, atol=1e-15)

"""deqrmt.kernels near the hardware (issue 24): tiles on every core against a dense reference.

The reference is computed here from :meth:`KernelEngine.newton` on the whole matrix at once (one
"tile", no threads): the whole Gram matrix, the Newton iteration over all pairs, the univariate
fixed point on the diagonal, K by :func:`ntk_limit`.  The tiled path must agree to float64
rounding (rtol 1e-12) with tiles forced small, so that there are many tiles, diagonal tiles,
short last tiles and several worker threads; and its bytes must not depend on the number of
workers.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import deqrmt  # noqa: E402
import deqrmt.validate._kernels as kern  # noqa: E402
from deqrmt import BudgetExceeded, InvalidArgument  # noqa: E402
from deqrmt.symbolic import library_activation  # noqa: E402
from deqrmt.validate._exact import KernelEngine, ntk_limit  # noqa: E402
from deqrmt.validate._pointwise import CenteredActivation  # noqa: E402

SA2, SB2 = 0.2, 0.8
N1, N2, P = 37, 13, 40


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    """X1 (37 × 40) and X2 (13 × 40), rows are samples, norms spread over [0.3, 2]."""
    rng = np.random.default_rng(24)
    X = rng.standard_normal((N1 + N2, P)) * rng.uniform(0.3, 2.0, (N1 + N2, 1)) / np.sqrt(P)
    return X[:N1], X[N1:]


def _act(name: str, c: float) -> CenteredActivation:
    return CenteredActivation.from_activation(library_activation(name), c)


def _dense_reference(
    act: CenteredActivation,
    X1: np.ndarray,
    X2: np.ndarray | None,
    trainable: tuple[str, ...] | None,
) -> tuple[np.ndarray, float]:
    """(G* (``trainable`` None) or K* over ``trainable``, by one Newton solve of every pair;
    the engine's stopping threshold)."""
    A = torch.as_tensor(X1).T.contiguous()
    B = None if X2 is None else torch.as_tensor(X2).T.contiguous()
    engine = KernelEngine(act, A, B, SA2, SB2)
    n1 = A.shape[1]
    if B is None:
        gram = A.T @ A
        on_diag = torch.eye(n1, dtype=torch.bool)
        g, gdot, _ = engine.newton(slice(0, n1), slice(0, n1), gram, on_diag)
        g_diag, gd_diag = engine.diagonal()
        G, Gdot = g.numpy().copy(), gdot.numpy().copy()
        np.fill_diagonal(G, g_diag)
        np.fill_diagonal(Gdot, gd_diag)
    else:
        gram = A.T @ B
        n2 = B.shape[1]
        g, gdot, _ = engine.newton(slice(0, n1), slice(n1, n1 + n2), gram, None)
        G, Gdot = g.numpy(), gdot.numpy()
    if trainable is None:
        return G, engine.stop
    return ntk_limit(G, Gdot, gram.numpy(), SA2, SB2, trainable), engine.stop


def _workers(monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    monkeypatch.setattr(kern, "tile_workers", lambda device: n)


def _kernels(act: CenteredActivation, X1: np.ndarray, X2: np.ndarray | None, **kw) -> np.ndarray:
    return deqrmt.kernels(act, X1, X2, sigma_a2=SA2, sigma_b2=SB2, device="cpu", **kw)


@pytest.mark.parametrize(
    ("kind", "trainable"), [("ck", None), ("ntk", ("a", "A")), ("ntk", ("a", "A", "B"))]
)
@pytest.mark.parametrize(("name", "c"), [("tanh", 0.0), ("relu", 0.4), ("gelu", 0.29)])
@pytest.mark.parametrize("symmetric", [True, False], ids=["k(X,X)", "k(X1,X2)"])
def test_tiles_match_a_dense_reference(
    data: tuple[np.ndarray, np.ndarray],
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    c: float,
    kind: str,
    trainable: tuple[str, ...] | None,
    symmetric: bool,
) -> None:
    _workers(monkeypatch, 3)
    X1, Y = data
    X2 = None if symmetric else Y
    act = _act(name, c)
    want, stop = _dense_reference(act, X1, X2, trainable)
    # Newton stops per tile, at the first iterate whose step is ≤ stop = tol·max G*_ii (6e-14 to
    # 1.4e-13 here): an iterate within ~stop of the fixed point.  A tile and the whole matrix
    # may stop one iterate apart, so an entry may differ by up to 2·stop besides rounding
    # (seen: 0.73·stop, relu and gelu against X2; tanh agrees to rtol 1e-12 alone).
    atol = 2 * stop
    kw = {"kind": kind} if trainable is None else {"kind": kind, "trainable": trainable}
    # tile 4: 10 tile rows with a short last one (and 13 columns: 4 + 4 + 4 + 1); tile 8 against
    # 13 columns; tile 64: one tile
    for tile in (4, 8, 64):
        got = _kernels(act, X1, X2, tile=tile, **kw)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=atol)
        if symmetric:
            assert np.array_equal(got, got.T)  # mirrored, not computed twice


@pytest.mark.parametrize("kind", ["ck", "ntk"])
@pytest.mark.parametrize("symmetric", [True, False], ids=["k(X,X)", "k(X1,X2)"])
def test_the_bytes_do_not_depend_on_the_workers(
    data: tuple[np.ndarray, np.ndarray], monkeypatch: pytest.MonkeyPatch, kind: str, symmetric: bool
) -> None:
    X1, Y = data
    X2 = None if symmetric else Y
    act = _act("tanh", 0.1)
    out = {}
    for workers in (1, 2, 1, 2):
        _workers(monkeypatch, workers)
        got = _kernels(act, X1, X2, kind=kind, tile=5)
        if workers in out:  # run to run: the same bytes
            assert got.tobytes() == out[workers].tobytes()
        out[workers] = got
    assert out[1].tobytes() == out[2].tobytes()


@pytest.mark.parametrize("symmetric", [True, False], ids=["k(X,X)", "k(X1,X2)"])
def test_progress_counts_every_tile_once_in_order(
    data: tuple[np.ndarray, np.ndarray], monkeypatch: pytest.MonkeyPatch, symmetric: bool
) -> None:
    _workers(monkeypatch, 2)
    X1, Y = data
    X2 = None if symmetric else Y
    calls: list[tuple[int, int]] = []
    _kernels(_act("erf", 0.0), X1, X2, tile=6, progress=lambda d, t: calls.append((d, t)))
    total = len(kern.kernel_tiles(N1, None if symmetric else N2, 6))
    assert total == (28 if symmetric else 7 * 3)
    assert calls == [(k, total) for k in range(1, total + 1)]


def test_an_error_in_progress_stops_the_tiles_and_is_raised(
    data: tuple[np.ndarray, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    # a Ctrl-C (or any error) raised in a tile reaches the caller and the workers stop
    _workers(monkeypatch, 2)
    calls: list[int] = []

    class Stop(Exception):
        pass

    def progress(done: int, total: int) -> None:
        calls.append(done)
        if done == 3:
            raise Stop

    with pytest.raises(Stop):
        _kernels(_act("erf", 0.0), data[0], None, tile=4, progress=progress)
    assert calls[:3] == [1, 2, 3]
    assert len(calls) < len(kern.kernel_tiles(N1, None, 4)) - 1  # stopped, not run to the end


@pytest.mark.parametrize(
    ("n1", "n2", "tile"), [(37, None, 6), (37, 13, 4), (37, 13, 8), (300, 1, 8)]
)
def test_tiles_cover_every_entry_once(n1: int, n2: int | None, tile: int) -> None:
    cover = np.zeros((n1, n1 if n2 is None else n2), dtype=int)
    for r0, r1, c0, c1 in kern.kernel_tiles(n1, n2, tile):
        assert r0 < r1 and c0 < c1
        cover[r0:r1, c0:c1] += 1
        if n2 is None:
            assert c0 >= r0 and (r1 - r0, c1 - c0) <= (tile, tile)
        else:
            assert (r1 - r0) * (c1 - c0) <= tile * tile  # about tile² pairs, never more
    if n2 is None:  # the upper triangle once (a diagonal tile's lower half is its mirror)
        assert (cover[np.triu_indices(n1)] == 1).all()
    else:
        assert (cover == 1).all()


def test_a_kernel_against_one_sample_is_cut_into_tall_tiles() -> None:
    # 300 rows against one column: tiles of tile² = 64 rows, not 300 tiles of one pair
    assert [t[:2] for t in kern.kernel_tiles(300, 1, 8)] == [
        (0, 64), (64, 128), (128, 192), (192, 256), (256, 300)
    ]  # fmt: skip


def test_a_bad_tile_is_refused(data: tuple[np.ndarray, np.ndarray]) -> None:
    for tile in (0, 2.5, True):
        with pytest.raises(InvalidArgument, match="tile="):
            _kernels(_act("relu", 0.0), data[0], None, tile=tile)
    # a worker holds ~24 arrays of a tile: a side above 2048 is a memory budget, refused
    with pytest.raises(BudgetExceeded, match=r"tile=4096: choose an integer from 1 to 2048"):
        _kernels(_act("relu", 0.0), data[0], None, tile=4096)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_non_finite_entry_anywhere_is_refused(
    data: tuple[np.ndarray, np.ndarray], bad: float
) -> None:
    # the check reads the extremes (NaN propagates through them), not an n × p mask
    X = data[0].copy()
    X[23, 17] = bad
    with pytest.raises(InvalidArgument, match="X1 has non-finite"):
        _kernels(_act("relu", 0.0), X, None)
    with pytest.raises(InvalidArgument, match="X2 has non-finite"):
        _kernels(_act("relu", 0.0), data[0], X[20:25])

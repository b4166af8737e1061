"""The exact kernels' work counted (issue 24): one pass of φ serves the diagonal solve's last
check and the per-sample tables; the tiles start from the series' linear fixed point.

* φ over the n × Q quadrature nodes: at most twice while building the engine (the solve's
  step and its check; three or four times before), φ' once; the tables from the reused pass
  equal fresh ones;
* the tile map's fused ρ = base/s + σ_a² G/s against the plain map on Λ = base + σ_a² G;
* the linear start: exact for φ(x) = x (one evaluation; the closed form σ_b² XᵀX/(1 − σ_a²)
  checks the value), and never more evaluations than from G = 0 on tanh, gelu, silu;
* the heap trim is a no-op where the C library has none.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import deqrmt.validate._diagonal as diagonal  # noqa: E402
import deqrmt.validate._exact as exact  # noqa: E402
from deqrmt.symbolic import library_activation, parse_activation  # noqa: E402
from deqrmt.validate import _heap, _moments  # noqa: E402
from deqrmt.validate._bivariate import Mehler, _MehlerTile  # noqa: E402
from deqrmt.validate._pointwise import CenteredActivation  # noqa: E402
from deqrmt.validate._quadrature import gaussian_rule  # noqa: E402

SA2, SB2 = 0.2, 0.8


def _act(name: str) -> CenteredActivation:
    return CenteredActivation.from_activation(library_activation(name), 0.0)


def _data(p: int, n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(p, n)) / np.sqrt(p) * rng.uniform(0.8, 1.2, size=n)


def test_the_engine_evaluates_phi_twice_over_the_samples(monkeypatch: pytest.MonkeyPatch) -> None:
    act = _act("tanh")
    n = 300
    X = torch.as_tensor(_data(200, n))
    nodes = int(gaussian_rule(torch.ones(1, dtype=torch.float64), act.kinks).xi.shape[0])
    counts = {"phi": 0, "dphi": 0}
    real_phi, real_dphi = CenteredActivation.phi, CenteredActivation.dphi

    def phi(self: CenteredActivation, t: torch.Tensor) -> torch.Tensor:
        counts["phi"] += t.numel()
        return real_phi(self, t)

    def dphi(self: CenteredActivation, t: torch.Tensor) -> torch.Tensor:
        counts["dphi"] += t.numel()
        return real_dphi(self, t)

    monkeypatch.setattr(CenteredActivation, "phi", phi)
    monkeypatch.setattr(CenteredActivation, "dphi", dphi)
    engine = exact.KernelEngine(act, X, None, SA2, SB2)
    one_pass = n * nodes
    # the Chebyshev start solves a few samples; then the check (and at most one Newton step
    # before it) is all of φ over the n samples, and φ' once (before: φ 3–4 times)
    start = 40 * diagonal._DIAGONAL_NODES * nodes
    assert one_pass <= counts["phi"] <= 2 * one_pass + start
    assert counts["dphi"] == one_pass
    assert isinstance(engine.biv, Mehler)


@pytest.mark.parametrize("name", ["tanh", "gelu", "hard_tanh"])
def test_tables_from_the_reused_pass_equal_fresh_ones(name: str) -> None:
    act = _act(name)
    sq = torch.as_tensor(np.random.default_rng(3).uniform(0.5, 2.0, size=50))
    q, values = diagonal._diagonal_fixed_point(act, sq, SA2, SB2, 1e-14)
    fresh_q = q.clone()  # another tensor: nothing is reused for it
    for reused, fresh in zip(
        _moments.diagonal_moments(act, q, values=values),
        _moments.diagonal_moments(act, fresh_q),
        strict=True,
    ):
        assert reused is not None and fresh is not None
        assert torch.equal(reused, fresh)
    m1, m0 = Mehler(act, q, values=values), Mehler(act, fresh_q)
    assert torch.equal(m1.coef_t, m0.coef_t) and np.array_equal(m1.rmax, m0.rmax)
    # the q returned is the one the stopping test evaluated: its residual is within the step
    g = values.g
    r = (q - SA2 * g - SB2 * sq).abs().max()
    assert float(r) <= 1e-14 * float(q.max())


def test_the_tile_map_is_the_map_on_lambda() -> None:
    act = _act("silu")
    n = 40
    X = torch.as_tensor(_data(30, n, seed=1))
    engine = exact.KernelEngine(act, X, None, SA2, SB2)
    rows, cols = slice(0, 17), slice(9, 40)
    base = SB2 * (X[:, rows].T @ X[:, cols])
    g = torch.as_tensor(np.random.default_rng(2).uniform(-0.05, 0.05, size=base.shape))
    f1, d1 = engine.biv.on_tile(rows, cols, base, SA2)(g)
    f0, d0 = engine.biv(rows, cols, base + SA2 * g)
    mask = ~torch.eye(n, dtype=torch.bool)[rows, cols]  # i = j pairs are placeholders
    np.testing.assert_allclose(f1[mask].numpy(), f0[mask].numpy(), rtol=1e-14, atol=1e-16)
    np.testing.assert_allclose(d1[mask].numpy(), d0[mask].numpy(), rtol=1e-14, atol=1e-16)


def test_the_linear_start_is_exact_for_the_identity() -> None:
    act = CenteredActivation.from_activation(parse_activation("x"), 0.0)
    X = _data(25, 30, seed=4)
    ex = exact.exact_kernels(act, X, SA2, SB2, method="mehler")
    assert ex.method == "mehler" and ex.evaluations == 1  # from G = 0 it takes 2
    # E[uv] = Λ: G = σ_a² G + σ_b² XᵀX, solved by hand
    ref = SB2 * (X.T @ X) / (1 - SA2)
    np.testing.assert_allclose(ex.G, ref, rtol=0, atol=1e-14 * np.abs(np.diag(ref)).max())


@pytest.mark.parametrize("name", ["tanh", "gelu", "silu"])
def test_the_linear_start_never_costs_evaluations(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    act = _act(name)
    X = _data(400, 64, seed=5)
    ex = exact.exact_kernels(act, X, SA2, SB2)
    monkeypatch.setattr(_MehlerTile, "start", lambda self: None)  # G = 0, as before
    ref = exact.exact_kernels(act, X, SA2, SB2)
    assert ex.evaluations <= ref.evaluations
    # each solve is within tol = 1e-13 of the diagonal's scale of the fixed point
    scale = np.abs(np.diag(ref.G)).max()
    np.testing.assert_allclose(ex.G, ref.G, rtol=0, atol=2e-13 * scale)
    np.testing.assert_allclose(ex.K, ref.K, rtol=0, atol=4e-13 * scale)


def test_the_heap_trim_answers_a_bool() -> None:
    assert isinstance(_heap.release_free_memory(), bool)
    _heap._malloc_trim.cache_clear()
    try:
        import ctypes

        lib = ctypes.CDLL(None)
        has = hasattr(lib, "malloc_trim")
    except OSError:
        has = False
    assert (_heap._malloc_trim() is not None) == has


def test_mirror_lower_copies_the_transpose() -> None:
    from deqrmt.validate._tiles import mirror_lower

    out = torch.as_tensor(np.random.default_rng(6).normal(size=(9, 9)))
    before = out.clone()
    mirror_lower(out, (0, 4, 4, 9))
    assert torch.equal(out[4:9, 0:4], before[0:4, 4:9].T)
    # nothing else moved
    rest = torch.ones(9, 9, dtype=torch.bool)
    rest[4:9, 0:4] = False
    assert torch.equal(out[rest], before[rest])
    with pytest.raises(ValueError, match="off the diagonal"):
        mirror_lower(out, (0, 4, 0, 4))

"""The exact kernels' faster steps (issue 24) against the plain forms they replace.

* Horner's rule in ρ² over one parity (odd φ: c_k = 0 for even k) against Horner over every
  degree, and the parity detection on odd, even and general activations;
* the diagonal solve's interpolated start against the plain start (same fixed point), one norm
  (sphere data) solved once, and a sample of norm 0 (never converged before: the proposed step
  on the variance floor did not shrink);
* ``abs_max`` against ``vector_norm(·, inf)``, ``mirror`` against a symmetric reference.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import deqrmt.validate._diagonal as diagonal  # noqa: E402
import deqrmt.validate._exact as exact  # noqa: E402
from deqrmt.symbolic import library_activation, parse_activation  # noqa: E402
from deqrmt.validate._bivariate import Mehler, _horner, _horner_parity  # noqa: E402
from deqrmt.validate._pointwise import CenteredActivation  # noqa: E402
from deqrmt.validate._tiles import abs_max, mirror  # noqa: E402

SA2, SB2 = 0.2, 0.8


def _act(name: str, c: float = 0.0) -> CenteredActivation:
    return CenteredActivation.from_activation(library_activation(name), c)


@pytest.mark.parametrize("parity", [0, 1])
@pytest.mark.parametrize("deg", [0, 1, 2, 7, 12])
def test_parity_horner_equals_the_full_series(parity: int, deg: int) -> None:
    rng = np.random.default_rng([parity, deg])
    a = torch.as_tensor(rng.normal(size=(deg + 1, 5)))
    b = torch.as_tensor(rng.normal(size=(deg + 1, 6)))
    a[(torch.arange(deg + 1) % 2) != parity] = 0.0  # the other parity is zero
    r = torch.as_tensor(rng.uniform(-0.9, 0.9, size=(5, 6)))
    p0, d0 = _horner(a, b, deg, r)
    p1, d1 = _horner_parity(a, b, deg, r, parity)
    # an independent sum: Σ a_k b_k ρ^k and its derivative, term by term
    k = np.arange(deg + 1)[:, None, None]
    terms = a.numpy()[:, :, None] * b.numpy()[:, None, :]
    p_ref = (terms * r.numpy()[None] ** k).sum(0)
    d_ref = (terms * k * r.numpy()[None] ** np.maximum(k - 1, 0)).sum(0)
    np.testing.assert_allclose(p1.numpy(), p_ref, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(d1.numpy(), d_ref, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(p0.numpy(), p1.numpy(), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(d0.numpy(), d1.numpy(), rtol=1e-13, atol=1e-13)


def test_parity_detection() -> None:
    q = torch.linspace(0.5, 1.5, 7, dtype=torch.float64)
    assert Mehler(_act("tanh"), q).parity == 1  # odd, centred at 0
    assert Mehler(_act("tanh", 0.1), q).parity is None  # c_0 = −0.1 ≠ 0
    even = CenteredActivation.from_activation(parse_activation("x**2"), 1.0)
    assert Mehler(even, q).parity == 0  # E[(√q ξ)² − 1] He_k: only even k
    assert Mehler(_act("gelu"), q).parity is None


def test_parity_series_gives_the_same_kernel_values() -> None:
    act = _act("tanh")
    q = torch.linspace(0.6, 1.4, 20, dtype=torch.float64)
    biv = Mehler(act, q)
    assert biv.parity == 1
    lam = torch.as_tensor(np.random.default_rng(3).uniform(-0.3, 0.3, size=(20, 20)))
    f1, d1 = biv(slice(0, 20), slice(0, 20), lam)
    biv.parity = None  # the full series, every degree
    f0, d0 = biv(slice(0, 20), slice(0, 20), lam)
    np.testing.assert_allclose(f1.numpy(), f0.numpy(), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(d1.numpy(), d0.numpy(), rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("name", ["tanh", "gelu", "silu", "hard_tanh"])
def test_interpolated_start_reaches_the_same_fixed_point(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    act = _act(name)
    s = torch.as_tensor(np.random.default_rng(5).uniform(0.7, 1.4, size=200))
    q = diagonal._solve_diagonal(act, s, SA2, SB2, 1e-14)
    monkeypatch.setattr(diagonal, "_DIAGONAL_NODES", 10**6)  # never interpolate: the plain start
    q_plain = diagonal._solve_diagonal(act, s, SA2, SB2, 1e-14)
    np.testing.assert_allclose(q.numpy(), q_plain.numpy(), rtol=5e-14)
    # and it is the fixed point q = σ_a² E[φ(√q ξ)²] + σ_b² s, by mpmath's quadrature of φ
    # written here (centre 0)
    import mpmath

    ctx = mpmath.MPContext()
    ctx.dps = 30
    phi = {
        "tanh": ctx.tanh,
        "gelu": lambda x: x * ctx.ncdf(x),
        "silu": lambda x: x / (1 + ctx.exp(-x)),
    }.get(name)
    if phi is None:  # hard_tanh: the plain start above is the reference
        return
    for i in (0, 77, 199):
        qi = ctx.mpf(float(q[i]))
        g = ctx.quad(
            lambda x, qi=qi: phi(ctx.sqrt(qi) * x) ** 2 * ctx.npdf(x), [-ctx.inf, 0, ctx.inf]
        )
        assert abs(float(qi - SA2 * g - ctx.mpf(SB2) * ctx.mpf(float(s[i])))) < 1e-14


def test_one_norm_is_solved_once(monkeypatch: pytest.MonkeyPatch) -> None:
    sizes: list[int] = []
    real = diagonal.diagonal_moments

    def counted(act, q, **kw):  # type: ignore[no-untyped-def]
        sizes.append(int(q.shape[0]))
        return real(act, q, **kw)

    monkeypatch.setattr(diagonal, "diagonal_moments", counted)
    q = diagonal._solve_diagonal(
        _act("tanh"), torch.full((500,), 1.3, dtype=torch.float64), SA2, SB2, 1e-14
    )
    assert bool((q == q[0]).all())
    # the 500 samples are evaluated once (the check), the rest on one sample
    assert sizes.count(500) == 1 and set(sizes) == {1, 500}


@pytest.mark.parametrize("n", [4, 60])
def test_a_sample_of_norm_zero_converges(n: int) -> None:
    X = np.zeros((3, n))
    X[:, 1:] = np.random.default_rng(2).normal(size=(3, n - 1)) / math.sqrt(3)
    ex = exact.exact_kernels(_act("tanh"), X, SA2, SB2)
    assert np.isfinite(ex.G).all() and np.isfinite(ex.K).all()
    assert abs(ex.G[0, 0]) < 1e-11 and np.abs(ex.G[0, 1:]).max() < 1e-11


def test_abs_max_is_the_infinity_norm() -> None:
    rng = np.random.default_rng(0)
    for shape in [(3, 4), (1, 1), (256, 256)]:
        t = torch.as_tensor(rng.normal(size=shape))
        assert abs_max(t) == float(torch.linalg.vector_norm(t, float("inf")))
    assert abs_max(torch.empty(0, 3, dtype=torch.float64)) == 0.0
    t = torch.zeros(3, 3, dtype=torch.float64)
    t[1, 2] = float("nan")
    assert math.isnan(abs_max(t))
    t[1, 2] = -7.0
    assert abs_max(t) == 7.0


def test_mirror_writes_a_symmetric_matrix() -> None:
    n, tile = 10, 4
    rng = np.random.default_rng(1)
    ref = rng.normal(size=(n, n))
    ref = np.triu(ref) + np.triu(ref, 1).T
    out = torch.full((n, n), float("nan"), dtype=torch.float64)
    for r0 in range(0, n, tile):
        for c0 in range(r0, n, tile):
            t = (r0, min(n, r0 + tile), c0, min(n, c0 + tile))
            block = torch.as_tensor(ref[t[0] : t[1], t[2] : t[3]].copy())
            if r0 == c0:  # the lower half of a diagonal tile is ignored
                block += torch.tril(torch.full_like(block, 5.0), -1)
            mirror(out, block, t)
    np.testing.assert_array_equal(out.numpy(), ref)

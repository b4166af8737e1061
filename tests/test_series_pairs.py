"""The pairs beyond the tiles' reach: Mehler's series summed pair by pair (validate/_series.py).

:func:`horner_pairs` sums `F = Σ_k c_k(q_i)c_k(q_j)ρ^k` and `∂F/∂ρ` vectorised over degrees, in
chunks sized to their degree.  The reference here is independent: each pair's series summed
term by term with ``math.fsum`` (exactly rounded) to the table's full degree, so that the
difference is the truncation (≤ the table's budgets, by its Cauchy–Schwarz bound) plus rounding.
The tables are synthetic (seeded), of each parity, with enough pairs for several chunks.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from deqrmt.validate._series import (  # noqa: E402
    _PAIR_BUDGET,
    SeriesTable,
    horner_pairs,
)

N, DEGREE = 40, 300


def _table(parity: int | None, seed: int) -> SeriesTable:
    """Coefficients c_k = 0.97^k·u_k (u_k uniform in ±1, the other parity's zero), with the
    tails R_K = max_i Σ_{k>K} c_k(q_i)² computed exactly and budgets of 1e-14."""
    rng = np.random.default_rng(seed)
    ks = np.arange(DEGREE + 1)
    coef = rng.uniform(-1, 1, (DEGREE + 1, N)) * 0.97 ** ks[:, None]
    if parity is not None:
        coef[ks % 2 != parity] = 0.0
    tails = np.array([[math.fsum(coef[k + 1 :, i] ** 2) for i in range(N)] for k in ks])
    table = SeriesTable(torch.as_tensor(coef), tails.max(axis=1), DEGREE, 1e-14, 1e-12, 0.0, parity)
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if table.degree(mid) is not None else (lo, mid)
    return SeriesTable(table.coef_t, table.rmax, DEGREE, 1e-14, 1e-12, lo, parity)


def _reference(coef: np.ndarray, i: int, j: int, r: float) -> tuple[float, float]:
    terms = coef[:, i] * coef[:, j]
    ks = np.arange(coef.shape[0])
    f = math.fsum(terms * r**ks)
    d = math.fsum(ks[1:] * terms[1:] * r ** (ks[1:] - 1))
    return f, d


@pytest.mark.parametrize("parity", [None, 0, 1])
def test_pairs_equal_the_series_summed_term_by_term(parity: int | None) -> None:
    table = _table(parity, seed=7 + (parity or 0))
    rng = np.random.default_rng(11)
    m = 6000  # several chunks: ~6000 × (degree / parity step) entries ≫ the chunk budget
    assert m * 100 > _PAIR_BUDGET
    i = rng.integers(0, N, m)
    j = rng.integers(0, N, m)
    rho = rng.uniform(-1, 1, m) * table.rho_cap
    rho[:3] = [0.0, table.rho_cap, -table.rho_cap]  # the ends of the range
    f, d, used = horner_pairs(table, torch.as_tensor(i), torch.as_tensor(j), torch.as_tensor(rho))
    assert 0 < used <= DEGREE
    coef = table.coef_t.numpy()
    for m_ in range(0, m, 37):  # a sample of the pairs, every chunk represented
        ref_f, ref_d = _reference(coef, int(i[m_]), int(j[m_]), float(rho[m_]))
        # truncation (≤ the budgets) plus rounding (a few ulps of Σ|terms| ≤ 1/(1 − 0.97²))
        assert abs(float(f[m_]) - ref_f) <= table.tol + 1e-14, (m_, float(f[m_]), ref_f)
        assert abs(float(d[m_]) - ref_d) <= table.dtol + 1e-12, (m_, float(d[m_]), ref_d)


def test_vectorised_degrees_are_the_scalar_rule() -> None:
    for parity in (None, 1):
        table = _table(parity, seed=3)
        r = np.concatenate([[0.0, table.rho_cap], np.random.default_rng(5).uniform(0, 1, 400)])
        r = r[r <= table.rho_cap]
        got = table.degrees(r)
        want = np.array([table.degree(float(x)) for x in r])
        assert np.array_equal(got, want)

"""Implicit bias, numeric side (issue 13): β̂ = argmin Σ q(β_i) s.t. Xβ = y to high precision.

References are independent of the module's Newton: the KKT system is reduced by hand to the
multipliers (β_i = (ψ')⁻¹(ψ'(β(0)) + (Xᵀλ)_i), with (ψ')⁻¹ in closed form) and solved with
``mpmath.findroot``.
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest

from deqrmt._errors import DerivationError, InvalidArgument, NoReachableInterpolant
from deqrmt.numeric._bias import (
    BiasLimit,
    float_functions,
    minimum_norm_interpolant,
    predicted_limit,
    relative_gap,
)
from deqrmt.symbolic._bias import BiasDerivation, derive_bias


def _gaussian(n: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) / np.sqrt(n)
    beta_star = 2 + rng.standard_normal(d) * (np.arange(d) < 2)
    return X, X @ beta_star, beta_star


def _reference(X: np.ndarray, y: np.ndarray, inverse, dps: int) -> list:  # type: ignore[no-untyped-def]
    """Solve X β(λ) = y for λ with β_i = inverse((Xᵀλ)_i), by mpmath.findroot."""
    n, d = X.shape
    with mpmath.workdps(dps):
        Xm = [[mpmath.mpf(float(v)) for v in row] for row in X]
        ym = [mpmath.mpf(float(v)) for v in y]

        def beta(lam):  # type: ignore[no-untyped-def]
            return [inverse(mpmath.fsum(Xm[i][j] * lam[i] for i in range(n))) for j in range(d)]

        def F(*lam):  # type: ignore[no-untyped-def]
            b = beta(lam)
            return [mpmath.fsum(Xm[i][j] * b[j] for j in range(d)) - ym[i] for i in range(n)]

        lam = mpmath.findroot(F, [mpmath.mpf(0)] * n, tol=mpmath.mpf(10) ** (-dps + 5))
        lam = [lam] if n == 1 else list(lam)
        return beta(lam)


def test_symmetric_instance_by_hand(deq: BiasDerivation) -> None:
    lim = predicted_limit(deq, [[1.0, 1.0]], [2.0])
    assert [mpmath.nstr(b, 25) for b in lim.beta] == ["1.0", "1.0"]


@pytest.mark.parametrize("dps", [15, 30, 60])
def test_deq_limit_against_closed_form_inverse(deq: BiasDerivation, dps: int) -> None:
    """q'(β) = (β(0)⁻³ − β⁻³)/3 = (Xᵀλ)_i  ⇔  β_i = (β(0)⁻³ − 3(Xᵀλ)_i)^(−1/3), β(0) = 2."""
    X, y, _ = _gaussian(3, 7, seed=1)
    ref = _reference(X, y, lambda s: (mpmath.mpf(1) / 8 - 3 * s) ** (-mpmath.mpf(1) / 3), dps + 10)
    lim = predicted_limit(deq, X, y, dps=dps)
    assert lim.dps == dps and lim.kkt_residual < mpmath.mpf(10) ** (-dps)
    for a, b in zip(lim.beta, ref, strict=True):
        assert abs(a - b) <= mpmath.mpf(10) ** (-dps + 2) * abs(b)
    assert all(b > 0 for b in lim.beta)


def test_diagonal_network_limit_against_closed_form_inverse(diagonal: BiasDerivation) -> None:
    """ψ' = asinh(β/2c)/4 with c = α² = 1/4, β(0) = 0: β_i = (1/2) sinh(4 (Xᵀλ)_i)."""
    X, y, _ = _gaussian(3, 8, seed=2)
    y = y - 2 * X.sum(axis=1)  # β* − 2: a signed target, β(0) = 0 here
    ref = _reference(X, y, lambda s: mpmath.sinh(4 * s) / 2, 50)
    lim = predicted_limit(diagonal, X, y, dps=40)
    for a, b in zip(lim.beta, ref, strict=True):
        assert abs(a - b) <= mpmath.mpf(10) ** (-38) * max(1, abs(b))
    assert any(b < 0 for b in lim.beta)  # the domain is ℝ: signs are free


def test_deq_out_limit_interpolates_and_satisfies_kkt(deq_out: BiasDerivation) -> None:
    X, y, _ = _gaussian(4, 9, seed=3)
    y = y - 3 * X[:, 0]
    lim = predicted_limit(deq_out, X, y, dps=30)
    beta = lim.as_array()
    assert np.allclose(X @ beta, y, atol=1e-13)
    # KKT by hand: q'(β) = (c/2)(atan β + β/(1+β²)) − (same at β(0) = 1), c = 1/2
    c = mpmath.mpf(1) / 2

    def dpsi(b):  # type: ignore[no-untyped-def]
        return c / 2 * (mpmath.atan(b) + b / (1 + b**2))

    with mpmath.workdps(30):
        grad = np.array([float(dpsi(b) - dpsi(mpmath.mpf(1))) for b in lim.beta])
    lam = np.linalg.lstsq(X.T, grad, rcond=None)[0]
    assert np.linalg.norm(X.T @ lam - grad) < 1e-12 * np.linalg.norm(grad)


def test_precisions_agree(deq: BiasDerivation) -> None:
    X, y, _ = _gaussian(3, 6, seed=4)
    lo = predicted_limit(deq, X, y, dps=20)
    hi = predicted_limit(deq, X, y, dps=50)
    for a, b in zip(lo.beta, hi.beta, strict=True):
        assert abs(a - b) < mpmath.mpf(10) ** -18


def test_ell2_interpolant_is_not_the_limit(deq: BiasDerivation) -> None:
    """Negative control: the ℓ2 interpolant interpolates but is far from β̂."""
    X, y, _ = _gaussian(4, 12, seed=5)
    l2 = minimum_norm_interpolant(X, y)
    assert np.allclose(X @ l2, y, atol=1e-12)
    lim = predicted_limit(deq, X, y)
    assert relative_gap(l2, lim) > 0.1
    assert relative_gap(lim.as_array(), lim) == 0.0


def test_rebuttal_sign_fails_kkt_where_derived_one_holds(deq: BiasDerivation) -> None:
    """∇Q(β̂) ∈ range(Xᵀ) for q = 1/(6β²) + β/(3β(0)³); not for 1/(2β²) − β/β(0)³."""
    X, y, _ = _gaussian(4, 12, seed=6)
    beta = predicted_limit(deq, X, y).as_array()
    P = np.eye(12) - np.linalg.pinv(X) @ X  # projector onto null(X)
    ours = (1 / 8 - beta**-3) / 3
    paper = -(beta**-3) - 1 / 8
    assert np.linalg.norm(P @ ours) < 1e-12 * np.linalg.norm(ours)
    assert np.linalg.norm(P @ paper) > 0.1 * np.linalg.norm(paper)


def test_w3_q_is_unbounded_below_on_the_full_interpolating_set(deq: BiasDerivation) -> None:
    """Reviewer W3 is right about Σq on {Xβ = y} without the sign constraint: along a
    null-space direction with Σv < 0, Q → −∞ (q ~ β/(3β(0)³) for β → −∞)."""
    X, y, _ = _gaussian(4, 12, seed=7)
    beta = predicted_limit(deq, X, y).as_array()
    P = np.eye(12) - np.linalg.pinv(X) @ X
    v = -(P @ np.ones(12))
    assert np.allclose(X @ v, 0, atol=1e-12) and v.sum() < 0
    f = float_functions(deq)
    q0 = f(beta)[0].sum()
    t = 50 / np.abs(v).min()
    far = beta + t * v
    assert np.allclose(X @ far, y, atol=1e-9) and (far < 0).any()
    with np.errstate(all="ignore"):
        q_far = (1 / (6 * far**2) + far / 24).sum()  # the formula, off the domain
    assert q_far < q0 - 10


def test_no_reachable_interpolant(deq: BiasDerivation, diagonal: BiasDerivation) -> None:
    """β > 0 cannot sum to −1; the sign-free diagonal network can."""
    X, y = [[1.0, 1.0, 1.0]], [-1.0]
    with pytest.raises(NoReachableInterpolant, match="Farkas"):
        predicted_limit(deq, X, y)
    assert predicted_limit(diagonal, X, y).as_array() == pytest.approx([-1 / 3] * 3)
    # A 2×3 instance: the positive cone of the columns misses y.
    X2 = [[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]]
    with pytest.raises(NoReachableInterpolant):
        predicted_limit(deq, X2, [1.0, -1.0])
    assert isinstance(NoReachableInterpolant("x"), InvalidArgument)


@pytest.mark.parametrize(
    ("X", "y", "kwargs"),
    [
        ([[1.0, 2.0]], [1.0, 2.0], {}),  # shapes
        ([[1.0, float("nan")]], [1.0], {}),  # not finite
        ([[1.0, 1.0], [2.0, 2.0]], [1.0, 2.0], {}),  # rank deficient
        ([[1.0, 2.0]], [1.0], {"dps": 5}),
        ([[1.0, 2.0]], [1.0], {"dps": True}),
    ],
)
def test_bad_data_is_invalid_argument(deq, X, y, kwargs) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidArgument):
        predicted_limit(deq, X, y, **kwargs)


def test_result_record(deq: BiasDerivation) -> None:
    lim = predicted_limit(deq, [[1.0, 2.0]], [3.0], dps=25)
    assert isinstance(lim, BiasLimit)
    assert len(lim.beta) == 2 and len(lim.multipliers) == 1
    assert lim.as_array().dtype == np.float64
    with pytest.raises(InvalidArgument):
        predicted_limit("1/(1-w)", [[1.0]], [1.0])  # type: ignore[arg-type]


def test_quadrature_representation_is_evaluated() -> None:
    """atan(w): h = cos⁴β and ψ is kept as a quadrature; by hand ψ' = tan β + tan³β / 3."""
    d = derive_bias("atan(w)")
    assert not d.closed_form
    X, y, _ = _gaussian(2, 5, seed=8)
    y = X @ np.full(5, 0.4)
    lim = predicted_limit(d, X, y, dps=20)
    assert np.allclose(X @ lim.as_array(), y, atol=1e-14)
    b0 = mpmath.atan(mpmath.mpf(1) / 2)
    with mpmath.workdps(25):
        grad = np.array(
            [
                float(
                    mpmath.tan(b)
                    + mpmath.tan(b) ** 3 / 3
                    - mpmath.tan(b0)
                    - mpmath.tan(b0) ** 3 / 3
                )
                for b in lim.beta
            ]
        )
    lam = np.linalg.lstsq(X.T, grad, rcond=None)[0]
    assert np.linalg.norm(X.T @ lam - grad) < 1e-12 * np.linalg.norm(grad)


def test_unprintable_function_is_a_derivation_error() -> None:
    d = derive_bias("log(w)+w")  # h involves LambertW, which has no mpmath code printer here
    with pytest.raises(DerivationError, match="LambertW"):
        predicted_limit(d, [[1.0, 2.0]], [3.0])

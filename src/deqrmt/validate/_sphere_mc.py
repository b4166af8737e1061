r"""Monte Carlo check of HLD 2023's sphere-setting equivalents: G* ≈ Ḡ and K* ≈ K̄ in operator norm.

n points are drawn uniformly on S^{d−1} (seeded); the infinite-width implicit kernels are then
computed *exactly* for that sample, independently of the coefficients being checked:

* the diagonal is s = g(1) (one scalar fixed point, the same for every sample since ‖x_i‖ = 1);
* off the diagonal the kernel map of HLD 2023, eq. (3), with the diagonal fixed,
  R ← (σ_a² f(R) + σ_b² ρ)/s on the correlations R = G/s, is iterated to convergence — f is the
  dual activation as a Mehler series (:func:`deqrmt.numeric.dual_series`, float64 Horner);
* K* = G*/(1 − Ġ*), Ġ* = σ_a² f'(R)/s off the diagonal and σ_a² E[φ'(√s ξ)²] on it (eq. (7)).

These are compared with Ḡ = α11ᵀ + βXᵀX + μI and K̄ = α̇11ᵀ + β̇XᵀX + μ̇I (Theorems 1, 3), and
with the exact explicit CK/NTK of Corollary 1's quadratic activation (Theorems 2, 4: Σ = f_σ(XᵀX),
Θ = f_σ(XᵀX) + XᵀX ⊙ f_σ'(XᵀX), f_σ the quadratic's dual polynomial).  numpy only, float64, CPU.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

import numpy as np
import sympy as sp

from .._errors import InvalidArgument, NoConvergence
from ..numeric import SphereCoefficients, dual_series, sphere_coefficients
from ..symbolic import QUADRATIC_SYMBOLS, RHO, get_activation, polynomial_dual

__all__ = [
    "SphereKernels",
    "SphereValidation",
    "sphere_sample",
    "implicit_sphere_kernels",
    "quadratic_sphere_kernels",
    "validate_sphere",
]

#: float64 Horner on R = G/s: the series only has to serve |R| ≤ this (off-diagonal r is ~g(0)/s + O(d^{-1/2})).
_R_MAX = 0.6


def sphere_sample(n: int, d: int, seed: int = 0) -> np.ndarray:
    """X ∈ R^{d×n}, columns i.i.d. uniform on the unit sphere S^{d−1} (normalized Gaussians)."""
    if n < 2 or d < 2:
        raise InvalidArgument(f"need n >= 2 and d >= 2, got n={n}, d={d}.")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((d, n))
    out: np.ndarray = x / np.linalg.norm(x, axis=0, keepdims=True)
    return out


@dataclasses.dataclass(frozen=True)
class SphereKernels:
    """Exact infinite-width G*, K* for one sample (float64, n × n).

    Attributes:
      G, K: the implicit CK and NTK.
      iterations: kernel-map iterations until max|ΔR| ≤ 1e-15.
      terms: Mehler terms kept in the float64 dual.
      max_correlation: the largest off-diagonal |G*_ij|/s.
    """

    G: np.ndarray
    K: np.ndarray
    iterations: int
    terms: int
    max_correlation: float


def _horner(c: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """f(r) = Σ c_k r^k and f'(r), together."""
    f = np.full_like(r, c[-1])
    df = np.zeros_like(r)
    for ck in c[-2::-1]:
        df = df * r + f
        f = f * r + ck
    return f, df


def _truncate(c: np.ndarray, norm: float, r: float) -> np.ndarray:
    """Drop terms whose Parseval tail bound at |r| is below float64 resolution of f(1) (and of f')."""
    tail = norm - np.cumsum(c)
    for k in range(len(c)):
        if max(tail[k], 0.0) * (k + 2) * r ** (k + 1) <= 1e-17 * norm:
            return c[: k + 1]
    return c


def implicit_sphere_kernels(
    X: np.ndarray,
    activation: Any,
    coefficients: SphereCoefficients,
    *,
    max_iterations: int = 500,
) -> SphereKernels:
    """G* and K* of the DEQ for data ``X`` (d × n, unit columns), by iterating the kernel map.

    ``coefficients`` provides s = g(1), k(1) and σ_a², σ_b² (the values the iteration needs,
    not the α, β, μ being tested).
    """
    act = get_activation(activation)
    norms = np.linalg.norm(X, axis=0)
    if not np.allclose(norms, 1.0, atol=1e-12):
        raise InvalidArgument("the columns of X must have unit norm (data on the sphere).")
    s = float(coefficients.values["g_at_1"].value)
    k1 = float(coefficients.values["k_at_1"].value)
    a2 = float(coefficients.sigma_a2)
    b2 = float(coefficients.sigma_b2)
    rho = X.T @ X
    n = rho.shape[0]
    iu = np.triu_indices(n, 1)  # G* is symmetric with a known diagonal: iterate the upper triangle
    rho_u = rho[iu]
    # Size the series for the correlations the iteration can reach: |R| stays below
    # max(|ρ|, (g(0) + |g'(0)|·|ρ| + |g''(0)|·ρ²)/s) up to a margin.  If it did not, the range
    # check below refuses rather than extrapolating the series.
    v = coefficients.as_floats()
    top_rho = float(np.abs(rho_u).max())
    reach = (abs(v["g0"]) + abs(v["g_prime_0"]) * top_rho + abs(v["g_second_0"]) * top_rho**2) / s
    r_max = min(_R_MAX, 1.25 * max(top_rho, reach) + 0.02)
    series = dual_series(
        act, coefficients.values["g_at_1"].value, r_max=r_max, dps=20, max_derivative=1
    )
    coeffs = series.float_coefficients()
    norm = float(series.norm)
    r = rho_u.copy()
    iterations = 0
    for iterations in range(1, max_iterations + 1):  # noqa: B007 - the count is reported
        top = float(np.abs(r).max())
        if top > r_max:
            raise NoConvergence(
                f"off-diagonal correlation {top:.4g} exceeds r_max = {r_max:.4g}, which the dual "
                "series was built for: the coefficients given are inconsistent with the data, or "
                "sigma_a2 is too large for this d."
            )
        # Terms beyond the Parseval tail bound at the current max |R| are below float64's reach.
        c = _truncate(coeffs, norm, max(top, 0.05) * 1.05)
        f, _ = _horner(c, r)
        new = (a2 * f + b2 * rho_u) / s
        delta = float(np.abs(new - r).max())
        r = new
        if delta <= 1e-15:
            break
    else:
        raise NoConvergence(f"the kernel map did not converge in {max_iterations} iterations.")
    c = _truncate(coeffs, norm, max(float(np.abs(r).max()), 0.05) * 1.05)
    f, df = _horner(c, r)
    G = np.empty((n, n))
    G[iu] = s * r
    G.T[iu] = s * r
    np.fill_diagonal(G, s)
    K = np.empty((n, n))
    k_u = s * r / (1 - a2 * df / s)
    K[iu] = k_u
    K.T[iu] = k_u
    np.fill_diagonal(K, k1)
    return SphereKernels(G, K, iterations, len(c), float(np.abs(r).max()))


def quadratic_sphere_kernels(
    X: np.ndarray, a2: float, a1: float, a0: float
) -> tuple[np.ndarray, np.ndarray]:
    """Exact explicit Σ = f_σ(XᵀX) and Θ = Σ + XᵀX ⊙ f_σ'(XᵀX) for σ(t) = a2 t² + a1 t + a0.

    f_σ is the quadratic's dual polynomial, derived by :func:`deqrmt.symbolic._sphere.polynomial_dual`.
    """
    sa2, sa1, sa0, t = QUADRATIC_SYMBOLS
    sigma = sa2 * t**2 + sa1 * t + sa0
    dual = polynomial_dual(sigma, t)
    table = {sa2: sp.Float(a2, 20), sa1: sp.Float(a1, 20), sa0: sp.Float(a0, 20)}
    poly = sp.Poly(dual.xreplace(table), RHO)
    coeffs = [float(v) for v in poly.all_coeffs()]
    dcoeffs = [float(v) for v in poly.diff(RHO).all_coeffs()] or [0.0]
    rho = X.T @ X
    np.fill_diagonal(rho, 1.0)
    sigma_k = np.polyval(coeffs, rho)
    theta = sigma_k + rho * np.polyval(dcoeffs, rho)
    return sigma_k, theta


@dataclasses.dataclass(frozen=True)
class SphereValidation:
    """Relative operator-norm errors of the sphere-setting equivalents on one sample.

    Attributes:
      ck_error: ‖G* − Ḡ‖₂/‖G*‖₂ (Theorem 1).
      ntk_error: ‖K* − K̄‖₂/‖K*‖₂ (Theorem 3).
      ck_error_quadratic, ntk_error_quadratic: ‖G* − Σ_q‖₂/‖G*‖₂ and ‖K* − Θ_q‖₂/‖K*‖₂ for
        Corollary 1's ``+++`` quadratic (None when no real quadratic exists).
      ck_error_centered: ‖G* − Ḡ‖₂/‖G* − α11ᵀ‖₂, the error against the spectral bulk only.
      ck_norm, ntk_norm: ‖G*‖₂, ‖K*‖₂.
    """

    activation: str
    n: int
    d: int
    seed: int
    sigma_a2: float
    sigma_b2: float
    ck_error: float
    ntk_error: float
    ck_error_centered: float
    ck_error_quadratic: float | None
    ntk_error_quadratic: float | None
    ck_norm: float
    ntk_norm: float
    iterations: int
    terms: int
    max_correlation: float
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _opnorm(a: np.ndarray, block: int = 4, depth: int = 40) -> float:
    """Spectral norm of a symmetric matrix: extreme Ritz values of a block Krylov space.

    ``depth`` blocks of ``block`` vectors (A^j V, orthonormalized twice against all earlier
    blocks), then Rayleigh–Ritz.  The extreme eigenvalues of a kernel matrix converge to far
    more digits than an error ratio needs; each block costs one pass over A as a matrix–matrix
    product (a dense eigvalsh costs seconds on two cores, a matrix–vector Lanczos step as much
    memory traffic as a whole block).  The start block is fixed, so the value is reproducible.
    """
    n = a.shape[0]
    if n <= block * (depth + 1):
        w = np.linalg.eigvalsh((a + a.T) / 2)
        return float(max(abs(w[0]), abs(w[-1])))
    q, _ = np.linalg.qr(np.random.default_rng(12345).standard_normal((n, block)))
    blocks = [q]
    for _ in range(depth - 1):
        w = a @ blocks[-1]
        basis = np.hstack(blocks)
        for _ in range(2):  # twice is enough (Kahan–Parlett)
            w -= basis @ (basis.T @ w)
        q, _ = np.linalg.qr(w)
        blocks.append(q)
    basis = np.hstack(blocks)
    t = basis.T @ (a @ basis)
    ritz = np.linalg.eigvalsh((t + t.T) / 2)
    return float(max(abs(ritz[0]), abs(ritz[-1])))


def validate_sphere(
    activation: Any,
    sigma_a2: Any = "0.2",
    sigma_b2: Any = None,
    *,
    n: int = 1000,
    d: int = 1200,
    seed: int = 0,
    dps: int = 20,
    coefficients: SphereCoefficients | None = None,
) -> SphereValidation:
    """Sample X on S^{d−1}, build G*, K* exactly, and measure ‖G* − Ḡ‖/‖G*‖ and ‖K* − K̄‖/‖K*‖.

    Example:
      >>> v = validate_sphere("sqrt(2)*max(x, 0)", n=200, d=240)
      >>> v.ck_error < 1e-2, v.ntk_error < 1e-2
      (True, True)
    """
    t0 = time.perf_counter()
    act = get_activation(activation)
    coef = coefficients or sphere_coefficients(act, sigma_a2, sigma_b2, d=d, dps=dps)
    if coef.d != d:
        raise InvalidArgument(f"coefficients were computed for d = {coef.d}, not d = {d}.")
    X = sphere_sample(n, d, seed)
    kernels = implicit_sphere_kernels(X, act, coef)
    v = coef.as_floats()
    rho = X.T @ X
    np.fill_diagonal(rho, 1.0)
    ones = np.ones((n, n))
    eye = np.eye(n)
    g_bar = v["alpha"] * ones + v["beta"] * rho + v["mu"] * eye
    k_bar = v["ntk_alpha"] * ones + v["ntk_beta"] * rho + v["ntk_mu"] * eye
    g_norm = _opnorm(kernels.G)
    k_norm = _opnorm(kernels.K)
    ck_err = _opnorm(kernels.G - g_bar) / g_norm
    ntk_err = _opnorm(kernels.K - k_bar) / k_norm
    centered = _opnorm(kernels.G - g_bar) / _opnorm(kernels.G - v["alpha"] * ones)
    q_ck = q_ntk = None
    if coef.quadratic_ck:
        q = coef.quadratic_ck[0]
        sig, _ = quadratic_sphere_kernels(
            X, float(q.a2.value), float(q.a1.value), float(q.a0.value)
        )
        q_ck = _opnorm(kernels.G - sig) / g_norm
    if coef.quadratic_ntk:
        q = coef.quadratic_ntk[0]
        _, theta = quadratic_sphere_kernels(
            X, float(q.a2.value), float(q.a1.value), float(q.a0.value)
        )
        q_ntk = _opnorm(kernels.K - theta) / k_norm
    if not all(math.isfinite(e) for e in (ck_err, ntk_err, centered)):
        raise NoConvergence(
            "the kernels are not finite; check sigma_a2 against the contraction bound."
        )
    return SphereValidation(
        act.name,
        n,
        d,
        seed,
        float(coef.sigma_a2),
        float(coef.sigma_b2),
        ck_err,
        ntk_err,
        centered,
        q_ck,
        q_ntk,
        g_norm,
        k_norm,
        kernels.iterations,
        kernels.terms,
        kernels.max_correlation,
        time.perf_counter() - t0,
    )

"""Settle the slide text's disputed formulas by Monte Carlo over GMM data (numpy only).

For a centered-ReLU DEQ the infinite-width kernels G* and K* = G*/(1 − Ġ*) have a closed-form
kernel map (the arc-cosine kernel), so they are computed exactly for each data draw and
compared with the high-dimensional equivalents built from (a) deqrmt's derived coefficients
and (b) the slide text's variants:

  alpha_2   slide: E[φ'']² α₄ / (4D)           derived: E[φ'']² α₄² / (4D)
  beta_3    slide: (α₃ + β₁(σ_a²E[φ'']² + σ_b²)α₁)/D   derived: (α₃ + σ_a²E[φ'']² β₁(σ_a²α₁ + σ_b²))/D
  kappa     slide: τ* / √(1 − σ_a²E[φ'²])        derived: γ* / √(1 − σ_a²E[φ'²])
  explicit  slide: α̃_{l,2} += ¼E[σ'']² α̃_{l−1,4},  α̃_{l,3} += ½E[σ'']² α̃_{l−1,1},
            α̃_{l,4} = E[(σ²)''] α̃_{l−1,4};  derived: squares on α̃_{l−1,4}, α̃_{l−1,1}, and a ½ on α̃_{l,4}

Run ``python examples/formula_verdicts.py`` for the table in docs/formulas.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from deqrmt.numeric import deq_coefficients, equivalent_kernel, explicit_coefficients

SQRT_2PI = math.sqrt(2 * math.pi)


@dataclasses.dataclass(frozen=True)
class GMM:
    """Data X (p × n) with its statistics J, ψ, t, T and τ0 (population values at this p)."""

    X: np.ndarray
    J: np.ndarray
    psi: np.ndarray
    t: np.ndarray
    T: np.ndarray
    tau0: float


def two_class_gmm(n: int, p: int, mean_norm: float, rng: np.random.Generator) -> GMM:
    """Two equal classes, √p x ~ N(μ_a, C_a), μ_a = ±(mean_norm/2)·e₁ ∓…, C_a = (1 + 8(a−1)/√p) I."""
    scales = np.array([1.0, 1.0 + 8.0 / math.sqrt(p)])
    labels = np.repeat([0, 1], [n // 2, n - n // 2])
    mu = np.zeros((2, p))
    mu[0, 0], mu[1, 8] = mean_norm, mean_norm
    omega = rng.standard_normal((p, n)) * np.sqrt(scales[labels]) / math.sqrt(p)
    X = mu[labels].T / math.sqrt(p) + omega
    J = np.eye(2)[labels]
    frac = np.bincount(labels, minlength=2) / n
    c0 = float(frac @ scales)  # C° = Σ (n_a/n) C_a  (a multiple of I here)
    psi = (omega**2).sum(axis=0) - scales[labels]
    t = (scales - c0) * p / math.sqrt(p)
    T = np.outer(scales, scales)
    return GMM(X, J, psi, t, T, math.sqrt(c0))


def _arccos_kernel(lam: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """E[relu(u)relu(v)], E[relu(u)] (per row) and E[1_{u>0}1_{v>0}] for (u,v) ~ N(0, Λ)."""
    d = np.sqrt(np.diag(lam))
    rho = np.clip(lam / np.outer(d, d), -1.0, 1.0)
    th = np.arccos(rho)
    err = np.outer(d, d) / (2 * math.pi) * (np.sin(th) + (math.pi - th) * rho)
    return err, d / SQRT_2PI, (math.pi - th) / (2 * math.pi)


def relu_deq_kernels(
    X: np.ndarray, sa2: float, sb2: float, c: float
) -> tuple[np.ndarray, np.ndarray]:
    """Exact G* and K* = G*/(1 − Ġ*) of the DEQ with φ = relu − c, by iterating the kernel map."""
    xx = X.T @ X
    g = np.zeros_like(xx)
    for _ in range(500):
        err, m, same = _arccos_kernel(sa2 * g + sb2 * xx)
        g_new = err - c * (m[:, None] + m[None, :]) + c * c
        if np.max(np.abs(g_new - g)) < 1e-14:
            g = g_new
            break
        g = g_new
    _, _, same = _arccos_kernel(sa2 * g + sb2 * xx)
    return g, g / (1 - sa2 * same)


def relu_explicit_kernels(X: np.ndarray, centers: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """Σ^{(L)} and Θ^{(L)} of x^{(l)} = (relu − c_l)(W_l x^{(l−1)})/√m, all layers trainable."""
    sigma = X.T @ X
    theta = sigma.copy()
    for c in centers:
        err, m, same = _arccos_kernel(sigma)
        sigma = err - c * (m[:, None] + m[None, :]) + c * c
        theta = sigma + theta * same
    return sigma, theta


def _spectral_norm(a: np.ndarray) -> float:
    """‖A‖₂ of a symmetric matrix (eigvalsh: several times faster than an SVD)."""
    return float(np.max(np.abs(np.linalg.eigvalsh(a))))


def rel_err(exact: np.ndarray, approx: np.ndarray) -> float:
    """‖exact − approx‖₂ / ‖exact‖₂, the relative spectral-norm error of the slides' figure."""
    return _spectral_norm(exact - approx) / _spectral_norm(exact)


def deq_verdicts(
    n: int, sa2: str, sb2: str, mean_norm: float, draws: int, seed: int
) -> dict[str, float]:
    """Mean relative errors of Ḡ/K̄ with derived vs slide coefficients, ReLU DEQ."""
    rng = np.random.default_rng(seed)
    p = int(round(0.8 * n))  # p/n = 0.8 as on the slide
    acc: dict[str, list[float]] = {}
    for _ in range(draws):
        data = two_class_gmm(n, p, mean_norm, rng)
        res = deq_coefficients("relu", sa2, sb2, tau0=repr(data.tau0), dps=15)
        f, mo = res.as_floats(), res.moments_as_floats()
        s_a2, s_b2 = float(res.sigma_a2), float(res.sigma_b2)
        d = 1 - s_a2 * mo["E_phi_prime"] ** 2
        m2 = mo["E_phi_second"]
        g_star, k_star = relu_deq_kernels(data.X, s_a2, s_b2, f["center"])
        args = (data.X, data.J, data.psi, data.t, data.T, data.tau0)
        alpha2_slide = m2**2 * f["alpha_4"] / (4 * d)
        beta3_slide = (f["alpha_3"] + f["beta_1"] * (s_a2 * m2**2 + s_b2) * f["alpha_1"]) / d
        beta2_slide = alpha2_slide / d
        kappa_slide = f["tau_star"] / math.sqrt(1 - s_a2 * mo["E_phi_prime_sq"])
        gbar = equivalent_kernel(
            f["alpha_1"], f["alpha_2"], f["alpha_3"], f["gamma_star"] ** 2, *args
        )
        kbar = equivalent_kernel(f["beta_1"], f["beta_2"], f["beta_3"], f["kappa_star"] ** 2, *args)
        rows = {
            "G: derived": gbar,
            "G: slide alpha_2": equivalent_kernel(
                f["alpha_1"], alpha2_slide, f["alpha_3"], f["gamma_star"] ** 2, *args
            ),
            "K: derived": kbar,
            "K: slide alpha_2 (via beta_2)": equivalent_kernel(
                f["beta_1"], beta2_slide, f["beta_3"], f["kappa_star"] ** 2, *args
            ),
            "K: slide beta_3": equivalent_kernel(
                f["beta_1"], f["beta_2"], beta3_slide, f["kappa_star"] ** 2, *args
            ),
            "K: slide kappa (tau*)": equivalent_kernel(
                f["beta_1"], f["beta_2"], f["beta_3"], kappa_slide**2, *args
            ),
        }
        for name, approx in rows.items():
            exact = g_star if name.startswith("G") else k_star
            acc.setdefault(name, []).append(rel_err(exact, approx))
    return {k: float(np.mean(v)) for k, v in acc.items()}


def explicit_verdicts(
    n: int, layers: int, mean_norm: float, draws: int, seed: int
) -> dict[str, float]:
    """Mean relative error of Σ̄^{(L)} with derived vs slide recursions, L-layer ReLU network."""
    rng = np.random.default_rng(seed)
    p = int(round(0.8 * n))
    acc: dict[str, list[float]] = {}
    for _ in range(draws):
        data = two_class_gmm(n, p, mean_norm, rng)
        res = explicit_coefficients(["relu"] * layers, tau0=repr(data.tau0), dps=15)
        lay = res.as_floats()
        centers = [layer["center"] for layer in lay]
        sigma, _ = relu_explicit_kernels(data.X, centers)
        args = (data.X, data.J, data.psi, data.t, data.T, data.tau0)
        # slide recursion with the same per-layer moments: for centered ReLU at scale τ,
        # E[σ']² = 1/4, E[σ''] = 1/(τ√(2π)), E[(σ_c²)''] = 1 − 1/π.
        a = [1.0, 0.0, 0.0, 1.0]
        tau = data.tau0
        for layer in lay:
            a1, a2 = 0.25, 1 / (tau * SQRT_2PI)
            a = [
                a1 * a[0],
                a1 * a[1] + a2**2 * a[3] / 4,
                a1 * a[2] + a2**2 * a[0] / 2,
                (1 - 1 / math.pi) * a[3],
            ]
            tau = layer["tau"]
        last = lay[-1]
        derived = equivalent_kernel(
            last["alpha_1"], last["alpha_2"], last["alpha_3"], last["tau"] ** 2, *args
        )
        slide = equivalent_kernel(a[0], a[1], a[2], last["tau"] ** 2, *args)
        acc.setdefault("Sigma: derived", []).append(rel_err(sigma, derived))
        acc.setdefault("Sigma: slide recursion", []).append(rel_err(sigma, slide))
    return {k: float(np.mean(v)) for k, v in acc.items()}


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", default="256,512,1024,2048")
    ap.add_argument("--draws", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    ns = [int(v) for v in args.n.split(",")]
    settings = [
        ("paper preset: σ_a²=0.2, σ_b²=0.8, ‖μ‖=8", "0.2", "0.8", 8.0),
        ("σ_a²=0.2, σ_b²=0.3, ‖μ‖=8", "0.2", "0.3", 8.0),
        ("σ_a²=0.2, σ_b²=0.8, zero means", "0.2", "0.8", 0.0),
    ]
    for title, sa2, sb2, mn in settings:
        print(f"\nReLU DEQ, {title}  (mean ‖G*−Ḡ‖/‖G*‖ over {args.draws} draws)")
        table = {n: deq_verdicts(n, sa2, sb2, mn, args.draws, args.seed) for n in ns}
        keys = list(next(iter(table.values())))
        print(f"{'':34}" + "".join(f"{'n=' + str(n):>12}" for n in ns))
        for k in keys:
            print(f"{k:34}" + "".join(f"{table[n][k]:12.4g}" for n in ns))
    for mn in (8.0, 0.0):
        print(f"\nReLU explicit network, 2 layers, ‖μ‖={mn:g}")
        table = {n: explicit_verdicts(n, 2, mn, args.draws, args.seed) for n in ns}
        print(f"{'':34}" + "".join(f"{'n=' + str(n):>12}" for n in ns))
        for k in next(iter(table.values())):
            print(f"{k:34}" + "".join(f"{table[n][k]:12.4g}" for n in ns))


if __name__ == "__main__":
    main()

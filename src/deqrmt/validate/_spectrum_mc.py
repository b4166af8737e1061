r"""The Monte Carlo check of a predicted spectrum: sampled data, its kernel matrices, their
eigenvalues against the laws.

On the sphere (HLD 2023) the exact G*, K* of :func:`~._sphere_mc.implicit_sphere_kernels` and
Corollary 1's quadratic network beside them; on the mixture (ICML 2024) the exact kernels of the
centred φ (:func:`~._exact.exact_kernels`) and a designed ENN's.  ``width=m`` adds one
finite-width DEQ.  Each matrix's eigenvalues are compared with the law by
:func:`deqrmt.numeric.kolmogorov_distance`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..numeric import kolmogorov_distance
from ._data import GaussianMixture
from ._spectrum_laws import Laws
from ._spectrum_records import MonteCarloSpectrum

__all__ = ["sampled_spectra"]

#: kind ("ck", "ntk") → (label, matrix) of each sampled kernel matrix, the exact one first.
_Matrices = dict[str, list[tuple[str, np.ndarray]]]


def sampled_spectra(
    data: str,
    act_sym: Any,
    coef: Any,
    laws: Laws,
    *,
    n: int,
    d: int,
    mix: GaussianMixture | None,
    width: int | None,
    seed: int,
    device: str,
    tick: Callable[[str], None],
    enn: tuple[Any, Any, str, bool] | None = None,
) -> tuple[dict[str, list[MonteCarloSpectrum]], list[str]]:
    """Sample the data, build each kernel matrix and compare its eigenvalues with the laws:
    kind → one :class:`MonteCarloSpectrum` per matrix (the exact kernel first), and notes."""
    from ._sweep import resolve_device

    dev = resolve_device(device)
    if data == "sphere":
        mats, notes = _sphere_matrices(act_sym, coef, n, d, width, seed, dev, tick)
    else:
        assert mix is not None
        mats, notes = _mixture_matrices(act_sym, coef, mix, n, width, seed, dev, tick, enn)
    out: dict[str, list[MonteCarloSpectrum]] = {}
    for kind, law, _ in laws:
        out[kind] = []
        for label, A in mats[kind]:
            ev = _eigenvalues(A, dev)
            out[kind].append(MonteCarloSpectrum(label, ev, kolmogorov_distance(law, ev)))
        tick(f"{kind} eigenvalues")
    return out, notes


def _sphere_matrices(
    act_sym: Any,
    coef: Any,
    n: int,
    d: int,
    width: int | None,
    seed: int,
    dev: str,
    tick: Callable[[str], None],
) -> tuple[_Matrices, list[str]]:
    """HLD 2023 on n points of S^{d−1}: the exact G*, K*, a DEQ of ``width``, and Corollary 1's
    quadratic network (where a real one exists; a note where not)."""
    from ._pointwise import CenteredActivation
    from ._sphere_mc import implicit_sphere_kernels, quadratic_sphere_kernels, sphere_sample

    notes: list[str] = []
    mats: _Matrices = {"ck": [], "ntk": []}
    sa2, sb2 = float(coef.sigma_a2), float(coef.sigma_b2)
    X = sphere_sample(n, d, seed)
    sk = implicit_sphere_kernels(X, act_sym, coef)
    mats["ck"].append(("exact", sk.G))
    mats["ntk"].append(("exact", sk.K))
    tick("exact kernels")
    phi = CenteredActivation.from_activation(act_sym, 0.0)
    if width:
        ck, ntk = _hld_width_kernels(phi, X, width, sa2, sb2, seed, dev)
        mats["ck"].append(("width", ck))
        mats["ntk"].append(("width", ntk))
        tick(f"DEQ of width {width}")
    for kind, sols in (("ck", coef.quadratic_ck), ("ntk", coef.quadratic_ntk)):
        if not sols:
            notes.append(
                f"{kind}: no real quadratic activation of Corollary 1 (α < μ/d, e.g. an odd "
                "φ): no explicit network beside the DEQ."
            )
            continue
        q = sols[0]
        sig, theta = quadratic_sphere_kernels(
            X, float(q.a2.value), float(q.a1.value), float(q.a0.value)
        )
        mats[kind].append(("explicit", sig if kind == "ck" else theta))
    return mats, notes


def _mixture_matrices(
    act_sym: Any,
    coef: Any,
    mix: GaussianMixture,
    n: int,
    width: int | None,
    seed: int,
    dev: str,
    tick: Callable[[str], None],
    enn: tuple[Any, Any, str, bool] | None,
) -> tuple[_Matrices, list[str]]:
    """ICML 2024 on n samples of the mixture: the exact G*, K* of the centred φ, a DEQ of
    ``width``, and the designed ENN's exact kernel (``enn``)."""
    from ._exact import exact_kernels
    from ._pointwise import CenteredActivation

    mats: _Matrices = {"ck": [], "ntk": []}
    sa2, sb2 = float(coef.sigma_a2), float(coef.sigma_b2)
    sample = mix.sample(n, np.random.default_rng([seed, n]))
    phi = CenteredActivation.from_activation(act_sym, float(coef.values["center"].value))
    ex = exact_kernels(phi, sample.X, sa2, sb2, device=dev)
    mats["ck"].append(("exact", ex.G))
    mats["ntk"].append(("exact", ex.K))
    tick("exact kernels")
    if width:
        ck, ntk = _icml_width_kernels(phi, sample.X, width, sa2, sb2, seed, dev)
        mats["ck"].append(("width", ck))
        mats["ntk"].append(("width", ntk))
        tick(f"DEQ of width {width}")
    if enn is not None:
        from ._certificate import explicit_exact_kernels

        acts, ecoef, kind, trained = enn
        centred = [
            CenteredActivation.from_activation(a, float(layer["center"]))
            for a, layer in zip(acts, ecoef.as_floats(), strict=True)
        ]
        sig, theta = explicit_exact_kernels(centred, sample.X, input_layer_trainable=trained)
        mats[kind].append(("explicit", sig if kind == "ck" else theta))
        tick("designed ENN")
    return mats, []


def _eigenvalues(A: np.ndarray, device: str) -> np.ndarray:
    from ._compare import eigenvalues

    return eigenvalues(A, device)


def _hld_width_kernels(
    act: Any, X: np.ndarray, m: int, sigma_a2: float, sigma_b2: float, seed: int, device: str
) -> tuple[np.ndarray, np.ndarray]:
    r"""HLD's CK and NTK of one DEQ of width m: h = σ_a A φ(h)/√m + σ_b B x, f = vᵀh/√m.

    CK = HᵀH/m → Λ* = σ_a² E[φφ] + σ_b² XᵀX (HLD eq. (3)); the NTK over (A, B) is
    (1/m)(WᵀW) ∘ (σ_a² ZᵀZ + σ_b² XᵀX) with the adjoint w = v + (σ_a/√m) D Aᵀ w,
    D = diag φ'(h), whose limit (1/m)w_iᵀw_j → 1/(1 − Ġ_ij) gives HLD's K* = G*/(1 − Ġ*).
    """
    import torch

    from ._deq import DeqWeights, solve_deq

    w = DeqWeights.draw(m, X.shape[0], sigma_a2=sigma_a2, sigma_b2=sigma_b2, seed=seed,
                        device=device)  # fmt: skip
    sol = solve_deq(w, act, X, tol=1e-10)
    H = sol.H.T  # n × m
    Xt = torch.as_tensor(X, dtype=torch.float64, device=device)
    D = act.dphi(H)
    v = torch.as_tensor(
        np.random.default_rng([seed, 1]).standard_normal(m), dtype=torch.float64, device=device
    )
    c = w.sigma_a / math.sqrt(m)
    W = v[None, :].expand_as(H).clone()
    for _ in range(500):
        new = torch.addcmul(v[None, :], W @ w.A, D, value=c)
        step = float((new - W).abs().max())
        W = new
        if step <= 1e-10 * float(W.abs().max()):
            break
    Z = sol.Z.T  # n × m, z = φ(h)/√m
    lam = sigma_a2 * (Z @ Z.T) + sigma_b2 * (Xt.T @ Xt)
    ck = (H @ H.T) / m
    ntk = (W @ W.T) / m * lam
    return ck.cpu().numpy(), ntk.cpu().numpy()


def _icml_width_kernels(
    act: Any, X: np.ndarray, m: int, sigma_a2: float, sigma_b2: float, seed: int, device: str
) -> tuple[np.ndarray, np.ndarray]:
    from ._deq import DeqWeights
    from ._ntk import empirical_kernels

    w = DeqWeights.draw(m, X.shape[0], sigma_a2=sigma_a2, sigma_b2=sigma_b2, seed=seed,
                        device=device)  # fmt: skip
    k = empirical_kernels(w, act, X, tol=1e-10)
    return k.ck, k.ntk

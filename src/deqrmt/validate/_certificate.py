r"""Certificate for a designed ENN: its kernel against the DEQ's, exact and Monte Carlo.

For each n, on fresh GMM data: the DEQ's exact G* (or K*), the designed ENN's exact Σ^{(L)}
(or Θ^{(L)}), computed by the same bivariate expectations layer by layer
(Σ^{(l)}_ij = E[σ_l,c(u)σ_l,c(v)], Λ = Σ^{(l−1)}; Θ^{(l)} = Σ^{(l)} + Θ^{(l−1)}∘Σ̇^{(l)}), the ENN's
finite-width Monte Carlo kernel, and a control: a naive ENN of the same depth with the DEQ's own
activation.  The relative spectral-norm errors ‖G* − Σ‖/‖G*‖ should be small and fall with n
for the designed ENN, and stay large for the naive one.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from ._bivariate import bivariate
from ._compare import loglog_slope, relative_spectral_error
from ._data import paper_mixture
from ._design_file import DesignFile, check_certificate_sizes, check_design
from ._exact import exact_kernels
from ._experiment import enn_features
from ._moments import diagonal_moments
from ._pointwise import CenteredActivation
from ._verdict import Verdict, judge_errors

__all__ = [
    "CertificateResult",
    "certificate_decision",
    "certify_design",
    "explicit_exact_kernels",
]


def explicit_exact_kernels(
    acts: Sequence[CenteredActivation],
    X: np.ndarray | torch.Tensor,
    *,
    input_layer_trainable: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Infinite-width Σ^{(L)} and Θ^{(L)} of x^{(l)} = σ_l,c(W_l x^{(l−1)})/√m for data X (p × n)."""
    Xt = torch.as_tensor(X, dtype=torch.float64)
    sigma = Xt.T @ Xt
    theta = sigma.clone() if input_layer_trainable else torch.zeros_like(sigma)
    n = sigma.shape[0]
    idx = torch.arange(n)
    for act in acts:
        q = torch.diagonal(sigma).clone()
        ev = bivariate(act, q)
        f, df = ev(slice(0, n), slice(0, n), sigma)
        g, _, dsq = diagonal_moments(act, q, derivative=True)
        assert dsq is not None
        f = f.clone()
        df = df.clone()
        f[idx, idx] = g
        df[idx, idx] = dsq
        theta = f + theta * df
        sigma = f
    return sigma.numpy(), theta.numpy()


@dataclasses.dataclass(frozen=True)
class CertificateResult:
    inputs: dict[str, Any]
    runs: list[dict[str, Any]]
    slope: dict[str, float | None]
    passed: bool
    reasons: tuple[str, ...] = ()
    verdict: Verdict | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "inputs": self.inputs,
            "runs": self.runs,
            "slope": self.slope,
            "passed": self.passed,
            "reasons": list(self.reasons),
            "verdict": None if self.verdict is None else self.verdict.as_dict(),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)


def certificate_decision(runs: Sequence[Mapping[str, Any]]) -> tuple[bool, list[str], Verdict]:
    """Pass/fail of a certificate from its runs (``n``, ``designed_exact``, ``naive_exact``).

    The designed ENN's exact errors must pass the one verdict rule (rate and level,
    :func:`._verdict.judge_errors`, kernel ``designed``), and at the largest n the designed ENN
    must be several times closer than the naive control (error < ½ the naive one).
    """
    ns = [int(r["n"]) for r in runs]
    verdict = judge_errors(ns, {"designed": [float(r["designed_exact"]) for r in runs]})
    reasons = list(verdict.reasons)
    last = runs[-1]
    if not last["designed_exact"] < 0.5 * last["naive_exact"]:
        reasons.append(
            f"control: at n={last['n']} the designed ENN's error {last['designed_exact']:.3g} "
            f"is not below half the naive ENN's {last['naive_exact']:.3g}"
        )
    return not reasons, reasons, verdict


def _acts_from_design(design: DesignFile, tau0: str) -> tuple[list[Any], list[CenteredActivation]]:
    from ..numeric import explicit_coefficients

    acts = [design.family.instantiate(list(values)) for values in design.layers]
    coeffs = explicit_coefficients(acts, tau0=tau0, dps=20)
    centered = [
        CenteredActivation.from_activation(a, float(layer["center"].value))
        for a, layer in zip(acts, coeffs.layers, strict=True)
    ]
    return acts, centered


def certify_design(
    deq: str,
    design: dict[str, Any] | DesignFile,
    *,
    ns: Sequence[int] = (256, 512, 1024),
    ratio: float = 0.8,
    m: int = 1024,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> CertificateResult:
    """Compare the DEQ's exact kernel with the designed ENN's (exact, MC) and a naive ENN's.

    ``design`` is the JSON object printed by ``deqrmt design --json`` (checked field by field
    by :func:`check_design`), and the sizes by :func:`check_certificate_sizes`, before any work.  Kernel: the design's
    (``ck``: G* vs Σ^{(L)}; ``ntk``: K* vs Θ^{(L)} with the ENN's input layer fixed when the DEQ's
    B is, as in the design).
    """
    from ..numeric import deq_coefficients, explicit_coefficients
    from ..symbolic import get_activation

    spec = design if isinstance(design, DesignFile) else check_design(design)
    check_certificate_sizes(ns, ratio, m, seed, spec.kernel)
    kernel = spec.kernel
    sa2 = spec.sigma_a2
    input_trainable = spec.input_layer_trainable
    rng = np.random.default_rng(seed)
    runs = []
    for n in ns:
        p = max(16, int(round(ratio * n)))
        mix = paper_mixture(p)
        sample = mix.sample(n, rng)
        tau0 = f"{mix.tau0(n):.8f}"
        coeffs = deq_coefficients(deq, sa2, spec.sigma_b2, tau0, 20)
        phi = get_activation(deq)
        deq_act = CenteredActivation.from_activation(phi, float(coeffs.center))
        ex = exact_kernels(deq_act, sample.X, float(coeffs.sigma_a2), float(coeffs.sigma_b2))
        target = ex.G if kernel == "ck" else ex.K
        _, enn_acts = _acts_from_design(spec, tau0)
        naive = explicit_coefficients([phi] * len(enn_acts), tau0=tau0, dps=20)
        naive_acts = [
            CenteredActivation.from_activation(phi, float(layer["center"].value))
            for layer in naive.layers
        ]
        s_enn, t_enn = explicit_exact_kernels(
            enn_acts, sample.X, input_layer_trainable=input_trainable
        )
        s_naive, t_naive = explicit_exact_kernels(
            naive_acts, sample.X, input_layer_trainable=input_trainable
        )
        enn = s_enn if kernel == "ck" else t_enn
        ctrl = s_naive if kernel == "ck" else t_naive
        run: dict[str, Any] = {
            "n": n, "p": p,
            "designed_exact": relative_spectral_error(target, enn),
            "naive_exact": relative_spectral_error(target, ctrl),
        }  # fmt: skip
        if kernel == "ck":
            X = torch.as_tensor(sample.X, dtype=torch.float64)
            F = enn_features(enn_acts, X, m, seed=seed + n)
            run["designed_mc"] = relative_spectral_error(target, (F.T @ F).numpy())
            run["m"] = m
        runs.append(run)
        if progress is not None:
            progress(f"n={n}")
    ns_list = [r["n"] for r in runs]
    slope = {
        "designed_exact": loglog_slope(ns_list, [r["designed_exact"] for r in runs]),
        "naive_exact": loglog_slope(ns_list, [r["naive_exact"] for r in runs]),
    }
    passed, reasons, verdict = certificate_decision(runs)
    inputs = {
        "deq": deq,
        "design": spec.setting,
        "ns": list(ns),
        "ratio": ratio,
        "m": m,
        "seed": seed,
    }
    return CertificateResult(inputs, runs, slope, bool(passed), tuple(reasons), verdict)

r"""The predicted spectra: the laws of the DEQ's CK and NTK, and of a designed ENN's kernel.

Each law is a :class:`~deqrmt.SpectralLaw` of the kernel's high-dimensional equivalent
(docs/theory/spectra), from the coefficient engine: on the sphere (HLD 2023) α11ᵀ + βXᵀX + μI;
on a Gaussian mixture with diagonal covariances (ICML 2024) Ḡ and K̄.  numpy only, no torch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._errors import InvalidArgument
from ..numeric import SpectralLaw
from ._data import GaussianMixture

__all__ = [
    "Laws",
    "design_law",
    "design_network",
    "diagonal_covariances",
    "mixture_laws",
    "sphere_laws",
]

#: (kind, law, the equivalent's scalars) per kernel, the CK first.
Laws = list[tuple[str, SpectralLaw, dict[str, float]]]


def sphere_laws(
    act: Any, sigma_a2: Any, sigma_b2: Any, n: int, d: int, points: int
) -> tuple[Any, Laws]:
    """HLD 2023 (Theorems 1 and 3): the sphere's coefficients at ``d`` and the laws of the CK's
    and the NTK's α11ᵀ + βXᵀX + μI for n points, with their scalars."""
    from ..numeric import sphere_coefficients, sphere_spectrum

    coef = sphere_coefficients(act, sigma_a2, sigma_b2, d=d, dps=15)
    v = coef.as_floats()
    laws = []
    for kind, pre in (("ck", ""), ("ntk", "ntk_")):
        al, be, mu = v[f"{pre}alpha"], v[f"{pre}beta"], v[f"{pre}mu"]
        law = sphere_spectrum(al, be, mu, n, d, points=points)
        laws.append((kind, law, {"alpha": al, "beta": be, "mu": mu}))
    return coef, laws


def diagonal_covariances(mix: GaussianMixture) -> np.ndarray:
    """The classes' variances (k × p): the mixture's own, or the diagonals of diagonal
    covariance matrices; other covariances are refused."""
    if mix.diagonal:
        return mix.covariances
    c = mix.covariances
    off = c - np.einsum("kii->ki", c)[:, :, None] * np.eye(c.shape[1])
    if np.abs(off).max() > 0:
        raise InvalidArgument(
            "mixture: the predicted spectrum needs diagonal class covariances; give their "
            "diagonals."
        )
    return np.einsum("kii->ki", c).copy()


def mixture_laws(
    act: Any, sigma_a2: Any, sigma_b2: Any, mix: GaussianMixture, n: int, points: int
) -> tuple[Any, Laws]:
    """ICML 2024 (Theorems 1–2): the DEQ's coefficients at the mixture's τ0 and the laws of Ḡ
    and K̄ (the NTK's only when it converges), with their scalars."""
    from ..numeric import deq_coefficients, mixture_spectrum

    counts = mix.counts(n)
    coef = deq_coefficients(act, sigma_a2, sigma_b2, repr(mix.tau0(n)), 15)
    v = coef.as_floats()
    variances = diagonal_covariances(mix)
    laws = []
    keys = [("ck", ("alpha_1", "alpha_2", "alpha_3", "gamma_star"))]
    if "beta_1" in v:
        keys.append(("ntk", ("beta_1", "beta_2", "beta_3", "kappa_star")))
    for kind, (k1, k2, k3, kd) in keys:
        c = (v[k1], v[k2], v[k3], v[kd] ** 2)
        law = mixture_spectrum(*c, counts, mix.means, variances, points=points)
        laws.append((kind, law, {"c1": c[0], "c2": c[1], "c3": c[2], "diagonal": c[3]}))
    return coef, laws


def design_network(
    design: Any, mix: GaussianMixture, n: int, sigma_a2: Any, sigma_b2: Any
) -> tuple[Any, Any, str, bool]:
    """A ``deqrmt design --json`` design (the JSON object or its checked
    :class:`~deqrmt.validate._design_file.DesignFile`) at this data's τ0: (activations, their
    explicit coefficients, the design's kernel, whether its input layer is trained)."""
    from ..numeric import exact_number, explicit_coefficients
    from ._design_file import DesignFile, check_design

    spec = design if isinstance(design, DesignFile) else check_design(design)
    for name, given, ours in (
        ("sigma_a2", sigma_a2, spec.sigma_a2),
        ("sigma_b2", sigma_b2, spec.sigma_b2),
    ):
        if given is None:
            continue
        if exact_number(given, name) != exact_number(ours, name):
            raise InvalidArgument(
                f"{name}={given} differs from the design's {ours}; use the design's "
                "σ's, or design for these."
            )
    acts = [spec.family.instantiate(list(values)) for values in spec.layers]
    trained = spec.input_layer_trainable
    coef = explicit_coefficients(
        acts, tau0=repr(mix.tau0(n)), dps=15, input_layer_trainable=trained
    )
    return acts, coef, spec.kernel, trained


def design_law(
    coef: Any, kind: str, mix: GaussianMixture, n: int, points: int
) -> tuple[SpectralLaw, dict[str, float]]:
    """The predicted law of the designed network's ``kind`` kernel, from its last layer."""
    from ..numeric import mixture_spectrum

    last = coef.as_floats()[-1]
    keys = ("alpha_1", "alpha_2", "alpha_3", "tau") if kind == "ck" else (
        "beta_1", "beta_2", "beta_3", "kappa")  # fmt: skip
    c = (last[keys[0]], last[keys[1]], last[keys[2]], last[keys[3]] ** 2)
    law = mixture_spectrum(*c, mix.counts(n), mix.means, diagonal_covariances(mix), points=points)
    return law, {"c1": c[0], "c2": c[1], "c3": c[2], "diagonal": c[3]}

r"""Predicted eigenvalue spectra of the DEQ's CK and NTK, and their Monte Carlo check.

:func:`spectrum` ties together the coefficient engine (:mod:`deqrmt.numeric`), the predicted law
(:mod:`deqrmt.numeric._spectrum`) and, with ``mc=True``, sampled data:

* ``data="sphere"`` (HLD 2023): n points uniform on S^{d−1}; the DEQ's kernels in the paper's
  convention (G* the pre-activation covariance, K* = G*/(1 − Ġ*)), computed exactly by
  :func:`~._sphere_mc.implicit_sphere_kernels`; the explicit network of Corollary 1 (the
  quadratic activation with the same α, β, μ) beside it, as in HLD's Figure 1.
* ``data="gmm"`` (ICML 2024): the paper's two-class preset at p = round(0.8 n) or a
  :class:`GaussianMixture` with diagonal covariances; the exact G*, K* of the centred φ by
  :func:`~._exact.exact_kernels`.

``width=m`` adds one finite-width DEQ of width m (its CK and NTK by implicit differentiation).
Each sampled spectrum is compared with the prediction by
:func:`deqrmt.numeric.kolmogorov_distance` (bulk without spikes and atoms) and by the relative error of the top spike.
Only the prediction needs no torch.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .._errors import BudgetExceeded, InvalidArgument
from ..internal import GRID_POINTS
from ..numeric import Kolmogorov, SpectralLaw, kolmogorov_distance
from ._data import GaussianMixture, paper_mixture

__all__ = [
    "MAX_MC_N",
    "MAX_WIDTH",
    "MonteCarloSpectrum",
    "KernelSpectrum",
    "SpectrumReport",
    "spectrum",
]

#: the largest n with --mc (dense n × n kernels and their eigenvalues)
MAX_MC_N = 8192
#: the largest width of the finite DEQ (m × m weights)
MAX_WIDTH = 8192
#: the largest n·d of a sampled data matrix
MAX_MC_ENTRIES = 50_000_000
MAX_N = 10_000_000


@dataclasses.dataclass(frozen=True)
class MonteCarloSpectrum:
    """Sampled eigenvalues of one kernel matrix and how they compare with the prediction.

    Attributes:
      label: which matrix: ``"exact"`` (the exact infinite-width kernel on the sampled data),
        ``"width"`` (a finite-width DEQ) or ``"explicit"`` (the explicit network: Corollary 1's
        quadratic on the sphere, the designed ENN on the mixture).
      eigenvalues: its n eigenvalues, increasing (float64).
      check: the :class:`~deqrmt.numeric.Kolmogorov` comparison with the predicted law: the
        Kolmogorov distance of the bulk and the sampled eigenvalues matched to the spikes.

    ``to_dict()`` is the ``mc`` object of ``deqrmt spectrum --json``: ``label``, ``eigenvalues``,
    ``kolmogorov``, ``kolmogorov_with_atoms``, ``spikes``, ``spike_errors``, ``bulk_count``.
    """

    label: str
    eigenvalues: np.ndarray
    check: Kolmogorov

    def to_dict(self) -> dict[str, Any]:
        """The ``mc`` object of ``deqrmt spectrum --json`` (plain floats and lists)."""
        return {
            "label": self.label,
            "eigenvalues": [float(v) for v in self.eigenvalues],
            **self.check.to_dict(),
        }


@dataclasses.dataclass(frozen=True)
class KernelSpectrum:
    """The predicted law of one kernel (CK or NTK) and, with Monte Carlo, the sampled spectra.

    Attributes:
      kind: ``"ck"`` or ``"ntk"``.
      law: the predicted :class:`~deqrmt.SpectralLaw` (density, support, atoms, spikes,
        alignments) of the kernel's equivalent.
      coefficients: the equivalent's scalars as floats: ``alpha``, ``beta``, ``mu`` on the
        sphere (α11ᵀ + βXᵀX + μI, HLD 2023 Theorems 1 and 3); ``c1``, ``c2``, ``c3``,
        ``diagonal`` on the mixture ((α*₁, α*₂, α*₃, γ*²) for the CK, (β*₁, β*₂, β*₃, κ*²) for
        the NTK, ICML 2024 Theorems 1–2).
      samples: with ``mc=True``, a :class:`MonteCarloSpectrum` per sampled matrix: the exact
        infinite-width kernel first (``"exact"``), then a finite-width DEQ (``"width"``) and the
        explicit network (``"explicit"``) when they were computed; empty otherwise.
      explicit: the designed ENN's own predicted law and scalars (``enn=…``, for the design's
        kernel only), else None.

    ``sample(label)`` returns the sample of that label or None.  ``to_dict()`` is the ``ck`` /
    ``ntk`` object of ``deqrmt spectrum --json`` (docs/json.md): the law's ``density``,
    ``support``, ``atoms``, ``spikes``, ``alignments``, then ``equivalent``, ``enn`` and ``mc``.
    """

    kind: str
    law: SpectralLaw
    coefficients: dict[str, float]
    samples: tuple[MonteCarloSpectrum, ...] = ()
    explicit: tuple[SpectralLaw, dict[str, float]] | None = None

    def sample(self, label: str) -> MonteCarloSpectrum | None:
        """The sample labelled ``label`` (``"exact"``, ``"width"``, ``"explicit"``), or None."""
        return next((s for s in self.samples if s.label == label), None)

    def to_dict(self) -> dict[str, Any]:
        """The ``ck`` / ``ntk`` object of ``deqrmt spectrum --json`` (docs/json.md)."""
        out = self.law.to_dict()
        out["equivalent"] = dict(self.coefficients)
        if self.explicit is not None:
            out["enn"] = {**self.explicit[0].to_dict(), "equivalent": dict(self.explicit[1])}
        if self.samples:
            exact = self.samples[0]
            out["mc"] = exact.to_dict()
            for s in self.samples[1:]:
                out["mc"][s.label] = s.to_dict()
        return out


@dataclasses.dataclass(frozen=True)
class SpectrumReport:
    """What :func:`spectrum` returns: the setting, the CK and NTK spectra, the verdict.

    Attributes:
      activation: the activation's name.
      expression: its SymPy expression in x.
      setting: the data: ``{"kind": "sphere", "n", "d"}`` or ``{"kind": "gmm", "preset":
        "paper" | "file", "n", "p", "counts", "tau0"}``.
      sigma_a2: σ_a² as an exact string (``"1/5"``).
      sigma_b2: σ_b² as an exact string.
      coefficients: every verified coefficient the laws come from (name → decimal text): the
        sphere's ``alpha``, ``beta``, ``mu``, ``ntk_alpha``, … or the mixture's ``tau_star``,
        ``alpha_1`` … ``kappa_star`` at the data's τ0.
      ck: the :class:`KernelSpectrum` of the CK.
      ntk: that of the NTK, or None when the NTK diverges (σ_a² E[φ'²] ≥ 1; see ``notes``).
      passed: with ``mc=True``, whether every exact kernel's sampled bulk is within ``max_ks``
        (Kolmogorov distance) and its top spike within ``max_spike_error``; None without.
      reasons: why ``passed`` is False, one line per failed check.
      notes: caveats of the derivation and of the Monte Carlo (e.g. no real quadratic network).
      phi: the parsed :class:`~deqrmt.symbolic.Activation` (for plots).
      quadratics: sphere only: ``"CK"`` / ``"NTK"`` → Corollary 1's explicit activation
        σ(t) = a₂t² + a₁t + a₀ as ``(a2, a1, a0)`` (the ``+++`` sign pattern).

    ``figure()`` draws HLD 2023's Figure 1 layout (matplotlib), ``kernels()`` is ``(ck, ntk)``
    (or ``(ck,)``), and ``to_dict()`` is the ``deqrmt spectrum --json`` object (docs/json.md):
    ``activation``, ``expression``, ``data``, ``sigma_a2``, ``sigma_b2``, ``coefficients``,
    ``ck``, ``ntk``, ``passed``, ``reasons``, ``notes``.

    Example:
      >>> r = spectrum("sqrt(2)*relu", n=200, d=240, points=201)
      >>> r.passed is None, sorted(r.to_dict())[:4]
      (True, ['activation', 'ck', 'coefficients', 'data'])
      >>> [ks.kind for ks in r.kernels()]
      ['ck', 'ntk']
    """

    activation: str
    expression: str
    setting: dict[str, Any]
    sigma_a2: str
    sigma_b2: str
    coefficients: dict[str, str]
    ck: KernelSpectrum
    ntk: KernelSpectrum | None
    passed: bool | None
    reasons: tuple[str, ...]
    notes: tuple[str, ...]
    phi: Any = dataclasses.field(default=None, repr=False, compare=False)
    quadratics: dict[str, tuple[float, float, float]] = dataclasses.field(default_factory=dict)

    def figure(self) -> Any:
        """The HLD 2023 Figure 1 layout as a matplotlib ``Figure`` (for notebooks; needs
        matplotlib): per kernel (rows CK, NTK) the predicted density, atoms and spikes over the
        sampled eigenvalues of the implicit kernel and, on the sphere, of the explicit one, and
        the activations; the pyplot state is left alone."""
        from ._spectrum_plot import spectrum_figure

        return spectrum_figure(self)

    def kernels(self) -> tuple[KernelSpectrum, ...]:
        """``(ck, ntk)``, or ``(ck,)`` when the NTK diverges."""
        return (self.ck,) if self.ntk is None else (self.ck, self.ntk)

    def to_dict(self) -> dict[str, Any]:
        """The ``deqrmt spectrum --json`` object (docs/json.md): JSON-ready values only."""
        return {
            "activation": self.activation,
            "expression": self.expression,
            "data": dict(self.setting),
            "sigma_a2": self.sigma_a2,
            "sigma_b2": self.sigma_b2,
            "coefficients": dict(self.coefficients),
            "ck": self.ck.to_dict(),
            "ntk": None if self.ntk is None else self.ntk.to_dict(),
            "passed": self.passed,
            "reasons": list(self.reasons),
            "notes": list(self.notes),
        }


def _int(v: Any, name: str, low: int, high: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int | np.integer) or not low <= v <= high:
        cls = BudgetExceeded if isinstance(v, int | np.integer) and v > high else InvalidArgument
        raise cls(f"{name} must be an integer in [{low}, {high}], got {name}={v!r}.")
    return int(v)


# ---------------------------------------------------------------------------
# The prediction
# ---------------------------------------------------------------------------


def _sphere_laws(
    act: Any, sigma_a2: Any, sigma_b2: Any, n: int, d: int, points: int
) -> tuple[Any, list[tuple[str, SpectralLaw, dict[str, float]]]]:
    from ..numeric import sphere_coefficients, sphere_spectrum

    coef = sphere_coefficients(act, sigma_a2, sigma_b2, d=d, dps=15)
    v = coef.as_floats()
    laws = []
    for kind, pre in (("ck", ""), ("ntk", "ntk_")):
        al, be, mu = v[f"{pre}alpha"], v[f"{pre}beta"], v[f"{pre}mu"]
        law = sphere_spectrum(al, be, mu, n, d, points=points)
        laws.append((kind, law, {"alpha": al, "beta": be, "mu": mu}))
    return coef, laws


def _diagonal_covariances(mix: GaussianMixture) -> np.ndarray:
    if mix.diagonal:
        return mix.covariances
    c = mix.covariances
    off = c - np.einsum("kii->ki", c)[:, :, None] * np.eye(c.shape[1])
    if np.abs(off).max() > 0:
        raise InvalidArgument(
            "the predicted spectrum needs diagonal class covariances; give their diagonals."
        )
    return np.einsum("kii->ki", c).copy()


def _mixture_laws(
    act: Any, sigma_a2: Any, sigma_b2: Any, mix: GaussianMixture, n: int, points: int
) -> tuple[Any, list[tuple[str, SpectralLaw, dict[str, float]]]]:
    from ..numeric import deq_coefficients, mixture_spectrum

    counts = mix.counts(n)
    coef = deq_coefficients(act, sigma_a2, sigma_b2, repr(mix.tau0(n)), 15)
    v = coef.as_floats()
    variances = _diagonal_covariances(mix)
    laws = []
    keys = [("ck", ("alpha_1", "alpha_2", "alpha_3", "gamma_star"))]
    if "beta_1" in v:
        keys.append(("ntk", ("beta_1", "beta_2", "beta_3", "kappa_star")))
    for kind, (k1, k2, k3, kd) in keys:
        c = (v[k1], v[k2], v[k3], v[kd] ** 2)
        law = mixture_spectrum(*c, counts, mix.means, variances, points=points)
        laws.append((kind, law, {"c1": c[0], "c2": c[1], "c3": c[2], "diagonal": c[3]}))
    return coef, laws


def _enn(
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


def _enn_law(
    coef: Any, kind: str, mix: GaussianMixture, n: int, points: int
) -> tuple[SpectralLaw, dict[str, float]]:
    from ..numeric import mixture_spectrum

    last = coef.as_floats()[-1]
    keys = ("alpha_1", "alpha_2", "alpha_3", "tau") if kind == "ck" else (
        "beta_1", "beta_2", "beta_3", "kappa")  # fmt: skip
    c = (last[keys[0]], last[keys[1]], last[keys[2]], last[keys[3]] ** 2)
    law = mixture_spectrum(*c, mix.counts(n), mix.means, _diagonal_covariances(mix), points=points)
    return law, {"c1": c[0], "c2": c[1], "c3": c[2], "diagonal": c[3]}


# ---------------------------------------------------------------------------
# Monte Carlo
# ---------------------------------------------------------------------------


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


def _monte_carlo(
    data: str,
    act_sym: Any,
    coef: Any,
    laws: list[tuple[str, SpectralLaw, dict[str, float]]],
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
    from ._pointwise import CenteredActivation
    from ._sweep import resolve_device

    dev = resolve_device(device)
    notes: list[str] = []
    mats: dict[str, list[tuple[str, np.ndarray]]] = {"ck": [], "ntk": []}
    sa2, sb2 = float(coef.sigma_a2), float(coef.sigma_b2)
    if data == "sphere":
        from ._sphere_mc import implicit_sphere_kernels, quadratic_sphere_kernels, sphere_sample

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
    else:
        from ._exact import exact_kernels

        assert mix is not None
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
    out: dict[str, list[MonteCarloSpectrum]] = {}
    for kind, law, _ in laws:
        out[kind] = []
        for label, A in mats[kind]:
            ev = _eigenvalues(A, dev)
            out[kind].append(MonteCarloSpectrum(label, ev, kolmogorov_distance(law, ev)))
        tick(f"{kind} eigenvalues")
    return out, notes


# ---------------------------------------------------------------------------
# The entry point
# ---------------------------------------------------------------------------


def spectrum(
    activation: Any,
    *,
    data: str = "sphere",
    n: int | None = None,
    d: int | None = None,
    mixture: GaussianMixture | None = None,
    sigma_a2: Any = "0.2",
    sigma_b2: Any = None,
    mc: bool = False,
    width: int | None = None,
    seed: int = 0,
    device: str = "auto",
    max_ks: float = 0.05,
    max_spike_error: float = 0.05,
    points: int = GRID_POINTS,
    enn: dict[str, Any] | None = None,
    progress: Callable[[str], None] | None = None,
) -> SpectrumReport:
    r"""The predicted eigenvalue laws of the DEQ's CK and NTK, optionally checked on samples.

    The prediction is the limiting spectrum of the kernels' high-dimensional equivalents
    (docs/theory/spectra): on the sphere (HLD 2023, Theorems 1 and 3) α11ᵀ + βXᵀX + μI, a
    Marchenko–Pastur bulk of ratio n/d scaled by β and shifted by μ plus one spike; on the
    Gaussian mixture (ICML 2024, Theorems 1–2) Ḡ and K̄, whose bulk is the fixed point of the
    mixture's resolvent and whose spikes come from the class means and the ψ, t, T terms.

    Args:
      activation: library name or expression in x.
      data: ``"sphere"`` (HLD 2023: n points uniform on S^{d−1}, φ as given) or ``"gmm"``
        (ICML 2024: the paper's preset, or ``mixture``; φ centred at τ*).
      n: matrix size (default 1000 for the sphere, HLD's Figure 1; 1024 for the mixture).
      d: the data dimension (default 1200 for the sphere; p = round(0.8 n) for the preset, the
        mixture's own p otherwise).
      mixture: a :class:`GaussianMixture` with diagonal covariances (``data="gmm"``; e.g. from
        :func:`load_mixture`).
      sigma_a2, sigma_b2: σ_a², σ_b² (σ_b² defaults to 1 − σ_a²); exact strings or numbers.
      mc: sample the data (``seed``), compute the exact kernels and their eigenvalues, and
        compare: Kolmogorov distance of the bulk ≤ ``max_ks`` and top spike within
        ``max_spike_error`` (relative) for every kernel, else ``passed`` is False.  Needs torch
        (the ``[validate]`` extra).
      width: also one finite-width DEQ of this width (needs ``mc``).
      seed: seed of the sampled data and of the finite-width DEQ's weights.
      device: for the Monte Carlo part: auto, cpu or cuda.
      max_ks, max_spike_error: the tolerances of the Monte Carlo verdict, in (0, 1].
      points: density grid size.
      enn: a designed ENN (the parsed ``deqrmt design --json`` output; ``data="gmm"``): its own
        predicted law for the design's kernel and, with ``mc``, its exact kernel's eigenvalues
        against the DEQ's law (HLD 2023 Figure 1's "explicit" column).
      progress: called with a short label after each stage.

    Returns:
      A :class:`SpectrumReport`: ``report.ck`` and ``report.ntk`` are
      :class:`KernelSpectrum` records whose ``law`` (a :class:`~deqrmt.SpectralLaw`) has
      ``x``, ``density``, ``support``, ``atoms``, ``spikes`` and ``alignments``, whose
      ``coefficients`` are the equivalent's scalars and whose ``samples`` (with ``mc``) hold the
      sampled eigenvalues and their Kolmogorov check; ``report.passed`` is the verdict (None
      without ``mc``).  ``report.to_dict()`` is the ``deqrmt spectrum --json`` result and
      ``report.figure()`` draws HLD 2023's Figure 1 layout.

    Raises:
      InvalidArgument: an unknown ``data``, a mixture or ENN with ``data="sphere"``, ``width``
        without ``mc``, a tolerance outside (0, 1], n < 4, a mixture whose covariances are not
        diagonal, or a ``d`` that differs from the mixture's p.
      BudgetExceeded: n > 10⁷; with ``mc``, n > 8192, n·d > 5·10⁷ or ``width`` > 8192
        (docs/limits.md).
      ParseError, UnknownActivation: the activation is not understood.
      ContractionError: σ_a² outside the region where the fixed point is unique and attracting.

    Example:
      >>> r = spectrum("sqrt(2)*relu", data="sphere", n=200, d=240)
      >>> [round(v, 4) for v in r.ck.law.support[0]], round(r.ck.law.spikes[0], 2)
      ([0.0425, 3.3046], 15.18)
      >>> mc = spectrum("sqrt(2)*relu", n=200, d=240, mc=True, device="cpu")
      >>> mc.passed, mc.ck.sample("exact").check.distance < 0.05
      (True, True)
    """
    from ..symbolic import get_activation

    tick = progress or (lambda _label: None)
    if data not in ("sphere", "gmm"):
        raise InvalidArgument(f"data must be 'sphere' or 'gmm', got data={data!r}.")
    if mixture is not None and data != "gmm":
        raise InvalidArgument("a mixture description needs data='gmm'.")
    if enn is not None and data != "gmm":
        raise InvalidArgument(
            "a designed ENN (enn) is for the Gaussian mixture (data='gmm'); on the sphere the "
            "explicit network is Corollary 1's quadratic, shown with mc=True."
        )
    act = get_activation(activation)
    n = _int((1000 if data == "sphere" else 1024) if n is None else n, "n", 4, MAX_N)
    if data == "sphere":
        d = _int(1200 if d is None else d, "d", 2, MAX_N)
        mix = None
    elif mixture is not None:
        mix = mixture
        if d is not None and d != mix.p:
            raise InvalidArgument(f"d={d} differs from the mixture's p = {mix.p}.")
        d = mix.p
    else:
        d = _int(max(16, round(0.8 * n)) if d is None else d, "d", 16, MAX_N)
        mix = paper_mixture(d)
    if width is not None:
        width = _int(width, "width", 1, MAX_WIDTH)
        if not mc:
            raise InvalidArgument("width needs mc=True (a finite DEQ is a Monte Carlo sample).")
    if mc:
        _int(n, "n", 4, MAX_MC_N)
        if n * d > MAX_MC_ENTRIES:
            raise BudgetExceeded(
                f"n·d = {n * d} sampled entries, more than {MAX_MC_ENTRIES}; lower n or d."
            )
    for name, v in (("max_ks", max_ks), ("max_spike_error", max_spike_error)):
        if not (isinstance(v, int | float) and 0 < v <= 1):
            raise InvalidArgument(f"{name} must be in (0, 1], got {name}={v!r}.")
    quads: dict[str, tuple[float, float, float]] = {}
    if data == "sphere":
        coef, laws = _sphere_laws(act, sigma_a2, sigma_b2, n, d, points)
        setting: dict[str, Any] = {"kind": "sphere", "n": n, "d": d}
        coefficients = {k: v.text for k, v in coef.values.items()}
        for kind, sols in (("CK", coef.quadratic_ck), ("NTK", coef.quadratic_ntk)):
            if sols:
                q = sols[0]
                quads[kind] = (float(q.a2.value), float(q.a1.value), float(q.a0.value))
    else:
        assert mix is not None
        coef, laws = _mixture_laws(act, sigma_a2, sigma_b2, mix, n, points)
        setting = {
            "kind": "gmm", "preset": "paper" if mixture is None else "file", "n": n, "p": d,
            "counts": [int(c) for c in mix.counts(n)], "tau0": repr(mix.tau0(n)),
        }  # fmt: skip
        coefficients = {k: v.text for k, v in coef.values.items()}
    enn_parts = None
    explicit: dict[str, tuple[SpectralLaw, dict[str, float]]] = {}
    if enn is not None:
        assert mix is not None
        enn_parts = _enn(enn, mix, n, sigma_a2, sigma_b2)
        explicit[enn_parts[2]] = _enn_law(enn_parts[1], enn_parts[2], mix, n, points)
    tick("predicted laws")
    notes = list(getattr(coef, "notes", ()))
    samples: dict[str, list[MonteCarloSpectrum]] = {}
    if mc:
        samples, more = _monte_carlo(
            data, act, coef, laws, n=n, d=d, mix=mix, width=width, seed=seed, device=device,
            tick=tick, enn=enn_parts,
        )  # fmt: skip
        notes += more
    spectra = {
        kind: KernelSpectrum(kind, law, c, tuple(samples.get(kind, ())), explicit.get(kind))
        for kind, law, c in laws
    }
    passed, reasons = _verdict(spectra, max_ks, max_spike_error) if mc else (None, [])
    return SpectrumReport(
        activation=act.name,
        expression=str(act.expr),
        setting=setting,
        sigma_a2=str(coef.sigma_a2),
        sigma_b2=str(coef.sigma_b2),
        coefficients=coefficients,
        ck=spectra["ck"],
        ntk=spectra.get("ntk"),
        passed=passed,
        reasons=tuple(reasons),
        notes=tuple(notes),
        phi=act,
        quadratics=quads,
    )


def _verdict(
    spectra: dict[str, KernelSpectrum], max_ks: float, max_spike_error: float
) -> tuple[bool, list[str]]:
    reasons = []
    for kind, ks in spectra.items():
        exact = ks.sample("exact")
        if exact is None:
            continue
        c = exact.check
        if not c.distance <= max_ks:
            reasons.append(f"{kind}: Kolmogorov distance of the bulk {c.distance:.4f} > {max_ks:g}")
        if c.spike_errors and not c.spike_errors[0] <= max_spike_error:
            reasons.append(
                f"{kind}: top spike predicted {ks.law.spikes[0]:.6g}, sampled {c.spikes[0]:.6g} "
                f"(relative error {c.spike_errors[0]:.3g} > {max_spike_error:g})"
            )
    return not reasons, reasons

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

Here: the arguments checked, the steps in order, the verdict.  The records are in
:mod:`._spectrum_records`, the laws in :mod:`._spectrum_laws`, the sampling in
:mod:`._spectrum_mc`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from .. import _arguments
from .._budget import check_memory, run_bytes
from .._errors import BudgetExceeded, InvalidArgument
from ..numeric import GRID_POINTS, SpectralLaw
from ._data import GaussianMixture, paper_mixture
from ._spectrum_laws import (
    Laws,
    design_law,
    design_network,
    diagonal_covariances,
    mixture_laws,
    sphere_laws,
)
from ._spectrum_records import KernelSpectrum, MonteCarloSpectrum, SpectrumReport, SpikeCheck

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
#: the density grid's points (``points``; ``deqrmt spectrum --points``)
MIN_POINTS, MAX_POINTS = 64, 20_001
DEVICES = ("auto", "cpu", "cuda")


def _int(v: Any, name: str, low: int, high: int) -> int:
    return _arguments.integer(v, name, low, high)


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
      mixture: a :class:`GaussianMixture` with diagonal covariances (``data="gmm"``), its
        description as a dict (the keys of the TOML format of :func:`load_mixture`), or the
        path of such a file.
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
      InvalidArgument: an unknown ``data`` or ``device``, a mixture or ENN with
        ``data="sphere"``, ``width`` without ``mc``, a tolerance outside (0, 1], n < 4, a seed
        that is not an integer ≥ 0, ``points`` outside [64, 20001], a mixture that is not
        finite, has a negative variance or covariances that are not diagonal, or a ``d`` that
        differs from the mixture's p; each named.
      SpecError, FileError: a mixture description or file that does not parse.
      BudgetExceeded: n > 10⁷; with ``mc``, n > 8192, n·d > 5·10⁷ or ``width`` > 8192
        (docs/limits.md); the grid or the Monte Carlo check beyond the memory this process may
        use (:mod:`deqrmt._budget`).
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

    progress = _arguments.optional_callable(progress, "progress")
    tick = progress or (lambda _label: None)
    mixture, enn = _check_data(data, mixture, enn)
    mc = _arguments.boolean(mc, "mc")
    seed = _arguments.seed(seed, "seed")
    device = _arguments.choice(device, "device", DEVICES)
    points = _arguments.integer(points, "points", MIN_POINTS, MAX_POINTS)
    max_ks, max_spike_error = _check_tolerances(max_ks, max_spike_error)
    act = get_activation(activation)
    n, d, mix, width = _sizes(data, n, d, mixture, width, mc)
    _check_grid_memory(mix, points)
    coef, laws, setting, quads = _predict(act, data, sigma_a2, sigma_b2, n, d, mix, mixture, points)
    enn_parts, explicit = _design(enn, mix, n, sigma_a2, sigma_b2, points)
    tick("predicted laws")
    notes = list(getattr(coef, "notes", ()))
    samples: dict[str, list[MonteCarloSpectrum]] = {}
    if mc:
        from ._spectrum_mc import sampled_spectra

        samples, more = sampled_spectra(
            data, act, coef, laws, n=n, d=d, mix=mix, width=width, seed=seed, device=device,
            tick=tick, enn=enn_parts,
        )  # fmt: skip
        notes += more
    spectra = {
        kind: KernelSpectrum(kind, law, c, tuple(samples.get(kind, ())), explicit.get(kind))
        for kind, law, c in laws
    }
    passed, reasons, checks = _verdict(spectra, max_ks, max_spike_error) if mc else (None, [], ())
    return SpectrumReport(
        activation=act.name,
        expression=str(act.expr),
        setting=setting,
        sigma_a2=str(coef.sigma_a2),
        sigma_b2=str(coef.sigma_b2),
        coefficients={k: v.text for k, v in coef.values.items()},
        ck=spectra["ck"],
        ntk=spectra.get("ntk"),
        passed=passed,
        reasons=tuple(reasons),
        notes=tuple(notes),
        phi=act,
        quadratics=quads,
        spike_checks=tuple(checks),
    )


def _check_data(data: Any, mixture: Any, enn: Any) -> tuple[GaussianMixture | None, Any]:
    """``data`` is ``sphere`` or ``gmm``; a mixture (a :class:`GaussianMixture`, its TOML
    description as a mapping, or the path of its file) or a designed ENN only with ``gmm``.
    Returns the mixture and the design, checked."""
    _arguments.choice(data, "data", ("sphere", "gmm"))
    if mixture is not None and data != "gmm":
        raise InvalidArgument("mixture: a mixture description needs data='gmm'.")
    if enn is not None and data != "gmm":
        raise InvalidArgument(
            "enn: a designed ENN is for the Gaussian mixture (data='gmm'); on the sphere the "
            "explicit network is Corollary 1's quadratic, shown with mc=True."
        )
    return _mixture(mixture), _enn(enn)


def _mixture(mixture: Any) -> GaussianMixture | None:
    from ._mixture_spec import load_mixture, parse_mixture

    if mixture is None:
        return None
    if isinstance(mixture, Mapping):
        mixture = parse_mixture(dict(mixture), "mixture")
    elif isinstance(mixture, str | os.PathLike):
        mixture = load_mixture(os.fspath(mixture))
    if not isinstance(mixture, GaussianMixture):
        raise InvalidArgument(
            f"mixture={_arguments.show(mixture)}: expected a GaussianMixture, its description "
            f"as a dict (the TOML's keys) or the path of its file, got {type(mixture).__name__}."
        )
    mixture.check("mixture")
    return mixture


def _enn(enn: Any) -> Any:
    from ._design_file import DesignFile, check_design

    if enn is None or isinstance(enn, DesignFile):
        return enn
    return check_design(enn, where="enn")


def _check_tolerances(max_ks: Any, max_spike_error: Any) -> tuple[float, float]:
    out = []
    for name, v in (("max_ks", max_ks), ("max_spike_error", max_spike_error)):
        x = float(_arguments.number(v, name))
        if not 0 < x <= 1:
            raise InvalidArgument(f"{name}={_arguments.show(v)}: choose a number in (0, 1].")
        out.append(x)
    return out[0], out[1]


def _sizes(
    data: str,
    n: int | None,
    d: int | None,
    mixture: GaussianMixture | None,
    width: int | None,
    mc: bool,
) -> tuple[int, int, GaussianMixture | None, int | None]:
    """n, d (p on the mixture), the mixture (the paper's preset unless given; None on the
    sphere) and the width, with their defaults, each within its budget."""
    n = _int((1000 if data == "sphere" else 1024) if n is None else n, "n", 4, MAX_N)
    mix: GaussianMixture | None
    if data == "sphere":
        d = _int(1200 if d is None else d, "d", 2, MAX_N)
        mix = None
    elif mixture is not None:
        mix = mixture
        if d is not None and _int(d, "d", 2, MAX_N) != mix.p:
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
        m = width or 0
        # the sample, the exact kernels with their eigen-decompositions, a width-m network
        check_memory(
            run_bytes(n, d, m),
            f"the Monte Carlo check at n = {n}, d = {d}" + (f", width = {m}" if m else ""),
            "lower n" + (" or width" if m else ""),
        )
    return n, d, mix, width


def _check_grid_memory(mix: GaussianMixture | None, points: int) -> None:
    """The predicted law's scan holds ~6 complex arrays of points × (distinct variance
    columns) (:class:`deqrmt.numeric._resolvent.MixtureGram`): asked of the budget first."""
    if mix is None:
        return
    v = diagonal_covariances(mix)
    groups = len(np.unique(v.T, axis=0))
    check_memory(
        96.0 * points * groups,
        f"the predicted density on {points} points with {groups} distinct variance profiles",
        "lower points, or give the classes fewer distinct variances",
    )


def _predict(
    act: Any,
    data: str,
    sigma_a2: Any,
    sigma_b2: Any,
    n: int,
    d: int,
    mix: GaussianMixture | None,
    mixture: GaussianMixture | None,
    points: int,
) -> tuple[Any, Laws, dict[str, Any], dict[str, tuple[float, float, float]]]:
    """The coefficients, the laws, the data's description (``SpectrumReport.setting``) and, on
    the sphere, Corollary 1's quadratic activations."""
    quads: dict[str, tuple[float, float, float]] = {}
    if data == "sphere":
        coef, laws = sphere_laws(act, sigma_a2, sigma_b2, n, d, points)
        setting: dict[str, Any] = {"kind": "sphere", "n": n, "d": d}
        for kind, sols in (("CK", coef.quadratic_ck), ("NTK", coef.quadratic_ntk)):
            if sols:
                q = sols[0]
                quads[kind] = (float(q.a2.value), float(q.a1.value), float(q.a0.value))
        return coef, laws, setting, quads
    assert mix is not None
    coef, laws = mixture_laws(act, sigma_a2, sigma_b2, mix, n, points)
    setting = {
        "kind": "gmm", "preset": "paper" if mixture is None else "file", "n": n, "p": d,
        "counts": [int(c) for c in mix.counts(n)], "tau0": repr(mix.tau0(n)),
    }  # fmt: skip
    return coef, laws, setting, quads


def _design(
    enn: Any, mix: GaussianMixture | None, n: int, sigma_a2: Any, sigma_b2: Any, points: int
) -> tuple[Any, dict[str, tuple[SpectralLaw, dict[str, float]]]]:
    """A designed ENN (None without ``enn``): its layers and coefficients at this data's τ0,
    and its own predicted law under the name of the design's kernel."""
    if enn is None:
        return None, {}
    assert mix is not None
    parts = design_network(enn, mix, n, sigma_a2, sigma_b2)
    return parts, {parts[2]: design_law(parts[1], parts[2], mix, n, points)}


#: why a spike below the top one is reported but not judged (measured for tanh on the paper's
#: mixture: the second class-mean spike is 16 % off at n = 512 and 7 % at n = 2048, the top
#: one 1.1 %: the means' ‖μ‖²/p enters the exact kernel non-linearly, a finite-n bias)
_LOWER_SPIKE = (
    "below the top spike: reported, not judged (lower spikes converge more slowly in n, "
    "e.g. tanh's second class-mean spike: 16 % off at n = 512, 7 % at n = 2048)"
)


def _verdict(
    spectra: dict[str, KernelSpectrum], max_ks: float, max_spike_error: float
) -> tuple[bool, list[str], list[SpikeCheck]]:
    """The bulk's Kolmogorov distance and the top spike of each exact kernel; every other
    spike is listed in the checks with why it is not judged."""
    reasons: list[str] = []
    checks: list[SpikeCheck] = []
    for kind, ks in spectra.items():
        exact = ks.sample("exact")
        if exact is None:
            continue
        c = exact.check
        if not c.distance <= max_ks:
            reasons.append(f"{kind}: Kolmogorov distance of the bulk {c.distance:.4f} > {max_ks:g}")
        for i, (pred, got, err) in enumerate(
            zip(ks.law.spikes, c.spikes, c.spike_errors, strict=True)
        ):
            why = f"the top spike, within {max_spike_error:g} relative" if i == 0 else _LOWER_SPIKE
            checks.append(SpikeCheck(kind, i, float(pred), float(got), float(err), i == 0, why))
        if c.spike_errors and not c.spike_errors[0] <= max_spike_error:
            reasons.append(
                f"{kind}: top spike predicted {ks.law.spikes[0]:.6g}, sampled {c.spikes[0]:.6g} "
                f"(relative error {c.spike_errors[0]:.3g} > {max_spike_error:g})"
            )
    return not reasons, reasons, checks

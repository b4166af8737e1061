r"""The n-sweep: for each n, data → coefficients → Ḡ, K̄ → exact G*, K* → Monte Carlo → errors.

This is the slides' figure ("relative spectral norm error ‖G* − Ḡ‖/‖G*‖ w.r.t. sample size n")
for any activation, with the NTK and Monte Carlo networks added.  p = round(ratio·n) (the
slides' p/n = 0.8 by default; the authors' code uses n = 0.8p, i.e. ratio = 1.25).  Each n gets
its own τ0 = √(tr C°/p) and therefore its own coefficients, computed at that actual p.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch

from .._arguments import show
from .._budget import check_memory, run_bytes
from .._errors import InvalidArgument
from ._coefficients import VARIANTS, Coefficients
from ._compare import KernelErrors, eigenvalues, loglog_slope, relative_spectral_error
from ._data import GaussianMixture, paper_mixture
from ._deq import DeqWeights, solve_deq
from ._exact import exact_kernels
from ._ntk import ntk_from_solution
from ._pointwise import CenteredActivation
from ._verdict import DEFAULT_MAX_ERROR, DEFAULT_MAX_SLOPE, Verdict, judge

__all__ = [
    "ValidationConfig",
    "SweepPoint",
    "ValidationResult",
    "run_validation",
    "PRESETS",
    "resolve_device",
]

#: Data presets: name → builder of the mixture for a given p.  "zero-means" keeps only the
#: covariance structure, so that the coefficients of the J-block (α₃, β₃, through T) are not
#: hidden behind the class-mean spike (used by the negative-control tests).
PRESETS: Mapping[str, Callable[[int], GaussianMixture]] = {
    "paper": paper_mixture,
    "zero-means": lambda p: paper_mixture(p, mean_norm=0.0),
}

#: Residual the Monte Carlo DEQs are solved to.  The Monte Carlo kernels themselves are only
#: accurate to ~m^{-1/2} ≈ 2e-2 at m = 2048, so 1e-6 (a ~2e-6 relative error in ZᵀZ) is
#: invisible, and it saves a third of the iterations of a 1e-11 solve.
MC_TOL = {torch.float64: 1e-6, torch.float32: 1e-5}


def resolve_device(device: str) -> str:
    """``auto`` → ``cuda`` when available, else ``cpu``; ``cuda`` without a GPU is an error."""
    if not isinstance(device, str) or device not in {"auto", "cpu", "cuda"}:
        raise InvalidArgument(f"device must be auto, cpu or cuda, got device={show(device)}.")
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise InvalidArgument(
            "device='cuda' was asked for but torch sees no CUDA device; use device='cpu'."
        )
    return device


def _positive_float(text: str, name: str) -> float:
    try:
        v = float(text)
    except (TypeError, ValueError):
        raise InvalidArgument(f"{name} must be a number, got {text!r}.") from None
    if not (v > 0 and math.isfinite(v)):
        raise InvalidArgument(f"{name} must be positive and finite, got {text!r}.")
    return v


@dataclasses.dataclass(frozen=True)
class ValidationConfig:
    """Inputs of one validation run (the CLI's options).

    Attributes:
      activation: library name or expression in x.
      ns: sample sizes, increasing.
      m: DEQ width of the Monte Carlo networks.
      draws: Monte Carlo networks per n (kernels averaged).
      sigma_a2, sigma_b2: exact decimal strings; σ_b² defaults to 1 − σ_a².
      ratio: p/n.
      preset: data preset (``paper``).
      device, dtype: where and in which precision the Monte Carlo DEQs run (the exact kernels
        always run in float64).
      seed: base seed (data: (seed, n); network d: (seed, n, d)).
      monte_carlo: False skips the finite-width networks.
      variant: a negative-control coefficient variant (see :data:`VARIANTS`) or None.
      dps: digits of the coefficient engine.
      trainable: the NTK's parameter set ⊆ {a, A, B}; (a, A) is the slides' K*.
      max_slope, max_error: thresholds of the verdict's rate and level (:mod:`._verdict`).
    """

    activation: str
    ns: tuple[int, ...] = (256, 512, 1024)
    m: int = 2048
    draws: int = 4
    sigma_a2: str = "0.2"
    sigma_b2: str | None = None
    ratio: float = 0.8
    preset: str = "paper"
    device: str = "auto"
    dtype: str = "float64"
    seed: int = 0
    monte_carlo: bool = True
    variant: str | None = None
    dps: int = 20
    trainable: tuple[str, ...] = ("a", "A")
    max_slope: float = DEFAULT_MAX_SLOPE
    max_error: float = DEFAULT_MAX_ERROR

    def __post_init__(self) -> None:
        if not self.ns or any(not isinstance(n, int) or n < 8 for n in self.ns):
            raise InvalidArgument(f"ns=… must be integers ≥ 8, got {self.ns!r}.")
        if list(self.ns) != sorted(set(self.ns)):
            raise InvalidArgument(f"ns=… must be strictly increasing, got {self.ns!r}.")
        if self.m < 1 or self.draws < 1:
            raise InvalidArgument(
                f"m=… and draws=… must be ≥ 1, got m={self.m}, draws={self.draws}."
            )
        sa2 = _positive_float(self.sigma_a2, "sigma_a2=…")
        sb2 = 1 - sa2 if self.sigma_b2 is None else _positive_float(self.sigma_b2, "sigma_b2=…")
        if sb2 <= 0:
            raise InvalidArgument(f"σ_b² = 1 − σ_a² = {sb2:g} must be positive; give sigma_b2=….")
        if not (self.ratio > 0 and math.isfinite(self.ratio)):
            raise InvalidArgument(f"ratio=… must be positive, got {self.ratio!r}.")
        if self.preset not in PRESETS:
            raise InvalidArgument(
                f"unknown preset {self.preset!r}; choose one of {', '.join(PRESETS)}."
            )
        if self.dtype not in {"float64", "float32"}:
            raise InvalidArgument(f"dtype=… must be float64 or float32, got {self.dtype!r}.")
        if self.device not in {"auto", "cpu", "cuda"}:
            raise InvalidArgument(f"device=… must be auto, cpu or cuda, got {self.device!r}.")
        if not self.trainable or not set(self.trainable) <= {"a", "A", "B"}:
            raise InvalidArgument(f"trainable=… must be a subset of a,A,B, got {self.trainable!r}.")
        if self.variant is not None and self.variant not in VARIANTS:
            raise InvalidArgument(
                f"unknown variant {self.variant!r}; choose one of {', '.join(VARIANTS)}."
            )
        if not math.isfinite(self.max_slope):
            raise InvalidArgument(f"max_slope=… must be a finite number, got {self.max_slope!r}.")
        if not (self.max_error > 0 and math.isfinite(self.max_error)):
            raise InvalidArgument(
                f"max_error=… must be positive and finite, got {self.max_error!r}."
            )
        for n in self.ns:
            if round(self.ratio * n) < 16:
                raise InvalidArgument(
                    f"p = ratio·n = {round(self.ratio * n)} at n={n}; need p ≥ 16."
                )
        n = self.ns[-1]
        m = self.m if self.monte_carlo else 0
        check_memory(
            run_bytes(n, self.p_of(n), m),
            f"a validation run at n={n} (p = {self.p_of(n)})" + (f" and m={m}" if m else ""),
            "lower the largest n" + (" or m" if m else ""),
        )

    @property
    def p_of(self) -> Callable[[int], int]:
        return lambda n: int(round(self.ratio * n))

    def steps(self) -> int:
        """Progress steps of :func:`run_validation` (for a progress bar)."""
        return len(self.ns) * (3 + (self.draws if self.monte_carlo else 0))

    def as_dict(self) -> dict[str, object]:
        d = dataclasses.asdict(self)
        d["ns"] = list(self.ns)
        d["trainable"] = list(self.trainable)
        return d


@dataclasses.dataclass(frozen=True)
class SweepPoint:
    """Everything measured at one n.

    ``spectra`` holds sorted eigenvalues: ``G_exact``, ``G_equiv``, ``K_exact``, ``K_equiv`` and,
    with Monte Carlo, ``G_mc``, ``K_mc``.  ``timings`` splits ``seconds`` by stage.
    """

    n: int
    p: int
    m: int
    ck: KernelErrors
    ntk: KernelErrors
    seconds: float
    coefficients: Coefficients
    spectra: Mapping[str, np.ndarray]
    timings: Mapping[str, float]
    exact_method: str
    exact_degree: int
    deq_iterations: tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class ValidationResult:
    """A whole sweep: the runs, the slopes of exact-vs-equivalent errors, and the verdict."""

    config: ValidationConfig
    device: str
    runs: tuple[SweepPoint, ...]
    slope_ck: float | None
    slope_ntk: float | None
    verdict: Verdict

    @property
    def passed(self) -> bool:
        return self.verdict.passed


def run_validation(
    config: ValidationConfig, *, progress: Callable[[str], None] | None = None
) -> ValidationResult:
    """Run the n-sweep described by ``config``.

    Args:
      progress: called with a short label after each step (``config.steps()`` calls in all).

    Raises:
      InvalidArgument, ContractionError, NoConvergence: from the stages, with their remedies.
    """
    tick = progress or (lambda _label: None)
    device = resolve_device(config.device)
    dtype = torch.float64 if config.dtype == "float64" else torch.float32
    runs = []
    activation: Any = config.activation
    for n in config.ns:
        point, activation = _measure_point(config, n, activation, device, dtype, tick)
        runs.append(point)
    return result_from_runs(config, device, tuple(runs))


def _measure_point(
    config: ValidationConfig,
    n: int,
    activation: Any,
    device: str,
    dtype: torch.dtype,
    tick: Callable[[str], None],
) -> tuple[SweepPoint, Any]:
    """Everything measured at one n (and the parsed activation, reused for the next n)."""
    sa2 = float(config.sigma_a2)
    t_start = time.perf_counter()
    timings: dict[str, float] = {}
    p = config.p_of(n)
    mixture = PRESETS[config.preset](p)
    sample = mixture.sample(n, np.random.default_rng([config.seed, n]))
    stats = mixture.statistics(sample)
    t = time.perf_counter()
    coeffs, act_sym = Coefficients.from_numeric(
        activation,
        config.sigma_a2,
        config.sigma_b2,
        stats.tau0,
        dps=config.dps,
        trainable=config.trainable,
    )
    activation = act_sym  # parse once; later n reuse the Activation object
    if config.variant is not None:
        coeffs = coeffs.variant(config.variant)
    act = CenteredActivation.from_activation(act_sym, coeffs.center)
    timings["coefficients"] = time.perf_counter() - t
    tick(f"n={n}: coefficients")

    from ..numeric import equivalent_kernels

    t = time.perf_counter()
    G_eq, K_eq = equivalent_kernels(
        coeffs.as_floats(), sample.X, stats.J, stats.psi, stats.t, stats.T, stats.tau0
    )
    exact = exact_kernels(
        act, sample.X, sa2, coeffs.sigma_b2, device=device, trainable=config.trainable
    )
    timings["exact"] = time.perf_counter() - t
    tick(f"n={n}: exact kernels")

    iters: list[int] = []
    G_mc = K_mc = None
    if config.monte_carlo:
        t = time.perf_counter()
        G_mc = np.zeros((n, n))
        K_mc = np.zeros((n, n))
        for d in range(config.draws):
            seed = int(np.random.SeedSequence([config.seed, n, d]).generate_state(1)[0])
            w = DeqWeights.draw(
                config.m,
                p,
                sigma_a2=sa2,
                sigma_b2=coeffs.sigma_b2,
                seed=seed,
                device=device,
                dtype=dtype,
            )
            sol = solve_deq(w, act, sample.X, tol=MC_TOL[dtype])
            ck, ntk, adj = ntk_from_solution(
                w, act, sol, tol=MC_TOL[dtype], trainable=config.trainable, X=sample.X
            )
            iters += [sol.iterations, len(adj)]
            G_mc += ck.to("cpu", torch.float64).numpy() / config.draws
            K_mc += ntk.to("cpu", torch.float64).numpy() / config.draws
            del w, sol, ck, ntk
            tick(f"n={n}: network {d + 1}/{config.draws}")
        timings["monte_carlo"] = time.perf_counter() - t

    t = time.perf_counter()
    spectra = {
        "G_exact": eigenvalues(exact.G, device),
        "G_equiv": eigenvalues(G_eq, device),
        "K_exact": eigenvalues(exact.K, device),
        "K_equiv": eigenvalues(K_eq, device),
    }
    norm = {k: float(np.abs(v).max()) for k, v in spectra.items()}
    errs = {}
    for kind, ex, eq in (("G", exact.G, G_eq), ("K", exact.K, K_eq)):
        e = {"exact_vs_equiv": relative_spectral_error(ex, eq, norm[f"{kind}_exact"], device)}
        mc = G_mc if kind == "G" else K_mc
        if mc is not None:
            spectra[f"{kind}_mc"] = eigenvalues(mc, device)
            nmc = float(np.abs(spectra[f"{kind}_mc"]).max())
            e["mc_vs_exact"] = relative_spectral_error(mc, ex, nmc, device)
            e["mc_vs_equiv"] = relative_spectral_error(mc, eq, nmc, device)
        errs[kind] = KernelErrors(**e)
    timings["compare"] = time.perf_counter() - t
    tick(f"n={n}: compare")
    point = SweepPoint(
        n=n,
        p=p,
        m=config.m,
        ck=errs["G"],
        ntk=errs["K"],
        seconds=time.perf_counter() - t_start,
        coefficients=coeffs,
        spectra=spectra,
        timings=timings,
        exact_method=exact.method,
        exact_degree=exact.degree,
        deq_iterations=tuple(iters),
    )
    return point, activation


def result_from_runs(
    config: ValidationConfig, device: str, runs: tuple[SweepPoint, ...]
) -> ValidationResult:
    """The slopes and the one verdict (:func:`._verdict.judge`) of measured runs."""
    ns = [r.n for r in runs]
    err_ck = [r.ck.exact_vs_equiv for r in runs]
    err_ntk = [r.ntk.exact_vs_equiv for r in runs]
    return ValidationResult(
        config=config,
        device=device if device == "cpu" else f"{device} ({torch.cuda.get_device_name()})",
        runs=runs,
        slope_ck=loglog_slope(ns, err_ck),
        slope_ntk=loglog_slope(ns, err_ntk),
        verdict=judge(ns, err_ck, err_ntk, max_slope=config.max_slope, max_error=config.max_error),
    )

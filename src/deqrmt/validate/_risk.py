r"""Learning curves of ridge regression on DEQ random features, predicted three ways and sampled.

The features of a sample x are the DEQ's fixed point z*(x) ∈ ℝ^m (ICML 2024 eqs. (1)–(3):
z* = φ_c(σ_a A z* + σ_b B x)/√m, A, B with i.i.d. N(0, 1) entries); the regression is on
σ(x) = √m z*(x) (per-feature entries of order one, Louart, Liao & Couillet 2018's scaling):
β = (1/n) Σ Q y, Q = ((1/n) ΣᵀΣ + λ I)⁻¹, so that (1/n) ΣᵀΣ = (m/n) Z*ᵀZ* and Z*ᵀZ* → G* as
m → ∞: the per-feature covariance Φ of the random-features theory is the DEQ's CK G* itself.

:func:`risk` gives, at each width m = ratio·n and ridge λ, the training and test MSE

* (a) ``exact``: the deterministic equivalent (:mod:`._risk_formula`) with Φ = G*, the exact
  CK on the sampled data (:func:`deqrmt.kernels`, train × train and test × train);
* (b) ``equivalent``: the same with Φ = Ḡ, the equivalent kernel built from the proven scalars
  τ*, γ*, α*₁…α*₃ and the mixture's population statistics (:func:`deqrmt.equivalent_kernels`);
* (c) ``sampled`` (``mc=True``): ``seeds`` DEQs of width m solved on the data, the ridge
  computed directly; mean and standard deviation over the seeds.

The deterministic equivalent is proven for i.i.d. random features (rows of Σ independent given
X); a DEQ's neurons are coupled through A, so for DEQ features it is a conjecture that (c)
judges: the verdict passes where ``|(a) − (c)|`` and ``|(b) − (c)|`` are at most
``z·SE + rtol·|(c)|`` for the test MSE at every point (SE the standard error of the seeds' mean).  The training MSE is
reported beside it, not judged (above the interpolation threshold it is O(λ²), where finite-n
corrections are of the order of the value).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import _arguments
from .._budget import check_memory
from .._errors import BudgetExceeded, InvalidArgument
from ._data import GaussianMixture, MixtureSample, paper_mixture
from ._risk_formula import KernelRisk, empirical_risk, kernel_ridge_risk
from ._risk_records import RiskCurve, RiskPoint

__all__ = ["MAX_N", "MAX_WIDTH", "RiskCurve", "RiskPoint", "risk"]

#: the largest training set (the kernels are (n + n̂)², the eigendecomposition n³)
MAX_N = 8192
#: the largest width of a sampled DEQ (m × m weights, m × (n + n̂) features)
MAX_WIDTH = 16384
#: the largest width of a prediction (m enters the formulas as a number only)
MAX_PREDICTED_WIDTH = 10**9
#: the most ratios, ridges and seeds of one call
MAX_POINTS, MAX_SEEDS = 200, 1000
DEVICES = ("auto", "cpu", "cuda")
#: the fixed point is solved to this relative residual (the MSEs move by far less)
_DEQ_TOL = 1e-9
#: m²·(n + n̂) below which a network is solved on one thread
_SMALL = 1 << 26


def risk(
    act: Any,
    *,
    data: str = "gmm",
    n: int = 512,
    n_test: int | None = None,
    mixture: Any = None,
    ratios: Sequence[Any] = (0.25, 0.5, 1, 2, 4),
    ridges: Any = (1e-3,),
    sigma_a2: Any = 0.2,
    sigma_b2: Any = None,
    mc: bool = False,
    seeds: int = 5,
    seed: int = 0,
    z: Any = 3.0,
    rtol: Any = 0.1,
    device: str = "auto",
    progress: bool | Callable[[int, int], None] | None = None,
) -> RiskCurve:
    r"""Training and test MSE of ridge regression on width-m DEQ random features, predicted
    from G* and from Ḡ by the random-features deterministic equivalent, and sampled.

    See the module docstring and docs/theory/risk.md for the model, the formulas and what is
    proven.  The data are the ICML 2024 Gaussian mixture (the paper's preset at p = round(0.8 n),
    or ``mixture``): n training and ``n_test`` test points of the same law, labels −1/+1 for two
    classes (the one-hot class vector less 1/K for K classes, the MSE summed over the K outputs).

    Args:
      act: the activation φ (name, expression in x, or Activation); centred at τ* as in the
        theorems (φ_c = φ − c; c = 0 for odd φ).
      data: ``"gmm"`` (the only data with the statistics Ḡ is built from).
      n: training points, 8 to 8192.  n_test: test points (default n).
      mixture: a :class:`GaussianMixture` (or its TOML description, as for
        :func:`deqrmt.spectrum`) instead of the preset.
      ratios: the widths as m/n (each > 0; m = round(ratio·n) ≥ 1).
      ridges: λ > 0, one number or a sequence.
      sigma_a2, sigma_b2: σ_a², σ_b² (σ_b² defaults to 1 − σ_a²).
      mc: also sample ``seeds`` DEQs per width (needs torch) and judge the predictions.
      seeds: DEQs per width, 2 to 1000.  seed: the data's and the networks' seed.
      z, rtol: the verdict's tolerance, ``z·SE + rtol·|sampled|`` (z ≥ 0, rtol ≥ 0).
      device: where the DEQs are solved: auto (CUDA when available), cpu, cuda.
      progress: True for a bar over the sampled DEQs, a callable ``progress(done, total)``,
        or None/False.

    Returns:
      A :class:`RiskCurve`: one :class:`RiskPoint` per (ratio, ridge), the setting, the
      verdict (None without ``mc``), notes; ``to_dict()`` is the ``deqrmt risk --json`` object,
      ``figure()`` the curves against m/n.

    Raises:
      InvalidArgument: a malformed argument, each named (a ratio or ridge ≤ 0, seeds < 2, …).
      BudgetExceeded: n above 8192, a sampled width above 16384, more than 200 ratios or
        ridges, or the kernels and networks beyond the memory this process may use.
      ParseError, UnknownActivation: the activation is not understood.
      ContractionError, CenteringError: as for :func:`deqrmt.deq_coefficients`.
      PrecisionLoss: a ridge too small for float64 at some width.

    Example:
      >>> r = risk("tanh", n=64, ratios=[0.5, 2], ridges=1e-2)
      >>> [p.ratio for p in r.points], r.passed is None
      ([0.5, 2.0], True)
    """
    from ..symbolic import get_activation

    _arguments.choice(data, "data", ("gmm",))
    n = _arguments.integer(n, "n", 8, MAX_N)
    n_test = n if n_test is None else _arguments.integer(n_test, "n_test", 2, MAX_N)
    ratio_list = [float(r) for r in _arguments.sequence(
        ratios, "ratios", "ratios m/n", hi=MAX_POINTS, item=_arguments.number
    )]  # fmt: skip
    for i, r in enumerate(ratio_list):
        if not r > 0:
            raise InvalidArgument(f"ratios[{i}]={_arguments.show(ratios[i])}: choose m/n > 0.")
    widths = [max(1, round(r * n)) for r in ratio_list]
    ridge_list = [float(v) for v in _arguments.real_sequence(ridges, "ridges", hi=MAX_POINTS)]
    for i, v in enumerate(ridge_list):
        if not v > 0:
            raise InvalidArgument(f"ridges[{i}]={v!r}: a ridge must be > 0.")
    mc = _arguments.boolean(mc, "mc")
    seeds = _arguments.integer(seeds, "seeds", 2, MAX_SEEDS)
    seed = _arguments.seed(seed, "seed")
    z = float(_arguments.number(z, "z"))
    rtol = float(_arguments.number(rtol, "rtol"))
    if z < 0 or rtol < 0:
        raise InvalidArgument(f"z={z!r}, rtol={rtol!r}: the tolerance's terms must be ≥ 0.")
    device = _arguments.choice(device, "device", DEVICES)
    progress = _progress_arg(progress)
    too_wide = [w for w in widths if w > (MAX_WIDTH if mc else MAX_PREDICTED_WIDTH)]
    if too_wide:
        raise BudgetExceeded(
            f"ratios: width m = {too_wide[0]} at n = {n}; a "
            + ("sampled DEQ (mc=True)" if mc else "prediction")
            + f" takes m ≤ {MAX_WIDTH if mc else MAX_PREDICTED_WIDTH} (docs/limits.md)."
        )
    act = get_activation(act, "act")
    from ._spectrum import _mixture

    mix = _mixture(mixture)
    p = mix.p if mix is not None else max(16, round(0.8 * n))
    mix = mix if mix is not None else paper_mixture(p)
    total = n + n_test
    widest = max(widths) if mc else 0
    # the kernels G*, Ḡ with their eigenvectors and the joint sample; a network's weights,
    # state, features and their Gram (the networks are drawn one after another)
    need = 8.0 * (6 * total * total + 3 * total * p + 2 * widest * widest + 4 * widest * total)
    check_memory(
        need,
        f"the risk curves at n = {n}, n_test = {n_test}"
        + (f", widths up to {widest}" if widest else ""),
        "lower n" + (" or the largest ratio" if widest else ""),
    )
    return _run(act, mix, mixture is None, n, n_test, ratio_list, widths, ridge_list,
                sigma_a2, sigma_b2, mc, seeds, seed, z, rtol, device, progress)  # fmt: skip


def _progress_arg(progress: Any) -> Any:
    if progress is None or callable(progress):
        return progress
    if isinstance(progress, bool | np.bool_):  # numpy 2 names its type "bool", not "bool_"
        return bool(progress)
    raise InvalidArgument(
        f"progress={_arguments.show(progress)}: expected True, False, None or a function "
        f"progress(done, total), got {type(progress).__name__}."
    )


def _labels(labels: np.ndarray, k: int) -> np.ndarray:
    """−1/+1 for two classes; the one-hot vector less 1/K (n × K) for K > 2."""
    if k == 2:
        return np.where(labels == 0, -1.0, 1.0)
    return np.eye(k)[labels] - 1.0 / k


def _run(
    act: Any,
    mix: GaussianMixture,
    preset: bool,
    n: int,
    n_test: int,
    ratios: list[float],
    widths: list[int],
    ridges: list[float],
    sigma_a2: Any,
    sigma_b2: Any,
    mc: bool,
    seeds: int,
    seed: int,
    z: float,
    rtol: float,
    device: str,
    progress: Any,
) -> RiskCurve:
    from ._equivalent_data import equivalent_kernels

    train = mix.sample(n, np.random.default_rng([seed, n]))
    test = mix.sample(n_test, np.random.default_rng([seed, n, 1]))
    X = np.concatenate([train.X, test.X], axis=1)  # p × (n + n̂), the training points first
    labels = np.concatenate([train.labels, test.labels])
    joint = MixtureSample(X, labels, np.bincount(labels, minlength=len(train.counts)))
    k = len(train.counts)
    y, y_test = _labels(train.labels, k), _labels(test.labels, k)
    eq = equivalent_kernels(
        act, X.T, statistics=mix.statistics(joint), sigma_a2=sigma_a2, sigma_b2=sigma_b2
    )
    coef = eq.coefficients
    sa2, sb2 = float(coef.sigma_a2), float(coef.sigma_b2)
    center = eq.center
    G = _exact_ck(act, X.T, sa2, sb2, center, device)
    models = {
        "exact": KernelRisk(G[:n, :n], G[n:, :n], np.diag(G)[n:], y, y_test),
        "equivalent": KernelRisk(eq.G[:n, :n], eq.G[n:, :n], np.diag(eq.G)[n:], y, y_test),
    }
    notes = [
        "the deterministic equivalent is proven for i.i.d. random features (Louart, Liao & "
        "Couillet 2018); DEQ features are coupled through A, so for them it is checked, not "
        "proven: the sampled column is the judge."
    ]
    gap = _relative_gap(G, eq.G)
    notes.append(
        f"‖Ḡ − G*‖/‖G*‖ = {gap:.3g} on these {n + n_test} points (spectral norm; O(n^(-1/2)), ICML "
        "2024 Theorem 1): the equivalent column inherits this error."
    )
    for name, model in models.items():
        if model.clipped > 1e-10 * float(model.eig[-1]):
            notes.append(
                f"{name}: the kernel had an eigenvalue of {-model.clipped:.3g} (set to zero)."
            )
    sampled: dict[tuple[int, int], np.ndarray] = {}
    if mc:
        sampled = _sample(act, center, X, n, widths, ridges, sa2, sb2, y, y_test, seeds, seed,
                          device, progress)  # fmt: skip
    points = []
    for i, (ratio, m) in enumerate(zip(ratios, widths, strict=True)):
        for j, lam in enumerate(ridges):
            pred = {name: model.risk(m, lam) for name, model in models.items()}
            kr = kernel_ridge_risk(G[:n, :n], G[n:, :n], y, y_test, lam * n / m)
            points.append(RiskPoint.make(ratio, m, lam, pred, kr, sampled.get((i, j)), z, rtol))
    failed = [pt for pt in points if pt.passed is False]
    setting = {
        "kind": "gmm", "preset": "paper" if preset else "file", "n": n, "n_test": n_test,
        "p": mix.p, "counts": [int(c) for c in train.counts], "tau0": repr(eq.statistics.tau0),
        "center": repr(center), "seed": seed,
    }  # fmt: skip
    return RiskCurve(
        activation=act.name,
        expression=str(act.expr),
        setting=setting,
        sigma_a2=str(coef.sigma_a2),
        sigma_b2=str(coef.sigma_b2),
        points=tuple(points),
        seeds=seeds if mc else 0,
        z=z,
        rtol=rtol,
        passed=None if not mc else not failed,
        reasons=tuple(pt.reason for pt in failed),
        notes=tuple(notes),
    )


def _relative_gap(G: np.ndarray, Gbar: np.ndarray, iterations: int = 100) -> float:
    """‖Ḡ − G*‖/‖G*‖ in spectral norm, both by power iteration from a fixed start (the two
    are symmetric: |λ|max; ~100 matrix–vector products, not an O(N³) decomposition)."""

    def top(M: np.ndarray) -> float:
        v = np.asarray(np.random.default_rng(0).standard_normal(M.shape[0]))
        norm = 0.0
        for _ in range(iterations):
            w = M @ v
            norm = float(np.linalg.norm(w))
            if norm == 0.0:
                return 0.0
            v = w / norm
        return norm

    return top(Gbar - G) / top(G)


def _exact_ck(act: Any, rows: np.ndarray, sa2: float, sb2: float, c: float, device: str) -> Any:
    from ._kernels import kernels

    return np.asarray(
        kernels(
            act,
            np.ascontiguousarray(rows),
            sigma_a2=sa2,
            sigma_b2=sb2,
            kind="ck",
            center=c,
            device=device,
        )  # fmt: skip
    )


def _sample(
    act: Any,
    center: float,
    X: np.ndarray,
    n: int,
    widths: list[int],
    ridges: list[float],
    sa2: float,
    sb2: float,
    y: np.ndarray,
    y_test: np.ndarray,
    seeds: int,
    seed: int,
    device: str,
    progress: Any,
) -> dict[tuple[int, int], np.ndarray]:
    """(ratio index, ridge index) → seeds × 2 array of sampled (train, test) MSEs."""
    from ._deq import DeqWeights, solve_deq
    from ._kernel_args import resolve
    from ._pointwise import CenteredActivation
    from ._threads import blas_threads, torch_threads

    phi = CenteredActivation.from_activation(act, center)
    dev = resolve(device)
    out = {(i, j): np.empty((seeds, 2)) for i in range(len(widths)) for j in range(len(ridges))}
    total = seeds * len(widths)
    with _ticks(progress, total) as tick:
        done = 0
        for i, m in enumerate(widths):
            for s in range(seeds):
                net_seed = int(np.random.SeedSequence([seed, m, s]).generate_state(1)[0])
                w = DeqWeights.draw(m, X.shape[0], sigma_a2=sa2, sigma_b2=sb2, seed=net_seed,
                                    device=dev)  # fmt: skip
                # one thread for small networks: a pool's synchronisation costs more than
                # the matmuls (20× slower measured at m = 48 on a busy 2-core machine)
                small = dev.type == "cpu" and m * m * X.shape[1] < _SMALL
                with torch_threads(1 if small else blas_threads(dev)):
                    Z = solve_deq(w, phi, X, tol=_DEQ_TOL).Z
                    F = ((m / n) * (Z.T @ Z)).cpu().numpy()  # (1/n) ΣᵀΣ, train and test
                for j, lam in enumerate(ridges):
                    out[i, j][s] = empirical_risk(F[:n, :n], F[n:, :n], y, y_test, lam)
                done += 1
                if tick is not None:
                    tick(done, total)
    return out


class _ticks:
    """The networks' callback: a bar for ``progress=True`` (closed on the way out), the
    caller's callable, or None."""

    def __init__(self, progress: Any, total: int) -> None:
        self.progress, self.total = progress, total
        self._cm: Any = None

    def __enter__(self) -> Any:
        if self.progress is True:
            from .._progress import progress_bar

            self._cm = progress_bar(self.total, "risk: sampled DEQs", unit="net", enabled=True)
            return self._cm.__enter__()
        return self.progress or None

    def __exit__(self, *exc: Any) -> None:
        if self._cm is not None:
            self._cm.__exit__(*exc)

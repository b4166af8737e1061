r"""Gradient descent in PyTorch against the derived implicit-bias limit β̂.

Over-parameterised least squares `L(θ) = ½‖X g(θ) - y‖²` (N < d, X with i.i.d. N(0, 1/N)
entries), trained by plain gradient descent in float64 on θ from the stated initialisation
θ_i(0) = θ(0) for every coordinate.  As the step η → 0, GD follows the gradient flow, whose limit
(if it interpolates) is β̂ = argmin Σ q(β_i) s.t. Xβ = y (`deqrmt.numeric._bias.predicted_limit`);
the gap ‖β_GD - β̂‖/‖β̂‖ must shrink with η.  The ℓ2 minimum-norm interpolant is the negative
control: it interpolates too, but is not the limit.

The planted model is `β* = β(0) + z` with z sparse (k non-zero N(0, 1) entries) or dense (all
N(0, 1)): the deviation from the initialisation is what the data ask for.  For
`u**2 - v**2` (β(0) = 0) that is ordinary sparse recovery (Woodworth et al., COLT 2020).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import sympy as sp
import torch

from .._errors import InvalidArgument, NoConvergence
from ..numeric import (
    NUMPY,
    BiasLimit,
    check_sizes,
    compile_function,
    minimum_norm_interpolant,
    predicted_limit,
    relative_gap,
)
from ..symbolic import BiasDerivation
from ._torch_context import TORCH

__all__ = [
    "BiasCheck",
    "BiasProblem",
    "GDRun",
    "check_bias",
    "default_step_sizes",
    "gradient_descent",
    "make_problem",
    "resolve_device",
]

PLANTED = ("sparse", "dense")
#: floating-point operations the gradient-descent runs of one check may spend: ~40 s on one
#: core at ~5 GFLOP/s, ~350 000 steps at d = 100 where the default check needs at most
#: 124 000 (1/(1-w), u/(1-w), u**2-v**2, tanh(w) measured); past it a run is reported
#: unconverged, the check fails (exit 1) instead of running on (docs/limits.md)
GD_FLOPS = 2 * 10**11
#: one step's fixed cost (a dozen small torch kernels, ~100 µs), in flops
STEP_OVERHEAD_FLOPS = 5 * 10**5


def resolve_device(device: str | None) -> torch.device:
    """`None`/`"auto"` → cuda when available, else cpu."""
    if device in (None, "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise InvalidArgument("device='cuda' was asked for but torch sees no CUDA device.")
    if device not in ("cpu", "cuda"):
        raise InvalidArgument(f"device must be 'auto', 'cpu' or 'cuda', got {device!r}.")
    return torch.device(device)


@dataclasses.dataclass(frozen=True)
class BiasProblem:
    """Least-squares data `y = Xβ*`, X of shape (n, d) with N(0, 1/n) entries, float64."""

    X: np.ndarray
    y: np.ndarray
    beta_star: np.ndarray
    planted: str
    seed: int

    def __post_init__(self) -> None:
        n, d = self.X.shape
        if self.y.shape != (n,) or self.beta_star.shape != (d,):
            raise InvalidArgument(
                f"shapes X{self.X.shape}, y{self.y.shape}, β*{self.beta_star.shape}."
            )


def make_problem(
    derivation: BiasDerivation,
    *,
    n: int,
    d: int,
    seed: int = 0,
    planted: str = "sparse",
    k: int | None = None,
) -> BiasProblem:
    """Gaussian design and a planted `β* = β(0) + z`, z sparse (k entries) or dense.

    Args:
      derivation: fixes β(0).
      n, d: samples and coordinates, `1 ≤ n < d`.
      seed: numpy seed. Keyword-only, like all arguments after `derivation`.
      planted: "sparse" or "dense".
      k: non-zeros of a sparse z (default `max(1, n // 8)`).
    """
    for name, v in (("n", n), ("d", d), ("seed", seed)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise InvalidArgument(f"{name}={v!r} must be a non-negative int.")
    if not 1 <= n < d:
        raise InvalidArgument(f"need 1 ≤ n < d (over-parameterised), got n={n}, d={d}.")
    if planted not in PLANTED:
        raise InvalidArgument(f"planted={planted!r} must be one of {PLANTED}.")
    k = max(1, n // 8) if k is None else k
    if not 1 <= k <= d:
        raise InvalidArgument(f"k={k} must lie in [1, d={d}].")
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) / math.sqrt(n)
    z = rng.standard_normal(d)
    if planted == "sparse":
        mask = np.zeros(d, dtype=bool)
        mask[rng.choice(d, size=k, replace=False)] = True
        z = np.where(mask, z, 0.0)
    beta_star = float(derivation.beta0_value) + z
    return BiasProblem(X=X, y=X @ beta_star, beta_star=beta_star, planted=planted, seed=seed)


def _torch_functions(
    derivation: BiasDerivation,
) -> tuple[Callable[..., torch.Tensor], tuple[Callable[..., torch.Tensor], ...]]:
    """g and ∂g/∂θ_p as elementwise torch functions (code printed from SymPy, not user text;
    the printer names the arguments itself, so a parameter called ``torch`` shadows nothing)."""
    theta = derivation.parameters

    def elementwise(name: str, expr: sp.Expr) -> Callable[..., torch.Tensor]:
        fn = compile_function(name, theta, [expr], arrays=True)
        return lambda *args: fn(TORCH, *args)[0]

    g = elementwise("g", derivation.expression)
    grads = tuple(
        elementwise(f"dg_{p}", sp.diff(derivation.expression, t)) for p, t in enumerate(theta)
    )
    return g, grads


@dataclasses.dataclass(frozen=True)
class GDRun:
    """One gradient-descent run: its step size, limit and (subsampled) path of β."""

    lr: float
    steps: int
    converged: bool
    residual: float  # ‖Xβ - y‖ / ‖y‖ at the end
    beta: np.ndarray
    path_steps: np.ndarray  # the step numbers at which `path` was recorded
    path: np.ndarray  # (len(path_steps), d)
    min_beta: float  # min over the recorded path and coordinates (sign preservation)


def gradient_descent(
    derivation: BiasDerivation,
    X: np.ndarray,
    y: np.ndarray,
    step_sizes: Sequence[float],
    *,
    tol: float = 1e-11,
    max_steps: int = 2_000_000,
    device: str | None = None,
    record: int = 200,
    check_every: int = 200,
) -> tuple[GDRun, ...]:
    r"""Gradient descent `θ ← θ - η ∇_θ ½‖X g(θ) - y‖²`, one run per step size, batched.

    Every coordinate starts at `derivation.init`; a run stops when `‖Xβ - y‖/‖y‖ < tol` (it
    interpolates: the rest of the path moves β by O(tol)) or on divergence (non-finite values).

    Args:
      derivation: g, θ and θ(0).
      X, y: the data, float64.
      step_sizes: learning rates η, one run each.
      tol: relative residual at which a run has interpolated. Keyword-only.
      max_steps: cap; a run that has not interpolated by then is reported unconverged.  It is
        lowered so that the runs together stay within :data:`GD_FLOPS`.
      device: "auto" (default), "cpu" or "cuda".
      record: about how many points of the path to keep (for plots, sign checks).
      check_every: steps between convergence checks.
    """
    lrs = [float(s) for s in step_sizes]
    if not lrs or any(not (s > 0 and math.isfinite(s)) for s in lrs):
        raise InvalidArgument(f"step_sizes={list(step_sizes)!r} must be positive and finite.")
    # The time budget: a run stops unconverged (and says so) after GD_FLOPS of work, however
    # small the step; each step costs ~2·K·d·min(d, 2N) flops (the Gram or the two products)
    # plus a dozen tiny kernel launches, counted as STEP_OVERHEAD_FLOPS.
    n_rows, dim = np.shape(X)
    per_step = 2 * len(lrs) * dim * min(dim, 2 * n_rows) + STEP_OVERHEAD_FLOPS
    max_steps = max(1, min(max_steps, int(GD_FLOPS // per_step)))
    dev = resolve_device(device)
    if dev.type != "cpu":
        return _descend(derivation, X, y, lrs, tol, max_steps, dev, record, check_every)
    # Each step is a dozen tiny kernels: on a loaded machine, intra-op threads only add
    # synchronisation (measured 9x slower with 2 threads at d = 20); restore the setting after.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _descend(derivation, X, y, lrs, tol, max_steps, dev, record, check_every)
    finally:
        torch.set_num_threads(threads)


def _descend(
    derivation: BiasDerivation,
    X: np.ndarray,
    y: np.ndarray,
    lrs: list[float],
    tol: float,
    max_steps: int,
    dev: torch.device,
    record: int,
    check_every: int,
) -> tuple[GDRun, ...]:
    Xt = torch.as_tensor(np.asarray(X, float), dtype=torch.float64, device=dev)
    yt = torch.as_tensor(np.asarray(y, float), dtype=torch.float64, device=dev)
    n, d = Xt.shape
    K = len(lrs)
    g, grads = _torch_functions(derivation)

    def full(value: Any) -> torch.Tensor:  # generated code returns a number for a constant
        t = value if isinstance(value, torch.Tensor) else torch.tensor(float(value), device=dev)
        return torch.broadcast_to(t.to(torch.float64), (K, d))

    theta = [torch.full((K, d), float(v), dtype=torch.float64, device=dev) for v in derivation.init]
    lr = torch.tensor(lrs, dtype=torch.float64, device=dev)[:, None]
    lr_eff = lr.clone()  # rows of finished runs are zeroed
    active = np.ones(K, dtype=bool)
    ynorm = float(torch.linalg.norm(yt))
    # ∂L/∂β = βXᵀX − yᵀX: one fused kernel per step (the Gram matrix is d×d; skip it if huge)
    gram = Xt.T @ Xt if d <= 4096 else None
    Xty = yt @ Xt
    stride = max(1, max_steps // max(record, 1))
    steps = np.zeros(K, dtype=int)
    residual = np.full(K, math.inf)
    path_steps: list[int] = []
    path: list[np.ndarray] = []
    min_beta = np.full(K, math.inf)
    beta = full(g(*theta))
    step = 0
    # The path is recorded on a doubling schedule (dense early, where β moves fastest).
    next_record = 0
    with torch.inference_mode():
        while step < max_steps and active.any():
            if step >= next_record:
                path_steps.append(step)
                b = beta.cpu().numpy().copy()
                path.append(b)
                min_beta = np.minimum(min_beta, b.min(axis=1))
                next_record = max(step + 1, min(2 * step, step + stride))
            if step % check_every == 0:
                r = beta @ Xt.T - yt  # (K, n)
                rel = (torch.linalg.norm(r, dim=1) / ynorm).cpu().numpy()
                finite = torch.isfinite(beta).all(dim=1).cpu().numpy()
                for i in np.flatnonzero(active):
                    residual[i] = rel[i]
                    steps[i] = step
                    if rel[i] < tol or not finite[i] or not math.isfinite(rel[i]):
                        active[i] = False
                        lr_eff = lr * torch.as_tensor(active, device=dev)[:, None]
            if gram is not None:
                gb = torch.addmm(Xty, beta, gram, beta=-1)
            else:
                gb = (beta @ Xt.T - yt) @ Xt
            move = lr_eff * gb
            ds = [full(dg(*theta)) for dg in grads]
            theta = [
                torch.addcmul(t, move, dgp, value=-1) for t, dgp in zip(theta, ds, strict=True)
            ]
            beta = full(g(*theta))
            step += 1
    final = beta.detach().cpu().numpy()
    r_end = final @ np.asarray(X, float).T - np.asarray(y, float)[None, :]
    runs = []
    for k in range(K):
        if active[k]:
            steps[k] = step
        res = float(np.linalg.norm(r_end[k]) / ynorm)
        runs.append(
            GDRun(
                lr=lrs[k],
                steps=int(steps[k]),
                converged=bool(np.isfinite(final[k]).all() and res < tol * 10),
                residual=res,
                beta=final[k].copy(),
                path_steps=np.array(path_steps),
                path=np.array([p[k] for p in path]),
                min_beta=float(min(min_beta[k], final[k].min())),
            )
        )
    return tuple(runs)


def _h_values(derivation: BiasDerivation, beta: np.ndarray) -> np.ndarray:
    subs: dict[Any, Any] = {}
    if derivation.conserved_symbol is not None:
        subs[derivation.conserved_symbol] = derivation.conserved_value
    h = compile_function("h", [derivation.beta], [derivation.h.subs(subs)], arrays=True)
    with np.errstate(all="ignore"):
        return np.broadcast_to(np.asarray(h(NUMPY, beta)[0], float), beta.shape)


def default_step_sizes(
    derivation: BiasDerivation, X: np.ndarray, beta_hat: np.ndarray, count: int = 4
) -> tuple[float, ...]:
    """η_j = η_0 / 4^j with `η_0 = 1 / (‖X‖₂² max h)`, max over β(0) and β̂.

    `‖X‖₂² max h` bounds the curvature of L along the flow near its ends (the Hessian in β is
    XᵀX, and the metric h stretches it), so η_0 is about half the stability limit 2/L.
    """
    b0 = np.array([float(derivation.beta0_value)])
    hmax = float(
        np.nanmax(np.concatenate([_h_values(derivation, b0), _h_values(derivation, beta_hat)]))
    )
    eta0 = 1.0 / (np.linalg.norm(X, 2) ** 2 * hmax)
    return tuple(eta0 / 4**j for j in range(count))


@dataclasses.dataclass(frozen=True)
class BiasCheck:
    """GD against the derived β̂ and the ℓ2 negative control on one problem."""

    derivation: BiasDerivation
    problem: BiasProblem
    beta_hat: np.ndarray
    limit: BiasLimit
    l2: np.ndarray
    runs: tuple[GDRun, ...]
    gaps: tuple[float, ...]  # ‖β_GD - β̂‖/‖β̂‖ per run, step sizes decreasing
    gd_gap: float  # at the smallest step
    extrapolated_gap: float  # of (4 β_GD(η/4) - β_GD(η))/3, the O(η) term removed; nan if < 2 runs
    l2_gap: float  # ‖β_ℓ2 - β̂‖/‖β̂‖
    tolerance: float
    device: str
    failures: tuple[str, ...]

    @property
    def passed(self) -> bool:
        return not self.failures


def check_bias(
    derivation: BiasDerivation,
    *,
    n: int = 40,
    d: int = 100,
    seed: int = 0,
    planted: str = "sparse",
    step_sizes: Sequence[float] | None = None,
    tolerance: float = 1e-3,
    tol: float = 1e-11,
    max_steps: int = 2_000_000,
    device: str | None = None,
    dps: int = 30,
) -> BiasCheck:
    """Run GD at decreasing step sizes and judge it against β̂.

    Passes when every run interpolates, the gap shrinks as the step shrinks, the gap at the
    smallest step is below `tolerance`, and the ℓ2 interpolant is at least 10× farther from β̂
    than that (the check can tell the derived bias from plain least norm).

    Raises:
      NoReachableInterpolant: the data admit no interpolant in the reachable domain.
    """
    if not (0 < tolerance < 1):
        raise InvalidArgument(f"tolerance={tolerance!r} must lie in (0, 1).")
    count = len(tuple(step_sizes)) if step_sizes is not None else 4
    check_sizes(n, d, step_sizes=count, dps=dps, derivation=derivation)  # before any work
    problem = make_problem(derivation, n=n, d=d, seed=seed, planted=planted)
    limit = predicted_limit(derivation, problem.X, problem.y, dps=dps)
    beta_hat = limit.as_array()
    l2 = minimum_norm_interpolant(problem.X, problem.y)
    lrs = (
        tuple(step_sizes)
        if step_sizes is not None
        else default_step_sizes(derivation, problem.X, beta_hat)
    )
    lrs = tuple(sorted((float(s) for s in lrs), reverse=True))
    runs = gradient_descent(
        derivation, problem.X, problem.y, lrs, tol=tol, max_steps=max_steps, device=device
    )
    gaps = tuple(relative_gap(r.beta, beta_hat) for r in runs)
    # GD's limit is β_GF + O(η) (a smooth function of η): Richardson extrapolation of the two
    # smallest steps removes the O(η) term and shows what GD tends to as η → 0.
    extrapolated = math.nan
    if len(runs) >= 2:
        (a, ra), (b, rb) = sorted((r.lr, r.beta) for r in runs)[:2]
        ratio = b / a
        extrapolated = relative_gap((ratio * ra - rb) / (ratio - 1), beta_hat)
    l2_gap = relative_gap(l2, beta_hat)
    failures = []
    for r in runs:
        if not r.converged:
            failures.append(
                f"GD with step {r.lr:.3g} did not interpolate in {r.steps} steps "
                f"(residual {r.residual:.3g})"
            )
    if any(b > a for a, b in zip(gaps, gaps[1:], strict=False)):
        failures.append(f"the gap does not shrink with the step: {[f'{g:.3g}' for g in gaps]}")
    if gaps[-1] >= tolerance:
        failures.append(f"GD gap {gaps[-1]:.3g} at the smallest step is not below {tolerance:g}")
    if l2_gap < 10 * gaps[-1]:
        failures.append(
            f"the ℓ2 interpolant ({l2_gap:.3g}) is not clearly farther from β̂ than GD "
            f"({gaps[-1]:.3g}): the check cannot tell the derived bias from least norm"
        )
    if not all(math.isfinite(g) for g in gaps):
        raise NoConvergence("GD produced non-finite values.")
    return BiasCheck(
        derivation=derivation,
        problem=problem,
        beta_hat=beta_hat,
        limit=limit,
        l2=l2,
        runs=runs,
        gaps=gaps,
        gd_gap=gaps[-1],
        extrapolated_gap=extrapolated,
        l2_gap=l2_gap,
        tolerance=tolerance,
        device=str(resolve_device(device)),
        failures=tuple(failures),
    )

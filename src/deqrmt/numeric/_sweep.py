r"""Float64/numpy path for sweeps: all coefficients for an array of σ_a² at once.

Integrating in x = τξ rather than ξ keeps the kinks fixed while τ varies:

    E[g(τξ)] = ∫ g(x) φ_N(x/τ)/τ dx,

so φ and φ' are evaluated once on a fixed composite Gauss–Legendre grid (split at the kinks)
and only the Gaussian weights change with τ.  Each σ_a² is one :class:`DEQProblem`; its τ* comes
from the one root finder (``_roots.scan`` and ``_roots.polish``) on the derived map F, here fed
with these float64 moments; the coefficient formulas are the same derived expressions as the
mpmath path, run on the numpy context (:data:`._contexts.NUMPY`), and φ, φ' are the pieces
printed by the one printer, in its stable forms.  Accuracy ~1e-12 relative; use
:func:`deq_coefficients` when digits matter.

Bounded work: the grid's size grows with τ (panels of width 1/4 out to 9τ), so it is capped at
τ ≤ :data:`MAX_SPAN`/1.5 (~1.8·10⁶ nodes, ~14 MB an array), and moments for many τ are summed in
blocks of at most :data:`BLOCK` products.  The scan for a σ_a² whose variance iteration has no
fixed point ends where τ leaves the grid (ContractionError), never by memory.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike, NDArray

from .._errors import BudgetExceeded, ContractionError
from ..symbolic import Activation, X, get_activation
from ._context import Num
from ._contexts import NUMPY
from ._deq_formulas import FORMULA_KEYS, deq_formulas
from ._deq_records import DEQ_KEYS
from ._fixed_point import center_moments, map_from_moments
from ._numbers import ExactInput
from ._printer import STABLE_FORMS, compile_function
from ._problem import DEQProblem
from ._roots import polish, scan

__all__ = ["deq_coefficients_sweep"]

#: the grid's largest scale (a power of two): τ ≤ 2¹⁰/1.5 ≈ 683, ~1.8·10⁶ nodes (~14 MB an array)
MAX_SPAN = 2.0**10
#: products (τ values × grid nodes) summed at once: ~32 MB a temporary array
BLOCK = 2**22


class _BeyondGrid(OverflowError):
    """τ is beyond the float grid's budget (an OverflowError: the scan stops there)."""


def _span(tau: float) -> float:
    """Grid half-width scale: a power of two above 1.5·τ, so nearby τ share one grid."""
    span = float(2 ** math.ceil(math.log2(tau * 1.5)))
    if not span <= MAX_SPAN:
        raise _BeyondGrid(
            f"τ = {tau:.6g} is beyond the float sweep's grid (τ ≤ {MAX_SPAN / 1.5:g})"
        )
    return span


def piece_function(expr: sp.Expr) -> Num:
    """``f(ctx, x) -> (φ, φ')`` of one smooth piece for an array context: the one printer's
    array dialect, in its stable forms (no exponential overflows where the value is finite)."""
    return compile_function(
        "phi_dphi_piece", [X], [expr, sp.diff(expr, X)], rewrite=STABLE_FORMS, arrays=True
    )


@functools.lru_cache(maxsize=16)
def _grid(
    act: Activation, tau_max: float
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Nodes x, weights, φ(x), φ'(x) on [−L τ_max, L τ_max], panels of width ≤ 1/4 in x."""
    big_l = 9.0 * tau_max  # e^{-81/2} ≈ 2.6e-18 beyond
    kinks = [float(k) for k in act.kinks if abs(float(k)) < big_l]
    bounds = [-big_l, *kinks, big_l]
    gx, gw = np.polynomial.legendre.leggauss(24)
    xs, ws, pieces = [], [], []
    for i, (a, b) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
        piece = i + sum(1 for k in act.kinks if float(k) <= -big_l)
        count = max(1, math.ceil((b - a) / 0.25))
        edges = np.linspace(a, b, count + 1)
        for lo, hi in zip(edges[:-1], edges[1:], strict=True):
            xs.append((lo + hi) / 2 + (hi - lo) / 2 * gx)
            ws.append((hi - lo) / 2 * gw)
            pieces.append(np.full(gx.shape, piece))
    x, w, which = np.concatenate(xs), np.concatenate(ws), np.concatenate(pieces)
    phi, dphi = np.empty_like(x), np.empty_like(x)
    for k, p in enumerate(act.pieces):
        sel = which == k
        if not sel.any():
            continue
        f, d = piece_function(p.expr)(NUMPY, x[sel])
        phi[sel] = np.broadcast_to(f, x[sel].shape)
        dphi[sel] = np.broadcast_to(d, x[sel].shape)
    return x, w, phi, dphi


def _moments_at(act: Activation, tau: NDArray[np.float64]) -> dict[str, NDArray[np.float64]]:
    """:func:`_moments` for every τ, each on its own scale's grid, in blocks of ≤ BLOCK products."""
    spans = np.array([_span(float(t)) for t in tau])
    out = {k: np.empty_like(tau) for k in ("phi", "d1", "d2", "sq", "sq2", "dsq")}
    for span in np.unique(spans):
        grid = _grid(act, float(span))
        idx = np.flatnonzero(spans == span)
        step = max(1, BLOCK // len(grid[0]))
        for i in range(0, len(idx), step):
            part = idx[i : i + step]
            for k, v in _moments(grid, tau[part]).items():
                out[k][part] = v
    return out


def _moments(grid: tuple[Num, ...], tau: NDArray[np.float64]) -> dict[str, NDArray[np.float64]]:
    x, w, phi, dphi = grid
    xi = x[None, :] / tau[:, None]
    wt = w[None, :] * np.exp(-xi * xi / 2) / (math.sqrt(2 * math.pi) * tau[:, None])
    he2 = xi * xi - 1
    return {
        "phi": wt @ phi,
        "d1": (wt * xi) @ phi / tau,
        "d2": (wt * he2) @ phi / tau**2,
        "sq": wt @ (phi * phi),
        "sq2": (wt * he2) @ (phi * phi) / tau**2,
        "dsq": wt @ (dphi * dphi),
    }


def deq_coefficients_sweep(
    activation: str | Activation,
    sigma_a2: ArrayLike,
    sigma_b2: ArrayLike | None = None,
    tau0: ExactInput = 1,
) -> dict[str, NDArray[np.float64]]:
    """All DEQ coefficients for each σ_a² in an array, float64 and vectorised.

    The same derived formulas as :func:`deq_coefficients`, evaluated in numpy for many σ_a² at
    once (for plots and scans); no digit is verified: use :func:`deq_coefficients` for numbers
    you print.

    Args:
      activation: library name, ``name(params)``, an expression in ``x``, or an Activation.
      sigma_a2: σ_a² values (any array-like of floats in (0, 1)).
      sigma_b2: σ_b² values, broadcast against ``sigma_a2``; default 1 − σ_a².
      tau0: τ0, an exact number.

    Returns:
      A dict from each key of :data:`DEQ_KEYS` (``tau_star``, ``gamma_star``, ``alpha_1`` …,
      ``kappa_star``, ``center``) to a float64 array shaped like ``sigma_a2``.

    Raises:
      ContractionError: listing the σ_a² values for which the DEQ's iteration has no
        attracting fixed point.
      InvalidArgument, UnknownActivation, ParseError: malformed input.

    Example:
      >>> c = deq_coefficients_sweep("relu", [0.1, 0.2])   # α*₁ = σ_b²/(4 − σ_a²) for ReLU
      >>> c["alpha_1"].round(6).tolist(), [round(0.9 / 3.9, 6), round(0.8 / 3.8, 6)]
      ([0.230769, 0.210526], [0.230769, 0.210526])
    """
    from ._sweep_arguments import sweep_arguments  # the boundary check (deqrmt._arguments)

    act = get_activation(activation)
    sigma_a2, sigma_b2 = sweep_arguments(sigma_a2, sigma_b2)  # checked, as floats
    sa2 = np.atleast_1d(np.asarray(sigma_a2, dtype=np.float64))
    sb2 = (
        1 - sa2
        if sigma_b2 is None
        else np.broadcast_to(np.asarray(sigma_b2, dtype=np.float64), sa2.shape)
    )
    problems = [
        DEQProblem.make(act, float(a), float(b), tau0) for a, b in zip(sa2, sb2, strict=True)
    ]
    q = np.empty_like(sa2)
    bad = np.zeros(sa2.shape, dtype=bool)
    for i, problem in enumerate(problems):

        def h(qq: float, problem: DEQProblem = problem) -> tuple[float, float]:
            tau = math.sqrt(qq)
            m = {
                k: float(v[0]) for k, v in _moments(_grid(act, _span(tau)), np.array([tau])).items()
            }
            f, df, _ = map_from_moments(problem, NUMPY, m)
            return f - qq, df - 1

        q0 = float(problem.q0)
        try:
            # τ* only (decades=0: stop at the first root); the grid's cap ends the scan
            # (an OverflowError, so complete=False) where τ outgrows it
            roots, _ = scan(h, q0, decades=0)
        except _BeyondGrid:
            raise BudgetExceeded(
                f"σ_b²τ0² = {q0:.6g} is beyond the float sweep's grid (τ ≤ {MAX_SPAN / 1.5:g}); "
                "use deq_coefficients for this setting, or a smaller tau0."
            ) from None
        if not roots or roots[0][0] == roots[0][1]:
            bad[i] = True
            q[i] = q0
            continue
        q[i] = polish(h, roots[0][0], roots[0][1], 1e-14)
    tau = np.sqrt(q)
    m = _moments_at(act, tau)
    cm, c = center_moments(NUMPY, m)
    bad |= (np.abs(sa2 * cm["sq2"] / 2) >= 1) | (sa2 * cm["dsq"] >= 1)
    if bad.any():
        raise ContractionError(
            f"no attracting fixed point (or a divergent NTK) for σ_a² in {sa2[bad].tolist()}; "
            "restrict the sweep to smaller σ_a²."
        )
    formulas = deq_formulas()
    fn, arg_names = formulas.fn, formulas.args
    env: dict[str, Num] = dict(
        cm, sigma_a2=sa2, sigma_b2=sb2, tau_0=np.full_like(sa2, float(problems[0].tau0))
    )
    vals: Sequence[Num] = fn(NUMPY, *(env[n] for n in arg_names))
    keys = FORMULA_KEYS
    out = {
        "tau_star": tau,
        **{
            k: np.broadcast_to(np.asarray(v, dtype=np.float64), sa2.shape)
            for k, v in zip(keys, vals, strict=True)
        },
    }
    out["center"] = c
    assert set(out) == set(DEQ_KEYS)
    return out

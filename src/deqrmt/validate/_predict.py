r"""What the infinitely wide DEQ predicts: gradient flow on the MSE with its NTK, or the GP
posterior with its CK (the DEQ analogue of neural-tangents' ``predict`` module).

The model is the DEQ of ICML 2024 eqs. (1)–(3) (z* = φ(σ_a A z* + σ_b B x)/√m) with a linear
readout f(x) = aᵀz*(x), a ~ N(0, I_m).  At infinite width (Jacot et al. 2018; Feng & Kolter
2020) f at initialisation is a centred Gaussian process with covariance the CK G*, and gradient
flow on the loss ½‖f(X) − y‖² (learning rate 1) moves f as the linear model of its NTK Θ = K*
(Lee et al. 2019, §2.2), assumed here for the DEQ as for explicit networks:
``df(X)/dt = −Θ(X, X)(f(X) − y)``, ``df(x)/dt = −Θ(x, X)(f(X) − y)``.  Solved, with the
regularised training kernel Θ_r = Θ(X, X) + r I in the training equation:

* mean over initialisations (Lee et al. 2019, §2.3; the prior mean is zero):
  ``μ_t(x) = Θ(x, X) Θ_r⁻¹ (I − e^{−Θ_r t}) y``, kernel regression at t = ∞;
* covariance (Lee et al. 2019, §2.3, with the prior G = G*):
  ``Σ_t = G(x, x') + Θ(x, X) M_t G(X, X) M_t Θ(X, x') − (Θ(x, X) M_t G(X, x') + transpose)``,
  ``M_t = Θ_r⁻¹ (I − e^{−Θ_r t})``;
* ``kind="nngp"``: the exact Bayesian posterior of the GP with prior G* and Gaussian noise of
  variance r (Rasmussen & Williams 2006, §2.2):
  ``G(x, X)(G + r I)⁻¹ y`` and ``G(x, x') − G(x, X)(G + r I)⁻¹ G(X, x')``.

Θ_r is diagonalised once (``eigh``), so any number of times t costs a product each:
``M_t = V diag((1 − e^{−λt})/λ) Vᵀ``.  ``r = diag_reg · tr(Θ(X, X))/n`` (relative to the mean
of the diagonal, as neural-tangents' default ``diag_reg_absolute_scale=False``).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._arguments import boolean, choice, number, sequence, show
from .._budget import check_memory
from .._errors import InvalidArgument, PrecisionLoss
from ._data_args import _is_torch, _numpy_raw, _torch_raw, data_matrix
from ._exact import TILE
from ._kernel_args import kernel_options
from ._kernels import kernels

__all__ = ["KINDS", "MAX_TIMES", "Prediction", "predict"]

#: the two predictions: gradient flow with the NTK, the GP posterior with the CK (NNGP)
KINDS = ("ntk", "nngp")
#: the most times t of one call
MAX_TIMES = 10_000


@dataclasses.dataclass(frozen=True)
class Prediction:
    """What the infinitely wide DEQ predicts on the test points (:func:`predict`).

    Attributes:
      mean: the mean prediction, shape ``(m,)`` or ``(m, k)`` as the labels (m test points),
        with a leading axis over the times when ``t`` is a sequence; a numpy array, or a torch
        tensor on ``X_test``'s device when ``X_test`` is one.
      covariance: the m × m covariance over initialisations (``kind="ntk"``) or the posterior
        covariance (``kind="nngp"``), shared by the k outputs, with the same leading time axis;
        None unless asked for.
      t: the time(s) as given, as floats (``math.inf`` for kernel regression).
      kind: ``"ntk"`` or ``"nngp"``.
      trainable: the parameters the NTK is taken over (``kind="ntk"``).
      diag_reg: the relative regularisation asked for.
      regularizer: the absolute r added to the training kernel's diagonal,
        ``diag_reg · tr(K(X, X))/n``.
    """

    mean: Any
    covariance: Any
    t: float | tuple[float, ...]
    kind: str
    trainable: tuple[str, ...]
    diag_reg: float
    regularizer: float


def predict(
    act: Any,
    X_train: Any,
    y_train: Any,
    X_test: Any,
    *,
    t: Any = math.inf,
    kind: str = "ntk",
    diag_reg: Any = 0.0,
    covariance: bool = False,
    sigma_a2: Any = 0.2,
    sigma_b2: Any = None,
    center: float | None = None,
    trainable: Sequence[str] = ("a", "A"),
    device: Any = "auto",
    method: str = "auto",
    tol: float = 1e-13,
    progress: bool | Callable[[int, int], None] | None = None,
    tile: int = TILE,
) -> Prediction:
    r"""The predictions of the infinitely wide DEQ trained on (X_train, y_train), at X_test.

    ``kind="ntk"``: the mean (and covariance) over random initialisations of the DEQ trained by
    gradient flow on ½‖f(X) − y‖² for time ``t`` (Lee et al. 2019, §2.3, with the
    DEQ's NTK K* and CK G*); t = ∞ is kernel regression with K*.  ``kind="nngp"``: the GP
    posterior with the CK G* as prior (t must be ∞; training the readout alone for a finite
    time is ``kind="ntk", trainable=("a",)``, whose NTK is G*).  See the module docstring and
    docs/theory/predict.md for the formulas.

    Args:
      act: the activation φ, as for :func:`deqrmt.kernels`.
      X_train: n × p training inputs (rows are samples), numpy or torch.
      y_train: the n labels, shape ``(n,)`` or ``(n, k)`` (k outputs), real and finite.
      X_test: m × p test inputs.
      t: the training time, ≥ 0 (``math.inf``, default: the end of training), or a sequence of
        times (the kernels and one eigendecomposition serve them all).  Unit learning rate: a
        learning rate η scales t to η·t.
      kind: ``"ntk"`` (default) or ``"nngp"``.
      diag_reg: r/(tr K(X, X)/n) ≥ 0, the regularisation added to the training kernel's
        diagonal relative to its mean diagonal (neural-tangents' convention).
      covariance: also return the m × m covariance (costs the m × m test kernels).
      sigma_a2, sigma_b2, center, trainable, device, method, tol, progress, tile: as for
        :func:`deqrmt.kernels` (``progress`` reports each kernel computed).

    Returns:
      A :class:`Prediction`; its arrays are float64, torch tensors when ``X_test`` is one.

    Raises:
      InvalidArgument: a malformed argument (data as :func:`deqrmt.kernels` refuses it, labels
        whose rows are not X_train's, non-finite labels, a negative or NaN time, a negative
        ``diag_reg``, a finite t with ``kind="nngp"``), each named.
      PrecisionLoss: t = ∞ with a training kernel singular to working precision (duplicate
        training points, ``diag_reg=0``); pass ``diag_reg > 0``.
      BudgetExceeded: the kernels and results beyond the memory this process may use.

    Example:
      >>> import numpy as np
      >>> X = np.random.default_rng(0).standard_normal((6, 4)) / 2
      >>> p = predict("relu", X[:4], np.arange(4.0), X[4:], t=[1.0, np.inf])
      >>> p.mean.shape
      (2, 2)
    """
    times, scalar = _times(t)
    kind = choice(kind, "kind", KINDS)
    reg = float(number(diag_reg, "diag_reg"))
    if reg < 0:
        raise InvalidArgument(f"diag_reg={show(diag_reg)}: choose a number ≥ 0.")
    cov = boolean(covariance, "covariance")
    opts = kernel_options(
        act, sigma_a2=sigma_a2, sigma_b2=sigma_b2, kind="ntk", center=center, trainable=trainable
    )
    if kind == "nngp" and any(math.isfinite(s) for s in times):
        raise InvalidArgument(
            f"t={show(t)}: kind='nngp' is the Bayesian posterior (t = inf); for the readout "
            "trained alone for a finite time use kind='ntk', trainable=('a',) (its NTK is G*)."
        )
    d_train = data_matrix(X_train, "X_train")
    d_test = data_matrix(X_test, "X_test")
    if d_test.shape[1] != d_train.shape[1]:
        raise InvalidArgument(
            f"X_train and X_test must have the same number of features, got "
            f"{d_train.shape[1]} and {d_test.shape[1]}."
        )
    y, y_shape = _labels(y_train, d_train.shape[0])
    n, m, k = d_train.shape[0], d_test.shape[0], y.shape[1]
    matrices = 4 * n * n + 3 * n * m + (3 * m * m if cov else 0)
    results = len(times) * (m * k + (m * m if cov else 0))
    check_memory(
        8.0 * (matrices + results),
        f"the prediction for {n} training and {m} test points at {len(times)} time(s)",
        "predict fewer test points (or times) at a time"
        + (", or without covariance" if cov else ""),
    )
    Xtr, Xte = d_train.numpy(), d_test.numpy()
    common = {
        "sigma_a2": sigma_a2, "sigma_b2": sigma_b2, "center": center, "trainable": trainable,
        "device": device, "method": method, "tol": tol, "progress": progress, "tile": tile,
    }  # fmt: skip
    train = "ntk" if kind == "ntk" else "ck"
    K = np.asarray(kernels(act, Xtr, kind=train, **common))
    Kx = np.asarray(kernels(act, Xte, Xtr, kind=train, **common))
    prior = None
    if cov:
        G = K if kind == "nngp" else np.asarray(kernels(act, Xtr, kind="ck", **common))
        Gx = Kx if kind == "nngp" else np.asarray(kernels(act, Xte, Xtr, kind="ck", **common))
        prior = (G, Gx, np.asarray(kernels(act, Xte, kind="ck", **common)))
    r = reg * float(np.trace(K)) / n
    means, covs = _flow(K, Kx, y, times, r, prior, nngp=kind == "nngp")
    mean: Any = means.reshape((len(times), m, *y_shape[1:]))
    if scalar:
        mean = mean[0]
        covs = None if covs is None else covs[0]
    if d_test.is_torch:
        import torch

        dev = d_test.raw.device
        return Prediction(
            torch.as_tensor(mean).to(dev),
            None if covs is None else torch.as_tensor(covs).to(dev),
            times[0] if scalar else tuple(times),
            kind,
            opts.trainable,
            reg,
            r,
        )
    return Prediction(
        mean=mean,
        covariance=covs,
        t=times[0] if scalar else tuple(times),
        kind=kind,
        trainable=opts.trainable,
        diag_reg=reg,
        regularizer=r,
    )


def _flow(
    K: np.ndarray,
    Kx: np.ndarray,
    y: np.ndarray,
    times: list[float],
    r: float,
    prior: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
    *,
    nngp: bool,
) -> tuple[np.ndarray, np.ndarray | None]:
    """The means (len(t) × m × k) and covariances (len(t) × m × m or None) from the kernels:
    ``K`` = K(X, X) of the flow, ``Kx`` = K(X*, X), ``prior`` = (G(X, X), G(X*, X), G(X*, X*))."""
    n = K.shape[0]
    lam, V = np.linalg.eigh(K + r * np.eye(n))
    top = max(float(lam[-1]), 0.0)
    tiny = n * np.finfo(np.float64).eps * top  # eigenvalues below it are rounding noise
    if math.inf in times and (top == 0.0 or float(lam[0]) <= tiny):
        raise PrecisionLoss(
            f"the training kernel is singular to working precision (smallest eigenvalue "
            f"{float(lam[0]):.3g}, largest {top:.3g}: duplicate or collinear training points); "
            "pass diag_reg > 0 (e.g. diag_reg=1e-8) or a finite t."
        )
    lam = np.maximum(lam, 0.0)  # a PSD kernel: negative eigenvalues are rounding
    A = Kx @ V  # Θ(X*, X) V
    b = V.T @ y
    means = np.empty((len(times), Kx.shape[0], y.shape[1]))
    covs = None if prior is None else np.empty((len(times), Kx.shape[0], Kx.shape[0]))
    if prior is not None:
        G, Gx, Gxx = prior
        Gv = V.T @ G @ V
        B = Gx @ V
    for i, s in enumerate(times):
        d = _decay(lam, s)  # (1 − e^{−λt})/λ
        means[i] = A @ (d[:, None] * b)
        if covs is not None:
            AD = A * d
            if nngp:  # the posterior: G** − G*ₓ (G + rI)⁻¹ G*ₓᵀ
                c = Gxx - AD @ A.T
            else:  # Lee et al. 2019, §2.3
                cross = AD @ B.T
                c = Gxx + AD @ Gv @ AD.T - cross - cross.T
            covs[i] = (c + c.T) / 2  # symmetric to the last bit
    return means, covs


def _decay(lam: np.ndarray, t: float) -> np.ndarray:
    """(1 − e^{−λt})/λ, stable for small λt (→ t as λ → 0), 1/λ at t = ∞."""
    if math.isinf(t):
        return 1.0 / lam
    out = np.full_like(lam, t)
    pos = lam * t > 0
    out[pos] = -np.expm1(-lam[pos] * t) / lam[pos]
    return out


def _one_time(value: Any, name: str) -> float:
    if (
        not isinstance(value, bool)
        and not isinstance(value, np.bool_)
        and isinstance(value, numbers.Real)
        and math.isinf(float(value))
        and float(value) > 0
    ):
        return math.inf
    if getattr(value, "ndim", None) == 0 and hasattr(value, "item"):  # a 0-d array or tensor
        return _one_time(value.item(), name)
    s = float(number(value, name))
    if s < 0:
        raise InvalidArgument(f"{name}={show(value)}: a training time must be ≥ 0 (or inf).")
    return s


def _times(t: Any) -> tuple[list[float], bool]:
    """The times as floats, and whether ``t`` was one number (the results then have no time
    axis)."""
    if isinstance(t, str | numbers.Number) or getattr(t, "ndim", None) == 0:
        return [_one_time(t, "t")], True
    return sequence(t, "t", "times", hi=MAX_TIMES, item=_one_time), False


def _labels(y: Any, n: int) -> tuple[np.ndarray, tuple[int, ...]]:
    """The labels as an n × k float64 array, and their shape as given ((n,) or (n, k))."""
    raw = _torch_raw(y, "y_train") if _is_torch(y) else _numpy_raw(y, "y_train")
    shape = tuple(int(s) for s in raw.shape)
    if len(shape) not in (1, 2):
        raise InvalidArgument(
            f"y_train must have shape (n,) or (n, k) (one row per training point), got {shape}."
        )
    d = data_matrix(raw.reshape(shape[0], 1) if len(shape) == 1 else raw, "y_train")
    if shape[0] != n:
        raise InvalidArgument(
            f"y_train has {shape[0]} rows, X_train {n}: give one label (row) per training point."
        )
    return d.numpy(), shape

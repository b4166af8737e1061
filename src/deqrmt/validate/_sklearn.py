r"""The DEQ's exact CK/NTK as a scikit-learn kernel.

:class:`DEQKernel` subclasses ``sklearn.gaussian_process.kernels.Kernel``, the one base class that
every scikit-learn kernel consumer accepts with whole matrices:

* ``GaussianProcessRegressor(kernel=DEQKernel(...))`` (also inside sums and products such as
  ``DEQKernel(...) + WhiteKernel()``; the DEQ kernel has no hyperparameters to fit);
* ``KernelRidge(kernel=DEQKernel(...))``: ``pairwise_kernels`` calls a ``Kernel`` instance on the
  full data (a plain function would be called once per pair of samples);
* ``SVC(kernel=DEQKernel(...))``: a callable on (X, Y);
* or precomputed: ``K = DEQKernel(...)(X_train)``, ``SVC(kernel="precomputed").fit(K, y)``,
  predicting with ``DEQKernel(...)(X_test, X_train)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.gaussian_process.kernels import Kernel

from ._kernels import as_activation, kernel_diagonal, kernels, sigmas

__all__ = ["DEQKernel"]


class DEQKernel(Kernel):  # type: ignore[misc]
    """The DEQ's exact infinite-width kernel k(x, x') (see :func:`deqrmt.kernels`).

    A scikit-learn ``Kernel``: ``DEQKernel(...)(X)`` returns the n × n matrix K*(x_i, x_j) (or
    G* for ``kind="ck"``) as a float64 numpy array, ``DEQKernel(...)(X, Y)`` the n × m one
    against the rows of Y, and ``.diag(X)`` its diagonal alone; it has no hyperparameters
    (``eval_gradient=True`` returns an empty gradient), so ``GaussianProcessRegressor`` fits
    nothing in it.  Rows are samples, scaled as the theory assumes (‖x‖² of order one).

    Args:
      activation: the activation φ (library name or expression in x).
      kind: ``"ntk"`` (default) or ``"ck"``.
      sigma_a2, sigma_b2: σ_a², σ_b² (σ_b² defaults to 1 − σ_a²).
      center: c of φ_c = φ − c (default None: φ as given).
      trainable: the NTK's parameter set, a subset of ("a", "A", "B").
      device: ``"auto"``, ``"cpu"`` or ``"cuda"``.

    Raises:
      InvalidArgument: (when called) σ's ≤ 0, an unknown ``kind``, malformed data; the errors
        of :func:`deqrmt.kernels` otherwise (ContractionError, BudgetExceeded, ParseError).

    Example:
      >>> import numpy as np
      >>> from sklearn.kernel_ridge import KernelRidge
      >>> rng = np.random.default_rng(0)
      >>> X = rng.standard_normal((30, 4)) / 2
      >>> y = np.sin(X.sum(1))
      >>> model = KernelRidge(alpha=1e-3, kernel=DEQKernel("relu")).fit(X, y)
      >>> model.predict(X[:2]).shape
      (2,)
    """

    def __init__(
        self,
        activation: str = "relu",
        kind: str = "ntk",
        sigma_a2: Any = 0.2,
        sigma_b2: Any = None,
        center: float | None = None,
        trainable: Sequence[str] = ("a", "A"),
        device: str = "auto",
    ) -> None:
        self.activation = activation
        self.kind = kind
        self.sigma_a2 = sigma_a2
        self.sigma_b2 = sigma_b2
        self.center = center
        self.trainable = trainable
        self.device = device

    def _options(self) -> dict[str, Any]:
        sigmas(self.sigma_a2, self.sigma_b2)  # validates both now, with the argument names
        return {
            "sigma_a2": self.sigma_a2,
            "sigma_b2": self.sigma_b2,
            "kind": self.kind,
            "center": self.center,
            "trainable": tuple(self.trainable),
        }

    def _phi(self) -> Any:
        # Parse once per (activation, center): set_params() may change either.
        key = (self.activation, self.center)
        cached = self.__dict__.get("_parsed")
        if cached is None or cached[0] != key:
            cached = (key, as_activation(self.activation, self.center))
            self.__dict__["_parsed"] = cached
        return cached[1]

    def __call__(
        self, X: Any, Y: Any = None, eval_gradient: bool = False
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """k(X, Y) (Y None: k(X, X)); with ``eval_gradient`` also the empty gradient."""
        opts = self._options()
        opts.pop("center")
        K = kernels(self._phi(), X, Y, device=self.device, **opts)
        if eval_gradient:
            if Y is not None:
                raise ValueError("Gradient can only be evaluated when Y is None.")
            return K, np.empty((K.shape[0], K.shape[1], 0))  # no hyperparameters
        return K

    def diag(self, X: Any) -> np.ndarray:
        """k(x_i, x_i) for every row of X (:func:`deqrmt.validate.kernel_diagonal`)."""
        opts = self._options()
        opts.pop("center")
        return kernel_diagonal(self._phi(), X, **opts)

    def is_stationary(self) -> bool:
        """False: k depends on the norms of x and x', not on x − x' alone."""
        return False

    def __repr__(self) -> str:
        return (
            f"DEQKernel(activation={self.activation!r}, kind={self.kind!r}, "
            f"sigma_a2={self.sigma_a2!r}, sigma_b2={self.sigma_b2!r})"
        )

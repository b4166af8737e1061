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

from .._arguments import boolean, show
from .._errors import InvalidArgument
from ._data_args import data_pair
from ._kernel_args import KernelOptions, kernel_options, resolve
from ._kernels import kernel_diagonal, kernels

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
      InvalidArgument: a parameter that :func:`deqrmt.kernels` would refuse (σ's ≤ 0, an
        unknown ``kind`` or ``device``, a ``trainable`` outside a, A, B, an activation that does
        not parse), named, at construction, in ``set_params`` (which then leaves the kernel
        as it was) and when called; malformed data (named ``X``, ``Y``) when called; the
        errors of :func:`deqrmt.kernels` otherwise (ContractionError, BudgetExceeded).

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
        # stored as given (scikit-learn's clone checks that the parameters are the very
        # objects passed), checked now so that a wrong one is named where it was written
        self.activation = activation
        self.kind = kind
        self.sigma_a2 = sigma_a2
        self.sigma_b2 = sigma_b2
        self.center = center
        self.trainable = trainable
        self.device = device
        self._checked()

    def set_params(self, **params: Any) -> DEQKernel:
        """Set parameters (scikit-learn's protocol), each checked as in the constructor."""
        known = self.get_params(deep=False)
        for key in params:
            if key not in known:
                shown = key if key.isidentifier() and key.isascii() else show(key)
                raise InvalidArgument(
                    f"{shown}: not a parameter of DEQKernel; choose one of {', '.join(known)}."
                )
        old = dict(known)
        super().set_params(**params)
        try:
            self._checked()
        except Exception:
            super().set_params(**old)  # a refused value leaves the kernel as it was
            raise
        return self

    def _checked(self) -> KernelOptions:
        """Every parameter checked (the activation parsed once per (activation, center):
        set_params may change either)."""
        resolve(self.device)
        cached = self.__dict__.get("_parsed")  # (activation, center, φ): the very objects
        if cached is None or cached[0] is not self.activation or cached[1] is not self.center:
            opts = kernel_options(
                self.activation, sigma_a2=self.sigma_a2, sigma_b2=self.sigma_b2,
                kind=self.kind, center=self.center, trainable=self.trainable, name="activation",
            )  # fmt: skip
            self.__dict__["_parsed"] = (self.activation, self.center, opts.phi)
            return opts
        return kernel_options(
            cached[2], sigma_a2=self.sigma_a2, sigma_b2=self.sigma_b2, kind=self.kind,
            center=None, trainable=self.trainable, name="activation",
        )  # fmt: skip

    def __getstate__(self) -> dict[str, Any]:
        # the parsed φ holds compiled functions that do not pickle (joblib and Dask pickle
        # kernels): it is a cache, rebuilt from the parameters on first use
        state = dict(self.__dict__)
        state.pop("_parsed", None)
        return state

    def _options(self) -> dict[str, Any]:
        o = self._checked()
        return {
            "sigma_a2": self.sigma_a2,
            "sigma_b2": self.sigma_b2,
            "kind": o.kind,
            "trainable": o.trainable,
        }

    def _phi(self) -> Any:
        self._checked()
        return self.__dict__["_parsed"][2]

    def __call__(
        self, X: Any, Y: Any = None, eval_gradient: bool = False
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """k(X, Y) (Y None: k(X, X)); with ``eval_gradient`` also the empty gradient."""
        eval_gradient = boolean(eval_gradient, "eval_gradient")
        if eval_gradient and Y is not None:
            raise InvalidArgument(
                "eval_gradient=True: the gradient can only be evaluated when Y is None "
                "(scikit-learn's rule)."
            )
        data_pair(X, Y, ("X", "Y"))  # named as here (kernels would say X1, X2)
        opts = self._options()
        K = kernels(self._phi(), X, Y, device=self.device, **opts)
        if eval_gradient:
            return K, np.empty((K.shape[0], K.shape[1], 0))  # no hyperparameters
        return K

    def diag(self, X: Any) -> np.ndarray:
        """k(x_i, x_i) for every row of X (:func:`deqrmt.validate.kernel_diagonal`)."""
        return kernel_diagonal(self._phi(), X, **self._options())

    def is_stationary(self) -> bool:
        """False: k depends on the norms of x and x', not on x − x' alone."""
        return False

    def __repr__(self) -> str:
        return (
            f"DEQKernel(activation={self.activation!r}, kind={self.kind!r}, "
            f"sigma_a2={self.sigma_a2!r}, sigma_b2={self.sigma_b2!r})"
        )

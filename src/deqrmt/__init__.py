"""deqrmt: derived high-dimensional equivalents of DEQ conjugate and neural tangent kernels.

The public API (Ling et al., ICML 2024; Ling et al., HLD 2023)::

    import deqrmt
    c = deqrmt.deq_coefficients("tanh", sigma_a2=0.2)      # τ*, γ*, α*₁..₄, β*₁..₃, κ* (Thm 1–2)
    c["alpha_2"]                                             # a Verified number
    deqrmt.coefficient_expression("relu", "alpha_2")         # the SymPy formula for that φ

What the equivalents are for (torch only where a kernel is computed)::

    r = deqrmt.spectrum("tanh", data="gmm", mc=True)   # predicted CK/NTK spectra, checked on samples
    r.ck.law.density, r.ck.law.spikes                   # a SpectralLaw: bulk, atoms, spikes
    deqrmt.kernels("relu", X)                           # the exact CK/NTK on your own data
    deqrmt.equivalent_kernels("tanh", X, labels=y)      # Ḡ, K̄ with the mixture statistics estimated
    deqrmt.DEQKernel("relu", kind="ntk")                # a scikit-learn kernel

The functions below load on first use (PEP 562), so ``import deqrmt`` and the CLI start fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from . import _errors
from ._errors import ActivationError as ActivationError
from ._errors import BudgetExceeded as BudgetExceeded
from ._errors import CenteringError as CenteringError
from ._errors import ContractionError as ContractionError
from ._errors import DataWarning as DataWarning
from ._errors import DeqrmtError as DeqrmtError
from ._errors import DerivationError as DerivationError
from ._errors import FileError as FileError
from ._errors import InvalidArgument as InvalidArgument
from ._errors import MissingExtra as MissingExtra
from ._errors import NoConvergence as NoConvergence
from ._errors import NoReachableInterpolant as NoReachableInterpolant
from ._errors import ParseError as ParseError
from ._errors import PrecisionLoss as PrecisionLoss
from ._errors import SchedulerError as SchedulerError
from ._errors import SpecError as SpecError
from ._errors import StoreError as StoreError
from ._errors import UnknownActivation as UnknownActivation
from ._errors import UnknownTrainable as UnknownTrainable

if TYPE_CHECKING:
    from ._version import __version__ as __version__
    from .check import CheckReport as CheckReport
    from .check import check_activation as check_activation
    from .numeric import DEQCoefficients as DEQCoefficients
    from .numeric import DEQProblem as DEQProblem
    from .numeric import DEQSensitivities as DEQSensitivities
    from .numeric import ExplicitCoefficients as ExplicitCoefficients
    from .numeric import SpectralLaw as SpectralLaw
    from .numeric import Verified as Verified
    from .numeric import deq_coefficients as deq_coefficients
    from .numeric import deq_coefficients_sweep as deq_coefficients_sweep
    from .numeric import design_enn as design_enn
    from .numeric import explicit_coefficients as explicit_coefficients
    from .numeric import scan_fixed_points as scan_fixed_points
    from .numeric import sensitivities as sensitivities
    from .numeric import sphere_coefficients as sphere_coefficients
    from .sweep import kernels as kernels
    from .symbolic import coefficient_expression as coefficient_expression
    from .symbolic import derive_deq as derive_deq
    from .symbolic import derive_fixed_point as derive_fixed_point
    from .symbolic import derive_layer as derive_layer
    from .symbolic import parse_activation as parse_activation
    from .validate import DEQKernel as DEQKernel
    from .validate import Prediction as Prediction
    from .validate import RiskCurve as RiskCurve
    from .validate import SpectrumReport as SpectrumReport
    from .validate import equivalent_kernels as equivalent_kernels
    from .validate import predict as predict
    from .validate import risk as risk
    from .validate import spectrum as spectrum

_LAZY = {
    **dict.fromkeys(
        (
            "DEQCoefficients", "DEQProblem", "ExplicitCoefficients", "Verified", "deq_coefficients",
            "deq_coefficients_sweep", "design_enn", "explicit_coefficients", "scan_fixed_points",
            "sphere_coefficients",
        ),
        ".numeric",
    ),
    **dict.fromkeys(
        (
            "coefficient_expression", "derive_deq", "derive_fixed_point", "derive_layer",
            "parse_activation",
        ),
        ".symbolic",
    ),
    # a user's activation checked, above numeric and validate
    **dict.fromkeys(("CheckReport", "check_activation"), ".check"),
    # spectra and kernels on the user's data (torch only where a kernel is computed)
    **dict.fromkeys(
        ("DEQKernel", "SpectrumReport", "equivalent_kernels", "spectrum"), ".validate"
    ),
    # the exact kernels: in memory (validate), or on Dask into a Zarr store with out=…
    "kernels": ".sweep",
    "SpectralLaw": ".numeric",
    # what the infinitely wide DEQ predicts (gradient flow with K*, the GP posterior with G*)
    **dict.fromkeys(("Prediction", "predict"), ".validate"),
    # learning curves of ridge regression on DEQ random features (G*, Ḡ, sampled)
    **dict.fromkeys(("RiskCurve", "risk"), ".validate"),
    # ∂/∂σ_a², ∂/∂σ_b² of every DEQ coefficient (implicit differentiation, proven)
    **dict.fromkeys(("DEQSensitivities", "sensitivities"), ".numeric"),
}  # fmt: skip


#: The public API: the error classes, ``__version__`` and every lazily loaded name above (one
#: table, so a name added to ``_LAZY`` is public, documented and in ``dir(deqrmt)`` at once).
#: ``tests/test_public_api.py`` checks that it is complete and that every name resolves; the
#: API reference (docs/) is generated from it.
__all__ = [
    *_errors.__all__,
    "__version__",
    *sorted(_LAZY),
]


def __getattr__(name: str) -> Any:
    if name == "__version__":  # from the distribution's metadata, read on first use (_version.py)
        from ._version import __version__

        globals()[name] = __version__
        return __version__
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'deqrmt' has no attribute {name!r}")


def __dir__() -> list[str]:
    return list(__all__)

"""Monte Carlo DEQs and exact infinite-width kernels that check the equivalent kernels Ḡ, K̄.

The only part of deqrmt that imports torch.  The names below are loaded on first use, so that
``import deqrmt.cli.validate`` (done by ``deqrmt --help``) does not import torch; for static
type checkers they are ordinary re-exports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import _lazy

if TYPE_CHECKING:
    from ._anderson import FixedPoint as FixedPoint
    from ._anderson import anderson as anderson
    from ._anderson import picard as picard
    from ._bias import BiasCheck as BiasCheck
    from ._bias import check_bias as check_bias
    from ._bias import gradient_descent as gradient_descent
    from ._bivariate import bivariate as bivariate
    from ._coefficients import VARIANTS as VARIANTS
    from ._coefficients import Coefficients as Coefficients
    from ._compare import KernelErrors as KernelErrors
    from ._compare import loglog_slope as loglog_slope
    from ._compare import relative_spectral_error as relative_spectral_error
    from ._data import GaussianMixture as GaussianMixture
    from ._data import MixtureSample as MixtureSample
    from ._data import MixtureStatistics as MixtureStatistics
    from ._data import empirical_statistics as empirical_statistics
    from ._data import paper_mixture as paper_mixture
    from ._deq import DeqSolution as DeqSolution
    from ._deq import DeqWeights as DeqWeights
    from ._deq import solve_deq as solve_deq
    from ._equivalent_data import EquivalentKernels as EquivalentKernels
    from ._equivalent_data import equivalent_kernels as equivalent_kernels
    from ._exact import ExactKernels as ExactKernels
    from ._exact import KernelEngine as KernelEngine
    from ._exact import exact_kernels as exact_kernels
    from ._exact import ntk_limit as ntk_limit
    from ._kernels import kernel_diagonal as kernel_diagonal
    from ._kernels import kernels as kernels
    from ._mixture_spec import load_mixture as load_mixture
    from ._ntk import EmpiricalKernels as EmpiricalKernels
    from ._ntk import empirical_kernels as empirical_kernels
    from ._ntk import ntk_from_solution as ntk_from_solution
    from ._plots import write_plots as write_plots
    from ._pointwise import CenteredActivation as CenteredActivation
    from ._predict import Prediction as Prediction
    from ._predict import predict as predict
    from ._report import report_dict as report_dict
    from ._report import report_json as report_json
    from ._report import report_text as report_text
    from ._risk import RiskCurve as RiskCurve
    from ._risk import RiskPoint as RiskPoint
    from ._risk import risk as risk
    from ._sklearn import DEQKernel as DEQKernel
    from ._spectrum import KernelSpectrum as KernelSpectrum
    from ._spectrum import MonteCarloSpectrum as MonteCarloSpectrum
    from ._spectrum import SpectrumReport as SpectrumReport
    from ._spectrum import spectrum as spectrum
    from ._sweep import SweepPoint as SweepPoint
    from ._sweep import ValidationConfig as ValidationConfig
    from ._sweep import ValidationResult as ValidationResult
    from ._sweep import run_validation as run_validation
    from ._verdict import Verdict as Verdict
    from ._verdict import judge as judge
    from ._verdict import judge_errors as judge_errors

#: public name → defining private module
_EXPORTS = {
    "FixedPoint": "_anderson",
    "anderson": "_anderson",
    "picard": "_anderson",
    "BiasCheck": "_bias",
    "check_bias": "_bias",
    "gradient_descent": "_bias",
    "bivariate": "_bivariate",
    "VARIANTS": "_coefficients",
    "Coefficients": "_coefficients",
    "KernelErrors": "_compare",
    "Verdict": "_verdict",
    "judge": "_verdict",
    "judge_errors": "_verdict",
    "loglog_slope": "_compare",
    "relative_spectral_error": "_compare",
    "GaussianMixture": "_data",
    "MixtureSample": "_data",
    "MixtureStatistics": "_data",
    "empirical_statistics": "_data",
    "paper_mixture": "_data",
    "DeqSolution": "_deq",
    "DeqWeights": "_deq",
    "solve_deq": "_deq",
    "core_share": "_threads",
    "ExactKernels": "_exact",
    "exact_kernels": "_exact",
    "ntk_limit": "_exact",
    "EmpiricalKernels": "_ntk",
    "empirical_kernels": "_ntk",
    "ntk_from_solution": "_ntk",
    "write_plots": "_plots",
    "CenteredActivation": "_pointwise",
    "report_dict": "_report",
    "report_json": "_report",
    "report_text": "_report",
    "SweepPoint": "_sweep",
    "ValidationConfig": "_sweep",
    "ValidationResult": "_sweep",
    "run_validation": "_sweep",
    # spectra and kernels on the user's data
    "EquivalentKernels": "_equivalent_data",
    "equivalent_kernels": "_equivalent_data",
    "KernelEngine": "_exact",
    "kernel_diagonal": "_kernels",
    "kernels": "_kernels",
    "load_mixture": "_mixture_spec",
    "DEQKernel": "_sklearn",
    "KernelSpectrum": "_spectrum",
    "MonteCarloSpectrum": "_spectrum",
    "SpectrumReport": "_spectrum",
    "spectrum": "_spectrum",
    # what the infinitely wide DEQ predicts: gradient flow with K*, the GP posterior with G*
    "Prediction": "_predict",
    "predict": "_predict",
    # learning curves of ridge regression on DEQ random features
    "RiskCurve": "_risk",
    "RiskPoint": "_risk",
    "risk": "_risk",
}

__all__ = sorted(_EXPORTS)
_MODULES = {name: f".{module}" for name, module in _EXPORTS.items()}


def __getattr__(name: str) -> Any:
    return _lazy.load(__name__, _MODULES, globals(), name)


def __dir__() -> list[str]:
    return _lazy.names(globals(), _EXPORTS)

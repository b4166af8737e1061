"""Evaluation of what :mod:`deqrmt.symbolic` derives: mpmath at any precision, numpy float64.

Never imports torch.  The names below load on first use (PEP 562): importing one module of the
package (``deqrmt coefficients`` needs the DEQ's) does not import the others (the implicit bias,
design, spectra, codegen …); ``tests/test_cold_start.py`` keeps that so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import _lazy

if TYPE_CHECKING:
    from ._bias import BiasLimit as BiasLimit
    from ._bias import check_sizes as check_sizes
    from ._bias import minimum_norm_interpolant as minimum_norm_interpolant
    from ._bias import predicted_limit as predicted_limit
    from ._bias import relative_gap as relative_gap
    from ._codegen import generate_module as generate_module
    from ._context import ArrayContext as ArrayContext
    from ._context import Context as Context
    from ._context import ScalarContext as ScalarContext
    from ._contexts import NUMPY as NUMPY
    from ._contexts import activation_functions as activation_functions
    from ._contexts import activation_sources as activation_sources
    from ._curvature import CurvatureBound as CurvatureBound
    from ._curvature import curvature_bound as curvature_bound
    from ._deq import deq_coefficients as deq_coefficients
    from ._deq_records import DEQ_KEYS as DEQ_KEYS
    from ._deq_records import MOMENT_KEYS as MOMENT_KEYS
    from ._deq_records import DEQCoefficients as DEQCoefficients
    from ._design import MAX_STARTS as MAX_STARTS
    from ._design import Design as Design
    from ._design import design_enn as design_enn
    from ._display import html_text as html_text
    from ._display import law_lines as law_lines
    from ._display import lines_html as lines_html
    from ._display import short as short
    from ._enclose import enclose_moments as enclose_moments
    from ._enclosure_text import interval_text as interval_text
    from ._enclosure_text import proven_text as proven_text
    from ._equivalent import equivalent_kernel as equivalent_kernel
    from ._equivalent import equivalent_kernels as equivalent_kernels
    from ._explicit import LAYER_KEYS as LAYER_KEYS
    from ._explicit import ExplicitCoefficients as ExplicitCoefficients
    from ._explicit import explicit_coefficients as explicit_coefficients
    from ._fixed_point import FixedPoint as FixedPoint
    from ._fixed_point import FixedPointScan as FixedPointScan
    from ._fixed_point import scan_fixed_points as scan_fixed_points
    from ._fixed_point import solve_tau as solve_tau
    from ._float_context import FLOAT as FLOAT
    from ._growth import NotEnclosable as NotEnclosable
    from ._kolmogorov import Kolmogorov as Kolmogorov
    from ._kolmogorov import kolmogorov_distance as kolmogorov_distance
    from ._lipschitz import LipschitzBound as LipschitzBound
    from ._lipschitz import lipschitz_bound as lipschitz_bound
    from ._mapping import AttributeHints as AttributeHints
    from ._mehler import dual_series as dual_series
    from ._moments import MomentEvaluator as MomentEvaluator
    from ._moments import evaluator_for as evaluator_for
    from ._numbers import exact_number as exact_number
    from ._numbers import exact_text as exact_text
    from ._numbers import number_grid as number_grid
    from ._printer import compile_function as compile_function
    from ._printer import function_source as function_source
    from ._problem import DEQProblem as DEQProblem
    from ._problem import ProblemFields as ProblemFields
    from ._ranges import MAX_LAYERS as MAX_LAYERS
    from ._ranges import RANGES as RANGES
    from ._sensitivity import DEQSensitivities as DEQSensitivities
    from ._sensitivity import sensitivities as sensitivities
    from ._shifted import SteinComparison as SteinComparison
    from ._shifted import stein_comparison as stein_comparison
    from ._spectrum import GRID_POINTS as GRID_POINTS
    from ._spectrum import SpectralLaw as SpectralLaw
    from ._spectrum import mixture_spectrum as mixture_spectrum
    from ._spectrum import sphere_spectrum as sphere_spectrum
    from ._sphere import sphere_coefficients as sphere_coefficients
    from ._sphere_records import SPHERE_KEYS as SPHERE_KEYS
    from ._sphere_records import SphereCoefficients as SphereCoefficients
    from ._spikes import Alignment as Alignment
    from ._sweep import deq_coefficients_sweep as deq_coefficients_sweep
    from ._trainable import parse_trainable as parse_trainable
    from ._verified import Verified as Verified

#: exported name → the module of this package that defines it
_LAZY: dict[str, str] = {
    **dict.fromkeys(
        (
            "BiasLimit",
            "check_sizes",
            "minimum_norm_interpolant",
            "predicted_limit",
            "relative_gap",
        ),
        "._bias",
    ),
    "generate_module": "._codegen",
    **dict.fromkeys(("ArrayContext", "Context", "ScalarContext"), "._context"),
    **dict.fromkeys(("NUMPY", "activation_functions", "activation_sources"), "._contexts"),
    **dict.fromkeys(("CurvatureBound", "curvature_bound"), "._curvature"),
    "deq_coefficients": "._deq",
    **dict.fromkeys(("DEQ_KEYS", "MOMENT_KEYS", "DEQCoefficients"), "._deq_records"),
    **dict.fromkeys(("MAX_STARTS", "Design", "design_enn"), "._design"),
    "enclose_moments": "._enclose",
    **dict.fromkeys(("html_text", "law_lines", "lines_html", "short"), "._display"),
    "AttributeHints": "._mapping",
    **dict.fromkeys(("interval_text", "proven_text"), "._enclosure_text"),
    **dict.fromkeys(("equivalent_kernel", "equivalent_kernels"), "._equivalent"),
    **dict.fromkeys(("LAYER_KEYS", "ExplicitCoefficients", "explicit_coefficients"), "._explicit"),
    **dict.fromkeys(
        ("FixedPoint", "FixedPointScan", "scan_fixed_points", "solve_tau"), "._fixed_point"
    ),
    "FLOAT": "._float_context",
    "NotEnclosable": "._growth",
    **dict.fromkeys(("Kolmogorov", "kolmogorov_distance"), "._kolmogorov"),
    **dict.fromkeys(("LipschitzBound", "lipschitz_bound"), "._lipschitz"),
    "dual_series": "._mehler",
    **dict.fromkeys(("MomentEvaluator", "evaluator_for"), "._moments"),
    **dict.fromkeys(("compile_function", "function_source"), "._printer"),
    **dict.fromkeys(("exact_number", "exact_text", "number_grid"), "._numbers"),
    **dict.fromkeys(("DEQProblem", "ProblemFields"), "._problem"),
    "parse_trainable": "._trainable",
    **dict.fromkeys(("MAX_LAYERS", "RANGES"), "._ranges"),
    **dict.fromkeys(("DEQSensitivities", "sensitivities"), "._sensitivity"),
    **dict.fromkeys(("SteinComparison", "stein_comparison"), "._shifted"),
    **dict.fromkeys(
        ("GRID_POINTS", "SpectralLaw", "mixture_spectrum", "sphere_spectrum"), "._spectrum"
    ),
    "Alignment": "._spikes",
    "sphere_coefficients": "._sphere",
    **dict.fromkeys(("SPHERE_KEYS", "SphereCoefficients"), "._sphere_records"),
    "deq_coefficients_sweep": "._sweep",
    "Verified": "._verified",
}

#: The package's export table: what other packages (and users) import from it.
__all__ = [
    "AttributeHints",
    "html_text",
    "law_lines",
    "lines_html",
    "short",
    "activation_functions",
    "activation_sources",
    "Alignment",
    "ArrayContext",
    "Context",
    "BiasLimit",
    "check_sizes",
    "compile_function",
    "curvature_bound",
    "CurvatureBound",
    "deq_coefficients",
    "deq_coefficients_sweep",
    "DEQ_KEYS",
    "DEQCoefficients",
    "DEQProblem",
    "DEQSensitivities",
    "Design",
    "sensitivities",
    "design_enn",
    "dual_series",
    "enclose_moments",
    "equivalent_kernel",
    "equivalent_kernels",
    "evaluator_for",
    "exact_number",
    "exact_text",
    "parse_trainable",
    "explicit_coefficients",
    "ExplicitCoefficients",
    "FixedPoint",
    "FixedPointScan",
    "FLOAT",
    "function_source",
    "generate_module",
    "GRID_POINTS",
    "interval_text",
    "Kolmogorov",
    "kolmogorov_distance",
    "LAYER_KEYS",
    "lipschitz_bound",
    "LipschitzBound",
    "MAX_LAYERS",
    "MAX_STARTS",
    "minimum_norm_interpolant",
    "mixture_spectrum",
    "MOMENT_KEYS",
    "MomentEvaluator",
    "NotEnclosable",
    "number_grid",
    "NUMPY",
    "predicted_limit",
    "ProblemFields",
    "proven_text",
    "RANGES",
    "relative_gap",
    "ScalarContext",
    "scan_fixed_points",
    "solve_tau",
    "SpectralLaw",
    "sphere_coefficients",
    "SPHERE_KEYS",
    "sphere_spectrum",
    "SphereCoefficients",
    "stein_comparison",
    "SteinComparison",
    "Verified",
]


def __getattr__(name: str) -> Any:
    return _lazy.load(__name__, _LAZY, globals(), name)


def __dir__() -> list[str]:
    return _lazy.names(globals(), __all__)

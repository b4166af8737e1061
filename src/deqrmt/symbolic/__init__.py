"""SymPy layer: activations, Gaussian expectations with weak derivatives, derived formulas.

Never imports :mod:`deqrmt.numeric` or torch.  Activations and the parser load with the
package; the other names load on first use (PEP 562), so ``deqrmt coefficients`` does not
import the implicit bias, the sphere setting or the families (``tests/test_cold_start.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import _lazy
from ._activation import LIBRARY as LIBRARY
from ._activation import Activation as Activation
from ._activation import Piece as Piece
from ._activation import X as X
from ._activation import activation_names as activation_names
from ._activation import library_activation as library_activation
from ._objects import get_activation as get_activation
from ._objects import get_activations as get_activations
from ._parser import parse_activation as parse_activation
from ._parser import parse_expression as parse_expression

if TYPE_CHECKING:
    from ._bias import BETA0 as BETA0
    from ._bias import BiasDerivation as BiasDerivation
    from ._bias import bias_latex as bias_latex
    from ._bias import derive_bias as derive_bias
    from ._effort import bounded as bounded
    from ._expectation import MOMENTS as MOMENTS
    from ._expectation import TAU as TAU
    from ._expectation import XI as XI
    from ._expectation import Expectation as Expectation
    from ._expectation import MomentSet as MomentSet
    from ._expectation import gaussian_expectation as gaussian_expectation
    from ._expectation import moment_set as moment_set
    from ._family import FAMILY_MOMENTS as FAMILY_MOMENTS
    from ._family import Family as Family
    from ._family import get_family as get_family
    from ._latex import SYMBOLS as SYMBOLS
    from ._latex import tex_number as tex_number
    from ._latex import tex_text as tex_text
    from ._latex import value_status as value_status
    from ._recursion import SIGMA_A2 as SIGMA_A2
    from ._recursion import SIGMA_B2 as SIGMA_B2
    from ._recursion import TAU0 as TAU0
    from ._recursion import DEQFormulas as DEQFormulas
    from ._recursion import FixedPointMap as FixedPointMap
    from ._recursion import LayerFormulas as LayerFormulas
    from ._recursion import MomentSymbols as MomentSymbols
    from ._recursion import derive_deq as derive_deq
    from ._recursion import derive_fixed_point as derive_fixed_point
    from ._recursion import derive_layer as derive_layer
    from ._sensitivity import SENSITIVITY_PARAMETERS as SENSITIVITY_PARAMETERS
    from ._sensitivity import DEQSensitivity as DEQSensitivity
    from ._sensitivity import derive_sensitivity as derive_sensitivity
    from ._specialize import TAU_STAR as TAU_STAR
    from ._specialize import coefficient_expression as coefficient_expression
    from ._sphere import ALPHA as ALPHA
    from ._sphere import BETA as BETA
    from ._sphere import DIM as DIM
    from ._sphere import MU as MU
    from ._sphere import QUADRATIC_SYMBOLS as QUADRATIC_SYMBOLS
    from ._sphere import RHO as RHO
    from ._sphere import ExplicitSphereFormulas as ExplicitSphereFormulas
    from ._sphere import QuadraticFormulas as QuadraticFormulas
    from ._sphere import SphereFormulas as SphereFormulas
    from ._sphere import derive_explicit_sphere as derive_explicit_sphere
    from ._sphere import derive_quadratic as derive_quadratic
    from ._sphere import derive_sphere as derive_sphere
    from ._sphere import polynomial_dual as polynomial_dual

#: exported name → the module of this package that defines it (loaded on first use)
_LAZY: dict[str, str] = {
    **dict.fromkeys(("BETA0", "BiasDerivation", "bias_latex", "derive_bias"), "._bias"),
    "bounded": "._effort",
    **dict.fromkeys(
        ("MOMENTS", "TAU", "XI", "Expectation", "MomentSet", "gaussian_expectation", "moment_set"),
        "._expectation",
    ),
    **dict.fromkeys(("FAMILY_MOMENTS", "Family", "get_family"), "._family"),
    **dict.fromkeys(("SYMBOLS", "tex_number", "tex_text", "value_status"), "._latex"),
    **dict.fromkeys(
        (
            "SIGMA_A2",
            "SIGMA_B2",
            "TAU0",
            "DEQFormulas",
            "FixedPointMap",
            "LayerFormulas",
            "MomentSymbols",
            "derive_deq",
            "derive_fixed_point",
            "derive_layer",
        ),
        "._recursion",
    ),
    **dict.fromkeys(
        ("SENSITIVITY_PARAMETERS", "DEQSensitivity", "derive_sensitivity"), "._sensitivity"
    ),
    **dict.fromkeys(("TAU_STAR", "coefficient_expression"), "._specialize"),
    **dict.fromkeys(
        (
            "ALPHA",
            "BETA",
            "DIM",
            "MU",
            "QUADRATIC_SYMBOLS",
            "RHO",
            "ExplicitSphereFormulas",
            "QuadraticFormulas",
            "SphereFormulas",
            "derive_explicit_sphere",
            "derive_quadratic",
            "derive_sphere",
            "polynomial_dual",
        ),
        "._sphere",
    ),
}

#: The package's export table: what other packages (and users) import from it.
__all__ = [
    "Activation",
    "SENSITIVITY_PARAMETERS",
    "activation_names",
    "ALPHA",
    "BETA",
    "BETA0",
    "bias_latex",
    "BiasDerivation",
    "bounded",
    "coefficient_expression",
    "DEQFormulas",
    "derive_bias",
    "derive_deq",
    "derive_explicit_sphere",
    "derive_fixed_point",
    "derive_layer",
    "derive_quadratic",
    "derive_sensitivity",
    "DEQSensitivity",
    "derive_sphere",
    "DIM",
    "Expectation",
    "ExplicitSphereFormulas",
    "Family",
    "FAMILY_MOMENTS",
    "FixedPointMap",
    "gaussian_expectation",
    "get_activation",
    "get_activations",
    "get_family",
    "LayerFormulas",
    "LIBRARY",
    "library_activation",
    "moment_set",
    "MOMENTS",
    "MomentSet",
    "MomentSymbols",
    "MU",
    "parse_activation",
    "parse_expression",
    "Piece",
    "polynomial_dual",
    "QUADRATIC_SYMBOLS",
    "QuadraticFormulas",
    "RHO",
    "SIGMA_A2",
    "SIGMA_B2",
    "SphereFormulas",
    "SYMBOLS",
    "TAU",
    "TAU0",
    "TAU_STAR",
    "tex_number",
    "tex_text",
    "value_status",
    "X",
    "XI",
]


def __getattr__(name: str) -> Any:
    return _lazy.load(__name__, _LAZY, globals(), name)


def __dir__() -> list[str]:
    return _lazy.names(globals(), __all__)

"""SymPy layer: activations, Gaussian expectations with weak derivatives, derived formulas.

Never imports :mod:`deqrmt.numeric` or torch.
"""

from .._errors import InvalidArgument
from ._activation import LIBRARY as LIBRARY
from ._activation import Activation as Activation
from ._activation import Piece as Piece
from ._activation import X as X
from ._activation import activation_names as activation_names
from ._activation import library_activation as library_activation
from ._bias import BETA0 as BETA0
from ._bias import BiasDerivation as BiasDerivation
from ._bias import bias_latex as bias_latex
from ._bias import derive_bias as derive_bias
from ._expectation import TAU as TAU
from ._expectation import XI as XI
from ._expectation import Expectation as Expectation
from ._expectation import MomentSet as MomentSet
from ._expectation import gaussian_expectation as gaussian_expectation
from ._expectation import moment_set as moment_set
from ._parser import parse_activation as parse_activation
from ._parser import parse_expression as parse_expression
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
from ._specialize import TAU_STAR as TAU_STAR
from ._specialize import coefficient_expression as coefficient_expression
from ._sphere import ExplicitSphereFormulas as ExplicitSphereFormulas
from ._sphere import QuadraticFormulas as QuadraticFormulas
from ._sphere import SphereFormulas as SphereFormulas
from ._sphere import derive_explicit_sphere as derive_explicit_sphere
from ._sphere import derive_quadratic as derive_quadratic
from ._sphere import derive_sphere as derive_sphere


def get_activation(spec: "str | Activation", name: str = "activation") -> Activation:
    """An :class:`Activation` from a library name, ``name(params)`` or an expression in x.

    Anything else (a number, a list, a SymPy expression, a function) is an
    :class:`~deqrmt.InvalidArgument` naming ``name`` and what is accepted.
    """
    if isinstance(spec, Activation):
        return spec
    if not isinstance(spec, str):
        from .._arguments import show

        raise InvalidArgument(
            f"{name}={show(spec)}: expected a library name or an expression in x as a string "
            f"(e.g. 'tanh', 'leaky_relu(0.1)', 'max(x, 0.1*x)') or an Activation, got "
            f"{type(spec).__name__}."
        )
    return parse_activation(spec)

"""deqrmt: derived high-dimensional equivalents of DEQ conjugate and neural tangent kernels."""

from ._errors import ActivationError as ActivationError
from ._errors import CenteringError as CenteringError
from ._errors import ContractionError as ContractionError
from ._errors import DeqrmtError as DeqrmtError
from ._errors import DerivationError as DerivationError
from ._errors import InvalidArgument as InvalidArgument
from ._errors import NoConvergence as NoConvergence
from ._errors import ParseError as ParseError
from ._errors import PrecisionLoss as PrecisionLoss
from ._errors import UnknownActivation as UnknownActivation

__version__ = "0.1.0"

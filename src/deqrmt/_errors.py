"""Exception hierarchy: one root, user errors subclass the matching built-in."""

from __future__ import annotations

__all__ = [
    "ActivationError",
    "CenteringError",
    "ContractionError",
    "DeqrmtError",
    "DerivationError",
    "InvalidArgument",
    "NoConvergence",
    "ParseError",
    "PrecisionLoss",
    "UnknownActivation",
]


class DeqrmtError(Exception):
    """Root of every error deqrmt raises on purpose."""


class InvalidArgument(DeqrmtError, ValueError):
    """A user-supplied argument is malformed or out of range."""


class ParseError(InvalidArgument):
    """An activation string is not in the accepted grammar."""


class UnknownActivation(InvalidArgument, KeyError):
    """A name is neither a library activation nor an allowed function."""

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return str(self.args[0]) if self.args else ""


class ActivationError(InvalidArgument):
    """The activation violates an assumption of the theorems (e.g. not Lipschitz)."""


class CenteringError(InvalidArgument):
    """`--no-center` was asked for but E[φ(τ*ξ)] ≠ 0, which the theorems require."""


class ContractionError(InvalidArgument):
    """σ_a² lies outside the region where the fixed point exists, is unique and attracting."""


class NoConvergence(DeqrmtError):
    """An iteration (fixed point, quadrature) did not converge."""


class PrecisionLoss(DeqrmtError):
    """Two evaluations at different precisions disagree on too many digits."""


class DerivationError(DeqrmtError):
    """The symbolic derivation met a term outside the ansatz."""

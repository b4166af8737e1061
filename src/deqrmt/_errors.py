"""Exception hierarchy: one root, user errors subclass the matching built-in."""

from __future__ import annotations

__all__ = [
    "ActivationError",
    "BudgetExceeded",
    "CenteringError",
    "ContractionError",
    "DataWarning",
    "DeqrmtError",
    "DerivationError",
    "FileError",
    "InvalidArgument",
    "MissingExtra",
    "NoConvergence",
    "NoReachableInterpolant",
    "ParseError",
    "PrecisionLoss",
    "SchedulerError",
    "SpecError",
    "StoreError",
    "UnknownActivation",
    "UnknownTrainable",
]


class DeqrmtError(Exception):
    """Root of every error deqrmt raises on purpose."""


class DataWarning(UserWarning):
    """The user's data, not the tool, is the likely cause of a slow or uninformative result (rows
    whose scale saturates φ, ...): information with the fix, never a refusal."""


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


class BudgetExceeded(InvalidArgument):
    """An input is beyond a stated work limit (size, nesting, kinks, digits); the message names
    the limit and how to stay within it (docs/limits.md)."""


class UnknownTrainable(InvalidArgument):
    """A trainable set that is empty or names a parameter outside (a, A, B)."""


class SpecError(InvalidArgument):
    """A sweep specification (SPEC.toml) is malformed; the message names the table, key and value."""


class StoreError(InvalidArgument):
    """A sweep's results store cannot be used: not a regular file (a link, a FIFO, a device), not
    a deqrmt store (another schema, a view, a trigger), or a row that does not validate (a store
    changed outside deqrmt); the message names the store, the table or row, and the fix."""


class SchedulerError(InvalidArgument):
    """A Dask scheduler address is malformed or unsupported (``tcp://HOST:PORT`` is), the
    scheduler cannot be reached, or the embedded cluster did not start."""


class FileError(DeqrmtError, OSError):
    """A named file cannot be read or written, or writing it is refused (it exists and ``force``
    is off, it is a symbolic link, a directory or a device); nothing was changed."""


class MissingExtra(DeqrmtError, ImportError):
    """A command needs an optional dependency group that is not installed; the message gives the
    ``pip install`` line."""


class NoReachableInterpolant(InvalidArgument):
    """No point of {β : Xβ = y} lies in the domain that gradient flow through β = g(θ) cannot
    leave (e.g. β > 0 for the diagonal DEQ β = 1/(1-w) from w(0) < 1): the flow cannot
    interpolate and there is no implicit-bias limit to predict."""

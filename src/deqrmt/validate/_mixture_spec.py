r"""A Gaussian mixture described in TOML (``deqrmt spectrum --data gmm --mixture FILE``).

The file is untrusted input: its size, the dimension, the number of classes and every list are
bounded, every number is checked finite and in range, unknown keys are refused, and every error
is one :class:`deqrmt.SpecError` line naming the file, the class and the key.  The format
(ICML 2024 scaling, √p·x ~ N(μ_a, C_a), diagonal C_a)::

    p = 400                      # the dimension
    [[class]]
    weight = 0.5                 # class proportion (all weights sum to 1)
    mean = [8.0]                 # μ_a's entries from index mean_offset on; the rest are 0
    variance = 1.0               # C_a = variance · I, or a list of p diagonal entries
    [[class]]
    weight = 0.5
    mean = [8.0]
    mean_offset = 8              # μ_2 = 8 e_9, as in the paper's preset
    variance = 1.4
"""

from __future__ import annotations

import math
import os
import tomllib
from typing import Any

import numpy as np

from .._errors import SpecError
from .._io import read_limited
from .._text import escape_controls
from ._data import GaussianMixture

__all__ = ["MAX_BYTES", "MAX_CLASSES", "MAX_DIMENSION", "load_mixture", "parse_mixture"]

#: a description is a few kB (p numbers per class at most): 4 MiB bounds p·K·~20 bytes
MAX_BYTES = 4 << 20
MAX_DIMENSION = 20_000
MAX_CLASSES = 32
#: |entries| of means and variances (the theorems' ‖μ‖ = O(1), ‖C‖ = O(1))
MAX_ABS = 1e6
_TOP = {"p", "class"}


def printable(text: str) -> str:
    """User text as it may appear in a message: every control character escaped."""
    return escape_controls(str(text), keep="")


_CLASS = {"weight", "mean", "mean_offset", "variance"}


def _where(path: str, a: int | None, key: str) -> str:
    place = printable(os.path.basename(path))
    return f"{place}: " + (f"class {a + 1}, " if a is not None else "") + f"`{key}`"


def _number(value: Any, where: str, *, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SpecError(f"{where} = {printable(repr(value))[:60]}: expected a number.")
    v = float(value)
    if not (math.isfinite(v) and low <= v <= high):
        raise SpecError(f"{where} = {v!r}: expected a finite number in [{low:g}, {high:g}].")
    return v


def _numbers(value: Any, where: str, *, length: int, low: float, high: float) -> np.ndarray:
    if not isinstance(value, list):
        raise SpecError(f"{where}: expected a list of numbers.")
    if not 1 <= len(value) <= length:
        raise SpecError(f"{where}: expected 1 to {length} numbers, got {len(value)}.")
    return np.array([_number(v, f"{where}[{i}]", low=low, high=high) for i, v in enumerate(value)])


def parse_mixture(doc: dict[str, Any], path: str = "mixture.toml") -> GaussianMixture:
    """A :class:`GaussianMixture` from the parsed TOML ``doc`` (see the module docstring).

    Args:
      doc: the parsed TOML (``tomllib.loads``): ``p`` and a list ``class`` of tables.
      path: the file's name, for messages.

    Returns:
      The mixture (means K × p, diagonal covariances K × p, weights normalized to sum 1).

    Raises:
      SpecError: an unknown key, a missing or out-of-range value, weights that do not sum to
        1, no noise at all; the message names the file, the class and the key.

    Example:
      >>> mix = parse_mixture({"p": 20, "class": [
      ...     {"weight": 0.5, "mean": [4.0], "variance": 1.0},
      ...     {"weight": 0.5, "mean": [4.0], "mean_offset": 1, "variance": 1.5}]})
      >>> mix.p, mix.means[:, :2].tolist()
      (20, [[4.0, 0.0], [0.0, 4.0]])
    """
    extra = set(doc) - _TOP
    if extra:
        raise SpecError(
            f"{printable(os.path.basename(path))}: unknown key(s) "
            f"{', '.join(sorted(printable(k) for k in extra))}; allowed: p, [[class]]."
        )
    if "p" not in doc:
        raise SpecError(f"{_where(path, None, 'p')} is missing: give the dimension p.")
    p_raw = doc["p"]
    if isinstance(p_raw, bool) or not isinstance(p_raw, int) or not 2 <= p_raw <= MAX_DIMENSION:
        raise SpecError(
            f"{_where(path, None, 'p')} = {printable(repr(p_raw))[:40]}: expected an integer in "
            f"[2, {MAX_DIMENSION}] (docs/limits.md)."
        )
    p = int(p_raw)
    classes = doc.get("class")
    if (
        not isinstance(classes, list)
        or not classes
        or not all(isinstance(c, dict) for c in classes)
    ):
        raise SpecError(f"{_where(path, None, 'class')}: expected one or more [[class]] tables.")
    if len(classes) > MAX_CLASSES:
        raise SpecError(
            f"{_where(path, None, 'class')}: {len(classes)} classes; at most {MAX_CLASSES}."
        )
    means = np.zeros((len(classes), p))
    variances = np.zeros((len(classes), p))
    weights = np.zeros(len(classes))
    for a, c in enumerate(classes):
        extra = set(c) - _CLASS
        if extra:
            raise SpecError(
                f"{_where(path, a, sorted(printable(k) for k in extra)[0])}: unknown key; "
                f"allowed: {', '.join(sorted(_CLASS))}."
            )
        for key in ("weight", "variance"):
            if key not in c:
                raise SpecError(f"{_where(path, a, key)} is missing.")
        weights[a] = _number(c["weight"], _where(path, a, "weight"), low=0.0, high=1.0)
        if weights[a] <= 0:
            raise SpecError(f"{_where(path, a, 'weight')} must be > 0.")
        v = c["variance"]
        if isinstance(v, list):
            if len(v) != p:
                raise SpecError(
                    f"{_where(path, a, 'variance')}: a list must have p = {p} entries, got "
                    f"{len(v)} (or give one number for variance · I)."
                )
            variances[a] = _numbers(v, _where(path, a, "variance"), length=p, low=0, high=MAX_ABS)
        else:
            variances[a] = _number(v, _where(path, a, "variance"), low=0.0, high=MAX_ABS)
        off = c.get("mean_offset", 0)
        if isinstance(off, bool) or not isinstance(off, int) or not 0 <= off < p:
            raise SpecError(
                f"{_where(path, a, 'mean_offset')} = {printable(repr(off))[:40]}: expected an "
                f"integer in [0, {p - 1}]."
            )
        if "mean" in c:
            mu = _numbers(
                c["mean"], _where(path, a, "mean"), length=p - off, low=-MAX_ABS, high=MAX_ABS
            )
            means[a, off : off + mu.size] = mu
    if abs(float(weights.sum()) - 1.0) > 1e-9:
        raise SpecError(
            f"{printable(os.path.basename(path))}: the class weights sum to "
            f"{float(weights.sum())!r}, not 1."
        )
    if not variances.any():
        raise SpecError(
            f"{printable(os.path.basename(path))}: every variance is 0; the data would have no "
            "noise (give some class a positive variance)."
        )
    return GaussianMixture(means, variances, weights / weights.sum(), name="file")


def load_mixture(path: str) -> GaussianMixture:
    """Read and check a mixture file (a regular file of at most :data:`MAX_BYTES`).

    Args:
      path: the TOML file (format: the module docstring; ``deqrmt spectrum --mixture``).

    Returns:
      The :class:`GaussianMixture` it describes (for :func:`deqrmt.spectrum`'s ``mixture``).

    Raises:
      FileError: the file cannot be read, or is not a regular file (a FIFO, a directory).
      SpecError: larger than 4 MiB, not UTF-8, not TOML, or a description
        :func:`parse_mixture` refuses.

    Example:
      >>> import os, tempfile
      >>> with tempfile.TemporaryDirectory() as tmp:
      ...     path = os.path.join(tmp, "mix.toml")
      ...     with open(path, "w", encoding="utf-8") as fh:
      ...         _ = fh.write('p = 40\\n[[class]]\\nweight = 1.0\\nvariance = 1.0\\n')
      ...     load_mixture(path).p
      40
    """
    blob = read_limited(path, f"the mixture {printable(path)!r}", MAX_BYTES)
    if len(blob) > MAX_BYTES:
        raise SpecError(
            f"{printable(os.path.basename(path))} is larger than {MAX_BYTES} bytes: not a mixture "
            "description (docs/limits.md)."
        )
    try:
        doc = tomllib.loads(blob.decode("utf-8"))
    except UnicodeDecodeError:
        raise SpecError(f"{printable(os.path.basename(path))} is not UTF-8 text.") from None
    except tomllib.TOMLDecodeError as e:
        raise SpecError(f"{printable(os.path.basename(path))}: not valid TOML ({e}).") from None
    return parse_mixture(doc, path)

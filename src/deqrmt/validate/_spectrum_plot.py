"""``spectrum.png``: the report's figure (:meth:`SpectrumReport.figure`, the HLD 2023 Figure 1
layout drawn in :mod:`._spectrum_records`) written to a file."""

from __future__ import annotations

import os
from pathlib import Path

from ._spectrum_records import SpectrumReport

__all__ = ["plot_spectrum"]


def plot_spectrum(report: SpectrumReport, path: str | os.PathLike[str]) -> Path:
    """Write the figure to ``path`` (a new file: the caller moves it into place atomically).

    Returns:
      ``path`` as a :class:`~pathlib.Path` (a PNG at 110 dpi).
    """
    out = Path(path)
    report.figure().savefig(out, dpi=110)
    return out

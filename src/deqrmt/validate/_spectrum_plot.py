r"""``spectrum.png``: the HLD 2023 Figure 1 layout for a :class:`SpectrumReport`.

Rows: CK (top), NTK (bottom).  Columns: (a) the implicit kernel (DEQ), (b) the explicit one
(Corollary 1's quadratic network for the sphere) when it was sampled, (c) the activations.
Every spectrum panel shows the histogram of the sampled eigenvalues (bulk range; a finite-width
DEQ as a step outline), the predicted density, the atoms (stems, with their mass) and the spikes
(listed, predicted and sampled: they lie far to the right of the bulk).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ._spectrum_records import KernelSpectrum, SpectrumReport

__all__ = ["plot_spectrum", "spectrum_figure"]

_TITLES = {"exact": "implicit (DEQ, exact)", "explicit": "explicit (quadratic ENN, exact)"}
_DESIGNED = "explicit (designed ENN, exact)"


def _panel(ax: Any, ks: KernelSpectrum, label: str, title: str) -> None:
    law = ks.law
    lo, hi = law.bulk_edges
    if not np.isfinite([lo, hi]).all():
        lo, hi = (min(law.spikes), max(law.spikes)) if law.spikes else (0.0, 1.0)
    pad = 0.06 * (hi - lo) + 1e-12
    lo, hi = lo - pad, hi + pad
    sample = ks.sample(label)
    text = []
    if sample is not None:
        ev = sample.eigenvalues
        bulk = ev[(ev >= lo) & (ev <= hi)]
        ax.hist(bulk, bins=60, range=(lo, hi), density=True, color="C0", alpha=0.45,
                label=f"sampled (n = {ev.size})")  # fmt: skip
        width = ks.sample("width")
        if label == "exact" and width is not None:
            wv = width.eigenvalues
            ax.hist(wv[(wv >= lo) & (wv <= hi)], bins=60, range=(lo, hi), density=True,
                    histtype="step", color="C2", lw=1, label="finite-width DEQ")  # fmt: skip
        text.append(f"Kolmogorov {sample.check.distance:.3f}")
    if law.x.size:
        ax.plot(law.x, law.density, color="C3", lw=1.6, label="predicted density")
    top = ax.get_ylim()[1]
    for loc, mass in law.atoms:
        ax.vlines(loc, 0, 0.9 * top, color="C3", lw=2.5)
        ax.annotate(f"atom {mass:.3g}", (loc, 0.9 * top), fontsize=7, color="C3",
                    xytext=(4, 0), textcoords="offset points")  # fmt: skip
    for k, s in enumerate(law.spikes[:4]):
        got = f", sampled {sample.check.spikes[k]:.4g}" if sample is not None else ""
        text.append(f"spike {s:.4g}{got}")
    if len(law.spikes) > 4:
        text.append(f"… {len(law.spikes) - 4} more spikes")
    ax.text(0.98, 0.97, "\n".join(text), transform=ax.transAxes, ha="right", va="top",
            fontsize=7, bbox={"facecolor": "white", "alpha": 0.8, "lw": 0})  # fmt: skip
    ax.set_xlim(lo, hi)
    ax.set_title(title if sample is not None else f"{ks.kind.upper()}: predicted", fontsize=9)
    ax.set_xlabel("eigenvalue", fontsize=8)
    ax.set_ylabel("density of eigenvalues", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=7, loc="center right")


def _activations(ax: Any, report: SpectrumReport, quadratics: list[tuple[str, Any]]) -> None:
    t = np.linspace(-3, 3, 121)
    act = report.phi
    kinks = [float(k) for k in act.kinks]
    pieces = act.pieces
    # SymPy, point by point: a plot needs no torch (the prediction runs without it)
    vals = [
        float(pieces[int(np.searchsorted(kinks, v))].expr.evalf(subs={act.x: float(v)})) for v in t
    ]
    ax.plot(t, vals, color="C0", label=f"φ = {report.activation}")
    for k, (name, q) in enumerate(quadratics):
        ax.plot(t, q[0] * t**2 + q[1] * t + q[2], color=f"C{k + 1}", ls="--",
                label=f"σ ({name}) = {q[0]:.3g}t² + {q[1]:.3g}t + {q[2]:.3g}")  # fmt: skip
    ax.set_title("activations", fontsize=9)
    ax.set_xlabel("t", fontsize=8)
    ax.set_ylabel("φ(t), σ(t)", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=6)


def spectrum_figure(report: SpectrumReport) -> Any:
    """The figure as a matplotlib ``Figure`` (the pyplot state is left alone).

    Args:
      report: what :func:`deqrmt.spectrum` returned (with ``mc=True`` the sampled histograms
        are drawn under the predicted density; without, the prediction alone).

    Returns:
      A ``matplotlib.figure.Figure``: rows CK and NTK; columns the implicit kernel, the
      explicit one when it was sampled, and the activations (sphere).
    """
    from matplotlib.figure import Figure

    explicit = any(ks.sample("explicit") is not None for ks in report.kernels())
    quads = list(report.quadratics.items())
    cols = 1 + explicit + bool(quads)
    rows = report.kernels()
    s_kind = report.setting["kind"]
    fig = Figure(figsize=(max(6.0, 4.2 * cols), 3.1 * len(rows) + 0.3))
    axes = fig.subplots(len(rows), cols, squeeze=False)
    for r, ks in enumerate(rows):
        name = ks.kind.upper()
        _panel(axes[r][0], ks, "exact", f"{name}: {_TITLES['exact']}")
        if explicit:
            title = _TITLES["explicit"] if s_kind == "sphere" else _DESIGNED
            if ks.sample("explicit") is not None:
                _panel(axes[r][1], ks, "explicit", f"{name}: {title}")
            else:
                axes[r][1].axis("off")
        if quads:
            mine = [(k, q) for k, q in quads if k == name]
            if mine:
                _activations(axes[r][-1], report, mine)
            else:
                axes[r][-1].axis("off")
    s = report.setting
    where = (
        f"sphere, n = {s['n']}, d = {s['d']}"
        if s["kind"] == "sphere"
        else f"Gaussian mixture ({s['preset']}), n = {s['n']}, p = {s['p']}"
    )
    fig.suptitle(
        f"{report.activation}: σ_a² = {report.sigma_a2}, σ_b² = {report.sigma_b2}\n{where}",
        fontsize=10,
    )
    fig.tight_layout()
    return fig


def plot_spectrum(report: SpectrumReport, path: str | os.PathLike[str]) -> Path:
    """Write the figure to ``path`` (a new file: the caller moves it into place atomically).

    Returns:
      ``path`` as a :class:`~pathlib.Path` (a PNG at 110 dpi).
    """
    out = Path(path)
    spectrum_figure(report).savefig(out, dpi=110)
    return out

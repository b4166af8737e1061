"""PNG figures of a :class:`ValidationResult` (matplotlib, Agg backend, files only).

* ``errors.png``: relative spectral errors vs n, log–log, CK and NTK side by side, with a
  n^{−1/2} guide through the first exact-vs-equivalent point (the slides' figure).
* ``spectrum_n{n}.png``: eigenvalue histograms of G* vs Ḡ and K* vs K̄ at the largest n.  The
  few spikes (class means, ψ) lie far right of the bulk; the histogram shows the bulk and the
  spikes are listed in the legend.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ._sweep import ValidationResult

__all__ = ["write_plots"]


def _atomic_save(fig: object, path: Path) -> None:
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=120)  # type: ignore[attr-defined]
    os.replace(tmp, path)


def write_plots(result: ValidationResult, directory: str | os.PathLike[str]) -> list[Path]:
    """Write the PNGs into ``directory`` (created if needed); return their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    act = result.config.activation
    ns = np.array([r.n for r in result.runs], float)
    paths = []

    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), sharey=True)
    for ax, kind, label in ((axes[0], "ck", "CK: G"), (axes[1], "ntk", "NTK: K")):
        errs = [getattr(r, kind) for r in result.runs]
        ex = np.array([e.exact_vs_equiv for e in errs])
        ax.loglog(ns, ex, "o-", label="exact vs equivalent", color="C0")
        if errs[0].mc_vs_exact is not None:
            ax.loglog(
                ns, [e.mc_vs_exact for e in errs], "s--", label="Monte Carlo vs exact", color="C1"
            )
            ax.loglog(
                ns,
                [e.mc_vs_equiv for e in errs],
                "^:",
                label="Monte Carlo vs equivalent",
                color="C2",
            )
        ax.loglog(ns, ex[0] * (ns / ns[0]) ** -0.5, color="0.5", lw=1, label="n^(−1/2) guide")
        slope = result.slope_ck if kind == "ck" else result.slope_ntk
        title = f"{label}   slope {slope:.2f}" if slope is not None else label
        ax.set_title(title)
        ax.set_xlabel("n")
        ax.set_xticks(ns)
        ax.set_xticklabels([str(int(n)) for n in ns])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("‖A − B‖ / ‖A‖")
    axes[1].legend(fontsize=8)
    c = result.config
    fig.suptitle(
        f"{act}: σ_a² = {c.sigma_a2}, p/n = {c.ratio:g}, m = {c.m}, {c.draws} draws"
        + (f"  [variant {c.variant}]" if c.variant else "")
        + ("  PASSED" if result.passed else f"  REJECTED ({', '.join(result.verdict.failed)})")
    )
    fig.tight_layout()
    path = out / "errors.png"
    _atomic_save(fig, path)
    plt.close(fig)
    paths.append(path)

    last = result.runs[-1]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    for ax, key, label in ((axes[0], "G", "CK"), (axes[1], "K", "NTK")):
        ex, eq = last.spectra[f"{key}_exact"], last.spectra[f"{key}_equiv"]
        # The bulk ends near the 98th percentile; the few spikes (≈ 10 here, from the class
        # means) would squash it, so they are cut off the axis and listed instead.
        cut = 1.5 * float(np.percentile(ex, 98))
        lo = min(ex.min(), eq.min())
        bins = np.linspace(lo, cut, 60)
        ax.hist(
            ex[ex <= cut], bins=bins, alpha=0.55, label=f"{key}* (exact)", color="C0", density=True
        )
        ax.hist(
            eq[eq <= cut],
            bins=bins,
            histtype="step",
            lw=1.5,
            label=f"{key}̄ (equivalent)",
            color="C3",
            density=True,
        )
        mc = last.spectra.get(f"{key}_mc")
        if mc is not None:
            ax.hist(
                mc[mc <= cut],
                bins=bins,
                histtype="step",
                lw=1,
                ls="--",
                label="Monte Carlo",
                color="C2",
                density=True,
            )
        sx = ", ".join(f"{v:.3g}" for v in ex[ex > cut][::-1][:4])
        sq = ", ".join(f"{v:.3g}" for v in eq[eq > cut][::-1][:4])
        ax.plot([], [], " ", label=f"spikes {key}*: {sx or '—'}")
        ax.plot([], [], " ", label=f"spikes {key}̄: {sq or '—'}")
        ax.set_title(f"{label} eigenvalues, n = {last.n}, p = {last.p}")
        ax.set_xlabel("eigenvalue")
        ax.set_ylabel("density of eigenvalues")
        ax.legend(fontsize=7)
    fig.tight_layout()
    path = out / f"spectrum_n{last.n}.png"
    _atomic_save(fig, path)
    plt.close(fig)
    paths.append(path)
    return paths

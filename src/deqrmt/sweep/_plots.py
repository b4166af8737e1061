r"""PNG figures of a sweep's store (matplotlib's Agg canvas; no pyplot state, files only).

* ``coefficients.png``: τ*, γ*, α*₁..₄, β*₁..₃, κ* against σ_a², one line per activation (and
  per σ_b², τ0 when the spec varies them), from the ``coefficients`` tasks (else ``certify``).
* ``error_vs_n.png``: the relative spectral error ‖G* − Ḡ‖/‖G*‖ (CK, solid) and ‖K* − K̄‖/‖K*‖
  (NTK, dashed) against n, log–log, mean over seeds, one panel per activation and one colour
  per σ_a², with an n^{−1/2} guide (the rate of Theorems 1–2), from ``exact``/``validate``.
* ``error_heatmap.png``: the CK error over (σ_a², n), one panel per activation.

A figure whose tasks are absent from the store is not written.  The figures are drawn into a
private temporary directory and moved into place like every other output of deqrmt
(:func:`deqrmt._io.write_directory`): atomically, never over an existing file without
``force``, never onto a symbolic link, a FIFO or a device.
"""

from __future__ import annotations

import math
import os
import re
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

from .._errors import StoreError
from .._io import check_directory, check_output, write_directory
from ._limits import show
from ._store import Record, ResultStore

__all__ = ["COEFFICIENT_KEYS", "ERROR_METRIC", "PLOT_NAMES", "check_plot_directory", "write_plots"]

#: The files :func:`write_plots` may write (each only when the store has its tasks).
PLOT_NAMES = ("coefficients.png", "error_vs_n.png", "error_heatmap.png")

COEFFICIENT_KEYS = (
    "tau_star", "gamma_star", "alpha_1", "alpha_2", "alpha_3", "alpha_4",
    "beta_1", "beta_2", "beta_3", "kappa_star",
)  # fmt: skip
_SYMBOLS = {
    "tau_star": "τ*", "gamma_star": "γ*", "alpha_1": "α*₁", "alpha_2": "α*₂", "alpha_3": "α*₃",
    "alpha_4": "α*₄", "beta_1": "β*₁", "beta_2": "β*₂", "beta_3": "β*₃", "kappa_star": "κ*",
}  # fmt: skip
#: the error the error-vs-n plot and the heat map show (exact vs equivalent CK)
ERROR_METRIC = "ck_exact_vs_equiv"


def _records(
    source: ResultStore | str | os.PathLike[str] | Iterable[Record], keys: Iterable[str] | None
) -> list[Record]:
    if isinstance(source, ResultStore):
        recs = source.records(keys)
    elif isinstance(source, (str, os.PathLike)):
        with ResultStore(source) as st:
            recs = st.records(keys)
    else:
        wanted = None if keys is None else set(keys)
        recs = [r for r in source if wanted is None or r.key in wanted]
    for r in recs:
        _check_plottable(r)
    return recs


_DECIMAL = re.compile(r"[0-9]{1,60}(\.[0-9]{1,60})?(/[0-9]{1,60})?")


def _check_plottable(r: Record) -> None:
    """The fields a figure reads, as a sweep writes them; a store row changed outside deqrmt
    is a :class:`StoreError` here rather than an exception inside matplotlib.  (Failures are
    not drawn.)"""
    if not r.ok:
        return
    i, why = r.inputs, None
    sa2 = i.get("sigma_a2")
    if not isinstance(i.get("activation"), str):
        why = "no activation"
    elif not isinstance(sa2, str) or not _DECIMAL.fullmatch(sa2) or Fraction(sa2) == 0:
        why = f"sigma_a2 = {show(sa2)}"
    elif r.kind in ("exact", "validate") and (
        not isinstance(i.get("n"), int) or isinstance(i.get("n"), bool) or i["n"] < 1
    ):
        why = f"n = {show(i.get('n'))}"
    else:
        floats = (r.outputs or {}).get("floats", {})
        if not isinstance(floats, dict) or not all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in floats.values()
        ):
            why = "outputs.floats that are not numbers"
    if why is not None:
        raise StoreError(
            f"the stored task {show(r.key)} has {why}, which a sweep never writes (a store "
            "changed outside deqrmt); delete that row, or plot another store."
        )


def _save(fig: Any, path: Path) -> Path:
    """Draw ``fig`` to ``path``: a file in a private directory (see :func:`write_plots`)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    fig.savefig(path, dpi=110)
    return path


def _num(text: str) -> float:
    """A stored exact number ("0.05", "1/3") as a float for an axis."""
    return float(Fraction(text))


def _grid(n: int, ncols: int) -> tuple[int, int]:
    ncols = max(1, min(ncols, n))
    return math.ceil(n / ncols), ncols


def _varying(recs: Sequence[Record], name: str) -> bool:
    return len({str(r.inputs.get(name)) for r in recs}) > 1


def _coefficients_png(recs: Sequence[Record], out: Path) -> Path | None:
    # certify tasks carry the same numbers (certified): the fallback when no coefficients ran
    recs = [r for r in recs if r.kind == "coefficients" and r.ok] or [
        r for r in recs if r.kind == "certify" and r.ok
    ]
    if not recs:
        return None
    extra = [k for k in ("sigma_b2", "tau0", "trainable", "dps") if _varying(recs, k)]
    lines: dict[str, list[tuple[float, dict[str, float]]]] = defaultdict(list)
    for r in recs:
        label = str(r.inputs["activation"]) + "".join(f", {k}={r.inputs[k]}" for k in extra)
        lines[label].append((_num(r.inputs["sigma_a2"]), (r.outputs or {}).get("floats", {})))
    return coefficients_png(lines, out / "coefficients.png")


def coefficients_png(
    lines: dict[str, list[tuple[float, dict[str, float]]]],
    path: str | os.PathLike[str],
    title: str | None = None,
) -> Path:
    """One panel per coefficient against σ_a², one line per label: ``lines[label]`` holds
    (σ_a², {key: float}) points (a missing key, e.g. β* where the NTK diverges, is a gap).

    Writes ``path`` directly: give a path in a private directory and move the file with
    :func:`deqrmt._io.write_directory` (as ``deqrmt coefficients --plot`` does)."""
    from matplotlib.figure import Figure

    nrows, ncols = _grid(len(COEFFICIENT_KEYS), 5)
    fig = Figure(figsize=(3.2 * ncols, 2.8 * nrows + 0.6), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    for ax, key in zip(axes, COEFFICIENT_KEYS, strict=False):
        for label, points in lines.items():
            pts = sorted((x, v.get(key, math.nan)) for x, v in points)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", ms=3, label=label)
        ax.set_title(_SYMBOLS[key])
        ax.set_xlabel("σ_a²")
        ax.set_ylabel(_SYMBOLS[key])
        ax.grid(True, alpha=0.3)
    for ax in axes[len(COEFFICIENT_KEYS) :]:
        ax.set_visible(False)
    axes[0].legend(fontsize=7)
    fig.suptitle(title or "DEQ coefficients against σ_a² (σ_b² = 1 − σ_a² unless stated)")
    return _save(fig, Path(path))


def _mean_errors(recs: Sequence[Record], metric: str) -> dict[str, dict[str, dict[int, float]]]:
    """activation → σ_a² → n → mean of ``metric`` over seeds (and m, σ_b², …)."""
    acc: dict[str, dict[str, dict[int, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    for r in recs:
        v = (r.outputs or {}).get("floats", {}).get(metric)
        if r.kind in ("exact", "validate") and r.ok and v is not None and math.isfinite(v):
            acc[str(r.inputs["activation"])][str(r.inputs["sigma_a2"])][int(r.inputs["n"])].append(
                v
            )
    return {
        a: {s: {n: sum(v) / len(v) for n, v in sorted(by_n.items())} for s, by_n in by_s.items()}
        for a, by_s in acc.items()
    }


def _error_png(recs: Sequence[Record], out: Path) -> Path | None:
    from matplotlib.figure import Figure
    from matplotlib.ticker import NullLocator

    ck = _mean_errors(recs, ERROR_METRIC)
    ntk = _mean_errors(recs, "ntk_exact_vs_equiv")
    if not ck:
        return None
    nrows, ncols = _grid(len(ck), 3)
    fig = Figure(figsize=(4.6 * ncols, 3.8 * nrows + 0.5), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    for ax, (act, by_s) in zip(axes, sorted(ck.items()), strict=False):
        all_n: set[int] = set()
        first: list[tuple[int, float]] = []
        for i, (s, by_n) in enumerate(sorted(by_s.items(), key=lambda kv: _num(kv[0]))):
            ns = list(by_n)
            all_n |= set(ns)
            ax.loglog(ns, list(by_n.values()), "o-", color=f"C{i % 10}", label=f"σ_a² = {s}")
            k = ntk.get(act, {}).get(s, {})
            if k:
                ax.loglog(list(k), list(k.values()), "s--", color=f"C{i % 10}", ms=3, alpha=0.7)
            first.append((ns[0], by_n[ns[0]]))
        n0 = min(all_n)
        e0 = math.exp(statistics.fmean([math.log(e) for n, e in first if n == n0]))
        grid = sorted(all_n)
        ax.loglog(grid, [e0 * (n / n0) ** -0.5 for n in grid], color="0.4", lw=1.2, ls=":",
                  label="n^(−1/2) guide")  # fmt: skip
        ax.set_title(act)
        ax.set_xlabel("n")
        ax.set_ylabel("‖G* − Ḡ‖ / ‖G*‖  (NTK dashed)")
        ax.set_xticks(grid)
        ax.set_xticklabels([str(n) for n in grid])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    for ax in axes[len(ck) :]:
        ax.set_visible(False)
    fig.suptitle("Equivalent vs exact kernels: relative spectral error against n (mean over seeds)")
    return _save(fig, out / "error_vs_n.png")


def _heatmap_png(recs: Sequence[Record], out: Path) -> Path | None:
    from matplotlib.colors import LogNorm
    from matplotlib.figure import Figure

    ck = _mean_errors(recs, ERROR_METRIC)
    if not ck:
        return None
    nrows, ncols = _grid(len(ck), 3)
    fig = Figure(figsize=(4.8 * ncols, 3.8 * nrows + 0.5), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    vals = [e for by_s in ck.values() for by_n in by_s.values() for e in by_n.values() if e > 0]
    norm = LogNorm(vmin=min(vals), vmax=max(vals)) if vals else None
    image = None
    for ax, (act, by_s) in zip(axes, sorted(ck.items()), strict=False):
        sigmas = sorted(by_s, key=_num)
        ns = sorted({n for by_n in by_s.values() for n in by_n})
        grid = [[by_s[s].get(n, math.nan) for n in ns] for s in sigmas]
        image = ax.imshow(grid, origin="lower", aspect="auto", cmap="viridis", norm=norm)
        for i, row in enumerate(grid):
            for j, e in enumerate(row):
                if math.isfinite(e):
                    light = norm is not None and norm(e) > 0.6  # dark text on the yellow end
                    ax.text(j, i, f"{e:.2g}", ha="center", va="center", fontsize=7,
                            color="k" if light else "w")  # fmt: skip
        ax.set_xticks(range(len(ns)))
        ax.set_xticklabels([str(n) for n in ns])
        ax.set_yticks(range(len(sigmas)))
        ax.set_yticklabels(sigmas)
        ax.set_xlabel("n")
        ax.set_ylabel("σ_a²")
        ax.set_title(act)
    for ax in axes[len(ck) :]:
        ax.set_visible(False)
    if image is not None:
        fig.colorbar(image, ax=list(axes[: len(ck)]), label="‖G* − Ḡ‖ / ‖G*‖")
    fig.suptitle("CK validation error over (σ_a², n), mean over seeds")
    return _save(fig, out / "error_heatmap.png")


def check_plot_directory(directory: str | os.PathLike[str], *, force: bool = False) -> None:
    """Raise :class:`deqrmt.FileError` now if :func:`write_plots` would refuse ``directory`` or
    one of the files it may write there (so that a long sweep is not run for nothing)."""
    check_directory(directory)
    if os.path.isdir(directory):
        for name in PLOT_NAMES:
            check_output(os.path.join(directory, name), force=force)


def write_plots(
    source: ResultStore | str | os.PathLike[str] | Iterable[Record],
    directory: str | os.PathLike[str],
    *,
    keys: Iterable[str] | None = None,
    force: bool = False,
) -> list[Path]:
    """Write the sweep's PNGs into ``directory`` (created if needed); return their paths.

    Args:
      source: an open :class:`ResultStore`, the path of one, or records.
      keys: only these task keys (e.g. ``spec.keys``); default every stored record.
      force: replace existing PNGs of the same names (never a link, a FIFO or a device).

    Raises:
      FileError: ``directory`` is not a directory, or a PNG there exists (without ``force``)
        or is a link, a FIFO or a device; nothing was written.
      StoreError: ``source`` is a store that cannot be used.
    """
    check_plot_directory(directory, force=force)
    recs = _records(source, keys)

    def produce(tmp: str) -> list[Path]:
        out = Path(tmp)
        written = [_coefficients_png(recs, out), _error_png(recs, out), _heatmap_png(recs, out)]
        return [p for p in written if p is not None]

    return [Path(p) for p in write_directory(directory, produce, force=force)]

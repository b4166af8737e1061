r"""The records of a predicted spectrum: one sampled matrix, one kernel (CK or NTK), the report.

:func:`deqrmt.validate.spectrum` returns a :class:`SpectrumReport`; its ``to_dict()`` is the
``deqrmt spectrum --json`` object (docs/json.md), its ``figure()`` the HLD 2023 Figure 1 layout
(:func:`spectrum_figure`, below).  Rows: CK (top), NTK (bottom).  Columns: (a) the implicit
kernel (DEQ), (b) the explicit one (Corollary 1's quadratic network for the sphere) when it was
sampled, (c) the activations.  Every spectrum panel shows the histogram of the sampled
eigenvalues (bulk range; a finite-width DEQ as a step outline), the predicted density, the atoms
(stems, with their mass) and the spikes (listed, predicted and sampled: they lie far to the right
of the bulk).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .._arguments import choice
from ..numeric import AttributeHints, Kolmogorov, SpectralLaw

__all__ = [
    "SAMPLE_LABELS",
    "KernelSpectrum",
    "MonteCarloSpectrum",
    "SpectrumReport",
    "SpikeCheck",
    "spectrum_figure",
]

#: the sampled matrices of a spectrum's Monte Carlo check, in order
SAMPLE_LABELS = ("exact", "width", "explicit")


@dataclasses.dataclass(frozen=True)
class MonteCarloSpectrum:
    """Sampled eigenvalues of one kernel matrix and how they compare with the prediction.

    Attributes:
      label: which matrix: ``"exact"`` (the exact infinite-width kernel on the sampled data),
        ``"width"`` (a finite-width DEQ) or ``"explicit"`` (the explicit network: Corollary 1's
        quadratic on the sphere, the designed ENN on the mixture).
      eigenvalues: its n eigenvalues, increasing (float64).
      check: the :class:`~deqrmt.numeric.Kolmogorov` comparison with the predicted law: the
        Kolmogorov distance of the bulk and the sampled eigenvalues matched to the spikes.

    ``to_dict()`` is the ``mc`` object of ``deqrmt spectrum --json``: ``label``, ``eigenvalues``,
    ``kolmogorov``, ``kolmogorov_with_atoms``, ``spikes``, ``spike_errors``, ``bulk_count``.
    """

    label: str
    eigenvalues: np.ndarray
    check: Kolmogorov

    def to_dict(self) -> dict[str, Any]:
        """The ``mc`` object of ``deqrmt spectrum --json`` (plain floats and lists)."""
        return {
            "label": self.label,
            "eigenvalues": [float(v) for v in self.eigenvalues],
            **self.check.to_dict(),
        }


@dataclasses.dataclass(frozen=True)
class KernelSpectrum(AttributeHints):
    """The predicted law of one kernel (CK or NTK) and, with Monte Carlo, the sampled spectra.

    Attributes:
      kind: ``"ck"`` or ``"ntk"``.
      law: the predicted :class:`~deqrmt.SpectralLaw` (density, support, atoms, spikes,
        alignments) of the kernel's equivalent.
      coefficients: the equivalent's scalars as floats: ``alpha``, ``beta``, ``mu`` on the
        sphere (α11ᵀ + βXᵀX + μI, HLD 2023 Theorems 1 and 3); ``c1``, ``c2``, ``c3``,
        ``diagonal`` on the mixture ((α*₁, α*₂, α*₃, γ*²) for the CK, (β*₁, β*₂, β*₃, κ*²) for
        the NTK, ICML 2024 Theorems 1–2).
      samples: with ``mc=True``, a :class:`MonteCarloSpectrum` per sampled matrix: the exact
        infinite-width kernel first (``"exact"``), then a finite-width DEQ (``"width"``) and the
        explicit network (``"explicit"``) when they were computed; empty otherwise.
      explicit: the designed ENN's own predicted law and scalars (``enn=…``, for the design's
        kernel only), else None.

    ``sample(label)`` returns the sample of that label or None.  ``to_dict()`` is the ``ck`` /
    ``ntk`` object of ``deqrmt spectrum --json`` (docs/json.md): the law's ``density``,
    ``support``, ``atoms``, ``spikes``, ``alignments``, then ``equivalent``, ``enn`` and ``mc``.
    """

    kind: str
    law: SpectralLaw
    coefficients: dict[str, float]
    samples: tuple[MonteCarloSpectrum, ...] = ()
    explicit: tuple[SpectralLaw, dict[str, float]] | None = None

    def _lines(self) -> list[str]:
        from ..numeric import law_lines

        eq = ", ".join(f"{k} = {v:.6g}" for k, v in self.coefficients.items())
        out = [f"KernelSpectrum({self.kind}; equivalent: {eq})", *law_lines(self.law)[1:]]
        for s in self.samples:
            c = s.check
            got = ", ".join(
                f"{v:.6g} ({e:.2%})" for v, e in zip(c.spikes, c.spike_errors, strict=True)
            )
            out.append(f"  sampled {s.label}  Kolmogorov {c.distance:.4f}; spikes {got or 'none'}")
        return out

    def __repr__(self) -> str:
        from ..numeric import short

        return short(self._lines())

    def _repr_html_(self) -> str:
        from ..numeric import lines_html

        return lines_html(self._lines())

    def sample(self, label: str) -> MonteCarloSpectrum | None:
        """The sample labelled ``label`` (``"exact"``, ``"width"``, ``"explicit"``), or None
        when it was not computed."""
        choice(label, "label", SAMPLE_LABELS)
        return next((s for s in self.samples if s.label == label), None)

    def to_dict(self) -> dict[str, Any]:
        """The ``ck`` / ``ntk`` object of ``deqrmt spectrum --json`` (docs/json.md)."""
        out: dict[str, Any] = self.law.to_dict()
        out["equivalent"] = dict(self.coefficients)
        if self.explicit is not None:
            out["enn"] = {**self.explicit[0].to_dict(), "equivalent": dict(self.explicit[1])}
        if self.samples:
            exact = self.samples[0]
            out["mc"] = exact.to_dict()
            for s in self.samples[1:]:
                out["mc"][s.label] = s.to_dict()
        return out


@dataclasses.dataclass(frozen=True)
class SpikeCheck:
    """One predicted spike against the sampled eigenvalue matched to it, and whether the
    verdict judged it.

    Attributes:
      kernel: ``"ck"`` or ``"ntk"``.
      index: its rank among the predicted spikes (0: the top one).
      predicted, sampled: the predicted spike and the exact kernel's matched eigenvalue.
      relative_error: |sampled − predicted|/|sampled|.
      judged: whether the verdict holds it to ``max_spike_error``.
      why: why it is (or is not) judged, one phrase.

    ``to_dict()`` is one entry of ``deqrmt spectrum --json``'s ``spike_checks``.
    """

    kernel: str
    index: int
    predicted: float
    sampled: float
    relative_error: float
    judged: bool
    why: str

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class SpectrumReport(AttributeHints):
    """What :func:`spectrum` returns: the setting, the CK and NTK spectra, the verdict.

    Attributes:
      activation: the activation's name.
      expression: its SymPy expression in x.
      setting: the data: ``{"kind": "sphere", "n", "d"}`` or ``{"kind": "gmm", "preset":
        "paper" | "file", "n", "p", "counts", "tau0"}``.
      sigma_a2: σ_a² as an exact string (``"1/5"``).
      sigma_b2: σ_b² as an exact string.
      coefficients: every verified coefficient the laws come from (name → decimal text): the
        sphere's ``alpha``, ``beta``, ``mu``, ``ntk_alpha``, … or the mixture's ``tau_star``,
        ``alpha_1`` … ``kappa_star`` at the data's τ0.
      ck: the :class:`KernelSpectrum` of the CK.
      ntk: that of the NTK, or None when the NTK diverges (σ_a² E[φ'²] ≥ 1; see ``notes``).
      passed: with ``mc=True``, whether every exact kernel's sampled bulk is within ``max_ks``
        (Kolmogorov distance) and its top spike within ``max_spike_error``; None without.
      reasons: why ``passed`` is False, one line per failed check.
      spike_checks: with ``mc=True``, a :class:`SpikeCheck` per predicted spike of each kernel:
        which the verdict judged and why.
      notes: caveats of the derivation and of the Monte Carlo (e.g. no real quadratic network).
      phi: the parsed :class:`~deqrmt.symbolic.Activation` (for plots).
      quadratics: sphere only: ``"CK"`` / ``"NTK"`` → Corollary 1's explicit activation
        σ(t) = a₂t² + a₁t + a₀ as ``(a2, a1, a0)`` (the ``+++`` sign pattern).

    ``figure()`` draws HLD 2023's Figure 1 layout (matplotlib), ``kernels()`` is ``(ck, ntk)``
    (or ``(ck,)``), and ``to_dict()`` is the ``deqrmt spectrum --json`` object (docs/json.md):
    ``activation``, ``expression``, ``data``, ``sigma_a2``, ``sigma_b2``, ``coefficients``,
    ``ck``, ``ntk``, ``passed``, ``reasons``, ``spike_checks``, ``notes``.  ``repr()`` is a
    summary of at most 25 lines (support, atoms, spikes predicted and sampled, the verdict)
    and ``_repr_html_()`` the same as a table, for notebooks.

    Example:
      >>> from deqrmt.validate import spectrum
      >>> r = spectrum("sqrt(2)*relu", n=200, d=240, points=201)
      >>> r.passed is None, sorted(r.to_dict())[:4]
      (True, ['activation', 'ck', 'coefficients', 'data'])
      >>> [ks.kind for ks in r.kernels()]
      ['ck', 'ntk']
    """

    activation: str
    expression: str
    setting: dict[str, Any]
    sigma_a2: str
    sigma_b2: str
    coefficients: dict[str, str]
    ck: KernelSpectrum
    ntk: KernelSpectrum | None
    passed: bool | None
    reasons: tuple[str, ...]
    notes: tuple[str, ...]
    phi: Any = dataclasses.field(default=None, repr=False, compare=False)
    quadratics: dict[str, tuple[float, float, float]] = dataclasses.field(default_factory=dict)
    spike_checks: tuple[SpikeCheck, ...] = ()

    def __repr__(self) -> str:
        from ._spectrum_text import report_summary

        return report_summary(self)

    def _repr_html_(self) -> str:
        from ._spectrum_text import report_html

        return report_html(self)

    def figure(self) -> Any:
        """The HLD 2023 Figure 1 layout as a matplotlib ``Figure`` (for notebooks; needs
        matplotlib): per kernel (rows CK, NTK) the predicted density, atoms and spikes over the
        sampled eigenvalues of the implicit kernel and, on the sphere, of the explicit one, and
        the activations; the pyplot state is left alone."""
        return spectrum_figure(self)

    def kernels(self) -> tuple[KernelSpectrum, ...]:
        """``(ck, ntk)``, or ``(ck,)`` when the NTK diverges."""
        return (self.ck,) if self.ntk is None else (self.ck, self.ntk)

    def to_dict(self) -> dict[str, Any]:
        """The ``deqrmt spectrum --json`` object (docs/json.md): JSON-ready values only."""
        return {
            "activation": self.activation,
            "expression": self.expression,
            "data": dict(self.setting),
            "sigma_a2": self.sigma_a2,
            "sigma_b2": self.sigma_b2,
            "coefficients": dict(self.coefficients),
            "ck": self.ck.to_dict(),
            "ntk": None if self.ntk is None else self.ntk.to_dict(),
            "passed": self.passed,
            "reasons": list(self.reasons),
            "spike_checks": [c.to_dict() for c in self.spike_checks],
            "notes": list(self.notes),
        }


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

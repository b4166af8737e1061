"""The spectrum's finite-width DEQ (``width=m``) at a size that runs in a second, its figure
and texts, and the argument checks of ``spectrum`` that no other test reaches.

The reference of the finite-width DEQ is the exact infinite-width kernel of the same sample
(the kernel fixed point, computed pair by pair with no network): a width-m network's CK
HᵀH/m has the same trace up to O(1/√(nm)) and the same top eigenvalue up to O(1/√m); the NTK
fluctuates more (its adjoint is a second random fixed point: ±5 % between widths on the sphere
at n = 24).  Seeds are fixed (seed 0); the tolerances are about twice the measured
errors.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("matplotlib")

from deqrmt import BudgetExceeded, InvalidArgument  # noqa: E402
from deqrmt.validate import GaussianMixture, paper_mixture, spectrum  # noqa: E402
from deqrmt.validate._spectrum_text import report_lines  # noqa: E402
from helpers import DESIGN  # noqa: E402

M = 1024


def _close_spectra(report, kind: str, trace_tol: float, top_tol: float) -> None:
    ks = getattr(report, kind)
    exact, width = ks.sample("exact").eigenvalues, ks.sample("width").eigenvalues
    assert width.shape == exact.shape
    assert abs(width.sum() / exact.sum() - 1) < trace_tol, (kind, width.sum(), exact.sum())
    assert abs(width.max() / exact.max() - 1) < top_tol, (kind, width.max(), exact.max())


@pytest.fixture(scope="module")
def sphere():
    return spectrum(
        "sqrt(2)*relu", data="sphere", n=24, d=30, mc=True, width=M, device="cpu", points=64
    )


@pytest.fixture(scope="module")
def mixture():
    return spectrum("tanh", data="gmm", n=24, mc=True, width=M, device="cpu", points=64)


def test_a_finite_width_deq_on_the_sphere_has_the_exact_kernels_spectrum(sphere) -> None:
    # measured: CK trace 1.0 %, top 7.0 %; NTK trace 4.2 %, top 3.2 %
    _close_spectra(sphere, "ck", 0.03, 0.14)
    _close_spectra(sphere, "ntk", 0.1, 0.1)


def test_a_finite_width_deq_on_the_mixture_has_the_exact_kernels_spectrum(mixture) -> None:
    # measured: CK trace 1.0 %, top 2.5 %; NTK trace 0.9 %, top 2.5 %
    _close_spectra(mixture, "ck", 0.03, 0.06)
    _close_spectra(mixture, "ntk", 0.03, 0.06)


def test_the_texts_name_every_sample(sphere, mixture) -> None:
    for report in (sphere, mixture):
        for ks in report.kernels():
            lines = ks._lines()  # what repr shows, before it is cut to a screenful
            assert [ln.split()[1] for ln in lines if ln.startswith("  sampled ")] == [
                s.label for s in ks.samples
            ]
        table = report_lines(report)
        assert sum(ln.startswith("  sampled width") for ln in table) == len(report.kernels())
        # the verdict line says what .passed says
        assert ("REJECTED" in repr(report)) == (report.passed is False)
        assert any(ln.startswith("REJECTED") for ln in table) == (report.passed is False)


def test_the_figure_draws_the_samples_under_the_law(sphere) -> None:
    fig = sphere.figure()
    axes = [ax for ax in fig.axes if ax.get_visible() and ax.axison]
    labels = [t.get_text() for ax in axes if ax.get_legend() for t in ax.get_legend().get_texts()]
    assert labels.count("finite-width DEQ") == 2  # CK and NTK, on the implicit kernel's panel
    assert labels.count(f"sampled (n = {24})") >= 2
    texts = [t.get_text() for ax in axes for t in ax.texts]
    assert any(t.startswith("Kolmogorov ") for t in texts)


def test_the_figure_of_a_prediction_alone_has_no_samples() -> None:
    r = spectrum("tanh", data="gmm", n=64, points=64)
    fig = r.figure()
    titles = [ax.get_title() for ax in fig.axes]
    assert "CK: predicted" in titles
    labels = [
        t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()
    ]
    assert not any(lb.startswith("sampled") for lb in labels)


def test_spectrum_arguments_that_do_not_go_together_are_refused() -> None:
    mix = paper_mixture(16)
    with pytest.raises(InvalidArgument, match="a mixture description needs data='gmm'"):
        spectrum("tanh", data="sphere", mixture=mix)
    with pytest.raises(InvalidArgument, match="d=20 differs from the mixture's p = 16"):
        spectrum("tanh", data="gmm", mixture=mix, d=20)
    with pytest.raises(InvalidArgument, match="width needs mc=True"):
        spectrum("tanh", data="sphere", n=32, d=40, width=16)
    with pytest.raises(BudgetExceeded, match="n·d = 81920000 sampled entries"):
        spectrum("tanh", data="sphere", n=8192, d=10_000, mc=True)


def test_finite_width_kernels_are_symmetric_and_positive(sphere) -> None:
    for ks in sphere.kernels():
        ev = ks.sample("width").eigenvalues
        assert np.all(ev > -1e-10 * ev.max())  # Gram matrices: no negative eigenvalue


def test_a_designed_enn_is_drawn_and_listed_beside_the_deq() -> None:
    r = spectrum("tanh", data="gmm", n=48, enn=DESIGN, mc=True, device="cpu")
    assert r.ck.sample("explicit") is not None and r.ntk.sample("explicit") is None
    table = report_lines(r)
    (line,) = [ln for ln in table if ln.startswith("  designed ENN (")]
    # the designed ENN's own predicted spikes, as its law has them
    spikes = ", ".join(f"{v:.6g}" for v in r.ck.explicit[0].spikes[:3]) or "none"
    assert line.endswith(f"spikes {spikes}")
    fig = r.figure()
    titles = [ax.get_title() for ax in fig.axes]
    assert "CK: explicit (designed ENN, exact)" in titles
    # the NTK row has no designed ENN: its explicit panel is switched off
    assert sum(not ax.axison for ax in fig.axes) == 1


def test_an_odd_activation_on_the_sphere_has_no_spikes_and_its_notes_are_counted() -> None:
    r = spectrum("tanh", data="sphere", n=32, d=40, points=64)  # odd φ: α = 0, no spike
    assert [ln for ln in report_lines(r) if ln.startswith("  spikes ")] == [
        "  spikes       none"
    ] * 2
    assert r.notes and f"{len(r.notes)} note(s): .notes" in repr(r).splitlines()


def test_more_than_four_spikes_are_counted_not_listed() -> None:
    # six classes with distinct, separated means: six spikes per kernel; four are shown
    p, k = 40, 6
    means = np.zeros((k, p))
    means[np.arange(k), np.arange(k)] = 3.0 + np.arange(k)
    mix = GaussianMixture(means, np.ones((k, p)), np.full(k, 1 / k))
    r = spectrum("tanh", data="gmm", mixture=mix, n=96, points=64)
    assert len(r.ck.law.spikes) == k
    text = repr(r).splitlines()
    assert "  … 2 more spikes (.ck.law.spikes)" in text
    assert sum(ln.startswith("  spike ") for ln in text) == 2 * 4
    panel_texts = [t.get_text() for ax in r.figure().axes for t in ax.texts]
    assert sum("… 2 more spikes" in t for t in panel_texts) == 2


def test_a_design_for_other_sigmas_is_refused() -> None:
    with pytest.raises(InvalidArgument, match=r"sigma_a2=0\.3 differs from the design's 1/5"):
        spectrum("tanh", data="gmm", n=48, enn=DESIGN, sigma_a2="0.3", sigma_b2="0.7", points=64)

"""Every axis of the figures deqrmt draws for people is labelled.

The spectrum figure (``SpectrumReport.figure()``, ``deqrmt spectrum --plot``): each panel says
what its x and y axes are (the eigenvalue and the density of eigenvalues; the activations
panel its variable and φ, σ).  The gallery's figures are checked by eye in the browser test's
screenshots (tests/test_docs.py); this one is the package's own.
"""

from __future__ import annotations

import pytest

pytest.importorskip("matplotlib")


def test_every_panel_of_the_spectrum_figure_is_labelled() -> None:
    import deqrmt

    # HLD 2023's sphere setting, predicted only (no sampling): a CK row and an NTK row, each a
    # spectrum panel and the activations panel
    report = deqrmt.spectrum("sqrt(2)*relu", data="sphere", n=200, d=240, sigma_a2="0.2")
    fig = report.figure()
    shown = [ax for ax in fig.axes if ax.get_visible() and ax.axison]
    assert len(shown) == 4, [ax.get_title() for ax in shown]
    unlabelled = [
        ax.get_title() for ax in shown if not ax.get_xlabel().strip() or not ax.get_ylabel().strip()
    ]
    assert not unlabelled, f"panels without an axis label: {unlabelled}"
    spectra = [ax for ax in shown if ax.get_xlabel() == "eigenvalue"]
    assert len(spectra) == 2 and all("density" in ax.get_ylabel() for ax in spectra)

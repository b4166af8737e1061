"""A SpectrumReport reads well in a notebook: a short repr (≤ 25 lines, no arrays) with the
support, atoms, spikes predicted vs sampled and the verdict; an HTML table that escapes what is
not ours; and the verdict says which spikes it judged, in text and JSON."""

from __future__ import annotations

import dataclasses
import json

import pytest

import deqrmt
from deqrmt.cli import main

pytest.importorskip("torch")


@pytest.fixture(scope="module")
def report() -> deqrmt.validate.SpectrumReport:
    # the case: two predicted spikes per kernel on the paper's mixture
    return deqrmt.spectrum("tanh", data="gmm", n=256, mc=True)


def test_repr_is_short_and_has_the_numbers(report) -> None:
    text = repr(report)
    lines = text.splitlines()
    assert len(lines) <= 25
    assert len(text) < 3000  # no eigenvalue arrays (the old dataclass repr: 60 KB)
    ck = report.ck
    assert f"support [{ck.law.support[0][0]:.6g}, {ck.law.support[0][1]:.6g}]" in text
    assert f"{ck.law.atoms[0][0]:.4g} (mass {ck.law.atoms[0][1]:.3g})" in text
    exact = ck.sample("exact").check
    for i in range(2):
        assert (
            f"spike {i + 1}: predicted {ck.law.spikes[i]:.6g}, sampled {exact.spikes[i]:.6g}"
        ) in text
    assert ("PASSED" if report.passed else "REJECTED") in lines[-1]


def test_every_spike_is_listed_with_whether_it_was_judged(report) -> None:
    for ks in report.kernels():
        checks = [c for c in report.spike_checks if c.kernel == ks.kind]
        assert [c.index for c in checks] == list(range(len(ks.law.spikes)))
        assert [c.judged for c in checks] == [True] + [False] * (len(checks) - 1)
        exact = ks.sample("exact").check
        assert [c.sampled for c in checks] == list(exact.spikes)
        assert all(c.why for c in checks)
    doc = json.loads(json.dumps(report.to_dict()))
    assert doc["spike_checks"][1]["judged"] is False
    assert "not judged" in doc["spike_checks"][1]["why"]


def test_html_table_escapes_the_users_text(report) -> None:
    page = report._repr_html_()
    assert page.count("<table>") == 1 and "judged" in page
    hostile = dataclasses.replace(report, activation="<script>x</script>", notes=("a<b",))
    page = hostile._repr_html_()
    assert "<script>" not in page and "&lt;script&gt;" in page and "a&lt;b" in page


def test_cli_prints_which_spikes_it_judged(capsys) -> None:
    code = main(["spectrum", "sqrt(2)*relu", "--n", "200", "--d", "240", "--mc"])
    out = capsys.readouterr().out
    assert code == 0
    assert "spike 1      predicted" in out and "judged, the top spike" in out
    assert out.rstrip().splitlines()[-1].startswith("PASSED (bulk Kolmogorov distance")

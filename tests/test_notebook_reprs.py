"""Result records read well in a notebook: a short text repr (≤ 25 lines, the numbers a person
wants, no arrays), an HTML table, and an attribute typo that names the right attribute."""

from __future__ import annotations

import copy
import html

import pytest

import deqrmt
from deqrmt.numeric._display import MAX_LINES


@pytest.fixture(scope="module")
def records() -> dict[str, object]:
    law = deqrmt.spectrum("tanh", data="gmm", n=64)
    return {
        "deq": deqrmt.deq_coefficients("tanh", dps=12),
        "sphere": deqrmt.sphere_coefficients("tanh", dps=12),
        "explicit": deqrmt.explicit_coefficients(["tanh", "relu"], dps=12),
        "sensitivities": deqrmt.sensitivities("tanh", dps=10),
        "law": law.ck.law,
        "kernel": law.ck,
        "report": law,
    }


def _numbers(name: str, r) -> list[str]:
    """Numbers the repr must show, read off the record's own fields."""
    if name in ("deq", "sphere"):
        return [v.text for v in r.values.values()]
    if name == "explicit":
        return [r.layers[1]["alpha_1"].text]
    if name == "sensitivities":
        return [r["alpha_1"]["sigma_a2"].text]
    law = r if name == "law" else (r.law if name == "kernel" else r.ck.law)
    return [f"{law.support[0][1]:.6g}", f"{law.spikes[0]:.6g}", f"{law.atoms[0][0]:.4g}"]


@pytest.mark.parametrize(
    "name", ["deq", "sphere", "explicit", "sensitivities", "law", "kernel", "report"]
)
def test_repr_is_short_with_the_numbers_and_html_is_a_table(records, name: str) -> None:
    r = records[name]
    text = repr(r)
    assert len(text.splitlines()) <= MAX_LINES, text
    assert "array(" not in text and len(text) < 4000
    for number in _numbers(name, r):
        assert number in text, (name, number)
    page = r._repr_html_()
    assert "<table>" in page
    assert html.escape(_numbers(name, r)[0]) in page


def test_check_report_repr_and_html() -> None:
    rep = deqrmt.check_activation("tanh")
    text = repr(rep)
    assert len(text.splitlines()) <= MAX_LINES
    assert text.splitlines()[0].startswith("deqrmt check tanh")
    page = rep._repr_html_()
    assert page.count("<tr>") == len(rep.items) + 1
    with pytest.raises(AttributeError, match=r"did you mean 'passed'\?"):
        rep.passd  # noqa: B018


@pytest.mark.parametrize(
    ("typo", "hint"),
    [
        ("alpha1", "did you mean 'alpha_1'?"),
        ("Kappa_Star", "did you mean 'kappa_star'?"),
        ("E_phi_prim", "did you mean ['E_phi_prime']?"),
        ("zzz", "its keys: tau_star, gamma_star"),
    ],
)
def test_attribute_typos_name_the_right_attribute(records, typo: str, hint: str) -> None:
    c = records["deq"]
    with pytest.raises(AttributeError) as err:
        getattr(c, typo)
    assert str(err.value).startswith(f"'DEQCoefficients' object has no attribute {typo!r}; ")
    assert hint in str(err.value)


def test_protocol_lookups_stay_plain(records) -> None:
    c = records["deq"]
    assert not hasattr(c, "_repr_png_") and not hasattr(c, "__array_interface__")
    assert copy.deepcopy(c) == c
    with pytest.raises(AttributeError, match=r"did you mean 'spikes'\?"):
        records["law"].spike  # noqa: B018
    with pytest.raises(AttributeError, match=r"did you mean 'passed'\?"):
        records["report"].passd  # noqa: B018

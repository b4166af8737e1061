"""Issue #10 (6): `deqrmt families` lists each design family's formula and parameters."""

from __future__ import annotations

import argparse
import json

import pytest
import sympy as sp

from deqrmt.cli import families
from deqrmt.symbolic._family import FAMILIES, family_catalogue, get_family


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="deqrmt")
    sub = parser.add_subparsers(dest="command")
    families.register(sub)
    return parser.parse_args([families.NAME, *argv])


def test_catalogue_names_every_family_and_its_parameters() -> None:
    cat = family_catalogue()
    assert [e.name for e in cat] == list(FAMILIES)
    for e in cat:
        fam = get_family(e.name)
        assert [n for n, _ in e.params] == [str(p) for p in fam.params]
        assert all(meaning for _, meaning in e.params)
        assert isinstance(e.formula, sp.Expr)
        assert {str(s) for s in e.formula.free_symbols} == {"x", *(str(p) for p in fam.params)}


@pytest.mark.parametrize("name", ["hard_tanh", "leaky_relu"])
def test_display_formula_equals_the_family_pieces(name: str) -> None:
    """The readable formula is the same function as the pieces the solver uses."""
    e = next(e for e in family_catalogue() if e.name == name)
    fam = get_family(name)
    sub = dict(zip(fam.params, (sp.Rational(3, 2), sp.Rational(-1, 2)), strict=True))
    if name == "hard_tanh":
        sub = dict(zip(fam.params, (sp.Rational(3, 2), sp.Rational(4, 5)), strict=True))
    x = sp.Symbol("x", real=True)
    for v in (sp.Rational(-3), sp.Rational(-1, 3), sp.Rational(1, 5), sp.Rational(2)):
        shown = e.formula.subs({**{sp.Symbol(str(k), real=True): w for k, w in sub.items()}, x: v})
        assert shown == fam.formula.subs({**sub, x: v}), v


def test_cli_text_lists_formula_and_parameters(capsys: pytest.CaptureFixture[str]) -> None:
    assert families.run(_parse()) == 0
    out = capsys.readouterr().out
    assert "hard_tanh: φ(x) = a·max(-c, min(c, x))" in out
    assert "slope for x > 0" in out and "constraints: a - b > 0" in out
    assert "a*tanh(b*x)" in out


def test_cli_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert families.run(_parse("--json")) == 0
    data = json.loads(capsys.readouterr().out)
    names = [f["name"] for f in data["families"]]
    assert names == list(FAMILIES)
    ht = data["families"][0]
    assert [p["name"] for p in ht["parameters"]] == ["a", "c"]
    assert ht["constraints"] == ["c > 0"] and ht["latex"]


def test_help_describes_the_command() -> None:
    parser = argparse.ArgumentParser(prog="deqrmt")
    sub = parser.add_subparsers()
    p = families.register(sub)
    assert "family" in (p.description or "") and "--json" in p.format_help()

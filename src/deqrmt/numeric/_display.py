r"""Notebook reprs of results: HTML, LaTeX and Markdown tables that say what holds for each value.

Every value shown is marked ``proven (Arb)`` (its ball proves every digit) or ``two evaluations
agree`` (:func:`deqrmt.symbolic._latex.value_status`), by its own ``certified`` flag, never by a
sentence for the whole table.  User text (an activation's name, a note that quotes it) is
escaped for the format: HTML entities, TeX specials, Markdown's specials and raw HTML, control
and bidi characters made visible.

The result classes (:class:`~deqrmt.numeric.DEQCoefficients`, ``ExplicitCoefficients``,
``SphereCoefficients``) call :func:`html`, :func:`latex` and :func:`markdown` from their
``_repr_*_`` methods; what a table shows is read from the result's fields here.
"""

from __future__ import annotations

import html as _html
import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from .._json import JSONObject
from .._text import escape_controls
from ..symbolic import SYMBOLS, tex_number, tex_text, value_status

if TYPE_CHECKING:
    from ._verified import Verified

__all__ = [
    "Table", "Row", "table", "html", "latex", "markdown", "LAYER_SYMBOLS", "SPHERE_SYMBOLS",
    "html_text", "law_lines", "lines_html", "short", "Displayed",
]  # fmt: skip

#: an explicit layer's keys: (Unicode, LaTeX) of the symbol, the layer index written after it
LAYER_SYMBOLS: dict[str, tuple[str, str]] = {
    "tau": ("τ̃", r"\tilde\tau"), "alpha_1": ("α̃", r"\tilde\alpha"), "alpha_2": ("α̃", r"\tilde\alpha"),
    "alpha_3": ("α̃", r"\tilde\alpha"), "alpha_4": ("α̃", r"\tilde\alpha"),
    "beta_1": ("β̃", r"\tilde\beta"), "beta_2": ("β̃", r"\tilde\beta"), "beta_3": ("β̃", r"\tilde\beta"),
    "kappa": ("κ̃", r"\tilde\kappa"), "center": ("c", "c"),
}  # fmt: skip
#: the sphere setting's keys (HLD 2023: g, k and Theorems 1 and 3)
SPHERE_SYMBOLS: dict[str, tuple[str, str]] = {
    "g0": ("g(0)", "g(0)"), "g_at_1": ("g(1)", "g(1)"), "g_prime_0": ("g'(0)", "g'(0)"),
    "g_second_0": ("g''(0)", "g''(0)"), "alpha": ("α", r"\alpha"), "beta": ("β", r"\beta"),
    "mu": ("μ", r"\mu"), "ntk_alpha": ("α̇", r"\dot\alpha"), "ntk_beta": ("β̇", r"\dot\beta"),
    "ntk_mu": ("μ̇", r"\dot\mu"), "k0": ("k(0)", "k(0)"), "k_at_1": ("k(1)", "k(1)"),
    "k_prime_0": ("k'(0)", "k'(0)"), "k_second_0": ("k''(0)", "k''(0)"),
}  # fmt: skip


class Row(NamedTuple):
    """One value: its symbol (Unicode and LaTeX, package text), its key and the value."""

    symbol: str
    tex: str
    key: str
    value: Verified


class Table(NamedTuple):
    """What a repr shows: a title as text and as LaTeX (both may hold user text, escaped here
    only in ``tex``), the rows, and notes (may hold user text)."""

    title: str
    tex: str
    rows: Sequence[Row]
    notes: Sequence[str] = ()


def _notes(result: object) -> tuple[str, ...]:
    reason = getattr(result, "reason", None)
    return (*getattr(result, "notes", ()), *((f"no proof: {reason}",) if reason else ()))


def _rows(values: Mapping[str, Verified], symbols: Mapping[str, tuple[str, str]]) -> list[Row]:
    return [Row(*symbols[k], k, values[k]) for k in symbols if k in values]


def _setting(what: str, name: str, pairs: Sequence[tuple[str, str, object]]) -> tuple[str, str]:
    """The title as text and LaTeX: ``what, name: σ_a² = 1/5, …`` (``pairs``: text symbol,
    LaTeX symbol, value)."""
    text = f"{what}, {name}: " + ", ".join(f"{s} = {v}" for s, _, v in pairs)
    tex = rf"\text{{{tex_text(what)}, {tex_text(name)}:}}\ " + ",\\ ".join(
        f"{t} = {tex_number(v)}" for _, t, v in pairs
    )
    return text, tex


def table(result: Any) -> Table:
    """The :class:`Table` of a DEQ, explicit-network or sphere result (read from its fields)."""
    if hasattr(result, "layers"):
        names = ", ".join(a.name for a in result.activations)
        rows = []
        for l, layer in enumerate(result.layers, start=1):
            for key, (sym, tex) in LAYER_SYMBOLS.items():
                if key in layer:
                    k = key.rsplit("_", 1)[1] if key[-1].isdigit() else ""
                    sub = f"{l},{k}" if k else f"{l}"
                    row = Row(f"{sym}_{sub}", f"{tex}_{{{sub}}}", f"{key} (layer {l})", layer[key])
                    rows.append(row)
        what = f"explicit network of {len(result.layers)} layers"
        pairs = [("τ0", r"\tau_0", result.tau0), ("digits", r"\text{digits}", result.dps)]
        return Table(*_setting(what, names, pairs), rows)
    if hasattr(result, "quadratic_ck"):
        pairs = [
            ("σ_a²", r"\sigma_a^2", result.sigma_a2), ("σ_b²", r"\sigma_b^2", result.sigma_b2),
            ("d", "d", result.d), ("digits", r"\text{digits}", result.dps),
        ]  # fmt: skip
        text, tex = _setting("sphere setting", result.activation.name, pairs)
        return Table(text, tex, _rows(result.values, SPHERE_SYMBOLS), _notes(result))
    p = result.problem
    pairs = [
        ("σ_a²", r"\sigma_a^2", p.sigma_a2), ("σ_b²", r"\sigma_b^2", p.sigma_b2),
        ("τ0", r"\tau_0", p.tau0), ("digits", r"\text{digits}", p.dps),
    ]  # fmt: skip
    text, tex = _setting("DEQ coefficients", p.activation.name, pairs)
    ntk = f"NTK over ({', '.join(p.trainable)})"
    center = "φ centered at τ*" if p.center else "φ as given (E[φ(τ*ξ)] = 0)"
    text += f"; {ntk}, {center}"
    tex += rf";\ \text{{{tex_text(ntk)}, {'centered' if p.center else 'as given'}}}"
    return Table(text, tex, _rows(result.values, SYMBOLS), _notes(result))


def _status(v: object) -> str:
    return value_status(bool(getattr(v, "certified", False)))


def html_text(text: object) -> str:
    """Text for HTML: entities, control characters visible, and ``$``/``\\`` as entities so that a
    notebook's MathJax does not read user text as TeX."""
    s = _html.escape(escape_controls(str(text), keep=""))
    return s.replace("$", "&#36;").replace("\\", "&#92;")


_h = html_text  # the short name this module's tables use


def html(result: Displayed) -> str:
    """An HTML table: symbol, key, value, digits, what holds (every text escaped)."""
    t = table(result)
    cells = "".join(
        f"<tr><td>{_h(r.symbol)}</td><td><code>{_h(r.key)}</code></td>"
        f"<td style='text-align:left'><code>{_h(r.value.text)}</code></td>"
        f"<td>{_h(r.value.digits)}</td><td>{_h(_status(r.value))}</td></tr>"
        for r in t.rows
    )
    notes = "".join(f"<p>{_h(n)}</p>" for n in t.notes)
    return (
        f"<p><b>{_h(t.title)}</b></p><table><tr><th>symbol</th><th>key</th><th>value</th>"
        f"<th>digits</th><th>what holds</th></tr>{cells}</table>{notes}"
    )


def latex(result: Displayed) -> str:
    r"""A LaTeX ``aligned`` block (MathJax/KaTeX and amsmath): each value with what holds."""
    t = table(result)
    rows = [t.tex]
    rows += [
        rf"{r.tex} &= {tex_number(r.value.text)} && \text{{{tex_text(_status(r.value))}}}"
        for r in t.rows
    ]
    rows += [rf"\text{{{tex_text(n)}}}" for n in t.notes]
    return "$$\\begin{aligned}\n" + " \\\\\n".join(rows) + "\n\\end{aligned}$$"


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]#|~$])")


def _md(text: object) -> str:
    """Text for Markdown: control characters visible, Markdown's specials and ``$`` (math in a
    notebook) backslash-escaped, and HTML (which Markdown renders as HTML) as entities."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", _html.escape(escape_controls(str(text), keep=""), False))


def markdown(result: Displayed) -> str:
    """A Markdown table: symbol, key, value, digits, what holds."""
    t = table(result)
    lines = [
        f"**{_md(t.title)}**",
        "",
        "| symbol | key | value | digits | what holds |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {_md(r.symbol)} | `{r.key}` | {_md(r.value.text)} | {_md(r.value.digits)} | "
        f"{_md(_status(r.value))} |"
        for r in t.rows
    ]
    lines += ["", *(_md(n) for n in t.notes)]
    return "\n".join(lines).rstrip() + "\n"


# --- short text for the records that have no table of verified values --------------------------

#: the most lines a record's ``repr`` takes in a notebook
MAX_LINES = 25


def short(lines: Sequence[str], more: str = "every number: .to_dict()") -> str:
    """``lines`` joined, cut to :data:`MAX_LINES` with a last line saying where the rest is."""
    out = list(lines)
    if len(out) > MAX_LINES:
        out = [*out[: MAX_LINES - 1], f"… ({more})"]
    return "\n".join(escape_controls(line, keep="") for line in out)


def text(result: Displayed) -> str:
    """A record's :func:`table` as text: its title, one ``key  value`` line per row, notes."""
    t = table(result)
    width = max((len(r.key) for r in t.rows), default=0)
    rows = [f"  {r.key:<{width}}  {r.value.text}" for r in t.rows]
    return short([t.title, *rows, *(f"  note: {n}" for n in t.notes)])


class Displayed:
    """A result record's JSON text and its reprs: text, HTML, LaTeX and Markdown tables.

    One home for what every coefficient record shows; a record defines ``to_dict`` (and may
    write its own ``__repr__``; a dataclass record then says ``repr=False``).
    """

    def to_dict(self) -> JSONObject:
        raise NotImplementedError

    def to_json(self) -> str:
        """:meth:`to_dict` as indented JSON text."""
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)

    def __repr__(self) -> str:
        return text(self)

    def _repr_html_(self) -> str:
        return html(self)

    def _repr_latex_(self) -> str:
        return latex(self)

    def _repr_markdown_(self) -> str:
        return markdown(self)


class LawSummary(Protocol):
    """What :func:`law_lines` reads of a spectral law (:class:`~._spectrum.SpectralLaw`)."""

    @property
    def support(self) -> tuple[tuple[float, float], ...]: ...
    @property
    def atoms(self) -> tuple[tuple[float, float], ...]: ...
    @property
    def spikes(self) -> tuple[float, ...]: ...
    @property
    def setting(self) -> str: ...
    @property
    def n(self) -> int: ...


def law_lines(law: LawSummary) -> list[str]:
    """A spectral law in a few lines: support, atoms, spikes (no density arrays)."""
    support = " ∪ ".join(f"[{a:.6g}, {b:.6g}]" for a, b in law.support) or "—"
    atoms = ", ".join(f"{loc:.6g} (mass {m:.4g})" for loc, m in law.atoms) or "none"
    spikes = ", ".join(f"{v:.6g}" for v in law.spikes[:6]) or "none"
    if len(law.spikes) > 6:
        spikes += f", … ({len(law.spikes)} in all)"
    return [
        f"SpectralLaw({law.setting}, n = {law.n})",
        f"  support  {support}",
        f"  atoms    {atoms}",
        f"  spikes   {spikes}",
    ]


def lines_html(lines: Sequence[str]) -> str:
    """Lines of ``name  value`` text as a two-column HTML table (every text escaped)."""
    head, *rows = lines
    cells = "".join(
        "<tr>" + "".join(f"<td>{_h(c)}</td>" for c in row.strip().split("  ", 1)) + "</tr>"
        for row in rows
    )
    return f"<p><b>{_h(head)}</b></p><table>{cells}</table>"

"""A :class:`SpectrumReport` for people: the table ``deqrmt spectrum`` prints, the short
``repr`` a notebook shows (at most 25 lines) and its HTML table (``_repr_html_``).

One home for the three, so the command and the notebook say the same numbers.
"""

from __future__ import annotations

import html
from typing import Any

__all__ = ["report_lines", "report_summary", "report_html", "MAX_REPR_LINES"]

#: the most lines ``repr(report)`` takes (a notebook cell's worth)
MAX_REPR_LINES = 25


def _where(report: Any) -> str:
    s = report.setting
    if s["kind"] == "sphere":
        return f"data uniform on the sphere, n = {s['n']}, d = {s['d']} (HLD 2023)"
    return (
        f"Gaussian mixture ({s['preset']}), n = {s['n']}, p = {s['p']}, classes "
        f"{s['counts']}, τ0 = {float(s['tau0']):.6g} (ICML 2024)"
    )


def _header(report: Any) -> str:
    return (
        f"spectrum {report.activation}: φ(x) = {report.expression}, σ_a² = {report.sigma_a2}, "
        f"σ_b² = {report.sigma_b2}; {_where(report)}"
    )


def _support(law: Any) -> str:
    return " ∪ ".join(f"[{a:.6g}, {b:.6g}]" for a, b in law.support) or "—"


def _judged(report: Any, kind: str) -> list[str]:
    return [
        f"  spike {c.index + 1}      predicted {c.predicted:.6g}, sampled {c.sampled:.6g} "
        f"({c.relative_error:.2%}): {'judged' if c.judged else 'not judged'}, {c.why}"
        for c in report.spike_checks
        if c.kernel == kind
    ]


def _verdict(report: Any) -> list[str]:
    if report.passed is None:
        return []
    if not report.passed:
        return ["", "REJECTED: " + "; ".join(report.reasons)]
    lower = sum(1 for c in report.spike_checks if not c.judged)
    extra = f"; {lower} lower spike(s) reported, not judged" if lower else ""
    return ["", f"PASSED (bulk Kolmogorov distance and top spike of each kernel{extra})"]


def report_lines(report: Any) -> list[str]:
    """The ``deqrmt spectrum`` table: setting, per kernel its equivalent, support, atoms,
    spikes with their class alignment, the sampled spectra, the spikes judged, notes, verdict."""
    out = [_header(report)]
    for ks in report.kernels():
        law = ks.law
        eq = ", ".join(f"{k} = {v:.6g}" for k, v in ks.coefficients.items())
        out += ["", f"{ks.kind.upper()}  (equivalent: {eq})", f"  support      {_support(law)}"]
        out += [f"  atom         {loc:.6g} with mass {mass:.6g}" for loc, mass in law.atoms]
        if not law.alignments:
            out.append("  spikes       none")
        for a in law.alignments:
            times = f" (×{a.multiplicity})" if a.multiplicity > 1 else ""
            cls = ", ".join(f"{v:.4f}" for v in a.classes)
            out.append(f"  spike        {a.eigenvalue:.8g}{times}   class alignment [{cls}]")
        if ks.explicit is not None:
            elaw, ecoef = ks.explicit
            eq2 = ", ".join(f"{k} = {v:.6g}" for k, v in ecoef.items())
            sp = ", ".join(f"{v:.6g}" for v in elaw.spikes[:3]) or "none"
            out.append(f"  designed ENN ({eq2}): spikes {sp}")
        for smp in ks.samples:
            c = smp.check
            spikes = ", ".join(
                f"{v:.6g} ({e:.2%})" for v, e in zip(c.spikes[:3], c.spike_errors[:3], strict=False)
            )
            out.append(
                f"  sampled {smp.label:<8} Kolmogorov {c.distance:.4f} (bulk of {c.bulk}; with "
                f"atoms {c.distance_with_atoms:.4f})" + (f"; spikes {spikes}" if spikes else "")
            )
        out += _judged(report, ks.kind)
    out += [f"note: {note}" for note in report.notes]
    return out + _verdict(report)


def report_summary(report: Any) -> str:
    """At most :data:`MAX_REPR_LINES` lines: per kernel the support, atoms, spikes predicted
    vs sampled and the bulk's Kolmogorov distance, then the verdict; notes are counted, not
    shown (``report.notes``), and arrays never printed (``report.to_dict()`` has them)."""
    out = [_header(report)]
    for ks in report.kernels():
        law = ks.law
        atoms = ", ".join(f"{loc:.4g} (mass {m:.3g})" for loc, m in law.atoms) or "none"
        out.append(f"{ks.kind.upper()}: support {_support(law)}; atoms {atoms}")
        exact = ks.sample("exact")
        checks = {c.index: c for c in report.spike_checks if c.kernel == ks.kind}
        for i, v in enumerate(law.spikes[:4]):
            c = checks.get(i)
            got = (
                ""
                if c is None
                else (
                    f", sampled {c.sampled:.6g} ({c.relative_error:.2%}, "
                    f"{'judged' if c.judged else 'not judged'})"
                )
            )
            out.append(f"  spike {i + 1}: predicted {v:.6g}{got}")
        if len(law.spikes) > 4:
            out.append(f"  … {len(law.spikes) - 4} more spikes (.{ks.kind}.law.spikes)")
        if exact is not None:
            out.append(
                f"  sampled bulk: Kolmogorov distance {exact.check.distance:.4f} "
                f"({exact.check.bulk} eigenvalues)"
            )
    if report.notes:
        out.append(f"{len(report.notes)} note(s): .notes")
    if report.passed is not None:
        out.append("PASSED" if report.passed else "REJECTED: " + "; ".join(report.reasons))
    if len(out) > MAX_REPR_LINES:
        out = [*out[: MAX_REPR_LINES - 1], "… (every number: .to_dict())"]
    return "\n".join(out)


def _cell(text: Any) -> str:
    return f"<td>{html.escape(str(text))}</td>"


def report_html(report: Any) -> str:
    """The summary as an HTML table; every text that is not ours (the activation's name and
    expression, notes) escaped."""
    rows = []
    for ks in report.kernels():
        law = ks.law
        checks = {c.index: c for c in report.spike_checks if c.kernel == ks.kind}
        atoms = ", ".join(f"{loc:.4g} (mass {m:.3g})" for loc, m in law.atoms) or "none"
        rows.append(
            f"<tr><th>{ks.kind.upper()}</th>{_cell('support ' + _support(law))}"
            f"{_cell('atoms ' + atoms)}<td></td></tr>"
        )
        for i, v in enumerate(law.spikes):
            c = checks.get(i)
            got = "" if c is None else f"{c.sampled:.6g} ({c.relative_error:.2%})"
            judged = "" if c is None else ("judged" if c.judged else "not judged")
            rows.append(
                f"<tr><td>spike {i + 1}</td>{_cell(f'{v:.6g}')}{_cell(got)}{_cell(judged)}</tr>"
            )
        exact = ks.sample("exact")
        if exact is not None:
            rows.append(
                f"<tr><td>bulk</td>{_cell(f'Kolmogorov {exact.check.distance:.4f}')}"
                f"{_cell(f'{exact.check.bulk} eigenvalues')}<td></td></tr>"
            )
    verdict = ""
    if report.passed is not None:
        verdict = f"<p><b>{'PASSED' if report.passed else 'REJECTED'}</b>"
        verdict += "" if report.passed else ": " + html.escape("; ".join(report.reasons))
        verdict += "</p>"
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in report.notes)
    return (
        f"<p>{html.escape(_header(report))}</p><table><tr><th></th><th>predicted</th>"
        f"<th>sampled</th><th>verdict</th></tr>{''.join(rows)}</table>{verdict}"
        + (f"<ul>{notes}</ul>" if notes else "")
    )

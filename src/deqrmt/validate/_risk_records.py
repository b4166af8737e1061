r"""The records of :func:`deqrmt.risk`: one point of the learning curve, the curve, and their
table, JSON object, notebook HTML and figure (one home, so the command and the notebook say the
same numbers)."""

from __future__ import annotations

import dataclasses
import html
import math
from typing import Any

import numpy as np

__all__ = ["COLUMNS", "PEAK", "RiskCurve", "RiskPoint", "risk_figure"]

#: the two predictions, in the order of the table
COLUMNS = ("exact", "equivalent")
#: 1 − (1/m) tr(ΨQ̄ΨQ̄) below which a point is "at the interpolation peak" in the reasons
PEAK = 0.25


def _num(x: float | None) -> str | None:
    return None if x is None else repr(float(x))


@dataclasses.dataclass(frozen=True)
class RiskPoint:
    """The MSEs at one width m = ratio·n and ridge λ.

    Attributes:
      ratio, width, ridge: m/n as asked, m, λ.
      train, test: column → predicted training / test MSE (``"exact"``: Φ = G*;
        ``"equivalent"``: Φ = Ḡ).
      delta: column → the fixed point δ of the deterministic equivalent.
      denominator: column → 1 − (1/m) tr(ΨQ̄ΨQ̄), the variance terms' denominator: small
        near the interpolation peak, where the equivalent's finite-n corrections grow as its
        inverse.
      kernel_ridge: the test MSE of kernel ridge regression with G* at ridge λ·n/m (the limit
        m → ∞ of the same estimator).
      sampled_train, sampled_test: (mean, standard deviation) over the sampled DEQs, or None.
      seeds: the number of sampled DEQs (0 without Monte Carlo).
      tolerance: ``z·SE + rtol·|sampled test MSE|`` (None without Monte Carlo).
      passed: whether both predicted test MSEs are within ``tolerance`` of the sampled one
        (None without Monte Carlo).  reason: why not, or an empty string.
    """

    ratio: float
    width: int
    ridge: float
    train: dict[str, float]
    test: dict[str, float]
    delta: dict[str, float]
    denominator: dict[str, float]
    kernel_ridge: float
    sampled_train: tuple[float, float] | None
    sampled_test: tuple[float, float] | None
    seeds: int
    tolerance: float | None
    passed: bool | None
    reason: str

    @classmethod
    def make(
        cls,
        ratio: float,
        width: int,
        ridge: float,
        pred: dict[str, Any],
        kernel_ridge: float,
        sampled: np.ndarray | None,
        z: float,
        rtol: float,
    ) -> RiskPoint:
        """The point from the predictions (column → RiskValues) and the seeds × (train, test)
        sampled MSEs (or None), judged with tolerance ``z·SE + rtol·|sampled|``."""
        train = {k: float(v.train) for k, v in pred.items()}
        test = {k: float(v.test) for k, v in pred.items()}
        delta = {k: float(v.delta) for k, v in pred.items()}
        denom = {k: float(v.denominator) for k, v in pred.items()}
        if sampled is None:
            return cls(ratio, width, ridge, train, test, delta, denom, kernel_ridge, None, None,
                       0, None, None, "")  # fmt: skip
        s = sampled.shape[0]
        mean, sd = sampled.mean(axis=0), sampled.std(axis=0, ddof=1)
        tol = z * float(sd[1]) / math.sqrt(s) + rtol * abs(float(mean[1]))
        off = {k: abs(v - float(mean[1])) for k, v in test.items()}
        bad = [k for k in COLUMNS if not off[k] <= tol]
        reason = ""
        if bad:
            reason = f"m/n = {ratio:g}, λ = {ridge:g}: " + "; ".join(
                f"{k} test MSE {test[k]:.4g} vs sampled {float(mean[1]):.4g} "
                f"(|Δ| = {off[k]:.3g} > tolerance {tol:.3g})"
                for k in bad
            )
            if denom["exact"] < PEAK:
                reason += (
                    f" — at the interpolation peak (1 − tr(ΨQ̄ΨQ̄)/m = {denom['exact']:.3g}): "
                    "the equivalent's finite-n corrections grow as its inverse there, and the "
                    "sampled MSE has a heavy right tail that few seeds underestimate"
                )
        return cls(
            ratio, width, ridge, train, test, delta, denom, kernel_ridge,
            (float(mean[0]), float(sd[0])), (float(mean[1]), float(sd[1])), s, tol, not bad,
            reason,
        )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """One entry of ``points`` in ``deqrmt risk --json`` (numbers as decimal strings)."""
        out: dict[str, Any] = {
            "ratio": _num(self.ratio),
            "width": self.width,
            "ridge": _num(self.ridge),
            "predicted": {
                k: {
                    "train": _num(self.train[k]),
                    "test": _num(self.test[k]),
                    "delta": _num(self.delta[k]),
                    "denominator": _num(self.denominator[k]),
                }  # fmt: skip
                for k in COLUMNS
            },
            "kernel_ridge_test": _num(self.kernel_ridge),
            "sampled": None,
            "tolerance": _num(self.tolerance),
            "passed": self.passed,
        }
        if self.sampled_train is not None and self.sampled_test is not None:
            out["sampled"] = {
                "seeds": self.seeds,
                "train_mean": _num(self.sampled_train[0]),
                "train_std": _num(self.sampled_train[1]),
                "test_mean": _num(self.sampled_test[0]),
                "test_std": _num(self.sampled_test[1]),
            }
        return out


@dataclasses.dataclass(frozen=True)
class RiskCurve:
    """The learning curve of ridge regression on DEQ random features (:func:`deqrmt.risk`).

    Attributes:
      activation, expression: φ's name and formula.
      setting: the data (``kind``, ``preset``, ``n``, ``n_test``, ``p``, ``counts``, ``tau0``,
        ``center`` (c of φ_c), ``seed``).
      sigma_a2, sigma_b2: σ_a², σ_b² as exact strings.
      points: one :class:`RiskPoint` per (ratio, ridge), ratios outer.
      seeds: DEQs sampled per width (0 without Monte Carlo).
      z, rtol: the verdict's tolerance ``z·SE + rtol·|sampled|``.
      passed: the verdict (None without Monte Carlo); reasons: one line per failed point.
      notes: what is proven and what is not, and caveats.

    ``to_dict()`` is the ``deqrmt risk --json`` object (docs/json.md), ``table()`` the text
    table, ``figure()`` the curves against m/n (matplotlib), ``_repr_html_()`` the table for
    notebooks.
    """

    activation: str
    expression: str
    setting: dict[str, Any]
    sigma_a2: str
    sigma_b2: str
    points: tuple[RiskPoint, ...]
    seeds: int
    z: float
    rtol: float
    passed: bool | None
    reasons: tuple[str, ...]
    notes: tuple[str, ...]

    def curve(self, ridge: Any = None) -> tuple[RiskPoint, ...]:
        """The points at one ridge (the first when None), in the order of the ratios.

        Raises:
          InvalidArgument: ``ridge`` not a number, or not one of :meth:`ridges`.
        """
        from .._arguments import number, show
        from .._errors import InvalidArgument

        lam = self.points[0].ridge if ridge is None else float(number(ridge, "ridge"))
        if lam not in self.ridges():
            raise InvalidArgument(
                f"ridge={show(ridge)}: not a ridge of this curve; choose one of "
                f"{', '.join(f'{v:g}' for v in self.ridges())}."
            )
        return tuple(p for p in self.points if p.ridge == lam)

    def ridges(self) -> tuple[float, ...]:
        """The ridges λ of the points, in the order given."""
        return tuple(dict.fromkeys(p.ridge for p in self.points))

    def to_dict(self) -> dict[str, Any]:
        """The ``deqrmt risk --json`` object (docs/json.md): JSON-ready values only."""
        return {
            "activation": self.activation,
            "expression": self.expression,
            "data": dict(self.setting),
            "sigma_a2": self.sigma_a2,
            "sigma_b2": self.sigma_b2,
            "seeds": self.seeds,
            "tolerance": {"z": _num(self.z), "rtol": _num(self.rtol)},
            "points": [p.to_dict() for p in self.points],
            "passed": self.passed,
            "reasons": list(self.reasons),
            "notes": list(self.notes),
        }

    def _header(self) -> str:
        s = self.setting
        return (
            f"risk {self.activation}: φ(x) = {self.expression}, σ_a² = {self.sigma_a2}, "
            f"σ_b² = {self.sigma_b2}; Gaussian mixture ({s['preset']}), n = {s['n']}, "
            f"n_test = {s['n_test']}, p = {s['p']}"
        )

    def _rows(self) -> list[list[str]]:
        rows = []
        for p in self.points:
            row = [f"{p.ratio:g}", str(p.width), f"{p.ridge:g}"]
            row += [f"{p.test[k]:.4g}" for k in COLUMNS]
            if p.sampled_test is not None:
                row.append(f"{p.sampled_test[0]:.4g} ± {p.sampled_test[1]:.2g}")
                row.append("ok" if p.passed else "FAIL")
            row += [f"{p.train[k]:.3g}" for k in COLUMNS]
            if p.sampled_train is not None:
                row.append(f"{p.sampled_train[0]:.3g} ± {p.sampled_train[1]:.2g}")
            rows.append(row)
        return rows

    def _head(self) -> list[str]:
        mc = self.seeds > 0
        head = ["m/n", "m", "λ", "test G*", "test Ḡ"]
        head += [f"test sampled ({self.seeds})", "verdict"] if mc else []
        head += ["train G*", "train Ḡ"] + (["train sampled"] if mc else [])
        return head

    def _verdict(self) -> str:
        if self.passed is None:
            return ""
        tol = f"tolerance {self.z:g}·SE + {self.rtol:g}·|sampled| on the test MSE"
        if self.passed:
            return f"PASSED: G* and Ḡ predictions within the {tol} at every point"
        return "REJECTED: " + "; ".join(self.reasons) + f" ({tol})"

    def table(self) -> str:
        """The text table ``deqrmt risk`` prints."""
        head, rows = self._head(), self._rows()
        widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
        lines = [self._header(), ""]
        lines.append("  ".join(h.rjust(w) for h, w in zip(head, widths, strict=True)))
        for r in rows:
            lines.append("  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)))
        lines += [""] + [f"note: {t}" for t in self.notes]
        v = self._verdict()
        return "\n".join(lines + ([v] if v else []))

    def __str__(self) -> str:
        return self.table()

    def _repr_html_(self) -> str:
        cells = "".join(f"<th>{html.escape(h)}</th>" for h in self._head())
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>"
            for r in self._rows()
        )
        notes = "".join(f"<li>{html.escape(t)}</li>" for t in self.notes)
        v = self._verdict()
        return (
            f"<p>{html.escape(self._header())}</p><table><tr>{cells}</tr>{body}</table>"
            f"<ul>{notes}</ul>" + (f"<p><b>{html.escape(v)}</b></p>" if v else "")
        )

    def figure(self) -> Any:
        """The test (left) and training (right) MSE against m/n, one line per column, the
        sampled mean ± standard deviation as error bars, per ridge (needs matplotlib); the
        pyplot state is left alone."""
        return risk_figure(self)


def risk_figure(curve: RiskCurve) -> Any:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 4), layout="constrained")
    axes = fig.subplots(1, 2)
    styles = {
        "exact": ("C0", "-", "predicted from G*"),
        "equivalent": ("C3", "--", "predicted from Ḡ"),
    }
    for j, lam in enumerate(curve.ridges()):
        pts = curve.curve(lam)
        x = [p.ratio for p in pts]
        tag = f" (λ = {lam:g})" if len(curve.ridges()) > 1 else ""
        for ax, what in zip(axes, ("test", "train"), strict=True):
            for k in COLUMNS:
                color, ls, label = styles[k]
                vals = [getattr(p, what)[k] for p in pts]
                ax.plot(x, vals, ls, color=color, alpha=1 - 0.25 * j, label=label + tag)
            sampled = [getattr(p, f"sampled_{what}") for p in pts]
            if all(s is not None for s in sampled):
                ax.errorbar(x, [s[0] for s in sampled], yerr=[s[1] for s in sampled],  # type: ignore[index]
                            fmt="o", color="k", ms=4, capsize=2,
                            label=f"sampled DEQs ({curve.seeds} seeds){tag}")  # fmt: skip
    for ax, what in zip(axes, ("test", "train"), strict=True):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.axvline(1.0, color="0.7", lw=0.8)
        ax.set_xlabel("m/n (width / training points)")
        ax.set_ylabel(f"{what} MSE")
        ax.legend(fontsize=7)
    fig.suptitle(f"ridge regression on DEQ random features: {curve.activation}, n = "
                 f"{curve.setting['n']}", fontsize=10)  # fmt: skip
    return fig

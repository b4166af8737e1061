"""The records of ``deqrmt check``: one :class:`CheckItem` per line, one :class:`CheckReport`."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import ItemsView, Iterator, Mapping
from typing import Any

import mpmath

from .._errors import InvalidArgument
from .._text import escape_controls
from ..numeric import AttributeHints, DEQProblem, ProblemFields
from ..numeric import html_text as _h

__all__ = [
    "PASS",
    "FAIL",
    "NA",
    "CheckItem",
    "CheckItems",
    "CheckReport",
    "ASSUMPTION_KEYS",
    "number_text",
]

PASS, FAIL, NA = "PASS", "FAIL", "N/A"
#: the items of Assumption 1 (ICML 2024); the contraction items and the note follow them
ASSUMPTION_KEYS = ("lipschitz", "moments", "centred", "variance_lipschitz", "variance_curvature")
#: the problem's fields a report's JSON carries, in this order
_REPORT_INPUTS = ("activation", "expression", "sigma_a2", "sigma_b2", "tau0")


def number_text(v: Any, digits: int = 6) -> str:
    """A number rounded to ``digits`` significant digits (mpmath's ``nstr``)."""
    return str(mpmath.nstr(v, digits))


@dataclasses.dataclass(frozen=True)
class CheckItem:
    """One line of the report.

    Attributes:
      key: stable machine name (``"lipschitz"``, ``"digits"``, …).
      title: what is checked, as printed.
      status: ``PASS``, ``FAIL`` or ``N/A`` (not applicable, with the reason).
      numbers: the numbers behind the verdict, as text (JSON-ready).
      explanation: how it was decided, or why it fails / does not apply.
      group: ``"assumption"`` (Assumption 1 and the contraction) or ``"consistency"``.
    """

    key: str
    title: str
    status: str
    numbers: Mapping[str, str]
    explanation: str
    group: str = "consistency"

    def __post_init__(self) -> None:
        if self.status not in (PASS, FAIL, NA):
            raise InvalidArgument(f"status={self.status!r}: expected PASS, FAIL or N/A.")

    @classmethod
    def verdict(
        cls, key: str, title: str, numbers: Mapping[str, str], failure: str, passed: str
    ) -> CheckItem:
        """FAIL explained by ``failure`` when it is not empty, else PASS explained by ``passed``."""
        if failure:
            return cls(key, title, FAIL, numbers, failure)
        return cls(key, title, PASS, numbers, passed)

    @property
    def passed(self) -> bool:
        """True unless FAIL (N/A does not fail)."""
        return self.status != FAIL

    def line(self) -> str:
        nums = ", ".join(f"{k} = {v}" for k, v in self.numbers.items())
        head = f"{self.status:<4}  {self.title}"
        line = f"{head}: {nums} — {self.explanation}" if nums else f"{head} — {self.explanation}"
        return escape_controls(line, keep="")

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "title": self.title,
            "status": self.status,
            "group": self.group,
            "numbers": dict(self.numbers),
            "explanation": self.explanation,
        }


class CheckItems(tuple[CheckItem, ...]):
    """A report's lines, in order: a tuple (``report.items[0]``), and, called, the Mapping's
    items view (``report.items()`` → (key, CheckItem) pairs), so both readings work."""

    __slots__ = ()

    def __call__(self) -> ItemsView[str, CheckItem]:
        return ItemsView({item.key: item for item in self})


@dataclasses.dataclass(frozen=True)
class CheckReport(AttributeHints, ProblemFields, Mapping[str, CheckItem]):
    """Every item :func:`deqrmt.check.check_activation` checked, for one activation and setting.

    A mapping from item key (``"lipschitz"``, ``"contraction_ck"``, ``"stein"``, …) to its
    ``CheckItem`` (``status`` PASS, FAIL or N/A, ``numbers``, ``explanation``); ``passed`` is the
    CLI's exit status 0, ``assumption_holds`` the paper's Assumption 1.  A read-only
    ``collections.abc.Mapping``: ``keys()``, ``items()``, ``len``, ``dict(report)``;
    ``to_pandas()`` is the report as a table.

    Attributes:
      problem: the activation and setting checked (at the lower precision of the digit pair).
      items: the report's lines, in order.

    Example:
      >>> from deqrmt import check_activation
      >>> report = check_activation("tanh", sigma_a2="0.2")
      >>> report.assumption_holds, report["contraction_ck"].status
      (True, 'PASS')
    """

    problem: DEQProblem
    # field() with no default: the Mapping method ``items`` must not become the default; the
    # tuple is a CheckItems, so ``report.items`` (the lines) and ``report.items()`` both work
    items: tuple[CheckItem, ...] = dataclasses.field()  # type: ignore[assignment]

    def __post_init__(self) -> None:
        object.__setattr__(self, "items", CheckItems(self.items))

    @property
    def passed(self) -> bool:
        """Everything applicable passed (the CLI's exit status 0)."""
        return all(item.passed for item in self.items)

    @property
    def assumption_holds(self) -> bool:
        """Assumption 1 of the paper holds (its items all PASS)."""
        return all(self[k].status == PASS for k in ASSUMPTION_KEYS if k in self.keys())

    def __iter__(self) -> Iterator[str]:
        return (item.key for item in self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, key: str) -> CheckItem:
        for item in self.items:
            if item.key == key:
                return item
        raise KeyError(
            f"{escape_controls(repr(key), keep='')}: no such item; items are {', '.join(self)}"
        )

    def to_pandas(self) -> Any:
        """A :class:`pandas.DataFrame`, one row per item (index ``key``; columns ``status``,
        ``group``, ``title``, ``explanation`` and the item's numbers as text).  Needs pandas."""
        from .._io import pandas

        pd = pandas("CheckReport.to_pandas()")
        rows = [{k: v for k, v in item.to_dict().items() if k != "numbers"} for item in self.items]
        for row, item in zip(rows, self.items, strict=True):
            row["numbers"] = ", ".join(f"{k} = {v}" for k, v in item.numbers.items())
        return pd.DataFrame(rows).set_index("key")

    def failures(self) -> tuple[CheckItem, ...]:
        return tuple(item for item in self.items if item.status == FAIL)

    def lines(self) -> list[str]:
        """The report as text, one line per item, headed by the activation and setting."""
        head = (
            f"deqrmt check {self.activation.name}: φ(x) = {self.activation.expr}, "
            f"σ_a² = {self.sigma_a2}, σ_b² = {self.sigma_b2}, τ0 = {self.tau0}"
        )
        out = [head]
        for group, label in (("assumption", "Assumption 1 (ICML 2024) and the contraction used"),
                             ("consistency", "Consistency of the engine")):  # fmt: skip
            out.append(f"{label}:")
            out += ["  " + item.line() for item in self.items if item.group == group]
        n_fail = len(self.failures())
        out.append("all applicable checks pass" if not n_fail else f"{n_fail} check(s) FAIL")
        # user text (the activation's name, an engine message quoting it) as repr(str) shows
        # control and bidi characters: printing a report cannot drive the terminal
        return [escape_controls(line, keep="") for line in out]

    def __repr__(self) -> str:
        from ..numeric import short

        return short(self.lines(), "every item: .lines() or .to_dict()")

    def _repr_html_(self) -> str:
        head, *_ = self.lines()
        cells = "".join(
            f"<tr><td>{_h(i.status)}</td><td><code>{_h(i.key)}</code></td><td>{_h(i.title)}</td>"
            f"<td>{_h(i.explanation)}</td></tr>"
            for i in self.items
        )
        return (
            f"<p><b>{_h(head)}</b></p><table><tr><th>status</th><th>key</th><th>check</th>"
            f"<th>why</th></tr>{cells}</table>"
        )

    def to_dict(self) -> dict[str, Any]:
        # The inputs as the problem record writes them; the report has always carried only
        # the activation and the setting (not dps, centring, trainable parameters).
        inputs = self.problem.to_dict()
        return {
            **{k: inputs[k] for k in _REPORT_INPUTS},
            "passed": self.passed,
            "assumption_holds": self.assumption_holds,
            "items": [item.to_dict() for item in self.items],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)

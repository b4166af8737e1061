"""Results as mappings: ``dict(c)``, ``c.keys()``, ``c.items()``, ``c.to_dict(float)``.

A result record (:class:`~deqrmt.numeric.DEQCoefficients`, :class:`~deqrmt.numeric.SphereCoefficients`,
a layer of :class:`~deqrmt.numeric.ExplicitCoefficients`) is a read-only
``collections.abc.Mapping`` from a coefficient's name to its :class:`Verified`.

Its ``values`` has always been an attribute holding that mapping (``c.values["alpha_1"]``), and a
Mapping's ``values`` is a method (``c.values()``).  Both work: ``values`` is a
:class:`ValueTable`, a read-only mapping that, called, returns its values view.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import ItemsView, Iterator, KeysView, Mapping, ValuesView
from typing import Any

from .._errors import InvalidArgument
from .._io import pandas
from ._verified import Verified

__all__ = [
    "AttributeHints",
    "ValueTable",
    "VerifiedMapping",
    "attribute_hint",
    "convert",
    "pandas",
    "verified_property",
]


def _norm(name: str) -> str:
    return name.replace("_", "").lower()


def attribute_hint(obj: object, name: str) -> str:
    """``'DEQCoefficients' object has no attribute 'alpha1'; did you mean 'alpha_1'?``: the
    nearest public attribute (spelled without underscores or case first, then by difflib),
    else the nearest key of a Mapping record (``c['E_phi_prime']``)."""
    cls = type(obj)
    names = sorted(
        {n for n in dir(cls) if not n.startswith("_")}
        | ({f.name for f in dataclasses.fields(obj)} if dataclasses.is_dataclass(obj) else set())
    )
    keys: list[str] = []
    if isinstance(obj, Mapping):
        try:
            keys = [k for k in obj.keys() if isinstance(k, str)]  # noqa: SIM118
        except Exception:  # noqa: BLE001 - a half-built record: no keys to offer
            keys = []
        more = vars(obj).get("moments")  # the DEQ's c["E_phi_prime"], not among its keys()
        if isinstance(more, Mapping):
            keys += [k for k in more if isinstance(k, str)]
    out = f"{cls.__name__!r} object has no attribute {name!r}"
    same = [n for n in names if _norm(n) == _norm(name)]
    close = same or difflib.get_close_matches(name, names, n=1, cutoff=0.75)
    if close:
        return f"{out}; did you mean {close[0]!r}?"
    key = [k for k in keys if _norm(k) == _norm(name)] or difflib.get_close_matches(
        name, keys, n=1, cutoff=0.75
    )
    if key:
        return f"{out}; did you mean [{key[0]!r}]?"
    if keys:
        return f"{out}; its keys: {', '.join(keys)}"
    return out


class AttributeHints:
    """A result record whose unknown attribute names the nearest one (``c.alpha1`` → did you
    mean 'alpha_1'?).  Names with a leading underscore stay plain AttributeErrors: copy,
    pickle and IPython's ``_repr_*_`` probes look those up."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        raise AttributeError(attribute_hint(self, name))


class ValueTable(Mapping[str, Verified]):
    """A read-only name → :class:`Verified` mapping, in its record's order.

    ``t["alpha_1"]``, ``t.keys()``, ``t.items()`` as for a dict; ``t()`` (and ``t.values()``)
    return the values view, so that a record's ``c.values()`` reads as a Mapping's would while
    ``c.values["alpha_1"]`` keeps working.
    """

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, Verified]) -> None:
        self._data = dict(data)

    def __getitem__(self, key: str) -> Verified:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __call__(self) -> ValuesView[Verified]:
        return ValuesView(self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return dict(self.items()) == dict(other.items())
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # a mapping, like dict

    def __repr__(self) -> str:
        return repr(self._data)

    def to_dict(self, kind: object = float) -> dict[str, float | str]:
        """``{name: kind(value)}``: ``kind`` is ``float`` (default) or ``str`` (the digits)."""
        return {k: convert(v, kind) for k, v in self._data.items()}


def convert(v: Verified, kind: object) -> float | str:
    """A Verified as ``float`` or as ``str`` (its verified digits)."""
    if kind is float:
        return float(v)
    if kind is str:
        return v.text
    raise InvalidArgument(
        f"kind={kind!r}: expected float (plain floats) or str (the verified digits); call "
        "to_dict() without it for the JSON-ready record."
    )


class VerifiedMapping(Mapping[str, Verified]):
    """The Mapping half of a result record: keys are the names in its ``values`` table.

    A subclass holds ``values`` (a :class:`ValueTable`) and may look up more keys in
    ``__getitem__`` (the DEQ's moments) than it lists: iteration, ``len`` and ``dict(c)`` cover
    the coefficients, as the record's table prints them.
    """

    values: Any  # a ValueTable: ``c.values["alpha_1"]`` and ``c.values()`` (see the module)

    def __iter__(self) -> Iterator[str]:
        return iter(self.values)

    def __len__(self) -> int:
        return len(self.values)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key in self.values

    def keys(self) -> KeysView[str]:
        return KeysView(self)

    def items(self) -> ItemsView[str, Verified]:
        return ItemsView(self)

    def get(self, key: str, default: Any = None) -> Any:
        return self.values[key] if key in self else default

    def _table(self) -> list[dict[str, str | float | int | bool | None]]:
        """One row per coefficient: the pandas table's columns."""
        return [
            {
                "key": k,
                "text": v.text,
                "value": float(v),
                "digits": v.digits,
                "certified": v.certified,
                "radius": float(v.radius) if v.radius is not None else None,
            }
            for k, v in self.values.items()
        ]

    def to_pandas(self) -> Any:
        """A :class:`pandas.DataFrame`, one row per coefficient (index: its name) with the
        columns ``text`` (verified digits), ``value`` (float), ``digits``, ``certified``,
        ``radius`` (float, None unless proven).  Needs pandas (``MissingExtra`` otherwise)."""
        pd = pandas(f"{type(self).__name__}.to_pandas()")
        return pd.DataFrame(self._table()).set_index("key")


def verified_property(key: str) -> property:
    """A record's attribute for one of its keys (``c.alpha_1`` is ``c["alpha_1"]``)."""

    def get(self: VerifiedMapping) -> Verified:
        return self[key]

    get.__doc__ = f"``{key}`` with its verified digits (a :class:`Verified`)."
    return property(get)

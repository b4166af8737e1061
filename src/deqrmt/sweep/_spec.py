r"""SPEC.toml: a grid of tasks, validated, expanded into a deterministic list of keyed tasks.

A spec is flat TOML.  Top-level keys apply to every kind that uses them; a table named after a
kind (``[validate]``, ``[design]``, …) overrides them for that kind only::

    kind = ["coefficients", "validate"]     # or one string
    activations = ["tanh", "erf"]
    sigma_a2 = "0.05:0.45:9"                # start:stop:count (inclusive), or a list
    dps = 30

    [validate]
    sigma_a2 = ["0.1", "0.25", "0.4"]
    n = [64, 128, 256]
    m = [256]
    seeds = 2                               # a count (0, 1) or a list of seeds

Which key applies to which kind:

================  ===============================================================
key               kinds
================  ===============================================================
activations       all (required)
sigma_a2          all (required); exact decimals: "0.2", 0.2, "1/5" or a range
sigma_b2          all; default 1 − σ_a²
dps, trainable    all (dps defaults: 30; 20 for exact and validate)
tau0              coefficients, design, certify (exact/validate take τ0 from the data)
n, seeds, ratio,  exact, validate (the data: p = round(ratio·n) from ``preset``;
preset            ``seeds = 3`` means seeds 0, 1, 2, a list names them)
m, draws, dtype   validate (the Monte Carlo DEQs)
family, layers,   design
kernel, starts,
seed
================  ===============================================================

Every task is keyed by the SHA-256 of its canonical inputs (sorted-key JSON, numbers as exact
decimal strings) together with the package version, so a key names one computation of one
deqrmt release: re-running a spec finds its finished tasks by key, and a new release recomputes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

from .. import __version__
from .._errors import DeqrmtError, InvalidArgument, SpecError

__all__ = ["KINDS", "SweepSpec", "Task", "load_spec", "parse_spec", "task_key"]

#: Task kinds, in the order a spec's grid lists them when ``kind`` is a list.
KINDS = ("coefficients", "exact", "validate", "design", "certify")
#: Kinds that run torch (exact infinite-width kernels, Monte Carlo DEQs): the GPU candidates.
TORCH_KINDS = frozenset({"exact", "validate"})

_ALL = frozenset(KINDS)
_COEF = frozenset({"coefficients", "design", "certify"})
_DATA = frozenset({"exact", "validate"})
#: key → kinds that use it
_APPLIES: Mapping[str, frozenset[str]] = {
    "activations": _ALL,
    "sigma_a2": _ALL,
    "sigma_b2": _ALL,
    "dps": _ALL,
    "trainable": _ALL,
    "tau0": _COEF,
    "n": _DATA,
    "seeds": _DATA,
    "ratio": _DATA,
    "preset": _DATA,
    "m": frozenset({"validate"}),
    "draws": frozenset({"validate"}),
    "dtype": frozenset({"validate"}),
    "family": frozenset({"design"}),
    "layers": frozenset({"design"}),
    "kernel": frozenset({"design"}),
    "starts": frozenset({"design"}),
    "seed": frozenset({"design"}),
}
_PRESETS = ("paper", "zero-means")  # = deqrmt.validate._sweep.PRESETS (that module imports torch)


@dataclasses.dataclass(frozen=True)
class Task:
    """One computation of a sweep.

    Attributes:
      key: SHA-256 (hex) of the canonical inputs and the package version (:func:`task_key`).
      kind: one of :data:`KINDS`.
      inputs: the canonical inputs (JSON-ready; numbers as exact decimal strings).
    """

    key: str
    kind: str
    inputs: Mapping[str, Any]

    @property
    def label(self) -> str:
        """Short human label, e.g. ``validate tanh σ_a²=0.2 n=128 seed=1``."""
        i = self.inputs
        parts = [self.kind, str(i["activation"]), f"σ_a²={i['sigma_a2']}"]
        for k in ("n", "m", "seed", "tau0", "family"):
            if k in i and i[k] is not None:
                parts.append(f"{k}={i[k]}")
        return " ".join(parts)


def task_key(inputs: Mapping[str, Any], version: str = __version__) -> str:
    """SHA-256 of the canonical JSON of ``inputs`` and ``version`` (sorted keys, no spaces)."""
    text = json.dumps(
        {"inputs": inputs, "version": version},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=True,
    )
    return hashlib.sha256(text.encode()).hexdigest()


@dataclasses.dataclass(frozen=True)
class SweepSpec:
    """A validated spec and its task list.

    Attributes:
      kinds: the kinds of the grid, in spec order.
      tasks: every task, in a deterministic order (kind, activation, σ_a², σ_b², then the
        kind's own axes), duplicates (same key) removed.
      source: the SPEC.toml path, or None for a spec parsed from text.
      text_sha256: SHA-256 of the spec's text (recorded with each run in the store).
    """

    kinds: tuple[str, ...]
    tasks: tuple[Task, ...]
    source: Path | None = None
    text_sha256: str = ""

    @property
    def keys(self) -> frozenset[str]:
        return frozenset(t.key for t in self.tasks)

    def default_store(self) -> Path:
        """``<spec stem>.sqlite`` next to the spec."""
        if self.source is None:
            raise SpecError("a spec parsed from text has no default store; pass store=PATH.")
        return self.source.with_suffix(".sqlite")


# ---------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------


def _where(table: str, key: str) -> str:
    return f"{key}" if table == "" else f"[{table}].{key}"


def _exact(value: Any, where: str) -> Fraction:
    """An exact number (the engine's one reader: a float is its shortest repr, 0.1 is 1/10)."""
    from ..numeric._problem import exact_number

    try:
        r = exact_number(value, where)
    except InvalidArgument as e:
        raise SpecError(str(e)) from None
    return Fraction(int(r.p), int(r.q))


def _text(x: Fraction) -> str:
    from ..numeric._problem import exact_text

    return exact_text(x)


def _numbers(value: Any, where: str) -> list[Fraction]:
    """A list, one number, or ``"start:stop:count"`` (count points, both ends included)."""
    from ..numeric._problem import number_grid

    try:
        return [Fraction(int(r.p), int(r.q)) for r in number_grid(value, where)]
    except InvalidArgument as e:
        raise SpecError(str(e)) from None


def _ints(value: Any, where: str, minimum: int) -> list[int]:
    items = value if isinstance(value, list) else [value]
    if not items:
        raise SpecError(f"{where} = []: give at least one value.")
    for v in items:
        if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
            raise SpecError(f"{where} = {value!r}: expected integers ≥ {minimum}.")
    return list(items)


def _int(value: Any, where: str, minimum: int, maximum: int | None = None) -> int:
    bad = isinstance(value, bool) or not isinstance(value, int) or value < minimum
    if bad or (maximum is not None and value > maximum):
        bound = f"in [{minimum}, {maximum}]" if maximum is not None else f"≥ {minimum}"
        raise SpecError(f"{where} = {value!r}: expected an integer {bound}.")
    return int(value)


def _choice(value: Any, where: str, choices: Sequence[str]) -> str:
    if value not in choices:
        raise SpecError(f"{where} = {value!r}: choose one of {', '.join(choices)}.")
    return str(value)


def _strings(value: Any, where: str) -> list[str]:
    items = value if isinstance(value, list) else [value]
    if not items or any(not isinstance(v, str) or not v.strip() for v in items):
        raise SpecError(f"{where} = {value!r}: expected a non-empty string or list of strings.")
    return [v.strip() for v in items]


def _unique(items: list[Any]) -> list[Any]:
    return list(dict.fromkeys(items))


# ---------------------------------------------------------------------------
# One kind's grid
# ---------------------------------------------------------------------------


def _known_names(
    table: str, value: Any, key: str, missing: str, lookup: Callable[[str], Any], what: str = ""
) -> list[str]:
    """The names under ``key`` (a string or a list), each one ``lookup`` accepts, in order."""
    if value is None:
        raise SpecError(f"{_where(table, key)} is missing: {missing}")
    names = _unique(_strings(value, _where(table, key)))
    for name in names:
        try:
            lookup(name)
        except DeqrmtError as e:
            raise SpecError(f"{_where(table, key)}: {name!r}{what}: {e}") from None
    return names


def _settings(raw: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """The validated axes of ``kind``: top-level keys overridden by the ``[kind]`` table."""
    merged: dict[str, tuple[str, Any]] = {}
    for k, v in raw.items():
        if k in _APPLIES and kind in _APPLIES[k]:
            merged[k] = ("", v)
    for k, v in raw.get(kind, {}).items():
        merged[k] = (kind, v)

    def get(key: str, default: Any = None) -> tuple[str, Any]:
        return merged.get(key, ("", default))

    out: dict[str, Any] = {}
    from ..symbolic import get_activation

    t, v = get("activations")
    out["activations"] = _known_names(
        t, v, "activations", "list the activations to sweep.", get_activation,
        " is not an activation",
    )  # fmt: skip

    t, v = get("sigma_a2")
    if v is None:
        raise SpecError(f"{_where(t, 'sigma_a2')} is missing: give values or start:stop:count.")
    sa2 = _unique(_numbers(v, _where(t, "sigma_a2")))
    if any(x <= 0 for x in sa2):
        raise SpecError(f"{_where(t, 'sigma_a2')} = {v!r}: every σ_a² must be > 0.")
    out["sigma_a2"] = sa2

    t, v = get("sigma_b2")
    if v is None:
        if any(x >= 1 for x in sa2):
            raise SpecError(
                f"{_where(t, 'sigma_a2')} has σ_a² ≥ 1, so the default σ_b² = 1 − σ_a² is not "
                "positive; give sigma_b2."
            )
        out["sigma_b2"] = [None]
    else:
        sb2 = _unique(_numbers(v, _where(t, "sigma_b2")))
        if any(x <= 0 for x in sb2):
            raise SpecError(f"{_where(t, 'sigma_b2')} = {v!r}: every σ_b² must be > 0.")
        out["sigma_b2"] = sb2

    t, v = get("dps", 20 if kind in _DATA else 30)
    out["dps"] = _int(v, _where(t, "dps"), 5, 1000)

    t, v = get("trainable", ["a", "A"])
    names = _strings(v, _where(t, "trainable"))
    if not set(names) <= {"a", "A", "B"}:
        raise SpecError(f'{_where(t, "trainable")} = {v!r}: a non-empty subset of "a", "A", "B".')
    out["trainable"] = sorted(set(names), key="aAB".index)

    if kind in _COEF:
        t, v = get("tau0", 1)
        tau0 = _unique(_numbers(v, _where(t, "tau0")))
        if any(x <= 0 for x in tau0):
            raise SpecError(f"{_where(t, 'tau0')} = {v!r}: every τ0 must be > 0.")
        out["tau0"] = tau0

    if kind in _DATA:
        for x in sa2 + [b for b in out["sigma_b2"] if b is not None]:
            if "/" in _text(x):
                raise SpecError(
                    f"σ² = {_text(x)} has no finite decimal form, which {kind} tasks need; "
                    "choose values (or a range step) that are finite decimals."
                )
        t, v = get("ratio", 0.8)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0 < v < math.inf):
            raise SpecError(f"{_where(t, 'ratio')} = {v!r}: expected a positive number (p/n).")
        out["ratio"] = float(v)
        t, v = get("n")
        if v is None:
            raise SpecError(f"{_where(t, 'n')} is missing: {kind} tasks need sample sizes.")
        ns = _unique(_ints(v, _where(t, "n"), 8))
        for n in ns:
            if round(out["ratio"] * n) < 16:
                raise SpecError(
                    f"{_where(t, 'n')}: n = {n} gives p = round(ratio·n) = "
                    f"{round(out['ratio'] * n)} < 16; use a larger n."
                )
        out["n"] = ns
        t, v = get("seeds", 1)
        if isinstance(v, int) and not isinstance(v, bool):
            out["seeds"] = list(range(_int(v, _where(t, "seeds"), 1)))
        else:
            out["seeds"] = _unique(_ints(v, _where(t, "seeds"), 0))
        t, v = get("preset", "paper")
        out["preset"] = _choice(v, _where(t, "preset"), _PRESETS)

    if kind == "validate":
        t, v = get("m", 2048)
        out["m"] = _unique(_ints(v, _where(t, "m"), 1))
        t, v = get("draws", 1)
        out["draws"] = _int(v, _where(t, "draws"), 1)
        t, v = get("dtype", "float64")
        out["dtype"] = _choice(v, _where(t, "dtype"), ("float64", "float32"))

    if kind == "design":
        from ..symbolic._family import get_family

        t, v = get("family")
        out["family"] = _known_names(
            t, v, "family", "design tasks need an ENN family.", get_family
        )
        t, v = get("layers")
        out["layers"] = None if v is None else _int(v, _where(t, "layers"), 1)
        t, v = get("kernel", "ck")
        out["kernel"] = _choice(v, _where(t, "kernel"), ("ck", "ntk"))
        t, v = get("starts", 24)
        out["starts"] = _int(v, _where(t, "starts"), 1)
        t, v = get("seed", 0)
        out["seed"] = _int(v, _where(t, "seed"), 0)
    return out


def _grid(kind: str, s: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """The inputs of each task of ``kind``, in order; numbers as canonical exact text."""
    for act in s["activations"]:
        for sa2 in s["sigma_a2"]:
            for sb2 in s["sigma_b2"]:
                base = {
                    "kind": kind,
                    "activation": act,
                    "sigma_a2": _text(sa2),
                    "sigma_b2": None if sb2 is None else _text(sb2),
                    "dps": s["dps"],
                    "trainable": list(s["trainable"]),
                }
                if kind in ("coefficients", "certify"):
                    for t0 in s["tau0"]:
                        yield {**base, "tau0": _text(t0)}
                elif kind == "design":
                    for t0 in s["tau0"]:
                        for fam in s["family"]:
                            yield {
                                **base,
                                "tau0": _text(t0),
                                "family": fam,
                                "layers": s["layers"],
                                "kernel": s["kernel"],
                                "starts": s["starts"],
                                "seed": s["seed"],
                            }
                else:
                    data = {"ratio": s["ratio"], "preset": s["preset"]}
                    for n in s["n"]:
                        ms = s["m"] if kind == "validate" else [None]
                        for m in ms:
                            for seed in s["seeds"]:
                                d = {**base, **data, "n": n, "seed": seed}
                                if kind == "validate":
                                    d.update(m=m, draws=s["draws"], dtype=s["dtype"])
                                yield d


# ---------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------


def parse_spec(text: str, *, source: str | os.PathLike[str] | None = None) -> SweepSpec:
    """Validate a SPEC.toml text and expand its task list.

    Raises:
      SpecError: malformed TOML, an unknown key or kind, a key that applies to none of the
        spec's kinds, or a value out of range; the message names the key and the value.

    Example:
      >>> spec = parse_spec('kind = "coefficients"\\nactivations = ["tanh"]\\nsigma_a2 = "0.1:0.3:3"')
      >>> [t.inputs["sigma_a2"] for t in spec.tasks]
      ['0.1', '0.2', '0.3']
    """
    name = str(source) if source is not None else "<spec>"
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SpecError(f"{name} is not valid TOML: {e}.") from None
    v = raw.get("kind")
    if v is None:
        raise SpecError(f"{name}: the key kind is missing; choose from {', '.join(KINDS)}.")
    kinds = _unique(_strings(v, "kind"))
    for k in kinds:
        _choice(k, "kind", KINDS)
    for key, value in raw.items():
        if key == "kind":
            continue
        if key in _ALL:
            if not isinstance(value, dict):
                raise SpecError(f"{name}: {key} must be a table [{key}].")
            if key not in kinds:
                raise SpecError(
                    f"{name}: table [{key}] given but kind = {kinds!r} does not include {key!r}."
                )
            for sub in value:
                if sub not in _APPLIES or key not in _APPLIES[sub]:
                    usable = sorted(k for k, ks in _APPLIES.items() if key in ks)
                    raise SpecError(
                        f"{name}: [{key}].{sub} is not a {key} setting; allowed: {', '.join(usable)}."
                    )
            continue
        if key not in _APPLIES:
            raise SpecError(
                f"{name}: unknown key {key!r}; allowed: kind, {', '.join(sorted(_APPLIES))} and "
                f"tables named after a kind ({', '.join(KINDS)})."
            )
        if not _APPLIES[key] & set(kinds):
            raise SpecError(
                f"{name}: the key {key} applies to {', '.join(sorted(_APPLIES[key]))}, not to "
                f"kind = {kinds!r}."
            )
    tasks: dict[str, Task] = {}
    for kind in kinds:
        for inputs in _grid(kind, _settings(raw, kind)):
            key = task_key(inputs)
            tasks.setdefault(key, Task(key, kind, inputs))
    return SweepSpec(
        kinds=tuple(kinds),
        tasks=tuple(tasks.values()),
        source=Path(source) if source is not None else None,
        text_sha256=hashlib.sha256(text.encode()).hexdigest(),
    )


def load_spec(path: str | os.PathLike[str]) -> SweepSpec:
    """Read and validate ``path`` (see :func:`parse_spec`)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise SpecError(f"cannot read the sweep spec {str(p)!r}: {e.strerror}.") from None
    except UnicodeDecodeError:
        raise SpecError(f"the sweep spec {str(p)!r} is not UTF-8 text.") from None
    return parse_spec(text, source=p)

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
import os
from collections.abc import Callable, Iterator, Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

from .._errors import BudgetExceeded, DeqrmtError, SpecError
from .._version import __version__
from . import _limits
from ._limits import show
from ._spec_values import (
    choice,
    exact_int,
    in_range,
    ints,
    numbers,
    plain,
    strings,
    text,
    unique,
    where,
)
from ._toml import parse_toml, read_spec

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
# One kind's grid
# ---------------------------------------------------------------------------


def _known_names(
    table: str, value: Any, key: str, missing: str, lookup: Callable[[str], Any], what: str = ""
) -> list[str]:
    """The names under ``key`` (a string or a list), each one ``lookup`` accepts, in order: the
    same parser and rules as the command line's ACT and ``--family``."""
    if value is None:
        raise SpecError(f"{where(table, key)} is missing: {missing}")
    names = unique(strings(value, where(table, key)))
    for name in names:
        try:
            lookup(name)
        except DeqrmtError as e:
            raise SpecError(f"{where(table, key)}: {show(name)}{what}: {e}") from None
    return names


#: ``get(key, default)`` of one kind's settings: (the table it came from, "" for the top level;
#: the value as TOML gave it, or ``default``).
_Lookup = Callable[..., tuple[str, Any]]


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

    out = _problem_axes(get, kind)
    if kind in _COEF:
        t, v = get("tau0", 1)
        tau0 = unique(numbers(v, where(t, "tau0")))
        in_range(tau0, "tau0", where(t, "tau0"), "τ0")
        out["tau0"] = tau0
    if kind in _DATA:
        out.update(_data_axes(get, kind, out["sigma_a2"], out["sigma_b2"]))
    if kind == "validate":
        out.update(_network_axes(get))
    if kind == "design":
        out.update(_design_axes(get))
    return out


def _problem_axes(get: _Lookup, kind: str) -> dict[str, Any]:
    """The axes every kind has: activations, σ_a², σ_b² (None: 1 − σ_a²), dps, trainable."""
    from ..symbolic import get_activation

    out: dict[str, Any] = {}
    t, v = get("activations")
    out["activations"] = _known_names(
        t, v, "activations", "list the activations to sweep.", get_activation,
        " is not an activation",
    )  # fmt: skip

    t, v = get("sigma_a2")
    if v is None:
        raise SpecError(f"{where(t, 'sigma_a2')} is missing: give values or start:stop:count.")
    sa2 = unique(numbers(v, where(t, "sigma_a2")))
    if any(x <= 0 for x in sa2):
        raise SpecError(f"{where(t, 'sigma_a2')} = {show(v)}: every σ_a² must be > 0.")
    in_range(sa2, "sigma_a2", where(t, "sigma_a2"), "σ_a²")
    out["sigma_a2"] = sa2

    t, v = get("sigma_b2")
    if v is None:
        if any(x >= 1 for x in sa2):
            raise SpecError(
                f"{where(t, 'sigma_a2')} has σ_a² ≥ 1, so the default σ_b² = 1 − σ_a² is not "
                "positive; give sigma_b2."
            )
        out["sigma_b2"] = [None]
    else:
        sb2 = unique(numbers(v, where(t, "sigma_b2")))
        if any(x <= 0 for x in sb2):
            raise SpecError(f"{where(t, 'sigma_b2')} = {show(v)}: every σ_b² must be > 0.")
        in_range(sb2, "sigma_b2", where(t, "sigma_b2"), "σ_b²")
        out["sigma_b2"] = sb2

    t, v = get("dps", 20 if kind in _DATA else 30)
    out["dps"] = exact_int(v, where(t, "dps"), 5, 1000)

    t, v = get("trainable", ["a", "A"])
    names = strings(v, where(t, "trainable"))
    if not set(names) <= {"a", "A", "B"}:
        raise SpecError(
            f'{where(t, "trainable")} = {show(v)}: a non-empty subset of "a", "A", "B".'
        )
    out["trainable"] = sorted(set(names), key="aAB".index)
    return out


def _data_axes(get: _Lookup, kind: str, sa2: list[Fraction], sb2: list[Any]) -> dict[str, Any]:
    """The data of ``exact`` and ``validate`` tasks: ratio p/n, n, seeds and the preset; their
    σ's must be finite decimals (torch takes them as floats)."""
    for x in sa2 + [b for b in sb2 if b is not None]:
        if "/" in text(x):
            raise SpecError(
                f"σ² = {text(x)} has no finite decimal form, which {kind} tasks need; "
                "choose values (or a range step) that are finite decimals."
            )
    out: dict[str, Any] = {}
    t, v = get("ratio", 0.8)
    ok = not isinstance(v, bool) and isinstance(v, (int, float))
    if not ok or not (0 < v <= _limits.MAX_RATIO):
        raise SpecError(
            f"{where(t, 'ratio')} = {show(v)}: expected a number p/n in (0, {_limits.MAX_RATIO}]."
        )
    out["ratio"] = float(v)
    t, v = get("n")
    if v is None:
        raise SpecError(f"{where(t, 'n')} is missing: {kind} tasks need sample sizes.")
    ns = unique(ints(v, where(t, "n"), 8))
    for n in ns:
        if round(out["ratio"] * n) < 16:
            raise SpecError(
                f"{where(t, 'n')}: n = {n} gives p = round(ratio·n) = "
                f"{round(out['ratio'] * n)} < 16; use a larger n."
            )
    out["n"] = ns
    out["n_where"] = where(t, "n")
    out["seeds"] = _seeds(*get("seeds", 1))
    t, v = get("preset", "paper")
    out["preset"] = choice(v, where(t, "preset"), _PRESETS)
    return out


def _seeds(t: str, v: Any) -> list[int]:
    """``seeds``: a count (seeds 0 … count − 1) or a list of seeds, within the budget."""
    if isinstance(v, int) and not isinstance(v, bool):
        count = exact_int(v, where(t, "seeds"), 1)
        if count > _limits.MAX_SEEDS:
            raise BudgetExceeded(
                f"{where(t, 'seeds')} = {show(v)}: the limit is {_limits.MAX_SEEDS} seeds "
                "(docs/limits.md); split the seeds over several specs (seeds = [list])."
            )
        return list(range(count))
    items = v if isinstance(v, list) else [v]
    if len(items) > _limits.MAX_SEEDS:
        raise BudgetExceeded(
            f"{where(t, 'seeds')} lists {len(items)} seeds; the limit is "
            f"{_limits.MAX_SEEDS} (docs/limits.md)."
        )
    for s in items:
        if isinstance(s, bool) or not isinstance(s, int) or not 0 <= s <= _limits.MAX_SEED:
            raise SpecError(
                f"{where(t, 'seeds')} = {show(v)}: expected a count, or a list of "
                f"integer seeds in [0, 2^63 − 1]."
            )
    if not items:
        raise SpecError(f"{where(t, 'seeds')} = []: give at least one seed.")
    return unique(list(items))


def _network_axes(get: _Lookup) -> dict[str, Any]:
    """The Monte Carlo DEQs of ``validate`` tasks: width m, draws, dtype."""
    out: dict[str, Any] = {}
    t, v = get("m", 2048)
    out["m"] = unique(ints(v, where(t, "m"), 1))
    out["m_where"] = where(t, "m")
    t, v = get("draws", 1)
    out["draws"] = exact_int(v, where(t, "draws"), 1, _limits.MAX_DRAWS)
    t, v = get("dtype", "float64")
    out["dtype"] = choice(v, where(t, "dtype"), ("float64", "float32"))
    return out


def _design_axes(get: _Lookup) -> dict[str, Any]:
    """What ``design`` tasks search: family, layers, kernel, starts, seed."""
    from ..numeric import MAX_LAYERS, MAX_STARTS
    from ..symbolic import get_family

    out: dict[str, Any] = {}
    t, v = get("family")
    out["family"] = _known_names(t, v, "family", "design tasks need an ENN family.", get_family)
    t, v = get("layers")
    out["layers"] = None if v is None else exact_int(v, where(t, "layers"), 1, MAX_LAYERS)
    t, v = get("kernel", "ck")
    out["kernel"] = choice(v, where(t, "kernel"), ("ck", "ntk"))
    t, v = get("starts", 24)
    out["starts"] = exact_int(v, where(t, "starts"), 1, MAX_STARTS)
    t, v = get("seed", 0)
    out["seed"] = exact_int(v, where(t, "seed"), 0, _limits.MAX_SEED)
    return out


def _count(kind: str, s: Mapping[str, Any]) -> int:
    """How many tasks :func:`_grid` yields for ``kind`` (computed, not expanded)."""
    base = len(s["activations"]) * len(s["sigma_a2"]) * len(s["sigma_b2"])
    if kind in ("coefficients", "certify"):
        return base * len(s["tau0"])
    if kind == "design":
        return base * len(s["tau0"]) * len(s["family"])
    return base * len(s["n"]) * len(s.get("m", [None])) * len(s["seeds"])


def _check_memory(kind: str, s: Mapping[str, Any]) -> None:
    """Refuse an ``exact``/``validate`` grid whose largest task cannot fit in this machine's
    memory (:func:`deqrmt.sweep._limits.task_bytes`), before any task runs."""
    n = max(s["n"])
    m = max(s.get("m", [0]))
    p = round(s["ratio"] * n)
    need = _limits.task_bytes(n, p, m)
    have = _limits.machine_memory()
    if have is None or need <= have:
        return
    what = f"n = {n}" + (f" and m = {m}" if kind == "validate" else "")
    where = s["n_where"] + (f", {s['m_where']}" if kind == "validate" else "")
    raise BudgetExceeded(
        f"{where}: {'an' if kind[0] in 'aeiou' else 'a'} {kind} task with {what} (p = {p}) needs about "
        f"{_limits.size_text(need)} of memory (8·(12n² + 4np + 2m² + 4m(n+p)) bytes + 256 MiB), more "
        f"than this machine's {_limits.size_text(have)}; use a smaller n"
        + (" or m" if kind == "validate" else "")
        + "."
    )


def _grid(kind: str, s: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """The inputs of each task of ``kind``, in order; numbers as canonical exact text."""
    for act in s["activations"]:
        for sa2 in s["sigma_a2"]:
            for sb2 in s["sigma_b2"]:
                base = {
                    "kind": kind,
                    "activation": act,
                    "sigma_a2": text(sa2),
                    "sigma_b2": None if sb2 is None else text(sb2),
                    "dps": s["dps"],
                    "trainable": list(s["trainable"]),
                }
                if kind in ("coefficients", "certify"):
                    for t0 in s["tau0"]:
                        yield {**base, "tau0": text(t0)}
                elif kind == "design":
                    for t0 in s["tau0"]:
                        for fam in s["family"]:
                            yield {
                                **base,
                                "tau0": text(t0),
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

    Every budget (docs/limits.md, "Sweeps": the text's size and nesting, values per list,
    seeds, tasks, a task's memory) is checked before any task is built.

    Raises:
      SpecError: malformed TOML, an unknown key or kind, a key that applies to none of the
        spec's kinds, or a value out of range; the message names the key and the value.
      BudgetExceeded: the spec is beyond a budget; the message names the limit and the fix.

    Example:
      >>> spec = parse_spec('kind = "coefficients"\\nactivations = ["tanh"]\\nsigma_a2 = "0.1:0.3:3"')
      >>> [t.inputs["sigma_a2"] for t in spec.tasks]
      ['0.1', '0.2', '0.3']
    """
    if not isinstance(text, str):
        raise SpecError(f"a spec is TOML text, got {type(text).__name__}.")
    name = plain(os.fspath(source)) if source is not None else "<spec>"
    raw = parse_toml(text, name)
    v = raw.get("kind")
    if v is None:
        raise SpecError(f"{name}: the key kind is missing; choose from {', '.join(KINDS)}.")
    kinds = unique(strings(v, "kind"))
    for k in kinds:
        choice(k, "kind", KINDS)
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
                        f"{name}: [{key}].{plain(sub)} is not a {key} setting; allowed: "
                        f"{', '.join(usable)}."
                    )
            continue
        if key not in _APPLIES:
            raise SpecError(
                f"{name}: unknown key {show(key)}; allowed: kind, {', '.join(sorted(_APPLIES))} "
                f"and tables named after a kind ({', '.join(KINDS)})."
            )
        if not _APPLIES[key] & set(kinds):
            raise SpecError(
                f"{name}: the key {key} applies to {', '.join(sorted(_APPLIES[key]))}, not to "
                f"kind = {kinds!r}."
            )
    settings = {kind: _settings(raw, kind) for kind in kinds}
    total = sum(_count(kind, s) for kind, s in settings.items())
    if total > _limits.MAX_TASKS:
        sizes = ", ".join(f"{k}: {_count(k, s)}" for k, s in settings.items())
        raise BudgetExceeded(
            f"{name} expands to {total} tasks ({sizes}); the limit is {_limits.MAX_TASKS} "
            "(docs/limits.md); split the grid into several specs (each with its own store)."
        )
    for kind, s in settings.items():
        if kind in _DATA:
            _check_memory(kind, s)
    tasks: dict[str, Task] = {}
    for kind, s in settings.items():
        for inputs in _grid(kind, s):
            key = task_key(inputs)
            tasks.setdefault(key, Task(key, kind, inputs))
    return SweepSpec(
        kinds=tuple(kinds),
        tasks=tuple(tasks.values()),
        source=Path(source) if source is not None else None,
        text_sha256=hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(),
    )


def load_spec(path: str | os.PathLike[str]) -> SweepSpec:
    """Read and validate ``path`` (see :func:`parse_spec`); it must be a regular file of at
    most :data:`deqrmt.sweep._limits.MAX_SPEC_BYTES` bytes, in UTF-8."""
    try:
        name = os.fspath(path)
    except TypeError:
        raise SpecError(f"a spec path is a string or a path, got {type(path).__name__}.") from None
    if not isinstance(name, str):
        name = os.fsdecode(name)
    return parse_spec(read_spec(name), source=name)

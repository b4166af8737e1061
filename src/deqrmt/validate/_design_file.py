"""A design file (``deqrmt design --json``) read as untrusted input, and a certificate's sizes.

Torch-free, so ``deqrmt certify`` refuses a malformed design or an oversized run before the
[validate] extra is imported.  Every refusal is one line naming the field (``setting.family``,
``solutions[0].params[1].b``) or the size, with the fix; sizes are budgeted in time (caps on
n, p, m) and in memory (:func:`certificate_memory` against :mod:`._budget`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import sympy as sp

from .._budget import check_memory
from .._errors import BudgetExceeded, DeqrmtError, InvalidArgument
from .._untrusted import bounded_int, exact_fraction, shown
from ..numeric import MAX_LAYERS, RANGES
from ..symbolic import Family, get_family

__all__ = [
    "MAX_M",
    "MAX_N",
    "MAX_NS",
    "MAX_PARAMETER",
    "MIN_N",
    "DesignFile",
    "certificate_memory",
    "check_certificate_sizes",
    "check_design",
]

#: |θ| of one designed parameter: designs report values of order one (the multi-start samples
#: [-2.5, 2.5] and polishes from there); far larger ones are not a design of this tool
MAX_PARAMETER = 10**6
#: solutions a design file may list (a design reports one per symmetry orbit: a handful)
MAX_SOLUTIONS = 1000
#: sample sizes: the exact kernels are n × n (a Mehler series per pair) and the spectral norms
#: an O(n³) eigensolve; n = 4096 takes minutes on one core (docs/limits.md)
MIN_N, MAX_N = 16, 4096
#: points of the n sweep (each is a full run)
MAX_NS = 8
#: p/n: the data are p × n, p = max(16, round(ratio·n)) at most MAX_N
RATIO_RANGE = (Fraction(1, 256), Fraction(16))
#: width of the Monte Carlo ENNs (features m × n, weights m × p then m × m)
MAX_M = 16384
MAX_SEED = 2**63 - 1
_FIX = "write the design with `deqrmt design --deq ACT --family FAMILY --json > DESIGN.json`"


@dataclasses.dataclass(frozen=True)
class DesignFile:
    """The fields of a ``deqrmt design --json`` output that a certificate reads, checked.

    ``layers[l]`` holds layer l's parameter values in the family's order (exact).
    """

    setting: dict[str, Any]
    deq: str
    family: Family
    kernel: str
    sigma_a2: str
    sigma_b2: str
    input_layer_trainable: bool
    layers: tuple[tuple[sp.Rational, ...], ...]


def _field_error(where: str, field: str, problem: str, error: type = InvalidArgument) -> Exception:
    return error(f"{where}: `{field}` {problem}; {_FIX}.")


def _text_field(setting: dict[str, Any], key: str, where: str) -> str:
    if key not in setting:
        raise _field_error(where, f"setting.{key}", "is missing")
    value = setting[key]
    if not isinstance(value, str):
        raise _field_error(
            where, f"setting.{key}", f"is {shown(value)} ({type(value).__name__}), not text"
        )
    return value


def _exact_field(value: Any, where: str, field: str) -> Fraction:
    try:
        return exact_fraction(value, f"{where}: `{field}`", fix=_FIX)
    except DeqrmtError as e:
        raise type(e)(str(e)) from None


def _setting_number(setting: dict[str, Any], key: str, where: str) -> str:
    value = _exact_field(setting.get(key), where, f"setting.{key}")
    lo, hi = RANGES[key]
    if not lo <= value <= hi:
        raise _field_error(
            where, f"setting.{key}", f"= {value} is outside the accepted range [{lo}, {hi}]"
        )
    return str(value)


def check_design(design: object, where: str = "design") -> DesignFile:
    """Every field a certificate reads, checked for type, range and size before any work.

    A design file is user input: each refusal names the field (``setting.family``,
    ``solutions[0].params[1].b``) and says how to write a valid one.  ``where`` names the file
    in messages.
    """
    if not isinstance(design, dict):
        raise _field_error(where, "(top level)", f"is a {type(design).__name__}, not an object")
    setting = design.get("setting")
    if not isinstance(setting, dict):
        raise _field_error(where, "setting", "is missing or not an object")
    deq = _text_field(setting, "deq", where)
    fam_text = _text_field(setting, "family", where)
    try:
        family = get_family(fam_text)
    except DeqrmtError as e:
        raise type(e)(f"{where}: `setting.family`: {e}") from None
    kernel = setting.get("kernel")
    if kernel not in ("ck", "ntk"):
        raise _field_error(where, "setting.kernel", f"is {shown(kernel)}, not 'ck' or 'ntk'")
    sigma_a2 = _setting_number(setting, "sigma_a2", where)
    sigma_b2 = _setting_number(setting, "sigma_b2", where)
    trainable = setting.get("enn_input_layer_trainable", False)
    if not isinstance(trainable, bool):
        raise _field_error(
            where, "setting.enn_input_layer_trainable", f"is {shown(trainable)}, not true or false"
        )
    names = [str(p) for p in family.params]
    if "parameters" in setting and setting["parameters"] != names:
        raise _field_error(
            where, "setting.parameters", f"is {shown(setting['parameters'])}, not {names}"
        )
    solutions = design.get("solutions")
    if not isinstance(solutions, list) or not solutions:
        raise _field_error(where, "solutions", "is missing, empty or not a list")
    if len(solutions) > MAX_SOLUTIONS:
        raise _field_error(
            where, "solutions", f"lists {len(solutions)} (at most {MAX_SOLUTIONS})", BudgetExceeded
        )
    layers: tuple[tuple[sp.Rational, ...], ...] = ()
    for i, sol in enumerate(solutions):
        checked = _solution_layers(sol, family, names, where, f"solutions[{i}]")
        if i == 0:
            layers = checked
    if "layers" in setting and setting["layers"] != len(layers):
        raise _field_error(
            where,
            "setting.layers",
            f"is {shown(setting['layers'])}, but solutions[0] has {len(layers)} layer(s)",
        )
    return DesignFile(setting, deq, family, kernel, sigma_a2, sigma_b2, trainable, layers)


def _solution_layers(
    sol: object, family: Family, names: list[str], where: str, field: str
) -> tuple[tuple[sp.Rational, ...], ...]:
    params = sol.get("params") if isinstance(sol, dict) else None
    if not isinstance(params, list) or not params:
        raise _field_error(where, f"{field}.params", "is missing, empty or not a list of layers")
    if len(params) > MAX_LAYERS:
        raise _field_error(
            where,
            f"{field}.params",
            f"has {len(params)} layers (at most {MAX_LAYERS})",
            BudgetExceeded,
        )
    out = []
    for l, layer in enumerate(params):
        here = f"{field}.params[{l}]"
        if not isinstance(layer, dict) or sorted(layer) != sorted(names):
            keys = sorted(layer) if isinstance(layer, dict) else type(layer).__name__
            raise _field_error(
                where, here, f"has {shown(keys, 80)}, not the family's parameters {names}"
            )
        values = []
        for name in names:
            v = _exact_field(layer[name], where, f"{here}.{name}")
            if abs(v) > MAX_PARAMETER:
                raise _field_error(
                    where, f"{here}.{name}", f"= {shown(layer[name])}: |θ| > {MAX_PARAMETER}"
                )
            values.append(sp.Rational(v.numerator, v.denominator))
        sub = dict(zip(family.params, values, strict=True))
        for cn in family.constraints:
            if not bool(cn.subs(sub) > 0):
                raise _field_error(
                    where, here, f"breaks the family's constraint {cn} > 0 ({layer})"
                )
        out.append(tuple(values))
    return tuple(out)


def certificate_memory(ns: Sequence[int], ratio: float, m: int, kernel: str = "ck") -> int:
    """Bytes a certificate holds at its largest n: a few n × n float64 kernels (DEQ, designed,
    naive, Θ and Σ, Mehler workspace), the p × n data and the m × n Monte Carlo features."""
    n = max(ns)
    p = max(16, round(ratio * n))
    features = 3 * m * max(n, p) if kernel == "ck" else 0
    return 8 * (_KERNEL_COPIES * n * n + 2 * p * n + features + m * p) + _BASE_BYTES


#: n × n float64 arrays alive at once, and the interpreter with torch, sympy and mpmath loaded
#: (measured: peak RSS at n = 1024 and 2048, see tests/test_hostile_commands.py)
_KERNEL_COPIES = 24
_BASE_BYTES = 600 * 2**20


def check_certificate_sizes(ns: Any, ratio: Any, m: Any, seed: Any, kernel: str = "ck") -> None:
    """Sizes and seed of a certificate, checked before any work (time and memory budgets)."""
    if isinstance(ns, (str, bytes)) or not isinstance(ns, Sequence) or not ns:
        raise InvalidArgument(f"ns={shown(ns)}: give one or more sample sizes, e.g. 256,512,1024.")
    if len(ns) > MAX_NS:
        raise BudgetExceeded(f"ns: {len(ns)} sample sizes; at most {MAX_NS} (each is a full run).")
    fix = f"sample sizes are integers from {MIN_N} to {MAX_N} (docs/limits.md)"
    checked = [bounded_int(n, "ns", MIN_N, MAX_N, fix=fix) for n in ns]
    if any(b <= a for a, b in zip(checked, checked[1:], strict=False)):
        raise InvalidArgument(
            f"ns={shown(list(ns), 80)}: give the sample sizes in increasing order, each once."
        )
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not math.isfinite(ratio):
        raise InvalidArgument(f"ratio={shown(ratio)}: p/n must be a finite number, e.g. 0.8.")
    lo, hi = RATIO_RANGE
    if not lo <= Fraction(ratio) <= hi:
        raise InvalidArgument(
            f"ratio={shown(ratio)}: p/n must lie in [{float(lo):g}, {float(hi):g}] (the data are "
            f"p × n with p = max(16, ratio·n) at most {MAX_N})."
        )
    p = max(16, round(ratio * max(checked)))
    if p > MAX_N:
        raise BudgetExceeded(
            f"ratio={ratio:g} at n={max(checked)} gives p={p} features; at most {MAX_N} "
            "(lower the ratio or the largest n)."
        )
    bounded_int(m, "m", 1, MAX_M, fix="the Monte Carlo width m is an integer")
    bounded_int(seed, "seed", 0, MAX_SEED, fix="a seed is a non-negative integer")
    check_memory(
        certificate_memory(checked, float(ratio), m, kernel),
        f"a certificate at n={max(checked)}, p={p}, m={m}",
        "lower the largest n (`ns`) or the width m",
    )

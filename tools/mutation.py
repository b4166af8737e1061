"""Mutation testing of the proof core: would the tests notice a wrong line?

    python tools/mutation.py                                  # every target, every mutant
    python tools/mutation.py --module _krawczyk --module _roots
    python tools/mutation.py --max-mutants 60 --seed 1 --jobs 2 --timeout 300
    python tools/mutation.py --list                           # the mutants only, nothing run

The targets (:data:`TARGETS`) are the modules that decide which digits are printed as proven: the
τ* solver (``_roots``, ``_fixed_point``), its Krawczyk proof (``_krawczyk``, ``_variance_proof``),
the Arb moment enclosures and their Gaussian tail bound (``_enclose``), the ball arithmetic and the
proven-digit rounding (``_arb``), the mpmath moments of the verified path (``_moments``), and the
outward rounding of printed balls and intervals (``_enclosure_text``; ``_text``'s enclosure
functions).  Each mutant changes one place of one module (:class:`Mutator` lists the operators: a
comparison flipped, an operator swapped, a constant moved by one, ``and``/``or`` swapped, a unary
minus dropped, a return value replaced by None, a rounding direction reversed), in a copy of
``src/`` that comes first on ``PYTHONPATH``: the working tree is never edited.

Which tests run: the target's test files are run once under coverage with per-test contexts
(pytest-cov's ``--cov-context=test``), and each mutant runs only the tests that execute its
line (``-x``: the first failure kills it).  A mutant on a line no test executes survives without
a run.  A mutant whose tests run past ``--timeout`` counts as killed (reported as a timeout: a
hang the tests would notice too).  Survivors explained as equivalent (:data:`SURVIVORS_EXPLAINED`,
keyed ``path:line:column: mutation``) are reported with the reason and left out of the score.

Prints, per target and in all, killed / survivors and the score, and every unexplained survivor
as ``path:line:column: mutation``; exit 0 when the score reaches ``--goal`` (default 90 %), else 1.

Time and the last scores: docs/benchmarks.md, "Mutation testing of the proof core" (on 2 busy
cores: ~15 s a mutant whose tests are quick, up to ~10 min one whose survival is confirmed on the
full test files; the coverage map of all targets ~17 min).  Last: ``_krawczyk`` 52/52 killed
(18 explained), ``_enclosure_text`` 54/54 (9 explained), ``_roots``' cell model 41/41 (1); seeded
samples (``--max-mutants N --seed 1``): ``_variance_proof`` 17/17 of 25 (8), ``_text`` 18/18
of 20 (2), ``_arb`` 21/21 of 25 (4), ``_enclose`` 14/15 of 15, ``_moments`` 8/11 of 12 (1),
``_fixed_point`` 10/10 of 12 (2): 88/92 (95.7 %) in ~66 min on 2 busy cores; all rows 248/252,
then 249/252 (``_enclose``'s end-point error killed by tests/test_enclose_kinks.py).  The look
past a zero on a node (``_roots``, examine's ``ha == 0``): 7/17 killed, 10 explained.
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import contextlib
import dataclasses
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclasses.dataclass(frozen=True)
class Target:
    """A module and the test files that exercise it; ``functions`` (top-level names) limits the
    mutants to part of the module."""

    path: str
    tests: tuple[str, ...]
    functions: tuple[str, ...] = ()


_N = "src/deqrmt/numeric/"
TARGETS: tuple[Target, ...] = (
    Target(
        _N + "_roots.py",
        (
            "tests/test_roots_model.py",
            "tests/test_fixed_point.py",
            "tests/test_steep_roots.py",
            "tests/test_roots_edges.py",
        ),
    ),
    Target(
        _N + "_fixed_point.py",
        ("tests/test_root_free_above.py", "tests/test_fixed_point.py", "tests/test_steep_roots.py"),
    ),
    Target(_N + "_map_formulas.py", ("tests/test_fixed_point.py", "tests/test_steep_roots.py")),
    Target(
        _N + "_krawczyk.py",
        ("tests/test_krawczyk.py", "tests/test_certify.py", "tests/test_sphere_certified.py"),
    ),
    Target(
        _N + "_variance_proof.py",
        ("tests/test_variance_proof.py", "tests/test_certify.py", "tests/test_sphere_certified.py"),
    ),
    Target(
        _N + "_enclose.py",
        (
            "tests/test_gaussian_tail.py",
            "tests/test_enclose_integrals.py",
            "tests/test_enclose_kinks.py",
            "tests/test_certify.py",
            "tests/test_check_proofs.py",
            "tests/test_sphere_certified.py",
        ),
    ),
    Target(
        _N + "_arb.py",
        (
            "tests/test_arb_digits.py",
            "tests/test_certify.py",
            "tests/test_enclosure_text.py",
            "tests/test_numbers.py",
        ),
        (
            "bits_for_digits",
            "workprec",
            "to_arb",
            "arb_to_mpf",
            "_exact_fraction",
            "_ends",
            "_round",
            "round_digits",
            "format_digits",
        ),
    ),
    Target(
        _N + "_moments.py",
        (
            "tests/test_moments_alone.py",
            "tests/test_numeric_moments.py",
            "tests/test_fixed_point.py",
        ),
    ),
    Target(
        _N + "_enclosure_text.py",
        ("tests/test_enclosure_exact.py", "tests/test_enclosure_text.py", "tests/test_verdict.py"),
    ),
    Target(
        "src/deqrmt/_text.py",
        ("tests/test_text_rounding.py", "tests/test_enclosure_text.py", "tests/test_numbers.py"),
        (
            "exact_value",
            "round_decimal",
            "round_ratio",  # round_decimal's integer core, where it has one
            "decimal_value",
            "format_decimal",
            "ball_text",
            "interval_ends",
        ),
    ),
)

#: Survivors that are equivalent mutants (no input tells them apart from the original), keyed
#: ``path:line:column: mutation`` as the report prints them, with the reason.  They are reported and left
#: out of the score; a survivor that is not here is a gap in the tests.
_K = "src/deqrmt/numeric/_krawczyk.py:"
_R = "src/deqrmt/numeric/_roots.py:"
_E = "src/deqrmt/numeric/_enclosure_text.py:"
_F = "src/deqrmt/numeric/_fixed_point.py:"
_V = "src/deqrmt/numeric/_variance_proof.py:"
_A = "src/deqrmt/numeric/_arb.py:"
#: Newton's precision schedule: which precision each step runs at and how many bits the point
#: is said to be trusted to.  It decides speed and the radii Krawczyk tries, never what is
#: proved: K(Q) ⊂ int Q is checked on whatever point comes out (a bad schedule can only make
#: the test fail, and the tests see that as a missing proof).
_SCHEDULE = (
    "Newton's precision schedule only (speed, the radii tried): the Krawczyk test checks "
    "whatever point it gives"
)
#: prove_fixed_point's p1: the precision of the Krawczyk evaluations h(x), h'(Q), between
#: min(prec, 2·known + 32) and prec.  Any p1 gives balls that contain h and h'; a higher one
#: only narrows them (contract then re-evaluates h at prec), so the proof and its ball are
#: the same, reached more slowly.
_P1 = "prove_fixed_point's p1 higher (at most prec): the same proof, slower; " + _SCHEDULE
#: The candidate radii 2^(4−known), 2^(12−known), 2^(24−known) of Q: K(Q) ⊂ int Q is checked
#: on each, so a radius decides only whether a proof is found, never what is proved.  Newton's
#: point is off by about 2^(−known−8) (known is twice its last step's bits minus 8), so twice
#: the width (still |h''|·r ≪ |h'|), or two ulps less, passes wherever the original does;
#: tests/test_variance_proof.py's curved map kills radii narrower than the trusted bits.
_RADII = (
    "a candidate radius of Q twice as wide or one ulp narrower: the Newton point is off by "
    "~2^(-known-8), far inside either ball, and K(Q) ⊂ int Q is checked on whatever Q is tried"
)
_SIGN = "the sign condition is redundant once both ends round to the same decimal (the sign is part of the rounding, so a straddling interval never does): loosening it changes nothing"
SURVIVORS_EXPLAINED: dict[str, str] = {
    _K + "47:13: min -> max": "every step at full precision (line 49 lifts p >= 3prec/4 to "
    "prec): slower, the same point to the bits trusted",
    _K + "47:23: 2 -> 3": _SCHEDULE,
    _K + "47:35: 32 -> 33": _SCHEDULE,
    _K + "48:21: >= -> >": _SCHEDULE,
    _K + "48:26: // -> /": _SCHEDULE,
    _K + "48:26: * -> /": _SCHEDULE,
    _K + "48:26: 3 -> 4": _SCHEDULE,
    _K + "48:38: 4 -> 5": _SCHEDULE,
    _K + "54:17: - -> +": "the step is exactly 0 (an exact zero of the point's h): the bits "
    "claimed only end the loop; " + _SCHEDULE,
    _K + "54:21: 8 -> 9": "the step is exactly 0: one bit fewer claimed; " + _SCHEDULE,
    _K + "54:48: 8 -> 9": "one bit fewer claimed per step (more conservative); " + _SCHEDULE,
    _K + "54:76: .upper -> .lower": "rel is a ball ~2^-p wide: int(-log2) of its two ends "
    "differ only at an exact power of 2; " + _SCHEDULE,
    _K + "74:17: + -> -": "Q - x is a ball centred at 0 (Q = [x +- r] is built around x), so "
    "adding or subtracting (1 - Y h'(Q))(Q - x) gives the same ball",
    _K + "90:16: <= -> <": "the radius exactly at the stopping width 2^(16-prec)|mid|: one "
    "round more only narrows a ball that is already proved",
    _K + "90:53: 16 -> 17": "stops at 2^-(prec-17) instead of 2^-(prec-16) relative: at most one "
    "round fewer, the ball still proved and still ~10^-(dps+2) wide, beyond the digits printed",
    _K + "95:22: + -> -": "k - x is a ball centred at 0 (x is k's midpoint), so adding or "
    "subtracting (1 - Y h'(Q))(k - x) gives the same ball",
    _K + "96:18: < -> <=": "a round that shrinks the ball exactly fourfold: measure zero, "
    "and one round more or less only moves the width, never the enclosure",
    _K + "96:42: 4 -> 5": "contract stops after a round that shrank 4-5x instead of going on: "
    "the ball is still proved, at worst one round wider (never a wrong digit; at worst the "
    "guard digits beyond those printed are not all trimmed)",
    _E + "38:42: >= -> >": "exp == 0: Fraction(man * 2**0) and Fraction(man, 2**-0) are equal",
    _E + "38:49: 0 -> 1": "exp == 0: Fraction(man * 2**0) and Fraction(man, 2**-0) are equal",
    _E + "71:45: > -> >=": _SIGN,
    _E + "71:54: < -> <=": _SIGN,
    _E + "71:58: 0 -> 1": _SIGN,
    _E + "86:40: > -> >=": _SIGN,
    _E + "86:49: < -> <=": _SIGN,
    _E + "86:53: 0 -> 1": _SIGN,
    _E + "86:58: == -> !=": _SIGN,
    "src/deqrmt/numeric/_map_formulas.py:82:57: True -> False": "zip(strict=...): the generated centering formula gives one "
    "output per name, so the lengths always match (test_generated_formulas keeps the module "
    "current)",
    _F + "229:19: 10 -> 11": "a tighter tolerance, 11^-(dps-2) < 10^-(dps-2): polish stops a "
    "step later at most, the same root to the digits kept",
    _V + "48:9: return value -> None": "caches falsy: an erf-type φ evaluates below prec first "
    "(its integrand cache then misses, slower); " + _P1,
    _V + "96:35: min -> max": _P1,
    _V + "96:45: 2 -> 3": _P1,
    _V + "96:57: 32 -> 33": _P1,
    _V + "99:18: .upper -> .lower": _RADII,
    _V + "99:80: 4 -> 5": _RADII,
    _V + "99:83: 12 -> 13": _RADII,
    _V + "129:40: 0 -> 1": "scan(decades=1) goes on a decade past the first root: roots[0] "
    "is the same first root (the scan walks up from q0 and lists roots in order)",
    "src/deqrmt/_text.py:316:71: 2 -> 3": "round_ratio's first guess of floor(log10 |v|) "
    "(log10 3 for log10 2): the two loops after it step e to the exact decade from any guess "
    "(slower, the same e)",
    "src/deqrmt/_text.py:360:20: < -> <=": "format_decimal's sign == 0 already returned "
    "'0.0' at its top: sign <= 0 and sign < 0 agree on every sign that reaches the line",
    _A + "309:26: 0 -> 1": "_ends' den at e == 0: 1 << 0 and 1 are the same",
    _A + "310:23: > -> >=": "_ends' scale at e == 0: 1 << 0 and 1 are the same",
    _A + "324:25: < -> <=": "round_digits: lo == 0 already returned None (its rounding has sign "
    "0); hi == 0 with lo < 0 rounds to a different sign than lo, None either way",
    "src/deqrmt/numeric/_moments.py:143:14: - -> +": "sq_pow two higher: two more power "
    "sums Σ w ξ^k φ² are accumulated and never read (each moment reads b[k] for k < "
    "len(its weight) only; sq_pow >= 0 is unchanged)",
    _F + "143:19: 64 -> 65": "root_free_above in 65-bit balls instead of 64: a ball half as "
    "wide around the same bound, which the final 1e-12 step up (≫ 2^-60) covers either way",
    _F + "151:13: .upper -> .lower": "root_free_above's s² ball is ~2^-60 wide relative: its "
    "lower end is above the true root less that, and the final 1e-12 step up (≫ 2^-60) "
    "keeps the float above the bound either way",
    _R + "50:8: < -> <=": "disc == 0 exactly: p' has a double root, an inflection and not a "
    "turning point; splitting the cell there or not finds the same roots",
    _R + "137:29: > -> >=": "h exactly 0 at the cell's midpoint: both paths examine [a, mid] "
    "and [mid, b], which record the root at mid (examine's h == 0 cases)",
    # the look past a zero on a node (examine's ha == 0 case)
    _R + "92:22: 0 -> 1": "with hb == 0 the look past a runs into b's zero, which the next cell "
    "records again in place of this one's (the roots[-1] rule): the same roots",
    _R + "94:16: >= -> >": "a depth limit one deeper: only how deep a pathological cell is "
    "followed; the budget and the sign tests decide the roots",
    _R + "94:25: 16 -> 17": "a depth limit one deeper (as 94:16)",
    _R + "95:33: False -> True": "the guard's depth or budget is also the walk's: it marks the "
    "scan incomplete when the evaluations run out (test_scan_claims_complete_only_with_every_root)",
    _R + "99:35: * -> /": "δ = 1e-9/(b − a) instead of 1e-9·(b − a): another tiny step past a, "
    "inside the cell for every cell the scan makes (widths ≥ 1e-13·b); the same roots",
    _R + "99:43: - -> +": "δ = 1e-9·(b + a): another tiny step past a (as 99:35)",
    _R + "100:22: 1 -> 0": "h vanishing past its zero then recurses with depth + 1 until the "
    "depth limit marks the scan incomplete: the same verdict, later",
    _R + "100:28: 0 -> 1": "as 100:22: the depth limit marks the flat stretch incomplete",
    _R + "103:40: + -> -": "the depth only bounds the recursion past repeated exact zeros, which "
    "the next node past a zero (h ≠ 0 there) ends",
    _R + "103:48: 1 -> 0": "as 103:40",
}

# --- the mutants -------------------------------------------------------------------------------

_COMPARE_SWAP: dict[type, type] = {
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
    ast.In: ast.NotIn, ast.NotIn: ast.In,
}  # fmt: skip
_BINOP_SWAP: dict[type, type] = {
    ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult,
    ast.FloorDiv: ast.Div, ast.Pow: ast.Mult, ast.LShift: ast.RShift, ast.RShift: ast.LShift,
}  # fmt: skip
#: Methods and functions whose swap reverses a rounding direction or a bound.
_NAME_SWAP: dict[str, str] = {
    "upper": "lower", "lower": "upper", "floor": "ceil", "ceil": "floor", "min": "max",
    "max": "min", "contains_interior": "contains",
}  # fmt: skip
#: String constants that name a rounding direction.
_STRING_SWAP: dict[str, str] = {"floor": "ceiling", "ceiling": "floor", "nearest": "floor"}
_SYMBOL: dict[type, str] = {
    ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
    ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in", ast.Add: "+",
    ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Pow: "**",
    ast.LShift: "<<", ast.RShift: ">>", ast.And: "and", ast.Or: "or",
}  # fmt: skip


@dataclasses.dataclass(frozen=True)
class Mutant:
    """One change: the ``index``-th node of ``ast.walk`` order in ``path``, variant ``variant``."""

    path: str
    index: int
    variant: int
    line: int
    col: int
    what: str

    @property
    def key(self) -> str:
        return f"{self.path}:{self.line}:{self.col}: {self.what}"


class Mutator:
    """The mutation sites of one module and the source of each mutant.

    Operators: ``<`` ↔ ``<=``, ``>`` ↔ ``>=``, ``==`` ↔ ``!=``, ``is``/``in`` negated; ``+`` ↔ ``-``,
    ``*`` ↔ ``/``, ``//`` → ``/``, ``**`` → ``*``; an int or float constant c → c + 1 (0 ↔ 1),
    ``True`` ↔ ``False``; ``and`` ↔ ``or``; ``-x`` → ``x``, ``not x`` → ``x``; ``return e`` →
    ``return None``; ``upper`` ↔ ``lower``, ``floor`` ↔ ``ceil``, ``min`` ↔ ``max``,
    ``contains_interior`` → ``contains``; ``"floor"`` ↔ ``"ceiling"``, ``"nearest"`` → ``"floor"``.
    Docstrings, annotations, f-strings (messages) and ``__all__`` are left alone.
    """

    def __init__(self, path: str, source: str, functions: Sequence[str] = ()) -> None:
        self.path = path
        self.source = source
        tree = ast.parse(source)
        self._skip = _skipped_nodes(tree)
        spans = [
            (n.lineno, n.end_lineno or n.lineno)
            for n in tree.body
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and n.name in functions
        ]
        self.mutants: list[Mutant] = []
        for index, node in enumerate(ast.walk(tree)):
            if id(node) in self._skip:
                continue
            line, col = getattr(node, "lineno", 0), getattr(node, "col_offset", 0) + 1
            if functions and not any(a <= line <= b for a, b in spans):
                continue
            for variant, what in enumerate(_variants(node)):
                self.mutants.append(Mutant(path, index, variant, line, col, what))
        self.mutants.sort(key=lambda m: (m.line, m.col, m.index, m.variant))

    def mutated(self, mutant: Mutant) -> str:
        """The module's source with ``mutant`` applied (``ast.unparse``: comments dropped)."""
        tree = ast.parse(self.source)
        node = next(n for i, n in enumerate(ast.walk(tree)) if i == mutant.index)
        _apply(tree, node, mutant.variant)
        return ast.unparse(ast.fix_missing_locations(tree))


def _skipped_nodes(tree: ast.Module) -> set[int]:
    """ids of nodes no mutant touches: docstrings, annotations, f-strings, ``__all__``."""
    skip: set[int] = set()

    def drop(node: ast.AST | None) -> None:
        if node is not None:
            skip.update(id(n) for n in ast.walk(node))

    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            drop(body[0])
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            drop(node.returns)
            for a in [*node.args.args, *node.args.kwonlyargs, *node.args.posonlyargs]:
                drop(a.annotation)
            for a in (node.args.vararg, node.args.kwarg):
                if a is not None:
                    drop(a.annotation)
        elif isinstance(node, ast.AnnAssign):
            drop(node.annotation)
        elif _left_alone(node):
            drop(node)
    return skip


def _left_alone(node: ast.AST) -> bool:
    """An f-string (a message), ``__all__ = …`` or ``if TYPE_CHECKING:``."""
    if isinstance(node, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
    if isinstance(node, ast.If):
        return ast.unparse(node.test) == "TYPE_CHECKING"
    return isinstance(node, ast.JoinedStr)


def _constant_variants(value: object) -> list[str]:
    if isinstance(value, bool):
        return [f"{value} -> {not value}"]
    if isinstance(value, int | float):
        new = 1 if value == 0 else (0 if value == 1 else value + 1)
        return [f"{value!r} -> {new!r}"]
    if isinstance(value, str) and value in _STRING_SWAP:
        return [f"{value!r} -> {_STRING_SWAP[value]!r}"]
    return []


def _variants(node: ast.AST) -> list[str]:
    """Descriptions of the mutants of ``node`` (their order is the variant number)."""
    if isinstance(node, ast.Compare):
        return [
            f"{_SYMBOL[type(op)]} -> {_SYMBOL[_COMPARE_SWAP[type(op)]]}"
            for op in node.ops
            if type(op) in _COMPARE_SWAP
        ]
    if isinstance(node, ast.BinOp | ast.AugAssign) and type(node.op) in _BINOP_SWAP:
        eq = "=" if isinstance(node, ast.AugAssign) else ""
        return [f"{_SYMBOL[type(node.op)]}{eq} -> {_SYMBOL[_BINOP_SWAP[type(node.op)]]}{eq}"]
    if isinstance(node, ast.BoolOp):
        other = ast.Or if isinstance(node.op, ast.And) else ast.And
        return [f"{_SYMBOL[type(node.op)]} -> {_SYMBOL[other]}"]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.Not):
        return ["unary - removed" if isinstance(node.op, ast.USub) else "not removed"]
    if isinstance(node, ast.Constant):
        return _constant_variants(node.value)
    if isinstance(node, ast.Return) and node.value is not None:
        if isinstance(node.value, ast.Constant) and node.value.value is None:
            return []
        return ["return value -> None"]
    if isinstance(node, ast.Attribute) and node.attr in _NAME_SWAP:
        return [f".{node.attr} -> .{_NAME_SWAP[node.attr]}"]
    if isinstance(node, ast.Name) and node.id in ("min", "max") and isinstance(node.ctx, ast.Load):
        return [f"{node.id} -> {_NAME_SWAP[node.id]}"]
    return []


def _apply(tree: ast.Module, node: ast.AST, variant: int) -> None:
    if isinstance(node, ast.Compare):
        ops = [i for i, op in enumerate(node.ops) if type(op) in _COMPARE_SWAP]
        i = ops[variant]
        node.ops[i] = _COMPARE_SWAP[type(node.ops[i])]()
    elif isinstance(node, ast.BinOp | ast.AugAssign):
        node.op = _BINOP_SWAP[type(node.op)]()
    elif isinstance(node, ast.BoolOp):
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    elif isinstance(node, ast.UnaryOp):
        _replace(tree, node, node.operand)
    elif isinstance(node, ast.Constant):
        v = node.value
        if isinstance(v, bool):
            node.value = not v
        elif isinstance(v, int | float):
            node.value = 1 if v == 0 else (0 if v == 1 else v + 1)
        else:
            node.value = _STRING_SWAP[str(v)]
    elif isinstance(node, ast.Return):
        node.value = ast.Constant(None)
    elif isinstance(node, ast.Attribute):
        node.attr = _NAME_SWAP[node.attr]
    elif isinstance(node, ast.Name):
        node.id = _NAME_SWAP[node.id]


def _replace(tree: ast.Module, old: ast.AST, new: ast.AST) -> None:
    """Put ``new`` where ``old`` is in its parent."""
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, field, new)
                return
            if isinstance(value, list):
                for i, item in enumerate(value):
                    if item is old:
                        value[i] = new
                        return
    raise AssertionError("node not found in its tree")


# --- which tests run which line -------------------------------------------------------------------


def coverage_map(
    targets: Sequence[Target], root: Path, workdir: Path, timeout: float
) -> dict[str, dict[int, list[str]]] | None:
    """path → line → the test node ids that execute it, from one coverage run of the targets'
    test files with per-test contexts (cached under ``workdir`` by the hash of the sources and
    the tests).  A line run outside any test (at import, or in a subprocess) maps to the
    target's test files.  None when the tests fail unmutated: there is nothing to measure."""
    tests = sorted({t for target in targets for t in target.tests})
    digest = hashlib.sha256()
    for path in sorted((root / "src").rglob("*.py")):
        digest.update(path.read_bytes())
    for name in tests:
        digest.update(name.encode() + (root / name).read_bytes())
    cache = workdir / f"map-{digest.hexdigest()[:16]}.json"
    if cache.exists():
        raw = json.loads(cache.read_text())
        return {p: {int(k): v for k, v in lines.items()} for p, lines in raw.items()}
    data = workdir / "coverage-map"
    for stale in workdir.glob(data.name + "*"):
        stale.unlink()
    env = _env(root / "src")
    env["COVERAGE_FILE"] = str(data)
    cmd = [
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--cov={root / 'src'}",
        "--cov-context=test", "--cov-report=", *tests,
    ]  # fmt: skip
    rc, out = _run(cmd, root, env, timeout)
    if rc != 0:
        print(f"the targets' tests fail unmutated (exit {rc}):\n{out[-3000:]}")
        return None
    import coverage

    # pytest-cov leaves its combined data as coverage-map.<suffix>.combine (and a subprocess's
    # as coverage-map.<suffix>): read them all
    contexts: dict[str, dict[int, set[str]]] = {}
    for name in sorted(workdir.glob(data.name + "*")):
        cov = coverage.CoverageData(basename=str(name))
        cov.read()
        for measured in cov.measured_files():
            per_line = contexts.setdefault(str(Path(measured).resolve()), {})
            for line, names in cov.contexts_by_lineno(measured).items():
                per_line.setdefault(line, set()).update(names)
    result: dict[str, dict[int, list[str]]] = {}
    for target in targets:
        lines: dict[int, list[str]] = {}
        for line, names in contexts.get(str((root / target.path).resolve()), {}).items():
            nodes = sorted({c.rsplit("|", 1)[0] for c in names if c})
            lines[line] = nodes or list(target.tests)
        result[target.path] = lines
    cache.write_text(json.dumps(result))
    return result


# --- running one mutant ---------------------------------------------------------------------------


def _env(src: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COVERAGE_")}
    env["PYTHONPATH"] = os.pathsep.join([str(src), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["CI"] = "true"  # Hypothesis' derandomised profile: the same examples for every mutant
    env.setdefault("PYTHONHASHSEED", "0")
    return env


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float) -> tuple[int | None, str]:
    """(exit code or None on timeout, output); the process group is killed on every way out."""
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            rc: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            rc = None
        finally:
            if proc.poll() is None or rc is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        out.seek(0)
        return rc, out.read().decode("utf-8", "replace")


@dataclasses.dataclass(frozen=True)
class Outcome:
    mutant: Mutant
    status: str  # "killed", "timeout", "survived", "uncovered"
    seconds: float
    tests: int


class Workspace:
    """A private copy of ``src/`` for one worker; a mutant is written into it and undone."""

    def __init__(self, root: Path, base: Path) -> None:
        self.root = root
        self.dir = Path(tempfile.mkdtemp(prefix="mutant-", dir=base))
        shutil.copytree(
            root / "src", self.dir / "src", ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
        )

    def run(
        self, mutant: Mutant, text: str, tests: list[str], full: Sequence[str], timeout: float
    ) -> Outcome:
        """Run ``tests`` on the mutant; if it survives them, ``full`` (the target's test files):
        a test may check a value that another test computed first (a cache), so the tests that
        execute a line are not always all the tests that would notice it."""
        outcome = self._run(mutant, text, tests, timeout)
        if outcome.status == "survived" and sorted(tests) != sorted(full):
            again = self._run(mutant, text, list(full), timeout)
            return dataclasses.replace(again, seconds=again.seconds + outcome.seconds)
        return outcome

    def _run(self, mutant: Mutant, text: str, tests: list[str], timeout: float) -> Outcome:
        target = self.dir / mutant.path
        original = target.read_text(encoding="utf-8")
        cache = target.parent / "__pycache__"
        try:
            target.write_text(text, encoding="utf-8")
            for pyc in cache.glob(f"{target.stem}.*.pyc") if cache.exists() else ():
                pyc.unlink()
            start = time.monotonic()
            cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
            rc, _ = _run(cmd, self.root, _env(self.dir / "src"), timeout)
            seconds = time.monotonic() - start
        finally:
            target.write_text(original, encoding="utf-8")
            for pyc in cache.glob(f"{target.stem}.*.pyc") if cache.exists() else ():
                pyc.unlink()
        # pytest: 0 passed, 1 a test failed, 2 collection failed (the mutant broke an import);
        # anything else (4: a node id not found) is the tool's problem, not the mutant's
        status = {None: "timeout", 0: "survived", 1: "killed", 2: "killed"}.get(rc, f"error {rc}")
        return Outcome(mutant, status, seconds, len(tests))


def _select(mutants: list[Mutant], max_mutants: int | None, seed: int) -> list[Mutant]:
    if max_mutants is None or len(mutants) <= max_mutants:
        return mutants
    chosen = random.Random(seed).sample(range(len(mutants)), max_mutants)
    return [mutants[i] for i in sorted(chosen)]


def _targets(names: Sequence[str], targets: Sequence[Target]) -> list[Target]:
    if not names:
        return list(targets)
    chosen = [t for t in targets if Path(t.path).stem in names or t.path in names]
    unknown = set(names) - {Path(t.path).stem for t in chosen} - {t.path for t in chosen}
    if unknown:
        known = ", ".join(Path(t.path).stem for t in targets)
        raise SystemExit(f"mutation: unknown module {sorted(unknown)}; the targets are {known}")
    return chosen


def _jobs(
    targets: list[Target], args: argparse.Namespace, root: Path, work: Path
) -> Iterator[tuple[Mutant, str, list[str], tuple[str, ...]]]:
    """(mutant, mutated source, tests to run, the target's test files) for every mutant
    chosen; [] tests: uncovered.  With ``--tests`` every mutant runs those files (no map)."""
    cover = None if args.tests else coverage_map(targets, root, work, args.map_timeout)
    if cover is None and not args.tests:
        raise SystemExit(1)
    if args.tests:  # a test that fails unmutated would "kill" every mutant
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args.tests]
        rc, out = _run(cmd, root, _env(root / "src"), args.map_timeout)
        if rc != 0:
            print(f"the tests fail unmutated (exit {rc}):\n{out[-3000:]}")
            raise SystemExit(1)
    for target in targets:
        source = (root / target.path).read_text(encoding="utf-8")
        mutator = Mutator(target.path, source, target.functions)
        mutants = _select(mutator.mutants, args.max_mutants, args.seed)
        if args.mutant:
            mutants = [m for m in mutator.mutants if m.key in args.mutant]
        baseline = ast.unparse(ast.parse(source))
        for m in mutants:
            text = mutator.mutated(m)
            if text == baseline:
                continue  # the change is invisible to the parser (e.g. -0 of a literal)
            if args.tests:
                yield m, text, list(args.tests), tuple(args.tests)
            else:
                assert cover is not None
                yield m, text, cover[target.path].get(m.line, []), target.tests


def _report(
    outcomes: list[Outcome],
    targets: list[Target],
    explained: dict[str, str],
    seconds: float,
    goal: float,
) -> int:
    print()
    total_killed = total_scored = 0
    for target in targets:
        mine = [o for o in outcomes if o.mutant.path == target.path]
        if not mine:
            continue
        killed = sum(o.status in ("killed", "timeout") for o in mine)
        n_equivalent = sum(
            o.status in ("survived", "uncovered") and o.mutant.key in explained for o in mine
        )
        scored = len(mine) - n_equivalent - sum(o.status.startswith("error") for o in mine)
        total_killed += killed
        total_scored += scored
        timeouts = sum(o.status == "timeout" for o in mine)
        print(
            f"{target.path}: {killed}/{scored} killed ({timeouts} by timeout), "
            f"{n_equivalent} equivalent"
        )
    survivors = [
        o
        for o in outcomes
        if o.status in ("survived", "uncovered") and o.mutant.key not in explained
    ]
    equivalent = [o for o in outcomes if o.mutant.key in explained]
    if equivalent:
        print("\nequivalent (SURVIVORS_EXPLAINED):")
        for o in equivalent:
            print(f"  {o.mutant.key}  [{o.status}]  {explained[o.mutant.key]}")
    if survivors:
        print("\nsurvivors:")
        for o in sorted(survivors, key=lambda o: (o.mutant.path, o.mutant.line)):
            how = "no test runs the line" if o.status == "uncovered" else f"{o.tests} tests pass"
            print(f"  {o.mutant.key}  [{how}]")
    errors = [o for o in outcomes if o.status.startswith("error")]
    if errors:
        print("\nnot run (the tool's error, not scored):")
        for o in errors:
            print(f"  {o.mutant.key}  [{o.status}]")
    score = 100.0 * total_killed / total_scored if total_scored else 100.0
    print(
        f"\nmutation score {score:.1f} % ({total_killed}/{total_scored} killed, "
        f"{len(survivors)} unexplained survivors) in {seconds:.0f} s; goal {goal:g} %"
    )
    return 0 if score >= goal else 1


def main(
    argv: Sequence[str] | None = None,
    root: Path = ROOT,
    targets: Sequence[Target] = TARGETS,
    explained: dict[str, str] | None = None,
) -> int:
    """The command line (see the module docstring); ``root``, ``targets`` and ``explained``
    point it at another project (the tool's own test does)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--module", action="append", default=[], help="a target (repeatable)")
    parser.add_argument("--max-mutants", type=int, help="sample this many mutants per module")
    parser.add_argument("--seed", type=int, default=0, help="the sample's seed (deterministic)")
    parser.add_argument("--jobs", type=int, default=1, help="mutants run at once")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per mutant")
    parser.add_argument("--map-timeout", type=float, default=3600, help="the coverage map's run")
    parser.add_argument("--goal", type=float, default=90.0, help="the score to reach (percent)")
    parser.add_argument("--list", action="store_true", help="print the mutants, run nothing")
    parser.add_argument(
        "--mutant", action="append", default=[], help="only this mutant, as printed (repeatable)"
    )
    parser.add_argument(
        "--tests",
        action="append",
        default=[],
        help="run this test file for every mutant, "
        "instead of the tests the coverage map finds (repeatable)",
    )
    parser.add_argument("--workdir", type=Path, help="where maps and copies go (default: a temp)")
    args = parser.parse_args(argv)
    chosen = _targets(args.module, targets)
    known = SURVIVORS_EXPLAINED if explained is None else explained
    if args.list:
        for target in chosen:
            source = (root / target.path).read_text(encoding="utf-8")
            mutants = Mutator(target.path, source, target.functions).mutants
            for m in _select(mutants, args.max_mutants, args.seed):
                print(m.key)
        return 0
    start = time.monotonic()
    base = args.workdir or Path(tempfile.mkdtemp(prefix="deqrmt-mutation-"))
    base.mkdir(parents=True, exist_ok=True)
    spaces: list[Workspace] = []
    outcomes: list[Outcome] = []
    try:
        spaces = [Workspace(root, base) for _ in range(max(1, args.jobs))]
        free = list(spaces)
        with concurrent.futures.ThreadPoolExecutor(len(spaces)) as pool:
            running: dict[concurrent.futures.Future[Outcome], Workspace] = {}

            def finish(done: concurrent.futures.Future[Outcome]) -> None:
                free.append(running.pop(done))
                o = done.result()
                outcomes.append(o)
                print(f"{o.status:9} {o.seconds:6.0f} s  {o.mutant.key}", flush=True)

            for mutant, text, tests, full in _jobs(chosen, args, root, base):
                if not tests:
                    outcomes.append(Outcome(mutant, "uncovered", 0.0, 0))
                    print(f"uncovered       -    {mutant.key}", flush=True)
                    continue
                while not free:
                    done, _ = concurrent.futures.wait(
                        running, return_when=concurrent.futures.FIRST_COMPLETED
                    )
                    for d in done:
                        finish(d)
                space = free.pop()
                running[pool.submit(space.run, mutant, text, tests, full, args.timeout)] = space
            for d in concurrent.futures.as_completed(list(running)):
                finish(d)
    finally:
        for space in spaces:
            shutil.rmtree(space.dir, ignore_errors=True)
        if args.workdir is None:
            shutil.rmtree(base, ignore_errors=True)
    return _report(outcomes, chosen, known, time.monotonic() - start, args.goal)


if __name__ == "__main__":
    sys.exit(main())

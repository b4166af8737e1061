r"""Design of an explicit network (ENN) equivalent to a DEQ in the high-dimensional regime.

CK matching (ICML 2024, "key idea"): choose the parameters θ_l of an L-layer ENN with
activations from one family so that τ̃_L = γ*, α̃_{L,i} = α*_i (i = 1, 2, 3); NTK matching:
κ̃_L = κ*, β̃_{L,i} = β*_i.  The ENN side is the derived layer recursion
(:func:`deqrmt.symbolic.derive_layer`) applied L times to the family's moments, so nothing is
typed in.  Trainable sets correspond as: DEQ (a, A) with B fixed ↔ ENN with its input layer
fixed (Θ^{(0)} = 0); DEQ (a, A, B) ↔ ENN with every layer trainable (Θ^{(0)} = XᵀX).

Depth rule: a one-layer ENN always has α̃_{1,2} = α̃_{1,3}/2, so one layer suffices only if
α*₂ = α*₃/2; otherwise at least two are needed.

The equations are solved by multi-start Levenberg–Marquardt in a private mpmath context; every
distinct real solution found is polished at higher precision and reported with its residual.

Symmetries: the matched values depend on each layer's activation only through Gaussian moments,
so a reparametrisation θ ↦ Tθ with φ(x; Tθ) = ±φ(±x; θ) leaves every matched value unchanged
(the input w ~ N(0, τ) is symmetric and the next layer's Gaussian weights absorb a sign).  Such
T are found numerically among the signed permutations of one layer's parameters (tested at the
solution and at a random point); solutions related by them are one orbit, reported once by its
canonical member (the lexicographically largest: positive leading parameters).  A positively
homogeneous family (leaky ReLU) also has a continuous symmetry, (θ_l, θ_{l+1}) ↦ (λθ_l, θ_{l+1}/λ),
λ > 0; it is removed by scaling every layer but the last to max_j |θ_{l,j}| = 1.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import random
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import mpmath
import sympy as sp

from .. import _arguments
from .._errors import BudgetExceeded, InvalidArgument, NoConvergence
from .._untrusted import bounded_int
from ..internal import FAMILY_MOMENTS
from ..symbolic import TAU, Family, X, get_family
from ._arb import bits_for_digits, workprec
from ._deq import deq_coefficients
from ._deq_formulas import layer_formulas
from ._deq_records import DEQ_KEYS, DEQCoefficients
from ._design_proof import DesignProof, prove_design_solution
from ._design_search import (
    CLOSED_UNITS,
    FLOAT_UNIT,
    OutOfBudget,
    SearchBudget,
    multistart,
    precision_factor,
    refine,
)
from ._design_search import expand as _expand
from ._design_search import jacobian as _jacobian
from ._design_search import nullity as _nullity
from ._design_search import solve_lm as _solve_lm
from ._explicit import LAYER_KEYS
from ._fixed_point import center_moments
from ._printer import compile_function
from ._problem import MAX_LAYERS, DEQProblem
from ._quadrature import panels

__all__ = ["Design", "DesignSolution", "design_enn"]


@dataclasses.dataclass(frozen=True)
class DesignSolution:
    """One parameter set: ``params[l]`` maps parameter names to decimal strings."""

    params: tuple[dict[str, str], ...]
    values: tuple[tuple[Any, ...], ...]
    residual: Any
    #: how many symmetric copies of this solution the multi-start found (itself included)
    copies_found: int = 1
    #: the Krawczyk proof of this root (:mod:`._design_proof`); None when not attempted
    proof: DesignProof | None = None
    #: significant digits of the printed ball midpoints
    ball_digits: int = 30

    def to_dict(self) -> dict[str, Any]:
        out = {
            "params": [dict(p) for p in self.params],
            "residual": mpmath.nstr(self.residual, 5),
            "copies_found": self.copies_found,
        }
        if self.proof is not None:
            out.update(self.proof.to_dict(self.ball_digits))
        return out


@dataclasses.dataclass(frozen=True)
class Design:
    """The matching problem and one solution per symmetry orbit found.

    ``symmetries`` names the reparametrisations that leave every matched value unchanged
    (e.g. ``"a → -a (φ → -φ)"``); each reported solution is the canonical member of its orbit.
    """

    deq: DEQCoefficients
    family: Family
    layers: int
    kernel: str
    equations: tuple[str, ...]
    depth_rule: dict[str, Any]
    solutions: tuple[DesignSolution, ...]
    input_layer_trainable: bool
    symmetries: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        d = self.deq.to_dict()
        return {
            "setting": {
                "deq": d["activation"],
                "family": self.family.name,
                "parameters": [str(p) for p in self.family.params],
                "layers": self.layers,
                "kernel": self.kernel,
                "sigma_a2": d["sigma_a2"],
                "sigma_b2": d["sigma_b2"],
                "tau0": d["tau0"],
                "dps": d["dps"],
                "deq_trainable": d["trainable"],
                "enn_input_layer_trainable": self.input_layer_trainable,
            },
            "deq_coefficients": {k: d[k] for k in DEQ_KEYS[:-1] if d[k] is not None},
            "equations": list(self.equations),
            "depth_rule": self.depth_rule,
            "layers": self.layers,
            "symmetries": list(self.symmetries),
            "solutions": [s.to_dict() for s in self.solutions],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)


#: largest layer scale τ at which a family's moments are taken by quadrature (the accepted τ0
#: goes to 100; a matched layer has τ of order one)
MAX_QUADRATURE_TAU = 150


class _FamilyEvaluator:
    """Moments of the family at (τ, θ): compiled closed forms, or panel quadrature.

    Every evaluation is charged to ``budget`` (work units, :mod:`._design_search`); the last
    few are remembered, so a Jacobian column that moves only a later layer's parameters does
    not recompute the earlier layers (the same numbers, computed once).
    """

    def __init__(self, fam: Family, budget: SearchBudget | None = None) -> None:
        self.fam = fam
        self.budget = budget if budget is not None else SearchBudget(math.inf)
        closed = fam.closed_moments
        args = [TAU, *fam.params]
        self.closed = (
            compile_function("family_moments", args, [closed[n] for n in FAMILY_MOMENTS])
            if closed is not None
            else None
        )
        self.pieces = [
            compile_function("fam_piece", [X, *fam.params], [p.expr, sp.diff(p.expr, X)])
            for p in fam.pieces
        ]
        self.kinks = [compile_function("fam_kink", list(fam.params), [k]) for k in fam.kinks]
        self._memo: dict[tuple[Any, ...], dict[str, Any]] = {}

    def nodes(self, ctx: Any, tau: Any, theta: Sequence[Any]) -> int:
        """Quadrature nodes of one evaluation (0 for closed forms)."""
        if self.closed is not None:
            return 0
        kinks = [k(ctx, *theta)[0] for k in self.kinks]
        return sum(len(p.nodes) for p in panels(ctx, tau, kinks, ctx.dps))

    def __call__(self, ctx: Any, tau: Any, theta: Sequence[Any]) -> dict[str, Any]:
        key = (id(ctx), ctx.prec, tau, *theta)
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        out = self._evaluate(ctx, tau, theta)
        if len(self._memo) >= 64:
            self._memo.clear()
        self._memo[key] = out
        return out

    def _evaluate(self, ctx: Any, tau: Any, theta: Sequence[Any]) -> dict[str, Any]:
        unit = FLOAT_UNIT if ctx is mpmath.fp else precision_factor(ctx)
        if self.closed is not None:
            self.budget.spend(unit * CLOSED_UNITS)
            return dict(
                zip(
                    FAMILY_MOMENTS, (ctx.mpf(v) for v in self.closed(ctx, tau, *theta)), strict=True
                )
            )
        if not abs(tau) <= MAX_QUADRATURE_TAU:  # NaN too
            # the panels narrow as 1/τ: a layer scale this far from the O(1) of a solution
            # would cost ~35·τ panels; the trial point is rejected, like a singular one
            raise ValueError(f"layer scale τ = {float(tau):.3g} beyond {MAX_QUADRATURE_TAU}")
        kinks = [k(ctx, *theta)[0] for k in self.kinks]
        a = [ctx.zero] * 3
        b = [ctx.zero] * 3
        c = ctx.zero
        for panel in panels(ctx, tau, kinks, ctx.dps):
            self.budget.spend(unit * len(panel.nodes))
            f = self.pieces[panel.piece]
            for xi, w in zip(panel.nodes, panel.weights, strict=True):
                phi, d = f(ctx, tau * xi, *theta)
                wp = w * phi
                a[0] += wp
                a[1] += wp * xi
                a[2] += wp * xi * xi
                wq = wp * phi
                b[0] += wq
                b[2] += wq * xi * xi
                c += w * d * d
        return {
            "phi": a[0], "d1": a[1] / tau, "d2": (a[2] - a[0]) / tau**2,
            "sq": b[0], "sq2": (b[2] - b[0]) / tau**2, "dsq": c,
        }  # fmt: skip


def _enn(
    ctx: Any,
    ev: _FamilyEvaluator,
    thetas: Sequence[Sequence[Any]],
    tau0: Any,
    input_trainable: bool,
) -> dict[str, Any]:
    formulas = layer_formulas()
    fn, arg_names = formulas.fn, formulas.args
    prev = {
        "tau_prev": tau0, "alpha_1_prev": ctx.one, "alpha_2_prev": ctx.zero, "alpha_3_prev": ctx.zero,
        "alpha_4_prev": ctx.one,
        "beta_1_prev": ctx.one if input_trainable else ctx.zero, "beta_2_prev": ctx.zero,
        "beta_3_prev": ctx.zero, "kappa_prev": tau0 if input_trainable else ctx.zero,
    }  # fmt: skip
    out: dict[str, Any] = {}
    for theta in thetas:
        cm, _ = center_moments(ctx, ev(ctx, prev["tau_prev"], theta))
        vals = fn(ctx, *(dict(cm, **prev)[n] for n in arg_names))
        keys = LAYER_KEYS[:-1]
        out = dict(zip(keys, vals, strict=True))
        prev = {k + "_prev": v for k, v in out.items()}
    return out


@dataclasses.dataclass(frozen=True)
class _Transform:
    """θ ↦ Tθ on one layer's parameters: ``(Tθ)_j = signs[j] * θ[perm[j]]``."""

    perm: tuple[int, ...]
    signs: tuple[int, ...]

    def apply(self, theta: Sequence[Any]) -> list[Any]:
        return [s * theta[p] for p, s in zip(self.perm, self.signs, strict=True)]

    @property
    def is_identity(self) -> bool:
        return self.perm == tuple(range(len(self.perm))) and all(s == 1 for s in self.signs)

    def describe(self, params: Sequence[sp.Symbol]) -> str:
        new = [
            f"{'-' if s < 0 else ''}{params[p]}" for p, s in zip(self.perm, self.signs, strict=True)
        ]
        if len(params) == 1:
            return f"{params[0]} → {new[0]}"
        moved = [j for j in range(len(params)) if new[j] != str(params[j])]
        if all(self.perm[j] == j for j in moved):  # sign flips only: name just the flipped ones
            return ", ".join(f"{params[j]} → {new[j]}" for j in moved)
        return f"({', '.join(map(str, params))}) → ({', '.join(new)})"


def _candidate_transforms(npar: int) -> list[_Transform]:
    """Signed permutations (npar ≤ 3) or sign flips (npar ≤ 6) of one layer's parameters."""
    perms = list(itertools.permutations(range(npar))) if npar <= 3 else [tuple(range(npar))]
    if npar > 6:
        return []
    out = []
    for perm in perms:
        for signs in itertools.product((1, -1), repeat=npar):
            t = _Transform(tuple(perm), tuple(signs))
            if not t.is_identity:
                out.append(t)
    return out


def _phi(fam: Family, theta: Sequence[sp.Expr], x: sp.Expr) -> sp.Expr:
    sub = dict(zip(fam.params, theta, strict=True))
    for piece in fam.pieces:
        if piece.hi == sp.oo or bool(x < piece.hi.subs(sub)):
            return piece.expr.subs(sub).subs(X, x)
    raise AssertionError("unreachable: the last piece extends to +oo")  # pragma: no cover


def _meaning(fam: Family, t: _Transform, theta: Sequence[sp.Expr]) -> str:
    """What T does to the activation: φ(x; Tθ) = ±φ(±x; θ), checked at a few x."""
    xs = [sp.Rational(k, 7) for k in (-17, -9, -3, 2, 5, 13)]
    tt = t.apply(list(theta))
    forms = (
        (1, 1, "the same activation"),
        (-1, 1, "φ → -φ"),
        (1, -1, "mirror x → -x"),
        (-1, -1, "φ(x) → -φ(-x)"),
    )
    for so, si, name in forms:
        if all(abs(float(_phi(fam, tt, x) - so * _phi(fam, theta, si * x))) < 1e-12 for x in xs):
            return name
    return "same Gaussian moments"


def _symmetries(
    ctx: Any,
    fam: Family,
    values: Callable[[Any, Sequence[Any]], list[Any]],
    x: list[Any],
    probe: list[Any] | None,
    layers: int,
    tol: Any,
) -> tuple[list[_Transform], bool]:
    """The per-layer transforms (and whether a layer rescaling) leaving the matched values fixed.

    A transform is accepted when, applied to any one layer, it leaves every matched value
    unchanged at the solution ``x`` and, applied to the first layer, at a random ``probe``
    (so a coincidence at one point is not taken for a symmetry of the equations).
    """
    npar = len(fam.params)

    def ok(theta: Sequence[Any]) -> bool:
        sub = dict(zip(fam.params, theta, strict=True))
        return all(cn.subs(sub) > 0 for cn in fam.constraints)

    def same(y: list[Any], base: list[Any]) -> bool:
        try:
            vals = values(ctx, y)
        except (TypeError, ValueError, ZeroDivisionError, OverflowError):
            return False
        return all(abs(a - b) <= tol * max(1, abs(b)) for a, b in zip(vals, base, strict=True))

    base = values(ctx, x)
    probe_base = None
    if probe is not None:
        try:
            probe_base = values(ctx, probe)
        except (TypeError, ValueError, ZeroDivisionError, OverflowError):
            probe_base = None
    accepted = []
    for t in _candidate_transforms(npar):
        good = True
        for l in range(layers):
            theta = t.apply(x[l * npar : (l + 1) * npar])
            if not ok(theta) or not same(x[: l * npar] + theta + x[(l + 1) * npar :], base):
                good = False
                break
        if good and probe is not None and probe_base is not None:
            theta = t.apply(probe[:npar])
            good = not ok(theta) or same(theta + probe[npar:], probe_base)
        if good:
            accepted.append(t)
    rescale = layers >= 2
    lam = ctx.mpf(3) / 2
    for l in range(layers - 1):
        y = list(x)
        for j in range(npar):
            y[l * npar + j] *= lam
            y[(l + 1) * npar + j] /= lam
        if not (
            ok(y[l * npar : (l + 1) * npar])
            and ok(y[(l + 1) * npar : (l + 2) * npar])
            and same(y, base)
        ):
            rescale = False
            break
    return accepted, rescale


def _normalise(ctx: Any, y: list[Any], npar: int, layers: int) -> list[Any]:
    """Scale every layer but the last to max_j |θ_{l,j}| = 1 (the next layer absorbs it)."""
    y = list(y)
    for l in range(layers - 1):
        m = max(abs(v) for v in y[l * npar : (l + 1) * npar])
        if m == 0:
            continue
        for j in range(npar):
            y[l * npar + j] /= m
            y[(l + 1) * npar + j] *= m
    return y


def _canonical(
    pair: tuple[list[Any], list[Any]],
    group: Sequence[Sequence[_Transform | None]],
    npar: int,
    layers: int,
    rescale: bool,
    ctx_lo: Any,
    ctx_hi: Any,
) -> tuple[list[Any], list[Any]]:
    """The orbit member with the lexicographically largest parameters (positive leading ones)."""
    best: tuple[list[float], list[Any], list[Any]] | None = None
    for g in group:
        ys = []
        for c, x in zip((ctx_lo, ctx_hi), pair, strict=True):
            y: list[Any] = []
            for l, t in enumerate(g):
                theta = x[l * npar : (l + 1) * npar]
                y += list(theta) if t is None else t.apply(theta)
            ys.append(_normalise(c, y, npar, layers) if rescale else y)
        key = [round(float(v), 9) for v in ys[1]]
        if best is None or key > best[0]:
            best = (key, ys[0], ys[1])
    assert best is not None
    return best[1], best[2]


def _estimate_work(
    ev: _FamilyEvaluator,
    ctx: Any,
    dps: int,
    tau0: sp.Rational,
    layers: int,
    npar: int,
    starts: int,
) -> float:
    """Work units a design typically spends (:mod:`._design_search`), from the node counts of
    one evaluation in float64, at the working precision and at the polish's: ~25 float64 LM
    iterations and a few precise steps per start, 12 probes, a polish of ~4 solutions."""
    hi = mpmath.MPContext()
    hi.dps = dps + 25
    theta = [1] * npar

    def per_eval(c: Any, unit: float) -> float:
        tau = c.mpf(tau0.p) / tau0.q
        nodes = ev.nodes(c, tau, [c.mpf(t) for t in theta]) if ev.closed is None else CLOSED_UNITS
        return layers * unit * nodes * precision_factor(c)

    e_fp, e_mp, e_hi = per_eval(mpmath.fp, FLOAT_UNIT), per_eval(ctx, 1.0), per_eval(hi, 1.0)
    free = layers * npar
    runs = min(starts, 4) + (starts if starts > 4 else 0)
    per_start = 25 * (2 * free + 1) * e_fp + (2 * free + 5) * e_mp
    return runs * per_start + 12 * e_mp + 4 * (2 * free + 4) * e_hi


#: multi-start count: each start is a Levenberg–Marquardt solve at dps+10 (docs/limits.md)
MAX_STARTS = 200
MAX_SEED = 2**63 - 1


def design_enn(
    deq_activation: str | DEQProblem | DEQCoefficients,
    family: str,
    *,
    layers: int | None = None,
    kernel: str = "ck",
    sigma_a2: Any = "0.2",
    sigma_b2: Any = None,
    tau0: Any = 1,
    dps: int = 30,
    trainable: Sequence[str] = ("a", "A"),
    starts: int = 24,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
    certify: bool = True,
) -> Design:
    """Solve the matching equations for an ``layers``-layer ENN from ``family``.

    The explicit network's equivalent (ICML 2024, Theorem 3) is matched to the DEQ's: τ̃_L = γ*
    and α̃_{L,i} = α*_i (CK matching), or the β/κ analogues (NTK matching), solved by multi-start
    Levenberg–Marquardt at high precision.  Solutions related by a symmetry of the matching
    equations (a sign flip or mirror of one layer's parameters, a layer rescaling of a homogeneous
    family) are reported once, by the canonical member of their orbit; ``Design.symmetries``
    names the symmetries found and ``depth_rule["normalization"]`` says which parameters were
    fixed, to what, and why.

    Args:
      deq_activation: an activation (then σ_a², σ_b², τ0, dps, trainable set the problem), a
        :class:`DEQProblem`, or a computed :class:`DEQCoefficients` (reused as is).
      family: the ENN's activation family: ``hard_tanh``, ``leaky_relu``, ``polynomialD`` or an
        expression in ``x`` with parameters (``"a*tanh(b*x)"``); see ``deqrmt families``.
      layers: the ENN's depth; None applies the depth rule (1 if α*₂ = α*₃/2, else 2) for CK
        matching, and its β analogue for NTK matching.
      kernel: ``"ck"`` or ``"ntk"``.
      sigma_a2, sigma_b2, tau0, dps, trainable: the DEQ problem, as for :func:`deq_coefficients`.
      starts: number of multi-start points of the root search.
      seed: seed of the multi-start points.
      progress: if given, called with a short line before each multi-start.
      certify: prove each solution by a Krawczyk step on the matching system
        (:mod:`._design_proof`): ``solution.proof`` says ``certified`` with the parameters as
        balls, or why not; False skips it (``proof`` None).

    Returns:
      A ``Design``: ``solutions`` (one ``DesignSolution`` per orbit, with ``params``, one
      mapping of parameter name → decimal string per layer, and the ``residual``),
      ``symmetries``, ``equations`` (the matching equations as text), ``depth_rule``, ``deq``
      (the :class:`DEQCoefficients` matched) and ``to_dict()``/``to_json()`` (what ``deqrmt
      design --json`` prints).

    Raises:
      InvalidArgument: an unknown kernel or family, a family with too few parameters to match,
        or no real solution found.
      ContractionError, UnknownActivation, ParseError: as for :func:`deq_coefficients`.

    Example:
      >>> d = design_enn("tanh", "hard_tanh", dps=15, starts=2)
      >>> d.symmetries, len(d.solutions)
      (('a → -a (φ → -φ)',), 1)
      >>> sorted(d.solutions[0].params[0])
      ['a', 'c']
    """
    # the boundary check (deqrmt._arguments): types and budgets before any work
    _arguments.text(family, "family", "a family name or expression, e.g. 'a*tanh(b*x)'")
    _arguments.choice(kernel, "kernel", ("ck", "ntk"))
    if layers is not None:
        _arguments.integer(layers, "layers", 1, MAX_LAYERS)
    _arguments.integer(starts, "starts", 1, MAX_STARTS)
    seed = _arguments.seed(seed)
    _arguments.optional_callable(progress, "progress")
    if kernel not in ("ck", "ntk"):
        raise InvalidArgument(f"kernel={kernel!r}: choose 'ck' or 'ntk'.")
    if isinstance(layers, bool) or not (layers is None or isinstance(layers, int)):
        raise InvalidArgument(f"layers={layers!r}: expected an integer or None.")
    if layers is not None and not 1 <= layers <= MAX_LAYERS:
        raise BudgetExceeded(f"layers={layers}: choose 1 to {MAX_LAYERS} layers (docs/limits.md).")
    if isinstance(starts, bool) or not isinstance(starts, int) or not 1 <= starts <= MAX_STARTS:
        raise BudgetExceeded(
            f"starts={starts!r}: choose 1 to {MAX_STARTS} multi-starts (docs/limits.md)."
        )
    seed = bounded_int(seed, "seed", 0, MAX_SEED, fix="a seed is a non-negative integer")
    fam = get_family(family)  # refused before the DEQ is solved
    budget = SearchBudget()
    try:
        return _design(
            deq_activation, fam, layers=layers, kernel=kernel, sigma_a2=sigma_a2,
            sigma_b2=sigma_b2, tau0=tau0, dps=dps, trainable=trainable, starts=starts, seed=seed,
            progress=progress, budget=budget, certify=certify,
        )  # fmt: skip
    except OutOfBudget:
        raise budget.exceeded(f"the design of the {fam.name!r} ENN") from None


def _design(
    deq_activation: str | DEQProblem | DEQCoefficients,
    fam: Family,
    *,
    layers: int | None,
    kernel: str,
    sigma_a2: Any,
    sigma_b2: Any,
    tau0: Any,
    dps: int,
    trainable: Sequence[str],
    starts: int,
    seed: int,
    progress: Callable[[str], None] | None,
    budget: SearchBudget,
    certify: bool = True,
) -> Design:
    if isinstance(deq_activation, DEQCoefficients):
        deq = deq_activation
    else:
        deq = deq_coefficients(deq_activation, sigma_a2, sigma_b2, tau0, dps, trainable=trainable)
    dps, trainable = deq.dps, deq.trainable
    v = deq.values
    with mpmath.workdps(dps + 10):
        a2, a3 = v["alpha_2"].value, v["alpha_3"].value
        gap = abs(a2 - a3 / 2)
        one_ok = gap <= mpmath.mpf(10) ** (-(dps - 3)) * max(abs(a3), mpmath.mpf(10) ** (-dps))
    rule = {
        "alpha_2": v["alpha_2"].text,
        "alpha_3_over_2": mpmath.nstr(a3 / 2, dps),
        "one_layer_suffices": bool(one_ok),
        "min_layers": 1 if one_ok else 2,
        "statement": "a one-layer ENN has alpha~_{1,2} = alpha~_{1,3}/2; one layer suffices iff alpha*_2 = alpha*_3/2",
    }
    if layers is None:
        layers = 1 if one_ok else 2
    if layers == 1 and not one_ok and kernel == "ck":
        raise InvalidArgument(
            f"a one-layer ENN cannot match this DEQ's CK: it has α̃₂ = α̃₃/2, but α*₂ = {v['alpha_2'].text} "
            f"≠ α*₃/2 = {mpmath.nstr(a3 / 2, 12)}; use --layers 2."
        )
    input_trainable = "B" in trainable
    ev = _FamilyEvaluator(fam, budget)
    npar = len(fam.params)
    if kernel == "ck":
        names = ("tau_sq", "alpha_1", "alpha_2", "alpha_3")
        targets = [
            v["gamma_star"].value ** 2,
            v["alpha_1"].value,
            v["alpha_2"].value,
            v["alpha_3"].value,
        ]
    else:
        names = ("kappa_sq", "beta_1", "beta_2", "beta_3")
        targets = [  # deq[...] raises a named error when the DEQ's NTK diverges
            deq["kappa_star"].value ** 2,
            deq["beta_1"].value,
            deq["beta_2"].value,
            deq["beta_3"].value,
        ]

    def enn_values(ctx: Any, flat: Sequence[Any]) -> list[Any]:
        thetas = [flat[l * npar : (l + 1) * npar] for l in range(layers)]
        out = _enn(ctx, ev, thetas, ctx.mpf(deq.tau0.p) / deq.tau0.q, input_trainable)
        if kernel == "ck":
            return [out["tau"] ** 2, out["alpha_1"], out["alpha_2"], out["alpha_3"]]
        return [out["kappa"] ** 2, out["beta_1"], out["beta_2"], out["beta_3"]]

    rng = random.Random(seed)

    def sample() -> list[float]:
        for _ in range(1000):
            theta = [rng.uniform(-2.5, 2.5) for _ in range(npar)]
            sub = dict(zip(fam.params, theta, strict=True))
            if all(float(cn.subs(sub)) > 0.05 for cn in fam.constraints) and all(
                abs(t) > 0.05 for t in theta
            ):
                return theta
        raise NoConvergence("could not sample parameters satisfying the family's constraints.")

    ctx = mpmath.MPContext()
    ctx.dps = dps + 10
    estimate = _estimate_work(ev, ctx, dps, deq.tau0, layers, npar, starts)
    budget.refuse(
        f"the design ({layers} layer(s) of {fam.name!r}, dps={dps}, starts={starts})", estimate
    )
    if progress is not None:
        progress(
            f"budget: {budget.limit:,.0f} work units (one unit: the family at one quadrature node "
            f"at {ctx.dps} digits); this design needs about {estimate:,.0f}"
        )
    # Which equations are identically satisfied (e.g. α̃₂ = α̃₃ = 0 for an odd family vs an odd φ)?
    probe_vals = []
    for _ in range(12):
        try:
            vals = enn_values(ctx, [ctx.mpf(t) for l in range(layers) for t in sample()])
        except (TypeError, ValueError, ZeroDivisionError, OverflowError):
            continue  # a complex or singular point of the family: probe elsewhere
        if not any(isinstance(v, ctx.mpc) for v in vals):
            probe_vals.append(vals)
        if len(probe_vals) == 3:
            break
    if not probe_vals:
        raise InvalidArgument(
            f"the family {fam.name} gives complex or singular moments at every probed parameter; "
            "check its domain (e.g. sqrt or log of a parameter that can be negative)."
        )
    active = [
        i for i in range(4)
        if not (targets[i] == 0 and all(abs(pv[i]) < ctx.mpf(10) ** (-(dps + 5)) for pv in probe_vals))
    ]  # fmt: skip
    if len(active) > npar * layers:
        raise InvalidArgument(
            f"{len(active)} matching equations but only {npar * layers} parameters "
            f"({fam.name} × {layers} layers); use more layers or a richer family."
        )
    equations = tuple(f"enn.{names[i]} = deq.{names[i]}" for i in active)
    scale = [abs(t) if t != 0 else ctx.one for t in targets]

    # the constraints (c > 0, a − b > 0), compiled: SymPy's subs per residual cost more than
    # the closed-form moments themselves; the sign of a difference is exact in any precision
    constraints = (
        compile_function("fam_constraints", list(fam.params), list(fam.constraints))
        if fam.constraints
        else None
    )

    def residual_in(c: Any) -> Callable[[list[Any]], list[Any]]:
        tgt = [c.mpf(t) for t in targets]
        sc = [c.mpf(s) for s in scale]

        def r(flat: list[Any]) -> list[Any]:
            if constraints is not None:
                for l in range(layers):
                    if any(v <= 0 for v in constraints(c, *flat[l * npar : (l + 1) * npar])):
                        raise ValueError("constraint")
            try:
                vals = enn_values(c, flat)
            except TypeError as e:  # a complex moment (sqrt/log of a negative): not a solution
                raise ValueError(f"complex: {e}") from None
            if any(isinstance(v, c.mpc) for v in vals):
                raise ValueError("complex")
            return [(vals[i] - tgt[i]) / sc[i] for i in active]

        return r

    tol = ctx.mpf(10) ** (-(dps + 5))
    fixed: dict[int, Any] = {}
    found = multistart(
        ctx, residual_in, layers * npar, fixed, sample, layers, min(starts, 4), tol, dps,
        progress, "probe", precise_first=True,
    )  # fmt: skip
    # A family with a scaling symmetry (leaky ReLU is positively homogeneous: scaling one layer
    # up and the next down changes nothing) has a continuum of solutions; fix the degenerate
    # directions by normalising leading parameters to 1 and solve again for isolated solutions.
    nullity, fix_idx = _nullity(ctx, residual_in(ctx), found[0][0]) if found else (0, [])
    if nullity:
        x_first = found[0][0]
        # ±1 first (a pure normalisation for a scaling symmetry), then the first solution's own
        # values rounded to two digits (a point near the solution set, so still solvable).
        for choice in ("unit", "rounded"):
            fixed = {
                j: (
                    ctx.sign(x_first[j])
                    if choice == "unit"
                    else ctx.mpf(mpmath.nstr(x_first[j], 2))
                )
                for j in fix_idx
            }
            found = multistart(
                ctx, residual_in, layers * npar, fixed, sample, layers, starts, tol, dps,
                progress, f"search with {len(fixed)} parameter(s) fixed",
            )  # fmt: skip
            if found:
                break
    elif starts > 4:
        found = multistart(
            ctx, residual_in, layers * npar, fixed, sample, layers, starts, tol, dps,
            progress, "search",
        )  # fmt: skip
    if not found:
        raise InvalidArgument(
            f"no real solution found for {fam.name} × {layers} layer(s) matching the {kernel.upper()} "
            f"of the {deq.activation.name} DEQ ({starts} starts); try another family or more layers."
        )
    # Polish each solution at higher precision: the digits that agree are the ones reported.
    hi = mpmath.MPContext()
    hi.dps = dps + 25
    r_hi = residual_in(hi)
    n_all = layers * npar
    fixed_hi = {j: hi.mpf(v) for j, v in fixed.items()}

    def r_hi_free(free: list[Any]) -> list[Any]:
        return r_hi(_expand(free, fixed_hi, n_all))

    r_fp = residual_in(mpmath.fp)
    fixed_fp = {j: float(v) for j, v in fixed.items()}

    def r_fp_free(free: list[Any]) -> list[Any]:
        return r_fp(_expand(free, fixed_fp, n_all))

    polished = []
    for x, _ in sorted(found, key=lambda s: [float(t) for t in s[0]]):
        free0 = [hi.mpf(t) for j, t in enumerate(x) if j not in fixed]
        # from a solution good to ~10^-(dps+5): Newton's chord steps with a float64 Jacobian
        # gain ~10 digits each (Levenberg–Marquardt if they do not)
        try:
            near = [float(t) for t in free0]
            jac = _jacobian(mpmath.fp, r_fp_free, near, len(r_fp_free(near)))
        except (ValueError, ZeroDivisionError, OverflowError, TypeError):
            jac = None
        tol_hi = hi.mpf(10) ** (-(dps + 22))
        if jac is None:
            free_h, nh = _solve_lm(hi, r_hi_free, free0, tol_hi, lam0="1e-12")
        else:
            free_h, nh = refine(hi, r_hi_free, free0, tol_hi, jac)
        polished.append((x, _expand(free_h, fixed_hi, n_all), nh))

    # Symmetries of the matching equations, tested at the first solution (and a random point).
    if progress is not None:
        progress("testing sign, mirror and rescaling symmetries")
    try:
        probe = [ctx.mpf(t) for l in range(layers) for t in sample()]
    except NoConvergence:
        probe = None
    transforms, rescale = _symmetries(
        ctx, fam, enn_values, polished[0][0], probe, layers, ctx.mpf(10) ** (-dps)
    )
    rescale = rescale and nullity == layers - 1
    group: list[tuple[_Transform | None, ...]] = list(
        itertools.product([None, *transforms], repeat=layers)
    )[:4096]
    params_syms = fam.params
    rng_q = random.Random(seed + 1)
    theta_q = []
    for _ in range(100):
        theta_q = [
            sp.Rational(rng_q.randint(7, 29), 11) * rng_q.choice((1, -1)) for _ in params_syms
        ]
        sub = dict(zip(params_syms, theta_q, strict=True))
        if all(cn.subs(sub) > 0 for cn in fam.constraints):
            break
    symmetries = []
    for t in transforms:
        meaning = _meaning(fam, t, theta_q)
        per_layer = " in each layer" if layers > 1 else ""
        symmetries.append(f"{t.describe(params_syms)} ({meaning}){per_layer}")
    if rescale:
        symmetries.append(
            "(θ_l, θ_{l+1}) → (λ·θ_l, θ_{l+1}/λ), λ > 0 (layer rescaling: the family is "
            "positively homogeneous)"
        )

    # One representative per orbit: canonicalise, then drop repeats.
    reps: list[tuple[list[Any], list[Any], Any, int]] = []
    for x, xh, nh in polished:
        y, yh = _canonical((x, xh), group, npar, layers, rescale, ctx, hi)
        for k, (_, zh, zn, count) in enumerate(reps):
            if hi.norm([a - b for a, b in zip(yh, zh, strict=True)]) <= hi.mpf("1e-8") * hi.norm(
                zh
            ):
                reps[k] = (reps[k][0], zh, max(zn, nh), count + 1)
                break
        else:
            reps.append((y, yh, nh, 1))

    solutions: list[DesignSolution] = []
    reps_sorted = sorted(reps, key=lambda r: [-float(t) for t in r[1]])
    for y, yh, nh, count in reps_sorted:
        params = []
        for l in range(layers):
            layer = {}
            for j, p in enumerate(fam.params):
                idx = l * npar + j
                a, b = y[idx], yh[idx]
                if idx in fixed and not rescale:
                    layer[str(p)] = mpmath.nstr(b, 3)
                    continue
                n = dps
                while n > 1 and mpmath.nstr(a, n, strip_zeros=False) != mpmath.nstr(
                    b, n, strip_zeros=False
                ):
                    n -= 1
                layer[str(p)] = hi.nstr(b, n)
            params.append(layer)
        values = tuple(tuple(yh[l * npar : (l + 1) * npar]) for l in range(layers))
        proof = None
        if certify:
            if progress is not None:
                progress(f"Krawczyk proof of solution {len(solutions) + 1}")
            held = sorted(fixed)
            point = list(yh)
            for j in held:  # the exact value reported ("0.64"), not its binary neighbour
                point[j] = Fraction(params[j // npar][str(fam.params[j % npar])])
            if rescale:  # the normalisation holds max_j |θ_{l,j}| = 1 in every layer but the last
                held = [_largest(yh, l, npar) for l in range(layers - 1)]
            proof = _proof(fam, point, held, layers, kernel, active, deq, input_trainable, budget)
        solutions.append(
            DesignSolution(tuple(params), values, nh, count, proof=proof, ball_digits=dps + 10)
        )
    if fixed:
        rule = dict(
            rule,
            normalization=_normalization_text(
                fam, fixed, npar, layers, rescale, nullity, reps_sorted[0][1], bool(transforms)
            ),
        )
    return Design(
        deq, fam, layers, kernel, equations, rule, tuple(solutions), input_trainable,
        tuple(symmetries),
    )  # fmt: skip


def _largest(y: Sequence[Any], layer: int, npar: int) -> int:
    """The flat index of ``layer``'s parameter largest in absolute value."""
    return max(range(layer * npar, (layer + 1) * npar), key=lambda j: abs(y[j]))


def _proof(
    fam: Family,
    yh: Sequence[Any],
    held: Sequence[int],
    layers: int,
    kernel: str,
    active: Sequence[int],
    deq: DEQCoefficients,
    input_trainable: bool,
    budget: SearchBudget,
) -> DesignProof:
    """The Krawczyk proof of one solution against the DEQ's proven balls."""
    if not deq.certified:
        return DesignProof(
            False, reason=f"the DEQ's coefficients are not proven ({deq.reason or 'no proof'})"
        )
    keys = ("gamma_star", "alpha_1", "alpha_2", "alpha_3")
    if kernel != "ck":
        keys = ("kappa_star", "beta_1", "beta_2", "beta_3")
    matched = [deq[k] for k in keys]  # deq[...] raises a named error when the NTK diverges
    for k, m in zip(keys, matched, strict=True):
        if m.radius is None:
            return DesignProof(False, reason=f"the DEQ's {k} is not proven (no Arb ball)")
    with workprec(bits_for_digits(deq.dps + 40)):  # squaring a proven ball at its own precision
        targets = [matched[0].ball ** 2, *(m.ball for m in matched[1:])]
    return prove_design_solution(
        fam, yh, held, layers=layers, kernel=kernel, active=active, targets=targets,
        tau0=deq.tau0, input_trainable=input_trainable, dps=deq.dps, budget=budget,
    )  # fmt: skip


def _normalization_text(
    fam: Family,
    fixed: dict[int, Any],
    npar: int,
    layers: int,
    rescale: bool,
    nullity: int,
    shown: Sequence[Any],
    symmetric: bool,
) -> list[str]:
    """Why parameters are fixed, and to what, in words (one sentence per reason)."""
    if rescale:
        hidden = ", ".join(
            f"max(|{'|, |'.join(f'{p}_{l + 1}' for p in fam.params)}|) = 1"
            for l in range(layers - 1)
        )
        return [
            f"{hidden}: the family is positively homogeneous, so scaling one layer's parameters by "
            "any λ > 0 and the next layer's by 1/λ leaves every matched value unchanged (a "
            "continuous scaling symmetry, whence a continuum of solutions); every layer but the "
            "last is scaled so that its largest parameter in absolute value is 1."
        ]
    # the values as reported (a sign symmetry may have flipped the solver's fixed values)
    names = ", ".join(
        f"{'|' if symmetric else ''}{fam.params[j % npar]}_{j // npar + 1}{'|' if symmetric else ''}"
        f" = {mpmath.nstr(abs(shown[j]) if symmetric else shown[j], 3)}"
        for j in sorted(fixed)
    )
    unit = all(abs(v) == 1 for v in fixed.values())
    how = (
        "fixed to ±1 (the sign of the first solution found)"
        if unit
        else "fixed to the first solution's values rounded to 2 digits (a point next to the "
        "solution set; ±1 admitted no solution)"
    )
    return [
        f"{names}: the matching equations leave {nullity} direction(s) free at the solutions "
        f"(their Jacobian has rank {npar * layers - nullity} for {npar * layers} parameters), so "
        f"the solutions form a {nullity}-dimensional continuum; these parameters are {how} to "
        "report isolated representatives."
    ]

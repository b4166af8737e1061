r"""Certified designs: a Krawczyk proof that a matching system has one root in a box.

A design (:mod:`._design`) reports solutions θ̂ of the matching equations F(θ) = 0, with
F(θ) = ENN(θ) − DEQ (ICML 2024, "key idea": τ̃_L² = γ*², α̃_{L,i} = α*_i, or the NTK's β/κ),
found by a float64 multi-start and polished in mpmath.  This module proves each of them with
the multivariate Krawczyk operator (Krawczyk 1969; Moore, *Interval Analysis*; Neumaier,
*Interval Methods for Systems of Equations*, Thm 5.1.7):

    K(X) = y − C F(y) + (I − C J(X)) (X − y),     y = mid X,  C ≈ J(y)^(−1) (float64),

where J(X) encloses the Jacobian of F at every point of the box X.  K(X) ⊂ int X proves
that F has exactly one zero in X, and that it lies in K(X); the printed ball is K(X).

**The Jacobian over a box** is the *analytic* one, evaluated in interval (Arb ball)
arithmetic: for a family with closed-form Gaussian moments (hard tanh, leaky ReLU,
polynomials; :attr:`deqrmt.symbolic.Family.closed_moments`) one layer of the ENN,
(τ̃, α̃, β̃, κ̃)_{l−1}, θ_l ↦ (τ̃, α̃, β̃, κ̃)_l, is a SymPy expression (the family's moments at
τ = τ̃_{l−1}, centered by the derived identities, into :func:`deqrmt.symbolic.derive_layer`);
its partial derivatives are taken by SymPy (exact differentiation, no finite differences),
compiled through the one printer, and the chain rule over layers is carried in balls, so
J(X) ⊇ {F'(θ) : θ ∈ X}.  The closed forms hold where the family's constraints do (hard tanh:
c > 0); these are proved on every box first.  The DEQ's side enters as its proven balls
(:func:`deqrmt.numeric.deq_coefficients`, certified), so the root proved is the root of the
true system, for every DEQ value in its ball.

Parameters the design fixed to remove a continuous symmetry (``depth_rule["normalization"]``)
stay at their reported values (exact decimals such as 0.64, entering as Arb balls: the Krawczyk
test then proves a unique root for every value in that ball); equations the design found identically
satisfied (0 = 0 at every probe, e.g. α̃₂ = α̃₃ = 0 for an odd family) are not part of the
system: both sides are checked to contain 0 on the proved box (a consistency check of those,
not a proof).

What is not proved says why (``reason``): a family without closed-form moments (quadrature
in the parameters is not enclosed in balls), a DEQ whose values are not proven, more equations
than free parameters (two-layer leaky ReLU: its rescaling removes one), a singular
Jacobian (a symmetric or degenerate solution: no box of it has a unique root), every box
tried too wide, or the design's work budget spent.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import mpmath
import sympy as sp
from flint import arb, arb_mat

from .._json import JSONObject
from .._text import ball_text
from ..symbolic import TAU, Family, derive_fixed_point, derive_layer
from ._arb import ArbContext, bits_for_digits, to_arb, workprec
from ._context import Mpf
from ._printer import compile_function

__all__ = ["DesignProof", "prove_design_solution"]

#: the layer recursion's outputs, in :func:`derive_layer`'s order
_KEYS = ("tau", "alpha_1", "alpha_2", "alpha_3", "alpha_4", "beta_1", "beta_2", "beta_3", "kappa")
#: SymPy nodes whose derivative is not continuous (a Krawczyk step needs F ∈ C¹ on the box)
_NOT_SMOOTH = (sp.Piecewise, sp.Abs, sp.sign, sp.Heaviside, sp.Min, sp.Max, sp.floor, sp.ceiling)
#: work units of one evaluation of one layer and its Jacobian on balls at ~60 digits (the
#: design's unit: the family at one node at 40 digits; measured 28 for hard tanh, 49 for a
#: cubic), scaled like the search's by the precision (:func:`._design_search.precision_factor`)
_LAYER_UNITS = 60.0
#: boxes tried: the Newton correction |C F(y)| widened by these factors
_INFLATE = (16, 2**12, 2**24)


class NotProvable(Exception):
    """Why a solution cannot be proved (the text becomes the solution's ``reason``)."""


@dataclasses.dataclass(frozen=True)
class DesignProof:
    """The outcome of the Krawczyk step for one solution.

    ``balls[l]`` maps layer l's parameter names to an ``arb`` containing the unique root of
    the matching system in the box tried (fixed parameters: exact balls); None when
    ``certified`` is False, and then ``reason`` says why.
    """

    certified: bool
    balls: tuple[dict[str, arb], ...] | None = None
    reason: str | None = None
    prec_bits: int | None = None

    def to_dict(self, digits: int) -> JSONObject:
        """JSON fields: ``certified``, then ``balls`` (midpoint and radius text, rounded
        outward) and ``prec_bits``, or the ``reason``."""
        out: JSONObject = {"certified": self.certified}
        if self.certified and self.balls is not None:
            out["balls"] = [
                {k: dict(zip(("midpoint", "radius"), _ball_text(b, digits), strict=True))
                 for k, b in layer.items()}
                for layer in self.balls
            ]  # fmt: skip
            out["prec_bits"] = self.prec_bits
        else:
            out["reason"] = self.reason
        return out

    @property
    def summary(self) -> str:
        """One line for the table: ``proven (Krawczyk)`` or why not."""
        return "proven (Krawczyk)" if self.certified else f"not proven: {self.reason}"


def _exact(x: arb) -> Fraction:
    man, exp = x.mid().man_exp()
    m = int(man)
    e = int(exp)
    return Fraction(m * 2**e) if e >= 0 else Fraction(m, 2 ** (-e))


def _ball_text(b: arb, digits: int) -> tuple[str, str]:
    """(midpoint, radius) decimal text of ``b`` rounded outward (:func:`ball_text`), the
    midpoint to the digits the radius leaves (and 3 more), at most ``digits``."""
    mid, rad = _exact(b.mid()), _exact(arb(b.rad()))
    if rad > 0 and mid != 0:
        digits = max(5, min(digits, int(math.log10(abs(mid) / rad)) + 3))
    return ball_text(mid, rad, digits)


def _mpf_arb(v: Mpf | Fraction | int) -> arb:
    """An mpmath number exactly (a dyadic rational, from its own context: ``mpmath.mpf(v)``
    would round it to mpmath's global 53 bits, and ``man_exp`` drops the sign); a Fraction or
    an int as :func:`to_arb` does."""
    if isinstance(v, (Fraction, int)):
        return to_arb(v)
    sign, man, exp, _ = v._mpf_
    if not man and exp:  # ±inf, nan
        raise NotProvable(f"the solution has a non-finite parameter ({v})")
    m = -int(man) if sign else int(man)
    return arb(m) * arb(2) ** int(exp) if exp >= 0 else arb(m) / arb(2) ** (-int(exp))


@functools.lru_cache(maxsize=16)
def _layer_map(fam: Family) -> tuple[Any, int]:
    """One ENN layer and its Jacobian, compiled: ``fn(ctx, *prev, *θ)`` returns the 9 outputs
    (:data:`_KEYS`), then their partial derivatives row by row (9 prev values, then θ).

    Raises:
      NotProvable: the family has no smooth closed-form moments.
    """
    closed = fam.closed_moments
    if closed is None:
        raise NotProvable(
            f"the family {fam.name} has no closed-form Gaussian moments: its quadrature is not "
            "enclosed in balls as a function of the parameters, so no Jacobian enclosure over a box"
        )
    if any(e.has(*_NOT_SMOOTH) for e in closed.values()):
        raise NotProvable(
            f"the closed-form moments of {fam.name} are piecewise in the parameters (not C¹ on "
            "every box)"
        )
    lf = derive_layer()
    fpm = derive_fixed_point(center=True)
    names = fpm.m.names()
    by_name = {n: s for s, n in names.items()}
    prev = [lf.prev[k] for k in _KEYS]
    tau_prev = lf.prev["tau"]
    # the chain rule through the raw moments R_n(τ̃_{l−1}, θ): SymPy differentiates the layer
    # formulas in R and the closed forms apart (small expressions; differentiating the
    # composition costs 3× more), and the printer's CSE shares what repeats
    raw = {n: sp.Dummy(f"raw_{n}") for n in closed}
    to_raw = {by_name[n]: r for n, r in raw.items()}
    centered = {s: e.xreplace(to_raw) for s, e in fpm.centered.items() if names[s] in closed}
    outs = [sp.sqrt(lf.tau_sq), *lf.alpha, *lf.beta, sp.sqrt(lf.kappa_sq)]
    outs = [o.xreplace({**to_raw, **centered}) for o in outs]
    missing = set().union(*(o.free_symbols for o in outs)) - set(prev) - set(raw.values())
    if missing:  # pragma: no cover - a moment the family does not provide
        raise NotProvable(f"the layer needs moments {sorted(map(str, missing))} in closed form")
    moments = {r: closed[n].subs(TAU, tau_prev) for n, r in raw.items()}
    variables = [*prev, *fam.params]
    d_moments = {(r, v): sp.diff(m, v) for r, m in moments.items() for v in (tau_prev, *fam.params)}
    jac = []
    for o in outs:
        d_raw = {r: sp.diff(o, r) for r in raw.values()}
        for v in variables:
            d = sp.diff(o, v) if v in prev else sp.S.Zero
            if v == tau_prev or v in fam.params:
                d += sum((d_raw[r] * d_moments[r, v] for r in raw.values()), sp.S.Zero)
            jac.append(d)
    fn = compile_function(
        "design_layer_jacobian", variables, [e.xreplace(moments) for e in (*outs, *jac)]
    )
    return fn, len(variables)


@functools.lru_cache(maxsize=16)
def _constraints(fam: Family) -> Any:
    """The family's constraints (each > 0), compiled; None when it has none."""
    if not fam.constraints:
        return None
    return compile_function("design_constraints", list(fam.params), list(fam.constraints))


def _network(
    fam: Family, thetas: Sequence[Sequence[arb]], free: Sequence[int], tau0: sp.Rational,
    input_trainable: bool, prec: int,
) -> tuple[dict[str, arb], dict[str, list[arb]]]:  # fmt: skip
    """The last layer's values and their gradients in the ``free`` parameters (flat indices),
    in balls: every ball contains the true value at every parameter point of ``thetas``."""
    fn, nvar = _layer_map(fam)
    npar = len(fam.params)
    ctx = ArbContext(prec)
    zero, one, t0 = arb(0), arb(1), to_arb(tau0)
    state = {
        "tau": t0, "alpha_1": one, "alpha_2": zero, "alpha_3": zero, "alpha_4": one,
        "beta_1": one if input_trainable else zero, "beta_2": zero, "beta_3": zero,
        "kappa": t0 if input_trainable else zero,
    }  # fmt: skip
    grad = {k: [zero] * len(free) for k in _KEYS}
    constraints = _constraints(fam)
    with workprec(prec):
        for l, theta in enumerate(thetas):
            if not state["tau"] > 0:
                raise NotProvable(f"layer {l + 1}: τ̃_{l} is not proved positive on the box")
            # the closed forms hold where the constraints do (hard tanh: c > 0), on all the box
            if constraints is not None and not all(v > 0 for v in constraints(ctx, *theta)):
                raise NotProvable(
                    f"layer {l + 1}: the family's constraints "
                    f"({', '.join(f'{c} > 0' for c in fam.constraints)}) are not proved on the box"
                )
            vals = fn(ctx, *(state[k] for k in _KEYS), *theta)
            out, jac = vals[:9], vals[9:]
            new_grad = {}
            for i, k in enumerate(_KEYS):
                row = jac[i * nvar : (i + 1) * nvar]
                g = []
                for c, j in enumerate(free):
                    s = sum((row[p] * grad[kp][c] for p, kp in enumerate(_KEYS)), zero)
                    if j // npar == l:
                        s += row[9 + j % npar]
                    g.append(s)
                new_grad[k] = g
            state = dict(zip(_KEYS, out, strict=True))
            grad = new_grad
            for k, v in state.items():
                if not v.is_finite() or not all(g.is_finite() for g in grad[k]):
                    raise NotProvable(
                        f"layer {l + 1}: {k} or its derivative is not finite in ball arithmetic"
                    )
    return state, grad


def _system(
    fam: Family, box: Sequence[arb], free: Sequence[int], layers: int, kernel: str,
    active: Sequence[int], targets: Sequence[arb], tau0: sp.Rational, input_trainable: bool,
    prec: int,
) -> tuple[list[arb], list[list[arb]], list[arb]]:  # fmt: skip
    """F on ``box`` (the active equations), its Jacobian in the free parameters, and the
    inactive equations' residuals (each should contain 0)."""
    npar = len(fam.params)
    thetas = [list(box[l * npar : (l + 1) * npar]) for l in range(layers)]
    state, grad = _network(fam, thetas, free, tau0, input_trainable, prec)
    first, rest = ("tau", ("alpha_1", "alpha_2", "alpha_3")) if kernel == "ck" else (
        "kappa", ("beta_1", "beta_2", "beta_3"))  # fmt: skip
    with workprec(prec):
        vals = [state[first] ** 2] + [state[k] for k in rest]
        grads = [[2 * state[first] * g for g in grad[first]]] + [grad[k] for k in rest]
        res = [vals[i] - targets[i] for i in range(4)]
    f = [res[i] for i in active]
    jac = [grads[i] for i in active]
    inactive = [res[i] for i in range(4) if i not in active]
    return f, jac, inactive


def prove_design_solution(
    fam: Family,
    solution: Sequence[Any],
    fixed: Sequence[int],
    *,
    layers: int,
    kernel: str,
    active: Sequence[int],
    targets: Sequence[arb],
    tau0: sp.Rational,
    input_trainable: bool,
    dps: int,
    budget: Any | None = None,
) -> DesignProof:
    """Prove that the matching system has exactly one root near ``solution`` (a flat list of
    mpmath numbers, layer by layer), by one Krawczyk test per box tried.

    Args:
      fam: the ENN's family; ``layers`` its depth; ``kernel`` ``"ck"`` or ``"ntk"``.
      solution: the polished solution (the box's midpoint; fixed entries are taken exactly).
      fixed: flat indices of the parameters held fixed (a continuous symmetry removed).
      active: which of the four matching equations form the system.
      targets: the DEQ's four matched values as proven balls (τ*²-like first).
      tau0, input_trainable: the input layer, as in the design.
      dps: the design's digits; the proof works at ~dps + 20 digits.
      budget: the design's :class:`~._design_search.SearchBudget`; the proof is skipped with a
        reason when what it needs would go past it.

    Returns:
      A :class:`DesignProof`; never raises for a solution it cannot prove.
    """
    npar = len(fam.params)
    n = layers * npar
    free = [j for j in range(n) if j not in set(fixed)]
    if len(free) != len(active):
        return DesignProof(
            False,
            reason=f"{len(active)} matching equations in {len(free)} free parameters "
            f"({n - len(free)} held by the normalisation): the system is not square, and a "
            "Krawczyk step proves an isolated root of a square system only",
        )
    prec = bits_for_digits(dps + 20) + 32
    try:
        _layer_map(fam)  # the symbolic derivative (once per family), before any budget is spent
        tries = 2 + 2 * len(_INFLATE)
        if budget is not None:
            need = tries * layers * _LAYER_UNITS * (1 + (max(0, dps - 20) / 120) ** 1.3)
            if budget.used + need > budget.limit:
                raise NotProvable(
                    f"the design's work budget is spent ({budget.used:,.0f} of {budget.limit:,.0f} "
                    f"units used; the proof needs about {need:,.0f}; docs/limits.md)"
                )
            budget.used += need
        return _prove(fam, solution, free, layers, kernel, active, targets, tau0,
                      input_trainable, prec)  # fmt: skip
    except NotProvable as e:
        return DesignProof(False, reason=str(e))
    except (ValueError, ZeroDivisionError, TypeError, ArithmeticError) as e:
        return DesignProof(False, reason=f"ball arithmetic failed on the box ({type(e).__name__})")


def _prove(
    fam: Family, solution: Sequence[Any], free: Sequence[int], layers: int, kernel: str,
    active: Sequence[int], targets: Sequence[arb], tau0: sp.Rational, input_trainable: bool,
    prec: int,
) -> DesignProof:  # fmt: skip
    npar = len(fam.params)
    m = len(free)
    with workprec(prec):
        y = [_mpf_arb(v) for v in solution]

    def system(box: Sequence[arb]) -> tuple[list[arb], list[list[arb]], list[arb]]:
        return _system(fam, box, free, layers, kernel, active, targets, tau0,
                       input_trainable, prec)  # fmt: skip

    f_y, j_y, _ = system(y)
    jm = mpmath.matrix([[float(j_y[r][c].mid()) for c in range(m)] for r in range(m)])
    try:
        c_inv = jm**-1
        cond = mpmath.mnorm(jm, 1) * mpmath.mnorm(c_inv, 1)
    except ZeroDivisionError:
        cond = mpmath.inf
    if not cond < 1e12:
        raise NotProvable(
            f"the Jacobian of the matching equations is singular at this solution (condition "
            f"number {mpmath.nstr(cond, 3)}): the root is not isolated (e.g. a solution on a "
            "symmetry's fixed set, or a continuum of solutions)"
        )
    with workprec(prec):
        c_mat = arb_mat([[arb(float(c_inv[r, c])) for c in range(m)] for r in range(m)])
        yv = arb_mat([[y[j]] for j in free])
        fy = arb_mat([[v] for v in f_y])
        step = c_mat * fy  # the Newton correction, a ball vector
        base = yv - step
    widest = None
    for factor in _INFLATE:
        with workprec(prec):
            # the Newton correction widened, and a floor a few hundred ulps wide (a correction
            # of 0 at an exact root still needs a box with an interior)
            floor = arb(2) ** (40 - prec)
            rad = [(abs(step[i, 0]) * factor + (abs(y[free[i]]) + 1) * floor).upper()
                   for i in range(m)]  # fmt: skip
            box = list(y)
            for i, j in enumerate(free):
                box[j] = arb(y[j].mid(), rad[i])
        widest = max(float(r) for r in rad)
        try:
            _, j_x, inactive = system(box)
        except NotProvable:
            continue
        with workprec(prec):
            jx = arb_mat(j_x)
            dx = arb_mat([[box[j] - y[j]] for j in free])
            k = base + (arb_mat(m, m, [1 if r == c else 0 for r in range(m) for c in range(m)])
                        - c_mat * jx) * dx  # fmt: skip
        if all(box[j].contains_interior(k[i, 0]) for i, j in enumerate(free)):
            if not all(r.contains(0) for r in inactive):
                raise NotProvable(
                    "an equation the design found identically satisfied is not 0 on the box"
                )
            proved = list(y)
            for i, j in enumerate(free):
                proved[j] = k[i, 0]
            balls = tuple(
                {str(p): proved[l * npar + q] for q, p in enumerate(fam.params)}
                for l in range(layers)
            )
            return DesignProof(True, balls=balls, prec_bits=prec)
    raise NotProvable(
        f"the Krawczyk test failed on every box tried (radius up to {widest:.2g}): the "
        "Jacobian varies too much over the box, or the solution is not accurate enough"
    )

r"""Symmetries of a design's matching equations, and the canonical member of each orbit.

The matched values depend on each layer's activation only through Gaussian moments, so a
reparametrisation θ ↦ Tθ with φ(x; Tθ) = ±φ(±x; θ) leaves every matched value unchanged (the
input w ~ N(0, τ) is symmetric and the next layer's Gaussian weights absorb a sign).  Such T are
found numerically among the signed permutations of one layer's parameters (tested at the
solution and at a random point); solutions related by them are one orbit, reported once by its
canonical member (the lexicographically largest: positive leading parameters).  A positively
homogeneous family (leaky ReLU) also has a continuous symmetry, (θ_l, θ_{l+1}) ↦ (λθ_l,
θ_{l+1}/λ), λ > 0; it is removed by scaling every layer but the last to max_j |θ_{l,j}| = 1.
:func:`normalization_text` says in words which parameters a design fixed, and why.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
from collections.abc import Callable, Sequence

import mpmath
import sympy as sp

from ..symbolic import Family, X
from ._context import EngineContext, Num

__all__ = [
    "Transform",
    "canonical",
    "candidate_transforms",
    "describe",
    "normalization_text",
    "symmetries",
]


@dataclasses.dataclass(frozen=True)
class Transform:
    """θ ↦ Tθ on one layer's parameters: ``(Tθ)_j = signs[j] * θ[perm[j]]``."""

    perm: tuple[int, ...]
    signs: tuple[int, ...]

    def apply(self, theta: Sequence[Num]) -> list[Num]:
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


def candidate_transforms(npar: int) -> list[Transform]:
    """Signed permutations (npar ≤ 3) or sign flips (npar ≤ 6) of one layer's parameters."""
    perms = list(itertools.permutations(range(npar))) if npar <= 3 else [tuple(range(npar))]
    if npar > 6:
        return []
    out = []
    for perm in perms:
        for signs in itertools.product((1, -1), repeat=npar):
            t = Transform(tuple(perm), tuple(signs))
            if not t.is_identity:
                out.append(t)
    return out


def _phi(fam: Family, theta: Sequence[sp.Expr], x: sp.Expr) -> sp.Expr:
    sub = dict(zip(fam.params, theta, strict=True))
    for piece in fam.pieces:
        if piece.hi == sp.oo or bool(x < piece.hi.subs(sub)):
            return piece.expr.subs(sub).subs(X, x)
    raise AssertionError("unreachable: the last piece extends to +oo")  # pragma: no cover


def _meaning(fam: Family, t: Transform, theta: Sequence[sp.Expr]) -> str:
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


def symmetries(
    ctx: EngineContext,
    fam: Family,
    values: Callable[[Num, Sequence[Num]], list[Num]],
    x: list[Num],
    probe: list[Num] | None,
    layers: int,
    tol: Num,
) -> tuple[list[Transform], bool]:
    """The per-layer transforms (and whether a layer rescaling) leaving the matched values fixed.

    A transform is accepted when, applied to any one layer, it leaves every matched value
    unchanged at the solution ``x`` and, applied to the first layer, at a random ``probe``
    (so a coincidence at one point is not taken for a symmetry of the equations).
    """
    npar = len(fam.params)

    def ok(theta: Sequence[Num]) -> bool:
        sub = dict(zip(fam.params, theta, strict=True))
        return all(cn.subs(sub) > 0 for cn in fam.constraints)

    def same(y: list[Num], base: list[Num]) -> bool:
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
    for t in candidate_transforms(npar):
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


def _normalise(ctx: EngineContext, y: list[Num], npar: int, layers: int) -> list[Num]:
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


def canonical(
    pair: tuple[list[Num], list[Num]],
    group: Sequence[Sequence[Transform | None]],
    npar: int,
    layers: int,
    rescale: bool,
    ctx_lo: Num,
    ctx_hi: Num,
) -> tuple[list[Num], list[Num]]:
    """The orbit member with the lexicographically largest parameters (positive leading ones)."""
    best: tuple[list[float], list[Num], list[Num]] | None = None
    for g in group:
        ys = []
        for c, x in zip((ctx_lo, ctx_hi), pair, strict=True):
            y: list[Num] = []
            for l, t in enumerate(g):
                theta = x[l * npar : (l + 1) * npar]
                y += list(theta) if t is None else t.apply(theta)
            ys.append(_normalise(c, y, npar, layers) if rescale else y)
        key = [round(float(v), 9) for v in ys[1]]
        if best is None or key > best[0]:
            best = (key, ys[0], ys[1])
    assert best is not None
    return best[1], best[2]


def describe(
    fam: Family, transforms: Sequence[Transform], rescale: bool, layers: int, seed: int
) -> list[str]:
    """The symmetries found, in words: each transform with what it does to the activation
    (checked at a random rational θ satisfying the constraints), and the layer rescaling."""
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
    out = []
    for t in transforms:
        meaning = _meaning(fam, t, theta_q)
        per_layer = " in each layer" if layers > 1 else ""
        out.append(f"{t.describe(params_syms)} ({meaning}){per_layer}")
    if rescale:
        out.append(
            "(θ_l, θ_{l+1}) → (λ·θ_l, θ_{l+1}/λ), λ > 0 (layer rescaling: the family is "
            "positively homogeneous)"
        )
    return out


def normalization_text(
    fam: Family,
    fixed: dict[int, Num],
    npar: int,
    layers: int,
    rescale: bool,
    nullity: int,
    shown: Sequence[Num],
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

r"""Certified DEQ coefficients: every printed digit proven by ball arithmetic (Arb).

1. **Moments as balls.**  :mod:`._enclose` encloses E[He_k(ξ) φ(τξ)], E[He_k(ξ) φ²(τξ)] and
   E[φ'(τξ)²] for every τ in a ball: closed forms in Arb, ``acb.integral`` otherwise, with a
   rigorous Gaussian-tail bound.
2. **τ\*² proved** (Krawczyk, "Newton-Algorithmen zur Bestimmung von Nullstellen mit
   Fehlerschranken", Computing 4 (1969); R. Moore, *Interval Analysis*, 1966).  With
   h(q) = F(q) − q, F and F' derived by :func:`deqrmt.symbolic.derive_fixed_point`, a float
   root from the engine's solver (:func:`~deqrmt.numeric._fixed_point.solve_tau`) is refined by
   Newton steps at growing precision to q̃, and on Q = [q̃ − r, q̃ + r]

       K(Q) = q̃ − Y h(q̃) + (1 − Y h'(Q)) (Q − q̃),      Y ≈ 1/h'(q̃).

   K(Q) ⊂ int Q proves that h has exactly one zero in Q, and it lies in K(Q).  With
   |F'| < 1 on all of Q (checked on the same ball) the fixed point attracts the iteration.
   The ball K(Q) is ~2^−prec wide: Q's radius is the square root of the target, and K
   contracts it quadratically.
3. **Coefficients as balls.**  The moments at τ = √K(Q) (the centering constant
   c = E[φ(τ*ξ)] among them), centered by the derived identities and put through the
   derived formulas of :func:`deqrmt.symbolic.derive_deq` in ball arithmetic.
4. **Proven digits.**  A value is printed to n digits when both ends of its ball round
   (exactly, ties away from 0) to the same n-digit decimal; rounding is monotone, so the true
   value rounds to it too.  Too few digits: the work is redone at a higher precision.

What is proved is the value of the fixed point inside Q and its attraction; that it is the
root the DEQ's iteration reaches from z = 0 rests on the float scan, as in the verified path.
If any moment is outside :mod:`._enclose`'s rules, :func:`certified_coefficients` falls back
to :func:`~deqrmt.numeric.deq_coefficients` and says so (``certified: false``).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import mpmath
import sympy as sp
from flint import arb

from .._errors import ActivationError, CenteringError, ContractionError
from ..symbolic import SIGMA_A2, SIGMA_B2, TAU0, derive_fixed_point
from ._arb import (
    ArbContext,
    arb_to_mpf,
    bits_for_digits,
    format_digits,
    round_digits,
    to_arb,
    workprec,
)
from ._coefficients import (
    _FORMULA_KEYS,
    MOMENT_KEYS,
    NTK_KEYS,
    DEQCoefficients,
    _deq_coefficients,
    _deq_function,
    _other_fixed_points,
)
from ._enclose import ENCLOSED_MOMENTS, NotEnclosable, encloser_for
from ._fixed_point import center_moments, scan_fixed_points, solve_tau, variance_map
from ._printer import compile_function
from ._problem import DEQProblem
from ._roots import scan
from ._verify import MIN_DIGITS, Verified

__all__ = ["certified", "certify", "proven"]

#: decimal digits carried beyond the request (cancellation in the formulas, rounding margin)
GUARD_DIGITS = 8
#: precision raises (×) before giving up on the requested digits
MAX_ATTEMPTS = 3
#: bits a float64 root from the engine's solver is trusted to (it polishes to ~1e-13)
_FLOAT_BITS = 40
_PARAMS = {SIGMA_A2: "sigma_a2", SIGMA_B2: "sigma_b2", TAU0: "tau_0"}


# ---------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------


def proven(x: arb, dps: int) -> Verified:
    """The digits the ball ``x`` proves, at most ``dps`` (0 digits: it contains 0 or straddles)."""
    if x.is_exact():
        mid = arb_to_mpf(x)
        if x == 0:
            return Verified(mid, dps, "0", mpmath.mpf(0))
        r = round_digits(x, dps)
        assert r is not None  # an exact nonzero number rounds to itself
        return Verified(mid, dps, format_digits(r, dps), mpmath.mpf(0))
    mid, rad = arb_to_mpf(x), arb_to_mpf(arb(x.rad()))
    if x.contains(0) or not x.is_finite():
        return Verified(mid, 0, "", rad)
    # the digits the radius allows, then down until both ends round alike
    rel = float(abs(arb(x.rad()) / abs(x.mid())).upper()) if x.mid() != 0 else math.inf
    n = dps if rel == 0 else min(dps, max(1, int(-math.log10(rel)) + 1))
    for k in range(n, 0, -1):
        r = round_digits(x, k)
        if r is not None:
            return Verified(mid, k, format_digits(r, k), rad)
    return Verified(mid, 0, "", rad)


# ---------------------------------------------------------------------------
# Compiled derived formulas
# ---------------------------------------------------------------------------


def _mid(x: arb, digits: int) -> str:
    """A ball's midpoint for a message (the ball itself is in the result, not the text)."""
    return mpmath.nstr(arb_to_mpf(x), digits)


def _compile(name: str, exprs: list[sp.Expr], names: Mapping[Any, str]) -> tuple[Any, list[str]]:
    args = sorted(set().union(*(e.free_symbols for e in exprs)), key=str)
    fn = compile_function(name, args, exprs, doc=f"Derived {name}, for certification.")
    return fn, [names[a] for a in args]


@functools.lru_cache(maxsize=4)
def _map_functions(center: bool) -> tuple[tuple[Any, list[str]], tuple[Any, list[str]]]:
    """F(q) and F'(q) of :func:`derive_fixed_point`, compiled apart: the Krawczyk step needs
    F at a point and F' on a ball, each from fewer moments than both."""
    fpm = derive_fixed_point(center=center)
    names = {**fpm.m.names(), **_PARAMS}
    return _compile("variance_map_F", [fpm.F], names), _compile("variance_map_dF", [fpm.dF], names)


def _formulas(trainable: tuple[str, ...], ntk: bool) -> tuple[Any, list[str], list[str]]:
    """The engine's compiled coefficient formulas (context-generic: they run on balls too)."""
    fn, args = _deq_function(trainable, ntk)
    return fn, args, [k for k in _FORMULA_KEYS if ntk or k not in NTK_KEYS]


def _call(
    fn_args: tuple[Any, list[str]], ctx: ArbContext, env: Mapping[str, Any]
) -> tuple[Any, ...]:
    fn, args = fn_args
    return tuple(fn(ctx, *(env[a] for a in args)))


# ---------------------------------------------------------------------------
# The proof
# ---------------------------------------------------------------------------


class _Map:
    """h(q) = F(q) − q and h'(q) = F'(q) − 1 as balls, for every q in a ball."""

    def __init__(self, problem: DEQProblem) -> None:
        self.problem = problem
        self.enc = encloser_for(problem.activation)
        self.F, self.dF = _map_functions(problem.center)
        p = problem
        self._params = {"sigma_a2": p.sigma_a2, "sigma_b2": p.sigma_b2, "tau_0": p.tau0}

    def params(self) -> dict[str, arb]:
        return {k: to_arb(v) for k, v in self._params.items()}

    def _moments(self, q: arb, names: Iterable[str], prec: int) -> dict[str, arb]:
        with workprec(prec):
            tau = q.sqrt()
        return self.enc(tau, [n for n in names if n in ENCLOSED_MOMENTS], prec)

    def h(self, q: arb, prec: int) -> arb:
        m = self._moments(q, self.F[1], prec)
        with workprec(prec):
            (f,) = _call(self.F, ArbContext(prec), {**m, **self.params()})
            return f - q

    def dh(self, q: arb, prec: int) -> arb:
        m = self._moments(q, self.dF[1], prec)
        with workprec(prec):
            (df,) = _call(self.dF, ArbContext(prec), {**m, **self.params()})
            return df - 1

    def both(self, q: arb, prec: int) -> tuple[arb, arb]:
        """h(q) and h'(q) from one moment evaluation (their moments pair up in the integrals)."""
        m = self._moments(q, {*self.F[1], *self.dF[1]}, prec)
        with workprec(prec):
            env = {**m, **self.params()}
            (f,) = _call(self.F, ArbContext(prec), env)
            (df,) = _call(self.dF, ArbContext(prec), env)
            return f - q, df - 1


def _prove(hmap: _Map, q: arb, known: int, prec: int) -> tuple[arb, arb]:
    """A ball K ∋ q* (q* the unique zero of h in a ball Q ⊇ K) ~2^−prec wide, and F'(Q).

    ``q`` is an exact start trusted to ``known`` bits.  Newton point steps double the trusted
    bits until two Krawczyk rounds reach ``prec``: the first, on Q of radius ~2^−known,
    proves the zero and its attraction and squares the width; the second reuses the same
    enclosure of h'(Q) (valid on K ⊂ Q) and needs only h at a point, which multiplies the
    width by |1 − Y h'(Q)| ~ 2^−known again.  Precisions rise with the trusted bits, except
    when the encloser caches integrand values per precision (erf-type φ): then all steps after
    the first run at ``prec`` and share them.

    Raises:
      NotEnclosable: no Q passes the Krawczyk test.
      ContractionError: |F'| ≥ 1 on Q: the fixed point does not attract.
    """

    def at(bits: int) -> int:
        return prec if hmap.enc.caches else min(prec, bits)

    # At least one Newton step, whatever ``known`` claims: the float root of a steep φ (whose
    # float64 moments are off by ~1e-3) can be off by 1e-5, and its step then sets ``known``.
    checked = False
    while not checked or 4 * known < prec + 32:
        checked = True
        p = min(prec, 2 * known + 32)
        p = prec if p >= 3 * prec // 4 else p
        h, dh = hmap.both(q, p)
        with workprec(p):
            step = arb(h.mid()) / arb(dh.mid())
            q = arb((q - step).mid())
            rel = abs(step / q)
        known = p - 8 if rel == 0 else min(p - 8, 2 * int(-math.log2(float(rel.upper()))) - 8)
        if known < 8:
            raise NotEnclosable(f"Newton on τ*² does not settle near {_mid(q, 10)}")
    p1 = at(2 * known + 32)
    h_pt = hmap.h(q, p1)  # q is exact: a point evaluation
    for widen in (4, 12, 24):
        with workprec(prec):
            big_q = arb(q, (abs(q) * arb(2) ** (-(known - widen))).upper())
        dh_q = hmap.dh(big_q, p1)
        with workprec(prec):
            y = 1 / arb(dh_q.mid())
            k = q - y * h_pt + (1 - y * dh_q) * (big_q - q)
        if big_q.contains_interior(k):
            break
    else:
        raise NotEnclosable(
            f"the Krawczyk test failed around τ*² ≈ {_mid(q, 20)}: no ball proves a unique fixed point"
        )
    slope = dh_q + 1
    if not (slope < 1 and slope > -1):
        if slope >= 1 or slope <= -1:
            raise ContractionError(
                f"F'(τ*²) = {_mid(slope, 8)}: |F'| ≥ 1, the fixed point is not attracting at "
                f"sigma_a2={hmap.problem.sigma_a2}; reduce sigma_a2."
            )
        raise NotEnclosable(f"|F'| < 1 is undecided on the ball: F' ∈ {slope.str(8)}")
    for _ in range(4):
        with workprec(prec):
            # 2^-(prec-16): still ~10^-(dps+3) wide, and it saves a last point evaluation
            if k.rad() <= abs(k.mid()) * arb(2) ** (16 - prec):
                break
            q = arb(k.mid())
        h_pt = hmap.h(q, prec)
        with workprec(prec):
            k_new = (q - y * h_pt + (1 - y * dh_q) * (k - q)).intersection(k)
        shrunk = k_new.rad() < k.rad() / 4
        k = k_new
        if not shrunk:
            break
    return k, slope


def _evaluate(
    problem: DEQProblem, hmap: _Map, k: arb, prec: int
) -> tuple[dict[str, arb], dict[str, arb], list[str]]:
    """Coefficients and moments (balls) at τ = √K, and notes."""
    with workprec(prec):
        tau = k.sqrt()
    raw = hmap.enc(tau, ENCLOSED_MOMENTS, prec)
    ctx = ArbContext(prec)
    notes: list[str] = []
    with workprec(prec):
        env, c = center_moments(ctx, dict(raw), problem.center)
        if not problem.center and not (raw["phi"].is_exact() and raw["phi"] == 0):
            if raw["phi"].contains(0):
                raise NotEnclosable("E[φ(τ*ξ)] = 0 cannot be proved in ball arithmetic")
            raise CenteringError(
                f"center=False: E[φ(τ*ξ)] = {_mid(raw['phi'], 12)} ≠ 0 at τ* = {_mid(tau, 12)}, but "
                "Theorems 1–2 assume a centered activation; use center=True to center φ at its "
                "own fixed point."
            )
        params = hmap.params()
        g_dot = params["sigma_a2"] * env["dsq"]
        if g_dot < 1:
            ntk = True
        elif g_dot >= 1:
            ntk = False
            notes.append(
                f"the NTK diverges: σ_a² E[φ'(τ*ξ)²] = {_mid(g_dot, 6)} ≥ 1, so K* = G*/(1 − Ġ*) "
                "does not exist and β*, κ* are undefined; the CK values stand."
            )
        else:
            raise NotEnclosable(f"σ_a² E[φ'(τ*ξ)²] = {g_dot.str(8)} is not separated from 1")
        fn, args, keys = _formulas(problem.trainable, ntk)
        vals = fn(ctx, *({**env, **params}[a] for a in args))
        out = {"tau_star": tau, **dict(zip(keys, vals, strict=True)), "center": c}
        out = {k_: (v if isinstance(v, arb) else to_arb(v)) for k_, v in out.items()}
        moments = {j: env[i] for j, i in MOMENT_KEYS.items()}
    return out, moments, notes


def _star_float(problem: DEQProblem) -> float:
    """τ*² in float64: the engine's scan, stopped at the first root, then its polish.

    The scan walks up from q0 = σ_b²τ0², so its first root is τ*² whether or not it goes on
    (``decades=0`` stops it there); the search for *other* fixed points is
    :func:`deqrmt.numeric._coefficients._other_fixed_points`'s.
    Errors (no root, overflow) come from the engine's full scan, worded as everywhere else.
    """
    h = variance_map(problem).h(mpmath.fp, 0, 12)
    try:
        roots, _ = scan(h, float(problem.q0), decades=0)
    except (OverflowError, ZeroDivisionError, ValueError, ArithmeticError, ActivationError):
        roots = []
    star = roots[0] if roots else scan_fixed_points(problem).star
    return float(solve_tau(problem, mpmath.fp, 0, star).q)


T = TypeVar("T")


def escalating(
    problem: DEQProblem, dps: int, attempt: Callable[[arb, int, int], tuple[T, arb, int]]
) -> tuple[T, int]:
    """Run a proof until it shows ``dps`` digits, raising the precision: (its result, bits).

    ``attempt(q, known, prec)`` proves from the float root q of τ*² (trusted to ``known`` bits)
    at ``prec`` bits and returns (its result, the proved ball of τ*², the fewest digits its
    balls prove).  Too few: it runs again at the missing digits' bits and a margin more, from
    the midpoint of that ball, at most :data:`MAX_ATTEMPTS` times.

    Raises:
      NotEnclosable: fewer than ``min(dps, MIN_DIGITS)`` digits proven at the last attempt.
    """
    q_float = _star_float(problem)
    prec = bits_for_digits(dps + GUARD_DIGITS) + 16
    with workprec(prec):
        q, known = arb(q_float), _FLOAT_BITS
    for n in range(MAX_ATTEMPTS):
        result, root, short = attempt(q, known, prec)
        if short >= dps or n == MAX_ATTEMPTS - 1:
            break
        # too wide: redo the proof at more bits (the missing digits and a margin)
        with workprec(prec):
            q = arb(root.mid())
            known = max(
                _FLOAT_BITS, int(-math.log2(float((root.rad() / abs(root.mid())).upper())))
            )
        prec += bits_for_digits(dps - short + GUARD_DIGITS)
    if short < min(dps, MIN_DIGITS):
        raise NotEnclosable(f"only {short} digits proven at {prec} bits")
    return result, prec


def certify(problem: DEQProblem, *, others: bool = True) -> DEQCoefficients:
    """Certify ``problem``'s coefficients (see the module docstring); no fallback.

    ``others=False`` skips the float search for other fixed points (the notes).

    Raises:
      NotEnclosable: a moment or a decision is outside what ball arithmetic proves here.
      ContractionError, CenteringError: as :func:`~deqrmt.numeric.deq_coefficients`.
    """
    hmap = _Map(problem)
    dps = problem.dps

    def attempt(
        q: arb, known: int, prec: int
    ) -> tuple[tuple[dict[str, Verified], dict[str, Verified], tuple[str, ...]], arb, int]:
        k, _ = _prove(hmap, q, known, prec)
        values, moments, notes = _evaluate(problem, hmap, k, prec)
        balls = {key: proven(v, dps) for key, v in values.items()}
        mballs = {key: proven(v, dps) for key, v in moments.items()}
        short = min(b.digits for b in (*balls.values(), *mballs.values()))
        return (balls, mballs, tuple(notes)), k, short

    (balls, mballs, notes), prec = escalating(problem, dps, attempt)
    roots, root_notes = _other_fixed_points(problem) if others else ((), ())
    return DEQCoefficients(
        problem, balls, mballs, roots, (*notes, *root_notes), certified=True, prec_bits=prec
    )


@functools.lru_cache(maxsize=32)
def certified(problem: DEQProblem) -> DEQCoefficients:
    """:func:`certify`, or the verified path with the reason when a moment is not enclosable."""
    try:
        return certify(problem)
    except NotEnclosable as e:
        return dataclasses.replace(_deq_coefficients(problem), reason=str(e))

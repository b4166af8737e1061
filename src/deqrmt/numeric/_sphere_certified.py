r"""Certified sphere constants (HLD 2023): every digit of g(1), g(0), g'(0), … proven in Arb.

The verified path (:mod:`._sphere_verified`) agrees two evaluations; this one proves, in four
steps.

1. **s = g(1).**  The sphere's diagonal map is the DEQ variance map with τ0 = 1 and no
   centering (:func:`._sphere.sphere_problem`), so the proof of
   :func:`._variance_proof.prove_fixed_point` applies as is: a ball S ∋ s, the unique fixed
   point in a ball around it, with |F'| < 1 there.
2. **The dual's Taylor coefficients** c_k = b_k², b_k = E[h_k(ξ) φ(τξ)], τ = √S, as balls:
   ``acb.integral`` in x = τξ, split at φ's kinks, the Hermite functions h_k = He_k/√k! run
   by their three-term recursion in ball arithmetic inside the integrand.  The tails |x| > X
   are bounded for every k at once by Cramér's inequality (Abramowitz–Stegun 22.14.17:
   |H_n(x)| ≤ κ 2^{n/2} √(n!) e^{x²/2}, κ = 1.086435…, i.e. |h_k(ξ)| ≤ κ e^{ξ²/4}):

       |∫_{ξ>X/τ} h_k(ξ) φ(τξ) pdf(ξ) dξ| ≤ κ √2 ∫_{η>X/(√2τ)} |φ(√2τ η)| pdf(η) dη,

   which is :func:`._enclose.gaussian_tail` at the scale √2τ with φ's growth bound.
   The series tail is Parseval's (c_k ≥ 0, Σ c_k = f(1) = E[φ(τξ)²], a moment enclosed by
   :mod:`._enclose`): for |r| ≤ ρ and K + 1 ≥ j/(1 − ρ),

       |Σ_{k>K} c_k (k)_j r^{k−j}| ≤ (f(1) − Σ_{k≤K} c_k)·(K+1)_j ρ^{K+1−j}.

   Since c_k enters f^{(j)}(r₀) with the weight (k)_j r₀^{k−j}, b_k needs ~k·log2(1/r₀)
   fewer bits than b_0: the precision falls with k, and high terms are cheap.  The b_k that
   vanish by φ's parity or degree are exact zeros (:func:`._mehler.known_zero`); for a
   polynomial φ the series ends, and so does its tail.
3. **r₀ = g(0)/s**, the root of h(r) = s r − σ_a² f(r) in [0, 1): Krawczyk's test
   (:mod:`._krawczyk`) on h with the series above.  Uniqueness in all of [0, 1) holds without a search: f is convex on
   [0, 1] (c_k ≥ 0), so h is concave, h(0) = −σ_a² f(0) ≤ 0 and h(1) = s − σ_a² f(1) = σ_b² > 0
   (the diagonal fixed point); a concave function has one root there (r = 0 when f(0) = 0 and
   h'(0) > 0).
4. **The constants**: the derived formulas of :mod:`._sphere_formulas` and Corollary 1's
   quadratics evaluated on the balls (μ, μ̇ exactly 0 for an affine φ,
   :func:`._sphere_formulas.exact_zeros`); a quadratic is real when every radicand is proved
   ≥ 0, absent when one is proved < 0.  Each ball shows the digits it proves
   (:func:`._verified.proven`), at a precision raised until ``dps`` show
   (:func:`._escalate.escalating`).

Anything outside these rules raises :class:`~._enclose.NotEnclosable`; the dispatcher
(:func:`~deqrmt.numeric.sphere_coefficients`) then falls back to the verified path with the
reason.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from fractions import Fraction

import flint
from flint import acb, arb

from .._errors import ContractionError
from ..symbolic import Activation, X
from ._arb import ACB_FUNCTIONS, AcbContext, ArbContext, to_arb, unsupported, workprec
from ._context import Num
from ._enclose import NotEnclosable, gaussian_tail, growth_bound
from ._escalate import escalating
from ._krawczyk import krawczyk
from ._mehler import MAX_TERMS, known_zero, polynomial_degree, terms_needed, too_close
from ._printer import compile_function
from ._problem import DEQProblem
from ._sphere_formulas import (
    ORDER,
    exact_zeros,
    quadratic_formulas,
    quadratic_signs,
    sphere_formulas,
)
from ._sphere_records import (
    NTK_EXTRA_KEYS,
    SPHERE_KEYS,
    QuadraticActivation,
    SphereCoefficients,
    no_quadratic_note,
)
from ._variance_proof import VarianceBalls, prove_fixed_point, star_float
from ._verified import proven

__all__ = ["Controls", "Dual", "Projections", "certify_sphere"]

#: Cramér's constant, rounded up (A&S 22.14.17: κ = 1.086435): |h_k(ξ)| ≤ κ e^{ξ²/4}.
_CRAMER = Fraction(10865, 10000)
#: the lowest precision a Hermite projection is computed at (its own rounding stays far below)
_MIN_PREC = 64
#: Hermite projections added per extension of the series
_CHUNK = 8
_MAX_CUT_STEPS = 40


@dataclasses.dataclass(frozen=True)
class Controls:
    """Switches for negative-control tests only: a fixed cut ``|x| ≤ cut``, the Gaussian tail
    bound dropped, a fixed number of series ``terms``, the Parseval tail bound dropped."""

    cut: int | None = None
    gaussian_tail: bool = True
    terms: int | None = None
    series_tail: bool = True


# ---------------------------------------------------------------------------
# b_k = E[h_k(ξ) φ(τξ)] as balls
# ---------------------------------------------------------------------------


@functools.lru_cache(maxsize=64)
def _pieces(act: Activation) -> tuple[Callable[..., tuple[Num, ...]], ...]:
    for p in act.pieces:
        bad = unsupported(p.expr, ACB_FUNCTIONS, holomorphic=True)
        if bad:
            raise NotEnclosable(
                f"{act.name}: {p.expr} uses {', '.join(bad)}, outside the functions enclosed as "
                "holomorphic integrands"
            )
    return tuple(compile_function("phi_piece_acb", [X], [p.expr]) for p in act.pieces)


class Projections:
    """b_0, b_1, … of ξ ↦ φ(τξ) for every τ in the ball ``tau``, extended on demand."""

    def __init__(self, act: Activation, tau: arb, prec: int, controls: Controls) -> None:
        if not all(k.is_Rational for k in act.kinks):
            raise NotEnclosable(f"{act.name}: an irrational kink is not an exact split point")
        self.act, self.tau, self.prec, self.controls = act, tau, prec, controls
        self.fns = _pieces(act)
        self.b: list[arb] = []
        self.cut, self.tail = self._cut()

    def _tail(self, cut: int) -> arb | None:
        """κ√2·(right + left Gaussian tails at scale √2τ) beyond |x| = cut (module doc)."""
        with workprec(64):
            tau_hi = arb(self.tau.upper())
            scale = arb(((2 * tau_hi * tau_hi).sqrt()).upper())
            r = arb((arb(cut) / scale).lower())
            pieces = self.act.pieces
            total = arb(0)
            for expr in (pieces[-1].expr, pieces[0].expr.subs(X, -X)):
                t = gaussian_tail((1,), growth_bound(expr, arb(cut)), scale, r)
                if t is None:
                    return None
                total += t
            return arb((total * to_arb(_CRAMER) * arb(2).sqrt()).upper())

    def _cut(self) -> tuple[int, arb]:
        kink_max = max((abs(Fraction(int(k.p), int(k.q))) for k in self.act.kinks), default=0)
        if self.controls.cut is not None:
            if self.controls.cut <= kink_max:
                raise ValueError(f"cut={self.controls.cut} must exceed every kink")
            t = self._tail(self.controls.cut)
            if t is None:
                raise NotEnclosable(f"cut {self.controls.cut} is too small for the tail lemma")
            return self.controls.cut, t
        # e^{-ξ²/4} decays to 2^-prec near ξ = 2√(prec·ln 2): start there, step up
        cut = max(
            math.ceil(float(self.tau.upper()) * 2 * (math.sqrt(self.prec * math.log(2)) + 1)),
            math.floor(kink_max) + 1,
        )
        target = arb(2) ** (-self.prec - 8)
        for _ in range(_MAX_CUT_STEPS):
            t = self._tail(cut)
            if t is not None and t <= target:
                return cut, t
            cut += max(1, cut // 8)
        raise NotEnclosable(
            f"no cut below {cut} makes the Hermite tails of {self.act.name} smaller than "
            f"2^-{self.prec} (the growth bound is too weak)"
        )

    def _zero(self, k: int) -> bool:
        """b_k = 0 exactly by φ's parity or degree (:func:`._mehler.known_zero`)."""
        return known_zero(self.act, k)

    @property
    def finite(self) -> bool:
        """φ is a polynomial whose every nonzero b_k is among the computed ones."""
        degree = polynomial_degree(self.act)
        return degree is not None and len(self.b) > degree

    def extend(self, k_max: int, prec_of: Callable[[int], int]) -> None:
        """Compute b_k up to k = k_max, b_k at ``prec_of(k)`` bits (two per integral)."""
        todo = [k for k in range(len(self.b), k_max + 1) if not self._zero(k)]
        got: dict[int, arb] = {}
        for i in range(0, len(todo), 2):
            pair = todo[i : i + 2]
            prec = max(prec_of(k) for k in pair)
            got.update(zip(pair, self._integrate(pair, prec), strict=True))
        self.b.extend(got.get(k, arb(0)) for k in range(len(self.b), k_max + 1))

    def _integrand(self, ks: list[int], piece: int, prec: int) -> Callable[[acb, bool], acb]:
        """x ↦ (h_{k₁}(x/τ) + i h_{k₂}(x/τ)) φ(x) e^{−x²/(2τ²)}: two real integrals in one."""
        fn = self.fns[piece]
        actx = AcbContext(prec)
        inv_tau = acb(1 / self.tau)
        half = acb(1 / (2 * self.tau * self.tau))
        top = max(ks)
        # h_k = (ξ h_{k−1} − √(k−1) h_{k−2})/√k
        c1 = [acb(0), acb(0), *(acb(1 / arb(k).sqrt()) for k in range(2, top + 1))]
        c2 = [acb(0), acb(0), *(acb((arb(k - 1) / k).sqrt()) for k in range(2, top + 1))]
        unit = acb(0, 1)

        def integrand(x: acb, analytic: bool) -> acb:
            actx.analytic = analytic
            xi = x * inv_tau
            prev, h = acb(1), xi
            hs = {0: prev, 1: h}
            for k in range(2, top + 1):
                prev, h = h, xi * h * c1[k] - prev * c2[k]
                hs[k] = h
            w = hs[ks[0]] if len(ks) == 1 else hs[ks[0]] + unit * hs[ks[1]]
            return w * fn(actx, x)[0] * (-(x * x) * half).exp()  # type: ignore[no-any-return]

        return integrand

    def _integrate(self, ks: list[int], prec: int) -> list[arb]:
        kinks = [to_arb(k) for k in self.act.kinks]
        cut = self.cut
        points = [arb(-cut), *(k for k in kinks if -cut < k < cut), arb(cut)]
        with workprec(prec):
            total = acb(0)
            tol = arb(2) ** (-prec)
            for piece, (a, b) in enumerate(zip(points[:-1], points[1:], strict=True)):
                f = self._integrand(ks, piece, prec)
                total += acb.integral(f, a, b, abs_tol=tol, rel_tol=tol)
            norm = 1 / (self.tau * (2 * arb.pi()).sqrt())
            out = []
            for part in (total.real, total.imag)[: len(ks)]:
                v = part * norm
                if self.controls.gaussian_tail:
                    v += arb(0, self.tail)
                out.append(v)
        for k, v in zip(ks, out, strict=True):
            if not v.is_finite():
                raise NotEnclosable(f"b_{k} of {self.act.name} is not finite in ball arithmetic")
        return out


# ---------------------------------------------------------------------------
# The dual f(r) = Σ c_k r^k with its Parseval tail
# ---------------------------------------------------------------------------


class Dual:
    """f^{(j)}(r) as a ball for every r in a ball, from the projections and f(1)."""

    def __init__(self, proj: Projections, norm: arb, controls: Controls) -> None:
        self.proj, self.norm, self.controls = proj, norm, controls

    @property
    def terms(self) -> int:
        return len(self.proj.b)

    def remainder(self) -> arb:
        """An upper bound of Σ_{k>K} c_k = f(1) − Σ_{k≤K} c_k (Parseval)."""
        total = self.norm - sum((b * b for b in self.proj.b), arb(0))
        return arb(max(total.upper(), arb(0)))

    def tail(self, rho: arb, j: int) -> arb | None:
        """The bound on Σ_{k>K} c_k (k)_j r^{k−j} for |r| ≤ ρ; None if K + 1 < j/(1 − ρ)."""
        k1 = self.terms  # K + 1
        if self.proj.finite:
            return arb(0)  # the series ends: nothing beyond K
        if not rho < 1 or not k1 * (1 - rho) >= j:
            return None
        falling = arb(math.prod(range(k1 - j + 1, k1 + 1)))
        return arb((self.remainder() * falling * rho ** (k1 - j)).upper())

    def __call__(self, r: arb, j: int, *, tail: bool = True) -> arb:
        rho = arb(abs(r).upper())
        total = arb(0)
        for k in range(self.terms - 1, j - 1, -1):  # Horner in r
            b = self.proj.b[k]
            total = total * r + b * b * math.prod(range(k - j + 1, k + 1))
        if tail and self.controls.series_tail:
            t = self.tail(rho, j)
            if t is None:
                raise NotEnclosable(f"too few Mehler terms ({self.terms}) for |r| ≤ {rho.str(5)}")
            total += arb(0, t)
        return total


def _estimate(dual: Dual, s: arb, a2: arb) -> arb:
    """A point r̃ ≈ r₀ by Newton from 0 on the truncated series (monotone: f convex)."""
    r = arb(0)
    for _ in range(200):
        h = arb((s * r - a2 * dual(r, 0, tail=False)).mid())
        dh = arb((s - a2 * dual(r, 1, tail=False)).mid())
        if dh == 0:
            break
        step = arb((h / dh).mid())
        r = arb((r - step).mid())
        if step == 0 or abs(step) <= abs(r) * arb(2) ** (4 - flint.ctx.prec):
            break
    if not r < 1:
        raise ContractionError(
            f"g(0)/g(1) = {r.str(6)} is outside [0, 1): no admissible fixed point at ρ = 0; "
            "reduce sigma_a2."
        )
    return arb(max(r, arb(0)))


def _origin(dual: Dual, s: arb, a2: arb, prec: int) -> arb:
    """The ball ∋ r₀ (see the module doc, step 3), with the series extended as needed."""
    target = arb(2) ** (-prec - 4)
    with workprec(prec):
        while True:
            r = _estimate(dual, s, a2)
            # f(0) = 0 exactly (φ odd) makes r₀ = 0 exact: f^{(j)}(0) needs no tail, and the
            # Krawczyk ball below is 2^(−prec/2) wide
            exact_zero = r == 0 and dual(r, 0, tail=False) == 0
            rho = (
                arb(2) ** (-prec // 2)
                if exact_zero
                else arb((r * (1 + arb(2) ** -10) + arb(2) ** -20).upper())
            )
            fixed = dual.controls.terms is not None
            if fixed or all((t := dual.tail(rho, j)) is not None and t <= target for j in range(4)):
                break
            # r̃ from a truncated series is below r₀: a refusal sized on it is never premature
            if (
                dual.terms > MAX_TERMS
                or terms_needed(float(r.mid()), prec * 0.30103, 3) > MAX_TERMS
            ):
                raise too_close(float(r.mid()))
            # c_k weighs (k)_j r₀^{k−j} in f^{(j)}(r₀): b_k needs k·log2(1/ρ) bits fewer
            plan = min(0.95, 1.5 * float(r.mid()) + 0.02)
            drop = -math.log2(plan)

            def prec_of(k: int, drop: float = drop) -> int:
                return max(_MIN_PREC, prec + 16 + 3 * (k + 1).bit_length() - int((k - 3) * drop))

            dual.proj.extend(dual.terms + _CHUNK - 1, prec_of)
        h0 = s * r - a2 * dual(r, 0)
        if exact_zero:  # h(0) = 0: the root is 0 itself, unique where h' > 0
            dh = s - a2 * dual(arb(0, rho), 1)
            if not dh > 0:
                raise NotEnclosable(f"h'(0) = s − σ_a² f'(0) > 0 is undecided: {dh.str(8)}")
            return arb(0)
        radii = [
            (abs(r) * arb(2) ** (-widen) + arb(2) ** (-prec)).upper()
            for widen in (prec // 2, prec // 3, prec // 4)
        ]
        proof = krawczyk(r, h0, lambda big_q: s - a2 * dual(big_q, 1), radii, prec)
        if proof is None:
            raise NotEnclosable(f"the Krawczyk test failed around g(0)/g(1) ≈ {r.str(20)}")
        k = proof[0]
        if not k >= 0:
            raise NotEnclosable(f"g(0)/g(1) ≥ 0 is undecided on the ball {k.str(8)}")
        return k


# ---------------------------------------------------------------------------
# The constants
# ---------------------------------------------------------------------------


class _NotReal(Exception):
    """A radicand of Corollary 1 is proved negative: that sign pattern has no real quadratic."""


class _RealRootContext(ArbContext):
    """ArbContext whose sqrt decides the radicand's sign: < 0 → not real, undecided → decline."""

    def sqrt(self, x: Num) -> Num:
        v = self._n(x)
        if v >= 0:
            return v.sqrt()
        if v < 0:
            raise _NotReal
        raise NotEnclosable(f"the sign of a radicand in Corollary 1 is undecided: {v.str(8)}")


def _quadratics(
    kind: str, alpha: arb, beta: arb, mu: arb, d: int, prec: int
) -> tuple[tuple[arb, arb, arb] | None, ...]:
    """Corollary 1's solutions for ``kind`` ("ck" or "ntk"), in the order of ``derive_quadratic``."""
    ctx = _RealRootContext(prec)
    out: list[tuple[arb, arb, arb] | None] = []
    env = {"alpha": alpha, "beta": beta, "mu": mu, "d": arb(d)}
    for formulas in quadratic_formulas(kind):
        try:
            with workprec(prec):
                a2, a1, a0 = (_ball(v) for v in formulas(ctx, env))
            out.append((a2, a1, a0))
        except _NotReal:
            out.append(None)
    return tuple(out)


def _ball(v: Num) -> arb:
    return v if isinstance(v, arb) else to_arb(v)


_Solutions = tuple[tuple[arb, arb, arb] | None, ...]


def _balls(
    problem: DEQProblem,
    vmap: VarianceBalls,
    d: int,
    prec: int,
    controls: Controls,
    q: arb,
    known: int,
) -> tuple[dict[str, arb], arb, int, _Solutions, _Solutions]:
    """One attempt at ``prec`` bits: the constants and Corollary 1's solutions as balls, the
    proved ball of s = τ*² and the series length."""
    s, _ = prove_fixed_point(vmap, q, known, prec)  # ContractionError when |F'| ≥ 1
    with workprec(prec):
        tau = s.sqrt()
    m = vmap.enc(tau, ("sq", "dsq"), prec)
    with workprec(prec):  # 1/5 is a ball rounded at the precision in force: set it first
        a2, b2 = to_arb(problem.sigma_a2), to_arb(problem.sigma_b2)
        g_dot = a2 * m["dsq"]
        if g_dot >= 1:
            raise ContractionError(
                f"σ_a² E[φ'(√s ξ)²] = {g_dot.str(8)} ≥ 1: the kernel map is not a contraction off "
                f"the diagonal and K* = G*/(1 − Ġ*) diverges at sigma_a2={problem.sigma_a2}; "
                "choose a smaller sigma_a2 (with σ_b² fixed)."
            )
        if not g_dot < 1:
            raise NotEnclosable(f"σ_a² E[φ'(√s ξ)²] = {g_dot.str(8)} is not separated from 1")
    proj = Projections(problem.activation, tau, prec, controls)
    proj.extend(controls.terms if controls.terms is not None else ORDER + 1, lambda k: prec + 16)
    dual = Dual(proj, m["sq"], controls)
    r0 = _origin(dual, s, a2, prec)
    ctx = ArbContext(prec)
    with workprec(prec):
        env = {"sigma_a2": a2, "sigma_b2": b2, "s": s, "d": arb(d), "g_0": s * r0}
        env.update({"m_dsq": m["dsq"], **{f"f_{j}": dual(r0, j) for j in range(ORDER + 2)}})
        raw = sphere_formulas()(ctx, env)
    values = {
        k: (v if isinstance(v, arb) else to_arb(v))
        for k, v in zip((*SPHERE_KEYS, *NTK_EXTRA_KEYS), raw, strict=True)
    }
    values.update({k: arb(0) for k in exact_zeros(problem.activation)})
    ck = _quadratics("ck", values["alpha"], values["beta"], values["mu"], d, prec)
    ntk = _quadratics("ntk", values["ntk_alpha"], values["ntk_beta"], values["ntk_mu"], d, prec)
    return values, s, dual.terms, ck, ntk


def _record(
    problem: DEQProblem,
    d: int,
    balls: dict[str, arb],
    ck: _Solutions,
    ntk: _Solutions,
    terms: int,
    prec: int,
) -> SphereCoefficients:
    """A :class:`SphereCoefficients` whose every value is the digits its ball proves."""
    dps = problem.dps
    values = {k: proven(v, dps) for k, v in balls.items()}
    notes: list[str] = []

    def quadratics(sols: _Solutions, which: str) -> tuple[QuadraticActivation, ...]:
        out = tuple(
            QuadraticActivation(sign, *(proven(v, dps) for v in sol))
            for sign, sol in zip(quadratic_signs(), sols, strict=True)
            if sol is not None
        )
        if not out:
            notes.append(no_quadratic_note(values, which, d))
        return out

    qck, qntk = quadratics(ck, "CK"), quadratics(ntk, "NTK")
    return SphereCoefficients(
        problem, d, values, qck, qntk, terms, tuple(notes), certified=True, prec_bits=prec
    )


def certify_sphere(
    problem: DEQProblem, d: int, controls: Controls = Controls()
) -> SphereCoefficients:
    """The sphere constants proven, the precision raised until ``problem.dps`` digits show.

    Raises:
      NotEnclosable: outside what ball arithmetic proves here (the caller falls back).
      ContractionError: a fixed point that does not attract, or a diverging NTK.
      NoConvergence: g(0)/g(1) so close to 1 that the series needs too many terms.
    """
    vmap = VarianceBalls(problem)
    dps = problem.dps

    def attempt(q: arb, known: int, prec: int) -> tuple[tuple[Num, ...], arb, int]:
        values, s, terms, ck, ntk = _balls(problem, vmap, d, prec, controls, q, known)
        balls = [*values.values(), *(v for sol in (*ck, *ntk) if sol for v in sol)]
        return (values, terms, ck, ntk), s, min(proven(v, dps).digits for v in balls)

    (values, terms, ck, ntk), prec = escalating(star_float(problem), dps, attempt)
    return _record(problem, d, values, ck, ntk, terms, prec)

r"""τ*² proved: the variance map in Arb balls and the Krawczyk proof of its fixed point.

With h(q) = F(q) − q, F and F' derived by :func:`deqrmt.symbolic.derive_fixed_point`
(:func:`._deq_formulas.map_formulas`) on moments enclosed by :mod:`._enclose`, a float root
from the engine's solver (:func:`star_float`) is refined by Newton steps at growing precision
and proved by Krawczyk's test (:mod:`._krawczyk`): the unique zero of h in a ball Q, with
|F'| < 1 on all of Q (so the fixed point attracts the iteration).  The ball K(Q) is ~2^−prec
wide: Q's radius is the square root of the target, and K contracts it quadratically.

What is proved is the value of the fixed point inside Q and its attraction; that it is the
root the DEQ's iteration reaches from z = 0 rests on the float scan, as in the verified path.
The DEQ (:mod:`._deq_certified`) and the sphere's diagonal s = g(1)
(:mod:`._sphere_certified`, τ0 = 1 and no centering) share this proof.
"""

from __future__ import annotations

from collections.abc import Iterable

from flint import arb

from .._errors import ActivationError, ContractionError
from ._arb import ArbContext, midpoint_text, to_arb, workprec
from ._deq_formulas import map_formulas
from ._enclose import ENCLOSED_MOMENTS, NotEnclosable, encloser_for
from ._fixed_point import scan_fixed_points, solve_tau, variance_map
from ._float_context import FLOAT
from ._krawczyk import contract, krawczyk, newton
from ._problem import DEQProblem
from ._roots import scan

__all__ = ["VarianceBalls", "prove_fixed_point", "star_float"]


class VarianceBalls:
    """h(q) = F(q) − q and h'(q) = F'(q) − 1 as balls, for every q in a ball."""

    def __init__(self, problem: DEQProblem) -> None:
        self.problem = problem
        self.enc = encloser_for(problem.activation)
        self.F, self.dF = map_formulas(problem.center)
        p = problem
        self._params = {"sigma_a2": p.sigma_a2, "sigma_b2": p.sigma_b2, "tau_0": p.tau0}

    @property
    def caches(self) -> bool:
        """The encloser caches integrand values per precision (erf-type φ)."""
        return bool(self.enc.caches)

    def params(self) -> dict[str, arb]:
        """σ_a², σ_b², τ0 as balls at the precision in force."""
        return {k: to_arb(v) for k, v in self._params.items()}

    def _moments(self, q: arb, names: Iterable[str], prec: int) -> dict[str, arb]:
        with workprec(prec):
            tau = q.sqrt()
        return self.enc(tau, [n for n in names if n in ENCLOSED_MOMENTS], prec)

    def h(self, q: arb, prec: int) -> arb:
        m = self._moments(q, self.F.args, prec)
        with workprec(prec):
            (f,) = self.F(ArbContext(prec), {**m, **self.params()})
            return f - q

    def dh(self, q: arb, prec: int) -> arb:
        m = self._moments(q, self.dF.args, prec)
        with workprec(prec):
            (df,) = self.dF(ArbContext(prec), {**m, **self.params()})
            return df - 1

    def both(self, q: arb, prec: int) -> tuple[arb, arb]:
        """h(q) and h'(q) from one moment evaluation (their moments pair up in the integrals)."""
        m = self._moments(q, {*self.F.args, *self.dF.args}, prec)
        with workprec(prec):
            env = {**m, **self.params()}
            (f,) = self.F(ArbContext(prec), env)
            (df,) = self.dF(ArbContext(prec), env)
            return f - q, df - 1


def prove_fixed_point(vmap: VarianceBalls, q: arb, known: int, prec: int) -> tuple[arb, arb]:
    """A ball K ∋ q* (q* the unique zero of h in a ball Q ⊇ K) ~2^−prec wide, and F'(Q).

    ``q`` is an exact start trusted to ``known`` bits.  Newton point steps double the trusted
    bits until two Krawczyk rounds reach ``prec``: the first, on Q of radius ~2^−known,
    proves the zero and its attraction and squares the width; the second reuses the same
    enclosure of h'(Q) and needs only h at a point.  Precisions rise with the trusted bits,
    except when the encloser caches integrand values per precision (erf-type φ): then all
    steps after the first run at ``prec`` and share them.

    Raises:
      NotEnclosable: no Q passes the Krawczyk test.
      ContractionError: |F'| ≥ 1 on Q: the fixed point does not attract.
    """
    q, known = newton(vmap.both, q, known, prec, "τ*²")
    p1 = prec if vmap.caches else min(prec, 2 * known + 32)
    h_pt = vmap.h(q, p1)  # q is exact: a point evaluation
    with workprec(prec):
        radii = [(abs(q) * arb(2) ** (-(known - widen))).upper() for widen in (4, 12, 24)]
    proof = krawczyk(q, h_pt, lambda big_q: vmap.dh(big_q, p1), radii, prec)
    if proof is None:
        raise NotEnclosable(
            f"the Krawczyk test failed around τ*² ≈ {midpoint_text(q, 20)}: no ball proves a "
            "unique fixed point"
        )
    k, dh_q, y = proof
    slope = dh_q + 1
    if not (slope < 1 and slope > -1):
        if slope >= 1 or slope <= -1:
            from ._threshold import threshold_text

            raise ContractionError(
                f"F'(τ*²) = {midpoint_text(slope, 8)}: |F'| ≥ 1, the fixed point is not "
                f"attracting at sigma_a2={vmap.problem.sigma_a2}; reduce sigma_a2."
                + threshold_text(vmap.problem)
            )
        raise NotEnclosable(f"|F'| < 1 is undecided on the ball: F' ∈ {slope.str(8)}")
    return contract(lambda x: vmap.h(x, prec), k, dh_q, y, prec), slope


def star_float(problem: DEQProblem) -> float:
    """τ*² in float64: the engine's scan, stopped at the first root, then its polish.

    The scan walks up from q0 = σ_b²τ0², so its first root is τ*² whether or not it goes on
    (``decades=0`` stops it there); the search for *other* fixed points is
    :func:`._deq_verified.other_fixed_points`'s.  Errors (no root, overflow) come from the
    engine's full scan, worded as everywhere else.
    """
    h = variance_map(problem).h(FLOAT, 0, 12)
    try:
        roots, _ = scan(h, float(problem.q0), decades=0)
    except (OverflowError, ZeroDivisionError, ValueError, ArithmeticError, ActivationError):
        roots = []
    star = roots[0] if roots else scan_fixed_points(problem).star
    return float(solve_tau(problem, FLOAT, 0, star).q)

r"""The Krawczyk prover: a unique zero of h in a ball, and a ball around it ~2^−prec wide.

Krawczyk, "Newton-Algorithmen zur Bestimmung von Nullstellen mit Fehlerschranken", Computing 4
(1969); R. Moore, *Interval Analysis* (1966).  For a point x̃ and a ball Q ∋ x̃,

    K(Q) = x̃ − Y h(x̃) + (1 − Y h'(Q)) (Q − x̃),      Y ≈ 1/h'(x̃).

K(Q) ⊂ int Q proves that h has exactly one zero in Q, and that it lies in K(Q).  Three steps,
each one function, used by the DEQ's τ*² (:mod:`._variance_proof`) and the sphere's
r₀ = g(0)/g(1) (:mod:`._sphere_certified`):

1. :func:`newton`: point Newton steps on the midpoints, doubling the bits trusted in x̃;
2. :func:`krawczyk`: the test on balls Q of the radii given, the first that passes wins;
3. :func:`contract`: further Krawczyk rounds K ← K(K) ∩ K that reuse the enclosure of h'(Q)
   (valid on K ⊂ Q) and need h only at a point; each multiplies the width by |1 − Y h'(Q)|.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

from flint import arb

from ._arb import midpoint_text, workprec
from ._enclose import NotEnclosable

__all__ = ["contract", "krawczyk", "newton"]


def newton(
    both: Callable[[arb, int], tuple[arb, arb]], x: arb, known: int, prec: int, what: str
) -> tuple[arb, int]:
    """Newton point steps from the exact ``x`` (trusted to ``known`` bits) until ~``prec``/4.

    ``both(x, p)`` returns h(x) and h'(x) at ``p`` bits.  At least one step is taken, whatever
    ``known`` claims (a float start can be off by more than it says; the step then sets
    ``known``); precisions rise with the trusted bits.  Returns the last point, exact, and the
    bits it is trusted to.

    Raises:
      NotEnclosable: the steps do not settle (``what`` names the unknown in the message).
    """
    checked = False
    while not checked or 4 * known < prec + 32:
        checked = True
        p = min(prec, 2 * known + 32)
        p = prec if p >= 3 * prec // 4 else p
        h, dh = both(x, p)
        with workprec(p):
            step = arb(h.mid()) / arb(dh.mid())
            x = arb((x - step).mid())
            rel = abs(step / x)
        known = p - 8 if rel == 0 else min(p - 8, 2 * int(-math.log2(float(rel.upper()))) - 8)
        if known < 8:
            raise NotEnclosable(f"Newton on {what} does not settle near {midpoint_text(x, 10)}")
    return x, known


def krawczyk(
    x: arb, h_x: arb, dh_on: Callable[[arb], arb], radii: Iterable[arb], prec: int
) -> tuple[arb, arb, arb] | None:
    """The first ball Q = [x ± r], r in ``radii``, on which the Krawczyk test passes.

    ``h_x`` is h at the exact point ``x``; ``dh_on(Q)`` encloses h' on all of Q.  Returns
    (K(Q), h'(Q), Y), or None when no radius passes.
    """
    for rad in radii:
        with workprec(prec):
            big_q = arb(x, rad)
        dh_q = dh_on(big_q)
        with workprec(prec):
            y = 1 / arb(dh_q.mid())
            k = x - y * h_x + (1 - y * dh_q) * (big_q - x)
        if big_q.contains_interior(k):
            return k, dh_q, y
    return None


def contract(h_at: Callable[[arb], arb], k: arb, dh_q: arb, y: arb, prec: int) -> arb:
    """Shrink the proved ball ``k`` by Krawczyk rounds at its midpoint (at most four).

    ``h_at(x)`` is h at an exact point; ``dh_q`` and ``y`` are the enclosure of h' and the
    preconditioner of the ball Q ⊇ ``k`` that passed.  Stops at ~2^−(prec−16) relative (still
    ~10^-(dps+3) wide, and it saves a last point evaluation) or when a round no longer
    shrinks the ball fourfold.
    """
    for _ in range(4):
        with workprec(prec):
            if k.rad() <= abs(k.mid()) * arb(2) ** (16 - prec):
                break
            x = arb(k.mid())
        h_x = h_at(x)
        with workprec(prec):
            k_new = (x - y * h_x + (1 - y * dh_q) * (k - x)).intersection(k)
        shrunk = k_new.rad() < k.rad() / 4
        k = k_new
        if not shrunk:
            break
    return k

"""Fixed points of the DEQ's variance map: a scan for every root and a bracketed Newton.

Self-contained on purpose (it imports only ``math``): ``deqrmt codegen`` copies this module
verbatim into the modules it writes, so generated code finds τ* exactly as the engine does.
``h(q)`` returns ``(F(q) − q, F'(q) − 1)`` in whatever number type the caller uses.

* :func:`scan` walks q upward from q0 = σ_b²τ0² (below it F(q) ≥ q0 > q, so no root) on a
  geometric grid, and inspects each cell with the cubic Hermite interpolant of (h, h') at its
  ends.  A cell is split where that cubic has an interior extremum whose value crosses zero
  or comes within half of the smaller end value: two roots can hide in a cell only as such
  a dip, so roots closer than any grid are still found (a pair at a ratio of 1.0001 is).
* :func:`polish` is Newton's method inside a sign-change bracket, falling back to bisection
  whenever a step would leave the bracket or fails to halve it; its iteration budget is set
  by the precision asked for (bisection's count), not by a fixed number.  It converges for
  every contraction rate F' < 1, however close to 1.
* :func:`refine` takes a scan's bracket to another precision.  The scan's float h can be wrong
  by more than its cell's values (float64 moments of a steep φ such as tanh(30x) are off by
  ~10⁻³), so the bracket it found may not bracket at working precision.  Every bracket that
  reaches :func:`polish` is therefore checked with the h it is polished with, and where the
  float stage fails :func:`locate` finds the sign change again at working precision, walking
  out of the scan's cell on the side its signs point to.  A root the scan bracketed is solved,
  or refused with ``ArithmeticError`` when h changes sign nowhere near it; :class:`NoBracket`
  never leaves :func:`refine`.
"""

import math

SCAN_RATIO = 2.0**0.5  # grid ratio in q: cells wide enough to be cheap, the cubic does the rest
SCAN_DECADES = 4  # after τ*'s root, scan on to 10^4·q* (τ up to 100·τ*)
SCAN_CAP = 1e12  # no root below q0·10^12: the map does not contract (diverges)
SCAN_MAX_EVALS = 600
LOCATE_MAX_EVALS = 64  # working-precision evaluations locate() may spend outside the cell


class NoBracket(ValueError):
    """The interval given to :func:`polish` does not bracket a sign change of h."""


def _hermite(a, b, ha, da, hb, db):
    """Coefficients of the cubic in t = (q − a)/(b − a) matching h, h' at both ends."""
    w = b - a
    return (ha, w * da, 3 * (hb - ha) - w * (2 * da + db), 2 * (ha - hb) + w * (da + db))


def _extrema(c):
    """Interior (0 < t < 1) critical points of the cubic c0 + c1 t + c2 t² + c3 t³."""
    _, c1, c2, c3 = c
    a, b = 3 * c3, 2 * c2  # p'(t) = a t² + b t + c1; the stable quadratic formula, since
    disc = b * b - 4 * a * c1  # a is often ~0 (the cubic is nearly a parabola near a root pair)
    if disc < 0:
        return []
    q = -(b + math.copysign(math.sqrt(disc), b)) / 2
    ts = ([q / a] if a != 0 else []) + ([c1 / q] if q != 0 else [])
    return sorted(t for t in ts if 0 < t < 1)


def _cubic(c, t):
    return c[0] + t * (c[1] + t * (c[2] + t * c[3]))


class _Scan:
    """The state of one :func:`scan`: the evaluations spent, the roots found, and whether the
    range was covered.  Nodes are ``(q, h(q), h'(q))`` in floats."""

    def __init__(self, h, max_evals):
        self.h = h
        self.max_evals = max_evals
        self.evals = 0
        self.roots = []
        self.complete = True

    def node(self, q):
        """The node at q; ``OverflowError`` where h or h' is not finite."""
        self.evals += 1
        v, d = self.h(q)
        v, d = float(v), float(d)
        if not (math.isfinite(v) and math.isfinite(d)):
            raise OverflowError(f"F is not finite at q = {q:.6g}")
        return (q, v, d)

    def examine(self, left, right, depth):
        """A cell between two nodes: a root where h changes sign (split first where the cubic
        model turns inside, since a crossing may be three); split where the model dips to 0."""
        (a, ha, da), (b, hb, db) = left, right
        if ha == 0:
            kind = 0 if da == 0 else (-1 if da < 0 else 1)
            if self.roots and self.roots[-1][1] == a:
                # the cell before ended on this zero: one root, not two, of the kind h'(a) says
                self.roots[-1] = (a, a, kind)
            else:
                self.roots.append((a, a, kind))
            if hb == 0:
                return  # the next cell records b's zero
            if depth >= 16 or self.evals >= self.max_evals:
                self.complete = False  # no deeper look: the rest of the cell is not covered
                return
            # a zero on a node ends nothing: more roots may follow inside the cell, so look at
            # (a + δ, b] with δ a billionth of the cell, where h has the sign it takes after a
            inner = self.node(a + 1e-9 * (b - a))
            if inner[1] == 0:
                self.complete = False  # h vanishes beside its zero too: not resolved here
                return
            self.examine(inner, right, depth + 1)
            return
        if (ha > 0) != (hb > 0):
            if hb == 0:
                self.roots.append((a, b, -1 if ha > 0 else 1))
                return
            # one crossing, or three: a cubic model that turns inside the cell may hide the
            # extra pair, so split at its turning points and look again
            c = _hermite(a, b, ha, da, hb, db)
            ts = _extrema(c)
            if ts:
                self.split(left, right, [a + t * (b - a) for t in ts], depth)
            else:
                self.roots.append((a, b, -1 if ha > 0 else 1))
            return
        c = _hermite(a, b, ha, da, hb, db)
        near = [
            t
            for t in _extrema(c)
            if (_cubic(c, t) > 0) != (ha > 0) or abs(_cubic(c, t)) < 0.5 * min(abs(ha), abs(hb))
        ]
        if near:
            self.split(left, right, [a + t * (b - a) for t in near], depth)

    def validated(self, left, right, depth):
        """A grid cell whose ends agree in sign is checked at its midpoint first: where the
        cubic model misses the midpoint by a quarter of the smaller end value, a quartic or
        higher feature (a root pair the cubic cannot show) may hide, so halve and look again."""
        (a, ha, da), (b, hb, db) = left, right
        if (ha > 0) != (hb > 0) or depth >= 8:
            self.examine(left, right, depth)
            return
        mid = self.node((a + b) / 2)
        pred = _cubic(_hermite(a, b, ha, da, hb, db), 0.5)
        if (mid[1] > 0) != (ha > 0) or abs(mid[1] - pred) > 0.25 * min(abs(ha), abs(hb)):
            self.validated(left, mid, depth + 1)
            self.validated(mid, right, depth + 1)
        else:
            self.examine(left, mid, depth)
            self.examine(mid, right, depth)

    def split(self, left, right, points, depth):
        """The cell split at ``points``, each part examined; a cell too narrow (or out of
        evaluations) gives its sign change, or a double root where h is ~0, as it is."""
        a, b = left[0], right[0]
        width = b - a
        # keep split points off the ends, so every cell shrinks by a fixed fraction
        points = sorted({min(max(p, a + 0.05 * width), b - 0.05 * width) for p in points})
        if width <= 1e-13 * abs(b) or self.evals + len(points) > self.max_evals:
            if (left[1] > 0) != (right[1] > 0):
                self.roots.append((a, b, -1 if left[1] > 0 else 1))
                return
            (q, v, _) = min((left, right), key=lambda n: abs(n[1]))
            if abs(v) <= 1e-9 * abs(q):
                self.roots.append((q, q, 0))  # a double root, to the scan's resolution
            else:
                self.complete = self.complete and width <= 1e-13 * abs(b)
            return
        nodes = [left, *(self.node(p) for p in points), right]
        for i in range(len(nodes) - 1):
            self.examine(nodes[i], nodes[i + 1], depth + 1)

    def walk(self, q0, end, ratio, decades):
        """The geometric grid from q0 to ``end``, each cell validated; once τ*'s root is
        found, the end comes in to 10^decades times it.  Stops (incomplete) when the
        evaluations run out or h fails."""
        node = self.node(q0)
        if node[1] < 0:
            # h(q0) = σ_a² Var[φ] ≥ 0 exactly; below 0 only by float round-off, when φ is ~0 at
            # the scale √q0: the root is q0 to float precision (refine() brackets it exactly)
            self.roots.append((q0, q0, -1 if node[2] < 0 else 0))
        while node[0] < end:
            if self.evals >= self.max_evals:
                self.complete = False
                break
            try:
                nxt = self.node(node[0] * ratio)
            except (OverflowError, ValueError, ZeroDivisionError, ArithmeticError):
                self.complete = False
                break
            try:
                self.validated(node, nxt, 0)
            except (OverflowError, ValueError, ZeroDivisionError, ArithmeticError):
                self.complete = False
                break
            node = nxt
            if self.roots and end > self.roots[0][1] * 10**decades:
                end = max(self.roots[0][1], q0) * 10**decades


def scan(
    h,
    q0,
    *,
    ratio=SCAN_RATIO,
    decades=SCAN_DECADES,
    cap=SCAN_CAP,
    max_evals=SCAN_MAX_EVALS,
    limit=None,
):
    """Every fixed point of q ↦ F(q) in [q0, 10^decades·q*], as brackets (float arithmetic).

    ``limit``, when given, is a q above which h < 0 is known (proved by the caller): the scan
    ends there if that comes first.

    Returns ``(roots, complete)``; each root is ``(a, b, kind)`` with h(a), h(b) of opposite
    signs (kind −1: h falls through 0, F' < 1 there, the attracting kind; +1: h rises, F' > 1,
    repelling) or ``a == b`` where h only touches 0 (kind 0, F' = 1).  ``roots[0]`` is the
    fixed point the DEQ's own iteration reaches from z = 0.  ``complete`` is False when the
    evaluation budget ran out or h overflowed before the end of the range.
    """
    state = _Scan(h, max_evals)
    state.walk(q0, q0 * cap if limit is None else min(q0 * cap, limit), ratio, decades)
    state.roots.sort(key=lambda r: r[0])
    return state.roots, state.complete


def polish(h, a, b, tol, *, ha=None, hb=None):
    """The root of h in [a, b] (h(a), h(b) of opposite signs) to relative tolerance ``tol``.

    Newton inside the bracket (Numerical Recipes' ``rtsafe``): a step that would leave the
    bracket, or that does not shrink to half the step before last, is replaced by bisection.
    At most 2·log2((b − a)/(tol·a)) + 8 evaluations: the budget comes from the precision.
    ``ha``, ``hb``: h(a), h(b) where the caller has them already.

    Raises :class:`NoBracket` (a ``ValueError``) when h(a), h(b) have the same sign.
    """
    ha = h(a)[0] if ha is None else ha
    hb = h(b)[0] if hb is None else hb
    if ha == 0:
        return a
    if hb == 0:
        return b
    if (ha > 0) == (hb > 0):
        raise NoBracket("polish: the interval does not bracket a sign change")
    # bits bisection needs: int() is exact for floats and mpfs alike (a float would overflow)
    budget = 2 * max(int((b - a) / (tol * a)).bit_length(), 1) + 8
    x = a + (b - a) * ha / (ha - hb)  # secant start: inside, and near a simple root
    step_old = step = b - a
    hx, dx = h(x)
    for _ in range(budget):
        if hx == 0:
            return x
        if (hx > 0) == (ha > 0):
            a, ha = x, hx
        else:
            b, hb = x, hx
        newton = x - hx / dx if dx != 0 else None
        if newton is None or not (a < newton < b) or abs(2 * hx) > abs(step_old * dx):
            step_old, step = step, (b - a) / 2
            x = a + step
        else:
            step_old, step = step, x - newton
            x = newton
        if abs(step) <= tol * abs(x) or b - a <= tol * abs(a):
            return x
        hx, dx = h(x)
    raise ArithmeticError(f"polish: no convergence in {budget} steps (tolerance {tol})")


def bracket(h, q):
    """A sign-change bracket (a, b) around an approximate root ``q`` (a == b when h(q) == 0).

    The bracket widens from q·10⁻¹⁰ by 8× a step while it stays inside (0, 2q); past that the
    float root was not near a root of h (raises ``ArithmeticError``; :func:`refine` then
    searches from the scan's cell with :func:`locate`).
    """
    if h(q)[0] == 0:
        return q, q
    width = q * 1e-10  # float64 placed the root to ~1e-13: start just wider
    while width < q:
        a, b = q - width, q + width
        if (h(a)[0] > 0) != (h(b)[0] > 0):
            return a, b
        width *= 8
    raise ArithmeticError(f"lost the fixed point near q = {float(q):.12g}")


def locate(h, a, b, kind, *, floor=0, max_evals=LOCATE_MAX_EVALS):
    """A sign-change bracket ``(lo, hi, h(lo), h(hi))`` of h at or next to the scan's cell [a, b].

    The cell is checked with h itself (whatever its precision).  Where h has one sign at both
    ends, the root of ``kind`` (−1: h falls through 0; +1: h rises) lies on the side those
    signs point to: below a when h(a) already has the sign h takes above the root, else above
    b.  The walk steps away from the cell, doubling the step (towards ``floor``, never past it:
    q > floor), until h changes sign; each step's point becomes the next start, so the bracket
    returned is the one nearest the cell.  ``lo == hi`` when h is exactly 0 there.

    Raises ``ArithmeticError`` when no sign change is found in ``max_evals`` evaluations (or
    h overflows on the way).
    """
    ha = h(a)[0]
    if ha == 0:
        return a, a, ha, ha
    hb = ha if b == a else h(b)[0]
    if hb == 0:
        return b, b, hb, hb
    if (ha > 0) != (hb > 0):
        return a, b, ha, hb
    # kind −1: h > 0 below the root, < 0 above it (kind +1 the reverse); kind 0 as −1
    above = (ha < 0) if kind <= 0 else (ha > 0)
    step = b - a if b > a else abs(a) * 1e-10
    if not step > 0:
        raise ArithmeticError(f"lost the fixed point near q = {float(a):.12g}")
    x, hx = (a, ha) if above else (b, hb)
    for _ in range(max_evals):
        if above:
            nxt = x - step
            if not nxt > floor:
                nxt = floor + (x - floor) / 2
            if not nxt < x:
                break  # no room left above the floor
        else:
            nxt = x + step
        hn = h(nxt)[0]
        if hn == 0:
            return nxt, nxt, hn, hn
        if (hn > 0) != (hx > 0):
            return (nxt, x, hn, hx) if above else (x, nxt, hx, hn)
        x, hx = nxt, hn
        step *= 2
    raise ArithmeticError(f"lost the fixed point near q = {float(a):.12g}")


def refine(h_float, h, root, convert, tol, *, floor=0):
    """The root ``scan`` bracketed as ``root``, polished in float, then re-bracketed and
    polished with ``h`` (another precision; ``convert`` maps a float into its numbers).

    The float stage is a shortcut: where float h disagrees with the scan's bracket (it may,
    when float moments are inexact) or its root is not near h's, the scan's cell is searched
    again with h itself (:func:`locate`, no lower than ``floor``, e.g. q0 = σ_b²τ0² where
    h > 0 below) and polished there.  Every bracket polished is checked with the h it is
    polished with.

    A bracket with a == b is a grid point where h was exactly 0 in float: a simple root there
    (kind ±1) is used as the start; a touching root (kind 0, F' = 1) is refused.
    """
    a, b, kind = root
    if a == b and kind == 0:
        raise ValueError("a double root (F' = 1): not attracting")
    try:
        q = a if a == b else polish(h_float, a, b, 1e-13)
        lo, hi = bracket(h, convert(q))
        hlo = hhi = None
    except (NoBracket, ArithmeticError):
        # float and h disagree about the scan's cell: find the sign change with h itself
        lo, hi, hlo, hhi = locate(h, convert(a), convert(b), kind, floor=convert(floor))
    return lo if lo == hi else polish(h, lo, hi, tol, ha=hlo, hb=hhi)

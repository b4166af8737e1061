"""The Gaussian tail lemma of :mod:`deqrmt.numeric._enclose`, term by term.

:func:`~deqrmt.numeric._enclose.gaussian_tail` bounds ∫_R^∞ |w(ξ)| |g(τξ)| pdf(ξ) dξ for every
τ ≤ τ_hi by S C (1 + τ_hi)^p · 2 R^{m−1} e^{bR − R²/2}/√(2π) (S the sum of |coefficients|
of w, k its degree, m = k + p, b = a τ_hi), valid when R ≥ 1 and R/2 ≥ b + m/R.  The
reference evaluates that formula in mpmath at 50 digits from the exact inputs; the bound must
be at least the formula (it is an upper bound, rounded up at 64 bits) and within 2^-50 of it,
and None exactly where the lemma's condition fails, its two boundaries included.  The tail
itself is checked against quadrature (the bound is a bound, not only a formula).
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import pytest
from flint import arb

from deqrmt.numeric._enclose import Growth, gaussian_tail


def _ball(v) -> arb:
    v = Fraction(v)
    return arb(v.numerator) / v.denominator  # exact: the inputs here are dyadic


def _formula(weight, c, p, a, tau_hi, r) -> mpmath.mpf:
    def mp(v):
        v = Fraction(v)
        return mpmath.mpf(v.numerator) / v.denominator

    with mpmath.workdps(50):
        s = sum(abs(w) for w in weight)
        m = p + len(weight) - 1
        b, r, c, tau_hi = mp(a) * mp(tau_hi), mp(r), mp(c), mp(tau_hi)
        return (
            s * c * (1 + tau_hi) ** p * 2 * r ** (m - 1)
            * mpmath.exp(b * r - r * r / 2) / mpmath.sqrt(2 * mpmath.pi)
        )  # fmt: skip


def _mp(x: arb) -> mpmath.mpf:
    man, exp = x.mid().man_exp()
    with mpmath.workdps(50):
        return mpmath.mpf(int(man)) * mpmath.mpf(2) ** int(exp)


@pytest.mark.parametrize(
    ("weight", "c", "p", "a", "tau_hi", "r"),
    [
        ((0, 0, 1), 1, 2, 1, Fraction(1), 9),  # ξ² (1 + x)² e^x
        ((-1, 0, 1), 3, 0, 0, Fraction(1, 2), 5),  # He₂ = ξ² − 1: S = 2
        ((0, -3, 0, 1), Fraction(5, 2), 1, Fraction(1, 4), Fraction(3, 2), 8),  # He₃, S = 4
        ((1,), 1, 0, 0, Fraction(1), 2),  # m = 0: R^{-1}
        ((2,), 1, 3, 2, Fraction(7, 8), 12),
    ],
)
def test_the_bound_is_the_lemmas_formula(weight, c, p, a, tau_hi, r):
    g = Growth(_ball(c), arb(p), _ball(a))
    bound = gaussian_tail(weight, g, _ball(tau_hi), arb(r))
    assert bound is not None
    want = _formula(weight, c, p, a, tau_hi, r)
    got = _mp(bound)
    with mpmath.workdps(50):
        assert want <= got <= want * (1 + mpmath.mpf(2) ** -50), (got, want)


def test_the_bound_holds_the_tail():
    """∫_R^∞ |He₃(ξ)| (1 + τξ) e^{τξ/4} pdf(ξ) dξ at τ = τ_hi = 3/2, R = 8, by quadrature."""
    g = Growth(arb(1), arb(1), arb(1) / 4)
    bound = gaussian_tail((0, -3, 0, 1), g, arb(3) / 2, arb(8))
    with mpmath.workdps(30):
        tau = mpmath.mpf(3) / 2
        exact = mpmath.quad(
            lambda x: abs(x**3 - 3 * x) * (1 + tau * x) * mpmath.exp(tau * x / 4) * mpmath.npdf(x),
            [8, mpmath.inf],
        )
    assert exact <= _mp(bound) <= 20 * exact


@pytest.mark.parametrize(
    ("weight", "p", "a", "tau_hi", "r", "holds"),
    [
        # R/2 − b − m/R = 0 exactly: the lemma holds (R = 4, b = 1, m = 4)
        ((0, 0, 0, 0, 1), 0, 1, 1, 4, True),
        ((0, 0, 0, 0, 1), 0, 1, 1, Fraction(4 * 2**20 - 1, 2**20), False),  # just below
        # R = 1 exactly, with b = 1/2, m = 0: the boundary R ≥ 1 holds
        ((1,), 0, Fraction(1, 2), 1, 1, True),
        ((1,), 0, Fraction(1, 2), 1, Fraction(2**20 - 1, 2**20), False),  # R < 1
        ((1,), 0, 1, 1, 1, False),  # R = 1 but b = 1 > 1/2
    ],
)
def test_none_exactly_where_the_condition_fails(weight, p, a, tau_hi, r, holds):
    g = Growth(arb(1), arb(p), _ball(a))
    bound = gaussian_tail(weight, g, arb(tau_hi), _ball(r))
    assert (bound is not None) == holds


@pytest.mark.parametrize(
    ("act", "name", "g", "slack"),
    [
        # fold: an even integrand, one side's bound doubled
        ("tanh", "sq", lambda x: mpmath.tanh(x) ** 2, 8),
        ("tanh", "d1", lambda x: x * mpmath.tanh(x), 8),  # |He₁(ξ)| |φ(τξ)|, τ = 1
        # no parity: each side bounded on its own piece (log(1 + e^x) ≤ log 2 + x: slack)
        ("softplus", "sq", lambda x: mpmath.log1p(mpmath.exp(x)) ** 2, 40),
    ],
)
@pytest.mark.parametrize("cut", [6, 9])
def test_an_enclosers_tail_bounds_both_tails(act, name, g, slack, cut):
    """MomentEncloser.tail ≥ ∫_{|ξ| > cut} |w(ξ)| |g(ξ)| pdf(ξ) dξ at τ = 1 (quadrature at 30
    digits), and within ``slack`` of it (the lemma's 2, the growth bound's own slack)."""
    from deqrmt.numeric._enclose import encloser_for
    from deqrmt.symbolic import get_activation

    enc = encloser_for(get_activation(act))
    bound = enc.tail(name, arb(1), cut)
    assert bound is not None
    with mpmath.workdps(30):
        exact = mpmath.quad(lambda x: g(x) * mpmath.npdf(x), [cut, mpmath.inf]) + mpmath.quad(
            lambda x: g(x) * mpmath.npdf(x), [-mpmath.inf, -cut]
        )
    assert exact <= _mp(bound) <= slack * exact, (act, name, _mp(bound), exact)


@pytest.mark.parametrize(("tau", "prec"), [(1, 200), (3, 64), (3, 600)])
def test_choose_cut_is_an_integer_whose_tails_are_below_the_target(tau, prec):
    """softplus grows like x, so the first guess √(2 ln 2 · prec) + 1 (in units of τ) is too
    small here and the cut grows: it must stay an integer (the quadrature's end points are
    exact integers) with every tail ≤ 2^-prec there."""
    from deqrmt.numeric._enclose import encloser_for
    from deqrmt.symbolic import get_activation

    enc = encloser_for(get_activation("softplus"))
    names = list(enc.open)
    cut = enc.choose_cut(names, arb(tau), prec)
    first = int(mpmath.ceil(tau * (mpmath.sqrt(2 * mpmath.log(2) * prec) + 1)))
    assert isinstance(cut, int) and cut > first  # it grew
    for n in names:
        t = enc.tail(n, arb(tau), cut)
        assert t is not None and t <= arb(2) ** -prec

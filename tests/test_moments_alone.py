"""Each verified-path moment asked for alone, against mpmath quadrature at 50 digits.

:class:`deqrmt.numeric._moments.MomentEvaluator` sums Σ w ξ^k φ, Σ w ξ^k φ², Σ w φ'² over one
set of nodes, only as far as the moments asked for need (the highest Hermite degree of each
kind).  Asked alone, E[φ] (degree 0) and E[φ²] (degree 0) still need their sums: the
references here are E[g(τξ)] = ∫ g(τξ) pdf(ξ) dξ by ``mpmath.quad`` at 50 digits for softplus
(no closed form, so the evaluator integrates), compared at 30 digits to 1e-25 relative.
"""

from __future__ import annotations

import mpmath
import pytest

from deqrmt.numeric import evaluator_for
from deqrmt.symbolic import get_activation


def _softplus(x):
    return mpmath.log1p(mpmath.exp(x))


def _sigmoid(x):
    return 1 / (1 + mpmath.exp(-x))


_G = {
    "phi": lambda t: _softplus(t),
    "sq": lambda t: _softplus(t) ** 2,
    "dsq": lambda t: _sigmoid(t) ** 2,
}


@pytest.mark.parametrize("names", [["phi"], ["sq"], ["dsq"], ["phi", "sq", "dsq"]])
@pytest.mark.parametrize("tau", ["0.5", "2"])
def test_a_moment_asked_alone_is_its_integral(names, tau):
    ctx = mpmath.MPContext()
    ctx.dps = 30
    got = evaluator_for(get_activation("softplus"))(ctx, ctx.mpf(tau), names)
    assert sorted(got) == sorted(names)
    for n in names:
        with mpmath.workdps(50):
            t = mpmath.mpf(tau)
            want = mpmath.quad(
                lambda s, g=_G[n], t=t: g(t * s) * mpmath.npdf(s), [-mpmath.inf, 0, mpmath.inf]
            )
            assert not got[n].exact_zero
            assert abs(mpmath.mpf(got[n].value) - want) <= abs(want) * mpmath.mpf(10) ** -25, (
                n,
                tau,
            )

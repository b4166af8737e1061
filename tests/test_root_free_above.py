"""The proved bound above which the DEQ's variance map has no fixed point, from its lemma.

:func:`deqrmt.numeric._fixed_point.root_free_above`: with |φ(x)| ≤ A + B_±|x| on each side
(the activation's linear envelope), F(q) ≤ σ_a²(A² + 2A(B₊ + B₋)√q/√(2π) + (B₊² + B₋²)q/2) +
σ_b²τ0², below q once √q exceeds the positive root s of a s² − b s − c with
a = 1 − σ_a²(B₊² + B₋²)/2, b = 2σ_a²A(B₊ + B₋)/√(2π), c = σ_a²A² + σ_b²τ0².  The reference
solves that quadratic in mpmath at 40 digits from the envelope; the bound must be at least s²
(proved, rounded up) and within 1e-10 relative of it; None where a ≤ 0.  And the map itself
(float64, the engine's own evaluation) is below the diagonal there.
"""

from __future__ import annotations

import mpmath
import pytest

from deqrmt.numeric._envelope import linear_envelope
from deqrmt.numeric._fixed_point import root_free_above, variance_map
from deqrmt.numeric._float_context import FLOAT
from deqrmt.numeric._problem import DEQProblem


def _mp(v) -> mpmath.mpf:
    """An envelope constant (int or an Arb ball) at its upper end."""
    if isinstance(v, int):
        return mpmath.mpf(v)
    man, exp = v.upper().man_exp()
    return mpmath.mpf(int(man)) * mpmath.mpf(2) ** int(exp)


def _frac(v) -> mpmath.mpf:
    return mpmath.mpf(int(v.p)) / int(v.q)


@pytest.mark.parametrize(
    ("act", "sigma_a2", "sigma_b2", "tau0"),
    [
        ("relu", "1/2", "1/2", 1),
        ("softplus", "0.9", "0.3", 2),
        ("silu", "1/4", "1", "1/2"),
        ("elu(1)", "0.8", "0.2", 1),
        ("2*silu(x)", "0.2", "0.5", 1),  # B₊ = B₋ = 2
        ("leaky_relu(0.5)", "0.5", "0.5", 1),  # B₋ = 1/2
    ],
)
def test_the_bound_is_the_lemmas_root(act, sigma_a2, sigma_b2, tau0):
    problem = DEQProblem.make(act, sigma_a2, sigma_b2, tau0, center=False)
    big_a, b_plus, b_minus = linear_envelope(problem.activation)
    with mpmath.workdps(40):
        sa2, sb2, t0 = (_frac(v) for v in (problem.sigma_a2, problem.sigma_b2, problem.tau0))
        big_a, b_plus, b_minus = _mp(big_a), _mp(b_plus), _mp(b_minus)
        a = 1 - sa2 * (b_plus**2 + b_minus**2) / 2
        b = 2 * sa2 * big_a * (b_plus + b_minus) / mpmath.sqrt(2 * mpmath.pi)
        c = sa2 * big_a**2 + sb2 * t0**2
        s = (b + mpmath.sqrt(b * b + 4 * a * c)) / (2 * a)
        want = s * s
    got = root_free_above(problem)
    assert got is not None
    assert want <= got <= want * (1 + mpmath.mpf(10) ** -10), (got, want)
    h = variance_map(problem).h(FLOAT, 0, 12)
    for factor in (1, 1.5, 4):
        assert h(got * factor)[0] < 0  # F(q) < q


@pytest.mark.parametrize(("act", "sigma_a2"), [("relu", "2"), ("silu", "1"), ("relu", "3")])
def test_no_bound_where_the_envelope_does_not_contract(act, sigma_a2):
    """relu: a = 1 − σ_a²/2 (0 at σ_a² = 2); silu: B₊ = B₋ = 1, a = 1 − σ_a² (0 at 1)."""
    problem = DEQProblem.make(act, sigma_a2, "1", center=False)
    assert root_free_above(problem) is None

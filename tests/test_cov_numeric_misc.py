"""Edges of the smaller numeric modules: the Mehler series, the sphere's variance, the
spectral laws' refusals and spikes, the float-style formatter.

References are independent: the ReLU fixed point s = σ_b²/(1 − σ_a²/2) in closed form, a
sampled matrix's eigenvalues (numpy, seeded) for the spectral law, Python's own ``format``
of a float for the formatter.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import pytest
import sympy as sp

from deqrmt._errors import BudgetExceeded, DerivationError, InvalidArgument, NoConvergence
from deqrmt.numeric import dual_series, kolmogorov_distance, sphere_spectrum
from deqrmt.numeric._design_proof import DesignProof
from deqrmt.numeric._design_symmetry import Transform, candidate_transforms
from deqrmt.numeric._display import MAX_LINES, short
from deqrmt.numeric._enclose import enclose_moments
from deqrmt.numeric._formulas import compile_formulas
from deqrmt.numeric._mehler import MAX_TERMS, _ladder, terms_needed
from deqrmt.numeric._number_format import MAX_FORMAT_BITS, format_exact
from deqrmt.numeric._quadrature import _ladder as quadrature_ladder
from deqrmt.numeric._quadrature import gauss_legendre
from deqrmt.numeric._ranges import _fmt as ranges_fmt
from deqrmt.numeric._resolvent import MixtureGram
from deqrmt.numeric._shifted import stein_comparison
from deqrmt.numeric._sphere import sphere_variance
from deqrmt.numeric._verify import _agreed

# -- the Mehler series ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"r_max": 1}, InvalidArgument, "r_max"),
        ({"r_max": -0.1}, InvalidArgument, "r_max"),
        ({"s": 0}, InvalidArgument, "variance must be > 0"),
        ({"s": 10**5}, BudgetExceeded, "variance above"),
        ({"r_max": 0.9999999, "dps": 200}, NoConvergence, "more than"),
    ],
)
def test_dual_series_refusals(kwargs, error, match) -> None:  # type: ignore[no-untyped-def]
    args = {"s": 1, **kwargs}
    s = args.pop("s")
    with pytest.raises(error, match=match):
        dual_series("tanh", s, **args)


def test_dual_series_evaluation_refusals_and_the_arc_cosine_value() -> None:
    f = dual_series("sqrt(2)*max(x, 0)", 1, r_max=0.5, dps=20, max_derivative=1)
    with mpmath.workdps(30):
        # the arc-cosine kernel k(r) = (√(1 − r²) + (π − acos r) r)/π (Cho & Saul 2009)
        r = mpmath.mpf("0.3")
        want = (mpmath.sqrt(1 - r * r) + (mpmath.pi - mpmath.acos(r)) * r) / mpmath.pi
        assert abs(f(Fraction(3, 10)) - want) < mpmath.mpf(10) ** -18
    with pytest.raises(InvalidArgument, match="derivative"):
        f(0.1, derivative=2)
    with pytest.raises(InvalidArgument, match="derivative"):
        f(0.1, derivative=True)
    with pytest.raises(InvalidArgument, match="outside"):
        f(0.9)
    with pytest.raises(InvalidArgument, match="not finite"):
        f(mpmath.inf)


def test_terms_needed_and_the_quadrature_ladder_at_their_ends() -> None:
    assert terms_needed(1.0, 30, 3) == MAX_TERMS + 1
    assert terms_needed(0.0, 30, 3) == 3
    assert _ladder(10**9) == 512


# -- the sphere's variance --------------------------------------------------------------------


def test_sphere_variance_of_relu_is_the_closed_form() -> None:
    """s = σ_a² E[relu(√s ξ)²] + σ_b² = σ_a² s/2 + σ_b²  ⇒  s = σ_b²/(1 − σ_a²/2)."""
    s = sphere_variance("relu", "0.2", "0.8", dps=30)
    with mpmath.workdps(40):
        want = mpmath.mpf("0.8") / (1 - mpmath.mpf("0.2") / 2)
        assert abs(s - want) < mpmath.mpf(10) ** -30


# -- spectral laws ------------------------------------------------------------------------------


def test_sphere_spectrum_refuses_a_negative_beta_or_a_non_finite_scalar() -> None:
    with pytest.raises(InvalidArgument, match="β ≥ 0"):
        sphere_spectrum(0.1, -1.0, 0.0, 50, 60)
    with pytest.raises(InvalidArgument, match="β ≥ 0"):
        sphere_spectrum(float("nan"), 1.0, 0.0, 50, 60)


def test_mixture_gram_refuses_bad_shapes_and_values() -> None:
    with pytest.raises(InvalidArgument, match="K × p"):
        MixtureGram.from_variances(np.array([3, 4]), np.ones((3, 5)))
    with pytest.raises(InvalidArgument, match="positive"):
        MixtureGram.from_variances(np.array([3]), -np.ones((1, 5)))


def test_a_negative_alpha_puts_the_spike_below_the_bulk_as_sampled() -> None:
    """α 11ᵀ + β XᵀX + μI with α < 0: one eigenvalue leaves the bulk downwards; the predicted
    spike matches the smallest sampled eigenvalue (n = 300 points on S^{359}, seed 0)."""
    n, d, alpha, beta, mu = 300, 360, -0.05, 0.9, 0.5
    law = sphere_spectrum(alpha, beta, mu, n, d, points=201)
    assert len(law.spikes) == 1 and law.spikes[0] < law.bulk_edges[0]
    X = np.random.default_rng(0).standard_normal((d, n))
    X /= np.linalg.norm(X, axis=0)
    ev = np.linalg.eigvalsh(alpha + beta * X.T @ X + mu * np.eye(n))
    k = kolmogorov_distance(law, ev)
    assert k.spikes[0] == ev.min()
    assert k.spike_errors[0] < 0.02 and k.distance < 0.03


def test_kolmogorov_distance_needs_two_finite_eigenvalues() -> None:
    law = sphere_spectrum(0.07, 0.9, 0.04, 50, 60, points=101)
    with pytest.raises(InvalidArgument, match="two finite"):
        kolmogorov_distance(law, [1.0])
    with pytest.raises(InvalidArgument, match="two finite"):
        kolmogorov_distance(law, [1.0, float("inf")])


# -- float-style formatting -----------------------------------------------------------------


@pytest.mark.parametrize("x", [0.0, 12.0, 100.0, 1234567.0, 0.5, 1.5e-7, -2.25, 123456789012.0])
@pytest.mark.parametrize(
    "spec",
    [",", "_", ".3", ".0f", "#.0f", ".0e", "#.0e", ".3g", "#.3g", ",.2f", "g", ".1%", "010,.1f"],
)
def test_format_exact_is_floats_format(x: float, spec: str) -> None:
    """For a float's own value and repr, the exact formatter answers what ``format`` does."""
    assert format_exact(Fraction(x), spec, repr(x)) == format(x, spec)


def test_format_exact_refuses_a_value_of_too_many_bits() -> None:
    with pytest.raises(BudgetExceeded, match="bits"):
        format_exact(Fraction(1, 2 ** (MAX_FORMAT_BITS + 1)), ".3f", "")


# -- Gauss–Legendre, symmetries, display --------------------------------------------------------


def test_five_point_gauss_legendre_matches_the_closed_form() -> None:
    """Nodes 0, ±(1/3)√(5 ∓ 2√(10/7)); weights 128/225, (322 ± 13√70)/900 (Abramowitz–Stegun
    25.4.29): an odd rule has the node 0 exactly."""
    ctx = mpmath.MPContext()
    ctx.prec = 200
    xs, ws = gauss_legendre(ctx, 5)
    with mpmath.workprec(200):
        r = mpmath.sqrt(mpmath.mpf(10) / 7)
        want = {
            mpmath.mpf(0): mpmath.mpf(128) / 225,
            mpmath.sqrt(5 - 2 * r) / 3: (322 + 13 * mpmath.sqrt(70)) / 900,
            mpmath.sqrt(5 + 2 * r) / 3: (322 - 13 * mpmath.sqrt(70)) / 900,
        }
        assert len(xs) == 5 and any(x == 0 for x in xs)
        for x, w in zip(xs, ws, strict=True):
            node = min(want, key=lambda n: abs(abs(x) - n))
            assert abs(abs(x) - node) < mpmath.mpf(10) ** -55
            assert abs(w - want[node]) < mpmath.mpf(10) ** -55
    assert quadrature_ladder(10**6) == 256


def test_symmetry_descriptions_and_the_parameter_limit() -> None:
    a, b = sp.symbols("a b")
    assert Transform((0,), (-1,)).describe([a]) == "a → -a"
    assert Transform((1, 0), (1, 1)).describe([a, b]) == "(a, b) → (b, a)"
    assert Transform((0, 1), (1, -1)).describe([a, b]) == "b → -b"
    assert candidate_transforms(7) == []
    assert len(candidate_transforms(2)) == 7  # 2 permutations × 4 sign patterns, less the identity


def test_short_cuts_long_output_and_says_where_the_rest_is() -> None:
    lines = [f"line {i}" for i in range(MAX_LINES + 5)]
    out = short(lines).splitlines()
    assert len(out) == MAX_LINES
    assert out[-1] == "… (every number: .to_dict())"
    assert short(lines[:3]) == "line 0\nline 1\nline 2"


def test_enclose_moments_refuses_a_scale_that_is_not_positive() -> None:
    with pytest.raises(InvalidArgument, match="τ > 0"):
        enclose_moments("tanh", 0, ("phi",))


# -- small helpers' rarer answers ---------------------------------------------------------------


def test_agreed_digits_of_values_that_differ_in_the_first_digit() -> None:
    assert _agreed(mpmath.mpf(1), mpmath.mpf(2), 10) == 0
    assert _agreed(mpmath.mpf("1.2341"), mpmath.mpf("1.2342"), 10) == 4
    assert _agreed(mpmath.mpf(3), mpmath.mpf(3), 7) == 7


def test_range_text_of_an_open_end() -> None:
    assert ranges_fmt(None) == "?"
    assert ranges_fmt(Fraction(3)) == "3" and ranges_fmt(Fraction(1, 4)) == "0.25"


def test_compile_formulas_refuses_a_symbol_that_is_not_an_argument() -> None:
    a, b = sp.symbols("a b")
    with pytest.raises(DerivationError, match=r"\['b'\]"):
        compile_formulas("f", [a + b], args=[a])


def test_a_design_proof_that_failed_says_why() -> None:
    p = DesignProof(False, reason="the Krawczyk test failed")
    assert p.summary == "not proven: the Krawczyk test failed"
    assert DesignProof(True).summary == "proven (Krawczyk)"


def test_stein_comparison_refuses_a_scale_that_is_not_positive() -> None:
    with pytest.raises(InvalidArgument, match="τ > 0"):
        stein_comparison("tanh", "-0.5")


def test_sphere_spectrum_without_bulk_is_the_rank_one_matrix() -> None:
    """β = 0: α 11ᵀ + μ I has the eigenvalue μ + α n once (eigenvector 1/√n) and μ otherwise."""
    n, alpha, mu = 50, 0.5, 0.2
    law = sphere_spectrum(alpha, 0.0, mu, n, 60, points=101)
    assert law.support == ()
    assert len(law.spikes) == 1
    assert abs(law.spikes[0] - (mu + alpha * n)) <= 1e-9 * (mu + alpha * n)

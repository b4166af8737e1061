"""Every printed ball contains an independent 70-digit reference (issue 21's done-when).

``coefficients --json`` and ``sphere --json`` print each proven value as a ball: a midpoint
(10 digits beyond the proven ones) and a radius.  Here every such ball, read back as exact
decimals, must contain a reference computed in this file with plain mpmath at 80 digits (good to
~70), never with the engine:

* DEQ: ``helpers.deq_reference`` (tanh-sinh quadrature of the moments' definitions or hand closed
  forms, ``findroot`` for τ*², the hand-derived formulas of issue 2);
* sphere: s = g(1) by ``findroot`` on quadrature, the Mehler coefficients b_k = E[h_k(ξ)φ(√s ξ)]
  by Gauss–Legendre panels (mpmath's nodes, two degrees that must agree), r₀ by Newton on the
  series, and g, k and their derivatives by implicit differentiation written out below; Corollary
  1's quadratics from their closed forms (a2 = ±√(μ/2), a1 = ±√β, a0 + a2 = ±√(α − μ/d); the NTK's
  with μ̇/6, β̇/2, α̇ − μ̇/d).

The grid: the certified test grid of test_certify.py (10 activations × σ_a² ∈ {0.2, 0.5}) and 12
more — steep (tanh(3x), erf(4x), sin(3x)), kinked (hard tanh, elu, leaky ReLU, a scaled ReLU) and
non-odd (sigmoid, cos, x + x²/2, elu(2)).  The default run takes a few settings; the rest is slow.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from fractions import Fraction

import mpmath
import pytest
from mpmath import mpf
from mpmath.calculus.quadrature import GaussLegendre

from deqrmt.numeric import deq_coefficients, sphere_coefficients
from helpers import CATALOGUE, Ref, deq_reference, quadratic_ref, to_mpf

DPS = 50
REF_DPS = 80
#: the references' own error, relative (they run at 80 digits)
REF_ERR = Fraction(1, 10**70)
#: the sphere's data dimension
D = 1200

GRID = [
    "tanh", "erf", "silu", "gelu", "relu", "leaky_relu(0.1)", "sin", "elu", "softplus", "quadratic",
]  # fmt: skip


def _scaled(ref: Ref, k: int, spec: str) -> Ref:
    """φ(kx) from the catalogue's φ: derivatives and Dirac masses pick up k, kinks move to c/k."""

    def val(v):
        return v() if callable(v) else mpf(v)

    def closed_form(f, power):
        return lambda t: k**power * f(k * t)

    def kink(c):
        return lambda: val(c) / k

    def jump(j):
        return lambda: k * val(j)

    power = {"phi": 0, "d1": 1, "d2": 2, "sq": 0, "sq2": 2, "dsq": 2}
    return Ref(
        spec,
        lambda x: ref.phi(k * x),
        lambda x: k * ref.dphi(k * x),
        lambda x: k * k * ref.ddphi(k * x),
        kinks=tuple(kink(c) for c in ref.kinks),
        jumps=tuple(jump(j) for j in ref.jumps),
        parity=ref.parity,
        continuous=ref.continuous,
        closed={name: closed_form(f, power[name]) for name, f in ref.closed.items()},
    )


def _leaky(slope: str) -> Ref:
    return Ref(
        f"leaky_relu({slope})",
        lambda x: x if x > 0 else to_mpf(slope) * x,
        lambda x: mpf(1) if x > 0 else to_mpf(slope),
        lambda x: mpf(0),
        kinks=(0,),
        jumps=(lambda: 1 - to_mpf(slope),),
    )


def _elu(alpha: str) -> Ref:
    a = lambda: to_mpf(alpha)  # noqa: E731
    return Ref(
        f"elu({alpha})",
        lambda x: x if x > 0 else a() * (mpmath.exp(x) - 1),
        lambda x: mpf(1) if x > 0 else a() * mpmath.exp(x),
        lambda x: mpf(0) if x > 0 else a() * mpmath.exp(x),
        kinks=(0,),
        jumps=(lambda: 1 - a(),),
    )


MORE: list[tuple[Ref, str]] = [
    (_scaled(CATALOGUE["tanh"], 3, "tanh(3*x)"), "0.3"),
    (_scaled(CATALOGUE["erf"], 4, "erf(4*x)"), "0.3"),
    (_scaled(CATALOGUE["sin"], 3, "sin(3*x)"), "0.15"),
    (_scaled(CATALOGUE["relu"], 2, "max(0, 2*x)"), "0.3"),
    (CATALOGUE["hard_tanh"], "0.3"),
    (CATALOGUE["hard_tanh(1.2, 0.8)"], "0.3"),
    (CATALOGUE["elu(0.5)"], "0.3"),
    (_leaky("0.3"), "0.3"),
    (CATALOGUE["sigmoid"], "0.3"),
    (CATALOGUE["cos"], "0.3"),
    (quadratic_ref("0.5"), "0.1"),
    (_elu("2"), "0.3"),
]
SETTINGS = [(CATALOGUE[s], a) for s in GRID for a in ("0.2", "0.5")] + MORE
#: the default run: closed-form DEQ references and cheap sphere references (odd φ: r₀ = 0)
FAST = {("relu", "0.2"), ("sin", "0.2"), ("erf", "0.5"), ("quadratic", "0.5")}
#: the sphere's default run: odd φ (r₀ = 0: four Mehler terms)
FAST_SPHERE = {("sin", "0.2"), ("erf", "0.5")}


def _cases(fast: set[tuple[str, str]]) -> list:
    return [
        pytest.param(
            ref, a, id=f"{ref.spec}-{a}", marks=() if (ref.spec, a) in fast else pytest.mark.slow
        )
        for ref, a in SETTINGS
    ]


def _read(text: str) -> Fraction:
    return Fraction(Decimal(text))


def _exact(x) -> Fraction:
    """An mpf exactly, at whatever precision it was computed (no rounding to mp.prec)."""
    if not hasattr(x, "_mpf_"):
        return Fraction(x)
    sign, man, exp, _ = x._mpf_
    return (-1) ** sign * Fraction(int(man)) * Fraction(2) ** int(exp)


def _assert_encloses(where: str, ball: dict[str, str], ref) -> None:
    m, r = _read(ball["midpoint"]), _read(ball["radius"])
    x = _exact(ref)
    slack = REF_ERR * abs(x) + Fraction(1, 10**75)  # the reference's own error
    assert abs(x - m) + slack <= r or (r == 0 and abs(x - m) <= slack), (
        f"{where}: reference {mpmath.nstr(ref, 72)} outside {ball['midpoint']} ± {ball['radius']}"
    )


# ---------------------------------------------------------------------------
# coefficients
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(("ref", "sigma_a2"), _cases(FAST | {("elu", "0.2")}))
def test_coefficients_balls_contain_the_reference(ref: Ref, sigma_a2: str) -> None:
    res = deq_coefficients(ref.spec, sigma_a2, dps=DPS)
    assert res.certified, res.reason
    doc = json.loads(res.to_json())
    expected = deq_reference(ref, sigma_a2, dps=REF_DPS)
    assert set(doc["balls"]) <= set(expected) and len(doc["balls"]) >= 11
    for key, ball in doc["balls"].items():
        _assert_encloses(f"{ref.spec} σ_a²={sigma_a2} {key}", ball, expected[key])


# ---------------------------------------------------------------------------
# sphere: an independent reference
# ---------------------------------------------------------------------------


def _kinks(ref: Ref) -> list[mpf]:
    return sorted(k() if callable(k) else mpf(k) for k in ref.kinks)


def _hermite_projections(ref: Ref, tau: mpf, top: int, degree: int) -> list[mpf]:
    """b_k = E[h_k(ξ) φ(τξ)], k ≤ top, h_k = He_k/√k!: Gauss–Legendre (``degree``) on panels of
    width ≤ 1/2 in x = τξ, split at the kinks, over |ξ| ≤ L with e^{−L²/4} ≪ 10^−dps (Cramér:
    |h_k(ξ)| ≤ 1.09 e^{ξ²/4}, so the integrand beyond L is below e^{−L²/4}·|φ|)."""
    nodes = GaussLegendre(mpmath.mp).calc_nodes(degree, mpmath.mp.prec)
    big_l = 2 * mpmath.sqrt((mpmath.mp.dps + 10) * mpmath.log(10)) + 2
    cuts = [-big_l * tau, *(k for k in _kinks(ref) if abs(k) < big_l * tau), big_l * tau]
    c1 = [mpf(0), mpf(0), *(1 / mpmath.sqrt(k) for k in range(2, top + 1))]
    c2 = [mpf(0), mpf(0), *(mpmath.sqrt(mpf(k - 1) / k) for k in range(2, top + 1))]
    norm = 1 / (tau * mpmath.sqrt(2 * mpmath.pi))
    b = [mpf(0)] * (top + 1)
    for lo, hi in zip(cuts[:-1], cuts[1:], strict=True):
        count = max(1, math.ceil(float((hi - lo) * 2)))
        for i in range(count):
            a, c = lo + (hi - lo) * i / count, lo + (hi - lo) * (i + 1) / count
            mid, half = (a + c) / 2, (c - a) / 2
            for t, w in nodes:
                x = mid + half * t
                xi = x / tau
                weight = half * w * ref.phi(x) * mpmath.exp(-xi * xi / 2) * norm
                prev, h = mpf(1), xi
                b[0] += weight
                if top >= 1:
                    b[1] += weight * h
                for k in range(2, top + 1):
                    prev, h = h, xi * h * c1[k] - prev * c2[k]
                    b[k] += weight * h
    return b


def _series(b: list[mpf], r: mpf, j: int) -> mpf:
    """f^{(j)}(r) = Σ_k b_k² k!/(k−j)! r^{k−j}."""
    return mpmath.fsum(b[k] ** 2 * mpmath.ff(k, j) * r ** (k - j) for k in range(j, len(b)))


def _origin(b: list[mpf], s: mpf, a2: mpf) -> mpf:
    """r₀: the root of s r = σ_a² f(r) in [0, 1), by Newton from 0 (f convex: it climbs)."""
    r0 = mpf(0)
    for _ in range(100):
        step = (s * r0 - a2 * _series(b, r0, 0)) / (s - a2 * _series(b, r0, 1))
        r0 -= step
        if abs(step) < mpf(10) ** -(REF_DPS + 5):
            break
    return r0


def _sphere_reference(ref: Ref, sigma_a2: str) -> dict[str, mpf]:
    """HLD 2023's constants at REF_DPS digits (module docstring)."""
    from helpers import gauss

    kinks = list(ref.kinks)
    with mpmath.workdps(REF_DPS + 10):
        a2 = to_mpf(sigma_a2)
        b2 = 1 - a2

        def second(q):
            return gauss(lambda x: ref.phi(x) ** 2, mpmath.sqrt(q), kinks)

        q = mpf(1)
        for _ in range(60):  # the DEQ's own iteration from z = 0 (‖x‖ = 1), then findroot
            q = a2 * second(q) + b2
        s = mpmath.findroot(lambda v: a2 * second(v) + b2 - v, q)
        tau = mpmath.sqrt(s)
        m_dsq = gauss(lambda x: ref.dphi(x) ** 2, tau, kinks)
        if ref.parity == -1:
            top = 3  # φ odd: b_0 = 0, r₀ = 0 and f^{(j)}(0) = j! b_j²
        else:  # r₀ from a short series first, then as many terms as r₀^k needs to vanish
            r0 = _origin(_hermite_projections(ref, tau, 30, 6), s, a2)
            top = math.ceil((REF_DPS + 12) / -math.log10(float(r0))) + 12
        b = _hermite_projections(ref, tau, top, 6)
        check = _hermite_projections(ref, tau, top, 7)
        assert max(abs(x - y) for x, y in zip(b, check, strict=True)) < mpf(10) ** -85
        r0 = _origin(b, s, a2)
        # what the truncation drops, by the size of the last terms (b_k² decays, r₀ < 1)
        last = max(b[k] ** 2 * mpmath.ff(k, 3) * r0 ** (k - 3) for k in range(top - 4, top + 1))
        assert ref.parity == -1 or last < mpf(10) ** -(REF_DPS + 8), last
        f = [_series(b, r0, j) for j in range(4)]
        g0 = s * r0
        den = 1 - a2 * f[1] / s
        gp = b2 / den
        gpp = a2 * f[2] * gp**2 / s**2 / den

        def e(j):  # E(c) = 1 − σ_a² f'(c/s)/s and its derivatives at c = g(0)
            return (1 if j == 0 else 0) - a2 * f[1 + j] / s ** (1 + j)

        hp = 1 / e(0) - g0 * e(1) / e(0) ** 2
        hpp = -2 * e(1) / e(0) ** 2 - g0 * e(2) / e(0) ** 2 + 2 * g0 * e(1) ** 2 / e(0) ** 3
        k0, kp = g0 / e(0), hp * gp
        kpp = hpp * gp**2 + hp * gpp
        k1 = s / (1 - a2 * m_dsq)
        return {
            "g0": g0, "g_at_1": s, "g_prime_0": gp, "g_second_0": gpp,
            "alpha": g0 + gpp / (2 * D), "beta": gp, "mu": s - g0 - gp,
            "ntk_alpha": k0 + kpp / (2 * D), "ntk_beta": kp, "ntk_mu": k1 - k0 - kp,
            "k0": k0, "k_at_1": k1, "k_prime_0": kp, "k_second_0": kpp,
        }  # fmt: skip


def _quadratic_reference(ref: dict[str, mpf], signs: str, ntk: bool) -> tuple[mpf, ...] | None:
    """Corollary 1's (a2, a1, a0) for one sign pattern, or None when it is not real."""
    p = "ntk_" if ntk else ""
    alpha, beta, mu = ref[f"{p}alpha"], ref[f"{p}beta"], ref[f"{p}mu"]
    radicands = (mu / (6 if ntk else 2), beta / (2 if ntk else 1), alpha - mu / D)
    if min(radicands) < 0:
        return None
    a2, a1, a02 = (
        (1 if c == "+" else -1) * mpmath.sqrt(v) for c, v in zip(signs, radicands, strict=True)
    )
    return a2, a1, a02 - a2


def _check_quadratics(where: str, doc: dict | None, ref: dict[str, mpf], ntk: bool) -> None:
    reported = [] if doc is None else [doc, *doc["other_signs"]]
    for q in reported:
        expected = _quadratic_reference(ref, q["signs"], ntk)
        assert expected is not None, f"{where} {q['signs']}: reported, but not real"
        for name, value in zip(("a2", "a1", "a0"), expected, strict=True):
            _assert_encloses(f"{where} {q['signs']} {name}", q["balls"][name], value)
    real = {
        s
        for s in ("+++", "++-", "+-+", "+--", "-++", "-+-", "--+", "---")
        if _quadratic_reference(ref, s, ntk) is not None
    }
    assert {q["signs"] for q in reported} == real, where


@pytest.mark.parametrize(("ref", "sigma_a2"), _cases(FAST_SPHERE))
def test_sphere_balls_contain_the_reference(ref: Ref, sigma_a2: str) -> None:
    res = sphere_coefficients(ref.spec, sigma_a2, d=D, dps=DPS)
    assert res.certified, res.reason
    doc = json.loads(res.to_json())
    with mpmath.workdps(REF_DPS + 10):
        expected = _sphere_reference(ref, sigma_a2)
        for key, ball in doc["balls"].items():
            _assert_encloses(f"{ref.spec} σ_a²={sigma_a2} {key}", ball, expected[key])
        _check_quadratics(f"{ref.spec} CK", doc["quadratic_ck"], expected, ntk=False)
        _check_quadratics(f"{ref.spec} NTK", doc["quadratic_ntk"], expected, ntk=True)


def test_the_reference_catches_a_wrong_ball() -> None:
    """Negative control: the same check rejects a ball moved by 3 of its radii."""
    ball = {"midpoint": "0.5", "radius": "1.0e-60"}
    with mpmath.workdps(REF_DPS):
        _assert_encloses("ok", ball, mpf("0.5") + mpf(10) ** -61)
        with pytest.raises(AssertionError):
            _assert_encloses("moved", ball, mpf("0.5") + 3 * mpf(10) ** -60)

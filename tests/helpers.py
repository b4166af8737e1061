"""Independent references for the engine's tests: an activation catalogue and a second method.

Nothing here imports deqrmt.  Every reference value is either a closed form derived by hand
(written out below, with its derivation in a comment) or tanh-sinh quadrature (``mpmath.quad``)
of the integral *definition* of the quantity, with classical derivatives coded by hand and
Dirac masses of φ'' (kinks of φ) added explicitly:

    E[g(τξ)]      = ∫ g(τξ) e^{-ξ²/2} dξ / √(2π)            (split at the kinks k/τ)
    E[δ(τξ − k)]  = pdf(k/τ) / τ

The fixed point τ*² is found by the DEQ's own Picard iteration at low precision (which lands on
the attracting root), then polished by ``mpmath.findroot`` at the reference precision.  The
coefficient formulas are the ones in the brief of issue 2 (hand-derived), written out here
independently of deqrmt's SymPy derivation.

All reference computations run on the global ``mpmath.mp`` inside ``mpmath.workdps``; the
autouse fixture in conftest.py restores ``mp.prec`` after every test.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from fractions import Fraction

import mpmath
from mpmath import mpf

__all__ = [
    "Ref",
    "CATALOGUE",
    "MAIN_EIGHT",
    "SMOOTH",
    "CHEAP",
    "quadratic_ref",
    "deq_formulas",
    "gauss",
    "raw_moments",
    "stein_moment",
    "deq_reference",
    "explicit_reference",
    "rel_close",
    "assert_close",
    "to_mpf",
]


def to_mpf(v: str | int | Fraction) -> mpf:
    """An exact decimal/fraction string as an mpf at the current precision."""
    fr = Fraction(v)
    return mpf(fr.numerator) / fr.denominator


def _npdf(x):
    return mpmath.exp(-x * x / 2) / mpmath.sqrt(2 * mpmath.pi)


def _sig(x):
    return 1 / (1 + mpmath.exp(-x))


@dataclasses.dataclass(frozen=True)
class Ref:
    """One activation, coded by hand.

    Attributes:
      spec: what deqrmt is given (library name or expression).
      phi, dphi, ddphi: φ and its classical derivatives (away from kinks), mpmath functions.
      kinks: points where φ' jumps, with ``jumps`` the jump φ'(k+) − φ'(k−) at each.
      parity: +1 even, −1 odd, 0 neither.
      continuous: φ has no jumps.
      closed: hand closed forms of raw moments as functions of τ (name → callable).
    """

    spec: str
    phi: Callable
    dphi: Callable
    ddphi: Callable
    kinks: tuple = ()
    jumps: tuple = ()
    parity: int = 0
    continuous: bool = True
    closed: dict = dataclasses.field(default_factory=dict)

    def __repr__(self) -> str:  # readable pytest ids / hypothesis reports
        return f"Ref({self.spec!r})"


# --- hand closed forms ---------------------------------------------------------------------
# ReLU, X = τξ:  E[X⁺] = τ/√(2π), E[(X⁺)²] = τ²/2, E[H(X)] = 1/2, E[δ(X)] = pdf(0)/τ,
# (φ²)'' = 2H (φφ'' = xδ(x) = 0), φ'² = H.
_RELU = {
    "phi": lambda t: t / mpmath.sqrt(2 * mpmath.pi),
    "d1": lambda t: mpf(1) / 2,
    "d2": lambda t: 1 / (t * mpmath.sqrt(2 * mpmath.pi)),
    "sq": lambda t: t * t / 2,
    "sq2": lambda t: mpf(1),
    "dsq": lambda t: mpf(1) / 2,
}


def _leaky_closed(s: mpf) -> dict:
    # φ = X on X > 0, sX on X < 0:  E[φ] = (1 − s)τ/√(2π), E[φ²] = (1 + s²)τ²/2,
    # E[φ'] = (1 + s)/2, φ'' = (1 − s)δ, (φ²)'' = 2φ'² (φ(0) = 0), E[φ'²] = (1 + s²)/2.
    return {
        "phi": lambda t: (1 - s) * t / mpmath.sqrt(2 * mpmath.pi),
        "d1": lambda t: (1 + s) / 2,
        "d2": lambda t: (1 - s) / (t * mpmath.sqrt(2 * mpmath.pi)),
        "sq": lambda t: (1 + s * s) * t * t / 2,
        "sq2": lambda t: 1 + s * s,
        "dsq": lambda t: (1 + s * s) / 2,
    }


# sin: E[cos(aX)] = e^{−a²τ²/2}, E[sin(aX)] = 0;  sin² = (1 − cos 2x)/2, cos² = (1 + cos 2x)/2,
# (sin²)'' = 2cos 2x.
_SIN = {
    "phi": lambda t: mpf(0),
    "d1": lambda t: mpmath.exp(-t * t / 2),
    "d2": lambda t: mpf(0),
    "sq": lambda t: (1 - mpmath.exp(-2 * t * t)) / 2,
    "sq2": lambda t: 2 * mpmath.exp(-2 * t * t),
    "dsq": lambda t: (1 + mpmath.exp(-2 * t * t)) / 2,
}
# cos: (cos²)'' = −2cos 2x.
_COS = {
    "phi": lambda t: mpmath.exp(-t * t / 2),
    "d1": lambda t: mpf(0),
    "d2": lambda t: -mpmath.exp(-t * t / 2),
    "sq": lambda t: (1 + mpmath.exp(-2 * t * t)) / 2,
    "sq2": lambda t: -2 * mpmath.exp(-2 * t * t),
    "dsq": lambda t: (1 - mpmath.exp(-2 * t * t)) / 2,
}
# erf (arcsin kernel): E[erf(X)²] = (2/π) arcsin(2q/(1 + 2q)), q = τ²;
# E[erf'(X)] = (2/√π) E[e^{−X²}] = 2/√(π(1 + 2q)); E[erf'(X)²] = (4/π)/√(1 + 4q);
# heat equation d/dq E[f(√q ξ)] = E[f''(√q ξ)]/2 on the arcsin kernel gives
# E[(erf²)''] = 8/(π(1 + 2q)√(1 + 4q)).
_ERF = {
    "phi": lambda t: mpf(0),
    "d1": lambda t: 2 / mpmath.sqrt(mpmath.pi * (1 + 2 * t * t)),
    "d2": lambda t: mpf(0),
    "sq": lambda t: 2 / mpmath.pi * mpmath.asin(2 * t * t / (1 + 2 * t * t)),
    "sq2": lambda t: 8 / (mpmath.pi * (1 + 2 * t * t) * mpmath.sqrt(1 + 4 * t * t)),
    "dsq": lambda t: 4 / (mpmath.pi * mpmath.sqrt(1 + 4 * t * t)),
}


def _quad_closed(b: mpf) -> dict:
    # φ = x + b x², q = τ²: E[φ] = bq, E[φ²] = q + 3b²q², E[φ'] = 1, E[φ''] = 2b,
    # E[φ'²] = E[(1 + 2bX)²] = 1 + 4b²q, (φ²)'' = 2φ'² + 2φφ'' ⇒ E = 2(1 + 4b²q) + 4b·bq.
    return {
        "phi": lambda t: b * t * t,
        "d1": lambda t: mpf(1),
        "d2": lambda t: 2 * b,
        "sq": lambda t: t * t + 3 * b * b * t**4,
        "sq2": lambda t: 2 * (1 + 4 * b * b * t * t) + 4 * b * b * t * t,
        "dsq": lambda t: 1 + 4 * b * b * t * t,
    }


# identity: E[X] = 0, E[X²] = τ², φ' = 1, φ'' = 0, (x²)'' = 2.
_IDENTITY = {
    "phi": lambda t: mpf(0),
    "d1": lambda t: mpf(1),
    "d2": lambda t: mpf(0),
    "sq": lambda t: t * t,
    "sq2": lambda t: mpf(2),
    "dsq": lambda t: mpf(1),
}
# gelu = xΦ(x), q = τ²:
#   E[XΦ(X)] = q E[Φ'(X)] (Stein) = q E[pdf(X)] = q/√(2π(1 + q));
#   φ' = Φ + x pdf (x pdf odd) ⇒ E[φ'] = 1/2;
#   φ'' = (2 − x²) pdf, E[pdf(X)] = 1/√(2π(1+q)), E[X² pdf(X)] = q/(√(2π)(1+q)^{3/2})
#     ⇒ E[φ''] = (2 + q)/(√(2π)(1 + q)^{3/2});
#   Φ² = (1 + 2e + e²)/4 with e = erf(x/√2) odd, E[X² g] = qE[g] + q²E[g''] (Stein twice),
#   E[e²] = (2/π) asin(q/(1+q)) and, by the heat equation, E[(e²)''] = 4/(π(1+q)√(1+2q))
#     ⇒ E[φ²] = (q + q (2/π) asin(q/(1+q)) + 4q²/(π(1+q)√(1+2q)))/4.
_GELU = {
    "phi": lambda t: t * t / mpmath.sqrt(2 * mpmath.pi * (1 + t * t)),
    "d1": lambda t: mpf(1) / 2,
    "d2": lambda t: (2 + t * t) / (mpmath.sqrt(2 * mpmath.pi) * (1 + t * t) ** mpf(1.5)),
    "sq": lambda t: (
        (
            t * t
            + t * t * 2 / mpmath.pi * mpmath.asin(t * t / (1 + t * t))
            + 4 * t**4 / (mpmath.pi * (1 + t * t) * mpmath.sqrt(1 + 2 * t * t))
        )
        / 4
    ),
}


def _bind(factory: Callable[[], dict], name: str) -> Callable:
    """τ ↦ factory()[name](τ): parameters become mpf at the precision in force at call time."""
    return lambda t: factory()[name](t)


def _relu_ref() -> Ref:
    return Ref(
        "relu",
        lambda x: x if x > 0 else mpf(0),
        lambda x: mpf(1) if x > 0 else mpf(0),
        lambda x: mpf(0),
        kinks=(0,),
        jumps=(1,),
        closed=_RELU,
    )


def _leaky_ref(slope: str) -> Ref:
    s = Fraction(slope)

    def sm():
        return to_mpf(s)

    return Ref(
        f"leaky_relu({slope})",
        lambda x: x if x > 0 else sm() * x,
        lambda x: mpf(1) if x > 0 else sm(),
        lambda x: mpf(0),
        kinks=(0,),
        jumps=(lambda: 1 - sm(),),
        closed={k: _bind(lambda: _leaky_closed(sm()), k) for k in _RELU},
    )


def _tanh_ref() -> Ref:
    def d1(x):
        t = mpmath.tanh(x)
        return 1 - t * t

    def d2(x):
        t = mpmath.tanh(x)
        return -2 * t * (1 - t * t)

    return Ref("tanh", mpmath.tanh, d1, d2, parity=-1)


def _erf_ref() -> Ref:
    return Ref(
        "erf",
        mpmath.erf,
        lambda x: 2 / mpmath.sqrt(mpmath.pi) * mpmath.exp(-x * x),
        lambda x: -4 * x / mpmath.sqrt(mpmath.pi) * mpmath.exp(-x * x),
        parity=-1,
        closed=_ERF,
    )


def _silu_ref(spec: str = "silu") -> Ref:
    def d1(x):
        s = _sig(x)
        return s + x * s * (1 - s)

    def d2(x):
        s = _sig(x)
        return 2 * s * (1 - s) + x * s * (1 - s) * (1 - 2 * s)

    return Ref(spec, lambda x: x * _sig(x), d1, d2)


def _gelu_ref() -> Ref:
    # φ = xΦ(x): φ' = Φ(x) + x pdf(x), φ'' = 2pdf(x) + x pdf'(x) = (2 − x²) pdf(x).
    return Ref(
        "gelu",
        lambda x: x * mpmath.ncdf(x),
        lambda x: mpmath.ncdf(x) + x * _npdf(x),
        lambda x: (2 - x * x) * _npdf(x),
        closed=_GELU,
    )


def _sigmoid_ref() -> Ref:
    return Ref(
        "sigmoid",
        _sig,
        lambda x: _sig(x) * (1 - _sig(x)),
        lambda x: _sig(x) * (1 - _sig(x)) * (1 - 2 * _sig(x)),
    )


def _softplus_ref() -> Ref:
    return Ref(
        "softplus",
        lambda x: mpmath.log(1 + mpmath.exp(x)),
        _sig,
        lambda x: _sig(x) * (1 - _sig(x)),
    )


def _elu_ref(alpha: str = "1") -> Ref:
    def a():
        return to_mpf(alpha)

    spec = "elu" if alpha == "1" else f"elu({alpha})"
    return Ref(
        spec,
        lambda x: x if x > 0 else a() * (mpmath.exp(x) - 1),
        lambda x: mpf(1) if x > 0 else a() * mpmath.exp(x),
        lambda x: mpf(0) if x > 0 else a() * mpmath.exp(x),
        kinks=(0,),
        jumps=(lambda: 1 - a(),),
    )


def _hard_tanh_ref(amp: str = "1", c: str = "1") -> Ref:
    def A():
        return to_mpf(amp)

    def C():
        return to_mpf(c)

    spec = "hard_tanh" if (amp, c) == ("1", "1") else f"hard_tanh({amp}, {c})"
    return Ref(
        spec,
        lambda x: A() * max(min(x, C()), -C()),
        lambda x: A() if -C() < x < C() else mpf(0),
        lambda x: mpf(0),
        kinks=(lambda: -C(), lambda: C()),
        jumps=(A, lambda: -A()),
        parity=-1,
    )


def _sin_ref() -> Ref:
    return Ref("sin", mpmath.sin, mpmath.cos, lambda x: -mpmath.sin(x), parity=-1, closed=_SIN)


def _cos_ref() -> Ref:
    return Ref(
        "cos", mpmath.cos, lambda x: -mpmath.sin(x), lambda x: -mpmath.cos(x), parity=1, closed=_COS
    )


def _identity_ref() -> Ref:
    return Ref(
        "identity", lambda x: x, lambda x: mpf(1), lambda x: mpf(0), parity=-1, closed=_IDENTITY
    )


def quadratic_ref(b: str = "0.25", spec: str | None = None) -> Ref:
    """φ = x + b x² (b a decimal string)."""

    def B():
        return to_mpf(b)

    return Ref(
        spec or f"x + {b}*x**2",
        lambda x: x + B() * x * x,
        lambda x: 1 + 2 * B() * x,
        lambda x: 2 * B(),
        closed={k: _bind(lambda: _quad_closed(B()), k) for k in _RELU},
    )


CATALOGUE: dict[str, Ref] = {
    r.spec: r
    for r in (
        _relu_ref(),
        _leaky_ref("0.1"),
        _tanh_ref(),
        _erf_ref(),
        _silu_ref(),
        _gelu_ref(),
        _sin_ref(),
        quadratic_ref("0.25"),
        _silu_ref("swish"),
        _sigmoid_ref(),
        _softplus_ref(),
        _elu_ref(),
        _elu_ref("0.5"),
        _hard_tanh_ref(),
        _hard_tanh_ref("1.2", "0.8"),
        _cos_ref(),
        _identity_ref(),
        quadratic_ref("0.25", "quadratic"),
    )
}
#: The eight activations the issue names for the 40-digit check.
MAIN_EIGHT = ["relu", "leaky_relu(0.1)", "tanh", "erf", "silu", "gelu", "sin", "x + 0.25*x**2"]
#: Smooth (C^∞) activations: Stein identity vs finite differences applies.
SMOOTH = ["tanh", "erf", "silu", "gelu", "sin", "cos", "sigmoid", "softplus", "x + 0.25*x**2"]
#: Cheap (closed-form) activations for property tests that run the whole engine many times.
CHEAP = ["relu", "leaky_relu(0.1)", "sin", "elu(0.5)", "hard_tanh", "identity"]


# --- quadrature of the definitions ---------------------------------------------------------


def _val(v):
    return v() if callable(v) else mpf(v)


def gauss(g: Callable, tau, kinks: Sequence = ()) -> mpf:
    """E[g(τξ)], ξ ~ N(0, 1), by tanh-sinh quadrature split at the kinks (k/τ in ξ) and at 0."""
    tau = mpf(tau)
    # e^{-L²/2}·(polynomial growth) is far below the working precision beyond |ξ| = L; a finite
    # interval converges faster under tanh-sinh than the (−∞, ∞) map.
    big_l = mpmath.sqrt(2 * mpmath.log(10) * (mpmath.mp.dps + 15))
    pts = sorted({mpf(0), *(p for p in (_val(k) / tau for k in kinks) if abs(p) < big_l)})
    integrand = lambda xi: g(tau * xi) * mpmath.exp(-xi * xi / 2)  # noqa: E731
    return mpmath.quad(integrand, [-big_l, *pts, big_l]) / mpmath.sqrt(2 * mpmath.pi)


def _hermite(k: int, xi):
    """Probabilists' Hermite polynomial He_k by its three-term recursion."""
    h0, h1 = mpf(1), xi
    if k == 0:
        return h0
    for n in range(1, k):
        h0, h1 = h1, xi * h1 - n * h0
    return h1


def stein_moment(g: Callable, tau, k: int, kinks: Sequence = ()) -> mpf:
    """τ^{-k} E[He_k(ξ) g(τξ)], the weak k-th derivative moment, by quadrature of its definition."""
    tau = mpf(tau)
    return gauss(lambda x: _hermite(k, x / tau) * g(x), tau, kinks) / tau**k


MOMENT_NAMES = ("phi", "d1", "d2", "sq", "sq2", "dsq")


def raw_moments(
    ref: Ref, tau, use_closed: bool = True, names: Sequence[str] = MOMENT_NAMES
) -> dict[str, mpf]:
    """E[φ], E[φ'], E[φ''], E[φ²], E[(φ²)''], E[φ'²] of the *uncentered* φ at scale τ.

    Classical derivatives integrated by quadrature plus the Dirac masses at kinks, or the hand
    closed forms when ``use_closed`` and the catalogue has one (then also the symmetry zeros:
    E[φ] = E[φ''] = 0 for odd φ, E[φ'] = 0 for even φ).
    """
    tau = mpf(tau)
    ks = [_val(k) for k in ref.kinks]
    js = [_val(j) for j in ref.jumps]
    dirac = [(k, j, _npdf(k / tau) / tau) for k, j in zip(ks, js, strict=True)]
    out = {}
    if use_closed:
        for name, f in ref.closed.items():
            if name in names:
                out[name] = f(tau)
        zeros = {-1: ("phi", "d2"), 1: ("d1",)}.get(ref.parity, ())
        for name in zeros:
            if name in names:
                out.setdefault(name, mpf(0))
    todo = {
        "phi": lambda: gauss(ref.phi, tau, ks),
        "d1": lambda: gauss(ref.dphi, tau, ks),
        "d2": lambda: gauss(ref.ddphi, tau, ks) + sum(j * w for _, j, w in dirac),
        "sq": lambda: gauss(lambda x: ref.phi(x) ** 2, tau, ks),
        "sq2": lambda: (
            gauss(lambda x: 2 * ref.dphi(x) ** 2 + 2 * ref.phi(x) * ref.ddphi(x), tau, ks)
            + sum(2 * ref.phi(k) * j * w for k, j, w in dirac)
        ),
        "dsq": lambda: gauss(lambda x: ref.dphi(x) ** 2, tau, ks),
    }
    for name in names:
        if name not in out:
            out[name] = todo[name]()
    return out


def _centered(raw: dict) -> dict:
    c = raw["phi"]
    return {
        "c": c,
        "m1": raw["d1"],
        "m2": raw["d2"],
        "sq": raw["sq"] - c * c,
        "sq2": raw["sq2"] - 2 * c * raw["d2"],
        "dsq": raw["dsq"],
    }


def deq_reference(
    ref: Ref,
    sigma_a2: str = "0.2",
    sigma_b2: str | None = None,
    tau0: str = "1",
    dps: int = 50,
    q_start=None,
) -> dict[str, mpf]:
    """The DEQ coefficients by the hand formulas on quadrature/closed-form moments at ``dps``.

    Returns the coefficients under deqrmt's JSON names (tau_star … kappa_star, center) and the
    centered moments at τ* under the names of ``DEQCoefficients.moments``.

    τ*² solves q = σ_a² Var[φ(√q ξ)] + σ_b² τ0² (φ centered at its own fixed point); the start
    comes from the DEQ's own Picard iteration (at 15 digits) unless ``q_start`` is given.
    """
    sb2_s = sigma_b2 if sigma_b2 is not None else str(1 - Fraction(sigma_a2))
    if q_start is None:
        with mpmath.workdps(15):
            a2, b2, t0 = to_mpf(sigma_a2), to_mpf(sb2_s), to_mpf(tau0)
            q = b2 * t0 * t0
            for _ in range(500):
                r = raw_moments(ref, mpmath.sqrt(q), names=("phi", "sq"))
                q_new = a2 * (r["sq"] - r["phi"] ** 2) + b2 * t0 * t0
                if abs(q_new - q) < mpf(10) ** -8 * q:
                    q = q_new
                    break
                q = q_new
            else:  # pragma: no cover - a reference that cannot solve is a broken test
                raise AssertionError("reference Picard iteration did not converge")
        q_start = float(q)
    with mpmath.workdps(dps):
        a2, b2, t0 = to_mpf(sigma_a2), to_mpf(sb2_s), to_mpf(tau0)

        def f(q):
            r = raw_moments(ref, mpmath.sqrt(q), names=("phi", "sq"))
            return a2 * (r["sq"] - r["phi"] ** 2) + b2 * t0 * t0 - q

        q0 = mpf(q_start)
        q = mpmath.findroot(f, (q0, q0 * (1 + mpf(10) ** -9)), tol=mpf(10) ** (-2 * dps + 10))
        tau = mpmath.sqrt(q)
        m = _centered(raw_moments(ref, tau))
        moments = {
            "E_phi_prime": m["m1"],
            "E_phi_second": m["m2"],
            "E_phi_prime_sq": m["dsq"],
            "E_phi_sq_second": m["sq2"],
        }
        return deq_formulas(m, a2, b2, tau) | {"center": m["c"]} | moments


def deq_formulas(m: dict, a2, b2, tau) -> dict[str, mpf]:
    """The hand-derived DEQ formulas (issue 2 brief) on centered moments ``m``."""
    m1, m2 = m["m1"], m["m2"]
    d = 1 - a2 * m1 * m1
    al4 = b2 / (1 - a2 * m["sq2"] / 2)
    al1 = b2 * m1 * m1 / d
    al2 = m2 * m2 * al4 * al4 / (4 * d)
    al3 = m2 * m2 * (a2 * al1 + b2) ** 2 / (2 * d)
    be1 = al1 / d
    be2 = al2 / d
    be3 = (al3 + a2 * m2 * m2 * be1 * (a2 * al1 + b2)) / d
    gamma = mpmath.sqrt(m["sq"])
    kappa = mpmath.sqrt(m["sq"] / (1 - a2 * m["dsq"]))
    return {
        "tau_star": tau,
        "gamma_star": gamma,
        "alpha_1": al1,
        "alpha_2": al2,
        "alpha_3": al3,
        "alpha_4": al4,
        "beta_1": be1,
        "beta_2": be2,
        "beta_3": be3,
        "kappa_star": kappa,
    }


def explicit_reference(refs: Sequence[Ref], tau0: str = "1", dps: int = 40) -> list[dict[str, mpf]]:
    """The explicit network's layer recursion (issue 2 brief) on reference moments at ``dps``."""
    with mpmath.workdps(dps):
        t0 = to_mpf(tau0)
        tau, al, be, kappa = t0, [mpf(1), mpf(0), mpf(0), mpf(1)], [mpf(1), mpf(0), mpf(0)], t0
        out = []
        for ref in refs:
            m = _centered(raw_moments(ref, tau))
            a1, a2 = m["m1"] ** 2, m["m2"]
            new_al = [
                a1 * al[0],
                a1 * al[1] + a2 * a2 * al[3] ** 2 / 4,
                a1 * al[2] + a2 * a2 * al[0] ** 2 / 2,
                m["sq2"] * al[3] / 2,
            ]
            new_be = [
                a1 * (al[0] + be[0]),
                a1 * (al[1] + be[1]) + a2 * a2 * al[3] ** 2 / 4,
                a1 * (al[2] + be[2]) + a2 * a2 * (al[0] ** 2 / 2 + al[0] * be[0]),
            ]
            new_tau = mpmath.sqrt(m["sq"])
            kappa = mpmath.sqrt(m["sq"] + kappa**2 * m["dsq"])
            tau, al, be = new_tau, new_al, new_be
            out.append(
                {
                    "tau": tau,
                    "alpha_1": al[0],
                    "alpha_2": al[1],
                    "alpha_3": al[2],
                    "alpha_4": al[3],
                    "beta_1": be[0],
                    "beta_2": be[1],
                    "beta_3": be[2],
                    "kappa": kappa,
                    "center": m["c"],
                }
            )
        return out


# --- comparisons ---------------------------------------------------------------------------


def rel_close(a, b, digits: float, scale=0) -> bool:
    """|a − b| ≤ 10^{-digits}·max(|b|, scale) (``scale`` guards quantities that may vanish)."""
    a, b = mpmath.mpf(a), mpmath.mpf(b)
    return bool(abs(a - b) <= mpmath.mpf(10) ** (-digits) * max(abs(b), mpmath.mpf(scale)))


def assert_close(a, b, digits: float, scale=0, what: str = "") -> None:
    with mpmath.workdps(max(int(digits) + 20, 30)):
        ok = rel_close(a, b, digits, scale)
        if not ok:
            raise AssertionError(
                f"{what}: {mpmath.nstr(mpmath.mpf(a), int(digits) + 5)} vs reference "
                f"{mpmath.nstr(mpmath.mpf(b), int(digits) + 5)} differ beyond {digits} digits "
                f"(|diff| = {mpmath.nstr(abs(mpmath.mpf(a) - mpmath.mpf(b)), 5)})"
            )


#: `deqrmt design --deq tanh --family hard_tanh --dps 12 --json` (its setting and first
#: solution; read-only: a test that varies it works on a copy)
DESIGN = {
    "setting": {
        "deq": "tanh", "family": "hard_tanh", "parameters": ["a", "c"], "layers": 1,
        "kernel": "ck", "sigma_a2": "1/5", "sigma_b2": "4/5", "tau0": "1", "dps": 12,
        "deq_trainable": ["a", "A"], "enn_input_layer_trainable": False,
    },
    "solutions": [{"params": [{"a": "0.764296679208", "c": "1.19648532529"}]}],
}  # fmt: skip

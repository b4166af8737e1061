"""Property-based tests for your own activation: Hypothesis strategies and plain property checks.

The checks are the consistency items of ``deqrmt check`` (:mod:`deqrmt.check`), run on
the engine itself: digits stable from dps 30 to 60, τ*² = σ_a²γ*² + σ_b²τ0², Stein weak
derivatives against finite differences (smooth φ), the generated module against the engine,
and the σ_a² → 0 limit against the one-layer explicit network.  A failure raises
``AssertionError`` with the report lines, so they read like any other failed test.

A user's test file::

    from hypothesis import given, settings, strategies as st

    import deqrmt.testing as dt


    @settings(max_examples=200, deadline=None)
    @given(st.data())
    def test_random_activations_are_consistent(data):
        act = data.draw(dt.activations())
        dt.assert_consistent(act, data.draw(dt.settings(act)))

``deadline=None`` matters: an example costs ~0.2–1 s, mostly the engine deriving a new
activation's closed-form moments and compiling them (200 examples took ~95 s on a shared
2-core machine).
Strategies draw exact decimal strings, never floats: a failing example is reproduced by
copying it.  Needs Hypothesis (``pip install 'deqrmt[dev]'`` or ``pip install hypothesis``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from decimal import ROUND_FLOOR, Decimal
from fractions import Fraction
from typing import Any

try:
    from hypothesis import strategies as st
except ImportError as e:  # pragma: no cover - exercised only without hypothesis
    raise ImportError(
        "deqrmt.testing needs Hypothesis: pip install hypothesis (or 'deqrmt[dev]')."
    ) from e

import sympy as sp

from . import _arguments
from ._errors import ActivationError, DeqrmtError, InvalidArgument
from ._text import escape_controls
from .check import (
    CONSISTENCY_CHECKS,
    FAIL,
    CheckItem,
    assumption_items,
    consistency_items,
)
from .numeric import FLOAT, DEQProblem, evaluator_for, lipschitz_bound
from .symbolic import LIBRARY, Activation, get_activation, library_activation, parse_activation

__all__ = [
    "Setting",
    "activations",
    "settings",
    "sigma_a2_cap",
    "library_activations",
    "consistency_items_for",
    "assert_consistent",
    "assert_assumption",
    "CONSISTENCY_CHECKS",
]


@dataclasses.dataclass(frozen=True)
class Setting:
    """σ_a², σ_b², τ0 as exact decimal strings (what ``deqrmt check`` takes as flags)."""

    sigma_a2: str
    sigma_b2: str
    tau0: str

    def as_kwargs(self) -> dict[str, str]:
        return dataclasses.asdict(self)


# ---------------------------------------------------------------------------
# Activations from the safe grammar
# ---------------------------------------------------------------------------

#: c·f(u) terms, u = a·x + b.  Kinked: piecewise linear, kinks where u crosses a constant.
_KINKED = ("max({u}, 0)", "abs({u})", "min(max({u}, -1), 1)", "max({u}, {s}*({u}))")
#: Smooth, Lipschitz, with closed-form Gaussian moments (exp-polynomials).  One family per
#: draw: mixing the two makes SymPy's closed forms (of φ², φ'²) several times slower.
_TRIG = ("sin({u})", "cos({u})")
_BUMP = ("({u})*exp(-({u})**2/2)", "exp(-({u})**2/2)")
#: Smooth on each side of one kink, continuous (ELU-like halves): closed forms too.
_PIECEWISE = ("heaviside(-({u}))*(exp({u}) - 1)", "heaviside({u})*(1 - exp(-({u})))")
#: Smooth, Lipschitz, Gaussian moments by quadrature (10-100x slower per example).
_QUADRATURE = ("tanh({u})", "erf({u})", "sigmoid({u})", "softplus({u})")
_KINDS = ("smooth", "kinked", "piecewise")


def _decimal(k: int, places: int) -> str:
    return str(Decimal(k).scaleb(-places))


def _signed(lo: int, hi: int, places: int) -> st.SearchStrategy[str]:
    """Non-zero decimals ±[lo, hi]·10^−places."""
    return st.tuples(st.integers(lo, hi), st.booleans()).map(
        lambda t: _decimal(-t[0] if t[1] else t[0], places)
    )


@st.composite
def _term(draw: Any, templates: Sequence[str]) -> str:
    template = draw(st.sampled_from(templates))
    a = draw(_signed(2, 20, 1))
    b = draw(st.integers(-10, 10))
    u = f"{a}*x" if b == 0 else f"{a}*x {'+' if b > 0 else '-'} {_decimal(abs(b), 1)}"
    s = _decimal(draw(st.integers(1, 10)), 2) if "{s}" in template else ""
    return template.format(u=u, s=s)


def _join(coeffs: Sequence[str], terms: Sequence[str]) -> str:
    text = ""
    for c, t in zip(coeffs, terms, strict=True):
        neg = c.startswith("-")
        mag = c.lstrip("-")
        if not text:
            text = f"{'-' if neg else ''}{mag}*{t}"
        else:
            text += f" {'-' if neg else '+'} {mag}*{t}"
    return text


@functools.lru_cache(maxsize=4096)
def _parsed(text: str) -> Activation | None:
    """The activation, or None when the terms cancel to a constant (never for a valid draw)."""
    try:
        act = parse_activation(text)
        pieces = act.derivative_pieces
    except DeqrmtError:
        return None
    if all(p.expr == 0 for p in pieces):
        return None
    return act


#: most c·f terms an :func:`activations` draw may have (more exceed the parser's budgets)
MAX_TERMS = 4


def activations(
    *, kinds: Sequence[str] = _KINDS, cheap: bool = True, max_terms: int = 2
) -> st.SearchStrategy[Activation]:
    """Random activations from deqrmt's safe grammar, parsed by :func:`parse_activation`.

    Each is a sum of 1 to ``max_terms`` terms c·f(a·x + b), optionally plus a linear term, with
    exact one- or two-digit decimals.  Every draw is continuous and Lipschitz, so
    Assumption 1's smoothness holds and the engine can centre it at its own fixed point.

    Args:
      kinds: ``"smooth"`` (sin and cos, or Gaussian bumps u·e^(−u²/2) and e^(−u²/2)),
        ``"kinked"`` (piecewise linear: ReLU, ``abs``, clip, leaky ReLU of affine maps) and
        ``"piecewise"`` (ELU-like halves e^u − 1 for u < 0 or 1 − e^(−u) for u > 0, with kinked
        terms).  A draw picks one kind.
      cheap: only terms whose Gaussian moments have closed forms (milliseconds per example);
        False adds tanh, erf, sigmoid and softplus terms (moments by quadrature: ~1 s).
      max_terms: at most this many c·f terms.

    Example:
      >>> from hypothesis import Phase, find, settings
      >>> once = settings(phases=[Phase.generate], database=None)   # a draw, not shrunk (20 s)
      >>> act = find(activations(kinds=("kinked",)), lambda a: True, settings=once)
      >>> act.expr.free_symbols
      {x}
    """
    kinds = _arguments.choices(kinds, "kinds", "kinds of activation", _KINDS)
    cheap = _arguments.boolean(cheap, "cheap")
    max_terms = _arguments.integer(max_terms, "max_terms", 1, MAX_TERMS)
    families: dict[str, list[tuple[str, ...]]] = {
        "smooth": [_TRIG, _BUMP] + ([_QUADRATURE] if not cheap else []),
        "kinked": [_KINKED],
        "piecewise": [_PIECEWISE + _KINKED],
    }

    @st.composite
    def build(draw: Any) -> str:
        kind = draw(st.sampled_from(list(kinds)))
        pool = draw(st.sampled_from(families[kind]))
        n = draw(st.integers(1, max_terms))
        terms = [draw(_term(pool)) for _ in range(n)]
        if kind == "piecewise" and not any("heaviside" in t for t in terms):
            terms[0] = draw(_term(_PIECEWISE))
        coeffs = [draw(_signed(1, 15, 1)) for _ in terms]
        if draw(st.booleans()):  # a linear part, as in leaky or shifted activations
            terms.append("x")
            coeffs.append(draw(_signed(1, 10, 1)))
        return _join(coeffs, terms)

    return build().map(_parsed).filter(lambda a: a is not None)  # type: ignore[return-value]


def library_activations(*, lipschitz: bool = True) -> st.SearchStrategy[Activation]:
    """Library activations, the parametrised ones (leaky_relu, hard_tanh, elu) with random
    exact parameters.  ``lipschitz=False`` adds ``quadratic`` (outside Assumption 1, but with an
    attracting fixed point at small σ_a²); ``sign``, ``hardshrink`` (discontinuous) and
    ``polynomial`` are never drawn."""
    lipschitz = _arguments.boolean(lipschitz, "lipschitz")
    plain = sorted(
        n
        for n in LIBRARY
        if n
        not in {"sign", "hardshrink", "polynomial", "leaky_relu", "hard_tanh", "elu", "quadratic"}
    )
    if not lipschitz:
        plain.append("quadratic")

    def rational(lo: int, hi: int, den: int) -> st.SearchStrategy[sp.Rational]:
        return st.integers(lo, hi).map(lambda k: sp.Rational(k, den))

    return st.one_of(
        st.sampled_from(plain).map(library_activation),
        rational(1, 50, 100).map(lambda s: library_activation("leaky_relu", [s])),
        st.tuples(rational(5, 20, 10), rational(5, 20, 10)).map(
            lambda ac: library_activation("hard_tanh", list(ac))
        ),
        rational(2, 20, 10).map(lambda a: library_activation("elu", [a])),
    )


# ---------------------------------------------------------------------------
# Settings inside the contraction region
# ---------------------------------------------------------------------------

#: scales τ the contraction is sampled on: they contain τ* for every drawn σ_b², τ0 (τ* lies
#: between σ_b τ0 ≥ 0.158 and σ_b τ0/√(1 − σ_a² L₁²) ≤ 2.4 in the contraction region)
_TAUS = tuple(0.1 * 30 ** (k / 15) for k in range(16))


def sigma_a2_cap(activation: str | Activation, *, assumption: bool = False) -> Fraction:
    """The largest σ_a² :func:`settings` draws for ``activation`` (90% of the sampled bound).

    The contraction the proofs use needs σ_a² E[(φ_c²)''(τ*ξ)]/2 < 1 and σ_a² E[φ'(τ*ξ)²] < 1;
    both are sampled on τ ∈ [0.1, 3], which contains τ* for every setting drawn.  With
    ``assumption`` σ_a² < 1/(4L₁²) (Assumption 1, L₁ bounded rigorously) is required too.

    ``activation`` is an Activation, a library name or an expression in x (as for
    :func:`settings`).

    Raises:
      ActivationError: φ is discontinuous (no NTK), or L₁ is unbounded with ``assumption``.
    """
    return _sigma_a2_cap(get_activation(activation), _arguments.boolean(assumption, "assumption"))


@functools.lru_cache(maxsize=1024)
def _sigma_a2_cap(activation: Activation, assumption: bool) -> Fraction:
    ev = evaluator_for(activation)
    fp = FLOAT  # the engine's float context: mpmath.fp's log1p/expm1 are not float-accurate
    curv, dsq = 0.0, 0.0
    for tau in _TAUS:
        m = ev(fp, tau, ("phi", "d2", "sq2", "dsq"))
        c = float(m["phi"].value)
        curv = max(curv, float(m["sq2"].value) - 2 * c * float(m["d2"].value))
        dsq = max(dsq, float(m["dsq"].value))
    caps = [0.5]
    if curv > 0:
        caps.append(2 / curv)
    if dsq > 0:
        caps.append(1 / dsq)
    if assumption:
        bound = lipschitz_bound(activation, rtol=0.05)
        if not bound.finite:
            raise ActivationError(
                f"{escape_controls(activation.name, keep='')}: L₁ is {bound.text()} ({bound.reason}); no σ_a² satisfies "
                "Assumption 1."
            )
        caps.append(1 / (4 * float(bound.upper) ** 2))
    cap = Decimal(0.9 * min(caps)).quantize(Decimal("0.0001"), rounding=ROUND_FLOOR)
    if cap <= 0:
        raise ActivationError(
            f"{escape_controls(activation.name, keep='')}: no σ_a² ≥ 1e-4 contracts."
        )
    return Fraction(cap)


def settings(
    activation: str | Activation, *, assumption: bool = False
) -> st.SearchStrategy[Setting]:
    """σ_a², σ_b², τ0 inside the contraction region of ``activation``, as exact decimals.

    σ_b² ∈ [0.1, 1], τ0 ∈ [0.5, 2] and σ_a² up to :func:`sigma_a2_cap` (``assumption=True``:
    Assumption 1's σ_a² < 1/(4L₁²) as well).
    """
    act = get_activation(activation)
    cap = sigma_a2_cap(act, assumption=_arguments.boolean(assumption, "assumption"))

    def sigma_a2(k: int) -> str:
        v = (Decimal(cap.numerator) / cap.denominator * k / 20).quantize(
            Decimal("0.0001"), rounding=ROUND_FLOOR
        )
        return str(max(v, Decimal("0.0001")).normalize())

    return st.builds(
        Setting,
        sigma_a2=st.integers(1, 20).map(sigma_a2),
        sigma_b2=st.integers(1, 10).map(lambda k: _decimal(k, 1)),
        tau0=st.integers(5, 20).map(lambda k: _decimal(k, 1)),
    )


# ---------------------------------------------------------------------------
# Properties a user's test calls
# ---------------------------------------------------------------------------


def _problem(activation: str | Activation, setting: Setting) -> DEQProblem:
    if not isinstance(setting, Setting):
        raise InvalidArgument(
            f"setting={_arguments.show(setting)}: expected a deqrmt.testing.Setting (drawn from "
            "settings(act), or Setting('0.2', '0.8', '1')), got " + type(setting).__name__ + "."
        )
    return DEQProblem.make(
        get_activation(activation), setting.sigma_a2, setting.sigma_b2, setting.tau0, 30
    )


def consistency_items_for(
    activation: str | Activation, setting: Setting, *, checks: Sequence[str] = CONSISTENCY_CHECKS
) -> list[CheckItem]:
    """The consistency items of ``deqrmt check`` for this activation and setting."""
    checks = _arguments.choices(checks, "checks", "consistency checks", CONSISTENCY_CHECKS)
    return consistency_items(_problem(activation, setting), checks)


def _raise(items: Sequence[CheckItem], what: str, activation: Any, setting: Setting) -> None:
    failed = [item for item in items if item.status == FAIL]
    if failed:
        act = get_activation(activation)
        lines = "\n  ".join(item.line() for item in failed)
        raise AssertionError(
            escape_controls(
                f"{what} fails for φ(x) = {act.expr} at sigma_a2={setting.sigma_a2}, "
                f"sigma_b2={setting.sigma_b2}, tau0={setting.tau0}:\n  {lines}"
            )  # keeps the newlines: one failed item a line
        )


def assert_consistent(
    activation: str | Activation, setting: Setting, *, checks: Sequence[str] = CONSISTENCY_CHECKS
) -> None:
    """Assert deqrmt's numbers for φ are self-consistent (see the module docstring).

    Args:
      activation: an Activation (e.g. drawn from :func:`activations`), a library name or an
        expression in x.
      setting: σ_a², σ_b², τ0 (e.g. drawn from :func:`settings`).
      checks: a subset of :data:`CONSISTENCY_CHECKS` (all by default).

    Raises:
      AssertionError: an item fails (or the engine refuses the setting), with its report line.
    """
    _raise(
        consistency_items_for(activation, setting, checks=checks),
        "consistency",
        activation,
        setting,
    )


def assert_assumption(activation: str | Activation, setting: Setting) -> None:
    """Assert Assumption 1 (ICML 2024) and the contraction hold for φ in this setting."""
    _raise(assumption_items(_problem(activation, setting)), "Assumption 1", activation, setting)

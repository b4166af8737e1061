r"""The DEQ and explicit-network coefficients, evaluated to verified digits.

DEQ (ICML 2024, Theorems 1–2).  The problem is one :class:`~deqrmt.numeric.DEQProblem`; τ* comes
from the one solver (:func:`~deqrmt.numeric._fixed_point.solve_tau`, on the derived map F) and
the moments of the centered φ_c from the derived centering identities.  The coefficient
formulas are the ones :func:`deqrmt.symbolic.derive_deq` derives, compiled to context-generic
code.  Everything is evaluated twice (dps+5, and dps+20 with a finer quadrature rule) and only
the digits both agree on are kept.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import mpmath
import sympy as sp

from .. import _arguments
from .._errors import (
    CenteringError,
    ContractionError,
    PrecisionLoss,
)
from .._text import escape_controls
from ..symbolic import (
    SIGMA_A2,
    SIGMA_B2,
    TAU0,
    Activation,
    derive_deq,
    derive_layer,
    get_activations,
)
from . import _display
from ._fixed_point import moments_at, scan_fixed_points, solve_tau
from ._printer import compile_function
from ._problem import MAX_LAYERS, DEQProblem, ProblemFields, check_dps, exact_number, in_range
from ._verify import Verified, certification_fields, verify

__all__ = [
    "DEQCoefficients",
    "ExplicitCoefficients",
    "deq_coefficients",
    "explicit_coefficients",
    "DEQ_KEYS",
    "LAYER_KEYS",
    "MOMENT_KEYS",
]

DEQ_KEYS = (
    "tau_star", "gamma_star", "alpha_1", "alpha_2", "alpha_3", "alpha_4",
    "beta_1", "beta_2", "beta_3", "kappa_star", "center",
)  # fmt: skip
LAYER_KEYS = (
    "tau", "alpha_1", "alpha_2", "alpha_3", "alpha_4", "beta_1", "beta_2", "beta_3", "kappa", "center",
)  # fmt: skip
#: what the compiled DEQ formulas return, in order (τ* comes from the solve, c from centering)
_FORMULA_KEYS = DEQ_KEYS[1:-1]
#: the NTK's coefficients: absent when σ_a² E[φ'²] ≥ 1 (Ġ* has spectral radius ≥ 1)
NTK_KEYS = ("beta_1", "beta_2", "beta_3", "kappa_star")
#: JSON name → internal moment of the centered φ at τ*.
MOMENT_KEYS = {
    "E_phi_prime": "d1",
    "E_phi_second": "d2",
    "E_phi_prime_sq": "dsq",
    "E_phi_sq_second": "sq2",
}
_GUARD_WORK, _GUARD_CHECK = 5, 20


# ---------------------------------------------------------------------------
# Compiled formulas
# ---------------------------------------------------------------------------


@functools.lru_cache(maxsize=8)
def _deq_function(
    trainable: tuple[str, ...] = ("a", "A"), ntk: bool = True
) -> tuple[Callable[..., tuple[Any, ...]], list[str]]:
    """The derived formulas compiled: all of _FORMULA_KEYS, or the CK's only (``ntk=False``)."""
    f = derive_deq(trainable=trainable)
    exprs = {k: e for k, e in f.as_dict().items() if ntk or k not in NTK_KEYS}
    names = f.m.names()
    args = sorted(set().union(*(e.free_symbols for e in exprs.values())), key=str)
    arg_names = [names.get(a, str(a)) for a in args]
    fn = compile_function(
        "deq_coefficients", args, list(exprs.values()), doc="Derived DEQ CK/NTK coefficients."
    )
    return fn, arg_names


@functools.lru_cache(maxsize=2)
def _layer_function() -> tuple[Callable[..., tuple[Any, ...]], list[str]]:
    f = derive_layer()
    exprs = [sp.sqrt(f.tau_sq), *f.alpha, *f.beta, sp.sqrt(f.kappa_sq)]
    names = f.m.names()
    inverse_prev = {v: k + "_prev" for k, v in f.prev.items()}
    args = sorted(set().union(*(e.free_symbols for e in exprs)), key=str)
    arg_names = [names.get(a, inverse_prev.get(a, str(a))) for a in args]
    fn = compile_function(
        "layer_coefficients", args, exprs, doc="Derived explicit-layer recursion."
    )
    return fn, arg_names


# ---------------------------------------------------------------------------
# DEQ
# ---------------------------------------------------------------------------


def _verified_property(key: str) -> property:
    def get(self: DEQCoefficients) -> Verified:
        return self[key]

    get.__doc__ = f"``{key}`` with its verified digits (a :class:`Verified`)."
    return property(get)


@dataclasses.dataclass(frozen=True, repr=False)
class DEQCoefficients(ProblemFields):
    """τ*, γ*, α*₁..₄, β*₁..₃, κ* and the centering constant of one :class:`DEQProblem`.

    Every number is a :class:`Verified` (value, digits, text), reachable as an attribute
    (``c.alpha_1``), by key (``c["alpha_1"]``) or in ``values``; ``moments`` holds the
    Gaussian moments of φ_c at τ*.  ``other_fixed_points`` are the other roots of τ² = F(τ²)
    in range (verified τ values), with their kind in ``notes``.

    ``certified``: every digit is proven by Arb ball arithmetic (each value has a ``radius``);
    otherwise the digits are the ones two evaluations agree on, and ``reason`` says why no
    proof was attempted or possible.  ``prec_bits``: the ball evaluation's precision.

    Example:
      >>> c = deq_coefficients("tanh", sigma_a2="0.2", dps=15)
      >>> sorted(c.values)[:4]
      ['alpha_1', 'alpha_2', 'alpha_3', 'alpha_4']
      >>> c.tau_star.text
      '0.934871610924773'
    """

    problem: DEQProblem
    values: Mapping[str, Verified]
    moments: Mapping[str, Verified]
    other_fixed_points: tuple[Verified, ...] = ()
    notes: tuple[str, ...] = ()
    certified: bool = False
    prec_bits: int = 0
    reason: str | None = None

    tau_star = _verified_property("tau_star")
    gamma_star = _verified_property("gamma_star")
    alpha_1 = _verified_property("alpha_1")
    alpha_2 = _verified_property("alpha_2")
    alpha_3 = _verified_property("alpha_3")
    alpha_4 = _verified_property("alpha_4")
    beta_1 = _verified_property("beta_1")
    beta_2 = _verified_property("beta_2")
    beta_3 = _verified_property("beta_3")
    kappa_star = _verified_property("kappa_star")
    center = _verified_property("center")

    def __getitem__(self, key: str) -> Verified:
        if not isinstance(key, str):
            raise KeyError(f"{_arguments.show(key)}: a key is a name such as 'alpha_1'")
        if key in self.values:
            return self.values[key]
        if key in self.moments:
            return self.moments[key]
        if key in NTK_KEYS:
            raise ContractionError(f"{key}: {self.notes[0]}")
        raise KeyError(
            f"{_arguments.show(key)}: not a coefficient; choose one of {', '.join(DEQ_KEYS)}"
        )

    @property
    def dps(self) -> int:
        return self.problem.dps

    @property
    def centered(self) -> bool:
        return self.problem.center

    @property
    def trainable(self) -> tuple[str, ...]:
        return self.problem.trainable

    def as_floats(self) -> dict[str, float]:
        """The coefficients as Python floats (for plotting or numpy), keyed like ``values``."""
        return {k: float(v.value) for k, v in self.values.items()}

    def moments_as_floats(self) -> dict[str, float]:
        """The moments of φ_c at τ* as Python floats."""
        return {k: float(v.value) for k, v in self.moments.items()}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the inputs, every value as its verified decimal string, the digits."""
        out = self.problem.to_dict()
        out.update({k: self.values[k].text if k in self.values else None for k in DEQ_KEYS})
        out["moments"] = {k: v.text for k, v in self.moments.items()}
        out["digits"] = {k: v.digits for k, v in self.values.items()}
        out["other_fixed_points"] = [v.text for v in self.other_fixed_points]
        out.update(
            certification_fields(
                self.certified,
                {**self.values, **self.moments},
                self.prec_bits,
                self.reason,
                self.notes,
            )
        )
        return out

    def to_json(self) -> str:
        """:meth:`to_dict` as indented JSON text."""
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)

    def _setting(self) -> str:
        p = self.problem
        return (
            f"{_shown(p.activation.name)}: σ_a² = {p.sigma_a2}, σ_b² = {p.sigma_b2}, "
            f"τ0 = {p.tau0}, "
            f"NTK over ({', '.join(p.trainable)}), "
            + ("φ centered at τ*" if p.center else "φ as given (E[φ(τ*ξ)] = 0)")
        )

    def __repr__(self) -> str:
        rows = [f"DEQCoefficients({self._setting()}; {self.dps} digits)"]
        rows += [f"  {k:<11} {self.values[k].text}" for k in DEQ_KEYS if k in self.values]
        rows += [f"  note: {_shown(n)}" for n in self.notes]
        return "\n".join(rows)

    def _repr_html_(self) -> str:
        return _display.html(self)

    def _repr_latex_(self) -> str:
        return _display.latex(self)

    def _repr_markdown_(self) -> str:
        return _display.markdown(self)


def _shown(text: str) -> str:
    """User text (an activation's name) as a repr or table shows it: control and bidi
    characters escaped the way ``repr(str)`` does (``\\x1b``, ``\\u202e``), so printing a
    result cannot drive or reorder the terminal."""
    return escape_controls(text, keep="")


def _ctx(dps: int) -> Any:
    ctx = mpmath.MPContext()
    ctx.dps = dps
    return ctx


def _deq_run(problem: DEQProblem, dps: int, refine: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """τ*, the coefficients and the moments of φ_c at τ*, at ``dps`` digits."""
    ctx = _ctx(dps)
    fp = solve_tau(problem, ctx, refine)
    env, zeros, _ = moments_at(problem.activation, problem.center, ctx, fp.tau, refine)
    if not problem.center and "phi" not in zeros:
        raise CenteringError(
            f"center=False: E[φ(τ*ξ)] = {ctx.nstr(env['phi'], 12)} ≠ 0 at τ* = "
            f"{ctx.nstr(fp.tau, 12)}, but Theorems 1–2 assume a centered activation; use "
            "center=True to center φ at its own fixed point."
        )
    if not fp.attracting:
        raise ContractionError(
            f"F'(τ*²) = σ_a² E[(φ_c²)''(τ*ξ)]/2 = {ctx.nstr(fp.slope, 8)}: |F'| ≥ 1, the fixed "
            f"point is not attracting at sigma_a2={problem.sigma_a2}; reduce sigma_a2."
        )
    a2, b2, t0 = (
        ctx.mpf(int(v.p)) / int(v.q) for v in (problem.sigma_a2, problem.sigma_b2, problem.tau0)
    )
    # σ_a² E[φ'²] ≥ 1: the CK exists, the NTK K* = G*/(1 − Ġ*) does not; keep the CK only.
    ntk = a2 * env["dsq"] < 1
    fn, arg_names = _deq_function(problem.trainable, ntk)
    env.update(sigma_a2=a2, sigma_b2=b2, tau_0=t0)
    vals = fn(ctx, *(env[n] for n in arg_names))
    keys = [k for k in _FORMULA_KEYS if ntk or k not in NTK_KEYS]
    out = {"tau_star": fp.tau, **dict(zip(keys, vals, strict=True)), "center": fp.center}
    # τ*² = σ_a² γ*² + σ_b² τ0² (Theorem 1): the solver's F and the derived γ* must agree.
    gap = fp.q - (a2 * out["gamma_star"] ** 2 + b2 * t0**2)
    if abs(gap) > fp.q * ctx.mpf(10) ** (-(dps - 4)):
        raise PrecisionLoss(
            f"τ*² − (σ_a² γ*² + σ_b² τ0²) = {ctx.nstr(gap, 5)} at {dps} digits: the fixed point "
            "did not settle; ask for fewer digits (dps)."
        )
    return out, {j: env[i] for j, i in MOMENT_KEYS.items()}


#: digits the other fixed points are reported to (they are context, not results)
OTHER_ROOT_DIGITS = 15


def _other_fixed_points(problem: DEQProblem) -> tuple[tuple[Verified, ...], tuple[str, ...]]:
    scan = scan_fixed_points(problem)
    star = solve_tau(problem, mpmath.fp).tau
    roots, notes = [], []
    kinds = {-1: "attracting, but not reached from z = 0", 1: "repelling", 0: "neutral (F' = 1)"}
    for a, b, kind in scan.others:
        if a == b:  # a touching root: only the scan's resolution is known
            v = Verified(mpmath.sqrt(a), 8, mpmath.nstr(mpmath.sqrt(a), 8))
        else:
            digits = min(problem.dps, OTHER_ROOT_DIGITS)
            work = solve_tau(problem, _ctx(digits + _GUARD_WORK), 0, (a, b, kind)).tau
            check = solve_tau(problem, _ctx(digits + _GUARD_CHECK), 1, (a, b, kind)).tau
            v = verify("other fixed point", work, check, digits)
        roots.append(v)
        notes.append(
            f"another fixed point τ = {v.text} exists ({kinds[kind]}); reported: the attracting "
            f"τ* ≈ {star:.6g} that the DEQ's iteration reaches from z = 0."
        )
    if not scan.complete:
        notes.append(
            "the search for other fixed points stopped early (overflow or its evaluation budget); "
            "roots far above τ* may be missing."
        )
    return tuple(roots), tuple(notes)


def deq_coefficients(
    activation: str | Activation | DEQProblem,
    sigma_a2: Any = "0.2",
    sigma_b2: Any = None,
    tau0: Any = 1,
    dps: int = 30,
    *,
    center: bool = True,
    trainable: str | Sequence[str] = ("a", "A"),
    certify: bool = True,
) -> DEQCoefficients:
    """Coefficients of the DEQ z = φ(σ_a A z + σ_b B x)/√m, every printed digit proven.

    The scalars of the high-dimensional equivalents Ḡ (ICML 2024, Theorem 1) and K̄ (Theorem 2),
    from formulas SymPy derives for ``activation`` (:func:`derive_deq`), at the fixed point τ*
    the DEQ's own iteration reaches (:func:`scan_fixed_points`).

    Args:
      activation: library name, ``name(params)``, an expression in ``x``, or a ready
        :class:`DEQProblem` (then the other arguments are ignored).
      sigma_a2, sigma_b2, tau0: numbers — int, float (read as its shortest repr: 0.2 is 1/5),
        decimal or fraction strings, Fraction, Decimal, numpy scalars; σ_b² defaults to 1 − σ_a².
      dps: significant digits wanted.
      center: center φ at its own fixed point (default); False checks E[φ(τ*ξ)] = 0 instead.
      trainable: the parameters of f(x) = aᵀz* the NTK (β*, κ*) is taken over; the default
        (a, A) is the paper's K* = G*/(1 − Ġ*).  Any non-empty subset of (a, A, B).
      certify: prove every digit by Arb ball arithmetic (default: it is also faster); an
        activation outside the enclosure rules falls back to digits verified by two
        evaluations (``certified=False`` with the ``reason``).  False: the two evaluations only.

    Returns:
      A :class:`DEQCoefficients`, a mapping of :class:`Verified` numbers with the keys
      ``tau_star``, ``gamma_star``, ``alpha_1`` … ``alpha_4``, ``beta_1`` … ``beta_3``,
      ``kappa_star`` and ``center`` (the constant c of φ_c = φ − c).  When
      σ_a² E[φ'(τ*ξ)²] ≥ 1 the NTK diverges: the ``beta_*`` and ``kappa_star`` keys are absent
      and ``notes`` says why.  ``moments`` holds E[φ_c'], E[φ_c'²], E[φ_c''], E[(φ_c²)''] at τ*
      (keys ``E_phi_prime``, ``E_phi_prime_sq``, ``E_phi_second``, ``E_phi_sq_second``).

    Raises:
      UnknownActivation, ParseError: ``activation`` is not a library name nor a valid expression.
      InvalidArgument: a number out of range or malformed (σ_a² ∉ (0, 1), dps < 1, …).
      UnknownTrainable: ``trainable`` is empty or names something outside (a, A, B).
      BudgetExceeded: the input is beyond a stated work limit (docs/limits.md).
      ContractionError: σ_a² outside the region of a unique attracting fixed point.
      CenteringError: ``center=False`` and E[φ(τ*ξ)] ≠ 0.
      PrecisionLoss: fewer than 10 digits agree between the two evaluations.

    Example:
      >>> c = deq_coefficients("relu", sigma_a2="0.2", dps=12)
      >>> c["alpha_1"]
      Verified('0.210526315789', digits=12)
      >>> c.alpha_1.text, round(float(c.tau_star), 6), c.certified
      ('0.210526315789', 0.926566, True)
    """
    certify = _arguments.boolean(certify, "certify")
    problem = (
        activation
        if isinstance(activation, DEQProblem)
        else DEQProblem.make(
            activation, sigma_a2, sigma_b2, tau0, dps, center=center, trainable=trainable
        )
    )
    if certify:
        from ._certify import certified  # Arb is loaded only when a proof is asked for

        return certified(problem)
    return _deq_coefficients(problem)


@functools.lru_cache(maxsize=32)
def _deq_coefficients(problem: DEQProblem) -> DEQCoefficients:
    """The verified path: two evaluations (dps+5, dps+20 with a finer rule), agreeing digits."""
    dps = problem.dps
    work, mom_w = _deq_run(problem, dps + _GUARD_WORK, 0)
    check, mom_c = _deq_run(problem, dps + _GUARD_CHECK, 1)
    values = {k: verify(k, work[k], check[k], dps) for k in DEQ_KEYS if k in work}
    moments = {k: verify(k, mom_w[k], mom_c[k], dps) for k in MOMENT_KEYS}
    others, notes = _other_fixed_points(problem)
    if "beta_1" not in values:
        ntk = moments["E_phi_prime_sq"].value * problem.sigma_a2.p / problem.sigma_a2.q
        notes = (
            f"the NTK diverges: σ_a² E[φ'(τ*ξ)²] = {mpmath.nstr(ntk, 6)} ≥ 1, so "
            "K* = G*/(1 − Ġ*) does not exist and β*, κ* are undefined; the CK values stand "
            f"(choose sigma_a2 < {mpmath.nstr(1 / moments['E_phi_prime_sq'].value, 6)} for the NTK).",
            *notes,
        )
    return DEQCoefficients(problem, values, moments, others, notes)


# ---------------------------------------------------------------------------
# Explicit network
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ExplicitCoefficients:
    """Per-layer τ̃_l, α̃_{l,1..4}, β̃_{l,1..3}, κ̃_l and centering constants (Theorem 3).

    Attributes:
      activations: σ_1 … σ_L, first layer first.
      tau0: τ0 of the input data (exact).
      dps: the verified digits asked for.
      centered: whether each σ_l was centered at its input scale τ̃_{l−1}.
      layers: one mapping per layer of :class:`Verified` numbers, keys ``tau``, ``alpha_1`` …
        ``alpha_4``, ``beta_1`` … ``beta_3``, ``kappa`` and ``center``.

    Example:
      >>> e = explicit_coefficients(["relu", "tanh"], dps=12)
      >>> len(e.layers), e.layers[1]["alpha_1"].text
      (2, '0.154037894145')
    """

    activations: tuple[Activation, ...]
    tau0: sp.Rational
    dps: int
    centered: bool
    layers: tuple[Mapping[str, Verified], ...]

    def as_floats(self) -> list[dict[str, float]]:
        return [{k: float(v.value) for k, v in layer.items()} for layer in self.layers]

    def to_dict(self) -> dict[str, Any]:
        return {
            "activations": [a.name for a in self.activations],
            "tau0": str(self.tau0),
            "dps": self.dps,
            "centered": self.centered,
            "layers": [{k: layer[k].text for k in LAYER_KEYS} for layer in self.layers],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)

    def _repr_html_(self) -> str:
        return _display.html(self)

    def _repr_latex_(self) -> str:
        return _display.latex(self)

    def _repr_markdown_(self) -> str:
        return _display.markdown(self)


def _explicit_run(
    acts: Sequence[Activation],
    tau0: sp.Rational,
    dps: int,
    refine: int,
    center: bool,
    input_trainable: bool = True,
) -> list[dict[str, Any]]:
    ctx = mpmath.MPContext()
    ctx.dps = dps
    fn, arg_names = _layer_function()
    t0 = ctx.mpf(int(tau0.p)) / int(tau0.q)
    prev = {
        "tau_prev": t0, "alpha_1_prev": ctx.one, "alpha_2_prev": ctx.zero, "alpha_3_prev": ctx.zero,
        "alpha_4_prev": ctx.one, "beta_1_prev": ctx.one if input_trainable else ctx.zero,
        "beta_2_prev": ctx.zero, "beta_3_prev": ctx.zero,
        "kappa_prev": t0 if input_trainable else ctx.zero,
    }  # fmt: skip
    layers = []
    for l, act in enumerate(acts, start=1):
        cm, zeros, c = moments_at(act, center, ctx, prev["tau_prev"], refine)
        if not center and "phi" not in zeros:
            raise CenteringError(
                f"center=False: layer {l} ({_shown(act.name)}) has E[σ(τ̃ξ)] = {ctx.nstr(cm['phi'], 12)} "
                "≠ 0 at its input scale; Theorem 3 assumes centered activations. Use center=True."
            )
        vals = fn(ctx, *(dict(cm, **prev)[n] for n in arg_names))
        layer = dict(zip(LAYER_KEYS[:-1], vals, strict=True))
        layer["center"] = c
        layers.append(layer)
        prev = {k + "_prev": v for k, v in layer.items() if k != "center"}
    return layers


def explicit_coefficients(
    activations: Sequence[Any] | Any,
    tau0: Any = 1,
    dps: int = 30,
    *,
    center: bool = True,
    input_layer_trainable: bool = True,
) -> ExplicitCoefficients:
    """Coefficients of x^{(l)} = σ_l(W_l x^{(l−1)})/√m, l = 1..L, to ``dps`` verified digits.

    The recursion of the Explicit-CK (ICML 2024, Theorem 3, as :func:`derive_layer` derives it)
    and of the explicit NTK Θ^{(l)} = Σ^{(l)} + Θ^{(l−1)}∘Σ̇^{(l)}.  Each σ_l is centered at its
    own input scale τ̃_{l−1} unless ``center=False``.  The NTK (β̃, κ̃) is over every layer's
    weights, or over all but W_1 with ``input_layer_trainable=False`` (Θ^{(0)} = 0 instead of
    XᵀX).

    Args:
      activations: one activation per layer (library names, ``name(params)``, expressions in
        ``x`` or Activations), first layer first.
      tau0: τ0 = √(tr C°/p) of the input data, an exact number.
      dps: significant digits wanted.
      center: center each σ_l (default); False requires each to be centered already.
      input_layer_trainable: whether W_1 is among the NTK's parameters.

    Returns:
      An :class:`ExplicitCoefficients` whose ``layers[l - 1]`` maps ``tau``, ``alpha_1`` …
      ``alpha_4``, ``beta_1`` … ``beta_3``, ``kappa`` and ``center`` to :class:`Verified` numbers.

    Raises:
      InvalidArgument: no activation, or an argument out of range.
      UnknownActivation, ParseError: an activation that does not parse.
      BudgetExceeded: more layers than docs/limits.md allows.
      CenteringError: ``center=False`` and some σ_l is not centered at its input scale.
      PrecisionLoss: fewer than 10 digits agree between the two evaluations.

    Example:
      >>> e = explicit_coefficients(["relu"], dps=12)
      >>> e.layers[0]["alpha_1"].text, e.layers[0]["tau"].text
      ('0.250000000000', '0.583819370104')
    """
    acts = get_activations(activations, "activations", hi=MAX_LAYERS)  # one given alone: 1 layer
    t0 = in_range("tau0", exact_number(tau0, "tau0"))
    center = _arguments.boolean(center, "center")
    input_layer_trainable = _arguments.boolean(input_layer_trainable, "input_layer_trainable")
    check_dps(dps)  # the type and the general cap first: a huge dps costs no moment set
    dps = max(check_dps(dps, a) for a in acts)
    work = _explicit_run(acts, t0, dps + _GUARD_WORK, 0, center, input_layer_trainable)
    check = _explicit_run(acts, t0, dps + _GUARD_CHECK, 1, center, input_layer_trainable)
    layers = tuple(
        {k: verify(f"layer {l + 1} {k}", w[k], c[k], dps) for k in LAYER_KEYS}
        for l, (w, c) in enumerate(zip(work, check, strict=True))
    )
    return ExplicitCoefficients(acts, t0, dps, center, layers)


# The symbols the compiled functions are built from, for introspection and tests.
FORMULA_SYMBOLS = (SIGMA_A2, SIGMA_B2, TAU0)

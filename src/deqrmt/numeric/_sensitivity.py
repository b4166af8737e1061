r"""``sensitivities``: ∂/∂σ_a² and ∂/∂σ_b² of the DEQ's coefficients, proven or verified.

The formulas are :func:`deqrmt.symbolic._sensitivity.derive_sensitivity`'s (implicit
differentiation of τ*² = F(τ*²), the heat rule for every moment), compiled once (:mod:`._formulas`) and evaluated
like the coefficients themselves (:mod:`._deq`):

* certified (the default): τ*² proved by Krawczyk's test (:mod:`._variance_proof`), the raw
  moments at τ* enclosed in Arb (:mod:`._enclose`, with E[φ'''], E[φ''''], E[(φ²)''''] and
  E[(φ'²)''] beside the coefficients' own), the formulas in ball arithmetic, the digits the
  balls prove (:func:`._verified.proven`), raising the precision until ``dps`` are shown;
* verified: two evaluations (dps+5, and dps+20 with a finer quadrature rule) and the digits
  they agree on (:func:`._verify.verify`); also the fallback, with the reason, for an
  activation outside the enclosure rules.

σ_a² and σ_b² are independent here: ∂/∂σ_a² holds σ_b² fixed (even where σ_b² defaulted to
1 − σ_a²), and d/dσ_a² along σ_b² = 1 − σ_a² is ∂/∂σ_a² − ∂/∂σ_b².
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Iterator, Mapping, Sequence

from flint import arb

from .. import _arguments
from .._json import JSONObject
from ..symbolic import SENSITIVITY_PARAMETERS, Activation, derive_sensitivity
from ._arb import ArbContext, to_arb, workprec
from ._context import Num
from ._deq import deq_coefficients
from ._deq_records import DEQ_KEYS, NTK_KEYS, shown
from ._deq_verified import GUARD_CHECK, GUARD_WORK, mp_context
from ._enclose import ENCLOSED_MOMENTS, MomentEncloser
from ._escalate import escalating
from ._fixed_point import solve_tau
from ._formulas import Formulas, compile_formulas
from ._mapping import AttributeHints
from ._moments import evaluator_for
from ._numbers import ExactInput
from ._problem import DEQProblem, ProblemFields
from ._variance_proof import VarianceBalls, prove_fixed_point, star_float
from ._verified import Verified, proven
from ._verify import ball_dict, proven_or_agreed, verify

__all__ = [
    "PARAMETERS",
    "SENSITIVITY_MOMENTS",
    "DEQSensitivities",
    "sensitivities",
    "sensitivity_formulas",
]

#: the parameters differentiated, in order (keys of each entry of a :class:`DEQSensitivities`)
PARAMETERS = tuple(SENSITIVITY_PARAMETERS)
#: the raw moments at τ* the derivatives use (names of deqrmt.symbolic._expectation.MOMENTS)
SENSITIVITY_MOMENTS = ("phi", "d1", "d2", "d3", "d4", "sq", "sq2", "sq4", "dsq", "dsq2")


@functools.lru_cache(maxsize=16)
def sensitivity_formulas(
    trainable: tuple[str, ...], center: bool, ntk: bool, drop_chain: bool = False
) -> tuple[tuple[tuple[str, str], ...], Formulas]:
    """The compiled derivatives: ((key, parameter) pairs in order, their :class:`Formulas`).

    ``ntk=False`` leaves out β*₁..₃ and κ* (σ_a² E[φ'²] ≥ 1: the NTK does not exist);
    ``drop_chain`` is the negative control of :func:`derive_sensitivity`."""
    s = derive_sensitivity(trainable, center=center, drop_chain=drop_chain)
    pairs = tuple((k, p) for k in DEQ_KEYS if ntk or k not in NTK_KEYS for p in PARAMETERS)
    return pairs, compile_formulas(
        "deq_sensitivities",
        [s.derivatives[k][p] for k, p in pairs],
        s.names(),
        doc="Derived ∂/∂σ_a², ∂/∂σ_b² of the DEQ coefficients.",
    )


@dataclasses.dataclass(frozen=True, repr=False)
class DEQSensitivities(AttributeHints, ProblemFields, Mapping[str, Mapping[str, Verified]]):
    """∂/∂σ_a² and ∂/∂σ_b² of every coefficient of one :class:`DEQProblem`.

    A mapping (``derivatives`` holds it): coefficient key (``tau_star``, ``gamma_star``,
    ``alpha_1`` … ``kappa_star``, ``center``, as :func:`deq_coefficients`) →
    ``{"sigma_a2": Verified, "sigma_b2": Verified}``; :meth:`wrt` gives one parameter's column.  The derivatives are partial, σ_a² and σ_b²
    independent.  ``certified``, ``prec_bits``, ``reason`` and ``notes`` as in
    :class:`DEQCoefficients`.
    """

    problem: DEQProblem
    derivatives: Mapping[str, Mapping[str, Verified]]
    certified: bool = False
    prec_bits: int | None = None
    reason: str | None = None
    notes: tuple[str, ...] = ()

    def __getitem__(self, key: str) -> Mapping[str, Verified]:
        return self.derivatives[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.derivatives)

    def __len__(self) -> int:
        return len(self.derivatives)

    def wrt(self, parameter: str) -> dict[str, Verified]:
        """Every coefficient's derivative with respect to ``parameter`` (``"sigma_a2"`` or
        ``"sigma_b2"``)."""
        parameter = _arguments.choice(parameter, "parameter", PARAMETERS)
        return {k: v[parameter] for k, v in self.derivatives.items()}

    def to_dict(self) -> JSONObject:
        """The JSON form (docs/json.md, ``sensitivities``): key → parameter → digits text; the
        balls of a proof under ``balls`` (key → parameter → midpoint and radius)."""
        out: dict[str, Num] = {
            "values": {k: {p: v.text for p, v in d.items()} for k, d in self.derivatives.items()},
            "digits": {k: {p: v.digits for p, v in d.items()} for k, d in self.derivatives.items()},
            "certified": self.certified,
        }
        if self.certified:
            out["balls"] = {
                k: {p: ball_dict(v) for p, v in d.items()} for k, d in self.derivatives.items()
            }
            out["prec_bits"] = self.prec_bits
        elif self.reason:
            out["reason"] = self.reason
        out["notes"] = list(self.notes)
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)

    def __repr__(self) -> str:
        p = self.problem
        head = (
            f"DEQSensitivities({shown(p.activation.name)}, sigma_a2={p.sigma_a2}, "
            f"sigma_b2={p.sigma_b2}, tau0={p.tau0}, certified={self.certified})"
        )
        rows = [
            f"  d{k}: " + ", ".join(f"/d{q} = {v.text}" for q, v in d.items())
            for k, d in self.derivatives.items()
        ]
        return "\n".join([head, *rows])

    def _repr_html_(self) -> str:
        from ._display import lines_html

        return lines_html(repr(self).splitlines())


def _nested(flat: Mapping[tuple[str, str], Verified]) -> dict[str, dict[str, Verified]]:
    out: dict[str, dict[str, Verified]] = {}
    for (k, p), v in flat.items():
        out.setdefault(k, {})[p] = v
    return out


def _run_mp(
    problem: DEQProblem, dps: int, refine: int, ntk: bool, drop_chain: bool
) -> dict[tuple[str, str], Num]:
    """The derivatives at ``dps`` digits (mpmath), τ* from the one solver."""
    ctx = mp_context(dps)
    fp = solve_tau(problem, ctx, refine)
    raw = evaluator_for(problem.activation)(ctx, fp.tau, SENSITIVITY_MOMENTS, refine)
    env: dict[str, Num] = {k: v.value for k, v in raw.items()}
    for name, v in (
        ("sigma_a2", problem.sigma_a2),
        ("sigma_b2", problem.sigma_b2),
        ("tau_0", problem.tau0),
    ):
        env[name] = ctx.mpf(int(v.p)) / int(v.q)
    env["tau_star"] = fp.tau
    pairs, fn = sensitivity_formulas(problem.trainable, problem.center, ntk, drop_chain)
    return dict(zip(pairs, fn(ctx, env), strict=True))


def _verified(problem: DEQProblem, ntk: bool, drop_chain: bool = False) -> DEQSensitivities:
    dps = problem.dps
    work = _run_mp(problem, dps + GUARD_WORK, 0, ntk, drop_chain)
    check = _run_mp(problem, dps + GUARD_CHECK, 1, ntk, drop_chain)
    flat = {kp: verify("d" + "/d".join(kp), work[kp], check[kp], dps) for kp in work}
    return DEQSensitivities(problem, _nested(flat))


@functools.lru_cache(maxsize=64)
def _encloser(act: Activation) -> MomentEncloser:
    """The Arb encloser of :data:`SENSITIVITY_MOMENTS` for ``act`` (cached)."""
    return MomentEncloser(act, tuple(dict.fromkeys((*ENCLOSED_MOMENTS, *SENSITIVITY_MOMENTS))))


def _certified(problem: DEQProblem, ntk: bool) -> DEQSensitivities:
    """Every digit proven: τ*² by Krawczyk, moments and formulas in ball arithmetic."""
    vmap = VarianceBalls(problem)
    enc = _encloser(problem.activation)
    pairs, fn = sensitivity_formulas(problem.trainable, problem.center, ntk)
    dps = problem.dps

    def attempt(q: arb, known: int, prec: int) -> tuple[dict[tuple[str, str], Verified], arb, int]:
        k, _ = prove_fixed_point(vmap, q, known, prec)
        with workprec(prec):
            tau = k.sqrt()
        raw = enc(tau, SENSITIVITY_MOMENTS, prec)
        with workprec(prec):
            vals = fn(ArbContext(prec), {**raw, **vmap.params(), "tau_star": tau})
            flat = {
                kp: proven(v if isinstance(v, arb) else to_arb(v), dps)
                for kp, v in zip(pairs, vals, strict=True)
            }
        return flat, k, min(v.digits for v in flat.values())

    flat, prec = escalating(star_float(problem), dps, attempt)
    return DEQSensitivities(problem, _nested(flat), certified=True, prec_bits=prec)


@functools.lru_cache(maxsize=32)
def _dispatch(problem: DEQProblem, certify: bool) -> DEQSensitivities:
    # the coefficients first: every check of the setting (contraction, centering, …) and the
    # decision whether the NTK exists are theirs, so both results always agree on them
    coeffs = deq_coefficients(problem, certify=certify)
    ntk = all(k in coeffs.values for k in NTK_KEYS)  # absent where σ_a² E[φ'²] ≥ 1
    notes = tuple(n for n in coeffs.notes if n.startswith("the NTK diverges"))
    if certify:
        res = proven_or_agreed(lambda: _certified(problem, ntk), lambda: _verified(problem, ntk))
    else:
        res = _verified(problem, ntk)
    return dataclasses.replace(res, notes=notes)


def sensitivities(
    activation: str | Activation | DEQProblem,
    sigma_a2: ExactInput = "0.2",
    sigma_b2: ExactInput | None = None,
    tau0: ExactInput = 1,
    dps: int = 30,
    *,
    center: bool = True,
    trainable: str | Sequence[str] = ("a", "A"),
    certify: bool = True,
) -> DEQSensitivities:
    r"""∂/∂σ_a² and ∂/∂σ_b² of every DEQ coefficient, every printed digit proven.

    The derivatives of τ*, γ*, α*₁..₄, β*₁..₃, κ* and the centering constant c of
    :func:`deq_coefficients` (ICML 2024, Theorems 1–2), from formulas SymPy derives by implicit
    differentiation of the fixed point τ*² = σ_a² E[φ_c²(τ*ξ)] + σ_b² τ0²:
    dτ*²/dσ = (∂F/∂σ)/(1 − F'(τ*²)), and each moment at τ* moves by the heat rule
    d/dq E[g(√q ξ)] = E[g''(√q ξ)]/2
    (:func:`deqrmt.symbolic._sensitivity.derive_sensitivity`).

    σ_a² and σ_b² are independent: ∂/∂σ_a² holds σ_b² fixed, also where σ_b² defaults to
    1 − σ_a² (along that line the derivative is ∂/∂σ_a² − ∂/∂σ_b²).

    Args:
      activation, sigma_a2, sigma_b2, tau0, dps, center, trainable, certify: as
        :func:`deq_coefficients` (the same problem, the same checks).

    Returns:
      A :class:`DEQSensitivities`: a mapping of each coefficient key to
      ``{"sigma_a2": Verified, "sigma_b2": Verified}``; ``wrt("sigma_a2")`` gives one column.
      Where the NTK diverges the ``beta_*`` and ``kappa_star`` keys are absent (as in
      :func:`deq_coefficients`).  ``certified``: every digit proven by Arb balls; otherwise
      the digits two evaluations agree on, with the ``reason``.

    Raises:
      UnknownActivation, ParseError, InvalidArgument, UnknownTrainable, BudgetExceeded,
      ContractionError, CenteringError, PrecisionLoss: as :func:`deq_coefficients`.

    Example:
      >>> s = sensitivities("relu", sigma_a2="0.2", dps=12)
      >>> s["tau_star"]["sigma_b2"]          # relu: τ*² = σ_b²/(1 − σ_a²(1/2 − 1/(2π)))
      Verified('0.579103828767', digits=12)
      >>> s.wrt("sigma_a2")["alpha_1"].text, s.certified
      ('0.0554016620499', True)
    """
    certify = _arguments.boolean(certify, "certify")
    problem = (
        activation
        if isinstance(activation, DEQProblem)
        else DEQProblem.make(
            activation, sigma_a2, sigma_b2, tau0, dps, center=center, trainable=trainable
        )
    )
    return _dispatch(problem, certify)

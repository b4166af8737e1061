r"""The explicit L-layer network's coefficients, proven (Arb) or verified (ICML 2024, Theorem 3).

x^{(l)} = σ_l(W_l x^{(l−1)})/√m: the layer map is explicit, so each layer's τ̃_l, α̃_l, β̃_l, κ̃_l
follow from the previous layer's by the derived recursion (:func:`._deq_formulas.layer_formulas`)
on the Gaussian moments of σ_l at τ̃_{l−1}.  Two paths, as for the DEQ:

* certified (:mod:`._explicit_certified`, the default): the recursion carried in Arb balls,
  every printed digit proven; an activation outside the enclosure rules falls back to the
  verified path, with the reason;
* verified: evaluated twice (dps+5, and dps+20 with a finer rule); only the digits both agree
  on are kept.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import mpmath
import sympy as sp

from .. import _arguments
from .._errors import CenteringError
from .._io import pandas
from .._json import JSONObject
from ..symbolic import Activation, get_activations
from . import _display
from ._context import Num
from ._deq_formulas import layer_formulas
from ._deq_records import shown
from ._deq_verified import GUARD_CHECK, GUARD_WORK
from ._fixed_point import moments_at
from ._mapping import AttributeHints, ValueTable
from ._numbers import ExactInput, exact_number
from ._precision_cost import check_dps
from ._ranges import MAX_LAYERS, in_range
from ._verified import Verified
from ._verify import ball_dict, proven_or_agreed, verify

__all__ = ["LAYER_KEYS", "ExplicitCoefficients", "explicit_coefficients"]

LAYER_KEYS = (
    "tau", "alpha_1", "alpha_2", "alpha_3", "alpha_4", "beta_1", "beta_2", "beta_3", "kappa", "center",
)  # fmt: skip


@dataclasses.dataclass(frozen=True, repr=False)
class ExplicitCoefficients(AttributeHints, _display.Displayed):
    """Per-layer τ̃_l, α̃_{l,1..4}, β̃_{l,1..3}, κ̃_l and centering constants (Theorem 3).

    Attributes:
      activations: σ_1 … σ_L, first layer first.
      tau0: τ0 of the input data (exact).
      dps: the verified digits asked for.
      centered: whether each σ_l was centered at its input scale τ̃_{l−1}.
      layers: one read-only mapping per layer of :class:`Verified` numbers, keys ``tau``,
        ``alpha_1`` … ``alpha_4``, ``beta_1`` … ``beta_3``, ``kappa`` and ``center``
        (``dict(e.layers[0])``, ``e.layers[0].to_dict(float)``); ``to_pandas()`` is the
        table, one row per layer.
      certified: every digit is proven by Arb ball arithmetic (each value has a ``radius``);
        otherwise the digits are the ones two evaluations agree on, and ``reason`` says why no
        proof was attempted or possible.
      prec_bits: the ball evaluation's precision (0 when not certified).
      reason: why the values are not certified (None when they are, or with certify=False).

    Example:
      >>> from deqrmt import explicit_coefficients
      >>> e = explicit_coefficients(["relu", "tanh"], dps=12)
      >>> len(e.layers), e.layers[1]["alpha_1"].text
      (2, '0.154037894145')
    """

    activations: tuple[Activation, ...]
    tau0: sp.Rational
    dps: int
    centered: bool
    layers: tuple[Mapping[str, Verified], ...]
    certified: bool = False
    prec_bits: int = 0
    reason: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "layers", tuple(ValueTable(layer) for layer in self.layers))

    def to_pandas(self) -> Num:
        """A :class:`pandas.DataFrame`, one row per layer (index ``layer``, 1 … L; the column
        ``activation``), one float column per coefficient.  Needs pandas (MissingExtra)."""
        pd = pandas("ExplicitCoefficients.to_pandas()")
        rows = [
            {"layer": l, "activation": a.name, **{k: float(v) for k, v in layer.items()}}
            for l, (a, layer) in enumerate(zip(self.activations, self.layers, strict=True), 1)
        ]
        return pd.DataFrame(rows).set_index("layer")

    def as_floats(self) -> list[dict[str, float]]:
        return [{k: float(v.value) for k, v in layer.items()} for layer in self.layers]

    def to_dict(self) -> JSONObject:
        return {
            "activations": [a.name for a in self.activations],
            "tau0": str(self.tau0),
            "dps": self.dps,
            "centered": self.centered,
            "layers": [{k: layer[k].text for k in LAYER_KEYS} for layer in self.layers],
            **certification(self),
        }


def _run(
    acts: Sequence[Activation],
    tau0: sp.Rational,
    dps: int,
    refine: int,
    center: bool,
    input_trainable: bool = True,
) -> list[dict[str, Num]]:
    ctx = mpmath.MPContext()
    ctx.dps = dps
    formulas = layer_formulas()
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
                f"center=False: layer {l} ({shown(act.name)}) has E[σ(τ̃ξ)] = {ctx.nstr(cm['phi'], 12)} "
                "≠ 0 at its input scale; Theorem 3 assumes centered activations. Use center=True."
            )
        vals = formulas(ctx, {**cm, **prev})
        layer = dict(zip(LAYER_KEYS[:-1], vals, strict=True))
        layer["center"] = c
        layers.append(layer)
        prev = {k + "_prev": v for k, v in layer.items() if k != "center"}
    return layers


def explicit_coefficients(
    activations: Sequence[str | Activation] | str | Activation,
    tau0: ExactInput = 1,
    dps: int = 30,
    *,
    center: bool = True,
    input_layer_trainable: bool = True,
    certify: bool = True,
) -> ExplicitCoefficients:
    """Coefficients of x^{(l)} = σ_l(W_l x^{(l−1)})/√m, l = 1..L, to ``dps`` proven digits.

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
      certify: prove every digit by Arb ball arithmetic (default); an activation outside the
        enclosure rules falls back to digits verified by two evaluations (``certified=False``
        with the ``reason``).  False: the two evaluations only.

    Returns:
      An :class:`ExplicitCoefficients` whose ``layers[l - 1]`` maps ``tau``, ``alpha_1`` …
      ``alpha_4``, ``beta_1`` … ``beta_3``, ``kappa`` and ``center`` to :class:`Verified` numbers.

    Raises:
      InvalidArgument: no activation, or an argument out of range.
      UnknownActivation, ParseError: an activation that does not parse.
      BudgetExceeded: more layers than docs/limits.md allows.
      CenteringError: ``center=False`` and some σ_l is not centered at its input scale.
      PrecisionLoss: fewer than 10 digits agree between the two evaluations (verified path).

    Example:
      >>> e = explicit_coefficients(["relu"], dps=12)
      >>> e.layers[0]["alpha_1"].text, e.layers[0]["tau"].text
      ('0.250000000000', '0.583819370104')
    """
    acts = get_activations(activations, "activations", hi=MAX_LAYERS)  # one given alone: 1 layer
    t0 = in_range("tau0", exact_number(tau0, "tau0"))
    center = _arguments.boolean(center, "center")
    input_layer_trainable = _arguments.boolean(input_layer_trainable, "input_layer_trainable")
    certify = _arguments.boolean(certify, "certify")
    check_dps(dps)  # the type and the general cap first: a huge dps costs no moment set
    dps = max(check_dps(dps, a) for a in acts)
    if not certify:
        return _verified(acts, t0, dps, center, input_layer_trainable)
    from ._explicit_certified import certify_layers  # Arb is loaded only when a proof is asked for

    def prove() -> ExplicitCoefficients:
        balls, prec = certify_layers(acts, t0, dps, center, input_layer_trainable)
        return ExplicitCoefficients(
            acts, t0, dps, center, tuple(balls), certified=True, prec_bits=prec
        )

    return proven_or_agreed(prove, lambda: _verified(acts, t0, dps, center, input_layer_trainable))


def _verified(
    acts: tuple[Activation, ...],
    t0: sp.Rational,
    dps: int,
    center: bool,
    input_layer_trainable: bool,
) -> ExplicitCoefficients:
    """The verified path: the digits two evaluations (dps+5, and dps+20 with a finer rule)
    agree on."""
    work = _run(acts, t0, dps + GUARD_WORK, 0, center, input_layer_trainable)
    check = _run(acts, t0, dps + GUARD_CHECK, 1, center, input_layer_trainable)
    layers = tuple(
        {k: verify(f"layer {l + 1} {k}", w[k], c[k], dps) for k in LAYER_KEYS}
        for l, (w, c) in enumerate(zip(work, check, strict=True))
    )
    return ExplicitCoefficients(acts, t0, dps, center, layers)


def certification(res: ExplicitCoefficients) -> JSONObject:
    """The JSON fields that say how the digits were obtained (docs/json.md): ``certified``,
    then one object of balls per layer (``midpoint``, ``radius``, rounded outward: the printed
    ball contains the proven one) and ``prec_bits``, or the ``reason`` there is no proof."""
    out: JSONObject = {"certified": res.certified}
    if res.certified:
        out["balls"] = [{k: ball_dict(layer[k]) for k in LAYER_KEYS} for layer in res.layers]
        out["prec_bits"] = res.prec_bits
    elif res.reason:
        out["reason"] = res.reason
    return out

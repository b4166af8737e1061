r"""The explicit network's certified path: every printed digit proven by ball arithmetic (Arb).

The layer map of x^{(l)} = σ_l(W_l x^{(l−1)})/√m is explicit (ICML 2024, Theorem 3): no fixed
point to prove, only a recursion to carry in balls.  For l = 1..L:

1. **Moments as balls** at every τ in the ball τ̃_{l−1} (:class:`._enclose.MomentEncloser`
   takes the scale as a ball: closed forms in Arb, ``acb.integral`` otherwise, with rigorous
   Gaussian-tail bounds), τ̃_0 = τ0 exact.
2. **Centered** by the derived identities (:func:`._fixed_point.center_moments`), the constant
   c_l = E[σ_l(τ̃_{l−1}ξ)] a ball too.
3. **Layer l as balls**: the derived recursion (:func:`._deq_formulas.layer_formulas`) on the
   moment balls and layer l − 1's balls, through the one printer's Arb context.  Every ball
   contains the true value for every value of the previous layer's balls, so by induction
   layer l's balls contain layer l's true values.
4. **Proven digits** (:func:`._verified.proven`); too few: the whole recursion runs again at the
   missing digits' bits and a margin more.

Anything outside the enclosure rules raises :class:`~._enclose.NotEnclosable`; the dispatcher
(:func:`~deqrmt.numeric.explicit_coefficients`) then falls back to the verified path and says
so (``certified: false`` with the ``reason``).
"""

from __future__ import annotations

from collections.abc import Sequence

import sympy as sp
from flint import arb

from .._errors import CenteringError
from ..symbolic import Activation
from ._arb import ArbContext, bits_for_digits, midpoint_text, to_arb, workprec
from ._deq_formulas import layer_formulas
from ._deq_records import shown
from ._enclose import ENCLOSED_MOMENTS, NotEnclosable, encloser_for
from ._escalate import GUARD_DIGITS, MAX_ATTEMPTS
from ._fixed_point import center_moments
from ._verified import MIN_DIGITS, Verified, proven

__all__ = ["certify_layers", "layer_balls"]

#: the recursion's outputs, in :func:`layer_formulas`' order (``center`` is added after them)
_FORMULA_KEYS = (
    "tau", "alpha_1", "alpha_2", "alpha_3", "alpha_4", "beta_1", "beta_2", "beta_3", "kappa",
)  # fmt: skip


def _start(tau0: sp.Rational, input_trainable: bool) -> dict[str, arb]:
    """Layer 0 (the input): τ̃_0 = τ0, α̃_0 = (1, 0, 0, 1), Θ^{(0)} = XᵀX or 0."""
    t0 = to_arb(tau0)
    one, zero = arb(1), arb(0)
    return {
        "tau": t0, "alpha_1": one, "alpha_2": zero, "alpha_3": zero, "alpha_4": one,
        "beta_1": one if input_trainable else zero, "beta_2": zero, "beta_3": zero,
        "kappa": t0 if input_trainable else zero,
    }  # fmt: skip


def layer_balls(
    acts: Sequence[Activation],
    tau0: sp.Rational,
    prec: int,
    center: bool = True,
    input_trainable: bool = True,
) -> list[dict[str, arb]]:
    """Every layer's τ̃, α̃, β̃, κ̃ and c as Arb balls at ``prec`` bits (steps 1–3 above).

    Raises:
      NotEnclosable: a moment outside the enclosure rules, or a ball that is not finite.
      CenteringError: ``center=False`` and E[σ_l(τ̃_{l−1}ξ)] ≠ 0, proved.
    """
    formulas = layer_formulas()
    ctx = ArbContext(prec)
    with workprec(prec):
        prev = _start(tau0, input_trainable)
    layers: list[dict[str, arb]] = []
    for l, act in enumerate(acts, start=1):
        tau = prev["tau"]
        if not tau > 0:
            raise NotEnclosable(f"layer {l}: τ̃_{l - 1} = {tau.str(8)} is not proved positive")
        raw = encloser_for(act)(tau, ENCLOSED_MOMENTS, prec)
        with workprec(prec):
            env, c = center_moments(ctx, dict(raw), center)
            if not center and not (raw["phi"].is_exact() and raw["phi"] == 0):
                if raw["phi"].contains(0):
                    raise NotEnclosable(
                        f"layer {l}: E[σ(τ̃ξ)] = 0 cannot be proved in ball arithmetic"
                    )
                raise CenteringError(
                    f"center=False: layer {l} ({shown(act.name)}) has E[σ(τ̃ξ)] = "
                    f"{midpoint_text(raw['phi'], 12)} ≠ 0 at its input scale; Theorem 3 assumes "
                    "centered activations. Use center=True."
                )
            prev_env = {k + "_prev": v for k, v in prev.items()}
            vals = formulas(ctx, {**env, **prev_env})
            layer = {
                k: (v if isinstance(v, arb) else to_arb(v))
                for k, v in zip(_FORMULA_KEYS, vals, strict=True)
            }
            layer["center"] = c if isinstance(c, arb) else to_arb(c)
        for k, v in layer.items():
            if not v.is_finite():
                raise NotEnclosable(f"layer {l} {k} is not finite in ball arithmetic")
        layers.append(layer)
        prev = {k: layer[k] for k in _FORMULA_KEYS}
    return layers


def certify_layers(
    acts: Sequence[Activation],
    tau0: sp.Rational,
    dps: int,
    center: bool = True,
    input_trainable: bool = True,
) -> tuple[list[dict[str, Verified]], int]:
    """Every layer's values proven to ``dps`` digits (or as many as the last precision gives,
    at least ``min(dps, MIN_DIGITS)``), and the bits that proved them; no fallback.

    Raises:
      NotEnclosable: outside the enclosure rules, or too few digits proven.
      CenteringError: as :func:`layer_balls`.
    """
    prec = bits_for_digits(dps + GUARD_DIGITS) + 16
    for n in range(MAX_ATTEMPTS):
        balls = layer_balls(acts, tau0, prec, center, input_trainable)
        layers = [{k: proven(v, dps) for k, v in layer.items()} for layer in balls]
        short = min(
            (v.digits for layer in layers for v in layer.values() if v.text != "0"), default=dps
        )
        if short >= dps or n == MAX_ATTEMPTS - 1:
            break
        # too wide (deep or steep networks lose digits layer by layer): redo at more bits
        prec += bits_for_digits(dps - short + GUARD_DIGITS) + 32
    if short < min(dps, MIN_DIGITS):
        raise NotEnclosable(f"only {short} digits proven at {prec} bits")
    return layers, prec

r"""Design of an explicit network (ENN) equivalent to a DEQ in the high-dimensional regime.

CK matching (ICML 2024, "key idea"): choose the parameters θ_l of an L-layer ENN with
activations from one family so that τ̃_L = γ*, α̃_{L,i} = α*_i (i = 1, 2, 3); NTK matching:
κ̃_L = κ*, β̃_{L,i} = β*_i.  The ENN side is the derived layer recursion
(:func:`deqrmt.symbolic.derive_layer`) applied L times to the family's moments, so nothing is
typed in (:mod:`._design_family`).  Trainable sets correspond as: DEQ (a, A) with B fixed ↔ ENN
with its input layer fixed (Θ^{(0)} = 0); DEQ (a, A, B) ↔ ENN with every layer trainable
(Θ^{(0)} = XᵀX).

Depth rule: a one-layer ENN always has α̃_{1,2} = α̃_{1,3}/2, so one layer suffices only if
α*₂ = α*₃/2; otherwise at least two are needed.

The equations are solved by multi-start Levenberg–Marquardt in a private mpmath context
(:mod:`._design_search`); every distinct real solution found is polished at higher precision
and reported with its residual.  Solutions related by a symmetry of the matching equations are
one orbit, reported once by its canonical member (:mod:`._design_symmetry`); each is proved by a
Krawczyk step (:mod:`._design_proof`).  The records are in :mod:`._design_records`.

:func:`design_enn` checks its arguments and runs the steps of :func:`_design` in order: the
depth rule, the targets, the budget, the active equations, the search, the polish, the
symmetries and orbits, and the reported solutions.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from fractions import Fraction

import mpmath

from .. import _arguments
from .._errors import DeqrmtError, InvalidArgument, NoConvergence
from .._json import JSONObject
from ..symbolic import Activation, Family, get_activation, get_family
from ._arb import bits_for_digits, workprec
from ._context import EngineContext, Num
from ._deq import deq_coefficients
from ._deq_records import DEQCoefficients
from ._design_family import FamilyEvaluator, estimate_work
from ._design_matching import (
    DesignSetting,
    Residuals,
    Values,
    active_equations,
    deq_targets,
    matched_values,
    residuals,
    sampler,
)
from ._design_proof import DesignProof, prove_design_solution
from ._design_records import Design, DesignSolution
from ._design_search import OutOfBudget, SearchBudget, multistart, refine
from ._design_search import expand as _expand
from ._design_search import jacobian as _jacobian
from ._design_search import nullity as _nullity
from ._design_search import solve_lm as _solve_lm
from ._design_symmetry import Transform as _Transform
from ._design_symmetry import canonical as _canonical
from ._design_symmetry import describe as _describe
from ._design_symmetry import normalization_text as _normalization_text
from ._design_symmetry import symmetries as _symmetries
from ._float_context import FLOAT
from ._numbers import ExactInput
from ._problem import DEQProblem
from ._ranges import MAX_LAYERS

__all__ = ["Design", "DesignSolution", "design_enn"]

#: multi-start count: each start is a Levenberg–Marquardt solve at dps+10 (docs/limits.md)
MAX_STARTS = 200


def design_enn(
    deq_activation: str | DEQProblem | DEQCoefficients,
    family: str,
    *,
    layers: int | None = None,
    kernel: str = "ck",
    sigma_a2: ExactInput = "0.2",
    sigma_b2: ExactInput | None = None,
    tau0: ExactInput = 1,
    dps: int = 30,
    trainable: Sequence[str] = ("a", "A"),
    starts: int = 24,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
    certify: bool = True,
) -> Design:
    """Solve the matching equations for an ``layers``-layer ENN from ``family``.

    The explicit network's equivalent (ICML 2024, Theorem 3) is matched to the DEQ's: τ̃_L = γ*
    and α̃_{L,i} = α*_i (CK matching), or the β/κ analogues (NTK matching), solved by multi-start
    Levenberg–Marquardt at high precision.  Solutions related by a symmetry of the matching
    equations (a sign flip or mirror of one layer's parameters, a layer rescaling of a homogeneous
    family) are reported once, by the canonical member of their orbit; ``Design.symmetries``
    names the symmetries found and ``depth_rule["normalization"]`` says which parameters were
    fixed, to what, and why.

    Args:
      deq_activation: an activation (then σ_a², σ_b², τ0, dps, trainable set the problem), a
        :class:`DEQProblem`, or a computed :class:`DEQCoefficients` (reused as is).
      family: the ENN's activation family: ``hard_tanh``, ``leaky_relu``, ``polynomialD`` or an
        expression in ``x`` with parameters (``"a*tanh(b*x)"``); see ``deqrmt families``.
      layers: the ENN's depth; None applies the depth rule (1 if α*₂ = α*₃/2, else 2) for CK
        matching, and its β analogue for NTK matching.
      kernel: ``"ck"`` or ``"ntk"``.
      sigma_a2, sigma_b2, tau0, dps, trainable: the DEQ problem, as for :func:`deq_coefficients`.
      starts: number of multi-start points of the root search.
      seed: seed of the multi-start points.
      progress: if given, called with a short line before each multi-start.
      certify: prove each solution by a Krawczyk step on the matching system
        (:mod:`._design_proof`): ``solution.proof`` says ``certified`` with the parameters as
        balls, or why not; False skips it (``proof`` None).

    Returns:
      A ``Design``: ``solutions`` (one ``DesignSolution`` per orbit, with ``params``, one
      mapping of parameter name → decimal string per layer, and the ``residual``),
      ``symmetries``, ``equations`` (the matching equations as text), ``depth_rule``, ``deq``
      (the :class:`DEQCoefficients` matched) and ``to_dict()``/``to_json()`` (what ``deqrmt
      design --json`` prints).

    Raises:
      InvalidArgument: an unknown kernel or family, a family with too few parameters to match,
        or no real solution found.
      ContractionError, UnknownActivation, ParseError: as for :func:`deq_coefficients`.

    Example:
      >>> d = design_enn("tanh", "hard_tanh", dps=15, starts=2)
      >>> d.symmetries, len(d.solutions)
      (('a → -a (φ → -φ)',), 1)
      >>> sorted(d.solutions[0].params[0])
      ['a', 'c']
    """
    # the boundary check (deqrmt._arguments): types and budgets before any work
    _arguments.text(family, "family", "a family name or expression, e.g. 'a*tanh(b*x)'")
    _arguments.choice(kernel, "kernel", ("ck", "ntk"))
    if layers is not None:
        _arguments.integer(layers, "layers", 1, MAX_LAYERS)
    _arguments.integer(starts, "starts", 1, MAX_STARTS)
    seed = _arguments.seed(seed)
    _arguments.optional_callable(progress, "progress")
    certify = _arguments.boolean(certify, "certify")
    deq: Activation | DEQProblem | DEQCoefficients = (
        deq_activation
        if isinstance(deq_activation, DEQCoefficients | DEQProblem)
        else get_activation(deq_activation, "deq_activation")
    )
    try:
        fam = get_family(family)  # refused before the DEQ is solved
    except DeqrmtError as e:
        if str(e).startswith("family"):
            raise
        raise type(e)(f"family={_arguments.show(family)}: {e}") from None
    budget = SearchBudget()
    try:
        return _design(
            deq, fam, layers=layers, kernel=kernel, sigma_a2=sigma_a2,
            sigma_b2=sigma_b2, tau0=tau0, dps=dps, trainable=trainable, starts=starts, seed=seed,
            progress=progress, budget=budget, certify=certify,
        )  # fmt: skip
    except OutOfBudget:
        raise budget.exceeded(f"the design of the {fam.name!r} ENN") from None


def _design(
    deq_activation: Activation | DEQProblem | DEQCoefficients,
    fam: Family,
    *,
    layers: int | None,
    kernel: str,
    sigma_a2: ExactInput,
    sigma_b2: ExactInput | None,
    tau0: ExactInput,
    dps: int,
    trainable: Sequence[str],
    starts: int,
    seed: int,
    progress: Callable[[str], None] | None,
    budget: SearchBudget,
    certify: bool = True,
) -> Design:
    """The steps of one design, in order (the module docstring says what each does)."""
    if isinstance(deq_activation, DEQCoefficients):
        deq = deq_activation
    else:
        deq = deq_coefficients(deq_activation, sigma_a2, sigma_b2, tau0, dps, trainable=trainable)
    rule, layers = _depth(deq, layers, kernel)
    s = DesignSetting(deq, fam, layers, kernel, "B" in deq.trainable, budget, progress)
    ev = FamilyEvaluator(fam, budget)
    names, targets = deq_targets(deq, kernel)
    values = matched_values(s, ev)
    sample = sampler(fam, seed)
    ctx = mpmath.MPContext()
    ctx.dps = s.dps + 10
    _refuse_beyond_budget(s, ev, ctx, starts)
    active = active_equations(s, ctx, values, sample, targets)
    equations = tuple(f"enn.{names[i]} = deq.{names[i]}" for i in active)
    residual_in = residuals(s, ctx, values, targets, active)
    found, fixed, nullity = _search(s, ctx, residual_in, sample, starts)
    if not found:
        raise InvalidArgument(
            f"no real solution found for {fam.name} × {layers} layer(s) matching the {kernel.upper()} "
            f"of the {deq.activation.name} DEQ ({starts} starts); try another family or more layers."
        )
    polished, hi = _polish(s, found, fixed, residual_in)
    transforms, rescale = _find_symmetries(s, ctx, values, polished[0][0], sample, nullity)
    symmetries = _describe(fam, transforms, rescale, layers, seed)
    reps = _orbits(s, polished, transforms, rescale, ctx, hi)
    solutions = _solutions(s, reps, fixed, rescale, hi, active, certify)
    if fixed:
        rule = dict(
            rule,
            normalization=_normalization_text(
                fam, fixed, s.npar, layers, rescale, nullity, reps[0][1], bool(transforms)
            ),
        )
    return Design(
        deq, fam, layers, kernel, equations, rule, tuple(solutions), s.input_trainable,
        tuple(symmetries),
    )  # fmt: skip


def _depth(deq: DEQCoefficients, layers: int | None, kernel: str) -> tuple[JSONObject, int]:
    """The depth rule (one layer suffices iff α*₂ = α*₃/2, to the digits computed) and the
    depth used: ``layers``, or the rule's minimum when None; one layer is refused for a CK
    the rule says it cannot match."""
    dps = deq.dps
    v = deq.values
    with mpmath.workdps(dps + 10):
        a2, a3 = v["alpha_2"].value, v["alpha_3"].value
        gap = abs(a2 - a3 / 2)
        one_ok = gap <= mpmath.mpf(10) ** (-(dps - 3)) * max(abs(a3), mpmath.mpf(10) ** (-dps))
    rule = {
        "alpha_2": v["alpha_2"].text,
        "alpha_3_over_2": mpmath.nstr(a3 / 2, dps),
        "one_layer_suffices": bool(one_ok),
        "min_layers": 1 if one_ok else 2,
        "statement": "a one-layer ENN has alpha~_{1,2} = alpha~_{1,3}/2; one layer suffices iff alpha*_2 = alpha*_3/2",
    }
    if layers is None:
        layers = 1 if one_ok else 2
    if layers == 1 and not one_ok and kernel == "ck":
        raise InvalidArgument(
            f"a one-layer ENN cannot match this DEQ's CK: it has α̃₂ = α̃₃/2, but α*₂ = {v['alpha_2'].text} "
            f"≠ α*₃/2 = {mpmath.nstr(a3 / 2, 12)}; use layers=2."
        )
    return rule, layers


def _refuse_beyond_budget(
    s: DesignSetting, ev: FamilyEvaluator, ctx: EngineContext, starts: int
) -> None:
    """Refuse a design whose typical cost is beyond the budget, before any work."""
    estimate = estimate_work(ev, ctx, s.dps, s.deq.tau0, s.layers, s.npar, starts)
    s.budget.refuse(
        f"the design ({s.layers} layer(s) of {s.fam.name!r}, dps={s.dps}, starts={starts})",
        estimate,
    )
    s.say(
        f"budget: {s.budget.limit:,.0f} work units (one unit: the family at one quadrature node "
        f"at {ctx.dps} digits); this design needs about {estimate:,.0f}"
    )


def _search(
    s: DesignSetting,
    ctx: EngineContext,
    residual_in: Residuals,
    sample: Callable[[], list[float]],
    starts: int,
) -> tuple[list[Num], dict[int, Num], int]:
    """The multi-start search: ``(found, fixed, nullity)``, the solutions, the parameters held
    fixed (index → value) and the number of degenerate directions at the first solution."""
    dps, layers, n_all, progress = s.dps, s.layers, s.layers * s.npar, s.progress
    tol = ctx.mpf(10) ** (-(dps + 5))
    fixed: dict[int, Num] = {}
    found = multistart(
        ctx, residual_in, n_all, fixed, sample, layers, min(starts, 4), tol, dps,
        progress, "probe", precise_first=True,
    )  # fmt: skip
    # A family with a scaling symmetry (leaky ReLU is positively homogeneous: scaling one layer
    # up and the next down changes nothing) has a continuum of solutions; fix the degenerate
    # directions by normalising leading parameters to 1 and solve again for isolated solutions.
    nullity, fix_idx = _nullity(ctx, residual_in(ctx), found[0][0]) if found else (0, [])
    if nullity:
        x_first = found[0][0]
        # ±1 first (a pure normalisation for a scaling symmetry), then the first solution's own
        # values rounded to two digits (a point near the solution set, so still solvable).
        for choice in ("unit", "rounded"):
            fixed = {
                j: (
                    ctx.sign(x_first[j])
                    if choice == "unit"
                    else ctx.mpf(mpmath.nstr(x_first[j], 2))
                )
                for j in fix_idx
            }
            found = multistart(
                ctx, residual_in, n_all, fixed, sample, layers, starts, tol, dps,
                progress, f"search with {len(fixed)} parameter(s) fixed",
            )  # fmt: skip
            if found:
                break
    elif starts > 4:
        found = multistart(
            ctx, residual_in, n_all, fixed, sample, layers, starts, tol, dps,
            progress, "search",
        )  # fmt: skip
    return found, fixed, nullity


def _polish(
    s: DesignSetting, found: list[Num], fixed: dict[int, Num], residual_in: Residuals
) -> tuple[list[tuple[list[Num], list[Num], Num]], Num]:
    """Each solution polished at dps + 25 digits (the digits that agree are the ones reported):
    ``([(x, x_hi, residual_hi), …], the precise context)``, in the order of x."""
    dps = s.dps
    hi = mpmath.MPContext()
    hi.dps = dps + 25
    r_hi = residual_in(hi)
    n_all = s.layers * s.npar
    fixed_hi = {j: hi.mpf(v) for j, v in fixed.items()}

    def r_hi_free(free: list[Num]) -> list[Num]:
        return r_hi(_expand(free, fixed_hi, n_all))

    r_fp = residual_in(FLOAT)
    fixed_fp = {j: float(v) for j, v in fixed.items()}

    def r_fp_free(free: list[Num]) -> list[Num]:
        return r_fp(_expand(free, fixed_fp, n_all))

    polished = []
    for x, _ in sorted(found, key=lambda s: [float(t) for t in s[0]]):
        free0 = [hi.mpf(t) for j, t in enumerate(x) if j not in fixed]
        # from a solution good to ~10^-(dps+5): Newton's chord steps with a float64 Jacobian
        # gain ~10 digits each (Levenberg–Marquardt if they do not)
        try:
            near = [float(t) for t in free0]
            jac = _jacobian(FLOAT, r_fp_free, near, len(r_fp_free(near)))
        except (ValueError, ZeroDivisionError, OverflowError, TypeError):
            jac = None
        tol_hi = hi.mpf(10) ** (-(dps + 22))
        if jac is None:
            free_h, nh = _solve_lm(hi, r_hi_free, free0, tol_hi, lam0="1e-12")
        else:
            free_h, nh = refine(hi, r_hi_free, free0, tol_hi, jac)
        polished.append((x, _expand(free_h, fixed_hi, n_all), nh))
    return polished, hi


def _find_symmetries(
    s: DesignSetting,
    ctx: EngineContext,
    values: Values,
    x: list[Num],
    sample: Callable[[], list[float]],
    nullity: int,
) -> tuple[list[_Transform], bool]:
    """The symmetries of the matching equations, tested at the solution ``x`` (and at a random
    point): the per-layer transforms, and whether a layer rescaling is one (only where it
    accounts for every degenerate direction)."""
    s.say("testing sign, mirror and rescaling symmetries")
    try:
        probe = [ctx.mpf(t) for l in range(s.layers) for t in sample()]
    except NoConvergence:
        probe = None
    transforms, rescale = _symmetries(
        ctx, s.fam, values, x, probe, s.layers, ctx.mpf(10) ** (-s.dps)
    )
    return transforms, rescale and nullity == s.layers - 1


def _orbits(
    s: DesignSetting,
    polished: list[tuple[list[Num], list[Num], Num]],
    transforms: list[_Transform],
    rescale: bool,
    ctx: EngineContext,
    hi: Num,
) -> list[tuple[list[Num], list[Num], Num, int]]:
    """One representative per orbit, ``(y, y_hi, residual, copies)``: each solution
    canonicalised, repeats dropped (counted), the largest parameters first."""
    group: list[tuple[_Transform | None, ...]] = list(
        itertools.product([None, *transforms], repeat=s.layers)
    )[:4096]
    reps: list[tuple[list[Num], list[Num], Num, int]] = []
    for x, xh, nh in polished:
        y, yh = _canonical((x, xh), group, s.npar, s.layers, rescale, ctx, hi)
        for k, (_, zh, zn, count) in enumerate(reps):
            if hi.norm([a - b for a, b in zip(yh, zh, strict=True)]) <= hi.mpf("1e-8") * hi.norm(
                zh
            ):
                reps[k] = (reps[k][0], zh, max(zn, nh), count + 1)
                break
        else:
            reps.append((y, yh, nh, 1))
    return sorted(reps, key=lambda r: [-float(t) for t in r[1]])


def _params_text(
    s: DesignSetting, y: list[Num], yh: list[Num], fixed: dict[int, Num], rescale: bool, hi: Num
) -> list[dict[str, str]]:
    """One orbit's parameters as decimal strings, layer by layer: the digits on which the
    working-precision and the polished solution agree (a fixed parameter to 3 digits)."""
    params = []
    for l in range(s.layers):
        layer = {}
        for j, p in enumerate(s.fam.params):
            idx = l * s.npar + j
            a, b = y[idx], yh[idx]
            if idx in fixed and not rescale:
                layer[str(p)] = mpmath.nstr(b, 3)
                continue
            n = s.dps
            while n > 1 and mpmath.nstr(a, n, strip_zeros=False) != mpmath.nstr(
                b, n, strip_zeros=False
            ):
                n -= 1
            layer[str(p)] = hi.nstr(b, n)
        params.append(layer)
    return params


def _solutions(
    s: DesignSetting,
    reps: list[tuple[list[Num], list[Num], Num, int]],
    fixed: dict[int, Num],
    rescale: bool,
    hi: Num,
    active: list[int],
    certify: bool,
) -> list[DesignSolution]:
    """The reported solutions, one per orbit, each with its Krawczyk proof when ``certify``."""
    npar, layers = s.npar, s.layers
    solutions: list[DesignSolution] = []
    for y, yh, nh, count in reps:
        params = _params_text(s, y, yh, fixed, rescale, hi)
        values = tuple(tuple(yh[l * npar : (l + 1) * npar]) for l in range(layers))
        proof = None
        if certify:
            s.say(f"Krawczyk proof of solution {len(solutions) + 1}")
            held = sorted(fixed)
            point = list(yh)
            for j in held:  # the exact value reported ("0.64"), not its binary neighbour
                point[j] = Fraction(params[j // npar][str(s.fam.params[j % npar])])
            if rescale:  # the normalisation holds max_j |θ_{l,j}| = 1 in every layer but the last
                held = [_largest(yh, l, npar) for l in range(layers - 1)]
            proof = _proof(
                s.fam, point, held, layers, s.kernel, active, s.deq, s.input_trainable, s.budget
            )
        solutions.append(
            DesignSolution(tuple(params), values, nh, count, proof=proof, ball_digits=s.dps + 10)
        )
    return solutions


def _largest(y: Sequence[Num], layer: int, npar: int) -> int:
    """The flat index of ``layer``'s parameter largest in absolute value."""
    return max(range(layer * npar, (layer + 1) * npar), key=lambda j: abs(y[j]))


def _proof(
    fam: Family,
    yh: Sequence[Num],
    held: Sequence[int],
    layers: int,
    kernel: str,
    active: Sequence[int],
    deq: DEQCoefficients,
    input_trainable: bool,
    budget: SearchBudget,
) -> DesignProof:
    """The Krawczyk proof of one solution against the DEQ's proven balls."""
    if not deq.certified:
        return DesignProof(
            False, reason=f"the DEQ's coefficients are not proven ({deq.reason or 'no proof'})"
        )
    keys = ("gamma_star", "alpha_1", "alpha_2", "alpha_3")
    if kernel != "ck":
        keys = ("kappa_star", "beta_1", "beta_2", "beta_3")
    matched = [deq[k] for k in keys]  # deq[...] raises a named error when the NTK diverges
    for k, m in zip(keys, matched, strict=True):
        if m.radius is None:
            return DesignProof(False, reason=f"the DEQ's {k} is not proven (no Arb ball)")
    with workprec(bits_for_digits(deq.dps + 40)):  # squaring a proven ball at its own precision
        targets = [matched[0].ball ** 2, *(m.ball for m in matched[1:])]
    return prove_design_solution(
        fam, yh, held, layers=layers, kernel=kernel, active=active, targets=targets,
        tau0=deq.tau0, input_trainable=input_trainable, dps=deq.dps, budget=budget,
    )  # fmt: skip

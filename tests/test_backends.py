"""Every backend evaluates φ through the one printer and agrees with the mpmath engine (issue 20).

Activations come from the parser's own strategy (:func:`deqrmt.testing.activations`, and the
library with random parameters).  The reference is the engine's own code for each piece (the
printer's scalar dialect on an mpmath context, as ``numeric._moments`` compiles it, at 30 digits
beyond the cancellation of e^(±1400)), itself checked against SymPy's ``evalf``, which shares no code with the printer.  Against it:
the engine's float context (``FLOAT``: ``mpmath.fp`` with float-accurate ``log1p``, ``expm1``, …)
running the stable forms piece by piece (``deqrmt codegen``'s pieces), Arb balls
at 64 bits (the encloser's pieces; the reference must lie in the ball), the numpy context (the
float sweep's pieces and the joined φ), and the torch context on CPU float64 (the Monte
Carlo's φ_c).

Points: every kink, its float neighbours and points 1e-9 and 1e-3 away, a few ordinary points,
and large |x| (±50, ±700), where exponentials overflow in floats unless the stable forms hold.
Floats agree to 1e-12 of a first-order rounding scale Σ(|t| + |x t'|) over the piece's terms t
(the rounding of x itself moves t by |x t'|·2⁻⁵³; cancellation between terms is no error).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import mpmath
import numpy as np
import pytest
import sympy as sp
from flint import arb
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import deqrmt.testing as dt
from deqrmt.numeric._arb import ArbContext, to_arb, workprec
from deqrmt.numeric._contexts import (
    NUMPY,
    NumpyContext,
    activation_expressions,
    activation_functions,
)
from deqrmt.numeric._float_context import FLOAT
from deqrmt.numeric._printer import ARRAY_NAMES, STABLE_FORMS, compile_function, function_source
from deqrmt.numeric._sweep import piece_function
from deqrmt.symbolic import X, library_activation, parse_activation

try:
    import torch

    from deqrmt.validate._pointwise import CenteredActivation
    from deqrmt.validate._torch_context import TORCH
except ImportError:  # torch is in [validate]
    torch = None  # type: ignore[assignment]

needs_torch = pytest.mark.skipif(torch is None, reason="needs torch ([validate])")

REL = 1e-12
TINY = 1e-290  # below this the floats are subnormal or zero: no relative digits to compare


def _ctx(dps: int) -> Any:
    ctx = mpmath.MPContext()
    ctx.dps = dps
    return ctx


#: the engine's plain forms at 30 digits, plus guard digits for e^(−1400) beside 1 (softplus of
#: a·x + b at |x| = 700): the floats' stable forms resolve what 30 digits alone would round away
MP = _ctx(30 + 620)


def _points(act: Any) -> list[float]:
    pts = {0.0, 0.5, -0.5, 1.0, -1.0, 3.0, -3.0, 50.0, -50.0, 700.0, -700.0}
    for k in act.kinks:
        kf = float(k)
        pts |= {kf, math.nextafter(kf, -math.inf), math.nextafter(kf, math.inf)}
        pts |= {kf + d for d in (-1e-3, -1e-9, 1e-9, 1e-3)}
    return sorted(pts)


def _piece_index(act: Any, x: float) -> int:
    """The piece holding x, decided exactly (the left piece at a kink)."""
    r = sp.Rational(Fraction(x))
    return sum(1 for k in act.kinks if bool(r > k))


def _terms(e: sp.Expr) -> tuple[sp.Expr, ...]:
    return tuple(sp.Add.make_args(sp.expand(e, deep=False)))


class _Reference:
    """φ, φ' and their rounding scales at x, from the engine's per-piece code at 30 digits."""

    def __init__(self, act: Any) -> None:
        self.act = act
        self.fns = []
        for p, d in zip(act.pieces, act.derivative_pieces, strict=True):
            tp, td = _terms(p.expr), _terms(d.expr)
            self.fns.append(
                (
                    compile_function("phi_dphi_piece", [X], [p.expr, d.expr]),
                    compile_function(
                        "scale", [X],
                        [*tp, *(X * sp.diff(t, X) for t in tp), *td, *(X * sp.diff(t, X) for t in td)],
                    ),
                    len(tp), p.expr, d.expr,
                )
            )  # fmt: skip

    def __call__(self, x: float) -> tuple[Any, Any, float, float, int]:
        i = _piece_index(self.act, x)
        fn, scale_fn, n_phi, _, _ = self.fns[i]
        v, dv = fn(MP, MP.mpf(x))
        s = [abs(float(t)) for t in scale_fn(MP, MP.mpf(x))]
        return v, dv, sum(s[: 2 * n_phi]) + abs(float(v)), sum(s[2 * n_phi :]) + abs(float(dv)), i


def _close(got: float, want: Any, scale: float, what: str) -> None:
    err = abs(got - float(want))
    assert math.isfinite(got) and err <= REL * scale + TINY, (what, got, want, scale)


def _contains(ball: arb, want: Any, scale: float, what: str) -> bool:
    """The ball holds the reference, up to the reference's own rounding, and is narrow; False
    for a non-finite ball (python-flint 0.9's ``ball**2`` is nan when the ball holds 0 and a
    negative number: an enclosure lost, never a wrong one)."""
    if not ball.is_finite():
        return False
    with workprec(2400):  # the reference as an exact ball (no rounding to 64 bits)
        exact = to_arb(Fraction(*mpmath.libmp.to_rational(MP.mpf(want)._mpf_)))
        wide = ball + arb(0, 1e-25 * scale)
        assert wide.contains(exact), (what, ball, want)
    # Arb's plain forms lose relative accuracy in a tail (log(1 + e^(-700))): not vacuous
    assert float(ball.rad()) <= 1e-10 * (scale + 1), ("width " + what, ball)
    return True


def _off_kink(act: Any, x: float) -> bool:
    """φ' is compared only where every backend picks the same piece (away from float(kink))."""
    return all(abs(x - float(k)) > 1e-12 * max(1.0, abs(float(k))) for k in act.kinks)


_ACTIVATIONS = st.one_of(
    dt.activations(cheap=False, max_terms=3),
    dt.activations(kinds=("smooth",), cheap=False),
    dt.library_activations(lipschitz=False),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(act=_ACTIVATIONS, extra=st.lists(st.floats(-60, 60), max_size=4))
def test_every_backend_agrees_with_the_engine(act: Any, extra: list[float]) -> None:
    ref = _Reference(act)
    xs = sorted(set(_points(act)) | set(extra))
    refs = [ref(x) for x in xs]
    # the reference itself, against SymPy's evalf (no printer involved; |x| ≤ 60, where evalf's
    # adaptive precision stays small: 1 + erf(−495) needs 10⁵ digits)
    for x, (v, dv, s, ds, i) in zip(xs, refs, strict=True):
        if abs(x) > 60 or x not in (0.0, 0.5, -3.0, *extra):
            continue
        _, _, _, p, d = ref.fns[i]
        for e, want, sc in ((p, v, s), (d, dv, ds)):
            exact = sp.N(e.subs(X, sp.Rational(Fraction(x))), 40)
            assert abs(complex(exact) - complex(want)) <= 1e-25 * sc + 1e-300, (act.name, x)

    # deqrmt codegen's pieces (the stable forms, in the scalar dialect) run on the float context
    # (mpmath.fp's own log1p is off by 1.3e-10 relative in softplus at x = -14: issue 21)
    fp_fns = [compile_function("phi_dphi_piece", [X], [p.expr, d.expr], rewrite=STABLE_FORMS)
              for p, d in zip(act.pieces, act.derivative_pieces, strict=True)]  # fmt: skip
    phi_np, dphi_np = activation_functions(act)
    with np.errstate(all="ignore"):  # branches not selected may overflow; never selected
        joined = (phi_np(NUMPY, np.array(xs))[0], dphi_np(NUMPY, np.array(xs))[0])
    arb_ctx = ArbContext(64)
    arb_fns = [compile_function("phi_dphi_piece", [X], [p.expr, d.expr])
               for p, d in zip(act.pieces, act.derivative_pieces, strict=True)]  # fmt: skip
    finite = 0
    for j, (x, (v, dv, s, ds, i)) in enumerate(zip(xs, refs, strict=True)):
        where = f"{act.name} at x = {x!r}"
        fv, fdv = fp_fns[i](FLOAT, x)
        _close(float(fv), v, s, "fp φ " + where)
        _close(float(fdv), dv, ds, "fp φ' " + where)
        _close(float(np.broadcast_to(joined[0], (len(xs),))[j]), v, s, "numpy φ " + where)
        with np.errstate(all="ignore"):
            pv, pdv = piece_function(act.pieces[i].expr)(NUMPY, np.array([x]))
        _close(float(np.broadcast_to(pv, (1,))[0]), v, s, "sweep piece φ " + where)
        _close(float(np.broadcast_to(pdv, (1,))[0]), dv, ds, "sweep piece φ' " + where)
        with workprec(64):
            balls = arb_fns[i](arb_ctx, arb(x))
        for ball, want, sc in zip(balls, (v, dv), (s, ds), strict=True):
            finite += _contains(arb_ctx.mpf(ball), want, sc, "Arb " + where)
        if _off_kink(act, x):
            _close(float(np.broadcast_to(joined[1], (len(xs),))[j]), dv, ds, "numpy φ' " + where)
    assert finite >= len(xs), (act.name, finite, len(xs))  # most balls are finite
    if torch is not None:
        ca = CenteredActivation.from_activation(act, 0.0)
        t = torch.tensor(xs, dtype=torch.float64)
        got, dgot = ca.phi(t), ca.dphi(t)
        assert got.dtype == torch.float64 and got.shape == t.shape
        for j, (x, (v, dv, s, ds, _)) in enumerate(zip(xs, refs, strict=True)):
            _close(float(got[j]), v, s, f"torch φ {act.name} at x = {x!r}")
            if _off_kink(act, x):
                _close(float(dgot[j]), dv, ds, f"torch φ' {act.name} at x = {x!r}")


# --- the array dialect and its contexts --------------------------------------------------------
#
# Every case below is written for any array context: it makes its arguments with the backend's
# own constructor and states its tolerance in the context's declared precision ``ctx.eps`` (and
# the smallest normal number of the result's dtype), so a new context passes with its own
# tolerance once it is in ``array_backends()`` (``test_a_float32_context_passes_the_cases``
# proves it with a throwaway float32 context).


@dataclass(frozen=True)
class Backend:
    """An array context, how its tests make an argument, and how they read a result back."""

    name: str
    ctx: Any
    array: Callable[[list[float]], Any]

    def host(self, out: Any, n: int) -> np.ndarray:
        """A result as a float64 numpy array of n lanes (a constant is broadcast)."""
        out = out.cpu() if hasattr(out, "cpu") else out
        return np.broadcast_to(np.asarray(out, dtype=np.float64), (n,))

    def tiny(self, out: Any) -> float:
        """The smallest normal number of the result's dtype: below it no relative digits."""
        dtype = out.dtype if hasattr(out, "dtype") else np.float64
        if torch is not None and isinstance(dtype, torch.dtype):
            return float(torch.finfo(dtype).tiny)
        return float(np.finfo(dtype).tiny)


#: 1e-13 relative at float64: the whitelist's functions, evaluated elementwise in the context
WHITELIST_EPS = 450
#: 1e-15 relative at float64: logistic and softplus from e^(−|u|), a few roundings
STABLE_EPS = 5


def array_backends() -> list[Backend]:
    out = [Backend("numpy", NUMPY, lambda xs: np.array(xs, dtype=np.float64))]
    if torch is not None:
        out.append(Backend("torch", TORCH, lambda xs: torch.tensor(xs, dtype=TORCH.dtype)))
    return out


def check_names(b: Backend) -> None:
    missing = sorted(n for n in ARRAY_NAMES if not hasattr(b.ctx, n))
    assert missing == []


def check_whitelist(b: Backend, expr: sp.Expr) -> None:
    """The array dialect on ``b`` agrees with the scalar dialect on mpmath at 30 digits."""
    xs = [-3.5, -1.0, -0.25, 0.0, 0.5, 1.0, 2.0, 4.5]
    plain = compile_function("f", [X], [expr])
    fast = compile_function("f", [X], [expr], rewrite=STABLE_FORMS, arrays=True)
    assert _emitted_names(function_source("f", [X], [expr], arrays=True)) <= ARRAY_NAMES
    with np.errstate(all="ignore"):
        out = fast(b.ctx, b.array(xs))[0]
    got = b.host(out, len(xs))
    rel = WHITELIST_EPS * float(b.ctx.eps)
    ctx30 = _ctx(30)
    for x, g in zip(xs, got, strict=True):
        try:
            want = complex(plain(ctx30, ctx30.mpf(x))[0])
        except (ValueError, ZeroDivisionError, TypeError):  # a pole, or None off every branch
            assert not math.isfinite(g)
            continue
        if want.imag != 0 or not math.isfinite(want.real):
            assert not math.isfinite(g) or abs(want.imag) > 0, (expr, x, g, want)
            continue
        assert abs(g - want.real) <= rel * max(1.0, abs(want.real)), (expr, x, g, want)


def check_stable_forms(b: Backend) -> None:
    """logistic and softplus are finite in every lane and right to a few roundings."""
    u = [-1e4, -745.5, -710.0, -30.0, 0.0, 30.0, 710.0, 1e4]
    arg = b.array(u)
    for name in ("logistic", "softplus"):
        out = getattr(b.ctx, name)(arg)
        got, tiny = b.host(out, len(u)), b.tiny(out)
        want = [
            float(1 / (1 + mpmath.exp(-mpmath.mpf(v))))
            if name == "logistic"
            else float(mpmath.log1p(mpmath.exp(mpmath.mpf(v))))
            for v in u
        ]
        assert np.all(np.isfinite(got)), (name, got)
        for g, w in zip(got, want, strict=True):
            assert abs(g - w) <= STABLE_EPS * float(b.ctx.eps) * abs(w) + tiny, (name, g, w)


_BACKENDS = array_backends()


@pytest.mark.parametrize("b", _BACKENDS, ids=lambda b: b.name)
def test_array_contexts_implement_every_name_the_printer_emits(b: Backend) -> None:
    check_names(b)


def _emitted_names(src: str) -> set[str]:
    import ast

    return {
        n.attr
        for n in ast.walk(ast.parse(src))
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "ctx"
    }


_WHITELIST_SAMPLE = [
    sp.exp(X), sp.log(X), sp.sqrt(X), sp.erf(X), sp.erfc(X), sp.sign(X), sp.Abs(X),
    sp.sin(X), sp.cos(X), sp.tan(X), sp.sinh(X), sp.cosh(X), sp.tanh(X), sp.asin(X / 9),
    sp.acos(X / 9), sp.atan(X), sp.atan2(X, X - 5), sp.asinh(X), sp.acosh(X + 9), sp.atanh(X / 9),
    sp.gamma(X), sp.lowergamma(sp.Rational(1, 3), X), sp.uppergamma(sp.Rational(1, 3), X), sp.besseli(1, X), sp.besselj(1, X),
    sp.besselk(1, X), sp.Heaviside(X), sp.Max(X, 1, X**2), sp.Min(X, -1),
    sp.Piecewise((X, sp.And(X > 0, X < 2)), (-X, sp.Or(X < -3, sp.Eq(X, -1))), (1, True)),
    sp.Piecewise((X, sp.Not(sp.Eq(X, 1)))), sp.pi * X + sp.E + sp.EulerGamma,
    sp.log(1 + sp.exp(X)), sp.exp(X) / (1 + sp.exp(X)) ** 2, sp.exp(X) - 1,
]  # fmt: skip


def test_the_sample_covers_the_whole_whitelist() -> None:
    from deqrmt.numeric._printer import _FUNCTIONS, stable_forms

    seen = {type(n) for e in _WHITELIST_SAMPLE for n in sp.preorder_traversal(stable_forms(e))}
    assert {c.__name__ for c in _FUNCTIONS - seen} == set()


@pytest.mark.parametrize("b", _BACKENDS, ids=lambda b: b.name)
@pytest.mark.parametrize("expr", _WHITELIST_SAMPLE, ids=str)
def test_array_contexts_agree_with_mpmath_on_the_whitelist(b: Backend, expr: sp.Expr) -> None:
    check_whitelist(b, expr)


@pytest.mark.parametrize("b", _BACKENDS, ids=lambda b: b.name)
def test_stable_forms_do_not_overflow_in_any_lane(b: Backend, recwarn: Any) -> None:
    check_stable_forms(b)
    assert len(recwarn) == 0  # (warnings are errors here anyway: none was raised)


class _Float32Numpy(NumpyContext):
    """A throwaway float32 context: the numpy context's functions, their results in float32.

    What a new context needs to pass the cases above: the names, and its own ``eps``.
    """

    eps = float(np.finfo(np.float32).eps)

    def __getattribute__(self, name: str) -> Any:
        value = super().__getattribute__(name)
        if name not in ARRAY_NAMES or not callable(value) or name == "mpf":
            return value

        def in_float32(*args: Any) -> Any:
            out = value(*args)
            kind = getattr(out, "dtype", None)
            return out.astype(np.float32) if kind is not None and kind.kind == "f" else out

        return in_float32


def test_a_float32_context_passes_the_cases() -> None:
    """A new context passes the backend cases with its own tolerance: no case names a dtype."""
    b = Backend("float32", _Float32Numpy(), lambda xs: np.array(xs, dtype=np.float32))
    check_names(b)
    with np.errstate(all="ignore"):
        check_stable_forms(b)
    for expr in _WHITELIST_SAMPLE:
        check_whitelist(b, expr)
    # the cases are not vacuous at float32: the float64 tolerance would refuse its results
    out = b.ctx.exp(b.array([0.1]))
    assert out.dtype == np.float32
    assert abs(float(out[0]) - math.exp(0.1)) > WHITELIST_EPS * NUMPY.eps


@needs_torch
def test_torch_context_keeps_device_dtype_and_takes_constants() -> None:
    src_exprs = [sp.Piecewise((0, X <= 0), (1, True)), sp.Integer(2), sp.sqrt(2) * X, sp.gamma(X)]
    fn = compile_function("f", [X], src_exprs, arrays=True)
    t = torch.tensor([-1.5, 0.0, 2.0], dtype=torch.float32)
    step, two, scaled, gam = fn(TORCH, t)
    assert step.tolist() == [0.0, 0.0, 1.0]
    assert two == 2 and not isinstance(two, torch.Tensor)  # a constant stays a number
    assert scaled.dtype == torch.float32 and gam.dtype == torch.float32
    assert gam.device == t.device and float(gam[2]) == 1.0
    assert TORCH.piecewise((False, 1), (True, 2.5)) == 2.5  # constants only: Python's branching


def test_the_joined_activation_takes_the_left_piece_at_a_kink() -> None:
    phi, dphi = activation_expressions(library_activation("relu"))
    f = compile_function("f", [X], [phi, dphi], arrays=True)
    assert [float(v) for v in f(NUMPY, np.array([0.0]))[1]] == [0.0]  # φ'(0) from the left
    assert float(np.asarray(f(NUMPY, np.array([1e-300]))[1])[0]) == 1.0
    g = activation_functions(parse_activation("min(max(x, -1), 1)"))[1]
    assert np.asarray(g(NUMPY, np.array([-1.0, 1.0, 0.5, 1.5]))[0]).tolist() == [0, 1, 1, 0]


@pytest.mark.skipif(torch is None or not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("spec", ["gelu", "hard_tanh", "x*tanh(softplus(x))", "relu", "elu"])
def test_torch_context_on_cuda_matches_cpu(spec: str) -> None:
    act = parse_activation(spec) if "(" in spec else library_activation(spec)
    ca = CenteredActivation.from_activation(act, 0.125)
    t = torch.linspace(-40, 40, 4001, dtype=torch.float64)
    for f in (ca.phi, ca.dphi):
        on_gpu = f(t.cuda())
        assert on_gpu.device.type == "cuda" and on_gpu.dtype == torch.float64
        assert torch.allclose(on_gpu.cpu(), f(t), rtol=1e-13, atol=1e-13)

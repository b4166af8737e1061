"""``deqrmt codegen``: a standalone, readable Python module for one activation (mpmath only).

The module carries the derived formulas (coefficients, the variance map F and F', the
centering identities), the activation's closed-form moments where they exist, ``mpmath.quad``
(tanh-sinh, split at the kinks) only for the moments without one, and a verbatim copy of the
engine's root finder (:mod:`deqrmt.numeric._roots`), so it solves τ* exactly as the engine does.
All constants are exact (``ctx.mpf(p)/ctx.mpf(q)``); the precision is an argument and a private
mpmath context is used, so importing it never changes ``mpmath.mp``.

No user text reaches the module as code: the activation appears only as ``repr`` string
literals, and as code printed from its parsed SymPy expression by the one printer, which names
every variable itself (``x``, ``tau``, ``_a0``, …).  The pieces of φ and φ' and the closed forms
are printed in stable forms (:data:`~deqrmt.numeric._printer.STABLE_FORMS`: no ``exp`` of a
large argument where the value is finite), since the module integrates over the whole line in
floats to find τ*.  It does so with ``mpmath.fp``, or, where its code calls a function whose
``mpmath.fp`` version is not float-accurate (``log1p`` in softplus, ``expm1``, …), with the
engine's float context (:mod:`deqrmt.numeric._float_context`), copied verbatim.  The module
carries no date, so the same input gives the same bytes.
"""

from __future__ import annotations

import inspect
import re
import textwrap
from typing import Any

import sympy as sp

from .._version import __version__
from ..symbolic import (
    MOMENTS,
    SIGMA_A2,
    SIGMA_B2,
    TAU,
    TAU0,
    Activation,
    X,
    derive_deq,
    derive_fixed_point,
    get_activation,
    moment_set,
)
from . import _float_context, _roots
from ._fixed_point import ENGINE_MOMENTS
from ._printer import STABLE_FORMS, function_source, print_constant
from ._trainable import parse_trainable

__all__ = ["generate_module"]

_NAMES = ("phi", "d1", "d2", "sq", "sq2", "dsq")

#: A call of a function whose ``mpmath.fp`` version the engine's float context replaces.
_REPLACED = re.compile(r"\bctx\.(?:" + "|".join(_float_context.REPLACED) + r")\(")


def generate_module(
    activation: str | Activation, *, trainable: tuple[str, ...] = ("a", "A")
) -> str:
    """Source of a standalone module with ``coefficients(sigma_a2, sigma_b2, tau0, dps)``.

    The module is assembled from named parts, in this order: its header (docstring, imports,
    the activation's text as literals), the kinks, the pieces of φ and φ', the moments, the
    derived formulas, the variance map and centring, the engine's root finder (verbatim) and
    the driver ``coefficients``.
    """
    act = get_activation(activation)
    trainable = parse_trainable(trainable)
    ms = moment_set(act)
    formulas = derive_deq(trainable=trainable)
    fpm = derive_fixed_point(center=True)
    closed = [n for n in _NAMES if ms[n].closed_form is not None]
    open_ = [n for n in _NAMES if ms[n].closed_form is None]
    exprs = formulas.as_dict()
    names = formulas.m.names()
    args = sorted(set().union(*(e.free_symbols for e in exprs.values())), key=str)
    arg_names = [names.get(a, str(a)) for a in args]
    fp_names = {**fpm.m.names(), SIGMA_A2: "sigma_a2", SIGMA_B2: "sigma_b2", TAU0: "tau_0"}
    map_exprs = [fpm.F, fpm.dF, fpm.center]
    map_args = sorted(set().union(*(e.free_symbols for e in map_exprs)), key=str)
    targets = [t for t in fpm.centered if fp_names[t] in ENGINE_MOMENTS]
    cen_exprs = [fpm.center, *(fpm.centered[t] for t in targets)]
    cen_args = sorted(set().union(*(e.free_symbols for e in cen_exprs)), key=str)
    parts = [
        _header(act, trainable, closed, open_),
        _kinks_source(act),
        _pieces_source(act),
        _moments_source(ms, closed, open_),
        function_source(
            "_formulas", args, list(exprs.values()), doc="Derived by deqrmt.symbolic.derive_deq."
        )
        + "\n\n",
        function_source(
            "_variance_map",
            map_args,
            map_exprs,
            doc="F(q), F'(q), c: deqrmt.symbolic.derive_fixed_point.",
        )
        + "\n\n",
        function_source(
            "_centered",
            cen_args,
            cen_exprs,
            doc="c and the moments of phi - c: derive_fixed_point.",
        )
        + "\n\n",
        _roots_source(),
    ]
    # the float context of the scan: mpmath.fp unless the code calls one of the functions it
    # gets wrong (then the engine's own; modules that call none keep their bytes)
    if _REPLACED.search("".join(parts[1:])):  # (the header holds user text)
        parts.insert(1, _float_context_source())
        float_ctx = "FLOAT"
    else:
        float_ctx = "mpmath.fp"
    parts.append(_driver_source(arg_names, exprs, fp_names, map_args, cen_args, targets, float_ctx))
    return "".join(parts)


def _header(
    act: Activation, trainable: tuple[str, ...], closed: list[str], open_: list[str]
) -> str:
    """The module's docstring, imports, ``__all__`` and the activation's text as literals."""
    doc = (
        "DEQ CK/NTK coefficients for one activation (generated by deqrmt; do not edit).\n\n"
        "Ling et al. (ICML 2024), Theorems 1-2: tau_*, gamma_*, alpha_*1..4, beta_*1..3, kappa_*,\n"
        f"NTK over the parameters {', '.join(trainable)}.  Moments in closed form: "
        f"{', '.join(closed) or 'none'}; by quadrature: {', '.join(open_) or 'none'}.\n"
        f"Generated by deqrmt {__version__}; needs only mpmath.  Regenerate with\n"
        "    deqrmt codegen ACTIVATION -o FILE\n"
        "with ACTIVATION = the string ACTIVATION below.\n"
    )
    # the docstring and the activation's text are string literals made by repr: no quote,
    # backslash or newline in them can end the literal
    return (
        f"{doc!r}\n\n"
        "import math\nfrom fractions import Fraction\n\nimport mpmath\n\n"
        '__all__ = ["coefficients", "moments", "ACTIVATION", "EXPRESSION"]\n\n'
        f"ACTIVATION = {act.name!r}\n"
        f"EXPRESSION = {str(act.expr)!r}\n\n"
    )


def _kinks_source(act: Activation) -> str:
    """``_kinks(ctx)``: the kinks of φ, as exact fractions where they are rational."""
    kinks = (
        ", ".join(f"({int(sp.Rational(k).p)}, {int(sp.Rational(k).q)})" for k in act.kinks)
        if all(k.is_Rational for k in act.kinks)
        else None
    )
    if kinks is None:
        return (
            "def _kinks(ctx):\n    return ["
            + ", ".join(print_constant(k) for k in act.kinks)
            + "]\n\n\n"
        )
    return f"_KINK_FRACTIONS = [{kinks}]\n\n\ndef _kinks(ctx):\n    return [ctx.mpf(p) / q for p, q in _KINK_FRACTIONS]\n\n\n"


def _pieces_source(act: Activation) -> str:
    """``_phi_i``, ``_dphi_i`` for each piece of φ, and the table ``_PIECES`` of them."""
    parts = []
    for i, (p, d) in enumerate(zip(act.pieces, act.derivative_pieces, strict=True)):
        parts.append(f"# piece {i}: {_one_line(p.lo)} < x < {_one_line(p.hi)}\n")
        parts.append(_source(f"_phi_{i}", X, p.expr) + "\n\n")
        parts.append(_source(f"_dphi_{i}", X, d.expr) + "\n\n")
    parts.append(
        "_PIECES = ["
        + ", ".join(f"(_phi_{i}, _dphi_{i})" for i in range(len(act.pieces)))
        + "]\n\n\n"
    )
    return "".join(parts)


def _moments_source(ms: Any, closed: list[str], open_: list[str]) -> str:
    """``moments(ctx, tau)``: the closed forms where they exist (``_closed``), tanh-sinh
    quadrature of Stein's form split at the kinks (``_expect``) for the others."""
    head = ""
    if closed:
        head = (
            function_source(
                "_closed",
                [TAU],
                [ms[n].closed_form for n in closed],
                doc="Closed-form moments: " + ", ".join(closed),
                labels=("tau",),
                rewrite=STABLE_FORMS,
            )
            + "\n\n"
        )
    stein = {n: MOMENTS[n][2] for n in _NAMES}
    weights = {
        n: [int(c) for c in sp.Poly(ms[n].weight, sp.Symbol("xi", real=True)).all_coeffs()[::-1]]
        for n in _NAMES
    }
    kinds = {n: MOMENTS[n][1] for n in _NAMES}
    return head + _moments_template(closed, open_, stein, weights, kinds)


def _moments_template(
    closed: list[str],
    open_: list[str],
    stein: dict[str, Any],
    weights: dict[str, list[int]],
    kinds: dict[str, Any],
) -> str:
    """The fixed text of ``_expect`` and ``moments``, with the tables that drive them."""
    return textwrap.dedent(
        f'''\
            _CLOSED = {tuple(closed)!r}
            _OPEN = {tuple(open_)!r}
            _STEIN = {stein!r}  # E[phi^(k)(tau xi)] = tau^-k E[He_k(xi) phi(tau xi)]
            _WEIGHT = {weights!r}  # He_k coefficients, lowest degree first
            _KIND = {kinds!r}


            def _expect(ctx, name, tau):
                """tanh-sinh quadrature of E[He_k(xi) g(tau xi)], split at the kinks."""
                coeffs = _WEIGHT[name]
                points = [-ctx.inf] + [k / tau for k in _kinks(ctx)] + [ctx.inf]
                total = ctx.zero
                for i, (a, b) in enumerate(zip(points[:-1], points[1:])):
                    phi, dphi = _PIECES[i]

                    def integrand(xi, phi=phi, dphi=dphi):
                        w = sum(c * xi**j for j, c in enumerate(coeffs))
                        if _KIND[name] == "phi":
                            g = phi(ctx, tau * xi)[0]
                        elif _KIND[name] == "sq":
                            g = phi(ctx, tau * xi)[0] ** 2
                        else:
                            g = dphi(ctx, tau * xi)[0] ** 2
                        return w * g * ctx.npdf(xi)

                    total += ctx.quad(integrand, [a, b])
                return total / tau ** _STEIN[name]


            def moments(ctx, tau):
                """All moments of phi (uncentered) at scale tau, in the mpmath context ctx."""
                out = {{}}
                if _CLOSED:
                    out.update(zip(_CLOSED, _closed(ctx, tau)))
                for name in _OPEN:
                    out[name] = _expect(ctx, name, tau)
                return out


            '''
    )


def _float_context_source() -> str:
    """The engine's float context, verbatim (it imports only math and mpmath, as the module
    does)."""
    src = inspect.getsource(_float_context)
    return (
        "# --- deqrmt.numeric._float_context, verbatim ---\n"
        + src.split("\nimport mpmath\n", 1)[1]
        + "\n\n"
    )


def _roots_source() -> str:
    """The engine's root finder, verbatim (it imports only math): one solver, not a copy of its
    idea."""
    roots_src = inspect.getsource(_roots)
    return (
        "# --- deqrmt.numeric._roots, verbatim ---\n"
        + roots_src.split("\nimport math\n", 1)[1]
        + "\n\n"
    )


def _driver_source(
    arg_names: list[str],
    exprs: dict[str, sp.Expr],
    fp_names: dict[sp.Symbol, str],
    map_args: list[sp.Symbol],
    cen_args: list[sp.Symbol],
    targets: list[sp.Symbol],
    float_ctx: str,
) -> str:
    """``coefficients(sigma_a2, sigma_b2, tau0, dps)``: τ* by the root finder, then the
    moments, the centring and the derived formulas; and a ``__main__`` that prints them.
    ``float_ctx`` names the float context of the scan (``mpmath.fp`` or ``FLOAT``)."""
    return textwrap.dedent(
        f'''\
            _ARGS = {tuple(arg_names)!r}
            _KEYS = {tuple(exprs)!r}
            _MAP_ARGS = {tuple(fp_names[a] for a in map_args)!r}
            _CEN_ARGS = {tuple(fp_names[a] for a in cen_args)!r}
            _CEN_KEYS = {tuple(fp_names[t] for t in targets)!r}


            def _exact(ctx, value):
                f = Fraction(str(value))
                return ctx.mpf(f.numerator) / f.denominator


            def coefficients(sigma_a2="1/5", sigma_b2=None, tau0=1, dps=30):
                """tau_star, gamma_star, alpha_1..4, beta_1..3, kappa_star, center as mpf (dps digits).

                Parameters are read exactly ("0.2" is 1/5; a float as its shortest repr);
                sigma_b2 defaults to 1 - sigma_a2.  The activation is centered at its fixed
                point: phi - c with c = E[phi(tau_* xi)].
                """
                ctx = mpmath.MPContext()
                ctx.dps = dps + 10
                env = {{"sigma_a2": _exact(ctx, sigma_a2), "tau_0": _exact(ctx, tau0)}}
                env["sigma_b2"] = 1 - env["sigma_a2"] if sigma_b2 is None else _exact(ctx, sigma_b2)

                def h_in(c):
                    par = {{k: c.mpf(v) for k, v in env.items()}}

                    def h(q):
                        m = dict(moments(c, c.sqrt(q)), **par)
                        f, df, _ = _variance_map(c, *(m[a] for a in _MAP_ARGS))
                        return f - q, df - 1

                    return h

                q0 = float(env["sigma_b2"] * env["tau_0"] ** 2)
                roots, _ = scan(h_in({float_ctx}), q0, decades=0)
                if not roots or (roots[0][0] == roots[0][1] and roots[0][2] == 0):
                    raise ArithmeticError("no attracting fixed point: reduce sigma_a2")
                tol = ctx.mpf(10) ** (-(dps + 8))
                q = refine(h_in({float_ctx}), h_in(ctx), roots[0], ctx.mpf, tol)
                tau = ctx.sqrt(q)
                m = moments(ctx, tau)
                c, *cen = _centered(ctx, *(m[a] for a in _CEN_ARGS))
                m.update(zip(_CEN_KEYS, cen))
                m.update(env)
                vals = _formulas(ctx, *(m[n] for n in _ARGS))
                out = {{"tau_star": tau, **dict(zip(_KEYS, vals)), "center": c}}
                with mpmath.workdps(dps):
                    return {{k: +v for k, v in out.items()}}


            if __name__ == "__main__":
                for key, value in coefficients().items():
                    print(f"{{key:12}} {{mpmath.nstr(value, 30)}}")
            '''
    )


def _source(name: str, var: sp.Symbol, expr: sp.Expr) -> str:
    """One piece of φ or φ' as ``name(ctx, x)``, in forms that floats evaluate without overflow
    (the module integrates over the whole line in floats)."""
    return function_source(name, [var], [expr], labels=("x",), rewrite=STABLE_FORMS)


def _one_line(e: sp.Expr) -> str:
    """A kink for a comment: printed SymPy (our text, not the user's), on one line."""
    return " ".join(str(e).split())

"""The engine's float context: ``mpmath.fp`` with each function the printer emits float-accurate.

Self-contained on purpose (it imports only ``math`` and ``mpmath``): ``deqrmt codegen`` copies
this module verbatim into a module it writes whose code calls one of :data:`REPLACED`, so the
generated module evaluates in floats exactly as the engine does.

``mpmath.fp`` runs mpmath's generic algorithms in Python floats, and some of them are not
float-accurate.  Measured against mpmath at 30 and 40 digits on a grid of tiny, ordinary, huge and
negative arguments (``tests/test_float_context.py`` keeps the measurement):

- ``log1p``, ``expm1``: ``log(1 + x)`` and ``exp(x) − 1`` with ``1 + x`` rounded first:
  ``fp.log1p(1e-10)`` is off by 8e-9 relative, ``fp.log1p(e^(−14))`` (softplus at −14) by
  1.3e-10 (a number we print is right to the digits we print);
- ``erfc``: 5 ulps; ``gamma``: 324 ulps at 100 (and ``math.gamma`` 4 ulps at −4.3);
- ``besseli``, ``besselj``, ``besselk``, ``gammainc``: hypergeometric series summed in floats,
  off by percents (``fp.besselk(1, 1e-300)`` by 2 %, the upper ``fp.gammainc(1/2, 27)`` by
  0.6 %; ``fp.besselk(0, 14)`` has the wrong sign);
- ``asinh``, ``acosh``, ``atanh``: missing (an activation that uses one could not run).

The others the printer emits (``exp``, ``log``, ``sqrt``, ``erf``, the trigonometric and
hyperbolic functions, ``atan2``) are within 2.5 ulps (``erf``'s 2.3 the largest) and stay
``mpmath.fp``'s.

Conventions are ``mpmath.fp``'s: a real argument in the function's real domain gives a float
(``math``'s correctly rounded or nearly so function, or mpmath at 80 bits rounded once), any
other argument (complex, or real outside the real domain) gives what ``mpmath.fp`` gives
(``log1p(−2)`` is ``πi``); a finite value too large for a float raises ``OverflowError``; a pole
of Γ raises ``ZeroDivisionError``, as ``fp.gamma`` does.
"""

import math
import typing  # (annotations only, as strings: the copy in a written module drops it)

import mpmath

#: The functions this context evaluates differently from ``mpmath.fp``.
REPLACED = (
    "log1p", "expm1", "erfc", "gamma", "asinh", "acosh", "atanh",
    "besseli", "besselj", "besselk", "gammainc",
)  # fmt: skip


class FloatContext(mpmath.ctx_fp.FPContext):  # type: ignore[misc]
    """``mpmath.fp`` with the functions in ``REPLACED`` float-accurate: ``math``'s where it has
    them, else mpmath's at 80 bits rounded once; ``mpmath.fp``'s conventions otherwise."""

    def __init__(ctx) -> None:  # noqa: N805 (mpmath names a context's self ``ctx``)
        super().__init__()
        # special functions math lacks: mpmath at 80 bits (27 guard bits), rounded once to a
        # float, in private MPContexts (mpmath.mp is never touched).  mpmath raises a context's
        # precision inside a call, so a context serves one call at a time: a pool, taken from
        # and given back with list.pop/append (atomic), is safe across threads.
        ctx._accurate_pool: list[mpmath.MPContext] = []
        # mpmath sets its special functions on the class each time a context is made
        # (SpecialFunctions.__init__), over methods of the same name: ours go on the instance.
        ctx.log1p = ctx._accurate_log1p
        ctx.expm1 = ctx._accurate_expm1
        ctx.erfc = ctx._accurate_erfc
        ctx.gamma = ctx._accurate_gamma(ctx._accurate_precise("gamma"))
        ctx.asinh = ctx._accurate_inverse(math.asinh, "asinh")
        ctx.acosh = ctx._accurate_inverse(math.acosh, "acosh")
        ctx.atanh = ctx._accurate_inverse(math.atanh, "atanh")
        for name in ("besseli", "besselj", "besselk", "gammainc"):
            setattr(ctx, name, ctx._accurate_precise(name))

    @staticmethod
    def _accurate_real(x: object) -> float | None:
        """x as a float when it is a real number (not complex), else None."""
        if isinstance(x, complex):
            return None
        try:
            return float(x)  # type: ignore[arg-type]
        except TypeError:
            return None

    def _accurate_log1p(ctx, x: object) -> object:  # noqa: N805
        """log(1 + x), correctly rounded or nearly so for real x ≥ −1 (``math.log1p``)."""
        r = ctx._accurate_real(x)
        if r is not None and r >= -1.0:
            return math.log1p(r)
        return mpmath.fp.log1p(x)

    def _accurate_expm1(ctx, x: object) -> object:  # noqa: N805
        """e^x − 1 for real x (``math.expm1``; ``OverflowError`` above 709.78, as ``fp.exp``)."""
        r = ctx._accurate_real(x)
        if r is not None:
            return math.expm1(r)
        return mpmath.fp.expm1(x)

    def _accurate_erfc(ctx, x: object) -> object:  # noqa: N805
        """1 − erf(x) for real x (``math.erfc``, no cancellation for large x)."""
        r = ctx._accurate_real(x)
        if r is not None:
            return math.erfc(r)
        return mpmath.fp.erfc(x)

    def _accurate_gamma(
        ctx, precise: "typing.Callable[..., object]"
    ) -> "typing.Callable[[object], object]":  # noqa: N805
        """Γ from mpmath at 80 bits (``math.gamma`` is 4 ulps off at −4.3); ``ZeroDivisionError``
        at a pole, as ``fp.gamma``."""

        def gamma(x: object) -> object:
            r = ctx._accurate_real(x)
            if r is not None and r <= 0 and r == math.floor(r):
                raise ZeroDivisionError("gamma function pole")
            return precise(x)

        return gamma

    def _accurate_inverse(
        ctx, real: "typing.Callable[[float], float]", name: str
    ) -> "typing.Callable[[object], object]":  # noqa: N805
        """An inverse hyperbolic function: ``math``'s in its real domain, else mpmath's value
        (complex, or ±inf at atanh(±1)) at 80 bits."""
        precise = ctx._accurate_precise(name)

        def f(x: object) -> object:
            r = ctx._accurate_real(x)
            if r is not None:
                try:
                    return real(r)
                except ValueError:
                    pass
            return precise(x)

        f.__name__ = name
        return f

    def _accurate_precise(ctx, name: str) -> "typing.Callable[..., object]":  # noqa: N805
        """mpmath's ``name`` at 80 bits, its value rounded once to a float (or complex)."""

        def f(*args: object, **kwargs: object) -> object:
            try:
                mp = ctx._accurate_pool.pop()
            except IndexError:
                mp = mpmath.MPContext()
            mp.prec = 80
            try:
                v = getattr(mp, name)(*(mp.convert(a) for a in args), **kwargs)
            finally:
                ctx._accurate_pool.append(mp)
            if isinstance(v, mp.mpc):
                out = complex(v)
                finite = mp.isfinite(v.real) and mp.isfinite(v.imag)
                if finite and not (math.isfinite(out.real) and math.isfinite(out.imag)):
                    raise OverflowError("math range error")
                return out
            out = float(v)
            if mp.isfinite(v) and not math.isfinite(out):
                raise OverflowError("math range error")
            return out

        f.__name__ = name
        return f


#: The engine's float context (one instance serves every caller, in any thread).
FLOAT = FloatContext()

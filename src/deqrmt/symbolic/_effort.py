"""Deterministic effort bounds for SymPy calls that may run for minutes (``integrate``, ``solveset``).

No clock decides an output: a wall-clock alarm made ``deqrmt derive``/``latex``/``codegen``
depend on machine load and on cache history.  Instead an attempt may make at most ``calls``
Python function calls, counted by a ``sys.settrace`` hook (called once per Python frame entry,
on the current thread only), after which it is abandoned.  Load cannot change a count.

What else moves a count, and what is done about it:

- SymPy's expression cache (a hit skips work): cleared before each attempt.
- One-time lazy set-up (imports, Meijer-G tables, mpmath constants, assumptions deduced on
  singletons): done once, uncounted, before the first attempt; imports inside an attempt are
  not counted.
- SymPy's random generators (the assumptions engine shuffles the facts it tries; ``equals``
  samples points) and Dummy indices (they enter hashes): seeded / reset for the attempt, and the
  shuffle replaced by a sort.
- Iteration over sets of expressions follows ``PYTHONHASHSEED`` and objects that outlive an
  attempt keep what SymPy deduced about them: this is not removed, and moves a count by up to
  about 5 %.  The budgets are set at least 20 % away from the cost of every closed form we know
  (see ``SYMPY_INTEGRATE_CALLS``), so those verdicts do not change; an integrand whose cost is
  within a few per cent of the budget could.

The budgets, the SymPy version and the Python version (3.12 inlines comprehensions, which
changes counts) are in the disk cache's key.
"""

from __future__ import annotations

import gc
import importlib
import inspect
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any, TypeVar

__all__ = [
    "bounded",
    "SYMPY_INTEGRATE_CALLS",
    "SYMPY_SOLVESET_CALLS",
    "SYMPY_PDSOLVE_CALLS",
    "SYMPY_SYSTEM_CALLS",
    "budget_fingerprint",
]

T = TypeVar("T")

#: Python calls one SymPy ``integrate`` attempt (one Gaussian moment) may make.  Measured with
#: SymPy 1.14 / Python 3.11: what closed within the old 0.4 s alarm costs 0.39-0.43 M
#: (E[erf(τ|ξ|)], E[φ'] of erf); the next closed forms cost 0.82 M (an odd moment of erf(x²))
#: and 1.6 M (E[φ''] of erf(|x|)); PYTHONHASHSEED moves a count by up to 5 %.  1 M sits between
#: with margin, and a failing attempt costs about 1 s.  (erf and gelu no longer need SymPy: the
#: exact engine in ``_expectation`` integrates erf of a linear argument.)
SYMPY_INTEGRATE_CALLS = 1_000_000
#: Python calls one ``solveset`` pole search may make (non-polynomial denominators only; the
#: sigmoid's takes 6 k, transcendental equations give up as a ConditionSet within 30 k).
SYMPY_SOLVESET_CALLS = 300_000
#: Python calls one ``pdsolve`` search for a conserved quantity may make (two-parameter implicit
#: bias, tried when the characteristic ODE does not separate).  Measured with SymPy 1.14 /
#: Python 3.11: the first integrals it finds cost 0.24-4.4 M (u³ + uw the most); for uw² + w
#: dsolve's Lie-group heuristics ran past 20 M calls (minutes) without an answer.
SYMPY_PDSOLVE_CALLS = 6_000_000
#: Python calls one ``solve`` of the 2×2 system β = g(u, w), c = c(u, w) may make (two-parameter
#: implicit bias).  The systems solved cost 8-125 k calls (u²w the most); u³w's ran past 60 M.
SYMPY_SYSTEM_CALLS = 2_000_000

# What SymPy raises when it gives up by itself: an attempt that fails this way is "no result".
_GAVE_UP = (ValueError, TypeError, NotImplementedError, ZeroDivisionError, RecursionError)


def budget_fingerprint() -> str:
    """The budgets and what the count depends on, for the disk cache's key."""
    import sympy

    py = "{}.{}".format(*sys.version_info[:2])
    calls = (
        f"integrate={SYMPY_INTEGRATE_CALLS}|solveset={SYMPY_SOLVESET_CALLS}"
        f"|pdsolve={SYMPY_PDSOLVE_CALLS}|system={SYMPY_SYSTEM_CALLS}"
    )
    return f"{calls}|sympy={sympy.__version__}|py={py}"


class _Exhausted(BaseException):
    """Raised into SymPy when the budget is spent; BaseException so ``except Exception`` passes it."""


_warmed = False
_state = threading.local()  # .active: an attempt is running on this thread
_last_calls = 0  # calls counted by the latest attempt (diagnostics and tests)


def _warm_up() -> None:
    """Do SymPy's lazy one-time set-up now, uncounted, so the first attempt costs what later ones do."""
    global _warmed
    if _warmed:
        return
    import sympy as sp

    # import_module: ``sympy.simplify.hyperexpand`` the attribute is the function.
    meijerint = importlib.import_module("sympy.integrals.meijerint")
    hyperexpand = importlib.import_module("sympy.simplify.hyperexpand")

    y = sp.Symbol("y", real=True)
    a = sp.Symbol("a", positive=True)
    # An erf-type Gaussian integral and a transcendental solveset touch the lazy imports;
    # the tables are built explicitly in case that path did not reach them.
    sp.integrate(sp.erf(a * y) * y * sp.exp(-(y**2) / 2), (y, -sp.oo, sp.oo), risch=False)
    sp.solveset(sp.exp(y) + 1, y, sp.Reals)
    # mpmath keeps its constants at the highest precision asked so far; ask high once.
    for c in (sp.pi, sp.E, sp.log(2), sp.EulerGamma, sp.sqrt(2), sp.sqrt(sp.pi)):
        c.evalf(1000)
    # Singletons outlive clear_cache() and keep the assumptions deduced on them: deduce all now.
    from sympy.core.assumptions import _assume_defined

    singletons = (sp.S.Zero, sp.S.One, sp.S.NegativeOne, sp.S.Half, sp.pi, sp.E, sp.I)
    for obj in (*singletons, sp.oo, -sp.oo, sp.zoo, sp.nan, sp.EulerGamma):
        for fact in sorted(_assume_defined):
            getattr(obj, f"is_{fact}")
    if not getattr(meijerint, "_lookup_table", True):
        table: dict[Any, Any] = {}
        meijerint._create_lookup_table(table)
        setattr(meijerint, "_lookup_table", table)  # noqa: B010 (not an attribute mypy knows)
    for name, factory in (
        ("_collection", "FormulaCollection"),
        ("_meijercollection", "MeijerFormulaCollection"),
    ):
        if getattr(hyperexpand, name, 0) is None and hasattr(hyperexpand, factory):
            setattr(hyperexpand, name, getattr(hyperexpand, factory)())
    _warmed = True


def bounded(fn: Callable[[], T], calls: int) -> T | None:
    """Run ``fn()``; return None if it makes more than ``calls`` Python calls or SymPy gives up.

    Off the main thread as on it: the hook is per-thread.  Any tracer already installed (a
    debugger, coverage) is suspended for the attempt and restored after it.
    """
    import sympy as sp

    # the module: ``from sympy.core import assumptions`` is sympy.core's function of that name,
    # which has no ``shuffle`` (the sort below silently did nothing)
    sympy_assumptions: Any = importlib.import_module("sympy.core.assumptions")
    from sympy.core import random as sympy_random
    from sympy.core.cache import clear_cache

    if getattr(_state, "active", False):  # nested: the outer attempt's budget counts these calls
        try:
            return fn()
        except _GAVE_UP:
            return None
    _warm_up()
    count = 0
    importing = 0
    exhausted = False

    # The two tracers below run as sys.settrace hooks, which Python never traces: no coverage
    # tool can see their lines (they are exercised by every bounded attempt).
    def local(frame: FrameType, event: str, arg: Any) -> Any:  # pragma: no cover - a tracer
        nonlocal importing
        if event == "return":
            importing -= 1
        return local

    def hook(frame: FrameType, event: str, arg: Any) -> Any:  # pragma: no cover - a tracer
        nonlocal count, importing, exhausted
        if importing:
            if frame.f_code.co_name == "<module>":
                importing += 1
                return local
            return None
        if frame.f_code.co_name == "<module>":
            importing = 1  # a lazy import: module set-up is not the integrand's work
            return local
        count += 1
        # Never raise into a generator (it may be being finalised: the exception would be
        # reported as unraisable and swallowed) or a finaliser; the next ordinary call raises.
        code = frame.f_code
        if count > calls and not code.co_flags & _GENERATOR_FLAGS and code.co_name != "__del__":
            exhausted = True
            raise _Exhausted
        return None

    previous = sys.gettrace()
    # A collection inside the attempt would run finalisers under the hook; keep it out.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    clear_cache()  # a cache hit would make the count depend on what ran before
    # SymPy shuffles the order in which it deduces assumptions (and samples points in
    # `equals`) from generators seeded by os.urandom: fix them for the attempt, then restore.
    states = sympy_random.rng.getstate(), sympy_random._assumptions_rng.getstate()
    sympy_random.seed(0)
    # A Dummy's hash includes its index, which counts up over the process from a random base:
    # sets of Dummies would iterate (and cost) differently each time.  Indices below 10**6 are
    # never used outside an attempt (SymPy's base is at least 10**6), and an attempt's Dummies
    # do not outlive it: its cached objects are dropped, a result holding one is refused.
    dummy = sp.Dummy._count, sp.Dummy._base_dummy_index
    if dummy[1] >= _DUMMY_BASE:
        sp.Dummy._count, sp.Dummy._base_dummy_index = 0, 0
    # SymPy shuffles the facts it tries when deducing an assumption, from a list made of a set
    # of strings (so in PYTHONHASHSEED order).  The answer does not depend on the order; the
    # work does: sort instead.
    shuffle = getattr(sympy_assumptions, "shuffle", None)
    if shuffle is not None:
        sympy_assumptions.shuffle = list.sort
    sys.settrace(hook)
    _state.active = True
    try:
        result = fn()
    except _Exhausted:  # pragma: no cover - runs untraced: CPython unsets a tracer that raises
        return None
    except _GAVE_UP:
        return None
    finally:
        sys.settrace(previous)
        _state.active = False
        if shuffle is not None:
            sympy_assumptions.shuffle = shuffle
        sp.Dummy._count, sp.Dummy._base_dummy_index = dummy
        clear_cache()  # nothing built with a low Dummy index survives the attempt
        sympy_random.rng.setstate(states[0])
        sympy_random._assumptions_rng.setstate(states[1])
        global _last_calls
        _last_calls = count
        if gc_was_enabled:
            gc.enable()
    # CPython unsets a tracer that raises; if SymPy swallowed _Exhausted the attempt ran on
    # unbounded, but the outcome must still be "over budget".
    if exhausted:
        return None
    if isinstance(result, sp.Basic) and any(
        d.dummy_index < _DUMMY_BASE for d in result.atoms(sp.Dummy)
    ):
        return None  # its Dummies would alias those of a later attempt
    return result


_DUMMY_BASE = 10**6  # SymPy draws Dummy._base_dummy_index from [10**6, 9·10**6]
_GENERATOR_FLAGS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR

"""Edges of the symbolic package: activations from objects, the library's parameter checks,
the exact Gaussian engine's refusals, the parser's price estimates, the bounded SymPy attempts,
the one-parameter bias derivation's refusals, and the cache's directory and key rules.

References are by hand: torch's own activation values at chosen points, limits and bounds
computed from the formula in a comment, the error a user sees.
"""

from __future__ import annotations

import ast
import functools
import gc
import math
import os
import sys
from pathlib import Path

import pytest
import sympy as sp

from deqrmt._errors import ActivationError, BudgetExceeded, DerivationError, InvalidArgument
from deqrmt.symbolic import _activation, _cache, _effort, _expectation, _parse_limits
from deqrmt.symbolic._activation import Activation, Piece, X, exact, library_activation
from deqrmt.symbolic._bias_monotone import _image, _monotone_interval, _one_parameter
from deqrmt.symbolic._objects import activation_text, get_activation

t = sp.Symbol("t", real=True)
w = sp.Symbol("w", real=True)


def _values(act: Activation, points: list[float]) -> list[float]:
    return [float(act.expr.subs(X, sp.Rational(str(p))).evalf(30)) for p in points]


# --- activations given as objects ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("slope", "text"),
    [(1.0, "max(x, 0) + min(x, 0)"), (-1.0, "max(x, 0) + -min(x, 0)")],
)
def test_leaky_relu_slopes_outside_zero_one(slope: float, text: str) -> None:
    torch = pytest.importorskip("torch")
    f = functools.partial(torch.nn.functional.leaky_relu, negative_slope=slope)
    assert activation_text(f) == text
    points = [-2.5, -0.5, 0.75, 3.0]
    want = torch.nn.functional.leaky_relu(torch.tensor(points), negative_slope=slope).tolist()
    assert _values(get_activation(f), points) == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize("alpha", [-2.0, -0.5])
def test_celu_with_a_negative_alpha_matches_torch(alpha: float) -> None:
    """torch's CELU(α) = max(0, x) + min(0, α(e^{x/α} − 1)) for α < 0 too (it was read as
    α·elu(x/α), whose branches are swapped: −3 instead of −6.96 at x = −3 for α = −2)."""
    torch = pytest.importorskip("torch")
    m = torch.nn.CELU(alpha=alpha)
    if alpha == -2.0:
        assert activation_text(m) == "max(x, 0) + -2*(exp(-min(x, 0)/2) - 1)"
    points = [-3.0, -0.5, 0.25, 2.0]
    want = m(torch.tensor(points, dtype=torch.float64)).tolist()
    assert _values(get_activation(m), points) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize(
    ("fn", "keywords", "why"),
    [
        ("celu", {"alpha": 0.0}, "CELU needs alpha ≠ 0"),
        ("hardtanh", {"min_val": 1.0, "max_val": 0.0}, "hardtanh needs min_val < max_val"),
        ("gelu", {"approximate": "fast"}, "choose 'none' or 'tanh'"),
        ("softshrink", {"lambd": -1.0}, "softshrink needs lambd ≥ 0"),
        ("hardshrink", {"lambd": 0.0}, "hardshrink needs lambd > 0"),
        ("softplus", {"beta": -1.0}, "softplus needs beta > 0"),
        ("elu", {"alpha": "1"}, "expected a number"),
    ],
)
def test_torch_parameters_out_of_range(fn: str, keywords: dict[str, object], why: str) -> None:
    torch = pytest.importorskip("torch")
    f = functools.partial(getattr(torch.nn.functional, fn), **keywords)
    with pytest.raises(InvalidArgument, match=why):
        activation_text(f)


def test_unknown_partial_and_modules_not_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    with pytest.raises(InvalidArgument, match="is not an activation deqrmt can read"):
        activation_text(functools.partial(print, sep=""))
    # a module that is not imported is never imported to look a function up
    monkeypatch.delitem(sys.modules, "scipy.special", raising=False)
    assert activation_text(torch.tanh) == "tanh"
    monkeypatch.delitem(sys.modules, "torch.nn")
    with pytest.raises(InvalidArgument, match=r"\(ReLU\) is not an activation") as e:
        activation_text(torch.nn.ReLU())
    assert "Of torch.nn" not in str(e.value)  # no hint without torch.nn loaded


@pytest.mark.parametrize(
    ("expr", "text"),
    [
        (sp.E * t, "exp(1)*x"),
        (sp.pi * t, "pi*x"),
        (sp.Heaviside(t), "heaviside(x)"),
        (sp.Piecewise((t, t > 1), (0, True)), "(x)*heaviside(x - 1) + (0)*(1 - heaviside(x - 1))"),
    ],
)
def test_sympy_text(expr: sp.Expr, text: str) -> None:
    assert activation_text(expr) == text


@pytest.mark.parametrize(
    ("spec", "error", "why"),
    [
        (sp.Integer(10) ** 400 * t, InvalidArgument, "a constant in it is too large"),
        (sp.Piecewise((t, t > 0)), InvalidArgument, "needs a last branch"),
        (sp.Lambda(t, t * w), InvalidArgument, "the Lambda's body has other symbols \\('w'\\)"),
        (sp.Lambda((t, w), t * w), InvalidArgument, "takes one variable, this one takes 2"),
        (sp.Add(*[t**k for k in range(1, 400)]), BudgetExceeded, "more than 1000 nodes"),
        (sp.Eq(t, 1), InvalidArgument, "not an expression"),
    ],
)
def test_sympy_objects_refused(spec: object, error: type[Exception], why: str) -> None:
    with pytest.raises(error, match=why):
        activation_text(spec)


# --- the library's own checks --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "params", "why"),
    [
        ("celu", [-1], "celu expects alpha > 0"),
        ("softshrink", [sp.Rational(-1, 2)], "softshrink expects lambd >= 0"),
        ("hardshrink", [0], "hardshrink expects lambd > 0"),
    ],
)
def test_library_parameters_out_of_range(name: str, params: list[object], why: str) -> None:
    with pytest.raises(InvalidArgument, match=why):
        library_activation(name, params)


def test_torch_class_name_is_pointed_to_the_library_name() -> None:
    with pytest.raises(InvalidArgument, match="did you mean 'leaky_relu'"):
        library_activation("LeakyReLU")


def test_exact_reads_plain_numbers_as_decimals() -> None:
    assert exact(3) == 3
    assert exact(0.1) == sp.Rational(1, 10)
    assert exact(sp.Float("0.25") * X) == X / 4


def test_activation_name_must_be_text() -> None:
    with pytest.raises(InvalidArgument, match="the name must be a string"):
        Activation(3, X)  # type: ignore[arg-type]


def test_piecewise_helpers() -> None:
    step = sp.Piecewise((X, X > 0))
    with pytest.raises(ActivationError, match="undefined at x = -1"):
        _activation._branch_at(step, sp.Integer(-1))
    with pytest.raises(ActivationError, match="only conditions linear in x"):
        _activation._breakpoints(sp.Piecewise((X, X**2 > 1), (0, True)))
    # φ = x on (0, ∞): at the rational points 3/7·3 and 11/13·3 it is far from zero
    assert _activation._nonzero_somewhere(X, Piece(sp.S.Zero, sp.oo, X))
    assert _activation._nonzero_somewhere(X, Piece(-sp.oo, sp.S.Zero, X))
    assert not _activation._nonzero_somewhere(sp.S.Zero, Piece(-sp.oo, sp.oo, sp.S.Zero))


def test_pole_with_an_irrational_root() -> None:
    # 1/(x - √2) has its pole at √2 ∈ (1, 2), found by solveset (not by Poly.real_roots)
    with pytest.raises(ActivationError, match="has a pole at x = sqrt\\(2\\)"):
        _activation._check_no_pole("f", 1 / (X - sp.sqrt(2)), sp.S.One, sp.Integer(2))
    _activation._check_no_pole("f", 1 / (X - sp.sqrt(2)), sp.Integer(2), sp.oo)  # not inside


# --- the exact Gaussian engine -------------------------------------------------------------------


def test_exp_poly_terms_shapes() -> None:
    # sin x = (e^{ix} − e^{−ix})/(2i): two terms with b = ±i
    terms = _expectation._exp_poly_terms(sp.sin(X))
    assert terms is not None and sorted(str(term.b) for term in terms) == ["-I", "I"]
    assert _expectation._exp_poly_terms(sp.exp(X**3)) is None  # cubic exponent
    assert _expectation._exp_poly_terms(sp.exp(1 / X)) is None  # not a polynomial
    assert _expectation._exp_poly_terms(sp.erf(X**2)) is None  # erf of a non-linear argument
    assert _expectation._cdf(sp.oo) == 1 and _expectation._cdf(-sp.oo) == 0
    # erfc x = 1 − erf x: a constant term and an erf term of coefficient −1
    erfc = _expectation._exp_poly_terms(sp.erfc(X))
    assert erfc is not None
    assert sorted((term.c, term.lin) for term in erfc) == [(-1, (1, 0)), (1, None)]


def test_exact_engine_leaves_what_it_cannot_do_to_quadrature() -> None:
    weight = sp.Poly(1, _expectation.XI)
    # a > 0 would need a condition on τ
    term = _expectation._Term(sp.S.One, 0, sp.S.One, sp.S.Zero, (sp.S.One, sp.S.Zero))
    assert _expectation._integrate_erf_term(term, weight) is None
    # erf of a complex argument on a half line
    assert _expectation._closed_exp_poly(sp.S.One, (Piece(sp.S.Zero, sp.oo, sp.sin(X)),)) is None


def test_moment_set_needs_an_activation() -> None:
    with pytest.raises(InvalidArgument, match="expected an Activation"):
        _expectation.moment_set("tanh")  # type: ignore[arg-type]


# --- the parser's price estimates ----------------------------------------------------------------


def _b(text: str) -> tuple[float, float] | None:
    return _parse_limits._bounds(ast.parse(text, mode="eval").body)


@pytest.mark.parametrize(
    ("text", "bounds"),
    [
        ("x", (10.0, 1.0)),  # |x| ≤ 10 and slope 1
        ("pi", (math.pi, 0.0)),
        ("-x", (10.0, 1.0)),
        ("x + 1", (11.0, 1.0)),
        ("2*x", (20.0, 2.0)),  # product rule: 0·10 + 2·1
        ("x/4", (2.5, 0.25)),
        ("x**3", (1000.0, 300.0)),  # 3·10²·1
        ("sin(3*x)", (1.0, 3.0)),
        ("softplus(x)", (11.0, 1.0)),
        ("sigmoid(x)", (1.0, 0.25)),
        ("exp(x)", (math.exp(10), math.exp(10))),
        ("exp(exp(x))", (math.inf, math.inf)),  # e^(e^10) overflows a float
        ("x/0", None),
        ("x/y", None),
        ("x**0.5", None),
        ("x**y", None),
        ("x % 3", None),
        ("y", None),
        ("lgamma(x)", None),
        ("sin()", None),
        ("sin(y)", None),
        ("f(x)(x)", None),
    ],
)
def test_bounds_by_hand(text: str, bounds: tuple[float, float] | None) -> None:
    got = _b(text)
    if bounds is None:
        assert got is None
    else:
        assert got == pytest.approx(bounds, rel=1e-12)


def test_literal_and_limit_names() -> None:
    assert _parse_limits._literal(ast.Constant(True)) is None  # True is no number here
    assert _parse_limits._literal(ast.parse("-3/4", mode="eval").body) == -0.75
    assert _parse_limits._literal(ast.parse("1/0", mode="eval").body) is None
    with pytest.raises(InvalidArgument, match="unknown parser limit 'MAX_FUN'"):
        _parse_limits.limit("MAX_FUN")
    e = _parse_limits._budget("the nesting", "deep", 24, "MAX_DEPTH", "Flatten it.")
    assert "DEQRMT_MAX_DEPTH=25" in str(e)  # a value that is no number asks for one more


# --- bounded SymPy attempts ----------------------------------------------------------------------


def test_bounded_refuses_a_result_holding_its_own_dummy() -> None:
    # the attempt's Dummies get indices below 10**6 and would alias a later attempt's
    assert _effort.bounded(lambda: sp.Dummy("d") + 1, 10**6) is None
    assert _effort.bounded(lambda: sp.Integer(2) + 3, 10**6) == 5


def test_bounded_over_budget_even_when_the_exhaustion_is_swallowed() -> None:
    def stubborn() -> int:
        try:
            for k in range(1000):
                math.gcd(*[k, 2])  # C calls are not counted: Python ones are
                (lambda: None)()
        except BaseException:
            return 1  # swallows the budget's exception and carries on
        return 2

    assert _effort.bounded(stubborn, 50) is None


def test_bounded_keeps_the_collector_as_it_found_it() -> None:
    gc.disable()
    try:
        assert _effort.bounded(lambda: sp.Integer(1), 10**6) == 1
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_nested_attempt_runs_under_the_outer_budget() -> None:
    _effort._state.active = True
    try:
        assert _effort.bounded(lambda: 7, 1) == 7  # no budget of its own
        assert _effort.bounded(lambda: 1 // 0, 1) is None  # SymPy-style giving up
    finally:
        _effort._state.active = False


# --- one-parameter bias ---------------------------------------------------------------------------


def test_monotone_interval_refusals() -> None:
    with pytest.raises(InvalidArgument, match="is a critical point"):
        _monotone_interval(w**2, w, sp.S.Zero)
    with pytest.raises(InvalidArgument, match="is not in the domain"):
        _monotone_interval(sp.log(w), w, sp.Integer(-1))


def test_image_without_limits() -> None:
    # sin has no limit at ∞ (AccumBounds(-1, 1))
    with pytest.raises(DerivationError, match="the range of sin"):
        _image(sp.sin(w), w, sp.Interval.open(0, sp.oo))


def test_quintic_cannot_be_inverted_in_closed_form() -> None:
    # w⁵ + w is monotone (g' = 5w⁴ + 1 > 0) but its inverse is a CRootOf, not a closed form
    with pytest.raises(DerivationError, match="cannot invert"):
        _one_parameter(w**5 + w, w, sp.S.One)


# --- the cache: where and under which key ------------------------------------------------------------


@pytest.fixture
def quiet_notes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_cache, "_noted", set())


def test_cache_dir_order(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    quiet_notes: None,
) -> None:
    monkeypatch.delenv("DEQRMT_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert _cache.cache_dir() == tmp_path / "deqrmt"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/dir")  # not absolute: ignored
    monkeypatch.setenv("HOME", str(tmp_path))
    assert _cache.cache_dir() == tmp_path / ".cache" / "deqrmt"
    monkeypatch.setenv("HOME", str(tmp_path / "nonexistent"))
    temporary = _cache.cache_dir()
    assert temporary == _cache._temporary_dir() and temporary.is_dir()
    assert "the home directory" in capsys.readouterr().err


def test_a_note_is_printed_once(capsys: pytest.CaptureFixture[str], quiet_notes: None) -> None:
    _cache._note("deqrmt: note: test")
    _cache._note("deqrmt: note: test")
    assert capsys.readouterr().err == "deqrmt: note: test\n"


def test_home_that_cannot_be_found(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "home", no_home)
    assert _cache._home() is None


def test_key_file_that_is_not_hex(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    quiet_notes: None,
) -> None:
    path = tmp_path / "cache.key"
    path.write_text("z" * 64 + "\n")
    path.chmod(0o600)
    with pytest.raises(ValueError, match="is not 64 hex digits"):
        _cache._read_key_file(path)
    key = _cache._key_for(None, path)
    assert key is not None and key.temporary
    assert "is not 64 hex digits" in capsys.readouterr().err


@pytest.mark.skipif(os.name != "posix" or os.getuid() != 0, reason="needs root to chown")
def test_key_file_of_another_user(tmp_path: Path) -> None:
    path = tmp_path / "cache.key"
    path.write_text("ab" * 32 + "\n")
    path.chmod(0o600)
    os.chown(path, 12345, 12345)
    with pytest.raises(ValueError, match="belongs to another user"):
        _cache._read_key_file(path)


def test_config_home_that_is_no_directory(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    quiet_notes: None,
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "missing"))
    assert _cache._key_path() is None
    _cache._key_for.cache_clear()
    try:
        key = _cache._key_for(None, None)
        assert key is not None and key.temporary
    finally:
        _cache._key_for.cache_clear()
    assert "XDG_CONFIG_HOME is not an existing absolute directory" in capsys.readouterr().err


def test_bounded_sorts_the_facts_sympy_would_shuffle() -> None:
    import importlib

    module = importlib.import_module("sympy.core.assumptions")
    before = module.shuffle
    assert before is not list.sort
    # inside the attempt the order of deduction is a sort (no PYTHONHASHSEED, no random state)
    assert _effort.bounded(lambda: module.shuffle is list.sort, 10**6) is True
    assert module.shuffle is before  # and restored after it


def test_piecewise_condition_that_is_no_comparison() -> None:
    # a bare symbol as a condition is a Boolean SymPy accepts, but no step function
    with pytest.raises(InvalidArgument, match="use one comparison per branch"):
        activation_text(sp.Piecewise((t, t), (0, True)))


def test_pole_at_a_symbolic_point_is_undecided() -> None:
    # 1/(x − a): is a > 0?  SymPy cannot say, so the pole check leaves it to the quadrature
    a = sp.Symbol("a")
    assert _activation._check_no_pole("f", 1 / (X - a), sp.S.Zero, sp.oo) is None

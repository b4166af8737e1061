"""The Python API validates like the command line (issue 27; the numbers/ranges/seeds/sizes part
of issue 25): every public function refuses a bad argument with a DeqrmtError subclass whose
message is one safe line naming the argument as Python does, and reprs never print raw control
or bidirectional characters from user text.

Each case asserts the error class, so a catch-all that turns any exception into a one-line
message would not pass, and each failed on main before deqrmt._arguments (a raw ValueError,
TypeError or AttributeError, centering silently turned on by ``center='False'``, or a raw
escape sequence in a repr).
"""

from __future__ import annotations

import decimal
import html
import subprocess
import unicodedata
import warnings
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import mpmath
import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

import deqrmt
import deqrmt.check as C
import deqrmt.numeric as N
import deqrmt.symbolic as S
import deqrmt.testing as T
from deqrmt import BudgetExceeded, DeqrmtError, InvalidArgument, UnknownTrainable
from deqrmt._arguments import (
    MAX_SEED,
    format_bytes,
    integer,
    memory_budget,
    number,
    number_range,
    seed,
    sequence,
    show,
    size,
)
from deqrmt._budget import available_memory
from deqrmt.symbolic import Activation, X

EVIL = "relu\x1b[2J\u202eevil\x07"  # clears a terminal, reverses the rest of the line, rings


def _one_line(e: BaseException) -> str:
    """The message of a refusal: one line, printable, no raw control or bidi character."""
    msg = str(e)
    assert msg and "\n" not in msg and "\r" not in msg, repr(msg)
    assert all(unicodedata.category(c) not in ("Cc", "Cf") for c in msg), repr(msg)
    assert len(msg) < 600, len(msg)
    return msg


def _refused(error: type[BaseException], fn: Callable[[], Any]) -> str:
    with warnings.catch_warnings():
        # dropping an imaginary part behind a NumPy warning is not a refusal
        warnings.simplefilter("error", np.exceptions.ComplexWarning)
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(error) as info:
            fn()
    assert isinstance(info.value, DeqrmtError)
    return _one_line(info.value)


# --- 1. the cases of issue 27 --------------------------------------------------------------------


@pytest.mark.parametrize("name", ["sigma_a2", "sigma_b2"])
def test_huge_int_is_a_budget_not_a_conversion_error(name: str) -> None:
    msg = _refused(BudgetExceeded, lambda: deqrmt.deq_coefficients("tanh", **{name: 10**5000}))
    assert msg.startswith(f"{name}=an int of 5001 digits"), msg
    assert "60 significant digits" in msg


def test_huge_dps_is_a_budget() -> None:
    msg = _refused(BudgetExceeded, lambda: deqrmt.deq_coefficients("tanh", dps=10**5000))
    assert msg.startswith("dps=an int of 5001 digits exceeds"), msg


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("abc", "sigma_a2='abc' is not a number"),
        ([], "sigma_a2=[]: 0 real numbers; give 1 to"),
        (np.full((2, 2), 0.2), "got an array of shape (2, 2); flatten it"),
        ([[0.2, 0.3]], "sigma_a2[0]=[0.2, 0.3]: expected a flat sequence"),
        ([0.2 + 0.1j], "sigma_a2[0]=(0.2+0.1j): a complex number"),
        (np.array([0.2, 0.3 + 0j]), "sigma_a2[0]=np.complex128(0.2+0j): a complex number"),
        ([0.2, float("nan")], "sigma_a2[1]=nan is not finite"),
        (iter([0.2, 0.3]), "got list_iterator; pass list(...) of it"),
    ],
)
def test_sweep_arguments(value: Any, says: str) -> None:
    msg = _refused(InvalidArgument, lambda: deqrmt.deq_coefficients_sweep("tanh", value))
    assert says in msg, msg
    assert "0x" not in msg  # no object address: the same message every run


def test_sweep_sigma_b2_pairs_with_sigma_a2() -> None:
    msg = _refused(
        InvalidArgument, lambda: deqrmt.deq_coefficients_sweep("relu", [0.1, 0.2], [1, 2, 3])
    )
    assert "3 values for 2 values of sigma_a2" in msg
    _refused(BudgetExceeded, lambda: deqrmt.deq_coefficients_sweep("relu", [0.1] * 10_001))


def test_sweep_still_takes_what_it_took() -> None:
    """A list, an array, one number, strings and a σ_b² per σ_a² all give the same numbers."""
    ref = deqrmt.deq_coefficients_sweep("relu", np.array([0.1, 0.2]))
    for sa2, sb2 in (([0.1, 0.2], None), (("0.1", "1/5"), None), ([0.1, 0.2], [0.9, 0.8])):
        got = deqrmt.deq_coefficients_sweep("relu", sa2, sb2)
        assert all(np.allclose(got[k], ref[k], rtol=1e-14, atol=0) for k in ref)
    one = deqrmt.deq_coefficients_sweep("relu", 0.2)
    assert np.allclose(one["alpha_1"], ref["alpha_1"][1:], rtol=1e-10, atol=0)


@pytest.mark.parametrize("value", ["False", "True", 0, 1, None, "no"])
def test_center_is_a_bool_not_a_truthy_value(value: Any) -> None:
    """``center='False'`` turned centering ON (bool('False') is True)."""
    msg = _refused(InvalidArgument, lambda: deqrmt.deq_coefficients("tanh", center=value))
    assert msg.startswith(f"center={value!r}: expected True or False"), msg


def test_other_bools() -> None:
    _refused(InvalidArgument, lambda: deqrmt.deq_coefficients("relu", certify="yes"))
    _refused(InvalidArgument, lambda: deqrmt.explicit_coefficients(["relu"], center="False"))
    _refused(InvalidArgument, lambda: deqrmt.sphere_coefficients("relu", certify=1))
    _refused(InvalidArgument, lambda: deqrmt.check_activation("relu", mc="False"))
    _refused(InvalidArgument, lambda: deqrmt.derive_fixed_point(center="False"))
    _refused(InvalidArgument, lambda: deqrmt.coefficient_expression("relu", "alpha_1", center=[]))


def test_explicit_layers_are_a_list() -> None:
    msg = _refused(InvalidArgument, lambda: deqrmt.explicit_coefficients(iter(["tanh", "relu"])))
    assert "expected a list or tuple of layers" in msg and "pass list(...)" in msg
    # a bare string is one layer (issue 23): tests/test_activation_objects.py
    msg = _refused(InvalidArgument, lambda: deqrmt.explicit_coefficients([5]))
    assert msg.startswith("activations[0]=5 (int) is not an activation"), msg
    _refused(BudgetExceeded, lambda: deqrmt.explicit_coefficients(["relu"] * 9))


def test_scan_fixed_points_wants_a_problem() -> None:
    msg = _refused(InvalidArgument, lambda: deqrmt.scan_fixed_points("tanh"))
    assert "expected a DEQProblem" in msg and "DEQProblem.make" in msg
    _refused(InvalidArgument, lambda: N.solve_tau("tanh", mpmath.mp))


def test_design_enn_family_and_seed() -> None:
    msg = _refused(InvalidArgument, lambda: deqrmt.design_enn("tanh", 5))
    assert msg.startswith("family=5: expected a family name or expression"), msg
    for bad, error in (
        (-1, InvalidArgument),
        (MAX_SEED + 1, BudgetExceeded),
        (1.5, InvalidArgument),
    ):
        _refused(error, lambda bad=bad: deqrmt.design_enn("tanh", "hard_tanh", seed=bad))
    _refused(BudgetExceeded, lambda: deqrmt.design_enn("tanh", "hard_tanh", layers=10**5000))
    _refused(InvalidArgument, lambda: deqrmt.design_enn("tanh", "hard_tanh", progress=5))


def test_sigma_a2_cap_takes_what_settings_takes() -> None:
    """``sigma_a2_cap('tanh')`` was an AttributeError; settings() took the name all along."""
    assert T.sigma_a2_cap("tanh") == T.sigma_a2_cap(S.get_activation("tanh"))
    msg = _refused(InvalidArgument, lambda: T.sigma_a2_cap(5))
    assert msg.startswith("activation=5 (int) is not an activation"), msg
    _refused(InvalidArgument, lambda: T.sigma_a2_cap("tanh", assumption="yes"))
    _refused(InvalidArgument, lambda: T.sigma_a2_cap(["tanh"]))  # unhashable: not an lru TypeError


@pytest.mark.parametrize(
    "fn",
    [
        lambda v: deqrmt.deq_coefficients(v),
        lambda v: deqrmt.sphere_coefficients(v),
        lambda v: deqrmt.check_activation(v),
        lambda v: deqrmt.coefficient_expression(v, "alpha_1"),
        lambda v: deqrmt.DEQProblem.make(v),
        lambda v: deqrmt.deq_coefficients_sweep(v, [0.2]),
        lambda v: N.lipschitz_bound(v),
        lambda v: T.settings(v),
    ],
)
@pytest.mark.parametrize("value", [5, 0.2, ["tanh"], None, lambda x: x])
def test_an_activation_is_a_string_or_an_activation(fn: Callable[[Any], Any], value: Any) -> None:
    # a SymPy expression is an activation since issue 23 (tests/test_activation_objects.py)
    msg = _refused(InvalidArgument, lambda: fn(value))
    assert "accepted: a library name or an expression in x" in msg, msg


# --- 2. the number rules ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "want"),
    [
        (0.2, Fraction(1, 5)),
        ("0.2", Fraction(1, 5)),
        (" 1/5 ", Fraction(1, 5)),
        ("1e-3", Fraction(1, 1000)),
        (Fraction(1, 5), Fraction(1, 5)),
        (decimal.Decimal("0.2"), Fraction(1, 5)),
        (np.float32(0.8), Fraction(4, 5)),
        (np.int64(3), Fraction(3)),
        (np.array(0.25), Fraction(1, 4)),
        (mpmath.mpf("0.2"), Fraction(1, 5)),
        (sp.Rational(1, 5), Fraction(1, 5)),
        (sp.Float("0.2", 15), Fraction(1, 5)),
        (10**59, Fraction(10**59)),
    ],
)
def test_numbers_accepted(value: Any, want: Fraction) -> None:
    assert number(value, "x") == want


@pytest.mark.parametrize(
    ("value", "error", "says"),
    [
        (True, InvalidArgument, "a bool is not a number"),
        (np.bool_(False), InvalidArgument, "a bool is not a number"),
        (1 + 2j, InvalidArgument, "a complex number"),
        (mpmath.mpc(1, 1), InvalidArgument, "a complex number"),
        (float("nan"), InvalidArgument, "is not finite"),
        (-float("inf"), InvalidArgument, "is not finite"),
        (decimal.Decimal("Infinity"), InvalidArgument, "is not finite"),
        (mpmath.mpf("nan"), InvalidArgument, "is not finite"),
        (sp.sqrt(2), InvalidArgument, "a symbolic value"),
        (10**60, BudgetExceeded, "more than 60 digits"),
        (sp.Integer(10) ** 5000, BudgetExceeded, "more than 60 digits"),
        (Fraction(1, 10**70), BudgetExceeded, "more than 60 digits"),
        ("1" * 5000, BudgetExceeded, "5000 characters"),
        ("1" * 61, BudgetExceeded, "more than 60 digits"),
        ("1e999999999", BudgetExceeded, "exponent beyond"),
        ("٠.٢", InvalidArgument, "only ASCII digits"),  # Arabic-Indic digits: Python reads 0.2
        ("０.２", InvalidArgument, "only ASCII digits"),  # fullwidth
        ("②", InvalidArgument, "only ASCII digits"),
        ("1/0", InvalidArgument, "the denominator is 0"),
        ("1_000", InvalidArgument, "is not a number"),
        ("0x10", InvalidArgument, "is not a number"),
        ("", InvalidArgument, "is not a number"),
        (b"0.2", InvalidArgument, "expected a number, got bytes"),
        ([0.2], InvalidArgument, "expected a number, got list"),
    ],
)
def test_numbers_refused(value: Any, error: type[BaseException], says: str) -> None:
    msg = _refused(error, lambda: number(value, "tau0"))
    assert msg.startswith("tau0="), msg
    assert says in msg, msg


def test_python_reads_unicode_digits_we_do_not() -> None:
    """Why the ASCII rule exists: float and Fraction take any Unicode decimal digit."""
    assert float("٠.٢") == 0.2 and Fraction("٣") == 3
    _refused(InvalidArgument, lambda: deqrmt.deq_coefficients("relu", sigma_a2="٠.٢"))


@pytest.mark.parametrize(
    ("text", "error", "says"),
    [
        ("0.1:0.3:②", InvalidArgument, "ASCII digits 0-9"),
        ("0.1:0.3:٣", InvalidArgument, "ASCII digits 0-9"),
        ("0.1:0.3:" + "1" * 5000, BudgetExceeded, "from 1 to 200"),
        ("0.1:0.3:0", BudgetExceeded, "from 1 to 200"),
        ("0.1:0.3:201", BudgetExceeded, "from 1 to 200"),
        ("0.1:0.3:-2", InvalidArgument, "ASCII digits"),
        ("0.3:0.1:3", InvalidArgument, "start < stop"),
        ("0.1:0.3", InvalidArgument, "start:stop:COUNT, e.g. '0.1:0.3:5'"),
        ("0.1:٠.٣:3", InvalidArgument, "only ASCII digits"),
    ],
)
def test_ranges(text: str, error: type[BaseException], says: str) -> None:
    msg = _refused(error, lambda: number_range(text, "sigma_a2", 200))
    assert msg.startswith("sigma_a2="), msg
    assert says in msg, msg


def test_range_values() -> None:
    assert number_range("0.1:0.3:3", "s", 200) == [Fraction(1, 10), Fraction(1, 5), Fraction(3, 10)]
    assert number_range(" 0.2 : 0.2 : 1 ", "s", 200) == [Fraction(1, 5)]


def test_integers_seeds_sizes() -> None:
    assert integer(np.int32(7), "n", 1, 10) == 7
    _refused(InvalidArgument, lambda: integer(7.0, "n", 1, 10))
    _refused(InvalidArgument, lambda: integer(True, "n"))
    _refused(InvalidArgument, lambda: integer("7", "n"))
    _refused(InvalidArgument, lambda: integer(0, "n", 1, 10))
    msg = _refused(BudgetExceeded, lambda: integer(10**5000, "n", 1, 10))
    assert msg == "n=an int of 5001 digits: choose an integer from 1 to 10 (docs/limits.md).", msg
    assert seed(0) == 0 and seed(MAX_SEED) == MAX_SEED
    _refused(InvalidArgument, lambda: seed(-1))
    _refused(BudgetExceeded, lambda: seed(MAX_SEED + 1))


def test_sizes_are_budgeted_by_memory() -> None:
    """An n × n float64 kernel at n = 10⁷ is 728 TiB: refused with the estimate in the message."""
    assert size(1000, "n", nbytes=lambda n: 8.0 * n * n, what="the n×n kernel") == 1000
    msg = _refused(
        BudgetExceeded,
        lambda: size(10**7, "n", nbytes=lambda n: 8.0 * n * n, what="the n×n kernel"),
    )
    assert msg.startswith("n=10000000: the n×n kernel needs about 728 TiB of memory"), msg
    assert "more than this process may use" in msg and msg.endswith("choose a smaller n."), msg
    available = available_memory()
    assert available is not None
    memory_budget(0.25 * available, "n", 1, "x")  # well within the 80 % the run may use
    _refused(BudgetExceeded, lambda: memory_budget(2.0 * available, "n", 1, "x"))
    assert format_bytes(1536) == "1.5 KiB" and format_bytes(10) == "10 B"


def test_sequences() -> None:
    assert sequence((1, 2), "xs", "numbers") == [1, 2]
    assert sequence(range(3), "xs", "numbers") == [0, 1, 2]
    for bad in ("12", {"a": 1}, {1, 2}, (i for i in range(2)), np.zeros((2, 2)), [[1]]):
        _refused(InvalidArgument, lambda bad=bad: sequence(bad, "xs", "numbers"))
    _refused(BudgetExceeded, lambda: sequence([0] * 5, "xs", "numbers", hi=4))


def test_show_never_fails_and_is_one_line() -> None:
    class Broken:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    assert show(10**5000) == "an int of 5001 digits"
    assert show(-(10**70)) == "an int of 71 digits"
    assert show(Broken()) == "<Broken object>"
    assert "\n" not in show(np.zeros((3, 3)))
    assert show("a\x1bb\u202ec") == "'a\\x1bb\\u202ec'"
    assert len(show("x" * 10_000)) < 80
    assert "0x" not in show(iter([]))


def test_trainable() -> None:
    """A set of names: tuple, list, set or 'a,A'; anything else names the argument."""
    assert deqrmt.DEQProblem.make("relu", trainable={"A", "a"}).trainable == ("a", "A")
    assert deqrmt.derive_deq(trainable=["a", "A"]) is deqrmt.derive_deq(trainable=("a", "A"))
    for bad in (5, None, iter("aA"), ["a", ["A"]], "", "Z"):
        msg = _refused(
            UnknownTrainable, lambda bad=bad: deqrmt.DEQProblem.make("relu", trainable=bad)
        )
        assert msg.startswith("trainable="), msg
        _refused(UnknownTrainable, lambda bad=bad: deqrmt.derive_deq(trainable=bad))


def test_library_activation_parameters_are_never_evaluated(tmp_path: Any, monkeypatch: Any) -> None:
    """``library_activation('leaky_relu', [text])`` ran ``sympify(text)``: Python code."""
    monkeypatch.chdir(tmp_path)
    payload = "__import__('os').system('touch pwned') and 0"
    _refused(InvalidArgument, lambda: S.library_activation("leaky_relu", [payload]))
    assert not (tmp_path / "pwned").exists()
    assert S.library_activation("leaky_relu", ["0.1"]).expr == sp.Max(X, X / 10)
    assert S.library_activation("leaky_relu", [0.1]).expr == sp.Max(X, X / 10)
    _refused(InvalidArgument, lambda: S.library_activation("leaky_relu", [X]))
    _refused(InvalidArgument, lambda: S.library_activation("leaky_relu", 0.1))


# --- 3. reprs and tables escape control and bidi characters -----------------------------------------


def _no_raw_controls(text: str) -> None:
    assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text, repr(text)
    assert "\\x1b" in text and "\\u202e" in text, text  # shown, escaped as repr(str) does


@pytest.fixture(scope="module")
def evil_result() -> deqrmt.DEQCoefficients:
    return deqrmt.deq_coefficients(Activation(EVIL, sp.Max(X, 0)), dps=12)


def test_deq_coefficients_repr_escapes_the_name(evil_result: deqrmt.DEQCoefficients) -> None:
    _no_raw_controls(repr(evil_result))
    # (the HTML writes the escape's backslash as &#92;, so that MathJax never reads it as TeX)
    _no_raw_controls(html.unescape(evil_result._repr_html_()))
    _no_raw_controls(repr(evil_result.problem))
    assert repr(evil_result).splitlines()[0].startswith("DEQCoefficients(relu\\x1b[2J\\u202eevil")


def test_other_reprs_escape_the_name(evil_result: deqrmt.DEQCoefficients) -> None:
    act = evil_result.problem.activation
    _no_raw_controls(repr(act))
    explicit = deqrmt.explicit_coefficients([act], dps=12)
    _no_raw_controls(repr(explicit))
    sphere = deqrmt.sphere_coefficients(act, dps=12)
    _no_raw_controls(repr(sphere))
    item = C.CheckItem("x", "title", "PASS", {}, f"engine said {EVIL}")
    report = C.CheckReport(evil_result.problem, (item,))
    for line in report.lines():
        assert "\x1b" not in line and "\u202e" not in line, repr(line)
    _no_raw_controls("\n".join(report.lines()))
    _no_raw_controls(repr(report))
    v = N.Verified(mpmath.mpf(1), 1, "1\x1b[2J\u202e")
    _no_raw_controls(str(v))
    _no_raw_controls(repr(v))


def test_an_undefined_function_name_in_expr_is_escaped() -> None:
    f = sp.Function("\x1b[2J\u202ef")
    _no_raw_controls(repr(Activation("g", f(X))))


def test_verified_contains_says_what_it_wants() -> None:
    v = N.Verified(mpmath.mpf(1), 5, "1.0000", radius=mpmath.mpf("1e-6"))
    assert v.contains(1) and not v.contains("1.1")
    _refused(InvalidArgument, lambda: v.contains("abc"))
    _refused(InvalidArgument, lambda: v.contains(1j))
    _refused(InvalidArgument, lambda: N.Verified(mpmath.mpf(1), 5, "1.0000").contains(1))


# --- 4. the console script: the range cases of issue 25 ---------------------------------------------


@pytest.mark.parametrize(
    ("count", "error"),
    [("②", "InvalidArgument"), ("٣", "InvalidArgument"), ("1" * 5000, "BudgetExceeded")],
)
def test_range_counts_through_the_console_script(
    cli_prefix: list[str], count: str, error: str
) -> None:
    out = subprocess.run(
        [*cli_prefix, "coefficients", "tanh", "--sigma-a2", f"0.1:0.3:{count}"],
        capture_output=True,
        timeout=120,
    )
    err = out.stderr.decode("utf-8", "backslashreplace")
    assert out.returncode == 2, (out.returncode, err)
    assert out.stdout == b""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"deqrmt: error: {error}: --sigma-a2 '0.1:0.3:"), lines[0]
    assert len(lines[0]) < 400


# --- 5. Hypothesis: hostile values for every public function's numeric arguments --------------------

_BAD_DIGITS = "".join(chr(c) for c in range(0x80, 0x3000) if unicodedata.category(chr(c)) == "Nd")[
    :200
]
_HUGE = st.sampled_from([10**61, -(10**61), 10**400, 10**5000, -(10**5000)]) | st.integers(
    10**61, 10**80
)
_NONFINITE = st.sampled_from(
    [
        float("nan"),
        float("inf"),
        -float("inf"),
        decimal.Decimal("NaN"),
        decimal.Decimal("-Infinity"),
        mpmath.mpf("nan"),
        mpmath.inf,
        np.float64("nan"),
        sp.nan,
        sp.oo,
        sp.zoo,
    ]
)
_COMPLEX = st.complex_numbers(allow_nan=False, allow_infinity=False, max_magnitude=10).filter(
    lambda z: z.imag != 0
) | st.sampled_from([mpmath.mpc(0.2, 1), np.complex128(0.2 + 1j), sp.I, sp.Rational(1, 5) + sp.I])
_BAD_TEXT = (
    st.text(alphabet=_BAD_DIGITS, min_size=1, max_size=6)  # ② ٣ ０ …: never ASCII digits
    | st.text(max_size=20).map(lambda s: s + "#")  # a comment character: no number, no activation
    | st.sampled_from(
        [
            "",
            " ",
            "nan",
            "inf",
            "-inf",
            "1e999999999",
            "1" * 5000,
            "0.1:0.3:②",
            "٠.٢",
            "1/0",
            "\x1b[2J",
            "\u202e1",
            "0x10",
            "1_0",
            "True",
            "None",
            "[0.2]",
        ]
    )  # fmt: skip
)
_OBJECTS = st.sampled_from([object(), b"0.2", {}, {"a": 1}, set(), lambda: 0, np.zeros((2, 2))])
_BOOLS = st.booleans() | st.sampled_from([np.bool_(True), np.bool_(False)])
_SCALAR = _HUGE | _NONFINITE | _COMPLEX | _BAD_TEXT | _OBJECTS
#: a bad value for a number: never a number the engine would compute with
BAD_NUMBER = (
    _SCALAR
    | _BOOLS
    | st.lists(_SCALAR | st.floats(0.1, 0.5), max_size=3)
    | st.builds(lambda xs: iter(xs), st.lists(st.floats(0.1, 0.5), max_size=2))
)
#: a bad value for a count, a size, a seed or dps
BAD_INT = BAD_NUMBER | st.integers(max_value=0) | st.floats(-10, 10) | st.just(30.0)
#: a bad value for a flag that must be a bool
BAD_BOOL = (
    st.sampled_from(["False", "True", "no", "", 0, 1, 0.0, None, [], [True]]) | _HUGE | _COMPLEX
)
#: a bad value for a sweep's σ_a²: never a non-empty flat list of finite reals
BAD_SEQUENCE = (
    _BAD_TEXT
    | _NONFINITE
    | _COMPLEX
    | _BOOLS
    | st.just([])
    | st.lists(_SCALAR, min_size=1, max_size=3).map(lambda xs: [0.2, *xs])
    | st.lists(st.lists(st.floats(0.1, 0.5), min_size=1, max_size=2), min_size=1, max_size=2)
    | st.builds(np.full, st.tuples(st.integers(1, 3), st.integers(1, 3)), st.just(0.2))
    | st.builds(lambda n: np.full(n, 0.2 + 0.1j), st.integers(1, 3))
    | st.builds(lambda xs: iter(xs), st.lists(st.floats(0.1, 0.5), min_size=1, max_size=2))
)

#: a bad value for a data matrix: never a finite real 2-D array of the right shape
BAD_ARRAY = (
    _SCALAR
    | _BOOLS
    | st.just([[0.1, 0.2], [0.3]])  # ragged
    | st.builds(lambda n: np.full((3, n), 0.2 + 0.1j), st.integers(1, 3))
    | st.builds(lambda n: np.full((3, n), np.nan), st.integers(1, 3))
    | st.builds(lambda n: np.zeros((3, 3, n)), st.integers(1, 3))
    | st.builds(lambda n: np.zeros((3, n)), st.integers(4, 6))  # n ≠ the 3 rows of J
    | st.builds(lambda n: np.zeros((n, 0)), st.integers(1, 3))
)
#: a bad list of library parameters (the empty list is leaky_relu's default slope)
BAD_PARAMETERS = BAD_SEQUENCE.filter(lambda v: not (isinstance(v, list) and v == []))

_R = "relu"
_PROBLEM = deqrmt.DEQProblem.make(_R)
_X = np.eye(3)
CALLS: dict[str, tuple[Any, Callable[[Any], Any]]] = {
    "deq_coefficients.sigma_a2": (BAD_NUMBER, lambda v: deqrmt.deq_coefficients(_R, sigma_a2=v)),
    "deq_coefficients.sigma_b2": (BAD_NUMBER, lambda v: deqrmt.deq_coefficients(_R, sigma_b2=v)),
    "deq_coefficients.tau0": (BAD_NUMBER, lambda v: deqrmt.deq_coefficients(_R, tau0=v)),
    "deq_coefficients.dps": (BAD_INT, lambda v: deqrmt.deq_coefficients(_R, dps=v)),
    "deq_coefficients.center": (BAD_BOOL, lambda v: deqrmt.deq_coefficients(_R, center=v)),
    "deq_coefficients.certify": (BAD_BOOL, lambda v: deqrmt.deq_coefficients(_R, certify=v)),
    "DEQProblem.make": (BAD_NUMBER, lambda v: deqrmt.DEQProblem.make(_R, v)),
    "DEQProblem.replace": (BAD_NUMBER, lambda v: _PROBLEM.replace(tau0=v)),
    "exact_number": (BAD_NUMBER, lambda v: N.exact_number(v, "x")),
    "sweep.sigma_a2": (BAD_SEQUENCE, lambda v: deqrmt.deq_coefficients_sweep(_R, v)),
    "sweep.sigma_b2": (BAD_SEQUENCE, lambda v: deqrmt.deq_coefficients_sweep(_R, [0.2], v)),
    "sweep.tau0": (BAD_NUMBER, lambda v: deqrmt.deq_coefficients_sweep(_R, [0.2], None, v)),
    "explicit.tau0": (BAD_NUMBER, lambda v: deqrmt.explicit_coefficients([_R], v)),
    "explicit.dps": (BAD_INT, lambda v: deqrmt.explicit_coefficients([_R], dps=v)),
    "explicit.center": (BAD_BOOL, lambda v: deqrmt.explicit_coefficients([_R], center=v)),
    "explicit.activations": (
        BAD_SEQUENCE,
        lambda v: deqrmt.explicit_coefficients(v),
    ),
    "sphere.sigma_a2": (BAD_NUMBER, lambda v: deqrmt.sphere_coefficients(_R, sigma_a2=v)),
    "sphere.sigma_b2": (BAD_NUMBER, lambda v: deqrmt.sphere_coefficients(_R, sigma_b2=v)),
    "sphere.d": (BAD_INT, lambda v: deqrmt.sphere_coefficients(_R, d=v)),
    "sphere.dps": (BAD_INT, lambda v: deqrmt.sphere_coefficients(_R, dps=v)),
    "dual_series.s": (BAD_NUMBER, lambda v: N.dual_series(_R, v)),
    "dual_series.r_max": (BAD_NUMBER, lambda v: N.dual_series(_R, 1, r_max=v)),
    "dual_series.dps": (BAD_INT, lambda v: N.dual_series(_R, 1, dps=v)),
    "dual_series.max_derivative": (
        BAD_INT.filter(lambda v: not (isinstance(v, int) and v == 0)),
        lambda v: N.dual_series(_R, 1, max_derivative=v),
    ),
    "check_activation.sigma_a2": (BAD_NUMBER, lambda v: deqrmt.check_activation(_R, sigma_a2=v)),
    "check_activation.tau0": (BAD_NUMBER, lambda v: deqrmt.check_activation(_R, tau0=v)),
    "check_activation.mc": (BAD_BOOL, lambda v: deqrmt.check_activation(_R, mc=v)),
    "design_enn.sigma_a2": (BAD_NUMBER, lambda v: deqrmt.design_enn(_R, "hard_tanh", sigma_a2=v)),
    "design_enn.layers": (BAD_INT, lambda v: deqrmt.design_enn(_R, "hard_tanh", layers=v)),
    "design_enn.starts": (BAD_INT, lambda v: deqrmt.design_enn(_R, "hard_tanh", starts=v)),
    "design_enn.seed": (
        BAD_NUMBER | st.integers(max_value=-1),
        lambda v: deqrmt.design_enn(_R, "hard_tanh", seed=v),
    ),
    "design_enn.dps": (BAD_INT, lambda v: deqrmt.design_enn(_R, "hard_tanh", dps=v)),
    "lipschitz_bound.radius": (BAD_INT, lambda v: N.lipschitz_bound(_R, radius=v)),
    "lipschitz_bound.rtol": (BAD_NUMBER, lambda v: N.lipschitz_bound(_R, rtol=v)),
    "lipschitz_bound.budget": (BAD_INT, lambda v: N.lipschitz_bound(_R, budget=v)),
    "equivalent_kernel.c1": (
        BAD_NUMBER,
        lambda v: N.equivalent_kernel(v, 0, 0, 1, _X, _X, np.ones(3), np.ones(3), _X, 1),
    ),
    "equivalent_kernel.X": (
        BAD_ARRAY,
        lambda v: N.equivalent_kernel(1, 0, 0, 1, v, _X, np.ones(3), np.ones(3), _X, 1),
    ),
    "derive_sphere.order": (BAD_INT, lambda v: S.derive_sphere(v)),
    "derive_deq.input_injection": (BAD_BOOL, lambda v: deqrmt.derive_deq(input_injection=v)),
    "derive_fixed_point.center": (BAD_BOOL, lambda v: deqrmt.derive_fixed_point(center=v)),
    "library_activation.params": (
        BAD_PARAMETERS,
        lambda v: S.library_activation("leaky_relu", v),
    ),
    "testing.activations.max_terms": (BAD_INT, lambda v: T.activations(max_terms=v)),
    "testing.activations.cheap": (BAD_BOOL, lambda v: T.activations(cheap=v)),
    "testing.sigma_a2_cap.assumption": (BAD_BOOL, lambda v: T.sigma_a2_cap(_R, assumption=v)),
    "testing.settings.assumption": (BAD_BOOL, lambda v: T.settings(_R, assumption=v)),
    "scan_fixed_points": (BAD_NUMBER, lambda v: deqrmt.scan_fixed_points(v)),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_hostile_values_are_refused_by_name(name: str) -> None:
    """Every hostile value is refused with a DeqrmtError (here always an InvalidArgument) whose
    message is one safe line; never a ValueError, TypeError, AttributeError, a NumPy warning or
    an accepted value."""
    strategy, call = CALLS[name]

    @given(strategy)
    def check(value: Any) -> None:
        _refused(InvalidArgument, lambda: call(value))

    check()


def test_choices_keeps_order_and_repeats_and_refuses_the_rest() -> None:
    """A list of choices: order and repeats kept, at most 4 x the options, each named by index."""
    from deqrmt import _arguments
    from deqrmt._errors import InvalidArgument

    options = ("a", "b")
    assert _arguments.choices(("b", "a", "b"), "kinds", "kinds", options) == ["b", "a", "b"]
    assert _arguments.choices(["a"] * 8, "kinds", "kinds", options) == ["a"] * 8
    with pytest.raises(InvalidArgument, match=r"kinds\[1\]='c'"):
        _arguments.choices(["a", "c"], "kinds", "kinds", options)
    with pytest.raises(InvalidArgument):
        _arguments.choices(["a"] * 9, "kinds", "kinds", options)
    with pytest.raises(InvalidArgument):
        _arguments.choices("ab", "kinds", "kinds", options)


def test_numpy_booleans_are_booleans_and_not_numbers() -> None:
    """numpy 2 names its boolean scalar type ``bool`` (``bool_`` before): both are booleans."""
    import numpy as np

    from deqrmt._arguments import boolean, number
    from deqrmt._errors import InvalidArgument

    assert boolean(np.True_, "center") is True and boolean(np.False_, "center") is False
    with pytest.raises(InvalidArgument, match="a bool is not a number"):
        number(np.True_, "sigma_a2")

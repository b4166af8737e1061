"""Every public argument goes through the one validation layer: ``deqrmt.__all__`` enumerated.

For every function and class of ``deqrmt.__all__`` (the error classes and ``__version__``
aside) and every public method of the objects they return, each parameter of the signature
(``inspect.signature``) is fed a catalogue of wrong values — wrong type, NaN, ±inf, complex,
negative, huge, empty, wrong shape, as apply to the parameter's kind — with every other argument
at a tiny valid value.  Each call must be refused with a :class:`deqrmt.DeqrmtError` whose
message is one line naming the parameter (``kind=5: …``, ``X1 has dtype complex128: …``); a
raw ``TypeError``, a NumPy warning or a silently accepted value fails.

The catalogue is chosen by the parameter's name (:data:`BY_NAME`), then by the type of its
default (a bool default takes the boolean catalogue, an int one the integer catalogue), then
:data:`JUNK` — values wrong for any parameter — so a function exported tomorrow is covered the
day it is exported; a parameter that really takes anything is listed in :data:`TAKES_ANYTHING`
with the reason.  The refusals happen before any heavy work, so the whole catalogue runs in
seconds.
"""

from __future__ import annotations

import inspect
import re
import unicodedata
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
import scipy.sparse
import torch

import deqrmt
from deqrmt import DeqrmtError
from deqrmt._arguments import show
from deqrmt.validate import paper_mixture

_RNG = np.random.default_rng(0)
X = _RNG.standard_normal((4, 3)) / 2
NAN, INF = float("nan"), float("inf")


class Opaque:
    """An object of no accepted type, with a stable repr."""

    def __repr__(self) -> str:
        return "Opaque()"


def _bad_mixture(field: str) -> Any:
    mix = paper_mixture(20)
    if field == "means":
        mix.means[0, 0] = NAN  # numpy arrays of a frozen dataclass stay writable
    else:
        mix.covariances[1, 3] = -1.0
    return mix


# --- the catalogues --------------------------------------------------------------------------------

#: wrong for any parameter: the default catalogue of a parameter nobody has classified yet
JUNK: list[Any] = [Opaque(), 1 + 2j, b"\x00", {"a": 1}]
NUMBER: list[Any] = [
    "abc", NAN, INF, -INF, 1 + 2j, np.complex128(0.2 + 1j), [0.2], Opaque(), True, 10**5000,
    b"0.2", "\x1b[2J",
]  # fmt: skip
POSITIVE = [*NUMBER, -1, 0]
INTEGER: list[Any] = ["3", 1.5, NAN, INF, True, [3], Opaque(), 1 + 2j, 10**5000, -1]
BOOL: list[Any] = ["False", "yes", 0, 1, None, [], 1.0, np.float64(1.0)]
CHOICE: list[Any] = ["nonsense", "", 5, None, ["ck"], 1 + 2j, Opaque()]
TRAINABLE: list[Any] = [5, None, "", "Z", ["a", ["A"]], iter("aA"), Opaque()]
ACTIVATION: list[Any] = [
    5, None, ["tanh"], Opaque(), 1 + 2j, lambda x: x, "", "nonsense(x", "no_such_function",
]  # fmt: skip
DATA: list[Any] = [
    X + 1j,  # complex: the imaginary part was dropped
    torch.tensor(X) + 1j,
    X.astype(object),
    X > 0,  # bool
    torch.tensor(X > 0),
    X.astype(str),
    X[0],  # 1-D
    X[None],  # 3-D
    np.zeros((0, 3)),  # no rows
    np.zeros((3, 0)),  # no features
    np.where(X > 0, NAN, X),
    np.where(X > 0, INF, X),
    torch.tensor(np.where(X > 0, NAN, X)),
    [[0.1, 0.2, 0.3], [0.1]],  # ragged
    scipy.sparse.csr_matrix(X),
    torch.tensor(X).to_sparse(),
    "abc",
    5,
    None,
    {"a": 1},
    Opaque(),
]
PROGRESS: list[Any] = [3, "yes", 1.5, [], Opaque()]
SEED: list[Any] = [-1, 1.5, "0", NAN, True, 10**5000, None, 1 + 2j]
SEQUENCE: list[Any] = [
    "abc",
    [],
    [[0.2]],
    [NAN],
    [0.2 + 1j],
    iter([0.2]),
    {0.2},
    np.full((2, 2), 0.2),
]
ACTIVATIONS: list[Any] = [5, [], [5], iter(["relu"]), {"relu"}, None, Opaque(), ["relu"] * 100]
LABELS: list[Any] = ["abc", 5, {"a": 1}, [0, 1], np.zeros((4, 2)), [0, "a", 1, 2.5]]
MIXTURE: list[Any] = [
    5, [], Opaque(), {"p": 20}, {"nonsense": 1}, "/nonexistent/mixture.toml",
    _bad_mixture("means"), _bad_mixture("covariances"),
]  # fmt: skip
ENN: list[Any] = [5, "abc", [], {}, Opaque()]
FRACTION_01 = [*POSITIVE, 2]  # max_ks, max_spike_error: in (0, 1]

#: the catalogue of a parameter, by its name
BY_NAME: dict[str, list[Any]] = {
    "activation": ACTIVATION,
    "act": ACTIVATION,
    "deq_activation": ACTIVATION,
    "text": ACTIVATION,
    "activations": ACTIVATIONS,
    "sigma_a2": [*NUMBER, -1],
    "sigma_b2": [*NUMBER, -1],
    "tau0": NUMBER,
    "tol": [*POSITIVE, 1.0],
    "max_ks": FRACTION_01,
    "max_spike_error": FRACTION_01,
    "dps": [*INTEGER, 0],
    "d": [*INTEGER, 0],
    "n": [*INTEGER, 0],
    "width": [*INTEGER, 0],
    "layers": [*INTEGER, 0],
    "starts": [*INTEGER, 0],
    "points": [*INTEGER, 0, 10**9],
    "tile": [*INTEGER, 0, 4096],
    "seed": SEED,
    "trainable": TRAINABLE,
    "kind": CHOICE,
    "data": CHOICE,
    "device": CHOICE,
    "method": CHOICE,
    "key": CHOICE,
    "family": CHOICE,
    "kernel": CHOICE,
    "parameter": CHOICE,
    "label": CHOICE,
    "progress": PROGRESS,
    "X": DATA,
    "X1": DATA,
    "X2": [*DATA, np.zeros((2, 5))],  # 5 features where X1 has 3
    "Y": [*DATA, np.zeros((2, 5))],
    "labels": LABELS,
    "X_train": DATA,
    "X_test": [*DATA, np.zeros((2, 5))],  # 5 features where X_train has 3
    "y_train": [
        "abc",
        5,
        {"a": 1},
        [0, 1],
        np.zeros((4, 2, 1)),
        [0, "a", 1, 2.5],
        [0, NAN, 1, 2],
        np.ones(4) + 1j,
        None,
        Opaque(),
    ],
    "diag_reg": [*NUMBER, -1],
    "statistics": [5, "abc", {}, Opaque()],
    "mixture": MIXTURE,
    "enn": ENN,
    "problem": ["tanh", 5, None, Opaque()],
    "t": ["abc", Opaque(), 1 + 2j, [[1.0], [2.0, 3.0]], None, True],
    "x": ["abc", 1 + 2j, Opaque(), True],
}
#: (function or method, parameter) → catalogue, where the name alone does not decide
BY_CALL: dict[tuple[str, str], list[Any]] = {
    ("kernels", "center"): NUMBER,  # c of φ − c here, a flag of the coefficients elsewhere
    ("DEQKernel", "center"): NUMBER,
    ("DEQKernel.set_params", "center"): NUMBER,
    ("deq_coefficients_sweep", "sigma_a2"): SEQUENCE,
    ("deq_coefficients_sweep", "sigma_b2"): SEQUENCE,
    ("DEQCoefficients.to_dict", "kind"): [5, "float", int, Opaque()],
}
#: parameters that take any value on purpose, with the reason
TAKES_ANYTHING: dict[tuple[str, str], str] = {
    ("DEQCoefficients.get", "key"): "Mapping.get: a missing key gives the default",
    ("DEQCoefficients.get", "default"): "Mapping.get: returned as given",
    ("SphereCoefficients.get", "key"): "Mapping.get: a missing key gives the default",
    ("SphereCoefficients.get", "default"): "Mapping.get: returned as given",
}

#: required arguments: the tiny valid value every call starts from, by parameter name
REQUIRED: dict[str, Any] = {
    "activation": "relu",
    "act": "relu",
    "deq_activation": "relu",
    "text": "relu",
    "X": X,
    "X1": X,
    "X_train": X,
    "y_train": np.arange(4.0),
    "X_test": X[:2],
    "key": "alpha_1",
    "family": "hard_tanh",
    "activations": ["relu"],
    "parameter": "sigma_a2",
    "label": "exact",
    "t": 0.5,
    "x": 0.1,
}
#: the base arguments of a call, where the defaults would be slow or not apply
BASE: dict[str, dict[str, Any]] = {
    "deq_coefficients": {"dps": 12},
    "sensitivities": {"dps": 8},
    "sphere_coefficients": {"dps": 12},
    "explicit_coefficients": {"dps": 12},
    "deq_coefficients_sweep": {"sigma_a2": [0.2]},
    "spectrum": {"n": 100, "d": 120, "points": 64},
    "risk": {"n": 16, "ratios": [1]},
    "design_enn": {"dps": 12, "starts": 1, "layers": 1},
    "scan_fixed_points": {"problem": deqrmt.DEQProblem.make("relu", dps=12)},
}
#: extra base arguments for one parameter: the context in which it is read at all
CONTEXT: dict[tuple[str, str], dict[str, Any]] = {
    ("spectrum", "mixture"): {"data": "gmm"},
    ("spectrum", "enn"): {"data": "gmm"},
    ("spectrum", "seed"): {"mc": True},  # the seed of the sampled data: read with mc
    ("spectrum", "width"): {"mc": True},
    ("spectrum", "device"): {"mc": True},
}
#: records: built by the library and handed to the user (their constructors are not an entry
#: point; DEQProblem.make is DEQProblem's checked constructor); their methods are enumerated
RECORDS = {
    "CheckReport",
    "DEQCoefficients",
    "DEQProblem",
    "DEQSensitivities",
    "ExplicitCoefficients",
    "Prediction",
    "RiskCurve",
    "SpectralLaw",
    "SpectrumReport",
    "Verified",
}


def _public() -> list[tuple[str, Any]]:
    out = []
    for name in deqrmt.__all__:
        obj = getattr(deqrmt, name)
        if name == "__version__" or (isinstance(obj, type) and issubclass(obj, BaseException)):
            continue
        out.append((name, obj))
    return out


# --- the objects whose methods are enumerated --------------------------------------------------------


def _instances() -> dict[str, Any]:
    """One tiny instance of each object the public functions return (cached per session)."""
    coef = deqrmt.deq_coefficients("relu", dps=12)
    report = deqrmt.spectrum("relu", n=100, d=120, points=64)
    return {
        "DEQCoefficients": coef,
        "Verified": coef["alpha_1"],
        "DEQProblem": coef.problem,
        "DEQSensitivities": deqrmt.sensitivities("relu", dps=8),
        "ExplicitCoefficients": deqrmt.explicit_coefficients(["relu"], dps=12),
        "SphereCoefficients": deqrmt.sphere_coefficients("relu", dps=12),
        "SpectrumReport": report,
        "SpectralLaw": report.ck.law,
        "KernelSpectrum": report.ck,
        "DEQKernel": deqrmt.DEQKernel("relu"),
        "EquivalentKernels": deqrmt.equivalent_kernels("relu", X),
        "FixedPointScan": deqrmt.scan_fixed_points(coef.problem),
        "CheckReport": deqrmt.check_activation("relu"),
        "Prediction": deqrmt.predict("relu", X, np.arange(4.0), X[:2]),
        "RiskCurve": deqrmt.risk("relu", n=16, ratios=[1], ridges=[1e-2]),
    }


_CACHE: dict[str, Any] = {}


def instances() -> dict[str, Any]:
    if not _CACHE:
        _CACHE.update(_instances())
    return _CACHE


def _methods(label: str, obj: Any) -> Iterator[tuple[str, Callable[..., Any], inspect.Signature]]:
    """Public methods (and ``__call__``) of ``obj`` that deqrmt defines and that take arguments."""
    for name, member in inspect.getmembers(type(obj)):
        if name.startswith("_") and name != "__call__":
            continue
        if isinstance(inspect.getattr_static(type(obj), name, None), property):
            continue
        fn = getattr(obj, name, None)
        if not callable(fn) or not (getattr(member, "__module__", "") or "").startswith("deqrmt"):
            continue
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            continue
        if sig.parameters:
            yield f"{label}.{name}", fn, sig


# --- the cases -------------------------------------------------------------------------------------


def _catalogue(call: str, param: inspect.Parameter) -> list[Any]:
    name = param.name
    if (call, name) in BY_CALL:
        values = BY_CALL[(call, name)]
    elif name in BY_NAME:
        values = BY_NAME[name]
    elif isinstance(param.default, bool):
        values = BOOL
    elif isinstance(param.default, int):
        values = [*INTEGER, 0]
    elif isinstance(param.default, float):
        values = NUMBER
    else:
        values = JUNK
    default = param.default
    return [
        v for v in values if not (v is default or (type(v) is type(default) and _same(v, default)))
    ]


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return False


def _required(call: str, sig: inspect.Signature) -> dict[str, Any]:
    base = dict(BASE.get(call, {}))
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.name in base:
            continue
        if p.default is inspect.Parameter.empty:
            if p.name not in REQUIRED:
                raise AssertionError(
                    f"{call}: no valid value for the required parameter {p.name!r}; add one to "
                    "REQUIRED in tests/test_api_catalogue.py"
                )
            base[p.name] = REQUIRED[p.name]
    return base


def _calls() -> list[tuple[str, str]]:
    """(callable, parameter) for every parameter of every public callable; the record
    classes' constructors are replaced by their methods, enumerated on an instance."""
    out = []
    for name, obj in _public():
        if name not in RECORDS:
            for p in inspect.signature(obj).parameters.values():
                assert p.kind is not p.POSITIONAL_ONLY, f"{name}: positional-only {p.name}"
                out.append((name, p.name))
    out += [
        ("DEQProblem.make", p)
        for p in inspect.signature(deqrmt.DEQProblem.make).parameters
        if p != "cls"
    ]
    return out


def _method_calls() -> list[tuple[str, str]]:
    out = []
    for label, obj in instances().items():
        for call, _, sig in _methods(label, obj):
            for p in sig.parameters.values():
                if p.kind is p.VAR_KEYWORD:  # replace(**changes), set_params(**params)
                    out += [(call, f"**{f}") for f in _keyword_fields(call)]
                else:
                    out.append((call, p.name))
    return out


def _keyword_fields(call: str) -> list[str]:
    if call == "DEQProblem.replace":
        fields = ["sigma_a2", "sigma_b2", "tau0", "dps", "center", "trainable", "activation"]
    elif call == "DEQKernel.set_params":
        fields = list(inspect.signature(deqrmt.DEQKernel).parameters)
    else:
        raise AssertionError(f"{call} takes **kwargs: list the names it accepts")
    return [*fields, "no_such_parameter"]


def _names(msg: str, name: str) -> bool:
    return re.search(rf"(?<![\w]){re.escape(name)}(?=[=:\s\[.,]|$)", msg) is not None


def _one_line(msg: str) -> None:
    assert msg and "\n" not in msg and "\r" not in msg, repr(msg)
    assert all(unicodedata.category(c) not in ("Cc", "Cf") for c in msg), repr(msg)
    assert len(msg) < 700, len(msg)


def _refuses(call: str, name: str, fn: Callable[[], Any], value: Any) -> str | None:
    """None when ``fn()`` is refused as it should be, else what went wrong."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", np.exceptions.ComplexWarning)
            warnings.simplefilter("error", RuntimeWarning)
            fn()
    except DeqrmtError as e:
        msg = str(e)
        _one_line(msg)
        text_activation = name in ("activation", "act", "deq_activation", "text") and isinstance(
            value, str
        )  # a text that does not parse is described by its text ('cannot parse …')
        if _names(msg, name) or (text_activation and isinstance(e, deqrmt.InvalidArgument)):
            return None
        return f"{call}({name}={show(value)}): the message does not name {name!r}: {msg}"
    except Exception as e:  # noqa: BLE001 - anything else is the defect under test
        return f"{call}({name}={show(value)}): raw {type(e).__name__}: {str(e)[:200]}"
    return f"{call}({name}={show(value)}): accepted"


def _resolve(call: str) -> tuple[Callable[..., Any], inspect.Signature]:
    if call == "DEQProblem.make":
        return deqrmt.DEQProblem.make, inspect.signature(deqrmt.DEQProblem.make)
    if "." in call:
        for label, fn, sig in _methods(call.split(".")[0], instances()[call.split(".")[0]]):
            if label == call:
                return fn, sig
        raise AssertionError(call)
    obj = getattr(deqrmt, call)
    return obj, inspect.signature(obj)


def _check(call: str, name: str) -> list[str]:
    fn, sig = _resolve(call)
    if name.startswith("**"):
        field = name[2:]
        if call == "DEQKernel.set_params":
            param = inspect.signature(deqrmt.DEQKernel).parameters.get(field)
            key = ("DEQKernel.set_params", field)
        else:
            param = inspect.signature(deqrmt.DEQProblem.make).parameters.get(field)
            key = ("DEQProblem.make", field)
        values = (
            _catalogue(key[0], param) if param is not None else [1]
        )  # an unknown keyword: any value
        return [
            p
            for v in values
            if (p := _refuses(call, field, lambda v=v: fn(**{field: v}), v)) is not None
        ]
    if (call, name) in TAKES_ANYTHING:
        return []
    base = _required(call, sig)
    base.update(CONTEXT.get((call, name), {}))
    problems = []
    for value in _catalogue(call, sig.parameters[name]):
        kwargs = {**base, name: value}
        problem = _refuses(call, name, lambda kwargs=kwargs: fn(**kwargs), value)
        if problem is not None:
            problems.append(problem)
    return problems


@pytest.mark.parametrize(("call", "name"), _calls())
def test_every_public_parameter_refuses_wrong_values_by_name(call: str, name: str) -> None:
    problems = _check(call, name)
    assert not problems, "\n".join(problems)


def test_every_public_method_refuses_wrong_values_by_name() -> None:
    """The methods of the returned objects, enumerated on one instance of each."""
    problems = [p for call, name in _method_calls() for p in _check(call, name)]
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems)


def test_the_enumeration_reaches_every_public_name() -> None:
    """The test above is not vacuous: every public callable contributes its parameters, and
    the catalogue has a value for each (a parameter without one would be skipped)."""
    calls = _calls()
    covered = {c.split(".")[0] for c, _ in calls} | set(instances())
    no_parameters = {n for n, obj in _public() if not inspect.signature(obj).parameters}
    assert no_parameters == {"derive_layer"}  # nothing to check
    assert {name for name, _ in _public()} <= covered | no_parameters
    assert ("kernels", "X1") in calls and ("spectrum", "mixture") in calls
    methods = _method_calls()
    assert ("DEQKernel.__call__", "X") in methods and ("DEQKernel.diag", "X") in methods
    assert ("SpectralLaw.cdf", "t") in methods and ("DEQSensitivities.wrt", "parameter") in methods
    assert ("KernelSpectrum.sample", "label") in methods
    assert ("DEQKernel.set_params", "**kind") in methods
    for call, name in calls:
        if (call, name) not in TAKES_ANYTHING:
            _, sig = _resolve(call)
            assert _catalogue(call, sig.parameters[name]), (call, name)


def test_an_unclassified_parameter_gets_the_junk_catalogue() -> None:
    """A function exported tomorrow with a parameter nobody has classified is still fed JUNK."""

    def f(brand_new: Any = None) -> None: ...

    param = inspect.signature(f).parameters["brand_new"]
    assert _catalogue("f", param) == JUNK
    # and a function that forgets to check it is caught: JUNK is accepted without an error
    assert _refuses("f", "brand_new", lambda: f(brand_new=JUNK[0]), JUNK[0]) == (
        "f(brand_new=Opaque()): accepted"
    )


# --- the cases of the hostile review, one by one -------------------------------------------------

_C = X + 1e-3j
REVIEW: dict[str, tuple[type[DeqrmtError], str, Callable[[], Any]]] = {
    "kernels complex numpy": (
        deqrmt.InvalidArgument,
        "X1 has dtype complex128",
        lambda: deqrmt.kernels("relu", _C),
    ),
    "kernels complex torch": (
        deqrmt.InvalidArgument,
        "X1 has dtype torch.complex128",
        lambda: deqrmt.kernels("relu", torch.tensor(_C)),
    ),
    "DEQKernel.diag complex": (
        deqrmt.InvalidArgument,
        "X has dtype complex128",
        lambda: deqrmt.DEQKernel().diag(_C),
    ),
    "equivalent_kernels complex": (
        deqrmt.InvalidArgument,
        "X has dtype complex128",
        lambda: deqrmt.equivalent_kernels("tanh", _C),
    ),
    "trainable=5": (
        deqrmt.UnknownTrainable,
        "trainable=5",
        lambda: deqrmt.kernels("relu", X, trainable=5),
    ),
    "trainable=None": (
        deqrmt.UnknownTrainable,
        "trainable=None",
        lambda: deqrmt.kernels("relu", X, trainable=None),
    ),
    "center='abc'": (
        deqrmt.InvalidArgument,
        "center='abc' is not a number",
        lambda: deqrmt.kernels("relu", X, center="abc"),
    ),
    "progress=3": (
        deqrmt.InvalidArgument,
        "progress=3",
        lambda: deqrmt.kernels("relu", X, progress=3),
    ),
    "points='a'": (
        deqrmt.InvalidArgument,
        "points='a'",
        lambda: deqrmt.spectrum("relu", points="a"),
    ),
    "points=nan": (
        deqrmt.InvalidArgument,
        "points=nan",
        lambda: deqrmt.spectrum("relu", points=NAN),
    ),
    "points=None": (
        deqrmt.InvalidArgument,
        "points=None",
        lambda: deqrmt.spectrum("relu", points=None),
    ),
    "points=10**9": (
        deqrmt.BudgetExceeded,
        "points=1000000000: choose an integer from 64 to 20001",
        lambda: deqrmt.spectrum("relu", points=10**9),
    ),
    "mixture={...}": (
        deqrmt.SpecError,
        "mixture: `class`",
        lambda: deqrmt.spectrum("relu", data="gmm", mixture={"p": 20}),
    ),
    "mixture=a path": (
        deqrmt.FileError,
        "the mixture '/nonexistent/m.toml'",
        lambda: deqrmt.spectrum("relu", data="gmm", mixture="/nonexistent/m.toml"),
    ),
    "mixture with NaN means": (
        deqrmt.InvalidArgument,
        "mixture.means has non-finite entries",
        lambda: deqrmt.spectrum("relu", data="gmm", n=100, mixture=_bad_mixture("means")),
    ),
    "mixture with a negative variance": (
        deqrmt.InvalidArgument,
        "mixture.covariances: a negative variance",
        lambda: deqrmt.spectrum("relu", data="gmm", n=100, mixture=_bad_mixture("cov")),
    ),
    "seed=-1 with mc": (
        deqrmt.InvalidArgument,
        "seed=-1: choose an integer from 0",
        lambda: deqrmt.spectrum("relu", n=100, d=120, mc=True, seed=-1),
    ),
    "seed=1.5 with mc": (
        deqrmt.InvalidArgument,
        "seed=1.5: expected an integer",
        lambda: deqrmt.spectrum("relu", n=100, d=120, mc=True, seed=1.5),
    ),
}


@pytest.mark.parametrize("case", sorted(REVIEW))
def test_the_cases_of_the_hostile_review(case: str) -> None:
    """Each was a raw exception or a silently wrong number; now a named one-line error."""
    error, says, call = REVIEW[case]
    with pytest.raises(error) as info:
        call()
    _one_line(str(info.value))
    assert says in str(info.value), str(info.value)


def test_accepted_values_are_converted_deliberately() -> None:
    """What the checks accept means what it says: tol='1e-8' is the number 1e-8; integer and
    float32 data are the same points in float64 (uint8 255 is 255, not -1)."""
    ref = deqrmt.kernels("tanh", X, tol=1e-8)
    assert np.array_equal(deqrmt.kernels("tanh", X, tol="1e-8"), ref)
    Z = np.arange(12).reshape(4, 3) / 20
    as_float = deqrmt.kernels("relu", Z)
    for dtype in (np.float32, np.float16):
        got = deqrmt.kernels("relu", Z.astype(dtype))
        want = deqrmt.kernels("relu", Z.astype(dtype).astype(np.float64))
        assert np.array_equal(got, want) and np.allclose(got, as_float, rtol=1e-3)
    U = np.array([[255, 0], [1, 2]], dtype=np.uint8)
    assert np.array_equal(deqrmt.kernels("relu", U), deqrmt.kernels("relu", U.astype(float)))
    t = deqrmt.kernels("relu", torch.tensor(U))
    assert t.dtype == torch.float64 and np.array_equal(t.numpy(), deqrmt.kernels("relu", U))
    for dtype in (torch.float16, torch.bfloat16, torch.int16):
        T16 = torch.tensor(Z * 20, dtype=dtype)
        got = deqrmt.kernels("relu", T16)
        assert got.dtype == torch.float64
        assert torch.equal(got, deqrmt.kernels("relu", T16.to(torch.float64)))
    L = Z.astype(np.longdouble)
    assert np.array_equal(deqrmt.kernels("relu", L), as_float)
    huge = np.full((2, 2), np.finfo(np.longdouble).max / 2)  # beyond float64's range
    if np.finfo(np.longdouble).max <= np.finfo(np.float64).max:
        return  # longdouble is float64 on this platform: nothing beyond its range
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(deqrmt.InvalidArgument, match="X1 has non-finite entries"):
            deqrmt.kernels("relu", huge)


def test_deqkernel_checks_like_kernels_and_stays_a_scikit_learn_kernel() -> None:
    """A refused set_params leaves the kernel as it was; clone (which checks that the
    constructor stores the very objects passed) still works; the values are kernels'."""
    from sklearn.base import clone

    k = deqrmt.DEQKernel("relu", kind="ck", sigma_a2="1/5")
    with pytest.raises(deqrmt.InvalidArgument, match="kind='x'"):
        k.set_params(kind="x", sigma_a2=0.3)
    assert k.kind == "ck" and k.sigma_a2 == "1/5"
    k2 = clone(k)
    assert k2.get_params() == k.get_params()
    assert np.array_equal(k2(X), deqrmt.kernels("relu", X, sigma_a2="1/5"))
    assert np.array_equal(k2.diag(X), np.diag(deqrmt.kernels("relu", X, sigma_a2="1/5")))
    with pytest.raises(deqrmt.InvalidArgument, match="eval_gradient=True"):
        k2(X, X, eval_gradient=True)

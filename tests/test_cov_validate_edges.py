"""Edges of the validation layer's plain checks: a mixture description file that is not
one, mixture statistics that do not fit together, and the verdict's arguments and per-kernel
results (``passed``, ``as_dict``, ``bound``).

Expected values are worked out in the test: the bound is the n^(−½) law by hand; an exact
equivalent (errors 0) passes at every n.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from deqrmt import InvalidArgument, SpecError
from deqrmt.validate import MixtureStatistics
from deqrmt.validate._mixture_spec import MAX_CLASSES, load_mixture, parse_mixture
from deqrmt.validate._verdict import judge_errors

ONE = {"weight": 1.0, "mean": [1.0], "variance": 1.0}


@pytest.mark.parametrize(
    ("doc", "match"),
    [
        ({"class": [ONE]}, r"`p` is missing: give the dimension p"),
        (
            {"p": 4, "class": [ONE] * (MAX_CLASSES + 1)},
            f"{MAX_CLASSES + 1} classes; at most {MAX_CLASSES}",
        ),
        ({"p": 4, "class": [{"weight": 1.0, "mean": [1.0]}]}, r"class 1, `variance` is missing"),
        ({"p": 4, "class": [{**ONE, "weight": 0.0}]}, r"class 1, `weight` must be > 0"),
        (
            {"p": 4, "class": [{**ONE, "weight": "1"}]},
            r"class 1, `weight` = '1': expected a number",
        ),
        ({"p": 4, "class": [{**ONE, "mean": []}]}, r"`mean`: expected 1 to 4 numbers, got 0"),
        (
            {"p": 2, "class": [{**ONE, "variance": [1.0, 2.0, 3.0]}]},
            r"must have p = 2 entries, got 3",
        ),
    ],
)
def test_a_mixture_description_that_is_not_one_is_refused_by_key(doc: dict, match: str) -> None:
    with pytest.raises(SpecError, match=match):
        parse_mixture(doc, "mix.toml")


def test_a_per_coordinate_variance_is_read_as_given() -> None:
    mix = parse_mixture(
        {"p": 3, "class": [{"weight": 1.0, "mean": [2.0], "variance": [1.0, 0.5, 2.0]}]}
    )
    np.testing.assert_array_equal(mix.covariances, [[1.0, 0.5, 2.0]])
    np.testing.assert_array_equal(mix.means, [[2.0, 0.0, 0.0]])


def test_a_mixture_file_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "mix.toml"
    path.write_bytes(b"p = 4\n# \xff\xfe\n")
    with pytest.raises(SpecError, match=r"mix\.toml is not UTF-8 text"):
        load_mixture(str(path))


def _stats(**changes: object) -> dict[str, object]:
    base: dict[str, object] = {
        "J": np.eye(3)[:, :2],
        "psi": np.zeros(3),
        "t": np.zeros(2),
        "T": np.eye(2),
        "tau0": 1.0,
    }
    return {**base, **changes}


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"J": [[1.0]]}, r"MixtureStatistics\.J: expected a numpy array of real numbers"),
        ({"psi": np.array(["a", "b", "c"])}, r"MixtureStatistics\.psi: expected a numpy array"),
        ({"t": np.array([0.0, np.inf])}, r"MixtureStatistics\.t has non-finite entries"),
        ({"J": np.zeros(3)}, r"MixtureStatistics\.J must be n × K, got \(3,\)"),
        ({"T": np.eye(3)}, r"inconsistent shapes: .*T \(3, 3\)"),
        ({"tau0": 0.0}, r"tau0 must be positive and finite, got 0\.0"),
        ({"tau0": math.inf}, r"tau0 must be positive and finite, got inf"),
    ],
)
def test_mixture_statistics_that_do_not_fit_together_are_refused(changes: dict, match: str) -> None:
    with pytest.raises(InvalidArgument, match=match):
        MixtureStatistics(**_stats(**changes))  # type: ignore[arg-type]


def test_verdict_arguments_are_checked() -> None:
    with pytest.raises(InvalidArgument, match=r"max_slope=… must be a finite number, got nan"):
        judge_errors([128], {"CK": [0.1]}, max_slope=math.nan)
    with pytest.raises(InvalidArgument, match=r"relative errors must be ≥ 0"):
        judge_errors([128, 256], {"CK": [0.1, -0.1]})
    with pytest.raises(InvalidArgument, match=r"sample sizes must be positive integers, got \[0\]"):
        judge_errors([0], {"CK": [0.1]})
    with pytest.raises(InvalidArgument, match=r"sample sizes must be positive integers, got \[\]"):
        judge_errors([], {"CK": []})


def test_errors_on_the_root_law_pass_and_the_bound_is_that_law() -> None:
    # errors exactly 0.2·√(128/n): slope −½ and level 0.2·√(128/reference_n), by hand
    ns = [128, 256, 512]
    v = judge_errors(ns, {"CK": [0.2 * math.sqrt(128 / n) for n in ns]}, max_error=1.0)
    ck = v.kernels[0]
    assert ck.passed and ck.as_dict()["passed"] is True and ck.as_dict()["reasons"] == []
    assert ck.rate.slope == pytest.approx(-0.5, abs=1e-12)
    assert ck.level.value == pytest.approx(0.2 * math.sqrt(128 / v.reference_n), rel=1e-12)
    # bound(n) = max_error · √(reference_n / n)
    assert v.bound(v.reference_n // 4) == pytest.approx(2 * v.max_error, rel=1e-15)
    # an error of exactly 0 at every n: no rate to measure (a flat slope is refused)
    flat = judge_errors(ns, {"CK": [0.0, 0.0, 0.0]}).kernels[0]
    assert not flat.passed and flat.as_dict()["rate"]["passed"] is False


# -- the implicit-bias check's problem ----------------------------------------------------------


def test_bias_problem_arguments_are_checked(deq) -> None:
    pytest.importorskip("torch")
    from deqrmt.validate._bias import BiasProblem, check_bias, make_problem

    with pytest.raises(InvalidArgument, match=r"seed=-1 must be a non-negative int"):
        make_problem(deq, n=2, d=5, seed=-1)
    with pytest.raises(InvalidArgument, match=r"n=True must be a non-negative int"):
        make_problem(deq, n=True, d=5)
    for k in (0, 6):
        with pytest.raises(InvalidArgument, match=rf"k={k} must lie in \[1, d=5\]"):
            make_problem(deq, n=2, d=5, k=k)
    with pytest.raises(InvalidArgument, match=r"shapes X\(2, 5\), y\(3,\), β\*\(5,\)"):
        BiasProblem(np.zeros((2, 5)), np.zeros(3), np.zeros(5), "sparse", 0)
    for tol in (0.0, 1.0, -1.0):
        with pytest.raises(InvalidArgument, match=r"tolerance=.* must lie in \(0, 1\)"):
            check_bias(deq, n=2, d=5, tolerance=tol)


# -- the sphere's Monte Carlo ---------------------------------------------------------------------


D_SPHERE = 400  # correlations of random points ~ d^(−½): within the dual series' reach


@pytest.fixture(scope="module")
def tanh_sphere():  # type: ignore[no-untyped-def]
    from deqrmt.numeric import sphere_coefficients

    return sphere_coefficients("tanh", "0.2", None, d=D_SPHERE, dps=15)


def test_sphere_sample_and_kernels_refuse_what_is_not_on_the_sphere(tanh_sphere) -> None:
    from deqrmt.validate._sphere_mc import implicit_sphere_kernels, sphere_sample, validate_sphere

    with pytest.raises(InvalidArgument, match=r"need n >= 2 and d >= 2, got n=1, d=5"):
        sphere_sample(1, 5)
    X = sphere_sample(4, D_SPHERE, seed=1)
    with pytest.raises(InvalidArgument, match="the columns of X must have unit norm"):
        implicit_sphere_kernels(2 * X, "tanh", tanh_sphere)
    with pytest.raises(InvalidArgument, match=r"coefficients were computed for d = 400, not d = 9"):
        validate_sphere("tanh", n=4, d=9, coefficients=tanh_sphere)


@pytest.mark.parametrize("n", [3, 50, 300])
def test_the_spectral_norm_of_a_symmetric_matrix(n: int) -> None:
    # a symmetric matrix with known eigenvalues: Q diag(w) Qᵀ, the largest |w| is 7 (negative)
    from deqrmt.validate._sphere_mc import _opnorm

    rng = np.random.default_rng(n)
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    w = rng.uniform(-1, 1, n)
    w[n // 2] = -7.0
    a = (q * w) @ q.T
    assert _opnorm(a) == pytest.approx(7.0, rel=1e-10)


# -- the torch context on plain numbers -----------------------------------------------------------


def test_the_torch_context_on_python_numbers_answers_python_floats() -> None:
    pytest.importorskip("torch")
    from deqrmt.validate._torch_context import TORCH

    # references: Γ(5) = 4! = 24, log(1 + e⁰) = log 2, H(−1) = 0, H(0) = h0
    assert TORCH.gamma(5.0) == pytest.approx(24.0, rel=1e-15)
    assert TORCH.softplus(0.0) == pytest.approx(math.log(2), rel=1e-15)
    assert TORCH.heaviside(-1.0, 0.5) == 0.0 and TORCH.heaviside(0.0, 0.5) == 0.5
    assert TORCH.maximum(2, 3, 1) == 3 and TORCH.minimum(2.5, -1) == -1
    assert TORCH.logical_not(True) is False and TORCH.logical_not(0) is True
    assert TORCH.piecewise((False, 1.0), (True, 2.0)) == 2.0
    assert math.isnan(TORCH.piecewise((False, 1.0)))


def test_the_torch_context_lifts_integer_tensors_to_float64() -> None:
    torch = pytest.importorskip("torch")
    from deqrmt.validate._torch_context import TORCH

    t = torch.tensor([1, 4])
    m = TORCH.maximum(t, 2.5)
    assert m.dtype == torch.float64 and m.tolist() == [2.5, 4.0]
    t = torch.tensor([-1.0, 0.0, 2.0], dtype=torch.float32)
    assert TORCH.logical_not(t > 0).tolist() == [True, True, False]
    # a constant condition among tensor ones: lanes where no condition holds are nan
    out = TORCH.piecewise((t > 1, t), (False, 5.0), (t < 0, 0.0))
    assert out.dtype == torch.float32
    assert out[0].item() == 0.0 and math.isnan(out[1].item()) and out[2].item() == 2.0


# -- the per-sample Gaussian rule around kinks ------------------------------------------------


def _relu_mean(q: float, k: float) -> float:
    """E[max(√q ξ − k, 0)], ξ ~ N(0, 1), in closed form: √q·pdf(k/√q) − k·P(ξ > k/√q)."""
    s = math.sqrt(q)
    z = k / s
    return s * math.exp(-z * z / 2) / math.sqrt(2 * math.pi) - k * 0.5 * math.erfc(z / math.sqrt(2))


def _rule_mean(q: list[float], kinks: tuple[float, ...], f) -> list[float]:  # type: ignore[no-untyped-def]
    torch = pytest.importorskip("torch")
    from deqrmt.validate._quadrature import gaussian_rule

    qt = torch.tensor(q, dtype=torch.float64)
    rule = gaussian_rule(qt, kinks)
    s = qt.sqrt()[:, None]
    out = f(s * rule.xi[None, :]) @ rule.w
    if rule.xi_local.shape[1]:
        out = out + (f(s * rule.xi_local) * rule.w_local).sum(dim=1)
    return out.tolist()


@pytest.mark.parametrize(
    ("q", "kinks"),
    [
        ([1.0, 4.0], (0.5,)),  # one kink interval, each sample its own panels
        ([2.0, 2.0], (1.0,)),  # one variance: the kink is a shared node
        ([1.0, 4.0], (0.5, 0.6)),  # overlapping kink intervals, merged
        ([1.0, 1.5], (-0.3, 0.0, 30.0)),  # a kink at 0; one beyond ξ = 14 (no node needed)
    ],
)
def test_the_rule_integrates_kinked_functions_to_rounding(
    q: list[float], kinks: tuple[float, ...]
) -> None:
    torch = pytest.importorskip("torch")

    def f(x):  # type: ignore[no-untyped-def]
        return sum(torch.clamp(x - k, min=0) for k in kinks)

    got = _rule_mean(q, kinks, f)
    for qi, g in zip(q, got, strict=True):
        want = sum(_relu_mean(qi, k) for k in kinks)
        assert g == pytest.approx(want, rel=1e-13, abs=1e-16), (qi, kinks)


def test_the_spectrum_reads_diagonal_covariance_matrices_and_refuses_others() -> None:
    from deqrmt.validate import GaussianMixture
    from deqrmt.validate._spectrum_laws import diagonal_covariances

    means = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    variances = np.array([[1.0, 2.0, 3.0], [0.5, 0.5, 4.0]])
    full = np.stack([np.diag(v) for v in variances])
    mix = GaussianMixture(means, full, np.array([0.5, 0.5]))
    np.testing.assert_array_equal(diagonal_covariances(mix), variances)
    full[1, 0, 2] = full[1, 2, 0] = 0.1
    mix = GaussianMixture(means, full, np.array([0.5, 0.5]))
    with pytest.raises(InvalidArgument, match="needs diagonal class covariances"):
        diagonal_covariances(mix)


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"sigma_a2": "-0.1"}, r"sigma_a2=… must be positive and finite, got '-0.1'"),
        ({"sigma_b2": "inf"}, r"sigma_b2=… must be positive and finite, got 'inf'"),
        ({"trainable": ()}, r"trainable=… must be a subset of a,A,B, got \(\)"),
        ({"trainable": ("a", "W")}, r"trainable=… must be a subset of a,A,B"),
        ({"ns": (8, 16), "ratio": 1.0}, r"p = ratio·n = 8 at n=8; need p ≥ 16"),
    ],
)
def test_validation_config_refuses_by_name(changes: dict, match: str) -> None:
    pytest.importorskip("torch")
    from deqrmt.validate import ValidationConfig

    with pytest.raises(InvalidArgument, match=match):
        ValidationConfig("tanh", **{"ns": (64,), "m": 64, "draws": 1, **changes})


@pytest.mark.parametrize("device", [None, 3, "tpu", "CPU"])
def test_resolve_device_refuses_what_is_not_a_device(device: object) -> None:
    pytest.importorskip("torch")
    from deqrmt.validate._sweep import resolve_device

    with pytest.raises(InvalidArgument, match="device must be auto, cpu or cuda"):
        resolve_device(device)  # type: ignore[arg-type]


def test_risk_helpers() -> None:
    pytest.importorskip("torch")
    from deqrmt.validate._risk import _labels, _progress_arg, _relative_gap

    # K = 3 classes: one-hot less 1/K, row by row
    third = 1 / 3
    np.testing.assert_allclose(
        _labels(np.array([0, 2, 1]), 3),
        [[1 - third, -third, -third], [-third, -third, 1 - third], [-third, 1 - third, -third]],
        rtol=0,
        atol=1e-16,
    )
    np.testing.assert_array_equal(_labels(np.array([0, 1, 1]), 2), [-1.0, 1.0, 1.0])
    # numpy's booleans are booleans (numpy 2 names their type "bool", not "bool_")
    assert _progress_arg(np.bool_(True)) is True and _progress_arg(np.bool_(False)) is False
    with pytest.raises(InvalidArgument, match=r"progress=3: expected True, False, None"):
        _progress_arg(3)
    # equal matrices: the gap is exactly 0; diag(1, 2) against diag(1, 2.5): 0.5 / 2
    G = np.diag([1.0, 2.0])
    assert _relative_gap(G, G.copy()) == 0.0
    assert _relative_gap(G, np.diag([1.0, 2.5])) == pytest.approx(0.25, rel=1e-12)


# -- data matrices ---------------------------------------------------------------------------------


def test_a_masked_array_is_refused_with_the_fix() -> None:
    from deqrmt.validate._data_args import data_matrix

    with pytest.raises(InvalidArgument, match=r"X is a masked array; fill or drop .*X\.filled"):
        data_matrix(np.ma.masked_array([[1.0, 2.0]], mask=[[False, True]]), "X")


def test_a_longdouble_beyond_float64_is_refused_and_one_within_is_converted() -> None:
    from deqrmt.validate._data_args import data_matrix

    if float(np.log10(np.finfo(np.longdouble).max)) < 400:
        pytest.skip("longdouble is float64 here")
    with pytest.raises(InvalidArgument, match="X has non-finite entries .*beyond float64's range"):
        data_matrix(np.array([[np.longdouble("1e4000"), 1.0]]), "X")  # finite as a longdouble
    ones = data_matrix(np.ones((2, 2), np.longdouble), "X").numpy()
    assert ones.dtype == np.float64
    np.testing.assert_array_equal(ones, np.ones((2, 2)))


def test_a_quantized_tensor_is_refused_by_dtype() -> None:
    torch = pytest.importorskip("torch")
    import warnings

    from deqrmt.validate._data_args import data_matrix

    with warnings.catch_warnings():  # quantized dtypes are deprecated in torch
        warnings.simplefilter("ignore")
        q = torch.quantize_per_tensor(torch.ones(2, 2), 0.1, 0, torch.quint8)
    with pytest.raises(InvalidArgument, match=r"X has dtype torch.quint8; give real numbers"):
        data_matrix(q, "X")


# -- equivalent kernels of the user's data ----------------------------------------------------------


def test_equivalent_kernels_refuse_labels_statistics_and_data_that_do_not_fit() -> None:
    from deqrmt.validate import equivalent_kernels

    X = np.random.default_rng(0).standard_normal((6, 4)) / 2
    mixed = np.array([1, "a", 1, "a", 1, "a"], dtype=object)
    with pytest.raises(InvalidArgument, match="mixed types that cannot be ordered"):
        equivalent_kernels("tanh", X, mixed)
    stats = MixtureStatistics(**_stats())  # type: ignore[arg-type]  # for 3 samples
    with pytest.raises(InvalidArgument, match="statistics are for 3 samples, X has 6"):
        equivalent_kernels("tanh", X, statistics=stats)
    # every sample its class's mean: τ0 = 0, named by X (not by the statistics' field)
    with pytest.raises(InvalidArgument, match=r"X has no within-class variance .*τ0 = 0"):
        equivalent_kernels("tanh", np.zeros((6, 4)), [0, 0, 0, 1, 1, 1])


def test_kernels_take_numpys_booleans_for_progress() -> None:
    pytest.importorskip("torch")
    from deqrmt.validate import kernels

    X = np.random.default_rng(0).standard_normal((5, 3)) / 2
    quiet = kernels("tanh", X, progress=False)
    np.testing.assert_array_equal(kernels("tanh", X, progress=np.False_), quiet)


# -- a finite DEQ's kernels and spectral errors ------------------------------------------------------


def test_ntk_from_solution_refuses_bad_trainable_sets_and_reports_no_convergence() -> None:
    pytest.importorskip("torch")
    from deqrmt import NoConvergence
    from deqrmt.symbolic import get_activation
    from deqrmt.validate._deq import DeqWeights, solve_deq
    from deqrmt.validate._ntk import ntk_from_solution
    from deqrmt.validate._pointwise import CenteredActivation
    from deqrmt.validate._sphere_mc import sphere_sample

    X = sphere_sample(5, 8, seed=0)  # p × n: columns are samples
    phi = CenteredActivation.from_activation(get_activation("tanh"), 0.0)
    w = DeqWeights.draw(64, X.shape[0], sigma_a2=0.5, sigma_b2=0.5, seed=0, device="cpu")
    sol = solve_deq(w, phi, X, tol=1e-12)
    with pytest.raises(InvalidArgument, match="trainable B needs the data X"):
        ntk_from_solution(w, phi, sol, trainable=("B",))
    with pytest.raises(InvalidArgument, match=r"non-empty subset of a, A, B; got \('W',\)"):
        ntk_from_solution(w, phi, sol, trainable=("W",))
    with pytest.raises(NoConvergence, match="did not converge in 1 iterations"):
        ntk_from_solution(w, phi, sol, tol=1e-15, max_iter=1)
    # with B trained the NTK gains σ_b²·(UUᵀ/m)∘XᵀX, a PSD term: it grows on the diagonal
    _, ntk_aA, _ = ntk_from_solution(w, phi, sol)
    _, ntk_all, _ = ntk_from_solution(w, phi, sol, trainable=("a", "A", "B"), X=X)
    assert (ntk_all.diagonal() > ntk_aA.diagonal()).all()


def test_relative_spectral_error_edges() -> None:
    pytest.importorskip("torch")
    from deqrmt.validate._compare import loglog_slope, relative_spectral_error

    with pytest.raises(InvalidArgument, match=r"shapes differ: \(2, 2\) vs \(3, 3\)"):
        relative_spectral_error(np.eye(2), np.eye(3))
    with pytest.raises(InvalidArgument, match="relative error against a zero matrix"):
        relative_spectral_error(np.zeros((2, 2)), np.eye(2))
    with pytest.raises(InvalidArgument, match="ns and errors differ in length"):
        loglog_slope([1, 2], [0.1])
    # ‖diag(2, 1) − diag(1.5, 1)‖ / ‖diag(2, 1)‖ = 0.5 / 2; errors ∝ n^(−½): slope −½
    assert relative_spectral_error(np.diag([2.0, 1.0]), np.diag([1.5, 1.0])) == pytest.approx(0.25)
    assert loglog_slope([100, 400], [0.2, 0.1]) == pytest.approx(-0.5)


# -- exact kernels ------------------------------------------------------------------------------


def test_exact_kernels_argument_edges() -> None:
    import dataclasses

    torch = pytest.importorskip("torch")
    from deqrmt.symbolic import library_activation
    from deqrmt.validate._exact import exact_kernels
    from deqrmt.validate._pointwise import CenteredActivation

    act = CenteredActivation.from_activation(library_activation("erf"), 0.0)
    X = np.random.default_rng(3).standard_normal((4, 6)) / 2  # p × n
    with pytest.raises(InvalidArgument, match=r"X must be 2-D \(p × n, columns are samples\)"):
        exact_kernels(act, X[:, 0], 0.2, 0.8)
    with pytest.raises(InvalidArgument, match=r"non-empty subset of a, A, B; got \('W',\)"):
        exact_kernels(act, X, 0.2, 0.8, trainable=("W",))
    # a float64 tensor is used in place and gives the numpy input's kernels, bit for bit
    ex = exact_kernels(act, X, 0.2, 0.8)
    et = exact_kernels(act, torch.as_tensor(X), 0.2, 0.8)
    np.testing.assert_array_equal(et.G, ex.G)
    np.testing.assert_array_equal(et.K, ex.K)
    bare = dataclasses.replace(ex, gdot_source=None)
    with pytest.raises(InvalidArgument, match="built without a way to compute Ġ"):
        _ = bare.Gdot


def test_the_sphere_kernel_map_refuses_what_its_series_cannot_serve(tanh_sphere) -> None:
    from deqrmt import NoConvergence
    from deqrmt.validate._sphere_mc import _truncate, implicit_sphere_kernels, sphere_sample

    X = sphere_sample(4, D_SPHERE, seed=1)
    with pytest.raises(NoConvergence, match="did not converge in 1 iterations"):
        implicit_sphere_kernels(X, "tanh", tanh_sphere, max_iterations=1)
    twins = np.hstack([X, X[:, :1]])  # a repeated sample: correlation 1, beyond the series' reach
    with pytest.raises(NoConvergence, match="off-diagonal correlation 1 exceeds r_max"):
        implicit_sphere_kernels(twins, "tanh", tanh_sphere)
    # a tail that never falls below float64's reach (norm ≫ Σ c): nothing is dropped
    c = np.array([1.0, 0.5, 0.25])
    assert _truncate(c, 10.0, 1.0) is c


def test_a_bias_check_cut_short_names_every_failure(deq) -> None:
    # 3 GD steps: no step size interpolates, so the check fails and says why, run by run
    pytest.importorskip("torch")
    from deqrmt.validate._bias import check_bias

    c = check_bias(deq, n=2, d=5, max_steps=3, device="cpu")
    assert not c.passed
    stalled = [f for f in c.failures if "did not interpolate in 3 steps" in f]
    assert len(stalled) == len(c.runs) and all(not r.converged for r in c.runs)
    grows = any(b > a for a, b in zip(c.gaps, c.gaps[1:], strict=False))
    assert grows == any(f.startswith("the gap does not shrink") for f in c.failures)
    unclear = c.l2_gap < 10 * c.gaps[-1]
    assert unclear == any("cannot tell the derived bias from least norm" in f for f in c.failures)
    assert grows and unclear  # both happen 3 steps from the start (gaps 0.11 … 0.19; ℓ2 0.96)


def test_certificate_sizes_refuse_what_is_no_list_of_sizes_or_ratio() -> None:
    from deqrmt.validate._design_file import check_certificate_sizes

    for ns in ("256,512", b"256", 256, []):
        with pytest.raises(InvalidArgument, match="give one or more sample sizes"):
            check_certificate_sizes(ns, 0.8, 256, 0)
    for ratio in (True, "0.8", math.nan, math.inf):
        with pytest.raises(InvalidArgument, match="p/n must be a finite number"):
            check_certificate_sizes([256, 512], ratio, 256, 0)


def test_a_centre_that_is_not_finite_is_refused() -> None:
    pytest.importorskip("torch")
    from deqrmt.symbolic import get_activation
    from deqrmt.validate._pointwise import CenteredActivation

    for c in (math.nan, math.inf):
        with pytest.raises(InvalidArgument, match="center must be finite"):
            CenteredActivation.from_activation(get_activation("tanh"), c)

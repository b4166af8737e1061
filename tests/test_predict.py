"""``deqrmt.predict`` and ``deqrmt predict``: the infinitely wide DEQ's predictions, each checked
against an independent route from the exact kernels (``deqrmt.kernels``).

* t = ∞: kernel regression by a direct solve, ``K(X*, X)(K(X, X) + r I)⁻¹ y``;
* finite t: the linear ODE ``d[f(X); f(X*)]/dt = −[Θ_r; Θ(X*, X)](f(X) − y)`` from f = 0,
  integrated exactly by one matrix exponential of the augmented system (scipy's ``expm``, no
  eigendecomposition), not by the code's closed form;
* the covariance (Lee et al. 2019, §2.3) with ``expm`` and ``solve``; the NNGP posterior by
  a direct solve; the two agree where they must (the readout trained alone to t = ∞ is the
  noiseless posterior).

The data: 30 training and 7 test points in p = 40 dimensions, ‖x‖ ≈ 1, so the pairs'
correlations stay well inside the Mehler series' reach (the kernels take a fraction of a
second).  Tolerances: 1e-10 relative to the largest entry, as the issue asks; the kernels are
the same arrays in both routes, so this measures the algebra alone.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.linalg
import torch

import deqrmt
from deqrmt._json import SCHEMA, float_copy
from deqrmt.cli import main

RNG = np.random.default_rng(7)
P = 40
X_TR = RNG.standard_normal((30, P)) / np.sqrt(P)
X_TE = RNG.standard_normal((7, P)) / np.sqrt(P)
Y_TR = np.sin(3 * X_TR[:, 0] * np.sqrt(P)) + 0.1 * RNG.standard_normal(30)
Y2 = np.stack([Y_TR, np.cos(X_TR[:, 1] * np.sqrt(P))], axis=1)  # two outputs
TOL = 1e-10


def _close(got: np.ndarray, want: np.ndarray, tol: float = TOL) -> None:
    scale = max(float(np.max(np.abs(want))), 1e-300)
    err = float(np.max(np.abs(np.asarray(got) - want)))
    assert err <= tol * scale, f"max error {err:.3g} > {tol:g} × {scale:.3g}"


def _ntk(X1: np.ndarray, X2: np.ndarray | None = None, **kw: object) -> np.ndarray:
    return deqrmt.kernels("tanh", X1, X2, kind="ntk", **kw)


def _ck(X1: np.ndarray, X2: np.ndarray | None = None) -> np.ndarray:
    return deqrmt.kernels("tanh", X1, X2, kind="ck")


def _flow_by_expm(K: np.ndarray, Kx: np.ndarray, y: np.ndarray, t: float) -> np.ndarray:
    """f(X*, t) of the ODE above from f(·, 0) = 0: the augmented system d/dt [z; c] =
    [[M, C], [0, 0]] [z; c] with M = [[−K, 0], [−Kx, 0]] and C = [K y; Kx y], solved by expm."""
    n, m = K.shape[0], Kx.shape[0]
    k = y.shape[1]
    size = n + m
    aug = np.zeros((size + k, size + k))
    aug[:n, :n] = -K
    aug[n:size, :n] = -Kx
    aug[:n, size:] = K @ y
    aug[n:size, size:] = Kx @ y
    E = scipy.linalg.expm(t * aug)
    return E[n:size, size:]  # the columns of the constant inputs: z(t) from z(0) = 0


def test_kernel_regression_at_t_infinity_is_a_direct_solve() -> None:
    K, Kx = _ntk(X_TR), _ntk(X_TE, X_TR)
    for diag_reg in (0.0, 1e-3):
        r = diag_reg * np.trace(K) / len(K)
        want = Kx @ np.linalg.solve(K + r * np.eye(len(K)), Y_TR)
        got = deqrmt.predict("tanh", X_TR, Y_TR, X_TE, t=np.inf, diag_reg=diag_reg)
        assert got.mean.shape == (7,) and got.t == np.inf and got.kind == "ntk"
        assert got.regularizer == pytest.approx(r, rel=1e-15)
        _close(got.mean, want)


def test_finite_times_follow_the_gradient_flow_ode() -> None:
    K, Kx = _ntk(X_TR), _ntk(X_TE, X_TR)
    times = [0.0, 0.05, 1.0, 10.0, 200.0]
    for diag_reg in (0.0, 1e-2):
        r = diag_reg * np.trace(K) / len(K)
        got = deqrmt.predict("tanh", X_TR, Y2, X_TE, t=times, diag_reg=diag_reg)
        assert got.mean.shape == (len(times), 7, 2) and got.t == tuple(times)
        for i, s in enumerate(times):
            want = _flow_by_expm(K + r * np.eye(len(K)), Kx, Y2, s)
            _close(got.mean[i], want)
    assert np.all(got.mean[0] == 0)  # nothing learnt at t = 0
    # one time alone gives the same numbers as inside a list, without the time axis
    one = deqrmt.predict("tanh", X_TR, Y2, X_TE, t=1.0, diag_reg=1e-2)
    assert one.mean.shape == (7, 2) and np.allclose(one.mean, got.mean[2], rtol=1e-13, atol=0)


def test_ensemble_covariance_is_lee_et_al() -> None:
    """Lee et al. 2019, §2.3: Σ_t = G** + Θ*ₓ M G M Θₓ* − (Θ*ₓ M G ₓ* + transpose), M = Θ_r⁻¹(I − e^{−Θ_r t}), with
    expm and solve; at t = 0 it is the prior G(X*, X*)."""
    K, Kx = _ntk(X_TR), _ntk(X_TE, X_TR)
    G, Gx, Gxx = _ck(X_TR), _ck(X_TE, X_TR), _ck(X_TE)
    diag_reg = 1e-3
    Kr = K + diag_reg * np.trace(K) / len(K) * np.eye(len(K))
    times = [0.0, 0.5, 5.0, np.inf]
    got = deqrmt.predict("tanh", X_TR, Y_TR, X_TE, t=times, diag_reg=diag_reg, covariance=True)
    assert got.covariance.shape == (4, 7, 7)
    for i, s in enumerate(times):
        decay = np.zeros_like(K) if np.isinf(s) else scipy.linalg.expm(-s * Kr)
        M = np.linalg.solve(Kr, np.eye(len(K)) - decay)
        cross = Kx @ M @ Gx.T
        want = Gxx + Kx @ M @ G @ M.T @ Kx.T - cross - cross.T
        _close(got.covariance[i], want)
    _close(got.covariance[0], Gxx)
    assert np.all(np.linalg.eigvalsh(got.covariance[-1]) > -1e-12)  # a covariance


def test_nngp_posterior_is_a_direct_solve() -> None:
    G, Gx, Gxx = _ck(X_TR), _ck(X_TE, X_TR), _ck(X_TE)
    diag_reg = 1e-2
    Gr = G + diag_reg * np.trace(G) / len(G) * np.eye(len(G))
    got = deqrmt.predict("tanh", X_TR, Y2, X_TE, kind="nngp", diag_reg=diag_reg, covariance=True)
    _close(got.mean, Gx @ np.linalg.solve(Gr, Y2))
    _close(got.covariance, Gxx - Gx @ np.linalg.solve(Gr, Gx.T))
    assert got.covariance.shape == (7, 7) and got.mean.shape == (7, 2)


def test_readout_alone_trained_to_the_end_is_the_noiseless_posterior() -> None:
    """The NTK over the readout a alone is G*, and the ensemble covariance at t = ∞ with Θ = G is the GP
    posterior G** − G*ₓ G⁻¹ G ₓ*: two different code paths."""
    flow = deqrmt.predict("tanh", X_TR, Y_TR, X_TE, trainable=("a",), covariance=True)
    post = deqrmt.predict("tanh", X_TR, Y_TR, X_TE, kind="nngp", covariance=True)
    _close(flow.mean, post.mean, 1e-9)
    _close(flow.covariance, post.covariance, 1e-8)


def test_the_scikit_learn_route_of_the_docs_gives_the_same_numbers() -> None:
    """docs/theory/predict.md: KernelRidge with DEQKernel(kind="ntk") and alpha = r is t = ∞;
    GaussianProcessRegressor with DEQKernel(kind="ck") and alpha = r is kind="nngp"."""
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.kernel_ridge import KernelRidge

    p = deqrmt.predict("tanh", X_TR, Y_TR, X_TE, diag_reg=1e-2)
    ridge = KernelRidge(alpha=p.regularizer, kernel=deqrmt.DEQKernel("tanh", kind="ntk"))
    _close(ridge.fit(X_TR, Y_TR).predict(X_TE), p.mean)
    q = deqrmt.predict("tanh", X_TR, Y_TR, X_TE, kind="nngp", diag_reg=1e-2, covariance=True)
    gp = GaussianProcessRegressor(
        kernel=deqrmt.DEQKernel("tanh", kind="ck"), alpha=q.regularizer, optimizer=None
    )
    mean, cov = gp.fit(X_TR, Y_TR).predict(X_TE, return_cov=True)
    _close(mean, q.mean)
    _close(cov, q.covariance)


def test_torch_in_torch_out_numpy_in_numpy_out() -> None:
    ref = deqrmt.predict("tanh", X_TR, Y_TR, X_TE, t=[1.0, np.inf], covariance=True)
    assert isinstance(ref.mean, np.ndarray) and ref.mean.dtype == np.float64
    got = deqrmt.predict(
        "tanh",
        torch.tensor(X_TR, dtype=torch.float64),
        torch.tensor(Y_TR),
        torch.tensor(X_TE, dtype=torch.float64),
        t=torch.tensor([1.0, float("inf")]),
        covariance=True,
    )
    assert isinstance(got.mean, torch.Tensor) and got.mean.dtype == torch.float64
    assert isinstance(got.covariance, torch.Tensor) and got.covariance.shape == (2, 7, 7)
    assert np.array_equal(got.mean.numpy(), ref.mean)
    assert np.array_equal(got.covariance.numpy(), ref.covariance)
    # labels as a column: the mean keeps that shape
    col = deqrmt.predict("tanh", X_TR, Y_TR[:, None], X_TE)
    assert col.mean.shape == (7, 1) and np.array_equal(col.mean[:, 0], ref.mean[1])


@pytest.mark.parametrize(
    ("kwargs", "error", "says"),
    [
        ({"y_train": Y_TR[:-1]}, deqrmt.InvalidArgument, "y_train has 29 rows, X_train 30"),
        ({"y_train": np.zeros((30, 2, 1))}, deqrmt.InvalidArgument, "y_train must have shape"),
        ({"y_train": np.where(Y_TR > 0, np.nan, Y_TR)}, deqrmt.InvalidArgument, "y_train has non"),
        ({"y_train": Y_TR + 1j}, deqrmt.InvalidArgument, "y_train has dtype complex128"),
        ({"X_test": X_TE[:, :5]}, deqrmt.InvalidArgument, "same number of features"),
        ({"X_train": X_TR[0]}, deqrmt.InvalidArgument, "X_train must be 2-D"),
        ({"t": -1.0}, deqrmt.InvalidArgument, "t=-1.0: a training time must be ≥ 0"),
        ({"t": [1.0, float("nan")]}, deqrmt.InvalidArgument, "t[1]=nan"),
        ({"t": -np.inf}, deqrmt.InvalidArgument, "t=-inf"),
        ({"t": None}, deqrmt.InvalidArgument, "t=None"),
        ({"diag_reg": -1e-3}, deqrmt.InvalidArgument, "diag_reg=-0.001: choose a number ≥ 0"),
        ({"kind": "ck"}, deqrmt.InvalidArgument, "kind='ck'"),
        ({"kind": "nngp", "t": 1.0}, deqrmt.InvalidArgument, "kind='nngp' is the Bayesian"),
        ({"covariance": 1}, deqrmt.InvalidArgument, "covariance=1"),
        ({"trainable": "Z"}, deqrmt.UnknownTrainable, "trainable"),
    ],
)
def test_refusals_are_named(kwargs: dict, error: type, says: str) -> None:
    args = {"act": "tanh", "X_train": X_TR, "y_train": Y_TR, "X_test": X_TE, **kwargs}
    with pytest.raises(error) as info:
        deqrmt.predict(**args)
    assert says in str(info.value) and "\n" not in str(info.value), str(info.value)


def test_a_singular_training_kernel_needs_diag_reg_at_t_infinity() -> None:
    X = np.vstack([X_TR[:5], X_TR[:5]])  # every point twice: K(X, X) has rank 5
    y = np.concatenate([Y_TR[:5], Y_TR[:5]])
    with pytest.raises(deqrmt.PrecisionLoss, match="pass diag_reg > 0"):
        deqrmt.predict("relu", X, y, X_TE)
    finite = deqrmt.predict("relu", X, y, X_TE, t=3.0)  # the flow itself is well defined
    assert np.all(np.isfinite(finite.mean))
    reg = deqrmt.predict("relu", X, y, X_TE, diag_reg=1e-6)
    # each point twice is the squared loss doubled: the regression on the points once with half
    # the absolute ridge r (tr K/n, hence diag_reg's scale, is the same for both)
    once = deqrmt.predict("relu", X_TR[:5], Y_TR[:5], X_TE, diag_reg=5e-7)
    assert reg.regularizer == pytest.approx(2 * once.regularizer, rel=1e-14)
    _close(reg.mean, once.mean, 1e-7)


# --- the command ------------------------------------------------------------------------------------


def _files(tmp_path, **arrays: np.ndarray) -> dict[str, str]:
    out = {}
    for name, a in arrays.items():
        path = tmp_path / f"{name}.npy"
        np.save(path, a)
        out[name] = str(path)
    return out


def test_cli_writes_the_api_predictions(tmp_path, capsys) -> None:
    f = _files(tmp_path, X=X_TR, y=Y2, Xte=X_TE)
    out = tmp_path / "preds.npy"
    argv = ["predict", "tanh", "--train", f["X"], "--labels", f["y"], "--test", f["Xte"]]
    code = main([*argv, "--t", "1,inf", "--diag-reg", "1e-3", "--out", str(out), "--json", "-q"])
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == SCHEMA and doc["command"] == "predict"
    result = {k: v for k, v in doc.items() if k not in ("schema", "command", "version", "inputs")}
    assert doc["floats"] == float_copy({k: v for k, v in result.items() if k != "floats"})
    api = deqrmt.predict("tanh", X_TR, Y2, X_TE, t=[1.0, np.inf], diag_reg=1e-3)
    assert np.array_equal(np.load(out), api.mean)
    preds = doc["predictions"]
    assert [p["t"] for p in preds] == ["1.0", "inf"]
    assert np.array_equal(np.array(preds[1]["mean"], dtype=float), api.mean[1])  # repr: exact
    # the output is not clobbered without --force
    assert main([*argv, "--out", str(out)]) == 2
    assert "refusing to overwrite" in capsys.readouterr().err
    # the table, with variances, from a CSV file
    csv = tmp_path / "y.csv"
    np.savetxt(csv, Y_TR, delimiter=",")
    code = main(["predict", "tanh", "--train", f["X"], "--labels", str(csv), "--test", f["Xte"]])
    assert code == 0
    table = capsys.readouterr().out
    want = deqrmt.predict("tanh", X_TR, Y_TR, X_TE).mean
    assert f"{want[0]: .6g}" in table and "t = inf" in table


@pytest.mark.parametrize(
    ("setup", "says"),
    [
        (lambda d: np.save(d / "y.npy", np.array([{"a": 1}] * 30, dtype=object)), "--labels"),
        (lambda d: (d / "y.npy").write_bytes(b"\x93NUMPY garbage"), "--labels"),
        (lambda d: (d / "y.npy").write_text("1, 2, x\n"), "--labels"),
        (lambda d: np.save(d / "y.npy", Y_TR[:10]), "y_train has 10 rows"),
        (lambda d: None, "cannot read --labels"),
    ],
)
def test_cli_refuses_bad_files_with_one_line(tmp_path, capsys, setup, says) -> None:
    f = _files(tmp_path, X=X_TR, Xte=X_TE)
    setup(tmp_path)
    y = str(tmp_path / "y.npy")
    assert main(["predict", "tanh", "--train", f["X"], "--labels", y, "--test", f["Xte"]]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0], err

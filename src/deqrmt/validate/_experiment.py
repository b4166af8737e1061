r"""Accuracy and cost: random features of a DEQ vs its designed ENN vs a naive ENN.

As in the paper's experiments, the hidden weights stay random and only the output layer is
trained (ridge regression on the features, one-vs-rest targets ±1).  Compared:

* (a) the DEQ z* = φ_c(σ_a A z* + σ_b B x)/√m, solved to its fixed point;
* (b) the ENN designed by :func:`deqrmt.numeric._design.design_enn` (CK matching);
* (c) a naive ENN of the same depth with the DEQ's own activation (centered at each layer).

Datasets: the GMM preset of the slides, scikit-learn's bundled digits (no download), and
optionally MNIST / Fashion-MNIST read from a local folder in torchvision's raw IDX format.
Reported: test accuracy, mean ± std over seeds, and the wall time of the feature computation.
"""

from __future__ import annotations

import dataclasses
import gzip
import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .._errors import InvalidArgument
from ._data import paper_mixture
from ._deq import DeqWeights, solve_deq
from ._pointwise import CenteredActivation

__all__ = ["Dataset", "load_dataset", "ExperimentResult", "run_experiment", "enn_features"]


@dataclasses.dataclass(frozen=True)
class Dataset:
    """Train/test split, columns are samples (p × n), scaled so that mean ‖x_i‖² = 1."""

    name: str
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray

    @property
    def tau0(self) -> float:
        return float(np.sqrt(np.mean(np.sum(self.X_train**2, axis=0))))


def _normalise(X_train: np.ndarray, X_test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Center and scale features by the training set; mean squared norm 1 (τ0 ≈ 1)."""
    mu = X_train.mean(axis=1, keepdims=True)
    Xtr, Xte = X_train - mu, X_test - mu
    scale = math.sqrt(float(np.mean(np.sum(Xtr**2, axis=0))))
    return Xtr / scale, Xte / scale


def _read_idx(path: Path) -> np.ndarray:
    opener: Callable[..., Any] = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        data = fh.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def _find(folder: Path, stem: str) -> Path:
    for cand in (
        folder / stem,
        folder / f"{stem}.gz",
        folder / "raw" / stem,
        folder / "raw" / f"{stem}.gz",
    ):
        if cand.exists():
            return cand
    raise InvalidArgument(
        f"{stem}[.gz] not found under {folder} (expected torchvision's raw IDX files, e.g. "
        "MNIST/raw/train-images-idx3-ubyte); nothing is downloaded at run time."
    )


def load_dataset(spec: str, *, n_train: int, n_test: int, seed: int) -> Dataset:
    """``gmm`` (the slides' preset, p = 0.8·n_train… p = 256), ``digits`` (scikit-learn), or
    ``mnist:DIR`` / ``fashion:DIR`` (local torchvision raw folder)."""
    rng = np.random.default_rng(seed)
    if spec == "gmm":
        p = 256
        mix = paper_mixture(p)
        s_tr, s_te = mix.sample(n_train, rng), mix.sample(n_test, rng)
        return Dataset("gmm", s_tr.X, s_tr.labels, s_te.X, s_te.labels)
    if spec == "digits":
        from sklearn.datasets import load_digits

        d = load_digits()
        X = d.data.astype(np.float64).T
        y = d.target.astype(np.int64)
        idx = rng.permutation(X.shape[1])
        tr, te = idx[:n_train], idx[n_train : n_train + n_test]
        Xtr, Xte = _normalise(X[:, tr], X[:, te])
        return Dataset("digits", Xtr, y[tr], Xte, y[te])
    if ":" in spec and spec.split(":", 1)[0] in ("mnist", "fashion"):
        kind, folder = spec.split(":", 1)
        root = Path(folder)
        imgs = _read_idx(_find(root, "train-images-idx3-ubyte")).reshape(-1, 784).astype(np.float64)
        labs = _read_idx(_find(root, "train-labels-idx1-ubyte")).astype(np.int64)
        timgs = _read_idx(_find(root, "t10k-images-idx3-ubyte")).reshape(-1, 784).astype(np.float64)
        tlabs = _read_idx(_find(root, "t10k-labels-idx1-ubyte")).astype(np.int64)
        tr = rng.choice(imgs.shape[0], n_train, replace=False)
        te = rng.choice(timgs.shape[0], n_test, replace=False)
        Xtr, Xte = _normalise(imgs[tr].T, timgs[te].T)
        return Dataset(kind, Xtr, labs[tr], Xte, tlabs[te])
    raise InvalidArgument(f"unknown dataset {spec!r}; use gmm, digits, mnist:DIR or fashion:DIR.")


def enn_features(
    acts: Sequence[CenteredActivation], X: torch.Tensor, m: int, seed: int
) -> torch.Tensor:
    """x^{(l)} = σ_l,c(W_l x^{(l−1)})/√m with i.i.d. N(0, 1) weights; returns m × n."""
    gen = torch.Generator().manual_seed(seed)
    h = X
    for act in acts:
        W = torch.randn((m, h.shape[0]), generator=gen, dtype=torch.float64).to(X.device, X.dtype)
        h = act.phi(W @ h) / math.sqrt(m)
    return h


def _ridge_accuracy(
    F_train: torch.Tensor, y_train: np.ndarray, F_test: torch.Tensor, y_test: np.ndarray
) -> float:
    """Train the output layer by ridge regression on ±1 one-vs-rest targets; test accuracy."""
    classes = np.unique(y_train)
    Y = -torch.ones((F_train.shape[1], len(classes)), dtype=F_train.dtype, device=F_train.device)
    for k, c in enumerate(classes):
        Y[torch.as_tensor(y_train == c, device=F_train.device), k] = 1.0
    gram = F_train @ F_train.T  # m × m
    lam = 1e-3 * torch.trace(gram) / gram.shape[0]
    W = torch.linalg.solve(
        gram + lam * torch.eye(gram.shape[0], dtype=gram.dtype, device=gram.device), F_train @ Y
    )
    pred = (F_test.T @ W).argmax(dim=1).cpu().numpy()
    return float(np.mean(classes[pred] == y_test))


@dataclasses.dataclass(frozen=True)
class ExperimentResult:
    """Per dataset and model: accuracies over seeds and feature-computation seconds."""

    inputs: dict[str, Any]
    results: dict[str, dict[str, dict[str, list[float]]]]  # dataset → model → {accuracy, seconds}

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"inputs": self.inputs, "datasets": {}}
        for ds, models in self.results.items():
            out["datasets"][ds] = {
                model: {
                    "accuracy_mean": float(np.mean(v["accuracy"])),
                    "accuracy_std": float(np.std(v["accuracy"])),
                    "seconds_mean": float(np.mean(v["seconds"])),
                    "accuracy": v["accuracy"],
                    "seconds": v["seconds"],
                }
                for model, v in models.items()
            }
            deq_t = out["datasets"][ds]["deq"]["seconds_mean"]
            enn_t = out["datasets"][ds]["designed_enn"]["seconds_mean"]
            out["datasets"][ds]["enn_over_deq_time"] = enn_t / deq_t if deq_t > 0 else None
        return out


def run_experiment(
    deq: str,
    family: str,
    *,
    datasets: Sequence[str] = ("gmm", "digits"),
    layers: int | None = None,
    sigma_a2: str = "0.2",
    m: int = 1024,
    seeds: int = 5,
    n_train: int = 1000,
    n_test: int = 500,
    device: str = "cpu",
    progress: Callable[[str], None] | None = None,
) -> ExperimentResult:
    """Run (a) DEQ, (b) designed ENN, (c) naive ENN on each dataset for ``seeds`` seeds."""
    from ..numeric import design_enn, explicit_coefficients
    from ..symbolic import get_activation

    dt = torch.float64
    results: dict[str, dict[str, dict[str, list[float]]]] = {}
    designs: dict[str, Any] = {}
    for ds_name in datasets:
        data0 = load_dataset(ds_name, n_train=n_train, n_test=n_test, seed=0)
        tau0 = float(data0.tau0)  # exact as its shortest repr (DEQProblem)
        design = design_enn(
            deq, family, layers=layers, sigma_a2=sigma_a2, tau0=tau0, dps=20, starts=8
        )
        coeffs = design.deq  # the DEQ the design was solved against: computed once
        sol = design.solutions[0]
        designs[ds_name] = sol.to_dict()
        fam_acts = [
            design.family.instantiate([_exact_decimal(v) for v in layer.values()])
            for layer in sol.params
        ]
        depth = design.layers
        enn_coeffs = explicit_coefficients(fam_acts, tau0=tau0, dps=20)
        enn_acts = [
            CenteredActivation.from_activation(a, float(layer["center"].value))
            for a, layer in zip(fam_acts, enn_coeffs.layers, strict=True)
        ]
        phi = get_activation(deq)
        naive_coeffs = explicit_coefficients([phi] * depth, tau0=tau0, dps=20)
        naive_acts = [
            CenteredActivation.from_activation(phi, float(layer["center"].value))
            for layer in naive_coeffs.layers
        ]
        deq_act = CenteredActivation.from_activation(phi, float(coeffs.center))
        sa2 = float(coeffs.sigma_a2)
        sb2 = float(coeffs.sigma_b2)
        per_model: dict[str, dict[str, list[float]]] = {
            k: {"accuracy": [], "seconds": []} for k in ("deq", "designed_enn", "naive_enn")
        }
        for seed in range(seeds):
            data = load_dataset(ds_name, n_train=n_train, n_test=n_test, seed=seed)
            X = torch.as_tensor(np.hstack([data.X_train, data.X_test]), dtype=dt, device=device)
            ntr = data.X_train.shape[1]
            t = time.perf_counter()
            w = DeqWeights.draw(
                m, X.shape[0], sigma_a2=sa2, sigma_b2=sb2, seed=1000 + seed, device=device, dtype=dt
            )
            F = solve_deq(w, deq_act, X, max_iter=1000).Z
            _sync(device)
            per_model["deq"]["seconds"].append(time.perf_counter() - t)
            per_model["deq"]["accuracy"].append(
                _ridge_accuracy(F[:, :ntr], data.y_train, F[:, ntr:], data.y_test)
            )
            for model, acts in (("designed_enn", enn_acts), ("naive_enn", naive_acts)):
                t = time.perf_counter()
                F = enn_features(acts, X, m, seed=2000 + seed)
                _sync(device)
                per_model[model]["seconds"].append(time.perf_counter() - t)
                per_model[model]["accuracy"].append(
                    _ridge_accuracy(F[:, :ntr], data.y_train, F[:, ntr:], data.y_test)
                )
            if progress is not None:
                progress(f"{ds_name} seed {seed}")
        results[ds_name] = per_model
    inputs = {
        "deq": deq, "family": family, "layers": layers, "sigma_a2": sigma_a2, "m": m, "seeds": seeds,
        "n_train": n_train, "n_test": n_test, "device": device, "datasets": list(datasets),
        "designs": designs,
    }  # fmt: skip
    return ExperimentResult(inputs, results)


def _exact_decimal(text: str) -> Any:
    import sympy as sp

    return sp.Rational(text)


def _sync(device: str) -> None:
    if str(device).startswith("cuda"):
        torch.cuda.synchronize()


def plot_experiment(result: ExperimentResult, path: str | Path) -> Path:
    """Bar chart: accuracy (mean ± std) per dataset and model, and feature time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = result.summary()["datasets"]
    models = ("deq", "designed_enn", "naive_enn")
    labels = {"deq": "DEQ", "designed_enn": "designed ENN", "naive_enn": "naive ENN"}
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    width = 0.25
    for k, model in enumerate(models):
        xs = np.arange(len(s)) + (k - 1) * width
        axes[0].bar(
            xs,
            [s[d][model]["accuracy_mean"] for d in s],
            width,
            yerr=[s[d][model]["accuracy_std"] for d in s],
            label=labels[model],
            capsize=3,
        )
        axes[1].bar(xs, [s[d][model]["seconds_mean"] for d in s], width, label=labels[model])
    for ax, title, ylabel in zip(
        axes,
        ("test accuracy (mean ± std over seeds)", "feature time [s]"),
        ("test accuracy", "feature time [s]"),
        strict=True,
    ):
        ax.set_xticks(np.arange(len(s)), list(s))
        ax.set_title(title)
        ax.set_xlabel("dataset")
        ax.set_ylabel(ylabel)
    axes[0].set_ylim(0, 1.15)
    axes[1].set_yscale("log")
    axes[0].legend(loc="upper center", ncol=3, fontsize=8)
    fig.suptitle(
        f"{result.inputs['deq']} DEQ vs {result.inputs['family']} ENN (m = {result.inputs['m']})"
    )
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out

r"""Accuracy and cost: random features of a DEQ vs its designed ENN vs a naive ENN.

As in the paper's experiments, the hidden weights stay random and only the output layer is
trained (ridge regression on the features, one-vs-rest targets ±1).  Compared:

* (a) the DEQ z* = φ_c(σ_a A z* + σ_b B x)/√m, solved to its fixed point;
* (b) the ENN designed by :func:`deqrmt.numeric._design.design_enn` (CK matching);
* (c) a naive ENN of the same depth with the DEQ's own activation (centered at each layer).

Datasets: the GMM preset of the slides, scikit-learn's bundled digits (no download), and
optionally MNIST / Fashion-MNIST read from a local folder in torchvision's raw IDX format
(untrusted files: :mod:`deqrmt.validate._idx`).
Reported: test accuracy, mean ± std over seeds, and the wall time of the feature computation.

Sizes are checked before any work (:func:`check_arguments`): seeds, width and sample counts
within their limits, each dataset large enough for the samples asked, the arrays within the
machine's memory and the floating-point work within :data:`MAX_FLOPS` (docs/limits.md).
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .._errors import BudgetExceeded, FileError, InvalidArgument
from .._untrusted import bounded_int, shown
from ._data import paper_mixture
from ._deq import DeqWeights, solve_deq
from ._idx import read_idx
from ._pointwise import CenteredActivation

__all__ = [
    "Dataset",
    "load_dataset",
    "ExperimentResult",
    "run_experiment",
    "enn_features",
    "check_arguments",
    "MAX_FLOPS",
    "MAX_SEEDS",
    "MAX_WIDTH",
    "MAX_SAMPLES",
]

#: repetitions (``--seeds``)
MAX_SEEDS = 100
#: the width m of every network (an m × m DEQ weight matrix: 0.5 GiB at 8192)
MAX_WIDTH = 8192
#: training or test samples per dataset (MNIST has 60000 and 10000)
MAX_SAMPLES = 60000
#: floating-point operations of a whole run, estimated up front by :func:`work_estimate`
#: (the defaults need ~2·10¹²: a few minutes on two cores)
MAX_FLOPS = 2e13
#: fixed-point iterations of the DEQ assumed by the estimate (σ_a² = 0.2 converges in ~40)
_DEQ_ITERATIONS = 60
#: samples of scikit-learn's digits; the GMM preset's dimension; MNIST's image size
_DIGITS_SAMPLES = 1797
_GMM_DIMENSION = 256
_MNIST_SHAPE = (28, 28)

#: The seeds of seed s: data s, the DEQ's weights DEQ_SEED + s, the ENNs' ENN_SEED + s.
DEQ_SEED, ENN_SEED = 1000, 2000
#: Multi-starts of each dataset's design (seed 0).
DESIGN_STARTS = 8


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


def _find(folder: Path, stem: str) -> Path:
    for cand in (
        folder / stem,
        folder / f"{stem}.gz",
        folder / "raw" / stem,
        folder / "raw" / f"{stem}.gz",
    ):
        try:
            os.lstat(cand)
        except FileNotFoundError:
            continue
        except (OSError, ValueError) as e:  # a name too long, a NUL, a file where a folder is
            if isinstance(e, NotADirectoryError):
                continue
            why = getattr(e, "strerror", None) or str(e)
            raise FileError(
                f"cannot look for {stem} under {shown(str(folder), 80)}: {why}."
            ) from None
        return cand
    raise InvalidArgument(
        f"{stem}[.gz] not found under {shown(str(folder), 80)} (expected torchvision's raw IDX "
        "files, e.g. MNIST/raw/train-images-idx3-ubyte); nothing is downloaded at run time."
    )


def _dataset_kind(spec: object) -> str:
    """``gmm``, ``digits``, ``mnist`` or ``fashion``; InvalidArgument for anything else."""
    if isinstance(spec, str):
        if spec in ("gmm", "digits"):
            return spec
        kind, sep, folder = spec.partition(":")
        if sep and kind in ("mnist", "fashion") and folder:
            return kind
    raise InvalidArgument(
        f"unknown dataset {shown(spec)}; use gmm, digits, mnist:DIR or fashion:DIR."
    )


def _idx_pair(root: Path, split: str) -> tuple[np.ndarray, np.ndarray]:
    """The uint8 images (n × 28 × 28) and labels (n) of one split, checked to agree."""
    images = read_idx(_find(root, f"{split}-images-idx3-ubyte"), 3, _MNIST_SHAPE)
    labels = read_idx(_find(root, f"{split}-labels-idx1-ubyte"), 1)
    if labels.shape[0] != images.shape[0]:
        raise InvalidArgument(
            f"the {split} files under {shown(str(root), 80)} disagree: {images.shape[0]} images "
            f"but {labels.shape[0]} labels; download both files again."
        )
    return images, labels


def _enough(name: str, have: int, n_train: int, n_test: int, split: bool) -> None:
    need = n_train + n_test if split else max(n_train, n_test)
    if need > have:
        asked = f"n_train + n_test = {need}" if split else f"{need} samples"
        raise InvalidArgument(
            f"{name} has {have} samples, fewer than the {asked} asked; lower n_train=… or n_test=…."
        )


def load_dataset(spec: str, *, n_train: int, n_test: int, seed: int) -> Dataset:
    """``gmm`` (the slides' preset, p = 256), ``digits`` (scikit-learn), or ``mnist:DIR`` /
    ``fashion:DIR`` (local torchvision raw folder, read as untrusted files)."""
    kind = _dataset_kind(spec)
    rng = np.random.default_rng(seed)
    if kind == "gmm":
        mix = paper_mixture(_GMM_DIMENSION)
        s_tr, s_te = mix.sample(n_train, rng), mix.sample(n_test, rng)
        return Dataset("gmm", s_tr.X, s_tr.labels, s_te.X, s_te.labels)
    if kind == "digits":
        from sklearn.datasets import load_digits

        d = load_digits()
        X = d.data.astype(np.float64).T
        y = d.target.astype(np.int64)
        _enough("digits", X.shape[1], n_train, n_test, split=True)
        idx = rng.permutation(X.shape[1])
        tr, te = idx[:n_train], idx[n_train : n_train + n_test]
        Xtr, Xte = _normalise(X[:, tr], X[:, te])
        return Dataset("digits", Xtr, y[tr], Xte, y[te])
    root = Path(spec.split(":", 1)[1])
    imgs, labs = _idx_pair(root, "train")
    timgs, tlabs = _idx_pair(root, "t10k")
    _enough(f"{kind}'s training set", imgs.shape[0], n_train, 0, split=False)
    _enough(f"{kind}'s test set", timgs.shape[0], 0, n_test, split=False)
    tr = rng.choice(imgs.shape[0], n_train, replace=False)
    te = rng.choice(timgs.shape[0], n_test, replace=False)
    # only the chosen images become float64 (all 60000 would take 376 MB)
    Xtr = imgs[tr].reshape(n_train, -1).astype(np.float64).T
    Xte = timgs[te].reshape(n_test, -1).astype(np.float64).T
    Xtr, Xte = _normalise(Xtr, Xte)
    if not (np.all(np.isfinite(Xtr)) and np.all(np.isfinite(Xte))):  # every image blank
        raise InvalidArgument(
            f"the {kind} images under {shown(str(root), 80)} are all alike (zero variance); "
            "download the files again."
        )
    return Dataset(kind, Xtr, labs[tr].astype(np.int64), Xte, tlabs[te].astype(np.int64))


def _dimension(kind: str) -> int:
    return {"gmm": _GMM_DIMENSION, "digits": 64}.get(kind, 784)


def work_estimate(
    datasets: Sequence[str], layers: int | None, m: int, seeds: int, n_train: int, n_test: int
) -> tuple[float, int]:
    """(floating-point operations, bytes) of a run, estimated before it starts.

    Per dataset and seed: the DEQ's fixed point (~60 iterations of an m × m by m × n product),
    two ENNs of ``layers`` layers (3 when the depth rule decides; it gives 1 or 2), and three
    ridge fits (an m × m Gram matrix and its solve).  The memory: the data in numpy and torch,
    the m × m weights and Gram matrix, three m × n feature matrices.
    """
    n = n_train + n_test
    depth = layers or 3
    flops, peak = 0.0, 0
    for spec in datasets:
        p = _dimension(_dataset_kind(spec))
        deq = _DEQ_ITERATIONS * 2.0 * m * m * n + 2.0 * m * p * n
        enn = 2 * (2.0 * m * p * n + (depth - 1) * 2.0 * m * m * n)
        ridge = 3 * (2.0 * m * m * n_train + m**3 + 2.0 * m * n)
        flops += seeds * (deq + enn + ridge)
        peak = max(peak, 8 * (4 * p * n + 3 * m * m + m * p + 4 * m * n) + 200 * 2**20)
    return flops, peak


def check_arguments(
    datasets: Sequence[str], layers: int | None, m: int, seeds: int, n_train: int, n_test: int
) -> None:
    """Refuse, before any work, what :func:`run_experiment` could not finish within budget."""
    from .._budget import check_memory

    if isinstance(datasets, str) or not isinstance(datasets, Sequence):
        raise InvalidArgument(
            f"datasets={shown(datasets)}: give a list such as ['gmm', 'digits'] "
            "(datasets=['gmm', 'digits'])."
        )
    if not datasets:
        raise InvalidArgument(
            "no dataset given; name one or more of gmm, digits, mnist:DIR, fashion:DIR "
            "(datasets=['gmm', 'digits'])."
        )
    for spec in datasets:
        _dataset_kind(spec)
    bounded_int(seeds, "seeds", 1, MAX_SEEDS, fix="the number of runs, each with new weights")
    bounded_int(m, "m", 1, MAX_WIDTH, fix="the width of every network")
    bounded_int(
        n_train, "n_train", 2, MAX_SAMPLES, fix="training samples per dataset (MNIST has 60000)"
    )
    bounded_int(n_test, "n_test", 1, MAX_SAMPLES, fix="test samples per dataset (MNIST has 10000)")
    if layers is not None:
        bounded_int(layers, "layers", 1, 8, fix="the designed ENN's depth")
    flops, peak = work_estimate(datasets, layers, m, seeds, n_train, n_test)
    what = f"the experiment with m={m}, n_train={n_train}, n_test={n_test}, seeds={seeds}"
    if flops > MAX_FLOPS:
        raise BudgetExceeded(
            f"{what} needs about {flops:.2g} floating-point operations, over the budget of "
            f"{MAX_FLOPS:.2g} (MAX_FLOPS, docs/limits.md); lower m=…, n_train=… or seeds=…."
        )
    check_memory(peak, what, "lower m=… or n_train=…")


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
    #: what ran: the width m, the seeds, the device and per dataset the sizes actually drawn
    settings: dict[str, Any] = dataclasses.field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"inputs": self.inputs, "settings": self.settings, "datasets": {}}
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
    progress: Callable[[int, int], None] | None = None,
) -> ExperimentResult:
    """Run (a) DEQ, (b) designed ENN, (c) naive ENN on each dataset for ``seeds`` seeds.

    ``progress(done, total)`` is called after each step: per dataset the design, then the three
    models' features and fits for every seed (``total`` = datasets × (1 + 3 · seeds)).
    """
    from ..numeric import design_enn, explicit_coefficients
    from ..symbolic import get_activation

    check_arguments(datasets, layers, m, seeds, n_train, n_test)
    dt = torch.float64
    results: dict[str, dict[str, dict[str, list[float]]]] = {}
    designs: dict[str, Any] = {}
    # every dataset read (and refused if it cannot serve) before the first design
    first = {ds: load_dataset(ds, n_train=n_train, n_test=n_test, seed=0) for ds in datasets}
    sizes: dict[str, dict[str, Any]] = {}
    total, done = len(datasets) * (1 + 3 * seeds), 0

    def step() -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total)

    for ds_name in datasets:
        data0 = first[ds_name]
        tau0 = float(data0.tau0)  # exact as its shortest repr (DEQProblem)
        design = design_enn(
            deq, family, layers=layers, sigma_a2=sigma_a2, tau0=tau0, dps=20, starts=DESIGN_STARTS
        )
        coeffs = design.deq  # the DEQ the design was solved against: computed once
        sol = design.solutions[0]
        designs[ds_name] = sol.to_dict()
        fam_acts = [
            design.family.instantiate([_exact_decimal(v) for v in layer.values()])
            for layer in sol.params
        ]
        depth = design.layers
        sizes[ds_name] = _sizes(data0) | {"tau0": tau0, "enn_layers": depth}
        step()
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
            data = (
                data0
                if seed == 0
                else load_dataset(ds_name, n_train=n_train, n_test=n_test, seed=seed)
            )
            X = torch.as_tensor(np.hstack([data.X_train, data.X_test]), dtype=dt, device=device)
            ntr = data.X_train.shape[1]
            t = time.perf_counter()
            w = DeqWeights.draw(
                m,
                X.shape[0],
                sigma_a2=sa2,
                sigma_b2=sb2,
                seed=DEQ_SEED + seed,
                device=device,
                dtype=dt,
            )
            F = solve_deq(w, deq_act, X, max_iter=1000).Z
            _sync(device)
            per_model["deq"]["seconds"].append(time.perf_counter() - t)
            per_model["deq"]["accuracy"].append(
                _ridge_accuracy(F[:, :ntr], data.y_train, F[:, ntr:], data.y_test)
            )
            step()
            for model, acts in (("designed_enn", enn_acts), ("naive_enn", naive_acts)):
                t = time.perf_counter()
                F = enn_features(acts, X, m, seed=ENN_SEED + seed)
                _sync(device)
                per_model[model]["seconds"].append(time.perf_counter() - t)
                per_model[model]["accuracy"].append(
                    _ridge_accuracy(F[:, :ntr], data.y_train, F[:, ntr:], data.y_test)
                )
                step()
        results[ds_name] = per_model
    inputs = {
        "deq": deq, "family": family, "layers": layers, "sigma_a2": sigma_a2, "m": m, "seeds": seeds,
        "n_train": n_train, "n_test": n_test, "device": device, "datasets": list(datasets),
        "designs": designs,
    }  # fmt: skip
    settings = {
        "m": m, "seeds": seeds, "data_seeds": list(range(seeds)),
        "deq_weight_seeds": [DEQ_SEED + s for s in range(seeds)],
        "enn_weight_seeds": [ENN_SEED + s for s in range(seeds)],
        "design": {"starts": DESIGN_STARTS, "seed": 0, "dps": 20},
        "device": str(device), "dtype": "float64", "datasets": sizes,
    }  # fmt: skip
    return ExperimentResult(inputs, results, settings)


def _sizes(data: Dataset) -> dict[str, Any]:
    """The sizes actually drawn (a dataset smaller than asked for gives fewer samples)."""
    classes = np.unique(np.concatenate([data.y_train, data.y_test]))
    return {
        "n_train": int(data.X_train.shape[1]),
        "n_test": int(data.X_test.shape[1]),
        "p": int(data.X_train.shape[0]),
        "classes": int(classes.size),
    }


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

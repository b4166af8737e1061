"""Issue #5: the accuracy/cost experiment runs end to end on small sizes (CPU, seeded)."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

from deqrmt.validate._experiment import load_dataset, plot_experiment, run_experiment  # noqa: E402


def test_experiment_designed_enn_matches_deq_and_is_cheaper(tmp_path: Path) -> None:
    res = run_experiment(
        "tanh", "hard_tanh", datasets=("gmm", "digits"), m=256, seeds=2, n_train=400, n_test=200
    )
    s = res.summary()["datasets"]
    for ds in ("gmm", "digits"):
        deq, enn = s[ds]["deq"], s[ds]["designed_enn"]
        # equal within noise: a few points of accuracy at this small size (400 training points)
        assert abs(deq["accuracy_mean"] - enn["accuracy_mean"]) < 0.05
        assert enn["accuracy_mean"] > 0.8
        # no root-finding: the ENN's features cost a fraction of the DEQ's
        assert s[ds]["enn_over_deq_time"] < 0.5
    png = plot_experiment(res, tmp_path / "experiment.png")
    assert png.stat().st_size > 10_000


def test_local_mnist_folder_in_idx_format(tmp_path: Path) -> None:
    """A tiny fake MNIST in torchvision's raw layout is read without any download."""
    raw = tmp_path / "raw"
    raw.mkdir()
    rng = np.random.default_rng(0)

    def write(name: str, arr: np.ndarray) -> None:
        # IDX: two zero bytes, type 0x08 (uint8), the rank, then big-endian dimensions
        header = bytes([0, 0, 8, arr.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in arr.shape)
        with gzip.open(raw / f"{name}.gz", "wb") as fh:
            fh.write(header + arr.astype(np.uint8).tobytes())

    write("train-images-idx3-ubyte", rng.integers(0, 255, (60, 28, 28)))
    write("train-labels-idx1-ubyte", rng.integers(0, 10, 60))
    write("t10k-images-idx3-ubyte", rng.integers(0, 255, (20, 28, 28)))
    write("t10k-labels-idx1-ubyte", rng.integers(0, 10, 20))
    ds = load_dataset(f"mnist:{tmp_path}", n_train=50, n_test=10, seed=0)
    assert ds.X_train.shape == (784, 50) and ds.X_test.shape == (784, 10)
    assert abs(ds.tau0 - 1.0) < 1e-12  # normalised to mean squared norm 1


def test_missing_local_dataset_is_a_clear_error(tmp_path: Path) -> None:
    from deqrmt import InvalidArgument

    with pytest.raises(InvalidArgument, match="nothing is downloaded"):
        load_dataset(f"fashion:{tmp_path}", n_train=10, n_test=10, seed=0)

"""The cores a block may use: a Dask task holds one thread slot, not the whole machine."""

from __future__ import annotations

import os
import threading

import pytest

pytest.importorskip("torch")

from deqrmt.validate import core_share  # noqa: E402
from deqrmt.validate._threads import cpu_cores, tile_workers  # noqa: E402


def _affinity() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def test_core_share_caps_this_thread_and_restores() -> None:
    import torch

    assert cpu_cores() == _affinity()
    with core_share(1):
        assert cpu_cores() == 1
        assert tile_workers(torch.device("cpu")) == 1
        with core_share(10_000):  # a share above the machine is the machine
            assert cpu_cores() == _affinity()
        assert cpu_cores() == 1
    assert cpu_cores() == _affinity()


def test_core_share_is_per_thread() -> None:
    seen: list[int] = []
    with core_share(1):
        t = threading.Thread(target=lambda: seen.append(cpu_cores()))
        t.start()
        t.join()
    assert seen == [_affinity()]


def test_core_share_restores_after_an_error() -> None:
    with pytest.raises(RuntimeError), core_share(1):
        raise RuntimeError("inside")
    assert cpu_cores() == _affinity()

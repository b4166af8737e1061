"""Edges of a sweep's spec, its scheduler address, the launcher's first line and the driver's
argument checks, none of which needs a running cluster: the design kind's task grid, values
that are not what a key takes, a launcher that prints garbage or nothing, a port that refuses.

Task counts are products written out in the test; messages are matched on the key they name.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from deqrmt import BudgetExceeded, InvalidArgument, MissingExtra, SchedulerError
from deqrmt.sweep import SpecError, _cluster, _connect, _run, load_spec, parse_spec, run_sweep

BASE = 'activations = ["tanh"]\nsigma_a2 = 0.2\n'


def test_the_design_kind_expands_tau0_times_families() -> None:
    spec = parse_spec(
        'kind = "design"\nactivations = ["tanh", "relu"]\nsigma_a2 = [0.2, 0.3]\n'
        'tau0 = [1, 2, 3]\nfamily = ["hard_tanh", "polynomial2"]\nseed = 7\nstarts = 2\n'
    )
    # 2 activations × 2 σ_a² × 1 σ_b² (the default) × 3 τ₀ × 2 families
    assert len(spec.tasks) == 2 * 2 * 3 * 2
    assert {t.inputs["family"] for t in spec.tasks} == {"hard_tanh", "polynomial2"}
    assert {t.inputs["tau0"] for t in spec.tasks} == {"1", "2", "3"}
    assert {(t.inputs["seed"], t.inputs["starts"], t.inputs["kernel"]) for t in spec.tasks} == {
        (7, 2, "ck")
    }


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('kind = "coefficients"\n' + BASE + "sigma_b2 = [0.5, -1]", "every σ_b² must be > 0"),
        (
            'kind = "exact"\n' + BASE + "n = [64]\nseeds = []",
            r"seeds = \[\]: give at least one seed",
        ),
        ('kind = "validate"\n' + BASE + "n = [64]\nm = []", r"m = \[\]: give at least one value"),
        ('kind = "validate"\n' + BASE + "n = [64]\nm = [0]", "expected integers ≥ 1"),
        ('kind = "design"\n' + BASE + 'family = "hard_tanh"\nseed = -1', "seed"),
        ('kind = "coefficients"\n' + BASE + "coefficients = 1", "coefficients must be a table"),
    ],
)
def test_values_a_key_does_not_take_are_refused_by_name(text: str, fragment: str) -> None:
    with pytest.raises(SpecError, match=fragment):
        parse_spec(text)


def test_lists_longer_than_the_budget_are_refused() -> None:
    values = ", ".join(["0.2"] * 201)
    with pytest.raises(BudgetExceeded, match="sigma_a2 has 201 values; the limit is 200"):
        parse_spec(f'kind = "coefficients"\nactivations = ["tanh"]\nsigma_a2 = [{values}]')
    ns = ", ".join(str(64 + i) for i in range(201))
    with pytest.raises(BudgetExceeded, match="n has 201 values; the limit is 200"):
        parse_spec(f'kind = "exact"\n{BASE}n = [{ns}]')


def test_a_spec_text_beyond_the_size_budget_is_refused_before_parsing() -> None:
    text = 'kind = "coefficients"\n' + "# padding\n" * 30_000
    with pytest.raises(BudgetExceeded, match="bytes; the limit is 262144"):
        parse_spec(text)


def test_a_spec_that_is_not_text_or_not_a_path_is_refused() -> None:
    with pytest.raises(SpecError, match="a spec is TOML text, got bytes"):
        parse_spec(b'kind = "coefficients"')  # type: ignore[arg-type]
    with pytest.raises(SpecError, match="a spec path is a string or a path, got int"):
        load_spec(3)  # type: ignore[arg-type]


def test_a_spec_path_given_as_bytes_is_read(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text('kind = "coefficients"\n' + BASE)
    spec = load_spec(os.fsencode(path))  # type: ignore[arg-type]
    assert [t.inputs["sigma_a2"] for t in spec.tasks] == ["0.2"]
    assert spec.source == path


# -- the scheduler -----------------------------------------------------------------------------


def test_a_scheduler_that_is_not_text_is_refused() -> None:
    with pytest.raises(SchedulerError, match="scheduler must be a string tcp://HOST:PORT"):
        _cluster.check_scheduler(8786)


def test_a_port_that_refuses_is_an_error_after_the_timeout() -> None:
    with socket.socket() as s:  # a port the OS gave and nobody listens on any more
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(
        SchedulerError,
        match=f"cannot reach the Dask scheduler .*:{port}' within 0.3 s \\(Connection refused\\)",
    ):
        _cluster.wait_reachable(f"tcp://127.0.0.1:{port}", 0.3)


def _launcher(code: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL
    )


def _close(proc: subprocess.Popen[bytes]) -> None:
    proc.kill()
    proc.wait()
    assert proc.stdout is not None
    proc.stdout.close()


def test_a_launcher_line_that_is_not_json_is_reported(tmp_path: Path) -> None:
    proc = _launcher(
        f"import time; print('noise'); print({_cluster.READY!r} + '{{oops', flush=True); "
        "time.sleep(60)"
    )
    try:
        with pytest.raises(SchedulerError, match=r"did not start \(deqrmt-cluster \{oops\)"):
            _cluster._await_address(proc, tmp_path / "log", 60)
    finally:
        _close(proc)


def test_a_launcher_that_reports_an_error_is_reported(tmp_path: Path) -> None:
    proc = _launcher(
        f'import time; print({_cluster.READY!r} + \'{{"error": "OSError: no room"}}\', '
        "flush=True); time.sleep(60)"
    )
    try:
        with pytest.raises(SchedulerError, match=r"did not start \(OSError: no room\)"):
            _cluster._await_address(proc, tmp_path / "log", 60)
    finally:
        _close(proc)


def test_a_silent_launcher_times_out_with_its_last_words(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.write_text("starting\n\nworker 3 failed: out of memory\n\n")
    proc = _launcher("import time; time.sleep(60)")
    try:
        with pytest.raises(SchedulerError, match=r"within 0.2 s \(its last words: worker 3 failed"):
            _cluster._await_address(proc, log, 0.2)
        log.write_text("\n  \n")
        assert _cluster._last_line(log) == "no output"
        assert _cluster._last_line(tmp_path / "absent") == "no output"
    finally:
        _close(proc)


# -- GPUs and the driver's arguments -----------------------------------------------------------


def test_local_gpus_is_zero_without_a_driver_or_a_device(monkeypatch) -> None:
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(_connect.os.path, "exists", lambda p: False)
    monkeypatch.setattr(_connect.shutil, "which", lambda name: None)
    assert _connect.local_gpus() == 0
    # a driver, but torch sees no device
    monkeypatch.setattr(_connect.shutil, "which", lambda name: "/usr/bin/nvidia-smi")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert _connect.local_gpus() == 0
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 3)
    assert _connect.local_gpus() == 3
    monkeypatch.setitem(sys.modules, "torch", None)  # a driver, but no torch to ask
    assert _connect.local_gpus() == 0


class _Client:
    def __init__(self, *gpus: int) -> None:
        self.info = {
            "workers": {
                f"tcp://w:{i}": {"resources": {"GPU": g} if g else {}} for i, g in enumerate(gpus)
            }
        }

    def scheduler_info(self) -> dict[str, object]:
        return self.info


def test_the_torch_device_follows_the_gpu_workers() -> None:
    assert _connect.torch_device(_Client(0, 1, 1), "s", "auto", 0, "tcp://s:1") == "cuda"
    assert _connect.torch_device(_Client(0, 0), "s", "auto", 0, "tcp://s:1") == "cpu"
    assert _connect.torch_device(None, "embedded", "auto", 2, None) == "cuda"
    with pytest.raises(InvalidArgument, match="no worker of s has the resource GPU"):
        _connect.torch_device(_Client(0), "s", "cuda", 0, "tcp://s:1")


def test_cuda_without_a_device_is_refused_before_any_cluster(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(_run, "local_gpus", lambda: 0)
    spec = tmp_path / "s.toml"
    spec.write_text('kind = "exact"\n' + BASE + "n = [64]\n")
    with pytest.raises(InvalidArgument, match="device='cuda' but torch sees no CUDA device"):
        run_sweep(str(spec), store=tmp_path / "s.sqlite", device="cuda")


@pytest.mark.parametrize("retries", [True, -1, 101, 1.5])
def test_retries_out_of_range_are_refused(retries: object, tmp_path: Path) -> None:
    spec = parse_spec('kind = "coefficients"\n' + BASE)
    with pytest.raises(InvalidArgument, match="retries must be an integer from 0 to 100"):
        run_sweep(spec, store=tmp_path / "s.sqlite", retries=retries)  # type: ignore[arg-type]


def test_a_blocked_distributed_is_a_missing_extra(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(MissingExtra, match=r"pip install 'deqrmt\[sweep\]'"):
        _run._check_distributed()


def test_a_design_task_stores_what_design_enn_returns() -> None:
    # The sweep's record of a design task is the engine's own answer (its JSON), computed in
    # this process (serial): the same solutions, the DEQ's coefficients as decimals.
    from deqrmt.numeric import design_enn
    from deqrmt.sweep import execute

    spec = parse_spec(
        'kind = "design"\nactivations = ["tanh"]\nsigma_a2 = 0.2\nfamily = "hard_tanh"\n'
        "dps = 15\nstarts = 2\n"
    )
    (task,) = spec.tasks
    rec = execute("design", task.inputs)
    assert rec["error"] is None, rec["error"]
    out = rec["outputs"]
    direct = design_enn("tanh", "hard_tanh", sigma_a2="0.2", dps=15, starts=2, seed=0).to_dict()
    assert out["design"]["solutions"] == direct["solutions"]
    assert out["solutions"] == len(direct["solutions"])
    assert set(out["floats"]) >= {"tau_star", "alpha_1"}


def test_an_unknown_task_kind_is_a_recorded_error() -> None:
    from deqrmt.sweep import execute

    rec = execute("nonsense", {})
    assert rec["outputs"] is None
    assert rec["error"] == "DeqrmtError: unknown task kind 'nonsense'."


# -- deferred interrupts -------------------------------------------------------------------------


def test_deferred_interrupts_outside_the_main_thread_change_nothing() -> None:
    import signal
    import threading

    from deqrmt.sweep._signals import deferred_interrupts

    seen: list[object] = []

    def body() -> None:
        with deferred_interrupts() as state:
            seen.append(signal.getsignal(signal.SIGINT))
            seen.append(state.count)

    before = signal.getsignal(signal.SIGINT)
    t = threading.Thread(target=body)
    t.start()
    t.join()
    assert seen == [before, 0]


def test_deferred_interrupts_where_sigint_is_ignored_or_default() -> None:
    import signal

    from deqrmt.sweep._signals import deferred_interrupts

    before = signal.getsignal(signal.SIGINT)
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        with deferred_interrupts() as state:  # nothing to defer: left ignored
            assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
            signal.raise_signal(signal.SIGINT)
        assert state.count == 0
        # SIG_DFL would have killed the process: the deferred Ctrl-C stops the body's caller
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        with pytest.raises(KeyboardInterrupt), deferred_interrupts() as state:
            signal.raise_signal(signal.SIGINT)
            assert state.count == 1  # recorded, not delivered, inside the body
        assert signal.getsignal(signal.SIGINT) == signal.SIG_DFL
    finally:
        signal.signal(signal.SIGINT, before)


# -- what a finished future becomes in the store ---------------------------------------------------


class _Future:
    def __init__(
        self, status: str, result: object = None, exc: BaseException | None = None
    ) -> None:
        self.status, self._result, self._exc = status, result, exc

    def result(self) -> object:
        if self._exc is not None:
            raise self._exc
        return self._result

    def exception(self) -> BaseException | None:
        return self._exc


def test_a_future_that_failed_or_vanished_is_recorded_as_such() -> None:
    from concurrent.futures import CancelledError

    (task,) = parse_spec('kind = "coefficients"\n' + BASE).tasks
    # a task that raised past Dask's retries: stored as a failure with its type and message
    rec = _run._record(_Future("error", exc=ZeroDivisionError("1/0 in a task")), task, 7)
    assert rec is not None and rec.outputs is None and rec.run_id == 7
    assert rec.error == "ZeroDivisionError: 1/0 in a task"
    assert (rec.key, rec.kind, dict(rec.inputs)) == (task.key, task.kind, dict(task.inputs))
    # released meanwhile, or cancelled with its worker: nothing stored (the task stays missing)
    assert _run._record(_Future("finished", exc=CancelledError()), task, 7) is None
    assert _run._record(_Future("cancelled"), task, 7) is None

"""Memory is refused before it is touched: the one memory model (deqrmt._budget) and the
allocations that ask it first.

The available figure is the least of free memory (MemAvailable), the headroom under RLIMIT_AS
and RLIMIT_DATA (the limit less what the process already holds) and the cgroup's memory.max
less its current use.  The /proc and /sys readings are checked on fake trees (the module's
paths monkeypatched); the resource limits on a real child process started under
``resource.setrlimit``, where a kernel of n = 12000 (1.07 GiB) used to reach torch's
allocator and is now one BudgetExceeded line, while a small kernel under the same limit is
computed (the limit is set from the child's own measured size, so the test does not depend on
how much address space this machine's torch build takes).
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import deqrmt
import deqrmt._budget as budget
from deqrmt import BudgetExceeded
from deqrmt.sweep import _limits
from deqrmt.validate import GaussianMixture

GIB = 2**30


def _fake_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str]) -> None:
    """A fake /proc and /sys: ``files`` maps 'proc/meminfo', 'cgroup/…' to their text."""
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    monkeypatch.setattr(budget, "MEMINFO", str(tmp_path / "proc/meminfo"))
    monkeypatch.setattr(budget, "SELF_STATUS", str(tmp_path / "proc/status"))
    monkeypatch.setattr(budget, "SELF_CGROUP", str(tmp_path / "proc/cgroup"))
    monkeypatch.setattr(budget, "CGROUP_ROOT", str(tmp_path / "cgroup"))
    monkeypatch.setattr(resource, "getrlimit", lambda _: (resource.RLIM_INFINITY,) * 2)


MEMINFO = "MemTotal:       65000000 kB\nMemFree:         1000000 kB\nMemAvailable:   40000000 kB\n"


def test_free_memory_is_memavailable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_tree(tmp_path, monkeypatch, {"proc/meminfo": MEMINFO})
    assert budget.memory_limits() == {"MemAvailable": 40000000 * 1024}
    assert budget.available_memory() == 40000000 * 1024


def test_cgroup_v2_takes_the_tightest_ancestor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The process's cgroup has no limit; its parent allows 8 GiB of which 3 GiB are used;
    the root's limit is wider: 5 GiB left, less than the machine's 38 GiB free."""
    _fake_tree(
        tmp_path,
        monkeypatch,
        {
            "proc/meminfo": MEMINFO,
            "proc/cgroup": "0::/user.slice/job.scope\n",
            "cgroup/user.slice/job.scope/memory.max": "max\n",
            "cgroup/user.slice/job.scope/memory.current": "1000\n",
            "cgroup/user.slice/memory.max": f"{8 * GIB}\n",
            "cgroup/user.slice/memory.current": f"{3 * GIB}\n",
            "cgroup/memory.max": f"{64 * GIB}\n",
            "cgroup/memory.current": f"{GIB}\n",
        },
    )
    assert budget.memory_limits()["cgroup"] == 5 * GIB
    assert budget.available_memory() == 5 * GIB
    with pytest.raises(BudgetExceeded) as info:
        budget.check_memory(4.5 * GIB, "a test array", "use less")
    assert "the cgroup's memory.max less its current use" in str(info.value)
    budget.check_memory(3.9 * GIB, "a test array", "use less")  # within 80 % of 5 GiB


def test_cgroup_v1_and_a_container_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """v1: the memory controller's line; a path that does not exist in this namespace falls
    back to its ancestors, the mount's root as a container sees it."""
    _fake_tree(
        tmp_path,
        monkeypatch,
        {
            "proc/meminfo": MEMINFO,
            "proc/cgroup": "5:cpu,cpuacct:/x\n4:memory:/docker/abc123\n0::/\n",
            "cgroup/memory/memory.limit_in_bytes": f"{2 * GIB}\n",
            "cgroup/memory/memory.usage_in_bytes": f"{GIB // 2}\n",
        },
    )
    assert budget.memory_limits()["cgroup"] == GIB + GIB // 2
    # no limit at all (v1 writes a page-rounded 2^63): no figure
    (tmp_path / "cgroup/memory/memory.limit_in_bytes").write_text("9223372036854771712\n")
    assert "cgroup" not in budget.memory_limits()


def test_unreadable_and_hostile_files_are_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Malformed text, a FIFO (a read would block forever) and missing files give no figure;
    without /proc/meminfo the physical memory stands in."""
    _fake_tree(
        tmp_path,
        monkeypatch,
        {"proc/cgroup": "0::/a\n", "cgroup/a/memory.current": "12\n"},
    )
    os.mkfifo(tmp_path / "cgroup/a/memory.max")
    (tmp_path / "proc/meminfo").write_text("MemAvailable: lots kB\n" + "x" * 100_000)
    limits = budget.memory_limits()
    assert set(limits) == {"physical"}, limits
    assert limits["physical"] == os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def test_rlimit_headroom_subtracts_what_the_process_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_tree(
        tmp_path,
        monkeypatch,
        {"proc/meminfo": MEMINFO, "proc/status": "VmSize:\t 1048576 kB\nVmData:\t  262144 kB\n"},
    )
    limits = {resource.RLIMIT_AS: 3 * GIB, resource.RLIMIT_DATA: 2 * GIB}
    monkeypatch.setattr(
        resource, "getrlimit", lambda r: (limits.get(r, resource.RLIM_INFINITY),) * 2
    )
    got = budget.memory_limits()
    assert got["RLIMIT_AS"] == 2 * GIB  # 3 GiB less the 1 GiB of VmSize
    assert got["RLIMIT_DATA"] == 2 * GIB - GIB // 4  # 2 GiB less the 256 MiB of VmData
    assert budget.available_memory() == 2 * GIB - GIB // 4


# --- a real child process under a resource limit -----------------------------------------------

_CHILD = """
import sys, numpy as np, deqrmt
n = int(sys.argv[1])
X = np.random.default_rng(0).standard_normal((n, 10)) / 3
if n == 0:  # measure: what the process holds after a small kernel (torch imported)
    deqrmt.kernels('relu', np.eye(3))
    status = open('/proc/self/status').read()
    print(*(int(status.split(k + ':')[1].split()[0]) * 1024 for k in ('VmSize', 'VmData')))
    sys.exit(0)
try:
    print('computed', deqrmt.kernels('relu', X).shape)
except deqrmt.DeqrmtError as e:
    print(type(e).__name__ + ': ' + str(e))
"""


def _child(n: int, limit: tuple[int, int] | None) -> subprocess.CompletedProcess[str]:
    def preexec() -> None:
        if limit is not None:
            resource.setrlimit(limit[0], (limit[1], limit[1]))

    env = {**os.environ, "PYTHONPATH": str(Path(deqrmt.__file__).parents[1])}
    proc = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(n)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=preexec,
    )
    try:
        out, err = proc.communicate(timeout=300)
    finally:
        proc.kill()
        proc.wait()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.fixture(scope="module")
def child_size() -> dict[int, int]:
    """VmSize and VmData of the child after a small kernel, unlimited."""
    proc = _child(0, None)
    assert proc.returncode == 0, proc.stderr
    size, data = map(int, proc.stdout.split())
    return {resource.RLIMIT_AS: size, resource.RLIMIT_DATA: data}


@pytest.mark.parametrize(
    ("limit", "says"),
    [
        (resource.RLIMIT_AS, "the address-space limit (ulimit -v)"),
        (resource.RLIMIT_DATA, "the data-segment limit (ulimit -d)"),
    ],
)
def test_a_kernel_beyond_the_rlimit_is_refused_before_torch_allocates(
    child_size: dict[int, int], limit: int, says: str
) -> None:
    """700 MiB above what the child holds: n = 300 (0.7 MB) is computed; n = 12000 (a 1.07 GiB
    kernel) is one BudgetExceeded line naming the limit (it was torch's allocator error, or a
    MemoryError, when the model took RLIMIT_AS itself, not its headroom)."""
    cap = child_size[limit] + 700 * 2**20
    small = _child(300, (limit, cap))
    assert small.returncode == 0 and small.stdout.strip() == "computed (300, 300)", (
        small.stdout,
        small.stderr[-2000:],
    )
    big = _child(12000, (limit, cap))
    assert big.returncode == 0, big.stderr[-2000:]
    lines = big.stdout.strip().splitlines()
    assert len(lines) == 1, big.stdout
    assert lines[0].startswith("BudgetExceeded: the 12000 × 12000 kernel"), lines[0]
    assert "needs about 1.07 GiB" in lines[0], lines[0]
    # the limit sets the figure, unless this machine has even less free memory than 700 MiB
    assert says in lines[0] or ": free memory;" in lines[0], lines[0]
    assert "compute it in pieces" in lines[0]


# --- every allocation that scales with the input asks first --------------------------------------


@pytest.fixture
def eight_gib(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(budget, "available_memory", lambda: 8 * GIB)


def test_uint8_rows_are_counted_as_their_float64_copy(eight_gib: None) -> None:
    """2·10⁷ uint8 rows of 100 features are 2 GB as given and 16 GB as float64: refused before
    the conversion (a MemoryError before), though the 2·10⁷ × 1 kernel itself is 160 MB."""
    X1 = np.broadcast_to(np.uint8(1), (20_000_000, 100))  # a view: nothing allocated here
    with pytest.raises(BudgetExceeded) as info:
        deqrmt.kernels("relu", X1, np.ones((1, 100)))
    msg = str(info.value)
    assert "X1 of shape (20000000, 100) (uint8)" in msg and "needs about 15" in msg, msg
    with pytest.raises(BudgetExceeded, match=r"X of shape \(20000000, 100\) \(uint8\)"):
        deqrmt.equivalent_kernels("relu", X1)


def test_spectrum_asks_for_the_monte_carlo_and_the_grid(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(budget, "available_memory", lambda: 64 * 2**20)
    with pytest.raises(BudgetExceeded, match="the Monte Carlo check at n = 4000, d = 100"):
        deqrmt.spectrum("relu", n=4000, d=100, mc=True)
    # a mixture whose 2 classes have 5000 distinct variance profiles: the grid's arrays
    rng = np.random.default_rng(0)
    mix = GaussianMixture(np.zeros((2, 5000)), 1 + rng.random((2, 5000)), np.array([0.5, 0.5]))
    with pytest.raises(BudgetExceeded, match="predicted density on 20001 points"):
        deqrmt.spectrum("relu", data="gmm", mixture=mix, n=100, points=20001)


def test_the_sweep_budget_is_the_same_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(budget, "available_memory", lambda: 123 * 2**20)
    assert _limits.machine_memory() == 123 * 2**20


def test_argument_sizes_use_the_same_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """deqrmt._arguments.memory_budget (the older API's sizes) asks the same figure."""
    from deqrmt._arguments import memory_budget

    monkeypatch.setattr(budget, "available_memory", lambda: 100 * 2**20)
    memory_budget(50 * 2**20, "n", 10, "x")
    with pytest.raises(BudgetExceeded, match="n=10: the kernel needs about 90"):
        memory_budget(90 * 2**20, "n", 10, "the kernel")


def test_a_validation_run_is_sized_before_it_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    """``deqrmt validate --n 100000 --m 10000000`` was a MemoryError (exit 70) from numpy."""
    from deqrmt.validate import ValidationConfig

    monkeypatch.setattr(budget, "available_memory", lambda: 8 * GIB)
    with pytest.raises(BudgetExceeded) as info:
        ValidationConfig("tanh", ns=(1000, 100_000), m=10_000_000)
    msg = str(info.value)
    assert msg.startswith("a validation run at n=100000 (p = 80000) and m=10000000 needs"), msg
    assert msg.endswith("lower the largest n or m."), msg
    ValidationConfig("tanh", ns=(256, 512), m=2048)  # ~0.2 GB: accepted
    with pytest.raises(BudgetExceeded, match="at n=40000 .p = 32000. needs"):
        ValidationConfig("tanh", ns=(40_000,), monte_carlo=False)  # the exact kernels alone


def test_the_sweep_and_the_api_share_the_estimate() -> None:
    """One formula (measured: benchmarks/sweep.py --memory): a sweep's task is a run plus a
    fresh interpreter."""
    for n, p, m in ((2048, 1638, 0), (512, 410, 2048)):
        assert _limits.task_bytes(n, p, m) == budget.run_bytes(n, p, m) + 256 * 2**20
    assert budget.run_bytes(2048, 1638, 0) == 8 * (12 * 2048**2 + 4 * 2048 * 1638)


def test_gpu_memory_refusal_names_the_work_the_sizes_and_the_fixes() -> None:
    """The GPU check: silent within the free bytes, else one line with both sizes in GiB."""
    budget.check_gpu_memory(2**30, 2**30, "a 2 × 2 kernel needs", "use less")  # fits exactly
    with pytest.raises(BudgetExceeded) as info:
        budget.check_gpu_memory(3 * 2**30, 2**29, "a 2 × 2 kernel needs", "use less")
    assert str(info.value) == (
        "a 2 × 2 kernel needs about 3 GiB of GPU memory, more than is free (0.5 GiB); "
        "use less, or use device='cpu'."
    )

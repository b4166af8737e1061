"""Sweeps: grids of coefficient, exact-kernel, Monte Carlo, design and certificate tasks.

The orchestration layer above :mod:`deqrmt.numeric` and :mod:`deqrmt.validate`: a SPEC.toml
grid (:func:`load_spec`) becomes keyed tasks, which :func:`run_sweep` runs on Dask's distributed
scheduler (an embedded cluster or ``tcp://HOST:PORT``) and stores, one transaction per
result, in a SQLite file (:class:`ResultStore`); :func:`write_plots` draws the PNGs.

Importing this package imports neither dask nor torch, nor any of its modules: each name is
loaded on first use (so ``deqrmt.kernels`` in memory loads ``_kernels`` alone).  Running a
sweep needs the extra ``pip install 'deqrmt[sweep]'`` (and ``[validate]`` for the torch kinds).

A spec expands into its tasks; ``run_sweep(spec)`` then starts a cluster and runs them
(``deqrmt sweep SPEC.toml`` is the same from the command line).

Example:
  >>> from deqrmt.sweep import parse_spec
  >>> spec = parse_spec('kind = ["coefficients", "exact"]\\nactivations = ["tanh", "relu"]\\n'
  ...                   'sigma_a2 = ["0.1", "0.2"]\\n[exact]\\nn = [64, 128]')
  >>> len(spec.tasks), sorted({t.kind for t in spec.tasks})
  (12, ['coefficients', 'exact'])
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import _lazy
from .._errors import BudgetExceeded as BudgetExceeded
from .._errors import SchedulerError as SchedulerError
from .._errors import SpecError as SpecError
from .._errors import StoreError as StoreError

if TYPE_CHECKING:
    from ._cluster import QUIET_DASK as QUIET_DASK
    from ._cluster import check_scheduler as check_scheduler
    from ._cluster import embedded_cluster as embedded_cluster
    from ._kernel_run import KernelStoreRun as KernelStoreRun
    from ._kernel_run import write_kernels as write_kernels
    from ._kernels import kernels as kernels
    from ._plots import write_plots as write_plots
    from ._result import GroupSummary as GroupSummary
    from ._result import SweepProgress as SweepProgress
    from ._result import SweepResult as SweepResult
    from ._run import largest_first as largest_first
    from ._run import run_sweep as run_sweep
    from ._spec import KINDS as KINDS
    from ._spec import SweepSpec as SweepSpec
    from ._spec import Task as Task
    from ._spec import load_spec as load_spec
    from ._spec import parse_spec as parse_spec
    from ._store import Record as Record
    from ._store import ResultStore as ResultStore
    from ._tasks import execute as execute

#: exported name → the module of this package that defines it (loaded on first use)
_EXPORTS: dict[str, str] = {
    "QUIET_DASK": "._cluster",
    "check_scheduler": "._cluster",
    "embedded_cluster": "._cluster",
    "KernelStoreRun": "._kernel_run",
    "write_kernels": "._kernel_run",
    "kernels": "._kernels",
    "write_plots": "._plots",
    "GroupSummary": "._result",
    "SweepProgress": "._result",
    "SweepResult": "._result",
    "largest_first": "._run",
    "run_sweep": "._run",
    "KINDS": "._spec",
    "SweepSpec": "._spec",
    "Task": "._spec",
    "load_spec": "._spec",
    "parse_spec": "._spec",
    "Record": "._store",
    "ResultStore": "._store",
    "execute": "._tasks",
}

__all__ = [
    "KINDS",
    "QUIET_DASK",
    "BudgetExceeded",
    "GroupSummary",
    "KernelStoreRun",
    "Record",
    "ResultStore",
    "SchedulerError",
    "StoreError",
    "SweepProgress",
    "SweepResult",
    "SpecError",
    "SweepSpec",
    "Task",
    "check_scheduler",
    "embedded_cluster",
    "execute",
    "kernels",
    "largest_first",
    "load_spec",
    "parse_spec",
    "run_sweep",
    "write_kernels",
    "write_plots",
]


def __getattr__(name: str) -> Any:
    return _lazy.load(__name__, _EXPORTS, globals(), name)


def __dir__() -> list[str]:
    return _lazy.names(globals(), __all__)

"""Sweeps: grids of coefficient, exact-kernel, Monte Carlo, design and certificate tasks.

The orchestration layer above :mod:`deqrmt.numeric` and :mod:`deqrmt.validate`: a SPEC.toml
grid (:func:`load_spec`) becomes keyed tasks, which :func:`run_sweep` runs on Dask's distributed
scheduler (an embedded cluster or ``tcp://HOST:PORT``) and stores, one transaction per
result, in a SQLite file (:class:`ResultStore`); :func:`write_plots` draws the PNGs.

Importing this package imports neither dask nor torch; running a sweep needs the extra
``pip install 'deqrmt[sweep]'`` (and ``[validate]`` for the torch kinds).

A spec expands into its tasks; ``run_sweep(spec)`` then starts a cluster and runs them
(``deqrmt sweep SPEC.toml`` is the same from the command line).

Example:
  >>> from deqrmt.sweep import parse_spec
  >>> spec = parse_spec('kind = ["coefficients", "exact"]\\nactivations = ["tanh", "relu"]\\n'
  ...                   'sigma_a2 = ["0.1", "0.2"]\\n[exact]\\nn = [64, 128]')
  >>> len(spec.tasks), sorted({t.kind for t in spec.tasks})
  (12, ['coefficients', 'exact'])
"""

from .._errors import BudgetExceeded as BudgetExceeded
from .._errors import SchedulerError as SchedulerError
from .._errors import SpecError as SpecError
from .._errors import StoreError as StoreError
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

"""The float sweep refuses what has no fixed point in bounded memory and time (issue 19).

``deq_coefficients_sweep("2*x", [0.1, 0.5])`` used to grow to 22 GB: with no fixed point at
σ_a² = 0.5 the scan climbed to q = 10¹²·q0 and the float grid (panels of width 1/4 out to 9τ)
grew with τ.  Each case runs in a subprocess whose address space is capped at 2 GB
(``resource.setrlimit(RLIMIT_AS)``), so a regression is a MemoryError there, not a killed
machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from deqrmt import BudgetExceeded
from deqrmt.numeric import deq_coefficients_sweep

resource = pytest.importorskip("resource")  # POSIX only

LIMIT = 2 * 1024**3

_CHILD = textwrap.dedent(
    """
    import resource, sys
    resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
    import deqrmt
    try:
        deqrmt.deq_coefficients_sweep({act!r}, {values!r})
    except deqrmt.ContractionError as e:
        print("ContractionError:", e)
        sys.exit(3)
    """
)


@pytest.mark.parametrize(
    ("act", "values", "refused"),
    [("2*x", [0.1, 0.5], "0.5"), ("x**2/4+x", [0.1, 0.9], "0.9")],
)
def test_no_fixed_point_is_a_contraction_error_within_2_gb(act, values, refused):
    proc = subprocess.Popen(
        [sys.executable, "-c", _CHILD.format(limit=LIMIT, act=act, values=values)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    try:
        out, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    assert proc.returncode == 3, err[-2000:]
    assert out.startswith("ContractionError:") and f"[{refused}]" in out, out


def test_a_first_iterate_beyond_the_grid_is_a_budget_error():
    """σ_b²τ0² with τ far beyond the float grid: refused before any grid is built."""
    with pytest.raises(BudgetExceeded, match="deq_coefficients"):
        deq_coefficients_sweep("tanh", [0.5], sigma_b2=[10000], tau0=10)

"""A σ_a² range answers point by point (issue 25): a refused point is a note, not the end.

``coefficients ACT --sigma-a2 start:stop:count`` (or a list) used to stop at the first point
that raised, and a steep activation's range reached the solver's internal error.  Now each
refused σ_a² is a row marked ``refused`` with a note naming the error (``refused`` in --json),
and only a range whose every point is refused ends with that error (exit 2).
"""

from __future__ import annotations

import json
import os
import subprocess
from fractions import Fraction

import pytest


def _run(cli_prefix, *argv, timeout=1800):
    proc = subprocess.Popen(
        [*cli_prefix, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    return proc.returncode, out, err


def test_a_refused_point_is_a_note_under_the_table(cli_prefix):
    """φ = x + x²/4 has no fixed point at σ_a² = 0.9 (F grows like q²): that row is refused,
    the others answer."""
    rc, out, err = _run(
        cli_prefix, "coefficients", "x**2/4+x", "--sigma-a2", "0.1:0.9:3", "--dps", "12"
    )
    assert rc == 0, err
    cells = (line.split() for line in out.splitlines())
    rows = {c[0]: c[1] for c in cells if len(c) > 1 and c[0] in ("0.1", "0.5", "0.9")}
    assert rows["0.9"] == "refused"
    assert rows["0.1"].startswith("1.00711897")
    (note,) = [line for line in out.splitlines() if line.startswith("note: σ_a² = 0.9")]
    assert "refused: ContractionError:" in note and "--sigma-a2" in note


def test_refused_points_in_json(cli_prefix):
    rc, out, err = _run(
        cli_prefix, "coefficients", "x**2/4+x", "--sigma-a2", "0.1,0.9", "--dps", "12", "--json"
    )
    assert rc == 0, err
    doc = json.loads(out)
    assert [Fraction(r["sigma_a2"]) for r in doc["rows"]] == [Fraction(1, 10)]
    (refused,) = doc["refused"]
    assert refused["sigma_a2"] == "0.9" and refused["error"] == "ContractionError"


def test_a_range_refused_everywhere_ends_with_the_error(cli_prefix):
    """φ = 2x: F(q) = 4σ_a² q + σ_b² has no fixed point for σ_a² ≥ 1/4."""
    rc, out, err = _run(cli_prefix, "coefficients", "2*x", "--sigma-a2", "0.6,0.7", "--dps", "12")
    assert rc == 2 and out == ""
    (line,) = err.strip().splitlines()
    assert line.startswith("deqrmt: error: ContractionError:")


@pytest.mark.slow
def test_a_200_point_range_of_a_steep_activation_never_reaches_an_internal_error(cli_prefix):
    rc, out, err = _run(
        cli_prefix,
        "coefficients",
        "tanh(30*x)",
        "--sigma-a2",
        "0.05:0.95:200",
        "--dps",
        "15",
        "--json",
    )
    assert rc == 0, err
    doc = json.loads(out)
    assert len(doc["rows"]) + len(doc["refused"]) == 200
    assert all(r["error"] for r in doc["refused"])

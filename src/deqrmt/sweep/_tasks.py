"""What one task computes: a thin call into the public engine, run on a Dask worker.

:func:`execute` is the only function the driver submits.  It returns a plain dict (picklable,
JSON-ready) and never touches the store: the driver writes every result.

Errors.  A :class:`deqrmt.DeqrmtError` (σ_a² outside the contraction region, too few verified
digits, …) is a property of the inputs: it is returned as the task's recorded error at once.
Anything else (a bug, ``MemoryError``, a CUDA fault) is raised, so that Dask's ``retries=`` gives
it another attempt, possibly on another worker, before the driver records it.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Mapping
from typing import Any

from .._errors import DeqrmtError
from .._version import __version__

__all__ = ["execute"]


def _decimals(d: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, float]]:
    """The coefficient entries of a result dict: exact decimal strings and their floats.

    A key the engine leaves out (β*, κ* when the NTK diverges) is left out here too.
    """
    from ..numeric import DEQ_KEYS

    values = {k: d[k] for k in DEQ_KEYS if isinstance(d.get(k), str)}
    return values, {k: float(v) for k, v in values.items()}


def _coefficients(i: Mapping[str, Any]) -> dict[str, Any]:
    from ..numeric import deq_coefficients

    res = deq_coefficients(
        i["activation"], i["sigma_a2"], i["sigma_b2"], i["tau0"], i["dps"], trainable=i["trainable"]
    )
    d = res.to_dict()
    values, floats = _decimals(d)
    out = {"values": values, "floats": floats, "sigma_b2": d["sigma_b2"]}
    for k in ("digits", "moments", "certified", "other_fixed_points", "notes"):
        if k in d:
            out[k] = d[k]
    return out


def _certify(i: Mapping[str, Any]) -> dict[str, Any]:
    """Proven coefficients with their balls (midpoints, radii): the whole certificate."""
    from ..numeric import deq_coefficients

    res = deq_coefficients(
        i["activation"], i["sigma_a2"], i["sigma_b2"], i["tau0"], i["dps"],
        trainable=i["trainable"], certify=True,
    )  # fmt: skip
    d = res.to_dict()
    values, floats = _decimals(d)
    return {"values": values, "floats": floats, "certificate": d}


def _design(i: Mapping[str, Any]) -> dict[str, Any]:
    from ..numeric import design_enn

    res = design_enn(
        i["activation"],
        i["family"],
        layers=i["layers"],
        kernel=i["kernel"],
        sigma_a2=i["sigma_a2"],
        sigma_b2=i["sigma_b2"],
        tau0=i["tau0"],
        dps=i["dps"],
        trainable=i["trainable"],
        starts=i["starts"],
        seed=i["seed"],
    )
    d: dict[str, Any] = res.to_dict()
    values, floats = _decimals(d["deq_coefficients"])
    return {"values": values, "floats": floats, "solutions": len(d["solutions"]), "design": d}


def _validation(i: Mapping[str, Any], device: str) -> tuple[dict[str, Any], dict[str, float]]:
    """``exact`` and ``validate``: one n of :func:`deqrmt.validate.run_validation`."""
    from ..validate import ValidationConfig, run_validation

    mc = i["kind"] == "validate"
    config = ValidationConfig(
        activation=i["activation"],
        ns=(i["n"],),
        m=i.get("m") or 1,
        draws=i.get("draws") or 1,
        sigma_a2=i["sigma_a2"],
        sigma_b2=i["sigma_b2"],
        ratio=i["ratio"],
        preset=i["preset"],
        device=device,
        dtype=i.get("dtype") or "float64",
        seed=i["seed"],
        monte_carlo=mc,
        dps=i["dps"],
        trainable=tuple(i["trainable"]),
    )
    result = run_validation(config)
    point = result.runs[0]
    floats = {}
    for name, errs in (("ck", point.ck), ("ntk", point.ntk)):
        for k, v in errs.as_dict().items():
            if v is not None:
                floats[f"{name}_{k}"] = float(v)
    outputs = {
        "floats": floats,
        "p": point.p,
        "coefficients": point.coefficients.as_floats(),
        "tau0": point.coefficients.tau0,
        "exact_method": point.exact_method,
        "exact_degree": point.exact_degree,
        "deq_iterations": list(point.deq_iterations),
        "device": result.device,
    }
    return outputs, {k: float(v) for k, v in point.timings.items()}


def _worker_address() -> str | None:
    try:
        from distributed import get_worker

        return str(get_worker().address)
    except (ImportError, ValueError):  # not on a Dask worker (a serial run)
        return None


def execute(kind: str, inputs: Mapping[str, Any], device: str = "cpu") -> dict[str, Any]:
    """Run one task; return its record: outputs or error, timings, host, pid, version.

    Args:
      kind: one of :data:`deqrmt.sweep.KINDS`.
      inputs: the task's canonical inputs (:attr:`deqrmt.sweep.Task.inputs`).
      device: ``cpu``, ``cuda`` or ``auto`` for the torch kinds (``exact``, ``validate``).

    Raises:
      Exception: anything that is not a :class:`deqrmt.DeqrmtError` (Dask retries it).
    """
    started = time.time()
    t0 = time.perf_counter()
    outputs: dict[str, Any] | None = None
    error: str | None = None
    stages: dict[str, float] = {}
    try:
        if kind == "coefficients":
            outputs = _coefficients(inputs)
        elif kind == "certify":
            outputs = _certify(inputs)
        elif kind == "design":
            outputs = _design(inputs)
        elif kind in ("exact", "validate"):
            outputs, stages = _validation(inputs, device)
        else:
            raise DeqrmtError(f"unknown task kind {kind!r}.")
    except DeqrmtError as e:
        error = f"{type(e).__name__}: {e}"
    return {
        "outputs": outputs,
        "worker": _worker_address(),
        "error": error,
        "seconds": time.perf_counter() - t0,
        "stages": stages,
        "started": started,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "version": __version__,
    }

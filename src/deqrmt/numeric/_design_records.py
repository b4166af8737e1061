"""The records of a design (:func:`._design.design_enn`): the matching problem and its solutions.

A :class:`Design` is what ``deqrmt design`` prints (``to_dict``/``to_json``: the one JSON
document); each :class:`DesignSolution` is one orbit's canonical parameter set, with the
Krawczyk proof of :mod:`._design_proof` when one was attempted.
"""

from __future__ import annotations

import dataclasses
import json

import mpmath

from .._json import JSONObject
from ..symbolic import Family
from ._context import Mpf
from ._deq_records import DEQ_KEYS, DEQCoefficients
from ._design_proof import DesignProof

__all__ = ["Design", "DesignSolution"]


@dataclasses.dataclass(frozen=True)
class DesignSolution:
    """One parameter set: ``params[l]`` maps parameter names to decimal strings."""

    params: tuple[dict[str, str], ...]
    values: tuple[tuple[Mpf, ...], ...]
    residual: Mpf
    #: how many symmetric copies of this solution the multi-start found (itself included)
    copies_found: int = 1
    #: the Krawczyk proof of this root (:mod:`._design_proof`); None when not attempted
    proof: DesignProof | None = None
    #: significant digits of the printed ball midpoints
    ball_digits: int = 30

    def to_dict(self) -> JSONObject:
        out: JSONObject = {
            "params": [dict(p) for p in self.params],
            "residual": mpmath.nstr(self.residual, 5),
            "copies_found": self.copies_found,
        }
        if self.proof is not None:
            out.update(self.proof.to_dict(self.ball_digits))
        return out


@dataclasses.dataclass(frozen=True)
class Design:
    """The matching problem and one solution per symmetry orbit found.

    ``symmetries`` names the reparametrisations that leave every matched value unchanged
    (e.g. ``"a → -a (φ → -φ)"``); each reported solution is the canonical member of its orbit.
    """

    deq: DEQCoefficients
    family: Family
    layers: int
    kernel: str
    equations: tuple[str, ...]
    depth_rule: JSONObject
    solutions: tuple[DesignSolution, ...]
    input_layer_trainable: bool
    symmetries: tuple[str, ...] = ()

    def to_dict(self) -> JSONObject:
        d = self.deq.to_dict()
        return {
            "setting": {
                "deq": d["activation"],
                "family": self.family.name,
                "parameters": [str(p) for p in self.family.params],
                "layers": self.layers,
                "kernel": self.kernel,
                "sigma_a2": d["sigma_a2"],
                "sigma_b2": d["sigma_b2"],
                "tau0": d["tau0"],
                "dps": d["dps"],
                "deq_trainable": d["trainable"],
                "enn_input_layer_trainable": self.input_layer_trainable,
            },
            "deq_coefficients": {k: d[k] for k in DEQ_KEYS[:-1] if d[k] is not None},
            "equations": list(self.equations),
            "depth_rule": self.depth_rule,
            "layers": self.layers,
            "symmetries": list(self.symmetries),
            "solutions": [s.to_dict() for s in self.solutions],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)

"""Kernels of the same φ named twice reuse its torch functions (validate/_kernel_args.py).

A second ``deqrmt.kernels("tanh", …)`` in a process should not parse φ again: the centred
activation is kept per (text, centre).  Identity, not time, is what is checked; the values are
checked against a fresh parse, and a bad text fails every time (an error is never kept).
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import deqrmt  # noqa: E402
from deqrmt import ParseError  # noqa: E402
from deqrmt.symbolic import get_activation  # noqa: E402
from deqrmt.validate._kernel_args import as_activation  # noqa: E402
from deqrmt.validate._pointwise import CenteredActivation  # noqa: E402


def test_a_named_activation_is_built_once_per_centre() -> None:
    a = as_activation("x*erf(x)", None)
    assert as_activation("x*erf(x)", None) is a
    assert as_activation("x*erf(x)", 0.0) is a  # None is the centre 0
    b = as_activation("x*erf(x)", 0.25)
    assert b is not a and b.center == 0.25
    fresh = CenteredActivation.from_activation(get_activation("x*erf(x)"), 0.25)
    t = torch.linspace(-5, 5, 101, dtype=torch.float64)
    assert torch.equal(b.phi(t), fresh.phi(t)) and torch.equal(b.dphi(t), fresh.dphi(t))


def test_a_bad_text_is_refused_every_time() -> None:
    for _ in range(2):
        with pytest.raises(ParseError):
            deqrmt.kernels("tanh(", np.eye(2))

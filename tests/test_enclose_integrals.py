"""The certified path's cost unit: :meth:`MomentEncloser.integrals`, counted by hand.

Two open moments share one complex ``acb.integral`` per smooth piece when they fold alike
(both even, integrated on [0, X], or both not), and a φ whose poles lie s times nearer the
real axis than tanh's (±iπ/2) counts s.  The expected counts are read off each activation:
tanh has four folded open moments (E[ξφ'], E[φ²], E[(φ²)''], E[φ'²]), softplus six unfolded
ones, erf two, relu none (closed forms); tanh(4x) has tanh's moments and poles at ±iπ/8.
"""

from __future__ import annotations

import pytest

from deqrmt.numeric._enclose import encloser_for
from deqrmt.symbolic import get_activation


@pytest.mark.parametrize(
    ("act", "open_moments", "integrals"),
    [("tanh", 4, 2), ("softplus", 6, 3), ("erf", 2, 1), ("relu", 0, 0), ("tanh(4*x)", 4, 8)],
)
def test_integrals_pair_the_open_moments(act, open_moments, integrals):
    enc = encloser_for(get_activation(act))
    assert len(enc.open) == open_moments
    assert enc.integrals() == integrals

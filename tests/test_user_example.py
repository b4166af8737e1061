"""A user's own test file (issue 14): random activations from deqrmt's grammar stay consistent."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import deqrmt.testing as dt


def consistent(data):
    act = data.draw(dt.activations())
    dt.assert_consistent(act, data.draw(dt.settings(act)))


test_quick = settings(max_examples=5, deadline=None, derandomize=True)(given(st.data())(consistent))
test_200 = pytest.mark.slow(settings(max_examples=200, deadline=None)(given(st.data())(consistent)))

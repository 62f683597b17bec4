"""Matching stubs (mocking/matching.py): in linear time, the answers of the definitions."""

import json

import pytest
from hypothesis import given, settings, strategies as st

from reference.mocking import stubs
from reference.mocking.matching import Matching

VALUES = st.recursive(st.integers(0, 3) | st.booleans() | st.sampled_from([1.0, "a", None]),
                      lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from("abc"), inner,
                                                                                  max_size=3), max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(VALUES, VALUES)
def test_matching_with_its_indexes_gives_the_answers_of_the_definition(wanted, actual):
    assert Matching(100).matches(wanted, actual, False, 100) == stubs.partial(wanted, actual)
    assert Matching(100).matches(wanted, wanted, False, 100)


@pytest.mark.parametrize("shape", [
    lambda n: ([{"a": i, "b": [i]} for i in range(n)], [{"a": i, "b": [i]} for i in range(n)][::-1]),
    lambda n: ([{"a": i} for i in range(n)], [{"a": i, "b": 0} for i in range(n)][::-1]),
    lambda n: ([{"k": 0, "a": [i]} for i in range(n)], [{"k": 0, "a": [i, 0]} for i in range(n)][::-1]),
    lambda n: ([[i] for i in range(n)], [[i, 0] for i in range(n)][::-1]),
])
def test_long_arrays_of_objects_and_arrays_match_in_any_order(shape):
    """Reordered, partial, nested: each is found through an index, not by trying every element
    (which would take the budget of steps many times over, and answer no match)."""
    wanted, actual = shape(5000)
    assert Matching(len(json.dumps(actual))).matches({"x": wanted}, {"x": actual}, False, 0)

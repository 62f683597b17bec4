"""A stub's match!: paths into a call, and globs matched as fnmatch would, in bounded time."""

import fnmatch
import random

import pytest

from reference.mocking import patterns


def matches(glob, text, spend=lambda steps: None):
    [(_, test)] = patterns.compiled({"x": {"Glob": {"pattern": glob}}})
    return test(text, spend)


@pytest.mark.parametrize("glob, text, expected", [
    ("ann*", "anna", True), ("ann*", "ann", True), ("ann*", "an", False), ("*nn", "ann", True),
    ("a?n", "ann", True), ("a?n", "an", False), ("*n?", "ann", True), ("*n?", "an", False), ("*?", "", False),
    ("a\\*", "a*", True), ("a\\*", "ab", False), ("*a*b*", "xxaxxbxx", True), ("*a*b", "xxaxx", False),
    ("a*a", "a", False), ("a*a", "aa", True), ("", "", True), ("", "a", False), ("*", "", True),
    ("x\\", "x\\", True), ("*.txt", "a\nb.txt", True), ("[a]", "[a]", True), ("[a]", "a", False),
])
def test_a_glob_matches_as_its_characters_say(glob, text, expected):
    assert matches(glob, text) is expected


def test_globs_agree_with_fnmatch_on_every_short_pattern_and_text():
    rng = random.Random(1)
    for _ in range(5000):
        glob = "".join(rng.choice("ab*?") for _ in range(rng.randrange(7)))
        text = "".join(rng.choice("ab") for _ in range(rng.randrange(8)))
        assert matches(glob, text) is fnmatch.fnmatchcase(text, glob), (glob, text)


def test_a_search_tells_its_bound_before_it_is_made():
    """The most steps a piece's search takes (the string's length times the piece's) is told first, so
    that a budget can refuse it: a glob made to be slow against a long string."""
    told = []
    assert matches("*" + "a?" * 100 + "b*", "a" * 10_000, told.append) is False
    assert max(told) >= (10_000 - 200) * 200


@pytest.mark.parametrize("place, steps", [
    ("name", ["name"]), ("item.tags[0]", ["item", "tags", 0]), ("a[1][2].b", ["a", 1, 2, "b"]),
    ("@auth_.Session.token", ["@auth_", "Session", "token"]),
])
def test_a_place_is_a_path_of_names_and_indexes(place, steps):
    assert patterns.steps(place) == steps


@pytest.mark.parametrize("place", ["", "a..b", "[0]", "a.[0]", "a[x]", "a."])
def test_what_is_not_a_path_is_refused(place):
    with pytest.raises(ValueError, match="is not a path such as item.tags"):
        patterns.steps(place)


@pytest.mark.parametrize("pattern, problem", [
    ({"Any": {}}, None), ({"Glob": {"pattern": "a*"}}, None),
    ({"Glob": {"pattern": 1}}, 'a pattern is {"Any": {}} or {"Glob": {"pattern": TEXT}}'),
    ({"Any": {"x": 1}}, 'a pattern is {"Any": {}} or {"Glob": {"pattern": TEXT}}'),
    ({"Glob": {"pattern": "a"}, "Any": {}}, 'a pattern is {"Any": {}} or {"Glob": {"pattern": TEXT}}'),
    ("a*", 'a pattern is {"Any": {}} or {"Glob": {"pattern": TEXT}}'),
    ({"Glob": {"pattern": "*" * 257}}, "a glob has at most 256 characters"),
])
def test_a_pattern_is_any_value_or_a_glob_of_bounded_length(pattern, problem):
    assert patterns.problem(pattern) == problem


def test_a_call_matched_by_its_places_gets_the_stubs_values_there():
    match = patterns.compiled({"name": {"Glob": {"pattern": "ann*"}}, "@auth_.Session.token": {"Any": {}},
                               "tags[1]": {"Any": {}}})
    call = ({"name": "anna", "tags": ["x", "y"], "n": 1}, {"@auth_": {"Session": {"token": "t1"}}})
    stub = ({"name": "", "tags": ["x", "z"]}, {"@auth_": {"Session": {"token": "given"}}})
    assert patterns.patterned(match, *call, *stub) == ({"name": "", "tags": ["x", "z"], "n": 1},
                                                       {"@auth_": {"Session": {"token": "given"}}})
    assert call[0]["name"] == "anna"  # (copied along the path, the call itself untouched)
    assert patterns.patterned(match, {**call[0], "name": "bob"}, call[1], *stub) is None
    assert patterns.patterned(match, {"name": "anna", "tags": ["x"]}, call[1], *stub) is None  # (no tags[1])
    left_out = patterns.patterned(patterns.compiled({"n": {"Any": {}}}), call[0], {}, {}, {})
    assert left_out == ({"name": "anna", "tags": ["x", "y"]}, {})  # (the stub gives no n: the call's goes)

"""What one call gives the calls after it (fuzz/links.py): the calls a scene begins with, and what a
scene's start forgets."""

import pytest

from conformance.fuzz import links
from conformance.language.schema import Schema

SCHEMA = Schema([
    {"info.Shop": {}},
    {"union.Auth_": [{"Session": {"token": "string"}}]},
    {"fn.login": {"name": "string"}, "->": [{"Ok_": {"token": "string"}}]},
    {"fn.logout": {"name": "string"}, "->": [{"Ok_": {}}]},
    {"fn.put": {"name": "string"}, "->": [{"Ok_": {}}]},
    {"fn.get": {"name": "string"}, "->": [{"Ok_": {}}]},
    {"fn.drop": {"name": "string"}, "->": [{"Ok_": {}}]},
])


def accepted(calls):
    """A Links told that each of `calls`, (function, name), in turn, was answered Ok_."""
    made = links.Links(SCHEMA)
    for place, (function, name) in enumerate(calls):
        made.accepted(SCHEMA.functions[function], {function: {"name": name}}, place)
    return made


@pytest.mark.parametrize("calls, most, expected", [
    ([], 20, []),
    ([("fn.put", "a"), ("fn.drop", "a"), ("fn.put", "b")], 20, ["fn.put a", "fn.drop a", "fn.put b"]),
    # the latest RECENT (2) of each function, in the order they were made
    ([("fn.put", "a"), ("fn.put", "b"), ("fn.get", "b"), ("fn.put", "c")], 20,
     ["fn.put b", "fn.get b", "fn.put c"]),
    # none that logs in or out
    ([("fn.put", "a"), ("fn.login", "a"), ("fn.logout", "a"), ("fn.get", "a")], 20, ["fn.put a", "fn.get a"]),
    ([("fn.put", "a"), ("fn.drop", "a"), ("fn.get", "a")], 2, ["fn.drop a", "fn.get a"]),  # the latest
    ([("fn.put", "a"), ("fn.get", "a")], 0, []),
])
def test_a_scene_begins_with_the_latest_accepted_calls_of_each_function_in_the_order_made(calls, most, expected):
    bodies = accepted(calls).latest(most)
    assert [f"{name} {arguments['name']}" for body in bodies for name, arguments in body.items()] == expected


def test_at_most_primed_calls_begin_a_scene_however_many_functions_there_are():
    many = Schema([{"info.Many": {}}, *({f"fn.f{number}": {}, "->": [{"Ok_": {}}]} for number in range(30))])
    made = links.Links(many)
    for place in range(60):
        made.accepted(many.functions[f"fn.f{place % 30}"], {f"fn.f{place % 30}": {}}, place)
    assert [next(iter(body)) for body in made.latest(1000)] == [f"fn.f{n}" for n in range(10, 30)]


class FirstCoin:
    """A generator whose every coin says yes and whose choice is the first."""

    def random(self):
        return 0.0

    def choice(self, values):
        return values[0]


def test_a_scene_begun_forgets_the_values_kept_of_another_user_and_takes_its_credentials():
    made = accepted([])
    made.keep(SCHEMA.functions["fn.put"], {"name": "theirs"}, {})
    assert made.carry(SCHEMA.functions["fn.get"], {"name": "x"}, FirstCoin()) == {"name": "theirs"}
    made.begin({"@auth_": {"Session": {"token": "mine"}}})
    assert made.carry(SCHEMA.functions["fn.get"], {"name": "x"}, FirstCoin()) == {"name": "x"}
    assert made.headers({}) == {"@auth_": {"Session": {"token": "mine"}}}

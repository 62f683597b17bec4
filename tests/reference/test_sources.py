"""reference/sources.py: schemas read from files, and each problem placed at its line and column."""

import json

from reference import sources
from reference.protocol.documents import parse
from reference.protocol.limits import MAX_PROBLEMS


def placed(text):
    """The problems of a schema document, as the checker prints them."""
    documents, problems = parse("s.json", text)
    error = sources.check(documents, problems)[1]
    return [str(problem) for problem in error.problems] if error else []


def test_each_of_many_problems_is_placed_at_its_own_entry():
    """(Each array's elements are read once, however many problems are placed in it, and only as far
    as the last problem kept.)"""
    text = "[\n" + ",\n".join(" []" for _ in range(MAX_PROBLEMS * 3)) + "\n]"
    assert placed(text) == [f"s.json:{line}:2: an entry is a JSON object" for line in range(2, MAX_PROBLEMS + 2)]
    text = sources.Text(text)
    assert text.position([MAX_PROBLEMS - 1]) == {"line": MAX_PROBLEMS + 1, "column": 2}
    assert len(text.arrays[0][0]) == MAX_PROBLEMS


def test_problems_inside_one_entry_are_placed_at_each_key_and_value():
    fields = {f"f{i}": "strnig" if i % 2 else "integer" for i in range(400)}
    text = json.dumps([{"struct.A": fields}], indent=1)
    lines = text.splitlines()
    expected = [f"s.json:{n + 1}:{line.index(': ') + 3}: struct.A: unknown type \"strnig\"; did you mean \"string\"?"
                for n, line in enumerate(lines) if '"strnig"' in line]
    assert placed(text) == expected and len(expected) == 200


def test_a_text_places_steps_through_arrays_and_objects_and_stops_at_the_deepest_found():
    text = sources.Text('{"a": [1, {"b": 2}],\n "a": 3, "c": {}}')
    assert text.position(["a", 1, "b"]) == {"line": 1, "column": 12}
    assert text.position(["a", 1, "b"], value=True) == {"line": 1, "column": 17}
    assert text.position(["a", 7]) == {"line": 1, "column": 2}  # (no element 7: the key that leads there)
    assert text.position(["c", "d"]) == {"line": 2, "column": 10}

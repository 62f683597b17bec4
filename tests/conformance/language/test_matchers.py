"""The matching language (language/matchers.py) and MessagePack in the suite's notation
(language/decoding.py)."""

import msgpack
import pytest

from conformance.language import decoding, matchers as match


def matches(expected, actual, captured=None):
    return [why for _, why in match.compare(expected, actual, {} if captured is None else captured)]


@pytest.mark.parametrize("expected, actual, ok", [
    ({"a": 1}, {"a": 1.0}, True),
    ({"a": 1}, {"a": True}, False),
    ({"a": 1}, {"a": 1, "b": 2}, False),
    ([1, 2], [2, 1], False),
    ({"$unordered": [1, 2]}, [2, 1], True),
    ({"$unordered": [1, 2]}, [2, 1, 3], False),
    ({"$unordered": [{"$type": "integer"}, 2]}, [2, 5], True),
    ({"$includes": [1]}, [2, 1, 3], True),
    ({"$includes": [1, 1]}, [1, 2], False),
    ({"$partial": {"a": 1}}, {"a": 1, "b": 2}, True),
    ({"$partial": {"a": {"$absent": True}}}, {"b": 2}, True),
    ({"$partial": {"a": {"$absent": True}}}, {"a": 2}, False),
    # an optional field: absent, or of its type (in a literal object and in a $partial one)
    ({"a": 1, "b": {"$oneOf": [{"$absent": True}, {"$type": "string"}]}}, {"a": 1}, True),
    ({"a": 1, "b": {"$oneOf": [{"$absent": True}, {"$type": "string"}]}}, {"a": 1, "b": "x"}, True),
    ({"a": 1, "b": {"$oneOf": [{"$absent": True}, {"$type": "string"}]}}, {"a": 1, "b": 2}, False),
    ({"$partial": {"b": {"$oneOf": [{"$absent": True}, {"$type": "string"}]}}}, {"a": 1}, True),
    ({"$partial": {"b": {"$oneOf": [{"$type": "null"}, {"$type": "string"}]}}}, {"a": 1}, False),
    # $each over an object: every value (a map's)
    ({"$each": {"$type": "integer"}}, {"x": 1, "y": 2}, True),
    ({"$each": {"$type": "integer"}}, {"x": 1, "y": "2"}, False),
    ({"$each": "$index"}, {"x": "x", "y": "y"}, True),
    ({"$each": {"$type": "integer"}, "$length": 1}, {"x": 1}, False),
    ({"$oneOf": [1, "x"]}, "x", True),
    ({"$oneOf": [1, "x"]}, 2, False),
    ({"$type": "integer"}, 3, True),
    ({"$type": "integer"}, 3.0, False),
    ({"$type": "integer"}, 3.5, False),
    ({"$type": "number"}, 3.0, True),
    ({"$type": "string"}, None, False),
    ({"$type": "bytes"}, {"$bin": "AQ=="}, True),
    ({"$not": 1}, 2, True),
    ({"$not": 1}, 1, False),
    ({"$not": {"$includes": [1]}}, [2, 3], True),
    ({"$literal": {"$type": "string"}}, {"$type": "string"}, True),
    ({"$literal": {"$type": "string"}}, "text", False),
    ({"$authenticated": False, "fn.x": {}}, {"$authenticated": False, "fn.x": {}}, True),
])
def test_matching_language(expected, actual, ok):
    assert (matches(expected, actual) == []) == ok


def test_differences_are_shown_as_json():
    [why] = matches({"result": 1}, {"result": float("nan")})
    assert why == "expected 1, got NaN"
    [why] = matches({"a": "x"}, {"a": "y" * 500})
    assert why.startswith('expected "x", got "yyy') and why.endswith(" ...") and len(why) < 200

    # a value it must not be names the alternative it matched, not the whole list
    [why] = matches({"$not": {"$oneOf": [{"$partial": {"A": {"$type": "any"}}}, {"$partial": {"B": {"$type": "any"}}}]}},
                    {"B": 1})
    assert why == 'expected anything but {"$partial": {"B": {"$type": "any"}}}, got {"B": 1}'


def test_captures_carry_values_between_steps():
    captured = {}
    assert matches({"token": {"$type": "string", "$capture": "t"}}, {"token": "abc"}, captured) == []
    assert captured == {"t": "abc"}
    assert match.substitute({"@auth_": {"Session": {"token": {"$var": "t"}}}, "u": "$user-2"}, captured, "me") == {
        "@auth_": {"Session": {"token": "abc"}}, "u": "me-2"}
    assert matches({"$var": "t"}, "abd", captured) == ['expected "abc", got "abd"']


def test_messagepack_notation_round_trips():
    value = {"#10": {"#42": 1.5, "name": {"$bin": "AQI="}}, "x": [{"$ext": [17, ""]}]}
    packed = decoding.to_msgpack(value)
    assert packed == {10: {42: 1.5, "name": b"\x01\x02"}, "x": [msgpack.ExtType(17, b"")]}
    assert decoding.from_msgpack(packed) == value
    assert decoding.from_msgpack(packed, {10: "fn.add"}) == {"fn.add": {"#42": 1.5, "name": {"$bin": "AQI="}},
                                                         "x": [{"$ext": [17, ""]}]}

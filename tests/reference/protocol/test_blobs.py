"""Bytes: restored by the schema on the way in, marked with @base64_ on the way out."""

import pytest

from reference import load
from reference.protocol import blobs
from reference.protocol.blobs import restore_fields
from reference.protocol.types import Type
from reference.transports import http_client


def test_base64_strings_in_bytes_fields_are_decoded_anywhere():
    """Bytes fields at any depth turn from base64 text into bytes; other strings stay."""
    struct = load([
        {"struct.T": {"b": "bytes", "list": ["bytes?"], "map": {"string": "bytes"}, "s": "string",
                      "u": "union.U", "a": "any"}},
        {"union.U": [{"B": {"data": "bytes"}}]}]).definition("struct.T")
    value = {"b": "AQ==", "list": ["Ag==", None], "map": {"k": "Aw=="}, "s": "AQ==",
             "u": {"B": {"data": b"\x04"}}, "a": "AQ=="}
    assert restore_fields(value, struct) == {
        "b": b"\x01", "list": [b"\x02", None], "map": {"k": b"\x03"}, "s": "AQ==",
        "u": {"B": {"data": b"\x04"}}, "a": "AQ=="}


ECHO = load([{"fn.echo": {}, "->": [{"Ok_": {
    "blob!": "bytes", "n!": "integer", "list!": ["bytes"], "map!": {"string": "bytes"}, "null!": "bytes?",
    "nested!": ["struct.Holder"], "s!": ["union.Shape"], "a!": "any"}}]},
    {"struct.Holder": {"d": "bytes?", "m!": {"string": ["bytes"]}}},
    {"union.Shape": [{"Circle": {"r": "number"}}, {"Square": {"img": "bytes"}}]}])
RESULT = Type("union", False, ECHO.functions["fn.echo"].result)


@pytest.mark.parametrize("value, encoded, marks", [
    ({"Ok_": {"blob!": b"\x01"}}, {"Ok_": {"blob!": "AQ=="}}, {"Ok_": {"blob!": True}}),
    ({"Ok_": {"n!": 1}}, {"Ok_": {"n!": 1}}, None),
    ({"Ok_": {"list!": [b"\x01", b"\x02"], "map!": {"a": b"\x03"}}},
     {"Ok_": {"list!": ["AQ==", "Ag=="], "map!": {"a": "Aw=="}}},
     {"Ok_": {"list!": {"*": True}, "map!": {"*": True}}}),
    ({"Ok_": {"list!": [], "map!": {}, "null!": None}}, {"Ok_": {"list!": [], "map!": {}, "null!": None}}, None),
    ({"Ok_": {"nested!": [{"d": None}, {"d": b"\x01", "m!": {"k": [b"\x02"], "e": []}}]}},
     {"Ok_": {"nested!": [{"d": None}, {"d": "AQ==", "m!": {"k": ["Ag=="], "e": []}}]}},
     {"Ok_": {"nested!": {"*": {"d": True, "m!": {"*": {"*": True}}}}}}),
    ({"Ok_": {"s!": [{"Circle": {"r": 1}}, {"Square": {"img": b"\x01"}}]}},
     {"Ok_": {"s!": [{"Circle": {"r": 1}}, {"Square": {"img": "AQ=="}}]}},
     {"Ok_": {"s!": {"*": {"Square": {"img": True}}}}}),
    ({"Ok_": {"a!": {"k": [b"\x01"]}}}, {"Ok_": {"a!": {"k": ["AQ=="]}}}, {"Ok_": {"a!": {"k": {"*": True}}}}),
])
def test_bytes_travel_as_base64_marked_by_the_base64_header(value, encoded, marks):
    """On the JSON wire bytes become base64, and @base64_ mirrors where; clients decode back."""
    assert blobs.mark(value, RESULT) == (encoded, marks)
    if marks:
        assert http_client.unmark(encoded, marks) == value


@pytest.mark.parametrize("text, data", [("", b""), ("AQI=", b"\x01\x02"), ("/+8=", b"\xff\xef"),
                                        ("AQI", None), ("AQI-", None), ("A Q I =", None), ("\u00e9", None)])
def test_base64_is_strict_standard_and_padded(text, data):
    assert blobs.from_base64(text) == data

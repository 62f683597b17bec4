"""MessagePack answers read into the suite's JSON notation (language/decoding.py): keys named by the
encoding, bytes and extension values written in the notation, packed rows made maps again."""

import msgpack
import pytest

from conformance.language import decoding

NAMES = {0: "Ok_", 1: "result", 2: "tape"}
FROM_MSGPACK = [  # unpacked MessagePack, the names known, what the notation holds
    ({0: {1: 3}}, NAMES, {"Ok_": {"result": 3}}),
    ({0: {7: 3}}, NAMES, {"Ok_": {"#7": 3}}),  # an id the encoding lacks
    ({0: {1: 3}}, None, {"#0": {"#1": 3}}),  # no encoding at all
    ({"Ok_": {"x": None}}, NAMES, {"Ok_": {"x": None}}),  # names sent as text
    ({True: 1, 1.5: 2}, NAMES, {"True": 1, "1.5": 2}),  # keys JSON has no word for
    ({0: {2: [{1: 1}, {1: b"\x01"}]}}, NAMES, {"Ok_": {"tape": [{"result": 1}, {"result": {"$bin": "AQ=="}}]}}),
    ([b"", msgpack.ExtType(5, b"\x02")], NAMES, [{"$bin": ""}, {"$ext": [5, "Ag=="]}]),
    ([[1, [2, ["x", 2.5, False]]]], NAMES, [[1, [2, ["x", 2.5, False]]]]),
]


@pytest.mark.parametrize("value, names, expected", FROM_MSGPACK)
def test_unpacked_messagepack_is_written_in_the_notation(value, names, expected):
    assert decoding.from_msgpack(value, names) == expected


def test_an_answer_is_decoded_with_the_names_its_checksum_stands_for():
    answer = msgpack.packb([{"@bin_": [42]}, {0: {2: [{1: 1}, {1: 2.5}]}}])
    assert decoding.decode(answer, {42: NAMES}) == [{"@bin_": [42]}, {"Ok_": {"tape": [{"result": 1}, {"result": 2.5}]}}]
    assert decoding.decode(answer, {43: NAMES}) == [{"@bin_": [42]}, {"#0": {"#2": [{"#1": 1}, {"#1": 2.5}]}}]

"""The envelope codec: parse failures, depth, base64, and the binary encoding."""

import copy
import json
import time

import msgpack
import pytest

from reference import load
from reference.protocol import codec, limits
from reference.services import calculator

CALCULATOR = codec.encoding(load(calculator.entries()))
limits.allow_depth()  # as a Service or a Client does when made: decoding 1,024 levels recurses that deep
CHECKSUM = 900069279
PACKED, UNDEFINED = codec.PACKED, codec.UNDEFINED


def reason(data, encoding=CALCULATOR):
    with pytest.raises(codec.ParseFailure) as raised:
        codec.decode(data, encoding)
    return raised.value.reason


TWO_OBJECTS = {"ExpectedJsonArrayOfTwoObjects": {}}
ONE_OBJECT = {"ExpectedJsonArrayOfAnObjectAndAnObjectOfOneObject": {}}


@pytest.mark.parametrize("data, expected", [
    (b"hello world", TWO_OBJECTS),
    (b"", TWO_OBJECTS),
    (b'[{}, {"fn.ping_": {}}', TWO_OBJECTS),
    (b'[{}, {"fn.ping_": {}}] x', TWO_OBJECTS),
    (b"\xff\xfe\xfd", TWO_OBJECTS),
    (b"{}", TWO_OBJECTS),
    (b"false", TWO_OBJECTS),
    (b"0", TWO_OBJECTS),
    (b'""', TWO_OBJECTS),
    (b"[]", TWO_OBJECTS),
    (b"[{}]", TWO_OBJECTS),
    (b'[{}, {"fn.ping_": {}}, {}]', TWO_OBJECTS),
    (b'[null, {"fn.ping_": {}}]', TWO_OBJECTS),
    (b'[[], {"fn.ping_": {}}]', TWO_OBJECTS),
    (b"[{}, []]", TWO_OBJECTS),
    (b'[{}, "x"]', TWO_OBJECTS),
    (b'[{}, {"fn.add": {"x": NaN, "y": 1}}]', TWO_OBJECTS),
    (b'[{}, {"fn.add": {"x": Infinity, "y": 1}}]', TWO_OBJECTS),
    (b'[{}, {"fn.add": {"x": -Infinity, "y": 1}}]', TWO_OBJECTS),
    (b"[{}, {}]", ONE_OBJECT),
    (b'[{}, {"fn.ping_": {}, "fn.api_": {}}]', ONE_OBJECT),
    (b'[{}, {"fn.ping_": null}]', ONE_OBJECT),
    (b'[{}, {"fn.ping_": 1}]', ONE_OBJECT),
    (b'[{"@id_": "abc"}, {}]', ONE_OBJECT),
    (msgpack.packb([{}, {"fn.ping_": {}}]), {"IncompatibleBinaryEncoding": {}}),
    (msgpack.packb([{"@bin_": []}, {"fn.ping_": {}}]), {"IncompatibleBinaryEncoding": {}}),
    (msgpack.packb([{"@bin_": [CHECKSUM + 1]}, {10: {42: 1, 43: 2}}]), {"IncompatibleBinaryEncoding": {}}),
    (msgpack.packb([{"@bin_": [1, CHECKSUM]}, {10: {42: 1, 43: 2}}]), {"IncompatibleBinaryEncoding": {}}),
    (msgpack.packb([{"@bin_": [CHECKSUM]}, {10: {9999: 1, 43: 2}}]), {"BinaryDecodeFailure": {}}),
    (msgpack.packb([{"@bin_": [CHECKSUM]}, {9999: {}}]), {"BinaryDecodeFailure": {}}),
    (msgpack.packb([{"@bin_": [CHECKSUM]}, {10: {42: float("nan"), 43: 2}}]), {"BinaryDecodeFailure": {}}),
    (msgpack.packb([{"@bin_": [CHECKSUM]}, {10: {42: msgpack.ExtType(5, b"x"), 43: 2}}]),
     {"BinaryDecodeFailure": {}}),
    (msgpack.packb([{"@bin_": [CHECKSUM]}, {10: {42: PACKED, 43: 2}}]), {"BinaryDecodeFailure": {}}),
    (msgpack.packb([{"@bin_": [CHECKSUM]}, {10: {b"x": 1}}]), {"BinaryDecodeFailure": {}}),
    (msgpack.packb([{"@bin_": [CHECKSUM]}, {10: {42: 1}}])[:-2], TWO_OBJECTS),
    (b"\x92\xdf\xff\xff\xff\xff", TWO_OBJECTS),
    (msgpack.packb([{"@bin_": [CHECKSUM]}, [10]]), TWO_OBJECTS),
    (msgpack.packb([{"@bin_": [CHECKSUM]}, {10: {}, 11: {}}]), ONE_OBJECT),
    # numbers no float holds, and half of a UTF-16 surrogate pair, are not JSON any wire can carry on
    (b'[{"@id_": 1e400}, {"fn.ping_": {}}]', TWO_OBJECTS),
    (b'[{}, {"fn.add": {"x": -1e400, "y": 1}}]', TWO_OBJECTS),
    (b'[{"@id_": "\\ud800"}, {"fn.ping_": {}}]', TWO_OBJECTS),
    (b'[{}, {"fn.saveVariable": {"name": "a\\udfff", "value": 1}}]', TWO_OBJECTS),
    (b'[{}, {"fn.getVariable": {"\\udc00": 1}}]', TWO_OBJECTS),
    # a packed request's header row holds keys, or [key, ...] for a nested map
    (msgpack.packb([{"@bin_": [CHECKSUM], "@pac_": True}, {13: {30: [PACKED, [None, {"a": 1}], ["x"]]}}]),
     {"BinaryDecodeFailure": {}}),
    (msgpack.packb([{"@bin_": [CHECKSUM], "@pac_": True}, {13: {30: [PACKED, [None, [[1]]], [["x"]]]}}]),
     {"BinaryDecodeFailure": {}}),
    (msgpack.packb([{"@bin_": [CHECKSUM], "@pac_": True}, {13: {30: [PACKED, [None, []], [["x"]]]}}]),
     {"BinaryDecodeFailure": {}}),
])
def test_parse_failures(data, expected):
    """Bytes that are not a message get the protocol's parse failure reason."""
    assert reason(data) == expected


def nested(depth, leaf=1):
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("depth", [codec.MAX_DEPTH - 2, codec.MAX_DEPTH + 1 - 2, 100_000])
def test_json_nesting_is_limited(depth):
    """Nesting up to MAX_DEPTH decodes; deeper nesting is a clean NestingTooDeep failure."""
    data = json.dumps([{"@id_": 1}, {"fn.ping_": {"a": nested(depth)}}]).encode() if depth < 5000 else (
        b'[{}, {"fn.ping_": {"a": ' + b"[" * depth + b"]" * depth + b"}}]")
    if depth + 3 <= codec.MAX_DEPTH:
        assert codec.decode(data, CALCULATOR)[1] == {"fn.ping_": {"a": nested(depth)}}
    else:
        assert reason(data) == {"NestingTooDeep": {"limit": codec.MAX_DEPTH}}


def test_surrogate_pairs_are_text_like_any_other():
    """A whole pair of escapes is one character, and is kept."""
    headers, _ = codec.decode(b'[{"@id_": "\\ud83d\\ude00"}, {"fn.ping_": {}}]', CALCULATOR)
    assert headers == {"@id_": "\U0001F600"}


def test_escapes_in_a_string_that_never_ends_cost_linear_time():
    """An unterminated string full of escaped quotes after deep brackets (once quadratic) is quickly
    refused, however long: here a megabyte, which took hours before the fix."""
    data = b"[" * 1025 + b'"' + b'\\"' * 500_000
    started = time.perf_counter()
    assert reason(data) == TWO_OBJECTS
    assert time.perf_counter() - started < 5


def test_brackets_inside_strings_do_not_count_as_nesting():
    """Only real arrays and objects count towards the depth limit."""
    text = "[{" * 2000 + '\\"'
    assert codec.decode(json.dumps([{"@id_": text}, {"fn.ping_": {}}]).encode(), CALCULATOR)[0] == {"@id_": text}


def test_msgpack_nesting_is_limited():
    """MessagePack nested deeper than MAX_DEPTH is a NestingTooDeep failure too."""
    data = msgpack.packb([{"@bin_": [CHECKSUM]}, {22: {}}])[:-1] + b"\x81\xa1a" + b"\x91" * 1100 + b"\x01"
    assert reason(data) == {"NestingTooDeep": {"limit": codec.MAX_DEPTH}}


def test_calculator_encoding_matches_the_other_implementation():
    """44 keys sorted by code point, and the checksum 900069279 (signed CRC-32)."""
    assert CALCULATOR.checksum == CHECKSUM
    assert CALCULATOR.ids == {name: i for i, name in enumerate([
        "Add", "Constant", "Div", "Mul", "Ok_", "Sub", "Variable", "api", "blob", "expression", "fn.add",
        "fn.api_", "fn.deleteVariable", "fn.deleteVariables", "fn.evaluate", "fn.export",
        "fn.getPaperTape", "fn.getVariable", "fn.getVariables", "fn.import", "fn.login", "fn.logout",
        "fn.ping_", "fn.saveVariable", "fn.saveVariables", "includeExamples!", "includeInternal!", "left",
        "limit!", "name", "names", "result", "right", "saveResult", "successful", "tape", "timestamp",
        "token", "username", "value", "variable!", "variables", "x", "y"])}


def test_a_negative_checksum_is_a_signed_crc():
    """A CRC-32 at or above 2**31 is reported as a negative 32-bit number."""
    encoding = codec.encoding(load([{"fn.zz": {"q": "string"}, "->": [{"Ok_": {}}]}]))
    assert -(2**31) <= encoding.checksum < 2**31


def test_binary_round_trip_with_integer_keys():
    """Known keys become ids at any depth; unknown keys stay strings; headers stay as they are."""
    message = [{"@bin_": [CHECKSUM], "@id_": {"x": 1}},
               {"fn.saveVariables": {"variables": {"x": 1.5, "novel": 2}}}]
    data = codec.encode(message, CALCULATOR)
    raw = msgpack.unpackb(data, strict_map_key=False)
    assert raw == [{"@bin_": [CHECKSUM], "@id_": {"x": 1}}, {24: {41: {42: 1.5, "novel": 2}}}]
    assert codec.decode(data, CALCULATOR) == tuple(message)


# The two packed responses observed from the other implementation (behaviour notes, 8.6).
VARIABLES = {41: [{29: "x", 39: 1.5}, {29: "zeta", 39: 2}]}
VARIABLES_PACKED = {41: [PACKED, [None, 29, 39], ["x", 1.5], ["zeta", 2]]}
TAPE = {35: [
    {9: {6: {29: "missing"}}, 31: 0.0, 36: 1795312637, 34: False},
    {9: {3: {27: {6: {29: "zeta"}}, 32: {1: {39: 3}}}}, 31: 6, 36: 1795312637, 34: True},
    {9: {0: {27: {6: {29: "x"}}, 32: {1: {39: 1}}}}, 31: 2.5, 36: 1795312637, 34: True},
]}
TAPE_PACKED = {35: [
    PACKED,
    [None, [9, [6, 29], [3, [27, [6, 29]], [32, [1, 39]]], [0, [27, [6, 29]], [32, [1, 39]]]], 31, 36, 34],
    [[["missing"]], 0.0, 1795312637, False],
    [[UNDEFINED, [[["zeta"]], [[3]]]], 6, 1795312637, True],
    [[UNDEFINED, UNDEFINED, [[["x"]], [[1]]]], 2.5, 1795312637, True],
]}


@pytest.mark.parametrize("plain, packed", [
    (VARIABLES, VARIABLES_PACKED),
    (TAPE, TAPE_PACKED),
    ({1: [{6: 1, 9: "one"}, {6: 2, 9: "two"}]}, {1: [PACKED, [None, 6, 9], [1, "one"], [2, "two"]]}),
    ({1: [{6: 1}, {9: 2}]}, {1: [PACKED, [None, 6, 9], [1], [UNDEFINED, 2]]}),
    ({1: [{6: [{2: 1}]}]}, {1: [PACKED, [None, 6], [[PACKED, [None, 2], [1]]]]}),
    ({1: []}, {1: []}),
    ({1: [1, 2]}, {1: [1, 2]}),
    ({1: [{6: 1}, 5]}, {1: [{6: 1}, 5]}),
    ({1: [{"s": 1}]}, {1: [{"s": 1}]}),
    ({1: [{6: {2: 1}}, {6: 3}]}, {1: [{6: {2: 1}}, {6: 3}]}),
    ({1: [{6: {"s": 1}}]}, {1: [{6: {"s": 1}}]}),
])
def test_packing(plain, packed):
    """Arrays of maps with known keys pack into a header and rows; others stay; unpacking inverts."""
    names = list(map(str, range(50)))
    encoding = codec.Encoding({name: i for i, name in enumerate(names)}, names, 0)
    named = codec.from_binary(copy.deepcopy(plain), names, False)
    written = msgpack.unpackb(codec.encode([{}, named], encoding, packed=True), strict_map_key=False)
    assert written == [{}, packed]
    assert codec.from_binary(written[1], names, True) == named


def test_packed_requests_are_unpacked_when_pac_is_true():
    """A client may send a packed MessagePack request when it sets @pac_."""
    data = msgpack.packb([{"@bin_": [CHECKSUM], "@pac_": True}, {4: VARIABLES_PACKED}])
    headers, body = codec.decode(data, CALCULATOR)
    assert body == {"Ok_": {"variables": [{"name": "x", "value": 1.5}, {"name": "zeta", "value": 2}]}}


def test_json_encoding_refuses_what_json_cannot_carry():
    """NaN is not JSON, and bytes outside the body still travel as base64 text."""
    with pytest.raises(ValueError):
        codec.encode([{}, {"Ok_": {"x": float("nan")}}])
    assert json.loads(codec.encode([{"@id_": b"\x01"}, {"Ok_": {}}])) == [{"@id_": "AQ=="}, {"Ok_": {}}]

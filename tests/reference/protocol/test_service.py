"""The service pipeline: each step, and which error wins when several apply."""

import decimal
import json
import logging
import re
import subprocess
import sys

import msgpack
import pytest

from reference import Service, load, mocking, protocol
from reference.mocking import stubs
from reference.protocol import codec, select, validate
from reference.protocol.service import Refusal
from reference.services import testbed
from tests.support import generated
from tests.support.servers import handled_with_peak

SCHEMA = load([
    {"union.Auth_": [{"Token": {"token": "string"}}]},
    {"fn.echo": {"value!": "any", "n!": "integer", "blob!": "bytes", "blobs!": ["bytes"], "sel!": "_ext.Select_"},
     "->": [{"Ok_": {"value!": "any", "n!": "integer", "blob!": "bytes", "blobs!": ["bytes"],
                     "pairs!": ["struct.Pair"], "sel!": "_ext.Select_"}}, {"ErrorNope": {"why": "string"}}],
     "$authenticated": False},
    {"fn.secret": {"n": "integer"}, "->": [{"Ok_": {}}]},
    {"struct.Pair": {"left": "integer", "right": "integer"}},
    {"headers.Out": {"@in": "boolean"}, "->": {"@out": "boolean"}},
])


def echo(arguments, headers):
    """Answer as the request headers say: raise, return a given result or headers, or echo."""
    if "@raise" in headers:
        raise RuntimeError("the handler failed on purpose")
    if "@result" in headers:
        return headers["@result"]
    if "@headers" in headers:
        return headers["@headers"], {"Ok_": {}}
    return {"Ok_": arguments}


SERVICE = Service(SCHEMA, {"fn.echo": echo, "fn.secret": lambda arguments, headers: {"Ok_": {}}})
CORE = protocol.Service(SCHEMA, SERVICE.handlers)  # the teaching core alone, whose steps each log


def answer(request, service=SERVICE):
    """The decoded response to a request message (or raw bytes)."""
    data = request if isinstance(request, bytes) else json.dumps(request).encode()
    reply = service.handle(data)
    if reply.data[:1] == b"\x92":
        assert reply.media_type == "application/octet-stream"
        return msgpack.unpackb(reply.data, strict_map_key=False)
    assert reply.media_type == "application/json"
    return json.loads(reply.data)


def case(path, reason, data=None):
    return {"path": path, "reason": {reason: data or {}}}


def type_case(path, actual, expected):
    return case(path, "TypeUnexpected", {"actual": {actual: {}}, "expected": {expected: {}}})


UNAUTHENTICATED = {"ErrorUnauthenticated_": {"message!": "Valid authentication is required."}}


@pytest.mark.parametrize("request_, expected", [
    ([{}, {"fn.ping_": {}}], [{}, {"Ok_": {}}]),
    ([{"@id_": "abc"}, {"fn.ping_": {}}], [{"@id_": "abc"}, {"Ok_": {}}]),
    ([{"@id_": {"nested": [1, 2, {"k": None}]}}, {"fn.echo": {}}],
     [{"@id_": {"nested": [1, 2, {"k": None}]}}, {"Ok_": {}}]),
    ([{"@id_": None}, {"fn.ping_": {}}],
     [{}, {"ErrorInvalidRequestHeaders_": {"cases": [type_case(["@id_"], "Null", "Any")]}}]),
    ([{"@custom": {"a": 1}, "@time_": 5000}, {"fn.echo": {"n!": 1}}], [{}, {"Ok_": {"n!": 1}}]),
    # header errors: every header, in the order sent, the @ prefix checked first
    ([{"custom": 1, "other": 2, "@time_": "x"}, {"fn.echo": {}}],
     [{}, {"ErrorInvalidRequestHeaders_": {"cases": [
         case(["custom"], "RequiredObjectKeyPrefixMissing", {"prefix": "@"}),
         case(["other"], "RequiredObjectKeyPrefixMissing", {"prefix": "@"}),
         type_case(["@time_"], "String", "Integer")]}}]),
    ([{"@auth_": {"Bearer": {"t": 1}}}, {"fn.echo": {}}],
     [{}, {"ErrorInvalidRequestHeaders_": {"cases": [case(["@auth_", "Bearer"], "ObjectKeyDisallowed")]}}]),
    ([{"@auth_": {}}, {"fn.echo": {}}], [{}, {"ErrorInvalidRequestHeaders_": {"cases": [
        case(["@auth_"], "ObjectSizeUnexpected", {"actual": 0, "expected": 1})]}}]),
    ([{"@bin_": [1.5, "a"]}, {"fn.echo": {}}], [{}, {"ErrorInvalidRequestHeaders_": {"cases": [
        type_case(["@bin_", 0], "Number", "Integer"), type_case(["@bin_", 1], "String", "Integer")]}}]),
    ([{"@unsafe_": 1}, {"fn.echo": {}}],
     [{}, {"ErrorInvalidRequestHeaders_": {"cases": [type_case(["@unsafe_"], "Number", "Boolean")]}}]),
    # which error wins
    ([{"@time_": "x", "@id_": 1}, {"fn.nope": {}}],
     [{"@id_": 1}, {"ErrorInvalidRequestHeaders_": {"cases": [type_case(["@time_"], "String", "Integer")]}}]),
    ([{"@time_": "x"}, {"fn.echo": {"n!": "bad"}}],
     [{}, {"ErrorInvalidRequestHeaders_": {"cases": [type_case(["@time_"], "String", "Integer")]}}]),
    ([{"@id_": "u"}, {"fn.nope": {"anything": 1}}],
     [{"@id_": "u"}, {"ErrorInvalidRequestBody_": {"cases": [case(["fn.nope"], "FunctionUnknown")]}}]),
    ([{}, {"notAFunction": {}}],
     [{}, {"ErrorInvalidRequestBody_": {"cases": [case(["notAFunction"], "FunctionUnknown")]}}]),
    ([{"@id_": 3}, {"fn.secret": {"n": "bad"}}], [{"@id_": 3}, UNAUTHENTICATED]),
    ([{"@auth_": {"Token": {"token": "t"}}}, {"fn.secret": {"n": "bad"}}],
     [{}, {"ErrorInvalidRequestBody_": {"cases": [type_case(["fn.secret", "n"], "String", "Integer")]}}]),
    ([{"@auth_": {"Token": {"token": "t"}}}, {"fn.secret": {"n": 1}}], [{}, {"Ok_": {}}]),
    ([{}, {"fn.ping_": {"x": 1}}],
     [{}, {"ErrorInvalidRequestBody_": {"cases": [case(["fn.ping_", "x"], "ObjectKeyDisallowed")]}}]),
    ([{"@select_": {"->": {"Ok_": ["x"]}}}, {"fn.nope": {}}],
     [{}, {"ErrorInvalidRequestHeaders_": {"cases": [case(["@select_", "->", "Ok_", 0], "ArrayElementDisallowed")]}}]),
    # bytes: base64 in, bytes to the handler, base64 out with @base64_
    ([{}, {"fn.echo": {"blob!": "AQI=", "blobs!": ["", "/w=="]}}],
     [{"@base64_": {"Ok_": {"blob!": True, "blobs!": {"*": True}}}},
      {"Ok_": {"blob!": "AQI=", "blobs!": ["", "/w=="]}}]),
    ([{}, {"fn.echo": {"blob!": "AQI"}}],
     [{}, {"ErrorInvalidRequestBody_": {"cases": [type_case(["fn.echo", "blob!"], "String", "Base64String")]}}]),
    ([{"@base64_": {"Ok_": {"value!": True}}}, {"fn.echo": {"value!": "AQI="}}],
     [{}, {"Ok_": {"value!": "AQI="}}]),
    # a handler may give bytes as base64 text: they leave marked, like any bytes
    ([{"@result": {"Ok_": {"blob!": "AQI=", "blobs!": ["/w=="]}}}, {"fn.echo": {}}],
     [{"@base64_": {"Ok_": {"blob!": True, "blobs!": {"*": True}}}}, {"Ok_": {"blob!": "AQI=", "blobs!": ["/w=="]}}]),
    ([{"@result": {"Ok_": {"blob!": "AQI"}}}, {"fn.echo": {}}],
     [{}, {"ErrorInvalidResponseBody_": {"cases": [type_case(["Ok_", "blob!"], "String", "Base64String")]}}]),
    # a selection field is checked against the function called, and is data in a result
    ([{}, {"fn.echo": {"sel!": {"->": {"Ok_": ["n!", "sel!"]}, "struct.Pair": ["left"]}}}],
     [{}, {"Ok_": {"sel!": {"->": {"Ok_": ["n!", "sel!"]}, "struct.Pair": ["left"]}}}]),
    ([{}, {"fn.echo": {"sel!": {"->": {"Ok_": ["x"]}, "struct.Nope": []}}}],
     [{}, {"ErrorInvalidRequestBody_": {"cases": [
         case(["fn.echo", "sel!", "->", "Ok_", 0], "ArrayElementDisallowed"),
         case(["fn.echo", "sel!", "struct.Nope"], "ObjectKeyDisallowed")]}}]),
    ([{}, {"fn.echo": {"sel!": None}}],
     [{}, {"ErrorInvalidRequestBody_": {"cases": [type_case(["fn.echo", "sel!"], "Null", "Object")]}}]),
    ([{"@select_": {"->": {"Ok_": ["sel!"]}}}, {"fn.echo": {"n!": 1, "sel!": {"->": {"Ok_": ["n!"]}}}}],
     [{}, {"Ok_": {"sel!": {"->": {"Ok_": ["n!"]}}}}]),
    ([{"@result": {"Ok_": {"sel!": {"->": {"Ok_": ["nope"]}}}}}, {"fn.echo": {}}],
     [{}, {"ErrorInvalidResponseBody_": {"cases": [case(["Ok_", "sel!", "->", "Ok_", 0], "ArrayElementDisallowed")]}}]),
    # the result is validated, unless @unsafe_
    ([{"@id_": "u1", "@result": {"Ok_": {"n!": 2**63}}}, {"fn.echo": {}}],
     [{"@id_": "u1"}, {"ErrorInvalidResponseBody_": {"cases": [case(["Ok_", "n!"], "NumberOutOfRange")]}}]),
    ([{"@result": {"errorUnknown": {}}}, {"fn.echo": {}}],
     [{}, {"ErrorInvalidResponseBody_": {"cases": [case(["errorUnknown"], "ObjectKeyDisallowed")]}}]),
    ([{"@result": {"Ok_": {"pairs!": [{"left": 1}]}}}, {"fn.echo": {}}],
     [{}, {"ErrorInvalidResponseBody_": {"cases": [case(["Ok_", "pairs!", 0], "RequiredObjectKeyMissing",
                                                        {"key": "right"})]}}]),
    ([{"@result": None}, {"fn.echo": {}}],
     [{}, {"ErrorInvalidResponseBody_": {"cases": [type_case([], "Null", "Object")]}}]),
    ([{"@unsafe_": True, "@result": {"Ok_": {"n!": 2**63}}}, {"fn.echo": {}}], [{}, {"Ok_": {"n!": 2**63}}]),
    ([{"@unsafe_": True, "@result": "not a result"}, {"fn.echo": {}}],
     [{}, {"ErrorInvalidResponseBody_": {"cases": [type_case([], "String", "Object")]}}]),
    ([{"@result": {"ErrorNope": {"why": "because"}}}, {"fn.echo": {}}], [{}, {"ErrorNope": {"why": "because"}}]),
    # response headers
    ([{"@headers": {"@out": True}}, {"fn.echo": {}}], [{"@out": True}, {"Ok_": {}}]),
    ([{"@id_": 9, "@headers": {"@out": 0, "randomOut": 1}}, {"fn.echo": {}}],
     [{"@id_": 9}, {"ErrorInvalidResponseHeaders_": {"cases": [
         type_case(["@out"], "Number", "Boolean"),
         case(["randomOut"], "RequiredObjectKeyPrefixMissing", {"prefix": "@"})]}}]),
    # select
    ([{"@select_": {"->": {"Ok_": ["n!"]}}}, {"fn.echo": {"n!": 1, "value!": 2}}], [{}, {"Ok_": {"n!": 1}}]),
    ([{"@select_": {"struct.Pair": ["left"]}, "@result": {"Ok_": {"pairs!": [{"left": 1}, {"left": 2, "right": 3}]}}},
      {"fn.echo": {}}], [{}, {"Ok_": {"pairs!": [{"left": 1}, {"left": 2}]}}]),
    ([{"@select_": {"->": {"Ok_": []}}, "@result": {"ErrorNope": {"why": "x"}}}, {"fn.echo": {}}],
     [{}, {"ErrorNope": {"why": "x"}}]),
    # parse failures lose the headers, @id_ included
    (b'[{"@id_": "abc"}, {}]',
     [{}, {"ErrorParseFailure_": {"reasons": [{"ExpectedJsonArrayOfAnObjectAndAnObjectOfOneObject": {}}]}}]),
])
def test_pipeline(request_, expected):
    """Each request gets exactly the expected response."""
    assert answer(request_) == expected


def test_a_handler_that_raises_gets_error_unknown_and_a_logged_case_id(caplog):
    """The client sees only a caseId; the log has the same caseId and the traceback."""
    with caplog.at_level(logging.ERROR, logger="reference"):
        response = answer([{"@id_": 7, "@raise": True}, {"fn.echo": {}}])
    headers, body = response
    assert headers == {"@id_": 7} and list(body) == ["ErrorUnknown_"]
    case_id = body["ErrorUnknown_"]["caseId"]
    assert re.fullmatch(r"[0-9a-f-]{36}", case_id)
    [record] = [r for r in caplog.records if case_id in r.getMessage()]
    assert "fn.echo" in record.getMessage() and "the handler failed on purpose" in caplog.text


def test_handlers_must_match_the_schema():
    """A missing or unknown handler is a clear error when the service is built."""
    with pytest.raises(ValueError, match=r"missing \['fn.secret'\], not in the schema \['fn.typo'\]"):
        Service(SCHEMA, {"fn.echo": echo, "fn.typo": echo})


def test_api_returns_public_entries_or_everything():
    """fn.api_ shows the service's own entries, and the stock ones on request."""
    public = answer([{}, {"fn.api_": {}}])[1]["Ok_"]["api"]
    everything = answer([{}, {"fn.api_": {"includeInternal!": True}}])[1]["Ok_"]["api"]
    assert public == SCHEMA.api() and everything == SCHEMA.api(include_internal=True)
    assert len(public) == 7 and len(everything) == 22
    with_examples = answer([{}, {"fn.api_": {"includeExamples!": True}}])[1]["Ok_"]["api"]
    assert all(("example" in e) or ("inputExample" in e) for e in with_examples)
    assert with_examples == answer([{}, {"fn.api_": {"includeExamples!": True}}])[1]["Ok_"]["api"]


def test_binary_is_negotiated_for_ok_results_only():
    """@bin_ [] gets MessagePack with @enc_; a known checksum drops @enc_; errors stay JSON."""
    checksum = SERVICE.encoding.checksum
    first = answer([{"@id_": 1, "@bin_": []}, {"fn.echo": {"n!": 5}}])
    assert first[0] == {"@id_": 1, "@enc_": SERVICE.encoding.ids, "@bin_": [checksum]}
    assert first[1] == {SERVICE.encoding.ids["Ok_"]: {SERVICE.encoding.ids["n!"]: 5}}
    steady = answer([{"@bin_": [checksum]}, {"fn.echo": {"n!": 5}}])
    assert steady[0] == {"@bin_": [checksum]}
    assert answer([{"@bin_": [], "@pac_": False}, {"fn.echo": {"n!": "x"}}]) == [
        {"@pac_": False},
        {"ErrorInvalidRequestBody_": {"cases": [type_case(["fn.echo", "n!"], "String", "Integer")]}}]
    assert answer([{"@pac_": True}, {"fn.echo": {}}]) == [{}, {"Ok_": {}}]


class Odd:
    """An object that is no JSON value."""


def nested(levels):
    value = []
    for _ in range(levels):
        value = [value]
    return value


LOOP = []
LOOP.append(LOOP)


def test_a_result_as_deep_as_a_message_may_be_is_answered():
    service = Service(SCHEMA, {"fn.echo": lambda arguments, headers: {"Ok_": {"value!": nested(1020)}},
                               "fn.secret": echo})
    assert list(answer([{}, {"fn.echo": {}}], service)[1]) == ["Ok_"]
    assert list(answer([{"@bin_": []}, {"fn.echo": {}}], service)[1]) == [service.encoding.ids["Ok_"]]


@pytest.mark.parametrize("returned, expected", [
    ({"Ok_": {"value!": decimal.Decimal("1.5")}},
     ("ErrorInvalidResponseBody_", [type_case(["Ok_", "value!"], "Unknown", "Any")])),
    ({"Ok_": {"value!": {"a": [1, {"b": float("nan")}]}}},
     ("ErrorInvalidResponseBody_", [validate.case(validate.at("Ok_", "value!", "a", 1, "b"), "NumberOutOfRange")])),
    ({"Ok_": {"value!": [Odd(), float("inf")]}},
     ("ErrorInvalidResponseBody_", [type_case(["Ok_", "value!", 0], "Unknown", "Any"),
                                    validate.case(validate.at("Ok_", "value!", 1), "NumberOutOfRange")])),
    ({"Ok_": {"value!": ["half a pair: \ud800"]}},  # no wire carries it, and requests holding it are refused
     ("ErrorInvalidResponseBody_", [type_case(["Ok_", "value!", 0], "Unknown", "String")])),
    ({"Ok_": {"value!": {"\udfff": 1}}},
     ("ErrorInvalidResponseBody_", [type_case(["Ok_", "value!", "\\udfff"], "Unknown", "String")])),
    ({"Ok_": {"value!": {(1, 2): "a tuple as a key"}}},
     ("ErrorInvalidResponseBody_", [type_case(["Ok_", "value!", "(1, 2)"], "Unknown", "String")])),
    # the message, its body, the result's tag and value! are four levels; then 1,020 more
    ({"Ok_": {"value!": nested(5000)}},
     ("ErrorInvalidResponseBody_", [validate.case(validate.at("Ok_", "value!", *[0] * 1021),
                                                  "NestingTooDeep", {"limit": 1024})])),
    ({"Ok_": {"value!": nested(1021)}},
     ("ErrorInvalidResponseBody_", [validate.case(validate.at("Ok_", "value!", *[0] * 1021),
                                                  "NestingTooDeep", {"limit": 1024})])),
    ({"Ok_": {"value!": LOOP}},
     ("ErrorInvalidResponseBody_", [validate.case(validate.at("Ok_", "value!", *[0] * 1021),
                                                  "NestingTooDeep", {"limit": 1024})])),
    (({"@set": {1, 2}}, {"Ok_": {}}), ("ErrorInvalidResponseHeaders_", [type_case(["@set"], "Unknown", "Any")])),
    (({"@odd": [Odd()]}, {"Ok_": {"value!": float("nan")}}),
     ("ErrorInvalidResponseBody_", [validate.case(validate.at("Ok_", "value!"), "NumberOutOfRange")])),
])
def test_a_result_no_wire_can_carry_is_an_invalid_result_with_its_path(caplog, returned, expected):
    """Only a raise is ErrorUnknown_: a value that cannot be encoded, where the schema allows
    anything, is the handler's invalid result (or headers), logged, on JSON and binary alike."""
    service = Service(SCHEMA, {"fn.echo": lambda arguments, headers: returned, "fn.secret": echo})
    tag, cases = expected
    for extra in ({}, {"@bin_": []}):
        with caplog.at_level(logging.ERROR, logger="reference"):
            headers, body = answer([{"@id_": 1, **extra}, {"fn.echo": {}}], service)
        assert (headers, body) == ({"@id_": 1}, {tag: {"cases": cases}})
        assert f"fn.echo returned {'an invalid result' if 'Body' in tag else 'invalid response headers'}" in caplog.text


def test_bytes_given_as_base64_text_leave_as_bytes_on_every_wire():
    """The handler contract: bytes fields may be returned as bytes or as base64 text, and the
    caller gets bytes either way (MessagePack bin here, base64 marked by @base64_ on JSON)."""
    for given in (b"\x01\x02", "AQI="):
        service = Service(SCHEMA, {"fn.echo": lambda a, h: {"Ok_": {"blob!": given}}, "fn.secret": echo})
        headers, body = answer([{"@bin_": []}, {"fn.echo": {}}], service)
        assert body == {SERVICE.encoding.ids["Ok_"]: {SERVICE.encoding.ids["blob!"]: b"\x01\x02"}}
        assert answer([{}, {"fn.echo": {}}], service) == [{"@base64_": {"Ok_": {"blob!": True}}},
                                                          {"Ok_": {"blob!": "AQI="}}]


def test_an_unchecked_result_that_cannot_be_sent_is_checked_after_all():
    """With @unsafe_ a result is not checked, but one that no JSON can carry is answered as invalid."""
    schema = load([{"fn.sum": {}, "->": [{"Ok_": {"total": "number"}}]}])
    service = Service(schema, {"fn.sum": lambda arguments, headers: {"Ok_": {"total": 1e308 * 10}}})
    assert answer([{"@unsafe_": True}, {"fn.sum": {}}], service) == [{}, {"ErrorInvalidResponseBody_": {
        "cases": [case(["Ok_", "total"], "NumberOutOfRange")]}}]


def test_a_message_reports_its_first_hundred_cases():
    """However many values are wrong, a response carries the first MAX_CASES cases, in order."""
    headers, body = answer([{}, {"fn.echo": {"blobs!": [5] * 100_000}}])
    cases = body["ErrorInvalidRequestBody_"]["cases"]
    assert len(cases) == validate.MAX_CASES and [c["path"][-1] for c in cases] == list(range(validate.MAX_CASES))


def test_a_long_key_in_many_paths_stops_the_cases_sooner():
    """A 100 KB key leading to 200 wrong values is reported once: the answer stays as long as the
    request, not 100 times longer. Shorter keys make no difference to the first hundred."""
    service = Service(load([{"fn.m": {"m": {"string": ["integer"]}}, "->": [{"Ok_": {}}]}]), {"fn.m": echo})
    for key, reported in [("k" * 100_000, 1), ("k" * 600, 100)]:
        cases = answer([{}, {"fn.m": {"m": {key: ["x"] * 200}}}], service)[1]["ErrorInvalidRequestBody_"]["cases"]
        assert len(cases) == reported and cases[0]["path"] == ["fn.m", "m", key, 0]


def test_binary_falls_back_to_json_when_messagepack_cannot_carry_the_result():
    """An integer beyond 64 bits (allowed with @unsafe_) cannot be MessagePack; JSON carries it."""
    response = answer([{"@bin_": [], "@unsafe_": True, "@result": {"Ok_": {"n!": 2**70}}}, {"fn.echo": {}}])
    assert response == [{}, {"Ok_": {"n!": 2**70}}]


@pytest.mark.parametrize("request_, steps", [
    ([{"@select_": {"struct.Pair": ["left"]}, "@bin_": []}, {"fn.echo": {"value!": 1}}],
     ["1 decode: ", "8 result: fn.echo returned {'Ok_': {'value!': 1}}, valid (missing fields @select_ drops are "
      "excused)", "10 select: {'struct.Pair': ['left']}",
      "11 encode: MessagePack, as @bin_ asked, with @enc_"]),
    ([{"@result": {"Ok_": {"pairs!": [{"left": 1, "right": 2}]}}, "@select_": {"struct.Pair": ["left"]}},
      {"fn.echo": {}}],
     ["8 result: fn.echo returned", "10 select: {'struct.Pair': ['left']}"]),
    ([{"@n": 1, "@in": "x"}, {"fn.echo": {}}], ["3 headers: ErrorInvalidRequestHeaders_, with 1 cases"]),
    ([{}, {"fn.secret": {"n": "x"}}], ["4 auth: fn.secret is protected and the request has no @auth_"]),
    ([{}, {"fn.nope": {}}], ["5 function: the schema has no fn.nope"]),
    ([{}, {"fn.echo": {"n": 1}}], ["6 arguments: ErrorInvalidRequestBody_, with 1 cases"]),
    ([{"@unsafe_": True, "@headers": {"@out": 1}}, {"fn.echo": {}}],
     ["8 result: fn.echo returned {'Ok_': {}}, not checked, as @unsafe_ asks"]),
    ([{"@bin_": [], "@result": {"ErrorNope": {"why": "w"}}}, {"fn.echo": {}}],
     ["11 encode: JSON, though @bin_ asked for MessagePack"]),
    ([{}, {"fn.echo": {"blob!": "AQI="}}], ["11 encode: JSON, bytes marked in @base64_ {'Ok_': {'blob!': True}}"]),
    (b"[1, 2]", ["1 decode: 6 bytes are not a message: ExpectedJsonArrayOfTwoObjects"]),
])
def test_the_debug_log_follows_a_request_step_by_step(request_, steps, caplog):
    """With --log-level debug, each step of the core says what it decided: a learner can follow a request."""
    with caplog.at_level(logging.DEBUG, logger="reference"):
        answer(request_, CORE)
    lines = [record.getMessage() for record in caplog.records if record.levelno == logging.DEBUG]
    for expected in steps:
        assert any(line.startswith(expected) for line in lines), (expected, lines)
    numbers = [int(line.split()[0].split("-")[0]) for line in lines]
    assert numbers == sorted(numbers)  # in the order of the pipeline


# The worst shapes measured for each way in, 64 KiB of each (smaller messages cost a little
# more per byte): one small container or value per byte or two, echoed back. The factors are
# the ones the README states.
TESTBED = testbed.service()
IDS = TESTBED.encoding.ids


def _binary(message, packed=False):
    headers, body = message
    return codec.encode([{**headers, "@bin_": [TESTBED.encoding.checksum]}, body], TESTBED.encoding, packed)


def _filled(make, wire, size=64 * 1024):
    """The message `make(n)` on its `wire`, for the n that makes it about `size` bytes."""
    one, two = len(wire(make(100))), len(wire(make(200)))
    return wire(make(100 + (size - one) * 100 // (two - one)))


@pytest.mark.parametrize("make, wire, factor", [
    (lambda n: [{}, {"fn.echo": {"any!": [{"a": {}}] * n}}], lambda m: json.dumps(m).encode(), 60),
    (lambda n: [{}, {"fn.echo": {"any!": [{}] * n}}], _binary, 80),
    (lambda n: [{"@pac_": True}, {"fn.echo": {"any!": [{"x": {}}] * n}}], lambda m: _binary(m, True), 160),
    (lambda n: [{}, {"fn.echo": {"bytesArr!": [""] * n}}], lambda m: json.dumps(m).encode(), 40),
], ids=["JSON", "MessagePack", "packed MessagePack", "base64 in JSON"])
def test_memory_per_byte_received_stays_within_the_stated_factor(make, wire, factor):
    """Everything a request costs while it is processed, answer included, as a multiple of its bytes."""
    data = _filled(make, wire)
    reply, peak = handled_with_peak(TESTBED, data)
    assert reply.result == "Ok_" and peak / len(data) <= factor


def test_hooks_authenticate_wrap_and_observe_every_call():
    """`before` turns credentials into an identity (or refuses), `wrap` surrounds every handler,
    and `on_error` sees every answer that is not Ok_, with what a handler raised."""
    tokens, wrapped, seen = {"t1": "ann"}, [], []

    def before(function, headers):
        token = headers.get("@auth_", {}).get("Token", {}).get("token")
        if function == "fn.secret" and token not in tokens:
            raise Refusal(UNAUTHENTICATED)
        return {**headers, "user": tokens.get(token, "nobody")}

    def wrap(function, handler, arguments, headers):
        wrapped.append(function)
        return handler(arguments, headers)

    service = Service(SCHEMA, {"fn.echo": lambda arguments, headers: {"Ok_": {"value!": headers["user"]}},
                               "fn.secret": lambda arguments, headers: 1 / 0},
                      before=before, wrap=wrap, on_error=lambda *seen_: seen.append(seen_))
    ann = {"@auth_": {"Token": {"token": "t1"}}}
    assert answer([ann, {"fn.echo": {}}], service) == [{}, {"Ok_": {"value!": "ann"}}]
    assert answer([{}, {"fn.echo": {}}], service) == [{}, {"Ok_": {"value!": "nobody"}}]
    assert answer([{"@auth_": {"Token": {"token": "t2"}}}, {"fn.secret": {"n": 1}}], service) == [{}, UNAUTHENTICATED]
    assert list(answer([ann, {"fn.secret": {"n": 1}}], service)[1]) == ["ErrorUnknown_"]
    assert answer(b"nonsense", service)[1]["ErrorParseFailure_"]
    assert answer([{}, {"fn.echo": {"n!": "x"}}], service)[1]["ErrorInvalidRequestBody_"]
    assert answer([{}, {"fn.ping_": {}}], service) == [{}, {"Ok_": {}}]
    assert wrapped == ["fn.echo", "fn.echo", "fn.secret"]
    assert [(function, next(iter(result))) for function, _, result, _ in seen] == [
        ("fn.secret", "ErrorUnauthenticated_"), ("fn.secret", "ErrorUnknown_"), ("", "ErrorParseFailure_"),
        ("fn.echo", "ErrorInvalidRequestBody_")]
    assert isinstance(seen[1][3], ZeroDivisionError) and seen[0][3] is None and seen[1][1] == ann
    returned = []  # an ErrorUnknown_ a handler returns, rather than raises, is seen too, without an exception
    service = Service(SCHEMA, {"fn.echo": lambda arguments, headers: {"ErrorUnknown_": {"caseId": "c1"}},
                               "fn.secret": echo}, on_error=lambda *seen_: returned.append(seen_))
    assert answer([{}, {"fn.echo": {}}], service) == [{}, {"ErrorUnknown_": {"caseId": "c1"}}]
    assert [(f, r, e) for f, _, r, e in returned] == [("fn.echo", {"ErrorUnknown_": {"caseId": "c1"}}, None)]


def test_the_built_in_functions_answer_without_the_hooks():
    """A hook that refuses strangers, as an authenticating one does, hides neither the schema nor the ping."""
    def stranger(function, headers):
        raise Refusal(UNAUTHENTICATED)

    def failing(function, handler, arguments, headers):
        raise RuntimeError("wrap is not for the built-in functions")
    for hooks in ({"before": stranger}, {"wrap": failing}):
        service = Service(SCHEMA, {"fn.echo": echo, "fn.secret": echo}, **hooks)
        assert answer([{}, {"fn.ping_": {}}], service) == [{}, {"Ok_": {}}]
        assert answer([{}, {"fn.api_": {}}], service)[1]["Ok_"]["api"] == SCHEMA.api()
    own = Service(SCHEMA, {"fn.echo": echo, "fn.secret": echo, "fn.ping_": lambda a, h: {"Ok_": {}}}, before=stranger)
    assert answer([{}, {"fn.ping_": {}}], own) == [{}, {"ErrorInvalidResponseBody_": {"cases": [
        case(["ErrorUnauthenticated_"], "ObjectKeyDisallowed")]}}]  # a ping of one's own is a handler like any


def test_a_refusal_is_checked_like_a_result_and_a_failing_hook_fails_nothing_else(caplog):
    """A `before` hook may only refuse with one of the function's results; an `on_error` hook
    that raises is logged, and the answer goes out all the same."""
    def refuse(function, headers):
        raise Refusal({"ErrorMadeUp": {}})

    def broken(*seen):
        raise RuntimeError("the hook is broken")
    service = Service(SCHEMA, {"fn.echo": echo, "fn.secret": echo}, before=refuse, on_error=broken)
    with caplog.at_level(logging.ERROR, logger="reference"):
        body = answer([{}, {"fn.echo": {}}], service)[1]
    assert body["ErrorInvalidResponseBody_"]["cases"] == [case(["ErrorMadeUp"], "ObjectKeyDisallowed")]
    assert "the on_error hook raised" in caplog.text


# Every answer inside the server's own schema: what fn.api_ shows, with the internal entries.

def outside_its_schema(service, request, reply):
    """How the answer `reply` to `request` falls outside what the service's own fn.api_ (with internal
    entries) declares: its result against the function's results (an unknown function's, and a
    parse failure's, against the stock errors), each response header declared and of its type."""
    api = json.loads(service.handle(b'[{}, {"fn.api_": {"includeInternal!": true}}]').data)[1]["Ok_"]["api"]
    own = load(api, extensions=stubs.KINDS if "_ext.Stub_" in json.dumps(api) else None)
    if reply.data[:1] == b"\x92":
        headers, body = codec.read_binary(reply.data)
        body = codec.from_binary(body, service.encoding.names, headers.get("@pac_") is True)
    else:
        headers, body = codec.read_json(reply.data)
    headers.pop("@base64_", None) if reply.data[:1] == b"\x92" else None
    function = own.functions.get(reply.function) or own.functions["fn.ping_"]
    selection = request[0].get("@select_") if isinstance(request, list) and type(request[0]) is dict else None
    problems = [found for found in validate.check_tags(body, function.result, (), function)
                if not (selection and "RequiredObjectKeyMissing" in found["reason"]
                        and select.removes(selection, function, found["path"], found["reason"]
                                           ["RequiredObjectKeyMissing"]["key"]))]
    for name, value in headers.items():
        declared = own.response_headers.get(name)
        problems += [f"{name} is not declared"] if declared is None else list(validate.check(value, declared, (), function))
    return problems


HOSTILE = [b"", b"[", b"\x92\xc1", b"\x92\x80\x80", b"[{}, {}]", b'[{"@id_": "\\ud800"}, {"fn.echo": {}}]',
           b"[" * 1100 + b"]" * 1100, b'[{"@id_": ' + b"[" * 1021 + b"]" * 1021 + b'}, {"fn.echo": {}}]',
           json.dumps([{}, {"fn.echo": {"n!": 2**64}}]).encode(), b'[{}, {"fn.echo": {"n!": NaN}}]',
           msgpack.packb([{"@bin_": [1]}, {0: {}}]), msgpack.packb([{"@bin_": [], "@pac_": True}, {"fn.echo": {}}]),
           b'[{"@select_": {"struct.Nope": []}}, {"fn.nope": {}}]', b'[{"@select_": 1, "@n": 2}, {"fn.echo": {}}]']
DEEP = {"Ok_": {"value!": nested(1100)}}  # results and headers no wire can carry: a handler's doing
ODD_RESULTS = [DEEP, {"Ok_": {"value!": float("nan")}}, {"Ok_": {"value!": decimal.Decimal(1)}},
               ({"@out": nested(1100)}, {"Ok_": {}}), ({"@x": "\ud800"}, {"Ok_": {}}), {"Ok_": {"value!": "\udc00"}}]


@pytest.mark.parametrize("seed", range(40))
def test_every_answer_is_one_the_servers_own_schema_declares(seed):
    """Random requests to random schemas, hostile bytes, and results no wire can carry: each answer
    is a result and headers the server's own fn.api_ declares (the handler's own headers aside)."""
    schema, rng = generated.loaded(seed)
    handlers = {name: generated.steered for name in schema.functions if not name.endswith("_")}
    for made in (protocol.Service, Service):
        service = made(schema, handlers)
        for data in generated.requests(schema, rng, service):
            try:
                headers = codec.decode(data, service.encoding)[0]  # (JSON or MessagePack)
            except codec.ParseFailure:
                headers = {}
            if "@unsafe_" in headers or "@responseHeaders" in headers:  # (outside on purpose)
                continue
            request = [headers]
            assert not outside_its_schema(service, request, service.handle(data)), data


@pytest.mark.parametrize("made", [protocol.Service, Service])
def test_hostile_requests_and_unwritable_results_are_answered_within_the_schema(made):
    odd = iter(ODD_RESULTS * 2)
    service = made(SCHEMA, {"fn.echo": lambda arguments, headers: next(odd), "fn.secret": echo})
    for data in HOSTILE + [b'[{}, {"fn.echo": {}}]'] * len(ODD_RESULTS):
        problems = outside_its_schema(service, data, reply := service.handle(data))
        assert not problems, (data[:80], reply.data[:300], problems)
    mock = mocking.service(testbed.service().schema)
    for data in HOSTILE + [b'[{}, {"fn.createStub_": {"stub": {"fn.nope": {}, "->": {"Ok_": {}}}}}]',
                           b'[{}, {"fn.verify_": {"call": {"fn.echo": {}}}}]']:
        assert not outside_its_schema(mock, data, mock.handle(data)), data


DEEP_EVERYWHERE = r'''
import asyncio, io, json, sys
assert sys.getrecursionlimit() == 1000  # Python's default: whatever more is needed, the library arranges
from reference import Service, load, mocking, protocol
from reference.transports import asgi, wsgi

def greet(arguments, headers):
    return {"Ok_": {"greeting": f"Hello, {arguments['name']}!"}}

schema = load([{"fn.greet": {"name": "string"}, "->": [{"Ok_": {"greeting": "string"}}]}])

def deep(levels):  # a message `levels` deep: the array, the headers, then @id_'s arrays
    inner = levels - 2
    return b'[{"@id_": ' + b"[" * inner + b"]" * inner + b'}, {"fn.greet": {"name": "Ada"}}]'

def by_wsgi(application, data):
    answer = []
    environ = {"REQUEST_METHOD": "POST", "PATH_INFO": "/api", "CONTENT_LENGTH": str(len(data)),
               "wsgi.input": io.BytesIO(data), "REMOTE_ADDR": "127.0.0.1"}
    return b"".join(application(environ, lambda status, headers: answer.append(status)))

def by_asgi(application, data):
    sent, received = [], [{"type": "http.request", "body": data, "more_body": False}]
    async def receive():
        return received.pop(0)
    async def send(message):
        sent.append(message)
    scope = {"type": "http", "method": "POST", "path": "/api", "client": ("127.0.0.1", 1),
             "headers": [(b"content-length", str(len(data)).encode())]}
    asyncio.run(application(scope, receive, send))
    return b"".join(m.get("body", b"") for m in sent)

ways = {"the core": protocol.Service(schema, {"fn.greet": greet}).handle,
        "the engine room": Service(schema, {"fn.greet": greet}).handle,
        "WSGI": lambda data: by_wsgi(wsgi.make_application(Service(schema, {"fn.greet": greet})), data),
        "ASGI": lambda data: by_asgi(asgi.make_application(Service(schema, {"fn.greet": greet})), data),
        "the mock": mocking.service(schema).handle}
for way, answer in ways.items():
    for levels in (500, 1000, 1024, 1025):
        data = answer(deep(levels))
        data = getattr(data, "data", data)
        fine = b'"Ok_"' in data and data.count(b"[") >= levels - 2
        refused = b'"NestingTooDeep": {"limit": 1024}' in data
        assert (fine, refused) == ((True, False) if levels <= 1024 else (False, True)), (way, levels, data[-200:])
print("ok")
'''


def test_every_way_of_serving_answers_a_message_as_deep_as_one_may_be_at_python_s_default_limit():
    """In a fresh process at Python's default recursion limit: the core, the engine room, WSGI,
    ASGI and the mock answer messages 500, 1,000 and 1,024 levels deep, and refuse 1,025."""
    run = subprocess.run([sys.executable, "-c", DEEP_EVERYWHERE], capture_output=True, text=True, timeout=120)
    assert run.stdout == "ok\n", run.stderr[-2000:]

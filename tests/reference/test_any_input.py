"""Fuzzing: whatever arrives, the answer is a well-formed envelope, never ErrorUnknown_.

Quick by default; set FUZZ_EXAMPLES (say 5000) for a longer run."""

import base64
import json
import os
import socket

import msgpack
import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from reference import load
from reference.services import calculator
from tests.support.servers import serving

SCHEMA = load(calculator.entries())
SERVICE = calculator.service()
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "400"))
fuzz = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=20)
INT64 = st.integers(-(2**63), 2**63 - 1)
SCALARS = {
    "boolean": st.booleans(),
    "integer": INT64,
    "number": INT64 | st.floats(allow_nan=False, allow_infinity=False),
    "string": st.text(max_size=10),
    "bytes": st.binary(max_size=12).map(lambda b: base64.b64encode(b).decode()),
    "any": JSON.filter(lambda v: v is not None),
}
_deferred = {}


def valid(type_):
    """A strategy for values of a schema type (valid by construction)."""
    kind = type_.kind
    if kind in SCALARS:
        strategy = SCALARS[kind]
    elif kind == "array":
        strategy = st.lists(valid(type_.of), max_size=3)
    elif kind == "map":
        strategy = st.dictionaries(st.text(max_size=6), valid(type_.of), max_size=3)
    elif kind == "struct":
        strategy = fields(type_.of)
    else:  # a union or an fn.X call: one tag; recursive unions refer back through st.deferred
        union = type_.of
        if id(union) not in _deferred:
            _deferred[id(union)] = st.deferred(lambda: st.one_of(
                [fields(struct).map(lambda value, tag=tag: {tag: value}) for tag, struct in union.tags.items()]))
        strategy = _deferred[id(union)]
    return strategy | st.none() if type_.nullable else strategy


def fields(struct):
    required = {name: valid(t) for name, t in struct.fields.items() if not name.endswith("!")}
    optional = {name: valid(t) for name, t in struct.fields.items() if name.endswith("!")}
    return st.fixed_dictionaries(required, optional=optional)


PUBLIC = sorted(name for name, f in SCHEMA.functions.items() if not f.internal)
HEADERS = st.fixed_dictionaries({}, optional={"@id_": SCALARS["any"], "@time_": INT64,
                                               "@auth_": valid(SCHEMA.request_headers["@auth_"]),
                                               "@bin_": st.lists(INT64, max_size=2), "@pac_": st.booleans()})
REQUESTS = st.sampled_from(PUBLIC + ["fn.ping_", "fn.api_"]).flatmap(
    lambda name: st.tuples(HEADERS, st.just(name), fields(SCHEMA.functions[name].arguments)))


def answer(data):
    """Send bytes to the core and check the envelope that comes back; return (headers, body)."""
    reply = SERVICE.handle(data)
    if reply.data[:1] == b"\x92":
        assert reply.media_type == "application/octet-stream"
        headers, body = msgpack.unpackb(reply.data, strict_map_key=False)
        names = {i: n for n, i in SERVICE.encoding.ids.items()}
        body = {names.get(k, k): v for k, v in body.items()}
    else:
        assert reply.media_type == "application/json"
        headers, body = json.loads(reply.data)
    assert type(headers) is dict and type(body) is dict and len(body) == 1
    [(tag, payload)] = body.items()
    assert type(payload) is dict
    assert tag != "ErrorUnknown_", body
    return headers, body


def declared(function, tag):
    return tag == "ErrorParseFailure_" or tag in SCHEMA.functions[function].result.tags


def accepted(request):
    """A request made from the schema is never refused as invalid, nor answered ErrorUnknown_."""
    headers, function, arguments = request
    _, body = answer(json.dumps([headers, {function: arguments}]).encode())
    [tag] = body
    assert declared(function, tag)
    assert tag not in ("ErrorInvalidRequestBody_", "ErrorInvalidRequestHeaders_", "ErrorParseFailure_"), body


@fuzz
@given(REQUESTS)
def test_requests_made_from_the_schema_are_never_refused_as_invalid(request):
    """The validator accepts every value the schema allows (checked against an independent generator)."""
    accepted(request)


def test_the_fuzzer_finds_a_planted_bug(monkeypatch):
    """A check that cannot fail is worth nothing: a handler that raises for negative x is found."""
    original = SERVICE.handlers["fn.add"]

    def broken(arguments, headers):
        if arguments["x"] < 0:
            raise RuntimeError("planted bug")
        return original(arguments, headers)

    monkeypatch.setitem(SERVICE.handlers, "fn.add", broken)
    searching = settings(fuzz, phases=[Phase.generate], database=None)  # found is enough: no shrinking
    adds = st.tuples(HEADERS, st.just("fn.add"), fields(SCHEMA.functions["fn.add"].arguments))
    with pytest.raises(AssertionError, match="ErrorUnknown_"):  # (calls of fn.add alone: among every function's,
        searching(given(adds)(accepted))()                      # 400 held none with x < 0 in one run of dozens)


@fuzz
@given(REQUESTS, st.data())
def test_mutated_requests_get_declared_answers(request, data):
    """A field replaced by any JSON value is answered with a declared result, never a crash."""
    headers, function, arguments = request
    if arguments:
        field = data.draw(st.sampled_from(sorted(arguments)))
        arguments = {**arguments, field: data.draw(JSON)}
    else:
        arguments = data.draw(st.dictionaries(st.text(max_size=5), JSON, max_size=2))
    _, body = answer(json.dumps([headers, {function: arguments}]).encode())
    assert declared(function, next(iter(body)))


@fuzz
@given(JSON)
def test_any_json_gets_an_envelope(value):
    for message in (value, [{}, value], [value, {"fn.ping_": value}]):
        answer(json.dumps(message).encode())


@fuzz
@given(st.binary(max_size=64))
def test_any_bytes_get_an_envelope(data):
    answer(data)
    answer(b"\x92" + data)


MSGPACK = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats() | st.text(max_size=6)
    | st.binary(max_size=6) | st.builds(msgpack.ExtType, st.integers(0, 127), st.binary(max_size=3)),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(
        st.integers(0, 60) | st.text(max_size=5), children, max_size=4),
    max_leaves=20)


@fuzz
@given(MSGPACK, MSGPACK)
def test_any_messagepack_gets_an_envelope(headers, body):
    """Random MessagePack, with or without the right checksum, is read or refused cleanly."""
    for first in (headers, {"@bin_": [SERVICE.encoding.checksum], "@pac_": True}):
        answer(msgpack.packb([first, body]))
        answer(msgpack.packb([first, {10: body}]))


@settings(max_examples=max(10, EXAMPLES // 10), deadline=None)
@given(st.integers(1, 3000), st.sampled_from(["[", "{\"a\": ", "{\"Add\": {\"left\": "]))
def test_deep_nesting_gets_an_envelope(depth, opener):
    closer = {"[": "]", "{\"a\": ": "}", "{\"Add\": {\"left\": ": "}}"}[opener]
    nested = opener * depth + "1" + closer * depth
    for message in ('[{"@id_": %s}, {"fn.ping_": {}}]' % nested, '[{}, {"fn.evaluate": {"expression": %s}}]' % nested):
        answer(message.encode())


@pytest.fixture(scope="module")
def address():
    with serving(calculator.service()) as server:
        yield server.server_address[:2]


@settings(max_examples=max(10, EXAMPLES // 5), deadline=None)
@given(data=st.binary(max_size=200))
def test_the_http_server_answers_any_body_and_keeps_serving(address, data):
    """Over a real socket, random bodies get an envelope and the connection still serves the next."""
    with socket.create_connection(address, timeout=5) as sock:
        for body in (data, b'[{}, {"fn.ping_": {}}]'):
            sock.sendall(b"POST /api HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
            head = b""
            while b"\r\n\r\n" not in head:
                head += sock.recv(1)
            assert head.startswith(b"HTTP/1.1 200 OK")
            length = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
            reply = b""
            while len(reply) < length:
                reply += sock.recv(length - len(reply))
            assert reply[:1] in (b"[", b"\x92")
        assert reply == b'[{}, {"Ok_": {}}]'

"""The client and the binary wire, over real sockets: negotiation, packing, bytes, failures."""

import json
import logging
import socket
import threading
import time
import uuid

import msgpack
import pytest

from reference import Service, load
from reference.services import calculator
from reference.transports.http_client import Client, NotAMessage, TimedOut, TooLarge, Unreachable, Untrusted
from tests.support.servers import DRIPS, Connection, dripping, endless, refusing, serving, until

ECHO = load([{"fn.echo": {"blobs!": ["bytes"], "map!": {"string": "bytes"}, "nested!": ["struct.Box"],
                          "n!": "integer"},
              "->": [{"Ok_": {"blobs!": ["bytes"], "map!": {"string": "bytes"}, "nested!": ["struct.Box"],
                              "n!": "integer", "seen!": {"string": "any"}}}]},
             {"struct.Box": {"data": "bytes?", "more!": {"string": ["bytes"]}}}])


def echo(arguments, headers):
    return {"Ok_": {**arguments, "seen!": {k: v for k, v in headers.items() if k in ("@time_", "@x")}}}


class Recording:
    """A service wrapper that keeps every request and response on the wire."""

    def __init__(self, service):
        self.service, self.wire = service, []

    def handle(self, data, client=""):
        reply = self.service.handle(data)
        self.wire.append((data, reply.data))
        return reply


@pytest.fixture
def echo_server():
    recording = Recording(Service(ECHO, {"fn.echo": echo}))
    with serving(recording) as server:
        server.recording = recording
        yield server


@pytest.fixture(scope="module")
def calculator_server():
    recording = Recording(calculator.service())
    with serving(recording) as server:
        server.recording = recording
        yield server


def user():
    return {"@auth_": {"Ephemeral": {"username": f"client-{uuid.uuid4().hex[:8]}"}}}


@pytest.mark.parametrize("options", [{}, {"mode": "binary"}, {"mode": "binary-requests"},
                                     {"mode": "packed"},
                                     {"mode": "packed-requests"}])
def test_bytes_in_nested_arrays_and_maps_travel_both_ways(echo_server, options):
    """Every mode gives back bytes as bytes, wherever they sit."""
    arguments = {"blobs!": [b"\x00\x01", b""], "map!": {"k": b"\xff"}, "n!": 7,
                 "nested!": [{"data": None}, {"data": b"\x02", "more!": {"m": [b"\x03", b"\x04"]}}]}
    with Client(echo_server.url, **options) as client:
        for _ in range(3):
            headers, body = client.call("fn.echo", arguments, {"@x": 1})
            assert body == {"Ok_": {**arguments, "seen!": {"@time_": 5000, "@x": 1}}}


def test_json_mode_sends_json_with_the_timeout(echo_server):
    with Client(echo_server.url, timeout=2.5) as client:
        assert client.call("fn.echo", {"n!": 1})[1]["Ok_"]["seen!"] == {"@time_": 2500}
    [(request, response)] = echo_server.recording.wire
    assert json.loads(request) == [{"@time_": 2500}, {"fn.echo": {"n!": 1}}]


def test_negotiation_learns_the_encoding_once_then_sends_the_checksum(calculator_server):
    """First JSON with @bin_ [] and a reply with @enc_; then @bin_ [checksum] and compact replies."""
    wire = calculator_server.recording.wire
    wire.clear()
    with Client(calculator_server.url, mode="binary") as client:
        assert client.call("fn.add", {"x": 1, "y": 2}) == ({"@enc_": client.encodings[900069279].ids,
                                                           "@bin_": [900069279]}, {"Ok_": {"result": 3}})
        assert client.call("fn.add", {"x": 1, "y": 2}) == ({"@bin_": [900069279]}, {"Ok_": {"result": 3}})
        assert client.call("fn.add", {"x": "no"})[1]["ErrorInvalidRequestBody_"]
    requests = [json.loads(request) for request, _ in wire]
    assert [r[0]["@bin_"] for r in requests] == [[], [900069279], [900069279]]
    first, steady, error = [response for _, response in wire]
    assert (len(first), len(steady)) == (474, 19)
    assert steady == msgpack.packb([{"@bin_": [900069279]}, {4: {31: 3}}])
    assert error[:1] == b"["


def test_binary_requests_use_integer_keys_after_negotiating(calculator_server):
    wire = calculator_server.recording.wire
    wire.clear()
    with Client(calculator_server.url, mode="binary-requests") as client:
        for _ in range(2):
            assert client.call("fn.add", {"x": 1.5, "y": 2})[1] == {"Ok_": {"result": 3.5}}
    (first, _), (second, _) = wire
    assert first[:1] == b"[" and msgpack.unpackb(second, strict_map_key=False) == [
        {"@time_": 5000, "@bin_": [900069279]}, {10: {42: 1.5, 43: 2}}]


def test_packed_tapes_with_unions_and_missing_cells_round_trip(calculator_server):
    """Packed rows with union columns and skipped cells unpack to the same tape as JSON."""
    headers = user()
    with Client(calculator_server.url) as plain, Client(calculator_server.url, mode="packed-requests") as packed:
        plain.call("fn.saveVariables", {"variables": {"x": 1, "zeta": 2}}, headers)
        for expression in ({"Variable": {"name": "missing"}},
                           {"Mul": {"left": {"Variable": {"name": "zeta"}}, "right": {"Constant": {"value": 3}}}},
                           {"Add": {"left": {"Variable": {"name": "x"}}, "right": {"Constant": {"value": 1}}}}):
            packed.call("fn.evaluate", {"expression": expression}, headers)
        for function in ("fn.getPaperTape", "fn.getVariables", "fn.getPaperTape"):
            assert packed.call(function, {}, headers)[1] == plain.call(function, {}, headers)[1]
    _, data = calculator_server.recording.wire[-2]
    assert msgpack.unpackb(data, strict_map_key=False)[1][4][35][0] == msgpack.ExtType(17, b"")


def test_the_documented_tape_sizes(calculator_server):
    """Two tape entries: 289 B in JSON, 527 B the first binary time, 72 B steadily (as the peer)."""
    headers = user()
    with Client(calculator_server.url) as client:
        client.call("fn.evaluate", {"expression": {"Add": {"left": {"Constant": {"value": 2}},
                                                           "right": {"Constant": {"value": 3}}}}}, headers)
        client.call("fn.evaluate", {"expression": {"Variable": {"name": "x"}}}, headers)
    connection = Connection(calculator_server.url)
    sizes = [len(connection.post(json.dumps([{**headers, **extra}, {"fn.getPaperTape": {}}]).encode())[2])
             for extra in ({}, {"@bin_": []}, {"@bin_": [900069279]}, {"@bin_": [], "@pac_": True},
                           {"@bin_": [900069279], "@pac_": True})]
    assert sizes == [289, 527, 72, 545, 90]


def test_steady_binary_is_smaller_than_json_for_every_function_with_a_result(calculator_server):
    headers = user()
    token_user = {"username": f"size-{uuid.uuid4().hex[:8]}"}
    calls = [("fn.saveVariable", {"name": "pi", "value": 3.14159}), ("fn.add", {"x": 1, "y": 2}),
             ("fn.getVariable", {"name": "pi"}), ("fn.getVariables", {}),
             ("fn.evaluate", {"expression": {"Variable": {"name": "pi"}}}), ("fn.getPaperTape", {}),
             ("fn.export", {}), ("fn.login", token_user), ("fn.api_", {})]
    with Client(calculator_server.url) as client:
        for function, arguments in calls[:1]:
            client.call(function, arguments, headers)
    connection = Connection(calculator_server.url)
    for function, arguments in calls[1:]:
        if function == "fn.login":
            token_user["username"] += "x"  # a fresh username for each of the two logins
        sizes = []
        for extra in ({}, {"@bin_": [900069279]}):
            if function == "fn.login":
                token_user["username"] += "y"
            sizes.append(len(connection.post(json.dumps([{**headers, **extra}, {function: arguments}]).encode())[2]))
        assert sizes[1] < sizes[0], function


def test_a_changed_schema_is_renegotiated(calculator_server):
    """Restarted with another schema, the server refuses the old checksum; the client recovers."""
    other = Recording(Service(ECHO, {"fn.echo": echo}))
    with serving(calculator.service()) as server:
        with Client(server.url, mode="binary-requests") as client:
            client.call("fn.ping_")
            client.call("fn.ping_")
            old = client.checksum
            server.service = other
            assert client.call("fn.echo", {"n!": 4})[1]["Ok_"]["n!"] == 4
            assert client.checksum != old and len(other.wire) == 2
            assert json.loads(other.wire[0][1])[1] == {"ErrorParseFailure_": {
                "reasons": [{"IncompatibleBinaryEncoding": {}}]}}


def test_an_idle_connection_closed_by_the_server_is_reopened():
    # A timeout long enough that the fresh connection is not itself closed on a loaded machine.
    with serving(calculator.service(), timeout=1) as server, Client(server.url) as client:
        client.call("fn.ping_")
        until(lambda: not server.visits)  # (the server has closed it)
        assert client.call("fn.ping_")[1] == {"Ok_": {}}


def test_transport_failures_are_typed_and_explained():
    with refusing() as url, pytest.raises(Unreachable, match=rf"cannot reach {url}: Connection refused"):
        Client(url).call("fn.ping_")
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/api"
        with pytest.raises(TimedOut, match=r"did not answer within 0.3 s"):
            Client(url, timeout=0.3).call("fn.ping_")
    with serving(calculator.service()) as server:
        with pytest.raises(NotAMessage, match="answered HTTP 404"):
            Client(server.url.replace("/api", "/other")).call("fn.ping_")
    with socket.socket() as garbled:  # a server that answers, but not in HTTP
        garbled.bind(("127.0.0.1", 0))
        garbled.listen()
        url = f"http://127.0.0.1:{garbled.getsockname()[1]}/api"

        def answer():
            connection, _ = garbled.accept()
            with connection:
                connection.recv(65536)
                connection.sendall(b"garbage\r\n\r\n")
        threading.Thread(target=answer, daemon=True).start()
        with pytest.raises(NotAMessage, match=r"answered with something that is not HTTP: BadStatusLine"):
            Client(url, timeout=5).call("fn.ping_")
    with pytest.raises(ValueError, match="not an http:// or https:// URL"):
        Client("ftp://example.com/api")


def test_an_answer_that_is_not_a_message_is_reported(monkeypatch):
    """200 with garbage is not a message."""
    class Garbage:
        def handle(self, data, client=""):
            from reference.protocol.service import Reply
            return Reply(b"<html>oops</html>", "text/html", "", "")
    with serving(Garbage()) as server:
        with pytest.raises(NotAMessage, match="not a message"):
            Client(server.url).call("fn.ping_")


class Answering:
    """A server that answers every request with the same bytes, whatever it is asked."""

    def __init__(self, data):
        self.data = data

    def handle(self, data, client=""):
        from reference.protocol.service import Reply
        return Reply(self.data, "application/json", "", "")


@pytest.mark.parametrize("answer, says", [
    (b'[{}, {"Ok_": {}, "ErrorX": {}}]', "not one result tag holding an object"),
    (b'[{}, {"Ok_": 5}]', "not one result tag holding an object"),
    (b'[{}, {}]', "not one result tag holding an object"),
    (b'[{"@base64_": {"Ok_": {"b": true}}}, {"Ok_": {"b": "!!!"}}]', "marked as bytes in @base64_, but is not base64"),
    (b'[{"@base64_": {"Ok_": {"b": {"*": true}}}}, {"Ok_": {"b": ["AQ==", "A"]}}]', "is not base64"),
    (b'[{}, {"Ok_": {"s": "\\ud800"}}]', "not a message"),
])
def test_an_answer_a_server_would_refuse_as_a_request_is_not_a_message(answer, says):
    """The client is as strict about answers as a server is about requests."""
    with serving(Answering(answer)) as server:
        with pytest.raises(NotAMessage, match=says):
            Client(server.url).call("fn.ping_")


MALFORMED = [
    ("truncated", msgpack.packb([{"@bin_": [900069279]}, {22: {}}])[:-3]),
    ("array of three", msgpack.packb([{"@bin_": [900069279]}, {22: {}}, {}])),
    ("body not a map", msgpack.packb([{"@bin_": [900069279]}, [22]])),
    ("headers not a map", msgpack.packb([[1], {22: {}}])),
    ("huge string length", b"\x92\x81\xa5@bin_\x91\xce\x35\xa5\xf7\x9f\xdb\xff\xff\xff\xff"),
    ("huge map length", b"\x92\xdf\xff\xff\xff\xff"),
    ("huge array length", b"\x92\x80\xdd\xff\xff\xff\xff"),
    ("unknown ext type", msgpack.packb([{"@bin_": [900069279]}, {22: {"x": msgpack.ExtType(42, b"?")}}])),
    ("timestamp ext", msgpack.packb([{"@bin_": [900069279], "@id_": msgpack.Timestamp(1, 0)}, {22: {}}])),
    ("reserved byte", b"\x92\x80\xc1"),
    ("invalid utf-8", b"\x92\x80\x81\xa3\xff\xfe\xfd\x80"),
    ("deep nesting", msgpack.packb([{"@bin_": [900069279]}, {22: {}}])[:-1] + b"\x81\xa1a" + b"\x91" * 2000 + b"\x01"),
    ("unknown id", msgpack.packb([{"@bin_": [900069279]}, {9999: {}}])),
    ("float key", msgpack.packb([{"@bin_": [900069279]}, {1.5: {}}])),
    ("array key", b"\x92\x81\xa5@bin_\x91\xce\x35\xa5\xf7\x9f\x81\x91\x01\x80"),
    ("wrong checksum", msgpack.packb([{"@bin_": [1]}, {22: {}}])),
    ("no checksum", msgpack.packb([{}, {22: {}}])),
    ("NaN", msgpack.packb([{"@bin_": [900069279]}, {10: {42: float("nan"), 43: 1}}])),
]


@pytest.mark.parametrize("name, data", MALFORMED, ids=[name for name, _ in MALFORMED])
def test_malformed_messagepack_is_a_clean_parse_failure(calculator_server, name, data):
    """Whatever is wrong with the MessagePack, the answer is ErrorParseFailure_ and nothing else."""
    connection = Connection(calculator_server.url)
    status, headers, response = connection.post(data)
    assert status == 200 and headers["Content-Type"] == "application/json"
    assert list(json.loads(response)[1]) == ["ErrorParseFailure_"]
    assert connection.post(b'[{}, {"fn.ping_": {}}]')[2] == b'[{}, {"Ok_": {}}]'


@pytest.mark.parametrize("shape", DRIPS)
def test_a_slow_answer_times_out_within_the_timeout_however_slowly_it_trickles(shape):
    """The timeout bounds the whole exchange, not each read: a piece every 0.2 s, or an endless
    stream of 100 Continue, does not keep it waiting."""
    started = time.monotonic()
    with pytest.raises(TimedOut), Client(dripping(shape), timeout=1) as client:
        client.call("fn.ping_")
    assert time.monotonic() - started < 30  # the 1 s deadline (with room on a busy machine), not the 120 s drip


@pytest.mark.parametrize("framing", [b"Content-Length: 100000000000\r\n", b"Connection: close\r\n"])
def test_an_answer_over_the_limit_is_refused_without_reading_it_all(framing):
    with pytest.raises(TooLarge, match=r"answered more than 100000 bytes, the most this client reads"):
        Client(endless(framing), max_response=100_000, timeout=10).call("fn.ping_")


def test_https_with_a_private_certificate_authority(tls):
    """Certificates are checked: against a private CA given as cafile the call goes through; without
    it, or for another host name, the error names the certificate problem."""
    context, cafile, _ = tls
    with serving(calculator.service(), tls=context) as server:
        url = server.url.replace("http://", "https://")
        with Client(url, cafile=cafile, mode="binary") as client:
            assert client.call("fn.add", {"x": 1, "y": 2})[1] == {"Ok_": {"result": 3}}
            assert client.call("fn.add", {"x": 1, "y": 2})[1] == {"Ok_": {"result": 3}}
        with pytest.raises(Untrusted, match=r"its certificate is not trusted \(unable to get local issuer "
                                            r"certificate\)$"):
            Client(url).call("fn.ping_")
        with pytest.raises(Untrusted, match=r"Hostname mismatch"):
            Client(url.replace("127.0.0.1", "localhost"), cafile=cafile).call("fn.ping_")
    with pytest.raises(ValueError, match="cannot use /nowhere/ca.pem as certificate authorities"):
        Client("https://127.0.0.1/api", cafile="/nowhere/ca.pem")


def test_a_scheme_that_does_not_match_the_server_gets_a_hint_and_the_server_says_why(tls, caplog):
    """http:// to an HTTPS server, https:// to a plain one: one line each, saying what to try; the
    HTTPS server logs the failed handshake (at info), and goes on serving."""
    context, cafile, _ = tls
    caplog.set_level(logging.INFO, logger="reference")
    with serving(calculator.service(), tls=context) as secure, serving(calculator.service()) as plain:
        with pytest.raises(Unreachable, match=r"closed the connection without answering \(an HTTPS server does "
                                              r"that to plain HTTP: is it an https:// URL\?\)$"):
            Client(secure.url.replace("https://", "http://")).call("fn.ping_")
        with pytest.raises(Unreachable, match=r"it does not speak TLS \(is it an http:// URL\?\)$"):
            Client(plain.url.replace("http://", "https://"), cafile=cafile).call("fn.ping_")
        with Client(secure.url, cafile=cafile) as client:
            assert client.call("fn.ping_")[1] == {"Ok_": {}}
    assert any("the TLS handshake failed" in record.getMessage() and record.levelno == logging.INFO
               for record in caplog.records)

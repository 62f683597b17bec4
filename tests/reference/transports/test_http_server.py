"""The bundled HTTP transport (transports/http_server.py, and the guard that serves by default), over
real sockets: keep-alive, statuses, framing, limits, timeouts and stopping."""

import http.client
import json
import select
import socket
import subprocess
import sys
import threading
import time

import pytest

from reference import engine, load, protocol
from reference.engine import guard
from reference.services import calculator
from reference.transports import admission
from tests.support.servers import Connection, raw, serving, until

PING = b'[{}, {"fn.ping_": {}}]'


@pytest.fixture(scope="module")
def server():
    with serving(calculator.service(), max_body=1000, timeout=0.5) as server:
        yield server


def test_requests_share_one_kept_alive_connection(server):
    """HTTP/1.1 keep-alive: many requests, one socket, no stalls."""
    connection = Connection(server.url)
    assert connection.post(PING)[0] == 200
    sock = connection.http.sock
    times = []
    for _ in range(50):
        started = time.perf_counter()
        status, headers, data = connection.post(b'[{}, {"fn.add": {"x": 1, "y": 2}}]')
        times.append(time.perf_counter() - started)
        assert (status, data) == (200, b'[{}, {"Ok_": {"result": 3}}]')
    # Without TCP_NODELAY and a single write, each response would wait ~40 ms for a delayed ACK;
    # the median is immune to the odd request that a loaded machine delays.
    assert sorted(times)[25] < 0.02
    assert connection.http.sock is sock


def test_every_envelope_is_http_200_with_its_media_type(server):
    """Errors travel inside the envelope; the media type says JSON or MessagePack."""
    connection = Connection(server.url)
    for data in (b"garbage", b'[{}, {"fn.nope": {}}]', PING):
        status, headers, _ = connection.post(data)
        assert (status, headers["Content-Type"]) == (200, "application/json")
    status, headers, data = connection.post(b'[{"@bin_": []}, {"fn.ping_": {}}]')
    assert (status, headers["Content-Type"], data[:1]) == (200, "application/octet-stream", b"\x92")


def test_a_query_string_does_not_change_the_path(server):
    connection = Connection(server.url + "?trace=1")
    assert connection.post(PING)[0] == 200


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"])
def test_other_methods_get_405_with_allow_post(server, method):
    """Only POST is allowed on the API path."""
    connection = http.client.HTTPConnection(*server.server_address[:2], timeout=5)
    connection.request(method, server.path)
    response = connection.getresponse()
    assert (response.status, response.headers["Allow"]) == (405, "POST")
    assert response.read() == (b"" if method == "HEAD" else b"Only POST is allowed\n")


@pytest.mark.parametrize("method", ["POST", "GET"])
def test_other_paths_get_404(server, method):
    connection = http.client.HTTPConnection(*server.server_address[:2], timeout=5)
    connection.request(method, "/other", body=PING if method == "POST" else None)
    response = connection.getresponse()
    assert response.status == 404 and b"the API is at /api" in response.read()


def test_a_refused_body_is_never_read_as_the_next_request(server):
    """A POST refused before its body is read closes the connection, so the body cannot be
    mistaken for another request on a kept-alive connection."""
    with socket.create_connection(server.server_address[:2], timeout=5) as sock:
        sock.sendall(b"POST /other HTTP/1.1\r\nContent-Length: 22\r\n\r\n" + PING
                     + b"GET /api HTTP/1.1\r\n\r\n")
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 404") and answer.count(b"HTTP/1.1") == 1
    assert b"Connection: close" in answer


@pytest.mark.parametrize("request_, status", [
    (b"POST /api HTTP/1.1\r\nHost: x\r\n\r\n", b"411"),
    (b"POST /api HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", b"411"),
    (b"POST /api HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n", b"400"),
    (b"POST /api HTTP/1.1\r\nHost: x\r\nContent-Length: ten\r\n\r\n", b"400"),
    (b"POST /api HTTP/1.1\r\nHost: x\r\nContent-Length: 1001\r\n\r\n" + b"x" * 1001, b"413"),
    (b"POST /api HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n", b"413"),
    (b"GARBAGE\r\n\r\n", b"400"),
    (b"POST /api HTTP/9.9\r\nHost: x\r\n\r\n", b"505"),
])
def test_http_problems_get_an_http_status_and_a_closed_connection(server, request_, status):
    """Without a usable body there is no message: the status explains, and the socket closes."""
    response = raw(server, request_)
    assert response.split(b" ")[1] == status


def test_a_body_at_the_limit_is_read_and_answered(server):
    frame = b'[{"@id_": ""}, {"fn.ping_": {}}]'
    body = frame.replace(b'""', b'"' + b"x" * (1000 - len(frame)) + b'"')
    assert len(body) == 1000
    status, _, data = Connection(server.url).post(body)
    assert status == 200 and json.loads(data)[1] == {"Ok_": {}}


def test_a_body_shorter_than_its_length_closes_the_connection(server):
    """The client hung up early; nothing is answered, and the server keeps serving."""
    raw(server, b"POST /api HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n[{}", read=False)
    assert Connection(server.url).post(PING)[0] == 200


def test_a_stalled_client_is_cut_off_and_does_not_block_others(server):
    """A client that stops mid-request loses its connection after the timeout."""
    with socket.create_connection(server.server_address[:2], timeout=5) as stalled:
        stalled.sendall(b"POST /api HTTP/1.1\r\nContent-Length: 50\r\n\r\n[{}")
        assert Connection(server.url).post(PING)[0] == 200
        started = time.perf_counter()
        assert stalled.recv(100) == b""
        assert time.perf_counter() - started < 3


def test_idle_connections_give_their_slots_to_newcomers():
    """Kept-alive connections waiting for their next request never lock a newcomer out."""
    with serving(calculator.service(), max_connections=3, timeout=5) as server:
        idle = [Connection(server.url) for _ in range(3)]
        for connection in idle:
            assert connection.post(PING)[0] == 200
        # (an answer can be read before its thread has said it is idle again)
        until(lambda: all(visit.state == "idle" for visit in list(server.visits.values())))
        assert Connection(server.url).post(PING)[0] == 200
        assert Connection(server.url).post(PING)[0] == 200


def test_when_every_slot_is_taken_a_slow_sender_gives_way_and_else_a_newcomer_gets_503():
    """Connections that have not sent a whole request give their places to newcomers; requests at
    work keep theirs, and a newcomer then gets 503."""
    held = Held()
    with serving(held, max_connections=3, timeout=5) as server:
        arriving = [socket.create_connection(server.server_address[:2], timeout=5) for _ in range(3)]
        for sock in arriving:
            sock.sendall(b"POST /api HTTP/1.1\r\n")  # the headers never come
        until(lambda: len(server.visits) == 3)  # (every place taken)
        assert Connection(server.url).post(PING)[0] == 200
        until(lambda: any(map(closed, arriving)))  # one that never sent a whole request gave way
        working = []
        for count in range(1, 4):  # (one after another: a newcomer whose bytes the busy server has not read
            working.append(send(server, LARGE_PING))  # yet is an idle connection, which the next may replace)
            until(lambda: held.waiting == count)  # (each at work in the service, its place held)
        refused = raw(server, b"POST /api HTTP/1.1\r\nContent-Length: 22\r\n\r\n" + PING)
        assert refused.startswith(b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\n")
        held.go.set()
        for sock in arriving + working:
            sock.close()


def test_a_whole_request_must_arrive_within_the_timeout_however_it_trickles():
    """A header line every 0.3 s keeps each read short, but the request as a whole is cut off."""
    with serving(calculator.service(), timeout=1) as server:
        with socket.create_connection(server.server_address[:2], timeout=5) as sock:
            started = time.perf_counter()
            sock.sendall(b"POST /api HTTP/1.1\r\n")
            try:
                for n in range(20):
                    time.sleep(0.3)
                    sock.sendall(b"X-Slow-%d: 1\r\n" % n)
            except OSError:
                pass
            assert sock.recv(100) == b""
            assert time.perf_counter() - started < 3


@pytest.fixture(scope="module")
def plain_server():
    with serving(calculator.service(protocol.Service), plain=True, max_body=1000, timeout=0.5) as server:
        yield server


@pytest.mark.parametrize("transport", ["server", "plain_server"])
@pytest.mark.parametrize("request_, status, explanation", [
    (b"POST /api HTTP/1.1\r\nContent-Length: 22\r\nTransfer-Encoding: chunked\r\n\r\n" + PING,
     b"400", b"Transfer-Encoding and Content-Length together are ambiguous"),
    (b"POST /api HTTP/1.1\r\nContent-Length: 22\r\nContent-Length: 5\r\n\r\n" + PING,
     b"400", b"A request has one Content-Length header"),
    (b"POST /api HTTP/1.1\r\nHost: x\r\nNoColonHere\r\nContent-Length: 22\r\n\r\n" + PING,
     b"400", b"A header line is malformed"),
    ("POST /api HTTP/1.1\r\nContent-Length: \u00b2\r\n\r\n".encode(), b"400", b"not a number"),
    (b"POST /api HTTP/1.1\r\nContent-Length: \xb2\r\n\r\n", b"400", b"not a number"),  # a digit, but not ASCII
    (b"POST /api HTTP/1.1\r\nContent-Length: " + b"9" * 5000 + b"\r\n\r\n", b"413", b"over the limit"),
    # Header lines RFC 9112 refuses: a bare CR would hide the Content-Length behind it from a front
    # that splits lines on CRLF, which would then see the request below as a second one.
    (b"POST /api HTTP/1.1\r\nX: a\rContent-Length: 73\r\n\r\n", b"400", b"a CR that does not end it"),
    (b"POST /api HTTP/1.1\r\nX: a\0b\r\nContent-Length: 22\r\n\r\n" + PING, b"400", b"a NUL byte"),
    (b"POST /api HTTP/1.1\r\nX: a\r\n b\r\nContent-Length: 22\r\n\r\n" + PING, b"400", b"folded onto the one before"),
    (b"POST /api HTTP/1.1\r\nContent-Length : 22\r\n\r\n" + PING, b"400", b"a blank before its colon"),
])
def test_ambiguous_framing_is_refused_and_nothing_smuggled_runs(transport, request_, status, explanation, request):
    """Each shape gets its status and one answer only, on either transport: what follows is never read
    as a request."""
    server = request.getfixturevalue(transport)
    smuggled = b'POST /api HTTP/1.1\r\nContent-Length: 40\r\n\r\n[{}, {"fn.saveVariable": {"name": "s"}}]'
    response = raw(server, request_ + smuggled)
    assert response.split(b" ")[1] == status and explanation in response
    assert response.count(b"HTTP/1.1 ") == 1 and b"Connection: close" in response


def test_expect_100_continue_is_refused_before_any_body_is_invited(server):
    with socket.create_connection(server.server_address[:2], timeout=5) as sock:
        sock.sendall(b"POST /api HTTP/1.1\r\nContent-Length: 5000\r\nExpect: 100-continue\r\n\r\n")
        assert sock.recv(1000).startswith(b"HTTP/1.1 413")
    with socket.create_connection(server.server_address[:2], timeout=5) as sock:
        sock.sendall(b"POST /api HTTP/1.1\r\nContent-Length: 22\r\nExpect: 100-continue\r\n\r\n")
        assert sock.recv(1000) == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(PING)
        assert sock.recv(1000).startswith(b"HTTP/1.1 200")


def test_a_client_still_sending_a_refused_body_reads_the_refusal():
    """The server reads and drops the rest of an oversized body for a moment before it closes."""
    with serving(calculator.service(), max_body=1000) as server:
        with socket.create_connection(server.server_address[:2], timeout=5) as sock:
            sock.sendall(b"POST /api HTTP/1.1\r\nContent-Length: 3000000\r\n\r\n")
            for _ in range(300):  # 3 MB, sent after the server has answered
                sock.sendall(b"x" * 10_000)
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
    assert answer.startswith(b"HTTP/1.1 413")


def test_an_ipv6_address_is_served():
    """--host ::1 listens on IPv6, and the URL the server reports brackets the address."""
    with serving(calculator.service(), host="::1") as server:
        assert server.url.startswith("http://[::1]:")
        assert Connection(server.url).call([{}, {"fn.ping_": {}}]) == [{}, {"Ok_": {}}]


def test_a_header_block_over_the_limit_gets_431_and_a_closed_connection(server):
    """Header lines are limited in all, not only one by one: 20 lines of 4 KB are too many."""
    lines = b"".join(b"X-Filler-%d: %s\r\n" % (n, b"a" * 4000) for n in range(20))
    response = raw(server, b"POST /api HTTP/1.1\r\n" + lines + b"Content-Length: 22\r\n\r\n" + PING)
    assert response.startswith(b"HTTP/1.1 431 Request Header Fields Too Large\r\n")
    assert b"Connection: close" in response and b"431 Line too long: the header lines are over 65536 bytes in all\n" in response
    fewer = b"".join(b"X-Filler-%d: %s\r\n" % (n, b"a" * 4000) for n in range(15))
    response = raw(server, b"POST /api HTTP/1.1\r\nConnection: close\r\n" + fewer + b"Content-Length: 22\r\n\r\n" + PING)
    assert response.startswith(b"HTTP/1.1 200 ")


def test_an_absolute_form_target_is_served_like_its_path(server):
    host = "%s:%d" % server.server_address[:2]
    for target, status in [(f"http://{host}/api", b"200"), (f"http://{host}/api?x=1", b"200"),
                           (f"http://{host}/other", b"404"), (f"http://{host}", b"404")]:
        response = raw(server, f"POST {target} HTTP/1.1\r\nConnection: close\r\n".encode()
                       + b"Content-Length: 22\r\n\r\n" + PING)
        assert response.split(b" ")[1] == status, target


class Held:
    """The calculator, except that requests over LARGE bytes wait until `go` is set."""

    def __init__(self):
        self.go, self.service = threading.Event(), calculator.service()
        self.waiting, self.lock = 0, threading.Lock()  # large requests held there so far

    def handle(self, data, client=""):
        if len(data) > admission.LARGE:
            with self.lock:
                self.waiting += 1
            self.go.wait(10)
        return self.service.handle(data)


LARGE_PING = b'[{"@id_": "%s"}, {"fn.ping_": {}}]' % (b"x" * 20_000)


def closed(sock):
    """Whether the server closed `sock` (asked without waiting, and without reading what it holds)."""
    return bool(select.select([sock], [], [], 0)[0]) and sock.recv(1, socket.MSG_PEEK) == b""


def send(server, data):
    sock = socket.create_connection(server.server_address[:2], timeout=10)
    sock.sendall(b"POST /api HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % len(data) + data)
    return sock


def test_large_requests_queue_in_bounds_and_small_ones_are_always_served():
    """QUEUE large requests are admitted; the next is refused with 503 before its body is read,
    and a small request is answered at once all the while."""
    held = Held()
    with serving(held, max_connections=20) as server:
        queued = [send(server, LARGE_PING) for _ in range(admission.QUEUE)]
        until(lambda: held.waiting == admission.QUEUE)  # every large one held by the service
        refused = raw(server, b"POST /api HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % len(LARGE_PING) + LARGE_PING)
        assert refused.startswith(b"HTTP/1.1 503 ") and b"Retry-After: 1" in refused
        assert b"Too many large requests at once" in refused
        started = time.perf_counter()
        assert Connection(server.url).post(PING)[0] == 200
        assert time.perf_counter() - started < 5  # not after the large ones: they are held until the end
        held.go.set()
        assert all(sock.recv(100).startswith(b"HTTP/1.1 200 ") for sock in queued)
        for sock in queued:
            sock.close()


def test_a_costly_request_that_waits_too_long_for_its_turn_gets_503():
    """The engine's Service gives costly requests one turn: a second waits for it, and is refused
    with 503 if it waits too long; cheap requests are answered all the while."""
    go = threading.Event()
    schema = load([{"fn.slow": {"pad": "string"}, "->": [{"Ok_": {}}]}])
    service = engine.Service(schema, {"fn.slow": lambda arguments, headers: go.wait(10) and {"Ok_": {}}})
    service.admission.wait = 0.3
    large = b'[{}, {"fn.slow": {"pad": "%s"}}]' % (b"x" * 20_000)
    with serving(service) as server:
        first = send(server, large)
        until(lambda: service.admission.owner is not None)  # the first holds the turn
        waiting = send(server, large)
        answer = waiting.recv(1000)
        assert answer.startswith(b"HTTP/1.1 503 ") and b"The server is busy" in answer
        assert Connection(server.url).post(PING)[0] == 200
        go.set()
        assert first.recv(100).startswith(b"HTTP/1.1 200 ")
        first.close()
        waiting.close()


class Broken:
    """A service with a bug: it raises instead of answering."""

    def handle(self, data, client=""):
        raise RuntimeError("a bug")


def test_a_service_that_raises_gets_500_and_the_server_keeps_serving():
    with serving(Broken()) as server:
        for _ in range(2):
            response = raw(server, b"POST /api HTTP/1.1\r\nContent-Length: 22\r\n\r\n" + PING)
            assert response.startswith(b"HTTP/1.1 500 ") and b"Connection: close" in response


def test_stopping_answers_the_requests_in_flight_and_closes_idle_connections():
    """stop(): no new connections, idle ones closed, what is in flight answered with Connection: close."""
    held = Held()
    server = guard.Server(held, port=0)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    idle = Connection(server.url)
    assert idle.post(PING)[0] == 200
    in_flight = send(server, LARGE_PING)
    until(lambda: held.waiting == 1)  # (at work in the service)
    threading.Timer(0.3, held.go.set).start()  # (its work ends within the grace)
    started = time.perf_counter()
    assert server.stop(grace=5) == 0
    assert time.perf_counter() - started < 4  # the request ended the wait, not the grace period
    answer = in_flight.recv(1000)
    assert answer.startswith(b"HTTP/1.1 200 ") and b"Connection: close" in answer
    assert idle.http.sock.recv(100) == b""
    with pytest.raises(OSError):
        socket.create_connection(server.server_address[:2], timeout=1)


def test_stopping_cuts_off_what_is_still_in_flight_after_the_grace():
    held = Held()
    server = guard.Server(held, port=0)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    in_flight = send(server, LARGE_PING)
    until(lambda: held.waiting == 1)  # (at work in the service)
    assert server.stop(grace=0.3) == 1
    assert in_flight.recv(1000) == b""
    held.go.set()


def test_a_server_used_as_a_library_says_where_it_serves():
    """Without logging set up, serve_forever() still tells its user the URL, on standard error."""
    code = ("import threading, time\nfrom reference import Server\nfrom reference.services import calculator\n"
            "server = Server(calculator.service(), port=0)\n"
            "threading.Thread(target=server.shutdown).start()\nserver.serve_forever()\n")  # (it waits for it)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert run.returncode == 0 and run.stderr.startswith("Serving at http://127.0.0.1:")


@pytest.mark.parametrize("blank", [b"\r\n", b"\r\n\r\n", b"\n"])
def test_empty_lines_before_a_request_line_are_ignored_and_the_requests_behind_them_answered(server, blank):
    """RFC 9112, section 2.2: a server should ignore at least one empty line before a request line."""
    request = b"POST /api HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(PING), PING)
    with socket.create_connection(server.server_address[:2], timeout=5) as sock:
        sock.sendall(request + blank + request)
        answers = b""
        while answers.count(b'[{}, {"Ok_": {}}]') < 2:
            chunk = sock.recv(65536)
            assert chunk, answers
            answers += chunk
        assert answers.count(b"HTTP/1.1 200 OK") == 2

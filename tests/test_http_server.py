"""The HTTP transport, over real sockets: keep-alive, statuses, timeouts, and the command line."""

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from conftest import Connection, serving
from reference import calculator

PING = b'[{}, {"fn.ping_": {}}]'


@pytest.fixture(scope="module")
def server():
    with serving(calculator.service(), max_body=1000, timeout=0.5) as server:
        yield server


def raw(server, data, read=True):
    """Send raw bytes on a new socket; return everything the server sends until it closes."""
    with socket.create_connection(server.server_address[:2], timeout=5) as sock:
        sock.sendall(data)
        if not read:
            return b""
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
        return b"".join(chunks)


def test_requests_share_one_kept_alive_connection(server):
    """HTTP/1.1 keep-alive: many requests, one socket, no stalls."""
    connection = Connection(server.url)
    assert connection.post(PING)[0] == 200
    sock = connection.http.sock
    started = time.perf_counter()
    for _ in range(50):
        status, headers, data = connection.post(b'[{}, {"fn.add": {"x": 1, "y": 2}}]')
        assert (status, data) == (200, b'[{}, {"Ok_": {"result": 3}}]')
    # Without TCP_NODELAY and a single write, each response would wait ~40 ms for a delayed ACK.
    assert time.perf_counter() - started < 1.0
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


def run_cli(*args, **options):
    return subprocess.run([sys.executable, "-m", "reference.server", *args], capture_output=True,
                           text=True, timeout=20, **options)


@pytest.mark.parametrize("args, message", [
    (["--port", "abc"], "argument --port: invalid int value: 'abc'"),
    (["--unavailable-rate", "2"], "argument --unavailable-rate: '2' is not a number between 0 and 1"),
    (["--path", "api"], "--path must start with /"),
    (["--log-level", "loud"], "argument --log-level: invalid choice: 'loud'"),
    (["--nope"], "unrecognized arguments: --nope"),
    (["--service", "nope"], "argument --service: invalid choice: 'nope'"),
    (["--max-body", "0"], "--max-body must be positive"),
])
def test_bad_command_lines_are_one_line_and_exit_2(args, message):
    result = run_cli(*args)
    assert result.returncode == 2 and result.stderr.startswith("python -m reference.server: error: ")
    assert message in result.stderr and result.stderr.count("\n") == 1, result.stderr


def test_help_describes_every_option():
    result = run_cli("--help")
    assert result.returncode == 0
    for option in ("--host", "--port", "--path", "--log-level", "--unavailable-rate", "--max-body"):
        assert option in result.stdout


def test_a_busy_port_is_a_one_line_error():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        result = run_cli("--port", str(taken.getsockname()[1]), "--log-level", "WARNING")
    assert result.returncode == 2
    assert result.stderr.startswith("error: cannot listen on 127.0.0.1:") and "Traceback" not in result.stderr


def test_the_server_prints_its_url_logs_requests_and_stops_on_ctrl_c():
    """`python -m reference.server` serves the calculator until SIGINT, then exits 0."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, "-m", "reference.server", "--port", str(port)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline()
        assert line == f"Serving the calculator at http://127.0.0.1:{port}/api (Ctrl-C to stop)\n"
        connection = Connection(f"http://127.0.0.1:{port}/api")
        assert connection.call([{}, {"fn.add": {"x": 1, "y": 2}}]) == [{}, {"Ok_": {"result": 3}}]
        connection.http.close()
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=10)
    finally:
        process.kill()
    assert process.returncode == 0 and out == "Stopped.\n"
    assert "POST fn.add -> Ok_ 28B" in err and "Traceback" not in err


def test_idle_connections_give_their_slots_to_newcomers():
    """Kept-alive connections waiting for their next request never lock a newcomer out."""
    with serving(calculator.service(), max_connections=3, timeout=5) as server:
        idle = [Connection(server.url) for _ in range(3)]
        for connection in idle:
            assert connection.post(PING)[0] == 200
        assert Connection(server.url).post(PING)[0] == 200
        assert Connection(server.url).post(PING)[0] == 200


def test_when_every_slot_is_busy_a_newcomer_gets_503_until_a_request_stalls():
    """Requests still arriving keep their slots for a second; then a newcomer may take one."""
    with serving(calculator.service(), max_connections=3, timeout=2) as server:
        arriving = [socket.create_connection(server.server_address[:2], timeout=5) for _ in range(3)]
        for sock in arriving:
            sock.sendall(b"POST /api HTTP/1.1\r\n")  # the headers never come
        time.sleep(0.2)
        refused = raw(server, b"POST /api HTTP/1.1\r\nContent-Length: 22\r\n\r\n" + PING)
        assert refused.startswith(b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\n")
        time.sleep(1.2)
        assert Connection(server.url).post(PING)[0] == 200
        assert [sock.recv(100) for sock in arriving].count(b"") >= 1  # the oldest gave way
        for sock in arriving:
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


@pytest.mark.parametrize("request_, status, explanation", [
    (b"POST /api HTTP/1.1\r\nContent-Length: 22\r\nTransfer-Encoding: chunked\r\n\r\n" + PING,
     b"400", b"Transfer-Encoding and Content-Length together are ambiguous"),
    (b"POST /api HTTP/1.1\r\nContent-Length: 22\r\nContent-Length: 5\r\n\r\n" + PING,
     b"400", b"A request has one Content-Length header"),
    (b"POST /api HTTP/1.1\r\nHost: x\r\nNoColonHere\r\nContent-Length: 22\r\n\r\n" + PING,
     b"400", b"A header line is malformed"),
    ("POST /api HTTP/1.1\r\nContent-Length: \u00b2\r\n\r\n".encode(), b"400", b"not a number"),
    (b"POST /api HTTP/1.1\r\nContent-Length: " + b"9" * 5000 + b"\r\n\r\n", b"413", b"over the limit"),
])
def test_ambiguous_framing_is_refused_and_nothing_smuggled_runs(server, request_, status, explanation):
    """Each shape gets its status and one answer only: what follows is never read as a request."""
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


def test_every_limit_has_a_command_line_option():
    result = run_cli("--help")
    for option in ("--max-connections", "--timeout", "--max-namespaces", "--max-sessions", "--max-variables",
                   "--tape-length"):
        assert option in result.stdout
    assert run_cli("--max-connections", "0").returncode == 2
    assert "--tape-length: '0' is not a positive integer" in run_cli("--tape-length", "0").stderr


def test_an_ipv6_address_is_served():
    """--host ::1 listens on IPv6, and the URL the server reports brackets the address."""
    with serving(calculator.service(), host="::1") as server:
        assert server.url.startswith("http://[::1]:")
        assert Connection(server.url).call([{}, {"fn.ping_": {}}]) == [{}, {"Ok_": {}}]


def test_the_testbed_is_served_and_calculator_options_are_refused_with_it():
    """--service testbed serves the suite's schema; calculator limits make no sense there."""
    assert "--service {calculator,testbed}" in run_cli("--help").stdout
    result = run_cli("--service", "testbed", "--tape-length", "5")
    assert result.returncode == 2
    assert "--tape-length is an option of the calculator, not of the testbed" in result.stderr

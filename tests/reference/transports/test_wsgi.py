"""The WSGI application, served by wsgiref over real sockets."""

import http.client
import io
import json
import socket
import threading
import time
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import pytest

from reference import engine, load
from reference.services import calculator
from reference.transports import admission
from reference.transports.http_client import Client
from reference.transports.wsgi import make_application
from tests.support.servers import until


class QuietHandler(WSGIRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def address():
    server = make_server("127.0.0.1", 0, make_application(calculator.service(), max_body=1000),
                         handler_class=QuietHandler)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    yield server.server_address
    server.shutdown()
    server.server_close()


def request(address, method, path="/api", body=None, headers=None):
    connection = http.client.HTTPConnection(*address, timeout=5)
    connection.request(method, path, body, headers or {})
    response = connection.getresponse()
    return response.status, response.headers, response.read()


def test_messages_get_answers(address):
    status, headers, data = request(address, "POST", body=b'[{}, {"fn.add": {"x": 1, "y": 2}}]')
    assert (status, headers["Content-Type"], json.loads(data)) == (200, "application/json", [{}, {"Ok_": {"result": 3}}])


def test_the_client_works_through_wsgi_in_every_mode(address):
    url = f"http://{address[0]}:{address[1]}/api"
    headers = {"@auth_": {"Ephemeral": {"username": "wsgi"}}}
    for options in ({}, {"mode": "binary"}, {"mode": "packed-requests"}):
        with Client(url, **options) as client:
            client.call("fn.saveVariable", {"name": "w", "value": 2}, headers)
            assert client.call("fn.getVariables", {}, headers)[1] == {"Ok_": {"variables": [{"name": "w", "value": 2}]}}
            assert client.call("fn.add", {"x": "1"})[1]["ErrorInvalidRequestBody_"]


@pytest.mark.parametrize("method, path, body, headers, status", [
    ("GET", "/api", None, {}, 405),
    ("POST", "/other", b"[]", {}, 404),
    ("POST", "/api", b"x" * 1001, {}, 413),
    ("POST", "/api", b"[]", {"Content-Length": "\u00b2"}, 400),
    ("POST", "/api", b"[]", {"Content-Length": "9" * 5000}, 413),
])
def test_http_problems_get_the_same_statuses_as_the_builtin_server(address, method, path, body, headers, status):
    answer = request(address, method, path, body, headers)
    assert answer[0] == status and answer[1]["Content-Type"] == "text/plain; charset=utf-8"
    if status == 405:
        assert answer[1]["Allow"] == "POST"


def test_escapes_after_deep_brackets_are_answered_at_once(address):
    """The shape that once froze the server for seconds is refused quickly through WSGI too."""
    body = b"[" * 1025 + b'"' + b'\\"' * 20_000
    started = time.perf_counter()
    assert request(address, "POST", "/api", body, {})[0] == 413  # over this server's 1000 bytes
    application = make_application(calculator.service())
    answer = application({"REQUEST_METHOD": "POST", "PATH_INFO": "/api", "CONTENT_LENGTH": str(len(body)),
                          "wsgi.input": io.BytesIO(body)}, lambda status, headers: None)
    assert b"ErrorParseFailure_" in b"".join(answer) and time.perf_counter() - started < 5


def test_a_request_without_content_length_gets_411(address):
    with socket.create_connection(address, timeout=5) as sock:
        sock.sendall(b"POST /api HTTP/1.0\r\nHost: x\r\n\r\n")
        assert sock.recv(100).startswith(b"HTTP/1.0 411 Length Required")


def test_running_the_module_says_what_to_do_instead():
    """`python -m reference.transports.wsgi` is no command: one line says how to serve, and the status is 2."""
    import subprocess
    import sys
    run = subprocess.run([sys.executable, "-m", "reference.transports.wsgi"], capture_output=True, text=True, timeout=30)
    assert run.returncode == 2 and run.stderr.count("\n") == 1
    assert run.stderr.startswith("python -m reference.transports.wsgi: error: ") and "reference.services.calculator:wsgi()" in run.stderr


class Threading(ThreadingMixIn, WSGIServer):
    daemon_threads = True


def test_large_requests_are_bounded_and_a_turn_not_given_in_time_is_a_503(monkeypatch):
    """As under the bundled server: QUEUE large requests at once (503 before the body is read beyond),
    and a costly request that waits too long for its turn gets 503 with Retry-After, not a 500."""
    go = threading.Event()
    schema = load([{"fn.slow": {"pad": "string"}, "->": [{"Ok_": {}}]}])
    service = engine.Service(schema, {"fn.slow": lambda arguments, headers: go.wait(20) and {"Ok_": {}}})
    service.admission.wait = 0.5
    server = make_server("127.0.0.1", 0, make_application(service), server_class=Threading, handler_class=QuietHandler)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    large = json.dumps([{}, {"fn.slow": {"pad": "x" * 20_000}}]).encode()
    head = b"POST /api HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(large)
    try:
        first = socket.create_connection(server.server_address, timeout=10)
        first.sendall(head + large)
        until(lambda: service.admission.owner is not None)  # (the first holds the turn)
        held = [socket.create_connection(server.server_address, timeout=10) for _ in range(admission.QUEUE - 1)]
        for sock in held:
            sock.sendall(head)  # their bodies never come: their places are held
        until(lambda: len(service.admission.large.held) == admission.QUEUE)
        assert request(server.server_address, "POST", body=large)[0] == 503  # the ninth
        for sock in held:
            sock.close()
        until(lambda: len(service.admission.large.held) == 1)  # (theirs given back)
        status, headers, body = request(server.server_address, "POST", body=large)  # waits for the first's turn
        assert (status, headers["Retry-After"]) == (503, "1") and b"busy" in body
        go.set()
        assert first.recv(100).startswith(b"HTTP/1.0 200 ")
        first.close()
    finally:
        server.shutdown()
        server.server_close()



@pytest.mark.parametrize("several, warned", [(True, 1), (False, 0)])
def test_several_processes_are_warned_of_at_the_first_request(several, warned, caplog):
    """What gunicorn says with several workers (wsgi.multiprocess), the calculator warns of once."""
    application = calculator.wsgi()
    server = make_server("127.0.0.1", 0, lambda environ, start: application(
        {**environ, "wsgi.multiprocess": several}, start), handler_class=QuietHandler)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        with caplog.at_level("WARNING", logger="reference"):
            for _ in range(3):
                assert Client(f"http://127.0.0.1:{server.server_address[1]}/api").call("fn.ping_")[1] == {"Ok_": {}}
    finally:
        server.shutdown()
        server.server_close()
    assert [r.getMessage()[:50] for r in caplog.records] == ["several worker processes serve this application, a"] * warned

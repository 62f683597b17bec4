"""The ASGI application, served by uvicorn over real sockets: the suite passes there as on our own server."""

import socket
import subprocess
import sys
import threading

import pytest

from conformance.__main__ import main
from reference import load, protocol
from reference.services import calculator, testbed
from reference.transports import admission, rules
from reference.transports.asgi import make_application
from reference.transports.http_client import Client
from tests.support import peer
from tests.support.servers import until, uvicorn_serving


@pytest.mark.parametrize("make, service", [(calculator.asgi, "the calculator"),
                                           (lambda: make_application(testbed.service()), "the testbed")])
def test_the_suite_passes_under_uvicorn(make, service, capsys):
    with uvicorn_serving(make()) as url:
        status = main(["run", "--target", url])
    out = capsys.readouterr().out
    assert status == 0 and out.startswith(f"Checking {url}: {service}. Running "), out
    assert " 0 failed" in out.splitlines()[-1]


def test_the_client_works_through_asgi_in_every_mode():
    with uvicorn_serving(calculator.asgi()) as url:
        for options in ({}, {"mode": "binary"}, {"mode": "packed-requests"}):
            with Client(url, **options) as client:
                assert client.call("fn.add", {"x": 1, "y": 2})[1] == {"Ok_": {"result": 3}}
                assert client.call("fn.add", {"x": 2, "y": 2})[1] == {"Ok_": {"result": 4}}


@pytest.mark.parametrize("request_, status", [
    (b"GET /api HTTP/1.1\r\nHost: x\r\n\r\n", b"405"),
    (b"POST /elsewhere HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n[]", b"404"),
    (b"POST /api HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n", b"413"),
    (b"POST /api HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n[]\r\n0\r\n\r\n", b"411"),
])
def test_http_problems_get_the_statuses_of_the_builtin_server(request_, status):
    with uvicorn_serving(calculator.asgi()) as url, \
            socket.create_connection(("127.0.0.1", int(url.split(":")[2].split("/")[0])), timeout=5) as sock:
        sock.sendall(request_)
        assert sock.recv(100).split(b" ")[1] == status


def test_running_the_module_says_what_to_do_instead():
    """`python -m reference.transports.asgi` is no command: one line says how to serve, and the status is 2."""
    run = subprocess.run([sys.executable, "-m", "reference.transports.asgi"], capture_output=True, text=True, timeout=30)
    assert run.returncode == 2 and run.stderr.count("\n") == 1
    assert run.stderr.startswith("python -m reference.transports.asgi: error: ") and "reference.services.calculator:asgi" in run.stderr


def post(url, data):
    """A socket on which `data` was POSTed to `url`, its answer to be read."""
    sock = socket.create_connection(("127.0.0.1", int(url.split(":")[2].split("/")[0])), timeout=10)
    sock.sendall(b"POST /api HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(data), data))
    return sock


def test_large_requests_take_their_turns_in_a_thread_of_their_own_within_bounds():
    """While a large request is answered, QUEUE - 1 more wait their turn without holding a worker thread
    (small requests are answered all the while), the next is refused 503 before its body is read, and
    one that waits past WAIT is answered 503 with Retry-After, as by the bundled server."""
    go, working = threading.Event(), threading.Event()
    schema = load([{"fn.slow": {"pad": "string"}, "->": [{"Ok_": {}}]}])
    service = protocol.Service(schema, {"fn.slow": lambda arguments, headers:
                                        working.set() or go.wait(20) and {"Ok_": {}}})
    service.admission = admission.Admission(wait=1)  # (the application takes its service's, if it has one)
    large = b'[{}, {"fn.slow": {"pad": "%s"}}]' % (b"x" * 20_000)
    with uvicorn_serving(make_application(service)) as url:
        first = post(url, large)
        until(working.is_set)  # (the first at work, in its turn)
        waiting = [post(url, large) for _ in range(admission.QUEUE - 1)]
        until(lambda: len(service.admission.large.held) == admission.QUEUE)  # (each holds a place)
        with post(url, large) as refused:
            assert refused.recv(1000).startswith(b"HTTP/1.1 503 ")
        for _ in range(10):  # more than the default executor's threads
            assert Client(url).call("fn.ping_", {})[1] == {"Ok_": {}}
        for sock in waiting:
            answer = sock.recv(1000)
            assert answer.startswith(b"HTTP/1.1 503 ") and b"retry-after: 1" in answer.lower(), answer
            sock.close()
        go.set()
        assert first.recv(100).startswith(b"HTTP/1.1 200 ")
        first.close()


def test_several_workers_are_warned_of_and_the_suite_notices_their_split_state(tmp_path, capsys):
    """uvicorn --workers 2: each worker says its state is its own, and a variable saved on one
    connection is missing on some of eight others, which the suite reports (calc.rule1)."""
    port = peer.free_port()
    process = subprocess.Popen([sys.executable, "-m", "uvicorn", "--factory", "reference.services.calculator:asgi",
                                "--workers", "2", "--port", str(port)], stderr=subprocess.PIPE, text=True)
    printed = []
    try:
        while sum("startup complete" in line for line in printed) < 2:
            printed.append(process.stderr.readline())
            assert printed[-1], "uvicorn did not start"
        status = main(["run", "--target", f"http://127.0.0.1:{port}/api", "--id", "calculator/variables/persist",
                       "--repeat", "3"])  # (one worker may take every connection of a run, not of three)
    finally:
        process.terminate()
        printed.append(process.communicate(timeout=30)[1])
    out = capsys.readouterr().out
    assert status == 1 and ("FAIL calculator/variables/persist" in out or "FLAKY calculator/variables/persist" in out)
    warned = "several worker processes serve this application, and each keeps its own variables, tapes and sessions"
    assert "".join(printed).count(warned) == 2


def test_one_worker_is_not_warned_of(caplog):
    with caplog.at_level("WARNING", logger="reference"):
        calculator.asgi()
    assert not caplog.records


@pytest.mark.parametrize("argv, environ, count", [
    (["uvicorn", "--factory", "m:app", "--workers", "3"], {}, 3),
    (["gunicorn", "-w", "4", "m:app"], {}, 4),
    (["gunicorn", "--workers=2", "m:app"], {}, 2),
    (["hypercorn", "m:app"], {"WEB_CONCURRENCY": "5"}, 5),
    (["uvicorn", "--workers", "2"], {"WEB_CONCURRENCY": "5"}, 2),  # the command line wins
    (["python", "-m", "reference.server"], {}, 1),
    (["uvicorn", "--workers"], {}, 1),
])
def test_the_workers_a_command_asks_for(argv, environ, count):
    assert rules.workers(argv, environ) == count

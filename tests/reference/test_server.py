"""python -m reference.server (server.py), run as a user runs it: usage errors in one line, help, HTTPS,
the testbed, and stopping on a signal."""

import re
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

import pytest
import trustme

from reference.services import calculator
from tests.support.servers import Connection, started, taken, until

PING = b'[{}, {"fn.ping_": {}}]'


def run_cli(*args, **options):
    return subprocess.run([sys.executable, "-m", "reference.server", *args], capture_output=True,
                           text=True, timeout=20, **options)


@pytest.mark.parametrize("args, message", [
    (["--port", "abc"], "argument --port: invalid int value: 'abc'"),
    (["--unavailable-rate", "2"], "argument --unavailable-rate: '2' is not a number between 0 and 1"),
    (["--path", "api"], "--path must start with /"),
    (["--log-level", "loud"], "argument --log-level: invalid choice: 'loud'"),
    (["--nope"], "unrecognized option --nope"),
    (["--service", "nope"], "argument --service: invalid choice: 'nope'"),
    (["--servce", "testbed"], "unrecognized option --servce; did you mean --service?"),
    (["--service", "calc"], "argument --service: invalid choice: 'calc' (choose from 'calculator', 'testbed'); did "
                            "you mean calculator?"),
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
    assert result.stderr.startswith("python -m reference.server: error: cannot listen on 127.0.0.1:") and "Traceback" not in result.stderr


def added_then_stopped(*args):
    """Start the server with `args`, call fn.add once, stop it with Ctrl-C: (its exit status, what it first
    printed, its URL, its standard output and error)."""
    process, printed, url = started("server", *args)
    try:
        connection = Connection(url)
        assert connection.call([{}, {"fn.add": {"x": 1, "y": 2}}]) == [{}, {"Ok_": {"result": 3}}]
        connection.http.close()
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=10)
    finally:
        process.kill()
    return process.returncode, printed, url, out, err


def test_the_server_prints_its_url_and_stops_on_ctrl_c():
    """`python -m reference.server` serves the calculator until SIGINT, then exits 0."""
    status, printed, url, out, err = added_then_stopped()
    assert printed == [f"Serving the calculator at {url} (Ctrl-C to stop)\n"]
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/api", url)
    assert status == 0
    assert out == ("Stopping: requests in flight get up to 10 s to be answered (Ctrl-C again to stop at once).\n"
                   "Stopped.\n")
    assert "POST fn.add" not in err and "Traceback" not in err  # (the access log is asked for: below)


def test_the_access_log_is_a_line_for_each_request_when_asked_for():
    """(Each request was a line at the default level: a quarter of the requests a second.) --access-log."""
    _, _, _, _, err = added_then_stopped("--access-log")
    assert re.search(r" INFO 127\.0\.0\.1 POST fn\.add -> Ok_ 28B \d+\.\dms\n", err), err


def test_every_limit_has_a_command_line_option():
    result = run_cli("--help")
    for option in ("--max-connections", "--timeout", "--max-namespaces", "--max-sessions", "--max-variables",
                   "--tape-length"):
        assert option in result.stdout
    assert run_cli("--max-connections", "0").returncode == 2
    assert "--tape-length: '0' is not a positive integer" in run_cli("--tape-length", "0").stderr
    overflowing = run_cli("--timeout", "1e308")  # (an OverflowError once a connection came)
    assert overflowing.returncode == 2 and "'1e308' is not a number of seconds above 0, at most" in overflowing.stderr


def test_the_testbed_is_served_and_calculator_options_are_refused_with_it():
    """--service testbed serves the suite's schema; calculator limits make no sense there."""
    assert "--service {calculator,testbed}" in run_cli("--help").stdout
    result = run_cli("--service", "testbed", "--tape-length", "5")
    assert result.returncode == 2
    assert "--tape-length is an option of the calculator, not of the testbed" in result.stderr


@pytest.mark.parametrize("second", [signal.SIGTERM, signal.SIGINT])
def test_a_second_signal_during_the_stop_stops_at_once_and_quietly(second):
    """A request still arriving holds the graceful stop for its 10 s; a second signal ends it at once,
    with status 0, the request counted as cut off, and no traceback."""
    process, _, url = started("server")
    try:
        with socket.create_connection(("127.0.0.1", urllib.parse.urlsplit(url).port), timeout=10) as sock:
            sock.sendall(b"POST /api HTTP/1.1\r\nContent-Length: 100\r\n\r\n[{}, ")
            until(lambda: taken(sock))  # (the server has read what came of the request: it is in flight)
            started_at = time.monotonic()
            process.send_signal(signal.SIGINT)
            assert process.stdout.readline().startswith("Stopping: requests in flight get up to 10 s")
            process.send_signal(second)
            out, err = process.communicate(timeout=15)
    finally:
        process.kill()
    # (ended well before the 10 s the first signal grants, with room for a busy machine: at load 20 the
    # two signals and Python's exit took 3 s)
    assert time.monotonic() - started_at < 8 and process.returncode == 0, err
    assert out == "Stopped; cut off 1 request in flight.\n" and "Traceback" not in err


@pytest.mark.parametrize("signal_", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
@pytest.mark.parametrize("module", ["server", "mock"])
def test_a_signal_lets_the_request_in_flight_be_answered_then_exits_0(signal_, module):
    """SIGTERM, Ctrl-C and SIGHUP (the terminal closed) stop the server and the mock gracefully, even when
    SIGINT was ignored (a background job); SIGHUP once ended both at once."""
    args = ["--schema-file", str(Path(calculator.__file__).parent.parent / "schemas" / "calculator.json")] * (module == "mock")
    process, _, url = started(module, *args, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        with socket.create_connection(("127.0.0.1", urllib.parse.urlsplit(url).port), timeout=10) as sock:
            sock.sendall(b"POST /api HTTP/1.1\r\nContent-Length: 22\r\n\r\n" + PING[:5])
            until(lambda: taken(sock))  # (the server has read what came of the request: it is in flight)
            process.send_signal(signal_)
            assert process.stdout.readline().startswith("Stopping")  # (it is stopping, with the request in flight)
            sock.sendall(PING[5:])
            answer = b""
            while chunk := sock.recv(1000):  # (until the server closes: the head and body may come apart)
                answer += chunk
        out, err = process.communicate(timeout=10)
    finally:
        process.kill()
    assert answer.startswith(b"HTTP/1.1 200 ") and answer.endswith(b'[{}, {"Ok_": {}}]')
    assert process.returncode == 0 and out.endswith("Stopped.\n") and "Traceback" not in err


def test_the_server_serves_https_with_a_certificate_and_refuses_a_bad_one(tls, tmp_path):
    """--certfile: a client that trusts the CA calls it; a handshake that fails costs no other client."""
    from reference.transports.http_client import Client
    _, cafile, certfile = tls
    process, _, url = started("server", "--certfile", certfile)
    try:
        assert url.startswith("https://127.0.0.1:")
        with socket.create_connection(("127.0.0.1", urllib.parse.urlsplit(url).port)) as plain:  # no handshake:
            plain.sendall(b"POST /api HTTP/1.1\r\n")  # it must not block the others
            with Client(url, cafile=cafile) as client:
                assert client.call("fn.add", {"x": 1, "y": 2})[1] == {"Ok_": {"result": 3}}
    finally:
        process.terminate()
        process.communicate(timeout=10)
    (tmp_path / "bad.pem").write_text("not a certificate")
    bad = run_cli("--certfile", str(tmp_path / "bad.pem"))
    assert bad.returncode == 2 and bad.stderr.startswith(f"python -m reference.server: error: cannot serve HTTPS "
                                                         f"with --certfile {tmp_path / 'bad.pem'}: ")
    assert run_cli("--keyfile", "key.pem").stderr.startswith("python -m reference.server: error: --keyfile goes with")
    both = open(certfile).read()
    end = both.index("PRIVATE KEY-----\n", both.index("-----END")) + len("PRIVATE KEY-----\n")
    (tmp_path / "key.pem").write_text(both[:end])
    (tmp_path / "cert.pem").write_text(both[end:])
    (tmp_path / "other.pem").write_text(trustme.CA().issue_cert("127.0.0.1").private_key_pem.bytes().decode())
    said = {("cert.pem",): "it holds a certificate and no private key: give the key with --keyfile",
            ("key.pem",): "it holds no PEM certificate (it is a private key: give that with --keyfile)",
            ("cert.pem", "cert.pem"): f"--keyfile {tmp_path / 'cert.pem'} holds no PEM private key",
            ("cert.pem", "other.pem"): f"--keyfile {tmp_path / 'other.pem'} is not the certificate's key"}
    for files, problem in said.items():
        wrong = run_cli("--certfile", str(tmp_path / files[0]), *(["--keyfile", str(tmp_path / files[1])] if files[1:] else []))
        assert (wrong.returncode, wrong.stderr) == (2, f"python -m reference.server: error: cannot serve HTTPS with "
                                                       f"--certfile {tmp_path / files[0]}: {problem}\n")

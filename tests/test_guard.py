"""The guard (engine/guard.py) under slow attackers, over real sockets: a normal client keeps its share."""

import email.utils
import http.client
import json
import logging
import socket
import threading
import time

from conftest import Connection, raw, serving
from reference import calculator, engine, load

PING = b'[{}, {"fn.ping_": {}}]'


def dribbling(address, stop, request, pause, chunk=1):
    """Send `request` over and over on one connection, `chunk` bytes every `pause` seconds, reading each
    answer; start again on a new connection when the server closes this one."""
    while not stop.is_set():
        try:
            with socket.create_connection(address, timeout=10) as sock:
                while not stop.is_set():
                    for at in range(0, len(request), chunk):
                        sock.sendall(request[at:at + chunk])
                        if stop.wait(pause):
                            return
                    if not sock.recv(65536):
                        break
        except OSError:
            stop.wait(0.05)


def share(server, attackers, request, seconds=4.0):
    """The share of a normal client's requests answered 200 while the attackers dribble."""
    stop = threading.Event()
    threads = [threading.Thread(target=dribbling, args=(server.server_address[:2], stop, *attacker), daemon=True)
               for attacker in attackers]
    for thread in threads:
        thread.start()
    time.sleep(1.5)  # every attacker under way
    answered, tries, deadline = 0, 0, time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            tries += 1
            try:
                status, _, data = Connection(server.url).post(request)
                answered += status == 200 and data.startswith(b"[")
            except (OSError, http.client.HTTPException):
                pass
            time.sleep(0.1)
    finally:
        stop.set()
    return answered / tries


def test_a_normal_client_keeps_its_share_while_100_connections_dribble_back_to_back_requests(caplog):
    """Each attacker's request takes 0.6 s to arrive, under any patience, and the next follows at once:
    they would hold every place all the time, but the slowest give way to the newcomer. The log says
    so once for each, and blames no client for the half request it was cut off in."""
    request = b"POST /api HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(PING), PING)
    with caplog.at_level(logging.INFO, logger="reference"), serving(calculator.service()) as server:
        assert share(server, [(request, 0.6 / len(request))] * 100, PING) >= 0.9
    said = [record.getMessage() for record in caplog.records]
    assert any(line.endswith(": closed a connection receiving slower than 16 KiB/s, for a newcomer") for line in said)
    assert not [line for line in said if " code 400, " in line]


def test_a_normal_client_sends_large_requests_while_8_connections_dribble_large_bodies():
    """Eight uploads of 1 MB at 200 bytes a second would hold every place for large requests for hours."""
    head = b"POST /api HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n"
    variables = {f"v{i}": i for i in range(2000)}  # a request of about 26 KB: a large one
    large = json.dumps([{"@auth_": {"Ephemeral": {"username": "fair"}}},
                        {"fn.saveVariables": {"variables": variables}}]).encode()
    with serving(calculator.service()) as server:
        assert len(large) > 16 * 1024
        assert share(server, [(head + b"x" * 999_999, 0.1, 20)] * 8, large) >= 0.9


def test_a_client_that_never_reads_its_answer_loses_its_connection_after_the_timeout(caplog):
    """Sockets have no timeout of their own under the guard: it times an answer's sending itself."""
    schema = load([{"fn.big": {}, "->": [{"Ok_": {"text": "string"}}]}])
    text = "x" * 16_000_000  # more than the kernel buffers of both ends hold
    service = engine.Service(schema, {"fn.big": lambda arguments, headers: {"Ok_": {"text": text}}})
    request = b'POST /api HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\n\r\n[{}, {"fn.big": {}}]'
    with caplog.at_level(logging.INFO, logger="reference"), serving(service, timeout=1) as server, \
            socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(server.server_address[:2])
        sock.sendall(request)
        assert Connection(server.url).post(PING)[0] == 200  # while that answer waits to be taken
        deadline = time.monotonic() + 5
        while server.visits and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not server.visits  # its thread is free again
        sock.settimeout(5)
        received = 0
        while chunk := sock.recv(1 << 20):
            received += len(chunk)
        assert received < len(text)
    said = [record.getMessage() for record in caplog.records]
    assert any(line.endswith(": closed a connection sending for over 1 s") for line in said)


def test_answers_carry_the_date_of_their_second():
    """The guard writes the Date header once a second; each answer's is still its own second's."""
    with serving(calculator.service()) as server:
        connection = http.client.HTTPConnection(*server.server_address[:2], timeout=5)
        dates = []
        for pause in (0, 0, 1.1, 0):
            time.sleep(pause)
            before = time.time()
            connection.request("POST", "/api", PING)
            response = connection.getresponse()
            response.read()
            after = time.time()
            dates.append(response.getheader("Date"))
            assert int(before) <= email.utils.parsedate_to_datetime(dates[-1]).timestamp() <= after
        assert dates[-1] != dates[0] and dates == [email.utils.formatdate(
            email.utils.parsedate_to_datetime(date).timestamp(), usegmt=True) for date in dates]


def test_a_simple_head_read_at_once_keeps_the_connection_or_closes_it_as_asked():
    """heads.py reads these requests, not http.server: pipelined, each is answered, until one says close."""
    def request(*lines):
        return b"POST /api HTTP/1.1\r\n" + b"".join(line + b"\r\n" for line in lines) \
            + b"Content-Length: %d\r\n\r\n%s" % (len(PING), PING)
    with serving(calculator.service()) as server:
        received = raw(server, request(b"Host: x") + request(b"Connection: keep-alive")
                       + request(b"Connection: Close") + request(b"Host: never read"))
    assert received.count(b"HTTP/1.1 200 OK\r\n") == 3 and received.count(b'{"Ok_": {}}') == 3

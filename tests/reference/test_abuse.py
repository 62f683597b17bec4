"""Abuse and concurrency over real sockets: slow clients, crowds, races, and memory under load."""

import json
import socket
import threading
import time
import tracemalloc
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from reference.services import calculator
from tests.support.servers import Connection, serving, started, until

PING = b'[{}, {"fn.ping_": {}}]'


@pytest.fixture
def server():
    with serving(calculator.service(), timeout=2, max_connections=20) as server:
        yield server


def trickle(address, data, pause):
    """Send `data` a byte at a time, `pause` seconds apart, then read what comes back."""
    with socket.create_connection(address, timeout=10) as sock:
        try:
            for byte in data:
                sock.sendall(bytes([byte]))
                time.sleep(pause)
            return sock.recv(65536)
        except OSError:
            return b""


@pytest.mark.parametrize("data", [
    b"POST /api HTTP/1.1\r\nHost: x\r\nContent-Length: 22\r\n\r\n" + PING,
    b"POST /api HTTP/1.1\r\nHost: x\r\nContent-Length: 400\r\n\r\n" + PING,
])
def test_a_slow_client_does_not_block_others(server, data):
    """While one client trickles its request (and stalls), others are served at full speed."""
    slow = threading.Thread(target=trickle, args=(server.server_address[:2], data, 0.03), daemon=True)
    slow.start()
    until(lambda: server.visits)  # (its connection taken)
    connection = Connection(server.url)
    for _ in range(50):
        assert connection.post(PING)[0] == 200
    assert slow.is_alive()  # all fifty answered while the slow request still trickles in
    slow.join(timeout=30)
    assert not slow.is_alive()


def test_a_crowd_of_connections_is_answered_or_refused_cleanly(server):
    """More simultaneous connections than allowed: each gets an envelope or a 503, then all is well."""
    def one(_):
        try:
            with socket.create_connection(server.server_address[:2], timeout=10) as sock:
                sock.sendall(b"POST /api HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 22\r\n\r\n" + PING)
                answer = b""
                while chunk := sock.recv(65536):
                    answer += chunk
                return answer
        except ConnectionResetError:
            return b"reset"

    with ThreadPoolExecutor(60) as pool:
        answers = list(pool.map(one, range(120)))
    statuses = {answer.split(b" ")[1] if answer.startswith(b"HTTP/1.1") else answer for answer in answers}
    assert statuses <= {b"200", b"503", b"reset"} and b"200" in statuses
    assert all(answer.endswith(b'[{}, {"Ok_": {}}]') for answer in answers if answer.startswith(b"HTTP/1.1 200"))
    until(lambda: not server.visits)  # (every connection ended)
    assert Connection(server.url).post(PING)[0] == 200


def test_slow_clients_by_the_hundred_do_not_lock_out_a_newcomer():
    """150 clients each trickle a header line every half second; a new client is served within 2 s."""
    with serving(calculator.service()) as server:  # 100 connections, 30 s to send a request
        address, stop, under_way = server.server_address[:2], threading.Event(), set()

        def slowloris(n):
            try:
                with socket.create_connection(address, timeout=10) as sock:
                    sock.sendall(b"POST /api HTTP/1.1\r\n")
                    under_way.add(n)
                    while not stop.wait(0.5):
                        sock.sendall(b"X-Slow-%d: 1\r\n" % n)
            except OSError:
                under_way.add(n)  # given way to a newcomer
        threads = [threading.Thread(target=slowloris, args=(n,), daemon=True) for n in range(150)]
        for thread in threads:
            thread.start()
        until(lambda: len(under_way) == 150)  # (each has sent its first line, or given way)
        started = time.perf_counter()
        assert Connection(server.url).post(PING)[0] == 200
        assert time.perf_counter() - started < 5  # not the 30 s the slow ones could hold their slots
        stop.set()


def test_a_pool_of_idle_keep_alive_connections_does_not_lock_out_a_newcomer():
    with serving(calculator.service()) as server:
        pool = [Connection(server.url) for _ in range(100)]
        for connection in pool:
            assert connection.post(PING)[0] == 200
        started = time.perf_counter()
        for _ in range(10):
            assert Connection(server.url).post(PING)[0] == 200
        assert time.perf_counter() - started < 5  # not the 30 s an idle connection may stay


def test_threads_sharing_a_namespace_lose_no_update(server):
    """Saves, reads and evaluations from 16 threads at once: every variable kept, one tape entry each."""
    user = {"@auth_": {"Ephemeral": {"username": f"race-{uuid.uuid4().hex[:8]}"}}}

    def work(thread):
        connection = Connection(server.url)
        for i in range(25):
            name = f"t{thread}-{i}"
            assert connection.call([user, {"fn.saveVariable": {"name": name, "value": i}}])[1] == {"Ok_": {}}
            assert connection.call([user, {"fn.getVariable": {"name": name}}])[1]["Ok_"]["variable!"]["value"] == i
            result = connection.call([user, {"fn.evaluate": {"expression": {"Variable": {"name": name}}}}])[1]
            assert result["Ok_"]["result"] == i

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(work, range(16)))
    connection = Connection(server.url)
    variables = connection.call([user, {"fn.getVariables": {}}])[1]["Ok_"]["variables"]
    tape = connection.call([user, {"fn.getPaperTape": {}}])[1]["Ok_"]["tape"]
    assert len(variables) == 400 and len(tape) == 400
    assert sorted(e["expression"]["Variable"]["name"] for e in tape) == sorted(v["name"] for v in variables)


def test_memory_stays_bounded_under_steady_load():
    """Requests that keep creating namespaces, sessions and tapes stop adding memory at the limits."""
    service = calculator.service(max_namespaces=50, max_sessions=50, tape_length=20)

    def load(rounds, offset):
        for n in range(offset, offset + rounds):
            user = {"@auth_": {"Ephemeral": {"username": f"user-{n}"}}}
            for message in ([user, {"fn.saveVariables": {"variables": {f"v{i}": i for i in range(20)}}}],
                            [user, {"fn.evaluate": {"expression": {"Add": {"left": {"Variable": {"name": "v1"}},
                                                                            "right": {"Constant": {"value": n}}}}}}],
                            [{}, {"fn.login": {"username": f"user-{n}"}}], [user, {"fn.getPaperTape": {}}]):
                service.handle(json.dumps(message).encode())

    load(250, 0)  # fill every limit
    tracemalloc.start()
    load(500, 250)
    first, _ = tracemalloc.get_traced_memory()
    load(1000, 750)
    second, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert second - first < 200_000, f"grew by {second - first} bytes"


def test_twenty_clients_looping_the_largest_answer_keep_the_server_within_its_worst_case():
    """A 29-byte fn.getPaperTape answers the shared namespace's full tape (about 800 KB): such answers
    are costly and take turns, so 20 clients asking for it at once stay far below the README's 300 MB
    worst case (they took a server to 588 MiB before), and a ping is answered all along."""
    process, _, url = started("server", "--log-level", "warning")
    try:
        connection = Connection(url)
        expression = {"Constant": {"value": 1.5}}
        for _ in range(12):
            expression = {"Add": {"left": expression, "right": {"Constant": {"value": 2.25}}}}
        for _ in range(1000):
            connection.call([{}, {"fn.evaluate": {"expression": expression}}])
        assert len(connection.post(b'[{}, {"fn.getPaperTape": {}}]')[2]) > 700_000
        stop, peak, pings = threading.Event(), [], []

        def loop():  # (on a busy machine a turn may wait past WAIT: a 503 with Retry-After is the server's right)
            mine = Connection(url, timeout=120)
            while not stop.is_set():
                assert mine.post(b'[{}, {"fn.getPaperTape": {}}]')[0] in (200, 503)

        with ThreadPoolExecutor(20) as pool:
            loops = [pool.submit(loop) for _ in range(20)]
            ends = time.monotonic() + 4
            while time.monotonic() < ends:
                started_at = time.monotonic()
                pings.append((connection.post(PING)[0], time.monotonic() - started_at))
                peak.append(resident_megabytes(process.pid))
                time.sleep(0.1)
            stop.set()
            for done in loops:
                done.result()
    finally:
        process.kill()
        process.wait()
    assert max(peak) < 300, f"the server grew to {max(peak)} MB"
    assert all(status == 200 for status, _ in pings) and max(seconds for _, seconds in pings) < 2


def resident_megabytes(pid):
    """The memory a process holds (its resident set), in MB."""
    status = open(f"/proc/{pid}/status").read()
    return int(status.split("VmRSS:")[1].split()[0]) // 1024

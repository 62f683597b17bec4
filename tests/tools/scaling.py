"""Scaling: how the core's cost grows with the size of hostile or merely large requests.

    python tests/tools/scaling.py [--sizes 16,64,256,1024] [--family NAME]

Each family builds requests of about 16 KiB, 64 KiB, 256 KiB and 1 MiB and
times the whole core on them (bytes in, bytes out, no sockets). It prints,
per family, the growth exponent (1.0 is linear: four times the bytes, four
times the time), the cost at the largest size as a multiple of `json.loads`
of the same message written as JSON, and the peak memory of one request as a
multiple of its size. Last, it checks that a `fn.ping_` sent over HTTP while
a large request is being processed is answered quickly. Like
`benchmark.py`, it prints ratios measured in one run; it is not a test.
"""

import argparse
import json
import math
import socket
import sys
import threading
import time
import timeit
import tracemalloc
from pathlib import Path

import msgpack

ROOT = Path(__file__).resolve().parents[2]  # the repository
sys.path.insert(0, str(ROOT))  # (run as a script: the repository, for tests.support and the packages)

from reference import mocking
from reference.protocol import codec
from reference.services import calculator, testbed
from tests.support.servers import Connection, serving  # noqa: E402


def message(headers, function, arguments):
    return [headers, {function: arguments}]


def filled(size, make):
    """The message `make(n)` for the n that makes its JSON about `size` bytes long."""
    n = 1
    while len(json.dumps(make(n * 2))) < size:
        n *= 2
    low, high = n, n * 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if len(json.dumps(make(middle))) < size else (low, middle)
    return make(low)


CALCULATOR, TESTBED = calculator.service(), testbed.service()
SELECT = {"@select_": {"->": {"Ok_": ["intMap!"]}}}


def nested(levels):
    value = []
    for _ in range(levels):
        value = [value]
    return value


FAMILIES = {  # name -> (service, how to build a message of n units, wire)
    "flat array, valid": (CALCULATOR, lambda n: message({}, "fn.deleteVariables", {"names": ["a"] * n}), "json"),
    "flat array, every element invalid": (CALCULATOR, lambda n: message({}, "fn.deleteVariables", {"names": [1] * n}), "json"),
    "deep nesting, 1000 levels a piece": (TESTBED, lambda n: message({}, "fn.echo", {"any!": [nested(1000)] * n}), "json"),
    "escape-heavy string": (CALCULATOR, lambda n: message({}, "fn.getVariable", {"name": '\\"' * n}), "json"),
    "escapes after an open string (not JSON)": (CALCULATOR, lambda n: "[" * 1025 + '"' + '\\"' * n, "text"),
    "large map, echoed back": (TESTBED, lambda n: message({}, "fn.echo", {"intMap!": {f"k{i}": i for i in range(n)}}), "json"),
    "large map, selected": (TESTBED, lambda n: message(SELECT, "fn.echo", {"intMap!": {f"k{i}": i for i in range(n)}}), "json"),
    "flat array, valid, MessagePack": (CALCULATOR, lambda n: message({}, "fn.deleteVariables", {"names": ["a"] * n}), "msgpack"),
    "flat array, invalid, MessagePack": (CALCULATOR, lambda n: message({}, "fn.deleteVariables", {"names": [1] * n}), "msgpack"),
    "large map, MessagePack": (TESTBED, lambda n: message({}, "fn.echo", {"intMap!": {f"k{i}": i for i in range(n)}}), "msgpack"),
    "array of structs, packed MessagePack": (TESTBED, lambda n: message(
        {"@pac_": True}, "fn.echo", {"pointArr!": [{"x": i, "y": i, "title!": "p"} for i in range(n)]}), "packed"),
    "packed rows of nested maps": (TESTBED, lambda n: message(  # each row [[]], two bytes
        {"@pac_": True}, "fn.echo", {"any!": [{"x": {}}] * n}), "packed"),
    "deep empty containers, JSON": (TESTBED, lambda n: message({"@id_": [[[{}]]] * n}, "fn.ping_", {}), "json"),
    "empty maps in @id_, MessagePack": (TESTBED, lambda n: message({"@id_": [{}] * n}, "fn.ping_", {}), "msgpack"),
}


def mock_families():
    """Families that need a mock with state: big stubs, and verifications against big calls and logs."""
    tape_mock = mocking.service(calculator.entries())
    echo_mock = mocking.service(json.loads((ROOT / "conformance" / "testbed.json").read_text()))
    stub = lambda n: message({}, "fn.createStub_", {"stub": {  # noqa: E731
        "fn.echo": {}, "->": {"Ok_": {"pointArr!": [{"x": i, "y": i} for i in range(n)]}}}})
    verify = lambda n: message({}, "fn.verify_", {"call": {"fn.deleteVariables": {"names": ["z"] * n}}})  # noqa: E731
    objects = lambda n: [{"a": i, "b": [i]} for i in range(n)]  # noqa: E731

    def recorded(value):  # the call that the verification looks for, with as many names
        names = value[1]["fn.verify_"]["call"]["fn.deleteVariables"]["names"]
        tape_mock.handle(json.dumps([{}, {"fn.clearCalls_": {}}]).encode())
        tape_mock.handle(json.dumps([{}, {"fn.deleteVariables": {"names": ["a"] * (len(names) - 1) + ["z"]}}]).encode())

    def stubbed(value):  # a stub of the objects that the call sends in the reverse order
        echo_mock.handle(b'[{}, {"fn.clearStubs_": {}}]')
        echo_mock.handle(json.dumps(message({}, "fn.createStub_", {"stub": {
            "fn.echo": {"any!": value[1]["fn.echo"]["any!"][::-1]}, "->": {"Ok_": {}}}})).encode())

    def logged(value):  # the recorded calls, all of which the failing verification lists
        tape_mock.handle(json.dumps([{}, {"fn.clearCalls_": {}}]).encode())
        for call in value:
            tape_mock.handle(json.dumps(call).encode())
    return {
        "mock stub, created": (echo_mock, stub, "json", lambda value: echo_mock.handle(b'[{}, {"fn.clearStubs_": {}}]')),
        "mock verification, partial match": (tape_mock, verify, "json", recorded),
        "mock stub of nested objects, reordered": (
            echo_mock, lambda n: message({}, "fn.echo", {"any!": objects(n)[::-1]}), "json", stubbed),
        # sized by the log, whose bytes the verification reads; the request stays small
        "mock verification over a large log": (
            tape_mock, lambda n: [message({}, "fn.add", {"x": i, "y": 10 ** 15}) for i in range(n)], "log", logged),
    }


def encoded(value, wire, service):
    if wire == "log":  # the value is the log that a small verification goes through
        return json.dumps(message({}, "fn.verify_", {"call": {"fn.add": {"x": -1}}})).encode()
    if wire == "text":
        return value.encode()
    if wire == "json":
        return json.dumps(value).encode()
    headers, body = value
    if wire == "packed":  # as a client that packs its requests sends it
        return codec.encode([{**headers, "@bin_": [service.encoding.checksum]}, body], service.encoding, True)
    ids = service.encoding.ids
    return msgpack.packb([{**headers, "@bin_": [service.encoding.checksum]},
                          {ids.get(k, k): _keys(v, ids) for k, v in body.items()}])


def _keys(value, ids):
    if type(value) is dict:
        return {ids.get(k, k): _keys(v, ids) for k, v in value.items()}
    if type(value) is list:
        return [_keys(v, ids) for v in value]
    return value


def best(function, repeat=3):
    number = max(1, int(0.3 / max(timeit.timeit(function, number=1), 1e-6)))
    return min(timeit.repeat(function, number=number, repeat=repeat)) / number


def measure(name, service, make, wire, prepare, sizes):
    rows = []
    for kib in sizes:
        value = filled(kib * 1024, make)
        data = encoded(value, wire, service)
        if prepare:
            prepare(value)
        run = lambda: service.handle(data)  # noqa: E731
        seconds = best(run)
        text = json.dumps(value) if wire != "text" else value
        baseline = best(lambda: _loads(text))
        if prepare:
            prepare(value)
        tracemalloc.start()
        reply = service.handle(data)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        size = len(text) if wire == "log" else len(data)
        rows.append((kib, size, seconds, baseline, peak, reply.result))
    (_, small, t_small, *_), (_, large, t_large, base, peak, result) = rows[0], rows[-1]
    exponent = math.log(t_large / t_small) / math.log(large / small)
    print(f"{name:<42} {exponent:>8.2f} {t_large / base:>9.1f}x {peak / large:>8.1f}x  {result}")
    return exponent, t_large / base


def _loads(text):
    try:
        return json.loads(text)
    except ValueError:  # the baseline for text that is not JSON: finding out that it is not
        return None


def ping_while_busy(size=1024 * 1024):
    """Seconds a fn.ping_ waits over HTTP while a 1 MiB request is processed on another connection."""
    big = json.dumps(filled(size, FAMILIES["flat array, every element invalid"][1])).encode()
    with serving(calculator.service(), max_body=2 * size) as server:
        address = server.server_address[:2]
        done = threading.Event()

        def hammer():
            while not done.is_set():
                with socket.create_connection(address) as sock:
                    sock.sendall(b"POST /api HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % len(big) + big)
                    sock.recv(65536)
        worker = threading.Thread(target=hammer, daemon=True)
        worker.start()
        time.sleep(0.2)
        connection, worst = Connection(server.url), 0.0
        for _ in range(20):
            started = time.perf_counter()
            connection.post(b'[{}, {"fn.ping_": {}}]')
            worst = max(worst, time.perf_counter() - started)
            time.sleep(0.05)
        done.set()
        worker.join()
    return worst


def main():
    parser = argparse.ArgumentParser(description="How the core's cost grows with request size.")
    parser.add_argument("--sizes", default="16,64,256,1024", help="KiB sizes, comma-separated (default %(default)s)")
    parser.add_argument("--family", action="append", help="only the families whose name holds this (repeatable)")
    options = parser.parse_args()
    sizes = [int(s) for s in options.sizes.split(",")]
    families = {**{name: (*spec, None) for name, spec in FAMILIES.items()}, **mock_families()}
    print(f"{'family':<42} {'exponent':>8} {'/ json.loads':>10} {'memory':>9}  answer")
    worst = [measure(name, *spec, sizes) for name, spec in families.items()
             if not options.family or any(part in name for part in options.family)]
    print(f"largest exponent {max(e for e, _ in worst):.2f}, largest multiple of json.loads "
          f"{max(m for _, m in worst):.1f}x")
    print(f"fn.ping_ while a 1 MiB request is processed: answered within {ping_while_busy() * 1000:.0f} ms")


if __name__ == "__main__":
    main()

"""Benchmark: the core's cost per message, and HTTP throughput, as ratios measured in one run.

    python tests/benchmark.py [--peer-venv DIR] [--seconds N] [--json FILE]

In-process, each message goes through the whole core (bytes in, bytes out, no
sockets) with trivial handlers, and its cost is divided by the bare JSON work
of the same exchange in the same process: `json.loads` of the request and
`json.dumps` of the answer (in JSON, even for the binary one). Over
HTTP, several client processes send `fn.add` on kept-alive connections; the
requests per second are divided by those of a bare `http.server` that answers
a fixed response. With --peer-venv (a virtual environment holding
telepact-cli==1.0.0a339) the independent implementation is measured the same
way, beside ours. Absolute times on a shared machine are noise; the ratios
are what to compare.
"""

import argparse
import json
import multiprocessing
import os
import socket
import subprocess
import sys
import time
import timeit
from pathlib import Path

ROOT = Path(__file__).parent.parent
sys.path.insert(0, str(ROOT))

from reference import Service, calculator, load  # noqa: E402


def evaluation(i):
    expression = {"Add": {"left": {"Variable": {"name": f"v{i}"}}, "right": {"Constant": {"value": i}}}}
    return {"expression": expression, "result": i * 1.5, "timestamp": 1795312637 + i, "successful": i % 7 != 0}


def deep(levels):
    expression = {"Constant": {"value": 1}}
    for _ in range(levels - 1):
        expression = {"Add": {"left": expression, "right": {"Constant": {"value": 1}}}}
    return expression


TAPE = [evaluation(i) for i in range(100)]
MESSAGES = {
    "fn.add": [{}, {"fn.add": {"x": 1, "y": 2}}],
    "fn.add, two invalid fields": [{}, {"fn.add": {"x": "1", "y": True}}],
    "fn.evaluate, small": [{}, {"fn.evaluate": {"expression": deep(3)}}],
    "fn.evaluate, 100 levels": [{}, {"fn.evaluate": {"expression": deep(100)}}],
    "fn.getPaperTape, 100 entries": [{}, {"fn.getPaperTape": {}}],
    "the same with @select_": [{"@select_": {"struct.Evaluation": ["result", "successful"]}}, {"fn.getPaperTape": {}}],
    "the same in steady binary": [{"@bin_": [900069279]}, {"fn.getPaperTape": {}}],
}


def compute(expression):
    [(tag, fields)] = expression.items()
    if tag == "Constant":
        return fields["value"]
    left, right = compute(fields["left"]), compute(fields["right"])
    return {"Add": left + right, "Sub": left - right, "Mul": left * right, "Div": left / right}[tag]


def results(function, arguments):
    """What the trivial handlers of both implementations answer."""
    if function == "fn.add":
        return {"Ok_": {"result": arguments["x"] + arguments["y"]}}
    if function == "fn.evaluate":
        value = compute(arguments["expression"])
        return {"Ok_": {"result": value, "saveResult": {"fn.saveVariable": {"name": "result", "value": value}}}}
    return {"Ok_": {"tape": TAPE}}


def per_message(function, repeat=5, seconds=0.2):
    """Seconds per call of `function`, the best of several timed runs."""
    number = max(1, int(seconds / max(timeit.timeit(function, number=1), 1e-7)))
    return min(timeit.repeat(function, number=number, repeat=repeat)) / number


def measure_ours():
    schema = load(calculator.entries())
    handlers = {name: (lambda name: lambda arguments, headers: results(name, arguments))(name)
                for name, function in schema.functions.items() if not function.internal}
    service = Service(schema, handlers)
    figures = {}
    for name, message in MESSAGES.items():
        data = json.dumps(message).encode()
        figures[name] = {"bare": bare(message, lambda data: service.handle(data).data),
                         "ours": per_message(lambda: service.handle(data))}
    return figures


def bare(message, handle):
    """Seconds for the JSON work of an exchange: loads of the request, dumps of the JSON answer."""
    data = json.dumps(message).encode()
    plain = json.dumps([{k: v for k, v in message[0].items() if k != "@bin_"}, message[1]]).encode()
    answer = json.loads(handle(plain))
    return per_message(lambda: (json.loads(data), json.dumps(answer).encode()))


PEER_DRIVER = """
import asyncio, json, sys, timeit
sys.path.insert(0, sys.argv[1])
from benchmark import MESSAGES, bare, per_message, results
from telepact_cli.telepact import FunctionRouter, Message, Server, TelepactSchema
schema = TelepactSchema.from_json(open(sys.argv[2]).read())
def route(name):
    async def handler(function_name, request):
        return Message({}, results(function_name, request.body[function_name]))
    return handler
names = [e for entry in json.load(open(sys.argv[2])) for e in entry if e.startswith("fn.")]
options = Server.Options()
server = Server(schema, FunctionRouter({name: route(name) for name in names}), options)
loop = asyncio.new_event_loop()
figures = {}
for name, message in MESSAGES.items():
    data = json.dumps(message).encode()
    assert loop.run_until_complete(server.process(data)).bytes
    figures[name] = {"bare": bare(message, lambda data: loop.run_until_complete(server.process(data)).bytes),
                     "peer": per_message(lambda: loop.run_until_complete(server.process(data)))}
print(json.dumps(figures))
"""


def measure_peer(venv):
    schema = ROOT / "reference" / "schemas" / "calculator.json"
    run = subprocess.run([str(Path(venv) / "bin" / "python"), "-c", PEER_DRIVER, str(Path(__file__).parent),
                          str(schema)], capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        raise SystemExit(f"error: the peer could not be measured:\n{run.stderr[-2000:]}")
    return json.loads(run.stdout)


# HTTP

BARE_SERVER = """
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
import socket
class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    wbufsize = -1
    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        body = b'[{}, {"Ok_": {"result": 3}}]'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
server.daemon_threads = True
print("ready", flush=True)
server.serve_forever()
"""


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def client(port, seconds, counts):
    """One load-generating process: fn.add on one kept-alive connection, for `seconds`."""
    import http.client
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    body = b'[{}, {"fn.add": {"x": 1, "y": 2}}]'
    done, deadline = 0, time.monotonic() + seconds
    while time.monotonic() < deadline:
        connection.request("POST", "/api", body, {"Content-Type": "application/json"})
        response = connection.getresponse()
        response.read()
        done += response.status == 200  # the peer's demo answers ErrorUnavailable to 1%: served all the same
    counts.put(done)


def throughput(command, port, seconds, clients):
    """Requests per second that `clients` processes get from the server `command` starts."""
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(port)
        counts = multiprocessing.Queue()
        workers = [multiprocessing.Process(target=client, args=(port, seconds, counts)) for _ in range(clients)]
        for worker in workers:
            worker.start()
        total = sum(counts.get(timeout=seconds + 60) for _ in workers)
        for worker in workers:
            worker.join()
        return total / seconds
    finally:
        server.terminate()
        server.wait(timeout=10)


def wait_for(port, seconds=30):
    import http.client
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            connection.request("POST", "/api", b'[{}, {"fn.ping_": {}}]')
            connection.getresponse().read()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"error: nothing answered on port {port}")


def measure_http(seconds, clients, peer_venv):
    port = free_port()
    rates = {"bare http.server": throughput([sys.executable, "-c", BARE_SERVER, str(port)], port, seconds, clients)}
    port = free_port()
    rates["reference server"] = throughput([sys.executable, "-m", "reference.server", "--port", str(port),
                                            "--log-level", "warning"], port, seconds, clients)
    if peer_venv:
        port = free_port()
        rates["peer demo server"] = throughput([str(Path(peer_venv) / "bin" / "telepact"), "demo-server", "--port",
                                                str(port)], port, seconds, clients)
    return rates


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python tests/benchmark.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--peer-venv", metavar="DIR", help="a venv with telepact-cli==1.0.0a339, to compare with")
    parser.add_argument("--seconds", type=float, default=5, help="how long each HTTP load lasts (default 5)")
    parser.add_argument("--clients", type=int, default=4, help="load-generating processes (default 4)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    options = parser.parse_args(argv)
    os.chdir(ROOT)
    ours = measure_ours()
    peer = measure_peer(options.peer_venv) if options.peer_venv else {}
    print("In-process: the core's cost per message, divided by the bare JSON work of the exchange")
    print(f"{'message':<32}{'ours':>8}" + (f"{'peer':>8}{'ours faster by':>16}" if peer else ""))
    table = {"in-process": {}, "http": {}}
    for name in MESSAGES:
        ratio = ours[name]["ours"] / ours[name]["bare"]
        row = {"ours": round(ratio, 2)}
        line = f"{name:<32}{ratio:>7.2f}x"
        if peer:
            peer_ratio = peer[name]["peer"] / peer[name]["bare"]
            row.update(peer=round(peer_ratio, 2), speedup=round(peer[name]["peer"] / ours[name]["ours"], 1))
            line += f"{peer_ratio:>7.2f}x{row['speedup']:>15.1f}x"
        table["in-process"][name] = row
        print(line)
    rates = measure_http(options.seconds, options.clients, options.peer_venv)
    print(f"\nHTTP: fn.add requests per second from {options.clients} client processes, as a share of a bare http.server")
    for name, rate in rates.items():
        share = rate / rates["bare http.server"]
        table["http"][name] = {"share": round(share, 2)}
        print(f"{name:<32}{share:>7.0%}")
    if options.json:
        Path(options.json).write_text(json.dumps(table, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

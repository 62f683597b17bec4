"""Throughput: HTTP requests a second against a bare http.server, and what fuzz's client costs.

Run through benchmark.py (`http`, `fuzz`, `fuzz-client`), which documents each.
`fuzz-client` counts, with callgrind, the instructions of a default fuzz of a
fresh bundled calculator (one worker, the server not counted) for two numbers
of examples, and those of a bare client (http.client, json.dumps and
json.loads of fn.add) for N and 2N calls: each a difference per request, so
start-up drops out. Early calls (10 to 20 examples of each function) and
later ones (40 to 80) are counted apart: what fuzz writes into the calculator
(its tape) makes later answers larger.
"""

import collections
import contextlib
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository


def spread(values):
    """The least and the most of `values`, as text."""
    return f"{min(values):.2f} to {max(values):.2f}"


# HTTP: kept-alive fn.add from several client processes, as a share of a bare http.server.

BARE_SERVER = r"""
import socket, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
class Handler(BaseHTTPRequestHandler):
    protocol_version, wbufsize = "HTTP/1.1", -1
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
server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(f"Serving at http://127.0.0.1:{server.server_address[1]}/", flush=True)
server.serve_forever()
"""

LOAD = r"""
import http.client, sys, time
port, seconds = int(sys.argv[1]), float(sys.argv[2])
connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
body, done, deadline = b'[{}, {"fn.add": {"x": 1, "y": 2}}]', 0, time.monotonic() + seconds
while time.monotonic() < deadline:
    connection.request("POST", "/api", body, {"Content-Type": "application/json"})
    response = connection.getresponse()
    response.read()
    done += response.status == 200
print(done)
"""


def report_http(rounds, seconds, clients, peer_venv):
    """Requests per second of each server, as a share of the bare one's, and the server's CPU time per
    request (user and system, from /proc), as a ratio to the bare one's: each round in turn."""
    ours = [sys.executable, "-m", "reference.server", "--port", "0"]
    servers = {"bare http.server": [sys.executable, "-c", BARE_SERVER], "reference server": ours,
               "reference, --access-log": [*ours, "--access-log"], "reference --plain": [*ours, "--plain"]}
    if peer_venv:  # (uvicorn says the port it was given: one the system picks for it)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        servers["peer demo server"] = [str(Path(peer_venv) / "bin" / "telepact"), "demo-server", "--port", str(port)]
    shares = {name: [] for name in servers if name != "bare http.server"}
    cpus = {name: [] for name in servers}
    for _ in range(rounds):
        measured = {name: _rate(command, seconds, clients) for name, command in servers.items()}
        for name in servers:
            cpus[name].append(measured[name][1])
        for name in shares:
            shares[name].append(measured[name][0] / measured["bare http.server"][0])
    table = {"bare http.server": {"cpu per request (us)": round(statistics.median(cpus["bare http.server"]))}}
    print(f"{'bare http.server':<24}{'':>30}{statistics.median(cpus['bare http.server']):>8.0f} us CPU a request")
    for name, values in shares.items():
        cpu = [ours / bare for ours, bare in zip(cpus[name], cpus["bare http.server"])]
        table[name] = {"median": round(statistics.median(values), 2), "spread": spread(values),
                       "cpu per request (us)": round(statistics.median(cpus[name])),
                       "cpu ratio": round(statistics.median(cpu), 2), "cpu spread": spread(cpu)}
        print(f"{name:<24}{statistics.median(values):>6.2f} of bare  ({spread(values)})"
              f"{statistics.median(cpus[name]):>8.0f} us CPU a request, {statistics.median(cpu):.2f}x bare "
              f"({spread(cpu)})", flush=True)
    return table


def report_fuzz(rounds):
    """The requests a second of a default fuzz of a fresh calculator, --workers 1 and 2 in turn each round."""
    rates = {1: [], 2: []}
    for number in range(rounds):
        for workers in rates:
            with _served([sys.executable, "-m", "reference.server", "--port", "0"]) as (_, port):
                run = subprocess.run([sys.executable, "-m", "conformance", "fuzz", "--target",
                                      f"http://127.0.0.1:{port}/api", "--seed", str(number), "--workers", str(workers)],
                                     capture_output=True, text=True, cwd=ROOT, timeout=600)
            rates[workers].append(int(re.search(r"\(([\d,]+) a second", run.stdout)[1].replace(",", "")))
    table = {f"--workers {workers}": {"median": statistics.median(values), "spread": spread(values)}
             for workers, values in rates.items()}
    for name, figures in table.items():
        print(f"fuzz {name:<14}{figures['median']:>8.0f} requests a second ({figures['spread']})")
    return table


def _rate(command, seconds, clients):
    """Requests per second of the server `command` starts, and its CPU seconds per request, in us."""
    with _served(command) as (server, port):
        before = _cpu(server.pid)
        loads = [subprocess.Popen([sys.executable, "-c", LOAD, str(port), str(seconds)], stdout=subprocess.PIPE,
                                  text=True) for _ in range(clients)]
        done = sum(int(load.communicate(timeout=seconds + 60)[0]) for load in loads)
        return done / seconds, (_cpu(server.pid) - before) / max(done, 1) * 1e6


def _cpu(pid):
    """The CPU seconds (user and system) process `pid` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


READY = re.compile(r"(?:Serving|running on) .*?:(\d+)")  # what each server prints once it listens, and where


@contextlib.contextmanager
def _served(command):
    """The server `command` starts, and its port, once it says it listens; stopped after. What else it
    prints is read and dropped meanwhile, so that it never waits on a full pipe."""
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    try:
        for line in server.stdout:
            if ready := READY.search(line):
                threading.Thread(target=collections.deque, args=(server.stdout, 0), daemon=True).start()
                yield server, int(ready.group(1))
                return
        raise SystemExit(f"error: {' '.join(command[:3])} stopped before it listened")
    finally:
        server.terminate()
        server.wait(timeout=15)


BARE_CLIENT = r"""
import http.client, json, sys
connection = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=30)
for _ in range(int(sys.argv[2])):
    connection.request("POST", "/api", json.dumps([{}, {"fn.add": {"x": 1, "y": 2}}]).encode(),
                       {"Content-Type": "application/json"})
    json.loads(connection.getresponse().read())
"""


def report_fuzz_client(spans=((10, 20), (40, 80), (80, 160)), calls=200):
    """Instructions per request of fuzz's client, early and later, against a bare client's."""
    if not shutil.which("valgrind"):
        raise SystemExit("error: instructions are counted with valgrind: apt-get install valgrind")
    bare = [_counted([sys.executable, "-c", BARE_CLIENT, "{port}", str(n)]) for n in (calls, 2 * calls)]
    per_bare = (bare[1][0] - bare[0][0]) / calls
    table = {"bare client": round(per_bare)}
    print(f"{'bare client (fn.add)':<32}{per_bare / 1000:>10.0f}k a request")
    for first, second in spans:
        runs = [_counted([sys.executable, "-m", "conformance", "fuzz", "--target", "http://127.0.0.1:{port}/api",
                          "--seed", "1", "--workers", "1", "--max-examples", str(n)]) for n in (first, second)]
        (low, low_requests), (high, high_requests) = runs
        per_call = (high - low) / (high_requests - low_requests)
        table[f"fuzz, {first} to {second} examples"] = {"per request": round(per_call),
                                                         "ratio": round(per_call / per_bare, 2)}
        print(f"{f'fuzz, {first} to {second} examples':<32}{per_call / 1000:>10.0f}k a request"
              f"{per_call / per_bare:>7.2f}x bare   target 3x", flush=True)
    return table


def _counted(command):
    """(instructions, requests) of `command` ({port} filled in) under callgrind, against a fresh calculator."""
    with _served([sys.executable, "-m", "reference.server", "--port", "0"]) as (_, port):
        run = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                              *[part.replace("{port}", str(port)) for part in command]],
                             capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONHASHSEED": "0"})
    found, requests = re.search(r"Collected : (\d+)", run.stderr), re.search(r"with ([\d,]+) requests", run.stdout)
    if not found:
        raise SystemExit(f"error: callgrind could not count {command}: {run.stderr[-800:]}")
    return int(found.group(1)), int(requests.group(1).replace(",", "")) if requests else 0

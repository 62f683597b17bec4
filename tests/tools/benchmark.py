"""Benchmark: the core's cost per message and HTTP throughput, as ratios to the bare JSON work.

    python tests/tools/benchmark.py instructions [--peer-venv DIR]     # load-free: valgrind's callgrind
    python tests/tools/benchmark.py timing [--rounds N] [--peer-venv DIR]
    python tests/tools/benchmark.py http [--rounds N] [--seconds S] [--peer-venv DIR]
    python tests/tools/benchmark.py fuzz [--rounds N]
    python tests/tools/benchmark.py fuzz-client                        # load-free: valgrind's callgrind

Every message is answered by the shipped calculator (`calculator.service()`,
its tape holding 100 evaluations), bytes in and bytes out, and compared with
the bare JSON work of the same exchange: `json.loads` of the request and
`json.dumps` of the answer (in JSON, even for the binary one).

`instructions` counts what one message costs in CPU instructions, which no
other load on the machine changes: each measurement runs N and then 2N
messages under callgrind (Debian's `valgrind`), so that start-up cancels out,
with Python's hash seed fixed. `timing` and `http` measure time, which a busy
machine changes, so they only report ratios, bare and ours (and the peer's)
measured in turn within each round, with the median and spread of the rounds:
`http` the requests per second of kept-alive `fn.add` from several client
processes, and each server's CPU time per request (read from /proc), against
a bare `http.server` answering a fixed body. A selection's target is a ratio
to the bare work of the whole answer (AGAINST, below).
With --peer-venv (a virtual environment holding telepact-cli==1.0.0a339) the
independent implementation is measured the same way, beside ours.
`fuzz` measures `python -m conformance fuzz` against a fresh bundled
calculator (the server's share included, on the same machine), with one
worker and with two in turn each round: the requests a second it reports;
`fuzz-client` the instructions a request costs fuzz's client (from 10 to 20,
40 to 80 and 80 to 160 examples of each function), against a bare client's.
Those two and `http` are measured in throughput.py.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import timeit
from pathlib import Path

from throughput import report_fuzz, report_fuzz_client, report_http, spread

ROOT = Path(__file__).resolve().parents[2]  # the repository


def deep(levels):
    expression = {"Constant": {"value": 1}}
    for _ in range(levels - 1):
        expression = {"Add": {"left": expression, "right": {"Constant": {"value": 1}}}}
    return expression


def points(count):
    return [{"x": i, "y": -i, "title!": f"point {i}"} for i in range(count)]


MESSAGES = {
    "fn.add": [{}, {"fn.add": {"x": 1, "y": 2}}],
    "fn.add, two invalid fields": [{}, {"fn.add": {"x": "1", "y": True}}],
    "fn.getPaperTape, 100 entries": [{}, {"fn.getPaperTape": {}}],
    "the same with @select_": [{"@select_": {"struct.Evaluation": ["result", "successful"]}}, {"fn.getPaperTape": {}}],
    "fn.evaluate, 100 levels": [{}, {"fn.evaluate": {"expression": deep(100)}}],
    "fn.add, steady binary": [{"@bin_": ["CHECKSUM"]}, {"fn.add": {"x": 1, "y": 2}}],
    "fn.add, MessagePack both ways": [{"@bin_": ["CHECKSUM"]}, {"fn.add": {"x": 1, "y": 2}}],
    "fn.getPaperTape, binary": [{"@bin_": ["CHECKSUM"]}, {"fn.getPaperTape": {}}],
    "fn.getPaperTape, packed": [{"@bin_": ["CHECKSUM"], "@pac_": True}, {"fn.getPaperTape": {}}],
    "fn.api_": [{}, {"fn.api_": {}}],
    "fn.echo, 1,000 points": [{}, {"fn.echo": {"pointArr!": points(1000)}}],
    "fn.echo, 10,000 points": [{}, {"fn.echo": {"pointArr!": points(10_000)}}],
}
TARGETS = {"fn.add": 1.5, "fn.add, two invalid fields": 1.8, "fn.getPaperTape, 100 entries": 2.3,
           "the same with @select_": 2.3, "fn.evaluate, 100 levels": 3, "fn.add, steady binary": 2,
           "fn.add, MessagePack both ways": 1.5, "fn.getPaperTape, binary": 2.3, "fn.getPaperTape, packed": 2.3,
           "fn.api_": 1.5, "fn.echo, 1,000 points": 2.3, "fn.echo, 10,000 points": 2.3}
# A row whose target is a ratio to another's bare work: a selection is applied after the whole result is
# checked (the order of checks), so the least it can cost is that of the whole answer, not of what it keeps.
AGAINST = {"the same with @select_": "fn.getPaperTape, 100 entries"}
MESSAGEPACK = {"fn.add, MessagePack both ways"}  # requests sent in MessagePack (the bare work reads them as JSON)
TESTBED = {"fn.echo, 1,000 points", "fn.echo, 10,000 points"}  # answered by ECHO, not the calculator
ECHO = [{"struct.Point": {"x": "integer", "y": "integer", "title!": "string"}},
        {"fn.echo": {"pointArr!": ["struct.Point"]}, "->": [{"Ok_": {"pointArr!": ["struct.Point"]}}]}]
# Rows whose cost per byte of the bare work is compared: a message's cost grows with its size at one rate.
PER_BYTE = ("fn.echo, 1,000 points", "fn.echo, 10,000 points")

# What runs a message N times (given as arguments: implementation, message, N, bare or not), for
# the instruction counts; the peer's in its own environment, from the calculator's schema.
DRIVER = r"""
import gc, json, sys
sys.path.insert(0, sys.argv[5]); sys.path.insert(0, sys.argv[6])
from benchmark import MESSAGES, prepare
requests = prepare(sys.argv[1], [sys.argv[2]])
handle, data, plain, answer = requests[sys.argv[2]]
n, bare = int(sys.argv[3]), sys.argv[4] == "bare"
gc.freeze()  # what was made so far is never collected: the counts of N and 2N messages collect alike
for _ in range(n):
    if bare:
        json.loads(plain), json.dumps(answer).encode()
    else:
        handle(data)
"""


def prepare(implementation, names=tuple(MESSAGES)):
    """For each message of `names`: a handle(bytes) of the service that answers it (a calculator of
    `implementation` whose tape holds 100 evaluations, or ours of ECHO), its request bytes, the
    same request in JSON, and the answer it gets (in JSON) from a second service like it."""
    handle, respond = calculator_of(implementation)
    _, answer = calculator_of(implementation)
    for i in range(100):
        for each in (respond, answer):
            each(json.dumps([{}, {"fn.evaluate": {"expression": {"Add": {"left": {"Constant": {"value": i}},
                                                                              "right": {"Constant": {"value": 1.5}}}}}}]).encode())
    first = answer(json.dumps([{"@bin_": []}, {"fn.add": {"x": 1, "y": 2}}]).encode())
    import msgpack
    checksum = msgpack.unpackb(first, strict_map_key=False)[0]["@bin_"][0]
    requests = {}
    for name in sorted(names, key=lambda name: "fn.evaluate" in name):  # (it adds to the tape)
        message = json.loads(json.dumps(MESSAGES[name]).replace('"CHECKSUM"', str(checksum)))
        plain = [{k: v for k, v in message[0].items() if k not in ("@bin_", "@pac_")}, message[1]]
        data = json.dumps(message).encode()
        if name in TESTBED:
            from reference import Service, load
            served = Service(load(ECHO), {"fn.echo": lambda arguments, headers: {"Ok_": arguments}}).handle
            requests[name] = served, data, data, json.loads(served(data).data)
            continue
        if name in MESSAGEPACK:
            from reference.protocol import codec
            data = codec.encode(message, codec.encoding(calculator_schema()))
        requests[name] = handle, data, json.dumps(plain).encode(), json.loads(answer(json.dumps(plain).encode()))
    return requests


def calculator_schema():
    from reference.services import calculator
    return calculator.service().schema


def calculator_of(implementation):
    """A new calculator of `implementation`: handle(bytes), and a function answering bytes with bytes."""
    if implementation == "ours":
        from reference.services import calculator
        handle = calculator.service().handle
        respond = lambda data: handle(data).data
    else:  # the peer's demo calculator, as `telepact demo-server` makes it, without its web server
        import asyncio
        import contextlib
        import io

        from telepact_cli import cli
        made = []

        class Kept(cli.Server):
            def __init__(self, *args):
                super().__init__(*args)
                made.append(self)
        cli.Server, cli._demo_unavailable_response = Kept, lambda: None  # (no random ErrorUnavailable)
        cli.uvicorn.run = lambda *args, **options: None
        with contextlib.redirect_stdout(io.StringIO()):
            cli.demo_server.callback(port=0)
        loop, server = asyncio.new_event_loop(), made[-1]
        respond = handle = lambda data: loop.run_until_complete(server.process(data))[0]
    return handle, respond


def instructions(implementation, python, name, bare):
    """Instructions per message, from callgrind's counts of N and 2N messages."""
    n = 400 if name.startswith(("fn.add", "fn.api_")) else 4 if "10,000" in name else 40  # (by the cost of each)
    counts = []
    for runs in (n, 2 * n):
        run = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", python, "-c", DRIVER,
                              implementation, name, str(runs), "bare" if bare else "ours", str(ROOT / "tests" / "tools"),
                              str(ROOT)], capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
        found = re.search(r"Collected : (\d+)", run.stderr)
        if run.returncode or not found:
            raise SystemExit(f"error: callgrind could not count {name}: {run.stderr[-800:]}")
        counts.append(int(found.group(1)))
    return (counts[1] - counts[0]) / n


def report_instructions(peer_venv, names=()):
    if not shutil.which("valgrind"):
        raise SystemExit("error: instructions are counted with valgrind: apt-get install valgrind")
    print(f"{'message':<32}{'bare':>10}{'ours':>10}{'ratio':>8}{'target':>8}" + (f"{'peer':>16}" if peer_venv else ""))
    table = {}
    for name in MESSAGES:
        if names and name not in names:
            continue
        bare, ours = (instructions("ours", sys.executable, name, flag) for flag in (True, False))
        row = {"bare": round(bare), "ours": round(ours), "ratio": round(ours / bare, 2)}
        line = f"{name:<32}{bare / 1000:>9.1f}k{ours / 1000:>9.1f}k{ours / bare:>7.2f}x"
        line += f"{TARGETS[name]:>7}x" if name not in AGAINST else " " * 8
        if peer_venv and name not in MESSAGEPACK | TESTBED:
            peer = instructions("peer", str(Path(peer_venv) / "bin" / "python"), name, False)
            row["peer"], line = round(peer), line + f"{peer / ours:>7.1f}x slower"
        table[name] = row
        print(line, flush=True)
        if name in AGAINST:
            whole = table[AGAINST[name]]["bare"]
            row["ratio to the whole answer's bare"] = round(ours / whole, 2)
            print(f"{'  against the whole answer:':<32}{whole / 1000:>9.1f}k{'':>10}{ours / whole:>7.2f}x"
                  f"{TARGETS[name]:>7}x", flush=True)
    if all(name in table for name in PER_BYTE):
        small, large = (table[name]["ours"] / table[name]["bare"] for name in PER_BYTE)
        table["per byte, 10,000 points against 1,000"] = round(large / small, 3)
        print(f"{'per byte, 10,000 against 1,000':<32}{large / small:>27.3f}x   target 1.15x")
    return table


def report_timing(rounds, peer_venv):
    """Seconds per message of bare, ours (and the peer's), measured in turn within each round."""
    requests = prepare("ours")
    peer = _peer_timer(peer_venv) if peer_venv else None
    table = {}
    for name, (handle, data, plain, answer) in requests.items():
        ratios, peers = [], []
        for _ in range(rounds):
            bare = _best(lambda: (json.loads(plain), json.dumps(answer).encode()))
            ours = _best(lambda: handle(data))
            ratios.append(ours / bare)
            if peer and name not in MESSAGEPACK | TESTBED:
                peers.append(peer(name) / ours)
        table[name] = {"median": round(statistics.median(ratios), 2), "spread": spread(ratios)}
        line = f"{name:<32}{statistics.median(ratios):>7.2f}x  ({spread(ratios)})"
        if peers:
            table[name]["peer slower"] = round(statistics.median(peers), 1)
            line += f"   the peer {statistics.median(peers):.1f}x slower"
        print(line, flush=True)
    return table


def _best(function, seconds=0.05):
    number = max(1, int(seconds / max(timeit.timeit(function, number=1), 1e-7)))
    return min(timeit.repeat(function, number=number, repeat=3)) / number


PEER_TIMER = r"""
import json, sys, timeit
sys.path.insert(0, sys.argv[1])
from benchmark import MESSAGEPACK, MESSAGES, TESTBED, prepare, _best
requests = prepare("peer", [name for name in MESSAGES if name not in MESSAGEPACK | TESTBED])
for line in sys.stdin:
    handle, data, _, _ = requests[line.strip()]
    print(_best(lambda: handle(data)), flush=True)
"""


def _peer_timer(venv):
    process = subprocess.Popen([str(Path(venv) / "bin" / "python"), "-c", PEER_TIMER, str(ROOT / "tests" / "tools")],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def seconds(name):
        process.stdin.write(name + "\n")
        process.stdin.flush()
        return float(process.stdout.readline())
    return seconds


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python tests/tools/benchmark.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=["instructions", "timing", "http", "fuzz", "fuzz-client"])
    parser.add_argument("--peer-venv", metavar="DIR", help="a venv with telepact-cli==1.0.0a339, to compare with")
    parser.add_argument("--rounds", type=int, default=12, help="rounds of timing or http (default 12)")
    parser.add_argument("--seconds", type=float, default=2, help="seconds of load per server per round (default 2)")
    parser.add_argument("--clients", type=int, default=4, help="load-generating processes (default 4)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    parser.add_argument("--only", action="append", default=[], metavar="MESSAGE", help="count this message only "
                        "(repeatable; instructions)")
    options = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    if options.mode == "instructions":
        table = report_instructions(options.peer_venv, options.only)
    elif options.mode == "timing":
        table = report_timing(options.rounds, options.peer_venv)
    elif options.mode == "fuzz":
        table = report_fuzz(options.rounds)
    elif options.mode == "fuzz-client":
        table = report_fuzz_client()
    else:
        table = report_http(options.rounds, options.seconds, options.clients, options.peer_venv)
    if options.json:
        Path(options.json).write_text(json.dumps(table, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

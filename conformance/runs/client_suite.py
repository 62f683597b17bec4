"""Checking a client: a scripted server plays the other side, and a driver makes the calls.

How this works
--------------
`python -m conformance client --command CMD` starts a small HTTP server of its
own (`Script`) on a free loopback port, and CMD, a driver (targets/drivers.py), with
that server's URL as its last argument. For each step of a case the script is
loaded with the exchanges the call must cause: the request the client must
send, and the answer to give it (a message, garbage, an HTTP error, a closed
connection, or nothing at all). The step passes when the client sent what was
expected and returned what it should, in time.
"""

import base64
import itertools
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import msgpack

from ..language.decoding import decode, to_msgpack
from ..language.matchers import compare, excerpt, explain
from ..reports.results import outcome
from ..targets.drivers import Driver, each

PATH = "/conformance/api"
GRACE = 2.0  # seconds a client may take beyond its timeout to report a failure
STALL = 60.0  # the longest a stalled answer is held, should nobody release it
FRESH = itertools.count(1)  # each case gets a client of its own, named by the case and this number


class Script(ThreadingHTTPServer):
    """A server that answers from a script, and records what it was sent."""

    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), Answering)
        self.url = f"http://127.0.0.1:{self.server_port}{PATH}"
        self.lock, self.released = threading.Lock(), threading.Event()
        self.answers, self.seen = [], []

    def load(self, answers):
        """Answer the next requests with `answers`, in order, and forget what was seen."""
        with self.lock:
            self.answers, self.seen = list(answers), []
        self.released.clear()

    def release(self):
        """End every stalled answer."""
        self.released.set()

    def handle_error(self, request, client_address):
        pass  # a client that hangs up is the client's business, and its case says so


class Answering(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with self.server.lock:
            self.server.seen.append((self.command, self.path, data))
            answer = self.server.answers.pop(0) if self.server.answers else None
        if answer is None:
            return self.reply(500, b"the script expected no more requests", "text/plain")
        if answer.get("close"):
            self.close_connection = True
            return
        if answer.get("stall"):
            if answer["stall"] in ("body", "trickle"):
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "100")
                self.end_headers()
                self.wfile.flush()
            while answer["stall"] == "trickle" and not self.server.released.wait(0.3):
                self.wfile.write(b" ")  # whitespace: a byte at a time, never the whole body in time
                self.wfile.flush()
            self.server.released.wait(STALL)
            self.close_connection = True
            return
        if "message" in answer:
            data, media_type = json.dumps(answer["message"]).encode(), "application/json"
        elif "msgpack" in answer:
            data, media_type = msgpack.packb(to_msgpack(answer["msgpack"])), "application/octet-stream"
        else:
            data = base64.b64decode(answer["base64"]) if "base64" in answer else answer["text"].encode()
            media_type = answer.get("contentType", "application/json")
        self.reply(answer.get("status", 200), data, answer.get("contentType", media_type))

    do_GET = do_PUT = do_DELETE = do_POST

    def reply(self, status, data, media_type):
        self.send_response(status)
        self.send_header("Content-Type", media_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def run(cases, command, settings, progress=None):
    """Run the client cases one after the other with the driver `command`; return their Results."""
    script = Script()
    threading.Thread(target=script.serve_forever, args=(0.05,), daemon=True).start()
    driver = Driver(command, [script.url])
    try:
        return each(cases, lambda case: run_case(case, script, driver, settings), progress)
    finally:
        script.release()
        driver.stop()
        script.shutdown()
        script.server_close()


def run_case(case, script, driver, settings):
    """Make a fresh client go through one case's steps; a failing step ends the case."""
    started, problems = time.monotonic(), []
    client = {"client": f"{case.id}#{next(FRESH)}", **case.client}
    for number, step in enumerate(case.steps, 1):
        script.load([exchange["answer"] for exchange in step["exchanges"]])
        instruction = {**client, **step["call"]}
        began = time.monotonic()
        reply = driver.call(instruction, case.client["timeout"] + GRACE)
        took = time.monotonic() - began
        script.release()
        with script.lock:
            seen = list(script.seen)
        found = list(_check_requests(step["exchanges"], seen)) + list(_check_reply(step["returns"], reply, took, case))
        if found:
            problems = [f"step {number} of {len(case.steps)}: {p}" for p in found]
            transcript = _transcript(instruction, step["exchanges"], seen, reply)
            break
    else:
        transcript = []
    return outcome(case, problems, case.level, started, transcript, settings.known_failure(case.id))._replace(
        replay_title="What happened")


def _wire(data):
    return "msgpack" if data[:1] == b"\x92" else "json"


def _check_requests(exchanges, seen):
    for index, (exchange, (method, path, data)) in enumerate(zip(exchanges, seen), 1):
        expected = exchange["request"]
        wire, message = _wire(data), decode(data)
        where = f"request {index}"
        if (method, path) != ("POST", PATH):
            yield f"{where}: expected POST {PATH}, got {method} {path}"
        elif message is None:
            yield f"{where}: not a message: {excerpt(data, 120)}"
        else:
            if expected["wire"] not in ("any", wire):
                yield f"{where}: expected a {expected['wire']} request, got {wire}"
            yield from (f"{where}: {line}" for line in explain(list(compare(expected["message"], message, {}))))
    if len(seen) < len(exchanges):
        yield f"the client sent {len(seen)} requests; expected {len(exchanges)}"
    elif len(seen) > len(exchanges):
        yield f"the client sent {len(seen)} requests; expected only {len(exchanges)}"


def _check_reply(expected, reply, took, case):
    if type(reply) is str:
        yield reply
    elif expected.get("error"):
        if "error" not in reply:
            yield f"expected the client to report a failure, but it returned {json.dumps(reply)[:200]}"
        elif not str(reply["error"]).strip():
            yield "the client reported a failure with an empty message"
        elif took > case.client["timeout"] + GRACE:
            yield f"the failure took {took:.1f} s, beyond the timeout of {case.client['timeout']:g} s"
    elif "error" in reply:
        yield f"the client failed: {str(reply['error'])[:300]}"
    else:
        returned = [reply.get("headers"), reply.get("body")]
        yield from (f"returned {line}" for line in explain(list(compare(expected["message"], returned, {}))))


def _transcript(instruction, exchanges, seen, reply):
    """The exchange, for a reader to see what happened: the instruction, each request and answer, the reply."""
    lines = [f"the instruction: {json.dumps(instruction)}"]
    for index, (_, _, data) in enumerate(seen, 1):
        wire, message = _wire(data), decode(data)
        shown = json.dumps(message) if message is not None else repr(data[:200])
        lines.append(f"request {index} ({wire}): {shown[:300]}")
        if index <= len(exchanges):
            lines.append(f"answered: {json.dumps(exchanges[index - 1]['answer'])[:300]}")
    lines.append(f"the client returned: {json.dumps(reply)[:300]}")
    return lines

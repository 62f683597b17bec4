"""Running cases against a server over HTTP.

How this works
--------------
`Target` is the server under test. Before anything runs, `detect()` asks it
for its schema (`fn.api_`) and works out which service it serves: the
calculator, the testbed, a mock of either, or another schema, as a set of the
words a case may require (see cases.py). A target that does not answer like a
server of the protocol is a `Trouble`, explained in one line.

Every case runs on a connection of its own, with its own username (for
"$user") and its own captured values; its steps run in order. A step sends
its request (a JSON message, text, raw bytes, MessagePack, or a bare HTTP
method) and compares the answer with the expected response: the HTTP status
(200 unless stated), HTTP headers, the wire format, the message (decoded from
JSON or MessagePack, see match.py), and size relations with earlier steps.

A step that is answered `ErrorUnavailable` (which the spec allows from any
function, any time) is sent again, a few times, before it counts as failed.

Cases run on several threads at once, except `exclusive` ones, which run one
at a time with nothing else in flight: a mock's stubs and recorded calls are
shared by every client.
"""

import base64
import http.client
import json
import sys
import time
import urllib.parse
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import msgpack

from . import report
from .match import compare, explain, from_msgpack, substitute, to_msgpack, unpacked

RETRIES = 5
FRAMES = 10_000  # a server may rightly echo a value thousands of levels deep (an @id_, say);
# reading it back takes as many levels of the parser's recursion


class Trouble(Exception):
    """The target cannot be tested: unreachable, or not a server of the protocol."""


class Result(NamedTuple):
    """The outcome of one case: status is pass, fail, known-failure, stale, other-service
    (the case is for a service the target does not serve) or not-checked (a feature the
    target was declared to lack)."""

    case: dict
    status: str
    problems: list  # readable lines
    seconds: float
    replay: tuple = ()  # for a case that found problems, lines that show them again: commands that
    replay_title: str = "To reproduce"  # resend a server case's requests, or a client case's story


class Exchange(NamedTuple):
    """One step of a server case as it happened: what was sent, and the answer's bytes."""

    request: bytes
    method: str
    path: str
    media_type: str
    answer: bytes


class Target:
    """The server under test."""

    def __init__(self, url, timeout=10):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme == "https":
            raise ValueError(f"{url}: https:// is not supported; test the server over http://, "
                             "or through a proxy that speaks http:// to the suite")
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"the target must be an http:// URL, such as http://127.0.0.1:8000/api, not {url!r}")
        self.url, self.host, self.port, self.path = url, parts.hostname, parts.port or 80, parts.path or "/"
        self.timeout = timeout
        sys.setrecursionlimit(max(sys.getrecursionlimit(), FRAMES))

    def connect(self):
        return http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)

    def post(self, message):
        """POST a JSON message; return (HTTP status, the answer's bytes)."""
        connection = self.connect()
        try:
            connection.request("POST", self.path, json.dumps(message).encode(), {"Content-Type": "application/json"})
            response = connection.getresponse()
            return response.status, response.read()
        finally:
            connection.close()

    def wait(self, seconds):
        """Wait until the target answers at all; raise Trouble if it never does."""
        deadline = time.monotonic() + seconds
        while True:
            try:
                return self.post([{}, {"fn.ping_": {}}])
            except http.client.HTTPException as error:
                raise Trouble(f"{self.url} is not a server of the protocol: its answer is not HTTP "
                              f"({type(error).__name__}: {' '.join(str(error).split())[:80] or 'nothing'})") from None
            except OSError as error:
                reason = error.strerror or str(error)
            if time.monotonic() >= deadline:
                raise Trouble(f"cannot reach {self.url}: {reason}")
            time.sleep(0.2)


def detect(target):
    """What the target serves, as (the words cases may require, a description), or raise Trouble."""
    status, data = target.post([{}, {"fn.api_": {"includeInternal!": True}}])
    message = decode(data)
    api = message[1].get("Ok_", {}).get("api") if _is_message(message) else None
    if not isinstance(api, list):
        hint = ""
        if status == 404 and not target.path.rstrip("/").endswith("/api"):
            hint = " (did you forget /api at the end of the URL?)"
        shown = data[:120].decode(errors="replace").strip() or "nothing"
        raise Trouble(f"{target.url} is not a server of the protocol: asked for its schema (fn.api_), "
                      f"it answered HTTP {status} with {shown!r}{hint}")
    keys = {key for entry in api if isinstance(entry, dict) for key in entry}
    service = "calculator" if "info.Calculator" in keys else "testbed" if "info.Testbed" in keys else None
    kind = "mock" if "fn.createStub_" in keys else "live"
    profile = {service, kind} - {None}
    name = {"calculator": "the calculator", "testbed": "the testbed", None: "a service of another schema"}[service]
    return profile, (f"a mock of {name}" if kind == "mock" else name)


def _is_message(value):
    return type(value) is list and len(value) == 2 and type(value[0]) is dict and type(value[1]) is dict


def run(cases, target, workers=4, known=frozenset(), progress=None):
    """Run `cases` (exclusive ones alone, at the end); return their Results in case order."""
    shared = [c for c in cases if not c.get("exclusive")]
    alone = [c for c in cases if c.get("exclusive")]
    results = {}

    def one(case):
        result = run_case(case, target, known)
        results[case["id"]] = result
        if progress:
            progress(result)

    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(one, shared))
    for case in alone:
        one(case)
    return [results[c["id"]] for c in cases]


def run_case(case, target, known=frozenset()):
    """Run one case's steps; a failing step ends the case."""
    started, user, captured = time.monotonic(), f"cf-{uuid.uuid4().hex[:12]}", {}
    state = {"encodings": {}, "sizes": []}
    transcript, problems = [], []
    connection = target.connect()
    try:
        for number, step in enumerate(case["steps"], 1):
            problems = _step(step, connection, target, user, captured, state, transcript)
            if problems:
                problems = [f"step {number} of {len(case['steps'])}: {p}" for p in problems]
                break
    except (OSError, http.client.HTTPException) as error:
        problems = [f"step {len(transcript) + 1}: no answer from {target.url}: {error}"]
    except (KeyError, ValueError) as error:
        problems = [f"the case could not run: {error}"]
    finally:
        connection.close()
    status = "fail" if problems else "pass"
    if case["id"] in known:
        status = "known-failure" if problems else "stale"
    replay = report.reproduce(target, transcript) if problems else ()
    return Result(case, status, problems, time.monotonic() - started, replay)


def _step(step, connection, target, user, captured, state, transcript):
    """Send one step's request (again while the answer is an unexpected ErrorUnavailable)
    and return what differs from the expected response."""
    request, expected = step["request"], step["response"]
    data, media_type = _request_bytes(request, captured, user, state)
    method, path = request.get("method", "POST"), request.get("path", target.path)
    for attempt in range(RETRIES):
        headers = {"Content-Type": media_type} if method == "POST" else {}
        connection.request(method, path, data if method == "POST" else None, headers)
        response = connection.getresponse()
        answer = response.read()
        if response.getheader("Connection", "").lower() == "close":
            connection.close()
        actual = decode(answer, state, expected.get("unpack", False))
        unavailable = (_is_message(actual) and "ErrorUnavailable" in actual[1]
                       and "ErrorUnavailable" not in json.dumps(expected))
        if not unavailable:
            break
        time.sleep(0.05 * (attempt + 1))
    transcript.append(Exchange(data, method, path, media_type, answer))
    state["sizes"].append(len(answer))
    if unavailable:
        return [f"the target answered ErrorUnavailable {RETRIES} times in a row"]
    return list(_compare(expected, response, answer, actual, captured, user, state))


def _request_bytes(request, captured, user, state):
    if "message" in request:
        return json.dumps(substitute(request["message"], captured, user)).encode(), "application/json"
    if "text" in request:
        return substitute(request["text"], captured, user).encode(), "application/json"
    if "repeated" in request:
        text = "".join(piece * count for piece, count in request["repeated"])
        return substitute(text, captured, user).encode(), "application/json"
    if "base64" in request:
        return base64.b64decode(request["base64"]), "application/octet-stream"
    if "msgpack" in request:
        message = substitute(request["msgpack"], captured, user)
        if request.get("ids"):  # use the ids the server advertised in this case
            checksum = message[0]["@bin_"][0]
            ids = {name: key for key, name in state["encodings"][checksum].items()}
            message = [message[0], _with_ids(message[1], ids)]
        return msgpack.packb(to_msgpack(message)), "application/octet-stream"
    return b"", "application/json"


def _with_ids(value, ids):
    """Names as ids: in map keys, and in the header rows of packed arrays."""
    if type(value) is dict and list(value) not in (["$bin"], ["$ext"]):
        return {(f"#{ids[k]}" if k in ids else k): _with_ids(v, ids) for k, v in value.items()}
    if type(value) is list:
        if value and value[0] == {"$ext": [17, ""]} and len(value) > 1:
            return [value[0], _header_ids(value[1], ids), *(_with_ids(v, ids) for v in value[2:])]
        return [_with_ids(v, ids) for v in value]
    return value


def _header_ids(header, ids):
    return [_header_ids(cell, ids) if type(cell) is list else ids.get(cell, cell) for cell in header]


def decode(answer, state=None, unpack=False):
    """A message as JSON notation (MessagePack keys as names where `state` has learnt the
    encoding, else "#12"); None if it is neither JSON nor MessagePack."""
    state = {"encodings": {}} if state is None else state
    if answer[:1] == b"\x92":
        try:
            raw = msgpack.unpackb(answer, strict_map_key=False)
            headers = raw[0] if type(raw) is list and raw and type(raw[0]) is dict else {}
            checksums = headers.get("@bin_")
            if isinstance(headers.get("@enc_"), dict) and checksums:
                state["encodings"][checksums[0]] = {v: k for k, v in headers["@enc_"].items()}
            names = state["encodings"].get(checksums[0]) if checksums else None
            return from_msgpack(unpacked(raw) if unpack else raw, names)
        except Exception:
            return None
    try:
        return json.loads(answer)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser goes
        return None


def _compare(expected, response, answer, actual, captured, user, state):
    status = expected.get("status", 200)
    if response.status != status:
        yield f"expected HTTP {status}, got HTTP {response.status}: {answer[:200]!r}"
        return
    for name, value in expected.get("headers", {}).items():
        got = (response.getheader(name) or "").split(";")[0].strip()
        if got.lower() != value.lower():
            yield f"expected the HTTP header {name}: {value}, got {got or 'none'}"
    wire = expected.get("wire")
    if wire and ("msgpack" if answer[:1] == b"\x92" else "json") != wire:
        yield f"expected a {wire} answer, got {answer[:80]!r}"
    if "message" in expected:
        if actual is None:
            yield f"the answer is not a message: {answer[:200]!r}"
        else:
            wanted = substitute(expected["message"], None, user)
            yield from explain(list(compare(wanted, actual, captured)))
    for word, smaller in (("smallerThan", True), ("largerThan", False)):
        if word in expected:
            other = state["sizes"][expected[word] - 1]
            if (len(answer) < other) != smaller or len(answer) == other:
                relation = "fewer" if smaller else "more"
                yield f"expected {relation} than {other} bytes (step {expected[word]}), got {len(answer)}"

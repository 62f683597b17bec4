"""Running cases against a server over HTTP, and reporting what happened.

How this works
--------------
Every case runs on a connection of its own, with its own username (for
"$user") and its own captured values; its steps run in order. A step sends
its request (a JSON message, text, raw bytes, MessagePack, or a bare HTTP
method) and compares the answer with the expected response: the HTTP status
(200 unless stated), HTTP headers, the wire format, the message (decoded from
JSON or MessagePack, see match.py), and size relations with earlier steps.

A step that is answered `ErrorUnavailable` (which the spec allows from any
function, any time) is sent again, a few times, before it counts as failed.

Cases run on several threads at once, except `exclusive` ones, which run one
at a time with nothing else in flight: the mock's stubs and recorded calls are
shared by every client.
"""

import base64
import http.client
import json
import shlex
import time
import urllib.parse
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple
from xml.sax.saxutils import escape, quoteattr

import msgpack

from .match import compare, explain, from_msgpack, substitute, to_msgpack

RETRIES = 5


class Result(NamedTuple):
    """The outcome of one case: status is pass, fail, known-failure, stale or skip."""

    case: dict
    status: str
    problems: list  # readable lines
    transcript: list  # (request bytes, method, path, content type, response bytes) per step
    seconds: float


class Target:
    """The server under test."""

    def __init__(self, url, timeout=10):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"the target must be an http:// URL, not {url!r}")
        self.url, self.host, self.port, self.path = url, parts.hostname, parts.port or 80, parts.path or "/"
        self.timeout = timeout

    def connect(self):
        return http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)

    def wait(self, seconds):
        """Wait until the target answers fn.ping_; return None, or why it never did."""
        deadline, reason = time.monotonic() + seconds, None
        while True:
            try:
                connection = self.connect()
                connection.request("POST", self.path, b'[{}, {"fn.ping_": {}}]')
                connection.getresponse().read()
                connection.close()
                return None
            except OSError as error:
                reason = error.strerror or str(error)
            if time.monotonic() >= deadline:
                return f"cannot reach {self.url}: {reason}"
            time.sleep(0.2)

    def call(self, message):
        """POST a JSON message; return the answer decoded (for feature detection)."""
        connection = self.connect()
        try:
            connection.request("POST", self.path, json.dumps(message).encode())
            data = connection.getresponse().read()
        finally:
            connection.close()
        return ("msgpack", None) if data[:1] == b"\x92" else ("json", json.loads(data))


def detect(target):
    """The features the target offers, worked out from its answers."""
    kind, answer = target.call([{}, {"fn.api_": {"includeInternal!": True}}])
    api = answer[1].get("Ok_", {}).get("api", []) if kind == "json" else []
    keys = {key for entry in api if isinstance(entry, dict) for key in entry}
    if "fn.evaluate" not in keys:
        raise ValueError(f"{target.url} does not serve the calculator's schema (no fn.evaluate in fn.api_)")
    features = {"core", "http"}
    features |= {"mock"} if "fn.createStub_" in keys else {"calculator", "auth"}
    if target.call([{"@bin_": []}, {"fn.ping_": {}}])[0] == "msgpack":
        features.add("binary")
    return features


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
    return Result(case, status, problems, transcript, time.monotonic() - started)


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
        actual = _decode(answer, state)
        unavailable = (type(actual) is list and len(actual) == 2 and isinstance(actual[1], dict)
                       and "ErrorUnavailable" in actual[1] and "ErrorUnavailable" not in json.dumps(expected))
        if not unavailable:
            break
        time.sleep(0.05 * (attempt + 1))
    transcript.append((data, method, path, media_type, answer))
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
    if type(value) is dict and list(value) not in (["$bin"], ["$ext"]):
        return {(f"#{ids[k]}" if k in ids else k): _with_ids(v, ids) for k, v in value.items()}
    if type(value) is list:
        return [_with_ids(v, ids) for v in value]
    return value


def _decode(answer, state):
    """The answer as a message in JSON notation; None if it is neither JSON nor MessagePack."""
    if answer[:1] == b"\x92":
        try:
            raw = msgpack.unpackb(answer, strict_map_key=False)
            headers = raw[0] if type(raw) is list and raw and type(raw[0]) is dict else {}
            checksums = headers.get("@bin_")
            if isinstance(headers.get("@enc_"), dict) and checksums:
                state["encodings"][checksums[0]] = {v: k for k, v in headers["@enc_"].items()}
            names = state["encodings"].get(checksums[0]) if checksums else None
            return from_msgpack(raw, names)
        except Exception:
            return None
    try:
        return json.loads(answer)
    except ValueError:
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


def curl(target, transcript):
    """Shell commands that send the same requests again, for reproducing a failure by hand."""
    commands = []
    for data, method, path, media_type, _ in transcript:
        url = shlex.quote(f"http://{target.host}:{target.port}{path}")
        try:
            text = data.decode()
        except UnicodeDecodeError:
            text = None
        if method != "POST":
            commands.append(f"curl -s -i -X {method} {url}")
        elif media_type == "application/json" and text is not None:
            commands.append(f"curl -s -X POST {url} -H 'Content-Type: {media_type}' --data-binary {shlex.quote(text)}")
        else:
            commands.append(f"echo {base64.b64encode(data).decode()} | base64 -d | curl -s -X POST {url} "
                            f"-H 'Content-Type: {media_type}' --data-binary @- --output response.bin")
    return commands


def junit(results, target):
    """A JUnit XML report."""
    counts = _counts(results)
    lines = [f'<testsuite name="conformance" tests="{len(results)}" failures="{counts["fail"] + counts["stale"]}" '
             f'skipped="{counts["skip"] + counts["known-failure"]}" timestamp="{time.strftime("%Y-%m-%dT%H:%M:%S")}">']
    for result in results:
        case = result.case
        lines.append(f'  <testcase classname={quoteattr(case["file"])} name={quoteattr(case["id"])} '
                     f'time="{result.seconds:.3f}">')
        detail = escape("\n".join(result.problems + curl(target, result.transcript)))
        if result.status in ("fail", "stale"):
            message = "passes but is listed as a known failure" if result.status == "stale" else result.problems[0]
            lines.append(f'    <failure message={quoteattr(message)}>{detail}</failure>')
        elif result.status in ("skip", "known-failure"):
            lines.append(f'    <skipped message={quoteattr(result.status)}>{detail}</skipped>')
        lines.append("  </testcase>")
    lines.append("</testsuite>")
    return "\n".join(lines) + "\n"


def report(results, target, features):
    """A JSON report."""
    return json.dumps({
        "target": target.url, "features": sorted(features), "summary": _counts(results),
        "cases": [{"id": r.case["id"], "status": r.status, "level": r.case["level"],
                   "requirements": r.case["requirements"], "seconds": round(r.seconds, 3),
                   "problems": r.problems, "reproduce": curl(target, r.transcript) if r.problems else []}
                  for r in results]}, indent=2) + "\n"


def _counts(results):
    counts = dict.fromkeys(("pass", "fail", "skip", "known-failure", "stale"), 0)
    for result in results:
        counts[result.status] += 1
    return counts


def summary(results):
    """The last line of a run: how many cases passed, failed and were skipped."""
    counts = _counts(results)
    line = f"{counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped"
    if counts["known-failure"] or counts["stale"]:
        line += f", {counts['known-failure']} known failures, {counts['stale']} stale"
    return line

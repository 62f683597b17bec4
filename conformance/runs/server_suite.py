"""Running cases against a server over HTTP.

How this works
--------------
`detect()` asks the `Target` for its schema (`fn.api_`) to learn what it
serves (the calculator, the testbed, a mock of either, or another schema); a
target that does not answer like a server of the protocol is a `Trouble`.

A `Run` holds the target, the run's Settings (settings.py: workers, known
failures, level, declared limits) and what stops it; each case's `Steps` run on a connection
of their own, with their own username ("$user"), captured values and the
encodings answers taught. A step sends its request and compares the answer
with the expected response: HTTP status, headers, wire, message (language/matchers.py)
and sizes. A step's `spec` part (MUST) is compared first; a step that breaks only
the rest, our conventions, lets the case go on, as a later step may still
break a MUST. An unexpected ErrorUnavailable is retried a few times. Cases
run on several threads, `exclusive` ones (which use a mock's shared stubs)
alone at the end.
"""

import base64
import contextlib
import http.client
import json
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import msgpack

from ..language.decoding import decode, one_at_a_time, readings, to_msgpack
from ..language.matchers import compare, excerpt, explain, substitute
from ..language.suite import LEVELS, LIMITS
from ..reports.reproduce import Exchange, cut, reproduce, shown
from ..reports.results import not_run, outcome
from ..targets.remote import Overlong, Trouble, read, send

RETRIES = 5


def detect(target):
    """What the target serves, as (the words cases may require: its service, whether it is a mock, the
    functions its schema has; a description), or raise Trouble."""
    try:
        status, data, _ = target.post([{}, {"fn.api_": {"includeInternal!": True}}])
    except Overlong as error:
        raise Trouble(f"{target.url} answered fn.api_ with more than the suite reads: {error}") from None
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
    profile = {service, kind, *(key for key in keys if key.startswith("fn."))} - {None}
    name = {"calculator": "the calculator", "testbed": "the testbed", None: "a service of another schema"}[service]
    return profile, (f"a mock of {name}" if kind == "mock" else name)


def sort_out(chosen, profile, without=frozenset()):
    """The chosen cases to run against a target serving `profile` (see detect), and the Results of
    the others: for other services, or using features declared absent (`without`)."""
    selected, aside = [], []
    for case in chosen:
        if not case.applies(profile):
            aside.append(not_run(case, "for other services", f"needs {', '.join(case.requires)}"))
        elif without & set(case.features):
            aside.append(not_run(case, f"not checked (without {', '.join(sorted(without))})"))
        else:
            selected.append(case)
    return selected, aside


def _is_message(value):
    return type(value) is list and len(value) == 2 and type(value[0]) is dict and type(value[1]) is dict


class Run:
    """A run of server cases against one target: its settings, made once, and what stops it (a
    `progress` that answers a Result with True, or a target that stopped answering)."""

    def __init__(self, target, settings, progress=None):
        self.target, self.settings, self.progress, self.stopped = target, settings, progress, []

    def results(self, cases):
        """Run `cases` (exclusive ones alone, at the end); their Results in case order. Once the run is
        stopped, or the target stops answering (a case without an answer, then no ping answered: `errored`),
        no further case starts."""
        results = {}
        with ThreadPoolExecutor(self.settings.workers) as pool:
            try:
                list(pool.map(lambda case: self.one(case, results), [c for c in cases if not c.exclusive]))
            except KeyboardInterrupt:  # no case starts now; those in flight end within their timeout
                self.stopped.append(None)
                raise
        for case in cases:
            if case.exclusive:
                self.one(case, results)
        return [results[c.id] for c in cases if c.id in results]

    def one(self, case, results):
        """Run a case into `results`, unless the run is stopped."""
        if self.stopped:
            return
        result, target = Steps(self, case).result(), self.target
        if result.problems and "no answer from" in result.problems[0] and (target.stopped or not target.answers()):
            # Not this case's failure: the target is gone, and no case after it is run.
            target.stopped = target.stopped or f"stopped answering during {case.id} ({result.problems[0]})"
            result = result._replace(status="errored")
            self.stopped.append(case)
        results[case.id] = result
        if self.progress and self.progress(result):
            self.stopped.append(case)


class Steps:
    """One case's steps as they run, on a connection of their own: the username ("$user") and the values
    captured, the encodings the answers taught and their sizes, and what was sent and answered."""

    def __init__(self, run, case):
        self.run, self.case, self.target = run, case, run.target
        self.user, self.started = f"cf-{uuid.uuid4().hex[:12]}", time.monotonic()
        declared = run.settings.limits
        self.captured = {("limit", name): value for name, value in declared.items()}  # (for $limit: language/matchers.py)
        self.limits = {name: declared.get(name, LIMITS[name][0]) for name in LIMITS}
        self.encodings, self.sizes, self.transcript = {}, [], []
        self.whole = case.level in LEVELS[run.settings.level]  # (else only the spec parts are checked)
        self.status = None if case.level == "MUST" else 200  # (a convention's case expects HTTP 200)

    def result(self):
        """Run the steps at the run's level; a step that breaks a MUST, or the case's only level, ends them.
        A step's `undeclared` response is expected instead when a limit the case depends on was not declared."""
        case, problems, failed_level, wanted = self.case, [], "", None
        undeclared = not set(case.limits) <= self.run.settings.limits.keys()
        self.connection = self.target.connect()
        try:
            for number, step in enumerate(case.steps, 1):
                expected = step["undeclared"] if undeclared and "undeclared" in step else step["response"]
                must, rest = self.step(step["request"], expected)
                where = f"step {number} of {len(case.steps)}" + (" (on a new connection)" * (
                    step["request"].get("connection") == "new"))
                if must or (rest and "spec" not in step and case.level == "MUST"):
                    problems, failed_level, wanted = [f"{where}: {p}" for p in must or rest], "MUST", expected
                    break
                if rest and not problems:
                    problems, failed_level, wanted = [f"{where}: {p}" for p in rest], case.level, expected
                    if not any("spec" in later for later in case.steps[number:]):
                        break
        except (OSError, http.client.HTTPException) as error:  # an answer is what every request is owed
            step = case.steps[len(self.transcript)] if len(self.transcript) < len(case.steps) else {}
            problems = [f"step {len(self.transcript) + 1}: no answer from {self.target.url}: {error}"]
            failed_level = "MUST" if "spec" in step.get("response", {}) else case.level
        except (KeyError, ValueError) as error:  # a request made from what an earlier answer should have held
            problems, failed_level = [f"the case could not run: {error}"], case.level
        finally:
            self.connection.close()
        if failed_level not in LEVELS[self.run.settings.level]:  # (a convention --level set aside stopped the case)
            problems, failed_level = [], ""
        received = shown(self.transcript[-1].answer, self.encodings) if problems and self.transcript else ""
        replay = problems and reproduce(self.target, self.transcript)
        known = self.run.settings.known_failure(case.id)
        expected = cut(json.dumps(wanted, ensure_ascii=False)) if problems and wanted is not None else ""
        return outcome(case, problems, failed_level, self.started, replay, known)._replace(answer=received,
                                                                                          expected=expected)

    def step(self, request, expected):
        """Send one step's request (again while unexpectedly unavailable); return how the answer differs
        from what is `expected`: its spec part, and the rest if the whole case is checked."""
        data, media_type = self.request_bytes(request)
        target, connection = self.target, self.connection
        method, path = request.get("method", "POST"), request.get("path", target.path).replace("$target", target.url)
        if request.get("connection") == "new":  # (http.client connects again for the next request)
            connection.close()
        with contextlib.ExitStack() as alone:
            for attempt in range(RETRIES):
                send(connection.exchange(target.timeout), method, path, data, media_type, request.get("framing"))
                response = connection.getresponse()
                answer = read(response)
                if response.getheader("Connection", "").lower() == "close":
                    connection.close()
                alone.enter_context(one_at_a_time(answer))  # (held until the answer is judged)
                reading = readings(answer, self.encodings)  # (an answer is decoded once for all its step's checks)
                message = reading()
                unavailable = (_is_message(message) and "ErrorUnavailable" in message[1]
                               and "ErrorUnavailable" not in json.dumps(expected))
                if not unavailable:
                    break
                time.sleep(0.05 * (attempt + 1))
            self.transcript.append(Exchange(data, method, path, media_type, answer, request.get("framing")))
            self.sizes.append(len(answer))
            if unavailable:
                return [f"the target answered ErrorUnavailable {RETRIES} times in a row"], []
            spec = expected.get("spec")
            must = list(self.compare(spec, response, answer, dict(self.captured), None, reading)) if spec else []
            rest = list(self.compare(expected, response, answer, self.captured, self.status, reading))  # (captures)
            return must, rest if self.whole else []

    def request_bytes(self, request):
        """The bytes of a step's request, and their media type, made with the values captured so far."""
        captured, user = self.captured, self.user
        if "message" in request:
            return json.dumps(substitute(request["message"], captured, user)).encode(), "application/json"
        if "repeated" in request:  # [piece, how many times], each piece text or {"$bin": base64}
            pieces = [(base64.b64decode(piece["$bin"]) if type(piece) is dict else piece, _count(count, self.limits))
                      for piece, count in request["repeated"]]
            if any(type(piece) is bytes for piece, _ in pieces):
                return (b"".join((p if type(p) is bytes else p.encode()) * n for p, n in pieces),
                        "application/octet-stream")
            return substitute("".join(p * n for p, n in pieces), captured, user).encode(), "application/json"
        if "text" in request:
            return substitute(request["text"], captured, user).encode(), "application/json"
        if "base64" in request:
            return base64.b64decode(request["base64"]), "application/octet-stream"
        if "msgpack" in request:
            message = substitute(request["msgpack"], captured, user)
            if request.get("ids"):  # use the ids the server advertised in this case
                ids = {name: key for key, name in self.encodings[message[0]["@bin_"][0]].items()}
                message = [message[0], _with_ids(message[1], ids)]
            return msgpack.packb(to_msgpack(message)), "application/octet-stream"
        return b"", "application/json"

    def compare(self, expected, response, answer, captured, status, read):
        """Yield how an answer (its bytes, and `read` of them) differs from an expected response: a step's,
        or its spec part (status None)."""
        if "either" in expected:  # several answers are right: one of them will do
            tries = [list(self.compare(option, response, answer, dict(captured), status, read))
                     for option in expected["either"]]
            if all(tries):  # how the closest differs, first, so that its failure is grouped with their like
                closest = min(tries, key=len)
                yield from closest
                yield (f"(that is the closest of the {len(tries)} answers allowed; the others differ too: "
                       + " | ".join(found[0] for found in tries if found is not closest) + ")")
            return
        status = expected.get("status", status)
        if status is not None and response.status != status:
            yield f"expected HTTP {status}, got HTTP {response.status}: {excerpt(answer)}"
            return
        for name, value in expected.get("headers", {}).items():
            got = (response.getheader(name) or "").split(";")[0].strip()
            if got.lower() != value.lower():
                yield f"expected the HTTP header {name}: {value}, got {got or 'none'}"
        wire = expected.get("wire")
        if wire and ("msgpack" if answer[:1] == b"\x92" else "json") != wire:
            yield f"expected a {wire} answer, got {excerpt(answer, 80)}"
        if "message" in expected:
            actual = read(expected.get("unpack", False), expected.get("raw", False))
            if actual is None:
                yield f"the answer is not a message: {excerpt(answer)}"
            else:
                wanted = substitute(expected["message"], None, self.user)
                yield from explain(list(compare(wanted, tolerated(actual, wanted), captured)))
        for word, smaller in (("smallerThan", True), ("largerThan", False)):
            if word in expected:
                other = self.sizes[expected[word] - 1]
                if (len(answer) < other) != smaller or len(answer) == other:
                    relation = "fewer" if smaller else "more"
                    yield f"expected {relation} than {other} bytes (step {expected[word]}), got {len(answer)}"


TOLERATED = ("@warn_",)  # stock response headers a server may add to any answer


def tolerated(actual, wanted):
    """The answer without the stock headers (`@warn_`) a server may add, unless expected."""
    if not (_is_message(actual) and type(wanted) is list and len(wanted) == 2 and type(wanted[0]) is dict):
        return actual
    extra = [name for name in TOLERATED if name in actual[0] and name not in wanted[0]]
    return [{k: v for k, v in actual[0].items() if k not in extra}, actual[1]] if extra else actual


def _count(count, limits):
    """How many times a piece is repeated: a number, or {"$limit": name, "plus": n}, the limit's value
    (declared, or else the guide's) and n."""
    return count if type(count) is int else limits[count["$limit"]] + count.get("plus", 0)


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

"""`python -m conformance fuzz`: any server checked against its own schema, with calls made from it.

How this works
--------------
The target's schema is read from `fn.api_` (language.py). For each function,
`Fuzzer.examples` makes calls by seed (values.py): a valid call, checked as
the named CHECKS say; the same call on MessagePack now and then, once the
target has negotiated it (and with `deterministic`, compared value for value
with the JSON answer); the call with a generated `@select_`; and the call
with exactly one thing wrong, which must be refused with a case at that
place. A failing call is shrunk (values.smaller) while it fails the same
check, and becomes a `Finding`: the check, the function, the call, what is
wrong, the answer. Requests keep to a rate and a time limit; a target that
stops answering ends the run, said once.
"""

import base64
import http.client
import json
import threading
import time
from typing import NamedTuple

import msgpack

from . import values
from .cases import level_of
from .language import Schema
from .report import printable, reproduce
from .runner import Exchange, Result, decode
from .target import Trouble

CHECKS = {  # name -> (what it checks, the requirements it rests on)
    "message": ("every answer is a message, [headers, body], whose body holds one result tag",
                ["message.response-body"]),
    "accepted": ("a valid call is never refused as invalid", ["validation.always"]),
    "rejected": ("a call with one thing wrong is refused with ErrorInvalidRequestBody_ and a case at that place",
                 ["error.invalid-body", "case.path"]),
    "result": ("every result is one the function declares (its own, or the stock errors it takes), with its "
               "declared fields", ["fn.results", "message.response-body"]),
    "headers": ("every response header the schema declares has its declared type", ["conv.response-headers"]),
    "handler": ("no handler raised (ErrorUnknown_) or answered outside the schema (ErrorInvalidResponseBody_, "
                "ErrorInvalidResponseHeaders_): the service's own bugs", ["conv.response-validation"]),
    "select": ("an answer to a call with @select_ holds only the fields selected", ["header.select",
                                                                                  "conv.select-rules"]),
    "binary": ("an answer on MessagePack carries the same values as on JSON (with --deterministic)",
               ["binary.negotiate"]),
}
REFUSALS = ("ErrorParseFailure_", "ErrorInvalidRequestHeaders_", "ErrorInvalidRequestBody_")
HANDLER_BUGS = ("ErrorUnknown_", "ErrorInvalidResponseBody_", "ErrorInvalidResponseHeaders_")
MAX_SHRINKS = 60  # calls one finding may spend on being made smaller


class Finding(NamedTuple):
    """A call that fails a check: the call as sent ([headers, body]), on which wire, what is wrong, and
    the answer received (decoded, or its bytes as text)."""

    check: str
    function: str
    call: list
    binary: bool
    problem: str
    answer: str
    path: tuple = ()  # of a rejected call: where its one wrong thing is


class Fuzzer:
    """Calls of the target's functions, made and checked (see above)."""

    def __init__(self, target, rng, headers=None, rate=None, deadline=None, deterministic=False, binary=True,
                 shown=None):
        self.target, self.rng, self.headers, self.shown = target, rng, headers or {}, shown  # (shown: for -v)
        self.gap, self.deadline, self.deterministic = 1 / rate if rate else 0, deadline, deterministic
        self.lock, self.last, self.sent = threading.Lock(), 0.0, 0
        self.tags = {}  # function -> the result tags its calls were answered with
        self.encoding = None  # the target's binary encoding, once negotiated
        self.failed = set()  # (function, check) pairs that have failed
        api = self.send([{}, {"fn.api_": {"includeInternal!": True}}])[1]
        entries = api and api[1].get("Ok_", {}).get("api")
        if not isinstance(entries, list):
            raise Trouble(f"{target.url} did not answer fn.api_ with its schema: {str(api)[:200]}")
        self.schema = Schema(entries)
        self.encoding = self.negotiate() if binary else None

    def send(self, message, binary=False):
        """Send a message (as MessagePack, with names as the target's ids, if `binary`), keeping to the
        rate: (HTTP status, the answer decoded with names, or None, the answer's bytes). No answer is
        (0, None, why); a target that then answers no ping either is Trouble."""
        with self.lock:
            pause = self.last + self.gap - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            self.last, self.sent = time.monotonic(), self.sent + 1
        try:
            status, answer = self.target.post(None, *self.encoded(message, binary))
        except (OSError, http.client.HTTPException) as error:
            if not self.target.answers():
                raise Trouble(f"{self.target.url} stopped answering: {error}") from None
            return 0, None, f"no answer: {error}".encode()
        decoded = decode(answer, {"encodings": self.encoding["names"] if self.encoding else {}})
        decoded = _plain(decoded) if answer[:1] == b"\x92" else decoded
        if self.shown:
            self.shown(message, binary, status, decoded)
        return status, decoded, answer

    def encoded(self, message, binary=False):
        """A message's bytes and media type: JSON, or MessagePack with bytes as bytes and names as ids."""
        if not binary:
            return json.dumps(message).encode(), "application/json"
        [(name, arguments)] = message[1].items()
        body = {name: values.as_bytes(self.schema, arguments, self.schema.functions[name].arguments)}
        headers = {**message[0], "@bin_": [self.encoding["checksum"]]}
        return msgpack.packb([headers, _ids(body, self.encoding["ids"])]), "application/octet-stream"

    def negotiate(self):
        """The target's binary encoding, asked for with @bin_: [] ({ids, names, checksum}), or None."""
        _, message, _ = self.send([{"@bin_": []}, {"fn.ping_": {}}])
        encoding = message and message[0].get("@enc_")
        checksums = message and message[0].get("@bin_")
        if not isinstance(encoding, dict) or not checksums:
            return None
        return {"ids": encoding, "checksum": checksums[0], "names": {checksums[0]: {v: k for k, v in encoding.items()}}}

    def functions(self, names=()):
        """The functions to call: those named, else every public one."""
        if names:
            return [self.schema.functions[name] for name in names]
        return [f for name, f in sorted(self.schema.functions.items()) if not f.internal]

    def examples(self, function, count):
        """Make and check `count` examples of calls of `function`; yield the Findings, shrunk."""
        for number in range(count):
            if self.late():
                return
            maker = values.Maker(self.schema, self.rng)
            arguments = maker.fields(function.arguments, 0)
            call = [dict(self.headers), {function.name: arguments}]
            found = self.check(function, call)
            if not found and self.encoding and number % 3 == 0:
                found = self.check(function, call, binary=True)
            if not found and function.results["Ok_"] and number % 2 == 0:
                selected = [{**call[0], "@select_": self.selection(function)}, call[1]]
                found = self.check(function, selected)
            if not found:
                found = self.check_wrong(function, arguments)
            if found:  # (shrunk the first time a function fails a check: its report shows that one)
                first = (function.name, found.check) not in self.failed
                self.failed.add((function.name, found.check))
                yield self.shrink(function, found) if first else found

    def late(self):
        """Whether the time limit is past."""
        return self.deadline is not None and time.monotonic() > self.deadline

    def check(self, function, call, binary=False):
        """The first check the call fails, as a Finding, or None."""
        status, message, answer = self.send(call, binary)
        problem = _message_problem(status, message)
        if problem:
            return Finding("message", function.name, call, binary, problem, _shown(message, answer))
        headers, body = message
        [(tag, fields)] = body.items()
        self.tags[function.name] = self.tags.get(function.name, set()) | {tag}
        checks = [  # each a problem in words, or "", asked in turn (the last one sends a request)
            ("handler", lambda: tag in HANDLER_BUGS and f"the service answered {tag}: {_json(fields)}"),
            ("accepted", lambda: tag in REFUSALS and f"a valid call was refused: {tag} {_json(fields)}"),
            ("result", lambda: self.result_problem(function, tag, fields, "@select_" in call[0])),
            ("headers", lambda: self.header_problem(headers)),
            ("select", lambda: "@select_" in call[0] and tag == "Ok_" and self.selection_problem(function, fields,
                                                                                                  call[0])),
            ("binary", lambda: binary and self.deterministic and self.parity_problem(call, body)),
        ]
        for check, problem in checks:
            said = problem()
            if said:
                return Finding(check, function.name, call, binary, said, _shown(message, answer))
        return None

    def result_problem(self, function, tag, fields, selected):
        if tag not in function.results:
            return f"{tag} is no result of {function.name} (it has {', '.join(sorted(function.results))})"
        found = [(path, why) for path, why in self.schema.object_problems(fields, function.results[tag], (tag,))
                 if not (selected and why == "RequiredObjectKeyMissing")]
        return "; ".join(f"{_where(path)}: {why}" for path, why in found[:3])

    def header_problem(self, headers):
        declared = self.schema.response_headers
        found = [problem for name, value in headers.items() if name in declared
                 for problem in self.schema.problems(value, declared[name], (name,))]
        return "; ".join(f"{_where(path)}: {why}" for path, why in found[:3])

    def selection(self, function):
        """A @select_ for a call of `function`: a few of its Ok_ fields, and of each struct's it returns."""
        pick = lambda names: sorted(self.rng.sample(sorted(names), self.rng.randint(0, len(names))))
        selection = {"->": {"Ok_": pick(function.results["Ok_"])}}
        for name in sorted(self.reachable(function.results["Ok_"])):
            if self.schema.structs[name] and self.rng.random() < 0.5:
                selection[name] = pick(self.schema.structs[name])
        return selection

    def reachable(self, fields):
        """The structs a value of `fields` can hold, at any depth (what a selection may name)."""
        found, waiting = set(), list(fields.values())
        while waiting:
            type_ = waiting.pop()
            if type_.kind in ("array", "map"):
                waiting.append(type_.of)
            elif type_.kind in ("struct", "union", "fn") and (type_.kind, type_.of) not in found:
                found.add((type_.kind, type_.of))
                inner = self.schema.struct(type_)
                waiting += [t for fields in ([inner] if type_.kind == "struct" else inner.values())
                            for t in fields.values()]
        return {name for kind, name in found if kind == "struct"}

    def selection_problem(self, function, fields, headers):
        """Where a selected Ok_ holds a field not selected."""
        selection = headers["@select_"]
        found = list(_unselected(self.schema, fields, function.results["Ok_"], selection["->"]["Ok_"], selection,
                                 ("Ok_",)))
        return "; ".join(f"{_where(path)} was not selected" for path in found[:3])

    def parity_problem(self, call, body):
        """How the JSON answer to a call differs from the MessagePack one, `body`."""
        _, message, _ = self.send(call)
        if message is None or _plain(message[1]) != _plain(body):
            return (f"JSON answered {json.dumps(_plain(message[1]) if message else None)[:200]}, MessagePack "
                    f"{json.dumps(_plain(body))[:200]}")
        return ""

    def check_wrong(self, function, arguments):
        """A call with one thing wrong, which must be refused with a case at that place; a Finding if not."""
        wrongs = values.object_wrongs(self.schema, arguments, function.arguments, (function.name,))
        if not wrongs:
            return None
        wrong, path, reason = self.rng.choice(wrongs)
        call = [dict(self.headers), {function.name: wrong}]
        status, message, answer = self.send(call)
        problem = _message_problem(status, message)
        if problem:
            return Finding("message", function.name, call, False, problem, _shown(message, answer))
        [(tag, fields)] = message[1].items()
        if tag == "ErrorUnauthenticated_" and "@auth_" not in call[0]:  # (credentials come before arguments)
            return None
        cases = fields.get("cases") if tag == "ErrorInvalidRequestBody_" and isinstance(fields, dict) else None
        if isinstance(cases, list) and any(isinstance(c, dict) and c.get("path") == list(path) for c in cases):
            return None
        said = (f"it has no case at {json.dumps(list(path))}: {json.dumps(cases)[:300]}" if cases is not None
                else f"it was answered {tag}")
        return Finding("rejected", function.name, call, False,
                       f"{reason} at {_where(path)} should be refused with a case there; {said}", _shown(message, answer),
                       path)

    def shrink(self, function, finding):
        """The finding, with its call made as small as it can be while it fails the same check."""
        if finding.check in ("rejected", "message") and "@select_" not in finding.call[0]:
            return finding
        budget = MAX_SHRINKS
        while budget > 0 and not self.late():
            arguments = finding.call[1][function.name]
            for simpler in values.smaller_fields(self.schema, arguments, function.arguments):
                budget -= 1
                again = self.check(function, [finding.call[0], {function.name: simpler}], finding.binary)
                if again and again.check == finding.check:
                    finding = again
                    break
                if budget <= 0:
                    break
            else:
                return finding
        return finding


def _message_problem(status, message):
    if status == 0:
        return "no answer"
    if status != 200:
        return f"HTTP {status}, not 200"
    if not (type(message) is list and len(message) == 2 and all(type(part) is dict for part in message)):
        return "the answer is not a message, [headers, body]"
    if len(message[1]) != 1:
        return f"the body holds {len(message[1])} keys, not one result tag"
    return ""


def _unselected(schema, value, fields, chosen, selection, path):
    """Yield the paths of fields a selection left out, in an object of `fields` and the structs in it."""
    if not isinstance(value, dict):
        return
    for name, element in value.items():
        if name not in chosen:
            yield (*path, name)
        elif name in fields:
            yield from _unselected_in(schema, element, fields[name], selection, (*path, name))


def _unselected_in(schema, value, type_, selection, path):
    if value is None:
        return
    if type_.kind in ("array", "map") and isinstance(value, (list, dict)):
        for key, element in (enumerate(value) if isinstance(value, list) else value.items()):
            yield from _unselected_in(schema, element, type_.of, selection, (*path, key))
    elif type_.kind == "struct" and type_.of in selection:
        yield from _unselected(schema, value, schema.struct(type_), selection[type_.of], selection, path)


def _ids(value, ids):
    """A body with every map key the encoding knows as its id, at any depth."""
    if isinstance(value, dict):
        return {ids.get(key, key): _ids(element, ids) for key, element in value.items()}
    return [_ids(element, ids) for element in value] if isinstance(value, list) else value


def _plain(value):
    """A value with bytes as base64 text and {"$bin": ...} as its text, to compare the two wires."""
    if isinstance(value, dict):
        if list(value) == ["$bin"]:
            return value["$bin"]
        return {key: _plain(element) for key, element in value.items()}
    if isinstance(value, list):
        return [_plain(element) for element in value]
    return base64.b64encode(value).decode() if isinstance(value, bytes) else value


def _where(path):
    return "".join(f"[{p}]" if type(p) is int else f".{p}" for p in path).lstrip(".") or "(top)"


def _shown(message, answer, most=1000):
    text = json.dumps(message, ensure_ascii=False, default=repr) if message is not None else \
        answer[:most].decode(errors="replace")
    return text[:most]


def _json(value):
    return json.dumps(value, ensure_ascii=False, default=repr)[:300]


def as_results(findings, checked, fuzzer, requires=()):
    """The run as runner.Results, one for each function and check exercised, a failing one with its
    finding: the reports' shape, and each failure a fixture case (its `case`) for a case file."""
    found = {(f.function, f.check): f for f in reversed(findings)}  # (the first, shrunk, finding of each pair)
    results = []
    for function, check in checked:
        description, requirements = CHECKS[check]
        case = {"id": f"fuzz/{function}/{check}", "description": f"{function}: {description}.",
                "requirements": requirements, "level": level_of(requirements), "requires": list(requires),
                "features": [], "steps": [], "file": "fuzz"}
        finding = found.get((function, check))
        if finding is None:
            results.append(Result(case, "pass", [], 0))
            continue
        data, media_type = fuzzer.encoded(finding.call, finding.binary)
        case["steps"] = [fixture_step(finding)]
        replay = reproduce(fuzzer.target, [Exchange(data, "POST", fuzzer.target.path, media_type, b"")])
        results.append(Result(case, "fail", [printable(f"{check}: {finding.problem}")], 0, case["level"],
                              tuple(map(printable, replay)), answer=printable(finding.answer)))
    return results


def fixture_step(finding):
    """A case step that fails while the finding's bug is there: the call, and what its answer must be
    (refused at the place of a rejected call; no refusal, or not the answer received, for the others)."""
    request = {"msgpack": finding.call} if finding.binary else {"message": finding.call}
    if finding.check == "rejected":
        return {"request": request, "response": {"message": [{"$type": "object"}, {"ErrorInvalidRequestBody_": {
            "cases": {"$includes": [{"path": list(finding.path), "reason": {"$type": "object"}}]}}}]}}
    if finding.check == "accepted":
        return {"request": request, "response": {"message": [{"$type": "object"}, {"$not": {"$oneOf": [
            {"$partial": {refusal: {"$type": "any"}}} for refusal in REFUSALS]}}]}}
    try:
        received = json.loads(finding.answer)
    except ValueError:
        return {"request": request, "response": {"message": [{"$type": "object"}, {"$type": "object"}]}}
    return {"request": request, "response": {"message": {"$not": {"$literal": received}}}}

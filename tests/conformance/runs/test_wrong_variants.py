"""Verdicts an implementer can trust: a server that reads the spec literally passes every MUST,
and a server that gets any of our conventions wrong fails something.

The spec-literal server is ours with every convention the spec's words leave open answered the
other reasonable way at once: null for `any`, array indexes as text, whole numbers of any size,
`1.0` as a whole number, error tags in @select_, unpadded base64, no checking of headers or
results, other reason names, a missing field's name in its path, another order of cases, an
`@id_` of null echoed, a stock `@warn_` header on every answer, another numbering of the binary
encoding, errors in MessagePack, and HTTP 400 for every error.
"""

import itertools
import json
import math
import re
import struct
import threading
import time

import msgpack
import pytest

from conformance.__main__ import main
from reference import mocking
from reference.engine.guard import RequestHandler
from reference.mocking import handlers, stubs
from reference.protocol import blobs, codec, generate, select, service, validate
from reference.protocol.service import Reply
from reference.services import calculator, testbed
from reference.transports import http_server
from tests.support import ROOT
from tests.support.servers import Mutated, serving

TESTBED = ROOT / "conformance" / "testbed.json"


def run(capsys, *args):
    status = main(list(args))
    return status, capsys.readouterr().out.splitlines()


def report(tmp_path, capsys, url, *args):
    """Run the suite against `url`; return (exit status, {case id: result} from the JSON report)."""
    status, _ = run(capsys, "run", "--target", url, "--json", str(tmp_path / "report.json"), *args)
    return status, {c["id"]: c for c in json.loads((tmp_path / "report.json").read_text())["cases"]}


# The spec-literal server: the validator's judgements the spec leaves open, turned the other way.

def literal_any(value, type_, path, function):
    return ()


def literal_integer(value, type_, path, function):  # a whole number, of any size, however written
    if type(value) not in (int, float) or type(value) is float and not (math.isfinite(value) and value.is_integer()):
        yield validate.type_unexpected(value, "Integer", path)


def whole_integer(value, type_, path, function):  # a whole number within 64 bits, however written
    if type(value) is float and math.isfinite(value) and value.is_integer():
        value = int(value)
    yield from validate.check_integer(value, type_, path, function)


def literal_number(value, type_, path, function):
    if type(value) not in (int, float):
        yield validate.type_unexpected(value, "Number", path)


def literal_check(value, type_, path=(), function=None):  # null is a value of any, too
    if value is None:
        if type_.nullable or type_.kind == "any":
            return ()
        return (validate.type_unexpected(None, validate.EXPECTED.get(type_.kind, "Object"), path),)
    return validate.CHECKS[type_.kind](value, type_, path, function)


def literal_options(function):  # every result tag may be selected, not only Ok_
    found = ORIGINAL_OPTIONS(function)
    tags = {tag: sorted(fields.fields) for tag, fields in function.result.tags.items()}
    return {**found, "->": tags}


ORIGINAL_OPTIONS = select.options.__wrapped__


def lenient_base64(text):
    try:
        return __import__("base64").b64decode(text + "=" * (-len(text) % 4), validate=True)
    except ValueError:
        return None


def rewritten(message):
    """An answer in the words a literal reader of the spec might choose where it is silent."""
    headers, body = message
    headers = {**headers, "@warn_": []}
    for fields in body.values():
        if type(fields) is dict and type(fields.get("cases")) is list:
            fields["cases"] = [_case(found) for found in reversed(fields["cases"])]
    return [headers, body]


def _case(found):
    path, [(reason, data)] = [str(step) for step in found["path"]], found["reason"].items()
    if reason == "RequiredObjectKeyMissing":
        return {"path": [*path, data["key"]], "reason": {"FieldMissing": {}}}
    if reason == "TypeUnexpected" and "Null" in data["actual"]:
        return {"path": path, "reason": {"NullDisallowed": {}}}
    if reason == "TypeUnexpected":
        names = {"Integer": "Int", "Boolean": "Bool", "Object": "Map", "Array": "List"}
        return {"path": path, "reason": {"TypeUnexpected": {side: {names.get(n, n): {} for n in data[side]}
                                                            for side in ("actual", "expected")}}}
    return {"path": path, "reason": {reason.replace("Object", "Field"): {}}}


ANSWERING = threading.local()  # what the connection's thread answers: an error or not


class Literal:
    """The service, with its answers rewritten, its own errors in MessagePack when asked, and
    the request's @id_ echoed even when it is null."""

    def __init__(self, service):
        self.service, self.schema = service, service.schema

    def handle(self, data, client=""):
        reply = self.service.handle(data)
        ANSWERING.error = reply.result != "Ok_"
        if reply.data[:1] == b"\x92":
            return reply
        message = rewritten(json.loads(reply.data))
        try:
            request = json.loads(data)
            if "@id_" in request[0]:
                message[0]["@id_"] = request[0]["@id_"]
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            pass
        binary = reply.result != "Ok_" and b'"@bin_"' in data
        encoded = msgpack.packb(message) if binary else json.dumps(message).encode()
        return Reply(encoded, reply.media_type, reply.function, reply.result)


def reversed_encoding(schema):
    made = ORIGINAL_ENCODING(schema)
    names = made.names[::-1]
    return codec.Encoding({name: i for i, name in enumerate(names)}, names, made.checksum ^ 1)


ORIGINAL_ENCODING = codec.encoding


@pytest.fixture
def literally(monkeypatch):
    """Turn the reference into a server that reads the spec literally, for the length of a test."""
    monkeypatch.setitem(validate.CHECKS, "any", literal_any)
    monkeypatch.setitem(validate.CHECKS, "integer", literal_integer)
    monkeypatch.setitem(validate.CHECKS, "number", literal_number)
    monkeypatch.setattr(validate, "check", literal_check)
    monkeypatch.setattr(select, "options", literal_options)
    monkeypatch.setattr(blobs, "from_base64", lenient_base64)
    checking = service.Service.header_cases  # only what it uses, @select_, is checked
    monkeypatch.setattr(service.Service, "header_cases", lambda self, headers, declared, function: checking(
        self, {k: v for k, v in headers.items() if k == "@select_"}, declared, function))
    monkeypatch.setattr(codec, "encoding", reversed_encoding)
    send = RequestHandler.send_response
    monkeypatch.setattr(RequestHandler, "send_response", lambda self, code, message=None: send(
        self, 400 if code == 200 and getattr(ANSWERING, "error", False) else code, message))


@pytest.mark.parametrize("make", [testbed.service, calculator.service], ids=["testbed", "calculator"])
def test_a_server_that_reads_the_spec_literally_passes_every_must(make, literally, tmp_path, capsys):
    with serving(Literal(make(service.Service))) as server:  # the core alone, whose tables the fixture changes
        status, results = report(tmp_path, capsys, server.url)
    failed = {id_: r for id_, r in results.items() if r["status"] == "fail"}
    must = {id_: r["problems"][:2] for id_, r in failed.items() if r["failedLevel"] == "MUST"}
    assert not must, json.dumps(must, indent=1)[:3000]
    assert len(failed) > 100 and status == 1  # its conventions are still checked, at SHOULD


def test_level_must_counts_what_it_sets_aside(capsys):
    with serving(testbed.service()) as server:
        status, lines = run(capsys, "run", "--target", server.url, "--level", "MUST")
    assert status == 0
    assert "set aside by --level MUST" in lines[-1] and "checked only for what the spec demands (MUST)" in lines[-1]


# Wrong variants: each gets one convention wrong, in a way the suite once failed to notice.

def deep_keys_as_names(request, message):
    """Only the keys of the result and its fields become ids; deeper keys stay text."""
    names = {i: n for n, i in testbed.service().encoding.ids.items()}

    def named(value, depth):
        if type(value) is dict:
            return {(names.get(k, k) if depth > 2 else k): named(v, depth + 1) for k, v in value.items()}
        return [named(v, depth) for v in value] if type(value) is list else value
    return [message[0], named(message[1], 0)]


def flat_headers(request, message):
    """Packs arrays of unions and structs without nested headers for their map-valued keys."""
    def flatten(value):
        if type(value) is list and value and value[0] == codec.PACKED and type(value[1]) is list:
            return [value[0], [c[0] if type(c) is list else c for c in value[1]], *value[2:]]
        if type(value) is dict:
            return {k: flatten(v) for k, v in value.items()}
        return [flatten(v) for v in value] if type(value) is list else value
    return [message[0], flatten(message[1])]


def doubles(request, message):
    """Carries every integer through a double, as a JavaScript library would."""
    def through(value):
        if type(value) is int and abs(value) > 2**53:
            return float(value)
        if type(value) is dict:
            return {k: through(v) for k, v in value.items()}
        return [through(v) for v in value] if type(value) is list else value
    return [message[0], through(message[1])]


def null_id_echoed(request, message):
    if request and "@id_" in request[0] and request[0]["@id_"] is None:
        message[0]["@id_"] = None
    return message


def first_checksum_only(request):
    """A JSON request whose @bin_ does not start with the checksum is negotiated afresh."""
    checksums = request[0].get("@bin_")
    if checksums and checksums[0] != testbed.service().encoding.checksum:
        request[0]["@bin_"] = []
    return request


def unknown_function_first(request):
    """The function is looked for before the headers are checked."""
    if request and next(iter(request[1])) not in testbed.service().schema.functions:
        request[0].pop("@select_", None)
    return request


def id_on_parse_failures(request, message):
    """A parse failure of a message whose headers could be read answers with its @id_."""
    if request and "ErrorParseFailure_" in message[1] and "@id_" in request[0]:
        message[0]["@id_"] = request[0]["@id_"]
    return message


def pac_from_the_start(request, message):
    """@pac_ is echoed on every answer to a request with @bin_, before step 5 too."""
    if request and "@bin_" in request[0] and "@pac_" in request[0]:
        message[0]["@pac_"] = request[0]["@pac_"]
    return message


def single_floats(request, message):
    """Numbers go through 32-bit floats, as a MessagePack library set to save bytes would send them."""
    def through(value):
        if type(value) is float:
            return struct.unpack("f", struct.pack("f", value))[0]
        if type(value) is dict:
            return {k: through(v) for k, v in value.items()}
        return [through(v) for v in value] if type(value) is list else value
    return [message[0], through(message[1])] if request and "@bin_" in request[0] else message


def names_in_header_rows(request, message):
    """A packed array's header row holds the keys' names, not their ids."""
    names = {i: n for n, i in testbed.service().encoding.ids.items()}

    def named(value):
        if type(value) is list and value and value[0] == codec.PACKED and type(value[1]) is list:
            header = [[names.get(k, k) for k in c] if type(c) is list else names.get(c, c) for c in value[1]]
            return [value[0], header, *map(named, value[2:])]
        if type(value) is dict:
            return {k: named(v) for k, v in value.items()}
        return [named(v) for v in value] if type(value) is list else value
    return [message[0], named(message[1])]


def url_safe_base64(text):
    return lenient_base64(text.replace("-", "+").replace("_", "/"))


def unsafe_arguments(original):
    """@unsafe_ skips checking the arguments too."""
    return lambda self, exchange: None if exchange.headers.get("@unsafe_") is True else original(self, exchange)


def too_large(text):  # a number too large for a double gets a reason of its own
    if math.isinf(float(text)):
        raise codec.ParseFailure("JsonInvalid")
    return float(text)


GUIDE_LIMITS = ("--limit", "body=1048576", "--limit", "depth=1024", "--limit", "cases=100")  # what ours keeps


@pytest.mark.parametrize("patch, answer, request_, failing", [
    ({"DECODER": (codec, json.JSONDecoder(parse_float=too_large))}, None, None, ["testbed/parse/number-too-large"]),
    ({"MAX_DEPTH": (codec, 1023)}, None, None, ["testbed/nesting/json-at-the-limit"]),
    ({"MAX_DEPTH": (codec, 1025)}, None, None, ["testbed/nesting/json-past-the-limit"]),
    ({"MAX_INT64": (validate, 2**200), "MIN_INT64": (validate, -2**200)}, None, None,
     ["testbed/numbers/past-64-bits/int/argument", "testbed/types/int/array-element/invalid-2"]),
    ({}, deep_keys_as_names, None, ["testbed/binary/keys/every-known-key"]),
    ({}, flat_headers, None, ["testbed/binary/packed/unions"]),
    ({}, doubles, None, ["testbed/numbers/beyond-doubles/int/argument", "testbed/types/int/argument/valid-2"]),
    ({}, null_id_echoed, None, ["testbed/headers/id-null"]),
    ({}, None, first_checksum_only, ["testbed/binary/checksums/json-anywhere"]),
    ({}, None, unknown_function_first, ["testbed/select/unknown-function"]),
    ({}, id_on_parse_failures, None, ["headers/id/parse-failure-readable", "headers/id/parse-failure-one-object"]),
    ({}, pac_from_the_start, None, ["headers/pac/not-before-the-function"]),
    ({"check_arguments": (service.Service, unsafe_arguments(service.Service.check_arguments))}, None, None,
     ["headers/unsafe/arguments-still-checked"]),
    ({"from_base64": (blobs, url_safe_base64)}, None, None, ["bytes/alphabet/url-safe"]),
    ({"MAX_CASES": (validate, 50)}, None, None, ["validation/cap/first-cases"]),
    ({"MAX_CASES": (validate, 10**6), "MAX_PATH_CHARACTERS": (validate, 10**9)}, None, None, ["validation/cap/first-cases"]),
    ({}, single_floats, None, ["binary/numbers/doubles"]),
    ({}, names_in_header_rows, None, ["binary/packed/header-row-ids"]),
    ({"MAX_GENERATED_DEPTH": (generate, 20)}, None, None, ["testbed/api/examples"]),
], ids=["parse-reason", "nesting-1023", "nesting-1025", "past-64-bits", "map-keys",
        "packing", "doubles", "null-id", "checksums", "select-unknown-function", "id-on-parse-failures",
        "pac-from-the-start", "unsafe-arguments", "url-safe-base64", "cap-50", "no-cap", "single-floats",
        "names-in-header-rows", "generated-depth-20"])
def test_a_server_with_one_convention_wrong_fails_a_case(patch, answer, request_, failing, monkeypatch, tmp_path, capsys):
    for name, (owner, value) in patch.items():
        (monkeypatch.setitem if type(owner) is dict else monkeypatch.setattr)(owner, name, value)
    with serving(Mutated(testbed.service(service.Service), answer, request_)) as server:
        status, results = report(tmp_path, capsys, server.url, *GUIDE_LIMITS, *(f"--id={id_}" for id_ in failing))
    failed = {id_ for id_, r in results.items() if r["status"] == "fail"}
    assert status == 1 and set(failing) <= failed, sorted(failed)[:20]


# The mock's bookkeeping, each rule turned another way.

def count_one_more(original):
    return lambda self, arguments, headers: original(
        self, {**arguments, "count!": arguments["count!"] + 1} if "count!" in arguments else arguments, headers)


def oldest_stub_first(original):
    def answer(self, name, arguments, headers):
        self.stubs.reverse()
        try:
            return original(self, name, arguments, headers)
        finally:
            self.stubs.reverse()
    return answer


def at_most_exclusive(original):
    def verify(self, arguments, headers):
        wanted = arguments.get("count!", {})
        if "AtMost" in wanted:
            arguments = {**arguments, "count!": {"AtMost": {"times": wanted["AtMost"]["times"] - 1}}}
        return original(self, arguments, headers)
    return verify


def failures_unverified(original):
    def verify(self, arguments, headers):
        before = [call.verified for call in self.calls]
        result = original(self, arguments, headers)
        if "Ok_" not in result:
            for call, verified in zip(self.calls, before):
                call.verified = verified
        return result
    return verify


def zero_unlimited(original):
    return lambda self, arguments, headers: original(
        self, {k: v for k, v in arguments.items() if k != "count!" or v > 0}, headers)


def clearing_both(original):
    return lambda self, arguments, headers: (self.clear_stubs(arguments, headers), original(self, arguments, headers))[1]


def calls_of_every_function(functions, context):
    names = sorted(functions)
    return functions[names[context.random.below(len(names))]]


def empty_lists_dropped(option, context):
    if type(option) is list:
        return sorted(name for name in option if context.random.boolean())
    drawn = {}
    for key in sorted(option):
        if context.random.boolean() and (inner := empty_lists_dropped(option[key], context)) not in ({}, []):
            drawn[key] = inner
    return drawn


BOOKKEEPING = "testbed/mock/bookkeeping/"


@pytest.mark.parametrize("owner, name, wrong, failing", [
    (mocking.Mock, "create_stub", count_one_more, ["count/uses-up", "count/negative", "stub/newest-first"]),
    (mocking.Mock, "answer", oldest_stub_first, ["stub/newest-first"]),
    (mocking.Mock, "verify", at_most_exclusive, ["verify/at-most-is-inclusive"]),
    (handlers, "listed", lambda original: lambda records: original(records[-1:]), ["verify/all-calls"]),
    (mocking.Mock, "verify", failures_unverified, ["verify/failed-still-verifies"]),
    (mocking.Mock, "create_stub", zero_unlimited, ["count/zero"]),
    (mocking.Mock, "clear_calls", clearing_both, ["clearing"]),
    (stubs, "_drawn", lambda original: calls_of_every_function, ["testbed/mock/examples"]),
    (select, "_drawn", lambda original: empty_lists_dropped, ["testbed/mock/seeded/echo-47"]),
], ids=["count-one-more", "oldest-stub-first", "at-most-exclusive", "all-calls-matching", "failures-unverified",
        "zero-unlimited", "clearing-both", "calls-of-every-function", "empty-lists-dropped"])
def test_a_mock_with_one_rule_wrong_fails_a_case(owner, name, wrong, failing, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(owner, name, wrong(getattr(owner, name)))
    failing = [id_ if id_.startswith("testbed/") else BOOKKEEPING + id_ for id_ in failing]
    with serving(mocking.service(TESTBED, service.Service)) as server:
        status, results = report(tmp_path, capsys, server.url, "--id", "testbed/mock/**")
    failed = {id_ for id_, r in results.items() if r["status"] == "fail"}
    assert status == 1 and set(failing) <= failed, sorted(failed)


# HTTP: how a body's end is told, and how large it may be.

def no_length_is_bad_request(original):
    return lambda method, path, length, api_path, max_body: (
        (400, "No length", []) if not length and method == "POST" else original(method, path, length, api_path, max_body))


def chunks_unread(original):  # a request without a Content-Length goes on, and its handler breaks (no answer)
    return lambda method, path, length, api_path, max_body: (
        None if not length and method == "POST" else original(method, path, length, api_path, max_body))


@pytest.mark.parametrize("wrong, options, failing", [
    (no_length_is_bad_request, {}, ["http/length/neither", "http/length/chunked"]),
    (chunks_unread, {}, ["http/length/neither", "http/length/chunked"]),
    (None, {"max_body": 8 * 1024 * 1024}, ["http/length/too-large"]),
], ids=["no-length-400", "chunks-unread", "no-limit"])
def test_a_transport_with_one_rule_wrong_fails_a_case(wrong, options, failing, monkeypatch, tmp_path, capsys):
    if wrong:
        monkeypatch.setattr(http_server, "refusal", wrong(http_server.refusal))
    with serving(testbed.service(), **options) as server:
        status, results = report(tmp_path, capsys, server.url, *GUIDE_LIMITS, "--id", "http/**")
    failed = {id_ for id_, r in results.items() if r["status"] == "fail"}
    assert status == 1 and set(failing) == failed and results["http/length/at-the-limit"]["status"] == "pass"


@pytest.mark.parametrize("patch, options, declared", [
    ({}, {"max_body": 2 * 1024 * 1024}, ["body=2097152"]),
    ({}, {"max_body": 512 * 1024}, ["body=524288"]),
    ({"MAX_DEPTH": (codec, 1000)}, {}, ["depth=1000"]),
    ({"MAX_DEPTH": (codec, 300)}, {}, ["depth=300"]),
    ({"MAX_CASES": (validate, 10**5), "MAX_PATH_CHARACTERS": (validate, 10**9)}, {}, ["cases=100000"]),
    ({"MAX_CASES": (validate, 7)}, {}, ["cases=7"]),
    ({"integer": (validate.CHECKS, whole_integer)}, {}, []),
], ids=["body-2m", "body-512k", "depth-1000", "depth-300", "cap-100000", "cap-7", "whole-numbers"])
def test_a_correct_server_with_other_limits_or_choices_passes_declared_or_not(patch, options, declared, monkeypatch,
                                                                              tmp_path, capsys):
    """Limits are the target's own: declared, their cases check the value; undeclared, any clean answer."""
    for name, (owner, value) in patch.items():
        (monkeypatch.setitem if type(owner) is dict else monkeypatch.setattr)(owner, name, value)
    chosen = ("--id", "http/length/**", "--id", "testbed/nesting/**", "--id", "validation/cap/**",
              "--id", "testbed/numbers/**", "--timeout", "120")  # (100,000 cases take the core seconds, more when busy)
    with serving(testbed.service(service.Service), **options) as server:
        for limits in ([], declared):
            status, results = report(tmp_path, capsys, server.url, *chosen,
                                     *(argument for limit in limits for argument in ("--limit", limit)))
            assert status == 0 and len(results) > 100, [i for i, r in results.items() if r["status"] != "pass"]


# A target that stops answering, a target whose answers change, and the name of what is checked.

class Dying:
    """The testbed, until its server is stopped after `answers` requests."""

    def __init__(self, answers):
        self.service, self.left, self.lock = testbed.service(), answers, threading.Lock()
        self.schema, self.server = self.service.schema, None

    def handle(self, data, client=""):
        with self.lock:
            self.left -= 1
            if self.left == 0:
                threading.Thread(target=lambda: (self.server.shutdown(), self.server.server_close())).start()
        return self.service.handle(data, client)


def test_a_target_that_stops_answering_is_one_line_and_the_rest_is_not_run(tmp_path, capsys):
    dying = Dying(200)
    with serving(dying) as dying.server:
        started = time.monotonic()
        status, lines = run(capsys, "run", "--target", dying.server.url, "--json", str(tmp_path / "r.json"),
                            "--junit", str(tmp_path / "r.xml"))
    assert status == 2 and time.monotonic() - started < 30
    [told] = [line for line in lines if line.startswith("The target stopped answering during ")]
    assert told.endswith("cases were not run.") and not [line for line in lines if line.startswith("FAIL")]
    report = json.loads((tmp_path / "r.json").read_text())
    tally, unrun = report["summary"], [case for case in report["cases"] if case["status"] == "not-run"]
    other = sum(case["reason"] == "for other services" for case in unrun)
    assert tally["fail"] == 0 and 1 <= tally["errored"] <= 4 and tally["not-run"] - other > 1000
    assert lines[-1].endswith(f"{tally['errored']} errored; {other} for other services; {tally['not-run'] - other} not "
                              f"run (the target stopped answering first)")
    assert (tmp_path / "r.xml").read_text().count("<error ") == tally["errored"]


def test_a_case_without_an_answer_from_a_target_that_still_answers_is_a_failure(tmp_path, capsys):
    """No answer to one request is that case's failure (conv.no-crash), when a ping still gets one."""
    def closing(request):
        if request and request[1].get("fn.echo") == {"int!": 1}:
            raise ConnectionResetError("the handler drops the connection")
        return request
    with serving(Mutated(testbed.service(), None, closing)) as server:
        status, results = report(tmp_path, capsys, server.url, "--id", "testbed/types/int/argument/**")
    assert status == 1 and {r["status"] for r in results.values()} == {"pass", "fail"}


@pytest.mark.parametrize("answers", [200, 2200])  # (dying in the first run of three, or in the second: one takes 1,427)
def test_no_run_of_repeat_starts_once_the_target_stopped_and_no_case_is_flaky_for_it(answers, tmp_path, capsys):
    """A target that dies ends the repeats: a case it left unanswered is no evidence, neither a failure nor
    flaky, and the summary says how many of the runs were made."""
    dying = Dying(answers)
    with serving(dying) as dying.server:
        status, lines = run(capsys, "run", "--target", dying.server.url, "--repeat", "3", "--json", str(tmp_path / "r.json"))
    made = 1 if answers == 200 else 2
    [told] = [line for line in lines if line.startswith("The target stopped answering during ")]
    assert re.search(f" in run {made} of 3: \\d+ cases? of that run (was|were) not run, and {3 - made} runs? of every "
                     f"case never made\\.$", told), told
    report = json.loads((tmp_path / "r.json").read_text())
    assert status == 2 and report["summary"]["flaky"] == report["summary"]["fail"] == 0
    assert report["runs"] == {"made": made, "asked": 3}
    assert lines[-1].endswith(f"; {made} of the 3 runs of every case made (the last cut short)")


def test_answers_that_change_from_run_to_run_are_flaky_apart_from_failures(tmp_path, capsys):
    flips = itertools.count()

    def sometimes(request, message):  # every other answer to fn.echo holds the wrong number
        if request and "fn.echo" in request[1] and "Ok_" in message[1] and next(flips) % 2:
            message[1]["Ok_"] = {**message[1]["Ok_"], "int!": 7}
        return message
    with serving(Mutated(testbed.service(), sometimes)) as server:
        status, results = report(tmp_path, capsys, server.url, "--repeat", "2", "--id", "testbed/types/int/argument/valid-*")
        flaky = {i for i, r in results.items() if r["status"] == "flaky"}
        assert status == 1 and flaky and flaky <= set(results)
        assert all(r["problems"][0].startswith("run 1: ") for i, r in results.items() if i in flaky)
        status, lines = run(capsys, "run", "--target", server.url, "--repeat", "2", "--id", "testbed/types/int/**")
    assert re.search(r"\d+ passed, \d+ failed.*, \d+ flaky \(failing only some of the times they ran\); every case "
                     r"run 2 times", lines[-1])
    assert any(line.startswith("FLAKY testbed/types/int/") for line in lines)


def test_every_report_names_the_implementation_declared(tmp_path, capsys):
    named = ("--implementation", "acme-rpc", "--implementation-version", "2.1", "--language", "Rust")
    with serving(testbed.service()) as server:
        status, lines = run(capsys, "run", "--target", server.url, *named, "--id", "http/**",
                            *(f"--{form}={tmp_path / form}" for form in ("json", "junit", "html")))
        assert status == 0 and lines[0].startswith(f"Checking acme-rpc 2.1 (Rust) at {server.url}: the testbed.")
    assert json.loads((tmp_path / "json").read_text())["implementation"] == {
        "name": "acme-rpc", "version": "2.1", "language": "Rust"}
    assert '<testsuite name="conformance of acme-rpc 2.1 (Rust)"' in (tmp_path / "junit").read_text()
    assert "<h1>Conformance of acme-rpc 2.1 (Rust)</h1>" in (tmp_path / "html").read_text()


@pytest.mark.parametrize("limit, message", [
    ("size=10", "argument --limit: 'size=10' is not NAME=VALUE with NAME one of body, depth, cases"),
    ("body", "argument --limit: 'body' is not NAME=VALUE with NAME one of body, depth, cases"),
    ("depth=0", "argument --limit: the depth limit must be a whole number from 1 to 100,000, not '0'"),
    ("body=1e6", "argument --limit: the body limit must be a whole number from 1 to 67,108,864, not '1e6'"),
])
def test_a_limit_declared_wrong_is_a_usage_error(limit, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["run", "--target", "http://127.0.0.1:1/api", "--limit", limit])
    assert exit_.value.code == 2 and message in capsys.readouterr().err

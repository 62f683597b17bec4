"""The conformance suite: it passes where it should, and fails, with a diff, where it should."""

import contextlib
import http.client
import os
import http.server
import json
import math
import re
import shlex
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import uuid
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import msgpack
import pytest

from conftest import DRIPS, Mutated, dripping, endless, refusing, respond, serving, started
from test_readme import ROOT
from conformance.language import decoding, suite as cases, matchers as match
from conformance.commands import lint
from conformance.__main__ import main
from conformance.targets.remote import Target, read, send
from reference import Service, load
from reference.services import calculator, testbed
from reference import mocking

ALL = cases.load()
OTHER_SCHEMA = [{"info.Todo": {}}, {"struct.Item": {"title": "string", "done": "boolean", "due!": "integer?"}},
                {"fn.add": {"item": "struct.Item"}, "->": [{"Ok_": {"id": "integer"}}, {"ErrorDuplicate": {}}]}]


@pytest.fixture(autouse=True)
def _elsewhere(tmp_path, monkeypatch):
    """Runs keep their failures in the current directory (--last-failed): each test in a folder of its own."""
    monkeypatch.chdir(tmp_path)


def run(capsys, *args):
    """Run `python -m conformance ARGS` in-process; return (exit status, output lines)."""
    status = main(list(args))
    return status, capsys.readouterr().out.splitlines()


def counted(line):
    """The numbers of a summary line, by word: {"passed": 3, "failed": 0, ...}."""
    return {word: int(n) for n, word in re.findall(r"(\d+) (passed|failed|known failures|stale|for other services"
                                                    r"|not checked)", line)}


def applying(profile):
    return [c for c in ALL if c.applies(profile)]


@pytest.fixture(scope="module")
def calculator_mock_url():
    with serving(mocking.service(calculator.entries())) as server:
        yield server.url


@pytest.fixture(scope="module")
def testbed_mock_url():
    with serving(mocking.service(testbed.service().schema)) as server:
        yield server.url


@contextlib.contextmanager
def alone(without_the_engine, module, *args):
    """`python -m reference.MODULE --plain ARGS`, run from a copy of the checkout without the engine room
    (its log, which tells of every invalid result the cases ask a handler for, is not kept)."""
    python, options = without_the_engine
    process, _, url = started(module, "--plain", *args, python=python, stderr=subprocess.DEVNULL, **options)
    try:
        yield url
    finally:
        process.terminate()
        process.communicate(timeout=20)


@pytest.fixture(scope="module")
def calculator_plain_url(without_the_engine):
    """The calculator served by the teaching core alone, where the engine room is absent."""
    with alone(without_the_engine, "server") as url:
        yield url


@pytest.fixture(scope="module")
def testbed_plain_url(without_the_engine):
    with alone(without_the_engine, "server", "--service", "testbed") as url:
        yield url


@pytest.fixture(scope="module")
def testbed_plain_mock_url(without_the_engine, testbed_plain_url, tmp_path_factory):
    cache = tmp_path_factory.mktemp("plain-mock") / "schema.json"
    with alone(without_the_engine, "mock", "--schema-url", testbed_plain_url, "--cache", str(cache)) as url:
        yield url


@pytest.fixture(scope="module")
def other_url():
    """A server of a schema the suite has never seen."""
    with serving(Service(load(OTHER_SCHEMA), {"fn.add": lambda a, h: {"Ok_": {"id": 1}}})) as server:
        yield server.url


@pytest.mark.parametrize("target, profile, service", [
    ("calculator_url", {"calculator", "live"}, "the calculator"),
    ("testbed_url", {"testbed", "live"}, "the testbed"),
    ("calculator_mock_url", {"calculator", "mock"}, "a mock of the calculator"),
    ("testbed_mock_url", {"testbed", "mock"}, "a mock of the testbed"),
    ("calculator_plain_url", {"calculator", "live"}, "the calculator"),
    ("testbed_plain_url", {"testbed", "live"}, "the testbed"),
    ("testbed_plain_mock_url", {"testbed", "mock"}, "a mock of the testbed"),
    ("other_url", {"live"}, "a service of another schema"),
])
def test_the_reference_passes_every_case_that_applies(target, profile, service, request, capsys):
    url = request.getfixturevalue(target)
    status, lines = run(capsys, "run", "--target", url)
    assert status == 0, "\n".join(lines)
    expected = len(applying(profile))
    assert lines[0] == (f"Checking {url}: {service}. Running {expected} cases; "
                        f"{len(ALL) - expected} are for other services.")
    assert counted(lines[-1]) == {"passed": expected, "failed": 0, "for other services": len(ALL) - expected}


def test_core_cases_need_nothing_but_the_protocol():
    core = applying({"live"})
    assert len(core) >= 80 and all(not c.requires for c in core)
    assert {c.id.split("/")[0] for c in core} >= {"api", "binary", "envelope", "headers", "http", "select"}


def test_the_suite_is_sound_large_and_covers_every_requirement(capsys):
    clients, loaders = len(cases.load(cases.CLIENTS)), len(cases.load(cases.SCHEMAS))
    assert run(capsys, "check") == (0, [f"The suite is sound: {len(ALL)} server cases, {clients} client cases and "
                                        f"{loaders} schema cases."])
    assert len(ALL) >= 1300 and len([c for c in ALL if c.id.startswith("testbed/")]) >= 1000
    requirements = cases.load_json("requirements.json")
    status, lines = run(capsys, "coverage")
    assert status == 0 and lines[-1] == f"{len(requirements)} of {len(requirements)} requirements have cases"


NOT_ON_THE_TESTBED = re.compile(r"calc\.|calculator\.|conv\.calculator|auth\.session|error\.(unavailable|unknown-variables"
                             r"|divide-by-zero)|client\.|schema\.(?!api)|conv\.schema-")  # (client and schema
# rules have cases of their own: see below)


def test_every_rule_but_the_calculators_own_has_cases_on_the_testbed():
    on_testbed = {r for c in ALL for r in c.requirements
                  if c.applies({"testbed", "live"}) or c.applies({"testbed", "mock"})}
    rules = {r["id"] for r in cases.load_json("requirements.json")}
    assert rules - on_testbed == {r for r in rules if NOT_ON_THE_TESTBED.match(r)}


def test_requirements_are_cited_not_copied():
    for requirement in cases.load_json("requirements.json"):
        assert re.match(r"(spec: [A-Z][\w ]+(, |$)|PROTOCOL\.md: )", requirement["cites"]), requirement
        assert requirement["text"].endswith(".") and len(requirement["text"]) < 300


def drop_result(request, message):
    body = message[1]
    if request and "fn.add" in request[1] and "Ok_" in body:
        body["Ok_"].pop("result", None)
    return message


def wrong_error_tag(request, message):
    if "ErrorCannotDivideByZero" in message[1]:
        message[1] = {"ErrorUnknownVariables": {"unknownVariables": []}}
    return message


def reversed_cases(request, message):
    for error in message[1].values():
        if isinstance(error, dict) and isinstance(error.get("cases"), list):
            error["cases"].reverse()
    return message


def lost_id(request, message):
    message[0].pop("@id_", None)
    return message


def wrong_checksum(request, message):
    if "@bin_" in message[0]:
        message[0]["@bin_"] = [message[0]["@bin_"][0] + 1]
    return message


def ignored_stubs(request, message):
    """Answers fn.add with a generated-looking number, whatever the stubs say."""
    if request and "fn.add" in request[1] and "Ok_" in message[1]:
        message[1]["Ok_"]["result"] = 0.5
    return message


def no_base64_marks(request, message):
    message[0].pop("@base64_", None)
    return message


def floats(request, message):
    """Writes every whole number as a float (5.0), as a careless encoder might."""
    def change(value):
        if type(value) is int:
            return float(value)
        if type(value) is dict:
            return {k: change(v) for k, v in value.items()}
        return [change(v) for v in value] if type(value) is list else value
    return [message[0], change(message[1])]


def without(header):
    def drop(request):
        request[0].pop(header, None)
        return request
    return drop


@pytest.mark.parametrize("service, answer, request_, failing, diff", [
    ("calculator", drop_result, None, ["calculator/add/integers", "calculator/add/fractions"], "[1].Ok_.result: missing"),
    ("calculator", wrong_error_tag, None, ["calculator/evaluate/divide-by-zero"], "[1].ErrorCannotDivideByZero: missing"),
    ("calculator", reversed_cases, None, ["validation/order/missing-first", "headers/prefix/required"],
     "[1].ErrorInvalidRequestBody_.cases[0].reason.RequiredObjectKeyMissing: missing"),
    ("calculator", lost_id, None, ["headers/id/string", "headers/id/structure", "binary/negotiate/id-kept"],
     "[0].@id_: missing"),
    ("calculator", wrong_checksum, None, ["binary/encoding/calculator-ids", "binary/negotiate/steady"],
     "[0].@bin_[0]: expected 900069279, got 900069280"),
    ("calculator", floats, None, ["calculator/tape/integer-timestamps"], "timestamp: expected any integer, got "),
    ("mock", ignored_stubs, None, ["mock/stub/returned", "mock/stub/partial-match"], "[1].Ok_.result: expected 100, got 0.5"),
    ("testbed", no_base64_marks, None, ["testbed/base64/field", "testbed/types/bytes/argument/valid-1"],
     "[0].@base64_: missing"),
    ("testbed", None, without("@select_"), ["testbed/select/result-fields", "select/core/api-no-fields"],
     "[1].Ok_.api: unexpected key"),
    ("testbed", None, without("@unsafe_"), ["testbed/result/unsafe"], "[1].ErrorInvalidResponseBody_: unexpected key"),
])
def test_a_server_with_one_wrong_behaviour_fails_with_a_diff(service, answer, request_, failing, diff, capsys):
    made = {"calculator": calculator.service, "testbed": testbed.service,
            "mock": lambda: mocking.service(calculator.entries())}[service]()
    with serving(Mutated(made, answer, request_)) as server:
        status, lines = run(capsys, "run", "--target", server.url)
    failed = [line.split()[1] for line in lines if line.startswith("FAIL ")]
    assert status == 1 and set(failing) <= set(failed), "\n".join(lines)
    assert any(diff in line for line in lines), "\n".join(lines)
    assert any(line.strip().startswith("curl -s -i -X POST ") for line in lines)
    assert counted(lines[-1])["failed"] == len(failed)


def unchecked_when_unsafe(request, message):
    """@unsafe_ lets the handler's result through whatever it is, a message or not."""
    if request and request[0].get("@unsafe_") is True and "@result" in request[0]:
        return [message[0], request[0]["@result"]]
    return message


def headers_lost_with_an_invalid_result(request, message):
    if "ErrorInvalidResponseBody_" in message[1]:
        return [{k: v for k, v in message[0].items() if k == "@id_"}, message[1]]
    return message


def single_floats(request, message):
    """MessagePack answers (no request read as JSON) with every fraction sent as a 32-bit float."""
    def change(value):
        if type(value) is float:
            return struct.unpack("f", struct.pack("f", value))[0] if abs(value) < 3e38 else math.inf
        if type(value) is dict:
            return {k: change(v) for k, v in value.items()}
        return [change(v) for v in value] if type(value) is list else value
    return message if request else change(message)


def packing_every_array_of_maps(request, message):
    """MessagePack answers with @pac_ whose arrays of plain maps are packed, keys the encoding lacks too."""
    def change(value):
        if type(value) is list and value and all(type(v) is dict and all(type(x) is not dict for x in v.values())
                                                for v in value):
            keys = list(dict.fromkeys(k for v in value for k in v))
            return [msgpack.ExtType(17, b""), [None, *keys], *([v.get(k) for k in keys] for v in value)]
        if type(value) is dict:
            return {k: change(v) for k, v in value.items()}
        return [change(v) for v in value] if type(value) is list else value
    return message if request or "@pac_" not in message[0] else [message[0], change(message[1])]


def group_errors_refused(request, message):
    """A handler's errors.* tag (ErrorTestbed) refused as no result of the function."""
    if "ErrorTestbed" in message[1]:
        return [message[0], {"ErrorInvalidResponseBody_": {"cases": [{"path": ["ErrorTestbed"],
                                                                       "reason": {"ObjectKeyDisallowed": {}}}]}}]
    return message


class UnpackingWithoutAsking:
    """A service that unpacks the packed arrays of every MessagePack request, @pac_ or not."""

    def __init__(self, service):
        self.service, self.schema = service, service.schema

    def handle(self, data, client=""):
        if data[:1] == b"\x92":
            data = msgpack.packb(decoding.unpacked(msgpack.unpackb(data, strict_map_key=False)))
        return self.service.handle(data, client)


@pytest.mark.parametrize("variant, failing", [
    (lambda made: Mutated(made, unchecked_when_unsafe), ["testbed/result/unsafe-not-an-object",
                                                         "testbed/result/unsafe-two-tags"]),
    (lambda made: Mutated(made, headers_lost_with_an_invalid_result), ["testbed/result/invalid-keeps-headers"]),
    (lambda made: Mutated(made, single_floats), ["testbed/binary/number/not-whole"]),
    (lambda made: Mutated(made, packing_every_array_of_maps), ["testbed/binary/packed/unknown-keys"]),
    (UnpackingWithoutAsking, ["testbed/binary/packed/request-without-pac"]),
    (lambda made: Mutated(made, group_errors_refused), ["testbed/result/group-error",
                                                        "testbed/result/group-error-required-only"]),
], ids=["unsafe-lets-any-body-through", "headers-lost", "32-bit-floats", "packs-unknown-keys", "unpacks-unasked",
        "group-errors-refused"])
def test_a_wrong_variant_the_suite_once_passed_fails_its_case(variant, failing, capsys):
    """Wrong variants of a server written from the guide that passed the whole suite before their cases."""
    with serving(variant(testbed.service())) as server:
        status, lines = run(capsys, "run", "--target", server.url, "--id", "testbed/result/**",
                            "--id", "testbed/binary/**")
    failed = {line.split()[1] for line in lines if line.startswith("FAIL ")}
    assert status == 1 and set(failing) <= failed, "\n".join(lines)


def test_a_messagepack_reproduction_shows_the_message_it_sends(capsys):
    """Base64 piped to curl said nothing to a reader: a line above it shows the message, keys as the ids sent."""
    with serving(Mutated(testbed.service(), single_floats)) as server:
        status, lines = run(capsys, "run", "--target", server.url, "--id", "testbed/binary/number/not-whole")
    shown = [line.strip() for line in lines if line.strip().startswith("# step ")]
    assert status == 1 and any(re.fullmatch(r'# step \d sends MessagePack: \[\{"@bin_": \[.*\]\}, \{.*\}\]', line)
                               for line in shown), "\n".join(lines)


def test_a_server_without_binary_fails_unless_declared_without_it(capsys):
    """Binary is part of the protocol: its cases fail, unless the user says the target lacks it."""
    with serving(Mutated(testbed.service(), request=without("@bin_"))) as server:
        status, lines = run(capsys, "run", "--target", server.url)
        binary = [c for c in applying({"testbed", "live"}) if "binary" in c.features]
        failed = {line.split()[1] for line in lines if line.startswith("FAIL ")}
        assert status == 1 and len(failed) > 60 and failed <= {c.id for c in binary}
        status, lines = run(capsys, "run", "--target", server.url, "--without", "binary")
    assert status == 0, "\n".join(lines)
    assert f"; {len(binary)} are not checked (without binary)." in lines[0]
    assert lines[-1].endswith(f"; {len(binary)} not checked (without binary)")


def test_reports_and_known_failures(calculator_url, tmp_path, capsys):
    """--junit, --json and --html write reports; a listed case that passes is stale and fails the run."""
    known = tmp_path / "known.txt"
    known.write_text("# a comment\ncalculator/add/*  # these pass, so they are stale\n")
    junit, report, page = tmp_path / "junit.xml", tmp_path / "report.json", tmp_path / "report.html"
    status, lines = run(capsys, "run", "--target", calculator_url, "--id", "calculator/add/*", "--id", "mock/**",
                        "--known-failures", str(known), "--junit", str(junit), "--json", str(report),
                        "--html", str(page))
    mocks, adds = len(cases.select(ALL, ["mock/**"])), len(cases.select(ALL, ["calculator/add/*"]))
    assert status == 1 and lines[-1] == (f"0 passed, 0 failed, 0 known failures, {adds} stale; {mocks} for other "
                                         f"services; {len(ALL) - mocks - adds} not selected by --id")
    assert "  It passes, but the known-failures file lists it: remove it from there." in lines
    suite = ElementTree.parse(junit).getroot()
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == (str(mocks + adds), str(adds), str(mocks))
    data = json.loads(report.read_text())
    assert data["service"] == "the calculator" and data["summary"]["stale"] == adds
    assert data["summary"]["other-service"] == mocks
    assert {c["status"] for c in data["cases"] if c["id"].startswith("calculator/")} == {"stale"}
    html = page.read_text()
    assert html.startswith("<!doctype html>") and "http://" not in html.replace(calculator_url, "")
    assert f"<span class=stale>{adds} stale</span>" in html and f"<h2>Failures: {adds}, by their cause" in html
    assert "calculator/add/overflow" in html and "calc.add" in html


def test_a_known_failure_that_fails_does_not_fail_the_run(tmp_path, capsys):
    known = tmp_path / "known.txt"
    known.write_text("calculator/add/*\n")
    adds = len(cases.select(ALL, ["calculator/add/*"]))
    with serving(Mutated(calculator.service(), drop_result)) as server:
        status, lines = run(capsys, "run", "--target", server.url, "--id", "calculator/add/*",
                            "--known-failures", str(known))
    overflow = 1  # its answer is an error, which drop_result leaves alone: it passes, so it is stale
    assert status == 1 and lines[-1] == (f"0 passed, 0 failed, {adds - overflow} known failures, {overflow} stale; "
                                         f"{len(ALL) - adds} not selected by --id")


@pytest.mark.parametrize("args, message", [
    (["run"], "the following arguments are required: --target"),
    (["run", "--target", "ftp://x/api"], "the target must be an http:// or https:// URL, such as http://127.0.0.1:8000/api"),
    (["run", "--target", "https://x/api", "--cafile", "/nowhere/ca.pem"], "--cafile /nowhere/ca.pem: No such file or directory"),
    (["run", "--target", "http://127.0.0.1:9/api", "--without", "binary,nope"], "unknown features nope"),
    (["run", "--target", "http://127.0.0.1:9/api", "--workers", "0"], "'0' is not a positive integer"),
    (["run", "--target", "http://127.0.0.1:9/api", "--wait", "-1"], "'-1' is not a number of seconds"),
    (["run", "--target", "http://127.0.0.1:9/api", "--level", "MAYBE"], "invalid choice: 'MAYBE'"),
    (["run", "--target", "http://127.0.0.1:9/api", "--id", "no/such/case"], "no case matches the --id, --exclude and --level"),
    (["run", "--target", "http://127.0.0.1:9/api", "--json", "/no/such/dir/r.json"], "cannot write the --json report"),
    (["run", "--target", "http://127.0.0.1:9/api", "--known-failures", "/no/such/file"],
     "--known-failures /no/such/file: cannot be read: No such file or directory"),
    (["run", "--target", "http://127.0.0.1:9/api", "--timeout", "0"], "0 is no time to answer in"),
    (["run", "--target", "http://127.0.0.1:9/api", "--cafile", "ca.pem"], "--cafile is for an https:// target"),
    (["nope"], "invalid choice: 'nope'"),
    (["run", "--bogus"], "python -m conformance run: error: unrecognized option --bogus"),  # (not --target missing)
    (["run", "--target", "http://127.0.0.1:9/api", "extra"], "python -m conformance run: error: unrecognized "
                                                             "arguments: extra"),  # (not the top-level command's)
])
def test_bad_command_lines_exit_2_with_one_line(args, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(args)
    error = capsys.readouterr().err
    assert exit_.value.code == 2 and message in error and error.count("\n") == 1, error
    assert error.startswith(f"python -m conformance{' run' if args[0] == 'run' else ''}: error: ")


def test_a_known_failure_that_matches_no_case_is_a_typo(tmp_path, capsys):
    known = tmp_path / "known.txt"
    known.write_text("calculator/add/integers\ncalculator/add/integer  # a typo\n")
    with pytest.raises(SystemExit) as exit_:
        main(["run", "--target", "http://127.0.0.1:9/api", "--known-failures", str(known)])
    assert exit_.value.code == 2 and "lists what matches no case: calculator/add/integer (" in capsys.readouterr().err


def test_an_unreachable_target_exits_2(capsys):
    status = main(["run", "--target", "http://127.0.0.1:9/api", "--wait", "0.3"])
    assert status == 2 and capsys.readouterr().err == "python -m conformance run: error: cannot reach http://127.0.0.1:9/api: Connection refused\n"


class Plain(http.server.BaseHTTPRequestHandler):
    """A web server that is not a server of the protocol: it answers every POST with `answer`."""

    answer = (404, b"not here")

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        status, data = self.answer
        respond(self, data, status)

    def log_message(self, *args):
        pass


@pytest.mark.parametrize("answer, path, message", [
    ((404, b"the API is at /api"), "/", "answered HTTP 404 with 'the API is at /api' (did you forget /api at the end"),
    ((200, b"<html>hello</html>"), "/api", "answered HTTP 200 with '<html>hello</html>'"),
    ((200, b'{"a": 1}'), "/api", "answered HTTP 200 with '{\"a\": 1}'"),
    ((200, b"[1, 2]"), "/api", "answered HTTP 200 with '[1, 2]'"),
    ((200, b'[{}, {"Ok_": {"api": 5}}]'), "/api", "is not a server of the protocol"),
    ((500, b""), "/api", "answered HTTP 500 with 'nothing'"),
])
def test_a_target_that_is_not_a_protocol_server_exits_2_with_one_line(answer, path, message, capsys):
    handler = type("Answering", (Plain,), {"answer": answer})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        status = main(["run", "--target", f"http://127.0.0.1:{server.server_port}{path}"])
    finally:
        server.shutdown()
        server.server_close()
    error = capsys.readouterr().err
    assert status == 2 and message in error and error.count("\n") == 1, error
    assert error.startswith(f"python -m conformance run: error: http://127.0.0.1:{server.server_port}{path} is not a server of the protocol")


@pytest.mark.parametrize("answer, told", [
    (b'[{}, {"Ok_": {"api": [' + b"[]," * 2_000_000 + b'[]]}}]', "holds over 2,000,000 values"),
    (b"\x92\x80\x81\xa3Ok_\x81\xa3api\xdd" + (1_500_000).to_bytes(4, "big") + b"\xc0" * 1_500_000,
     "is over 1048576 bytes of MessagePack"),
])
def test_a_target_whose_answers_hold_more_than_the_suite_decodes_exits_2_at_once(answer, told, monkeypatch,
                                                                                 capsys):
    """Decoding costs about 60 bytes a value: an answer of millions of empty arrays is refused unread."""
    monkeypatch.setattr("conformance.targets.remote.MAX_BINARY", 1024 * 1024)
    handler = type("Answering", (Plain,), {"answer": (200, answer)})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        started = time.monotonic()
        status = main(["run", "--target", f"http://127.0.0.1:{server.server_port}/api"])
    finally:
        server.shutdown()
        server.server_close()
    error = capsys.readouterr().err
    assert status == 2 and "with more than the suite reads: the answer " + told in error, error
    assert error.count("\n") == 1 and time.monotonic() - started < 5


@pytest.mark.parametrize("reply, message", [
    (None, "cannot reach http://127.0.0.1:{port}/api: "),  # it hangs up at once
    (b"hello there\r\n\r\n", "is not a server of the protocol: its answer is not HTTP (BadStatusLine: hello there)"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n[{}, ",
     "its answer is not HTTP (IncompleteRead: IncompleteRead(5 bytes read, 95 more expected))"),
])
def test_a_target_that_does_not_speak_http_exits_2_with_one_line(reply, message, capsys):
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def answer():
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            with connection:
                if reply:
                    connection.recv(65536)
                    connection.sendall(reply)

    threading.Thread(target=answer, daemon=True).start()
    try:
        status = main(["run", "--target", f"http://127.0.0.1:{port}/api", "--wait", "0.5"])
    finally:
        listener.close()
    error = capsys.readouterr().err
    assert status == 2 and message.format(port=port) in error and error.count("\n") == 1, error


def test_list_selects_by_id_and_level(capsys):
    status, lines = run(capsys, "list", "--id", "binary/negotiate/*", "--level", "MUST")
    assert status == 0 and lines and all(line.startswith("binary/negotiate/") and " MUST " in line for line in lines)
    status, lines = run(capsys, "list", "--id", "api/public/calculator-schema", "--level", "MUST")
    assert lines[0].split()[1] == "SHOULD+MUST"
    status, lines = run(capsys, "list", "--level", "MAY")
    assert len(lines) == len(cases.everything()) and any(" MAY " in line for line in lines)
    status, lines = run(capsys, "list", "--id", "testbed/mock/**")
    assert lines and all(" testbed,mock " in line for line in lines)


def test_check_finds_problems_in_a_broken_suite(tmp_path, capsys):
    """The linter is real: duplicated ids, unknown requirements, bad shapes, misfits and stale files are found."""
    for path in cases.CASES.glob("*.json"):
        (tmp_path / path.name).write_text(path.read_text())
    envelope = json.loads((tmp_path / "envelope.json").read_text())
    envelope["cases"].append(dict(envelope["cases"][0]))
    envelope["cases"].append({**envelope["cases"][1], "id": "envelope/new/one", "requirements": ["no.such.rule"]})
    envelope["cases"].append({**envelope["cases"][1], "id": "envelope/new/two", "requires": ["calculator"],
                              "steps": [{"request": {"message": [{}, {"fn.add": {"x": "1", "y": 2}}]},
                                         "response": {"message": [{}, {"Ok_": {"result": "three"}}]}}]})
    envelope["cases"].append({**envelope["cases"][1], "id": "envelope/new/three", "features": ["binary"]})
    (tmp_path / "envelope.json").write_text(json.dumps(envelope))
    problems = lint.check(tmp_path)
    assert "envelope.json: envelope/parse/not-json: the id is also used in envelope.json" in problems
    assert "envelope.json: envelope/new/one: unknown requirement no.such.rule" in problems
    assert "envelope.json: envelope/new/two: step 1: the expected Ok_ does not fit its fields {'result': 'number'}" in problems
    assert "envelope.json: envelope/new/two: step 1: the request does not fit fn.add, yet a Ok_ is expected" in problems
    assert "envelope.json: envelope/new/three: its requests use the features [], not ['binary']" in problems
    (tmp_path / "http.json").write_text(json.dumps({"description": "x", "cases": [{"id": "Bad Id", "steps": []}]}))
    problems = lint.check(tmp_path)
    assert "http.json: $.cases[0].id: 'Bad Id' does not match ^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)+$" in problems
    assert "http.json: $.cases[0]: level is missing" in problems


def test_check_fails_when_a_generated_file_is_not_current(tmp_path, monkeypatch):
    monkeypatch.setattr(cases, "HERE", tmp_path)
    (tmp_path / "cases").mkdir()
    for name in ("fixture.schema.json", "requirements.json", "retired.json"):
        (tmp_path / name).write_text((cases.CASES.parent / name).read_text())
    problems = lint.check(tmp_path / "cases")
    assert "testbed.json: not what conformance/tables makes; run python -m conformance generate" in problems
    assert "cases/testbed-types.json: not what conformance/tables makes; run python -m conformance generate" in problems


def matches(expected, actual, captured=None):
    return [why for _, why in match.compare(expected, actual, {} if captured is None else captured)]


@pytest.mark.parametrize("expected, actual, ok", [
    ({"a": 1}, {"a": 1.0}, True),
    ({"a": 1}, {"a": True}, False),
    ({"a": 1}, {"a": 1, "b": 2}, False),
    ([1, 2], [2, 1], False),
    ({"$unordered": [1, 2]}, [2, 1], True),
    ({"$unordered": [1, 2]}, [2, 1, 3], False),
    ({"$unordered": [{"$type": "integer"}, 2]}, [2, 5], True),
    ({"$includes": [1]}, [2, 1, 3], True),
    ({"$includes": [1, 1]}, [1, 2], False),
    ({"$partial": {"a": 1}}, {"a": 1, "b": 2}, True),
    ({"$partial": {"a": {"$absent": True}}}, {"b": 2}, True),
    ({"$partial": {"a": {"$absent": True}}}, {"a": 2}, False),
    ({"$oneOf": [1, "x"]}, "x", True),
    ({"$oneOf": [1, "x"]}, 2, False),
    ({"$type": "integer"}, 3, True),
    ({"$type": "integer"}, 3.0, False),
    ({"$type": "integer"}, 3.5, False),
    ({"$type": "number"}, 3.0, True),
    ({"$type": "string"}, None, False),
    ({"$type": "bytes"}, {"$bin": "AQ=="}, True),
    ({"$not": 1}, 2, True),
    ({"$not": 1}, 1, False),
    ({"$not": {"$includes": [1]}}, [2, 3], True),
    ({"$literal": {"$type": "string"}}, {"$type": "string"}, True),
    ({"$literal": {"$type": "string"}}, "text", False),
    ({"$authenticated": False, "fn.x": {}}, {"$authenticated": False, "fn.x": {}}, True),
])
def test_matching_language(expected, actual, ok):
    assert (matches(expected, actual) == []) == ok


def test_differences_are_shown_as_json():
    [why] = matches({"result": 1}, {"result": float("nan")})
    assert why == "expected 1, got NaN"
    [why] = matches({"a": "x"}, {"a": "y" * 500})
    assert why.startswith('expected "x", got "yyy') and why.endswith(" ...") and len(why) < 200


def test_captures_carry_values_between_steps():
    captured = {}
    assert matches({"token": {"$type": "string", "$capture": "t"}}, {"token": "abc"}, captured) == []
    assert captured == {"t": "abc"}
    assert match.substitute({"@auth_": {"Session": {"token": {"$var": "t"}}}, "u": "$user-2"}, captured, "me") == {
        "@auth_": {"Session": {"token": "abc"}}, "u": "me-2"}
    assert matches({"$var": "t"}, "abd", captured) == ['expected "abc", got "abd"']


def test_messagepack_notation_round_trips():
    value = {"#10": {"#42": 1.5, "name": {"$bin": "AQI="}}, "x": [{"$ext": [17, ""]}]}
    packed = decoding.to_msgpack(value)
    assert packed == {10: {42: 1.5, "name": b"\x01\x02"}, "x": [msgpack.ExtType(17, b"")]}
    assert decoding.from_msgpack(packed) == value
    assert decoding.from_msgpack(packed, {10: "fn.add"}) == {"fn.add": {"#42": 1.5, "name": {"$bin": "AQI="}},
                                                         "x": [{"$ext": [17, ""]}]}


def test_service_wide_unavailability_is_retried_then_reported(capsys):
    """ErrorUnavailable may come from any function: the runner retries a few times, then says so."""
    with serving(calculator.service(unavailable_rate=0.1)) as server:
        status, lines = run(capsys, "run", "--target", server.url, "--id", "calculator/**")
    assert status == 0, "\n".join(lines)
    with serving(calculator.service(unavailable_rate=1.0)) as server:
        status, lines = run(capsys, "run", "--target", server.url, "--id", "calculator/add/integers")
    assert status == 1 and "  step 1 of 1: the target answered ErrorUnavailable 5 times in a row" in lines


def test_the_runner_reads_answers_thousands_of_levels_deep():
    """A server may echo a deep @id_ back, on JSON or on MessagePack; the runner reads it."""
    from conformance.language import decoding
    from conformance.__main__ import FRAMES
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(FRAMES)  # as main() does
    try:
        text = decoding.decode(b'[{"@id_": ' + b"[" * 5000 + b"]" * 5000 + b'}, {"Ok_": {}}]')
        packed = decoding.decode(b"\x92\x81\xa4@id_" + b"\x91" * 2000 + b"\x90\x81\xa3Ok_\x80")  # (past msgpack's 1,024)
    finally:
        sys.setrecursionlimit(limit)
    for message in (text, packed):
        assert message[1] == {"Ok_": {}} and type(message[0]["@id_"]) is list


# Checking clients

CLIENT_CASES = cases.load(cases.CLIENTS)
OUR_DRIVER = f"{shlex.quote(sys.executable)} -m reference.client --driver"
NEVER_RENEGOTIATES = """
import sys
from reference.cli import drivers
from reference.transports import http_client
def call(self, function, arguments=None, headers=None):  # no second try after IncompatibleBinaryEncoding
    message = [{"@time_": round(self.timeout * 1000), **(headers or {})}, {function: arguments or {}}]
    if not self.binary:
        return self._exchange(message)
    return self._exchange(self._negotiating(message), self.encodings.get(self.checksum))
http_client.Client.call = call
drivers.drive_client(sys.argv[1], sys.stdin, sys.stdout)
"""
BYTES_AS_TEXT = """
import base64, sys
from reference.cli import drivers
def wire(value):  # base64 text where the protocol says bytes
    if type(value) is bytes:
        return base64.b64encode(value).decode()
    if type(value) is dict:
        return {k: wire(v) for k, v in value.items()}
    return [wire(v) for v in value] if type(value) is list else value
drivers.to_wire = wire
drivers.drive_client(sys.argv[1], sys.stdin, sys.stdout)
"""


def driver(program):
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(program)}"


def test_the_reference_client_passes_every_client_case(tmp_path, capsys):
    status, lines = run(capsys, "client", "--command", OUR_DRIVER, "--json", str(tmp_path / "r.json"))
    assert status == 0, "\n".join(lines)
    assert lines[0] == f"Checking the client driven by {OUR_DRIVER!r}. Running {len(CLIENT_CASES)} cases."
    assert lines[-1] == f"{len(CLIENT_CASES)} passed, 0 failed" and len(CLIENT_CASES) >= 60
    assert json.loads((tmp_path / "r.json").read_text())["summary"]["pass"] == len(CLIENT_CASES)


def test_client_cases_cover_the_client_rules():
    covered = {r for c in CLIENT_CASES for r in c.requirements}
    rules = {r["id"] for r in cases.load_json("requirements.json") if r["id"].startswith("client.")}
    assert len(rules) >= 10 and rules <= covered
    assert {c.client["mode"] for c in CLIENT_CASES} == {"json", "binary", "binary-requests", "packed"}


@pytest.mark.parametrize("program, area, failing, diff", [
    (NEVER_RENEGOTIATES, "client/renegotiate/**",
     {"client/renegotiate/stale-checksum/binary", "client/renegotiate/stale-checksum/packed"},
     ["step 2 of 3: the client sent 1 requests; expected 2",
      'step 2 of 3: returned [1].ErrorParseFailure_: unexpected key, holding {"reasons": [{"IncompatibleBinaryEncoding": {}}]}']),
    (BYTES_AS_TEXT, "client/bytes/**", {"client/bytes/field/json", "client/bytes/array/binary", "client/bytes/union/json"},
     ['step 1 of 1: returned [1].Ok_.blob: expected the bytes {"$bin": "AQI="}, got "AQI="']),
])
def test_a_broken_client_fails_with_a_readable_diff(program, area, failing, diff, capsys):
    status, lines = run(capsys, "client", "--command", driver(program), "--id", area)
    failed = {line.split()[1] for line in lines if line.startswith("FAIL ")}
    assert status == 1 and failing <= failed, "\n".join(lines)
    assert all(f"  {line}" in lines for line in diff), "\n".join(lines)
    assert any(line.startswith("    the instruction: {") for line in lines)
    assert any(line.startswith("    request 1 (json): [{") for line in lines)


def test_a_client_that_never_returns_is_reported_and_the_run_goes_on(capsys):
    hangs = driver("import sys, time\nfor line in sys.stdin: time.sleep(60)")
    status, lines = run(capsys, "client", "--command", hangs, "--id", "client/failures/stall/json",
                        "--id", "client/failures/closed/json")
    assert status == 1 and lines[-1] == f"0 passed, 2 failed (2 SHOULD); {len(CLIENT_CASES) - 2} not selected by --id"
    assert "  step 1 of 1: the driver did not answer within 2.5 s (it was restarted)" in lines


@pytest.mark.parametrize("command, message", [
    ("no-such-program-anywhere", "cannot start the driver 'no-such-program-anywhere': No such file or directory"),
    ("'unterminated", "cannot start the driver \"'unterminated\": No closing quotation"),
])
def test_a_driver_that_cannot_start_exits_2(command, message, capsys):
    status = main(["client", "--command", command])
    assert status == 2 and capsys.readouterr().err == f"python -m conformance client: error: {message}\n"


def test_a_driver_that_dies_fails_its_cases_with_its_last_words(capsys):
    """A driver that answered once, then dies: its case fails with what it said, and the run goes on."""
    dies = driver("import json, sys\nnumber = json.loads(sys.stdin.readline())['id']\n"
                  "print(json.dumps({'id': number, 'error': 'a call failed'}), flush=True)\n"
                  "sys.stdin.readline()\nsys.exit('the driver gave up')")
    status, lines = run(capsys, "client", "--command", dies, "--id", "client/json/call", "--id", "client/json/headers")
    assert status == 1 and "  step 1 of 1: the driver exited with status 1: the driver gave up" in lines


# Checking schema loaders

SCHEMA_CASES = cases.load(cases.SCHEMAS)
OUR_SCHEMA_DRIVER = f"{shlex.quote(sys.executable)} -m reference.schema --driver"
ENDLESS_ACCEPTED = """
import sys
from reference.cli import drivers
from reference.protocol import loader
loader.Schema._check_termination = lambda self, indexed: None  # never asks whether a type can end
drivers.drive_schema(sys.stdin, sys.stdout)
"""
DUPLICATES_ACROSS_DOCUMENTS = """
import sys
from reference.cli import drivers
from reference.protocol import documents, loader
checked = loader.Schema.__init__
def one_document_at_a_time(self, documents_, problems=(), internal=(), extensions=None):
    for document in documents_:  # each document on its own: a name two of them define goes unnoticed
        checked(self, [document], problems, internal, extensions)
loader.Schema.__init__ = one_document_at_a_time
drivers.drive_schema(sys.stdin, sys.stdout)
"""


def test_the_reference_loader_passes_every_schema_case(tmp_path, capsys):
    status, lines = run(capsys, "schema", "--command", OUR_SCHEMA_DRIVER, "--json", str(tmp_path / "r.json"))
    assert status == 0, "\n".join(lines)
    assert lines[-1] == f"{len(SCHEMA_CASES)} passed, 0 failed" and len(SCHEMA_CASES) >= 150
    levels = {c.level for c in SCHEMA_CASES}
    assert levels == {"MUST", "SHOULD"} and sum(c.spec is not None for c in SCHEMA_CASES) >= 100


def test_schema_cases_cover_every_rule_of_the_schema_language():
    covered = {r for c in SCHEMA_CASES for r in c.requirements}
    rules = {r["id"] for r in cases.load_json("requirements.json")
             if r["id"].startswith(("schema.", "conv.schema-")) and r["id"] != "schema.api"}  # (that one: fn.api_)
    assert len(rules) >= 20 and rules <= covered


@pytest.mark.parametrize("program, failing, diff", [
    (ENDLESS_ACCEPTED, "schema/terminates/self", "expected the schema to be refused; the loader accepted it"),
    (DUPLICATES_ACROSS_DOCUMENTS, "schema/once/across-documents",
     "expected the schema to be refused; the loader accepted it"),
])
def test_a_broken_loader_fails_with_a_readable_diff(program, failing, diff, capsys):
    status, lines = run(capsys, "schema", "--command", driver(program), "--id", "schema/terminates/**",
                        "--id", "schema/once/**")
    assert status == 1 and f"FAIL {failing} (SHOULD; conventions.json; checks " in "\n".join(lines), "\n".join(lines)
    assert f"  {diff}" in lines and any(line.startswith("    the driver answered: {") for line in lines)


def test_an_answer_over_the_limit_fails_its_case_without_being_read_to_its_end(monkeypatch):
    """A server that never ends its answer costs the suite MAX_ANSWER bytes at most."""
    monkeypatch.setattr("conformance.targets.remote.MAX_ANSWER", 100_000)
    with pytest.raises(http.client.HTTPException, match="the answer is over 100000 bytes"):
        Target(endless(b"Connection: close\r\n")).post([{}, {"fn.ping_": {}}])


def answered_before_the_body(answer, framing):
    """The response of a server that reads a request's head, waits for its body to arrive and sends
    `answer` without reading it, then closes: its kernel resets the connection."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve():
        with listener:
            connection, _ = listener.accept()
            with connection:
                head = b""
                while not head.endswith(b"\r\n\r\n"):
                    head += connection.recv(1)
                connection.recv(1, socket.MSG_PEEK)  # the body is there, unread
                connection.sendall(answer)

    threading.Thread(target=serve, daemon=True).start()
    connection = http.client.HTTPConnection(*listener.getsockname(), timeout=5)
    send(connection, "POST", "/api", b'[{}, {"fn.ping_": {}}]', "application/json", framing)
    return connection.getresponse()


@pytest.mark.parametrize("framing", ["two-lengths", "length-not-a-number", "both"])
def test_an_answer_before_the_body_is_read_all_the_same(framing):
    """A 400 sent before the body is read, its end marked by a close that the unread body turns into a
    reset, is the answer all the same."""
    response = answered_before_the_body(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\nInvalid", framing)
    assert (response.status, read(response)) == (400, b"Invalid")


def test_a_reset_inside_chunks_is_no_answer():
    """The end of a chunked answer is its last chunk: a reset before it is a fault, not an end."""
    response = answered_before_the_body(
        b"HTTP/1.1 400 Bad Request\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nInval\r\n", "two-lengths")
    with pytest.raises(ConnectionResetError):
        read(response)


def test_a_target_over_https_is_checked_with_a_private_certificate_authority(tls, capsys):
    context, cafile, _ = tls
    with serving(calculator.service(), tls=context) as server:
        url = server.url.replace("http://", "https://")
        assert main(["run", "--target", url, "--cafile", cafile, "--id", "calculator/add/**"]) == 0
        assert "passed" in capsys.readouterr().out
        assert main(["run", "--target", url, "--id", "calculator/add/**"]) == 2
    assert capsys.readouterr().err == (f"python -m conformance run: error: cannot reach {url}: its certificate is not trusted (unable to get "
                                       f"local issuer certificate); to trust a private CA, give its certificate "
                                       f"with --cafile\n")


def test_http_and_https_mixed_up_are_told_apart(tls, calculator_url, capsys):
    """As the client says it, at once: a plain request to an HTTPS server (it took the whole --wait), and
    TLS to a plain one."""
    context, cafile, _ = tls
    with serving(calculator.service(), tls=context) as server:
        plain = server.url.replace("https://", "http://")
        started = time.monotonic()
        assert main(["run", "--target", plain, "--wait", "10"]) == 2
        assert time.monotonic() - started < 3
    assert capsys.readouterr().err == (f"python -m conformance run: error: cannot reach {plain}: it closed the "
                                       f"connection without answering (an HTTPS server does that to plain HTTP: is it "
                                       f"an https:// URL?)\n")
    url = calculator_url.replace("http://", "https://")
    assert main(["run", "--target", url, "--cafile", cafile]) == 2
    assert capsys.readouterr().err == (f"python -m conformance run: error: cannot reach {url}: it does not speak TLS "
                                       f"(is it an http:// URL?)\n")


def test_waiting_for_a_target_says_what_for(capsys):
    with refusing() as url:
        assert main(["run", "--target", url, "--wait", "0.3"]) == 2
    out = capsys.readouterr().out
    assert out == f"Waiting up to 0.3 s for {url} to answer (Connection refused; see --wait)...\n"


@pytest.mark.parametrize("kind", ["client", "schema"])
def test_a_driver_that_dies_before_answering_anything_stops_the_run_in_one_line(kind, tmp_path, capsys):
    """Not 93 failures of the same import error: one line that says what the driver said, and 2."""
    (tmp_path / "driver.py").write_text("import no_such_module_anywhere\n")
    status = main([kind, "--command", f"{sys.executable} {tmp_path / 'driver.py'}"])
    error = capsys.readouterr().err
    assert status == 2 and error.count("\n") == 1 and error.startswith(f"python -m conformance {kind}: error: ")
    assert error.endswith("exited with status 1 before answering anything: "
                          "ModuleNotFoundError: No module named 'no_such_module_anywhere'\n")


def dropping(header):
    """An answer that lacks one header the server should have sent."""
    def answer(request, message):
        message[0].pop(header, None)
        return message
    return answer


@pytest.mark.parametrize("header, rule", [("@enc_", "header.enc"), ("@id_", "header.id")])
def test_failures_are_grouped_by_their_cause_in_every_report(header, rule, tmp_path, capsys):
    """A server that leaves out one header fails cases citing a dozen rules, for one cause: every
    report shows one group, the difference it is about, and the rule of the check that failed."""
    page, junit = tmp_path / "report.html", tmp_path / "junit.xml"
    with serving(Mutated(testbed.service(), dropping(header))) as server:
        status, lines = run(capsys, "run", "--target", server.url, "--html", str(page), "--junit", str(junit))
    failed = [line for line in lines if line.startswith("FAIL ")]
    cited = {rule for line in failed for rule in line.split("checks ")[1].rstrip(")").split(", ")}
    assert status == 1 and len(failed) >= 10 and len(cited) > 3
    group = lines[lines.index(f"{len(failed)} failures, one cause:") + 1:-1]
    levels = {level: sum(f"({level};" in line for line in failed) for level in ("MUST", "SHOULD")}
    assert group[0].split()[:4] == [str(len(failed)), "MUST", f"[0].{header}:", "missing"]  # (the strongest level,
    assert group[0].endswith(f"  ({levels['MUST']} MUST, {levels['SHOULD']} SHOULD)")  # and the mix the summary counts)
    assert f"({levels['MUST']} MUST, {levels['SHOULD']} SHOULD)" in lines[-1]
    assert group[1].strip().startswith(f"breaks {rule}: ") and group[2].strip().startswith("first: ")
    html = page.read_text()
    assert html.count("<details class=rule>") == 1 and f"<b>[0].{header}: missing</b> <b>({len(failed)} cases: " \
        f"{levels['MUST']} MUST, {levels['SHOULD']} SHOULD)" in html
    assert html.index("MUST; ", html.index("<details class=rule>")) < html.index("SHOULD", html.index("<details class=failure>"))
    assert html.count("<details class=failure>") == len(failed) and f"breaks <b>{rule}</b>" in html
    messages = [f.get("message") for f in ElementTree.parse(junit).getroot().iter("failure")]
    assert len(messages) == len(failed)
    assert all(m.split()[1] == f"{rule}:" and m.endswith(f"[0].{header}: missing") for m in messages)
    if header == "@id_":  # conformance/README.md shows this run's end, as it is
        shown = "\n".join(lines[lines.index(f"{len(failed)} failures, one cause:"):])
        assert f"```text\n{shown}\n```" in (ROOT / "conformance" / "README.md").read_text(), shown


def crashing_ping(request, message):
    """fn.ping_ answered as a crashed handler, with a new caseId each time, as a real one is."""
    if request and "fn.ping_" in request[1]:
        return [message[0], {"ErrorUnknown_": {"caseId": str(uuid.uuid4())}}]
    return message


def test_a_failure_repeated_with_values_that_vary_by_design_is_not_flaky(capsys):
    """run --repeat: the same failure with another caseId each time fails; it was `flaky` and left the MUST count."""
    with serving(Mutated(calculator.service(), crashing_ping)) as server:
        status, lines = run(capsys, "run", "--target", server.url, "--id", "api/ping/ok", "--repeat", "3")
    assert status == 1 and any(line.startswith("FAIL api/ping/ok ") for line in lines), "\n".join(lines)
    assert lines[-1].startswith("0 passed, 1 failed (1 MUST)") and "flaky" not in lines[-1]


def test_a_run_stops_starting_cases_at_maxfail_and_the_next_runs_only_what_failed(capsys):
    """-x, --maxfail N and --last-failed, as pytest has them: the failures are kept between runs."""
    with serving(Mutated(testbed.service(), dropping("@id_"))) as server:
        status, lines = run(capsys, "run", "--target", server.url, "--workers", "1", "-x")
        assert status == 1 and sum(line.startswith("FAIL ") for line in lines) == 1
        assert re.search(r"^\d+ passed, 1 failed \(1 \w+\); \d+ for other services; \d+ not run "
                         r"\(--maxfail 1 stopped the run\)$", lines[-1]), lines[-1]
        run(capsys, "run", "--target", server.url, "--maxfail", "3", "--workers", "1")
        status, lines = run(capsys, "run", "--target", server.url, "--last-failed")
        assert lines[0] == "Running only what failed last time (--last-failed): 3 of the cases selected."
        assert status == 1 and lines[-1].startswith("0 passed, 3 failed") and lines[-1].endswith("not selected by --last-failed")
    with serving(testbed.service()) as server:
        status, lines = run(capsys, "run", "--target", server.url, "--lf")
        assert status == 0 and lines[-1].startswith("3 passed, 0 failed")
        status, lines = run(capsys, "run", "--target", server.url, "--lf", "--id", "envelope/**")
    assert lines[0] == "No failures recorded by the last run; running every case selected (--last-failed)."
    assert status == 0 and not json.load(open(".conformance_cache/last-failed.json"))["server"]


@pytest.mark.parametrize("signal_", ["SIGINT", "SIGTERM"])
def test_an_interrupted_run_ends_with_its_summary_and_valid_reports(signal_, tmp_path):
    """Ctrl-C (or SIGTERM) in the middle: no traceback; what ran is summed up and reported, the rest not run."""
    def slowly(request, message):
        time.sleep(0.002)
        return message
    reports = [f"--junit={tmp_path / 'r.xml'}", f"--json={tmp_path / 'r.json'}", f"--html={tmp_path / 'r.html'}"]
    with serving(Mutated(testbed.service(), slowly)) as server:
        process = subprocess.Popen([sys.executable, "-m", "conformance", "run", "--target", server.url, "-v", *reports],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        passed = 0
        for line in process.stdout:  # (a run that ends early ends the loop, and the test fails below)
            passed += line.strip().startswith("PASS ")
            if passed == 20:
                break
        process.send_signal(getattr(signal, signal_))
        out, err = process.communicate(timeout=60)
    lines = out.splitlines()
    assert (process.returncode, err) == (130, "")
    assert re.fullmatch(r"The run was interrupted: \d+ cases? left (was|were) not run\.", lines[-2])
    assert re.fullmatch(r"\d+ passed, 0 failed; \d+ for other services; \d+ not run \(the run was interrupted\)", lines[-1])
    summary = json.loads((tmp_path / "r.json").read_text())["summary"]
    assert summary["pass"] >= 20 and summary["not-run"] > 0
    assert summary["pass"] + summary["not-run"] + summary["other-service"] == len(ALL)
    assert int(ElementTree.parse(tmp_path / "r.xml").getroot().get("tests")) == len(ALL)
    assert "not run" in (tmp_path / "r.html").read_text()


def test_reports_that_cannot_be_written_stop_the_run_first_and_leave_no_empty_file(tmp_path, capsys):
    for option, said in ((f"--junit={tmp_path / 'no' / 'r.xml'}", f"cannot write the --junit report to {tmp_path / 'no' / 'r.xml'}: No such file or directory"),
                         (f"--json={tmp_path}", f"cannot write the --json report to {tmp_path}: Is a directory"),
                         ("--json=-", "--json needs a file name: standard output carries the run's lines")):
        with pytest.raises(SystemExit) as stop:
            main(["run", "--target", "http://127.0.0.1:9/api", option])
        assert stop.value.code == 2 and capsys.readouterr().err == f"python -m conformance run: error: {said} (see python -m conformance run --help)\n"
    assert main(["run", "--target", "http://127.0.0.1:9/api", "--wait", "0", f"--junit={tmp_path / 'r.xml'}"]) == 2
    assert not (tmp_path / "r.xml").exists()


def test_pytest_s_ways_of_choosing_and_ordering_cases(calculator_url, capsys):
    """--exclude leaves cases out, --ff runs last time's failures first, --durations shows the slowest,
    --level takes any case; list with nothing to list is a usage error."""
    adds = ["--target", calculator_url, "--id", "calculator/add/*"]
    status, lines = run(capsys, "run", *adds, "--exclude", "*/add/overflow", "--exclude", "*/add/fr*", "-v", "--level", "must",
                        "--workers", "1")
    assert status == 0 and [line.split()[-1] for line in lines if "PASS" in line] == [
        "calculator/add/integers", "calculator/add/negatives"]
    assert lines[-1].endswith(f"; {len(ALL) - 2} not selected by --id or --exclude")
    with serving(Mutated(calculator.service(), lambda request, message: (
            [{}, {"Ok_": {"result": 0}}] if request and "fn.add" in request[1] and request[1]["fn.add"].get("x") == -5
            else message))) as server:
        assert run(capsys, "run", "--target", server.url, "--id", "calculator/add/*")[0] == 1
    status, lines = run(capsys, "run", *adds, "--ff", "-v", "--workers", "1", "--durations", "2")
    assert lines[0] == "Running first what failed last time (--failed-first): 1 of the cases selected."
    assert lines[2].split() == ["PASS", "calculator/add/negatives"]
    slowest = lines.index("The 2 slowest cases:")
    assert [re.fullmatch(r" +\d+\.\d{3} s  (calculator/add/\w+)", line)[1] for line in lines[slowest + 1:-1]]
    assert status == 0 and len(lines) == slowest + 4
    with pytest.raises(SystemExit) as stop:
        main(["list", "--id", "no/such/**"])
    assert stop.value.code == 2 and "no case matches the --id, --exclude and --level given" in capsys.readouterr().err


def test_settings_in_pyproject_toml_are_defaults_the_command_line_overrides(calculator_url, capsys, tmp_path):
    (tmp_path / "pyproject.toml").write_text(f'[tool.conformance]\ntarget = "{calculator_url}"\n'
                                             f'id = ["calculator/add/*"]\nexclude = "**/overflow"\nverbose = true\n')
    status, lines = run(capsys, "run")
    assert lines[0] == "Settings from [tool.conformance] in pyproject.toml: target, id, exclude, verbose"
    assert status == 0 and sum("PASS" in line for line in lines) == 3
    status, lines = run(capsys, "run", "--id", "calculator/add/integers")
    assert status == 0 and sum("PASS" in line for line in lines) == 1
    for setting, said in (('targte = "x"', "targte: no command has this option; did you mean target?"),
                          ("workers = 0", "workers: '0' is not a positive integer"),
                          ("verbose = 1", "verbose: a flag takes true or false, not 1"),
                          ("timeout = [1]", "timeout: takes one value, not a list"),
                          ("level = 'all'", 'level: "all" is not one of MUST, SHOULD, MAY'),
                          ("[tool", "Expected ']' at the end of a table declaration (at line 2, column 6)")):
        (tmp_path / "pyproject.toml").write_text(f"[tool.conformance]\n{setting}\n")
        with pytest.raises(SystemExit) as stop:
            main(["run"])
        error = capsys.readouterr().err
        assert stop.value.code == 2 and error.startswith("python -m conformance: error: pyproject.toml: ")
        assert error.endswith(f"{said}\n") and error.count("\n") == 1


HOSTILE_FILES = {  # what a file given to the suite may be, and the line that says why it is not read
    "device": (lambda path: path.symlink_to("/dev/zero"), "{path}: not a regular file"),
    "pipe": (lambda path: os.mkfifo(path), "{path}: not a regular file"),
    "huge": (lambda path: path.write_bytes(b" " * (16 * 1024 * 1024 + 1)), "{path}: over 16 MiB, more than the suite reads"),
    "binary": (lambda path: path.write_bytes(b"\xff\xfe"), "{path}: not UTF-8 text (byte 0 is not)"),
    "absent": (lambda path: None, "{path}: cannot be read: No such file or directory"),
}
DEEP = {"pyproject.toml": "[tool.conformance]\nid = " + "[" * 100_000 + "]" * 100_000 + "\n",
        "known.txt": None, "manifest.json": "[" * 100_000 + "]" * 100_000, "cases.json": "[" * 100_000 + "]" * 100_000}


@pytest.mark.parametrize("kind", HOSTILE_FILES)
@pytest.mark.parametrize("name, command", [
    ("pyproject.toml", ["run", "--target", "http://127.0.0.1:9/api"]),
    ("known.txt", ["run", "--target", "http://127.0.0.1:9/api", "--known-failures", "known.txt"]),
    ("cases.json", ["run", "--target", "http://127.0.0.1:9/api", "--cases", "cases.json"]),
    ("manifest.json", ["matrix", "--manifest", "manifest.json"]),
])
def test_a_file_that_is_a_device_a_pipe_huge_or_deep_is_one_line_and_exit_2(kind, name, command, capsys):
    """Whatever the file is, the suite neither hangs, nor fills its memory, nor shows a traceback."""
    plant, said = HOSTILE_FILES[kind]
    if name == "pyproject.toml" and kind == "absent":
        plant, said = (lambda path: path.write_text(DEEP[name]), "{path}: nests arrays and tables deeper than the suite reads")
    elif kind == "absent" and DEEP[name]:
        plant, said = (lambda path: path.write_text(DEEP[name]), "{path}: nests arrays and objects deeper than the suite reads")
    plant(Path(name))
    started = time.monotonic()
    with pytest.raises(SystemExit) as stop:
        main(command)
    error = capsys.readouterr().err
    assert stop.value.code == 2 and error.count("\n") == 1 and said.format(path=name) in error, error
    assert time.monotonic() - started < 10


@pytest.mark.parametrize("command", [["run", "--target", "http://127.0.0.1:9/api"], ["fuzz", "--target", "http://127.0.0.1:9/api"]])
def test_a_timeout_longer_than_a_day_is_a_usage_error_not_an_overflow(command, capsys):
    with pytest.raises(SystemExit) as stop:
        main([*command, "--timeout", "1e308"])
    error = capsys.readouterr().err
    assert stop.value.code == 2 and "'1e308' is not a number of seconds from 0 to 86,400 (a day)" in error
    assert error.count("\n") == 1


HOSTILE = "\x1b]0;owned\x07\x1b[2J\x9b31m\ud800"  # a window title, a cleared screen, a C1 escape, half a pair


def hostile(request, message):
    """Answers every call but fn.api_ with control characters and a lone surrogate in its result."""
    if request and "fn.api_" not in request[1] and "Ok_" in message[1]:
        return [message[0], {"Ok_": {"result": HOSTILE}}]
    return message


def test_control_characters_and_lone_surrogates_in_answers_reach_no_report_raw(tmp_path, capsys):
    """Every report carries what a hostile target answers as escapes: the terminal obeys no escape
    sequence, the JUnit file stays XML, the HTML page is written."""
    page, junit = tmp_path / "report.html", tmp_path / "junit.xml"
    with serving(Mutated(calculator.service(), hostile)) as server:
        status = main(["run", "--target", server.url, "--html", str(page), "--junit", str(junit)])
    out = capsys.readouterr().out
    assert status == 1 and "\\u001b]0;owned\\u0007\\u001b[2J\\u009b31m\\ud800" in out
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\ud800-\udfff]", out)
    failures = list(ElementTree.parse(junit).getroot().iter("failure"))
    assert failures and any("\\u001b" in (f.text or "") for f in failures)
    assert "\\u001b]0;owned" in page.read_text(encoding="utf-8")


@pytest.mark.parametrize("planted", ["link", "fifo", "large"])
def test_what_a_checkout_plants_in_the_cache_is_never_followed_or_read_whole(planted, testbed_url, tmp_path, capsys):
    """A link in the record's place is replaced, not written through; a pipe or a huge file is not read."""
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("kept")
    folder = Path(".conformance_cache")
    folder.mkdir()
    record = folder / "last-failed.json"
    {"link": lambda: record.symlink_to(elsewhere), "fifo": lambda: os.mkfifo(record),
     "large": lambda: record.write_text(" " * 5_000_000 + "{}")}[planted]()
    status, lines = run(capsys, "run", "--target", testbed_url, "--lf", "--id", "envelope/**")
    assert status == 0 and lines[0].startswith("No failures recorded by the last run")
    assert elsewhere.read_text() == "kept" and not record.is_symlink() and json.loads(record.read_text()) == {"server": []}


def test_a_driver_that_writes_something_else_than_a_reply_stops_the_run_in_one_line(capsys):
    command = driver("print('hello')")
    status = main(["client", "--command", command])
    error = capsys.readouterr().err
    assert status == 2 and error == (f"python -m conformance client: error: the driver {command!r} "
                                     "wrote 'hello' where its reply to the first instruction was due; a driver writes "
                                     "only its replies on standard output, one JSON line each (logs go to standard "
                                     "error)\n")


@pytest.mark.parametrize("reply", ['{"accepted": "yes"}', '{"accepted": False, "problems": "many"}', '{}'])
def test_a_schema_driver_whose_replies_are_no_verdicts_stops_the_run_in_one_line(reply, capsys):
    """Not 335 refusals: the driver speaks another protocol, which is said once."""
    command = driver(f"import json, sys\nfor line in sys.stdin:\n    print(json.dumps({{'id': json.loads(line)['id'], "
                     f"**{reply}}}), flush=True)")
    status = main(["schema", "--command", command])
    error = capsys.readouterr().err
    assert status == 2 and error.startswith(f"python -m conformance schema: error: the driver {command!r} replied ")
    assert error.endswith(' to a schema; its reply is {"accepted": true}, or {"accepted": false, "problems": [...]} '
                          "(conformance/README.md, Checking a schema loader)\n") and error.count("\n") == 1


def test_a_cause_leaves_out_what_varies_from_case_to_case(tmp_path, capsys):
    """Paths written as text fail in many cases, under every error's cases, at every depth, first
    found directly or as the nearest of no matching element: one cause, which names the path rule."""
    def paths_as_text(request, message):
        for fields in message[1].values():
            for found in fields.get("cases", []) if type(fields) is dict else []:
                found["path"] = [str(key) for key in found["path"]]
        return message
    with serving(Mutated(testbed.service(), paths_as_text)) as server:
        status, lines = run(capsys, "run", "--target", server.url, "--id", "testbed/**", "--id", "headers/**")
    header = next(line for line in lines if line.endswith("one cause:"))
    assert status == 1 and int(header.split()[0]) > 50
    group = lines[lines.index(header) + 1:-1]
    assert group[0].split()[1:] == ["SHOULD", "[1].*.cases[*].path[*]:", "another", "value"]
    assert group[1].strip().startswith("breaks conv.path-format: ")


def test_generate_refuses_to_write_into_an_installed_copy(monkeypatch, tmp_path, capsys):
    """In a clone it rewrites conformance/; installed (no pyproject.toml beside it), it says why not."""
    monkeypatch.setattr(cases, "HERE", tmp_path / "site-packages" / "conformance")
    assert main(["generate"]) == 2
    assert capsys.readouterr().err == (f"python -m conformance generate: error: generate rewrites the suite's own "
                                       f"files, in a clone of its repository; this copy is installed at "
                                       f"{tmp_path / 'site-packages' / 'conformance'}\n")


@pytest.mark.parametrize("shape", DRIPS)
def test_each_exchange_ends_within_its_timeout_however_the_server_drips(shape, capsys):
    """A server that never finishes an answer (a byte at a time, or 100 Continue without end) costs
    each case its timeout, and the run says so; it does not hold the runner for as long as it goes on."""
    started = time.monotonic()
    status = main(["run", "--target", dripping(shape), "--timeout", "1", "--wait", "0"])
    assert status == 2 and time.monotonic() - started < 5  # the 1 s timeout, with room on a busy machine, not 8 s
    assert capsys.readouterr().err.endswith("no answer within 1 s (see --timeout)\n")


def test_a_failure_s_reproduction_runs_in_a_shell_and_shows_binary_answers_as_json(tmp_path, capsys):
    """The commands a failure gives, run as they are (curl, base64, and python3 with msgpack, as in an
    activated environment), send the case's requests again and show a MessagePack answer as JSON."""
    with serving(Mutated(testbed.service(), dropping("@id_"))) as server:
        status, _ = run(capsys, "run", "--target", server.url, "--id", "binary/negotiate/id-kept",
                        "--json", str(tmp_path / "r.json"))
        [case] = json.loads((tmp_path / "r.json").read_text())["cases"]
        assert status == 1 and sys.executable not in "".join(case["reproduce"])
        shown = subprocess.run(["bash", "-c", "\n".join(case["reproduce"])], capture_output=True, text=True, cwd=tmp_path,
                               env={**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"})
    assert shown.returncode == 0, shown.stderr
    answer = json.loads(shown.stdout.splitlines()[-1])
    assert len(answer) == 2 and "@bin_" in answer[0] and "@id_" not in answer[0] and "b'" not in shown.stdout


@pytest.mark.parametrize("data, shown", [
    (b'{"a": 1}', '"{\\"a\\": 1}"'),
    (b"\x92\x80\xc4\x01\xff", '{"$bin": "koDEAf8="}'),  # MessagePack, in the cases' notation of bytes
    (b"x" * 201, '"' + "x" * 200 + '" ...'),
])
def test_answers_are_shown_in_the_suite_s_own_notation_never_as_python_bytes(data, shown):
    assert match.excerpt(data) == shown

"""python -m conformance fuzz: calls made from a server's own schema find its bugs, and only its bugs."""

import json
import random
import re
import threading
import time
from pathlib import Path

import pytest

from conftest import Mutated, serving
from conformance import fuzz, language, values
from conformance.__main__ import main
from reference import Service, calculator, load, mocking, testbed
from reference import protocol
from reference.protocol import validate

FAULTY = [
    {"info.Faulty": {}},
    {"fn.ok": {"x": "integer", "tags!": ["string"], "note!": "string?"}, "->": [{"Ok_": {"x": "integer"}}]},
    {"fn.typo": {"x": "integer", "note!": "string", "point!": "struct.Point"}, "->": [{"Ok_": {"n": "integer"}}]},
    {"fn.crash": {"x": "integer", "note!": "string"}, "->": [{"Ok_": {}}]},
    {"fn.tag": {"flag": "boolean", "items!": ["integer"]}, "->": [{"Ok_": {}}, {"ErrorDeclared": {}}]},
    {"struct.Point": {"x": "number", "y": "number", "label!": "string"}},
]
HANDLERS = {
    "fn.ok": lambda arguments, headers: {"Ok_": {"x": arguments["x"]}},
    "fn.typo": lambda arguments, headers: {"Ok_": {"n": str(arguments["x"]) if arguments["x"] < 0 else arguments["x"]}},
    "fn.crash": lambda arguments, headers: 1 / (arguments["x"] <= 500) and {"Ok_": {}},
    "fn.tag": lambda arguments, headers: {"ErrorUndeclared": {}} if arguments["flag"] else {"Ok_": {}},
}


def fuzzing(capsys, url, *args):
    """Run `python -m conformance fuzz` in-process; return (exit status, output lines, seconds)."""
    started = time.monotonic()
    status = main(["fuzz", "--target", url, "--seed", "7", *args])
    return status, capsys.readouterr().out.splitlines(), time.monotonic() - started


def failures(lines):
    """{(function, check): the call of its reproduction} of a run's output."""
    found = {}
    for number, line in enumerate(lines):
        if line.startswith("FAIL fuzz/"):
            _, function, check = line.split()[1].split("/")
            curl = next(later for later in lines[number:] if later.strip().startswith("curl "))
            found[(function, check)] = json.loads(re.search(r"--data-binary '(.*)'$", curl)[1])
    return found


def test_a_faulty_service_fails_on_each_of_its_bugs_and_only_those(capsys):
    """Wrong types for some inputs, raising for some, an undeclared tag: each function named, with its
    check and a shrunk call; the correct function is not blamed."""
    with serving(Service(load(FAULTY), HANDLERS)) as server:
        status, lines, seconds = fuzzing(capsys, server.url)
    found = failures(lines)
    assert status == 1 and seconds < 60
    assert set(found) == {("fn.typo", "handler"), ("fn.crash", "handler"), ("fn.tag", "handler")}, found
    assert "  fn.ok: passed" in lines
    typo, crash, tag = found[("fn.typo", "handler")], found[("fn.crash", "handler")], found[("fn.tag", "handler")]
    assert list(typo[1]["fn.typo"]) == ["x"] and typo[1]["fn.typo"]["x"] < 0  # shrunk: the optional fields gone
    assert list(crash[1]["fn.crash"]) == ["x"] and crash[1]["fn.crash"]["x"] > 500
    assert tag[1] == {"fn.tag": {"flag": True}}
    assert re.fullmatch(r"Fuzzed 4 functions with \d+ requests in [\d.]+ s \(seed 7\): 3 failures, in \d+ calls\.",
                        lines[-1])


def lax_strings(value, type_, path, function):  # a number is text too
    return () if type(value) in (str, int) else validate.check_string(value, type_, path, function)


def strict_strings(value, type_, path, function):  # empty text is refused
    return validate.check_string(value or 0, type_, path, function)


@pytest.mark.parametrize("check, wrong, failing", [
    (lax_strings, "a validator too lax on string", ("fn.ok", "rejected")),
    (strict_strings, "a validator too strict on string", ("fn.ok", "accepted")),
])
def test_a_validator_too_lax_or_too_strict_on_a_type_is_found(check, wrong, failing, monkeypatch, capsys):
    monkeypatch.setitem(validate.CHECKS, "string", check)
    with serving(protocol.Service(load(FAULTY), HANDLERS)) as server:  # (the core's checks: patched)
        status, lines, seconds = fuzzing(capsys, server.url, "--function", "fn.ok")
    assert status == 1 and set(failures(lines)) == {failing}, wrong


def answers_with_text_for_x(request, message):
    """A server that does not check results: fn.ok's x goes back as text."""
    if request and "fn.ok" in request[1] and "Ok_" in message[1]:
        message[1]["Ok_"]["x"] = str(message[1]["Ok_"]["x"])
    return message


def test_a_result_outside_the_schema_that_a_server_lets_through_fails_the_result_check(capsys, tmp_path):
    with serving(Mutated(Service(load(FAULTY), HANDLERS), answers_with_text_for_x)) as server:
        status, lines, _ = fuzzing(capsys, server.url, "--function", "fn.ok", "--fixtures", str(tmp_path / "f.json"),
                                   "--json", str(tmp_path / "r.json"))
        assert status == 1 and set(failures(lines)) == {("fn.ok", "result")}
        assert any(line.endswith("result: Ok_.x: TypeUnexpected") for line in lines)
        (tmp_path / "cases").mkdir()
        (tmp_path / "f.json").rename(tmp_path / "cases" / "fuzz.json")
        assert main(["run", "--target", server.url, "--cases", str(tmp_path / "cases")]) == 1  # it fails again
    report = json.loads((tmp_path / "r.json").read_text())
    assert {c["id"]: c["status"] for c in report["cases"]}["fuzz/fn.ok/result"] == "fail"


TESTBED = Path(__file__).parent.parent / "conformance" / "testbed.json"


@pytest.mark.parametrize("service, deterministic", [
    (calculator.service, False), (testbed.service, True), (lambda: mocking.service(calculator.entries()), False),
    (lambda: mocking.service(TESTBED), False),
], ids=["calculator", "testbed", "mock-of-the-calculator", "mock-of-the-testbed"])
def test_the_reference_passes_every_check(service, deterministic, capsys):
    """(The calculator's fn.add once answered 2**63 - 1 + 1 with ErrorInvalidResponseBody_, and the
    testbed's fn.greet echoed its arguments, no result of it: the first runs found both.)"""
    with serving(service()) as server:
        status, lines, _ = fuzzing(capsys, server.url, "--max-examples", "30", *["--deterministic"] * deterministic)
    assert status == 0, "\n".join(lines[-30:])
    checks = lines[-2].removeprefix("By check: ").split(", ")
    assert checks == [f"{check} passed" for check in fuzz.CHECKS if deterministic or check != "binary"]


def test_values_made_are_valid_and_each_wrong_one_has_exactly_its_problem():
    """The generator and the checker of language.py mirror each other, on every type of the testbed."""
    schema, rng = language.Schema(json.loads(TESTBED.read_text())), random.Random(3)
    function = schema.functions["fn.echo"]
    for _ in range(200):
        arguments = values.Maker(schema, rng).fields(function.arguments, 0)
        assert not list(schema.object_problems(arguments, function.arguments, ("fn.echo",))), arguments
        for wrong, path, reason in values.object_wrongs(schema, arguments, function.arguments, ("fn.echo",)):
            assert (path, reason) in list(schema.object_problems(wrong, function.arguments, ("fn.echo",)))
        for simpler in values.smaller_fields(schema, arguments, function.arguments):
            assert not list(schema.object_problems(simpler, function.arguments, ("fn.echo",))), simpler


class Stopping:
    """A service whose server stops after `answers` requests."""

    def __init__(self, service, answers):
        self.service, self.schema, self.left, self.server = service, service.schema, answers, None

    def handle(self, data, client=""):
        self.left -= 1
        if self.left == 0:
            threading.Thread(target=lambda: (self.server.shutdown(), self.server.server_close())).start()
        return self.service.handle(data, client)


def test_a_target_that_stops_answering_ends_the_run_with_one_line(capsys):
    stopping = Stopping(Service(load(FAULTY), HANDLERS), 60)
    with serving(stopping) as stopping.server:
        status = main(["fuzz", "--target", stopping.server.url, "--seed", "1"])
    error = capsys.readouterr().err
    assert status == 2 and error.startswith("python -m conformance fuzz: error: http://127.0.0.1:")
    assert " stopped answering: " in error and error.count("\n") == 1


def test_a_rate_and_a_time_limit_are_kept(capsys):
    with serving(Service(load(FAULTY), HANDLERS)) as server:
        status, lines, seconds = fuzzing(capsys, server.url, "--function", "fn.ok", "--rate", "20")
        requests = int(re.search(r"with (\d+) requests", lines[-1])[1])
        assert status == 0 and requests / seconds <= 21
        status, lines, seconds = fuzzing(capsys, server.url, "--rate", "20", "--time-limit", "1")
    assert seconds < 5 and int(re.search(r"with (\d+) requests", lines[-1])[1]) <= 30


def test_verbose_shows_every_call_and_its_result_tag(capsys):
    """-v: a line for each request sent, as many as the summary counts."""
    with serving(calculator.service()) as server:
        status, lines, _ = fuzzing(capsys, server.url, "--function", "fn.add", "--max-examples", "5", "-v")
    calls = [line for line in lines if re.fullmatch(r"    (JSON|MessagePack) +\[.*\] -> \w+", line)]
    assert status == 0 and len(calls) == int(re.search(r"with (\d+) requests", lines[-1])[1])
    assert {line.rsplit(" -> ", 1)[1] for line in calls if '"fn.add"' in line} == {"Ok_", "ErrorInvalidRequestBody_"}


@pytest.mark.parametrize("args, message", [
    (["--function", "fn.nope"], "the target has no fn.nope; it has "),
    (["-H", "auth:=1"], "a header is -H NAME:=JSON, its name starting with @"),
    (["-H", "@auth_:={"], "argument -H/--header: '@auth_:={': the value is not JSON"),
    (["--rate", "0"], "argument --rate: '0' is not a number of requests a second above 0"),
])
def test_misuse_is_one_line_and_exit_2(args, message, capsys):
    with serving(Service(load(FAULTY), HANDLERS)) as server:
        try:
            status = main(["fuzz", "--target", server.url, *args])
        except SystemExit as exit_:
            status = exit_.code
    error = capsys.readouterr().err
    assert status == 2 and message in error and error.count("\n") == 1, error

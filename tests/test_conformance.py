"""The conformance suite: it passes where it should, and fails, with a diff, where it should."""

import json
import re
import xml.etree.ElementTree as ElementTree

import msgpack
import pytest

from conftest import serving
from conformance import cases, match
from conformance.__main__ import main
from reference import Service, calculator, mock
from reference.schema import bundled
from reference.service import Reply


def run(capsys, *args):
    """Run `python -m conformance ARGS` in-process; return (exit status, output lines)."""
    status = main(list(args))
    return status, capsys.readouterr().out.splitlines()


@pytest.fixture(scope="module")
def mock_url():
    with serving(mock.service(bundled("calculator"))) as server:
        yield server.url


def test_the_reference_server_passes_every_case_that_applies(calculator_url, capsys):
    status, lines = run(capsys, "run", "--target", calculator_url)
    assert status == 0, "\n".join(lines)
    passed, failed, skipped = map(int, re.fullmatch(r"(\d+) passed, (\d+) failed, (\d+) skipped", lines[-1]).groups())
    assert (failed, passed + skipped) == (0, len(cases.load())) and passed > 220
    assert lines[0].startswith("Running ") and "(features: auth, binary, calculator, core, http)" in lines[0]


def test_the_reference_mock_passes_every_case_that_applies(mock_url, capsys):
    status, lines = run(capsys, "run", "--target", mock_url)
    assert status == 0, "\n".join(lines)
    assert "features: binary, core, http, mock" in lines[0]
    assert re.fullmatch(r"\d{3} passed, 0 failed, \d+ skipped", lines[-1])


def test_the_suite_is_sound_and_covers_every_requirement(capsys):
    assert run(capsys, "check") == (0, [f"The suite is sound: {len(cases.load())} cases."])
    status, lines = run(capsys, "coverage")
    assert status == 0 and lines[-1] == "105 of 105 requirements have cases"


class Mutated:
    """A calculator (or mock) whose answers one function changes: one wrong behaviour."""

    def __init__(self, service, change):
        self.service, self.change = service, change

    def handle(self, data):
        reply = self.service.handle(data)
        binary = reply.data[:1] == b"\x92"
        message = msgpack.unpackb(reply.data, strict_map_key=False) if binary else json.loads(reply.data)
        request = json.loads(data) if data[:1] == b"[" else None
        message = self.change(request, message)
        encoded = msgpack.packb(message) if binary else json.dumps(message).encode()
        return Reply(encoded, reply.media_type, reply.function, reply.result)


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


@pytest.mark.parametrize("change, target, failing, diff", [
    (drop_result, "calculator", ["calculator/add/integers", "calculator/add/fractions"], "[1].Ok_.result: missing"),
    (wrong_error_tag, "calculator", ["calculator/evaluate/divide-by-zero"],
     "[1].ErrorCannotDivideByZero: missing"),
    (reversed_cases, "calculator", ["validation/order/missing-first", "headers/prefix/required"],
     "[1].ErrorInvalidRequestBody_.cases[0].reason.RequiredObjectKeyMissing: missing"),
    (lost_id, "calculator", ["headers/id/string", "headers/id/structure", "binary/negotiate/id-kept"],
     "[0].@id_: missing"),
    (wrong_checksum, "calculator", ["binary/encoding/calculator-ids", "binary/negotiate/steady"],
     "[0].@bin_[0]: expected 900069279, got 900069280"),
    (ignored_stubs, "mock", ["mock/stub/returned", "mock/stub/partial-match"],
     "[1].Ok_.result: expected 100, got 0.5"),
])
def test_a_server_with_one_wrong_behaviour_fails_with_a_diff(change, target, failing, diff, capsys):
    service = calculator.service() if target == "calculator" else mock.service(bundled("calculator"))
    with serving(Mutated(service, change)) as server:
        status, lines = run(capsys, "run", "--target", server.url)
    failed = [line.split()[1] for line in lines if line.startswith("FAIL ")]
    assert status == 1 and set(failing) <= set(failed), "\n".join(lines)
    assert any(diff in line for line in lines), "\n".join(lines)
    assert any(line.strip().startswith("curl -s -X POST ") for line in lines)
    assert re.fullmatch(rf"\d+ passed, {len(failed)} failed, \d+ skipped", lines[-1])


def test_reports_and_known_failures(calculator_url, tmp_path, capsys):
    """--junit and --json write reports; a listed case that passes is stale and fails the run."""
    known = tmp_path / "known.txt"
    known.write_text("# a comment\ncalculator/add/*  # these pass, so they are stale\n")
    junit, report = tmp_path / "junit.xml", tmp_path / "report.json"
    status, lines = run(capsys, "run", "--target", calculator_url, "--id", "calculator/add/*", "--id", "mock/**",
                        "--known-failures", str(known), "--junit", str(junit), "--json", str(report))
    mocks = len(cases.select(cases.load(), ["mock/**"]))  # a calculator server skips the mock's cases
    assert status == 1 and lines[-1] == f"0 passed, 0 failed, {mocks} skipped, 0 known failures, 3 stale"
    assert "  It passes, but the known-failures file lists it: remove it from there." in lines
    suite = ElementTree.parse(junit).getroot()
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == (str(mocks + 3), "3", str(mocks))
    data = json.loads(report.read_text())
    assert data["summary"] == {"pass": 0, "fail": 0, "skip": mocks, "known-failure": 0, "stale": 3}
    assert {c["status"] for c in data["cases"] if c["id"].startswith("calculator/")} == {"stale"}


def test_a_known_failure_that_fails_does_not_fail_the_run(tmp_path, capsys):
    known = tmp_path / "known.txt"
    known.write_text("calculator/add/*\n")
    with serving(Mutated(calculator.service(), drop_result)) as server:
        status, lines = run(capsys, "run", "--target", server.url, "--id", "calculator/add/*",
                            "--known-failures", str(known))
    assert status == 0 and lines[-1] == "0 passed, 0 failed, 0 skipped, 3 known failures, 0 stale"


@pytest.mark.parametrize("args, status, message", [
    (["run"], 2, "the following arguments are required: --target"),
    (["run", "--target", "ftp://x/api"], 2, "the target must be an http:// URL"),
    (["run", "--target", "http://127.0.0.1:9/api", "--features", "core,nope"], 2, "unknown features nope"),
    (["run", "--target", "http://127.0.0.1:9/api", "--workers", "0"], 2, "'0' is not a positive integer"),
    (["nope"], 2, "invalid choice: 'nope'"),
])
def test_bad_command_lines_exit_2_with_usage(args, status, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(args)
    error = capsys.readouterr().err
    assert exit_.value.code == status and error.startswith("usage: python -m conformance") and message in error


def test_an_unreachable_target_exits_2(capsys):
    status = main(["run", "--target", "http://127.0.0.1:9/api", "--wait", "0.3"])
    assert status == 2 and capsys.readouterr().err == "error: cannot reach http://127.0.0.1:9/api: Connection refused\n"


def test_a_target_that_is_not_the_calculator_exits_2(capsys):
    from reference import load
    schema = load([{"fn.other": {}, "->": [{"Ok_": {}}]}])
    with serving(Service(schema, {"fn.other": lambda a, h: {"Ok_": {}}})) as server:
        assert main(["run", "--target", server.url]) == 2
    assert "does not serve the calculator's schema" in capsys.readouterr().err


def test_list_selects_by_id_feature_and_level(capsys):
    status, lines = run(capsys, "list", "--id", "binary/negotiate/*", "--level", "MUST")
    assert status == 0 and lines and all(line.startswith("binary/negotiate/") and " MUST " in line for line in lines)
    status, lines = run(capsys, "list", "--features", "core")
    assert all(" core " in line for line in lines) and not any(line.startswith("mock/") for line in lines)


def test_check_finds_problems_in_a_broken_suite(tmp_path, capsys):
    """The linter is real: duplicated ids, unknown requirements, bad shapes and misfits are found."""
    for path in cases.CASES.glob("*.json"):
        (tmp_path / path.name).write_text(path.read_text())
    envelope = json.loads((tmp_path / "envelope.json").read_text())
    envelope["cases"].append(dict(envelope["cases"][0]))
    envelope["cases"].append({**envelope["cases"][1], "id": "envelope/new/one", "requirements": ["no.such.rule"]})
    envelope["cases"].append({**envelope["cases"][1], "id": "envelope/new/two", "steps": [{"request": {"message": [
        {}, {"fn.add": {"x": "1", "y": 2}}]}, "response": {"message": [{}, {"Ok_": {"result": "three"}}]}}]})
    (tmp_path / "envelope.json").write_text(json.dumps(envelope))
    problems = cases.check(tmp_path)
    assert "envelope.json: envelope/parse/not-json: the id is also used in envelope.json" in problems
    assert "envelope.json: envelope/new/one: unknown requirement no.such.rule" in problems
    assert "envelope.json: envelope/new/two: step 1: the expected Ok_ does not fit its fields {'result': 'number'}" in problems
    assert "envelope.json: envelope/new/two: step 1: the request does not fit fn.add, yet a Ok_ is expected" in problems
    (tmp_path / "http.json").write_text(json.dumps({"description": "x", "cases": [{"id": "Bad Id", "steps": []}]}))
    problems = cases.check(tmp_path)
    assert "http.json: $.cases[0].id: 'Bad Id' does not match [a-z0-9-]+(/[a-z0-9-]+)+" in problems
    assert "http.json: $.cases[0]: level is missing" in problems


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
    ({"$type": "integer"}, 3.0, True),
    ({"$type": "integer"}, 3.5, False),
    ({"$type": "string"}, None, False),
    ({"$type": "bytes"}, {"$bin": "AQ=="}, True),
    ({"$not": 1}, 2, True),
    ({"$not": 1}, 1, False),
    ({"$literal": {"$type": "string"}}, {"$type": "string"}, True),
    ({"$literal": {"$type": "string"}}, "text", False),
    ({"$authenticated": False, "fn.x": {}}, {"$authenticated": False, "fn.x": {}}, True),
])
def test_matching_language(expected, actual, ok):
    assert (matches(expected, actual) == []) == ok


def test_captures_carry_values_between_steps():
    captured = {}
    assert matches({"token": {"$type": "string", "$capture": "t"}}, {"token": "abc"}, captured) == []
    assert captured == {"t": "abc"}
    assert match.substitute({"@auth_": {"Session": {"token": {"$var": "t"}}}, "u": "$user-2"}, captured, "me") == {
        "@auth_": {"Session": {"token": "abc"}}, "u": "me-2"}
    assert matches({"$var": "t"}, "abd", captured) == ['expected "abc", got "abd"']


def test_messagepack_notation_round_trips():
    value = {"#10": {"#42": 1.5, "name": {"$bin": "AQI="}}, "x": [{"$ext": [17, ""]}]}
    packed = match.to_msgpack(value)
    assert packed == {10: {42: 1.5, "name": b"\x01\x02"}, "x": [msgpack.ExtType(17, b"")]}
    assert match.from_msgpack(packed) == value
    assert match.from_msgpack(packed, {10: "fn.add"}) == {"fn.add": {"#42": 1.5, "name": {"$bin": "AQI="}},
                                                         "x": [{"$ext": [17, ""]}]}


def test_service_wide_unavailability_is_retried_then_reported(capsys):
    """ErrorUnavailable may come from any function: the runner retries a few times, then says so."""
    with serving(calculator.service(unavailable_rate=0.1)) as server:
        status, lines = run(capsys, "run", "--target", server.url, "--id", "calculator/**")
    assert status == 0, "\n".join(lines)
    with serving(calculator.service(unavailable_rate=1.0)) as server:
        status, lines = run(capsys, "run", "--target", server.url, "--id", "calculator/add/integers")
    assert status == 1 and "  step 1 of 1: the target answered ErrorUnavailable 5 times in a row" in lines

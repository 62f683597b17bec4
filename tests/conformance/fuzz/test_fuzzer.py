"""python -m conformance fuzz (fuzz/fuzzer.py): calls made from a server's own schema find its bugs, and
only its bugs."""

import contextlib
import http.server
import io
import json
import multiprocessing
import re
import threading
import time

import pytest

from conformance.__main__ import main
from conformance.fuzz import verdicts as findings
from conformance.runs.settings import Settings
from reference import Service, load, mocking, protocol
from reference.protocol import validate
from reference.services import calculator, testbed
from tests.support import ROOT
from tests.support.faulty import COUNTER, FAULTY, HANDLERS, counter_handlers, failures, fuzzing, issued_only
from tests.support.servers import Mutated, serving


def test_a_faulty_service_fails_on_each_of_its_bugs_and_only_those(capsys):
    """Wrong types for some inputs, raising for some, an undeclared tag: each function named, with its
    check and a shrunk call; the correct function is not blamed."""
    with serving(Service(load(FAULTY), HANDLERS)) as server:
        status, lines, seconds = fuzzing(capsys, server.url)
    found = failures(lines)
    assert status == 1 and seconds < 60
    assert set(found) == {("fn.typo", "handler"), ("fn.crash", "handler"), ("fn.tag", "handler")}, found
    assert any(line.startswith("  fn.ok: passed (message, accepted, rejected, result") for line in lines)
    typo, crash, tag = found[("fn.typo", "handler")], found[("fn.crash", "handler")], found[("fn.tag", "handler")]
    assert list(typo[1]["fn.typo"]) == ["x"] and typo[1]["fn.typo"]["x"] < 0  # shrunk: the optional fields gone
    assert list(crash[1]["fn.crash"]) == ["x"] and crash[1]["fn.crash"]["x"] > 500
    assert tag[1] == {"fn.tag": {"flag": True}}
    assert re.fullmatch(r"Fuzzed 4 functions with \d+ requests in [\d.]+ s \([\d,]+ a second; seed 7\), checks: \d+ passed, "
                        r"3 failed \(3 SHOULD\); 10 not run\.", lines[-1]), lines[-1]
    # (fn.crash and fn.tag: an Ok_ without fields to select)


@pytest.mark.parametrize("start_methods", [["fork", "spawn"], ["spawn"]], ids=["processes", "threads"])
def test_workers_share_out_the_functions_and_find_what_one_finds(start_methods, monkeypatch, capsys):
    """--workers 2: the functions are fuzzed two at a time, each worker on its own connection (in a process
    of its own where one can be forked, else in a thread), after the function that gives credentials; the
    verdicts are those of one worker, the calculator's protected functions fuzzed past
    ErrorUnauthenticated_ by every worker."""
    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: start_methods)
    with serving(Service(load(FAULTY), HANDLERS)) as server:
        _, alone, _ = fuzzing(capsys, server.url)
        status, shared, _ = fuzzing(capsys, server.url, "--workers", "2")
    assert status == 1 and failures(shared).keys() == failures(alone).keys()
    assert [line for line in shared if line.startswith("  fn.")] == [line for line in alone if line.startswith("  fn.")]
    assert re.search(r", checks: \d+ passed, 3 failed \(3 SHOULD\); 10 not run\.$",
                     shared[-1]), shared[-1]
    with serving(calculator.service()) as server:
        status, lines, _ = fuzzing(capsys, server.url, "--workers", "2", "--max-examples", "20")
    assert status == 0 and not any("ErrorUnauthenticated_" in line for line in lines), "\n".join(lines)


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


def without_selection(request):
    return [{name: value for name, value in request[0].items() if name != "@select_"}, request[1]]


def test_a_rejected_call_and_a_selection_are_shrunk_too(monkeypatch, capsys):
    """A call a lax validator let through was shown as made, optional fields and all, and a selection a
    server ignored with every struct and union entry it was made with: each is now as small as fails."""
    monkeypatch.setitem(validate.CHECKS, "string", lax_strings)
    with serving(protocol.Service(load(FAULTY), HANDLERS)) as server:
        _, lines, _ = fuzzing(capsys, server.url, "--function", "fn.typo")
    assert failures(lines)[("fn.typo", "rejected")] == [{}, {"fn.typo": {"x": 0, "note!": 7}}]
    with serving(Mutated(calculator.service(), request=without_selection)) as server:
        _, lines, _ = fuzzing(capsys, server.url, "--function", "fn.getPaperTape", "-H",
                              '@auth_:={"Ephemeral": {"username": "shrunk"}}')
    assert failures(lines)[("fn.getPaperTape", "select")][0]["@select_"] == {"->": {"Ok_": []}}, "\n".join(lines)


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




TESTBED = ROOT / "conformance" / "testbed.json"
DEFAULT = findings.chosen(Settings())  # the checks a run judges unless told (time needs a budget)


@pytest.mark.parametrize("service, deterministic, unjudged", [
    (calculator.service, False, ()), (testbed.service, True, ("owner",)),
    (lambda: mocking.service(calculator.entries()), False, ("auth", "owner")),
    (lambda: mocking.service(TESTBED), False, ("auth", "owner")),
], ids=["calculator", "testbed", "mock-of-the-calculator", "mock-of-the-testbed"])
def test_the_reference_passes_every_check(service, deterministic, unjudged, capsys):
    """(The calculator's fn.add once answered 2**63 - 1 + 1 with ErrorInvalidResponseBody_, and the
    testbed's fn.greet echoed its arguments, no result of it: the first runs found both.) Whose data a
    function returns needs two users (the testbed has no login), and a mock judges neither credentials
    nor whose data it answers with."""
    with serving(service()) as server:
        status, lines, _ = fuzzing(capsys, server.url, "--max-examples", "30", *["--deterministic"] * deterministic)
    assert status == 0, "\n".join(lines[-30:])
    [by_check] = [line for line in lines if line.startswith("By check: ")]
    checks = re.sub(r" \(\d+\)", "", by_check.removeprefix("By check: ")).split(", ")
    assert checks == [f"{check} {'not run' if check in unjudged else 'passed'}" for check in DEFAULT], by_check
    if "fn.secret" in "\n".join(lines):  # (the testbed's protected function, called without credentials)
        assert "Every call of fn.secret was answered ErrorUnauthenticated_: none reached its handler, so what it " \
               "does was not checked (give -H '@auth_:=...')." in lines


class Stopping:
    """A service whose server stops after `answers` requests."""

    def __init__(self, service, answers):
        self.service, self.schema, self.left, self.server = service, service.schema, answers, None

    def handle(self, data, client=""):
        self.left -= 1
        if self.left == 0:
            threading.Thread(target=self.server.stop, args=(1,)).start()  # (kept-alive connections hung up too)
        return self.service.handle(data, client)


@pytest.mark.parametrize("workers", ["1", "2"])  # (with 2, the worker processes meet the end)
def test_a_target_that_stops_answering_ends_the_run_with_one_line(workers, capsys):
    stopping = Stopping(Service(load(FAULTY), HANDLERS), 60 if workers == "1" else 200)
    with serving(stopping) as stopping.server:
        status = main(["fuzz", "--target", stopping.server.url, "--seed", "1", "--workers", workers])
    error = capsys.readouterr().err
    assert status == 2 and error.startswith("python -m conformance fuzz: error: http://127.0.0.1:")
    assert " stopped answering: " in error and error.count("\n") == 1


def test_a_rate_and_a_time_limit_are_kept(capsys):
    with serving(Service(load(FAULTY), HANDLERS)) as server:
        status, lines, seconds = fuzzing(capsys, server.url, "--function", "fn.ok", "--rate", "20")
        requests = int(re.search(r"with (\d+) requests", lines[-1])[1])
        assert status == 0 and requests / seconds <= 21
        status, lines, seconds = fuzzing(capsys, server.url, "--rate", "40", "--workers", "2", "--max-examples", "10")
        requests = int(re.search(r"with (\d+) requests", lines[-1])[1])  # (each worker process keeps to half)
        assert status == 1 and requests > 100 and requests / seconds <= 42
        status, lines, seconds = fuzzing(capsys, server.url, "--rate", "20", "--time-limit", "1")
    assert seconds < 5 and int(re.search(r"with (\d+) requests", lines[-1])[1]) <= 30


def test_a_function_skipped_is_never_called(capsys):
    with serving(Service(load(FAULTY), HANDLERS)) as server:
        status, lines, _ = fuzzing(capsys, server.url, "--skip", "fn.crash", "--skip", "fn.tag", "-v")
    assert any(line.startswith("Fuzzing http://127.0.0.1:") and ", 2 functions, " in line for line in lines)
    assert not any('"fn.crash"' in line or '"fn.tag"' in line for line in lines)


def test_verbose_shows_every_call_and_its_result_tag(capsys):
    """-v: a line for each request sent, as many as the summary counts, one cut short ending in "…"."""
    with serving(calculator.service()) as server:
        status, lines, _ = fuzzing(capsys, server.url, "--function", "fn.add", "--max-examples", "5", "-v")
    calls = [line for line in lines if re.fullmatch(r"    (JSON|MessagePack) +\[.*(\]|…) -> \w+", line)]
    assert any(len(line.split(" -> ")[0]) > 150 and line.split(" -> ")[0].endswith("…") for line in calls)
    assert status == 0 and len(calls) == int(re.search(r"with (\d+) requests", lines[-1])[1])
    assert {line.rsplit(" -> ", 1)[1] for line in calls if '"fn.add"' in line} == {"Ok_", "ErrorInvalidRequestBody_"}


@pytest.mark.parametrize("args, message", [
    (["--function", "fn.nope"], "the target has no fn.nope; it has "),
    (["-H", "auth:=1"], "a header is -H NAME=TEXT or -H NAME:=JSON, its name starting with @"),
    (["-H", "@auth_"], "a header is -H NAME=TEXT or -H NAME:=JSON, its name starting with @"),
    (["-H", "@auth_:={"], "argument -H/--header: '@auth_:={': the value is not JSON"),
    (["--rate", "0"], "argument --rate: '0' is not a number of requests a second above 0"),
    (["--skip", "fn.nope"], "the target has no fn.nope; it has "),
])
def test_misuse_is_one_line_and_exit_2(args, message, capsys):
    with serving(Service(load(FAULTY), HANDLERS)) as server:
        try:
            status = main(["fuzz", "--target", server.url, *args])
        except SystemExit as exit_:
            status = exit_.code
    error = capsys.readouterr().err
    assert status == 2 and message in error and error.count("\n") == 1, error


def test_a_run_that_checks_nothing_says_so_and_does_not_exit_0(capsys):
    """--time-limit 0: no function is called, so no check has a verdict: each is `not run`, none `passed`."""
    with serving(calculator.service()) as server:
        status, lines, _ = fuzzing(capsys, server.url, "--time-limit", "0", "--json", "/dev/null")
    assert status == 5 and not any("passed (" in line for line in lines if line.startswith("  fn."))
    assert "  fn.add: not run (the time limit ended the run before its calls)" in lines
    assert "  in sequences of them all: not run (the time limit ended the run before its calls)" in lines
    assert lines[-2].endswith(f", checks: 0 passed, 0 failed; {13 * len(DEFAULT)} not run (the time limit ended "
                              f"the run before its calls).")
    assert lines[-1] == "Nothing was checked: no verdict rests on any answer."


CHAINED = [{"info.Chain": {}}, {"fn.deep": {"head": "struct.S0"}, "->": [{"Ok_": {}}]}, {"fn.flat": {"x": "integer"},
           "->": [{"Ok_": {}}]}] + [{f"struct.S{i}": {"a": f"struct.S{i + 1}", "b": f"struct.S{i + 1}"}}
                                    for i in range(30)] + [{"struct.S30": {"end": "boolean"}}]


def test_a_function_whose_smallest_call_is_too_large_is_not_run_and_the_others_are(capsys):
    """31 structs, each requiring two of the next: the smallest valid call holds 2**31 values (it took the
    fuzzer to 1.95 GiB in 30 s); now it is not run, quickly, and said why."""
    with serving(Service(load(CHAINED), {"fn.deep": lambda a, h: {"Ok_": {}}, "fn.flat": lambda a, h: {"Ok_": {}}})) as server:
        status, lines, seconds = fuzzing(capsys, server.url)
    assert status == 0 and seconds < 20, lines
    assert "  fn.deep: not run (no call of it can be made: a valid struct.S" in "\n".join(lines)
    assert any(line.startswith("  fn.flat: passed (message, accepted, rejected, result") for line in lines)


def answering_schema(entries):
    """A web server that answers every call, fn.api_ included, with Ok_ holding `entries` as the schema."""
    from tests.support.variants import Plain
    return type("Hostile", (Plain,), {"answer": (200, json.dumps([{}, {"Ok_": {"api": entries}}]).encode())})


@pytest.mark.parametrize("entries, told", [
    ([5], "entry 1 of the schema is not one the suite reads (an entry is a JSON object)"),
    ([{"fn.x": {}}], "entry 1 of the schema is not one the suite reads (fn.x has no ->)"),
    ([{"fn.x": {"a": 5}, "->": [{"Ok_": {}}]}], "entry 1 of the schema is not one the suite reads (fields are an "
                                                 "object of type expressions"),
    ([{"struct.A": {}, "union.B": []}], "entry 1 of the schema is not one the suite reads (an entry has one key"),
    ([{"fn.x": {"a": "struct.Nowhere"}, "->": [{"Ok_": {}}]}], "the field a of the schema is of struct.Nowhere, which"),
    ([{"fn.x": {}, "->": [{"ErrorX": {}}]}], "fn.x of the schema has no Ok_ result"),
    ([{"fn.x": {}, "->": [{"Ok_": {}}], "_errors": "(("}], "an _errors of the schema is not a regular expression"),
    ([{"fn.x": {}, "->": [{"Ok_": {}}], "_errors": r"errors\.(a+)+$"}, {"errors." + "a" * 40 + "!": [{"E": {}}]}],
     "an _errors of the schema takes over 5 s to match the errors.* names"),
    ([{"fn.x": {"s": "struct.S"}, "->": [{"Ok_": {}}]}, {"struct.S": {"s": "struct.S"}}], None),
])
def test_a_schema_no_server_could_serve_is_one_line_or_a_function_not_run(entries, told, capsys):
    """What a hostile target answers to fn.api_: a malformed schema is one line and exit 2 (4 shapes in 5
    were tracebacks; a pattern of nested repeats hung); a struct requiring itself leaves its function not run."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), answering_schema(entries))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    started = time.monotonic()
    try:
        status = main(["fuzz", "--target", f"http://127.0.0.1:{server.server_port}/api"])
    finally:
        server.shutdown()
        server.server_close()
    said = capsys.readouterr()
    error, lines = said.err, said.out.splitlines()
    assert time.monotonic() - started < 30  # (no hang; room for a busy machine)
    if told:
        assert status == 2 and told in error and error.count("\n") == 1, error
        assert error.startswith("python -m conformance fuzz: error: http://127.0.0.1:")
    else:
        assert status == 5 and "  fn.x: not run (no call of it can be made: a valid struct.S holds over" in "\n".join(lines)


PLANTED = [
    {"info.Planted": {}},
    {"fn.divide": {"x": "integer"}, "->": [{"Ok_": {"result": "number"}}]},
    {"fn.sometimes": {"x": "integer"}, "->": [{"Ok_": {}}]},
]


CALLS = iter(range(10**9))


PLANTED_HANDLERS = {  # fn.divide: a wrong result below 0, a crash above 500; fn.sometimes: one call in 7 crashes
    "fn.divide": lambda a, h: {"Ok_": {"result": "minus" if a["x"] < 0 else 1 / (a["x"] <= 500)}},
    "fn.sometimes": lambda a, h: {"Ok_": {}} if next(CALLS) % 7 else 1 / 0,
}


def test_each_kind_of_failure_is_its_own_verdict_sent_again_and_flaky_when_it_does_not_repeat(capsys, tmp_path):
    """Two bugs of fn.divide are two failures, not the one shrinking walked to; a crash one time in seven
    is flaky, with its rate; each verdict names its evidence, the reports the seed and the time taken."""
    paths = {kind: tmp_path / f"report.{kind}" for kind in ("json", "junit", "html")}
    with serving(Service(load(PLANTED), PLANTED_HANDLERS)) as server:
        status, lines, _ = fuzzing(capsys, server.url, *[f"--{kind}={path}" for kind, path in paths.items()])
    text = "\n".join(lines)
    assert status == 1
    divide = {line.split()[1] for line in lines if line.startswith("FAIL fuzz/fn.divide/")}
    assert divide == {"fuzz/fn.divide/handler", "fuzz/fn.divide/handler-2"}, text
    assert "handler: the service answered ErrorUnknown_: " in text
    assert "handler: the service answered ErrorInvalidResponseBody_: " in text
    assert re.search(r"FLAKY fuzz/fn\.sometimes/handler .*\n.*\n.*\n  failed in \d+ of \d+ answers judged; sent "
                     r"again, it failed [0-3] of 4 times: flaky, failing [1-4] of the 5 times it was sent, the first included", text), text
    report = json.loads(paths["json"].read_text())
    assert report["seed"] == 7
    verdicts = {case["id"]: case for case in report["cases"]}
    assert verdicts["fuzz/fn.divide/result"]["status"] == "pass"
    assert re.fullmatch(r"\d+ answers judged", verdicts["fuzz/fn.divide/result"]["evidence"])
    assert verdicts["fuzz/fn.divide/result"]["seconds"] > 0
    assert '<property name="seed" value="7"/>' in paths["junit"].read_text()
    assert "seed 7 (--seed 7 makes the same calls again where the target answers them as it did this time)" in \
        paths["html"].read_text()


def test_a_regression_case_fails_while_the_bug_is_there_and_passes_once_it_is_fixed(capsys, tmp_path):
    """fuzz --fixtures states the property that failed (the answer is not ErrorUnknown_, the result is a
    number), not "anything but this answer", whose random caseId made it pass at once."""
    (tmp_path / "cases").mkdir()
    fixtures = tmp_path / "cases" / "fuzz.json"
    with serving(Service(load(PLANTED), PLANTED_HANDLERS)) as server:
        fuzzing(capsys, server.url, "--function", "fn.divide", "--fixtures", str(fixtures))
        written = json.loads(fixtures.read_text())["cases"]
        assert {case["id"] for case in written} == {"fuzz/fn.divide/handler", "fuzz/fn.divide/handler-2"}
        assert main(["run", "--target", server.url, "--cases", str(fixtures)]) == 1
        assert capsys.readouterr().out.count("\nFAIL fuzz/fn.divide/handler") == 2
    fixed = {**PLANTED_HANDLERS, "fn.divide": lambda a, h: {"Ok_": {"result": a["x"] / 2}}}
    with serving(Service(load(PLANTED), fixed)) as server:
        assert main(["run", "--target", server.url, "--cases", str(fixtures)]) == 0


def test_a_mocks_own_functions_are_fuzzed_with_calls_and_stubs_of_its_kinds(capsys):
    """fn.createStub_ and fn.verify_ were sent {} as a stub and a call: false MUST failures."""
    with serving(mocking.service(calculator.entries())) as server:
        status, lines, _ = fuzzing(capsys, server.url, "--function", "fn.createStub_", "--function", "fn.verify_")
    assert status == 0, "\n".join(lines)
    for name in ("fn.createStub_", "fn.verify_"):
        assert any(line.startswith(f"  {name}: passed (message, accepted, rejected, result") for line in lines)


def test_known_failures_are_reported_without_failing_the_run(capsys, tmp_path):
    """As run takes them: globs of fuzz/FUNCTION/CHECK (the calculator's overflow is one: its file is shipped)."""
    known = tmp_path / "known.txt"
    known.write_text("fuzz/fn.typo/handler*  # wrong types below 0\nfuzz/fn.crash/handler*\nfuzz/fn.tag/handler*\n")
    with serving(Service(load(FAULTY), HANDLERS)) as server:
        status, lines, _ = fuzzing(capsys, server.url, "--known-failures", str(known))
        assert status == 0 and re.search(r", checks: \d+ passed, 0 failed, 3 known failures; 10 not run\.$", lines[-1]), lines
        known.write_text("calculator/add/integers\n")
        with pytest.raises(SystemExit) as exit_:
            main(["fuzz", "--target", server.url, "--known-failures", str(known)])
    assert exit_.value.code == 2 and "lists what matches no case: calculator/add/integers" in capsys.readouterr().err
    shipped = ROOT / "conformance" / "known-failures" / "reference-calculator-fuzz.txt"
    assert "fuzz/fn.evaluate/handler*" in shipped.read_text()


LINKED = [
    {"info.Linked": {}},
    {"union.Auth_": [{"Session": {"token": "string"}}]},
    {"fn.login": {"name": "string"}, "->": [{"Ok_": {"token": "string"}}], "$authenticated": False},
    {"fn.plan": {"x": "integer"}, "->": [{"Ok_": {"next": "fn.use"}}], "$authenticated": False},
    {"fn.use": {"ticket": "string"}, "->": [{"Ok_": {}}], "$authenticated": False},
    {"fn.vault": {"n": "integer"}, "->": [{"Ok_": {"n": "integer"}}]},
]


LINKED_HANDLERS = {  # fn.use raises on the tickets only fn.plan hands out; fn.vault answers a wrong type to a session
    "fn.login": lambda a, h: {"Ok_": {"token": "t-" + a["name"]}},
    "fn.plan": lambda a, h: {"Ok_": {"next": {"fn.use": {"ticket": f"planned-{a['x']}"}}}},
    "fn.use": lambda a, h: 1 / 0 if a["ticket"].startswith("planned-") else {"Ok_": {}},
    "fn.vault": lambda a, h: {"Ok_": {"n": "text"}} if "Session" in h.get("@auth_", {}) else {"Ok_": {"n": a["n"]}},
}


def test_calls_follow_the_schemas_links_a_token_and_a_call_an_answer_holds(capsys):
    """fn.login's token is the Session union.Auth_ takes: fn.vault is then called with it, and fails as it
    only fails for a session; fn.plan's answer holds a call of fn.use, sent as it is: its bug is found, and
    said to depend on that call."""
    with serving(Service(load(LINKED), LINKED_HANDLERS)) as server:
        status, lines, _ = fuzzing(capsys, server.url)
    text = "\n".join(lines)
    assert status == 1 and {line.split()[1] for line in lines if line.startswith("FAIL ")} == {
        "fuzz/fn.use/handler", "fuzz/fn.vault/handler"}, text
    assert "(the call fn.plan's answer held, at next: it depends on that call)" in text
    assert '"@auth_": {"Session": {"token": "t-' in text


def lax_bytes(value, type_, path, function):  # any text is taken as bytes
    return () if type(value) is str else validate.check_bytes(value, type_, path, function)


def header_without_at(request, message):
    return [{**message[0], "plain": 1}, message[1]] if request and "fn.ok" in request[1] else message


def test_a_lax_bytes_validator_and_a_header_without_at_are_found(monkeypatch, capsys):
    """Neither was found in any run: no text that is not base64 was ever sent, and header names went unchecked."""
    monkeypatch.setitem(validate.CHECKS, "bytes", lax_bytes)
    entries = [*FAULTY[:1], {"fn.blob": {"data": "bytes"}, "->": [{"Ok_": {}}]}]
    with serving(protocol.Service(load(entries), {"fn.blob": lambda a, h: {"Ok_": {}}})) as server:
        status, lines, _ = fuzzing(capsys, server.url)
    assert status == 1 and set(failures(lines)) == {("fn.blob", "rejected")}, "\n".join(lines)
    with serving(Mutated(Service(load(FAULTY), HANDLERS), header_without_at)) as server:
        status, lines, _ = fuzzing(capsys, server.url, "--function", "fn.ok")
    assert status == 1 and set(failures(lines)) == {("fn.ok", "headers")}
    assert any(line.endswith("headers: plain: RequiredObjectKeyPrefixMissing") for line in lines)


class Mislabelled:
    """A service labelling every answer application/json, MessagePack too (as the other implementation does)."""

    def __init__(self, service):
        self.service, self.schema = service, service.schema

    def handle(self, data, client=""):
        return self.service.handle(data, client)._replace(media_type="application/json")


def off_by_one_on(wire):
    """Every integer of an answer's body on one wire (MessagePack: its headers hold @bin_) one more than on
    the other: each answer is of its type, and the two differ."""
    bump = lambda value: {key: bump(item) for key, item in value.items()} if type(value) is dict else (
        value + 1 if type(value) is int else value)
    return lambda request, message: [message[0], bump(message[1])] if ("@bin_" in message[0]) == (
        wire == "msgpack") else message


@pytest.mark.parametrize("wrong, check", [(Mislabelled, "media"),
                                          (lambda service: Mutated(service, off_by_one_on("msgpack")), "binary"),
                                          (lambda service: Mutated(service, off_by_one_on("json")), "binary")])
def test_a_wrong_only_on_messagepack_is_found_and_its_case_fails_until_it_is_fixed(wrong, check, capsys, tmp_path):
    """A MessagePack answer labelled JSON went unchecked; the case of a MessagePack failure sent names no
    server reads on MessagePack, was refused, and so passed while the bug was there; where the JSON answer
    was the wrong one, the case (anything but the MessagePack answer received) failed on the fixed server
    too: it now holds the MessagePack answer to the JSON one's value."""
    (tmp_path / "cases").mkdir()
    fixtures = tmp_path / "cases" / "fuzz.json"
    with serving(wrong(Service(load(FAULTY), HANDLERS))) as server:
        status, lines, _ = fuzzing(capsys, server.url, "--function", "fn.ok", "--fixtures", str(fixtures))
        failing = [line.split()[1] for line in lines if line.startswith("FAIL ")]  # (+1 past 2**63 - 1: a result too)
        assert status == 1 and f"fuzz/fn.ok/{check}" in failing and set(failing) <= {
            f"fuzz/fn.ok/{check}", "fuzz/fn.ok/result", "fuzz/fn.ok/packed"}, failing  # (packed: the same wire)
        assert f"fuzz/fn.ok/{check}" in {case["id"] for case in json.loads(fixtures.read_text())["cases"]}
        assert main(["run", "--target", server.url, "--cases", str(fixtures)]) == 1
    with serving(Service(load(FAULTY), HANDLERS)) as server:
        assert main(["run", "--target", server.url, "--cases", str(fixtures)]) == 0, capsys.readouterr().out


def test_a_failure_only_after_another_functions_call_is_found_in_sequences_and_says_so(capsys, tmp_path):
    """(Missed in 11 runs of 11, functions being fuzzed one at a time in name order.) Its reproduction and
    its case send the calls before it first."""
    fixtures = tmp_path / "cases" / "fuzz.json"
    fixtures.parent.mkdir()
    with serving(Service(load(COUNTER), counter_handlers())) as server:
        status, lines, _ = fuzzing(capsys, server.url, "--fixtures", str(fixtures))
    text = "\n".join(lines)
    assert status == 1 and "  fn.getCounter: passed (message, accepted" in text, text
    assert "  in sequences of them all: 1 failing (fn.getCounter handler)" in text
    assert re.search(r"replayed on the target as it was left \(no fresh state can be had\), after the \d+ calls? made since "
                     r"it last passed, it fails again; which of them it needs cannot be told without a fresh state", text)
    [written] = json.loads(fixtures.read_text())["cases"]
    assert [list(step["request"]["message"][1]) for step in written["steps"]][-2:] == [["fn.reset"], ["fn.getCounter"]]
    with serving(Service(load(COUNTER), counter_handlers())) as server:  # (a fresh one: it fails from the case alone)
        assert main(["run", "--target", server.url, "--cases", str(fixtures)]) == 1


NOTES = [{"info.Notes": {}}, {"fn.save": {"name": "string", "text": "string"}, "->": [{"Ok_": {}}]},
         {"fn.read": {"name": "string"}, "->": [{"Ok_": {"text!": "string"}}]}]


def notes_handlers():
    """fn.read answers a wrong type for a name fn.save saved (one of six letters or more, which no two
    calls made alone share): a bug only a value carried from one call to another reaches."""
    saved = {}
    return {"fn.save": lambda a, h: saved.update({a["name"]: a["text"]}) or {"Ok_": {}},
            "fn.read": lambda a, h: {"Ok_": {"text!": len(saved[a["name"]])} if len(a["name"]) > 5 and a["name"] in saved
                                     else {}}}


@pytest.mark.parametrize("seed", ["1", "2", "3"])
def test_a_value_one_function_writes_is_carried_into_another_that_reads_it(seed):
    """A field of one name and type in two functions links them (name: fn.save -> fn.read): missed by every
    run while each call's values were made afresh."""
    with serving(Service(load(NOTES), notes_handlers())) as server, contextlib.redirect_stdout(io.StringIO()) as out:
        status = main(["fuzz", "--target", server.url, "--seed", seed])
    text = out.getvalue()
    assert status == 1 and "FAIL fuzz/fn.read/handler " in text, text
    assert "values carried: name (fn.read, fn.save)" in text


USERS = [{"info.Users": {}}, {"union.Auth_": [{"Session": {"token": "string"}}]},
         {"$authenticated": False, "fn.login": {}, "->": [{"Ok_": {"token": "string"}}]},
         {"fn.getCounter": {}, "->": [{"Ok_": {"count": "integer"}}]},
         {"fn.reset": {"to!": "integer"}, "->": [{"Ok_": {}}]}, {"fn.note": {"text": "string"}, "->": [{"Ok_": {}}]}]


def users_handlers():
    """The counter's bug, kept by user: fn.getCounter answers a wrong type once that user called fn.reset."""
    reset, tokens, made = set(), set(), iter(range(10**9))
    user = lambda headers: headers["@auth_"]["Session"]["token"]
    return issued_only({"fn.login": lambda a, h: {"Ok_": {"token": tokens.add(t := f"t{next(made)}") or t}},
                        "fn.getCounter": lambda a, h: {"Ok_": {"count": "zero" if user(h) in reset else 0}},
                        "fn.reset": lambda a, h: reset.add(user(h)) or {"Ok_": {}}, "fn.note": lambda a, h: {"Ok_": {}}},
                       tokens)


def test_over_http_a_sequence_is_shrunk_for_a_fresh_user_where_state_is_kept_by_user(capsys):
    """A server cannot be reset from outside, but a new login is a fresh state where the service keeps
    state by user: the calls are replayed for a fresh user, and only those the failure needs are kept."""
    with serving(Service(load(USERS), users_handlers())) as server:
        status, lines, _ = fuzzing(capsys, server.url)
    text = "\n".join(lines)
    assert status == 1 and "  in sequences of them all: 1 failing (fn.getCounter handler)" in text, text
    assert "replayed on a fresh user, it fails after 1 earlier call (fn.reset), each needed: without any one of them " \
           "it passes" in text, text


BOUNDS = [{"info.Bounds": {}}, {"fn.find": {"id": "integer"}, "->": [{"Ok_": {}}]},
          {"fn.sum": {"xs": ["integer"]}, "->": [{"Ok_": {}}]}]


BOUND_HANDLERS = {"fn.find": lambda a, h: {"Ok_": {}} if a["id"] <= 100 else 1 / 0,
                  "fn.sum": lambda a, h: {"Ok_": {}} if len(a["xs"]) < 4 else 1 / 0}


def test_shrinking_finds_a_bound_inside_a_range_and_an_arrays_length():
    """A bug at id > 100 was shown as 134 (or 2**43), not 101; one at 4 elements stopped at 5."""
    for seed in ("1", "2", "3"):
        with serving(Service(load(BOUNDS), BOUND_HANDLERS)) as server, contextlib.redirect_stdout(io.StringIO()) as out:
            assert main(["fuzz", "--target", server.url, "--seed", seed]) == 1
        found = failures(out.getvalue().splitlines())
        assert found[("fn.find", "handler")][1] == {"fn.find": {"id": 101}}, seed
        assert found[("fn.sum", "handler")][1] == {"fn.sum": {"xs": [0, 0, 0, 0]}}, seed


def ignoring_union_selections(request):
    """A server whose @select_ trims structs and Ok_ but leaves every union value whole."""
    if "@select_" in request[0] and isinstance(request[0]["@select_"], dict):
        request[0]["@select_"] = {k: v for k, v in request[0]["@select_"].items() if not k.startswith("union.")}
    return request


def test_a_server_ignoring_union_selections_fails_the_select_check(capsys):
    """(It passed 7 runs of 7: no selection named a union, and the check never looked inside one.)"""
    with serving(Mutated(testbed.service(), request=ignoring_union_selections)) as server:
        status, lines, _ = fuzzing(capsys, server.url, "--function", "fn.echo", "--max-examples", "100")
    assert status == 1 and any(line.startswith("FAIL fuzz/fn.echo/select ") for line in lines), "\n".join(lines)
    assert any(re.search(r"select: Ok_\.\w+!?(\[\d+\]|\.\w+!?)*\.[A-Z]\w*\.\w+!?: not selected", line)
               for line in lines), "\n".join(lines)  # (inside a union's tag: Circle, Leaf, ...)


def test_the_testbed_passes_with_credentials(capsys):
    """fn.secret echoed its arguments, which are no result of it: every run with -H credentials failed."""
    with serving(testbed.service()) as server:
        status, lines, _ = fuzzing(capsys, server.url, "--function", "fn.secret", "-H",
                                   '@auth_:={"Token": {"token": "t"}}')
    assert status == 0 and any(line.startswith("  fn.secret: passed (message, accepted, rejected, result, headers, "
                                               "handler") for line in lines), "\n".join(lines)


FILES = [{"info.Files": {}}, {"fn.files": {"names": ["string"]}, "->": [{"Ok_": {"files": {"string": "bytes"},
                                                                                   "list": ["bytes"]}}]}]


def not_base64(request, message):
    """Every bytes value of fn.files' answer, in its map and its list, as text no base64 reader takes."""
    ok = message[1].get("Ok_")
    if isinstance(ok, dict) and "files" in ok:
        ok["files"] = {name: "not base64!" for name in ok["files"]}
    if isinstance(ok, dict) and "list" in ok:
        ok["list"] = ["not base64!" for _ in ok["list"]]
    return message


def test_one_bug_at_every_entry_of_a_map_is_one_failure():
    """(A wrongly encoded bytes field was 9 to 10 failures: each map key made a new place.) Every entry of a
    map and every element of an array is one place; the map and the list are two."""
    handlers = {"fn.files": lambda a, h: {"Ok_": {"files": {name: "AAEC" for name in a["names"]},
                                                  "list": ["AAEC" for _ in a["names"]]}}}
    for seed in ("1", "2", "3"):
        with serving(Mutated(Service(load(FILES), handlers), not_base64)) as server, \
                contextlib.redirect_stdout(io.StringIO()) as out:
            assert main(["fuzz", "--target", server.url, "--seed", seed, "--no-binary"]) == 1
        failing = sorted(line.split()[1] for line in out.getvalue().splitlines() if line.startswith("FAIL "))
        assert failing in (["fuzz/fn.files/result"], ["fuzz/fn.files/result", "fuzz/fn.files/result-2"]), (seed, failing)


def test_a_protected_function_called_without_credentials_has_no_verdict_on_its_handler(capsys, tmp_path):
    """(Every call answered ErrorUnauthenticated_, and handler, accepted and result passed on 37 answers.) An
    answer that never reached the handler is evidence of nothing the handler does."""
    with serving(testbed.service()) as server:
        status, lines, _ = fuzzing(capsys, server.url, "--function", "fn.secret", "--json", str(tmp_path / "r.json"))
    verdicts = {case["id"].rsplit("/", 1)[1]: case for case in json.loads((tmp_path / "r.json").read_text())["cases"]}
    for check in ("handler", "accepted", "result"):
        assert verdicts[check]["status"] == "not-run", verdicts[check]
        assert "every call was answered ErrorUnauthenticated_, so none reached the handler" in verdicts[check]["problems"][0]
    assert verdicts["message"]["status"] == verdicts["headers"]["status"] == "pass"
    assert status == 0 and "Every call of fn.secret was answered ErrorUnauthenticated_: none reached its handler, so " \
        "what it does was not checked (give -H '@auth_:=...')." in lines

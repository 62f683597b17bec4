"""The mock server over real sockets: start-up, stubs, verification, generated values."""

import contextlib
import http.server
import json
import logging
import os
import re
import socket
import subprocess
import sys
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import (Connection, Mutated, dripping, handled_with_peak, refusing, respond, serving, started,
                      uvicorn_serving)
from reference.transports import admission, http_client
from reference.services import calculator
from reference import load, mock, protocol
from reference import mocking
from reference.mocking import handlers
from reference.mocking import relay
from reference.transports.http_client import Client

ADD = {"fn.add": {"x": 1, "y": 2}}
OK = {"Ok_": {}}


@pytest.fixture(params=[None, protocol.Service], ids=["engine", "core"])
def mocked(request):
    """A connection to a fresh mock of the calculator, the engine room's or the core's (matching stubs by
    their definitions); `.call(body, headers)` returns the body."""
    with serving(mocking.service(calculator.entries(), kind=request.param)) as server:
        connection = Connection(server.url)
        connection.body = lambda body, headers=None: connection.call([headers or {}, body])[1]
        yield connection


def stub(call, result, **options):
    return {"fn.createStub_": {"stub": {**call, "->": result}, **options}}


def test_a_mock_fetched_from_a_live_server_serves_the_same_public_schema(calculator_url):
    """fn.api_ is the live server's; the mock's own functions show only with includeInternal!."""
    live = Connection(calculator_url).call([{}, {"fn.api_": {}}])
    with serving(mocking.service(Client(calculator_url).schema())) as server:
        connection = Connection(server.url)
        assert connection.call([{}, {"fn.api_": {}}]) == live
        everything = connection.call([{}, {"fn.api_": {"includeInternal!": True}}])[1]["Ok_"]["api"]
        keys = {next(k for k in e if k[0] not in "/-$") for e in everything}
        assert len(everything) == 51 and {"fn.createStub_", "fn.verify_", "fn.verifyNoMoreInteractions_",
                                          "fn.clearStubs_", "fn.clearCalls_", "fn.setRandomSeed_",
                                          "fn.listStubs_", "fn.listCalls_", "struct.Stubbed_", "struct.Recorded_",
                                          "_ext.Stub_", "_ext.Call_", "union.CallCountCriteria_",
                                          "union.VerificationFailure_", "errors.Mock_"} <= keys
        for bad in ([{}, {"fn.add": {"x": "1", "y": 2}}], [{}, {"fn.logout": {"username": "a"}}], [{}, {}]):
            assert connection.call(bad) == Connection(calculator_url).call(bad)


def test_the_mock_encoding_is_the_other_implementation_s_and_its_listings():
    """The other implementation's mock of the calculator has 59 names; ours nine more, those of
    fn.listStubs_ and fn.listCalls_ (conformance/PROTOCOL.md, section 12)."""
    service = mocking.service(calculator.entries())
    listings = {"fn.listStubs_", "fn.listCalls_", "stubs", "calls", "omittedStubs!", "omittedCalls!", "headers", "at",
                "stub!"}
    peers = [name for name in service.encoding.names if name not in listings]
    assert len(peers) == 59 and len(service.encoding.ids) == 68
    assert zlib.crc32("\n".join(peers).encode()) - 2**32 == -959690647


@pytest.mark.parametrize("steps", [
    # partial matching, newest stub first, falling back to older ones, then to generated values
    [(stub({"fn.add": {"x": 1}}, {"Ok_": {"result": 100}}), OK),
     (ADD, {"Ok_": {"result": 100}}),
     ({"fn.add": {"x": 2, "y": 50}}, {"Ok_": {"result": 0.001007557381413671}}),
     (stub({"fn.add": {"x": 1, "y": 2}}, {"Ok_": {"result": 3}}, **{"strictMatch!": True}), OK),
     (ADD, {"Ok_": {"result": 3}}),
     ({"fn.add": {"x": 1, "y": 3}}, {"Ok_": {"result": 100}})],
    # count!, and an error tag as the stubbed result
    [(stub({"fn.evaluate": {"expression": {"Variable": {"name": "q"}}}},
           {"ErrorUnknownVariables": {"unknownVariables": ["q"]}}, **{"count!": 2}), OK),
     ({"fn.evaluate": {"expression": {"Variable": {"name": "q"}}}}, {"ErrorUnknownVariables": {"unknownVariables": ["q"]}}),
     ({"fn.evaluate": {"expression": {"Variable": {"name": "q"}}}}, {"ErrorUnknownVariables": {"unknownVariables": ["q"]}}),
     ({"fn.evaluate": {"expression": {"Variable": {"name": "q"}}}}, {"Ok_": {
         "result": 0.001007557381413671, "saveResult": {"fn.saveVariable": {
             "name": "kappa", "value": 0.007592086218107532}}}})],
    [(stub({"fn.add": {}}, {"Ok_": {"result": 1}}, **{"count!": 0}), OK),
     (ADD, {"Ok_": {"result": 0.001007557381413671}})],
    # missing required result fields are generated; given ones are kept
    [(stub({"fn.getVariable": {}}, {"Ok_": {"variable!": {"name": "n"}}}), OK),
     ({"fn.getVariable": {"name": "zz"}}, {"Ok_": {"variable!": {"name": "n", "value": 0.001007557381413671}}})],
    # partial matching inside arrays: every stubbed element equals some element of the call
    [(stub({"fn.deleteVariables": {"names": ["r", "p"]}}, OK), OK),
     ({"fn.deleteVariables": {"names": ["p", "q", "r"]}}, OK),
     ({"fn.deleteVariables": {"names": ["p", "q"]}}, {"Ok_": {}})],
    # bytes in a JSON stub, in the matcher and in the result
    [(stub({"fn.import": {"blob": "AQI="}}, {"ErrorInvalidBlob": {"reason": "stubbed"}}), OK),
     ({"fn.import": {"blob": "AQI="}}, {"ErrorInvalidBlob": {"reason": "stubbed"}}),
     (stub({"fn.export": {}}, {"Ok_": {"blob": "/w=="}}), OK),
     ({"fn.export": {}}, {"Ok_": {"blob": "/w=="}})],
    # true is not 1, although 1 is 1.0
    [(stub({"fn.add": {"x": 1.0}}, {"Ok_": {"result": 7}}), OK), (ADD, {"Ok_": {"result": 7}})],
    # match!: places of a call that match a pattern, not the stub's value (strict matching compares the rest)
    [(stub({"fn.add": {"x": 1, "y": 0}, "match!": {"y": {"Any": {}}}}, {"Ok_": {"result": 100}},
           **{"strictMatch!": True}), OK),
     (ADD, {"Ok_": {"result": 100}}),
     ({"fn.add": {"x": 2, "y": 2}}, {"Ok_": {"result": 0.001007557381413671}})],
    [(stub({"fn.evaluate": {"expression": {"Variable": {"name": ""}}},
            "match!": {"expression.Variable.name": {"Glob": {"pattern": "q?*\\*"}}}},
           {"ErrorUnknownVariables": {"unknownVariables": []}}), OK),
     ({"fn.evaluate": {"expression": {"Variable": {"name": "qa*"}}}}, {"ErrorUnknownVariables": {"unknownVariables": []}}),
     ({"fn.evaluate": {"expression": {"Variable": {"name": "qabc*"}}}},
      {"ErrorUnknownVariables": {"unknownVariables": []}}),
     ({"fn.evaluate": {"expression": {"Variable": {"name": "q*"}}}}, "generated"),
     ({"fn.evaluate": {"expression": {"Constant": {"value": 1}}}}, "generated")],
    [(stub({"fn.add": {}, "@auth_": {"Ephemeral": {"username": ""}},
            "match!": {"@auth_.Ephemeral.username": {"Glob": {"pattern": "ann*"}}}}, {"Ok_": {"result": 5}}), OK),
     ((ADD, {"@auth_": {"Ephemeral": {"username": "anna"}}}), {"Ok_": {"result": 5}}),
     ((ADD, {"@auth_": {"Ephemeral": {"username": "bob"}}}), "generated"),
     (ADD, "generated")],
])
def test_stubs(mocked, steps):
    """Each step's request (a body, or a body and headers) gets exactly the expected answer (or not the
    stub's: a generated one)."""
    for request, expected in steps:
        answer = mocked.body(*request) if type(request) is tuple else mocked.body(request)
        if expected == "generated":
            assert "Ok_" in answer, request
        else:
            assert answer == expected, request


def test_stub_results_are_completed_inside_arrays_and_unions(mocked):
    """Given values stay (null included); missing required fields anywhere are generated."""
    mocked.body(stub({"fn.getPaperTape": {}}, {"Ok_": {"tape": [
        {"result": None, "expression": {"Add": {"left": {"Constant": {"value": 5}}}}}, {"successful": True}]}}))
    first, second = mocked.body({"fn.getPaperTape": {}})["Ok_"]["tape"]
    assert list(first) == ["expression", "result", "successful", "timestamp"] == list(second)
    assert first["result"] is None and first["expression"]["Add"]["left"] == {"Constant": {"value": 5}}
    assert list(first["expression"]["Add"]) == ["left", "right"] and second["successful"] is True
    assert type(first["timestamp"]) is int and type(first["successful"]) is bool


def cases(*pairs):
    return {"ErrorInvalidRequestBody_": {"cases": [{"path": path, "reason": reason} for path, reason in pairs]}}


@pytest.mark.parametrize("request_, expected", [
    (stub({"fn.add": {"x": "bad"}}, {"Ok_": {"result": "bad"}}), cases(
        (["fn.createStub_", "stub", "fn.add", "x"],
         {"TypeUnexpected": {"actual": {"String": {}}, "expected": {"Number": {}}}}),
        (["fn.createStub_", "stub", "->", "Ok_", "result"],
         {"TypeUnexpected": {"actual": {"String": {}}, "expected": {"Number": {}}}}))),
    (stub({"fn.add": {}}, {"Nope": {}}), cases((["fn.createStub_", "stub", "->", "Nope"], {"ObjectKeyDisallowed": {}}))),
    (stub({"fn.getPaperTape": {}}, {"Ok_": {"tape": [{"timestamp": 2**63}]}}),
     cases((["fn.createStub_", "stub", "->", "Ok_", "tape", 0, "timestamp"], {"NumberOutOfRange": {}}))),
    ({"fn.createStub_": {"stub": {"fn.add": {}}}},
     cases((["fn.createStub_", "stub"], {"RequiredObjectKeyMissing": {"key": "->"}}))),
    ({"fn.createStub_": {"stub": {"fn.add": {}, "fn.evaluate": {}, "->": OK}}}, cases(
        (["fn.createStub_", "stub"], {"ObjectKeyRegexMatchCountUnexpected": {
            "regex": "^fn\\..*$", "actual": 2, "expected": 1, "keys": ["->", "fn.add", "fn.evaluate"]}}))),
    ({"fn.createStub_": {"stub": {"fn.add": {}, "->": OK, "extra": 1}}},
     cases((["fn.createStub_", "stub", "extra"], {"ObjectKeyDisallowed": {}}))),
    (stub({"fn.nope": {}}, OK), cases((["fn.createStub_", "stub", "fn.nope"], {"FunctionUnknown": {}}))),
    (stub({"fn.ping_": {}}, OK), cases((["fn.createStub_", "stub", "fn.ping_"], {"ObjectKeyDisallowed": {}}))),
    (stub({"fn.import": {"blob": "AQI"}}, OK), cases((["fn.createStub_", "stub", "fn.import", "blob"], {
        "TypeUnexpected": {"actual": {"String": {}}, "expected": {"Base64String": {}}}}))),
    (stub({"fn.add": {}, "match!": {"z": {"Any": {}}, "x": {"Glob": {"pattern": 1}}, "y..": {"Any": {}},
                                    "@id_": {"Glob": {"pattern": "*" * 257}}}}, OK), cases(
        (["fn.createStub_", "stub", "match!", "z"], {"ExtensionValidationFailed": {
            "reason": "fn.add has no argument 'z' (a header's path starts with @)"}}),
        (["fn.createStub_", "stub", "match!", "x"], {"ExtensionValidationFailed": {
            "reason": 'a pattern is {"Any": {}} or {"Glob": {"pattern": TEXT}}'}}),
        (["fn.createStub_", "stub", "match!", "y.."], {"ExtensionValidationFailed": {
            "reason": "'y..' is not a path such as item.tags[0]"}}),
        (["fn.createStub_", "stub", "match!", "@id_"], {"ExtensionValidationFailed": {
            "reason": "a glob has at most 256 characters"}}))),
    ({"fn.verify_": {"call": {"fn.add": {}}, "count!": {"Exact": {}}}},
     cases((["fn.verify_", "count!", "Exact"], {"RequiredObjectKeyMissing": {"key": "times"}}))),
    ({"fn.verify_": {"call": {"fn.nope": {}}}}, cases((["fn.verify_", "call", "fn.nope"], {"FunctionUnknown": {}}))),
    ({"fn.verify_": {"call": {}}}, cases((["fn.verify_", "call"], {"ObjectKeyRegexMatchCountUnexpected": {
        "regex": "^fn\\..*$", "actual": 0, "expected": 1, "keys": []}}))),
])
def test_invalid_stubs_and_verifications_are_request_errors(mocked, request_, expected):
    """What no call could match is refused when it is sent, with paths into the stub."""
    assert mocked.body(request_) == expected


def failure(kind, wanted, found, calls):
    return {"ErrorVerificationFailure": {"reason": {kind: {"wanted": wanted, "found": found, "allCalls": calls}}}}


def test_verification(mocked):
    """fn.verify_ counts matching calls (default at least one) and marks them verified."""
    calls = [ADD, {"fn.add": {"x": 1, "y": 5}}, {"fn.saveVariables": {"variables": {"a": 1, "b": 2}}},
             {"fn.deleteVariables": {"names": ["p", "q", "r"]}}]
    assert mocked.body({"fn.verify_": {"call": {"fn.add": {}}}}) == failure(
        "TooFewMatchingCalls", {"AtLeast": {"times": 1}}, 0, [])
    for call in calls:
        mocked.body(call)
    mocked.body({"fn.ping_": {}})
    verify = lambda call, **options: mocked.body({"fn.verify_": {"call": call, **options}})
    assert verify({"fn.add": {"x": 1}}) == OK
    assert verify({"fn.add": {"x": 1}}, **{"count!": {"Exact": {"times": 1}}}) == failure(
        "TooManyMatchingCalls", {"Exact": {"times": 1}}, 2, calls)
    assert verify({"fn.add": {"x": 9}}, **{"count!": {"Exact": {"times": 1}}}) == failure(
        "TooFewMatchingCalls", {"Exact": {"times": 1}}, 0, calls)
    assert verify({"fn.add": {"x": 1}}, **{"count!": {"AtMost": {"times": 1}}}) == failure(
        "TooManyMatchingCalls", {"AtMost": {"times": 1}}, 2, calls)
    assert verify({"fn.add": {"x": 1}}, **{"count!": {"AtMost": {"times": 2}}}) == OK
    assert verify({"fn.add": {"x": 1}}, **{"count!": {"AtLeast": {"times": 3}}}) == failure(
        "TooFewMatchingCalls", {"AtLeast": {"times": 3}}, 2, calls)
    assert verify({"fn.add": {"x": 1}}, **{"strictMatch!": True}) == failure(
        "TooFewMatchingCalls", {"AtLeast": {"times": 1}}, 0, calls)
    assert verify(ADD, **{"strictMatch!": True}) == OK
    assert verify({"fn.deleteVariables": {"names": ["r", "p"]}}) == OK
    assert verify({"fn.getVariables": {}}, **{"count!": {"Exact": {"times": 0}}}) == OK
    assert mocked.body({"fn.verifyNoMoreInteractions_": {}}) == {"ErrorVerificationFailure": {
        "additionalUnverifiedCalls": [calls[2]]}}
    assert verify({"fn.saveVariables": {}}) == OK
    assert mocked.body({"fn.verifyNoMoreInteractions_": {}}) == OK
    assert mocked.body({"fn.clearCalls_": {}}) == OK
    assert verify({"fn.add": {}}) == failure("TooFewMatchingCalls", {"AtLeast": {"times": 1}}, 0, [])


def test_clearing_stubs_and_seeding(mocked):
    """clearStubs_ forgets stubs; setRandomSeed_ makes generated values repeat."""
    mocked.body(stub({"fn.add": {}}, {"Ok_": {"result": 5}}))
    assert mocked.body(ADD) == {"Ok_": {"result": 5}}
    assert mocked.body({"fn.clearStubs_": {}}) == OK
    mocked.body({"fn.setRandomSeed_": {"seed": 42}})
    first = [mocked.body(ADD) for _ in range(3)]
    mocked.body({"fn.setRandomSeed_": {"seed": 42}})
    assert [mocked.body(ADD) for _ in range(3)] == first
    assert first[0] == {"Ok_": {"result": 0.042317410019374176}}
    assert first[1] == {"Ok_": {"result": 0.031891807462969705}}


def test_protected_functions_still_need_auth(mocked):
    assert mocked.body({"fn.logout": {"username": "a"}}) == {
        "ErrorUnauthenticated_": {"message!": "Valid authentication is required."}}
    assert mocked.body({"fn.logout": {"username": "a"}}, {"@auth_": {"Session": {"token": "any"}}}) == OK


def test_without_generation_unstubbed_calls_get_no_matching_stub():
    with serving(mocking.service(calculator.entries(), options=mocking.Options(generation=False))) as server:
        connection = Connection(server.url)
        assert connection.call([{}, ADD])[1] == {"ErrorNoMatchingStub_": {}}
        assert list(connection.call([{"@gen_": True}, ADD])[1]) == ["Ok_"]
        connection.call([{}, stub({"fn.add": {}}, {"Ok_": {"result": 1}})])
        assert connection.call([{}, ADD])[1] == {"Ok_": {"result": 1}}


def test_a_call_no_stub_matches_is_answered_with_the_nearest_stub_and_where_it_differs(caplog):
    """Of the stubs of the function, the one that differs at the fewest arguments, the newest of those."""
    with serving(mocking.service(calculator.entries(), options=mocking.Options(generation=False))) as server:
        connection = Connection(server.url)
        for call in ({"x": 1, "y": 5}, {"x": 2, "y": 5}, {"x": 1, "y": 3}):
            connection.call([{}, stub({"fn.add": call}, {"Ok_": {"result": 0}}, **{"strictMatch!": True})])
        caplog.set_level("INFO", logger="reference")
        nearest = {"stub": {"fn.add": {"x": 1, "y": 3}, "->": {"Ok_": {"result": 0}}}, "strictMatch!": True}
        assert connection.call([{}, ADD])[1] == {"ErrorNoMatchingStub_": {
            "nearest!": nearest, "differences!": ["y: the stub has 3, the call 2"]}}
        assert ('fn.add {"x": 1, "y": 2} matched no stub; the nearest, {"fn.add": {"x": 1, "y": 3}, "->": '
                '{"Ok_": {"result": 0}}}, differs at y: the stub has 3, the call 2') in caplog.text
        assert connection.call([{}, {"fn.add": {"x": 1, "y": 3}}])[1] == {"Ok_": {"result": 0}}


def test_faults_and_delays_are_answered_as_asked():
    with serving(mocking.service(calculator.entries(), options=mocking.Options(faults=1.0, delay=0.3))) as server:
        connection = Connection(server.url)
        started_at = time.monotonic()
        assert list(connection.call([{}, ADD])[1]) == ["ErrorUnknown_"]
        assert time.monotonic() - started_at >= 0.3
        assert list(connection.call([{}, {"fn.listCalls_": {}}])[1]) == ["Ok_"]  # (the mock's own are not)
    with serving(mocking.service(calculator.entries(), options=mocking.Options(faults=0.5, seed=1))) as server:
        connection = Connection(server.url)
        answers = [list(connection.call([{}, ADD])[1])[0] for _ in range(200)]
        assert 50 < answers.count("ErrorUnknown_") < 150 and answers.count("Ok_") == 200 - answers.count(
            "ErrorUnknown_")


EVERY_TYPE = [
    {"fn.all": {}, "->": [{"Ok_": {
        "b": "boolean", "i": "integer", "n": "number", "s": "string", "y": "bytes", "a": "any",
        "ni": "integer?", "ny": "bytes?", "arr": ["integer?"], "ybs": ["bytes"], "ymap": {"string": "bytes"},
        "st": "struct.Pair", "un": "union.Shape", "call": "fn.ping2", "tree": "union.Expr",
        "opt!": "string?", "nested": [{"string": ["struct.Pair?"]}]}}]},
    {"fn.ping2": {"note!": "string"}, "->": [{"Ok_": {}}]},
    {"struct.Pair": {"left": "integer", "right": "string?"}},
    {"union.Shape": [{"Circle": {"r": "number"}}, {"Empty": {}}]},
    {"union.Expr": [{"Leaf": {"n": "number"}}, {"Add": {"l": "union.Expr", "r": "union.Expr"}},
                    {"Mul": {"l": "union.Expr", "r": "union.Expr"}}]},
]


@pytest.mark.parametrize("options, seeds", [({}, 25), ({"mode": "binary"}, 15), ({"mode": "packed"}, 15)])
def test_generated_answers_are_valid_for_every_type(options, seeds):
    """The mock validates its own answers, so none is ever ErrorInvalidResponseBody_; every wire reads them."""
    with serving(mocking.service(EVERY_TYPE, options=mocking.Options(length=(0, 4)))) as server, Client(server.url, **options) as client:
        for seed in range(seeds):
            client.call("fn.setRandomSeed_", {"seed": seed})
            headers, body = client.call("fn.all")
            assert list(body) == ["Ok_"], body
            assert isinstance(body["Ok_"]["y"], bytes) and len(json.dumps(body, default=repr)) < 2_000_000


def run(*args):
    return subprocess.run([sys.executable, "-m", "reference.mock", *args], capture_output=True, text=True,
                          timeout=60)


@pytest.mark.parametrize("args, message", [
    ([], "one of the arguments --schema-url --schema-file --schema-dir --record --proxy is required"),
    (["--record", "http://127.0.0.1:1/api"], "--record needs --stubs DIR, where the answers are saved"),
    (["--schema-file", "a", "--fault-rate", "2"], "argument --fault-rate: '2' is not a number between 0 and 1"),
    (["--schema-file", "a", "--delay", "-1"], "argument --delay: '-1' is not a number of seconds from 0 to 86,400 (a day)"),
    (["--schema-file", "a", "--schema-dir", "b"], "argument --schema-dir: not allowed with argument --schema-file"),
    (["--schema-file", "a", "--collection-length", "3", "1"], "--collection-length needs 0 <= MIN <= MAX"),
    (["--schema-file", "a", "--no-optional-fields", "--all-optional-fields"], "not allowed with argument"),
    (["--schema-file", "a", "--seed", "x"], "argument --seed: invalid int value: 'x'"),
    (["--schema-url", "not-a-url"], "'not-a-url' is not an http:// or https:// URL, such as http://127.0.0.1:8000/api"),
    (["--schema-file", "a", "--cafile", "ca.pem"], "--cafile is for an https:// --schema-url"),
    (["--schema-url", "http://127.0.0.1:9/api", "--cafile", "ca.pem"], "--cafile is for an https:// --schema-url"),
    (["--schema-url", "http://[::1"], "'http://[::1' is not a URL"),
    (["--schema-file", "a", "--log-level", "loud"], "argument --log-level: invalid choice: 'loud'"),
])
def test_bad_command_lines_are_one_line_and_exit_2(args, message):
    result = run(*args)
    assert result.returncode == 2 and result.stderr.startswith("python -m reference.mock: error: ")
    assert message in result.stderr and result.stderr.count("\n") == 1, result.stderr


def test_start_up_problems_are_one_line_errors_and_exit_2(tmp_path, calculator_url):
    """The same status as the runner's for a target it cannot use."""
    missing = run("--schema-file", str(tmp_path / "none.json"))
    assert (missing.returncode, missing.stderr) == (
        2, f"python -m reference.mock: error: {tmp_path / 'none.json'}: does not exist\n")
    (tmp_path / "bad.json").write_text('[{"fn.f": {}}]')
    bad = run("--schema-file", str(tmp_path / "bad.json"))
    lines = bad.stderr.splitlines()  # (a line for each problem, as the schema checker writes them, then one error)
    assert bad.returncode == 2 and len(lines) == 2 and lines[0].startswith(f"{tmp_path / 'bad.json'}:1:2: fn.f: ")
    assert lines[1] == f"python -m reference.mock: error: the schema of {tmp_path / 'bad.json'} does not load: 1 problem"
    with refusing() as url:
        unreachable = run("--schema-url", url, "--wait", "0.5", "--cache", str(tmp_path / "never.json"))
    assert unreachable.returncode == 2 and unreachable.stderr.startswith(f"python -m reference.mock: error: cannot reach {url}: ")
    assert unreachable.stderr.endswith(f"(waited 0.5 s); and no schema of it was saved before in {tmp_path / 'never.json'}\n")
    assert unreachable.stderr.count("\n") == 1
    elsewhere = run("--schema-url", calculator_url.replace("/api", "/other"))
    assert elsewhere.returncode == 2 and elsewhere.stderr == (
        f"python -m reference.mock: error: {calculator_url.replace('/api', '/other')} answered HTTP 404 (is the API at /api?): "
        f"Not found: the API is at /api\n")


def test_start_from_a_live_server_then_from_the_saved_copy(tmp_path):
    """Start the calculator, mock it from its URL, stop it, and mock it again from the cache."""
    cache = tmp_path / "calculator.json"
    with serving(calculator.service()) as live:
        url = live.url
        expected = [Connection(url).call(m) for m in ([{}, {"fn.api_": {}}], [{}, {"fn.add": {"x": "1", "y": 2}}])]
        mocked = start_mock("--schema-url", url, "--cache", str(cache))
    try:
        assert mocked.banner[0] == (f"Saved the schema of {url} to {cache}; without the server, "
                                    f"start with --schema-file {cache}\n")
        assert [mocked.connection.call(m) for m in ([{}, {"fn.api_": {}}], [{}, {"fn.add": {"x": "1", "y": 2}}])] == expected
    finally:
        mocked.stop()
    cached = start_mock("--schema-file", str(cache))
    try:
        assert cached.banner[0].startswith("Serving a mock of ")
        assert [cached.connection.call(m) for m in ([{}, {"fn.api_": {}}], [{}, {"fn.add": {"x": "1", "y": 2}}])] == expected
        assert cached.connection.call([{}, stub({"fn.add": {}}, {"Ok_": {"result": 9}})])[1] == OK
        assert cached.connection.call([{}, ADD])[1] == {"Ok_": {"result": 9}}
        assert cached.connection.call([{}, {"fn.verify_": {"call": {"fn.add": {"x": 1}}}}])[1] == OK
        assert list(cached.connection.call([{}, {"fn.verify_": {"call": {"fn.add": {"x": 5}}}}])[1]) == [
            "ErrorVerificationFailure"]
    finally:
        cached.stop()


def test_the_saved_copy_is_replaced_only_by_a_schema_that_loads(tmp_path):
    """A server whose fn.api_ answers a schema that does not load leaves the copy saved before as it was,
    and a link in the cache's place is replaced, not followed."""
    cache, elsewhere = tmp_path / "schema.json", tmp_path / "elsewhere.txt"
    broken = Mutated(calculator.service(), answer=lambda request, message: [{}, {"Ok_": {"api": [
        {"struct.X": {"a": "nope"}}]}}] if request and "fn.api_" in request[1] else message)
    with serving(calculator.service()) as live:
        start_mock("--schema-url", live.url, "--cache", str(cache)).stop()
    good = cache.read_text()
    with serving(broken) as odd:
        refused = run("--schema-url", odd.url, "--cache", str(cache))
    assert refused.returncode == 2 and 'unknown type "nope"' in refused.stderr and cache.read_text() == good
    elsewhere.write_text("kept")
    cache.unlink()
    cache.symlink_to(elsewhere)
    with serving(calculator.service()) as live:
        start_mock("--schema-url", live.url, "--cache", str(cache)).stop()
    assert elsewhere.read_text() == "kept" and not cache.is_symlink() and cache.read_text() == good


def test_a_mock_of_a_server_over_https_with_a_private_certificate_authority(tmp_path, tls):
    context, cafile, _ = tls
    with serving(calculator.service(), tls=context) as live:
        url = live.url.replace("http://", "https://")
        untrusted = run("--schema-url", url, "--cache", str(tmp_path / "schema.json"))
        assert untrusted.returncode == 2 and untrusted.stderr.startswith(
            f"python -m reference.mock: error: cannot reach {url}: its certificate is not trusted (unable to get local issuer certificate)")
        mocked = start_mock("--schema-url", url, "--cafile", cafile, "--cache", str(tmp_path / "schema.json"))
    try:
        assert mocked.connection.call([{}, {"fn.add": {"x": 1, "y": "2"}}])[1]["ErrorInvalidRequestBody_"]
    finally:
        mocked.stop()


def test_a_mock_waiting_for_its_server_says_so(calculator_url):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/api"
    result = run("--schema-url", url, "--wait", "0.5")
    assert result.stdout == f"Waiting up to 0.5 s for {url} to answer (see --wait)...\n"
    assert result.returncode == 2 and "(waited 0.5 s)" in result.stderr


class start_mock:
    """`python -m reference.mock ARGS` on a port the system picks, until stop()."""

    def __init__(self, *args):
        self.process, self.banner, url = started("mock", *args)
        self.connection = Connection(url)

    def stop(self):
        self.process.terminate()
        self.process.communicate(timeout=10)


def test_stubs_and_recorded_calls_are_bounded():
    """The oldest stubs and calls are dropped beyond the limits."""
    with serving(mocking.service(calculator.entries(), options=mocking.Options(max_stubs=2, max_calls=3))) as server:
        connection = Connection(server.url)
        body = lambda request: connection.call([{}, request])[1]
        for result in (1, 2, 3):
            body(stub({"fn.add": {"x": result}}, {"Ok_": {"result": result}}))
        assert body({"fn.add": {"x": 1, "y": 0}})["Ok_"]["result"] != 1  # the oldest stub is gone
        assert body({"fn.add": {"x": 3, "y": 0}}) == {"Ok_": {"result": 3}}
        for x in (10, 11, 12):
            body({"fn.add": {"x": x, "y": 0}})
        failure = body({"fn.verify_": {"call": {"fn.add": {}}, "count!": {"Exact": {"times": 0}}}})
        assert failure["ErrorVerificationFailure"]["reason"]["TooManyMatchingCalls"]["allCalls"] == [
            {"fn.add": {"x": x, "y": 0}} for x in (10, 11, 12)]


def test_stubs_and_recorded_calls_are_bounded_in_bytes_too():
    """Beyond half of max_state each, the oldest stubs and recorded calls give way."""
    with serving(mocking.service(calculator.entries(), options=mocking.Options(max_state=40_000))) as server:
        connection = Connection(server.url)
        body = lambda request: connection.call([{}, request])[1]
        for n in range(3):  # each stub and each call takes about 7 kB
            variable = {"name": f"{n}-" + "x" * 7000, "value": n}
            body(stub({"fn.getVariable": {}}, {"Ok_": {"variable!": variable}}, **{"count!": 1}))
            body({"fn.deleteVariables": {"names": ["x" * 7000, str(n)]}})
        answers = [body({"fn.getVariable": {"name": "v"}})["Ok_"]["variable!"]["name"][:2] for _ in range(3)]
        assert answers[:2] == ["2-", "1-"] and answers[2] != "0-"  # the oldest stub had given way
        verified = body({"fn.verify_": {"call": {"fn.deleteVariables": {}}, "count!": {"Exact": {"times": 0}}}})
        calls = verified["ErrorVerificationFailure"]["reason"]["TooManyMatchingCalls"]["allCalls"]
        assert [call["fn.deleteVariables"]["names"][1] for call in calls if "fn.deleteVariables" in call] == ["1", "2"]


def test_a_stub_may_leave_only_so_many_fields_for_the_mock_to_make_up(mocked):
    """Each left-out required field is generated at every call, so a stub may leave 1000 at most."""
    assert mocked.body(stub({"fn.getPaperTape": {}}, {"Ok_": {"tape": [{}] * 250}})) == OK
    refused = mocked.body(stub({"fn.getPaperTape": {}}, {"Ok_": {"tape": [{}] * 251}}))
    assert refused == {"ErrorInvalidRequestBody_": {"cases": [{"path": ["fn.createStub_", "stub", "->"], "reason": {
        "ExtensionValidationFailed": {"reason": "the result leaves 1004 required fields for the mock to make up; "
                                                "at most 1000 may be left out"}}}]}}


def test_a_large_verification_neither_takes_long_nor_blocks_other_calls():
    """Matching a long array against a long recorded one is linear, and done outside the mock's lock."""
    with serving(mocking.service(calculator.entries())) as server:
        connection, other = Connection(server.url), Connection(server.url)
        connection.call([{}, {"fn.deleteVariables": {"names": ["a"] * 99_999 + ["z"]}}])
        started = time.perf_counter()
        verify = threading.Thread(target=connection.call, args=(
            [{}, {"fn.verify_": {"call": {"fn.deleteVariables": {"names": ["z"] * 100_000}}}}],))
        verify.start()
        assert other.call([{}, ADD])[1]["Ok_"]
        verify.join()
        assert time.perf_counter() - started < 5


def test_answers_listing_recorded_calls_keep_the_newest_megabyte_and_count_the_rest(monkeypatch):
    """However many calls were recorded, fn.verify_ and fn.verifyNoMoreInteractions_ answer
    with at most MAX_LISTED bytes of them, the newest, and say how many older ones are left out."""
    monkeypatch.setattr(handlers, "MAX_LISTED", 10_000)
    with serving(mocking.service(calculator.entries())) as server:
        connection = Connection(server.url)
        body = lambda request: connection.call([{}, request])[1]
        for n in range(30):  # each about 1 kB
            body({"fn.deleteVariables": {"names": [str(n), "x" * 1000]}})
        reason = body({"fn.verify_": {"call": {"fn.add": {}}}})["ErrorVerificationFailure"]["reason"]
        listed = reason["TooFewMatchingCalls"]["allCalls"]
        assert [call["fn.deleteVariables"]["names"][0] for call in listed] == [str(n) for n in range(21, 30)]
        assert reason["TooFewMatchingCalls"]["omittedCalls!"] == 21
        unverified = body({"fn.verifyNoMoreInteractions_": {}})["ErrorVerificationFailure"]
        assert len(unverified["additionalUnverifiedCalls"]) == 9 and unverified["omittedCalls!"] == 21
        assert body({"fn.verify_": {"call": {"fn.deleteVariables": {}}}}) == OK
        assert body({"fn.verifyNoMoreInteractions_": {}}) == OK


def test_an_answer_listing_calls_stays_within_the_bound_as_json(monkeypatch):
    """Calls that are small as MessagePack and four times larger as JSON (empty strings): the bound is
    that of the JSON answer (a 93-byte fn.verify_ once answered 1.6 MB, where 1 MiB is the bound)."""
    monkeypatch.setattr(handlers, "MAX_LISTED", 10_000)
    with serving(mocking.service(calculator.entries())) as server:
        connection = Connection(server.url)
        for _ in range(20):
            connection.call([{}, {"fn.deleteVariables": {"names": [""] * 500}}])
        status, _, data = connection.post(b'[{}, {"fn.verify_": {"call": {"fn.add": {}}}}]')
        assert status == 200 and 8_000 < len(data) <= 10_000 + 200


SELECTING = [
    {"fn.test": {"value!": "struct.Value"}, "->": [{"Ok_": {"value!": "struct.Value"}}]},
    {"struct.Value": {"sel!": "_ext.Select_", "n!": "integer"}},
    {"fn.hidden": {}, "->": [{"Ok_": {"n": "integer"}}], "$internal": True},
]


def test_selection_fields_are_checked_kept_and_generated():
    """A selection field is checked against the call's function, kept in stubs, and generated."""
    with serving(mocking.service(SELECTING)) as server:
        connection = Connection(server.url)
        # the first generated answer, the same as the other implementation's for seed 0
        assert connection.call([{}, {"fn.test": {"value!": {"sel!": {}}}}])[1] == {"Ok_": {"value!": {"n!": 35766321}}}
        refused = connection.call([{}, stub({"fn.test": {}}, {"Ok_": {"value!": {"sel!": None}}})])[1]
        assert refused == {"ErrorInvalidRequestBody_": {"cases": [{
            "path": ["fn.createStub_", "stub", "->", "Ok_", "value!", "sel!"],
            "reason": {"TypeUnexpected": {"actual": {"Null": {}}, "expected": {"Object": {}}}}}]}}
        selection = {"->": {"Ok_": []}}  # checked against fn.createStub_, the request's function
        assert connection.call([{}, stub({"fn.test": {}}, {"Ok_": {"value!": {"sel!": selection}}})])[1] == OK
        assert connection.call([{}, {"fn.test": {}}])[1] == {"Ok_": {"value!": {"sel!": selection}}}


def test_a_loaded_schema_can_be_mocked_and_internal_annotated_functions_are_answered():
    """mocking.service() takes a Schema too; a $internal function is the service's own, so it is mocked."""
    service = mocking.service(load(SELECTING))
    with serving(service) as server:
        connection = Connection(server.url)
        assert list(connection.call([{}, {"fn.hidden": {}}])[1]) == ["Ok_"]
        assert connection.call([{}, {"fn.verify_": {"call": {"fn.hidden": {}}}}])[1] == OK


def test_matching_a_call_against_its_stubs_stays_within_the_stated_memory_factor():
    """The README's factor for a mock: a 64 KiB call of objects matched against a stub of the same
    objects in another order (which works out a canonical form of each) costs at most 90x its bytes."""
    service = mocking.service(Path(__file__).parent.parent / "conformance" / "testbed.json")
    objects = [{"a": i, "b": [i]} for i in range(2600)]
    service.handle(json.dumps([{}, stub({"fn.echo": {"any!": objects[::-1]}}, OK)]).encode())
    data = json.dumps([{}, {"fn.echo": {"any!": objects}}]).encode()
    reply, peak = handled_with_peak(service, data)
    assert reply.result == "Ok_" and len(data) > 60_000 and peak / len(data) <= 90


def test_a_result_too_large_to_make_up_is_no_matching_stub_and_a_stub_answers_it():
    """Three levels of 60 required fields make a smallest result of 219,660 values, over the
    budget of one answer: the mock says so (ErrorNoMatchingStub_) rather than make it."""
    entries = [{"fn.wide": {}, "->": [{"Ok_": {"w!": "struct.W"}}]}, {"fn.wider": {}, "->": [{"Ok_": {"w": "struct.W"}}]},
               {"struct.W": {f"f{i}": "struct.V" for i in range(60)}},
               {"struct.V": {f"v{i}": "struct.U" for i in range(60)}}, {"struct.U": {f"u{i}": "integer" for i in range(60)}}]
    service = mocking.service(entries)
    answer = lambda message: json.loads(service.handle(json.dumps(message).encode()).data)[1]
    assert answer([{}, {"fn.wide": {}}]) == OK  # w! is left out: it cannot be paid for
    assert answer([{}, {"fn.wider": {}}]) == {"ErrorNoMatchingStub_": {}}
    assert answer([{}, {"fn.createStub_": {"stub": {"fn.wider": {}, "->": {"Ok_": {"w": {}}}}}}]) == OK
    assert answer([{}, {"fn.wider": {}}]) == {"ErrorNoMatchingStub_": {}}  # its 60 missing fields cannot either


@pytest.mark.parametrize("shape", ["endless 100 Continue", "headers"])
def test_fetching_the_schema_ends_within_the_wait_however_the_server_drips(shape):
    started = time.monotonic()
    result = run("--schema-url", dripping(shape), "--wait", "1")
    assert result.returncode == 2 and time.monotonic() - started < 4  # a second's wait, and Python's start
    assert result.stderr.startswith("python -m reference.mock: error: ") and "did not answer within 1" in result.stderr


def test_a_server_that_is_down_is_mocked_from_the_schema_it_gave_before(tmp_path):
    """--schema-url with the server gone: the cached copy is used, and a line says so."""
    cache = tmp_path / "calculator.json"
    with serving(calculator.service()) as live:
        url = live.url
        start_mock("--schema-url", url, "--cache", str(cache)).stop()
    with refusing(live.server_address[1]) as url:
        mocked = start_mock("--schema-url", url, "--cache", str(cache), "--wait", "0.2")
    try:
        assert mocked.banner[-2].startswith(f"cannot reach {url}: ")
        assert f"(waited 0.2 s): using the schema saved in {cache} on {time.strftime('%Y-%m-%d')} " in mocked.banner[-2]
        assert mocked.connection.call([{}, {"fn.add": {"x": "1", "y": 2}}])[1]["ErrorInvalidRequestBody_"]
    finally:
        mocked.stop()


CALCULATOR = Path(__file__).parent.parent / "conformance" / "calculator.json"


def test_stubs_are_loaded_from_a_folder_at_start_and_listed(tmp_path):
    """--stubs DIR: each file a stub, fn.createStub_'s arguments, or an array of them, checked like
    fn.createStub_; fn.listStubs_ and fn.listCalls_ show what the mock holds."""
    folder = tmp_path / "stubs"
    folder.mkdir()
    (folder / "a.json").write_text(json.dumps({"fn.add": {"x": 1}, "->": {"Ok_": {"result": 100}}}))
    (folder / "b.json").write_text(json.dumps([{"stub": {"fn.add": {"x": 2}, "->": {"Ok_": {"result": 200}}},
                                                "count!": 1}]))
    mocked = start_mock("--schema-file", str(CALCULATOR), "--stubs", str(folder))
    try:
        assert mocked.banner[-2] == f"Loaded 2 stubs from {folder}\n"
        assert mocked.connection.call([{}, {"fn.add": {"x": 1, "y": 5}}])[1] == {"Ok_": {"result": 100}}
        assert mocked.connection.call([{}, {"fn.listStubs_": {}}])[1] == {"Ok_": {"stubs": [
            {"stub": {"fn.add": {"x": 1}, "->": {"Ok_": {"result": 100}}}, "strictMatch!": False},
            {"stub": {"fn.add": {"x": 2}, "->": {"Ok_": {"result": 200}}}, "strictMatch!": False, "count!": 1}]}}
        [recorded] = mocked.connection.call([{}, {"fn.listCalls_": {}}])[1]["Ok_"]["calls"]
        assert recorded == {"call": {"fn.add": {"x": 1, "y": 5}}, "headers": {}, "stub!": {"fn.add": {"x": 1}},
                            "at": recorded["at"]} and abs(recorded["at"] / 1000 - time.time()) < 60
    finally:
        mocked.stop()
    (folder / "c.json").write_text(json.dumps({"fn.add": {"x": "one"}, "->": {"Ok_": {}}}))
    refused = run("--schema-file", str(CALCULATOR), "--stubs", str(folder))
    assert refused.returncode == 2
    assert refused.stderr == f"python -m reference.mock: error: {folder / 'c.json'}:1:13: at fn.add.x: " \
                             "expected Number, found String\n"


@pytest.mark.parametrize("text, said", [
    ('{"stub": {"fn.add": {"x": 1}, "->": {"Ok_": {}}},\n "strictmatch": true}', ["2:2: at strictmatch: no such "
                                                                                  'field; did you mean "strictMatch!"?']),
    ('[{"fn.add": {}, "->": {"Ok_": {}}},\n {"fn.ad": {}, "->": {"Ok_": {}}}]', ['2:3: at fn.ad: no such function; '
                                                                               'did you mean "fn.add"?']),
    ('{"fn.add": {"x": true}, "->": {"Ok_": {"reslt": 3}}}', ["1:13: at fn.add.x: expected Number, found Boolean",
                                                              '1:40: at ->.Ok_.reslt: no such field; did you mean '
                                                              '"result"?']),
])
def test_every_problem_of_a_stub_file_is_a_line_that_says_where_and_what(tmp_path, text, said):
    (tmp_path / "a.json").write_text(text)
    refused = run("--schema-file", str(CALCULATOR), "--stubs", str(tmp_path))
    assert refused.returncode == 2
    assert refused.stderr.removeprefix("python -m reference.mock: error: ").splitlines() == [
        f"{tmp_path / 'a.json'}:{line}" for line in said]


def test_calls_recorded_from_a_live_server_are_answered_again_without_it(tmp_path, calculator_url):
    """--record URL --stubs DIR saves each answer as a stub file, with the headers that tell callers
    apart, the same call in the same file (2,000 identical calls once made 2,000 files); a mock started on
    those stubs answers each call as it was answered, each user with that user's data, and others with
    the nearest recording."""
    folder, cache = tmp_path / "recorded", tmp_path / "api.json"
    ann, bob = ({"@auth_": {"Ephemeral": {"username": name}}} for name in ("ann", "bob"))
    calls = [({}, {"fn.add": {"x": 1, "y": 2}}), ({}, {"fn.evaluate": {"expression": {"Constant": {"value": 4}}}}),
             (ann, {"fn.getVariables": {}}), (bob, {"fn.getVariables": {}})]
    with Client(calculator_url) as live:
        live.call("fn.saveVariable", {"name": "a", "value": 1}, ann)
        live.call("fn.saveVariable", {"name": "b", "value": 2}, bob)
    recorder = start_mock("--record", calculator_url, "--stubs", str(folder), "--cache", str(cache))
    try:
        answers = [recorder.connection.call([headers, call])[1] for headers, call in calls]
        for _ in range(20):
            assert recorder.connection.call([{}, ADD])[1] == {"Ok_": {"result": 3}}
    finally:
        recorder.stop()
    assert answers[2] != answers[3] and len(list(folder.iterdir())) == 4
    assert all(re.fullmatch(r"fn\.\w+-[0-9a-f]{16}\.json", path.name) for path in folder.iterdir())
    replay = start_mock("--schema-file", str(cache), "--stubs", str(folder), "--no-generation")
    try:
        assert replay.banner[0] == f"Loaded 4 stubs from {folder}\n"
        assert [replay.connection.call([headers, call])[1] for headers, call in calls] == answers
        missed = replay.connection.call([{}, {"fn.add": {"x": 1, "y": 7}}])[1]["ErrorNoMatchingStub_"]
        assert missed["differences!"] == ["y: the stub has 2, the call 7"]
        stranger = {"@auth_": {"Ephemeral": {"username": "eve"}}}
        missed = replay.connection.call([stranger, {"fn.getVariables": {}}])[1]["ErrorNoMatchingStub_"]
        assert missed["differences!"][0].startswith('header @auth_: the stub has {"Ephemeral": {"username": "')
    finally:
        replay.stop()


def test_a_recording_keeps_within_its_bounds_and_says_so_once(tmp_path, calculator_url, caplog):
    folder = tmp_path / "recorded"
    folder.mkdir()
    recorder = relay.Relay(calculator_url, folder, most=(3, 1_000_000))
    with caplog.at_level(logging.WARNING, logger="reference"):
        for x in range(10):
            recorder("fn.add", {"x": x, "y": 1}, {})
    assert len(list(folder.iterdir())) == 3
    assert [r.getMessage() for r in caplog.records] == [
        f"the recording in {folder} holds 3 stub files or 1000000 bytes already: no more is saved"]


class Wrong(http.server.BaseHTTPRequestHandler):
    """A server that answers fn.api_ with the calculator's schema and fn.add with a text result."""

    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        body = ({"Ok_": {"api": json.loads(CALCULATOR.read_text())}} if "fn.api_" in request[1] else
                {"Ok_": {"result": "three"}})
        data = json.dumps([{}, body]).encode()
        respond(self, data)

    def log_message(self, *args):
        pass


def test_a_validating_proxy_logs_answers_outside_the_server_s_schema_and_checks_them_when_asked(tmp_path):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Wrong)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    proxy = start_mock("--proxy", f"http://127.0.0.1:{server.server_port}/api", "--cache", str(tmp_path / "api.json"))
    try:
        assert proxy.connection.call([{}, ADD])[1] == {"Ok_": {"result": "three"}}
        checked = proxy.connection.call([{"@check": True}, ADD])[1]
        assert checked == {"ErrorInvalidResponseBody_": {"cases": [{"path": ["Ok_", "result"], "reason": {
            "TypeUnexpected": {"actual": {"String": {}}, "expected": {"Number": {}}}}}]}}
        assert proxy.connection.call([{}, {"fn.add": {"x": "1", "y": 2}}])[1]["ErrorInvalidRequestBody_"]
    finally:
        proxy.process.terminate()
        log = proxy.process.communicate(timeout=10)[1]
        server.shutdown()
    assert "WARNING fn.add answered outside its own schema: [{'path': ['Ok_', 'result']" in log


@pytest.mark.parametrize("make, message", [
    (lambda path: os.mkfifo(path), "{path}: not a regular file"),  # which would never end
    (lambda path: path.symlink_to("/dev/zero"), "{path}: not a regular file"),  # nor this one
    (lambda path: path.write_text("[" * 100_000 + "]" * 100_000), "{path}: nests arrays and objects deeper than 1,024 "
                                                                 "levels"),
    (lambda path: path.write_bytes(b'{"fn.add": {}, "->": {"Ok_": {"result": "\xe9"}}}'),
     "{path}: not UTF-8 text (byte 41 is not)"),
    (lambda path: path.write_text("{"), "{path}: not JSON: Expecting property name enclosed in double quotes "
                                        "(line 1, column 2)"),
])
def test_a_stub_file_that_cannot_be_read_is_one_line_and_exit_2(tmp_path, make, message):
    """Every file is read only if it is a regular file of bounded size, and parsed within bounds."""
    folder = tmp_path / "stubs"
    folder.mkdir()
    make(folder / "a.json")
    started_at = time.monotonic()
    refused = run("--schema-file", str(CALCULATOR), "--stubs", str(folder))
    assert time.monotonic() - started_at < 10 and refused.returncode == 2, refused.stderr
    assert refused.stderr == f"python -m reference.mock: error: {message.format(path=folder / 'a.json')}\n"


def test_the_mock_is_made_for_wsgi_and_asgi_servers_from_the_environment(tmp_path, monkeypatch):
    """MOCK_SCHEMA and MOCK_STUBS name the files; uvicorn serves the mock as python -m reference.mock does."""
    monkeypatch.delenv("MOCK_SCHEMA", raising=False)
    with pytest.raises(SystemExit, match=r"^reference.mock: error: set MOCK_SCHEMA to the schema's file or directory"):
        mock.asgi()
    (tmp_path / "stubs").mkdir()
    (tmp_path / "stubs" / "add.json").write_text(json.dumps({"fn.add": {"x": 1}, "->": {"Ok_": {"result": 100}}}))
    monkeypatch.setenv("MOCK_SCHEMA", str(CALCULATOR))
    monkeypatch.setenv("MOCK_STUBS", str(tmp_path / "stubs"))
    assert callable(mock.wsgi())
    with uvicorn_serving(mock.asgi()) as url:
        assert Connection(url).call([{}, {"fn.add": {"x": 1, "y": 5}}])[1] == {"Ok_": {"result": 100}}
        assert list(Connection(url).call([{}, {"fn.add": {"x": "1"}}])[1]) == ["ErrorInvalidRequestBody_"]
    (tmp_path / "stubs" / "add.json").write_text('{"fn.ad": {}, "->": {"Ok_": {}}}')
    with pytest.raises(SystemExit, match=r'^reference.mock: error: .*add.json:1:2: at fn.ad: no such function; did you mean "fn.add"\?$'):
        mock.wsgi()


class Upstream(http.server.BaseHTTPRequestHandler):
    """A server of the calculator's schema that answers calls as its server's `answering(request)` says:
    message bytes, or None for never (it holds the connection for a minute)."""

    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if "fn.api_" in request[1]:
            data = json.dumps([{}, {"Ok_": {"api": json.loads(CALCULATOR.read_text())}}]).encode()
        else:
            data = self.server.answering(request)
            if data is None:
                time.sleep(60)
                return
        respond(self, data)

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def upstream(answering):
    """An Upstream on a free port, answering as `answering` says; yield its URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    server.daemon_threads, server.answering = True, answering
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/api"
    finally:
        server.shutdown()
        server.server_close()


def relaying(url, timeout=30.0):
    """A validating proxy of the calculator that relays to `url`, made as python -m reference.mock --proxy does."""
    return mocking.service(CALCULATOR, proxy=True, relay=relay.Relay(url, timeout=timeout))


def test_a_relayed_answer_is_read_within_its_bound_and_decoded_one_at_a_time(monkeypatch):
    """An upstream answer of 60 MiB is refused unread (three of them took the mock to 3.8 GiB, each caller
    ErrorUnknown_); those within the bound are decoded one at a time, since decoding costs ~60x."""
    huge = b'[{}, {"Ok_": {"result": [' + b"[]," * (20 * 1024 * 1024) + b"[]]}}]"
    with upstream(lambda request: huge) as url, serving(relaying(url)) as proxy:
        with ThreadPoolExecutor(3) as pool:
            answers = list(pool.map(lambda _: Connection(proxy.url).call([{}, ADD])[1], range(3)))
    assert answers == [{"ErrorRelayFailed_": {"reason": f"{url} answered more than {relay.MAX_RELAYED} bytes, the "
                                                        "most this client reads (max_response)"}}] * 3
    decoding, most, message = [0], [0], http_client.Client._message

    def counted(self, data):
        decoding[0] += 1
        most[0] = max(most[0], decoding[0])
        time.sleep(0.05)
        try:
            return message(self, data)
        finally:
            decoding[0] -= 1
    monkeypatch.setattr(http_client.Client, "_message", counted)
    large = json.dumps([{}, {"Ok_": {"result": 1, "pad": "x" * 100_000}}]).encode()
    with upstream(lambda request: large) as url, serving(relaying(url)) as proxy:
        with ThreadPoolExecutor(6) as pool:
            answers = list(pool.map(lambda _: Connection(proxy.url).call([{}, ADD])[1], range(6)))
    assert answers == [{"Ok_": {"result": 1, "pad": "x" * 100_000}}] * 6 and most == [1]


def test_an_upstream_that_never_answers_holds_no_place_a_newcomer_needs(caplog):
    """A hundred calls relayed to a server that never answers: at most QUEUE wait on it, the others are told at
    once, each in one line of the log without a traceback, and a newcomer's fn.ping_ is answered all along
    (0 of 10 before: every place waited for 10 s)."""
    with caplog.at_level(logging.WARNING, logger="reference"), upstream(lambda request: None) as url, \
            serving(relaying(url, timeout=3)) as proxy:
        with ThreadPoolExecutor(100) as pool:
            waiting = [pool.submit(lambda: Connection(proxy.url).call([{}, ADD])[1]) for _ in range(100)]
            time.sleep(1)
            pings = [Connection(proxy.url, "127.0.0.2").post(b'[{}, {"fn.ping_": {}}]')[0] for _ in range(10)]
            answers = [future.result() for future in waiting]
    assert pings == [200] * 10
    reasons = [answer["ErrorRelayFailed_"]["reason"] for answer in answers]
    assert reasons.count(f"{url} did not answer within 3 s") == admission.QUEUE
    assert reasons.count(f"{admission.QUEUE} calls are relayed to {url} already; try again soon") == 100 - admission.QUEUE
    assert not [r for r in caplog.records if r.exc_info] and len(caplog.records) == 100


def test_an_unmatched_call_is_written_out_once_however_many_stubs_it_is_compared_with(monkeypatch):
    """A 1 MB call no stub of 1,000 matches: its value is written as JSON for the nearest stub's differences
    once, not once for each stub (2 to 5 s a call before), and once more for the log."""
    written, as_json = [], handlers.as_json
    monkeypatch.setattr(handlers, "as_json", lambda value: written.append(len(text := as_json(value))) or text)
    service = mocking.service(calculator.entries(), options=mocking.Options(generation=False))
    for i in range(1000):
        service.handle(json.dumps([{}, stub({"fn.deleteVariables": {"names": [f"v{i}"]}}, OK)]).encode())
    call = {"fn.deleteVariables": {"names": [f"name{i}" for i in range(100_000)]}}
    answer = json.loads(service.handle(json.dumps([{}, call]).encode()).data)[1]
    assert answer["ErrorNoMatchingStub_"]["differences!"][0].startswith('names: the stub has ["v999"], the call ["name0"')
    assert sum(size > 100_000 for size in written) == 2


def test_stubs_win_over_the_server_a_proxy_relays_to_and_unsafe_goes_on_to_it():
    """WireMock's way: a stub that matches answers, and the rest go on, @unsafe_ with them."""
    answering = lambda request: json.dumps([{}, {"Ok_": {"result": 1 if "@unsafe_" in request[0] else 0}}]).encode()
    with upstream(answering) as url:
        proxy = relaying(url)
        proxy.handle(json.dumps([{}, stub({"fn.add": {"x": 7}}, {"Ok_": {"result": 700}})]).encode())
        answer = lambda headers, call: json.loads(proxy.handle(json.dumps([headers, call]).encode()).data)[1]
        assert answer({}, {"fn.add": {"x": 7, "y": 1}}) == {"Ok_": {"result": 700}}
        assert answer({}, ADD) == {"Ok_": {"result": 0}}
        assert answer({"@unsafe_": True}, ADD) == {"Ok_": {"result": 1}}


def test_a_stub_file_may_hold_its_options_beside_the_call_and_every_bad_file_is_told(tmp_path):
    """The form the README and --help show, options beside the call, loads; each file that is wrong is a
    line of its own (only the first was told before)."""
    folder = tmp_path / "stubs"
    folder.mkdir()
    ann = {"Ephemeral": {"username": "a"}}
    (folder / "a.json").write_text(json.dumps({"fn.add": ADD["fn.add"], "->": {"Ok_": {"result": 9}}, "@auth_": ann,
                                               "strictMatch!": True, "count!": 2}))
    service = mocking.service(calculator.entries())
    assert mock.load_stubs(service, folder) == 1
    [listed] = json.loads(service.handle(b'[{}, {"fn.listStubs_": {}}]').data)[1]["Ok_"]["stubs"]
    assert listed == {"stub": {**ADD, "->": {"Ok_": {"result": 9}}, "@auth_": ann}, "strictMatch!": True, "count!": 2}
    answer = lambda headers: json.loads(service.handle(json.dumps([headers, ADD]).encode()).data)[1]
    assert answer({"@auth_": ann}) == {"Ok_": {"result": 9}} and answer({}) != {"Ok_": {"result": 9}}
    (folder / "b.json").write_text('{"fn.add": {"x": "one"}, "->": {"Ok_": {}}}')
    (folder / "c.json").write_text('{"fn.add": {}, "->": {"Ok_": {}}, "count!": "two"}')
    (folder / "d.json").write_text("{")
    with pytest.raises(ValueError) as raised:
        mock.load_stubs(mocking.service(calculator.entries()), folder)
    assert str(raised.value).splitlines() == [
        f"{folder / 'b.json'}:1:13: at fn.add.x: expected Number, found String",
        f"{folder / 'c.json'}:1:35: at count!: expected Integer, found String",
        f"{folder / 'd.json'}: not JSON: Expecting property name enclosed in double quotes (line 1, column 2)"]


def test_a_glob_made_to_be_slow_is_taken_as_no_match_within_the_matching_budget(caplog):
    """A stub comes from the network: a glob whose pieces would be searched for at every place of a long
    string costs no more than the steps matching may take (about 16 a byte), and the log says so."""
    glob = {"Glob": {"pattern": "*" + "a?" * 126 + "b*"}}
    with serving(mocking.service(calculator.entries())) as server:
        connection = Connection(server.url)
        for _ in range(100):
            assert connection.call([{}, stub({"fn.getVariable": {"name": ""}, "match!": {"name": glob}}, OK)])[1] == OK
        with caplog.at_level(logging.WARNING, logger="reference"):
            answer = connection.call([{}, {"fn.getVariable": {"name": "a" * 1_000_000}}])[1]
    assert "Ok_" in answer and "a glob of a stub's match! would take over 16 steps per byte" in caplog.text

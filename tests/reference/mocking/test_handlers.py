"""The mock (mocking/handlers.py) over real sockets: the live server's schema, stubs, verification,
generated values, and what it keeps, within its bounds."""

import json
import logging
import threading
import time
import zlib

import pytest

from reference import load, mocking, protocol
from reference.mocking import handlers, matching
from reference.services import calculator
from reference.transports.http_client import Client
from tests.support import ROOT
from tests.support.mocks import ADD, OK, stub
from tests.support.servers import Connection, handled_with_peak, serving


@pytest.fixture(params=[None, protocol.Service], ids=["engine", "core"])
def mocked(request):
    """A connection to a fresh mock of the calculator, the engine room's or the core's (matching stubs by
    their definitions); `.call(body, headers)` returns the body."""
    with serving(mocking.service(calculator.entries(), kind=request.param)) as server:
        connection = Connection(server.url)
        connection.body = lambda body, headers=None: connection.call([headers or {}, body])[1]
        yield connection


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


def test_the_nearest_stub_s_differences_honour_its_patterns_and_name_one_that_fails():
    """A place a stub's match! covers differs only where the call breaks its pattern, and then says so."""
    with serving(mocking.service(calculator.entries(), options=mocking.Options(generation=False))) as server:
        connection = Connection(server.url)
        connection.call([{}, stub({"fn.saveVariable": {"name": "ann1", "value": 1},
                                   "match!": {"name": {"Glob": {"pattern": "ann*"}}}}, OK)])
        user = {"@auth_": {"Ephemeral": {"username": "near"}}}
        missed = connection.call([user, {"fn.saveVariable": {"name": "annabel", "value": 2}}])[1]["ErrorNoMatchingStub_"]
        assert missed["differences!"] == ["value: the stub has 1, the call 2"]  # (not name: "annabel" is ann*)
        missed = connection.call([user, {"fn.saveVariable": {"name": "bob", "value": 1}}])[1]["ErrorNoMatchingStub_"]
        assert missed["differences!"] == ['name: the call\'s "bob" does not match the stub\'s pattern '
                                          '{"Glob": {"pattern": "ann*"}}']


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
    with serving(mocking.service(EVERY_TYPE, options=mocking.Options(length=(0, 4)))) as server, \
            Client(server.url, timeout=60, **options) as client:  # (answers of up to 2 MB, on a busy machine too)
        for seed in range(seeds):
            client.call("fn.setRandomSeed_", {"seed": seed})
            headers, body = client.call("fn.all")
            assert list(body) == ["Ok_"], body
            assert isinstance(body["Ok_"]["y"], bytes) and len(json.dumps(body, default=repr)) < 2_000_000


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
    service = mocking.service(ROOT / "conformance" / "testbed.json")
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


def test_an_unmatched_call_is_written_out_once_however_many_stubs_it_is_compared_with(monkeypatch):
    """A 1 MB call no stub of 1,000 matches: its value is written as JSON for the nearest stub's differences
    once, not once for each stub (2 to 5 s a call before), and once more for the log."""
    written, as_json = [], handlers.as_json
    for module in (handlers, matching):  # (the log's, and the nearest stub's differences)
        monkeypatch.setattr(module, "as_json", lambda value: written.append(len(text := as_json(value))) or text)
    service = mocking.service(calculator.entries(), options=mocking.Options(generation=False))
    for i in range(1000):
        service.handle(json.dumps([{}, stub({"fn.deleteVariables": {"names": [f"v{i}"]}}, OK)]).encode())
    call = {"fn.deleteVariables": {"names": [f"name{i}" for i in range(100_000)]}}
    answer = json.loads(service.handle(json.dumps([{}, call]).encode()).data)[1]
    assert answer["ErrorNoMatchingStub_"]["differences!"][0].startswith('names: the stub has ["v999"], the call ["name0"')
    assert sum(size > 100_000 for size in written) == 2


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
    assert "Ok_" in answer and "a stub's match! would take over 16 steps per byte" in caplog.text
    assert caplog.text.count("WARNING") == 1  # (once for the call, not once for each of the 100 stubs)


def test_a_place_of_any_costs_what_it_copies_within_the_budget(caplog):
    """`{"Any": {}}` tests nothing, but the call is copied with the stub's value there: in a 200 KB call
    that is no free step either, and it is counted, so that many such stubs stop at the budget."""
    places = {f"names[{i}]": {"Any": {}} for i in range(50)}
    service = mocking.service(calculator.entries(), options=mocking.Options(generation=False))
    unmatched = {"fn.deleteVariables": {"names": ["x"] * 50 + ["never"]}, "match!": places}
    for _ in range(40):
        service.handle(json.dumps([{}, stub(unmatched, OK)]).encode())
    with caplog.at_level(logging.WARNING, logger="reference"):
        answer = json.loads(service.handle(json.dumps([{}, {"fn.deleteVariables": {
            "names": [f"n{i}" for i in range(40_000)]}}]).encode()).data)[1]
    assert "ErrorNoMatchingStub_" in answer and caplog.text.count("match! would take over 16 steps per byte") == 1


def test_a_call_may_ask_for_one_of_its_results_without_a_stub_as_prism_s_prefer_does():
    """@result_ names the result tag to generate (an error of the function's, to see a client cope); a tag the
    function lacks is a header case, and the log lists those it has; a matching stub still wins."""
    with serving(mocking.service(calculator.entries())) as server:
        connection = Connection(server.url)
        evaluate = {"fn.evaluate": {"expression": {"Constant": {"value": 1}}}}
        [(tag, fields)] = connection.call([{"@result_": "ErrorUnknownVariables"}, evaluate])[1].items()
        assert tag == "ErrorUnknownVariables" and all(type(name) is str for name in fields["unknownVariables"])
        assert connection.call([{"@result_": "ErrorUnavailable"}, ADD])[1] == {"ErrorUnavailable": {}}
        assert connection.call([{"@result_": "ErrorX"}, ADD])[1] == {"ErrorInvalidRequestHeaders_": {"cases": [
            {"path": ["@result_"], "reason": {"ObjectKeyDisallowed": {}}}]}}
        connection.call([{}, stub(ADD, {"Ok_": {"result": 7}})])
        assert connection.call([{"@result_": "ErrorUnavailable"}, ADD])[1] == {"Ok_": {"result": 7}}

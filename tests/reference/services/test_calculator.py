"""The calculator over HTTP: every function, namespaces, sessions, the tape, export and import."""

import base64
import json
import tracemalloc
import uuid

import msgpack
import pytest

from reference.protocol import codec
from reference.services import calculator
from reference.services.memory import Memory
from reference.transports import rules
from tests.support import ROOT
from tests.support.servers import Connection, serving

UNAUTHENTICATED = {"ErrorUnauthenticated_": {"message!": "Valid authentication is required."}}


def const(value):
    return {"Constant": {"value": value}}


def var(name):
    return {"Variable": {"name": name}}


def op(tag, left, right):
    return {tag: {"left": left, "right": right}}


@pytest.fixture
def call(connection, user):
    """Call a function in a fresh namespace; return the result body."""
    def call(function, arguments=None, headers=user):
        response_headers, body = connection.call([headers, {function: arguments or {}}])
        return body
    return call


def test_the_calculator_serves_the_schema_the_suite_ships():
    """reference/schemas/calculator.json, which a reader of reference/ has at hand, is the suite's own."""
    ours = (ROOT / "reference" / "schemas" / "calculator.json").read_bytes()
    assert ours == (ROOT / "conformance" / "calculator.json").read_bytes()
    assert calculator.entries() == json.loads(ours)


@pytest.mark.parametrize("x, y, result", [(1, 2, 3), (1.0, 2.0, 3.0), (1.5, 2.25, 3.75), (-1, 1, 0)])
def test_add(call, x, y, result):
    assert call("fn.add", {"x": x, "y": y}) == {"Ok_": {"result": result}}
    assert type(call("fn.add", {"x": x, "y": y})["Ok_"]["result"]) is type(result)


def test_add_touches_no_state_and_answers_while_another_call_holds_the_lock():
    """(fn.add took the calculator's lock, as each call that reads or writes its memory must.)"""
    service = calculator.service()
    with serving(service) as server, service.wrap.__self__.lock:
        assert Connection(server.url).call([{}, {"fn.add": {"x": 1, "y": 2}}]) == [{}, {"Ok_": {"result": 3}}]


def test_whole_numbers_past_64_bits_are_the_nearest_double_and_past_doubles_an_invalid_response(call):
    """Found by python -m conformance fuzz: 2**63 - 1 + 1 was answered ErrorInvalidResponseBody_."""
    assert call("fn.add", {"x": 2**63 - 1, "y": 1}) == {"Ok_": {"result": 2.0**63}}
    assert call("fn.evaluate", {"expression": {"Mul": {"left": {"Constant": {"value": 2**62}},
                                                       "right": {"Constant": {"value": -4}}}}})["Ok_"]["result"] == -2.0**64
    assert call("fn.add", {"x": 1e308, "y": 1e308}) == {"ErrorInvalidResponseBody_": {"cases": [
        {"path": ["Ok_", "result"], "reason": {"NumberOutOfRange": {}}}]}}


def test_variables(call):
    """Saved variables are read back, listed sorted by code point, overwritten and deleted."""
    assert call("fn.saveVariable", {"name": "b", "value": 2.5}) == {"Ok_": {}}
    assert call("fn.saveVariables", {"variables": {"c": 3, "A": -1, "a": 0.5}}) == {"Ok_": {}}
    assert call("fn.saveVariables", {"variables": {}}) == {"Ok_": {}}
    assert call("fn.getVariable", {"name": "b"}) == {"Ok_": {"variable!": {"name": "b", "value": 2.5}}}
    assert call("fn.getVariable", {"name": "nothing"}) == {"Ok_": {}}
    assert call("fn.getVariables") == {"Ok_": {"variables": [
        {"name": "A", "value": -1}, {"name": "a", "value": 0.5}, {"name": "b", "value": 2.5},
        {"name": "c", "value": 3}]}}
    assert call("fn.saveVariable", {"name": "b", "value": 7}) == {"Ok_": {}}
    assert call("fn.deleteVariable", {"name": "c"}) == {"Ok_": {}}
    assert call("fn.deleteVariable", {"name": "never"}) == {"Ok_": {}}
    assert call("fn.deleteVariables", {"names": ["A", "missing"]}) == {"Ok_": {}}
    assert call("fn.deleteVariables", {"names": []}) == {"Ok_": {}}
    assert call("fn.getVariables") == {"Ok_": {"variables": [{"name": "a", "value": 0.5},
                                                             {"name": "b", "value": 7}]}}


@pytest.mark.parametrize("expression, result", [
    (op("Div", const(6), const(3)), {"Ok_": {"result": 2.0, "saveResult": {
        "fn.saveVariable": {"name": "result", "value": 2.0}}}}),
    (op("Sub", const(1), const(3)), {"Ok_": {"result": -2, "saveResult": {
        "fn.saveVariable": {"name": "result", "value": -2}}}}),
    (op("Mul", op("Add", var("a"), const(1)), const(0.5)), {"Ok_": {"result": 5.5, "saveResult": {
        "fn.saveVariable": {"name": "result", "value": 5.5}}}}),
    (op("Add", var("zz"), op("Mul", var("yy"), var("zz"))),
     {"ErrorUnknownVariables": {"unknownVariables": ["zz", "yy"]}}),
    (op("Add", op("Div", const(1), const(0)), var("qq")), {"ErrorUnknownVariables": {"unknownVariables": ["qq"]}}),
    (op("Div", const(0), const(0)), {"ErrorCannotDivideByZero": {}}),
    (op("Div", const(1), op("Sub", var("a"), var("a"))), {"ErrorCannotDivideByZero": {}}),
    (op("Div", const(1), const(0.0)), {"ErrorCannotDivideByZero": {}}),
])
def test_evaluate(call, expression, result):
    """Unknown variables win over division by zero; computed zeros count."""
    call("fn.saveVariable", {"name": "a", "value": 10})
    assert call("fn.evaluate", {"expression": expression}) == result


def test_save_result_is_only_a_ready_made_call(call):
    call("fn.evaluate", {"expression": const(7)})
    assert call("fn.getVariable", {"name": "result"}) == {"Ok_": {}}


def test_the_tape_lists_newest_first_with_failures_recorded(call):
    """Every evaluation is recorded; failures with result 0.0 and successful false."""
    call("fn.saveVariable", {"name": "x", "value": 2})
    for expression in (op("Add", var("x"), const(3)), var("missing"), op("Div", const(1), const(0))):
        call("fn.evaluate", {"expression": expression})
    tape = call("fn.getPaperTape")["Ok_"]["tape"]
    assert [(e["expression"], e["result"], e["successful"]) for e in tape] == [
        (op("Div", const(1), const(0)), 0.0, False), (var("missing"), 0.0, False),
        (op("Add", var("x"), const(3)), 5, True)]
    assert all(type(e["timestamp"]) is int for e in tape)
    assert call("fn.getPaperTape", {"limit!": 1})["Ok_"]["tape"] == tape[:1]
    assert call("fn.getPaperTape", {"limit!": 0})["Ok_"]["tape"] == []
    assert call("fn.getPaperTape", {"limit!": -2})["Ok_"]["tape"] == tape[:1]
    assert call("fn.getPaperTape", {"limit!": 99})["Ok_"]["tape"] == tape


def test_namespaces_are_separate_and_calls_without_auth_share_one(connection):
    """Each Ephemeral username has its own variables; no @auth_ means one shared namespace."""
    alice = {"@auth_": {"Ephemeral": {"username": f"alice-{uuid.uuid4()}"}}}
    bob = {"@auth_": {"Ephemeral": {"username": f"bob-{uuid.uuid4()}"}}}
    name = f"shared-{uuid.uuid4()}"
    connection.call([alice, {"fn.saveVariable": {"name": "v", "value": 1}}])
    connection.call([{}, {"fn.saveVariable": {"name": name, "value": 2}}])
    assert connection.call([bob, {"fn.getVariables": {}}])[1] == {"Ok_": {"variables": []}}
    assert connection.call([alice, {"fn.getVariables": {}}])[1] == {"Ok_": {"variables": [{"name": "v", "value": 1}]}}
    assert connection.call([{}, {"fn.getVariable": {"name": name}}])[1] == {
        "Ok_": {"variable!": {"name": name, "value": 2}}}


def test_login_logout_flow(connection):
    """A session token reaches its user's namespace; logout checks the user and deletes the data."""
    username = f"alice-{uuid.uuid4()}"
    ephemeral = {"@auth_": {"Ephemeral": {"username": username}}}
    call = lambda headers, function, arguments: connection.call([headers, {function: arguments}])[1]
    assert call({}, "fn.logout", {"username": username}) == UNAUTHENTICATED
    assert call({}, "fn.logout", {"username": 5}) == UNAUTHENTICATED
    assert call(ephemeral, "fn.logout", {"username": username}) == UNAUTHENTICATED
    token = call({}, "fn.login", {"username": username})["Ok_"]["token"]
    assert len(base64.urlsafe_b64decode(token + "==")) >= 16
    assert call({}, "fn.login", {"username": username}) == {"ErrorUsernameAlreadyInUse": {}}
    session = {"@auth_": {"Session": {"token": token}}}
    assert call(session, "fn.saveVariable", {"name": "secret", "value": 42}) == {"Ok_": {}}
    assert call(ephemeral, "fn.getVariables", {}) == {"Ok_": {"variables": [{"name": "secret", "value": 42}]}}
    assert call(session, "fn.logout", {"username": "bob"}) == {"ErrorUnauthorized_": {
        "message!": "Session authentication must match the requested username."}}
    assert call(session, "fn.logout", {"username": username}) == {"Ok_": {}}
    assert call(session, "fn.getVariables", {}) == UNAUTHENTICATED
    assert call(ephemeral, "fn.getVariables", {}) == {"Ok_": {"variables": []}}
    assert "Ok_" in call({}, "fn.login", {"username": username})


def test_an_unknown_session_token_is_refused_where_a_namespace_is_used(connection):
    bogus = {"@auth_": {"Session": {"token": "bogus"}}}
    for function, arguments in [("fn.evaluate", {"expression": const(1)}), ("fn.getVariables", {}),
                                ("fn.export", {}), ("fn.logout", {"username": "x"})]:
        assert connection.call([{**bogus, "@id_": 3}, {function: arguments}]) == [{"@id_": 3}, UNAUTHENTICATED]
    assert connection.call([bogus, {"fn.add": {"x": 1, "y": 1}}])[1] == {"Ok_": {"result": 2}}


def test_export_and_import_round_trip(connection, user):
    """The blob is MessagePack of {variables, evaluations}; importing it replaces both."""
    call = lambda function, arguments, headers=user: connection.call([headers, {function: arguments}])
    call("fn.saveVariables", {"variables": {"i": 4, "f": 1.25}})
    call("fn.evaluate", {"expression": op("Add", var("i"), const(1))})
    headers, body = call("fn.export", {})
    assert headers == {"@base64_": {"Ok_": {"blob": True}}}
    blob = body["Ok_"]["blob"]
    data = msgpack.unpackb(base64.b64decode(blob))
    assert data["variables"] == {"i": 4, "f": 1.25} and data["evaluations"][0]["result"] == 5
    other = {"@auth_": {"Ephemeral": {"username": f"other-{uuid.uuid4()}"}}}
    call("fn.saveVariable", {"name": "gone", "value": 1}, other)
    assert call("fn.import", {"blob": blob}, other)[1] == {"Ok_": {}}
    assert call("fn.getVariables", {}, other)[1] == {"Ok_": {"variables": [
        {"name": "f", "value": 1.25}, {"name": "i", "value": 4.0}]}}
    assert call("fn.getPaperTape", {}, other)[1]["Ok_"]["tape"] == call("fn.getPaperTape", {})[1]["Ok_"]["tape"]


def pack(value):
    return base64.b64encode(msgpack.packb(value)).decode()


GOOD = {"expression": const(1), "result": 1, "timestamp": 100, "successful": True}


@pytest.mark.parametrize("blob, reason", [
    ("kgEC", "the blob is not a map with exactly the keys variables and evaluations"),
    ("", "the blob is not MessagePack"),
    (base64.b64encode(b"\xc1").decode(), "the blob is not MessagePack"),
    (pack({"variables": {}}), "the blob is not a map with exactly the keys variables and evaluations"),
    (pack({"variables": {"a": "x"}, "evaluations": []}), "variables is not a map of names to numbers"),
    (pack({"variables": {"a": True}, "evaluations": []}), "variables is not a map of names to numbers"),
    (pack({"variables": {}, "evaluations": {}}), "evaluations is not an array"),
    (pack({"variables": {}, "evaluations": [GOOD, {**GOOD, "timestamp": 1.5}]}),
     '["evaluations", 1, "timestamp"]: TypeUnexpected {"actual": {"Number": {}}, "expected": {"Integer": {}}}'),
    (pack({"variables": {}, "evaluations": [{"foo": 1}]}),
     '["evaluations", 0]: RequiredObjectKeyMissing {"key": "expression"}'),
])
def test_a_malformed_blob_gets_a_specific_error(call, blob, reason):
    """Import refuses what export never produces, saying why, and changes nothing."""
    call("fn.saveVariable", {"name": "kept", "value": 1})
    assert call("fn.import", {"blob": blob}) == {"ErrorInvalidBlob": {"reason": reason}}
    assert call("fn.getVariables") == {"Ok_": {"variables": [{"name": "kept", "value": 1}]}}


def deep(levels):
    expression = const(1)
    for _ in range(levels - 1):
        expression = op("Add", expression, const(1))
    return expression


def test_an_expression_500_levels_deep_is_evaluated_and_recorded(call):
    assert call("fn.evaluate", {"expression": deep(500)})["Ok_"]["result"] == 500
    [entry] = call("fn.getPaperTape")["Ok_"]["tape"]
    assert entry["expression"] == deep(500) and entry["successful"]
    assert msgpack.unpackb(base64.b64decode(call("fn.export")["Ok_"]["blob"]))["evaluations"][0]["result"] == 500


def test_a_deeper_expression_than_the_limit_is_a_clean_parse_failure(connection):
    body = connection.call([{}, {"fn.evaluate": {"expression": deep(600)}}])
    assert body == [{}, {"ErrorParseFailure_": {"reasons": [{"NestingTooDeep": {"limit": codec.MAX_DEPTH}}]}}]


def test_unavailable_rate_injects_service_wide_errors():
    """With rate 1, every calculator function answers ErrorUnavailable; built-ins do not."""
    service = calculator.service(unavailable_rate=1.0)
    reply = lambda function: json.loads(service.handle(json.dumps([{}, {function: {}}]).encode()).data)[1]
    assert reply("fn.getVariables") == {"ErrorUnavailable": {}}
    assert reply("fn.ping_") == {"Ok_": {}}


def limited(**limits):
    """Call, in-process, a calculator with small limits; `user` names an Ephemeral namespace."""
    service = calculator.service(**limits)

    def call(function, arguments, user=None, headers=None):
        headers = headers or ({"@auth_": {"Ephemeral": {"username": user}}} if user else {})
        return json.loads(service.handle(json.dumps([headers, {function: arguments}]).encode()).data)[1]
    return call


FULL = {"ErrorNamespaceFull": {"variables": 2, "bytes": 640 * 1024}}


def test_a_full_server_refuses_newcomers_and_keeps_everyone_s_data():
    """Namespaces and sessions beyond the limits are refused with ErrorUnavailable; nothing is forgotten."""
    call = limited(max_namespaces=2, max_sessions=1)
    token = call("fn.login", {"username": "a"})["Ok_"]["token"]
    session = {"@auth_": {"Session": {"token": token}}}
    assert call("fn.saveVariable", {"name": "v", "value": 1}, headers=session) == {"Ok_": {}}
    assert call("fn.saveVariable", {"name": "v", "value": 2}, "b") == {"Ok_": {}}
    for user in ("c", "d"):  # more identities: refused, however many
        assert call("fn.saveVariable", {"name": "v", "value": 3}, user) == {"ErrorUnavailable": {}}
        assert call("fn.getVariables", {}, user) == {"Ok_": {"variables": []}}  # reading creates nothing
        assert call("fn.login", {"username": user}) == {"ErrorUnavailable": {}}
    assert call("fn.getVariables", {}, headers=session) == {"Ok_": {"variables": [{"name": "v", "value": 1}]}}
    assert call("fn.getVariables", {}, "b") == {"Ok_": {"variables": [{"name": "v", "value": 2}]}}


def test_however_many_namespaces_are_made_calls_without_auth_always_work():
    """The shared namespace has its room from the start: others filling every limit take
    nothing from it, and it is never forgotten, not even when a user named "" logs out."""
    call = limited(max_namespaces=3, max_state=2 * 1024 * 1024)
    for user in ("a", "b", "c"):
        assert call("fn.saveVariable", {"name": "v" * 300_000, "value": 1}, user) == {"Ok_": {}}
    assert call("fn.saveVariable", {"name": "v", "value": 1}, "d") == {"ErrorUnavailable": {}}
    assert call("fn.saveVariables", {"variables": {"x" * 300_000: 1, "y" * 300_000: 2}}) == {"Ok_": {}}
    token = call("fn.login", {"username": ""})["Ok_"]["token"]
    session = {"@auth_": {"Session": {"token": token}}}
    assert call("fn.logout", {"username": ""}, headers=session) == {"Ok_": {}}
    assert len(call("fn.getVariables", {})["Ok_"]["variables"]) == 2


def test_idle_data_makes_room_for_newcomers(monkeypatch):
    """Once a namespace or session has gone unused for `idle` seconds, a newcomer may take its place."""
    clock = [1000.0]
    monkeypatch.setattr(calculator.time, "monotonic", lambda: clock[0])
    call = limited(max_namespaces=1, max_sessions=1, idle=60)
    call("fn.saveVariable", {"name": "v", "value": 1}, "old")
    call("fn.login", {"username": "old"})
    clock[0] += 30
    assert call("fn.saveVariable", {"name": "v", "value": 1}, "new") == {"ErrorUnavailable": {}}
    clock[0] += 31
    assert call("fn.saveVariable", {"name": "v", "value": 1}, "new") == {"Ok_": {}}
    assert call("fn.login", {"username": "new"})["Ok_"]
    assert call("fn.getVariables", {}, "old") == {"Ok_": {"variables": []}}


@pytest.mark.parametrize("limits, calls, expected", [
    ({"max_variables": 2}, [("fn.saveVariables", {"variables": {"a": 1, "b": 2}}), ("fn.saveVariable", {"name": "a", "value": 5})],
     [("fn.saveVariable", {"name": "c", "value": 3}), FULL]),
    ({"max_variables": 2}, [("fn.saveVariable", {"name": "a", "value": 5})],
     [("fn.saveVariables", {"variables": {"b": 0, "c": 3}}), FULL]),
    ({"max_variables": 2}, [], [("fn.import", {"blob": base64.b64encode(msgpack.packb(
        {"variables": {"x": 1, "y": 2, "z": 3}, "evaluations": []})).decode()}), FULL]),
    ({"namespace_bytes": 1000}, [("fn.saveVariable", {"name": "n" * 700, "value": 1})],
     [("fn.saveVariable", {"name": "m" * 200, "value": 1}), {"ErrorNamespaceFull": {"variables": 1000, "bytes": 1000}}]),
    ({"namespace_bytes": 1000}, [("fn.saveVariable", {"name": "n" * 700, "value": 1})],
     [("fn.evaluate", {"expression": {"Variable": {"name": "n" * 700}}}),
      {"Ok_": {"result": 1, "saveResult": {"fn.saveVariable": {"name": "result", "value": 1}}}}]),
    # the shared namespace's room (6,000 bytes and 700 of its own) is kept: 5,000 bytes are left
    ({"namespace_bytes": 6000, "max_state": 11_700}, [("fn.saveVariable", {"name": "n" * 3000, "value": 1})],
     [("fn.saveVariable", {"name": "m" * 2000, "value": 1}), {"ErrorUnavailable": {}}]),
])
def test_a_write_beyond_a_limit_is_refused_and_changes_nothing(limits, calls, expected):
    call = limited(**limits)
    for function, arguments in calls:
        assert "Ok_" in call(function, arguments, "u")
    before = call("fn.export", {}, "u")
    (function, arguments), result = expected
    assert call(function, arguments, "u") == result
    assert call("fn.export", {}, "u") == before


def test_the_tape_gives_up_its_oldest_evaluations_to_length_and_size_limits():
    call = limited(tape_length=3)
    for value in range(5):
        call("fn.evaluate", {"expression": const(value)}, "u")
    assert [e["result"] for e in call("fn.getPaperTape", {}, "u")["Ok_"]["tape"]] == [4, 3, 2]
    call = limited(namespace_bytes=1000)
    for value in range(20):
        assert "Ok_" in call("fn.evaluate", {"expression": const(value)}, "u")
    tape = call("fn.getPaperTape", {}, "u")["Ok_"]["tape"]
    assert 5 < len(tape) < 20 and tape[0]["result"] == 19
    assert call("fn.saveVariable", {"name": "n" * 800, "value": 1}, "u") == {"Ok_": {}}
    assert len(call("fn.getPaperTape", {}, "u")["Ok_"]["tape"]) < len(tape)  # the variable took its room


@pytest.mark.parametrize("variables, name, evaluations", [(20, "v{i}", 5), (2, "x" * 500 + "{i}", 5),
                                                       (1, "v", 0), (0, "", 50)])
def test_memory_held_is_counted_at_least_as_it_is_used(variables, name, evaluations):
    """The bytes a calculator counts cover the memory its state takes, so the limits hold in bytes."""
    service = calculator.Calculator(calculator.load(calculator.entries()), Memory())
    handlers, reserved = service.handlers(), service.memory.size  # the shared namespace's room, kept from the start
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for n in range(200):
        user = {"namespace": f"user-{n}"}
        if variables:
            handlers["fn.saveVariables"]({"variables": {name.format(i=i): float(i) for i in range(variables)}}, user)
        for _ in range(evaluations):
            handlers["fn.evaluate"]({"expression": {"Add": {"left": const(n), "right": const(1.5)}}}, user)
        handlers["fn.login"]({"username": f"user-{n}"}, {})
    used = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert used <= service.memory.size - reserved


def test_export_then_import_restores_exactly_what_was_exported():
    call = limited()
    call("fn.saveVariables", {"variables": {"i": 5, "big": 2**53 + 1, "f": 0.5, "\ud83d\ude00": 1}}, "u")
    call("fn.evaluate", {"expression": const(2**53 + 1)}, "u")
    exported = call("fn.export", {}, "u")["Ok_"]["blob"]
    assert call("fn.import", {"blob": exported}, "v") == {"Ok_": {}}
    for function in ("fn.getVariables", "fn.getPaperTape", "fn.export"):
        assert call(function, {}, "v") == call(function, {}, "u")
    assert {"name": "i", "value": 5} in call("fn.getVariables", {}, "v")["Ok_"]["variables"]


def product(*values):
    expression = const(values[0])
    for value in values[1:]:
        expression = {"Mul": {"left": expression, "right": const(value)}}
    return expression


HUGE = product(*[2**62] * 17)  # 2**1054: an integer beyond any float


@pytest.mark.parametrize("expression", [
    {"Add": {"left": HUGE, "right": const(0.5)}},
    {"Div": {"left": HUGE, "right": const(3)}},
    {"Div": {"left": HUGE, "right": {"Div": {"left": const(1), "right": const(2)}}}},
])
def test_numbers_too_large_for_a_float_are_out_of_range_not_a_crash(expression):
    """Huge intermediate results (an OverflowError in Python) are answered like 1e308 * 10."""
    call = limited()
    assert call("fn.evaluate", {"expression": expression}, "u") == {"ErrorInvalidResponseBody_": {"cases": [
        {"path": ["Ok_", "result"], "reason": {"NumberOutOfRange": {}}},
        {"path": ["Ok_", "saveResult", "fn.saveVariable", "value"], "reason": {"NumberOutOfRange": {}}}]}}
    assert call("fn.getPaperTape", {}, "u")["Ok_"]["tape"][0]["successful"] is False



def test_no_accepted_evaluation_makes_the_tape_unreadable(connection, user):
    """At every depth around the message's limit, whatever fn.evaluate accepts the tape sends back, in
    the shared namespace too (once, one evaluation locked everyone out of it until 1,000 more came)."""
    for headers in (user, {}):
        for levels in range(500, 520):
            connection.call([headers, {"fn.evaluate": {"expression": deep(levels)}}])
            tape = connection.call([headers, {"fn.getPaperTape": {"limit!": 1}}])[1]
            assert "Ok_" in tape, (levels, tape)


def test_an_import_holding_an_evaluation_the_tape_could_not_send_back_is_refused(call):
    """A blob is checked as the tape will be sent: an evaluation too deep for an answer is refused, and
    nothing of the blob is kept."""
    call("fn.evaluate", {"expression": deep(2)})
    exported = msgpack.unpackb(base64.b64decode(call("fn.export")["Ok_"]["blob"]))
    refused = []
    for levels in range(500, 511):  # (MessagePack packs up to 510 levels of expression)
        exported["evaluations"][0].update(expression=deep(levels), result=levels)
        imported = call("fn.import", {"blob": base64.b64encode(msgpack.packb(exported)).decode()})
        assert "Ok_" in call("fn.getPaperTape"), levels
        if "Ok_" not in imported:
            refused.append(levels)
            assert imported == {"ErrorInvalidBlob": {"reason": "evaluations[0] nests too deeply to be sent back on "
                                                               "a tape"}}, imported
    assert refused == list(range(refused[0], 511)) and refused[0] > 500


def test_a_full_namespace_exports_within_the_body_limit_and_imports_again_over_json():
    """Variables and tape filled to the namespace's limits: the export's JSON request to import it fits
    the 1 MiB body limit (it was 1.35 MB as base64 once, and got 413), and restores it all."""
    with serving(calculator.service()) as server:
        connection = Connection(server.url)
        owner, heir = ({"@auth_": {"Ephemeral": {"username": f"{who}-{uuid.uuid4().hex[:8]}"}}} for who in "ab")
        names = iter(f"{n:05d}" + "n" * 250 for n in range(10_000))
        while "Ok_" in connection.call([owner, {"fn.saveVariable": {"name": next(names), "value": 1.5}}])[1]:
            pass
        wide = op("Add", const(1.25), op("Mul", const(2.5), const(3.75)))
        for _ in range(1000):
            assert "Ok_" in connection.call([owner, {"fn.evaluate": {"expression": wide}}])[1]
        status, _, data = connection.post(json.dumps([owner, {"fn.export": {}}]).encode())
        blob = json.loads(data)[1]["Ok_"]["blob"]
        request = json.dumps([heir, {"fn.import": {"blob": blob}}]).encode()
        assert len(request) <= rules.MAX_BODY
        assert connection.call(json.loads(request))[1] == {"Ok_": {}}
        for function in ("fn.getVariables", "fn.getPaperTape"):
            assert connection.call([heir, {function: {}}]) == connection.call([owner, {function: {}}])

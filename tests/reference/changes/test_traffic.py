"""Recorded traffic replayed against a new schema: what a change touches in calls that really happened."""

import json
import re

import pytest

from reference import Client, Service, load, mocking
from reference.changes import traffic
from reference.changes.compatibility import compare
from reference.mocking import relay
from tests.support.servers import serving

OLD = [{"struct.Item": {"sku": "string", "price": "number", "note!": "string"}},
       {"fn.buy": {"item": "struct.Item", "count!": "integer"}, "->": [{"Ok_": {"order": "string"}}]},
       {"fn.get": {"sku": "string"}, "->": [{"Ok_": {"item!": "struct.Item", "stock": "integer"}}]}]
NEW = [{"struct.Item": {"sku": "string", "price": "integer", "note!": "string"}},
       {"fn.buy": {"item": "struct.Item"}, "->": [{"Ok_": {"order": "string"}}]},
       {"fn.get": {"sku": "string"}, "->": [{"Ok_": {"item!": "struct.Item", "stock": "number"}}]}]
CALLS = [{"fn.buy": {"item": {"sku": "a", "price": 2}}},  # refused by nothing
         {"fn.buy": {"item": {"sku": "b", "price": 2.5}}},  # price narrowed
         {"fn.buy": {"item": {"sku": "c", "price": 1}, "count!": 3}},  # count! removed
         {"fn.buy": {"item": {"sku": "d", "price": 0.5, "note!": "x"}, "count!": 1}},  # both
         {"fn.get": {"sku": "a"}}]
HANDLERS = {"fn.buy": lambda arguments, headers: {"Ok_": {"order": arguments["item"]["sku"]}},
            "fn.get": lambda arguments, headers: {"Ok_": {"item!": {"sku": arguments["sku"], "price": 1.5},
                                                          "stock": 3}}}


@pytest.fixture
def recorded(tmp_path):
    """The stub files a mock recording a live server of OLD saved for CALLS (python -m reference.mock --record)."""
    folder = tmp_path / "recorded"
    folder.mkdir()
    with serving(Service(load(OLD), HANDLERS)) as live:
        with serving(mocking.service(OLD, relay=relay.Relay(live.url, folder))) as recorder:
            with Client(recorder.url) as client:
                for call in CALLS:
                    [(name, arguments)] = call.items()
                    client.call(name, arguments, {"@user": "ann"})
    return folder


def test_each_finding_counts_the_recorded_calls_it_touches(recorded):
    comparison = compare(load(OLD), load(NEW))
    replay = traffic.Replay(traffic.read(recorded), comparison)
    touched = {rule: found.count for (rule, _), found in replay.touched.items()}
    assert touched == {"request-type-narrowed": 2, "request-field-removed": 2, "response-type-widened": 1}
    assert replay.refused.count == 3 and replay.affected()[0] == 4 and replay.affected()[1].function == "fn.buy"
    [(answered, case)] = replay.outside.first  # (the old server's item has a price of 1.5, which is no integer)
    assert answered.function == "fn.get" and case["path"] == ["Ok_", "item!", "price"]
    exchange, refusal = replay.refused.first[0]
    assert re.search(r"/fn\.buy-[0-9a-f]{16}\.json$", exchange.source)
    assert refusal["ErrorInvalidRequestBody_"]["cases"][0]["path"] == ["fn.buy", "item", "price"]
    assert replay.lines()[-1] == ("Breaking by the rules, 4 of 5 recorded calls affected (the first: "
                                  f"{replay.affected()[1].source}).")
    told = "\n".join(replay.lines())
    assert f"Requests the new schema would refuse: 3 of 5; the first, {exchange.source} (fn.buy): " in told
    assert f"Recorded answers outside the new schema's results: 1 of 5; the first, {answered.source} (fn.get): " in told


def test_a_compatible_change_touches_what_it_touches_and_affects_nothing(recorded):
    widened = [OLD[0], {"fn.buy": {"item": "struct.Item", "count!": "number", "gift!": "boolean"},
                        "->": [{"Ok_": {"order": "string"}}]}, OLD[2]]
    replay = traffic.Replay(traffic.read(recorded), compare(load(OLD), load(widened)))
    assert replay.refused.count == 0 and replay.affected() == (0, None)
    assert replay.lines()[-1] == "Compatible by the rules, 0 of 5 recorded calls affected."


def test_answers_outside_the_new_results_are_told(tmp_path):
    lines = tmp_path / "calls.jsonl"
    lines.write_text(json.dumps([[{}, {"fn.get": {"sku": "a"}}], [{}, {"Ok_": {"stock": 2.5}}]]) + "\n\n")
    narrowed = [*OLD[:2], {"fn.get": {"sku": "string"}, "->": [{"Ok_": {"item!": "struct.Item", "stock": "integer"}}]}]
    replay = traffic.Replay(traffic.read(lines), compare(load(OLD), load(narrowed)))
    [(exchange, case)] = replay.outside.first
    assert exchange.source == f"{lines}:1" and case["path"] == ["Ok_", "stock"]


def test_headers_recorded_are_checked_as_the_new_server_checks_them(tmp_path):
    """A request header whose type the new schema narrows refuses the calls that sent a wider value."""
    declared = [*OLD, {"headers.Trace": {"@trace": "number"}, "->": {}}]
    narrowed = [*OLD, {"headers.Trace": {"@trace": "integer"}, "->": {}}]
    lines = tmp_path / "calls.jsonl"
    lines.write_text("".join(json.dumps([[{"@trace": trace}, {"fn.get": {"sku": "a"}}], [{}, {"Ok_": {"stock": 1}}]])
                             + "\n" for trace in (1, 1.5, 2)))
    comparison = compare(load(declared), load(narrowed))
    replay = traffic.Replay(traffic.read(lines), comparison)
    assert {key: [e.source for e in found.first] for key, found in replay.touched.items()} == {
        ("request-type-narrowed", "headers.Trace.@trace"): [f"{lines}:2"]}


@pytest.mark.parametrize("text, said", [
    ('{"stub": {"fn.a": 1}}', 'not a recorded stub, {"stub": {"fn.X": {...}, "->": {...}}}'),
    ('[{"stub": {"fn.a": {}, "->": {}}}, 3]', 'not a recorded stub'),
    ("[1, 2]\n", "not a recorded stub"),
])
def test_a_stub_file_that_is_no_recording_is_one_line_saying_where(tmp_path, text, said):
    (tmp_path / "a.json").write_text(text)
    with pytest.raises(ValueError) as raised:
        list(traffic.read(tmp_path))
    assert str(raised.value).startswith(f"{tmp_path / 'a.json'}: {said}")


@pytest.mark.parametrize("line", ["[1, 2]", '[[{}, {"fn.a": {}}]]', '[[{}, {"fn.a": 1}], [{}, {}]]', "{"])
def test_a_line_that_is_no_exchange_is_one_line_saying_where(tmp_path, line):
    path = tmp_path / "calls.jsonl"
    path.write_text('[[{}, {"fn.a": {}}], [{}, {"Ok_": {}}]]\n' + line + "\n")
    with pytest.raises(ValueError) as raised:
        list(traffic.read(path))
    assert str(raised.value).startswith(f"{path}:2: ")


def test_a_path_that_does_not_exist_is_said():
    with pytest.raises(ValueError, match="^/nowhere/at/all: does not exist$"):
        list(traffic.read("/nowhere/at/all"))


SELECTING = [{"struct.Item": {"sku": "string", "price": "number", "note!": "string"}},
             {"fn.get": {"sku": "string"}, "->": [{"Ok_": {"item": "struct.Item", "stock!": "integer"}}]}]


def exchanges(tmp_path, *calls):
    """A file of JSON lines, one exchange for each (request headers, arguments of fn.get, Ok_ fields)."""
    path = tmp_path / "calls.jsonl"
    path.write_text("".join(json.dumps([[headers, {"fn.get": arguments}], [{}, {"Ok_": ok}]]) + "\n"
                            for headers, arguments, ok in calls))
    return path


@pytest.mark.parametrize("change, selection, finding", [
    (lambda text: text.replace("struct.Item", "struct.Product"), {"struct.Item": ["sku"]},
     ("selected-type-renamed", "struct.Item")),
    (lambda text: text.replace(', "note!": "string"', ""), {"struct.Item": ["note!"]},
     ("selected-field-removed", "struct.Item.note!")),
    (lambda text: text.replace(', "stock!": "integer"', ""), {"->": {"Ok_": ["stock!"]}},
     ("selected-field-removed", "fn.get -> Ok_.stock!")),
])
def test_a_selection_the_new_schema_refuses_is_told_by_the_rule_that_says_why(tmp_path, change, selection, finding):
    path = exchanges(tmp_path, ({"@select_": selection}, {"sku": "a"}, {"item": {"sku": "a"}}),
                     ({}, {"sku": "b"}, {"item": {"sku": "b", "price": 1}}))
    comparison = compare(load(SELECTING), load(json.loads(change(json.dumps(SELECTING)))))
    replay = traffic.Replay(traffic.read(path), comparison)
    assert [e.source for e, _ in replay.refused.first] == [f"{path}:1"] and replay.unexplained == {}
    assert {key: [e.source for e in found.first] for key, found in replay.touched.items() if found.count} == {
        finding: [f"{path}:1"]}
    assert replay.lines()[-1] == f"Breaking by the rules, 1 of 2 recorded calls affected (the first: {path}:1)."


def test_a_refused_call_no_rule_explains_is_a_breaking_finding_the_evidence_decides(recorded):
    comparison = compare(load(OLD), load(NEW))
    comparison.findings.clear()  # (rules that missed every change: the evidence alone decides)
    replay = traffic.Replay(traffic.read(recorded), comparison)
    [finding] = comparison.breaking()
    first = replay.refused.first[0][0].source
    assert (finding.rule, finding.element, finding.clients()) == ("recorded-call-refused", "fn.buy", ["call fn.buy"])
    assert finding.detail.startswith(f"3 recorded calls refused, the first {first}: "
                                     '{"ErrorInvalidRequestBody_": {"cases": [{"path": ["fn.buy", "item", "price"]')
    assert replay.lines()[-1] == ("Breaking by the recorded calls, which the rules call compatible, 3 of 5 recorded "
                                  f"calls affected (the first: {first}).")


def test_a_call_the_old_schema_refuses_too_is_no_evidence(tmp_path):
    path = exchanges(tmp_path, ({}, {"sku": 5}, {}), ({}, {"sku": "a"}, {"item": {"sku": "a", "price": 1}}))
    removed = [SELECTING[0], {"fn.get": {"sku": "string", "shop": "string"}, "->": SELECTING[1]["->"]}]
    replay = traffic.Replay(traffic.read(path), compare(load(SELECTING), load(removed)))
    assert replay.refused_before == 1 and [e.source for e, _ in replay.refused.first] == [f"{path}:2"]
    assert "Requests the old schema refuses too (no evidence either way): 1 of 2" in replay.lines()


def test_an_answer_a_selection_trimmed_is_inside_the_results_it_was_trimmed_from(tmp_path):
    trimmed = {"item": {"sku": "a"}}  # (no price: struct.Item's required field, dropped by the selection)
    selected = exchanges(tmp_path, ({"@select_": {"struct.Item": ["sku"]}}, {"sku": "a"}, trimmed))
    assert traffic.Replay(traffic.read(selected), compare(load(SELECTING), load(SELECTING))).outside.count == 0
    whole = exchanges(tmp_path, ({}, {"sku": "a"}, trimmed))
    [(_, case)] = traffic.Replay(traffic.read(whole), compare(load(SELECTING), load(SELECTING))).outside.first
    assert case["path"] == ["Ok_", "item"] and "RequiredObjectKeyMissing" in case["reason"]


def test_each_exchange_is_replayed_and_let_go_but_the_first_few_of_each_kind():
    """A folder of 932,000 exchanges took 2.7 GiB, each held until the end: now each is read, replayed and
    let go, and only the first MOST_KEPT of each kind are kept to show, with how many there were."""
    calls = (traffic.Exchange(f"calls:{n}", {}, "fn.buy", {"item": {"sku": "a", "price": 0.5}, "count!": n},
                              {"Ok_": {"order": "a"}}) for n in range(20_000))
    replay = traffic.Replay(calls, compare(load(OLD), load(NEW)))
    assert (replay.total, replay.refused.count, len(replay.refused.first)) == (20_000, 20_000, traffic.MOST_KEPT)
    assert [e.source for e in replay.touched[("request-type-narrowed", "struct.Item.price")].first] == [
        f"calls:{n}" for n in range(traffic.MOST_KEPT)]
    assert replay.affected()[0] == 20_000 and replay.affected()[1].source == "calls:0"

"""A mock that relays (mocking/relay.py): answers recorded from a live server, a validating proxy, and
an upstream that answers too much or never."""

import json
import logging
import re
import time
from concurrent.futures import ThreadPoolExecutor

from reference import mocking
from reference.mocking import relay
from reference.services import calculator
from reference.transports import admission, http_client
from reference.transports.http_client import Client
from tests.support.mocks import ADD, CALCULATOR, start_mock, stub
from tests.support import servers
from tests.support.servers import Connection, serving, started, until


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


def upstream(answering):
    """A server of the calculator's schema on a free port, answering calls as `answering(request)` says:
    message bytes, or None for never (it holds the connection for a minute); yield its URL."""
    def answer(data):
        request = json.loads(data)
        if "fn.api_" in request[1]:
            return json.dumps([{}, {"Ok_": {"api": json.loads(CALCULATOR.read_text())}}]).encode()
        return answering(request)
    return servers.answering(answer)


def test_a_validating_proxy_logs_answers_outside_the_server_s_schema_and_checks_them_when_asked(tmp_path):
    with upstream(lambda request: json.dumps([{}, {"Ok_": {"result": "three"}}]).encode()) as url:
        proxy = start_mock("--proxy", url, "--cache", str(tmp_path / "api.json"))
        try:
            assert proxy.connection.call([{}, ADD])[1] == {"Ok_": {"result": "three"}}
            checked = proxy.connection.call([{"@check": True}, ADD])[1]
            assert checked == {"ErrorInvalidResponseBody_": {"cases": [{"path": ["Ok_", "result"], "reason": {
                "TypeUnexpected": {"actual": {"String": {}}, "expected": {"Number": {}}}}}]}}
            assert proxy.connection.call([{}, {"fn.add": {"x": "1", "y": 2}}])[1]["ErrorInvalidRequestBody_"]
        finally:
            proxy.process.terminate()
            log = proxy.process.communicate(timeout=10)[1]
    assert "WARNING fn.add answered outside its own schema: [{'path': ['Ok_', 'result']" in log


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
    arrived = []
    with caplog.at_level(logging.WARNING, logger="reference"), upstream(arrived.append) as url, \
            serving(relaying(url, timeout=3)) as proxy:
        with ThreadPoolExecutor(100) as pool:
            waiting = [pool.submit(lambda: Connection(proxy.url).call([{}, ADD])[1]) for _ in range(100)]
            until(lambda: len(arrived) == admission.QUEUE)  # (as many as may wait, waiting upstream)
            pings = [Connection(proxy.url, "127.0.0.2").post(b'[{}, {"fn.ping_": {}}]')[0] for _ in range(10)]
            answers = [future.result() for future in waiting]
    assert pings == [200] * 10
    reasons = [answer["ErrorRelayFailed_"]["reason"] for answer in answers]
    assert reasons.count(f"{url} did not answer within 3 s") == admission.QUEUE
    assert reasons.count(f"{admission.QUEUE} calls are relayed to {url} already; try again soon") == 100 - admission.QUEUE
    assert not [r for r in caplog.records if r.exc_info] and len(caplog.records) == 100


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


def test_a_proxy_matches_its_stubs_within_the_budget_as_the_mock_does(caplog):
    """A proxy's stubs come from the network too: a glob made to be slow, against a 1 MB name, stops at the
    matching budget (about 16 steps a byte), said once in the log, and the call is relayed."""
    glob = {"Glob": {"pattern": "*" + "a?" * 126 + "b*"}}
    relayed = json.dumps([{}, {"Ok_": {}}]).encode()
    with upstream(lambda request: relayed) as url, serving(relaying(url)) as proxy:
        connection = Connection(proxy.url)
        for _ in range(20):
            made = connection.call([{}, stub({"fn.getVariable": {"name": ""}, "match!": {"name": glob}},
                                             {"Ok_": {"variable!": {"name": "x", "value": 1}}})])
            assert made[1] == {"Ok_": {}}
        with caplog.at_level(logging.WARNING, logger="reference"):
            answer = connection.call([{}, {"fn.getVariable": {"name": "a" * 1_000_000}}])[1]
    assert answer == {"Ok_": {}} and caplog.text.count("match! would take over 16 steps per byte") == 1


def test_a_recording_that_cannot_be_written_loses_no_answer_and_leaves_no_file(tmp_path):
    """A limit on a file's size (as a full disk would): 6 of 12 callers got ErrorUnknown_ though the server
    had carried out their calls, with 6 tracebacks and 6 temporary files left. Now each gets the server's
    answer, the log says in one line that it was not recorded, and nothing half-written stays."""
    import resource
    folder = tmp_path / "recorded"
    with serving(calculator.service()) as live:
        process, _, url = started("mock", "--record", live.url, "--stubs", str(folder), "--cache",
                                  str(tmp_path / "api.json"),
                                  preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000)))
        try:
            with Client(url) as client:  # (the schema, saved first, fits; each stub of a long name does not)
                answers = [client.call("fn.saveVariable", {"name": "v" * 150_000 + str(i), "value": i})[1]
                           for i in range(3)]
        finally:
            process.terminate()
            _, err = process.communicate(timeout=60)
    assert answers == [{"Ok_": {}}] * 3
    assert err.count("the answer was relayed but not recorded: ") == 3 and "Traceback" not in err, err
    assert list(folder.iterdir()) == []

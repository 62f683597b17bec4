"""The server suite (runs/server_suite.py): it passes where it should, and fails, with a diff, where it
should; and every exchange with a target ends, whatever the target does."""

import http.client
import http.server
import json
import socket
import sys
import threading
import time
import uuid

import msgpack
import pytest

from conformance.__main__ import main
from conformance.language import decoding
from conformance.targets.remote import Target, read, send
from reference import mocking
from reference.services import calculator, testbed
from tests.support.servers import DRIPS, Mutated, dripping, endless, serving
from tests.support.suite import ALL, applying, counted, run
from tests.support.variants import drop_result, single_floats


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
    from conformance.__main__ import FRAMES
    from conformance.language import decoding
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(FRAMES)  # as main() does
    try:
        text = decoding.decode(b'[{"@id_": ' + b"[" * 5000 + b"]" * 5000 + b'}, {"Ok_": {}}]')
        packed = decoding.decode(b"\x92\x81\xa4@id_" + b"\x91" * 2000 + b"\x90\x81\xa3Ok_\x80")  # (past msgpack's 1,024)
    finally:
        sys.setrecursionlimit(limit)
    for message in (text, packed):
        assert message[1] == {"Ok_": {}} and type(message[0]["@id_"]) is list


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
        assert main(["run", "--target", plain, "--wait", "60"]) == 2
        assert time.monotonic() - started < 30  # (told after three hang-ups, not after the whole --wait)
    assert capsys.readouterr().err == (f"python -m conformance run: error: cannot reach {plain}: it closed the "
                                       f"connection without answering (an HTTPS server does that to plain HTTP: is it "
                                       f"an https:// URL?)\n")
    url = calculator_url.replace("http://", "https://")
    assert main(["run", "--target", url, "--cafile", cafile]) == 2
    assert capsys.readouterr().err == (f"python -m conformance run: error: cannot reach {url}: it does not speak TLS "
                                       f"(is it an http:// URL?)\n")


@pytest.mark.parametrize("shape", DRIPS)
def test_each_exchange_ends_within_its_timeout_however_the_server_drips(shape, capsys):
    """A server that never finishes an answer (a byte at a time, or 100 Continue without end) costs
    each case its timeout, and the run says so; it does not hold the runner for as long as it goes on."""
    started = time.monotonic()
    status = main(["run", "--target", dripping(shape), "--timeout", "1", "--wait", "0"])
    assert status == 2 and time.monotonic() - started < 30  # the 1 s timeout, with room on a busy machine, not the
    # 120 s the drip lasts
    assert capsys.readouterr().err.endswith("no answer within 1 s (see --timeout)\n")


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


def test_a_failure_shows_what_its_step_expected_beside_what_came_and_an_encoding_by_its_size(tmp_path, capsys):
    """The reports put the failing step's expected answer (in the matching language) beside the answer received;
    a MessagePack answer's @enc_ (110 names) is told by its size, so the header that differs shows."""
    def extra(request, message):
        if request and "fn.ping_" in request[1] and "@enc_" in message[0]:
            message[0]["@extra"] = 1
        return message
    with serving(Mutated(testbed.service(), extra)) as server:
        assert main(["run", "--target", server.url, "--id", "binary/negotiate/first", "--json", str(tmp_path / "r.json"),
                     "--html", str(tmp_path / "r.html")]) == 1
    [case] = json.loads((tmp_path / "r.json").read_text())["cases"]
    assert json.loads(case["expected"])["message"][0]["@enc_"] == {"$type": "object"}
    assert case["answer"].startswith('[{"@enc_": "(an encoding of ') and '"@extra": 1}, {"Ok_": {}}]' in case["answer"]
    page = (tmp_path / "r.html").read_text()
    assert page.index("The answer expected (in the matching language):") < page.index("The answer received:")

"""The client suite (runs/client_suite.py): the reference's client passes every case, and broken clients
fail with a readable diff; a driver that dies or misbehaves is told."""

import json
import shlex
import sys

import pytest

from conformance.__main__ import main
from conformance.language import suite as cases
from tests.support.suite import driver, run

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


@pytest.mark.parametrize("kind", ["client", "schema"])
def test_a_driver_that_dies_before_answering_anything_stops_the_run_in_one_line(kind, tmp_path, capsys):
    """Not 93 failures of the same import error: one line that says what the driver said, and 2."""
    (tmp_path / "driver.py").write_text("import no_such_module_anywhere\n")
    status = main([kind, "--command", f"{sys.executable} {tmp_path / 'driver.py'}"])
    error = capsys.readouterr().err
    assert status == 2 and error.count("\n") == 1 and error.startswith(f"python -m conformance {kind}: error: ")
    assert error.endswith("exited with status 1 before answering anything: "
                          "ModuleNotFoundError: No module named 'no_such_module_anywhere'\n")


def test_a_driver_that_writes_something_else_than_a_reply_stops_the_run_in_one_line(capsys):
    command = driver("print('hello')")
    status = main(["client", "--command", command])
    error = capsys.readouterr().err
    assert status == 2 and error == (f"python -m conformance client: error: the driver {command!r} "
                                     "wrote 'hello' where its reply to the first instruction was due; a driver writes "
                                     "only its replies on standard output, one JSON line each (logs go to standard "
                                     "error)\n")

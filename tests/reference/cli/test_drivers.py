"""The reference speaking the suite's driver protocols."""

import io
import json
import uuid

import pytest

from reference.cli.drivers import drive_client
from reference.services import calculator
from tests.support.servers import serving


@pytest.fixture(scope="module")
def calculator_server():
    with serving(calculator.service()) as server:
        yield server


def test_the_driver_speaks_the_suites_protocol(calculator_server):
    """python -m reference.client --driver: JSON lines in, JSON lines out, bytes as {"$bin": ...}."""
    user = {"@auth_": {"Ephemeral": {"username": f"driver-{uuid.uuid4().hex[:8]}"}}}
    lines = [{"id": 1, "client": "a", "mode": "binary", "timeout": 5, "function": "fn.export", "arguments": {},
              "headers": user},
             {"id": 2, "client": "a", "mode": "binary", "timeout": 5, "function": "fn.import",
              "arguments": {"blob": {"$bin": "gql2YXJpYWJsZXOAq2V2YWx1YXRpb25zkA=="}}, "headers": user},
             {"id": 3, "client": "b", "mode": "json", "timeout": 5, "function": "fn.add",
              "arguments": {"x": 1}, "headers": {}}]
    out = io.StringIO()
    drive_client(calculator_server.url, [json.dumps(line) for line in lines], out)
    replies = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [reply["id"] for reply in replies] == [1, 2, 3]
    assert set(replies[0]["body"]["Ok_"]["blob"]) == {"$bin"} and "@enc_" in replies[0]["headers"]
    assert replies[1]["body"] == {"Ok_": {}} and replies[1]["headers"] == {"@bin_": [900069279]}
    assert list(replies[2]["body"]) == ["ErrorInvalidRequestBody_"]
    out = io.StringIO()
    drive_client("http://127.0.0.1:9/api", [json.dumps({**lines[2], "timeout": 1})], out)
    assert json.loads(out.getvalue()) == {"id": 3, "error": "cannot reach http://127.0.0.1:9/api: Connection refused"}

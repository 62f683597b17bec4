"""The command-line client, run as a user would: one call, its answer as JSON, its exit status."""

import json
import subprocess
import sys

import pytest

from reference import __version__, calculator

from conftest import serving


def client(*args):
    return subprocess.run([sys.executable, "-m", "reference.client", *args], capture_output=True, text=True,
                          timeout=30)


@pytest.fixture(scope="module")
def url():
    with serving(calculator.service()) as server:
        yield server.url


ANN = '@auth_={"Ephemeral": {"username": "ann"}}'


@pytest.mark.parametrize("args, status, answer", [
    (["fn.add", '{"x": 1, "y": 2}'], 0, {"Ok_": {"result": 3}}),
    (["fn.add", '{"x": 1, "y": 2}', "--binary"], 0, {"Ok_": {"result": 3}}),
    (["fn.evaluate", '{"expression": {"Div": {"left": {"Constant": {"value": 1}}, '
                     '"right": {"Constant": {"value": 0}}}}}'], 1, {"ErrorCannotDivideByZero": {}}),
    (["fn.add", '{"x": "1"}'], 1, {"ErrorInvalidRequestBody_": {"cases": [
        {"path": ["fn.add"], "reason": {"RequiredObjectKeyMissing": {"key": "y"}}},
        {"path": ["fn.add", "x"], "reason": {"TypeUnexpected": {"actual": {"String": {}}, "expected": {"Number": {}}}}}]}}),
    (["fn.getVariables", "-H", ANN], 0, {"Ok_": {"variables": [{"name": "v", "value": 7}]}}),
    (["fn.getVariables", "-H", ANN, "--select", '{"struct.Variable": ["name"]}'], 0,
     {"Ok_": {"variables": [{"name": "v"}]}}),
    (["fn.ping_", "-H", "@id_=abc", "-v"], 0, [{"@id_": "abc"}, {"Ok_": {}}]),
])
def test_a_call_prints_its_answer_and_exits_by_its_result(url, args, status, answer):
    client(url, "fn.saveVariable", '{"name": "v", "value": 7}', "-H", ANN)
    run = client(url, *args)
    assert (run.returncode, json.loads(run.stdout), run.stderr) == (status, answer, "")


def test_bytes_are_shown_as_base64_with_a_note_saying_where(url):
    run = client(url, "fn.export", "-H", '@auth_={"Ephemeral": {"username": "bea"}}')
    blob = json.loads(run.stdout)["Ok_"]["blob"]
    assert run.returncode == 0 and blob == "gql2YXJpYWJsZXOAq2V2YWx1YXRpb25zkA=="
    assert run.stderr == "note: Ok_.blob is bytes, shown as base64\n"


def test_a_schema_is_fetched_to_a_file(url, tmp_path):
    public = client(url, "--schema")
    assert public.returncode == 0 and json.loads(public.stdout) == calculator.service().schema.api()
    internal = json.loads(client(url, "--schema", "--internal").stdout)
    assert len(internal) > len(json.loads(public.stdout)) and any("fn.ping_" in entry for entry in internal)


@pytest.mark.parametrize("args, message", [
    ([], "name a FUNCTION to call, or ask for --schema"),
    (["fn.add", "[1]"], "argument ARGUMENTS: '[1]' is not a JSON object"),
    (["fn.add", "-H", "id=1"], "'id=1' is not NAME=VALUE with a NAME that starts with @"),
    (["fn.add", "--internal"], "--internal goes with --schema"),
    (["fn.add", "--schema"], "--schema prints the schema; it calls no FUNCTION"),
    (["fn.add", "--driver"], "--driver takes its calls from standard input"),
    (["fn.add", "--timeout", "x"], "argument --timeout: 'x' is not a number of seconds"),
])
def test_usage_errors_are_one_line_and_exit_2(url, args, message):
    run = client(url, *args)
    assert run.returncode == 2 and run.stderr.startswith("python -m reference.client: error: ")
    assert message in run.stderr and run.stderr.count("\n") == 1 and run.stdout == ""


def test_transport_problems_are_one_line_and_exit_2(url):
    unreachable = client("http://127.0.0.1:9/api", "fn.ping_")
    assert unreachable.returncode == 2 and unreachable.stderr == (
        "python -m reference.client: error: cannot reach http://127.0.0.1:9/api: Connection refused\n")
    wrong_path = client(url.replace("/api", "/"), "fn.ping_")
    assert wrong_path.returncode == 2 and "answered HTTP 404 (is the API at /api?)" in wrong_path.stderr
    assert client("ftp://x/api", "fn.ping_").returncode == 2


def test_the_version_is_the_package_s():
    assert client("--version").stdout == f"python -m reference.client {__version__}\n"

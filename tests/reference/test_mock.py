"""python -m reference.mock (mock.py), run as a user runs it: a live server's schema fetched and saved,
usage and start-up problems in one line, and the WSGI and ASGI factories."""

import json
import socket
import time

import pytest

from reference import mock
from reference.services import calculator
from tests.support.mocks import ADD, CALCULATOR, OK, run_mock, start_mock, stub
from tests.support.servers import Connection, Mutated, dripping, refusing, serving, uvicorn_serving


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
    result = run_mock(*args)
    assert result.returncode == 2 and result.stderr.startswith("python -m reference.mock: error: ")
    assert message in result.stderr and result.stderr.count("\n") == 1, result.stderr


def test_start_up_problems_are_one_line_errors_and_exit_2(tmp_path, calculator_url):
    """The same status as the runner's for a target it cannot use."""
    missing = run_mock("--schema-file", str(tmp_path / "none.json"))
    assert (missing.returncode, missing.stderr) == (
        2, f"python -m reference.mock: error: {tmp_path / 'none.json'}: does not exist\n")
    (tmp_path / "bad.json").write_text('[{"fn.f": {}}]')
    bad = run_mock("--schema-file", str(tmp_path / "bad.json"))
    lines = bad.stderr.splitlines()  # (a line for each problem, as the schema checker writes them, then one error)
    assert bad.returncode == 2 and len(lines) == 2 and lines[0].startswith(f"{tmp_path / 'bad.json'}:1:2: fn.f: ")
    assert lines[1] == f"python -m reference.mock: error: the schema of {tmp_path / 'bad.json'} does not load: 1 problem"
    with refusing() as url:
        unreachable = run_mock("--schema-url", url, "--wait", "0.5", "--cache", str(tmp_path / "never.json"))
    assert unreachable.returncode == 2 and unreachable.stderr.startswith(f"python -m reference.mock: error: cannot reach {url}: ")
    assert unreachable.stderr.endswith(f"(waited 0.5 s); and no schema of it was saved before in {tmp_path / 'never.json'}\n")
    assert unreachable.stderr.count("\n") == 1
    (tmp_path / "shared.json").write_text(json.dumps([{"fn.f": {}, "->": [{"Ok_": {}}]}]))
    (tmp_path / "shared.json").chmod(0o666)  # (anyone may write it: as good as another user's)
    with refusing() as url:
        foreign = run_mock("--schema-url", url, "--wait", "0.2", "--cache", str(tmp_path / "shared.json"))
    assert foreign.returncode == 2 and foreign.stderr.endswith(
        f"(waited 0.2 s); and the schema saved in {tmp_path / 'shared.json'} is not your own file (another user "
        "could write it): not used\n")
    elsewhere = run_mock("--schema-url", calculator_url.replace("/api", "/other"))
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
        refused = run_mock("--schema-url", odd.url, "--cache", str(cache))
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
        untrusted = run_mock("--schema-url", url, "--cache", str(tmp_path / "schema.json"))
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
    result = run_mock("--schema-url", url, "--wait", "0.5")
    assert result.stdout == f"Waiting up to 0.5 s for {url} to answer (see --wait)...\n"
    assert result.returncode == 2 and "(waited 0.5 s)" in result.stderr


@pytest.mark.parametrize("shape", ["endless 100 Continue", "headers"])
def test_fetching_the_schema_ends_within_the_wait_however_the_server_drips(shape):
    started = time.monotonic()
    result = run_mock("--schema-url", dripping(shape), "--wait", "1")
    assert result.returncode == 2 and time.monotonic() - started < 30  # a second's wait and Python's start (at load
    # 20 that start alone may take seconds), not the 120 s the drip lasts
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


def test_the_stubs_made_at_run_time_are_exported_when_it_stops_and_load_again(tmp_path):
    """--export-stubs DIR, as WireMock's export: a stub made by fn.createStub_ is a file when the mock stops,
    which --stubs loads in the next mock; a folder that holds files already is refused (they would mix)."""
    exported = tmp_path / "made"
    first = start_mock("--schema-file", str(CALCULATOR), "--export-stubs", str(exported))
    assert first.connection.call([{}, stub({"fn.add": {"x": 1, "y": 2}}, {"Ok_": {"result": 42}})])[1] == OK
    first.process.terminate()  # (SIGTERM stops it as Ctrl-C does)
    out, _ = first.process.communicate(timeout=30)
    assert out.endswith(f"Wrote 1 stub to {exported}\n") and [p.name for p in exported.iterdir()] == ["stub-0001.json"]
    second = start_mock("--schema-file", str(CALCULATOR), "--stubs", str(exported), "--no-generation")
    try:
        assert second.connection.call([{}, {"fn.add": {"x": 1, "y": 2}}])[1] == {"Ok_": {"result": 42}}
    finally:
        second.stop()
    refused = run_mock("--schema-file", str(CALCULATOR), "--export-stubs", str(exported))
    assert refused.returncode == 2 and f"--export-stubs {exported}: give a folder that is empty" in refused.stderr

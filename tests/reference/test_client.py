"""The command-line client, run as a user would: one call, its answer as JSON, its exit status."""

import http.server
import json
import os
import pty
import re
import shlex
import signal
import subprocess
import sys
import threading
import time

import pytest

from reference import __version__, mocking
from reference.services import calculator
from tests.support.servers import answering, serving


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
    (["fn.add", "x=1", "y=2"], 0, {"Ok_": {"result": 3}}),
    (["fn.add", '{"x": 1, "y": 9}', "y=2"], 0, {"Ok_": {"result": 3}}),
    (["fn.saveVariable", "name=w", "value=0.5", "-H", ANN], 0, {"Ok_": {}}),
])
def test_a_call_prints_its_answer_and_exits_by_its_result(url, args, status, answer):
    client(url, "fn.saveVariable", '{"name": "v", "value": 7}', "-H", ANN)
    run = client(url, *args)
    assert (run.returncode, json.loads(run.stdout), run.stderr) == (status, answer, "")


def test_arguments_come_from_a_file_or_standard_input(url, tmp_path):
    (tmp_path / "add.json").write_text('{"x": 1, "y": 2}')
    from_file = client(url, "fn.add", f"@{tmp_path / 'add.json'}")
    from_stdin = subprocess.run([sys.executable, "-m", "reference.client", url, "fn.add", "-", "y=5"],
                                input='{"x": 1, "y": 2}', capture_output=True, text=True, timeout=30)
    assert (from_file.returncode, from_file.stdout) == (0, '{"Ok_": {"result": 3}}\n')
    assert (from_stdin.returncode, from_stdin.stdout) == (0, '{"Ok_": {"result": 6}}\n')
    missing = client(url, "fn.add", f"@{tmp_path / 'none.json'}")
    assert missing.returncode == 2 and f"{tmp_path / 'none.json'}: cannot be read: No such file" in missing.stderr


def test_the_answer_is_one_line_in_a_pipe_and_indented_when_asked(url):
    """On a terminal it is indented; a pipe or a file gets one line, as the README shows it."""
    assert client(url, "fn.add", "x=1", "y=2").stdout == '{"Ok_": {"result": 3}}\n'
    assert client(url, "fn.add", "x=1", "y=2", "--pretty").stdout == '{\n  "Ok_": {\n    "result": 3\n  }\n}\n'


def test_verbose_shows_the_request_the_whole_answer_and_the_time_beside_the_answer(url):
    """-v adds to standard error; standard output holds the answer's body, as without it."""
    run = client(url, "fn.ping_", "-H", "@id_=abc", "-v")
    lines = run.stderr.splitlines()
    assert (run.returncode, run.stdout) == (0, '{"Ok_": {}}\n')
    assert lines[0] == f"> POST {url}" and json.loads(lines[1][2:]) == [{"@time_": 5000, "@id_": "abc"}, {"fn.ping_": {}}]
    assert json.loads(lines[2][2:]) == [{"@id_": "abc"}, {"Ok_": {}}]
    assert re.fullmatch(r"< 30 bytes in \d+\.\d ms", lines[3]) and len(lines) == 4


def test_the_functions_are_listed_and_a_near_name_suggested(url):
    listed = client(url, "--list")
    lines = listed.stdout.splitlines()
    assert listed.returncode == 0 and lines[:3] == ['fn.add {"x": "number", "y": "number"}', "    Add two numbers.",
                                                   '    -> Ok_ {"result": "number"}']
    assert '    -> Ok_ {"token": "string"}; errors: ErrorUsernameAlreadyInUse' in lines
    assert not any(line.startswith("fn.ping_") for line in lines)
    assert any(line.startswith("fn.ping_") for line in client(url, "--list", "--internal").stdout.splitlines())
    unknown = client(url, "add", "x=1", "y=2")
    assert unknown.returncode == 1 and "FunctionUnknown" in unknown.stdout
    assert unknown.stderr == "note: the server has no add; did you mean fn.add?\n"
    assert client(url, "fn.ad").stderr == "note: the server has no fn.ad; did you mean fn.add?\n"


def test_a_reader_that_stops_early_is_no_error():
    with serving(calculator.service()) as server:
        run = subprocess.run(f"{shlex.quote(sys.executable)} -m reference.client {server.url} --schema --internal "
                             f"--pretty | head -1", shell=True, capture_output=True, text=True, timeout=30)
    assert (run.stdout, run.stderr) == ("[\n", "")


def test_an_html_error_page_is_one_line(tmp_path):
    """A proxy's HTML error page is squeezed into the one line of the error."""
    class Page(http.server.BaseHTTPRequestHandler):  # no do_POST: it answers 501 with an HTML page
        def log_message(self, *args):
            pass
    page = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=page.serve_forever, daemon=True).start()
    try:
        run = client(f"http://127.0.0.1:{page.server_port}/api", "fn.ping_")
    finally:
        page.shutdown()
    assert run.returncode == 2 and run.stderr.count("\n") == 1
    assert "answered HTTP 501: <!DOCTYPE HTML> <html lang=\"en\"> <head>" in run.stderr


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
    ([], "name a FUNCTION to call (--list shows them), or ask for --schema"),
    (["fn.add", "--bogus"], "unrecognized option --bogus"),  # (argparse named the missing URL first)
    (["fn.add", "[1]"], "argument '[1]' is not NAME=TEXT, NAME:=JSON, a JSON object, @FILE or -"),
    (["fn.add", "-H", "id=1"], "-H id=1: a header is @NAME=TEXT or @NAME:=JSON, as in -H @id_=a1"),
    (["fn.add", "-H", "@id_"], "-H @id_: a header is @NAME=TEXT or @NAME:=JSON, as in -H @id_=a1"),
    (["fn.add", "x:=1.", "y=2"], "x:=: not JSON: Extra data (line 1, column 2)"),
    (["fn.add", '{"x": ' + "[" * 20_000 + "]" * 20_000 + "}"], "nests arrays and objects deeper than 1,024 levels"),
    (["fn.add", "x:=" + "[" * 20_000 + "]" * 20_000], "x:=: nests arrays and objects deeper than 1,024 levels"),
    (["fn.add", "-H", "@id_:=" + "[" * 20_000 + "]" * 20_000], "@id_:=: nests arrays and objects deeper than"),
    (["fn.add", "--internal"], "--internal goes with --schema or --list"),
    (["fn.add", "--schema"], "--schema calls no FUNCTION"),
    (["--schema", "--list"], "--schema or --list, not both"),
    (["fn.add", "--driver"], "--driver takes its calls from standard input"),
    (["fn.add", "--timeout", "x"], "argument --timeout: 'x' is not a number of seconds above 0"),
    (["fn.add", "--timeout", "0"], "argument --timeout: '0' is not a number of seconds above 0"),
    (["fn.add", "--timeout", "1e308"], "'1e308' is not a number of seconds above 0, at most 86,400 (a day)"),
    (["fn.add", "--cafile", "/nope.pem"], "--cafile is for an https:// URL; this one is plain HTTP"),
    (["fn.add", "--pretty", "--compact"], "argument --compact: not allowed with argument --pretty"),
])
def test_usage_errors_are_one_line_and_exit_2(url, args, message):
    run = client(url, *args)
    assert run.returncode == 2 and run.stderr.startswith("python -m reference.client: error: ")
    assert message in run.stderr and run.stderr.count("\n") == 1 and run.stdout == ""


def test_a_key_given_as_certificate_authorities_is_said_in_plain_words(tmp_path):
    """(OpenSSL's own words were shown: [X509: NO_CERTIFICATE_OR_CRL_FOUND] ... (_ssl.c:4154).)"""
    key = tmp_path / "key.pem"
    key.write_text("-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIJ+DYvh6SEqVTm50DFtMDoQikTmiCqirVv9mWG9qfSnF\n"
                   "-----END PRIVATE KEY-----\n")
    run = client("https://127.0.0.1:9/api", "fn.ping_", "--cafile", str(key))
    assert run.returncode == 2 and "it holds no PEM certificate (a key, or DER?)" in run.stderr
    assert "_ssl.c" not in run.stderr and run.stderr.count("\n") == 1


@pytest.mark.parametrize("args, message", [
    ([], "give the server's URL, then a FUNCTION to call"),  # (argparse said "required: URL, ARGUMENT")
    (["--bogus"], "unrecognized option --bogus"),
])
def test_a_command_line_without_a_url_says_what_is_wrong(args, message):
    run = client(*args)
    assert run.returncode == 2 and message in run.stderr and run.stderr.count("\n") == 1, run.stderr


def test_transport_problems_are_one_line_and_exit_2(url):
    unreachable = client("http://127.0.0.1:9/api", "fn.ping_")
    assert unreachable.returncode == 2 and unreachable.stderr == (
        "python -m reference.client: error: cannot reach http://127.0.0.1:9/api: Connection refused\n")
    wrong_path = client(url.replace("/api", "/"), "fn.ping_")
    assert wrong_path.returncode == 2 and "answered HTTP 404 (is the API at /api?)" in wrong_path.stderr
    assert client("ftp://x/api", "fn.ping_").returncode == 2


def test_the_version_is_the_package_s():
    assert client("--version").stdout == f"python -m reference.client {__version__}\n"


@pytest.mark.parametrize("args, waiting", [
    (["reference.client", "URL", "fn.add", "-"], None),  # for the arguments, on standard input
    (["reference.client", "--driver", "URL"], None),  # for an instruction
    (["reference.schema", "--driver"], None),
    (["reference.mock", "--schema-url", "http://127.0.0.1:9/api", "--wait", "30", "--port", "0"], "Waiting up to 30 s"),
])
def test_ctrl_c_ends_every_command_quietly(args, waiting, url):
    """Wherever Ctrl-C falls while a command waits (for its input, or for a schema), it ends with status
    130 and no traceback."""
    process = subprocess.Popen([sys.executable, "-m", *[url if arg == "URL" else arg for arg in args]],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        if waiting:
            assert process.stdout.readline().startswith(waiting)
        else:
            assert reading_its_input(process)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=10)
    finally:
        process.kill()
    assert process.returncode == 130 and "Traceback" not in err, err


@pytest.mark.parametrize("args", [
    ["reference.client", "URL", "fn.add", "-"], ["reference.server"], ["reference.mock", "--schema-url", "URL"],
    ["reference.schema", "--driver"], ["conformance", "run", "--target", "URL"],
])
def test_ctrl_c_while_a_command_loads_its_parts_ends_it_quietly_too(args, url):
    """Ctrl-C in a command's first moment, while it imports what it needs (-X importtime says which module
    is loaded), ends it with status 130 and no traceback, as Ctrl-C at work does (it printed 20 lines)."""
    process = subprocess.Popen([sys.executable, "-X", "importtime", "-m", *[url if arg == "URL" else arg for arg in args]],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in process.stderr:  # (the first of its own modules loaded past what loads the guard)
            module = line.rsplit("|", 1)[-1].strip()
            if module.startswith(("reference.", "conformance.")) and module not in ("reference.cli", "reference.cli.options"):
                break
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 130 and "Traceback" not in err, err


def reading_its_input(process, seconds=60):
    """Whether `process` comes to wait on a read of its standard input (Linux's /proc names the system call
    a process is in: its number, then its first argument, the file descriptor)."""
    read = {"x86_64": "0", "aarch64": "63"}[os.uname().machine]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and process.poll() is None:
        with open(f"/proc/{process.pid}/syscall") as call:
            if call.read().split()[:2] == [read, "0x0"]:
                return True
        time.sleep(0.01)
    return False


def test_text_and_json_are_said_as_httpie_says_them_and_the_schema_decides_the_rest(url):
    """NAME=TEXT is text where the field is text (a variable named 123), and JSON where it is not (a value
    of 5); NAME:=JSON is JSON always; text that cannot be what the field is goes as text, with a note."""
    user = ["-H", '@auth_:={"Ephemeral": {"username": "texts"}}']
    assert client(url, "fn.saveVariable", "name=123", "value=5", *user).returncode == 0
    found = client(url, "fn.getVariable", *user, "name=123")  # (an option between arguments)
    assert json.loads(found.stdout) == {"Ok_": {"variable!": {"name": "123", "value": 5}}}
    assert client(url, "fn.saveVariable", "name:=\"n\"", "value:=2.5", *user).returncode == 0
    wrong = client(url, "fn.add", "x=one", "y=2")
    assert wrong.returncode == 1 and "TypeUnexpected" in wrong.stdout
    assert wrong.stderr == 'note: x is "number", and x=one: not JSON: Expecting value (line 1, column 1): sent as text\n'


def test_a_session_keeps_the_headers_and_the_token_of_a_login(url, tmp_path):
    """--session FILE: -H headers are kept, and so is the token fn.login answers, as its @auth_."""
    session = tmp_path / "ann.json"
    assert client(url, "fn.login", "username=session-ann", "--session", str(session)).returncode == 0
    kept = json.loads(session.read_text())
    assert list(kept) == ["@auth_"] and list(kept["@auth_"]) == ["Session"]
    assert client(url, "fn.saveVariable", "name=v", "value=1", "--session", str(session), "-H", "@id_=7").returncode == 0
    assert json.loads(session.read_text())["@id_"] == 7
    run = client(url, "fn.getVariables", "--session", str(session))
    assert json.loads(run.stdout) == {"Ok_": {"variables": [{"name": "v", "value": 1}]}}
    logout = client(url, "fn.logout", "username=session-ann", "--session", str(session))
    assert logout.returncode == 0 and "@auth_" not in json.loads(session.read_text())  # (the dead token was kept)
    assert f"note: fn.logout ended the session: its token is dropped from {session}" in logout.stderr
    assert client(url, "fn.login", "username=session-ann", "--session", str(session)).returncode == 0
    session.write_text(json.dumps({"@auth_": {"Session": {"token": "forgotten"}}}))
    refused = client(url, "fn.getVariables", "--session", str(session))
    assert refused.returncode == 1 and "@auth_" not in json.loads(session.read_text())
    assert f"note: the server refused the session's credentials: they are dropped from {session}" in refused.stderr


class Counting:
    """A service that counts the calls of fn.api_ it answers."""

    def __init__(self, service):
        self.service, self.schema, self.asked, self.added = service, service.schema, 0, 0

    def handle(self, data, client=""):
        self.asked += b'"fn.api_"' in data
        self.added += b'"fn.add"' in data
        return self.service.handle(data, client)


def test_the_schema_is_fetched_once_and_again_only_when_a_call_made_by_it_is_refused(tmp_path, monkeypatch):
    """NAME=TEXT needs the schema: it was fetched before each call. It is kept; a stale one is found out
    when the server refuses the call made by it, and the call goes again."""
    service = Counting(calculator.service())
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with serving(service) as server:
        for _ in range(3):
            assert json.loads(client(server.url, "fn.add", "x=1", "y=2").stdout) == {"Ok_": {"result": 3}}
        assert service.asked == 1
        [kept] = (tmp_path / "sdms-reference").glob("client-*.json")
        stale = json.loads(kept.read_text())
        stale["api"] = [{"fn.add": {"x": "string", "y": "string"}, **{k: v for k, v in entry.items() if k != "fn.add"}}
                        if "fn.add" in entry else entry for entry in stale["api"]]
        kept.write_text(json.dumps(stale))
        assert json.loads(client(server.url, "fn.add", "x=1", "y=2").stdout) == {"Ok_": {"result": 3}}
        assert service.asked == 2 and json.loads(kept.read_text())["api"] != stale["api"]
        refused = client(server.url, "fn.add", "x=1", "y=oops")  # (refused with the schema as it is: no call again)
        assert refused.returncode == 1 and service.asked == 3


@pytest.mark.parametrize("spoil", [
    lambda kept: kept.write_text('{"url": "x", "api": ' + "[" * 100_000 + "]" * 100_000 + "}"),  # (too deep)
    lambda kept: kept.chmod(0o666),  # (anyone may write it: as good as another user's)
    lambda kept: kept.write_text(json.dumps({**json.loads(kept.read_text()), "api": [1, 2]})),
])
def test_a_kept_schema_that_is_not_the_users_own_and_well_formed_is_ignored(tmp_path, monkeypatch, spoil):
    """A shared cache folder may hold another user's file: NAME=TEXT is then read with the server's
    schema, fetched again, not with what the file says."""
    service = Counting(calculator.service())
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with serving(service) as server:
        assert client(server.url, "fn.add", "x=1", "y=2").returncode == 0
        [kept] = (tmp_path / "sdms-reference").glob("client-*.json")
        record = json.loads(kept.read_text())
        record["api"] = [{"fn.add": {"x": "string", "y": "string"}, **{k: v for k, v in entry.items()
                                                                       if k != "fn.add"}}
                         if "fn.add" in entry else entry for entry in record["api"]]
        kept.write_text(json.dumps(record))  # (it would make x=1 the text "1")
        spoil(kept)
        done = client(server.url, "fn.add", "x=1", "y=2")
        assert (done.returncode, json.loads(done.stdout), done.stderr) == (0, {"Ok_": {"result": 3}}, "")
        assert (service.asked, service.added) == (2, 2)  # (the file used: x sent as "1", refused, sent again)


def test_a_value_is_read_from_a_json_file_with_name_colon_equals_at(url, tmp_path):
    """httpie's NAME:=@FILE (it was refused)."""
    (tmp_path / "e.json").write_text('{"Add": {"left": {"Constant": {"value": 1}}, "right": {"Constant": {"value": 2}}}}')
    run = client(url, "fn.evaluate", f"expression:=@{tmp_path / 'e.json'}", "-H",
                 '@auth_:={"Ephemeral": {"username": "file-ann"}}')
    assert run.returncode == 0 and json.loads(run.stdout)["Ok_"]["result"] == 3
    missing = client(url, "fn.evaluate", f"expression:=@{tmp_path / 'none.json'}")
    assert missing.returncode == 2 and "none.json: cannot be read: No such file or directory" in missing.stderr


def test_colour_on_a_terminal_unless_no_color(url):
    """Keys, text and numbers in colour when the answer goes to a terminal; NO_COLOR turns it off."""
    def on_a_terminal(**environment):
        leader, follower = pty.openpty()
        subprocess.run([sys.executable, "-m", "reference.client", url, "fn.add", "x=1", "y=2"], stdout=follower,
                       stderr=subprocess.PIPE, timeout=30, env={**os.environ, **environment})
        os.close(follower)
        with os.fdopen(leader, "rb") as terminal:
            return terminal.read1(4096).decode()
    assert "\x1b[34m\"Ok_\"\x1b[0m:" in on_a_terminal() and "\x1b[36m3\x1b[0m" in on_a_terminal()
    assert on_a_terminal(NO_COLOR="1").replace("\r\n", "\n") == '{\n  "Ok_": {\n    "result": 3\n  }\n}\n'


@pytest.mark.parametrize("api, said", [
    ([5, {"fn.a": {}, "->": [{"Ok_": {}}]}], "entry 1: an entry is a JSON object"),
    ([{"fn.a": {"x": "integer"}}], 'entry 1, at ["->"]: fn.a: a function has a -> key holding an array'),
])
@pytest.mark.parametrize("args", [["--list"], ["fn.a", "x=1"], ["fn.a", "--session", "SESSION"]])
def test_a_server_whose_schema_is_not_sound_is_said_in_one_line(api, said, args, tmp_path):
    """What the client reads of a schema (the types of NAME=TEXT, the functions to list, the token of a
    session) it reads from a sound one: else one line and exit 2 (a traceback in 4 of 6 runs before)."""
    def unsound(data):
        body = {"Ok_": {"api": api}} if "fn.api_" in json.loads(data)[1] else {"Ok_": {}}
        return json.dumps([{}, body]).encode()
    with answering(unsound) as url:
        done = client(url, *[str(tmp_path / "s.json") if arg == "SESSION" else arg for arg in args])
    assert done.returncode == 2 and done.stderr.startswith(
        f"python -m reference.client: error: the schema {url} answers fn.api_ with is not sound: {said}")
    assert done.stderr.count("\n") == 1


def test_calls_written_name_text_reach_a_mock_whose_schema_holds_its_own_kinds():
    """A mock's schema has _ext.Call_ and _ext.Stub_, which the client refused as unsound: every call
    written NAME=TEXT to a mock was one line and exit 2."""
    with serving(mocking.service(calculator.entries())) as server:
        stubbed = client(server.url, "fn.createStub_", 'stub:={"fn.getVariable": {"name": ""}, "match!": {"name": '
                         '{"Glob": {"pattern": "ann*"}}}, "->": {"Ok_": {"variable!": {"name": "a", "value": 1}}}}')
        assert stubbed.returncode == 0, stubbed.stderr
        run = client(server.url, "fn.getVariable", "name=annabel")
    assert (run.returncode, json.loads(run.stdout)) == (0, {"Ok_": {"variable!": {"name": "a", "value": 1}}}), run.stderr


def test_a_field_a_selection_misspells_is_told_with_the_fields_its_place_has(url, user):
    """The server's answer is a case at the place (ArrayElementDisallowed); the note says what it meant."""
    wrong = client(url, "fn.add", "x=1", "y=2", "--select", '{"->": {"Ok_": ["reslt"]}}')
    assert wrong.returncode == 1 and "ArrayElementDisallowed" in wrong.stdout
    assert wrong.stderr == "note: -> Ok_ has no field 'reslt'; did you mean 'result'? (its fields: result)\n"
    tape = client(url, "fn.getPaperTape", "--select", '{"struct.Evaluation": ["result", "expresion"]}', "-H",
                  f"@auth_:={json.dumps(user['@auth_'])}")
    assert tape.stderr == ("note: struct.Evaluation has no field 'expresion'; did you mean 'expression'? (its fields: "
                           "expression, result, timestamp, successful)\n")


def test_a_driver_without_its_url_is_told_what_it_needs():
    alone = client("--driver")
    assert alone.returncode == 2 and alone.stderr.startswith(
        "python -m reference.client: error: --driver drives calls to a server: give its URL, such as "
        "http://127.0.0.1:8000/api")


def test_offline_shows_the_request_and_print_chooses_the_parts_as_httpie_does(url, tmp_path):
    """--offline sends nothing and prints the request (NAME=TEXT typed by the schema kept from an earlier call,
    else text, with a note); --print takes httpie's letters: H and B the request's, h and b the answer's."""
    alone = client("http://127.0.0.1:9/api", "fn.add", "x=1", "y=2", "-H", "@id_=a1", "--offline")
    assert (alone.returncode, alone.stdout) == (0, '{"@id_": "a1"}\n{"fn.add": {"x": "1", "y": "2"}}\n')
    assert alone.stderr.startswith("note: no schema of http://127.0.0.1:9/api is kept")
    assert client(url, "fn.add", "x=1", "y=2").returncode == 0  # (its schema is kept from here on)
    typed = client(url, "fn.add", "x=1", "y=2", "--offline", "--print", "B")
    assert (typed.returncode, typed.stdout, typed.stderr) == (0, '{"fn.add": {"x": 1, "y": 2}}\n', "")
    both = client(url, "fn.add", "x=1", "y=2", "-H", "@id_=a1", "--print", "Hhb")
    assert both.stdout.splitlines() == ['{"@id_": "a1"}', '{"@id_": "a1"}', '{"Ok_": {"result": 3}}']
    wrong = client(url, "fn.add", "--print", "Z")
    assert wrong.returncode == 2 and "argument --print: 'Z' is not letters of HBhb" in wrong.stderr
    assert "--offline shows a call's request; --list asks the server" in client(url, "--list", "--offline").stderr


def test_when_a_mock_s_calls_came_is_said_as_a_person_reads_a_time():
    """fn.listCalls_'s `at` is milliseconds since 1970 (1795822373754); a note says when, in UTC."""
    with serving(mocking.service(calculator.entries())) as server:
        assert client(server.url, "fn.add", "x=1", "y=2").returncode == 0
        listed = client(server.url, "fn.listCalls_")
    [at] = [call["at"] for call in json.loads(listed.stdout)["Ok_"]["calls"]]
    moment = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(at / 1000)) + f".{at % 1000:03} UTC"
    assert listed.stderr == f"note: at is milliseconds since 1970: these calls came from {moment} to {moment}\n"

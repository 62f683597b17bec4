"""The README's quick start is what CI runs."""

import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from reference import Client
from tests.support import ROOT
from tests.support.servers import Connection


def test_ci_runs_exactly_the_readme_test_command():
    """The last line of .ci/run is the README's test command, word for word."""
    command = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert "pytest" in command and f"```sh\n{command}\n```" in (ROOT / "README.md").read_text()


def test_the_quick_start_starts_the_calculator_server():
    readme = (ROOT / "README.md").read_text()
    quick_start = readme.split("## Quick start")[1].split("\n## ")[0]
    assert quick_start.count("```sh\n") == 2 + 1  # the two commands, and the curl example
    assert "-m reference.server\n```" in quick_start


@pytest.mark.parametrize("signal_", [signal.SIGINT, signal.SIGTERM])
def test_the_serving_example_answers_then_stops_cleanly_on_a_signal(signal_):
    """README's own server, run as written but on a free port: it answers, and a signal stops it
    as the bundled servers stop, with status 0 and no traceback."""
    code = _python_after("README.md", "## Serving your own schema").replace("port=8000", "port=0")
    code = code.replace("Server(Service", "server = Server(Service").replace(".run()", "\nprint(server.url, flush=True)"
                                                                          "\nserver.run()")
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = process.stdout.readline().strip()
        with Client(url) as client:
            assert client.call("fn.greet", {"name": "Ada"}) == ({}, {"Ok_": {"greeting": "Hello, Ada!"}})
        for levels in (500, 1000, 1024):  # as deep as a message may be, at Python's default recursion limit
            connection = Connection(url)
            inner = levels - 2
            status, _, data = connection.post(b'[{"@id_": ' + b"[" * inner + b"]" * inner + b'}, {"fn.greet": '
                                              b'{"name": "Ada"}}]')
            connection.http.close()
            assert status == 200 and data.endswith(b'}, {"Ok_": {"greeting": "Hello, Ada!"}}]'), data[-200:]
        if signal_ == signal.SIGINT:  # and fuzzed from its own schema, as the README goes on to do
            fuzzed = subprocess.run([sys.executable, "-m", "conformance", "fuzz", "--target", url, "--seed", "1"],
                                    capture_output=True, text=True, timeout=120)
            assert fuzzed.returncode == 0 and "  fn.greet: passed (message, accepted, rejected, result, headers, " \
                "handler, select, bytes, binary, packed, base64, id, media); not run: auth (" in fuzzed.stdout
            assert fuzzed.stdout.splitlines()[-1].endswith(" a second; seed 1), checks: 13 passed, 0 failed; 2 not run.")
        process.send_signal(signal_)
        out, err = process.communicate(timeout=20)
    finally:
        process.kill()
    assert process.returncode == 0 and out == ("Stopping: requests in flight get up to 10 s to be answered (Ctrl-C "
                                               "again to stop at once).\nStopped.\n")
    assert "Traceback" not in err


def _python_after(readme, heading):
    """The first Python block after a heading of a README."""
    text = (ROOT / readme).read_text()
    return text.split(heading, 1)[1].split("```python\n", 1)[1].split("```", 1)[0]


def test_the_testbed_handler_in_the_suites_readme_passes_the_testbed_cases(capsys):
    """The handler conformance/README.md shows is complete: served as written, it passes."""
    from conformance.__main__ import main
    from reference import Service, load
    from tests.support.servers import serving
    scope = {}
    exec(_python_after("conformance/README.md", "The whole handler"), scope)
    schema = load(ROOT / "conformance" / "testbed.json")
    handlers = {name: scope["handle"] for name in schema.functions if not name.endswith("_")}
    with serving(Service(schema, handlers)) as server:
        status = main(["run", "--target", server.url, "--id", "testbed/result*/**", "--id", "testbed/types/shape/**"])
    assert status == 0, capsys.readouterr().out


def test_the_example_driver_in_the_suites_readme_passes(tmp_path, capsys):
    """The driver conformance/README.md shows works as written, for a new user to adapt."""
    import shlex
    import sys

    from conformance.__main__ import main
    path = tmp_path / "my_driver.py"
    driver = _python_after("conformance/README.md", "### A complete driver")
    path.write_text(driver.replace("from myclient import Client, ClientError",  # the client it is written for
                                   "from reference.transports.http_client import Client, TransportError as ClientError"))
    status = main(["client", "--command", f"{shlex.quote(sys.executable)} {path}", "--id", "client/binary/**",
                   "--id", "client/bytes/**", "--id", "client/renegotiate/**"])
    assert status == 0, capsys.readouterr().out


def test_the_hook_examples_in_the_reference_guide_work_as_written(capsys):
    """reference/README.md's three hooks, run in turn: a token becomes a user, or is refused;
    a wrapped call prints its time; errors are counted."""
    import json
    section = (ROOT / "reference" / "README.md").read_text().split("### Hooks", 1)[1].split("\n## ", 1)[0]
    scope = {}
    for block in section.split("```python\n")[1:]:
        exec(block.split("```", 1)[0], scope)
    service, schema, handlers = scope["service"], scope["schema"], scope["handlers"]

    def call(service, headers, body):
        return json.loads(service.handle(json.dumps([headers, body]).encode()).data)[1]
    assert call(service, {"@auth_": {"Token": {"token": "s3cret"}}}, {"fn.whoami": {}}) == {"Ok_": {"user": "ann"}}
    assert call(service, {"@auth_": {"Token": {"token": "guess"}}}, {"fn.buy": {"sku": "x"}}) == {
        "ErrorUnauthenticated_": {"message!": "Unknown token."}}
    assert call(service, {}, {"fn.ping_": {}}) == {"Ok_": {}}  # strangers still ping and read the schema
    assert [e for e in call(service, {}, {"fn.api_": {}})["Ok_"]["api"] if "fn.buy" in e]
    timed = scope["Service"](schema, handlers, before=scope["authenticate"], wrap=scope["timed"])
    assert call(timed, {"@auth_": {"Token": {"token": "s3cret"}}}, {"fn.buy": {"sku": "x"}}) == {"Ok_": {"order": "A-1"}}
    assert capsys.readouterr().out.startswith("fn.buy took ")
    token = {"@auth_": {"Token": {"token": "s3cret"}}}
    answers = [call(scope["counted"], headers, body) for headers, body in [
        (token, {"fn.buy": {"sku": 5}}), (token, {"fn.nope": {}}), ({}, {"fn.buy": {"sku": "x"}}),
        (token, {"fn.buy": {"sku": "x"}})]]
    assert scope["errors"] == {"ErrorInvalidRequestBody_": 2, "ErrorUnauthenticated_": 1}
    assert answers[-1] == {"Ok_": {"order": "A-1"}}


def _facts():
    """The numbers the docs quote, worked out from the suite as it is."""
    from conformance.language import suite as cases
    everything, server = cases.everything(), cases.load()
    testbed = [c for c in server if c.applies({"testbed", "live"})]
    known = {}
    for path in (ROOT / "conformance" / "known-failures").glob("telepact-*.txt"):
        globs = {line.split("#")[0].strip() for line in path.read_text().splitlines() if line.split("#")[0].strip()}
        known["peer_" + path.name.split("-")[1]] = sum(cases.matches(globs, c.id) for c in everything)
    return {"server": len(server), "core": sum(not c.requires for c in server), "testbed": len(testbed),
            "other": len(server) - len(testbed), "client": len(cases.load(cases.CLIENTS)),
            "schema": len(cases.load(cases.SCHEMAS)), "binary": sum("binary" in c.features for c in testbed),
            "unbinary": sum("binary" not in c.features for c in testbed),
            "every_suite": len(testbed) + len(cases.load(cases.CLIENTS)) + len(cases.load(cases.SCHEMAS)), **known}


QUOTED = [  # a doc -> what it says, with the numbers it quotes as fields of _facts()
    ("README.md", "over HTTP: {server:,} cases of requests and expected answers"),
    ("README.md", "{core} of them need nothing but the protocol"),
    ("README.md", "# Checking http://127.0.0.1:8001/api: the testbed. Running {testbed} cases; {other} are for other "
                  "services.\n# {testbed} passed, 0 failed; {other} for other services"),
    ("README.md", "makes the calls ({client} cases,"),
    ("README.md", "--driver\"\n# {client} passed, 0 failed"),
    ("README.md", "where each problem is ({schema} cases over"),
    ("README.md", "--driver\"\n# {schema} passed, 0 failed"),
    ("README.md", "{peer_cli} for its demo server, {peer_mock} for its mock, {peer_library} for its library serving "
                  "the testbed, {peer_client} for its client, and {peer_schema} for its schema loader"),
    ("conformance/README.md", "Checking http://127.0.0.1:8001/api: the testbed. Running {testbed} cases; {other} are "
                              "for other services."),
    ("conformance/README.md", "`{unbinary} passed, 0 failed; {other} for other services; {binary} not checked "
                              "(without binary)`"),
    ("conformance/README.md", "# {client} passed, 0 failed"),
    ("conformance/README.md", "Running {schema} cases.\n# {schema} passed, 0 failed"),
    ("conformance/README.md", "# [1] reference (Python), bundled server, engine room: {every_suite} passed, 0 failed; "
                              "{other} for other services\n# [2] reference (Python), bundled server, teaching core "
                              "alone (--plain): {testbed} passed, 0 failed; {other} for other services"),
]


@pytest.mark.parametrize("doc, quote", QUOTED)
def test_the_numbers_the_docs_quote_are_the_suite_s(doc, quote):
    """Counts in the docs cannot go stale: each is worked out again here (spacing aside)."""
    text = " ".join((ROOT / doc).read_text().split())
    assert " ".join(quote.format(**_facts()).split()) in text


SCRIPTS = {"sdms-server": "reference.server", "sdms-client": "reference.client", "sdms-mock": "reference.mock",
           "sdms-schema": "reference.schema", "sdms-conformance": "conformance"}


@pytest.mark.parametrize("script, module", SCRIPTS.items())
def test_every_command_is_a_console_script_on_path_after_pip_install(script, module):
    """pip install puts each command beside the interpreter; it is the module's, under its own name."""
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"].keys() == SCRIPTS.keys()
    path = Path(sys.executable).parent / script
    ran = [subprocess.run(command, capture_output=True, text=True, timeout=60)
           for command in ([str(path), "--help"], [sys.executable, "-m", module, "--help"])]
    assert [r.returncode for r in ran] == [0, 0]
    assert ran[0].stdout.replace(script, "python -m " + module).split() == ran[1].stdout.split()
    assert ran[0].stdout.startswith(f"usage: {script} ")
    wrong = subprocess.run([str(path), "--no-such-option"], capture_output=True, text=True, timeout=60)
    assert wrong.returncode == 2 and wrong.stderr.endswith(f"(see {script} --help)\n")


def test_the_compare_example_prints_what_the_readme_shows(tmp_path):
    """reference/README.md's schema change, made and compared as written: the lines it shows."""
    section = (ROOT / "reference" / "README.md").read_text().split("## Changing a schema")[1]
    commands = section.split("```sh\n", 1)[1].split("```", 1)[0]
    shown = section.split("```text\n", 1)[1].split("```", 1)[0]
    done = subprocess.run(["sh", "-c", commands.replace("python -m", f"{sys.executable} -m")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (1, shown, "")

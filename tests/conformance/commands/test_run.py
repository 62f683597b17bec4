"""python -m conformance run, as a user runs it: known failures, reports, usage errors in one line,
targets that cannot be checked, pytest's ways of choosing cases, and [tool.conformance]."""

import http.client
import http.server
import itertools
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from conformance.__main__ import main
from conformance.language import suite as cases
from conformance.runs import server_suite
from reference.services import calculator, testbed
from tests.support.servers import Mutated, refusing, serving
from tests.support.suite import ALL, run
from tests.support.variants import Plain, drop_result, dropping


def test_reports_and_known_failures(calculator_url, tmp_path, capsys):
    """--junit, --json and --html write reports; a listed case that passes is stale and fails the run."""
    known = tmp_path / "known.txt"
    known.write_text("# a comment\ncalculator/add/*  # these pass, so they are stale\n")
    junit, report, page = tmp_path / "junit.xml", tmp_path / "report.json", tmp_path / "report.html"
    status, lines = run(capsys, "run", "--target", calculator_url, "--id", "calculator/add/*", "--id", "mock/**",
                        "--known-failures", str(known), "--junit", str(junit), "--json", str(report),
                        "--html", str(page))
    mocks, adds = len(cases.select(ALL, ["mock/**"])), len(cases.select(ALL, ["calculator/add/*"]))
    assert status == 1 and lines[-1] == (f"0 passed, 0 failed, {adds} stale; {mocks} for other services (needs "
                                         f"calculator, mock); {len(ALL) - mocks - adds} not selected by --id")
    assert "  It passes, but the known-failures file lists it: remove it from there." in lines
    suite = ElementTree.parse(junit).getroot()
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == (str(mocks + adds), str(adds), str(mocks))
    data = json.loads(report.read_text())
    assert data["service"] == "the calculator" and data["summary"]["stale"] == adds
    assert data["summary"]["not-run"] == mocks and data["suite"]["fixtures"] == cases.identity()["fixtures"]
    assert {(c["reason"], c["problems"][0]) for c in data["cases"] if c["status"] == "not-run"} == {
        ("for other services", "needs calculator, mock")}
    assert {c["status"] for c in data["cases"] if c["id"].startswith("calculator/")} == {"stale"}
    html = page.read_text()
    assert html.startswith("<!doctype html>") and "http://" not in html.replace(calculator_url, "")
    assert f"<span class=stale>{adds} stale</span>" in html and f"<h2>Failures: {adds}, by their cause" in html
    assert "calculator/add/overflow" in html and "calc.add" in html


def test_a_known_failure_that_fails_does_not_fail_the_run(tmp_path, capsys):
    known = tmp_path / "known.txt"
    known.write_text("calculator/add/*\n")
    adds = len(cases.select(ALL, ["calculator/add/*"]))
    with serving(Mutated(calculator.service(), drop_result)) as server:
        status, lines = run(capsys, "run", "--target", server.url, "--id", "calculator/add/*",
                            "--known-failures", str(known), "--html", str(tmp_path / "page.html"))
    overflow = 1  # its answer is an error, which drop_result leaves alone: it passes, so it is stale
    assert status == 1 and lines[-1] == (f"0 passed, 0 failed, {adds - overflow} known failures, {overflow} stale; "
                                         f"{len(ALL) - adds} not selected by --id")
    listed = [case.id for case in cases.select(ALL, ["calculator/add/*"]) if case.id != "calculator/add/overflow"]
    assert f"{adds - overflow} known failures, listed as such (failing no run): {', '.join(listed)}" in lines
    page = (tmp_path / "page.html").read_text()  # (each listed, with what was wrong: pytest's -rx)
    section = page[page.index(f"<h2>Known failures: {adds - overflow}</h2>"):]
    assert all(f"<summary>{case_id} (a known failure)</summary>" in section for case_id in listed)
    assert section.count("[1].Ok_.result: missing") == adds - overflow


@pytest.mark.parametrize("args, message", [
    (["run"], "the following arguments are required: --target"),
    (["run", "--target", "ftp://x/api"], "the target must be an http:// or https:// URL, such as http://127.0.0.1:8000/api"),
    (["run", "--target", "https://x/api", "--cafile", "/nowhere/ca.pem"], "--cafile /nowhere/ca.pem: No such file or directory"),
    (["run", "--target", "http://127.0.0.1:9/api", "--without", "binary,nope"], "unknown features nope"),
    (["run", "--target", "http://127.0.0.1:9/api", "--workers", "0"], "'0' is not a positive integer"),
    (["run", "--target", "http://127.0.0.1:9/api", "--wait", "-1"], "'-1' is not a number of seconds"),
    (["run", "--target", "http://127.0.0.1:9/api", "--level", "MAYBE"], "invalid choice: 'MAYBE'"),
    (["run", "--target", "http://127.0.0.1:9/api", "--id", "no/such/case"], "--id no/such/case matches no server case"),
    (["run", "--target", "http://127.0.0.1:9/api", "--id", "api/ping/ok", "--id", "api/ping/okay"],
     "--id api/ping/okay matches no server case (did you mean api/ping/ok?)"),
    (["run", "--target", "http://127.0.0.1:9/api", "--id", "client/**"],
     "--id client/** matches no server case (it matches client cases: python -m conformance client)"),
    (["run", "--target", "http://127.0.0.1:9/api", "--exclude", "zzz/*"], "--exclude zzz/* matches no server case"),
    (["client", "--command", "true", "--id", "api/ping/ok"],
     "--id api/ping/ok matches no client case (it matches server cases: python -m conformance run)"),
    (["run", "--target", "http://127.0.0.1:9/api", "--json", "/no/such/dir/r.json"], "cannot write the --json report"),
    (["run", "--target", "http://127.0.0.1:9/api", "--known-failures", "/no/such/file"],
     "--known-failures /no/such/file: cannot be read: No such file or directory"),
    (["run", "--target", "http://127.0.0.1:9/api", "--timeout", "0"], "0 is no time to answer in"),
    (["run", "--target", "http://127.0.0.1:9/api", "--cafile", "ca.pem"], "--cafile is for an https:// target"),
    (["nope"], "invalid choice: 'nope'"),
    (["run", "--bogus"], "python -m conformance run: error: unrecognized option --bogus"),  # (not --target missing)
    (["rn"], "invalid choice: 'rn' (choose from 'run', "),  # (a misspelt command or option: the nearest)
    (["rn"], "; did you mean run?"),
    (["run", "--targt", "x"], "unrecognized option --targt; did you mean --target?"),
    (["run", "--target", "http://127.0.0.1:9/api", "extra"], "python -m conformance run: error: unrecognized "
                                                             "arguments: extra"),  # (not the top-level command's)
])
def test_bad_command_lines_exit_2_with_one_line(args, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(args)
    error = capsys.readouterr().err
    assert exit_.value.code == 2 and message in error and error.count("\n") == 1, error
    assert error.startswith(f"python -m conformance{' ' + args[0] if args[0] in ('run', 'client') else ''}: error: ")


def test_a_known_failure_that_matches_no_case_is_a_typo(tmp_path, capsys):
    known = tmp_path / "known.txt"
    known.write_text("calculator/add/integers\ncalculator/add/integer  # a typo\n")
    with pytest.raises(SystemExit) as exit_:
        main(["run", "--target", "http://127.0.0.1:9/api", "--known-failures", str(known)])
    assert exit_.value.code == 2 and "lists what matches no case: calculator/add/integer (" in capsys.readouterr().err


def test_an_unreachable_target_exits_2(capsys):
    status = main(["run", "--target", "http://127.0.0.1:9/api", "--wait", "0.3"])
    assert status == 2 and capsys.readouterr().err == "python -m conformance run: error: cannot reach http://127.0.0.1:9/api: Connection refused\n"


@pytest.mark.parametrize("answer, path, message", [
    ((404, b"the API is at /api"), "/", "answered HTTP 404 with 'the API is at /api' (did you forget /api at the end"),
    ((200, b"<html>hello</html>"), "/api", "answered HTTP 200 with '<html>hello</html>'"),
    ((200, b'{"a": 1}'), "/api", "answered HTTP 200 with '{\"a\": 1}'"),
    ((200, b"[1, 2]"), "/api", "answered HTTP 200 with '[1, 2]'"),
    ((200, b'[{}, {"Ok_": {"api": 5}}]'), "/api", "is not a server of the protocol"),
    ((500, b""), "/api", "answered HTTP 500 with 'nothing'"),
])
def test_a_target_that_is_not_a_protocol_server_exits_2_with_one_line(answer, path, message, capsys):
    handler = type("Answering", (Plain,), {"answer": answer})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        status = main(["run", "--target", f"http://127.0.0.1:{server.server_port}{path}"])
    finally:
        server.shutdown()
        server.server_close()
    error = capsys.readouterr().err
    assert status == 2 and message in error and error.count("\n") == 1, error
    assert error.startswith(f"python -m conformance run: error: http://127.0.0.1:{server.server_port}{path} is not a server of the protocol")


@pytest.mark.parametrize("answer, told", [
    (b'[{}, {"Ok_": {"api": [' + b"[]," * 2_000_000 + b'[]]}}]', "holds over 2,000,000 values"),
    (b"\x92\x80\x81\xa3Ok_\x81\xa3api\xdd" + (1_500_000).to_bytes(4, "big") + b"\xc0" * 1_500_000,
     "is over 1048576 bytes of MessagePack"),
])
def test_a_target_whose_answers_hold_more_than_the_suite_decodes_exits_2_at_once(answer, told, monkeypatch,
                                                                                 capsys):
    """Decoding costs about 60 bytes a value: an answer of millions of empty arrays is refused unread (no
    answer over a megabyte reaches the decoder), and the run ends at its first question."""
    monkeypatch.setattr("conformance.targets.remote.MAX_BINARY", 1024 * 1024)
    decode, decoded = server_suite.decode, []
    monkeypatch.setattr(server_suite, "decode", lambda answer, *more, **options: decoded.append(len(answer)) or
                        decode(answer, *more, **options))
    asked = []
    handler = type("Answering", (Plain,), {"answer": (200, answer), "do_POST": lambda self: asked.append(1) or
                                           Plain.do_POST(self)})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        status = main(["run", "--target", f"http://127.0.0.1:{server.server_port}/api"])
    finally:
        server.shutdown()
        server.server_close()
    error = capsys.readouterr().err
    assert status == 2 and "with more than the suite reads: the answer " + told in error, error
    assert error.count("\n") == 1 and len(asked) == 1 and all(size < 1024 * 1024 for size in decoded)


@pytest.mark.parametrize("reply, message", [
    (None, "cannot reach http://127.0.0.1:{port}/api: "),  # it hangs up at once
    (b"hello there\r\n\r\n", "is not a server of the protocol: its answer is not HTTP (BadStatusLine: hello there)"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n[{}, ",
     "its answer is not HTTP (IncompleteRead: IncompleteRead(5 bytes read, 95 more expected))"),
])
def test_a_target_that_does_not_speak_http_exits_2_with_one_line(reply, message, capsys):
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def answer():
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            with connection:
                if reply:
                    connection.recv(65536)
                    connection.sendall(reply)

    threading.Thread(target=answer, daemon=True).start()
    try:
        status = main(["run", "--target", f"http://127.0.0.1:{port}/api", "--wait", "0.5"])
    finally:
        listener.close()
    error = capsys.readouterr().err
    assert status == 2 and message.format(port=port) in error and error.count("\n") == 1, error


def test_waiting_for_a_target_says_what_for(capsys):
    with refusing() as url:
        assert main(["run", "--target", url, "--wait", "0.3"]) == 2
    out = capsys.readouterr().out
    assert out == f"Waiting up to 0.3 s for {url} to answer (Connection refused; see --wait)...\n"


def test_a_target_that_takes_the_connection_and_is_silent_is_told_of_soon(capsys):
    """Not after the whole --timeout (10 s) but within a second, and the run ends when --wait is over."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # (connections are taken, by the system, and never answered)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/api"
        started = time.monotonic()
        assert main(["run", "--target", url, "--wait", "2", "--timeout", "10"]) == 2
    said = capsys.readouterr()
    assert said.out == (f"Waiting up to 2 s for {url} to answer (it took the connection but has not answered in 1 s; "
                        f"see --wait)...\n") and time.monotonic() - started < 10
    assert said.err.endswith(f"cannot reach {url}: it took the connection but did not answer within 2 s\n")

def test_a_run_stops_starting_cases_at_maxfail_and_the_next_runs_only_what_failed(capsys):
    """-x, --maxfail N and --last-failed, as pytest has them: the failures are kept between runs."""
    with serving(Mutated(testbed.service(), dropping("@id_"))) as server:
        status, lines = run(capsys, "run", "--target", server.url, "--workers", "1", "-x")
        assert status == 1 and sum(line.startswith("FAIL ") for line in lines) == 1
        assert re.search(r"^\d+ passed, 1 failed \(1 \w+\); \d+ for other services; \d+ not run "
                         r"\(--maxfail 1 stopped the run first\)$", lines[-1]), lines[-1]
        run(capsys, "run", "--target", server.url, "--maxfail", "3", "--workers", "1")
        status, lines = run(capsys, "run", "--target", server.url, "--last-failed")
        assert lines[0] == "Running only what failed last time (--last-failed): 3 of the cases selected."
        assert status == 1 and lines[-1].startswith("0 passed, 3 failed") and lines[-1].endswith("not selected by --last-failed")
    with serving(testbed.service()) as server:
        status, lines = run(capsys, "run", "--target", server.url, "--lf")
        assert status == 0 and lines[-1].startswith("3 passed, 0 failed")
        status, lines = run(capsys, "run", "--target", server.url, "--lf", "--id", "envelope/**")
    assert lines[0] == "No failures recorded by the last run; running every case selected (--last-failed)."
    assert status == 0 and not json.load(open(".conformance_cache/last-failed.json"))["server"]


@pytest.mark.parametrize("signal_", ["SIGINT", "SIGTERM"])
def test_an_interrupted_run_ends_with_its_summary_and_valid_reports(signal_, tmp_path):
    """Ctrl-C (or SIGTERM) in the middle: no traceback; what ran is summed up and reported, the rest not run."""
    answered, held, released = itertools.count(1), threading.Event(), threading.Event()

    def holding(request, message):  # from the 200th answer on, the run is held mid-way until it is signalled
        if next(answered) >= 200:
            held.set()
            released.wait(60)
        return message
    reports = [f"--junit={tmp_path / 'r.xml'}", f"--json={tmp_path / 'r.json'}", f"--html={tmp_path / 'r.html'}"]
    with serving(Mutated(testbed.service(), holding)) as server:
        process = subprocess.Popen([sys.executable, "-m", "conformance", "run", "--target", server.url, "-v", *reports],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert held.wait(120), "the run never got to its 200th answer"
            process.send_signal(getattr(signal, signal_))
        finally:
            released.set()
        out, err = process.communicate(timeout=60)
    lines = out.splitlines()
    assert (process.returncode, err) == (130, "")
    assert re.fullmatch(r"The run was interrupted: \d+ cases? (was|were) not run\.", lines[-2])
    assert re.fullmatch(r"\d+ passed, 0 failed; \d+ for other services; \d+ not run \(the run was interrupted "
                        r"first\)", lines[-1])
    report = json.loads((tmp_path / "r.json").read_text())
    summary = report["summary"]
    assert summary["pass"] >= 20 and summary["pass"] + summary["not-run"] == len(ALL)
    assert report["interrupted"] == "the run was interrupted" and report["seconds"] > 0
    unrun = [case for case in report["cases"] if case["status"] == "not-run"]
    assert {case["reason"] for case in unrun} == {"not run", "for other services"}
    assert int(ElementTree.parse(tmp_path / "r.xml").getroot().get("tests")) == len(ALL)
    assert "not run" in (tmp_path / "r.html").read_text()


def test_reports_that_cannot_be_written_stop_the_run_first_and_leave_no_empty_file(tmp_path, capsys):
    for option, said in ((f"--junit={tmp_path / 'no' / 'r.xml'}", f"cannot write the --junit report to {tmp_path / 'no' / 'r.xml'}: No such file or directory"),
                         (f"--json={tmp_path}", f"cannot write the --json report to {tmp_path}: Is a directory"),
                         ("--json=-", "--json needs a file name: standard output carries the run's lines")):
        with pytest.raises(SystemExit) as stop:
            main(["run", "--target", "http://127.0.0.1:9/api", option])
        assert stop.value.code == 2 and capsys.readouterr().err == f"python -m conformance run: error: {said} (see python -m conformance run --help)\n"
    assert main(["run", "--target", "http://127.0.0.1:9/api", "--wait", "0", f"--junit={tmp_path / 'r.xml'}"]) == 2
    assert not (tmp_path / "r.xml").exists()


def test_verbose_says_each_case_on_a_line_of_its_own_however_many_workers_finish_at_once(calculator_url):
    """-v with 16 workers: as many lines as cases, each one verdict (workers finishing together glued 209 in a run)."""
    ran = subprocess.run([sys.executable, "-m", "conformance", "run", "--target", calculator_url, "-v", "--workers", "16"],
                         capture_output=True, text=True, timeout=300)
    lines = ran.stdout.splitlines()
    said = [line for line in lines if re.match(r" *(PASS|FAIL|FLAKY|ERRORED|KNOWN-FAILURE|STALE) ", line)]
    assert ran.returncode == 0 and len(said) == int(lines[-1].split()[0])
    assert not [line for line in said if len(re.findall(r"\b(PASS|FAIL)\b", line)) > 1]


def test_pytest_s_ways_of_choosing_and_ordering_cases(calculator_url, capsys):
    """--exclude leaves cases out, --ff runs last time's failures first, --durations shows the slowest,
    --level takes any case; list with nothing to list is a usage error."""
    adds = ["--target", calculator_url, "--id", "calculator/add/*"]
    status, lines = run(capsys, "run", *adds, "--exclude", "*/add/overflow", "--exclude", "*/add/fr*", "-v", "--level", "must",
                        "--workers", "1")
    assert status == 0 and [line.split()[-1] for line in lines if "PASS" in line] == [
        "calculator/add/integers", "calculator/add/negatives"]
    assert lines[-1].endswith(f"; {len(ALL) - 2} not selected by --id or --exclude")
    with serving(Mutated(calculator.service(), lambda request, message: (
            [{}, {"Ok_": {"result": 0}}] if request and "fn.add" in request[1] and request[1]["fn.add"].get("x") == -5
            else message))) as server:
        assert run(capsys, "run", "--target", server.url, "--id", "calculator/add/*")[0] == 1
    status, lines = run(capsys, "run", *adds, "--ff", "-v", "--workers", "1", "--durations", "2")
    assert lines[0] == "Running first what failed last time (--failed-first): 1 of the cases selected."
    assert lines[2].split() == ["PASS", "calculator/add/negatives"]
    slowest = lines.index("The 2 slowest cases:")
    assert [re.fullmatch(r" +\d+\.\d{3} s  (calculator/add/\w+)", line)[1] for line in lines[slowest + 1:-1]]
    assert status == 0 and len(lines) == slowest + 4
    with pytest.raises(SystemExit) as stop:
        main(["list", "--id", "no/such/**"])
    assert stop.value.code == 2 and "no case matches the --id, --exclude, -k and --level given" in capsys.readouterr().err


def test_settings_in_pyproject_toml_are_defaults_the_command_line_overrides(calculator_url, capsys, tmp_path):
    (tmp_path / "pyproject.toml").write_text(f'[tool.conformance]\ntarget = "{calculator_url}"\n'
                                             f'id = ["calculator/add/*"]\nexclude = "**/overflow"\nverbose = true\n')
    status, lines = run(capsys, "run")
    assert lines[0] == "Settings from [tool.conformance] in pyproject.toml: target, id, exclude, verbose"
    assert status == 0 and sum("PASS" in line for line in lines) == 3
    status, lines = run(capsys, "run", "--id", "calculator/add/integers")
    assert status == 0 and sum("PASS" in line for line in lines) == 1
    status, lines = run(capsys, "fuzz", "--function", "fn.add", "--max-examples", "3")  # (--target or --app)
    assert status == 0 and f"Fuzzing {calculator_url}: the calculator, 1 function, 3 calls each" in "\n".join(lines)
    for setting, said in (('targte = "x"', "targte: no command has this option; did you mean target?"),
                          ("workers = 0", "workers: '0' is not a positive integer"),
                          ("verbose = 1", "verbose: a flag takes true or false, not 1"),
                          ("timeout = [1]", "timeout: takes one value, not a list"),
                          ("level = 'all'", 'level: "all" is not one of MUST, SHOULD, MAY'),
                          ("[tool", "Expected ']' at the end of a table declaration (at line 2, column 6)")):
        (tmp_path / "pyproject.toml").write_text(f"[tool.conformance]\n{setting}\n")
        with pytest.raises(SystemExit) as stop:
            main(["run"])
        error = capsys.readouterr().err
        assert stop.value.code == 2 and error.startswith("python -m conformance: error: pyproject.toml: ")
        assert error.endswith(f"{said}\n") and error.count("\n") == 1


HOSTILE_FILES = {  # what a file given to the suite may be, and the line that says why it is not read
    "device": (lambda path: path.symlink_to("/dev/zero"), "{path}: not a regular file"),
    "pipe": (lambda path: os.mkfifo(path), "{path}: not a regular file"),
    "huge": (lambda path: path.write_bytes(b" " * (16 * 1024 * 1024 + 1)), "{path}: over 16 MiB, more than the suite reads"),
    "binary": (lambda path: path.write_bytes(b"\xff\xfe"), "{path}: not UTF-8 text (byte 0 is not)"),
    "absent": (lambda path: None, "{path}: cannot be read: No such file or directory"),
}


DEEP = {"pyproject.toml": "[tool.conformance]\nid = " + "[" * 100_000 + "]" * 100_000 + "\n",
        "known.txt": None, "manifest.json": "[" * 100_000 + "]" * 100_000, "cases.json": "[" * 100_000 + "]" * 100_000}


@pytest.mark.parametrize("kind", HOSTILE_FILES)
@pytest.mark.parametrize("name, command", [
    ("pyproject.toml", ["run", "--target", "http://127.0.0.1:9/api"]),
    ("known.txt", ["run", "--target", "http://127.0.0.1:9/api", "--known-failures", "known.txt"]),
    ("cases.json", ["run", "--target", "http://127.0.0.1:9/api", "--cases", "cases.json"]),
    ("manifest.json", ["matrix", "--manifest", "manifest.json"]),
])
def test_a_file_that_is_a_device_a_pipe_huge_or_deep_is_one_line_and_exit_2(kind, name, command, capsys):
    """Whatever the file is, the suite neither hangs, nor fills its memory, nor shows a traceback."""
    plant, said = HOSTILE_FILES[kind]
    if name == "pyproject.toml" and kind == "absent":
        plant, said = (lambda path: path.write_text(DEEP[name]), "{path}: nests arrays and tables deeper than the suite reads")
    elif kind == "absent" and DEEP[name]:
        plant, said = (lambda path: path.write_text(DEEP[name]), "{path}: nests arrays and objects deeper than the suite reads")
    plant(Path(name))
    started = time.monotonic()
    with pytest.raises(SystemExit) as stop:
        main(command)
    error = capsys.readouterr().err
    assert stop.value.code == 2 and error.count("\n") == 1 and said.format(path=name) in error, error
    assert time.monotonic() - started < 30  # (no hang; room for a busy machine)


@pytest.mark.parametrize("command", [["run", "--target", "http://127.0.0.1:9/api"], ["fuzz", "--target", "http://127.0.0.1:9/api"]])
def test_a_timeout_longer_than_a_day_is_a_usage_error_not_an_overflow(command, capsys):
    with pytest.raises(SystemExit) as stop:
        main([*command, "--timeout", "1e308"])
    error = capsys.readouterr().err
    assert stop.value.code == 2 and "'1e308' is not a number of seconds from 0 to 86,400 (a day)" in error
    assert error.count("\n") == 1


@pytest.mark.parametrize("planted", ["link", "fifo", "large"])
def test_what_a_checkout_plants_in_the_cache_is_never_followed_or_read_whole(planted, testbed_url, tmp_path, capsys):
    """A link in the record's place is replaced, not written through; a pipe or a huge file is not read."""
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("kept")
    folder = Path(".conformance_cache")
    folder.mkdir()
    record = folder / "last-failed.json"
    {"link": lambda: record.symlink_to(elsewhere), "fifo": lambda: os.mkfifo(record),
     "large": lambda: record.write_text(" " * 5_000_000 + "{}")}[planted]()
    status, lines = run(capsys, "run", "--target", testbed_url, "--lf", "--id", "envelope/**")
    assert status == 0 and lines[0].startswith("No failures recorded by the last run")
    assert elsewhere.read_text() == "kept" and not record.is_symlink() and json.loads(record.read_text()) == {"server": []}


def test_a_cases_file_of_one_s_own_is_held_to_the_fixture_format_and_the_suite_s_requirements(tmp_path, capsys):
    """--cases FILE: a file that is not fixtures, or a case citing a requirement the suite lacks, is a usage
    error naming the case (a run once went on, and its failure read 'breaks nope.req: ' with nothing after)."""
    case = {"id": "mine/ping", "description": "Ping answers.", "requirements": [], "level": "MUST", "requires": [],
            "features": [], "steps": [{"request": {"message": [{}, {"fn.ping_": {}}]}, "response": {"message": [{}, {"Ok_": {}}]}}]}
    for requirements, said in ((["service.one-cal"], "cites service.one-cal, which is no requirement of the suite: did you mean "
                                                    "service.one-call?"),
                               (["nope.req"], "cites nope.req, which is no requirement of the suite (python -m conformance "
                                              "coverage lists them)")):
        (tmp_path / "mine.json").write_text(json.dumps({"description": "Mine.", "cases": [{**case, "requirements": requirements}]}))
        with pytest.raises(SystemExit) as stop:
            main(["run", "--target", "http://127.0.0.1:9/api", "--cases", str(tmp_path / "mine.json")])
        error = capsys.readouterr().err
        assert stop.value.code == 2 and f"--cases {tmp_path / 'mine.json'}: cases[0] (mine/ping) {said}" in error


def test_pytest_s_k_and_q(calculator_url, capsys):
    """-k takes words the ids hold, joined by and, or, not and brackets, as pytest's does (a bad expression is
    a usage error); -q says each failure in a line and the summary, without diffs or causes."""
    status, lines = run(capsys, "run", "--target", calculator_url, "-k", "calculator and add and not (overflow or fr "
                        "or evaluate)", "-v")
    assert status == 0 and sorted(line.split()[-1] for line in lines if "PASS" in line) == [
        "calculator/add/integers", "calculator/add/negatives"]
    assert lines[-1].endswith(f"; {len(ALL) - 2} not selected by -k")
    for expression, said in (("add and", "a word was expected at its end"), ("(add", "a bracket is not closed")):
        with pytest.raises(SystemExit) as stop:
            main(["run", "--target", calculator_url, "-k", expression])
        assert stop.value.code == 2 and f"-k '{expression}': {said}" in capsys.readouterr().err
    with serving(Mutated(calculator.service(), lambda request, message: (
            [{}, {"Ok_": {"result": 0}}] if request and "fn.add" in request[1] else message))) as server:
        status, lines = run(capsys, "run", "--target", server.url, "-k", "calculator/add", "-q")
    failing = [line for line in lines if line.startswith("FAIL ")]
    assert status == 1 and failing and all(re.fullmatch(r"FAIL calculator/add/\S+: step \d of \d: .+", line)
                                           for line in failing)
    assert lines == [lines[0], *failing, lines[-1]] and "curl" not in "\n".join(lines)

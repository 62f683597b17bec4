"""An application fuzzed in process (fuzz --app, targets/inprocess.py) and from a test suite
(fuzz/application.py): the same bugs as over HTTP, and a fresh application to replay on."""

import importlib
import json
import logging
import os
import re
import subprocess
import sys
import time

import pytest

from conformance.__main__ import main
from conformance.fuzz.verdicts import chosen
from conformance.runs.settings import Settings
from conformance.fuzz.application import fuzz_application
from reference import Service, load
from reference.services import calculator
from reference.transports import wsgi
from tests.support import ROOT
from tests.support.faulty import FAULTY, HANDLERS, failures, fuzzing
from tests.support.servers import serving

APPLICATIONS = """
from reference import Service, load
from reference.transports import asgi, wsgi
from tests.support.faulty import FAULTY, HANDLERS

def wsgi_app():
    return wsgi.make_application(Service(load(FAULTY), HANDLERS))

asgi_app = asgi.make_application(Service(load(FAULTY), HANDLERS))
"""


@pytest.mark.parametrize("spec", ["faulty_apps:wsgi_app", "faulty_apps:wsgi_app()", "faulty_apps:asgi_app"])
def test_an_application_fuzzed_in_process_fails_as_it_does_over_http(spec, capsys, tmp_path, monkeypatch):
    """--app MODULE:NAME calls a WSGI or ASGI application (or its factory) directly, no server, no port:
    the same bugs, found by the same calls, as over HTTP."""
    (tmp_path / "faulty_apps.py").write_text(APPLICATIONS)
    monkeypatch.syspath_prepend(str(tmp_path))
    with serving(Service(load(FAULTY), HANDLERS)) as server:
        _, over_http, _ = fuzzing(capsys, server.url)
    status = main(["fuzz", "--app", spec, "--seed", "7"])
    in_process = capsys.readouterr().out.splitlines()
    assert status == 1 and failures(in_process) == failures(over_http), "\n".join(in_process)
    assert in_process[0].startswith(f"Fuzzing {spec} (in process): a service of another schema, 4 functions")
    assert any(line.strip().startswith("curl -s -i -X POST http://127.0.0.1:8000/api ") for line in in_process)


@pytest.mark.parametrize("spec, said", [
    ("faulty_apps", "write it as module:application"), ("no_such_module:app", "cannot import no_such_module"),
    ("faulty_apps:nothing", "faulty_apps has no callable nothing"),
    ("faulty_apps:FAULTY", "faulty_apps has no callable FAULTY")])
def test_an_application_that_cannot_be_called_is_one_line_and_exit_2(spec, said, capsys, tmp_path, monkeypatch):
    (tmp_path / "faulty_apps.py").write_text(APPLICATIONS)
    monkeypatch.syspath_prepend(str(tmp_path))
    status = main(["fuzz", "--app", spec])
    error = capsys.readouterr().err
    assert status == 2 and said in error and error.count("\n") == 1, error


HANGING = """
import time
from reference import Service, load
from reference.transports import wsgi

def app():
    entries = [{"info.Hang": {}}, {"fn.hang": {"x": "integer"}, "->": [{"Ok_": {}}]}]
    return wsgi.make_application(Service(load(entries), {"fn.hang": lambda a, h: time.sleep(3600)}))
"""


def test_an_application_that_never_answers_is_told_and_the_run_still_ends(tmp_path):
    """A handler that never returns: each call is no answer within --timeout, and the process ends
    (the thread it holds kept the interpreter from exiting for the hour it sleeps)."""
    (tmp_path / "hanging_apps.py").write_text(HANGING)
    run = subprocess.run([sys.executable, "-m", "conformance", "fuzz", "--app", "hanging_apps:app", "--max-examples",
                          "1", "--timeout", "0.5", "--seed", "1"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert run.returncode == 1 and "FAIL fuzz/fn.hang/message" in run.stdout, run.stdout + run.stderr
    assert "message: no answer" in run.stdout


def test_pytest_users_fuzz_their_application_from_their_own_tests(caplog):
    """fuzz_application(app) is the fuzz of an application in process, as a test: quiet when it passes,
    an AssertionError naming each failure and the seed when it does not."""
    caplog.set_level(logging.CRITICAL, logger="reference")  # (the faulty handlers' tracebacks)
    results = fuzz_application(calculator.wsgi(), seed=1, max_examples=10, time_limit=30)
    assert {result.status for result in results} <= {"pass", "not-run"} and len(results) == 13 * len(chosen(Settings()))
    with pytest.raises(AssertionError) as failed:
        fuzz_application(wsgi.make_application(Service(load(FAULTY), HANDLERS)), seed=7)
    told = str(failed.value)
    assert told.startswith("fuzzing ") and " with seed 7: 3 failing" in told
    assert {"FAIL fuzz/fn.typo/handler", "FAIL fuzz/fn.crash/handler", "FAIL fuzz/fn.tag/handler"} == set(
        re.findall(r"FAIL fuzz/fn\.\w+/\w+", told))


def test_a_sequence_is_shrunk_to_the_calls_it_needs_on_a_fresh_application(capsys, tmp_path, monkeypatch):
    """In process, a factory makes a fresh application: the calls a failure came after are replayed on one,
    each left out in turn, and only those it needs are kept (over HTTP, the latest five are shown)."""
    (tmp_path / "counter_apps.py").write_text("from reference import Service, load\nfrom reference.transports import wsgi\n"
                                              "from tests.support.faulty import COUNTER, counter_handlers\n\n"
                                              "def counter_app():\n"
                                              "    return wsgi.make_application(Service(load(COUNTER), counter_handlers()))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    fixtures = tmp_path / "cases" / "fuzz.json"
    fixtures.parent.mkdir()
    status = main(["fuzz", "--app", "counter_apps:counter_app", "--seed", "7", "--fixtures", str(fixtures)])
    text = capsys.readouterr().out
    assert status == 1 and "replayed on a fresh application, it fails after 1 earlier call (fn.reset), each needed: " \
                           "without any one of them it passes" in text, text
    [written] = json.loads(fixtures.read_text())["cases"]
    assert [list(step["request"]["message"][1]) for step in written["steps"]] == [["fn.reset"], ["fn.getCounter"]]


SLOW_TO_MAKE = """
from reference import Service, load
from reference.transports import wsgi

spent = [0.0]  # seconds of the run's clock that making the application takes (the test's clock reads it)

def app():
    spent[0] += 3600  # (an application that takes an hour to make: a schema of 100,000 functions took minutes)
    entries = [{"info.Slow": {}}, {"fn.f": {"x": "integer"}, "->": [{"Ok_": {}}]}]
    return wsgi.make_application(Service(load(entries), {"fn.f": lambda a, h: {"Ok_": {}}}))
"""


def test_the_time_limit_bounds_the_whole_run_its_preparation_too(tmp_path, monkeypatch, capsys):
    """--time-limit counted from after the schema was read and the functions were ready: a schema of
    100,000 functions and --time-limit 5 ran past 180 s. Now the run's start is where it counts from, and
    what it left undone is said. (The run's clock is moved on by the hour its application takes to make.)"""
    (tmp_path / "slow_apps.py").write_text(SLOW_TO_MAKE)
    monkeypatch.syspath_prepend(str(tmp_path))
    spent, clock = importlib.import_module("slow_apps").spent, time.monotonic
    monkeypatch.setattr(time, "monotonic", lambda: clock() + spent[0])
    status = main(["fuzz", "--app", "slow_apps:app", "--time-limit", "60", "--seed", "1"])
    out = capsys.readouterr().out
    assert status == 5 and spent == [3600], out
    assert "fn.f: not run (the time limit ended the run before its calls)" in out
    assert re.search(r"^Fuzzed 0 of 1 function with \d+ requests? in ", out, re.M), out


def test_a_test_suite_lists_its_known_failures_and_is_not_flooded_by_the_applications_log(caplog):
    """(fuzz_application took no known failures, and every call that made a handler raise put its traceback
    in the test's captured log: 120 lines for one run.) The known failures are reported, not raised; the
    application's lines are held back and counted in the failure, if there is one."""
    application = wsgi.make_application(Service(load(FAULTY), HANDLERS))
    results = fuzz_application(application, seed=7, known_failures=["fuzz/fn.typo/handler*", "fuzz/fn.crash/*",
                                                                    "fuzz/fn.tag/handler"])
    assert sorted(r.case.id for r in results if r.status == "known-failure") == [
        "fuzz/fn.crash/handler", "fuzz/fn.tag/handler", "fuzz/fn.typo/handler"]
    assert not [record for record in caplog.records if record.name.startswith("reference")], caplog.text
    with pytest.raises(AssertionError) as failed:
        fuzz_application(application, seed=7, known_failures=["fuzz/fn.typo/handler*"])
    assert re.search(r"\(the application logged \d+ lines while it was fuzzed, held back from the captured log; the "
                     r"first: handler for fn\.crash raised", str(failed.value)), str(failed.value)
    assert not [record for record in caplog.records if record.name.startswith("reference")]


def test_a_failing_fuzz_shows_the_tests_line_not_the_fuzzers(tmp_path):
    """pytest's traceback of a failing fuzz_application ends at the test that called it."""
    (tmp_path / "test_mine.py").write_text(
        "from reference import Service, load\nfrom reference.transports import wsgi\n"
        "from conformance.fuzz import fuzz_application\nfrom tests.support.faulty import FAULTY, HANDLERS\n\n"
        "def test_mine():\n"
        "    fuzz_application(wsgi.make_application(Service(load(FAULTY), HANDLERS)), seed=7, max_examples=5)\n")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                          str(tmp_path / "test_mine.py")], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert run.returncode == 1 and "AssertionError: fuzzing " in run.stdout, run.stdout + run.stderr
    assert "fuzz_application(wsgi.make_application" in run.stdout and "__tracebackhide__" not in run.stdout
    assert "conformance/fuzz/application.py" not in run.stdout, run.stdout

"""conformance/targets/inprocess.py: an application called in process, as a server would call it."""

import os
import subprocess
import sys
import threading

import pytest

from conformance.targets.inprocess import Application
from tests.support import ROOT

PING = [{}, {"fn.ping_": {}}]


def test_an_application_that_calls_sys_exit_is_answered_as_one_that_raised():
    """sys.exit() in a handler ended the fuzz run with status 0 after one line: a false pass in CI."""
    def quitting(environ, start_response):
        sys.exit(0)
    assert Application(quitting).post(PING) == (500, b"the application raised SystemExit: 0", "text/plain")


def endless_wsgi(closed):
    def application(environ, start_response):
        start_response("200 OK", [("Content-Type", "application/json")])
        try:
            while True:
                yield b""
        finally:
            closed.set()
    return application


def endless_asgi(closed):
    async def application(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        try:
            while True:
                await send({"type": "http.response.body", "body": b"", "more_body": True})
        finally:
            closed.set()
    return application


@pytest.mark.parametrize("make", [endless_wsgi, endless_asgi])
def test_an_answer_without_end_is_no_answer_and_is_not_collected_once_its_caller_stops_waiting(make):
    """An endless stream of empty parts held 2.6 GiB after 30 s, still collected after the timeout: now
    nothing empty is kept, and once the caller stops waiting, the stream is stopped."""
    closed = threading.Event()
    application = Application(make(closed), timeout=0.3)
    with pytest.raises(TimeoutError, match="no answer within 0.3 s"):
        application.post(PING)
    assert closed.wait(30)  # (the application's stream ended: nothing goes on collecting it)


QUITTING = """
import os, sys
from reference import Service, load
from reference.transports import wsgi

def app():
    entries = [{"info.Quit": {}}, {"fn.quit": {"how": "string"}, "->": [{"Ok_": {}}]}]
    return wsgi.make_application(Service(load(entries), {"fn.quit": lambda a, h: sys.exit(0)}))
"""


def test_a_run_whose_application_calls_sys_exit_fails_with_its_summary(tmp_path):
    (tmp_path / "quitting_apps.py").write_text(QUITTING)
    run = subprocess.run([sys.executable, "-m", "conformance", "fuzz", "--app", "quitting_apps:app", "--max-examples",
                          "5", "--seed", "1"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert run.returncode == 1 and "FAIL fuzz/fn.quit/" in run.stdout, run.stdout + run.stderr
    assert "the application raised SystemExit: 0" in run.stdout and run.stdout.splitlines()[-1].startswith("Fuzzed ")

"""conformance/targets/inprocess.py: an application called in process, as a server would call it."""

import os
import subprocess
import sys
import threading

import pytest

from conformance.targets.inprocess import Application
from tests.support import ROOT

PING = [{}, {"fn.ping_": {}}]


@pytest.mark.parametrize("leave, said", [(sys, b"SystemExit: 0"), (os, b"Exited: os._exit(0) called")])
def test_an_application_that_calls_sys_exit_or_os_exit_is_answered_as_one_that_raised(leave, said):
    """sys.exit() or os._exit() in a handler ended the fuzz run with status 0 after one line: a false pass
    in CI; a process the application forks still exits as it asks."""
    def quitting(environ, start_response):
        if leave is os:
            child = os.fork()
            if child == 0:
                os._exit(7)
            assert os.waitpid(child, 0)[1] >> 8 == 7
            os._exit(0)
        sys.exit(0)
    assert Application(quitting).post(PING) == (500, b"the application raised " + said, "text/plain")
    assert os._exit.__module__ == "posix"  # (as it was, once the call is over)


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
    return wsgi.make_application(Service(load(entries), {"fn.quit": lambda a, h: LEAVE(0)}))
"""


@pytest.mark.parametrize("leave, said", [("sys.exit", "SystemExit: 0"), ("os._exit", "Exited: os._exit(0) called")])
def test_a_run_whose_application_calls_sys_exit_or_os_exit_fails_with_its_summary(leave, said, tmp_path):
    (tmp_path / "quitting_apps.py").write_text(QUITTING.replace("LEAVE", leave))
    run = subprocess.run([sys.executable, "-m", "conformance", "fuzz", "--app", "quitting_apps:app", "--max-examples",
                          "5", "--seed", "1"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert run.returncode == 1 and "FAIL fuzz/fn.quit/" in run.stdout, run.stdout + run.stderr
    assert f"the application raised {said}" in run.stdout and run.stdout.splitlines()[-1].startswith("Fuzzed ")

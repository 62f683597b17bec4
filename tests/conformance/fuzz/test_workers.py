"""conformance/fuzz/workers.py: fuzz --workers, whose processes end with their run."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from reference.services import calculator
from tests.support import ROOT
from tests.support.servers import serving, until


class Counting:
    """A service that counts the requests it answers."""

    def __init__(self, service):
        self.service, self.schema, self.answered = service, service.schema, 0

    def handle(self, data, client=""):
        self.answered += 1
        return self.service.handle(data, client)


def alive(pid):
    """Whether a process runs (a zombie, ended but not yet reaped, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def workers_of(pid):
    """The processes `pid` started (its workers), from /proc."""
    children = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(child) for child in children.read_text().split()] if children.exists() else []


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads processes from Linux's /proc")
@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL])
def test_the_workers_of_a_run_end_with_it(how):
    """After SIGTERM the run went on to its --time-limit (47,000 more requests); after SIGKILL its workers
    went on fuzzing the target. Now SIGTERM ends it as Ctrl-C does, with what the workers found so far,
    and a worker whose run is gone stops."""
    service = Counting(calculator.service())
    with serving(service) as server:
        run = subprocess.Popen([sys.executable, "-m", "conformance", "fuzz", "--target", server.url, "--workers", "2",
                                "--time-limit", "600", "--max-examples", "3000", "--seed", "1"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                               env={**os.environ, "PYTHONPATH": str(ROOT)})
        try:
            until(lambda: len(workers_of(run.pid)) == 2, seconds=120)  # (both under way: after fn.login, alone)
            workers = workers_of(run.pid)
            answered = service.answered
            until(lambda: service.answered > answered + 10)  # (and calling)
            run.send_signal(how)
            out, _ = run.communicate(timeout=120)  # (not the 600 s of its time limit)
            until(lambda: not any(map(alive, workers)), seconds=60)
        finally:
            run.kill()
    if how == signal.SIGTERM:
        assert run.returncode == 130 and out.splitlines()[-1].startswith("Fuzzed "), out

"""What the mock's tests share: a call and its stub, the calculator's schema file, and the mock started
as a command."""

import subprocess
import sys

from tests.support import ROOT
from tests.support.servers import Connection, started

CALCULATOR = ROOT / "conformance" / "calculator.json"


ADD = {"fn.add": {"x": 1, "y": 2}}


OK = {"Ok_": {}}


def stub(call, result, **options):
    return {"fn.createStub_": {"stub": {**call, "->": result}, **options}}


class start_mock:
    """`python -m reference.mock ARGS` on a port the system picks, until stop()."""

    def __init__(self, *args):
        self.process, self.banner, url = started("mock", *args)
        self.connection = Connection(url)

    def stop(self):
        self.process.terminate()
        self.process.communicate(timeout=10)


def run_mock(*args):
    """`python -m reference.mock ARGS`, run to its end (a minute at most)."""
    return subprocess.run([sys.executable, "-m", "reference.mock", *args], capture_output=True, text=True,
                          timeout=60)

"""The independent implementation (telepact-cli), in a throwaway virtual environment.

Interop tests use it as a live oracle; it is never a dependency of `reference`
or `conformance`. Set PEER_VENV to an existing virtual environment that has it
installed to skip the install."""

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

PEER = "telepact-cli==1.0.0a339"


def install(directory):
    """The bin directory of a virtual environment holding the peer; skip the test if impossible."""
    if os.environ.get("PEER_VENV"):
        return Path(os.environ["PEER_VENV"]) / "bin"
    venv = Path(directory) / "peer"
    try:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", PEER], check=True,
                       capture_output=True, timeout=300)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as error:
        output = getattr(error, "stderr", b"") or b""
        pytest.skip(f"cannot install {PEER} for interop tests: {output.decode()[-300:] or error}")
    return venv / "bin"


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def running(bin_dir, *args, port):
    """Run `telepact ARGS --port PORT` until its /api answers fn.ping_; yield its URL."""
    process = subprocess.Popen([str(bin_dir / "telepact"), *args, "--port", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/api"
    try:
        wait_for(url, process)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def wait_for(url, process=None, seconds=60):
    """Wait until the server at `url` answers fn.ping_."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            pytest.fail(f"the peer exited with {process.returncode} before answering")
        try:
            request = urllib.request.Request(url, data=json.dumps([{}, {"fn.ping_": {}}]).encode())
            with urllib.request.urlopen(request, timeout=2) as response:
                response.read()
                return
        except OSError:
            time.sleep(0.2)
    pytest.fail(f"nothing answered at {url} within {seconds} s")

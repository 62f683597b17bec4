"""The independent implementation (telepact-cli), in a throwaway virtual environment.

Interop tests use it as a live oracle; it is never a dependency of `reference`
or `conformance`. The test run starts installing it in the background as it
begins (`start_installing`, from conftest.py), so that other tests run
meanwhile; the interop tests wait for it (`installed`). Set PEER_VENV to an
existing virtual environment that has it installed to skip the install."""

import contextlib
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

PEER = "telepact-cli==1.0.0a339"


def start_installing():
    """Start installing the peer in the background, unless PEER_VENV names one; return a
    line saying what happens, for the test run's header."""
    if os.environ.get("PEER_VENV"):
        return f"interop: the independent implementation from PEER_VENV={os.environ['PEER_VENV']}"
    directory = Path(tempfile.mkdtemp(prefix="sdms-peer-"))
    venv, log = directory / "venv", directory / "install.log"
    script = (f"{shlex.quote(sys.executable)} -m venv {venv} && {venv}/bin/pip install -q {PEER}; "
              f"echo $? > {directory / 'status'}")
    with log.open("w") as output:
        installer = subprocess.Popen(["sh", "-c", script], stdout=output, stderr=subprocess.STDOUT,
                                     start_new_session=True)
    os.environ["PEER_VENV"], os.environ["PEER_INSTALLING"] = str(venv), str(directory)
    os.environ["PEER_INSTALLER"] = str(installer.pid)
    return f"interop: installing {PEER} into {venv} in the background (PEER_VENV=DIR uses one already made)"


def stop_installing():
    """Remove the environment start_installing made, once the run is over."""
    directory = os.environ.pop("PEER_INSTALLING", None)
    if directory:
        os.environ.pop("PEER_VENV", None)
        with contextlib.suppress(ProcessLookupError):  # an install still under way would write on after
            os.killpg(int(os.environ.pop("PEER_INSTALLER")), signal.SIGKILL)
        shutil.rmtree(directory, ignore_errors=True)


def installed(seconds=300):
    """The bin directory of the peer's environment, once installed; skip the test if impossible."""
    venv = Path(os.environ.get("PEER_VENV") or "")
    directory = os.environ.get("PEER_INSTALLING")
    if directory:
        status, deadline = Path(directory) / "status", time.monotonic() + seconds
        while not status.exists() or not status.read_text().strip():
            if time.monotonic() > deadline:
                pytest.skip(f"{PEER} was not installed within {seconds} s")
            time.sleep(0.2)
        if status.read_text().strip() != "0":
            tail = (Path(directory) / "install.log").read_text()[-300:]
            pytest.skip(f"cannot install {PEER} for interop tests: {tail}")
    if not (venv / "bin" / "telepact").exists():
        pytest.skip(f"no {PEER} in {venv}")
    return venv / "bin"


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def running(bin_dir, *args, port=None, tries=3):
    """Run `telepact ARGS --port PORT` until its /api answers fn.ping_; yield its URL.

    A port found free may be taken by another process before the peer binds it
    (tests run in parallel), so a peer that exits at once is started again on a
    new port; its error output is shown when it never starts."""
    for attempt in range(tries):
        port = port if attempt == 0 and port else free_port()
        errors = tempfile.TemporaryFile()
        process = subprocess.Popen([str(bin_dir / "telepact"), *args, "--port", str(port)],
                                   stdout=subprocess.DEVNULL, stderr=errors)
        url = f"http://127.0.0.1:{port}/api"
        try:
            if _started(url, process):
                yield url
                return
        finally:
            process.terminate()
            process.wait(timeout=10)
        errors.seek(0)
        tail = errors.read()[-600:].decode(errors="replace")
    pytest.fail(f"the peer exited with {process.returncode} before answering, {tries} times; "
                f"its last error output: {tail}")


def _started(url, process):
    """Whether the peer answers at `url`; False when it exits first."""
    try:
        wait_for(url, process)
        return True
    except Exited:
        return False


class Exited(Exception):
    """The peer's process ended before it answered."""


def wait_for(url, process=None, seconds=60):
    """Wait until the server at `url` answers fn.ping_."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise Exited(f"the peer exited with {process.returncode} before answering")
        try:
            request = urllib.request.Request(url, data=json.dumps([{}, {"fn.ping_": {}}]).encode())
            with urllib.request.urlopen(request, timeout=2) as response:
                response.read()
                return
        except OSError:
            time.sleep(0.2)
    pytest.fail(f"nothing answered at {url} within {seconds} s")

"""Shared fixtures: real servers on free ports (the reference's, and the independent implementation's),
certificates, users, and the reference without its engine room."""

import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import msgpack
import pytest
import trustme

from reference.services import calculator, testbed
from tests.support import ROOT, peer
from tests.support.servers import Connection, serving


@pytest.fixture(scope="session")
def without_the_engine(tmp_path_factory):
    """How to run Python on a copy of the checkout without reference/engine/: `started()`'s `python`
    and the options for it. Python starts without site (-S), so that the editable install of this
    checkout cannot hand it the engine room back; msgpack comes from the path it is installed on."""
    copy = tmp_path_factory.mktemp("core-alone")
    for package in ("reference", "conformance"):
        shutil.copytree(ROOT / package, copy / package, ignore=shutil.ignore_patterns("engine", "__pycache__"))
    assert not (copy / "reference" / "engine").exists()
    path = f"{copy}{os.pathsep}{Path(msgpack.__file__).parent.parent}"
    return (sys.executable, "-S"), {"cwd": copy, "env": {**os.environ, "PYTHONPATH": path}}


@pytest.fixture(scope="session")
def tls(tmp_path_factory):
    """A private certificate authority and a server certificate for 127.0.0.1 that it signed:
    (the server's SSLContext, the CA's certificate file, the server's certificate and key file)."""
    authority = trustme.CA()
    certificate = authority.issue_cert("127.0.0.1")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    certificate.configure_cert(context)
    folder = tmp_path_factory.mktemp("tls")
    authority.cert_pem.write_to_path(str(folder / "ca.pem"))
    certificate.private_key_and_cert_chain_pem.write_to_path(str(folder / "server.pem"))
    return context, str(folder / "ca.pem"), str(folder / "server.pem")


@pytest.fixture(scope="session")
def calculator_url():
    with serving(calculator.service()) as server:
        yield server.url


@pytest.fixture(scope="session")
def testbed_url():
    with serving(testbed.service()) as server:
        yield server.url


@pytest.fixture
def connection(calculator_url):
    connection = Connection(calculator_url)
    yield connection
    connection.http.close()


@pytest.fixture
def user():
    """Ephemeral credentials for a namespace no other test uses."""
    return {"@auth_": {"Ephemeral": {"username": f"user-{uuid.uuid4().hex[:8]}"}}}


def pytest_configure(config):
    # (Ctrl-C reaches the commands the tests start as a terminal's does, even when pytest was started as
    # a background job: `pytest &` in a script ignores SIGINT, and so, inherited, would all they start)
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    # (the client keeps the schemas it fetched in the user's cache folder: the tests' own is this one)
    config.cache_home = os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="sdms-cache-")
    if not hasattr(config, "workerinput"):  # once, in the process that starts the test workers
        config.peer_line = peer.start_installing()


def pytest_report_header(config):
    return getattr(config, "peer_line", None)


def pytest_unconfigure(config):
    shutil.rmtree(config.cache_home, ignore_errors=True)
    if not hasattr(config, "workerinput"):
        peer.stop_installing()


@pytest.fixture(scope="session")
def peer_bin():
    """The bin directory of the independent implementation's throwaway environment."""
    return peer.installed()


@pytest.fixture(scope="session")
def peer_demo(peer_bin):
    """The URL of the independent implementation's demo calculator."""
    with peer.running(peer_bin, "demo-server", port=peer.free_port()) as url:
        yield url


@pytest.fixture(scope="session")
def peer_mock(peer_bin, calculator_url):
    """The URL of the independent implementation's mock, built from our calculator's URL."""
    with peer.running(peer_bin, "mock", "--http-url", calculator_url, port=peer.free_port()) as url:
        yield url


@pytest.fixture(scope="session")
def peer_testbed_mock(peer_bin, testbed_url):
    """The URL of the independent implementation's mock, built from our testbed's URL."""
    with peer.running(peer_bin, "mock", "--http-url", testbed_url, port=peer.free_port()) as url:
        yield url


@pytest.fixture(scope="session")
def peer_testbed(peer_bin):
    """The URL of the independent implementation's library serving the testbed (support/peer_testbed.py)."""
    process = subprocess.Popen([str(peer_bin / "python"), str(ROOT / "tests" / "support" / "peer_testbed.py"),
                                str(ROOT / "conformance" / "testbed.json"), "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    url = f"http://127.0.0.1:{process.stdout.readline().strip()}/api"  # the port it was given by the system
    try:
        peer.wait_for(url, process)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)

"""Targets the conformance suite's tests share: mocks, the teaching core alone, a server of another
schema; and each test in a folder of its own (runs keep what failed in the current directory)."""

import contextlib
import subprocess

import pytest

from reference import Service, load, mocking
from reference.services import calculator, testbed
from tests.support.servers import serving, started


@pytest.fixture(autouse=True)
def _elsewhere(tmp_path, monkeypatch):
    """Runs keep their failures in the current directory (--last-failed): each test in a folder of its own."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture(scope="module")
def calculator_mock_url():
    with serving(mocking.service(calculator.entries())) as server:
        yield server.url


@pytest.fixture(scope="module")
def testbed_mock_url():
    with serving(mocking.service(testbed.service().schema)) as server:
        yield server.url


@contextlib.contextmanager
def alone(without_the_engine, module, *args):
    """`python -m reference.MODULE --plain ARGS`, run from a copy of the checkout without the engine room
    (its log, which tells of every invalid result the cases ask a handler for, is not kept)."""
    python, options = without_the_engine
    process, _, url = started(module, "--plain", *args, python=python, stderr=subprocess.DEVNULL, **options)
    try:
        yield url
    finally:
        process.terminate()
        process.communicate(timeout=20)


@pytest.fixture(scope="module")
def calculator_plain_url(without_the_engine):
    """The calculator served by the teaching core alone, where the engine room is absent."""
    with alone(without_the_engine, "server") as url:
        yield url


@pytest.fixture(scope="module")
def testbed_plain_url(without_the_engine):
    with alone(without_the_engine, "server", "--service", "testbed") as url:
        yield url


@pytest.fixture(scope="module")
def testbed_plain_mock_url(without_the_engine, testbed_plain_url, tmp_path_factory):
    cache = tmp_path_factory.mktemp("plain-mock") / "schema.json"
    with alone(without_the_engine, "mock", "--schema-url", testbed_plain_url, "--cache", str(cache)) as url:
        yield url


OTHER_SCHEMA = [{"info.Todo": {}}, {"struct.Item": {"title": "string", "done": "boolean", "due!": "integer?"}},
                {"fn.add": {"item": "struct.Item"}, "->": [{"Ok_": {"id": "integer"}}, {"ErrorDuplicate": {}}]}]


@pytest.fixture(scope="module")
def other_url():
    """A server of a schema the suite has never seen."""
    with serving(Service(load(OTHER_SCHEMA), {"fn.add": lambda a, h: {"Ok_": {"id": 1}}})) as server:
        yield server.url

"""The type hints of the public API, checked as CI checks them (mypy, configured in pyproject.toml)."""

import subprocess
import sys

from tests.support import ROOT

USE = '''
from reference import Client, Refusal, Server, Service, load

schema = load([{"fn.add": {"x": "number", "y": "number"}, "->": [{"Ok_": {"result": "number"}}]}])
service = Service(schema, {"fn.add": lambda arguments, headers: {"Ok_": {"result": 1}}})
server = Server(service, port=0)
url: str = server.url
headers, body = Client(url, mode="binary").call("fn.add", {"x": 1, "y": 2})
'''
MISUSE = '''
from reference import Client, Server, load
Client(8000)
Server(load("schema.json"), port="8000")
'''


def mypy(*args):
    return subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=300)


def test_the_package_type_checks():
    run = mypy()
    assert run.returncode == 0, run.stdout


def test_code_using_the_api_is_checked_against_its_hints(tmp_path):
    (tmp_path / "use.py").write_text(USE)
    (tmp_path / "misuse.py").write_text(MISUSE)
    assert mypy(str(tmp_path / "use.py")).returncode == 0
    run = mypy(str(tmp_path / "misuse.py"))
    assert 'Argument 1 to "Client" has incompatible type "int"; expected "str"' in run.stdout
    assert 'Argument 1 to "Server" has incompatible type "Schema"' in run.stdout
    assert 'Argument "port" to "Server" has incompatible type "str"; expected "int"' in run.stdout

"""Stubs read from files at start (mocking/stub_files.py): loaded and listed, and every problem of every
file told where it is."""

import json
import os
import time

import pytest

from reference import mock, mocking
from reference.services import calculator
from tests.support.mocks import ADD, CALCULATOR, run_mock, start_mock


def test_stubs_are_loaded_from_a_folder_at_start_and_listed(tmp_path):
    """--stubs DIR: each file a stub, fn.createStub_'s arguments, or an array of them, checked like
    fn.createStub_; fn.listStubs_ and fn.listCalls_ show what the mock holds."""
    folder = tmp_path / "stubs"
    folder.mkdir()
    (folder / "a.json").write_text(json.dumps({"fn.add": {"x": 1}, "->": {"Ok_": {"result": 100}}}))
    (folder / "b.json").write_text(json.dumps([{"stub": {"fn.add": {"x": 2}, "->": {"Ok_": {"result": 200}}},
                                                "count!": 1}]))
    mocked = start_mock("--schema-file", str(CALCULATOR), "--stubs", str(folder))
    try:
        assert mocked.banner[-2] == f"Loaded 2 stubs from {folder}\n"
        assert mocked.connection.call([{}, {"fn.add": {"x": 1, "y": 5}}])[1] == {"Ok_": {"result": 100}}
        assert mocked.connection.call([{}, {"fn.listStubs_": {}}])[1] == {"Ok_": {"stubs": [
            {"stub": {"fn.add": {"x": 1}, "->": {"Ok_": {"result": 100}}}, "strictMatch!": False},
            {"stub": {"fn.add": {"x": 2}, "->": {"Ok_": {"result": 200}}}, "strictMatch!": False, "count!": 1}]}}
        [recorded] = mocked.connection.call([{}, {"fn.listCalls_": {}}])[1]["Ok_"]["calls"]
        assert recorded == {"call": {"fn.add": {"x": 1, "y": 5}}, "headers": {}, "stub!": {"fn.add": {"x": 1}},
                            "at": recorded["at"]} and abs(recorded["at"] / 1000 - time.time()) < 60
    finally:
        mocked.stop()
    (folder / "c.json").write_text(json.dumps({"fn.add": {"x": "one"}, "->": {"Ok_": {}}}))
    refused = run_mock("--schema-file", str(CALCULATOR), "--stubs", str(folder))
    assert refused.returncode == 2
    assert refused.stderr == f"python -m reference.mock: error: {folder / 'c.json'}:1:13: at fn.add.x: " \
                             "expected Number, found String\n"


@pytest.mark.parametrize("text, said", [
    ('{"stub": {"fn.add": {"x": 1}, "->": {"Ok_": {}}},\n "strictmatch": true}', ["2:2: at strictmatch: no such "
                                                                                  'field; did you mean "strictMatch!"?']),
    ('[{"fn.add": {}, "->": {"Ok_": {}}},\n {"fn.ad": {}, "->": {"Ok_": {}}}]', ['2:3: at fn.ad: no such function; '
                                                                               'did you mean "fn.add"?']),
    ('{"fn.add": {"x": true}, "->": {"Ok_": {"reslt": 3}}}', ["1:13: at fn.add.x: expected Number, found Boolean",
                                                              '1:40: at ->.Ok_.reslt: no such field; did you mean '
                                                              '"result"?']),
])
def test_every_problem_of_a_stub_file_is_a_line_that_says_where_and_what(tmp_path, text, said):
    (tmp_path / "a.json").write_text(text)
    refused = run_mock("--schema-file", str(CALCULATOR), "--stubs", str(tmp_path))
    assert refused.returncode == 2
    lines = [f"{tmp_path / 'a.json'}:{line}" for line in said]  # (several: a line each, then what they come to)
    assert refused.stderr.splitlines() == ([f"python -m reference.mock: error: {lines[0]}"] if len(lines) == 1 else
                                           lines + [f"python -m reference.mock: error: the stubs of {tmp_path} do not "
                                                    f"load: {len(lines)} problems"])


@pytest.mark.parametrize("make, message", [
    (lambda path: os.mkfifo(path), "{path}: not a regular file"),  # which would never end
    (lambda path: path.symlink_to("/dev/zero"), "{path}: not a regular file"),  # nor this one
    (lambda path: path.write_text("[" * 100_000 + "]" * 100_000), "{path}: nests arrays and objects deeper than 1,024 "
                                                                 "levels"),
    (lambda path: path.write_bytes(b'{"fn.add": {}, "->": {"Ok_": {"result": "\xe9"}}}'),
     "{path}: not UTF-8 text (byte 41 is not)"),
    (lambda path: path.write_text("{"), "{path}: not JSON: Expecting property name enclosed in double quotes "
                                        "(line 1, column 2)"),
])
def test_a_stub_file_that_cannot_be_read_is_one_line_and_exit_2(tmp_path, make, message):
    """Every file is read only if it is a regular file of bounded size, and parsed within bounds."""
    folder = tmp_path / "stubs"
    folder.mkdir()
    make(folder / "a.json")
    started_at = time.monotonic()
    refused = run_mock("--schema-file", str(CALCULATOR), "--stubs", str(folder))
    assert time.monotonic() - started_at < 30 and refused.returncode == 2, refused.stderr  # (no hang: room for load)
    assert refused.stderr == f"python -m reference.mock: error: {message.format(path=folder / 'a.json')}\n"


def test_a_stub_file_may_hold_its_options_beside_the_call_and_every_bad_file_is_told(tmp_path):
    """The form the README and --help show, options beside the call, loads; each file that is wrong is a
    line of its own (only the first was told before)."""
    folder = tmp_path / "stubs"
    folder.mkdir()
    ann = {"Ephemeral": {"username": "a"}}
    (folder / "a.json").write_text(json.dumps({"fn.add": ADD["fn.add"], "->": {"Ok_": {"result": 9}}, "@auth_": ann,
                                               "strictMatch!": True, "count!": 2}))
    service = mocking.service(calculator.entries())
    assert mock.load_stubs(service, folder) == 1
    [listed] = json.loads(service.handle(b'[{}, {"fn.listStubs_": {}}]').data)[1]["Ok_"]["stubs"]
    assert listed == {"stub": {**ADD, "->": {"Ok_": {"result": 9}}, "@auth_": ann}, "strictMatch!": True, "count!": 2}
    answer = lambda headers: json.loads(service.handle(json.dumps([headers, ADD]).encode()).data)[1]
    assert answer({"@auth_": ann}) == {"Ok_": {"result": 9}} and answer({}) != {"Ok_": {"result": 9}}
    (folder / "b.json").write_text('{"fn.add": {"x": "one"}, "->": {"Ok_": {}}}')
    (folder / "c.json").write_text('{"fn.add": {}, "->": {"Ok_": {}}, "count!": "two"}')
    (folder / "d.json").write_text("{")
    with pytest.raises(ValueError) as raised:
        mock.load_stubs(mocking.service(calculator.entries()), folder)
    assert str(raised.value).splitlines() == [
        f"{folder / 'b.json'}:1:13: at fn.add.x: expected Number, found String",
        f"{folder / 'c.json'}:1:35: at count!: expected Integer, found String",
        f"{folder / 'd.json'}: not JSON: Expecting property name enclosed in double quotes (line 1, column 2)"]

"""python -m reference.schema: the schema checker's command line and its driver, as a user runs them."""

import json
import os
import subprocess
import sys

import pytest


def check(*args, stdin=None, files=None, cwd=None):
    """Run the checker; its exit status, standard output and standard error."""
    done = subprocess.run([sys.executable, "-m", "reference.schema", *args], input=stdin, capture_output=True,
                          text=True, timeout=60, cwd=cwd)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("text, lines", [
    ('[{"struct.A": {"a": "numbr"}}]', ['1:21: struct.A: unknown type "numbr"; did you mean "number"?']),
    ('[{"fn.a": {}, "->": [{"Ok_": {}}], "=>": 1}]',
     ['1:36: fn.a: "=>" is not a key of a fn. entry; did you mean "->"?']),
    ('[{"struct.A": {"Tags": "string"}}]', ['1:16: struct.A: "Tags" is not a field name: a field name starts with '
                                           'a lowercase letter, then letters, digits or _, and may end with !']),
    ('[{"fn.ping_": {}, "->": [{"Ok_": {}}]}]', ["1:3: fn.ping_: fn.ping_ is a stock definition of every schema"]),
])
def test_each_problem_is_located_at_its_token_and_names_it(tmp_path, text, lines):
    path = tmp_path / "s.json"
    path.write_text(text)
    status, out, err = check(str(path))
    assert (status, err) == (1, "")
    assert out.splitlines() == [f"{path}:{line}" for line in lines] + [f"{len(lines)} problem"]


def test_a_sound_schema_is_counted_in_english(tmp_path):
    path = tmp_path / "s.json"
    path.write_text('[{"fn.a": {}, "->": [{"Ok_": {}}]}]')
    assert check("-v", str(path)) == (0, f"{path}: 1 entry\nok: 1 document, 1 entry (1 fn)\n", "")


@pytest.mark.parametrize("args, message", [
    (["nope.json"], "nope.json: does not exist"),
    ([], "name at least one schema file or directory"),
    (["--driver", "x.json"], "--driver reads its schemas from standard input, not from FILE_OR_DIR"),
])
def test_bad_command_lines_are_one_line_and_exit_2(tmp_path, args, message):
    assert check(*args, cwd=tmp_path) == (
        2, "", f"python -m reference.schema: error: {message} (see python -m reference.schema --help)\n")


def test_the_driver_answers_a_line_that_is_no_instruction_and_goes_on():
    good = json.dumps({"id": 4, "documents": [{"name": "a.json", "text": '[{"struct.A": {}}]'}]})
    deep = "[" * 100_000 + "]" * 100_000
    status, out, err = check("--driver", stdin="not json\n[1]\n" + '{"documents": []}\n' + deep + "\n" + good + "\n")
    replies = [json.loads(line) for line in out.splitlines()]
    assert (status, err) == (0, "")
    assert [reply["id"] for reply in replies] == [None, None, None, None, 4] and replies[4]["accepted"] is True
    assert replies[0]["error"] == "line 1: not JSON: Expecting value (line 1, column 1)"
    assert replies[1]["error"].startswith("line 2 is not an instruction: id, documents missing or wrong, as in {")
    assert replies[2]["error"].startswith("line 3 is not an instruction: id missing or wrong, as in {")
    assert replies[3]["error"] == "line 4: nests arrays and objects deeper than 1,024 levels"


@pytest.mark.parametrize("make, message", [
    (lambda path: os.mkfifo(path), "{path}: not a regular file"),
    (lambda path: path.symlink_to("/dev/zero"), "{path}: not a regular file"),
    (lambda path: path.write_bytes(b'[{"struct.\xe9": {}}]'), "{path}: not UTF-8 text (byte 10 is not)"),
    (lambda path: path.mkdir(), "{path}: holds no .json files"),
])
def test_a_file_that_is_no_schema_file_is_one_line_and_exit_2(tmp_path, make, message):
    """Given alone or in a directory, a file is read only if it is a regular file of bounded size."""
    path = tmp_path / "s.json"
    make(path)
    status, out, err = check(str(path), cwd=tmp_path)
    assert (status, out) == (2, "") and err == (f"python -m reference.schema: error: {message.format(path=path)} "
                                                "(see python -m reference.schema --help)\n")
    if not path.is_dir():  # in a directory given, a problem of the schema it makes
        assert check(str(tmp_path), cwd=tmp_path) == (1, f"{message.format(path=path)}\n1 problem\n", "")

"""python -m reference.schema: the schema checker's command line and its driver, as a user runs them."""

import json
import os
import subprocess
import sys

import pytest

from reference.protocol.limits import MAX_PROBLEMS
from tests.support.servers import answering


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


# python -m reference.schema compare

V1 = [{"struct.Item": {"sku": "string", "price": "number"}}, {"fn.buy": {"item": "struct.Item"}, "->": [{"Ok_": {}}]}]
V2 = [{"struct.Item": {"sku": "string", "price": "integer"}}, {"fn.buy": {"item": "struct.Item"}, "->": [{"Ok_": {}}]}]


def versions(tmp_path, old=V1, new=V2):
    for name, entries in (("v1.json", old), ("v2.json", new)):
        (tmp_path / name).write_text(json.dumps(entries, indent=1))
    return str(tmp_path / "v1.json"), str(tmp_path / "v2.json")


def test_compare_exits_1_on_a_breaking_change_and_0_without(tmp_path):
    old, new = versions(tmp_path)
    status, out, err = check("compare", old, new)
    assert (status, err) == (1, "")
    assert out.splitlines()[0] == (f"{new}:5:13: breaking request-type-narrowed: struct.Item.price: number -> integer; "
                                   "from fn.buy → item: struct.Item → price; breaks clients that call fn.buy")
    assert out.splitlines()[-1] == "1 breaking change, 0 warnings: clients of the old schema break."
    status, out, _ = check("compare", new, old)
    assert status == 0 and out.splitlines() == ["0 breaking changes, 0 warnings: clients of the old schema keep working."]


def test_compare_accepts_a_change_on_purpose(tmp_path):
    old, new = versions(tmp_path)
    for accepted in ("request-type-narrowed", "request-type-narrowed:struct.Item.*"):
        status, out, _ = check("compare", old, new, "--except", accepted)
        assert status == 0 and " breaking (accepted) request-type-narrowed: " in out
        assert out.splitlines()[-1] == "0 breaking changes, 0 warnings, 1 accepted: clients of the old schema keep working."
    status, _, _ = check("compare", old, new, "--except", "request-type-narrowed:fn.*")
    assert status == 1


def test_compare_as_json_for_tools(tmp_path):
    old, new = versions(tmp_path)
    status, out, _ = check("compare", old, new, "--json")
    report = json.loads(out)
    assert status == 1 and report["breaking"] is True and report["notes"] == []
    assert report["findings"] == [{"rule": "request-type-narrowed", "level": "breaking", "side": "request",
                                   "element": "struct.Item.price", "where": f"{new}:5:13", "change": "number -> integer",
                                   "accepted": False, "routes": ["fn.buy → item: struct.Item → price"],
                                   "reachedFrom": 1, "clients": ["call fn.buy"]}]


def test_compare_reads_a_live_server_and_a_directory(tmp_path):
    from reference import Service, load
    from tests.support.servers import serving
    _, new = versions(tmp_path)
    with serving(Service(load(V1), {"fn.buy": lambda arguments, headers: {"Ok_": {}}})) as server:
        status, out, _ = check("compare", server.url, new)
        assert status == 1 and "struct.Item.price: number -> integer" in out
        (tmp_path / "both").mkdir()
        (tmp_path / "both" / "items.json").write_text(json.dumps(V2[:1]))
        (tmp_path / "both" / "buy.json").write_text(json.dumps(V2[1:]))
        status, out, _ = check("compare", server.url, str(tmp_path / "both"))
        assert status == 1 and out.startswith(f"{tmp_path / 'both' / 'items.json'}:1:45: breaking request-type-narrowed")


@pytest.mark.parametrize("old, new, lines", [
    (V1, [{"struct.Item": {"sku": "strnig"}}], ['v2.json:1:26: struct.Item: unknown type "strnig"; did you mean "string"?',
                                                 "python -m reference.schema compare: error: NEW {new} does not load: 1 problem"]),
    ([{"fn.a": {}}], V2, ["v1.json:1:2: fn.a: a function has a -> key holding an array whose first element is "
                          '{"Ok_": {...}} with the result fields',
                          "python -m reference.schema compare: error: OLD {old} does not load: 1 problem"]),
])
def test_compare_of_a_schema_that_does_not_load_lists_its_problems_and_exits_2(tmp_path, old, new, lines):
    (tmp_path / "v1.json").write_text(json.dumps(old))
    (tmp_path / "v2.json").write_text(json.dumps(new))
    paths = {"old": str(tmp_path / "v1.json"), "new": str(tmp_path / "v2.json")}
    status, out, err = check("compare", paths["old"], paths["new"])
    assert (status, out) == (2, "")
    assert err.splitlines() == [line.format(**paths) if "error" in line else str(tmp_path / line) for line in lines]


def test_a_file_of_many_problems_lists_the_first_thousand_and_counts_all(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps([[]] * (MAX_PROBLEMS * 3)))
    status, out, _ = check(str(path))
    lines = out.splitlines()
    assert status == 1 and len(lines) == MAX_PROBLEMS + 2 and lines[0] == f"{path}:1:2: an entry is a JSON object"
    assert lines[-2:] == [f"... and {MAX_PROBLEMS * 2:,} more", f"{MAX_PROBLEMS * 3:,} problems"]


def test_compare_of_a_server_answering_many_problems_says_twenty_and_counts_all(tmp_path):
    """(A server's 8 MiB of empty arrays was 2.8 million lines, 125 s and 1.77 GiB.)"""
    data = json.dumps([{}, {"Ok_": {"api": [[]] * 300_000}}]).encode()

    with answering(lambda _: data) as url:
        status, out, err = check("compare", url, versions(tmp_path)[1])
    lines = err.splitlines()
    assert (status, out, len(lines)) == (2, "", 22) and lines[0] == f"{url}, entry 1: an entry is a JSON object"
    assert lines[-2:] == ["... and 299,980 more",
                          f"python -m reference.schema compare: error: OLD {url} does not load: 300,000 problems"]


@pytest.mark.parametrize("args, message", [
    (["compare"], "name OLD and NEW, or NEW alone with --against REV"),
    (["compare", "a"], "name OLD and NEW, or NEW alone with --against REV"),
    (["compare", "a", "b", "--against", "main"], "--against main compares NEW with its own path at that revision"),
    (["compare", "{old}", "{old}", "--exceptions", "/nowhere"], "/nowhere: cannot be read: No such file or directory"),
    (["compare", "{old}", "{old}", "--format", "gihtub"], "invalid choice: 'gihtub'"),
    (["compare", "a", "b", "--except", "request-type-narowed"],
     "argument --except: 'request-type-narowed' is no rule; did you mean 'request-type-narrowed'?"),
    (["compare", "/nowhere.json", "b"], "OLD /nowhere.json: /nowhere.json: does not exist"),
    (["compare", "{old}", "{old}", "--traffic", "/nowhere"], "--traffic /nowhere: does not exist"),
    (["compare", "http://127.0.0.1:1/api", "b"], "OLD http://127.0.0.1:1/api: cannot reach http://127.0.0.1:1/api: "
                                                 "Connection refused"),
])
def test_compare_misuse_is_one_line_and_exit_2(args, message, tmp_path):
    old, _ = versions(tmp_path)
    status, out, err = check(*(arg.format(old=old) for arg in args))
    assert (status, out) == (2, "") and err.count("\n") == 1 and message in err, err


def test_compare_against_a_revision_reads_the_old_schema_from_the_repository(tmp_path):
    from tests.reference.changes.test_revisions import git
    (tmp_path / "shop.json").write_text(json.dumps(V1, indent=1))
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "v1")
    (tmp_path / "shop.json").write_text(json.dumps(V2, indent=1))
    status, out, err = check("compare", "--against", "HEAD", "shop.json", cwd=tmp_path)
    assert (status, err) == (1, "") and out.startswith("shop.json:5:13: breaking request-type-narrowed: ")
    status, out, _ = check("compare", "--against", "HEAD", "shop.json", "--json", cwd=tmp_path)
    assert json.loads(out)["old"] == "HEAD:shop.json"
    (tmp_path / "shop.json").write_text(json.dumps([V1[0], {"fn.sell": {"item": "struct.Item"}, "->": [{"Ok_": {}}]}]))
    status, out, _ = check("compare", "--against", "HEAD", "shop.json", cwd=tmp_path)  # (what is gone is placed
    assert status == 1 and out.startswith("HEAD:shop.json:9:3: breaking function-removed: fn.buy: ")  # in the old)
    status, out, _ = check("compare", "--against", "HEAD", "shop.json", "--format", "github", cwd=tmp_path)
    assert out.startswith("::error title=function-removed%3A fn.buy::HEAD:shop.json:9:3: breaking function-removed")
    status, out, err = check("compare", "--against", "mian", "shop.json", cwd=tmp_path)
    assert (status, out) == (2, "") and err.startswith("python -m reference.schema compare: error: --against mian: "
                                                       "'mian' is no revision of the repository")


def test_compare_takes_its_exceptions_from_a_file_and_says_which_name_nothing(tmp_path):
    old, new = versions(tmp_path)
    exceptions = tmp_path / "accepted.txt"
    exceptions.write_text("# kept with the schema\n\nrequest-type-narrowed:struct.Item.price  # no client sends 2.5\n"
                          "response-type-widened:struct.Gone.*\n")
    status, out, _ = check("compare", old, new, "--exceptions", str(exceptions), "--except", "function-removed")
    assert status == 0 and " breaking (accepted) request-type-narrowed: struct.Item.price" in out
    assert out.splitlines()[-3:-1] == ["note: --except function-removed names no finding: nothing it accepts changed",
                                       f"note: {exceptions}:4: response-type-widened:struct.Gone.* names no finding: "
                                       "nothing it accepts changed"]
    exceptions.write_text("request-type-narowed\n")
    status, out, err = check("compare", old, new, "--exceptions", str(exceptions))
    assert (status, out) == (2, "") and err.splitlines() == [
        f"python -m reference.schema compare: error: --exceptions {exceptions}:1: 'request-type-narowed' is no rule; "
        "did you mean 'request-type-narrowed'?"]


def test_compare_annotates_each_finding_for_github_actions(tmp_path):
    old, new = versions(tmp_path, V1 + [{"fn.gone": {}, "->": [{"Ok_": {"n": "integer"}}]}],
                        [{**V2[0]}, V1[1], {"fn.gone": {}, "->": [{"Ok_": {"n": "number"}}]}])
    status, out, _ = check("compare", old, new, "--format", "github", "--except", "response-type-widened")
    lines = out.splitlines()
    assert status == 1 and lines[0] == (
        f"::error file={new},line=5,col=13,title=request-type-narrowed%3A struct.Item.price::breaking "
        "request-type-narrowed: struct.Item.price: number -> integer; from fn.buy → item: struct.Item → price; "
        "breaks clients that call fn.buy")
    assert lines[1].startswith(f"::notice file={new},line=") and "title=response-type-widened%3A fn.gone -> Ok_.n::" in lines[1]
    assert lines[-1] == "1 breaking change, 0 warnings, 1 accepted: clients of the old schema break."


def test_compare_writes_junit_for_ci(tmp_path):
    import xml.etree.ElementTree as ElementTree
    old, new = versions(tmp_path)
    junit = tmp_path / "compare.xml"
    status, out, _ = check("compare", old, new, "--junit", str(junit))
    [suite] = ElementTree.parse(junit).getroot()
    [case] = suite
    assert status == 1 and (suite.get("tests"), suite.get("failures")) == ("1", "1")
    assert (case.get("classname"), case.get("name"), case.get("file")) == ("request-type-narrowed",
                                                                           "struct.Item.price", new)
    assert case.find("failure").get("message") == f"{new}:5:13: number -> integer"
    check("compare", new, old, "--junit", str(junit))
    [suite] = ElementTree.parse(junit).getroot()
    assert [(case.get("name"), list(case)) for case in suite] == [("no change breaks an old client", [])]


def test_compare_with_traffic_a_selected_call_the_new_schema_refuses_breaks(tmp_path):
    """The issue's case: an old client selecting fields of a struct the new schema renamed."""
    old = [{"struct.Item": {"sku": "string"}}, {"fn.get": {}, "->": [{"Ok_": {"item": "struct.Item"}}]}]
    new = json.loads(json.dumps(old).replace("struct.Item", "struct.Product"))
    old, new = versions(tmp_path, old, new)
    (tmp_path / "calls.jsonl").write_text(json.dumps([[{"@select_": {"struct.Item": ["sku"]}}, {"fn.get": {}}],
                                                      [{}, {"Ok_": {"item": {"sku": "a"}}}]]) + "\n")
    status, out, _ = check("compare", old, new, "--traffic", str(tmp_path / "calls.jsonl"))
    assert status == 1 and "breaking selected-type-renamed: struct.Item: struct.Item -> struct.Product" in out
    assert out.splitlines()[-2] == (f"Breaking by the rules, 1 of 1 recorded calls affected (the first: "
                                    f"{tmp_path / 'calls.jsonl'}:1).")

"""Schema loading and checking: every rule of the spec gives a clear, located problem."""

import gc
import json
import subprocess
import sys
import time

import pytest

from reference import SchemaError, load, mocking
from reference.services import calculator
from reference.protocol.limits import MAX_PROBLEMS

ADD = {"fn.add": {"x": "number"}, "->": [{"Ok_": {"result": "number"}}]}


def problems(entries):
    """The problems a schema has, as (entry, counted from 1, path, message) triples."""
    with pytest.raises(SchemaError) as raised:
        load(entries)
    return [(p.where.entry, p.path, p.message) for p in raised.value.problems]


def test_calculator_schema_lists_public_and_internal_entries_in_order():
    """fn.api_ lists info first, then every entry by name; internal ones on request."""
    schema = load(calculator.entries())
    public = [next(k for k in e if k[0] not in "/-$") for e in schema.api()]
    assert public == [
        "info.Calculator", "errors.Auth_", "errors.Availability", "fn.add", "fn.deleteVariable",
        "fn.deleteVariables", "fn.evaluate", "fn.export", "fn.getPaperTape", "fn.getVariable",
        "fn.getVariables", "fn.import", "fn.login", "fn.logout", "fn.saveVariable",
        "fn.saveVariables", "headers.Auth_", "struct.Evaluation", "struct.Variable", "union.Auth_",
        "union.Expression"]
    assert len(schema.api(include_internal=True)) == 36


def test_entries_are_returned_verbatim_with_comments_and_annotations():
    """Comments and $ annotations stay in the entries fn.api_ returns, keys in order."""
    entry = {"///": ["two", "lines"], "$authenticated": False, "$custom": {"a": 1}, **ADD}
    [returned] = load([entry]).api()
    assert returned == entry and list(returned) == list(entry)


OK = [{"Ok_": {}}]
NAME = "is not a definition name: after its prefix, a name starts with a letter or _, then letters, digits or _"
KEYS = "an entry has exactly one definition key (info., struct., union., fn., headers. or errors. and a name); found"
FIELD = "is not a field name: a field name starts with a lowercase letter, then letters, digits or _, and may end with !"
HEADER = "is not a header name: a header name is @, a lowercase letter, then letters, digits or _ (headers are always optional: no !)"
RESULTS = 'a function has a -> key holding an array whose first element is {"Ok_": {...}} with the result fields'
ENDLESS = "no finite value has this type: every way through its required fields leads back to it " \
          "(make one optional or nullable)"
ARRAYS = 'arrays are written ["T"] and maps {"string": "T"}, and neither can be nullable'


@pytest.mark.parametrize("entries, expected", [
    # documents and entries
    ({"struct.A": {}}, [(None, [], "a schema document is a JSON array of entries")]),
    ([5], [(1, [], "an entry is a JSON object")]),
    ([{"///": "only a comment"}], [(1, [], f"{KEYS} none")]),
    ([{"thing.A": {}}], [(1, [], f"{KEYS} none")]),
    ([{"struct.A": {}, "struct.B": {}}], [(1, [], f'{KEYS} "struct.A", "struct.B"')]),
    # names
    ([{"struct.9a": {}}], [(1, ["struct.9a"], f'"9a" {NAME}')]),
    ([{"errors.": [{"E": {}}]}], [(1, ["errors."], f'"" {NAME}')]),
    ([{"_ext.Mine_": {}}], [(1, ["_ext.Mine_"], "_ext.Mine_ is not a stock _ext. type (those are _ext.Select_)")]),
    ([{"_ext.Select_": {}}], [(1, ["_ext.Select_"], "_ext.Select_ is a stock definition of every schema")]),
    ([{"struct.A": {}}, {"struct.A": {}}], [(2, ["struct.A"], "struct.A is defined already")]),
    ([{"fn.ping_": {}, "->": OK}], [(1, ["fn.ping_"], "fn.ping_ is a stock definition of every schema")]),
    ([{"info.A": {}}, {"info.B": {}}], [(2, ["info.B"], "a schema has one info entry, and info.A is one")]),
    ([{"struct.A": {"Bad": "string"}}], [(1, ["struct.A", "Bad"], f'"Bad" {FIELD}')]),
    ([{"struct.A": {"a\u00e9": "string"}}], [(1, ["struct.A", "a\u00e9"], f'"a\u00e9" {FIELD}')]),
    ([{"struct.A": {"a!!": "string"}}], [(1, ["struct.A", "a!!"], f'"a!!" {FIELD}')]),
    ([{"union.U": [{"lower": {}}]}], [(1, ["union.U", 0, "lower"], '"lower" is not a tag: a tag starts with an '
                                      "uppercase letter, then letters, digits or _")]),
    ([{"headers.H": {"@Bad": "string"}, "->": {}}], [(1, ["headers.H", "@Bad"], f'"@Bad" {HEADER}')]),
    ([{"headers.H": {"@opt!": "string"}, "->": {}}], [(1, ["headers.H", "@opt!"], f'"@opt!" {HEADER}')]),
    # what an entry holds beside its definition
    ([{"///": 5, "struct.A": {}}], [(1, ["///"], "a comment is a string or an array of strings")]),
    ([{"union.U": [{"A": {}, "///": ["x", 1]}]}], [(1, ["union.U", 0, "///"],
                                                   "a comment is a string or an array of strings")]),
    ([{"struct.A": {}, "->": []}], [(1, ["->"], '"->" is not a key of a struct. entry')]),
    ([{"union.U": [{"A": {}}], "$note": 1}], [(1, ["$note"], '"$note" is not a key of a union. entry')]),
    ([{"errors.E": [{"E": {}}], "$note": 1}], [(1, ["$note"], '"$note" is not a key of an errors. entry')]),
    ([{"info.A": {}, "extra": 1}], [(1, ["extra"], '"extra" is not a key of an info. entry')]),
    ([{**ADD, "$authenticated": "no"}], [(1, ["$authenticated"], "$authenticated is true or false")]),
    ([{**ADD, "_errors": "errors"}], [(1, ["_errors"], "only internal functions choose their errors.* groups")]),
    ([{**ADD, "$internal": True, "_errors": 5}], [(1, ["_errors"], "_errors is a regular expression, as a string")]),
    ([{**ADD, "$internal": True, "_errors": "("}], [(1, ["_errors"], "_errors is a regular expression, as a string")]),
    ([{"info.A": []}], [(1, ["info.A"], "this entry holds an object")]),
    # struct fields
    ([{"struct.A": []}], [(1, ["struct.A"], "this holds an object of field names to types")]),
    ([{"struct.A": {"f": "string", "f!": "integer"}}], [(1, ["struct.A", "f!"], "f is a field once, "
                                                        "either required or optional (!)")]),
    # type expressions
    ([{"struct.A": {"x": "strin"}}], [(1, ["struct.A", "x"], 'unknown type "strin"; did you mean "string"?')]),
    ([{"struct.A": {"x": "stringy"}}], [(1, ["struct.A", "x"], 'unknown type "stringy"; did you mean "string"?')]),
    ([{"struct.A": {"x": "string??"}}], [(1, ["struct.A", "x"], 'unknown type "string??"; did you mean "string"?')]),
    ([{"struct.A": {"x": "strnig"}}], [(1, ["struct.A", "x"], 'unknown type "strnig"; did you mean "string"?')]),
    ([{"struct.A": {"x": "struct.a"}}], [(1, ["struct.A", "x"], 'unknown type "struct.a"; did you mean "struct.A"?')]),
    ([{"fn.f": {}, "->": [{"Ok": {}}]}], [(1, ["->"], 'a function has a -> key holding an array whose first '
                                          'element is {"Ok_": {...}} with the result fields; did you mean "Ok_"?')]),
    ([{"struct.A": {"x": "struct.B"}}], [(1, ["struct.A", "x"], 'unknown type "struct.B"')]),
    ([{"struct.A": {"x": "info.B"}}, {"info.B": {}}], [(1, ["struct.A", "x"], 'unknown type "info.B"')]),
    ([{"struct.A": {"x": "_ext.Call_"}}], [(1, ["struct.A", "x"], 'unknown type "_ext.Call_"')]),
    ([{"struct.A": {"x": 5}}], [(1, ["struct.A", "x"], "a type is a string, an array or an object, not 5")]),
    ([{"struct.A": {"x": ["string", "number"]}}],
     [(1, ["struct.A", "x"], 'an array type holds exactly one type, like ["string"]')]),
    ([{"struct.A": {"x": {"int": "number"}}}], [(1, ["struct.A", "x"], 'a map type is an object whose '
                                               'only key is "string", like {"string": "number"}')]),
    ([{"struct.A": {"x": "[string]?"}}], [(1, ["struct.A", "x"], f'unknown type "[string]?": {ARRAYS}')]),
    ([{"struct.A": {"x": "array?"}}], [(1, ["struct.A", "x"], f'unknown type "array?": {ARRAYS}')]),
    # unions and results
    ([{"union.U": {}}], [(1, ["union.U"], "this holds a non-empty array of tag objects")]),
    ([{"union.U": []}], [(1, ["union.U"], "this holds a non-empty array of tag objects")]),
    ([{"errors.E": []}], [(1, ["errors.E"], "this holds a non-empty array of tag objects")]),
    ([{"union.U": [{"A": {}, "B": {}}]}], [(1, ["union.U", 0], 'a tag object has exactly one tag key, '
                                          'like {"Circle": {"radius": "number"}}')]),
    ([{"union.U": [{"A": {}}, {"A": {}}]}], [(1, ["union.U", 1, "A"], "the tag A appears twice")]),
    ([{"fn.f": {}}], [(1, ["->"], RESULTS)]),
    ([{"fn.f": {}, "->": [{"Error": {}}, {"Ok_": {}}]}], [(1, ["->"], RESULTS)]),
    ([{"fn.f": {}, "->": {"Ok_": {}}}], [(1, ["->"], RESULTS)]),
    ([{"fn.f": {}, "->": [{"Ok_": {}}, {"Ok_": {}}]}], [(1, ["->", 1, "Ok_"], "the tag Ok_ appears twice")]),
    # headers
    ([{"headers.H": {"@h": "string"}}], [(1, [], "a headers entry has a -> key holding the response headers")]),
    ([{"headers.H": {"@id_": "any"}, "->": {}}], [(1, ["headers.H", "@id_"], "@id_ is declared by headers.Id_ already")]),
    ([{"headers.H": {}, "->": {"@h": "string"}}, {"headers.I": {}, "->": {"@h": "string"}}],
     [(2, ["->", "@h"], "@h is declared by headers.H already")]),
    # errors
    ([{"errors.E": [{"ErrorX": {}}]}, {"fn.f": {}, "->": [{"Ok_": {}}, {"ErrorX": {}}]}],
     [(1, ["errors.E"], "the tag ErrorX is also a result of fn.f; a result tag has one meaning")]),
    ([{"errors.A": [{"ErrorX": {}}]}, {"errors.B": [{"ErrorY": {}}, {"ErrorX": {}}]}],
     [(2, ["errors.B", 1, "ErrorX"], "the tag ErrorX is in errors.A too; a tag belongs to one errors.* group")]),
    ([{"errors.E": [{"ErrorUnknown_": {}}]}],
     [(1, ["errors.E", 0, "ErrorUnknown_"], "the tag ErrorUnknown_ is in errors.Validation_ too; "
                                           "a tag belongs to one errors.* group")]),
    # types that never end
    ([{"struct.Node": {"next": "struct.Node"}}], [(1, ["struct.Node"], ENDLESS)]),
    ([{"struct.A": {"b": "struct.B"}}, {"struct.B": {"a": "struct.A"}}],
     [(1, ["struct.A"], ENDLESS), (2, ["struct.B"], ENDLESS)]),
    ([{"union.U": [{"A": {"u": "union.U"}}, {"B": {"u": "union.U"}}]}], [(1, ["union.U"], ENDLESS)]),
    ([{"fn.f": {"again": "fn.f"}, "->": OK}], [(1, ["fn.f"], ENDLESS)]),
])
def test_each_broken_rule_is_one_located_problem(entries, expected):
    """A schema that breaks one rule gets exactly one problem, with its place and a clear message."""
    assert problems(entries) == expected


def test_all_problems_are_reported_at_once():
    """Every problem is listed, in one exception whose message names each place."""
    entries = [{"struct.A": {"Bad": "strin"}}, {"fn.f": {}}, {"union.U": [{"x": {}}]}]
    with pytest.raises(SchemaError) as raised:
        load(entries)
    assert len(raised.value.problems) == 4
    message = str(raised.value)
    assert message.startswith("invalid schema, 4 problems:\n")
    assert '<schema>, entry 1, at ["struct.A", "Bad"]: struct.A: unknown type "strin"' in message
    assert '<schema>, entry 2, at ["->"]: fn.f: a function has a -> key' in message


def test_many_problems_are_counted_and_the_first_thousand_kept():
    """A message of a million lines helps no one, and a million problems kept held 4 GiB for a
    16 MiB file of empty arrays: the first MAX_PROBLEMS are kept, the rest counted."""
    with pytest.raises(SchemaError) as raised:
        load([[]] * 5000)
    lines = str(raised.value).splitlines()
    assert len(raised.value.problems) == MAX_PROBLEMS and raised.value.count == 5000 and len(lines) == 22
    assert lines[0] == "invalid schema, 5,000 problems:" and lines[-1] == "  and 4,980 more"
    assert [p.where.entry for p in raised.value.problems] == list(range(1, MAX_PROBLEMS + 1))


def test_definitions_may_refer_to_each_other_in_any_order_and_to_themselves():
    """Forward and recursive references resolve, when some way through them ends."""
    schema = load([
        {"fn.f": {"t": "struct.Tree"}, "->": [{"Ok_": {"link": "fn.g"}}]},
        {"struct.Tree": {"children": ["struct.Tree"], "shape!": "union.Shape?"}},
        {"union.Shape": [{"Leaf": {}}, {"Node": {"of": "union.Shape"}}]},
        {"struct.Chain": {"next": "struct.Chain?", "also!": "struct.Chain"}},
        {"fn.g": {"again!": "fn.g"}, "->": [{"Ok_": {}}]},
    ])
    tree = schema.definition("struct.Tree")
    assert tree.fields["children"].of.of is tree
    assert tree.required == ("children",)
    shape = schema.definition("union.Shape")
    assert shape.tags["Node"].fields["of"].of is shape


def test_sizes_count_the_values_of_the_smallest_value():
    """A struct's fields cost what its required ones do, a union what its cheapest tag does."""
    schema = load([{"struct.A": {"b": "struct.B", "c": "union.C", "d!": "struct.D"}},
                   {"struct.B": {}}, {"union.C": [{"Deep": {"a": "struct.A"}}, {"Flat": {"b": "struct.B"}}]},
                   {"struct.D": {"d": "struct.D?"}}, {"struct.W": {f"f{i}": "struct.V" for i in range(60)}},
                   {"struct.V": {f"v{i}": "struct.U" for i in range(60)}}, {"struct.U": {f"u{i}": "integer" for i in range(60)}}])
    sizes = {key: schema.definition(key).size for key in ("struct.A", "struct.B", "union.C", "struct.D", "struct.W")}
    assert sizes == {"struct.A": 3, "struct.B": 0, "union.C": 1, "struct.D": 0, "struct.W": 60 * (1 + 60 * 61)}


def test_selections_are_a_type_like_any_other():
    """_ext.Select_ may be the type of any field, nullable, in arrays and maps too."""
    schema = load([{"struct.V": {"sel": "_ext.Select_", "maybe!": "_ext.Select_?", "all!": ["_ext.Select_"],
                                 "named!": {"string": "_ext.Select_"}}}])
    fields = schema.definition("struct.V").fields
    assert (fields["sel"].kind, fields["maybe!"].nullable, fields["all!"].of.kind) == ("ext", True, "ext")
    assert fields["sel"].of is schema.definition("_ext.Select_")


def test_mock_calls_and_stubs_are_types_where_the_mock_defines_them():
    """_ext.Call_, _ext.Stub_ and the mock's functions may be used by a schema a mock serves."""
    entries = [{"struct.S": {"c": "_ext.Call_", "s": "_ext.Stub_", "create": "fn.createStub_"}}]
    schema = mocking.schema(entries)
    assert schema.definition("struct.S").fields["create"].of is schema.named["fn.createStub_"][1]


def test_internal_functions_may_choose_their_error_groups():
    """_errors, a regular expression, picks the errors.* groups of an internal function."""
    schema = load([{"errors.Busy": [{"ErrorBusy": {}}]}, {"errors.Odd": [{"ErrorOdd": {}}]},
                   {"fn.f": {}, "->": OK, "$internal": True, "_errors": r"^errors\.Busy$"},
                   {"fn.g": {}, "->": OK, "$internal": True}])
    assert "ErrorBusy" in schema.functions["fn.f"].result.tags
    assert not {"ErrorOdd", "ErrorUnknown_"} & set(schema.functions["fn.f"].result.tags)
    assert "ErrorUnknown_" in schema.functions["fn.g"].result.tags
    assert "ErrorBusy" not in schema.functions["fn.g"].result.tags


def test_stock_documents_are_not_added_twice():
    """A schema that holds every stock entry already (saved with includeInternal!) loads as it is."""
    saved = load(calculator.entries()).api(include_internal=True)
    schema = load(saved)
    assert len(schema.api()) == len(saved) and schema.api(include_internal=True) == schema.api()


def test_a_schema_with_union_auth_gets_the_auth_header_and_errors():
    """Defining union.Auth_ adds @auth_ and the auth errors; functions are protected by default."""
    schema = load([{"union.Auth_": [{"Token": {"t": "string"}}]}, ADD,
                   {"fn.open": {}, "->": [{"Ok_": {}}], "$authenticated": False}])
    assert schema.request_headers["@auth_"].of is schema.definition("union.Auth_")
    assert {"ErrorUnauthenticated_", "ErrorUnauthorized_"} <= set(schema.functions["fn.add"].result.tags)
    assert schema.functions["fn.add"].authenticated
    assert not schema.functions["fn.open"].authenticated
    assert not schema.functions["fn.ping_"].authenticated


def test_without_union_auth_nothing_is_protected():
    """No union.Auth_: no @auth_ header, no auth errors, every function open."""
    schema = load([ADD])
    assert "@auth_" not in schema.request_headers
    assert not schema.functions["fn.add"].authenticated
    assert "ErrorUnauthenticated_" not in schema.functions["fn.add"].result.tags


def test_error_groups_are_added_to_results():
    """errors.* tags join every service function's result; internal ones get only validation errors."""
    schema = load([ADD, {"errors.Busy": [{"ErrorBusy": {"retry": "integer"}}]}])
    tags = list(schema.functions["fn.add"].result.tags)
    assert tags[0] == "Ok_" and set(tags[1:]) == {
        "ErrorBusy", "ErrorUnknown_", "ErrorInvalidRequestHeaders_", "ErrorInvalidRequestBody_",
        "ErrorInvalidResponseHeaders_", "ErrorInvalidResponseBody_", "ErrorParseFailure_"}
    assert "ErrorBusy" not in schema.functions["fn.ping_"].result.tags


def test_a_schema_can_be_read_from_a_file_a_directory_or_text(tmp_path):
    """A JSON file, every .json file of a directory, or JSON text load as one schema."""
    (tmp_path / "a.json").write_text(json.dumps([ADD]))
    (tmp_path / "b.json").write_text(json.dumps([{"struct.B": {}}]))
    (tmp_path / "notes.txt").write_text("ignored")
    assert "struct.B" in load(tmp_path).named
    assert "struct.B" not in load(tmp_path / "a.json").named
    assert "fn.add" in load(json.dumps([ADD])).named
    assert "fn.add" in load("\n  " + json.dumps([ADD])).named


def test_a_loaded_schema_loads_again():
    """load() of a Schema starts from its documents, so stock documents can be added to it."""
    schema = load([ADD])
    assert "fn.createStub_" in mocking.schema(schema).functions


@pytest.mark.parametrize("files, expected", [
    ({"a.json": "[{,]"}, "a.json:1:3: not valid JSON: Expecting property name enclosed in double quotes"),
    ({"a.json": b"\xff\xfe["}, "a.json: not UTF-8 text (byte 0 is not)"),
    ({"notes.txt": "x"}, "holds no .json files"),
    ({"a.json": '[{"struct.A": {"x": "nope"}}]'}, 'a.json:1:21: struct.A: unknown type "nope"'),
])
def test_unreadable_files_are_schema_problems(tmp_path, files, expected):
    """Bad JSON, missing files and empty directories are problems too, never tracebacks."""
    for name, text in files.items():
        (tmp_path / name).write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(SchemaError) as raised:
        load(tmp_path)
    assert expected in str(raised.value)


def test_one_unreadable_file_hides_no_other_problem(tmp_path):
    """Every file's problems are listed, those of the files that could be read too."""
    (tmp_path / "a.json").write_text("[{,]")
    (tmp_path / "b.json").write_text('[{"struct.B": {"x": "nope"}}]')
    (tmp_path / "c.json").write_text('[{"union.U": []}]')
    with pytest.raises(SchemaError) as raised:
        load(tmp_path)
    assert [(p.where.document, p.path) for p in raised.value.problems] == [
        (str(tmp_path / "a.json"), []), (str(tmp_path / "b.json"), ["struct.B", "x"]),
        (str(tmp_path / "c.json"), ["union.U"])]


def test_a_missing_file_is_a_schema_problem(tmp_path):
    """A path that does not exist is reported, with the operating system's reason."""
    with pytest.raises(SchemaError, match="missing.json: does not exist"):
        load(tmp_path / "missing.json")


def _seconds_to_load(entries):
    """The least of five timings of load(entries) in this process's own CPU time, with the garbage
    collector paused: what other processes do (another test worker) does not count, nor do the
    collections of all that earlier tests left in this one, and the least is the least disturbed."""
    times = []
    gc.collect()
    gc.disable()
    try:
        for _ in range(5):
            started = time.process_time()
            load(entries)
            times.append(time.process_time() - started)
    finally:
        gc.enable()
    return min(times)


@pytest.mark.parametrize("make, small", [
    (lambda n: [{"struct.S": {f"f{i}": "integer" for i in range(n)}}], 25_000),  # each field once rebuilt the names
    (lambda n: [{f"struct.S{i}": {"next": f"struct.S{i + 1}"}} for i in range(n)] + [{f"struct.S{n}": {}}],
     750),  # the termination pass once ran once per link
])
def test_loading_is_linear_in_the_size_of_the_schema(make, small):
    """Four times the schema costs about four times the time (a quadratic loader took sixteen)."""
    ratio = _seconds_to_load(make(4 * small)) / _seconds_to_load(make(small))
    assert ratio < 8, f"four times the schema took {ratio:.1f} times as long"


def test_a_document_nested_deeper_than_python_reads_is_one_located_problem(tmp_path):
    """3,000 levels of maps: no RecursionError, one problem with its line and column, exit 1; the mock's
    start says the same in one line, with exit 2."""
    path = tmp_path / "deep.json"
    path.write_text('[{"struct.A": {"m": ' + '{"string": ' * 3000 + '"integer"' + "}" * 3000 + "}}]")
    checked = subprocess.run([sys.executable, "-m", "reference.schema", str(path)], capture_output=True, text=True,
                             timeout=60)
    assert (checked.returncode, checked.stderr) == (1, "")
    assert checked.stdout == (f"{path}:1:10977: the document nests arrays and objects deeper than Python reads: "
                              "here 1,000 levels are open\n1 problem\n")
    mocked = subprocess.run([sys.executable, "-m", "reference.mock", "--schema-file", str(path), "--port", "0"],
                            capture_output=True, text=True, timeout=60)
    assert mocked.returncode == 2 and mocked.stderr.count("\n") == 2 and "Traceback" not in mocked.stderr
    assert f"{path}:1:10977: the document nests" in mocked.stderr

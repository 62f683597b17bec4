"""Schema loading and checking: every rule of the spec gives a clear, located problem."""

import json

import pytest

from reference import SchemaError, load
from reference.schema import bundled

ADD = {"fn.add": {"x": "number"}, "->": [{"Ok_": {"result": "number"}}]}


def problems(entries):
    """The problems a schema has, as (entry index, path, message) triples."""
    with pytest.raises(SchemaError) as raised:
        load(entries)
    return [(p.entry, p.path, p.message) for p in raised.value.problems]


def test_calculator_schema_lists_public_and_internal_entries_in_order():
    """fn.api_ lists info first, then every entry by name; internal ones on request."""
    schema = load(bundled("calculator"))
    public = [next(k for k in e if k[0] not in "/-$") for e in schema.api()]
    assert public == [
        "info.Calculator", "errors.Auth_", "errors.Availability", "fn.add", "fn.deleteVariable",
        "fn.deleteVariables", "fn.evaluate", "fn.export", "fn.getPaperTape", "fn.getVariable",
        "fn.getVariables", "fn.import", "fn.login", "fn.logout", "fn.saveVariable",
        "fn.saveVariables", "headers.Auth_", "struct.Evaluation", "struct.Variable", "union.Auth_",
        "union.Expression"]
    assert len(schema.api(include_internal=True)) == 35


def test_entries_are_returned_verbatim_with_comments_and_annotations():
    """Comments and $ annotations stay in the entries fn.api_ returns, keys in order."""
    entry = {"///": ["two", "lines"], "$authenticated": False, "$custom": {"a": 1}, **ADD}
    [returned] = load([entry]).api()
    assert returned == entry and list(returned) == list(entry)


@pytest.mark.parametrize("entries, expected", [
    ({"struct.A": {}}, [(None, [], "a schema document is a JSON array of entries")]),
    ([5], [(0, [], "an entry is a JSON object")]),
    ([{"///": "only a comment"}], [(0, [], "an entry has exactly one definition key; found none")]),
    ([{"struct.A": {}, "struct.B": {}}],
     [(0, [], 'an entry has exactly one definition key; found "struct.A", "struct.B"')]),
    ([{"thing.A": {}}], [(0, ["thing.A"], "a definition key is info., struct., union., fn., "
                          "headers. or errors. followed by a letter or _, then word characters")]),
    ([{"struct.9a": {}}], [(0, ["struct.9a"], "a definition key is info., struct., union., fn., "
                            "headers. or errors. followed by a letter or _, then word characters")]),
    ([{"_ext.Mine_": {}}], [(0, ["_ext.Mine_"], "a definition key is info., struct., union., fn., "
                             "headers. or errors. followed by a letter or _, then word characters")]),
    ([{"struct.A": {}}, {"struct.A": {}}], [(1, ["struct.A"], "struct.A is defined more than once")]),
    ([{"fn.ping_": {}, "->": [{"Ok_": {}}]}], [(0, ["fn.ping_"], "fn.ping_ is defined more than once")]),
    ([{"///": 5, "struct.A": {}}], [(0, ["///"], "a comment is a string or an array of strings")]),
    ([{"struct.A": {}, "->": []}], [(0, ["->"], "only fn. and headers. entries have a -> key")]),
    ([{**ADD, "$authenticated": "no"}], [(0, ["$authenticated"], "$authenticated is true or false")]),
    ([{"info.A": []}], [(0, ["info.A"], "this entry holds an object")]),
    ([{"struct.A": []}], [(0, ["struct.A"], "this holds an object of field names to types")]),
    ([{"struct.A": {"Bad": "string"}}], [(0, ["struct.A", "Bad"], "a field name starts with a "
                                         "lowercase letter, then word characters, and may end with !")]),
    ([{"struct.A": {"x": "strin"}}], [(0, ["struct.A", "x"], 'unknown type "strin"')]),
    ([{"struct.A": {"x": "struct.B"}}], [(0, ["struct.A", "x"], 'unknown type "struct.B"')]),
    ([{"struct.A": {"x": 5}}], [(0, ["struct.A", "x"], "a type is a string, an array or an object, not 5")]),
    ([{"struct.A": {"x": ["string", "number"]}}],
     [(0, ["struct.A", "x"], 'an array type holds exactly one type, like ["string"]')]),
    ([{"struct.A": {"x": {"int": "number"}}}], [(0, ["struct.A", "x"], 'a map type is an object whose '
                                               'only key is "string", like {"string": "number"}')]),
    ([{"struct.A": {"x": "[string]?"}}], [(0, ["struct.A", "x"], 'unknown type "[string]?": arrays are '
                                          'written ["T"] and maps {"string": "T"}, and neither can be nullable')]),
    ([{"struct.A": {"x": "array?"}}], [(0, ["struct.A", "x"], 'unknown type "array?": arrays are '
                                       'written ["T"] and maps {"string": "T"}, and neither can be nullable')]),
    ([{"struct.A": {"x": "_ext.Select_"}}], [(0, ["struct.A", "x"], 'unknown type "_ext.Select_"')]),
    ([{"union.U": {}}], [(0, ["union.U"], "this holds an array of tag objects")]),
    ([{"union.U": [{"A": {}, "B": {}}]}], [(0, ["union.U", 0], 'a tag object has exactly one tag key, '
                                          'like {"Circle": {"radius": "number"}}')]),
    ([{"union.U": [{"lower": {}}]}], [(0, ["union.U", 0, "lower"], "a tag name starts with an "
                                      "uppercase letter, then word characters")]),
    ([{"union.U": [{"A": {}}, {"A": {}}]}], [(0, ["union.U", 1, "A"], "the tag A appears twice")]),
    ([{"fn.f": {}}], [(0, ["->"], 'a function has a -> key holding an array whose first element '
                       'is {"Ok_": {...}} with the result fields')]),
    ([{"fn.f": {}, "->": [{"Error": {}}, {"Ok_": {}}]}], [(0, ["->"], 'a function has a -> key holding '
                                                         'an array whose first element is {"Ok_": {...}} with the result fields')]),
    ([{"fn.f": {}, "->": {"Ok_": {}}}], [(0, ["->"], 'a function has a -> key holding an array whose '
                                        'first element is {"Ok_": {...}} with the result fields')]),
    ([{"fn.f": {}, "->": [{"Ok_": {}}, {"Ok_": {}}]}], [(0, ["->", 1, "Ok_"], "the tag Ok_ appears twice")]),
    ([{"headers.H": {"@Bad": "string"}, "->": {}}],
     [(0, ["headers.H", "@Bad"], "a header name is @, a lowercase letter, then word characters "
                                 "(headers are always optional: no !)")]),
    ([{"headers.H": {"@opt!": "string"}, "->": {}}],
     [(0, ["headers.H", "@opt!"], "a header name is @, a lowercase letter, then word characters "
                                  "(headers are always optional: no !)")]),
    ([{"headers.H": {"@h": "string"}}], [(0, [], "a headers entry has a -> key holding the response headers")]),
    ([{"headers.H": {"@id_": "string"}, "->": {}}], [(0, ["headers.H", "@id_"], "@id_ is declared twice, "
                                                      "with two types")]),
    ([{"errors.E": [{"ErrorX": {}}]}, {"fn.f": {}, "->": [{"Ok_": {}}, {"ErrorX": {}}]}],
     [(0, ["errors.E"], "the tag ErrorX is also a result of fn.f; a result tag has one meaning")]),
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
    assert '<schema>, entry 0 (struct.A), at ["struct.A", "Bad"]: unknown type "strin"' in message
    assert '<schema>, entry 1 (fn.f), at ["->"]: a function has a -> key' in message


def test_definitions_may_refer_to_each_other_in_any_order_and_to_themselves():
    """Forward and recursive references resolve."""
    schema = load([
        {"fn.f": {"t": "struct.Tree"}, "->": [{"Ok_": {"link": "fn.g"}}]},
        {"struct.Tree": {"children": ["struct.Tree"], "shape!": "union.Shape?"}},
        {"union.Shape": [{"Leaf": {}}, {"Node": {"of": "union.Shape"}}]},
        {"fn.g": {}, "->": [{"Ok_": {}}]},
    ])
    tree = schema.definition("struct.Tree")
    assert tree.fields["children"].of.of is tree
    assert tree.required == ("children",)
    shape = schema.definition("union.Shape")
    assert shape.tags["Node"].fields["of"].of is shape


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


def test_a_schema_can_be_read_from_a_file_or_a_directory(tmp_path):
    """A JSON file, or every .json file of a directory, loads as one schema."""
    (tmp_path / "a.json").write_text(json.dumps([ADD]))
    (tmp_path / "b.json").write_text(json.dumps([{"struct.B": {}}]))
    (tmp_path / "notes.txt").write_text("ignored")
    assert "struct.B" in load(tmp_path).named
    assert "struct.B" not in load(tmp_path / "a.json").named


@pytest.mark.parametrize("files, expected", [
    ({"a.json": "[{,]"}, "a.json: not valid JSON: Expecting property name enclosed in double quotes: "
                        "line 1 column 3 (char 2)"),
    ({"a.json": b"\xff\xfe["}, "a.json: not valid JSON"),
    ({"notes.txt": "x"}, "the directory holds no .json files"),
    ({"a.json": '[{"struct.A": {"x": "nope"}}]'}, 'a.json, entry 0 (struct.A), at ["struct.A", "x"]: '
                                                  'unknown type "nope"'),
])
def test_unreadable_files_are_schema_problems(tmp_path, files, expected):
    """Bad JSON, missing files and empty directories are problems too, never tracebacks."""
    for name, text in files.items():
        (tmp_path / name).write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(SchemaError) as raised:
        load(tmp_path)
    assert expected in str(raised.value)


def test_a_missing_file_is_a_schema_problem(tmp_path):
    """A path that does not exist is reported, with the operating system's reason."""
    with pytest.raises(SchemaError, match="No such file or directory"):
        load(tmp_path / "missing.json")

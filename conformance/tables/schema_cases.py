"""Families of cases that check a schema loader: every rule of the schema language, kept and broken.

How this works
--------------
Each case is a set of documents and a verdict: accepted, or refused with
the problems at their places (document, entry counted from 1, path inside
the entry). Whether the documents make a schema is what the spec decides
where it speaks, so a case refused by one of its rules is MUST for that
verdict (its `spec` part) and SHOULD for the places, which are our
convention (conv.schema-problems); a case about a convention is SHOULD
throughout. The rows are grouped by rule; `PLACES` puts a type expression
in every place a type can stand.
"""

from ..language import suite

OK = [{"Ok_": {}}]
NAMED = [{"struct.P": {"a": "integer"}}, {"union.Q": [{"Z": {}}]}, {"fn.g": {}, "->": OK}]  # what types name
PROBLEMS = "conv.schema-problems"


def case(id_, description, requirements, documents, accepted, problems=(), spec=True):
    """A schema case: `documents` are (name, entries) pairs, or entries alone (one document,
    schema.json); `problems` are (entry, path) or (document, entry, path) for a refusal."""
    if type(documents) is not list or documents and type(documents[0]) is not tuple:
        documents = [("schema.json", documents)]
    requirements = [*requirements, *([PROBLEMS] if not accepted else [])]
    level = suite.level_of(requirements)
    made = {"id": f"schema/{id_}", "description": description, "requirements": list(dict.fromkeys(requirements)),
            "level": level, "documents": [{"name": name, **({"text": body} if type(body) is str else {"entries": body})}
                                          for name, body in documents],
            "expect": {"accepted": accepted}}
    if not accepted:
        made["expect"]["problems"] = [{"$partial": {key: value for key, value in zip(
            ("document", "entry", "path"), problem if len(problem) == 3 else ("schema.json", *problem))
            if key != "path" or value is not None}} for problem in problems]  # (a path of None: anywhere in the entry)
    if level != "MUST" and spec and any(suite.rule_levels().get(r) == "MUST" for r in requirements):
        made["spec"] = {"accepted": accepted}
    return made


def document_cases():
    """A schema is a JSON array of objects; several documents make one schema."""
    rule = ["schema.document"]
    yield case("document/empty", "An empty array is a schema with nothing of its own.", rule, [("schema.json", [])], True)
    for name, text, problem in (("not-json", '[{"struct.A": {}', (None, [])), ("object", '{"struct.A": {}}', (None, [])),
                                ("null", "null", (None, []))):
        yield case(f"document/{name}", f"JSON that is not an array of entries ({name.replace('-', ' ')}) is not a schema.",
                   rule, [("schema.json", text)], False, [problem])
    for name, entry in (("number", 5), ("string", "struct.A"), ("array", [{"struct.A": {}}]), ("null", None)):
        yield case(f"document/entry-{name}", f"An entry is an object, not a {name}.", rule,
                   [{"struct.A": {}}, entry], False, [(2, [])])
    yield case("document/several", "Documents of one schema refer to each other's definitions.",
               ["schema.entry", "conv.schema-documents"],
               [("a.json", [{"fn.f": {"p": "struct.P"}, "->": OK}]), ("b.json", [{"struct.P": {"a": "union.Q"}}]),
                ("c.json", [{"union.Q": [{"Z": {}}]}])], True)
    yield case("document/several-one-broken", "Each document's problems are named by its document.",
               ["schema.field-name", "conv.schema-documents"],
               [("a.json", [{"struct.A": {"x": "string"}}]), ("b.json", [{"struct.B": {"X": "string"}}])], False,
               [("b.json", 1, ["struct.B", "X"])])


def entry_cases():
    """Every kind of entry, well formed and not."""
    valid = {
        "info": {"info.Shop": {}},
        "info-content": {"info.Shop": {"version": 2}},
        "struct": {"struct.A": {"x": "string"}},
        "struct-empty": {"struct.A": {}},
        "union": {"union.U": [{"A": {"x": "integer"}}, {"B": {}}]},
        "fn": {"fn.f": {"x": "string"}, "->": [{"Ok_": {"y": "string"}}, {"ErrorNope": {}}]},
        "headers": {"headers.H": {"@trace": "string"}, "->": {"@elapsed": "integer"}},
        "headers-empty": {"headers.H": {}, "->": {}},
        "errors": {"errors.Busy": [{"ErrorBusy": {"retry!": "integer"}}, {"ErrorDown": {}}]},
    }
    for name, entry in valid.items():
        yield case(f"entry/{name}", f"A well-formed {name.split('-')[0]} entry is accepted.",
                   ["schema.entry", f"schema.{name.split('-')[0]}" if name.split("-")[0] != "fn" else "schema.fn-ok"],
                   [entry], True)
    refused = [  # (name, entry, the path of its problem, the rules it breaks)
        ("no-definition", {"x": 1}, [], "schema.entry"),
        ("empty-object", {}, [], "schema.entry"),
        ("two-definitions", {"struct.A": {}, "struct.B": {}}, [], "schema.entry"),
        ("unknown-kind", {"table.A": {}}, [], "schema.entry"),
        ("info-array", {"info.I": []}, ["info.I"], "schema.info"),
        ("info-string", {"info.I": "shop"}, ["info.I"], "schema.info"),
        ("struct-array", {"struct.A": [{"x": "string"}]}, ["struct.A"], "schema.struct"),
        ("struct-string", {"struct.A": "string"}, ["struct.A"], "schema.struct"),
        ("union-object", {"union.U": {"A": {}}}, ["union.U"], "schema.union"),
        ("union-tag-not-object", {"union.U": ["A"]}, ["union.U", 0], "schema.union"),
        ("union-two-tags", {"union.U": [{"A": {}, "B": {}}]}, ["union.U", 0], "schema.union"),
        ("union-no-tag", {"union.U": [{}]}, ["union.U", 0], "schema.union"),
        ("union-fields-not-object", {"union.U": [{"A": ["x"]}]}, ["union.U", 0, "A"], "schema.union"),
        ("headers-no-arrow", {"headers.H": {"@a": "string"}}, [], "schema.headers"),
        ("headers-array", {"headers.H": [], "->": {}}, ["headers.H"], "schema.headers"),
        ("headers-arrow-array", {"headers.H": {}, "->": []}, ["->"], "schema.headers"),
        ("errors-object", {"errors.E": {"ErrorA": {}}}, ["errors.E"], "schema.errors"),
        ("errors-two-tags", {"errors.E": [{"ErrorA": {}, "ErrorB": {}}]}, ["errors.E", 0], "schema.errors"),
        ("errors-fields-not-object", {"errors.E": [{"ErrorA": 5}]}, ["errors.E", 0, "ErrorA"], "schema.errors"),
    ]
    for name, entry, path, rule in refused:
        yield case(f"entry/refused/{name}", f"An entry that is not well formed ({name.replace('-', ' ')}) is refused.",
                   [rule], [entry], False, [(1, path)])
    yield case("entry/refused/union-empty", "A union with no tag is refused.", ["schema.union", "conv.schema-empty"],
               [{"union.U": []}], False, [(1, ["union.U"])], spec=False)
    yield case("entry/refused/extension-defined", "The _ext. types are the protocol's own: an entry defining "
               "one that is not stock is refused (at the entry or its key).", ["schema.entry", "conv.schema-extras"],
               [{"_ext.Nope": {}}], False, [(1, None)])
    yield case("entry/refused/errors-empty", "An errors entry with no tag is refused.",
               ["schema.errors", "conv.schema-empty"], [{"errors.E": []}], False, [(1, ["errors.E"])], spec=False)


def function_cases():
    """A function's -> : Ok_ first and alone, then its errors."""
    rows = [  # (name, entry, the path of its problem, the rule it breaks)
        ("no-arrow", {"fn.f": {}}, ["->"], "schema.fn-arrow"),
        ("arrow-object", {"fn.f": {}, "->": {"Ok_": {}}}, ["->"], "schema.fn-arrow"),
        ("arrow-string", {"fn.f": {}, "->": "Ok_"}, ["->"], "schema.fn-arrow"),
        ("arrow-empty", {"fn.f": {}, "->": []}, ["->"], "schema.fn-ok"),
        ("error-first", {"fn.f": {}, "->": [{"ErrorA": {}}, {"Ok_": {}}]}, ["->"], "schema.fn-ok"),
        ("ok-misspelt", {"fn.f": {}, "->": [{"Ok": {}}]}, ["->"], "schema.fn-ok"),
        ("ok-not-alone", {"fn.f": {}, "->": [{"Ok_": {}, "ErrorA": {}}]}, ["->"], "schema.fn-ok"),
        ("ok-not-object", {"fn.f": {}, "->": [5]}, ["->"], "schema.fn-ok"),
        ("ok-fields-array", {"fn.f": {}, "->": [{"Ok_": ["x"]}]}, ["->", 0, "Ok_"], "schema.fn-ok"),
        ("arguments-array", {"fn.f": [], "->": OK}, ["fn.f"], "schema.struct"),
        ("arguments-string", {"fn.f": "string", "->": OK}, ["fn.f"], "schema.struct"),
        ("error-lowercase", {"fn.f": {}, "->": [{"Ok_": {}}, {"errorA": {}}]}, ["->", 1, "errorA"], "schema.fn-errors"),
        ("error-two-tags", {"fn.f": {}, "->": [{"Ok_": {}}, {"ErrorA": {}, "ErrorB": {}}]}, ["->", 1], "schema.fn-errors"),
        ("error-not-object", {"fn.f": {}, "->": [{"Ok_": {}}, "ErrorA"]}, ["->", 1], "schema.fn-errors"),
        ("error-fields-not-object", {"fn.f": {}, "->": [{"Ok_": {}}, {"ErrorA": 5}]}, ["->", 1, "ErrorA"],
         "schema.fn-errors"),
        ("ok-again", {"fn.f": {}, "->": [{"Ok_": {}}, {"Ok_": {}}]}, ["->", 1, "Ok_"], "schema.fn-errors"),
    ]
    for name, entry, path, rule in rows:
        yield case(f"fn/refused/{name}", f"A function's results must follow the rules ({name.replace('-', ' ')}).",
                   [rule], [entry], False, [(1, path)])
    yield case("fn/errors-after-ok", "Ok_ first, then any number of error tags with their fields.",
               ["schema.fn-ok", "schema.fn-errors"],
               [{"fn.f": {}, "->": [{"Ok_": {"a": "string"}}, {"ErrorA": {}}, {"ErrorB": {"why": "string"}}]}], True)
    yield case("fn/no-arguments", "A function may take no arguments and give back nothing in Ok_.",
               ["schema.fn-ok"], [{"fn.f": {}, "->": OK}], True)


def name_cases():
    """Every naming rule, in every place a name stands."""
    good, bad = ["A", "_a", "a", "aB_1", "A_"], ["1a", "a-b", "a.b", "a b", "", "a!"]
    for kind, entry in (("struct", lambda n: {f"struct.{n}": {}}), ("union", lambda n: {f"union.{n}": [{"A": {}}]}),
                        ("fn", lambda n: {f"fn.{n}": {}, "->": OK}), ("errors", lambda n: {f"errors.{n}": [{"ErrorA": {}}]}),
                        ("headers", lambda n: {f"headers.{n}": {}, "->": {}}), ("info", lambda n: {f"info.{n}": {}})):
        for i, name in enumerate(good if kind == "struct" else good[1:3]):
            ending = ["conv.schema-internal"] if name.endswith("_") else []
            yield case(f"names/definition/{kind}/good-{i}", f"{kind}.{name} is a good definition name.",
                       ["schema.definition-name", *ending], [entry(name)], True, spec=not ending)
        for i, name in enumerate(bad if kind == "struct" else bad[:2]):
            yield case(f"names/definition/{kind}/bad-{i}", f"{kind}.{name!r} breaks the naming rule.",
                       ["schema.definition-name"], [entry(name)], False, [(1, [f"{kind}.{name}"])])
    fields = {  # a place a field name stands -> (the entries with NAME there, the path of its problem)
        "struct": (lambda n: [{"struct.A": {n: "string"}}], ["struct.A"]),
        "union-tag": (lambda n: [{"union.U": [{"A": {n: "string"}}]}], ["union.U", 0, "A"]),
        "argument": (lambda n: [{"fn.f": {n: "string"}, "->": OK}], ["fn.f"]),
        "result": (lambda n: [{"fn.f": {}, "->": [{"Ok_": {n: "string"}}]}], ["->", 0, "Ok_"]),
        "error": (lambda n: [{"fn.f": {}, "->": [{"Ok_": {}}, {"ErrorA": {n: "string"}}]}], ["->", 1, "ErrorA"]),
        "errors": (lambda n: [{"errors.E": [{"ErrorE": {n: "string"}}]}], ["errors.E", 0, "ErrorE"]),
    }
    good, bad = ["a", "aB_1", "a!", "a1!"], ["A", "1a", "_a", "a-b", "a!!", "a!b", "!", "", "///"]
    for place, (entries, path) in fields.items():
        for i, name in enumerate(good if place == "struct" else good[2:3]):
            yield case(f"names/field/{place}/good-{i}", f"{name} is a good field name ({place}).",
                       ["schema.field-name"], entries(name), True)
        for i, name in enumerate(bad if place == "struct" else bad[:2]):
            yield case(f"names/field/{place}/bad-{i}", f"{name!r} is not a field name ({place}).",
                       ["schema.field-name"], entries(name), False, [(1, [*path, name])])
    tags = {  # a place a tag stands -> (the entries with TAG there, the path of its problem)
        "union": (lambda t: [{"union.U": [{t: {}}]}], lambda t: ["union.U", 0, t]),
        "result": (lambda t: [{"fn.f": {}, "->": [{"Ok_": {}}, {t: {}}]}], lambda t: ["->", 1, t]),
        "errors": (lambda t: [{"errors.E": [{t: {}}]}], lambda t: ["errors.E", 0, t]),
    }
    for place, (entries, path) in tags.items():
        for i, tag in enumerate(["A", "Ab_1", "ERROR"]):
            yield case(f"names/tag/{place}/good-{i}", f"{tag} is a good tag ({place}).", ["schema.tag-name"],
                       entries(tag), True)
        for i, tag in enumerate(["a", "1A", "_A", "A-B", "A!"]):
            yield case(f"names/tag/{place}/bad-{i}", f"{tag!r} is not a tag ({place}).", ["schema.tag-name"],
                       entries(tag), False, [(1, path(tag))])
    headers = {"request": (lambda h: [{"headers.H": {h: "string"}, "->": {}}], ["headers.H"]),
               "response": (lambda h: [{"headers.H": {}, "->": {h: "string"}}], ["->"])}
    for place, (entries, path) in headers.items():
        for i, name in enumerate(["@a", "@aB_1"]):
            yield case(f"names/header/{place}/good-{i}", f"{name} is a good header name ({place}).",
                       ["schema.header-name"], entries(name), True)
        for i, name in enumerate(["a", "@A", "@1", "@a!", "@", "@a-b"]):
            yield case(f"names/header/{place}/bad-{i}", f"{name!r} is not a header name ({place}).",
                       ["schema.header-name"], entries(name), False, [(1, [*path, name])])


PLACES = {  # a place a type stands -> (the entry with T there, the path of T)
    "struct-field": (lambda t: {"struct.A": {"x": t}}, ["struct.A", "x"]),
    "union-field": (lambda t: {"union.U": [{"A": {"x": t}}]}, ["union.U", 0, "A", "x"]),
    "argument": (lambda t: {"fn.f": {"x": t}, "->": OK}, ["fn.f", "x"]),
    "result-field": (lambda t: {"fn.f": {}, "->": [{"Ok_": {"x": t}}]}, ["->", 0, "Ok_", "x"]),
    "error-field": (lambda t: {"fn.f": {}, "->": [{"Ok_": {}}, {"ErrorA": {"x": t}}]}, ["->", 1, "ErrorA", "x"]),
    "errors-field": (lambda t: {"errors.E": [{"ErrorE": {"x": t}}]}, ["errors.E", 0, "ErrorE", "x"]),
    "request-header": (lambda t: {"headers.H": {"@x": t}, "->": {}}, ["headers.H", "@x"]),
    "response-header": (lambda t: {"headers.H": {}, "->": {"@x": t}}, ["->", "@x"]),
    "array-element": (lambda t: {"struct.A": {"x": [t]}}, ["struct.A", "x", 0]),
    "map-value": (lambda t: {"struct.A": {"x": {"string": t}}}, ["struct.A", "x", "string"]),
}
VALID = ["boolean", "integer", "number", "string", "bytes", "any", "boolean?", "integer?", "number?", "string?",
         "bytes?", "any?", "struct.P", "struct.P?", "union.Q", "union.Q?", "fn.g", "fn.g?", ["string"], ["struct.P?"],
         [["integer"]], {"string": "number"}, {"string": ["string"]}, [{"string": "any?"}]]
INVALID = ["strin", "String", "struct.Nope", "union.P", "fn.Nope", "integer??", "?", "", "string ?", "[string]",
           "array", 5, None, True, [], ["string", "integer"], {"int": "string"}, {"string": "a", "x": "b"}, {}]


def type_cases():
    """Every type expression, good and bad, in every place a type can stand."""
    for place, (entry, path) in PLACES.items():
        everything = place == "struct-field"
        for i, type_ in enumerate(VALID if everything else [VALID[13], VALID[19], VALID[21], VALID[11]]):
            yield case(f"types/{place}/good-{i}", f"{type_!r} is a type ({place.replace('-', ' ')}).",
                       ["schema.types"], [entry(type_), *NAMED], True)
        for i, type_ in enumerate(INVALID if everything else INVALID[:1] + INVALID[15:16] + INVALID[5:6]):
            yield case(f"types/{place}/bad-{i}", f"{type_!r} is not a type ({place.replace('-', ' ')}).",
                       ["schema.types"], [entry(type_), *NAMED], False, [(1, path)])
    yield case("types/nested-bad", "A bad type deep inside arrays and maps is found where it is.",
               ["schema.types"], [{"struct.A": {"x": [{"string": ["strin"]}]}}], False,
               [(1, ["struct.A", "x", 0, "string", 0])])
    yield case("types/optional-nullable", "A field may be optional and nullable at once; the two are different.",
               ["schema.types", "schema.field-name"], [{"struct.A": {"a!": "string?", "b": "string?", "c!": "string"}}],
               True)
    yield case("types/selection", "_ext.Select_ is a type: a selection, checked against the function being called.",
               ["schema.types", "conv.schema-extras"], [{"struct.A": {"s!": "_ext.Select_"}}], True, spec=False)
    yield case("types/unknown-extension", "Only the stock _ext types exist.", ["schema.types", "conv.schema-extras"],
               [{"struct.A": {"s!": "_ext.Nope"}}], False, [(1, ["struct.A", "s!"])])


def comment_cases():
    """Comments: a string or an array of strings, beside a definition, never changing it."""
    entries = {"fn": {"fn.f": {}, "->": OK}, "struct": {"struct.A": {}}, "union": {"union.U": [{"A": {}}]},
               "headers": {"headers.H": {}, "->": {}}, "errors": {"errors.E": [{"ErrorE": {}}]}}
    for kind, entry in entries.items():
        for name, comment in (("string", "What it is."), ("lines", ["What it is,", "and why."]), ("no-lines", [])):
            yield case(f"comments/{kind}/{name}", f"A comment ({name.replace('-', ' ')}) may stand beside a {kind}.",
                       ["schema.comment"], [{"///": comment, **entry}], True)
        for name, comment in (("number", 5), ("object", {"a": "b"}), ("number-line", ["a", 1]), ("null", None)):
            yield case(f"comments/{kind}/bad-{name}", f"A comment is text: not {name.replace('-', ' a ')} ({kind}).",
                       ["schema.comment"], [{"///": comment, **entry}], False, [(1, ["///"])])
    yield case("comments/info", "A comment may stand beside an info entry too.", ["schema.comment", "conv.schema-extras"],
               [{"///": "The shop.", "info.Shop": {}}], True, spec=False)
    yield case("comments/tag", "A comment may stand in a tag object.", ["schema.comment", "conv.schema-extras"],
               [{"union.U": [{"///": "The first.", "A": {}}]}], True, spec=False)
    yield case("comments/result-tag", "A comment may stand in a result's tag object.",
               ["schema.comment", "conv.schema-extras"], [{"fn.f": {}, "->": [{"///": "Done.", "Ok_": {}}]}], True,
               spec=False)
    yield case("comments/not-among-fields", "/// among fields is a field name, and a bad one.",
               ["schema.field-name"], [{"struct.A": {"x": "string", "///": "string"}}], False, [(1, ["struct.A", "///"])])


def convention_cases():
    """What the spec leaves open: types that never end, names defined twice, what else an entry holds."""
    never = ["schema.types", "conv.schema-terminates"]
    rows = [  # (name, entries, whether they are accepted, the problems)
        ("self", [{"struct.A": {"a": "struct.A"}}], False, [(1, ["struct.A"])]),
        ("mutual", [{"struct.A": {"b": "struct.B"}}, {"struct.B": {"a": "struct.A"}}], False,
         [(1, ["struct.A"]), (2, ["struct.B"])]),
        ("union-every-tag", [{"union.U": [{"A": {"u": "union.U"}}, {"B": {"u": "union.U"}}]}], False, [(1, ["union.U"])]),
        ("function-argument", [{"fn.f": {"again": "fn.f"}, "->": OK}], False, [(1, ["fn.f"])]),
        ("optional", [{"struct.A": {"a!": "struct.A"}}], True, []),
        ("nullable", [{"struct.A": {"a": "struct.A?"}}], True, []),
        ("array", [{"struct.A": {"a": ["struct.A"]}}], True, []),
        ("map", [{"struct.A": {"a": {"string": "struct.A"}}}], True, []),
        ("mutual-nullable", [{"struct.A": {"b": "struct.B"}}, {"struct.B": {"a": "struct.A?"}}], True, []),
        ("union-with-a-leaf", [{"union.U": [{"A": {"u": "union.U"}}, {"Leaf": {}}]}], True, []),
    ]
    for name, entries, accepted, problems in rows:
        yield case(f"terminates/{name}", f"A type that {'has' if accepted else 'has no'} finite value is "
                   f"{'accepted' if accepted else 'refused'} ({name.replace('-', ' ')}).", never, entries, accepted,
                   problems, spec=False)
    once = ["conv.schema-once"]
    twice = [  # (name, documents, the problems)
        ("struct", [{"struct.A": {}}, {"struct.A": {"x": "string"}}], [(2, ["struct.A"])]),
        ("union-tag", [{"union.U": [{"A": {}}, {"A": {"x": "string"}}]}], [(1, ["union.U", 1, "A"])]),
        ("result-tag", [{"fn.f": {}, "->": [{"Ok_": {}}, {"ErrorA": {}}, {"ErrorA": {}}]}], [(1, ["->", 2, "ErrorA"])]),
        ("field", [{"struct.A": {"x": "string", "x!": "string"}}], [(1, ["struct.A", "x!"])]),
        ("info", [{"info.A": {}}, {"info.B": {}}], [(2, ["info.B"])]),
        ("errors-tag", [{"errors.A": [{"ErrorA": {}}]}, {"errors.B": [{"ErrorA": {}}]}], [(2, ["errors.B", 0, "ErrorA"])]),
        ("errors-and-function", [{"fn.f": {}, "->": [{"Ok_": {}}, {"ErrorA": {}}]}, {"errors.E": [{"ErrorA": {}}]}],
         [(2, ["errors.E"])]),
        ("header", [{"headers.H": {"@a": "string"}, "->": {}}, {"headers.I": {"@a": "string"}, "->": {}}],
         [(2, ["headers.I", "@a"])]),
        ("across-documents", [("a.json", [{"struct.A": {}}]), ("b.json", [{"union.U": [{"A": {}}]}, {"struct.A": {}}])],
         [("b.json", 2, ["struct.A"])]),
    ]
    for name, documents, problems in twice:
        yield case(f"once/{name}", f"A name is defined once ({name.replace('-', ' ')}).", ["schema.entry", *once],
                   documents, False, problems, spec=False)
    extras = ["conv.schema-extras"]
    yield case("extras/annotation", "A $ annotation that is true or false stands beside a definition.",
               ["schema.entry", *extras], [{"fn.f": {}, "->": OK, "$authenticated": False}], True, spec=False)
    yield case("extras/annotation-not-boolean", "An annotation is true or false.", ["schema.entry", *extras],
               [{"fn.f": {}, "->": OK, "$authenticated": "no"}], False, [(1, ["$authenticated"])], spec=False)
    for kind, entry in (("struct", {"struct.A": {}}), ("fn", {"fn.f": {}, "->": OK}), ("info", {"info.I": {}}),
                        ("headers", {"headers.H": {}, "->": {}}), ("errors", {"errors.E": [{"ErrorA": {}}]})):
        yield case(f"extras/unknown-key/{kind}", f"A {kind} entry holds nothing it does not define.",
                   ["schema.entry", *extras], [{**entry, "extra": 1}], False, [(1, ["extra"])], spec=False)
    internal = ["conv.schema-internal"]
    yield case("internal/struct", "A service may define a name ending in _: it is internal.",
               ["schema.definition-name", *internal], [{"struct.A_": {"x": "string"}}, {"fn.f": {"a": "struct.A_"}, "->": OK}],
               True, spec=False)
    yield case("internal/function", "A service may define a function ending in _: it is internal.",
               ["schema.definition-name", *internal], [{"fn.tidy_": {}, "->": OK}], True, spec=False)
    yield case("internal/stock-again", "A stock definition is not defined again.", ["schema.definition-name", *internal],
               [{"fn.ping_": {}, "->": OK}], False, [(1, ["fn.ping_"])], spec=False)

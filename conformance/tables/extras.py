"""Families of cases about the protocol's extras, on the testbed: @select_, @base64_ marks,
MessagePack and packing, fn.api_, and a mock of the testbed.
"""

from .testbed import (AUTH, DISALLOWED, ELEMENT, REQUIREMENTS, STRICT, TYPES, UNAUTHENTICATED, VALUES, case,
                      cases_of, echo, error, missing, name_of, plain, public_api, schema, step, unexpected)
from .checks import POSITIONS

POINTS = [{"x": 1, "y": 2, "label!": "a"}, {"x": 3, "y": 4}]
SHAPES = [{"Circle": {"radius": 1.5}}, {"Square": {"side": 2, "label!": "s"}}, {"Dot": {}}]
TREE = {"Node": {"left": {"Leaf": {"value": 1}}, "right": {"Node": {"left": {"Leaf": {"value": 2}}, "right": {"Leaf": {"value": 3}}}}}}


def select_cases():
    """@select_ on every shape a result can have, and how it is checked."""
    rows = [  # (name, selection, echoed arguments, what comes back, what it shows)
        ("result-fields", {"->": {"Ok_": ["int!", "pointArr!"]}}, {"int!": 1, "str!": "s", "pointArr!": POINTS},
         {"int!": 1, "pointArr!": POINTS}, "-> keeps the named Ok_ fields only."),
        ("result-none", {"->": {"Ok_": []}}, {"int!": 1, "str!": "s"}, {}, "An empty list keeps no field."),
        ("empty-selection", {}, {"int!": 1}, {"int!": 1}, "An empty selection keeps everything."),
        ("struct-in-array", {"struct.Point": ["x"]}, {"pointArr!": POINTS}, {"pointArr!": [{"x": 1}, {"x": 3}]},
         "A struct's selection applies to every element of an array of it."),
        ("struct-in-map", {"struct.Point": ["y", "label!"]}, {"pointMap!": {"a": POINTS[0], "b": POINTS[1]}},
         {"pointMap!": {"a": {"y": 2, "label!": "a"}, "b": {"y": 4}}}, "... and to every value of a map of it."),
        ("struct-in-struct", {"struct.Point": []}, {"every!": {"point!": POINTS[0], "int!": 5}},
         {"every!": {"point!": {}, "int!": 5}}, "... and wherever it is nested."),
        ("struct-nested", {"struct.Every": ["int!"]}, {"every!": {"point!": POINTS[0], "int!": 5}},
         {"every!": {"int!": 5}}, "A nested struct of the result may be selected too."),
        ("union-tag", {"union.Shape": {"Circle": [], "Square": ["side"]}}, {"shapeArr!": SHAPES},
         {"shapeArr!": [{"Circle": {}}, {"Square": {"side": 2}}, {"Dot": {}}]},
         "A union's selection keeps the named fields of each named tag; other tags keep all."),
        ("union-in-union", {"union.Every": {"Every": ["shape!"]}, "union.Shape": {"Square": []}},
         {"union!": {"Every": {"shape!": SHAPES[1], "int!": 1}}}, {"union!": {"Every": {"shape!": {"Square": {}}}}},
         "Selections of several unions apply together."),
        ("recursive", {"union.Tree": {"Node": ["right"]}}, {"tree!": TREE},
         {"tree!": {"Node": {"right": {"Node": {"right": {"Leaf": {"value": 3}}}}}}},
         "A selection applies at every depth of a recursive type."),
        ("nullable-struct", {"struct.Chain": ["value"]}, {"chain!": {"value": 1, "next": {"value": 2, "next": None}}},
         {"chain!": {"value": 1}}, "A selection of a struct reached through a nullable field."),
        ("selection-is-data", {"->": {"Ok_": ["sel!"]}}, {"sel!": {"struct.Point": ["x"]}, "int!": 1},
         {"sel!": {"struct.Point": ["x"]}}, "A selection inside a result is data: it is not applied."),
    ]
    for name, selection, arguments, kept, description in rows:
        yield case(f"testbed/select/{name}", description, ["header.select", "conv.select-rules"],
                   [step([{"@select_": selection}, {"fn.echo": arguments}], [{}, {"Ok_": kept}])])
    checked = [  # (name, selection, the cases, what it shows)
        ("not-an-object", ["int!"], [(["@select_"], unexpected("Array", "Object"))], "A selection is an object."),
        ("unreachable-struct", {"struct.Variable": []}, [(["@select_", "struct.Variable"], DISALLOWED)],
         "Only structs the result can hold may be selected."),
        ("function", {"fn.greet": []}, [(["@select_", "fn.greet"], DISALLOWED)], "A function is never selected."),
        ("error-tag", {"->": {"ErrorEcho": []}}, [(["@select_", "->", "ErrorEcho"], DISALLOWED)],
         "Only Ok_ may be selected under ->."),
        ("unknown-field", {"struct.Point": ["x", "z"]}, [(["@select_", "struct.Point", 1], ELEMENT)],
         "Each name listed must be a field of the struct."),
        ("unknown-tag", {"union.Shape": {"Hexagon": []}}, [(["@select_", "union.Shape", "Hexagon"], DISALLOWED)],
         "Each tag named must be a tag of the union."),
        ("tag-without-fields", {"union.Shape": {"Dot": []}}, [(["@select_", "union.Shape", "Dot"], DISALLOWED)],
         "A tag without fields offers nothing to select."),
        ("struct-not-a-list", {"struct.Point": {"x": True}}, [(["@select_", "struct.Point"], unexpected("Object", "Array"))],
         "A struct's selection is a list of field names."),
    ]
    for name, selection, found, description in checked:
        yield case(f"testbed/select/invalid/{name}", description, ["header.select", "conv.select-rules", "case.path"],
                   [step([{"@select_": selection}, {"fn.echo": {}}], error("ErrorInvalidRequestHeaders_", *found))])
    yield case("testbed/select/error-results-whole", "An error result is sent whole, whatever is selected.",
               ["header.select", "conv.select-rules"],
               [step([{"@select_": {"->": {"Ok_": []}}, "@result": {"ErrorEcho": {"reason": "r"}}}, {"fn.echo": {}}],
                     [{}, {"ErrorEcho": {"reason": "r"}}])])
    excused = [  # (name, selection, a result missing required fields the selection drops, what it shows)
        ("excuses-unselected-fields", {"struct.Point": ["x"]}, {"pointArr!": [{"x": 1}]},
         "A handler need not fill in the required fields not selected."),
        ("excused-in-map", {"struct.Point": ["x"]}, {"pointMap!": {"a": {"x": 1}}}, "... in a map of structs too,"),
        ("excused-in-union", {"union.Shape": {"Square": ["label!"]}}, {"shape!": {"Square": {"label!": "s"}}},
         "... in a union's tag,"),
        ("excused-recursive", {"union.Tree": {"Node": ["left"]}},
         {"tree!": {"Node": {"left": {"Node": {"left": {"Leaf": {"value": 1}}}}}}}, "... and at every depth."),
    ]
    for name, selection, result, description in excused:
        yield case(f"testbed/select/{name}", description, ["header.select", "conv.select-rules", "conv.response-validation"],
                   [step([{"@select_": selection, "@result": {"Ok_": result}}, {"fn.echo": {}}], [{}, {"Ok_": result}])],
                   level="SHOULD")
    yield case("testbed/select/excuses-only-what-it-drops", "Selecting a struct's fields excuses nothing inside the "
               "fields it keeps.", ["header.select", "conv.response-validation"],
               [step([{"@select_": {"struct.Every": ["point!"]}, "@result": {"Ok_": {"every!": {"point!": {"x": 1}}}}},
                      {"fn.echo": {}}], error("ErrorInvalidResponseBody_", (["Ok_", "every!", "point!"], missing("y"))))],
               level="SHOULD")
    yield case("testbed/select/unsafe", "With @unsafe_, what a selection cannot read is sent as it is.",
               ["header.select", "conv.unsafe"],
               [step([{"@select_": {"union.Shape": {"Circle": []}}, "@unsafe_": True,
                       "@result": {"Ok_": {"shape!": "x", "shapeArr!": [{"Hexagon": {}}, {"Circle": 1}, {"Circle": {"radius": 1}}]}}},
                      {"fn.echo": {}}],
                     [{}, {"Ok_": {"shape!": "x", "shapeArr!": [{"Hexagon": {}}, {"Circle": 1}, {"Circle": {}}]}}])],
               level="SHOULD")
    yield case("testbed/select/checked-before-trimming", "A result is checked whole before it is trimmed: an invalid "
               "field is refused even if the selection would drop it.", ["header.select", "conv.response-validation"],
               [step([{"@select_": {"struct.Point": ["x"]}, "@result": {"Ok_": {"pointArr!": [{"x": 1, "y": "2"}]}}},
                      {"fn.echo": {}}],
                     error("ErrorInvalidResponseBody_", (["Ok_", "pointArr!", 0, "y"], unexpected("String", "Integer"))))],
               level="SHOULD")


def base64_cases():
    """@base64_ marks where bytes are in a JSON answer, inside every kind of container."""
    rows = [  # (name, echoed arguments, marks, what it shows)
        ("field", {"bytes!": "AQI="}, {"bytes!": True}, "A bytes field is marked true."),
        ("null", {"bytesNull!": None}, None, "A null bytes field is not marked."),
        ("array", {"bytesArr!": ["AQI=", ""]}, {"bytesArr!": {"*": True}}, "An array of bytes is marked {\"*\": true}."),
        ("array-with-nulls", {"bytesArrNull!": [None, "AQI="]}, {"bytesArrNull!": {"*": True}},
         "An array of nullable bytes is marked like an array of bytes."),
        ("empty-array", {"bytesArr!": []}, None, "An empty array holds no bytes, so nothing is marked."),
        ("map", {"bytesMap!": {"a": "AQI=", "b": "/w=="}}, {"bytesMap!": {"*": True}}, "A map of bytes is marked the same way."),
        ("nested", {"every!": {"bytes!": "AQI=", "int!": 1}}, {"every!": {"bytes!": True}},
         "Bytes in a nested struct are marked at their path."),
        ("union", {"union!": {"Every": {"bytesMap!": {"k": "AQI="}}}}, {"union!": {"Every": {"bytesMap!": {"*": True}}}},
         "Bytes in a union tag are marked through the tag."),
        ("several", {"bytes!": "", "every!": {"bytesArr!": ["AQI="]}, "union!": {"Every": {"bytes!": "AQI="}}},
         {"bytes!": True, "every!": {"bytesArr!": {"*": True}}, "union!": {"Every": {"bytes!": True}}},
         "Every place bytes are is marked, and only those."),
    ]
    for name, arguments, marks, description in rows:
        yield case(f"testbed/base64/{name}", description, ["header.base64", "conv.base64", "type.bytes"],
                   [step([{}, {"fn.echo": arguments}], echo(arguments, marks))])
    yield case("testbed/base64/ignored-in-requests", "A request @base64_ header changes nothing: the schema says where bytes are.",
               ["conv.base64"], [step([{"@base64_": {"fn.echo": {"str!": True}}}, {"fn.echo": {"str!": "AQI="}}],
                                      [{}, {"Ok_": {"str!": "AQI="}}])], level="SHOULD")


def as_msgpack(value, kind=None):
    """A value in the suite's MessagePack notation: bytes (base64 text on the JSON wire) as {"$bin": ...}."""
    return {"$bin": value} if kind == "bytes" and type(value) is str else value


NEGOTIATED = {"@enc_": {"$type": "object"}, "@bin_": [{"$type": "integer", "$capture": "checksum"}]}
STEADY = {"@bin_": [{"$var": "checksum"}]}


def _binary_steps(arguments, answer_arguments, headers=None, unpack=False):
    """Negotiate with a JSON request, then send the same arguments as MessagePack with integer keys."""
    headers = headers or {}
    extra = {"unpack": True} if unpack else {}
    first = step([{"@bin_": [], **headers}, {"fn.echo": arguments}], [{**headers, **NEGOTIATED}, {"Ok_": answer_arguments}],
                 wire="msgpack", **extra)
    second = {"request": {"msgpack": [{**STEADY, **headers}, {"fn.echo": answer_arguments}], "ids": True},
              "response": {"wire": "msgpack", **extra, "message": [{**headers, **STEADY}, {"Ok_": answer_arguments}],
                           "smallerThan": 1}}
    return [first, second]


def binary_cases():
    """Every type in every position, and packed arrays, there and back in MessagePack."""
    negotiation = ["binary.negotiate", "binary.checksum", "conv.binary-encoding", "header.bin"]
    for kind, (valid, _) in VALUES.items():
        for position in ("argument", "nested", "union-tag", "array-element", "map-value"):
            build = POSITIONS[position][1]
            arguments = build(kind, valid[-1], False)[1][1]["Ok_"]
            encoded = build(kind, as_msgpack(valid[-1], kind), False)[1][1]["Ok_"]
            yield case(f"testbed/binary/{kind}/{position}", f"A {TYPES[kind]} value as "
                       f"{POSITIONS[position][0]} goes there and back in MessagePack, with integer keys.",
                       [*REQUIREMENTS[kind], *negotiation, "binary.sizes"], _binary_steps(arguments, encoded))
    packed = [  # (name, echoed arguments, what it shows)
        ("structs", {"pointArr!": POINTS}, "Arrays of structs are packed as rows, the missing optional field at the end left out."),
        ("unions", {"shapeArr!": SHAPES}, "Arrays of unions are packed, each tag a nested header."),
        ("nested", {"every!": {"pointArr!": POINTS, "shapeArr!": SHAPES}}, "Packed arrays may be nested in structs."),
        ("map-of-structs", {"pointMap!": {"a": POINTS[0]}, "pointArr!": []}, "Maps are not packed; empty arrays are kept."),
        ("scalars", {"intArr!": [1, 2], "strMap!": {"a": "b"}}, "Arrays of plain values are kept as they are."),
    ]
    for name, arguments, description in packed:
        yield case(f"testbed/binary/packed/{name}", description + " (@pac_ true)", ["header.bin", "binary.negotiate"],
                   _binary_steps(arguments, arguments, {"@pac_": True}, unpack=True), level="SHOULD")
    rows = [{"$ext": [17, ""]}, [None, "x", "y", "label!"], [1, 2, "a"], [3, 4]]
    yield case("testbed/binary/packed/layout", "A packed array is Ext 17, a header row of key ids (the names here), "
               "then a row of values per map, in the header's order.", ["header.bin"],
               [step([{"@bin_": [], "@pac_": True}, {"fn.echo": {"pointArr!": POINTS}}],
                     [{"@pac_": True, **NEGOTIATED}, {"Ok_": {"pointArr!": rows}}], wire="msgpack")], level="SHOULD")
    yield case("testbed/binary/packed/request", "A packed MessagePack request is unpacked before it is checked.",
               ["header.bin"], [_binary_steps({}, {})[0], {
                   "request": {"msgpack": [{**STEADY, "@pac_": True}, {"fn.echo": {"pointArr!": rows}}], "ids": True},
                   "response": {"wire": "msgpack", "message": [{"@pac_": True, **STEADY}, {"Ok_": {"pointArr!": rows}}]}}],
               level="SHOULD")
    tree = {"Leaf": {"value": 0}}
    for level in range(1, 60):
        tree = {"Node": {"left": tree, "right": {"Leaf": {"value": level}}}}
    yield case("testbed/binary/deep", "A value nested 120 levels deep goes there and back in MessagePack.",
               ["type.union", "header.bin", "conv.no-crash"], _binary_steps({"tree!": tree}, {"tree!": tree}))
    yield case("testbed/binary/errors-in-json", "An error result comes back in JSON, without @bin_, even when "
               "MessagePack was asked for.", ["binary.negotiate", "header.bin"],
               [step([{"@bin_": [], "@result": {"ErrorEcho": {"reason": "r"}}}, {"fn.echo": {}}],
                     [{}, {"ErrorEcho": {"reason": "r"}}], wire="json")], level="SHOULD")
    yield case("testbed/binary/invalid-in-json", "A validation error of a MessagePack request comes back in JSON.",
               ["binary.negotiate", "error.invalid-body"], [_binary_steps({}, {})[0], {
                   "request": {"msgpack": [STEADY, {"fn.echo": {"int!": "x"}}], "ids": True},
                   "response": {"wire": "json", "message": error("ErrorInvalidRequestBody_",
                                                                  (["fn.echo", "int!"], unexpected("String", "Integer")))}}])


# Examples both implementations draw for the testbed (from the same seeded generator as the mock).
EXAMPLES = {
    "info.Testbed": ("example", {}),
    "errors.Testbed": ("example", {"ErrorTestbed": {"code": 3178529, "note!": "kappa"}}),
    "struct.Point": ("example", {"label!": "sigma", "x": 3178529, "y": 35766321}),
    "struct.Chain": ("example", {"next": {"next": {"next": {"next": None, "value": 954081041}, "value": 1598503090},
                                          "value": 415302837}, "value": 326552725}),
    "union.Shape": ("example", {"Square": {"label!": "sigma", "side": 0.016654991086877412}}),
    "union.Auth_": ("example", {"Token": {"token": "sigma"}}),
    "headers.Auth_": ("inputExample", {"@auth_": {"Token": {"token": "sigma"}}}),
    "fn.greet": ("inputExample", {"fn.greet": {"name": "sigma"}}),
    "fn.secret": ("inputExample", {"fn.secret": {"hint!": "sigma"}}),
}


def api_cases():
    """fn.api_ on the testbed: the public entries in order, the internal ones, and examples."""
    ask = lambda arguments, api: [step([{}, {"fn.api_": arguments}], [{}, {"Ok_": {"api": api}}])]
    yield case("testbed/api/public", "fn.api_ answers the testbed's entries as written, comments and annotations "
               "included, with info first and the rest ordered by name.", ["schema.api", "internal.api", "internal.hidden"],
               ask({}, public_api()), requires=["testbed"])
    yield case("testbed/api/internal", "With includeInternal! true, the stock entries come too, in the same order.",
               ["internal.api", "conv.internal-schema"],
               ask({"includeInternal!": True}, {"$includes": [*schema(), {"$partial": {"fn.ping_": {}, "->": [{"Ok_": {}}]}}]}),
               requires=["testbed"])
    yield case("testbed/api/examples", "With includeExamples! true, every entry carries example values, drawn like "
               "the mock's values from the seeded generator.", ["internal.api", "conv.mock"],
               ask({"includeExamples!": True}, {"$includes": [
                   {"$partial": {key: plain(next(e for e in public_api() if name_of(plain(e)) == key))[key], word: value}}
                   for key, (word, value) in EXAMPLES.items()]}), level="SHOULD", requires=["testbed"])


GREET = {0: "sigma", 1: "sigma", 2: "lambda", 3: "delta", 4: "phi", 5: "xi"}
SEEDED = {  # seed -> what fn.echo answers right after it, with the @select_ of SELECTED
    11: {"any!": False, "int!": 382806820, "num!": 0.6527920359060131, "point!": {"x": 434362405, "y": 2014510910}},
    20: {"point!": {"label!": "delta", "x": 72839663, "y": 1131289281}, "sel!": {"union.Shape": {"Square": ["side"]}},
         "shape!": {"Dot": {}}},
    35: {"call!": {"fn.greet": {"name": "mu"}}, "point!": {"x": 1497457073, "y": 669550621},
         "shape!": {"Circle": {"radius": 0.36066639579863585}}, "str!": "psi"},
    57: {"bool!": True, "num!": 0.43419181761992715, "shape!": {"Circle": {"radius": 0.2813677588856629}}},
    69: {"any!": False, "bool!": False, "call!": {"fn.greet": {"name": "tau"}}, "num!": 0.3206568860079427,
         "point!": {"label!": "delta", "x": 403763224, "y": 1766576582}, "sel!": {"struct.Point": ["label!"]}},
}
SELECTED = {"->": {"Ok_": ["bool!", "int!", "num!", "str!", "any!", "point!", "shape!", "call!", "sel!", "bytes!"]}}
OK = [{}, {"Ok_": {}}]


def _mock(name, description, requirements, steps, level="MUST"):
    """A mock case: it starts with no stubs and no recorded calls, and runs alone."""
    clear = [step([{}, {"fn.clearStubs_": {}}], OK), step([{}, {"fn.clearCalls_": {}}], OK)]
    return case(f"testbed/mock/{name}", description, requirements, clear + steps, level, ["testbed", "mock"],
                exclusive=True)


def _seed(seed):
    return step([{}, {"fn.setRandomSeed_": {"seed": seed}}], OK)


def _stub(result, call=None):
    return step([{}, {"fn.createStub_": {"stub": {**(call or {"fn.echo": {}}), "->": result}}}], OK)


def mock_cases():
    """A mock of the testbed: seeded values, stubs of every type, verification."""
    for seed, greeting in GREET.items():
        yield _mock(f"seeded/greet-{seed}", f"After fn.setRandomSeed_ {seed}, a generated result is always the same.",
                    ["mock.rule1", "conv.mock"], [_seed(seed), step([{}, {"fn.greet": {"name": "a"}}],
                                                                    [{}, {"Ok_": {"greeting": greeting}}])], "SHOULD")
    for seed, answer in SEEDED.items():
        yield _mock(f"seeded/echo-{seed}", "Seeded values of every type come out the same, draw for draw.",
                    ["mock.rule1", "conv.mock", "header.select"],
                    [_seed(seed), step([{"@select_": SELECTED}, {"fn.echo": {}}], [{}, {"Ok_": answer}])], "SHOULD")
    for kind, (valid, invalid) in VALUES.items():
        valid = [{}] if kind == "sel" else valid  # a selection is checked against the request's function: see below
        fields = {f"{kind}!": valid[-1], f"{kind}Arr!": valid, f"{kind}MapNull!": {"k": valid[0], "n": None}}
        marks = {f"{kind}!": True, f"{kind}Arr!": {"*": True}, f"{kind}MapNull!": {"*": True}} if kind == "bytes" else None
        yield _mock(f"stub/{kind}", f"A stub's {TYPES[kind]} values come back as they were given.",
                    ["mock.rule3", "mock.createStub", *REQUIREMENTS[kind]],
                    [_stub({"Ok_": fields}), step([{}, {"fn.echo": {"int!": 1}}], echo(fields, marks))])
        if not invalid:
            continue
        value, problem = invalid[0]
        found = [(["fn.createStub_", "stub", "->", "Ok_", f"{kind}!", *path], reason)
                 for path, reason in cases_of(kind, value, problem)]
        yield _mock(f"stub/{kind}-invalid", f"A stub whose result is not {TYPES[kind]} is refused, with its path.",
                    ["mock.createStub", "case.path", *REQUIREMENTS[kind]],
                    [step([{}, {"fn.createStub_": {"stub": {"fn.echo": {}, "->": {"Ok_": {f"{kind}!": value}}}}}],
                          error("ErrorInvalidRequestBody_", *found))])
    yield _mock("stub/selection-scope", "A selection inside a stub is checked against the function of the request "
                "that carries it, fn.createStub_, which holds no struct or union to select.",
                ["mock.createStub", "conv.select-rules"],
                [step([{}, {"fn.createStub_": {"stub": {"fn.echo": {}, "->": {"Ok_": {"sel!": {"struct.Point": ["x"]}}}}}}],
                      error("ErrorInvalidRequestBody_",
                             (["fn.createStub_", "stub", "->", "Ok_", "sel!", "struct.Point"], DISALLOWED)))], "SHOULD")
    greet = {"fn.greet": {"name": "a"}}
    refused = [  # (name, stub, the case, what it shows)
        ("extra-key", {**greet, "->": {"Ok_": {"greeting": "x"}}, "extra": 1}, (["extra"], DISALLOWED),
         "A stub holds a call and -> only."),
        ("no-result", greet, ([], missing("->")), "A stub needs its result."),
        ("unknown-result", {**greet, "->": {"Nope": {}}}, (["->", "Nope"], DISALLOWED), "A stub's result is one of the function's."),
        ("other-functions-error", {**greet, "->": {"ErrorEcho": {"reason": "r"}}}, (["->", "ErrorEcho"], DISALLOWED),
         "Another function's error is not a result of this one."),
    ]
    for name, stub, (path, reason), description in refused:
        yield _mock(f"stub/refused/{name}", description, ["mock.createStub", "case.path"],
                    [step([{}, {"fn.createStub_": {"stub": stub}}],
                          error("ErrorInvalidRequestBody_", (["fn.createStub_", "stub", *path], reason)))])
    yield _mock("stub/group-error", "A stub may answer with a tag of an errors.* group; other calls are generated.",
                ["mock.rule3", "fn.errors-added"],
                [_stub({"ErrorTestbed": {"code": 1}}, greet), step([{}, greet], [{}, {"ErrorTestbed": {"code": 1}}]),
                 step([{}, {"fn.greet": {"name": "b"}}], [{}, {"Ok_": {"greeting": {"$type": "string"}}}])])
    yield _mock("stub/filled", "Required result fields a stub leaves out are generated, draw for draw after a seed.",
                ["mock.rule3", "conv.mock"],
                [_stub({"Ok_": {"bool": True}}, {"fn.strict": {"bool": True}}), _seed(3),
                 step([{}, {"fn.strict": STRICT}], [{}, {"Ok_": {
                     "bool": True, "boolNull": None, "ints": [40092786, 80334602], "names": {},
                     "point": {"x": 633391608, "y": 1788646081}, "pointNull": None,
                     "shape": {"Square": {"side": 0.1516263569479931}}}}])], "SHOULD")
    called = {"fn.echo": {"point!": {"x": 1, "y": 2}}}
    yield _mock("verify/partial-and-strict", "A call matches a verification partially, unless strictMatch! is true.",
                ["mock.verify", "mock.rule4", "error.verification", "case.verification-reason", "conv.mock"],
                [step([{}, called], [{"$type": "object"}, {"Ok_": {"$type": "object"}}]),
                 step([{}, {"fn.verify_": {"call": {"fn.echo": {"point!": {"x": 1}}}}}], OK),
                 step([{}, {"fn.verify_": {"call": {"fn.echo": {"point!": {"x": 1}}}, "strictMatch!": True}}],
                      [{}, {"ErrorVerificationFailure": {"reason": {"TooFewMatchingCalls": {
                          "wanted": {"AtLeast": {"times": 1}}, "found": 0, "allCalls": [called]}}}}])])
    yield _mock("verify/count", "count! asks for an exact number of calls; fn.verifyNoMoreInteractions_ passes once "
                "every call was verified.", ["mock.verify", "case.verification-reason", "conv.mock"],
                [step([{}, greet], [{}, {"Ok_": {"greeting": {"$type": "string"}}}]),
                 step([{}, {"fn.verify_": {"call": greet, "count!": {"Exact": {"times": 2}}}}],
                      [{}, {"ErrorVerificationFailure": {"reason": {"TooFewMatchingCalls": {
                          "wanted": {"Exact": {"times": 2}}, "found": 1, "allCalls": [greet]}}}}]),
                 step([{}, {"fn.verify_": {"call": greet}}], OK), step([{}, {"fn.verifyNoMoreInteractions_": {}}], OK)])
    yield _mock("verify/checked", "The call to verify is checked against the function's arguments.",
                ["mock.verify", "case.path"],
                [step([{}, {"fn.verify_": {"call": {"fn.echo": {"point!": {"x": 1, "y": 2, "z": 3}}}}}],
                      error("ErrorInvalidRequestBody_", (["fn.verify_", "call", "fn.echo", "point!", "z"], DISALLOWED)))])
    yield _mock("schema", "The mock's public schema is the testbed's, its own functions hidden.",
                ["mock.same-schema", "mock.internal-hidden"],
                [step([{}, {"fn.api_": {}}], [{}, {"Ok_": {"api": public_api()}}])])
    yield _mock("validates", "The mock refuses an invalid call with the live server's error.", ["mock.rule2", "mock.validates"],
                [step([{}, {"fn.strict": {}}], error("ErrorInvalidRequestBody_",
                                                       *[(["fn.strict"], missing(k)) for k in STRICT]))])
    yield _mock("stub/cleared", "fn.clearStubs_ forgets every stub.", ["mock.clearStubs"],
                [_stub({"ErrorTestbed": {"code": 1}}, greet), step([{}, {"fn.clearStubs_": {}}], OK),
                 step([{}, greet], [{}, {"Ok_": {"greeting": {"$type": "string"}}}])])
    yield _mock("verify/cleared", "fn.clearCalls_ forgets the calls made so far.", ["mock.clearCalls", "mock.rule4"],
                [step([{}, greet], [{}, {"Ok_": {"greeting": {"$type": "string"}}}]), step([{}, {"fn.clearCalls_": {}}], OK),
                 step([{}, {"fn.verify_": {"call": greet}}], [{}, {"ErrorVerificationFailure": {"reason": {
                     "TooFewMatchingCalls": {"wanted": {"AtLeast": {"times": 1}}, "found": 0, "allCalls": []}}}}])])
    yield _mock("auth", "The mock protects the functions the schema protects.", ["mock.validates", "conv.auth-presence"],
                [step([{}, {"fn.secret": {}}], [{}, UNAUTHENTICATED]),
                 step([AUTH, {"fn.secret": {}}], [{}, {"Ok_": {"$type": "object"}}])])

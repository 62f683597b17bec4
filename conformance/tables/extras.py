"""Families of cases about the protocol's extras, on the testbed: @select_, @base64_ marks,
MessagePack and packing.
"""

from .testbed import DISALLOWED, ELEMENT, REQUIREMENTS, TYPES, VALUES, case, echo, error, missing, step, unexpected
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

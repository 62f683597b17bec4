"""Families of cases about the protocol's extras, on the testbed: @select_, @base64_ marks,
MessagePack and packing.
"""

from .checking import POSITIONS
from .testbed import (
    DISALLOWED,
    ELEMENT,
    REQUIREMENTS,
    TYPES,
    VALUES,
    case,
    echo,
    error,
    missing,
    step,
    unexpected,
    unwrap,
)

POINTS = [{"x": 1, "y": 2, "title!": "a"}, {"x": 3, "y": 4}]
SHAPES = [{"Circle": {"radius": 1.5}}, {"Square": {"side": 2, "title!": "s"}}, {"Dot": {}}]
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
        ("struct-in-map", {"struct.Point": ["y", "title!"]}, {"pointMap!": {"a": POINTS[0], "b": POINTS[1]}},
         {"pointMap!": {"a": {"y": 2, "title!": "a"}, "b": {"y": 4}}}, "... and to every value of a map of it."),
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
    ours = {"empty-selection", "selection-is-data"}  # what the spec leaves open: {} keeps all; _ext.Select_ fields
    for name, selection, arguments, kept, description in rows:
        yield case(f"testbed/select/{name}", description, ["header.select", *["conv.select-rules"] * (name in ours)],
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
    yield case("testbed/select/error-results-whole", "An error result is sent whole when only Ok_'s fields are selected.",
               ["header.select"],
               [step([{"@select_": {"->": {"Ok_": []}}, "@result": {"ErrorEcho": {"reason": "r"}}}, {"fn.echo": {}}],
                     [{}, {"ErrorEcho": {"reason": "r"}}])])
    excused = [  # (name, selection, a result missing required fields the selection drops, what it shows)
        ("excuses-unselected-fields", {"struct.Point": ["x"]}, {"pointArr!": [{"x": 1}]},
         "A handler need not fill in the required fields not selected."),
        ("excused-in-map", {"struct.Point": ["x"]}, {"pointMap!": {"a": {"x": 1}}}, "... in a map of structs too,"),
        ("excused-in-union", {"union.Shape": {"Square": ["title!"]}}, {"shape!": {"Square": {"title!": "s"}}},
         "... in a union's tag,"),
        ("excused-recursive", {"union.Tree": {"Node": ["left"]}},
         {"tree!": {"Node": {"left": {"Node": {"left": {"Leaf": {"value": 1}}}}}}}, "... and at every depth."),
    ]
    for name, selection, result, description in excused:
        yield case(f"testbed/select/{name}", description, ["header.select", "conv.select-rules", "conv.response-validation"],
                   [step([{"@select_": selection, "@result": {"Ok_": result}}, {"fn.echo": {}}], [{}, {"Ok_": result}])])
    yield case("testbed/select/excuses-only-what-it-drops", "Selecting a struct's fields excuses nothing inside the "
               "fields it keeps.", ["header.select", "conv.response-validation"],
               [step([{"@select_": {"struct.Every": ["point!"]}, "@result": {"Ok_": {"every!": {"point!": {"x": 1}}}}},
                      {"fn.echo": {}}], error("ErrorInvalidResponseBody_", (["Ok_", "every!", "point!"], missing("y"))))])
    yield case("testbed/select/unsafe", "With @unsafe_, what a selection cannot read is sent as it is.",
               ["header.select", "conv.unsafe"],
               [step([{"@select_": {"union.Shape": {"Circle": []}}, "@unsafe_": True,
                       "@result": {"Ok_": {"shape!": "x", "shapeArr!": [{"Hexagon": {}}, {"Circle": 1}, {"Circle": {"radius": 1}}]}}},
                      {"fn.echo": {}}],
                     [{}, {"Ok_": {"shape!": "x", "shapeArr!": [{"Hexagon": {}}, {"Circle": 1}, {"Circle": {}}]}}])],
               spec=False)
    yield case("testbed/select/checked-before-trimming", "A result is checked whole before it is trimmed: an invalid "
               "field is refused even if the selection would drop it.", ["header.select", "conv.response-validation"],
               [step([{"@select_": {"struct.Point": ["x"]}, "@result": {"Ok_": {"pointArr!": [{"x": 1, "y": "2"}]}}},
                      {"fn.echo": {}}],
                     error("ErrorInvalidResponseBody_", (["Ok_", "pointArr!", 0, "y"], unexpected("String", "Integer"))))])


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
    shapes = [  # (name, fn.blobs' arguments, marks, what it shows): each element's shape, merged under "*"
        ("array-of-structs", {"rows!": [{"data": "AQI="}, {"data": "", "note!": "x"}]}, {"rows!": {"*": {"data": True}}},
         "Bytes in the structs of an array are marked once for every element: {\"*\": {\"data\": true}}."),
        ("map-of-unions", {"parts!": {"a": {"Whole": {"data": "AQI="}}, "b": {"Pieces": {"data": ["/w==", ""]}},
                                      "c": {"Empty": {}}}},
         {"parts!": {"*": {"Whole": {"data": True}, "Pieces": {"data": {"*": True}}}}},
         "Bytes in the union values of a map, of several tags, are marked under \"*\" by each tag that holds them."),
    ]
    for function, table in (("fn.echo", rows), ("fn.blobs", shapes)):
        for name, arguments, marks, description in table:
            yield case(f"testbed/base64/{name}", description, ["header.base64", "conv.base64", "type.bytes"],
                       [step([{}, {function: arguments}], echo(arguments, marks))])
    yield case("testbed/base64/ignored-in-requests", "A request @base64_ header changes nothing: the schema says where bytes are.",
               ["conv.base64"], [step([{"@base64_": {"fn.echo": {"str!": True}}}, {"fn.echo": {"str!": "AQI="}}],
                                      [{}, {"Ok_": {"str!": "AQI="}}])])
    # Bytes reach a handler's response headers as bytes only from a MessagePack request; an error answer is JSON.
    added = {"@bytes": "AQI=", "@bytesArr": ["/w=="]}
    in_binary = {"@bytes": {"$bin": "AQI="}, "@bytesArr": [{"$bin": "/w=="}]}
    error = {"ErrorTestbed": {"code": 1}}
    negotiate = step([{"@bin_": []}, {"fn.ping_": {}}], [NEGOTIATED, {"Ok_": {}}], wire="msgpack", spec=NEGOTIATION)
    yield case("testbed/base64/response-header-on-json", "Bytes a handler adds to the response headers go out as "
               "base64 text when the answer is JSON, as an error's is in binary mode.", ["conv.base64", "type.bytes"],
               [negotiate, {"request": {"msgpack": [{**STEADY, "@responseHeaders": in_binary, "@result": error},
                                                    {"fn.echo": {}}], "ids": True},
                            "response": {"wire": "json", "message": [{"$partial": added}, error]}}])


def as_msgpack(value, kind=None):
    """A value in the suite's MessagePack notation: bytes (base64 text on the JSON wire) as {"$bin": ...}."""
    return {"$bin": value} if kind == "bytes" and type(value) is str else value


NEGOTIATED = {"@enc_": {"$type": "object"}, "@bin_": [{"$type": "integer", "$capture": "checksum"}]}
STEADY = {"@bin_": [{"$var": "checksum"}]}
# What the spec demands of the answer to an empty @bin_: MessagePack, with @enc_ (whose layout it does not
# show, so neither can the body's keys be read) and one checksum in @bin_.
NEGOTIATION = {"wire": "msgpack", "message": [{"$partial": {"@enc_": {"$type": "object"}, "@bin_": [{"$type": "integer"}]}},
                                              {"$type": "object"}]}


def _binary_steps(arguments, answer_arguments, headers=None, answer=None):
    """Negotiate with a JSON request, then send the same arguments as MessagePack with integer keys;
    both answers hold `answer` (the arguments, unless given: packed ones, say)."""
    headers = headers or {}
    answer = answer_arguments if answer is None else answer
    first = step([{"@bin_": [], **headers}, {"fn.echo": arguments}], [{**headers, **NEGOTIATED}, {"Ok_": answer}],
                 wire="msgpack", spec=NEGOTIATION)
    second = {"request": {"msgpack": [{**STEADY, **headers}, {"fn.echo": answer_arguments}], "ids": True},
              "response": {"wire": "msgpack", "message": [{**headers, **STEADY}, {"Ok_": answer}], "smallerThan": 1}}
    return [first, second]


PACKED, MISSING = {"$ext": [17, ""]}, {"$ext": [18, ""]}


def packed(value):
    """`value` with every array of maps packed as PROTOCOL.md lays it out (section 8), in the
    suite's notation: Ext 17, a header row of keys, then each map's values in the header's order."""
    if type(value) is dict:
        return {key: packed(element) for key, element in value.items()}
    if type(value) is not list:
        return value
    header = _header(value) if value else None
    if header is None:
        return [packed(element) for element in value]
    return [PACKED, [None, *header], *(_row(element, header) for element in value)]


def _header(rows):
    """The header of an array of maps: keys in the order first seen, a map-valued key as a nested
    header [key, ...]; None if the array cannot be packed."""
    columns = {}
    for row in rows:
        if type(row) is not dict:
            return None
        for key, value in row.items():
            columns.setdefault(key, []).append(value)
    header = []
    for key, values in columns.items():
        maps = [value for value in values if type(value) is dict]
        nested = _header(values) if maps else None
        if maps and (len(maps) < len(values) or nested is None):
            return None
        header.append([key, *nested] if maps else key)
    return header


def _row(row, header):
    """A map's values in header order: a gap before the end is Ext 18, gaps at the end are left off."""
    cells = []
    for column in header:
        key = column[0] if type(column) is list else column
        if key in row:
            cells.append(_row(row[key], column[1:]) if type(column) is list else packed(row[key]))
        else:
            cells.append(MISSING)
    while cells and cells[-1] == MISSING:
        cells.pop()
    return cells


def binary_cases():
    """Every type in every position, and packed arrays, there and back in MessagePack."""
    negotiation = ["binary.negotiate", "binary.checksum", "conv.binary-encoding", "header.bin"]
    for kind, (valid, _) in VALUES.items():
        value, judged = unwrap(valid[-1])
        for position in ("argument", "nested", "union-tag", "array-element", "map-value"):
            build = POSITIONS[position][1]
            arguments = build(kind, value, False)[1][1]["Ok_"]
            encoded = build(kind, as_msgpack(value, kind), False)[1][1]["Ok_"]
            yield case(f"testbed/binary/{kind}/{position}", f"A {TYPES[kind]} value as "
                       f"{POSITIONS[position][0]} goes there and back in MessagePack, with integer keys.",
                       [*REQUIREMENTS[kind], *negotiation, "binary.sizes", *judged], _binary_steps(arguments, encoded))
    arrays = [  # (name, echoed arguments, what it shows)
        ("structs", {"pointArr!": POINTS}, "Arrays of structs are packed as rows, the missing optional field at the end left out."),
        ("unions", {"shapeArr!": SHAPES}, "Arrays of unions are packed, each tag a nested header."),
        ("nested", {"every!": {"pointArr!": POINTS, "shapeArr!": SHAPES}}, "Packed arrays may be nested in structs."),
        ("map-of-structs", {"pointMap!": {"a": POINTS[0]}, "pointArr!": []}, "Maps are not packed; empty arrays are kept."),
        ("gap-first", {"pointArr!": [{"title!": "a", "x": 1, "y": 2}, {"x": 3, "y": 4}]},
         "The header follows the first map's order, and a gap before values is Ext 18, once."),
        ("scalars", {"intArr!": [1, 2], "strMap!": {"a": "b"}}, "Arrays of plain values are kept as they are."),
    ]
    packing = ["header.bin", "binary.negotiate", "conv.binary-encoding", "conv.packing"]
    for name, arguments, description in arrays:
        yield case(f"testbed/binary/packed/{name}", description + " (@pac_ true)", packing,
                   _binary_steps(arguments, arguments, {"@pac_": True}, packed(arguments)))
    unknown = {"any!": [{"x": 1, "zz": 2}, {"x": 3}]}  # ("zz": a key the encoding lacks, so no header row holds it)
    yield case("testbed/binary/packed/unknown-keys", "An array of maps holding a key the encoding lacks is kept as it "
               "is (@pac_ true).", packing, _binary_steps(unknown, unknown, {"@pac_": True}))
    yield case("testbed/binary/number/not-whole", "A number that is not whole goes out as a 64-bit float: 0.1 comes "
               "back as 0.1, 1e300 as 1e300.", ["type.number", "header.bin", "binary.negotiate", "conv.binary-floats"],
               _binary_steps({"num!": 0.1, "numArr!": [0.1, 1e300, -2.5e-300], "numMap!": {"a": 1.1}},
                             {"num!": 0.1, "numArr!": [0.1, 1e300, -2.5e-300], "numMap!": {"a": 1.1}}))
    rows = packed(POINTS)
    yield case("testbed/binary/packed/layout", "A packed array is Ext 17, a header row of key ids (the names here), "
               "then a row of values per map, in the header's order.", packing,
               [step([{"@bin_": [], "@pac_": True}, {"fn.echo": {"pointArr!": POINTS}}],
                     [{"@pac_": True, **NEGOTIATED}, {"Ok_": {"pointArr!": rows}}], wire="msgpack", spec=NEGOTIATION)])
    yield case("testbed/binary/packed/request", "A packed MessagePack request is unpacked before it is checked.",
               packing, [_binary_steps({}, {})[0], {
                   "request": {"msgpack": [{**STEADY, "@pac_": True}, {"fn.echo": {"pointArr!": rows}}], "ids": True},
                   "response": {"wire": "msgpack", "message": [{"@pac_": True, **STEADY}, {"Ok_": {"pointArr!": rows}}]}}])
    yield case("testbed/binary/packed/request-without-pac", "A packed request without @pac_ is not unpacked: it is "
               "refused, as a parse failure or as arguments of the wrong type.", packing, [_binary_steps({}, {})[0], {
                   "request": {"msgpack": [STEADY, {"fn.echo": {"pointArr!": rows}}], "ids": True},
                   "response": {"either": [
                       {"message": [{}, {"ErrorParseFailure_": {"reasons": [{"BinaryDecodeFailure": {}}]}}]},
                       {"message": [{}, {"ErrorInvalidRequestBody_": {"cases": {"$type": "array"}}}]}]}}])
    tree = {"Leaf": {"value": 0}}
    for level in range(1, 60):
        tree = {"Node": {"left": tree, "right": {"Leaf": {"value": level}}}}
    yield case("testbed/binary/deep", "A value nested 120 levels deep goes there and back in MessagePack.",
               ["type.union", "header.bin", "conv.no-crash"], _binary_steps({"tree!": tree}, {"tree!": tree}))
    yield case("testbed/binary/errors-in-json", "An error result comes back in JSON, without @bin_, even when "
               "MessagePack was asked for.", ["binary.negotiate", "header.bin", "conv.binary-errors"],
               [step([{"@bin_": [], "@result": {"ErrorEcho": {"reason": "r"}}}, {"fn.echo": {}}],
                     [{}, {"ErrorEcho": {"reason": "r"}}], wire="json")])
    yield case("testbed/binary/invalid-in-json", "A validation error of a MessagePack request comes back in JSON.",
               ["binary.negotiate", "error.invalid-body", "conv.binary-errors", "conv.binary-encoding"],
               [_binary_steps({}, {})[0], {
                   "request": {"msgpack": [STEADY, {"fn.echo": {"int!": "x"}}], "ids": True},
                   "response": {"wire": "json", "message": error("ErrorInvalidRequestBody_",
                                                                  (["fn.echo", "int!"], unexpected("String", "Integer")))}}])

"""The property a reproduction states: what the schema demands of an answer, where a finding's answer broke
it, in the matching language (language/matchers.py).

How this works
--------------
`declared(schema, type_)` is the schema's own type as a matcher, mirroring
`Schema.problems`: a struct's every field (an optional one absent, or of its
type), a union's tags, an array's every element, a map's every entry, down
to MOST matchers (past them, or in a struct that holds itself, a value is
stated by its kind alone). `placed` puts a matcher at a place of an answer
by a path that holds of any answer the function may rightly give: through
every element of an array and every entry of a map, past an optional field
or another tag, which may be absent. `stated` is the expected answer of a
finding's last step, by its check (PROPERTIES): the declared type where the
answer broke it, no handler's error, the wrong thing refused where it is;
and, but where a call is meant to be refused, no refusal of the call, so
that a target without the function, or that takes other arguments, fails
it rather than passing. A property is stated only if it holds of the
answers a fixed service may give (mending.py): one that a fixed service
would fail is no reproduction.
"""


from ..language.schema import Type
from . import values
from .answers import WIRE, expected_marks, holds_bytes, result_problems
from .selections import DROPPED
from .verdicts import MESSAGEPACK

MOST = 300  # matchers one declared type may take: past them, values are stated by their kind
REFUSALS = ("ErrorParseFailure_", "ErrorInvalidRequestHeaders_", "ErrorInvalidRequestBody_")
HANDLER_BUGS = ("ErrorUnknown_", "ErrorInvalidResponseBody_", "ErrorInvalidResponseHeaders_")
ABSENT = ("ObjectKeyDisallowed", "RequiredObjectKeyPrefixMissing")  # (a key that must not be there)
KINDS = {"boolean": "boolean", "integer": "integer", "number": "number", "string": "string"}


def none_of(tags):
    """A matcher of a body that holds none of `tags`."""
    return {"$not": {"$oneOf": [{"$partial": {tag: {"$type": "any"}}} for tag in tags]}}


def declared(schema, type_, binary=False, seen=frozenset(), left=None):
    """A matcher of the values of `type_`, as the schema declares them (bytes: base64 text on JSON)."""
    left = [MOST] if left is None else left
    left[0] -= 1
    kind, spent = type_.kind, left[0] <= 0
    if kind in ("struct", "union", "fn") and (spent or (kind, type_.of) in seen):
        matcher = {"$type": "object"}
    elif kind == "struct":
        matcher = _fields(schema, schema.struct(type_), binary, seen | {(kind, type_.of)}, left)
    elif kind in ("union", "fn"):
        matcher = {"$oneOf": [{tag: _fields(schema, fields, binary, seen | {(kind, type_.of)}, left)}
                              for tag, fields in schema.struct(type_).items()]}
    elif kind in ("array", "map"):
        matcher = {"$type": "array" if kind == "array" else "object"}
        if not spent:
            matcher["$each"] = declared(schema, type_.of, binary, seen, left)
    elif kind == "any":
        matcher = {"$not": {"$type": "null"}}
    elif kind == "bytes":
        matcher = {"$type": "bytes" if binary else "string"}
    else:
        matcher = {"$type": KINDS.get(kind, "object")}  # (ext: a value of rules of its own)
    return {"$oneOf": [{"$type": "null"}, matcher]} if type_.nullable else matcher


def _fields(schema, fields, binary, seen, left):
    """A matcher of an object of `fields`, exactly: every required one, an optional one absent or typed."""
    return {name: declared(schema, type_, binary, seen, left) if not name.endswith("!")
            else {"$oneOf": [{"$absent": True}, declared(schema, type_, binary, seen, left)]}
            for name, type_ in fields.items()}


def placed(schema, root, path, matcher):
    """`matcher` at `path` of a value of `root` (a function's results by tag, or response headers by
    name), by a path any right answer keeps: every element or entry, an optional field or another tag
    absent, null where allowed."""
    steps, names, place = [], "tags" if root is not schema.response_headers else "headers", root
    for key in path:
        nullable = type(place) is Type and place.nullable
        if type(place) is Type and place.kind in ("array", "map"):
            steps.append((None, nullable, False))
            place = place.of
            continue
        if type(place) is Type and place.kind in ("struct", "union", "fn"):
            names, place = "fields" if place.kind == "struct" else "tags", schema.struct(place)
        optional = names in ("tags", "headers") or (type(key) is str and key.endswith("!"))
        steps.append((key, nullable, optional))
        place, names = place.get(key) if type(place) is dict else None, "fields"  # (a tag's fields, or a Type)
    for key, nullable, optional in reversed(steps):
        if key is None:
            matcher = {"$each": matcher}
        else:
            maybe = optional and matcher != {"$absent": True}
            matcher = {"$partial": {key: {"$oneOf": [{"$absent": True}, matcher]} if maybe else matcher}}
        if nullable:
            matcher = {"$oneOf": [{"$type": "null"}, matcher]}
    return matcher


def at(schema, root, path):
    """The Type (or fields) the schema declares at `path` of a value of `root`; None past what it declares."""
    place = root
    for key in path:
        if type(place) is Type and place.kind in ("array", "map"):
            place = place.of
        elif type(place) is Type and place.kind in ("struct", "union", "fn"):
            place = schema.struct(place).get(key)
        elif type(place) is dict:
            place = place.get(key)
        else:
            return None
    return place


def _broken(schema, finding, root, binary):
    """The matcher of what the schema demands at the place the finding's answer first broke it."""
    path, why = finding.places[0]
    if why in ABSENT:
        return path, {"$absent": True}
    if why.startswith("no result of"):
        return (), {"$oneOf": [{tag: _fields(schema, fields, binary, frozenset(), [MOST])}
                               for tag, fields in sorted(root.items())]}
    place = at(schema, root, path)
    if type(place) is dict:  # (a result's fields, or a tag's: RequiredObjectKeyMissing at the top)
        return path, _fields(schema, place, binary, frozenset(), [MOST])
    return path, declared(schema, place, binary) if type(place) is Type else {"$type": "any"}


def _in_the_result(schema, finding):
    root = schema.functions[finding.function].results
    path, matcher = _broken(schema, finding, root, finding.binary)
    return [{"$type": "object"}, {**none_of(REFUSALS), **placed(schema, root, path, matcher)}]


def _in_the_headers(schema, finding):
    path, matcher = _broken(schema, finding, schema.response_headers, finding.binary)
    return [placed(schema, schema.response_headers, path, matcher), none_of(REFUSALS)]


def _selected(schema, finding):
    root, (path, why) = schema.functions[finding.function].results, finding.places[0]
    matcher = {"$type": "any"} if why == DROPPED else {"$absent": True}  # (a field selected is there)
    return [{"$type": "object"}, {**none_of(REFUSALS), **placed(schema, root, path, matcher)}]


def _refused_there(schema, finding):
    return [{"$type": "object"}, {"ErrorInvalidRequestBody_": {
        "cases": {"$includes": [{"path": list(finding.path), "reason": {"$type": "object"}}]}}}]


def _one_result(schema, finding):
    results = schema.functions[finding.function].results
    return [{"$type": "object"}, {"$oneOf": [{tag: {"$type": "object"}} for tag in sorted(results)]}]


PROPERTIES = {  # check -> (the part of the answer the property is of, the property)
    "message": ("message", _one_result),
    "accepted": ("message", lambda schema, finding: [{"$type": "object"}, none_of(REFUSALS)]),
    "handler": ("message", lambda schema, finding: [{"$type": "object"}, none_of(REFUSALS + HANDLER_BUGS)]),
    "rejected": ("message", _refused_there),
    "result": ("message", _in_the_result),
    "headers": ("message", _in_the_headers),
    "select": ("message", _selected),
    "id": ("message", lambda schema, finding: [{"$partial": {"@id_": {"$literal": finding.call[0]["@id_"]}}},
                                                {"$type": "object"}]),
    "base64": ("message", lambda schema, finding: [{"$partial": {"@base64_": expected_marks(
        schema, schema.functions[finding.function], finding.message[1]) or {"$absent": True}}}, {"$type": "object"}]),
    "media": ("headers", lambda schema, finding: {
        "Content-Type": "application/octet-stream" if finding.binary else "application/json"}),
}


def stated(schema, finding):
    """The expected answer of a finding's last step: the property its answer broke."""
    part, made = PROPERTIES[finding.check]
    return {part: made(schema, finding)}


def steps(schema, finding):
    """The last steps of a finding's case: its call, and the property its answer broke (of a binary
    finding, the JSON call first where the property compares the two: binary_steps)."""
    if finding.check in MESSAGEPACK:
        return binary_steps(schema, finding)
    headers, body = finding.call  # (on MessagePack: asked for with @bin_ [], as a case cannot know the ids)
    message = [{**headers, "@bin_": []}, body] if finding.binary else finding.call
    return [{"request": {"message": message}, "response": {**_unpacked(finding), **stated(schema, finding)}}]


def _unpacked(finding):
    """What a step's response says of packing: its answer read unpacked where the call asked for @pac_."""
    return {"unpack": True} if finding.binary and finding.call[0].get("@pac_") is True else {}


def binary_steps(schema, finding):
    """The steps of a finding whose answers differ between the wires: where one breaks the schema, that
    one's call and the schema's type there; where both keep it, the JSON call capturing the first value
    that differs, and the MessagePack call holding the same (a value of bytes cannot be compared so:
    []). A fixed service answers both alike, and each as the schema says."""
    function, (headers, body) = schema.functions[finding.function], finding.call
    wire = [(path, WIRE[why]) for path, why in finding.places if why in WIRE]
    if wire:  # (text for bytes, or bytes for text: the type there, on MessagePack, which tells them apart)
        return [{"request": {"message": [{**headers, "@bin_": []}, body]}, "response": {**_unpacked(finding), "message": [
            {"$type": "object"}, {**none_of(REFUSALS), **placed(schema, function.results, wire[0][0],
                                                                {"$type": wire[0][1]})}]}}]
    json_body, binary_body = finding.before, finding.message[1]
    for answered, binary in ((binary_body, True), (json_body, False)):
        [(tag, fields)] = answered.items()
        broken = tuple(result_problems(schema, function, tag, fields, "@select_" in finding.call[0]))
        if broken:
            return steps(schema, finding._replace(check="result", binary=binary, places=broken))
    path = _first_difference(values.as_text(json_body), values.as_text(binary_body))
    place = at(schema, function.results, path)
    if path is None or type(place) is not Type:
        return []
    if holds_bytes(schema, [place]):  # (then only a count compares across the wires: that of an array)
        counted = _at(json_body, path)
        if type(counted) is not list or type(_at(binary_body, path)) is not list:
            return []
        length = exactly({path: {"$length": len(counted)}})
        return [{"request": {"message": [{k: v for k, v in headers.items() if k != "@pac_"}, body]},
                 "response": {"message": [{"$type": "object"}, {**none_of(REFUSALS), **length}]}},
                {"request": {"message": [{**headers, "@bin_": []}, body]},
                 "response": {**_unpacked(finding), "message": [{"$type": "object"}, length]}}]
    json_call = [{k: v for k, v in headers.items() if k != "@pac_"}, body]
    return [{"request": {"message": json_call}, "response": {"message": [
                {"$type": "object"}, {**none_of(REFUSALS), **exactly({path: {"$capture": "on-json"}})}]}},
            {"request": {"message": [{**headers, "@bin_": []}, body]}, "response": {**_unpacked(finding), "message": [
                {"$type": "object"}, exactly({path: {"$var": "on-json"}})]}}]


def _at(value, path):
    """What `value` holds at `path`, or None."""
    for key in path:
        value = value[key] if type(value) is dict and key in value or type(value) is list and type(key) is int \
            and key < len(value) else None
    return value


def _first_difference(one, other, path=()):
    """The first path at which two values differ, or None."""
    if type(one) is dict and type(other) is dict and one.keys() == other.keys():
        return next((found for key in one if (found := _first_difference(one[key], other[key], (*path, key)))
                     is not None), None)
    if type(one) is list and type(other) is list and len(one) == len(other):
        return next((found for index, (a, b) in enumerate(zip(one, other))
                     if (found := _first_difference(a, b, (*path, index))) is not None), None)
    return None if one == other else path


def exactly(paths):
    """A matcher that holds each matcher of `paths` ({path: matcher}) at its path exactly (an element at its
    index), whatever else the value holds."""
    tree = {}
    for path, matcher in paths.items():
        node = tree
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = ("leaf", matcher)
    return _exact(tree) if paths else {"$type": "any"}


def _exact(node):
    if type(node) is tuple:
        return node[1]
    if all(type(key) is int for key in node):  # (an element: those before it, whatever they are)
        return {"$startsWith": [_exact(node[i]) if i in node else {"$type": "any"} for i in range(max(node) + 1)]}
    return {"$partial": {key: _exact(child) for key, child in node.items()}}

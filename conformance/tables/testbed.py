"""The testbed schema, its values, and the pieces every family of cases is built from.

How this works
--------------
The testbed schema (`conformance/testbed.json`) holds every type expression
of the schema language in every position a type can take. Rather than
writing its few hundred fields by hand, `schema()` makes them from two small
tables: TYPES, one example of every kind of type, and VARIANTS, the ways a
field can wrap it (nullable, array, map, arrays and maps of nullables).
VALUES then gives, for each kind, valid values and invalid ones with the
validation cases each invalid one must give; a value whose verdict is our
convention rather than the spec's (is 2^63 an integer? is 1.0?) is marked
with the convention that judges it, `Ours(value, requirement)`.

`case()` makes a case of steps: its level follows from the requirements it
cites (MUST only if the spec states every one), and a SHOULD case that also
cites the spec gets, in each step, the part of the answer the spec demands
(`spec.demanded`) as its MUST part.
"""

import base64
import re
from typing import Any, NamedTuple

from ..language import suite
from .spec import demanded

TYPES = {  # a field name -> the type expression a field of that name holds
    "bool": "boolean", "int": "integer", "num": "number", "str": "string", "bytes": "bytes",
    "any": "any", "point": "struct.Point", "shape": "union.Shape", "call": "fn.greet",
    "sel": "_ext.Select_",
}
VARIANTS = {  # a suffix of the field name -> the type expression, given the plain one
    "": lambda t: t,
    "Null": lambda t: t + "?",
    "Arr": lambda t: [t],
    "ArrNull": lambda t: [t + "?"],
    "Map": lambda t: {"string": t},
    "MapNull": lambda t: {"string": t + "?"},
}


BLOBS = {"rows!": ["struct.Blob"], "parts!": {"string": "union.Part"}}  # fn.blobs' arguments, and its Ok_


def every(prefix="", suffix="!"):
    """One field for each type in each variant, such as "intArrNull!": ["integer?"]."""
    return {f"{prefix}{name}{variant}{suffix}": wrap(expression)
            for name, expression in TYPES.items() for variant, wrap in VARIANTS.items()}


def schema():
    """The testbed schema, as a list of entries."""
    echoed = {**every(), "every!": "struct.Every", "union!": "union.Every", "tree!": "union.Tree",
              "chain!": "struct.Chain"}
    strict = {"bool": "boolean", "boolNull": "boolean?", "point": "struct.Point",
              "pointNull": "struct.Point?", "shape": "union.Shape", "ints": ["integer"],
              "names": {"string": "string"}, "note!": "string", "noteNull!": "string?"}
    return [
        {"info.Testbed": {}},  # (no comment: the spec allows them beside fn, struct, union, headers, errors)
        {"///": "Credentials: protected functions need an @auth_ header; the handler never judges it.",
         "union.Auth_": [{"Token": {"token": "string"}}]},
        {"///": "A header of every type, in both directions.",
         "headers.Every": every("@", ""), "->": every("@", "")},
        {"///": "An error any of the testbed's functions may answer with.",
         "errors.Testbed": [{"ErrorTestbed": {"code": "integer", "note!": "string"}}]},
        {"///": ["Echo: with no @result header the handler answers Ok_ with the arguments,",
                 "so every type can travel to the server and back."],
         "$authenticated": False,
         "fn.echo": echoed,
         "->": [{"Ok_": echoed}, {"///": "Only ever answered because @result asks for it.",
                                 "ErrorEcho": {"reason": "string"}}]},
        {"///": "Required fields: each must be sent, and only the nullable ones may be null.",
         "$authenticated": False, "fn.strict": strict, "->": [{"Ok_": strict}]},
        {"///": "A small function, whose call is the value of fn.greet fields.",
         "$authenticated": False, "fn.greet": {"name": "string"}, "->": [{"Ok_": {"greeting": "string"}}]},
        {"///": "A protected function: without @auth_ it is refused before its arguments are read.",
         "fn.secret": {"hint!": "string"}, "->": [{"Ok_": {"secret!": "string"}}]},
        {"///": "Bytes in arrays and maps of structs and unions, which @base64_ marks by the shape of each element.",
         "$authenticated": False, "fn.blobs": BLOBS, "->": [{"Ok_": BLOBS}]},
        {"///": "A field of every type, nested in a struct.", "struct.Every": every()},
        {"///": "A field of every type, in a union tag.", "union.Every": [{"Every": every()}, {"Nothing": {}}]},
        # (`title!`, not `label!`: with it the testbed's checksum is negative, the calculator's positive,
        # so a server that sends the CRC-32 unsigned fails the binary cases on one of them)
        {"struct.Point": {"x": "integer", "y": "integer", "title!": "string"}},
        {"union.Shape": [{"Circle": {"radius": "number"}}, {"Square": {"side": "number", "title!": "string"}},
                         {"Dot": {}}]},
        {"///": "Recursive through its tags.",
         "union.Tree": [{"Leaf": {"value": "integer"}}, {"Node": {"left": "union.Tree", "right": "union.Tree"}}]},
        {"///": "Recursive through a nullable field.", "struct.Chain": {"value": "integer", "next": "struct.Chain?"}},
        {"struct.Blob": {"data": "bytes", "note!": "string"}},
        {"union.Part": [{"Whole": {"data": "bytes"}}, {"Pieces": {"data": ["bytes"]}}, {"Empty": {}}]},
    ]


RANGE, DISALLOWED, ELEMENT = {"NumberOutOfRange": {}}, {"ObjectKeyDisallowed": {}}, {"ArrayElementDisallowed": {}}
NAMES = {"bool": "Boolean", "int": "Integer", "num": "Number", "str": "String", "bytes": "Bytes", "any": "Any",
         "point": "Object", "shape": "Object", "call": "Object", "sel": "Object"}
REQUIREMENTS = {"bool": ["type.boolean"], "int": ["type.integer"], "num": ["type.number"],
                "str": ["type.string"], "bytes": ["type.bytes"], "any": ["type.any"], "point": ["type.struct"],
                "shape": ["type.union"], "call": ["type.fn"], "sel": ["conv.select-rules"]}


class Ours(NamedTuple):
    """A value whose verdict is a convention of ours, and the requirement that states it."""

    value: Any
    requirement: str


def unwrap(value):
    """A value of VALUES without its Ours mark, and the conventions that judge it."""
    return (value.value, [value.requirement]) if type(value) is Ours else (value, [])


def unexpected(actual, expected):
    return {"TypeUnexpected": {"actual": {actual: {}}, "expected": {expected: {}}}}


def missing(key):
    return {"RequiredObjectKeyMissing": {"key": key}}


def size(actual):
    return {"ObjectSizeUnexpected": {"actual": actual, "expected": 1}}


# A type -> its valid values, and its invalid ones, each with the cases it gives as (path
# below the value, reason); the name of a JSON type stands for the case of a value of that type.
VALUES = {
    "bool": ([True, False], [(0, "Number"), ("true", "String"), ([True], "Array"), ({}, "Object")]),
    "int": ([0, -7, Ours(2**53 + 1, "conv.int64"), Ours(2**63 - 1, "conv.int64"), Ours(-2**63, "conv.int64")],
            [(1.5, "Number"), (Ours(2.0, "conv.int64"), "Number"), (Ours(2**63, "conv.int64"), [([], RANGE)]),
             (Ours(-2**63 - 1, "conv.int64"), [([], RANGE)]), (True, "Boolean"), ("1", "String"), ([1], "Array")]),
    "num": ([0, 1.5, -0.25, 1e300, Ours(-2**53 - 1, "conv.int64"), Ours(2**63 - 1, "conv.int64")],
            [(Ours(2**63, "conv.int64"), [([], RANGE)]), (Ours(-2**63 - 1, "conv.int64"), [([], RANGE)]),
             (False, "Boolean"), ("1.5", "String"), ({}, "Object")]),
    "str": (["", "text", "\u00e9t\u00e9 \U0001F600"], [(1, "Number"), (True, "Boolean"), (["a"], "Array"), ({}, "Object")]),
    "bytes": (["", "AQI=", "/+8="], [(1, "Number"), (Ours("AQI", "conv.base64"), [([], unexpected("String", "Base64String"))]),
                                    (True, "Boolean"), ([], "Array"), ({}, "Object")]),
    "any": ([0, "x", [None], {"a": None}, False], []),
    "point": ([{"x": 1, "y": 2}, {"x": -1, "y": 0, "title!": "p"}], [
        (5, "Number"), ({"x": 1}, [([], missing("y"))]), ({"x": 1, "y": 2, "z": 0}, [(["z"], DISALLOWED)]),
        ({"x": "1", "y": 2}, [(["x"], unexpected("String", "Integer"))]),
        ({"x": 1, "y": 2, "title": "p"}, [(["title"], DISALLOWED)]),
        ({"x": 1, "y": 2, "title!": None}, [(["title!"], unexpected("Null", "String"))])]),
    "shape": ([{"Circle": {"radius": 1.5}}, {"Square": {"side": 2, "title!": "s"}}, {"Dot": {}}], [
        ("Dot", "String"), ({}, [([], size(0))]), ({"Dot": {}, "Circle": {"radius": 1}}, [([], size(2))]),
        ({"Hexagon": {}}, [(["Hexagon"], DISALLOWED)]), ({"Circle": {}}, [(["Circle"], missing("radius"))]),
        ({"Circle": 5}, [(["Circle"], unexpected("Number", "Object"))])]),
    "call": ([{"fn.greet": {"name": "a"}}], [
        ("fn.greet", "String"), ({}, [([], size(0))]), ({"fn.echo": {}}, [(["fn.echo"], DISALLOWED)]),
        ({"fn.greet": {}}, [(["fn.greet"], missing("name"))]),
        ({"fn.greet": {"name": 1}}, [(["fn.greet", "name"], unexpected("Number", "String"))])]),
    "sel": ([{}, {"struct.Point": ["x"]}, {"union.Shape": {"Circle": ["radius"]}}, {"->": {"Ok_": ["int!"]}}], [
        ([], "Array"), ({"struct.Nope": []}, [(["struct.Nope"], DISALLOWED)]),
        ({"struct.Point": ["z"]}, [(["struct.Point", 0], ELEMENT)]),
        ({"struct.Point": "x"}, [(["struct.Point"], unexpected("String", "Array"))]),
        ({"->": {"ErrorEcho": []}}, [(["->", "ErrorEcho"], DISALLOWED)])]),
}


def cases_of(kind, value, problem):
    """The (path, reason) pairs an invalid value gives, from the VALUES shorthand."""
    return [([], unexpected(problem, NAMES[kind]))] if type(problem) is str else problem


def echo(arguments, marks=None):
    return [{"@base64_": {"Ok_": marks}} if marks else {}, {"Ok_": arguments}]


def nest(path, value):
    """`value` at the end of a path of keys: nest(["a", "b"], 1) == {"a": {"b": 1}}."""
    for key in reversed(path):
        value = {key: value}
    return value


def features(steps):
    """The protocol features a case's steps use (binary, select, headers, http)."""
    used = set()
    for step in steps:
        request = step["request"]
        responses = [answer for response in (step["response"], step.get("undeclared", {}))
                     for answer in (response, *response.get("either", ()))]
        message = request.get("message") or request.get("msgpack")
        headers = message[0] if type(message) is list and message and type(message[0]) is dict else {}
        pieces = [piece["$bin"] for piece, _ in request.get("repeated", ()) if type(piece) is dict]
        raw = base64.b64decode(request.get("base64") or (pieces or [""])[0])
        if {"@bin_", "@pac_"} & headers.keys() or "msgpack" in request or raw[:1] == b"\x92" \
                or any(response.get("wire") == "msgpack" for response in responses):
            used.add("binary")
        if "@select_" in headers:
            used.add("select")
        if {"@id_", "@time_", "@unsafe_"} & headers.keys():
            used.add("headers")
        if {"method", "path", "framing"} & request.keys() or any({"status", "headers"} & r.keys() for r in responses):
            used.add("http")
    return sorted(used)


def case(id_, description, requirements, steps, level=None, requires=("testbed", "live"), exclusive=False, spec=True,
         limits=()):
    """A case in the fixture format. Its level follows from its requirements (or is MAY, if
    given so); with `spec`, a SHOULD case that cites the spec too gets MUST parts; `limits` names the
    limits a target may declare that its steps depend on."""
    requirements = list(dict.fromkeys(requirements))
    derived = suite.level_of(requirements)
    assert level in (None, derived, "MAY"), f"{id_}: {level} but its requirements make it {derived}"
    level = level or derived
    if level != "MUST" and spec and any(suite.rule_levels().get(r) == "MUST" for r in requirements):
        steps = [with_spec(step) for step in steps]
    found = {"id": id_, "description": description, "requirements": requirements,
             "level": level, "requires": list(requires), "features": features(steps),
             **({"limits": list(limits)} if limits else {}), "steps": steps}
    return {**found, "exclusive": True} if exclusive else found


def with_spec(step):
    """A step with the part of its answer the spec demands as its MUST part, if it demands any."""
    response = step["response"]
    if "spec" in response or "message" not in response or response.get("wire") == "msgpack":
        return step
    part = demanded(response["message"])
    return {**step, "response": {**response, "spec": {"message": part}}} if part is not None else step


def step(request, answer, **response):
    """A step: a JSON message and the answer expected (and other expectations)."""
    return {"request": {"message": request}, "response": {**response, "message": answer}}


STRICT = {"bool": True, "boolNull": False, "point": {"x": 1, "y": 2}, "pointNull": None, "shape": {"Dot": {}},
          "ints": [1], "names": {"a": "b"}}
UNAUTHENTICATED = {"ErrorUnauthenticated_": {"message!": "Valid authentication is required."}}
AUTH = {"@auth_": {"Token": {"token": "t"}}}


def slug(name):
    """A field name as part of a case id: "noteNull!" -> "note-null"."""
    return re.sub(r"[A-Z]", lambda m: "-" + m[0].lower(), name.rstrip("!"))


def error(tag, *found):
    return [{}, {tag: {"cases": [{"path": path, "reason": reason} for path, reason in found]}}]


def name_of(entry):
    """The name an entry defines, such as "fn.echo"."""
    return next(k for k in entry if k not in ("///", "->") and not k.startswith("$"))


def public_api():
    """What fn.api_ answers on the testbed: its entries and those union.Auth_ brings, info first, then by name."""
    brought = [{"$partial": {"errors.Auth_": [{"$partial": {"ErrorUnauthenticated_": {"message!": "string"}}},
                                              {"$partial": {"ErrorUnauthorized_": {"message!": "string"}}}]}},
               {"$partial": {"headers.Auth_": {"@auth_": "union.Auth_"}, "->": {}}}]
    entries = schema() + brought
    return sorted(entries, key=lambda e: (not name_of(plain(e)).startswith("info."), name_of(plain(e))))


def plain(entry):
    return entry.get("$partial", entry)
